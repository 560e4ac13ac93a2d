"""The co-op game for many games at once (``gymnasium.make_vec``).

[`CoopVectorEngine`][thermopylae_env.coop.vector_engine.CoopVectorEngine] holds ``N`` games as arrays of shape
``(N, ...)`` (int8 / int16 state, one persistent float32 observation buffer, one boolean mask buffer) and
advances all of them with one call of the compiled kernel [`thermopylae_env.coop.kernel`][]: a loop over the
games (over all cores for large batches) whose small named steps follow the reference engine
[`thermopylae_env.coop.CoopGame`][thermopylae_env.coop.rules.CoopGame]. The observation is updated in place
(only the entries an action can change are rewritten), and the mask row is one row of a table of all 12,290
possible mask rows, indexed by (phase, support left, the bit set of values the deciding seat holds).
[`CoopVectorEnv`][thermopylae_env.coop.vector.CoopVectorEnv] is the Gymnasium ``VectorEnv`` over it;
``thermopylae_env.coop.sb3.CoopSB3VecEnv`` is the Stable-Baselines3 ``VecEnv`` over it.
``benchmarks/benchmark.py`` measures it (``benchmarks/``).

numba is a dependency of the package; where it cannot be imported the same kernel source runs as plain
Python (much slower), and `CoopVectorEngine.backend` says ``"python"``.

The rules, the action layout and the observation layout are those of [`thermopylae_env.coop.rules`][], both
layouts defined once in [`thermopylae_env.coop.layout`][]; ``tests/env/coop/test_coop_vector.py`` drives both
engines through thousands of games with the same shuffles and dice and compares every observation,
reward, termination and mask.

Chance is explicit. Everything random in one game (the Spartan deck order, the Persian deck order and the
dice) is drawn when the game starts, as three tables: ``spartan_order`` (20 card ids, top first, as
[`thermopylae_env.coop.CoopGame.new_state`][thermopylae_env.coop.rules.CoopGame.new_state] takes them),
``persian_order`` (28 rows, top first) and ``dice``
([`DICE_PER_GAME`][thermopylae_env.coop.kernel.DICE_PER_GAME] = 24 dice, used in order: one game needs at most
20 location dice, one per fight, plus 4 support dice; the engine keeps their prefix sums). The single engine
fed the same orders, and dice served in the same order from its ``rng``, plays the same game.
[`CoopVectorEngine.chance_tables`][thermopylae_env.coop.vector_engine.CoopVectorEngine.chance_tables] returns
the tables of the games now running, and a ``chance`` callable can replace the default source.

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
from collections.abc import Sequence
from typing import Any

import numpy as np

from thermopylae_env.actions import (
    IllegalActionError,
    as_action_batch,
    as_seed,
    as_seed_list,
    check_illegal_action_mode,
    check_illegal_action_penalty,
    check_reward_shaping,
)
from thermopylae_env.cards import PERSIAN_DECK_SIZE, PersianRows, load_persian_deck, load_spartan_deck
from thermopylae_env.coop import kernel as _coop_kernel
from thermopylae_env.coop.chance import ChanceFn, check_chance, seed_keys, splitmix_chance
from thermopylae_env.coop.kernel import (
    BITS,
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
)
from thermopylae_env.coop.layout import DECLINE as DECLINE_ACTION
from thermopylae_env.coop.layout import (
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
    SPARTAN_DECK_SIZE,
    VALUE_SCALE,
    decode_action,
)
from thermopylae_env.jit import HAVE_NUMBA
from thermopylae_env.threads import kernel_threads

__all__ = ["BACKENDS", "CoopVectorEngine", "StepResult", "Stepper", "illegal_reason", "resolve_backend"]

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
    """The backend that ``backend`` (one of [`BACKENDS`][thermopylae_env.coop.vector_engine.BACKENDS])
    selects: ``"numba"`` (the compiled kernel) or ``"python"`` (the same kernel source, interpreted: only
    where numba cannot be imported).

    ``"auto"`` is ``"numba"`` where numba can be imported, else ``"python"``; ``"numba"`` without numba
    raises ``ImportError``; the retired ``"numpy"`` and anything else raise ``ValueError``.
    """
    if isinstance(backend, str) and backend in _RETIRED_BACKENDS:
        raise ValueError(f"backend={backend!r} is no longer available: {_RETIRED_BACKENDS[backend]}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if HAVE_NUMBA:
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

    ``backend`` (see [`resolve_backend`][thermopylae_env.coop.vector_engine.resolve_backend]): one loop over
    the games ([`thermopylae_env.coop.kernel`][]) plays them all, compiled by numba (``"numba"``, or
    ``"auto"``, the default, where numba is installed) or as plain Python (``"auto"`` without numba); the
    retired ``"numpy"`` whole-array engine is refused with the reason. `backend` is the one in use.
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
        # What was asked for; `backend`, what it resolves to, is derived (an "auto" engine copied to a
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
        """Build the attributes of `_DERIVED` (after ``__init__`` and after unpickling)."""
        self.t = _tables(self.num_players, self.persian)
        self.backend = resolve_backend(self._backend_requested)
        t = self.t
        # What the kernel only reads, in its order (see thermopylae_env.coop.kernel.step).
        self._kernel_tables = (
            self.num_players, self.hand_size_at_start, len(self.persian) + 1, t.action_code, t.spartan_value,
            t.slot_pack, t.obs_new_game, t.full_deck_half, t.obs_spartan_deck, t.obs_persian_deck,
            t.obs_graveyard, t.obs_discard, t.obs_offers, t.obs_slots, t.obs_phase, t.obs_marker_support,
            t.masks)
        self._rows = np.arange(self.num_envs, dtype=np.intp)
        self._off_mask = self._rows * NUM_ACTIONS  # where each game's mask row starts in the flat buffer

    # ------------------------------------------------------------------ chance and seeding

    def check_seed(self, seed: object) -> tuple[np.ndarray, list[int]] | None:
        """Check ``seed`` (see [`seed`][thermopylae_env.coop.vector_engine.CoopVectorEngine.seed]) without
        changing anything; returns the games it keys and their seeds (``None`` for ``seed=None``). Raises
        ``TypeError`` / ``ValueError`` naming the problem."""
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
        ``0 .. 2**64 - 1`` ([`thermopylae_env.actions.as_seed`][]); anything else raises before any game
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
        """Draw the chance of the games ``idx`` that start now from
        [`chance`][thermopylae_env.coop.vector_engine.CoopVectorEngine.chance], check all of it, then write
        their ``spartan_order``, ``persian_order`` and ``dice_sum`` rows and count their episode."""
        spartan, persian, dice = self.chance(idx, self.keys[idx].copy(), self.episodes[idx].copy())
        spartan, persian, dice = check_chance(spartan, persian, dice, len(idx), len(self.persian))
        self.episodes[idx] += np.uint64(1)
        self.spartan_order[idx] = spartan
        self.persian_order[idx] = persian
        self.dice_sum[idx] = _dice_sums(dice)

    def _run_kernel(
        self, actions: np.ndarray, restart: np.ndarray, idx: np.ndarray | None = None
    ) -> np.ndarray:
        """One call of [`thermopylae_env.coop.kernel.step`][] (``idx``: the games of ``restart``, if
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

        The step keeps [`obs`][thermopylae_env.coop.vector_engine.CoopVectorEngine.obs] up to date
        incrementally; this full rebuild is for the rare games that end without moving (illegal actions) and
        lets tests check the incremental one.
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
        """Apply one legal action per game (intp (N,);
        [`NOOP_ACTION`][thermopylae_env.coop.layout.NOOP_ACTION] leaves a game untouched).

        Returns the games that ended with this action (bool (N,));
        [`won`][thermopylae_env.coop.vector_engine.CoopVectorEngine.won] /
        [`lost`][thermopylae_env.coop.vector_engine.CoopVectorEngine.lost] say how. The callers check legality
        with [`legal`][thermopylae_env.coop.vector_engine.CoopVectorEngine.legal] first; the kernel refuses an
        illegal action or one out of range (``ValueError`` / ``IndexError``) before any game moves.

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
        ``benchmarks/benchmark.py --memory`` measures that."""
        state = sum(a.nbytes for a in (
            self.phase, self.current, self.recipient, self.marker, self.support, self.spartan_pos,
            self.persian_pos, self.graveyard, self.persian_discard, self.offers, self.slot1, self.slot2,
            self.hands, self.hand_total, self.hand_bits, self.spartan_order, self.persian_order,
            self.dice_sum, self.dice_pos, self.turn, self.won, self.lost, self.keys, self.episodes))
        buffers = self.obs.nbytes + self.masks.nbytes
        index = self._rows.nbytes + self._off_mask.nbytes
        return {"state": state, "buffers": buffers, "index": index}


def illegal_reason(engine: CoopVectorEngine, game: int, action: int) -> str:
    """Why ``action`` is illegal in game ``game`` (a sentence like the single engine's)."""
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


class StepResult:
    """What one step of all games did (arrays of shape (N,))."""

    __slots__ = ("rewards", "terminated", "won", "illegal", "reasons", "phase")

    def __init__(self, rewards, terminated, won, illegal, reasons, phase) -> None:  # noqa: ANN001
        self.rewards: np.ndarray = rewards  # float64
        self.terminated: np.ndarray = terminated  # bool
        self.won: np.ndarray = won  # bool: ended with a win this step
        self.illegal: np.ndarray | None = illegal  # bool, or None when every action was legal
        self.reasons: list[str] | None = reasons  # one sentence per illegal game, in game order
        self.phase: np.ndarray = phase  # int8, the phase as the single env reports it (0 once over)


class Stepper:
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

    def __call__(self, actions: object, skip: np.ndarray | None, checked: bool = False) -> StepResult:
        """``skip``: games whose action is ignored because they start a new game first (NEXT_STEP);
        ``checked``: ``actions`` already came out of
        [`as_action_batch`][thermopylae_env.actions.as_action_batch]."""
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
        return StepResult(rewards, done, won, illegal, reasons, phase)
