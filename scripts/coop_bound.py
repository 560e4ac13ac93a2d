"""Upper bound on the co-op win rate (deck-clairvoyant expectimax): ``python scripts/coop_bound.py --help``.

The same as the ``thermopylae-coop-bound`` console script; see :mod:`thermopylae_agents.coop_bound_cli`.
"""

from thermopylae_agents.coop_bound_cli import main

if __name__ == "__main__":
    raise SystemExit(main())
