#!/usr/bin/env bash
# The main job: set up .venv, train the default co-op agent (agents/thermopylae_agents/configs/coop.yaml) and print its
# evaluation against the random, heuristic and search-expert baselines. Extra arguments go to train.py,
# e.g. `bash scripts/main.sh --seed 1` or `bash scripts/main.sh --timesteps 20000` (a short run that mostly
# trains: no search games).
# Every stage prints a line when it starts and ends (and every 20 s while it runs when the output is not
# a terminal; a progress bar when it is), so the job never goes quiet for long.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
echo "[main] setting up .venv (scripts/setup.sh: torch 2.13.0 CPU, then the package and its extras) ..."
bash scripts/setup.sh &
setup_pid=$!
waited=0
while kill -0 "$setup_pid" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    if (( waited % 20 == 0 )); then
        echo "[main] setup still running ($((SECONDS - start)) s)"
    fi
done
wait "$setup_pid"
echo "[main] setup done in $((SECONDS - start)) s; training (scripts/train.py coop $*) ..."
.venv/bin/python scripts/train.py coop "$@"
echo "[main] done in $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
