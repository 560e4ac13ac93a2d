"""Conventions shared by every environment of the package: what an action, a seed and reset options may
be, and what happens on an illegal action. Every entry point applies these rules through the functions
below, before it changes anything, so the same input gets the same answer everywhere.

Two kinds of bad action are told apart, as in PettingZoo and Pgx:

* An action that is not an element of the action space (wrong type or shape, out of range, NaN, None)
  is a programming error. [`as_action_index`][thermopylae_env.actions.as_action_index] raises ``TypeError`` or
  ``ValueError`` before anything is touched, so the game is left exactly as it was.
* An action inside the space that the rules forbid now (its mask entry is 0) is a *move* error. By
  default (``illegal_action="loss"``) the episode ends as a loss for the agent, with reward
  ``illegal_action_penalty`` and ``info["illegal_action"] = True`` plus ``info["illegal_reason"]``:
  Gymnasium's and SB3's checkers, and plain PPO, step with unmasked random actions and must not crash.
  With ``illegal_action="raise"`` an [`IllegalActionError`][thermopylae_env.actions.IllegalActionError] is
  raised instead and the game is left exactly as it was. The single envs also take
  ``illegal_action="replace"``, for learners that cannot mask (RL Zoo's plain PPO): the legal action with the
  nearest id is played instead ([`nearest_legal_action`][thermopylae_env.actions.nearest_legal_action]; on a
  tie the lower id), the episode goes on, and the step's ``info`` has ``illegal_action_replaced = True``,
  ``played_action`` and ``illegal_reason``.

Seeds ([`as_seed`][thermopylae_env.actions.as_seed]): ``None`` or an integer (Python or NumPy, not a boolean)
in ``0 .. 2**64 - 1``; anything else raises ``TypeError`` (not an integer) or ``ValueError`` (out of range). A
vector env takes one such seed, or one per game ([`as_seed_list`][thermopylae_env.actions.as_seed_list]: a
list, tuple or 1-d integer array of them, where a ``None`` entry keeps that game's stream).

Masked arrays (``numpy.ma``) are refused wherever an action, a seed or a reset mask is taken
([`refuse_masked`][thermopylae_env.actions.refuse_masked], ``TypeError``): what their hidden entries hold
would otherwise be used silently.

Reset options ([`check_options`][thermopylae_env.actions.check_options]): ``None`` or a ``dict`` whose keys
the environment documents; a non-dict or an unknown key raises ``TypeError`` / ``ValueError`` naming it.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "ILLEGAL_ACTION_MODES",
    "IllegalActionError",
    "as_action_batch",
    "as_action_index",
    "as_action_name",
    "as_game_seeds",
    "as_reset_mask",
    "as_seed",
    "as_seed_list",
    "check_options",
    "check_illegal_action_mode",
    "check_illegal_action_penalty",
    "check_reward_shaping",
    "nearest_legal_action",
    "refuse_masked",
    "SINGLE_ENV_ILLEGAL_ACTION_MODES",
]

ILLEGAL_ACTION_MODES = ("loss", "raise")
#: the single envs (``thermopylae_env.core``) also replace an illegal action; the vector engines do not
SINGLE_ENV_ILLEGAL_ACTION_MODES = ("loss", "raise", "replace")


class IllegalActionError(ValueError):
    """An action the rules forbid in the current state (raised when ``illegal_action="raise"``)."""


def check_illegal_action_mode(mode: str, modes: tuple[str, ...] = ILLEGAL_ACTION_MODES) -> str:
    """Return ``mode`` if it is one of ``modes`` (the illegal-action policies the caller implements), else
    raise a ``ValueError``."""
    if mode not in modes:
        raise ValueError(f"illegal_action must be one of {modes}, got {mode!r}")
    return mode


def nearest_legal_action(mask: np.ndarray, action: int) -> int:
    """The legal action (``mask`` entry non-zero) whose id is nearest to ``action``, the lower id on a tie:
    what ``illegal_action="replace"`` plays. A mask with no legal action raises ``ValueError``."""
    legal = np.flatnonzero(mask)
    if legal.size == 0:
        raise ValueError("no legal action to play instead of an illegal one")
    return int(legal[np.argmin(np.abs(legal - action))])  # argmin takes the first, the lower id, on a tie


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


def check_reward_shaping(shaping: object) -> float:
    """Return ``shaping`` as a float if it is a finite number >= 0, else raise a ``ValueError`` naming it
    (the co-op envs' ``reward_shaping``: a negative rate would reward losing cards)."""
    try:
        value = float(shaping)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"reward_shaping must be a finite number >= 0, got {shaping!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"reward_shaping must be a finite number >= 0, got {shaping!r}")
    return value


def refuse_masked(value: object, name: str) -> None:
    """Raise ``TypeError`` if ``value`` is a NumPy masked array (its hidden entries would be used)."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array (numpy.ma): its hidden entries would be used")


def as_action_index(action: object, n: int) -> int:
    """Check that ``action`` is an element of ``Discrete(n)`` and return it as a Python ``int``.

    Accepts Python and NumPy integers and 0-d integer arrays (what SB3 and Gymnasium pass). Raises
    ``TypeError`` for anything that is not an integer and ``ValueError`` for NaN, a non-scalar array or
    a value outside ``0..n-1``.
    """
    if action is None:
        raise TypeError("action is None; expected an integer in the action space")
    refuse_masked(action, "action")
    if isinstance(action, np.ndarray):
        if action.shape != ():
            raise ValueError(f"action must be a scalar, got an array of shape {action.shape}")
        action = action.item()
    if isinstance(action, (bool, np.bool_)):
        raise TypeError(f"action must be an integer, got the boolean {action!r}")
    if isinstance(action, (np.timedelta64, np.datetime64)):
        raise TypeError(f"action must be an integer, got {type(action).__name__} {action!r}")
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


def as_action_name(name: object) -> str:
    """Return ``name`` if it is a ``str`` (an action's readable name), else raise a one-line ``TypeError``."""
    if not isinstance(name, str):
        raise TypeError(f"action name must be a string, got {type(name).__name__}")
    return name


def as_action_batch(actions: object, num_envs: int, n: int) -> np.ndarray:
    """Check that ``actions`` is an element of ``MultiDiscrete([n] * num_envs)``; return it as ``intp``.

    The batched form of [`as_action_index`][thermopylae_env.actions.as_action_index], with the same rules for
    each entry: ``TypeError`` for anything that is not integers (floats, booleans, None, objects, times, a
    masked array, whose hidden entries would be played), ``ValueError`` for NaN, a wrong shape or a value
    outside ``0..n-1``.
    """
    if actions is None:
        raise TypeError("actions is None; expected an integer array of shape (num_envs,)")
    refuse_masked(actions, "actions")
    if isinstance(actions, np.ndarray):
        arr = actions
    else:
        if isinstance(actions, (list, tuple)) and any(isinstance(a, (bool, np.bool_)) for a in actions):
            raise TypeError("actions must be integers, got a boolean entry")
        try:
            arr = np.asarray(actions)
        except (TypeError, ValueError) as err:
            raise TypeError(f"actions must be an integer array, got {type(actions).__name__}") from err
    kind = arr.dtype.kind
    if kind not in "iu":
        if kind == "b":
            raise TypeError("actions must be integers, got booleans")
        if kind in "fc" and arr.size and np.isnan(arr).any():
            raise ValueError("actions contain NaN; expected integers in the action space")
        raise TypeError(f"actions must be integers, got dtype {arr.dtype}")
    if arr.shape != (num_envs,):
        raise ValueError(f"actions must have shape ({num_envs},), got {arr.shape}")
    if num_envs and (arr.min() < 0 or arr.max() >= n):
        bad = int(np.flatnonzero((arr < 0) | (arr >= n))[0])
        raise ValueError(f"action {int(arr[bad])} of game {bad} is outside the action space Discrete({n})")
    return arr.astype(np.intp, copy=False)


SEED_LIMIT = 1 << 64


def as_seed(seed: object, name: str = "seed") -> int | None:
    """Return ``seed`` as a Python ``int`` (or ``None``) if it is a valid seed, else raise.

    A seed is ``None`` or an integer, Python or NumPy but not a boolean, in ``0 .. 2**64 - 1``: the
    vector engines key each game by a 64-bit word, so a larger seed would repeat a smaller one.
    """
    if seed is None:
        return None
    refuse_masked(seed, name)
    if isinstance(seed, np.ndarray) and seed.shape == () and seed.dtype.kind in "iu":
        seed = seed.item()
    if isinstance(seed, (bool, np.bool_, np.timedelta64, np.datetime64)) or not isinstance(
            seed, numbers.Integral):
        shown = repr(seed)[:60]
        raise TypeError(f"{name} must be None or a non-negative integer, got {type(seed).__name__} {shown}")
    value = int(seed)
    if not 0 <= value < SEED_LIMIT:
        raise ValueError(f"{name} must be in 0 .. 2**64 - 1, got {str(value)[:40]}")
    return value


def as_seed_list(seed: object, num_envs: int) -> list[int | None]:
    """One seed per game from a sequence (a list, tuple or 1-d integer array of
    [`as_seed`][thermopylae_env.actions.as_seed] values, ``None`` entries allowed, exactly ``num_envs`` long);
    raise ``TypeError`` / ``ValueError`` otherwise."""
    refuse_masked(seed, "seed")
    if isinstance(seed, np.ndarray):
        if seed.ndim != 1 or seed.dtype.kind not in "iuO":
            raise TypeError(f"per-game seeds must be a 1-d integer array, got dtype {seed.dtype}, "
                            f"shape {seed.shape}")
        seq = list(seed)
    elif isinstance(seed, (list, tuple)):
        seq = list(seed)
    else:
        raise TypeError(f"seed must be None, an integer or a list of {num_envs} seeds, "
                        f"got {type(seed).__name__}")
    if len(seq) != num_envs:
        raise ValueError(f"expected {num_envs} seeds (one per game), got {len(seq)}")
    return [as_seed(s, f"seed of game {i}") for i, s in enumerate(seq)]


def as_game_seeds(seed: object, num_envs: int) -> list[int | None] | None:
    """The seed of each of ``num_envs`` games from a vector env's ``seed`` argument: ``None`` for ``None``,
    [`as_seed_list`][thermopylae_env.actions.as_seed_list] for a sequence, ``[s, s + 1, ..]`` for one seed
    ``s``, refused (``ValueError``) where the last game's seed would pass ``2**64 - 1`` (it would wrap round
    to the games of small seeds)."""
    if seed is None:
        return None
    if isinstance(seed, (list, tuple)) or (isinstance(seed, np.ndarray) and seed.ndim > 0):
        return as_seed_list(seed, num_envs)
    first = as_seed(seed)
    if first + num_envs - 1 >= SEED_LIMIT:
        raise ValueError(f"seed {first} + {num_envs - 1} (the seed of the last game) is not below 2**64")
    return [first + i for i in range(num_envs)]


def as_reset_mask(mask: object, num_envs: int) -> np.ndarray:
    """``options["reset_mask"]`` checked: a bool array (not a masked array) of shape ``(num_envs,)``."""
    refuse_masked(mask, "options['reset_mask']")
    arr = np.asarray(mask)
    if arr.dtype != bool or arr.shape != (num_envs,):
        raise ValueError(f"options['reset_mask'] must be a bool array of shape ({num_envs},)")
    return arr


def check_options(options: object, known: tuple[str, ...]) -> dict:
    """Return ``options`` as a dict (``{}`` for ``None``) if it is a dict with only ``known`` keys."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"options must be None or a dict, got {type(options).__name__}")
    unknown = [k for k in options if k not in known]
    if unknown:
        allowed = ", ".join(repr(k) for k in known) if known else "none"
        raise ValueError(f"unknown reset option {str(unknown[0])[:60]!r} (known options: {allowed})")
    return options
