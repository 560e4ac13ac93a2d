"""The built-in duel players, compiled: the twins of [`thermopylae_env.duel.opponents`][] that the vector
engine ([`thermopylae_env.duel.vector_engine`][]) plays inside its loop over games, on the state rows of
[`thermopylae_env.duel.kernel`][].

[`heuristic_persian`][thermopylae_env.duel.opponents_kernel.heuristic_persian] /
[`heuristic_greek`][thermopylae_env.duel.opponents_kernel.heuristic_greek] are ``HeuristicPersian().act`` /
``HeuristicGreek().act``, in steps named after the Python players' (``keep_value``, ``discard_phase``,
``next_add``, ``plan_attack``, ``plan_defence``); ``tests/env/duel/test_duel_vector.py`` checks them move for
move against the Python heuristics. [`random_legal`][thermopylae_env.duel.opponents_kernel.random_legal] is
the random player, drawing from the game's own chance words. Without numba the same source runs as plain
Python ([`thermopylae_env.jit`][]).
"""

from __future__ import annotations

import numpy as np

from thermopylae_env.duel.kernel import (
    ATTACK,
    ATTACK_PHASE,
    BASE,
    BASE_HI,
    BUILD,
    G_DISC,
    HCNT,
    HLEN,
    M32,
    MOVES,
    P_DISC,
    PHASE,
    PLAN,
    PLAN_KEY,
    PLAN_PLAY,
    PLAYER,
    POS,
    TOKENS,
    TURN,
    W_MOVES,
    below,
    legal_action_mask,
    word,
)
from thermopylae_env.duel.layout import (
    ADD_BASE,
    ATTACK_KIND,
    COMMIT,
    DECK_SIZE,
    DECLINE,
    DISCARD_BASE,
    DISCARD_KIND,
    DONE_DISCARDING,
    GREEK,
    HAND_LIMIT,
    NUM_ACTIONS,
    NUM_ADD_KINDS,
    NUM_FORCE_KINDS,
    NUM_KINDS,
    PERSIAN,
    PLAY_DISCARD_CARD,
)
from thermopylae_env.jit import key_cache_on, njit

__all__ = ["OPP_NONE", "OPP_HEURISTIC", "OPP_RANDOM", "heuristic_action", "random_legal"]

# The built-in opponent a vector engine plays: none (the caller plays both sides), the heuristic, random.
OPP_NONE, OPP_HEURISTIC, OPP_RANDOM = 0, 1, 2
_INF = 1e300  # a kind with no card is never the one dropped


@njit(cache=True)
def random_legal(s, scratch):  # noqa: ANN001, ANN201
    """``RandomAgent``: a uniformly random legal action, from the game's next random-opponent word."""
    legal_action_mask(s, scratch)
    n = 0
    for a in range(NUM_ACTIONS):
        if scratch[a]:
            n += 1
    pick = below(word(int(s[BASE]) & M32, int(s[BASE_HI]) & M32, W_MOVES + int(s[MOVES])), n)
    s[MOVES] += 1
    for a in range(NUM_ACTIONS):
        if scratch[a]:
            if pick == 0:
                return a
            pick -= 1
    return -1  # pragma: no cover - a deciding player always has a legal action


@njit(cache=True)
def keep_value(n, k, persian):  # noqa: ANN001, ANN201
    """``opponents.keep_value`` of one kind: worth of its least useful copy (lowest dropped first)."""
    if n == 0:
        return _INF
    if k == DISCARD_KIND:
        return 1000.0
    if k >= NUM_FORCE_KINDS:
        return 500.0 if n == 1 else 5.0
    if persian and k == ATTACK_KIND:
        return 900.0 if n == 1 else 15.0
    return 10.0 * (k + 1)


@njit(cache=True)
def discard_phase(s, p, may_play):  # noqa: ANN001, ANN201
    """``opponents._discard_phase``: play the discard card on a non-empty hand, else cut the least
    valued kind while over the limit, else done."""
    c = HCNT + p * NUM_KINDS
    if may_play and s[c + DISCARD_KIND] > 0 and s[HLEN + 1 - p] > 0:
        return PLAY_DISCARD_CARD
    if s[HLEN + p] > HAND_LIMIT:
        best = 0
        best_value = keep_value(s[c], 0, p == PERSIAN)
        for k in range(1, NUM_KINDS):
            v = keep_value(s[c + k], k, p == PERSIAN)
            if v < best_value:
                best_value = v
                best = k
        return DISCARD_BASE + best
    return DONE_DISCARDING


@njit(cache=True)
def next_add(s, plan, play):  # noqa: ANN001, ANN201
    """``opponents._next_add``: add the first kind still short of ``plan``, then commit."""
    if not play:
        return DECLINE
    for k in range(NUM_ADD_KINDS):
        if s[BUILD + k] < plan[k]:
            return ADD_BASE + k
    return COMMIT


