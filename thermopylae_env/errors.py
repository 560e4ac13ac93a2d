"""Exceptions shared by the rules engines and the environments."""

from __future__ import annotations

__all__ = ["InvariantError"]


class InvariantError(RuntimeError):
    """A state that breaks a rule no legal play can break (a card in two places, a count out of range).

    Raised by each engine's ``check_invariants(state)``; seeing one means a bug or a hand-edited state,
    never a bad move by a player.
    """
