"""Train PPO agents: ``python scripts/train.py {coop,duel-greek,duel-persian,selfplay} [options]``.

All logic is in :mod:`thermopylae_agents.training` (also installed as the ``thermopylae-train`` command).
"""

from thermopylae_agents.training import main

if __name__ == "__main__":
    raise SystemExit(main())
