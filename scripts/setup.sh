#!/usr/bin/env bash
# Create .venv (if missing) and install the package with everything the tests and training need.
# torch is pinned to 2.13.0 first: a CPU build that installs quickly; the package itself only asks
# for a range that 2.13.0 satisfies, so pip keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
