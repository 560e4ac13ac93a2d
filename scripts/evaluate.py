"""Evaluate agents on the same seeded deals: the same as ``thermopylae evaluate``
(:mod:`thermopylae_agents.cli.evaluate`); ``python scripts/evaluate.py --help``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thermopylae_agents.cli.evaluate import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
