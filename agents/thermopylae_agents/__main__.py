"""``python -m thermopylae_agents``: the ``thermopylae`` command (see :mod:`thermopylae_agents.cli.play`)."""

import sys

from thermopylae_agents.cli.play import main

sys.exit(main())