@njit(cache=True)
def plan_attack(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicPersian.plan_attack`` (threshold 300, endgame deck 1) into ``plan``; False to decline."""
    c = HCNT + PERSIAN * NUM_KINDS
    if s[c + ATTACK_KIND] == 0:
        return False
    deck = DECK_SIZE - s[POS + PERSIAN]
    endgame = deck <= 1
    attacks = s[c + ATTACK_KIND] if endgame else 1
    plan[0] = attacks
    force = 10 * attacks
    for k in range(1, NUM_FORCE_KINDS):
        plan[k] = s[c + k]
        force += 10 * (k + 1) * s[c + k]
    strategies = 0
    for k in range(NUM_FORCE_KINDS, NUM_ADD_KINDS):
        plan[k] = 1 if s[c + k] > 0 else 0
        strategies += plan[k]
    total = force * (strategies + 1)
    return total >= 300 or s[HLEN + GREEK] == 0 or endgame


@njit(cache=True)
def heuristic_persian(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicPersian().act``: keeps Xerxes Commands for the turn of an attack."""
    if s[PHASE] == P_DISC:
        c = HCNT + PERSIAN * NUM_KINDS
        hold = s[c + DISCARD_KIND] > 0 and s[HLEN + PERSIAN] <= HAND_LIMIT and not plan_attack(s, plan)
        return discard_phase(s, PERSIAN, not hold)
    return next_add(s, plan, cached_plan(s, plan))


@njit(cache=True)
def plan_defence(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicGreek.plan_defence`` (token value 25, strategy cost 80) into ``plan``; False for no
    defence. Same enumeration order and strict comparison as the Python code, so the same ties win."""
    c = HCNT + GREEK * NUM_KINDS
    attack = s[ATTACK]
    tokens = s[TOKENS]
    held = np.zeros(3, np.int64)
    n_held = 0
    for k in range(NUM_FORCE_KINDS, NUM_ADD_KINDS):
        if s[c + k] > 0:
            held[n_held] = k
            n_held += 1
    token_value = 25.0 * (1.0 + 2.0 / tokens)
    best_cost = np.inf
    best = np.zeros(6, np.int64)  # counts of kinds 0..4, number of strategy cards
    for c0 in range(s[c] + 1):
        for c1 in range(s[c + 1] + 1):
            for c2 in range(s[c + 2] + 1):
                for c3 in range(s[c + 3] + 1):
                    for c4 in range(s[c + 4] + 1):
                        force = 10 * c0 + 20 * c1 + 30 * c2 + 40 * c3 + 50 * c4
                        card_cost = float(force)
                        top = n_held + 1 if force else 1
                        for n_strat in range(top):
                            defence = force * (n_strat + 1)
                            lost = (attack - defence) // 10 if attack > defence else 0
                            cost = card_cost + n_strat * 80.0
                            if lost >= tokens:
                                cost += 1e9 - defence
                            else:
                                cost += lost * token_value
                            if cost < best_cost:
                                best_cost = cost
                                best[0] = c0
                                best[1] = c1
                                best[2] = c2
                                best[3] = c3
                                best[4] = c4
                                best[5] = n_strat
    for k in range(NUM_FORCE_KINDS):
        plan[k] = best[k]
    for k in range(NUM_FORCE_KINDS, NUM_ADD_KINDS):
        plan[k] = 0
    for i in range(best[5]):
        plan[held[i]] = 1
    return (best[0] + best[1] + best[2] + best[3] + best[4]) > 0


@njit(cache=True)
def heuristic_greek(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicGreek().act``: plays Leonidas Strategy at once, defends at the least expected cost."""
    if s[PHASE] == G_DISC:
        return discard_phase(s, GREEK, True)
    return next_add(s, plan, cached_plan(s, plan))


@njit(cache=True)
def cached_plan(s, plan):  # noqa: ANN001, ANN201
    """The attack (defence) plan of the heuristic, computed once per build: while an attack or a defence
    is built, every input of the plan (the whole hand, cards being added included; the Greek hand size
    and the deck; the attack and the tokens) stays the same, so the plan does too."""
    key = 4 * s[TURN] + s[PHASE]
    if s[PLAN_KEY] == key:
        for k in range(NUM_ADD_KINDS):
            plan[k] = s[PLAN + k]
        return s[PLAN_PLAY] == 1
    play = plan_attack(s, plan) if s[PHASE] == ATTACK_PHASE else plan_defence(s, plan)
    s[PLAN_KEY] = key
    s[PLAN_PLAY] = 1 if play else 0
    for k in range(NUM_ADD_KINDS):
        s[PLAN + k] = plan[k]
    return play


@njit(cache=True)
def heuristic_action(s, plan):  # noqa: ANN001, ANN201
    """The built-in heuristic's move for the player to act."""
    if s[PLAYER] == PERSIAN:
        return heuristic_persian(s, plan)
    return heuristic_greek(s, plan)



# What the functions above compile in from other modules: the kernel's columns and chance, the layout's
# constants (and what they read).
key_cache_on(globals(), "thermopylae_env.duel.kernel", "thermopylae_env.duel.layout",
             "thermopylae_env.actions", "thermopylae_env.cards", "thermopylae_env.layout")
