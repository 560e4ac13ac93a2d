"""``python -m thermopylae_env``: the ``thermopylae`` command (see :mod:`thermopylae_env.cli`)."""

import sys

from thermopylae_env.cli import main

sys.exit(main())
