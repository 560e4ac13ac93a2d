"""The duel for many games at once: [`DuelVectorEngine`][thermopylae_env.duel.vector_engine.DuelVectorEngine]
holds ``N`` games as one int32 array of shape ``(N, WIDTH)`` (one row per game, columns named in
[`thermopylae_env.duel.kernel`][]), one float32 observation buffer and one boolean mask buffer, and advances
them with the compiled loops over games below. Each game's step is the rules' kernel
([`thermopylae_env.duel.kernel`][]) and the built-in opponent's moves
([`thermopylae_env.duel.opponents_kernel`][]); where the batch is large the loop runs on all cores (numba's
``prange``, in contiguous chunks of [`CHUNK`][thermopylae_env.duel.vector_engine.CHUNK] games) and writes
exactly what the serial loop writes (each game reads and writes only its own rows).

The Gymnasium vector envs over the engine are in [`thermopylae_env.duel.vector`][]. Chance is each game's
own: its seed key and the number of games it has started (see [`thermopylae_env.duel.kernel`][]).
"""

from __future__ import annotations

import numpy as np

from thermopylae_env.actions import as_game_seeds
from thermopylae_env.duel.kernel import (
    ATTACK,
    BASE,
    BASE_HI,
    BUILD,
    EPISODE,
    HAND,
    HCNT,
    HLEN,
    KEY_HI,
    KEY_LO,
    OVER,
    PHASE,
    PLAYER,
    POS,
    TABLE,
    TOKENS,
    TURN,
    WIDTH,
    WINNER,
    apply,
    card_kinds,
    init,
    legal_action_mask,
    observe,
)
from thermopylae_env.duel.layout import (
    MAX_HAND,
    NUM_ACTIONS,
    NUM_ADD_KINDS,
    NUM_KINDS,
    OBS_SIZE,
    decode_action,
)
from thermopylae_env.duel.opponents_kernel import OPP_HEURISTIC, OPP_NONE, heuristic_action, random_legal
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.duel.state import DuelState
from thermopylae_env.jit import key_cache_on, njit, prange
from thermopylae_env.threads import kernel_threads

__all__ = ["ACT_MOVE", "ACT_NONE", "ACT_RESTART", "CHUNK", "DuelVectorEngine", "PARALLEL_MIN_GAMES"]

PARALLEL_MIN_GAMES = 512  # below this the threads' start-up costs more than they save
CHUNK = 256  # games per task of the parallel loop
ACT_NONE, ACT_MOVE, ACT_RESTART = 0, 1, 2  # what a game's step does: nothing, an action, a new game
_M64 = (1 << 64) - 1


