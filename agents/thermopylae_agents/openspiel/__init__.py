"""The two Thermopylae games as OpenSpiel Python games (needs ``pip install "thermopylae-env[openspiel]"``).

Importing this package registers ``python_thermopylae_coop`` and ``python_thermopylae_duel`` with
``pyspiel``; then ``pyspiel.load_game("python_thermopylae_duel")`` works. The environments never import
it. See ``docs/openspiel.md``.
"""

from thermopylae_agents.openspiel import coop, duel  # noqa: F401  (registers the games)

__all__ = ["coop", "duel"]
