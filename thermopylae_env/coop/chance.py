"""The chance of the co-op vector engine: every random draw of one game made when it starts, from a
SplitMix64 stream keyed by the game's seed, and the checks of chance tables a caller passes in.

See [`thermopylae_env.coop.vector_engine`][] for how the streams are keyed (game ``i``'s seed, how many
games it has finished) and the single engine for what the tables mean (the same orders and dice play the
same game on [`thermopylae_env.coop.rules.CoopGame`][]).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.kernel import (
    _U_GAMMA,
    CHANCE_WORDS,
    DICE_PER_GAME,
    TIE_WORDS,
    WORDS_PER_EPISODE,
)
from thermopylae_env.coop.layout import SPARTAN_DECK_SIZE

__all__ = ["ChanceFn", "check_chance", "seed_keys", "splitmix_chance"]


ChanceFn = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""``chance(games, keys, episodes) -> (spartan_order, persian_order, dice)`` for the ``k`` games that
start now: ``games`` their indices, ``keys`` their uint64 seed keys, ``episodes`` how many games each has
started since it was seeded. Returns int arrays of shapes ``(k, 20)`` (permutations of the Spartan card
ids), ``(k, 28)`` (permutations of the Persian rows) and ``(k, DICE_PER_GAME)`` (values 1..6)."""

# ---------------------------------------------------------------------------------------------- chance

_GAMMA = int(_U_GAMMA)  # SplitMix64's increment
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_WORDS_PER_EPISODE = WORDS_PER_EPISODE  # stream positions reserved for one game
_CHANCE_WORDS = CHANCE_WORDS
_TIE_WORDS = TIE_WORDS


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function, in place on a uint64 array (wrapping arithmetic)."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return z


def seed_keys(seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """The uint64 key of each seed: SplitMix64's first output for that seed (seeds taken mod 2**64)."""
    values = np.array([int(s) % (1 << 64) for s in seeds], dtype=np.uint64)
    with np.errstate(over="ignore"):
        return _mix64(values + np.uint64(_GAMMA))


def _random_words(keys: np.ndarray, episodes: np.ndarray, count: int, first: int = 0) -> np.ndarray:
    """``(k, count)`` uint64: SplitMix64 outputs ``128 * episode + j`` (``first <= j < first + count``)
    of each key."""
    position = episodes.astype(np.uint64)[:, None] * np.uint64(_WORDS_PER_EPISODE) + np.arange(
        first + 1, first + count + 1, dtype=np.uint64
    )
    with np.errstate(over="ignore"):
        return _mix64(keys.astype(np.uint64)[:, None] + position * np.uint64(_GAMMA))


def _sort_keys_to_permutation(keys: np.ndarray, low_mask: int) -> np.ndarray:
    """Permutations of ``0..n-1`` (n <= 32) from random sort keys ((k, n), uint32 or uint64): the position
    goes into the low 5 bits, so equal keys cannot happen; rows whose random parts tie are flagged."""
    n = keys.shape[1]
    dtype = keys.dtype.type
    packed = (keys & dtype(low_mask)) | np.arange(n, dtype=keys.dtype)
    packed.sort(axis=1)
    random_part = packed >> dtype(5)
    equal = random_part[:, 1:] == random_part[:, :-1]
    tied = equal.any(axis=1) if equal.any() else None
    return (packed & dtype(31)).astype(np.int8), tied


def _permutations(
    halves: np.ndarray, keys: np.ndarray, episodes: np.ndarray, first_tie_word: int
) -> np.ndarray:
    """Uniform permutations from 27 random bits per element (uint32 sort keys, fast). The rare rows where
    two keys tie (about 1 in 10**6) are redone with 64-bit keys from their own reserved stream words,
    so every permutation is exactly uniform (up to a 64-bit tie, about 1 in 10**16)."""
    perm, tied = _sort_keys_to_permutation(halves, 0xFFFFFFE0)
    if tied is not None:
        rows = np.flatnonzero(tied)
        words = _random_words(keys[rows], episodes[rows], halves.shape[1], first=first_tie_word)
        perm[rows], _ = _sort_keys_to_permutation(words, 0xFFFFFFFFFFFFFFE0)
    return perm


def splitmix_chance(
    games: np.ndarray, keys: np.ndarray, episodes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The default chance source (see the module docstring): deck orders and dice of the games that start.

    A game uses SplitMix64 outputs ``128 * episode + j`` of its key. Words 0..35 are split into 72 halves
    of 32 bits: halves 0..19 sort the Spartan deck and 20..47 the Persian deck (27 random bits each; the
    rare ties are redone exactly with words 64..111), halves 48..71 give the 24 dice as ``1 + (6 * h) >>
    32`` (each face within 1.4e-9 of 1/6).
    """
    del games  # the tables depend on the key and the episode number only
    keys = np.asarray(keys, dtype=np.uint64)
    episodes = np.asarray(episodes, dtype=np.uint64)
    words = _random_words(keys, episodes, _CHANCE_WORDS)
    halves = np.empty((len(keys), 2 * _CHANCE_WORDS), np.uint32)
    halves[:, 0::2] = words & np.uint64(0xFFFFFFFF)
    halves[:, 1::2] = words >> np.uint64(32)
    spartan = _permutations(halves[:, :SPARTAN_DECK_SIZE], keys, episodes, _TIE_WORDS)
    persian_halves = halves[:, SPARTAN_DECK_SIZE : SPARTAN_DECK_SIZE + PERSIAN_DECK_SIZE]
    persian = _permutations(persian_halves, keys, episodes, _TIE_WORDS + SPARTAN_DECK_SIZE)
    dice = halves[:, SPARTAN_DECK_SIZE + PERSIAN_DECK_SIZE :].astype(np.uint64) * np.uint64(6)
    return spartan, persian, (dice >> np.uint64(32)).astype(np.int8) + np.int8(1)


# ---------------------------------------------------------------------------------------------- actions


def check_chance(spartan: object, persian: object, dice: object, k: int, n_rows: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check what a chance source returned for ``k`` games and return it as int8 arrays: each Spartan row
    a permutation of ``0..19``, each Persian row a permutation of ``0..n_rows - 1``, each die in 1..6. The
    tables are checked as the source gave them (no wrapping cast first: 257 is not card 1). Raises
    ``ValueError`` naming the first problem; nothing has been written when it does."""
    tables = []
    for name, table, width, low, high in (("Spartan", spartan, SPARTAN_DECK_SIZE, 0, SPARTAN_DECK_SIZE - 1),
                                          ("Persian", persian, n_rows, 0, n_rows - 1),
                                          ("dice", dice, DICE_PER_GAME, 1, 6)):
        arr = np.asarray(table)
        if arr.dtype.kind not in "iu":
            raise ValueError(f"the chance source returned {name} values of dtype {arr.dtype}, not integers")
        if arr.shape != (k, width):
            raise ValueError(f"the chance source returned a {name} table of shape {arr.shape}, "
                             f"expected {(k, width)}")
        if arr.size and (arr.min() < low or arr.max() > high):
            what = "dice" if name == "dice" else f"{name} card ids"
            raise ValueError(f"the chance source returned {what} outside {low}..{high}")
        if name != "dice" and k and not (np.sort(arr, axis=1) == np.arange(width)).all():
            bad = int(np.flatnonzero(~(np.sort(arr, axis=1) == np.arange(width)).all(axis=1))[0])
            raise ValueError(f"the chance source returned a {name} order that is not a permutation of "
                             f"0..{width - 1} (row {bad}: a card would be lost or duplicated)")
        tables.append(arr.astype(np.int8))
    return tables[0], tables[1], tables[2]
