"""thermopylae-env: Gymnasium environments for two card games about the battle of Thermopylae.

Importing the package registers the environments:

    import gymnasium as gym
    import thermopylae_env  # noqa: F401

    env = gym.make("thermopylae/Coop-v0")          # co-op solitaire, Spartans against the Persian deck
    env = gym.make("thermopylae/DuelGreek-v0")     # duel, you play the Greeks
    env = gym.make("thermopylae/DuelPersian-v0")   # duel, you play the Persians

The duel as a PettingZoo game is ``thermopylae_env.duel_v1`` (``duel_v1.env()``).
"""

from __future__ import annotations

from typing import Any

# Importing the package leaves the process's environment alone: the thread settings are the entry points'
# to make, or the user's (thermopylae_env.threads.configure_environment).
from gymnasium.envs.registration import register, registry

__version__ = "0.1.0"

# The registered ids, defined once: every module that names an env imports them from here.
COOP_ID = "thermopylae/Coop-v0"
GREEK_ID = "thermopylae/DuelGreek-v0"
PERSIAN_ID = "thermopylae/DuelPersian-v0"

_ENVIRONMENTS = {
    COOP_ID: {
        "entry_point": "thermopylae_env.coop.env:CoopEnv",
        "vector_entry_point": "thermopylae_env.coop.vector:CoopVectorEnv",
    },
    GREEK_ID: {
        "entry_point": "thermopylae_env.duel.env:DuelGreekEnv",
        "vector_entry_point": "thermopylae_env.duel.vector:DuelGreekVectorEnv",
    },
    PERSIAN_ID: {
        "entry_point": "thermopylae_env.duel.env:DuelPersianEnv",
        "vector_entry_point": "thermopylae_env.duel.vector:DuelPersianVectorEnv",
    },
}

for _env_id, _spec in _ENVIRONMENTS.items():
    if _env_id not in registry:
        # order_enforce=False: the envs refuse a step before reset themselves (core.ResetNeeded, also
        # Gymnasium's ResetNeeded) and render a game not yet started, so OrderEnforcing would only add a
        # call to every step; Gymnasium's passive checker stays.
        register(id=_env_id, order_enforce=False, **_spec)


class _RemovedVersion:
    """What ``from thermopylae_env import duel_v0`` gives, as PettingZoo answers an old version of one of its
    games: importing works (so a script fails where it builds the env, with the reason), and each
    constructor raises an ``ImportError`` naming the version to use."""

    def __init__(self, old: str, new: str, why: str) -> None:
        def constructor(*args: Any, **kwargs: Any) -> Any:
            raise ImportError(f"thermopylae_env.{old} was removed: use thermopylae_env.{new} ({why})")

        self.env = self.raw_env = self.parallel_env = constructor


# PettingZoo module names of earlier versions of a game -> (the current name, what changed).
_REMOVED_VERSIONS = {"duel_v0": ("duel_v1", "its max_cycles counts cycles, not micro-actions")}


def __getattr__(name: str) -> Any:
    if name in _REMOVED_VERSIONS:
        return _RemovedVersion(name, *_REMOVED_VERSIONS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
