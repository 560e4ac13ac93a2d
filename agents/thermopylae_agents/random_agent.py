"""A uniformly random legal player, usable with every environment of the package (co-op and duel)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["RandomAgent"]


class RandomAgent:
    """Plays a legal action chosen uniformly at random.

    It needs nothing but the legal-action mask, so one class serves the co-op game, both sides of the
    duel and the PettingZoo view (pass the dict observation and ``action_mask=None`` there).

    Args:
        seed: seed of the agent's own generator, used when ``act`` is called without ``rng``.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(
        self,
        observation: np.ndarray | Mapping[str, np.ndarray] | None,
        action_mask: np.ndarray | None = None,
        rng: np.random.Generator | None = None,
    ) -> int:
        """A random index among the true entries of ``action_mask``.

        ``rng`` (e.g. an environment's ``np_random``) replaces the agent's own generator for this call.
        With ``action_mask=None`` the mask is read from ``observation["action_mask"]``. Raises
        ``ValueError`` when no action is legal.
        """
        if action_mask is None:
            if isinstance(observation, Mapping) and "action_mask" in observation:
                action_mask = observation["action_mask"]
            else:
                raise ValueError("RandomAgent needs an action mask (or a dict observation holding one)")
        legal = np.flatnonzero(action_mask)
        if legal.size == 0:
            raise ValueError("no legal action: the action mask is all zeros")
        generator = self.rng if rng is None else rng
        return int(legal[generator.integers(legal.size)])
