"""The two Thermopylae games as OpenSpiel Python games (needs ``pip install "thermopylae-env[openspiel]"``).

Importing this package registers ``python_thermopylae_coop`` and ``python_thermopylae_duel`` with
``pyspiel``; then ``pyspiel.load_game("python_thermopylae_duel")`` works. The environments never import
it. See ``docs/openspiel.md``.
"""

try:
    import pyspiel  # noqa: F401
except ImportError:
    raise ImportError("thermopylae_agents.openspiel needs the 'openspiel' extra (open_spiel is not "
                      "installed): pip install 'thermopylae-env[openspiel]'") from None

from thermopylae_agents.openspiel import coop, duel  # noqa: E402,F401  (registers the games)

__all__ = ["coop", "duel"]