def _splitmix64(seed: int) -> int:
    z = (seed + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _signed32(x: int) -> int:
    return x - (1 << 32) if x >= 1 << 31 else x


def _check_num_envs(num_envs: object) -> int:
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
    return int(num_envs)


def _check_parallel(parallel: object, num_envs: int) -> bool:
    if parallel == "auto":
        return num_envs >= PARALLEL_MIN_GAMES
    if isinstance(parallel, bool):
        return parallel
    raise ValueError(f"parallel must be 'auto', True or False, got {parallel!r}")


class DuelVectorEngine:
    """``num_envs`` duel games in one int32 array, advanced by the compiled kernel.

    ``states`` ``(N, WIDTH)`` int32, ``obs`` ``(N, 56)`` float32 (the observation of the side asked for
    by the last step), ``masks`` ``(N, 21)`` bool (of the player to act; all false once a game is over).
    ``parallel``: ``"auto"`` (the parallel loop from
    [`PARALLEL_MIN_GAMES`][thermopylae_env.duel.vector_engine.PARALLEL_MIN_GAMES] games), ``True`` or
    ``False``; both loops write the same values.
    """

    def __init__(self, num_envs: int, parallel: bool | str = "auto") -> None:
        self.num_envs = _check_num_envs(num_envs)
        self.parallel = _check_parallel(parallel, self.num_envs)
        self.card_kinds = card_kinds()
        n = self.num_envs
        self.states = np.zeros((n, WIDTH), np.int32)
        self.obs = np.zeros((n, OBS_SIZE), np.float32)
        self.masks = np.zeros((n, NUM_ACTIONS), np.bool_)
        self.all_games = np.arange(n, dtype=np.int64)
        self._what = np.zeros(n, np.int64)
        self._actions = np.zeros(n, np.int64)
        self.seeded = False

    # --- chance ---------------------------------------------------------------------------------------

    def seed(self, seed: object = None) -> None:
        """Key each game's chance: one seed (game ``i`` gets ``seed + i``; ``None`` draws one from the OS),
        or one per game (a ``None`` entry keeps that game's key). Counts of games played restart at 0."""
        n = self.num_envs
        seeds = as_game_seeds(seed, n)
        if seeds is None:  # from the OS, low enough that no game's seed passes 2**64 - 1
            first = int(np.random.SeedSequence().generate_state(2, np.uint64)[0]) >> 1
            seeds = [first + i for i in range(n)]
        for i, s in enumerate(seeds):
            if s is None:
                continue
            key = _splitmix64(s)
            self.states[i, KEY_LO] = _signed32(key & 0xFFFFFFFF)
            self.states[i, KEY_HI] = _signed32(key >> 32)
            self.states[i, EPISODE] = 0
        self.seeded = True

    def chance_base(self, game: int) -> int:
        """The 64-bit chance base of the game now running in row ``game``, as a signed integer (see
        [`thermopylae_env.duel.kernel`][]: ``chance_orders`` and ``discard_pick`` take it)."""
        row = self.states[game]
        value = (int(row[BASE_HI]) & 0xFFFFFFFF) << 32 | int(row[BASE]) & 0xFFFFFFFF
        return value - (1 << 64) if value >= 1 << 63 else value

    # --- stepping -------------------------------------------------------------------------------------

    def run(
        self, games: np.ndarray, what: np.ndarray, actions: np.ndarray, opp_mode: int, opp_side: int,
        obs_side: int,
    ) -> None:
        """Kernel step of ``games`` (``what``/``actions`` indexed by game: see
        [`step_game`][thermopylae_env.duel.vector_engine.step_game])."""
        if not self.parallel:
            step_serial(self.states, games, what, actions, opp_mode, opp_side, obs_side, self.card_kinds,
                          self.obs, self.masks)
            return
        with kernel_threads(-(-len(games) // CHUNK)) as threads:  # one thread: the serial loop
            (step_parallel if threads > 1 else step_serial)(
                self.states, games, what, actions, opp_mode, opp_side, obs_side, self.card_kinds, self.obs,
                self.masks)

    def phase(self) -> np.ndarray:
        """Phase of every game (0..3, [`thermopylae_env.duel.kernel.OVER`][] once over), a copy."""
        return self.states[:, PHASE].copy()

    def to_move(self) -> np.ndarray:
        """The player to act in every game (``GREEK``, ``PERSIAN``; -1 once over)."""
        return np.where(self.states[:, PHASE] == OVER, -1, self.states[:, PLAYER])

    def observe(self, side: int, games: np.ndarray | None = None) -> np.ndarray:
        """Observations of ``side`` (``GREEK``/``PERSIAN``, -1 for the player to act) of ``games``."""
        idx = self.all_games if games is None else np.asarray(games, np.int64)
        out = np.empty((idx.size, OBS_SIZE), np.float32)
        observe_games(self.states, idx, side, out)
        return out

    def heuristic_actions(self, games: np.ndarray | None = None) -> np.ndarray:
        """The compiled heuristic's move for the player to act in each of ``games`` (0 where a game is over:
        the action a finished row allows, which the step restarting it ignores)."""
        idx = self.all_games if games is None else np.asarray(games, np.int64)
        out = np.empty(idx.size, np.int64)
        heuristic_games(self.states, idx, out)
        return out

    def reference_state(self, game: int) -> DuelState:
        """A [`DuelState`][thermopylae_env.duel.state.DuelState] with the counts of ``game`` (the hands hold
        the kinds, not card ids), for the reference engine's legality reasons."""
        s = self.states[game]
        counts = [s[HCNT + p * NUM_KINDS:HCNT + (p + 1) * NUM_KINDS].tolist() for p in (0, 1)]
        hands = [s[HAND + p * MAX_HAND:HAND + p * MAX_HAND + s[HLEN + p]].tolist() for p in (0, 1)]
        over = int(s[PHASE]) == OVER
        return DuelState(
            decks=((), ()), deck_pos=[int(s[POS]), int(s[POS + 1])], hands=hands, hand_counts=counts,
            discards=[[], []], discard_counts=[[0] * NUM_KINDS, [0] * NUM_KINDS],
            build=s[BUILD:BUILD + NUM_KINDS].tolist(), table=[],
            table_counts=s[TABLE:TABLE + NUM_KINDS].tolist(), attack_total=int(s[ATTACK]),
            tokens=int(s[TOKENS]), turn=int(s[TURN]), phase=0 if over else int(s[PHASE]),
            current_player=int(s[PLAYER]), terminated=over, winner=int(s[WINNER]),
        )

    def illegal_reason(self, game: int, action: int) -> str:
        """Why ``action`` is illegal in ``game`` (the reference engine's words)."""
        state = self.reference_state(game)
        reason = DuelGame().illegal_reason(state, int(action))
        return f"{decode_action(int(action), state.current_player)}: {reason}"


# --- one game's step, and the loops over games ----------------------------------------------------------


@njit(cache=True)
def play_opponent(s, opp_mode, opp_side, ck, scratch, plan):  # noqa: ANN001, ANN201
    """The built-in opponent's moves until the agent must act or the game is over."""
    if opp_mode == OPP_NONE:
        return
    while s[PHASE] != OVER and s[PLAYER] == opp_side:
        a = heuristic_action(s, plan) if opp_mode == OPP_HEURISTIC else random_legal(s, scratch)
        apply(s, a, ck)


@njit(cache=True)
def step_game(s, what, a, opp_mode, opp_side, obs_side, ck, obs, mask, scratch, plan):  # noqa: ANN001, ANN201
    """One game's step. ``what``: ACT_MOVE applies the legal action ``a`` (legality is checked once, by
    the caller, against the mask row), ACT_RESTART deals a new game, ACT_NONE only lets the opponent move.
    Then the built-in opponent moves, and the observation of ``obs_side`` (-1: of the player to act) and
    the mask of the player to act are written."""
    if what == ACT_MOVE:
        apply(s, a, ck)
    elif what == ACT_RESTART:
        init(s, ck)
    play_opponent(s, opp_mode, opp_side, ck, scratch, plan)
    observe(s, s[PLAYER] if obs_side < 0 else obs_side, obs)
    legal_action_mask(s, mask)


@njit(cache=True)
def step_serial(states, games, what, actions, opp_mode, opp_side, obs_side, ck, obs, masks):  # noqa: ANN001, ANN201
    """[`step_game`][thermopylae_env.duel.vector_engine.step_game] for the listed games (``what`` and
    ``actions`` indexed by game), in turn."""
    scratch = np.zeros(NUM_ACTIONS, np.bool_)
    plan = np.zeros(NUM_ADD_KINDS, np.int64)
    for j in range(games.shape[0]):
        i = games[j]
        step_game(states[i], what[i], actions[i], opp_mode, opp_side, obs_side, ck, obs[i], masks[i],
                  scratch, plan)


@njit(cache=True, parallel=True)
def step_parallel(states, games, what, actions, opp_mode, opp_side, obs_side, ck, obs, masks):  # noqa: ANN001, ANN201
    """[`step_serial`][thermopylae_env.duel.vector_engine.step_serial] spread over the cores in contiguous
    chunks of games (each game touches only its own rows; each chunk has its own scratch arrays, so nothing is
    allocated per game)."""
    n = games.shape[0]
    chunks = (n + CHUNK - 1) // CHUNK
    for c in prange(chunks):
        scratch = np.zeros(NUM_ACTIONS, np.bool_)
        plan = np.zeros(NUM_ADD_KINDS, np.int64)
        for j in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            i = games[j]
            step_game(states[i], what[i], actions[i], opp_mode, opp_side, obs_side, ck, obs[i], masks[i],
                      scratch, plan)


@njit(cache=True)
def observe_games(states, games, side, out):  # noqa: ANN001, ANN201
    """Observations of ``side`` (-1: of the player to act) of the listed games into ``out`` rows."""
    for j in range(games.shape[0]):
        s = states[games[j]]
        observe(s, s[PLAYER] if side < 0 else side, out[j])


@njit(cache=True)
def heuristic_games(states, games, out):  # noqa: ANN001, ANN201
    """The built-in heuristic's move for the player to act in each listed game; 0 for a game that is over
    (the one action its mask row allows: the step that restarts it ignores the action)."""
    plan = np.zeros(NUM_ADD_KINDS, np.int64)
    for j in range(games.shape[0]):
        s = states[games[j]]
        out[j] = 0 if s[PHASE] == OVER else heuristic_action(s, plan)


# What the loops compile in from other modules: the kernel and the opponents (and what they read).
key_cache_on(globals(), "thermopylae_env.duel.kernel", "thermopylae_env.duel.opponents_kernel",
             "thermopylae_env.duel.layout", "thermopylae_env.actions", "thermopylae_env.cards",
             "thermopylae_env.layout")
