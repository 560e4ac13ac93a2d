"""The compiled (numba) part of [`CoopSearchExpert`][thermopylae_agents.players.coop_search.CoopSearchExpert]:
the heuristic, the rules and the rounds of rollouts, on a compact integer state.

**The heuristic.** `choose` is the twin of
[`CoopHeuristic.choose_state`][thermopylae_agents.players.coop_heuristic.CoopHeuristic.choose_state] and plays
its very moves: the fight statistics are the same loops over the same dice-sum table (`_fight_stats`,
`_fight_win_prob`), and everything that does not depend on the unseen Persian cards (the pair tables, the
outcome of every fight, the line quality of each pair, the support cost by cards left, the future of a deck
with fewer than two unseen cards) is computed once by the Python heuristic's own code
(`thermopylae_agents.players._coop_search_tables.heuristic_tables`). What depends on the unseen cards (a
card's average future gain) comes from sums over the pairs of unseen rows that a refill updates
(`remove_unseen`), instead of the Python heuristic's cache of whole tables per unseen set. The sums are exact:
each pair's gain is split into two integers of 30 bits (units of 2**-30 and 2**-60), so that a sum is the same
whatever the order of the updates. Floating-point sums updated by subtraction leave rounding residues where
the Python heuristic's sums are exact (a zero gain stays zero there), and such residues change tied decisions;
the exact sums are rounded once, so a decision could differ from the Python heuristic's only where two scores
tie to within the last bit (``tests/agents/players/test_coop_search_kernel.py`` checks move for move).

**The rules** are the reference engine's
([`thermopylae_env.coop.CoopGame`][thermopylae_env.coop.rules.CoopGame]: ``resolve_fight``, ``_start_offers``,
``_give``, ``_next_offer``, ``_complete``, ``_end``), step for step (`step`); only what the rules and the
heuristic read is kept (the discard piles as counts, Spartan cards as values). The tests hold `step` to
``CoopGame.step`` state for state, and whole heuristic games to the reference engine.

**A round.** One call of `play_round` plays a whole round of the search: for each sampled
determinization (the root's hidden deck orders permuted by the sample's permutations) every candidate
action, then the game to its end with `choose`. Every candidate of a sample reads the same dice
table (common random numbers): the k-th roll of a rollout takes the first dice of row k of the sample's
table, as the Python search's ``_DiceTable`` does. With a policy network as the rollout policy the round is
played in lockstep instead: `rollout_roots` sets up every (candidate, sample) rollout of the round with the
same samples and dice as `play_round` and plays the candidate, then, step by step, the caller evaluates the
network on the observations of the running rollouts
(``_coop_search_observe.observe_batch``) in one batched call and `step_rollouts` plays its actions.

The compact state (``_coop_search_tables.compact_state`` builds it from a
[`CoopState`][thermopylae_env.coop.state.CoopState]) is one int32 array: the hands as counts per seat and
value, the whole Spartan deck order as value indices (0 for 10) with its position, the Persian deck order as
table rows with its position, a flag per row still in the Persian deck, and the scalars at the ``S_*``
offsets. The int64 array of `F_SIZE` holds the sums over the unseen rows.

Every compiled function is in this one module, with the constants it reads: numba's disk cache
(``cache=True``) checks only the source file of the function it compiles, so a compiled call into another
module could run stale code after that module changed.
"""

from __future__ import annotations

import numba
import numpy as np

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
from thermopylae_env.coop.state import HAND_LIMIT, MAX_DICE

__all__ = ["F_SIZE", "S_SIZE", "choose", "choose_from_scratch", "future_init", "outcome_table", "play_game",
           "play_round", "remove_unseen", "rollout_roots", "step", "step_rollouts", "step_state"]

MAX_ROWS = 32  # Persian deck tables have 28 rows; room for a few more

