"""The uniformly random legal player; it lives in :mod:`thermopylae_env.opponents` (the duel's
``opponent="random"`` is part of the environments' definition) and is re-exported here for the agents
code."""

from thermopylae_env.opponents import RandomAgent

__all__ = ["RandomAgent"]
