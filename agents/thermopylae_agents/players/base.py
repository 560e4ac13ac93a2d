"""The one interface every agent of the package implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """A player: given what its side observes and the legal-action mask, choose an action.

    ``observation`` is the environment's flat float32 observation, ``action_mask`` a boolean (or 0/1)
    vector over the action space. ``act`` must return an index whose mask entry is true. Agents that
    need randomness take a ``numpy.random.Generator`` so that evaluation can be seeded and paired.
    """

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...