# Offsets of the compact state.
S_HANDS = 0  # MAX_PLAYERS * NUM_VALUES counts
S_SPARTAN = S_HANDS + MAX_PLAYERS * NUM_VALUES  # SPARTAN_DECK_SIZE value indices
S_PERSIAN = S_SPARTAN + SPARTAN_DECK_SIZE  # MAX_ROWS Persian rows
S_UNSEEN = S_PERSIAN + MAX_ROWS  # MAX_ROWS flags: row still in the Persian deck
S_SPOS = S_UNSEEN + MAX_ROWS
S_PPOS = S_SPOS + 1
S_SLOT1 = S_PPOS + 1
S_SLOT2 = S_SLOT1 + 1
S_GRAVE = S_SLOT2 + 1
S_PDISCARD = S_GRAVE + 1
S_MARKER = S_PDISCARD + 1
S_SUPPORT = S_MARKER + 1
S_CUR = S_SUPPORT + 1
S_PHASE = S_CUR + 1
S_REC = S_PHASE + 1
S_OFFERS = S_REC + 1
S_TERM = S_OFFERS + 1
S_WON = S_TERM + 1
S_TURN = S_WON + 1
S_DICE = S_TURN + 1  # dice rolls made so far (the row of the dice table the next roll reads)
S_PLAYERS = S_DICE + 1
S_ROWS = S_PLAYERS + 1  # rows of the Persian deck table
S_NUNSEEN = S_ROWS + 1
S_SIZE = S_NUNSEEN + 1

# The sums over the unseen rows, exact: each pair's gain is HIGH * 2**-30 + LOW * 2**-60 with integers
# HIGH and LOW (LOW < 2**30); per bonus flag (0 off, 1 on) the NUM_VALUES high parts, then the low parts.
PART_BITS = 30
PARTS = 2 * NUM_VALUES
F_TOTAL = 0  # 2 * PARTS: the sums over the ordered pairs of unseen rows
F_DIAGONAL = 2 * PARTS  # 2 * PARTS: the sums over the unseen rows paired with themselves
F_VALID = 4 * PARTS  # per bonus flag: 1 while its sums are those of the unseen rows
F_SIZE = F_VALID + 2

# Parameter vector order.
PARAM_NAMES = ("grave", "beaten", "bonus", "win", "line", "card_scale", "full_hand_discount",
               "early_keep", "stay3_hand", "stay3_adv", "walk_hand", "walk_adv")
(P_GRAVE, P_BEATEN, P_BONUS, P_WIN, P_LINE, P_CARD_SCALE, P_DISCOUNT, P_EARLY_KEEP, P_STAY3_HAND,
 P_STAY3_ADV, P_WALK_HAND, P_WALK_ADV) = range(len(PARAM_NAMES))

MAIN, DRAW_OFFER, DISCARD = 0, 1, 2


# ------------------------------------------------------------------------------------------ unseen sums
@numba.njit(cache=True)
def _sums(s, ht, f, flag) -> None:
    """The sums of ``s``'s unseen Persian rows for one bonus flag, from scratch."""
    fixed = ht[1]
    n = s[S_ROWS]
    total = F_TOTAL + flag * PARTS
    diagonal = F_DIAGONAL + flag * PARTS
    for v in range(PARTS):
        f[total + v] = 0
        f[diagonal + v] = 0
    for i in range(n):
        if s[S_UNSEEN + i]:
            for v in range(PARTS):
                f[diagonal + v] += fixed[flag, i, i, v]
            for j in range(n):
                if s[S_UNSEEN + j]:
                    for v in range(PARTS):
                        f[total + v] += fixed[flag, i, j, v]
    f[F_VALID + flag] = 1


@numba.njit(cache=True)
def future_init(s, ht, f) -> None:
    """The sums of ``s``'s unseen Persian rows for the bonus flag of ``s``; those of the other flag are
    computed when a decision first needs them (the Spartan deck only shrinks: at most once a game)."""
    flag = 1 if s[S_SPOS] < SPARTAN_DECK_SIZE else 0
    f[F_VALID + 1 - flag] = 0
    _sums(s, ht, f, flag)


@numba.njit(cache=True, inline="always")
def remove_unseen(s, fixed, f, row) -> None:
    """Row ``row`` leaves the Persian deck (a refill): the flag, the count and the sums in use (``fixed``:
    the pair table in fixed point, ``ht[1]``)."""
    n = s[S_ROWS]
    for flag in range(2):
        if not f[F_VALID + flag]:
            continue
        total = F_TOTAL + flag * PARTS
        diagonal = F_DIAGONAL + flag * PARTS
        # Without a branch on the flags (random, so often mispredicted), into a fresh array (that LLVM
        # knows aliases nothing, so the parts add in vector registers).
        out = np.zeros(PARTS, np.int64)
        for j in range(n):
            keep = -np.int64(s[S_UNSEEN + j])  # all ones or zero: a mask, since AVX2 has no 64-bit multiply
            for v in range(PARTS):
                out[v] += (fixed[flag, row, j, v] + fixed[flag, j, row, v]) & keep
        for v in range(PARTS):
            f[total + v] -= out[v] - fixed[flag, row, row, v]
            f[diagonal + v] -= fixed[flag, row, row, v]
    s[S_UNSEEN + row] = 0
    s[S_NUNSEEN] -= 1


