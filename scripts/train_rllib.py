"""Train on Ray RLlib (co-op masked PPO, the duel as a multi-agent game) or sweep on Ray Tune;
``python scripts/train_rllib.py {coop,duel,sweep} --help``; see ``thermopylae_agents.rllib.train``.
Needs the rllib extra: ``pip install -e '.[rllib]'``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thermopylae_agents.rllib.train import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
