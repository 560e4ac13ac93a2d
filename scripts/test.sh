#!/usr/bin/env bash
# The test command: set up .venv, lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m ruff check .
# Two worker processes (pytest-xdist) share the two cores: on a fresh clone numba compiling the kernels
# (once, into the shared cache) takes a large part of the run, and the other worker runs tests meanwhile.
# A file's tests stay on one worker (--dist loadfile), so its module fixtures are built once. Add -n 0
# to run in one process (for --pdb, or to read a failure's output in order).
.venv/bin/python -m pytest -n 2 --dist loadfile "$@"