# ------------------------------------------------------------------------------------------ fight odds
@numba.njit(cache=True, inline="always")
def _fight_stats(pmf, value, dice, w1, r1, b1, has2, w2, r2, b2):
    """``(e_beaten, e_grave, e_bonus, p_beat1, p_both)`` as
    [`coop_features.fight_stats`][thermopylae_agents.players.coop_features.fight_stats] sums them."""
    g1 = 0.0
    g2 = 0.0
    n1 = 0.0
    n2 = 0.0
    bonus = 0.0
    p_beat1 = 0.0
    for t in range(pmf.shape[1]):
        p = pmf[dice, t]
        if p == 0.0:
            continue
        total = value + t
        if total < w1:
            continue
        p_beat1 += p
        g = 0
        n = 1
        if b1:
            bonus += p
        if total >= r1:
            g = 1
        if has2 and total >= w2:
            n = 2
            if b2:
                bonus += p
            if total >= r2:
                g += 1
        if g == 1:
            g1 += p
        elif g == 2:
            g2 += p
        if n == 1:
            n1 += p
        else:
            n2 += p
    return n1 + 2 * n2, g1 + 2 * g2, bonus, p_beat1, n2


@numba.njit(cache=True)
def outcome_table(pmf, white, red, has_bonus, beaten_weight, grave_weight):
    """``CoopHeuristic._outcome`` of every fight: ``[value index, dice, slot 1 row, slot 2 row]`` (row
    ``n`` an empty slot) holds ``(beaten and graveyard gain, expected bonus draws, P(slot 1 only),
    P(both))``."""
    n = white.shape[0]
    out = np.zeros((NUM_VALUES, MAX_DICE + 1, n + 1, n + 1, 4))
    for vi in range(NUM_VALUES):
        for dice in range(MAX_DICE + 1):
            for r1 in range(n):
                for r2 in range(n + 1):
                    has2 = r2 < n
                    w2 = white[r2] if has2 else 0
                    rd2 = red[r2] if has2 else 0
                    b2 = has_bonus[r2] != 0 if has2 else False
                    e_beaten, e_grave, e_bonus, p_beat1, p_both = _fight_stats(
                        pmf, vi + 10, dice, white[r1], red[r1], has_bonus[r1] != 0, has2, w2, rd2, b2)
                    out[vi, dice, r1, r2, 0] = beaten_weight * e_beaten + grave_weight * e_grave
                    out[vi, dice, r1, r2, 1] = e_bonus
                    out[vi, dice, r1, r2, 2] = p_beat1 - p_both
                    out[vi, dice, r1, r2, 3] = p_both
    return out


@numba.njit(cache=True, inline="always")
def _fight_win_prob(pmf, value, dice, w1, r1, has2, w2, r2, need_grave, persian_deck):
    win = 0.0
    for t in range(pmf.shape[1]):
        p = pmf[dice, t]
        if p == 0.0:
            continue
        total = value + t
        if total < w1:
            continue
        grave = 1 if total >= r1 else 0
        beaten = 1
        if grave < need_grave and has2 and total >= w2:
            beaten = 2
            grave += 1 if total >= r2 else 0
        if grave >= need_grave or beaten > persian_deck:
            win += p
    return win


# ------------------------------------------------------------------------------------------ decisions
@numba.njit(cache=True, inline="always")
def _should_retreat(params, marker, spartan_deck, hand_size, best_adv) -> bool:
    if marker >= 6:
        return False
    if best_adv >= params[P_WIN] * 0.5:
        return False
    can_draw = spartan_deck > 0
    if marker <= 2:
        return best_adv < params[P_EARLY_KEEP] or (not can_draw and best_adv < 0)
    if not can_draw:
        return False
    if marker == 3:
        return hand_size <= params[P_STAY3_HAND] or best_adv < params[P_STAY3_ADV]
    return hand_size <= params[P_WALK_HAND] or best_adv < params[P_WALK_ADV]


