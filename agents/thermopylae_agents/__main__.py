"""``python -m thermopylae_agents``: the ``thermopylae`` command (see [`thermopylae_agents.cli.app`][])."""

import sys

from thermopylae_agents.cli.app import main

sys.exit(main())
