#!/usr/bin/env python
"""Win-rate table of the duel's baseline players: ``python scripts/duel_table.py --help``.

The same as the ``thermopylae-duel-table`` console script; see :mod:`thermopylae_agents.duel_table`.
"""

from thermopylae_agents.duel_table import main

if __name__ == "__main__":
    main()