@numba.njit(cache=True, inline="always")
def _main(s, ht, f, gain) -> int:
    (_, _, quality, line_quality, full_gain, full_rows, full_pair, pmf, white, red, _, alias,
     support_cost_of, weights, params, outcomes) = ht
    cur = s[S_CUR]
    hand = S_HANDS + cur * NUM_VALUES
    hand_size = 0
    for v in range(NUM_VALUES):
        hand_size += s[hand + v]
    if hand_size == 0:
        return RETREAT
    n_rows = s[S_ROWS]
    spartan_deck = SPARTAN_DECK_SIZE - s[S_SPOS]
    bonus_on = spartan_deck > 0
    flag = 1 if bonus_on else 0
    in_hands = 0
    for c in range(MAX_PLAYERS * NUM_VALUES):
        in_hands += s[S_HANDS + c]
    cards_left = spartan_deck + in_hands
    support_left = s[S_SUPPORT]
    support_cost = support_cost_of[min(cards_left, 20)]
    if support_left >= cards_left:
        support_cost = 0.0
    # The future (CoopHeuristic._future_of) of the unseen rows, or of the whole table below two.
    nu = s[S_NUNSEEN]
    if nu < 2:
        for v in range(NUM_VALUES):
            gain[v] = full_gain[flag, v]
        pair_quality = full_pair[flag]
    else:
        if not f[F_VALID + flag]:
            _sums(s, ht, f, flag)
        scale = float(nu) * float(nu - 1) * 2.0 ** (2 * PART_BITS)
        pair_quality = 0.0
        total = F_TOTAL + flag * PARTS
        diagonal = F_DIAGONAL + flag * PARTS
        for v in range(NUM_VALUES):
            high = float(f[total + v] - f[diagonal + v]) * 2.0**PART_BITS
            low = float(f[total + NUM_VALUES + v] - f[diagonal + NUM_VALUES + v])
            g = (high + low) / scale  # the exact sum, rounded once, then divided
            gain[v] = g
            pair_quality += weights[v] * g
    marker = s[S_MARKER]
    slot1 = s[S_SLOT1]
    slot2 = s[S_SLOT2]
    line_weight = params[P_LINE]
    q_now = 0.0
    q_one = 0.0
    if slot1 < 0 or slot2 < 0:
        line_weight = 0.0
    else:
        i1 = alias[slot1]
        i2 = alias[slot2]
        q_now = line_quality[flag, i1, i2]
        if nu < 2:
            q_one = full_rows[flag, i2]
        else:
            row_sum = 0.0
            for j in range(n_rows):
                row_sum += quality[flag, i2, j] * s[S_UNSEEN + j]
            own = s[S_UNSEEN + i2]
            q_one = (row_sum - quality[flag, i2, i2] * own) / max(float(nu - own), 1.0)
    discount = params[P_DISCOUNT] if hand_size >= HAND_LIMIT else 0.0
    need_grave = GRAVEYARD_WIN - s[S_GRAVE]
    bonus_value = params[P_BONUS] if bonus_on else 0.0
    w_win = params[P_WIN]
    card_scale = params[P_CARD_SCALE]
    if line_weight:
        to_one = line_weight * (q_one - q_now)
        to_pair = line_weight * (pair_quality - q_now)
    else:
        to_one = 0.0
        to_pair = 0.0
    persian_deck = n_rows - s[S_PPOS]
    may_win = need_grave <= 2 or persian_deck <= 1
    top = min(support_left, NUM_SUPPORT)
    dice_here = 1 if (marker == 3 or marker == 6) else 0
    w1 = r1 = w2 = r2 = 0
    has1 = slot1 >= 0
    has2 = slot2 >= 0
    o2 = slot2 if has2 else n_rows
    if has1:
        w1 = white[slot1]
        r1 = red[slot1]
    if has2:
        w2 = white[slot2]
        r2 = red[slot2]
    best_action = -1
    best_adv = -np.inf
    for vi in range(NUM_VALUES):
        if s[hand + vi] == 0:
            continue
        value = vi + 10
        card_cost = card_scale * gain[vi] - discount
        base = FIGHT_BASE + vi * (NUM_SUPPORT + 1)
        for support in range(top + 1):
            dice = min(support + dice_here, MAX_DICE)
            if has1:
                base_gain = outcomes[vi, dice, slot1, o2, 0]
                e_bonus = outcomes[vi, dice, slot1, o2, 1]
                p_one = outcomes[vi, dice, slot1, o2, 2]
                p_both = outcomes[vi, dice, slot1, o2, 3]
            else:
                base_gain = e_bonus = p_one = p_both = 0.0
            g = base_gain + bonus_value * e_bonus + p_one * to_one + p_both * to_pair
            rest = g - card_cost - support_cost * support
            if may_win:
                p_win = 0.0
                if has1:
                    p_win = _fight_win_prob(pmf, value, dice, w1, r1, has2, w2, r2, need_grave, persian_deck)
                score = p_win * w_win + (1.0 - p_win) * rest
            else:
                score = rest
            if score > best_adv:
                best_action = base + support
                best_adv = score
    if _should_retreat(params, marker, spartan_deck, hand_size, best_adv):
        return RETREAT
    return best_action if best_action >= 0 else RETREAT


