"""Play one game with an agent and save it as a GIF or a PNG strip: ``python scripts/render_game.py --help``.

The same as the ``thermopylae-render-game`` console script; see :mod:`thermopylae_agents.render_game`.
"""

import sys

from thermopylae_agents.render_game import main

if __name__ == "__main__":
    sys.exit(main())
