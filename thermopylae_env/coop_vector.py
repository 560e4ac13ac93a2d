"""The co-op game for many games at once (``gymnasium.make_vec``).

:class:`CoopVectorEngine` holds ``N`` games as arrays of shape ``(N, ...)`` (int8 / int16 state, one
persistent float32 observation buffer, one boolean mask buffer) and advances all of them with one call of
the compiled kernel :mod:`thermopylae_env._coop_kernel`: a loop over the games (over all cores for large
batches) whose small named steps follow the reference engine :class:`thermopylae_env.coop.CoopGame`.
The observation is updated in place (only the entries an action can change are rewritten), and the mask
row is one row of a table of all 12,290 possible mask rows, indexed by (phase, support left, the bit set
of values the deciding seat holds). :class:`CoopVectorEnv` is the Gymnasium ``VectorEnv`` over it;
``thermopylae_env.sb3_vec.CoopSB3VecEnv`` is the Stable-Baselines3 ``VecEnv`` over it.
``scripts/benchmark.py`` measures it (``benchmarks/``).

numba is a dependency of the package; where it cannot be imported the same kernel source runs as plain
Python (much slower), and :attr:`CoopVectorEngine.backend` says ``"python"``.

The rules, the action layout and the observation layout are those of :mod:`thermopylae_env.coop`, both
layouts defined once in :mod:`thermopylae_env.coop_layout`; ``tests/test_coop_vector.py`` drives both
engines through thousands of games with the same shuffles and dice and compares every observation,
reward, termination and mask.

Chance is explicit. Everything random in one game (the Spartan deck order, the Persian deck order and the
dice) is drawn when the game starts, as three tables: ``spartan_order`` (20 card ids, top first, as
:meth:`thermopylae_env.coop.CoopGame.new_state` takes them), ``persian_order`` (28 rows, top first) and
``dice`` (:data:`DICE_PER_GAME` = 24 dice, used in order: one game needs at most 20 location dice, one
per fight, plus 4 support dice; the engine keeps their prefix sums). The single engine fed the same
orders, and dice served in the same order from its ``rng``, plays the same game.
:meth:`CoopVectorEngine.chance_tables` returns the tables of the games now running, and a ``chance``
callable can replace the default source.

Seeding: game ``i`` is keyed by its own seed (``reset(seed=s)`` gives game ``i`` the seed ``s + i``,
``reset(seed=[s_0, ..., s_{N-1}])`` one seed per game, as SB3's ``VecEnv.seed`` does). Its ``e``-th game
(``e = 0, 1, ...`` since the seed was set) is drawn from a counter-based generator: SplitMix64 outputs
number ``128 e + j`` of the stream keyed by the seed. So what game ``i`` plays depends only on its seed
and on how many games it has finished, never on the other games or on when they reset, and the chance of
thousands of restarting games is drawn with a handful of array operations. (The streams are not those of
the single environment's ``numpy.random.Generator``: the same seed gives other, equally distributed
games.)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from thermopylae_env import _coop_kernel
from thermopylae_env._coop_kernel import (
    _U_GAMMA,
    BITS,
    CHANCE_WORDS,
    DECLINE,
    DICE_PER_GAME,
    DISCARD,
    DISCARD_CARD,
    DRAW_OFFER,
    FIGHT,
    GIVE,
    HAND_LIMIT,
    MAIN,
    MASK_DISCARD,
    MASK_NONE,
    MASK_OFFER,
    NOOP,
    OVER,
    RETREAT,
    TIE_WORDS,
    WORDS_PER_EPISODE,
)
from thermopylae_env.actions import (
    IllegalActionError,
    as_action_batch,
    as_seed,
    as_seed_list,
    check_illegal_action_mode,
    check_illegal_action_penalty,
    check_options,
    check_reward_shaping,
)
from thermopylae_env.cards import PersianRows, load_persian_deck, load_spartan_deck
from thermopylae_env.coop_layout import DECLINE as DECLINE_ACTION
from thermopylae_env.coop_layout import (
    DISCARD_BASE,
    FIGHT_BASE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MAX_PLAYERS,
    MIN_VALUE,
    NOOP_ACTION,
    NUM_ACTIONS,
    NUM_SUPPORT,
    NUM_VALUES,
    OBS,
    OBS_SIZE,
    PERSIAN_DECK_SIZE,
    SPARTAN_DECK_SIZE,
    VALUE_SCALE,
)
from thermopylae_env.threads import kernel_threads

__all__ = [
    "DICE_PER_GAME",
    "BACKENDS",
    "ChanceFn",
    "CoopVectorEngine",
    "CoopVectorEnv",
    "resolve_backend",
    "splitmix_chance",
]

# Observation offsets, from the layout.
_O_PHASE = OBS["phase"].offset
_O_SEAT = OBS["seat"].offset
_O_RECIPIENT = OBS["recipient"].offset
_O_HANDS = OBS["hands"].offset
_O_SLOTS = OBS["slot1"].offset
_O_MARKER = OBS["marker"].offset
_O_SUPPORT = OBS["support"].offset
_O_SPARTAN_DECK = OBS["spartan_deck"].offset
_O_PERSIAN_DECK = OBS["persian_deck"].offset
_O_GRAVEYARD = OBS["graveyard"].offset
_O_PERSIAN_DISCARD = OBS["persian_discard"].offset
_O_OFFERS = OBS["offers"].offset
_O_UNSEEN_SPARTAN = OBS["unseen_spartan"].offset
_O_UNSEEN_PERSIAN = OBS["unseen_persian"].offset

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


# ---------------------------------------------------------------------------------------------- tables


def _f32(x: float) -> np.float32:
    """How the single engine writes a value: a Python float rounded once to float32."""
    return np.float32(x)



class _Tables:
    """Lookup tables shared by every engine of one (num_players, Persian deck) configuration."""

    def __init__(self, num_players: int, persian: Sequence) -> None:
        p = num_players
        # Action code (int16): value index | support << 4 | seat << 7 | kind << 9; row 72 is the no-op.
        code = np.zeros(NUM_ACTIONS + 1, np.int16)
        code[0] = RETREAT << 9
        for a in range(FIGHT_BASE, GIVE_BASE):
            value, support = divmod(a - FIGHT_BASE, NUM_SUPPORT + 1)
            code[a] = value | support << 4 | FIGHT << 9
        for seat in range(MAX_PLAYERS):
            code[GIVE_BASE + seat] = seat << 7 | GIVE << 9
        code[DECLINE_ACTION] = DECLINE << 9
        for value in range(NUM_VALUES):
            code[DISCARD_BASE + value] = value | DISCARD_CARD << 9
        code[NOOP_ACTION] = NOOP << 9
        self.action_code = code

        spartan = load_spartan_deck()
        self.spartan_value = np.array([v - MIN_VALUE for v in spartan], np.int8)  # card id -> value index
        full = np.bincount(self.spartan_value, minlength=NUM_VALUES)
        # Persian rows as int16: white | red << 7 | bonus << 14, shifted by one so that index 0 is the
        # empty slot (white = red = 127: never beaten, a total is at most 20 + 5 * 6).
        if any(card.red > 99 for card in persian):
            raise ValueError("Persian card values above 99 are not supported")
        self.slot_pack = np.array(
            [127 | 127 << 7] + [c.white | c.red << 7 | int(bool(c.bonus)) << 14 for c in persian], np.int16
        )

        # Observation pieces.
        slot_code = np.zeros((len(persian) + 1, 4), np.float32)
        for j, card in enumerate(persian, start=1):
            slot_code[j] = (1.0, _f32(min(1.0, card.white / VALUE_SCALE)),
                            _f32(min(1.0, card.red / VALUE_SCALE)), 1.0 if card.bonus else 0.0)
        n_slot = len(persian) + 1
        slots = np.zeros((n_slot * n_slot, 8), np.float32)  # 55:63, row (slot1+1)*29 + slot2+1
        slots[:, :4] = np.repeat(slot_code, n_slot, axis=0)
        slots[:, 4:] = np.tile(slot_code, (n_slot, 1))
        self.obs_slots = slots
        phase_rows = np.zeros((4, 3), np.float32)  # 0:3 by phase (OVER: all zero)
        phase_rows[[0, 1, 2], [0, 1, 2]] = 1.0
        self.obs_phase = phase_rows
        marker_support = np.zeros((LOSS_MARKER * (NUM_SUPPORT + 1), 8), np.float32)  # 63:71
        for m in range(1, LOSS_MARKER + 1):
            for s in range(NUM_SUPPORT + 1):
                marker_support[(m - 1) * (NUM_SUPPORT + 1) + s, m - 1] = 1.0
                marker_support[(m - 1) * (NUM_SUPPORT + 1) + s, 7] = _f32(s / NUM_SUPPORT)
        self.obs_marker_support = marker_support
        n_rows = len(persian)
        self.obs_spartan_deck = np.array(
            [_f32((SPARTAN_DECK_SIZE - pos) / SPARTAN_DECK_SIZE) for pos in range(SPARTAN_DECK_SIZE + 1)],
            np.float32)
        self.obs_persian_deck = np.array(
            [_f32((n_rows - pos) / PERSIAN_DECK_SIZE) for pos in range(n_rows + 1)], np.float32)
        self.obs_graveyard = np.array([_f32(g / GRAVEYARD_WIN) for g in range(n_rows + 1)], np.float32)
        self.obs_discard = np.array([_f32(d / PERSIAN_DECK_SIZE) for d in range(n_rows + 1)], np.float32)
        self.obs_offers = np.array([_f32(o / 2) for o in range(3)], np.float32)
        self.obs_support = np.array([_f32(s / NUM_SUPPORT) for s in range(NUM_SUPPORT + 1)], np.float32)
        self.full_deck_half = (full * 0.5).astype(np.float32)  # 76:87 before any card is dealt
        dealt = (4 if p == 1 else 3) * p
        new = np.zeros(OBS_SIZE, np.float32)  # a new game, before its cards are known
        new[_O_PHASE + MAIN] = 1.0
        new[_O_SEAT] = 1.0  # seat 0 acts first
        new[_O_MARKER] = 1.0
        new[_O_SUPPORT] = 1.0
        new[_O_SPARTAN_DECK] = self.obs_spartan_deck[dealt]
        new[_O_PERSIAN_DECK] = self.obs_persian_deck[2]
        new[_O_UNSEEN_PERSIAN : _O_UNSEEN_PERSIAN + n_rows] = 1.0
        self.obs_new_game = new

        # Masks.
        masks = np.zeros((MASK_NONE + 1, NUM_ACTIONS), bool)
        bits = np.arange(BITS)
        held = (bits[:, None] >> np.arange(NUM_VALUES)) & 1 == 1  # (2048, 11)
        for s in range(NUM_SUPPORT + 1):
            block = masks[s * BITS : (s + 1) * BITS]
            block[:, 0] = True
            fight = np.zeros((BITS, NUM_VALUES, NUM_SUPPORT + 1), bool)
            fight[:, :, : s + 1] = held[:, :, None]
            block[:, FIGHT_BASE:GIVE_BASE] = fight.reshape(BITS, -1)
        masks[MASK_OFFER, GIVE_BASE : GIVE_BASE + p] = True
        masks[MASK_OFFER, DECLINE_ACTION] = True
        masks[MASK_DISCARD : MASK_DISCARD + BITS, DISCARD_BASE : DISCARD_BASE + NUM_VALUES] = held
        self.masks = masks


_TABLE_CACHE: dict[tuple, _Tables] = {}


def _tables(num_players: int, persian: tuple) -> _Tables:
    key = (num_players, persian)
    if key not in _TABLE_CACHE:
        _TABLE_CACHE[key] = _Tables(num_players, persian)
    return _TABLE_CACHE[key]


def _check_num_players(num_players: object) -> int:
    if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)):
        raise TypeError(f"num_players must be an integer, got {num_players!r}")
    if not 1 <= int(num_players) <= MAX_PLAYERS:
        raise ValueError(f"num_players must be 1..{MAX_PLAYERS}, got {num_players}")
    return int(num_players)


BACKENDS = ("auto", "numba")
_RETIRED_BACKENDS = {"numpy": "the NumPy whole-array engine was retired (one compiled kernel now plays every "
                              "game, as plain Python where numba is missing); use backend='auto'"}
_log = logging.getLogger("thermopylae_env")
_announced = False


def resolve_backend(backend: object) -> str:
    """The backend that ``backend`` (one of :data:`BACKENDS`) selects: ``"numba"`` (the compiled kernel)
    or ``"python"`` (the same kernel source, interpreted: only where numba cannot be imported).

    ``"auto"`` is ``"numba"`` where numba can be imported, else ``"python"``; ``"numba"`` without numba
    raises ``ImportError``; the retired ``"numpy"`` and anything else raise ``ValueError``.
    """
    if isinstance(backend, str) and backend in _RETIRED_BACKENDS:
        raise ValueError(f"backend={backend!r} is no longer available: {_RETIRED_BACKENDS[backend]}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if _coop_kernel.HAVE_NUMBA:
        return "numba"
    if backend == "numba":
        raise ImportError("backend='numba' needs numba, which cannot be imported; install it with pip "
                          "install numba, or use backend='auto' (the same kernel as plain Python, slower)")
    return "python"


def _announce_compilation() -> None:
    """Say once per process, before the pause, that the kernel is being compiled: the first process after
    an install or an edit compiles it (numba's on-disk cache serves the later ones)."""
    global _announced
    if _announced:
        return
    _announced = True
    dispatcher = _coop_kernel.step
    if not hasattr(dispatcher, "signatures") or dispatcher.signatures:
        return  # interpreted, or already compiled in this process
    try:
        cached = os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:  # numba's cache internals moved: say it, to be safe
        cached = False
    if not cached:
        _log.warning("thermopylae_env: compiling the co-op vector kernel with numba (once; the result is "
                     "cached on disk for later processes)")


# The kernel's "no actions" (reset only) and "no restarts" (read only, shared by all engines).
_NO_ACTIONS = np.zeros(0, np.intp)
_NO_RESTART = np.zeros(0, bool)


def _dice_sums(dice: np.ndarray) -> np.ndarray:
    """Prefix sums of each game's dice ((k, 24) -> (k, 25) int16, starting at 0)."""
    sums = np.zeros((len(dice), DICE_PER_GAME + 1), np.int16)
    np.cumsum(dice, axis=1, dtype=np.int16, out=sums[:, 1:])
    return sums


# ---------------------------------------------------------------------------------------------- engine


class CoopVectorEngine:
    """``num_envs`` co-op games as arrays (Gymnasium-free; the environments are thin views of it).

    State (``N = num_envs``; int8 unless said): ``phase`` (0 MAIN, 1 DRAW_OFFER, 2 DISCARD, 3 over),
    ``current`` and ``recipient`` seats, ``marker``, ``support``, ``spartan_pos`` / ``persian_pos`` (cards
    drawn from each deck), ``graveyard`` / ``persian_discard`` sizes, ``offers`` (pending after the current
    one), ``slot1`` / ``slot2`` (Persian row, -1 empty), ``hands`` (N, 4, 11) card counts per value,
    ``hand_total`` (cards in all hands), ``hand_bits`` (4, N) int16 (the values each seat holds, as bits),
    the chance tables ``spartan_order`` (N, 20), ``persian_order`` (N, 28) and the prefix sums of the 24
    dice ``dice_sum`` (N, 25) int16, with ``dice_pos`` the dice used; ``turn`` (int16) counts completed
    actions. ``won`` / ``lost`` say how a finished game ended. ``obs`` (N, 115) float32 and ``masks``
    (N, 72) bool are kept up to date in place.

    ``backend`` (see :func:`resolve_backend`): ``"numpy"`` advances the games with whole-array operations,
    ``"numba"`` with a compiled loop over the games (:mod:`thermopylae_env._coop_kernel`) that writes the
    same arrays, value for value; ``"auto"`` (the default) takes numba where it is installed.
    :attr:`backend` is the one in use.
    """

    def __init__(
        self,
        num_envs: int,
        num_players: int = 1,
        persian_deck: str | os.PathLike[str] | PersianRows | None = None,
        chance: ChanceFn | None = None,
        backend: str = "auto",
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        n = int(num_envs)
        self.num_envs = n
        self.num_players = _check_num_players(num_players)
        self.persian = load_persian_deck(persian_deck)
        self.chance: ChanceFn = splitmix_chance if chance is None else chance
        self.hand_size_at_start = 4 if self.num_players == 1 else 3
        # What was asked for; :attr:`backend`, what it resolves to, is derived (an "auto" engine copied to a
        # machine without numba runs there with NumPy).
        self._backend_requested = backend

        self.phase = np.full(n, OVER, np.int8)
        self.current = np.zeros(n, np.int8)
        self.recipient = np.full(n, -1, np.int8)
        self.marker = np.ones(n, np.int8)
        self.support = np.full(n, NUM_SUPPORT, np.int8)
        self.spartan_pos = np.zeros(n, np.int8)
        self.persian_pos = np.zeros(n, np.int8)
        self.graveyard = np.zeros(n, np.int8)
        self.persian_discard = np.zeros(n, np.int8)
        self.offers = np.zeros(n, np.int8)
        self.slot1 = np.full(n, -1, np.int8)
        self.slot2 = np.full(n, -1, np.int8)
        self.hands = np.zeros((n, MAX_PLAYERS, NUM_VALUES), np.int8)
        self.hand_total = np.zeros(n, np.int8)
        self.hand_bits = np.zeros((MAX_PLAYERS, n), np.int16)
        self.spartan_order = np.zeros((n, SPARTAN_DECK_SIZE), np.int8)
        self.persian_order = np.zeros((n, PERSIAN_DECK_SIZE), np.int8)
        self.dice_sum = np.zeros((n, DICE_PER_GAME + 1), np.int16)
        self.dice_pos = np.zeros(n, np.int8)
        self.turn = np.zeros(n, np.int16)
        self.won = np.zeros(n, bool)
        self.lost = np.zeros(n, bool)
        self.keys = np.zeros(n, np.uint64)
        self.episodes = np.zeros(n, np.uint64)
        self.obs = np.zeros((n, OBS_SIZE), np.float32)
        self.masks = np.zeros((n, NUM_ACTIONS), bool)
        self.seeded = False
        self._derive()

    # What is derived from the configuration: the shared lookup tables and the backend. A copy (deepcopy,
    # pickle) does not carry them; they are rebuilt on the copy (an "auto" engine copied to a machine
    # without numba runs there as plain Python).
    _DERIVED = ("t", "_rows", "_off_mask", "backend", "_kernel_tables")

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self._DERIVED:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._derive()

    def _derive(self) -> None:
        """Build the attributes of :attr:`_DERIVED` (after ``__init__`` and after unpickling)."""
        self.t = _tables(self.num_players, self.persian)
        self.backend = resolve_backend(self._backend_requested)
        t = self.t
        # What the kernel only reads, in its order (see thermopylae_env._coop_kernel.step).
        self._kernel_tables = (
            self.num_players, self.hand_size_at_start, len(self.persian) + 1, t.action_code, t.spartan_value,
            t.slot_pack, t.obs_new_game, t.full_deck_half, t.obs_spartan_deck, t.obs_persian_deck,
            t.obs_graveyard, t.obs_discard, t.obs_offers, t.obs_slots, t.obs_phase, t.obs_marker_support,
            t.masks)
        self._rows = np.arange(self.num_envs, dtype=np.intp)
        self._off_mask = self._rows * NUM_ACTIONS  # where each game's mask row starts in the flat buffer

    # ------------------------------------------------------------------ chance and seeding

    def check_seed(self, seed: object) -> tuple[np.ndarray, list[int]] | None:
        """Check ``seed`` (see :meth:`seed`) without changing anything; returns the games it keys and their
        seeds (``None`` for ``seed=None``). Raises ``TypeError`` / ``ValueError`` naming the problem."""
        n = self.num_envs
        if seed is None:
            return None
        if isinstance(seed, (list, tuple)) or (isinstance(seed, np.ndarray) and seed.ndim > 0):
            seq = as_seed_list(seed, n)
            games = np.array([i for i, s in enumerate(seq) if s is not None], dtype=np.intp)
            return games, [s for s in seq if s is not None]
        first = as_seed(seed)
        if first + n - 1 >= 1 << 64:
            raise ValueError(f"seed {first} + {n - 1} (the seed of the last game) is not below 2**64")
        return self._rows, [first + i for i in range(n)]

    def seed(self, seed: int | Sequence[int | None] | np.ndarray | None = None) -> None:
        """Key each game's chance stream: an int ``s`` gives game ``i`` the seed ``s + i``; a sequence
        gives one seed per game (``None`` entries keep that game's stream); ``None`` draws ``s`` from the
        operating system. The episode counters of the seeded games restart at 0. Seeds are integers in
        ``0 .. 2**64 - 1`` (:func:`thermopylae_env.actions.as_seed`); anything else raises before any game
        is touched."""
        self._apply_seed(self.check_seed(seed))

    def _apply_seed(self, checked: tuple[np.ndarray, list[int]] | None) -> None:
        if checked is None:
            checked = self.check_seed(int(np.random.SeedSequence().entropy) % (1 << 63))
        games, seeds = checked
        if not self.seeded and len(games) < self.num_envs:
            self._apply_seed(None)  # the games without a seed of their own still need a key
        if len(games):
            self.keys[games] = seed_keys(seeds)
            self.episodes[games] = 0
        self.seeded = True

    def chance_tables(self, game: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """The chance of the game now running in slot ``game``: ``(spartan_order, persian_order, dice)``
        (card ids top first, as ``CoopGame.new_state`` takes them, and the dice in the order used)."""
        return (
            tuple(int(x) for x in self.spartan_order[game]),
            tuple(int(x) for x in self.persian_order[game]),
            tuple(int(x) for x in np.diff(self.dice_sum[game])),
        )

    # ------------------------------------------------------------------ reset

    def reset_games(self, games: np.ndarray | None = None) -> None:
        """Start new games in the slots ``games`` (all when ``None``), drawing their chance."""
        if not self.seeded:
            self.seed(None)
        idx = self._rows if games is None else np.asarray(games, dtype=np.intp)
        if len(idx) == 0:
            return
        restart = np.zeros(self.num_envs, bool)
        restart[idx] = True
        self._run_kernel(_NO_ACTIONS, restart, idx)

    def _draw_chance(self, idx: np.ndarray) -> None:
        """Draw the chance of the games ``idx`` that start now from :attr:`chance`, check all of it, then
        write their ``spartan_order``, ``persian_order`` and ``dice_sum`` rows and count their episode."""
        spartan, persian, dice = self.chance(idx, self.keys[idx].copy(), self.episodes[idx].copy())
        spartan, persian, dice = check_chance(spartan, persian, dice, len(idx), len(self.persian))
        self.episodes[idx] += np.uint64(1)
        self.spartan_order[idx] = spartan
        self.persian_order[idx] = persian
        self.dice_sum[idx] = _dice_sums(dice)

    def _run_kernel(
        self, actions: np.ndarray, restart: np.ndarray, idx: np.ndarray | None = None
    ) -> np.ndarray:
        """One call of :func:`thermopylae_env._coop_kernel.step` (``idx``: the games of ``restart``, if
        the caller has them). The kernel draws the default chance itself; the tables of another chance
        source are drawn, checked and written here first."""
        draw = self.chance is splitmix_chance
        if not draw and restart.shape[0]:
            self._draw_chance(np.flatnonzero(restart) if idx is None else idx)
        # A C-contiguous intp array: any other layout or dtype would compile another specialization.
        actions = np.ascontiguousarray(actions, dtype=np.intp)
        _announce_compilation()
        if self.backend == "numba":
            # As many threads as there are chunks and free cores (one chunk: this thread alone).
            with kernel_threads(-(-self.num_envs // _coop_kernel.CHUNK)):
                return _coop_kernel.step(actions, restart, draw, self.keys, self.episodes,
                                         self._state_args(), self._kernel_tables)
        with np.errstate(over="ignore"):  # SplitMix64 wraps on purpose; NumPy scalars warn about it
            return _coop_kernel.step(actions, restart, draw, self.keys, self.episodes, self._state_args(),
                                     self._kernel_tables)

    def _state_args(self) -> tuple[np.ndarray, ...]:
        """The arrays the kernel writes, in its order (built per call: the arrays are attributes that a
        caller may replace)."""
        return (self.phase, self.current, self.recipient, self.marker, self.support, self.spartan_pos,
                self.persian_pos, self.graveyard, self.persian_discard, self.offers, self.slot1, self.slot2,
                self.hands, self.hand_total, self.hand_bits, self.spartan_order, self.persian_order,
                self.dice_sum, self.dice_pos, self.turn, self.won, self.lost, self.obs, self.masks)

    # ------------------------------------------------------------------ observation and masks

    def observe_rows(self, games: np.ndarray) -> np.ndarray:
        """The observation of the games ``games`` rebuilt from the state arrays (``(k, 115)`` float32).

        The step keeps :attr:`obs` up to date incrementally; this full rebuild is for the rare games that
        end without moving (illegal actions) and lets tests check the incremental one.
        """
        idx = np.asarray(games, dtype=np.intp)
        k = len(idx)
        t = self.t
        out = np.zeros((k, OBS_SIZE), np.float32)
        ar = np.arange(k)
        phase = self.phase[idx]
        playing = phase < OVER
        out[ar[playing], phase[playing]] = 1.0
        out[ar, 3 + self.current[idx]] = 1.0
        discarding = phase == DISCARD
        out[ar[discarding], 7 + self.recipient[idx][discarding]] = 1.0
        out[:, _O_HANDS:_O_SLOTS] = self.hands[idx].reshape(k, MAX_PLAYERS * NUM_VALUES) * np.float32(0.5)
        out[:, _O_SLOTS:_O_MARKER] = np.take(t.obs_slots, self._slot_code(idx), axis=0)
        out[ar, _O_MARKER - 1 + self.marker[idx]] = 1.0
        out[:, _O_SUPPORT] = t.obs_support[self.support[idx]]
        out[:, _O_SPARTAN_DECK] = t.obs_spartan_deck[self.spartan_pos[idx]]
        out[:, _O_PERSIAN_DECK] = t.obs_persian_deck[self.persian_pos[idx]]
        out[:, _O_GRAVEYARD] = t.obs_graveyard[self.graveyard[idx]]
        out[:, _O_PERSIAN_DISCARD] = t.obs_discard[self.persian_discard[idx]]
        out[:, _O_OFFERS] = t.obs_offers[self.offers[idx]]
        in_deck = np.arange(SPARTAN_DECK_SIZE) >= self.spartan_pos[idx][:, None]
        values = t.spartan_value[self.spartan_order[idx]].astype(np.intp) + ar[:, None] * NUM_VALUES
        counts = np.bincount(values[in_deck], minlength=k * NUM_VALUES).reshape(k, NUM_VALUES)
        out[:, _O_UNSEEN_SPARTAN:_O_UNSEEN_PERSIAN] = counts * np.float32(0.5)
        in_deck = np.arange(PERSIAN_DECK_SIZE) >= self.persian_pos[idx][:, None]
        rows = self.persian_order[idx].astype(np.intp) + ar[:, None] * OBS_SIZE + _O_UNSEEN_PERSIAN
        out.reshape(-1)[rows[in_deck]] = 1.0
        return out

    def _slot_code(self, idx: np.ndarray) -> np.ndarray:
        """Row of the slot table for the line of games ``idx``: (slot1 + 1) * 29 + slot2 + 1."""
        return (self.slot1[idx].astype(np.intp) + 1) * (len(self.persian) + 1) + self.slot2[idx] + 1

    def masks_of(self, games: np.ndarray | None = None) -> np.ndarray:
        """The mask rows of ``games`` (all when ``None``) computed from the state (bool ``(k, 72)``)."""
        idx = self._rows if games is None else np.asarray(games, dtype=np.intp)
        return self.t.masks[self._mask_codes(idx)]

    def _mask_codes(self, idx: np.ndarray | None) -> np.ndarray:
        if idx is None:
            phase, support, cur, rec = self.phase, self.support, self.current, self.recipient
            rows = self._rows
        else:
            phase, support = self.phase[idx], self.support[idx]
            cur, rec = self.current[idx], self.recipient[idx]
            rows = idx
        if self.num_players == 1:
            bits = self.hand_bits[0] if idx is None else self.hand_bits[0, idx]
        else:
            seat = np.where(phase == DISCARD, rec, cur).astype(np.intp)
            bits = self.hand_bits.reshape(-1)[seat * self.num_envs + rows]
        main = phase == MAIN
        discard = phase == DISCARD
        code = bits * (main | discard)
        code += (support.astype(np.int16) << 11) * main  # support * BITS
        code += np.int16(MASK_DISCARD) * discard
        code += np.int16(MASK_OFFER) * (phase == DRAW_OFFER)
        code += np.int16(MASK_NONE) * (phase == OVER)
        return code

    # ------------------------------------------------------------------ step

    def legal(self, actions: np.ndarray) -> np.ndarray:
        """Whether each game's action (intp, in 0..71) is legal now (bool (N,))."""
        return self.masks.reshape(-1)[self._off_mask + actions]

    def transition(self, actions: np.ndarray, restart: np.ndarray | None = None) -> np.ndarray:
        """Apply one legal action per game (intp (N,); :data:`NOOP_ACTION` leaves a game untouched).

        Returns the games that ended with this action (bool (N,)); :attr:`won` / :attr:`lost` say how.
        The callers check legality with :meth:`legal` first; the kernel refuses an illegal action or one
        out of range (``ValueError`` / ``IndexError``) before any game moves.

        ``restart`` (bool (N,)): games that start a new game instead and ignore their action (the
        NEXT_STEP autoreset), dealt in the same pass over the games.
        """
        n = self.num_envs
        if np.shape(actions) != (n,):
            raise ValueError(f"actions must have shape ({n},), got {np.shape(actions)}")
        if restart is None:
            restart = _NO_RESTART
        else:
            restart = np.ascontiguousarray(restart, dtype=bool)
            if restart.shape != (n,):
                raise ValueError(f"restart must have shape ({n},), got {restart.shape}")
            if not self.seeded:
                self.seed(None)
        return self._run_kernel(actions, restart)

    def finish(self, games: np.ndarray) -> None:
        """End the games ``games`` as losses where they stand (the illegal-action policy ``"loss"``): as in
        the single environment the observation stays that of the position, and the mask becomes all false."""
        self.lost[games] = True
        self.phase[games] = OVER
        self.masks[games] = False

    def memory(self) -> dict[str, int]:
        """Bytes of the engine's own arrays: ``state`` (game state and chance tables), ``buffers`` (the
        observation and mask arrays) and ``index`` (the row numbers), all for ``num_envs`` games. What a
        process holds per game is more (the environment's spaces, the step's temporaries):
        ``scripts/benchmark.py --memory`` measures that."""
        state = sum(a.nbytes for a in (
            self.phase, self.current, self.recipient, self.marker, self.support, self.spartan_pos,
            self.persian_pos, self.graveyard, self.persian_discard, self.offers, self.slot1, self.slot2,
            self.hands, self.hand_total, self.hand_bits, self.spartan_order, self.persian_order,
            self.dice_sum, self.dice_pos, self.turn, self.won, self.lost, self.keys, self.episodes))
        buffers = self.obs.nbytes + self.masks.nbytes
        index = self._rows.nbytes + self._off_mask.nbytes
        return {"state": state, "buffers": buffers, "index": index}


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


def illegal_reason(engine: CoopVectorEngine, game: int, action: int) -> str:
    """Why ``action`` is illegal in game ``game`` (a sentence like the single engine's)."""
    from thermopylae_env.coop import decode_action

    phase = int(engine.phase[game])
    name = decode_action(action)
    if phase == OVER:
        return "the game is over"
    if phase == MAIN:
        if action >= GIVE_BASE:
            return f"{name}: no draw is offered (the acting seat must retreat or fight)"
        value, support = divmod(action - FIGHT_BASE, NUM_SUPPORT + 1)
        seat = int(engine.current[game])
        if engine.hands[game, seat, value] == 0:
            return f"{name}: seat {seat} holds no card of value {value + MIN_VALUE}"
        return f"{name}: only {int(engine.support[game])} support card(s) left"
    if phase == DRAW_OFFER:
        if GIVE_BASE <= action < DECLINE_ACTION:
            return f"{name}: there are only {engine.num_players} seat(s)"
        return f"{name}: a draw is offered (give it to a seat or decline it)"
    seat = int(engine.recipient[game])
    if action >= DISCARD_BASE:
        return f"{name}: seat {seat} holds no card of value {action - DISCARD_BASE + MIN_VALUE}"
    return f"{name}: seat {seat} must discard down to {HAND_LIMIT} cards"


class _StepResult:
    """What one step of all games did (arrays of shape (N,))."""

    __slots__ = ("rewards", "terminated", "won", "illegal", "reasons", "phase")

    def __init__(self, rewards, terminated, won, illegal, reasons, phase) -> None:  # noqa: ANN001
        self.rewards: np.ndarray = rewards  # float64
        self.terminated: np.ndarray = terminated  # bool
        self.won: np.ndarray = won  # bool: ended with a win this step
        self.illegal: np.ndarray | None = illegal  # bool, or None when every action was legal
        self.reasons: list[str] | None = reasons  # one sentence per illegal game, in game order
        self.phase: np.ndarray = phase  # int8, the phase as the single env reports it (0 once over)


class _Stepper:
    """The part of a step shared by the Gymnasium and the SB3 vector environments: action checks, the
    illegal-action policy, the transition and the rewards. Autoreset is the caller's business."""

    def __init__(
        self,
        engine: CoopVectorEngine,
        illegal_action: str,
        illegal_action_penalty: float,
        reward_shaping: float,
    ) -> None:
        self.engine = engine
        self.illegal_action = check_illegal_action_mode(illegal_action)
        self.illegal_action_penalty = check_illegal_action_penalty(illegal_action_penalty)
        self.reward_shaping = check_reward_shaping(reward_shaping)

    def __call__(self, actions: object, skip: np.ndarray | None, checked: bool = False) -> _StepResult:
        """``skip``: games whose action is ignored because they start a new game first (NEXT_STEP);
        ``checked``: ``actions`` already came out of :func:`as_action_batch`."""
        eng = self.engine
        a = actions if checked else as_action_batch(actions, eng.num_envs, NUM_ACTIONS)
        legal = eng.legal(a)
        if skip is not None:
            legal |= skip
        illegal = None
        reasons = None
        if not legal.all():
            illegal = ~legal
            bad = np.flatnonzero(illegal)
            reasons = [illegal_reason(eng, int(i), int(a[i])) for i in bad]
            if self.illegal_action == "raise":
                raise IllegalActionError(
                    f"illegal action in {len(bad)} game(s); game {int(bad[0])}: {reasons[0]}"
                )
            a = np.where(illegal, NOOP_ACTION, a)
        shaping = self.reward_shaping
        if shaping:
            before = (eng.persian_discard.astype(np.int16), eng.graveyard.astype(np.int16),
                      eng.marker.astype(np.int16))
        done = eng.transition(a, skip)
        won = done & eng.won
        rewards = np.zeros(eng.num_envs, np.float64)
        if shaping:
            discard, grave, marker = before
            gain = (eng.persian_discard - discard) + 2 * (eng.graveyard - grave) - (eng.marker - marker)
            if skip is not None:
                gain[skip] = 0  # a restarted game made no move (``before`` is the game that ended)
            rewards += shaping * gain
        rewards[done] = np.where(won[done], 1.0, -1.0)
        phase = eng.phase.copy()
        phase[phase == OVER] = MAIN
        if illegal is not None:
            eng.finish(np.flatnonzero(illegal))
            rewards[illegal] = self.illegal_action_penalty
            done = done | illegal
        return _StepResult(rewards, done, won, illegal, reasons, phase)


# ---------------------------------------------------------------------------------------------- Gymnasium

import gymnasium as gym  # noqa: E402  (the engine above does not need Gymnasium)
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402
from gymnasium.vector.utils import batch_space  # noqa: E402


class CoopVectorEnv(VectorEnv):
    """``num_envs`` games of ``thermopylae/Coop-v0`` stepped together by one compiled kernel.

    ## Description
    The co-operative game of ``thermopylae/Coop-v0`` (rules in ``seeds/rules_coop.md``) for many games at
    once: ``gymnasium.make_vec("thermopylae/Coop-v0", num_envs=N)`` builds it (the spec's
    ``vector_entry_point``); ``vectorization_mode="sync"`` gives a ``SyncVectorEnv`` of single environments
    instead (the same games in distribution, much slower). ``tests/test_coop_vector.py`` checks that, fed
    the same shuffles and dice, it plays exactly the games of the single environment.

    ## Action Space
    ``MultiDiscrete([72] * num_envs)``; ``single_action_space`` is ``Discrete(72)`` with the layout of
    ``thermopylae/Coop-v0`` (0 retreat, 1 + (v-10)*5 + s fight, 56 + p give, 60 decline, 61 + (v-10)
    discard). :meth:`action_masks` gives the legal actions as bool ``(num_envs, 72)`` (for sb3-contrib),
    ``infos["action_mask"]`` as int8. Out-of-space actions raise ``TypeError`` / ``ValueError`` before any
    game moves. An illegal action (mask 0) ends that game as a loss with reward ``illegal_action_penalty``,
    ``infos["illegal_action"]`` and ``infos["illegal_reason"]`` (``illegal_action="loss"``, the default;
    the observation stays that of the position and the mask becomes all false, as in the single
    environment), or raises ``IllegalActionError`` before any game moves (``"raise"``).

    ## Observation Space
    ``Box(0, 1, (num_envs, 115), float32)``, each row laid out as in ``thermopylae/Coop-v0``.

    ## Rewards
    Per game: +1 on the winning step, -1 on the losing step, 0 otherwise (plus ``reward_shaping`` as in the
    single environment).

    ## Starting State
    Each game shuffles both decks and deals (solo 4 cards, 2 to 4 players 3 each). Game ``i`` draws its
    chance from a stream keyed by its own seed: ``reset(seed=s)`` gives it ``s + i``, ``reset(seed=[...])``
    one seed per game (``None`` entries keep their stream), ``reset()`` without a seed continues every
    stream (the first one seeds from the OS). See the module docstring.

    ## Episode End
    Per game as in the single environment: termination only, no truncation (a game is at most 26 turns).

    Autoreset: ``metadata["autoreset_mode"]`` says which of Gymnasium's two modes the env was built with.

    * ``AutoresetMode.NEXT_STEP`` (the default, Gymnasium's own): the step that ends a game returns its last
      observation with ``terminated=True`` and ``infos["is_success"]``; the next ``step`` ignores that
      game's action, starts a new game and returns its first observation with reward 0. Until that reset
      step the game's mask row (:meth:`action_masks`, ``infos["action_mask"]``) allows exactly one action,
      action 0, the action the reset step ignores, so that a masked sampler (CleanRL's
      ``logits.masked_fill(~mask, -inf)``) always has a legal action to draw; any action is accepted there.
    * ``AutoresetMode.SAME_STEP``: the ending step already returns the new game's first observation and
      mask; the last observation is in ``infos["final_obs"]`` (object array; ``infos["_final_obs"]`` marks
      the games) and that step's info (``is_success``, ``illegal_action`` ...) in ``infos["final_info"]``.
      ``thermopylae_env.sb3_vec.CoopSB3VecEnv`` gives SB3 these semantics with ``terminal_observation``.

    ``reset(options={"reset_mask": mask})`` restarts only the games where the bool mask (shape
    ``(num_envs,)``) is true; ``reset_mask`` is the only option, and options must be ``None`` or a dict
    (anything else raises ``TypeError`` / ``ValueError``). Seeds and options are checked before any game is
    re-seeded or restarted.
    Infos hold, as arrays over the games with Gymnasium's ``"_key"`` masks, what the single environment's
    info holds: ``action_mask``, ``phase``, ``current_player``, ``turn``, and at game ends ``is_success``.

    ## Arguments
    * ``num_envs`` (int): number of games.
    * ``num_players``, ``persian_deck``, ``illegal_action``, ``illegal_action_penalty``, ``reward_shaping``:
      as for ``thermopylae/Coop-v0``. ``record_events`` must be ``False``.
    * ``render_mode``: ``None`` or ``"rgb_array"``: :meth:`render` returns game 0's table as a
      (360, 640, 3) uint8 picture (:func:`thermopylae_env.render.render_coop_rgb`; needs Pillow), so
      Gymnasium's vector ``RecordVideo`` wrapper can film it.
    * ``autoreset_mode``: ``AutoresetMode.NEXT_STEP`` (default) or ``AutoresetMode.SAME_STEP`` (or their
      string values ``"NextStep"`` / ``"SameStep"``).
    * ``copy`` (bool, default True): return a fresh observation array from each ``step`` / ``reset``.
      ``False`` returns the engine's buffer itself, which the next call overwrites (faster, for code that
      consumes the observation before it steps again).
    * ``chance``: a :data:`ChanceFn` replacing the default chance source (tests, replays). What it
      returns is checked (permutations of the card ids, dice in 1..6) before any game is dealt.
    * ``backend`` (str, default ``"auto"``): ``"auto"`` or ``"numba"``. The games are played by one
      kernel (``thermopylae_env._coop_kernel``), compiled by numba on first use and cached on disk (the
      first process after an install says so once, in a log line); where numba cannot be imported,
      ``"auto"`` runs the same kernel source as plain Python (much slower; :attr:`backend` is then
      ``"python"``) and ``"numba"`` raises ``ImportError``. The retired ``"numpy"`` backend raises
      ``ValueError`` saying so. ``gymnasium.make_vec("thermopylae/Coop-v0", num_envs=N, backend=...)``
      passes it through.

    ## Version History
    The id's version changes with anything that changes the games a seed plays or what a step returns
    (the rules, the default Persian deck, the layouts); the rest is listed under its version.

    * v0: initial version. Since then, with the same games: every mask row a caller may sample from has a
      legal action (action 0 in a finished game's row until its NEXT_STEP reset); ``render_mode=
      "rgb_array"``; seeds, actions and reset options checked by the package's shared rules
      (``thermopylae_env.actions``); the NumPy backend retired (one compiled kernel).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"],
                                "render_fps": 4}

    def __init__(
        self,
        num_envs: int = 1,
        num_players: int = 1,
        persian_deck: str | os.PathLike[str] | PersianRows | None = None,
        illegal_action: str = "loss",
        illegal_action_penalty: float = -1.0,
        reward_shaping: float = 0.0,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        chance: ChanceFn | None = None,
        render_mode: str | None = None,
        record_events: bool = False,
        backend: str = "auto",
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if record_events:
            raise ValueError("CoopVectorEnv does not record events; use thermopylae/Coop-v0 for that")
        mode = AutoresetMode(autoreset_mode)
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {mode}")
        self.engine = CoopVectorEngine(num_envs, num_players, persian_deck, chance, backend)
        self._stepper = _Stepper(self.engine, illegal_action, illegal_action_penalty, reward_shaping)
        self.num_envs = self.engine.num_envs
        self.num_players = self.engine.num_players
        self.autoreset_mode = mode
        self.copy = bool(copy)
        self.render_mode = render_mode
        self.metadata = {"autoreset_mode": mode, "render_modes": ["rgb_array"], "render_fps": 4}
        self.single_observation_space = gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        self.single_action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._autoreset = np.zeros(self.num_envs, bool)
        self._ready = False

    @property
    def backend(self) -> str:
        """The backend in use: ``"numpy"`` or ``"numba"`` (what ``backend="auto"`` resolved to)."""
        return self.engine.backend

    @property
    def illegal_action(self) -> str:
        return self._stepper.illegal_action

    @property
    def illegal_action_penalty(self) -> float:
        return self._stepper.illegal_action_penalty

    @property
    def reward_shaping(self) -> float:
        return self._stepper.reward_shaping

    def _obs(self) -> np.ndarray:
        return self.engine.obs.copy() if self.copy else self.engine.obs

    def _masks(self) -> np.ndarray:
        """A copy of the mask rows a caller may sample from: a finished game waiting for its NEXT_STEP
        reset allows action 0 (which the reset step ignores) instead of nothing."""
        masks = self.engine.masks.copy()
        waiting = self._autoreset
        if waiting.any():
            masks[waiting, 0] = True
        return masks

    def _state_info(self, infos: dict[str, Any], phase: np.ndarray | None = None) -> dict[str, Any]:
        eng = self.engine
        n = self.num_envs
        if phase is None:
            phase = eng.phase.copy()
            phase[phase == OVER] = MAIN
        infos["action_mask"] = self._masks().view(np.int8)
        infos["_action_mask"] = np.ones(n, bool)
        infos["phase"] = phase
        infos["_phase"] = np.ones(n, bool)
        infos["current_player"] = eng.current.copy()
        infos["_current_player"] = np.ones(n, bool)
        infos["turn"] = eng.turn.copy()
        infos["_turn"] = np.ones(n, bool)
        return infos

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start new games (all of them, or those of ``options["reset_mask"]``); see the class docstring
        for ``seed``. Returns ``(observations, infos)``. Everything is checked first: a bad seed or bad
        options raise before any game is re-seeded or restarted."""
        checked_seed = self.engine.check_seed(seed)
        games = self._reset_games_of(check_options(options, ("reset_mask",)))
        if checked_seed is not None and isinstance(seed, (int, np.integer)):
            super().reset(seed=int(seed))  # the VectorEnv's own np_random, for API completeness
        if checked_seed is not None or not self.engine.seeded:
            self.engine._apply_seed(checked_seed)
        self.engine.reset_games(games)
        if games is None:
            self._autoreset[:] = False
        else:
            self._autoreset[games] = False
        self._ready = True
        return self._obs(), self._state_info({})

    def _reset_games_of(self, options: dict) -> np.ndarray | None:
        """The games a reset restarts (``None``: all), from checked options."""
        if "reset_mask" not in options:
            return None
        mask = np.asarray(options["reset_mask"])
        if mask.dtype != bool or mask.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)")
        if not self._ready and not mask.all():
            raise RuntimeError("the first reset must start every game (reset_mask all true)")
        return np.flatnonzero(mask)

    def step(self, actions: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action per game (shape ``(num_envs,)``); see the class docstring for autoreset."""
        if self.closed:
            raise RuntimeError("step() called on a closed environment")
        if not self._ready:
            raise RuntimeError("step() called before reset()")
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        skip = self._autoreset if next_step and self._autoreset.any() else None
        result = self._stepper(actions, skip)
        terminated = result.terminated
        truncated = np.zeros(self.num_envs, bool)
        end_info: dict[str, Any] = {}
        if terminated.any():
            end_info["is_success"] = result.won
            end_info["_is_success"] = terminated.copy()
        if result.illegal is not None:
            illegal = result.illegal
            text = np.full(self.num_envs, None, dtype=object)
            text[illegal] = result.reasons
            end_info["illegal_action"] = illegal
            end_info["_illegal_action"] = illegal.copy()
            end_info["illegal_reason"] = text
            end_info["_illegal_reason"] = illegal.copy()
        if next_step:
            self._autoreset = terminated.copy()
            infos = self._state_info(end_info, result.phase)
            return self._obs(), result.rewards, terminated, truncated, infos
        infos: dict[str, Any] = {}
        if terminated.any():
            ended = np.flatnonzero(terminated)
            final_obs = np.full(self.num_envs, None, dtype=object)
            final_obs[ended] = list(self.engine.obs[ended])
            self._state_info(end_info, result.phase)
            for key in ("action_mask", "phase", "current_player", "turn"):
                end_info["_" + key] = terminated.copy()
            self.engine.reset_games(ended)
            infos["final_obs"] = final_obs
            infos["_final_obs"] = terminated.copy()
            infos["final_info"] = end_info
            infos["_final_info"] = terminated.copy()
        return self._obs(), result.rewards, terminated, truncated, self._state_info(infos)

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game, bool ``(num_envs, 72)`` (a copy). A game that ended and waits
        for its NEXT_STEP reset allows only action 0, which that reset step ignores."""
        return self._masks()

    def render(self) -> np.ndarray | None:
        """Game 0's table as an RGB picture (``render_mode="rgb_array"``), else ``None``."""
        if self.render_mode is None:
            return None
        if not self._ready:
            raise RuntimeError("render() called before reset()")
        from thermopylae_env.coop import CoopGame
        from thermopylae_env.render import render_coop_rgb

        game = CoopGame(self.num_players, self.engine.persian)
        # The hidden deck orders are not drawn; any order consistent with the view gives the same picture.
        state = game.state_from_observation(self.engine.obs[0], np.random.default_rng(0))
        state.turn = int(self.engine.turn[0])
        return render_coop_rgb(game, state)

    def chance_tables(self, game: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """See :meth:`CoopVectorEngine.chance_tables`."""
        return self.engine.chance_tables(game)

    def close_extras(self, **kwargs: Any) -> None:
        self._ready = False