@numba.njit(cache=True)
def choose(s, ht, f, gain) -> int:
    """The heuristic's action in the compact state ``s`` (sums ``f``, scratch ``gain`` of
    NUM_VALUES floats):
    [`CoopHeuristic.choose_state`][thermopylae_agents.players.coop_heuristic.CoopHeuristic.choose_state]."""
    phase = s[S_PHASE]
    cur = s[S_CUR]
    if phase == MAIN:
        return _main(s, ht, f, gain)
    if phase == DRAW_OFFER:
        best = -1
        best_size = 1 << 30
        best_turn = 1 << 30
        for other in range(s[S_PLAYERS]):
            size = 0
            for v in range(NUM_VALUES):
                size += s[S_HANDS + other * NUM_VALUES + v]
            turn = (other - cur) % MAX_PLAYERS
            if size < best_size or (size == best_size and turn < best_turn):
                best, best_size, best_turn = other, size, turn
        return GIVE_BASE + best
    hand = S_HANDS + s[S_REC] * NUM_VALUES
    for v in range(NUM_VALUES):
        if s[hand + v] > 0:
            return DISCARD_BASE + v
    return -1


@numba.njit(cache=True)
def choose_from_scratch(s, ht) -> int:
    """`choose` with the sums computed from scratch (what the tests compare)."""
    f = np.zeros(F_SIZE, np.int64)
    future_init(s, ht, f)
    return choose(s, ht, f, np.zeros(NUM_VALUES))


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
def _complete(s, fixed, f) -> None:
    """``CoopGame._complete``: refill the line, the loss by exhaustion, the next seat."""
    s[S_PHASE] = MAIN
    if s[S_SLOT1] < 0:
        row = s[S_PERSIAN + s[S_PPOS]]
        s[S_SLOT1] = row
        s[S_PPOS] += 1
        remove_unseen(s, fixed, f, row)
    if s[S_SLOT2] < 0:
        row = s[S_PERSIAN + s[S_PPOS]]
        s[S_SLOT2] = row
        s[S_PPOS] += 1
        remove_unseen(s, fixed, f, row)
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
def _next_offer(s, fixed, f) -> None:
    if s[S_OFFERS] and s[S_SPOS] < SPARTAN_DECK_SIZE:
        s[S_OFFERS] -= 1
        s[S_PHASE] = DRAW_OFFER
    else:
        s[S_OFFERS] = 0
        _complete(s, fixed, f)


@numba.njit(cache=True)
def _start_offers(s, count, fixed, f) -> None:
    if count and s[S_SPOS] < SPARTAN_DECK_SIZE:
        s[S_PHASE] = DRAW_OFFER
        s[S_OFFERS] = count - 1
    else:
        _complete(s, fixed, f)


@numba.njit(cache=True)
def _give(s, seat, fixed, f) -> None:
    value = s[S_SPARTAN + s[S_SPOS]]
    s[S_SPOS] += 1
    s[S_HANDS + seat * NUM_VALUES + value] += 1
    if s[S_SPOS] >= SPARTAN_DECK_SIZE:
        s[S_OFFERS] = 0  # nothing left to offer
    if _hand_size(s, seat) > HAND_LIMIT:
        s[S_PHASE] = DISCARD
        s[S_REC] = seat
    else:
        _next_offer(s, fixed, f)


@numba.njit(cache=True)
def _fight(s, vi, support, dice, et, fixed, f) -> None:
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
        _complete(s, fixed, f)
        return
    if beaten == 1:  # the survivor of slot 2 moves up
        s[S_SLOT1] = s[S_SLOT2]
        s[S_SLOT2] = -1
    if s[S_ROWS] - s[S_PPOS] < beaten:
        _end(s, True)
        return
    _start_offers(s, bonus_beaten, fixed, f)


