#!/usr/bin/env bash
# The duel players' strength tables for the policy files now in agents/thermopylae_agents/policies/:
# the cross-play matrix (10,000 games per pairing, native engine, checked on 300 games per pairing against
# the single env) and the exploitability table (a best response per player, 1M steps, seeds 0 1 2).
# About 45-50 minutes on a shared 2-core machine. Usage: bash benchmarks/duel_strength.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
# The exploitability table comes from the package's console script, installed beside that Python.
THERMOPYLAE=${THERMOPYLAE:-$(dirname "$PY")/thermopylae}
P=agents/thermopylae_agents/policies
nice -n 5 "$PY" benchmarks/duel_crossplay.py --games 10000 --seed 0 --check-games 300 \
    --json "$P/duel_eval.json" --plot "$P/duel_eval.png" --markdown benchmarks/results/duel_crossplay.md
nice -n 5 "$THERMOPYLAE" exploitability --table --budget 1000000 --seeds 0 1 2 --curve-points 4 \
    --eval-games 2000 --out benchmarks/results/exploitability.json --markdown benchmarks/results/exploitability.md
