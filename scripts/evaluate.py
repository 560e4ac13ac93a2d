"""Evaluate agents on the same seeded deals: the same as ``thermopylae evaluate``
(:mod:`thermopylae_agents.cli.evaluate`); ``python scripts/evaluate.py --help``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thermopylae_env.threads import configure_environment  # noqa: E402

# Before the evaluation modules load torch or run a parallel kernel: their OpenMP runtime reads its waiting
# policy once, when it loads (the same settings as the thermopylae command's).
configure_environment()

from thermopylae_agents.cli.evaluate import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