@numba.njit(cache=True)
def step(s, action, dice, et, fixed, f) -> None:
    """``CoopGame.step`` for a legal ``action`` (not checked): the rollouts play only legal actions."""
    phase = s[S_PHASE]
    if phase == MAIN:
        if action == RETREAT:
            s[S_MARKER] += 1
            if s[S_MARKER] >= LOSS_MARKER:
                _end(s, False)
            else:
                _start_offers(s, 1, fixed, f)
        else:
            offset = action - FIGHT_BASE
            _fight(s, offset // (NUM_SUPPORT + 1), offset % (NUM_SUPPORT + 1), dice, et, fixed, f)
    elif phase == DRAW_OFFER:
        if action == DECLINE:
            _next_offer(s, fixed, f)
        else:
            _give(s, action - GIVE_BASE, fixed, f)
    else:
        s[S_HANDS + s[S_REC] * NUM_VALUES + action - DISCARD_BASE] -= 1
        s[S_REC] = -1
        _next_offer(s, fixed, f)


# ------------------------------------------------------------------------------------------ rollouts
@numba.njit(cache=True)
def _rollout(s, action, dice, et, ht, f, gain) -> float:
    """Play ``action`` in ``s``, then the heuristic to the end of the game: +1 a win, -1 a loss."""
    step(s, action, dice, et, ht[1], f)
    while not s[S_TERM]:
        a = choose(s, ht, f, gain)
        if a < 0:
            raise ValueError("the heuristic found no action")
        step(s, a, dice, et, ht[1], f)
    return 1.0 if s[S_WON] else -1.0


@numba.njit(cache=True)
def play_round(base, spartan_perms, persian_perms, candidates, dice, first, et, ht, out) -> None:
    """One round of the search: ``out[c, j]`` is the return of candidate ``candidates[c]`` on sample
    ``j``, the root ``base`` with its hidden Spartan deck permuted by ``spartan_perms[j]`` and its
    Persian deck by ``persian_perms[j]`` (as ``state_from_observation`` shuffles them), rolled out with
    the dice table ``dice[first + j]``."""
    f0 = np.zeros(F_SIZE, np.int64)
    future_init(base, ht, f0)  # the unseen rows are the same set in every sample
    n = base.shape[0]
    root = base.copy()
    s = base.copy()
    f = np.empty(F_SIZE, np.int64)
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
    """`step` on its own, the sums over the unseen rows from scratch (what the differential tests
    drive)."""
    f = np.zeros(F_SIZE, np.int64)
    future_init(s, ht, f)
    step(s, action, dice, et, ht[1], f)


@numba.njit(cache=True)
def play_game(s, dice, et, ht) -> None:
    """Play the heuristic from ``s`` to the end of the game, in place."""
    f = np.zeros(F_SIZE, np.int64)
    future_init(s, ht, f)
    gain = np.empty(NUM_VALUES)
    while not s[S_TERM]:
        a = choose(s, ht, f, gain)
        if a < 0:
            raise ValueError("the heuristic found no action")
        step(s, a, dice, et, ht[1], f)


# ------------------------------------------------------------------------------------------ policy rollouts
@numba.njit(cache=True)
def rollout_roots(base, spartan_perms, persian_perms, candidates, dice, first, et, fixed, states) -> None:
    """The rollouts of a round of `play_round`, set up for a rollout policy played outside: row
    ``c * n + j`` of ``states`` (``n`` samples) is sample ``j`` (as `play_round` builds it) after candidate
    ``candidates[c]``, rolled with the dice table ``dice[first + j]``. The sums over the unseen rows are left
    invalid (only `choose` reads them), so a refill only updates the flags."""
    f = np.zeros(F_SIZE, np.int64)
    n = spartan_perms.shape[0]
    root = base.copy()
    spos = base[S_SPOS]
    ppos = base[S_PPOS]
    for j in range(n):
        for i in range(spartan_perms.shape[1]):
            root[S_SPARTAN + spos + i] = base[S_SPARTAN + spos + spartan_perms[j, i]]
        for i in range(persian_perms.shape[1]):
            root[S_PERSIAN + ppos + i] = base[S_PERSIAN + ppos + persian_perms[j, i]]
        for c in range(candidates.shape[0]):
            s = states[c * n + j]
            s[:] = root
            step(s, candidates[c], dice[first + j], et, fixed, f)


@numba.njit(cache=True)
def step_rollouts(states, rows, actions, n, dice, first, et, fixed) -> None:
    """`step` ``actions[k]`` in rollout ``rows[k]`` of `rollout_roots`'s ``states`` (``n`` samples: rollout
    ``i`` rolls with ``dice[first + i % n]``)."""
    f = np.zeros(F_SIZE, np.int64)
    for k in range(rows.shape[0]):
        i = rows[k]
        step(states[i], actions[k], dice[first + i % n], et, fixed, f)
