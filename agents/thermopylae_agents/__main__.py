"""``python -m thermopylae_agents``: the ``thermopylae`` command (see :mod:`thermopylae_agents.cli`)."""

import sys

from thermopylae_agents.cli import main

sys.exit(main())
