#!/usr/bin/env bash
# The main job: set up .venv, train the default co-op agent (agents/thermopylae_agents/configs/coop.yaml) and print its
# evaluation against the random, heuristic and search-expert baselines. Extra arguments go to train.py,
# e.g. `bash scripts/main.sh --seed 1`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python scripts/train.py coop "$@"
