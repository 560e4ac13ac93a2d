"""``python -m thermopylae_env`` points to the ``thermopylae`` command, which lives in the agents package
(playing against a model, hints and agent specs need it; the environments import nothing from it)."""

import sys

sys.stderr.write("thermopylae_env: the command line is 'thermopylae' (or: python -m thermopylae_agents)\n")
sys.exit(2)
