"""Conventions shared by every environment of the package: action checking and illegal actions.

Two kinds of bad action are told apart, as in PettingZoo and Pgx:

* An action that is not an element of the action space (wrong type or shape, out of range, NaN, None)
  is a programming error. :func:`as_action_index` raises ``TypeError`` or ``ValueError`` before anything
  is touched, so the game is left exactly as it was.
* An action inside the space that the rules forbid now (its mask entry is 0) is a *move* error. By
  default (``illegal_action="loss"``) the episode ends as a loss for the agent, with reward
  ``illegal_action_penalty`` and ``info["illegal_action"] = True`` plus ``info["illegal_reason"]``:
  Gymnasium's and SB3's checkers, and plain PPO, step with unmasked random actions and must not crash.
  With ``illegal_action="raise"`` an :class:`IllegalActionError` is raised instead and the game is
  left exactly as it was.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "ILLEGAL_ACTION_MODES",
    "IllegalActionError",
    "as_action_index",
    "check_illegal_action_mode",
    "check_illegal_action_penalty",
]

ILLEGAL_ACTION_MODES = ("loss", "raise")


class IllegalActionError(ValueError):
    """An action the rules forbid in the current state (raised when ``illegal_action="raise"``)."""


def check_illegal_action_mode(mode: str) -> str:
    """Return ``mode`` if it is a known illegal-action policy, else raise a ``ValueError``."""
    if mode not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {mode!r}")
    return mode


def check_illegal_action_penalty(penalty: object) -> float:
    """Return ``penalty`` as a float if it is a finite number, else raise a ``ValueError`` naming it (a NaN
    or infinite reward would poison every value estimate trained on it)."""
    try:
        value = float(penalty)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"illegal_action_penalty must be a number, got {penalty!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"illegal_action_penalty must be a finite number, got {penalty!r}")
    return value


def as_action_index(action: object, n: int) -> int:
    """Check that ``action`` is an element of ``Discrete(n)`` and return it as a Python ``int``.

    Accepts Python and NumPy integers and 0-d integer arrays (what SB3 and Gymnasium pass). Raises
    ``TypeError`` for anything that is not an integer and ``ValueError`` for NaN, a non-scalar array or
    a value outside ``0..n-1``.
    """
    if action is None:
        raise TypeError("action is None; expected an integer in the action space")
    if isinstance(action, np.ndarray):
        if action.shape != ():
            raise ValueError(f"action must be a scalar, got an array of shape {action.shape}")
        action = action.item()
    if isinstance(action, (bool, np.bool_)):
        raise TypeError(f"action must be an integer, got the boolean {action!r}")
    if isinstance(action, numbers.Integral):
        index = int(action)
    elif isinstance(action, numbers.Real):
        if math.isnan(float(action)):
            raise ValueError("action is NaN; expected an integer in the action space")
        raise TypeError(f"action must be an integer, got {type(action).__name__} {action!r}")
    else:
        raise TypeError(f"action must be an integer, got {type(action).__name__}")
    if not 0 <= index < n:
        raise ValueError(f"action {index} is outside the action space Discrete({n})")
    return index
