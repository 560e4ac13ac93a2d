"""The compiled (numba) rollouts of :class:`~thermopylae_agents.players.coop_search.CoopSearchExpert`.

One call of :func:`play_round` plays a whole round of the search: for each sampled determinization (the
root's hidden deck orders permuted by the sample's permutations) every candidate action, then the game to
its end with the compiled heuristic (:func:`thermopylae_agents.players._coop_heuristic_kernel.choose`).
Every candidate of a sample reads the same dice table (common random numbers): the k-th roll of a rollout
takes the first dice of row k of the sample's table, as the Python search's ``_DiceTable`` does.

The rules are the reference engine's (:class:`thermopylae_env.coop.CoopGame`: ``resolve_fight``,
``_start_offers``, ``_give``, ``_next_offer``, ``_complete``, ``_end``), step for step on the compact
state of :mod:`~thermopylae_agents.players._coop_heuristic_kernel`; only what the rules and the heuristic
read is kept (the discard piles as counts, Spartan cards as values). ``tests/agents/
test_coop_search_kernel.py`` holds :func:`step` to ``CoopGame.step`` state for state, and whole heuristic
games to the reference engine.

Compiled on first use and cached on disk (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

from thermopylae_agents.players._coop_heuristic_kernel import (
    F_SIZE,
    S_CUR,
    S_DICE,
    S_GRAVE,
    S_HANDS,
    S_MARKER,
    S_OFFERS,
    S_PDISCARD,
    S_PERSIAN,
    S_PHASE,
    S_PLAYERS,
    S_PPOS,
    S_REC,
    S_ROWS,
    S_SLOT1,
    S_SLOT2,
    S_SPARTAN,
    S_SPOS,
    S_SUPPORT,
    S_TERM,
    S_TURN,
    S_WON,
    choose,
    future_init,
    remove_unseen,
)
from thermopylae_env.coop.layout import (
    DECLINE,
    DISCARD_BASE,
    FIGHT_BASE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MAX_PLAYERS,
    NUM_SUPPORT,
    NUM_VALUES,
    RETREAT,
    SPARTAN_DECK_SIZE,
)
from thermopylae_env.coop.state import HAND_LIMIT

__all__ = ["engine_tables", "play_game", "play_round", "step", "step_state"]

MAIN, DRAW_OFFER, DISCARD = 0, 1, 2


def engine_tables(game) -> tuple:
    """What the rules read of ``game`` (a :class:`~thermopylae_env.coop.CoopGame`): the Persian rows'
    white and red values and bonus flags, unclipped."""
    white = np.array([card.white for card in game.persian], dtype=np.int32)
    red = np.array([card.red for card in game.persian], dtype=np.int32)
    bonus = np.array([bool(card.bonus) for card in game.persian], dtype=np.int32)
    return white, red, bonus


# ------------------------------------------------------------------------------------------ rules
@numba.njit(cache=True, inline="always")
def _hand_size(s, seat) -> int:
    size = 0
    for v in range(NUM_VALUES):
        size += s[S_HANDS + seat * NUM_VALUES + v]
    return size


@numba.njit(cache=True, inline="always")
def _end(s, won) -> None:
    s[S_TERM] = 1
    s[S_WON] = 1 if won else 0
    s[S_PHASE] = MAIN
    s[S_OFFERS] = 0
    s[S_REC] = -1
    s[S_TURN] += 1


@numba.njit(cache=True)
def _complete(s, ht, f) -> None:
    """``CoopGame._complete``: refill the line, the loss by exhaustion, the next seat."""
    s[S_PHASE] = MAIN
    if s[S_SLOT1] < 0:
        row = s[S_PERSIAN + s[S_PPOS]]
        s[S_SLOT1] = row
        s[S_PPOS] += 1
        remove_unseen(s, f, row)
    if s[S_SLOT2] < 0:
        row = s[S_PERSIAN + s[S_PPOS]]
        s[S_SLOT2] = row
        s[S_PPOS] += 1
        remove_unseen(s, f, row)
    if s[S_SPOS] >= SPARTAN_DECK_SIZE:
        empty = True
        for c in range(MAX_PLAYERS * NUM_VALUES):
            if s[S_HANDS + c]:
                empty = False
                break
        if empty:
            _end(s, False)
            return
    s[S_TURN] += 1
    s[S_CUR] = (s[S_CUR] + 1) % s[S_PLAYERS]


@numba.njit(cache=True)
def _next_offer(s, ht, f) -> None:
    if s[S_OFFERS] and s[S_SPOS] < SPARTAN_DECK_SIZE:
        s[S_OFFERS] -= 1
        s[S_PHASE] = DRAW_OFFER
    else:
        s[S_OFFERS] = 0
        _complete(s, ht, f)


@numba.njit(cache=True)
def _start_offers(s, count, ht, f) -> None:
    if count and s[S_SPOS] < SPARTAN_DECK_SIZE:
        s[S_PHASE] = DRAW_OFFER
        s[S_OFFERS] = count - 1
    else:
        _complete(s, ht, f)


@numba.njit(cache=True)
def _give(s, seat, ht, f) -> None:
    value = s[S_SPARTAN + s[S_SPOS]]
    s[S_SPOS] += 1
    s[S_HANDS + seat * NUM_VALUES + value] += 1
    if s[S_SPOS] >= SPARTAN_DECK_SIZE:
        s[S_OFFERS] = 0  # nothing left to offer
    if _hand_size(s, seat) > HAND_LIMIT:
        s[S_PHASE] = DISCARD
        s[S_REC] = seat
    else:
        _next_offer(s, ht, f)


@numba.njit(cache=True)
def _fight(s, vi, support, dice, et, ht, f) -> None:
    """``CoopGame.resolve_fight`` for the card of value index ``vi`` with ``support`` support cards."""
    white, red, bonus = et
    s[S_HANDS + s[S_CUR] * NUM_VALUES + vi] -= 1
    s[S_SUPPORT] -= support
    marker = s[S_MARKER]
    n_dice = support + (1 if (marker == 3 or marker == 6) else 0)
    total = vi + 10
    if n_dice:
        k = s[S_DICE]
        if k >= dice.shape[0] or n_dice > dice.shape[1]:
            raise ValueError("the dice table has too few rows or columns")
        for d in range(n_dice):
            total += dice[k, d]
        s[S_DICE] = k + 1
    beaten = 0
    bonus_beaten = 0
    for slot in range(2):
        persian = s[S_SLOT1 + slot]
        if total < white[persian]:
            break
        beaten += 1
        if bonus[persian]:
            bonus_beaten += 1
        s[S_SLOT1 + slot] = -1
        if total >= red[persian]:
            s[S_GRAVE] += 1
            if s[S_GRAVE] >= GRAVEYARD_WIN:
                _end(s, True)
                return
        else:
            s[S_PDISCARD] += 1
    if beaten == 0:
        _complete(s, ht, f)
        return
    if beaten == 1:  # the survivor of slot 2 moves up
        s[S_SLOT1] = s[S_SLOT2]
        s[S_SLOT2] = -1
    if s[S_ROWS] - s[S_PPOS] < beaten:
        _end(s, True)
        return
    _start_offers(s, bonus_beaten, ht, f)


@numba.njit(cache=True)
def step(s, action, dice, et, ht, f) -> None:
    """``CoopGame.step`` for a legal ``action`` (not checked): the rollouts play only legal actions."""
    phase = s[S_PHASE]
    if phase == MAIN:
        if action == RETREAT:
            s[S_MARKER] += 1
            if s[S_MARKER] >= LOSS_MARKER:
                _end(s, False)
            else:
                _start_offers(s, 1, ht, f)
        else:
            offset = action - FIGHT_BASE
            _fight(s, offset // (NUM_SUPPORT + 1), offset % (NUM_SUPPORT + 1), dice, et, ht, f)
    elif phase == DRAW_OFFER:
        if action == DECLINE:
            _next_offer(s, ht, f)
        else:
            _give(s, action - GIVE_BASE, ht, f)
    else:
        s[S_HANDS + s[S_REC] * NUM_VALUES + action - DISCARD_BASE] -= 1
        s[S_REC] = -1
        _next_offer(s, ht, f)


# ------------------------------------------------------------------------------------------ rollouts
@numba.njit(cache=True)
def _rollout(s, action, dice, et, ht, f, gain) -> float:
    """Play ``action`` in ``s``, then the heuristic to the end of the game: +1 a win, -1 a loss."""
    step(s, action, dice, et, ht, f)
    while not s[S_TERM]:
        a = choose(s, ht, f, gain)
        if a < 0:
            raise ValueError("the heuristic found no action")
        step(s, a, dice, et, ht, f)
    return 1.0 if s[S_WON] else -1.0


@numba.njit(cache=True)
def play_round(base, spartan_perms, persian_perms, candidates, dice, first, et, ht, out) -> None:
    """One round of the search: ``out[c, j]`` is the return of candidate ``candidates[c]`` on sample
    ``j``, the root ``base`` with its hidden Spartan deck permuted by ``spartan_perms[j]`` and its
    Persian deck by ``persian_perms[j]`` (as ``state_from_observation`` shuffles them), rolled out with
    the dice table ``dice[first + j]``."""
    f0 = np.zeros(F_SIZE)
    future_init(base, ht, f0)  # the unseen rows are the same set in every sample
    n = base.shape[0]
    root = base.copy()
    s = base.copy()
    f = np.empty(F_SIZE)
    gain = np.empty(NUM_VALUES)
    spos = base[S_SPOS]
    ppos = base[S_PPOS]
    for j in range(spartan_perms.shape[0]):
        for i in range(spartan_perms.shape[1]):
            root[S_SPARTAN + spos + i] = base[S_SPARTAN + spos + spartan_perms[j, i]]
        for i in range(persian_perms.shape[1]):
            root[S_PERSIAN + ppos + i] = base[S_PERSIAN + ppos + persian_perms[j, i]]
        table = dice[first + j]
        for c in range(candidates.shape[0]):
            for i in range(n):
                s[i] = root[i]
            for i in range(F_SIZE):
                f[i] = f0[i]
            out[c, j] = _rollout(s, candidates[c], table, et, ht, f, gain)


@numba.njit(cache=True)
def step_state(s, action, dice, et, ht) -> None:
    """:func:`step` on its own (the running sums from scratch): what the differential tests drive."""
    f = np.zeros(F_SIZE)
    future_init(s, ht, f)
    step(s, action, dice, et, ht, f)


@numba.njit(cache=True)
def play_game(s, dice, et, ht) -> None:
    """Play the heuristic from ``s`` to the end of the game, in place."""
    f = np.zeros(F_SIZE)
    future_init(s, ht, f)
    gain = np.empty(NUM_VALUES)
    while not s[S_TERM]:
        a = choose(s, ht, f, gain)
        if a < 0:
            raise ValueError("the heuristic found no action")
        step(s, a, dice, et, ht, f)
