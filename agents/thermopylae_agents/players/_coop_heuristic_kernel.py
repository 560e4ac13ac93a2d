"""The compiled (numba) twin of :meth:`CoopHeuristic.choose_state
<thermopylae_agents.players.coop_heuristic.CoopHeuristic.choose_state>`, on a compact integer state.

The search player's rollouts (:mod:`thermopylae_agents.players._coop_search_kernel`) call :func:`choose`
at every decision. It plays the very moves of the Python heuristic: the fight statistics are the same
loops over the same dice-sum table (:func:`_fight_stats`, :func:`_fight_win_prob`), and everything that
does not depend on the unseen Persian cards (the pair tables, the line quality of each pair, the support
cost by cards left, the future of a deck with fewer than two unseen cards) is computed once by the Python
heuristic's own code (:func:`heuristic_tables`). What depends on the unseen cards (a card's average
future gain, the quality of a line with a random second card) is summed over the unseen rows when a
decision first needs it after a refill (:func:`remove_unseen` marks the sums stale), instead of the
Python heuristic's cache of whole tables per unseen set; the loops sum in another order than NumPy's, so
a decision could differ only where two scores tie to within the last bits
(``tests/agents/test_coop_search_kernel.py`` checks move for move).

The compact state (:func:`compact_state` builds it from a :class:`~thermopylae_env.coop.CoopState`) is one
int32 array: the hands as counts per seat and value, the whole Spartan deck order as value indices (0 for
10) with its position, the Persian deck order as table rows with its position, a flag per row still in the
Persian deck, and the scalars at the ``S_*`` offsets. The float64 array of :data:`F_SIZE` holds the
sums over the unseen rows.

Compiled on first use and cached on disk (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

from thermopylae_agents.players.coop_features import _PMF_TABLE
from thermopylae_env.coop.layout import (
    DISCARD_BASE,
    FIGHT_BASE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    MAX_PLAYERS,
    NUM_SUPPORT,
    NUM_VALUES,
    RETREAT,
    SPARTAN_DECK_SIZE,
)
from thermopylae_env.coop.state import HAND_LIMIT, MAX_DICE

__all__ = ["F_SIZE", "S_SIZE", "choose", "choose_from_scratch", "compact_state", "future_init",
           "heuristic_tables", "remove_unseen"]

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

# Offsets of the sums over the unseen rows: per bonus flag (0 off, 1 on) the sum over unseen pairs and the diagonal.
F_TOTAL = 0  # 2 * NUM_VALUES
F_DIAGONAL = 2 * NUM_VALUES
F_VALID = 4 * NUM_VALUES  # per bonus flag: 1.0 while the sums are those of the unseen rows
F_SIZE = F_VALID + 2

# Parameter vector order.
PARAM_NAMES = ("grave", "beaten", "bonus", "win", "line", "card_scale", "full_hand_discount",
               "early_keep", "stay3_hand", "stay3_adv", "walk_hand", "walk_adv")
(P_GRAVE, P_BEATEN, P_BONUS, P_WIN, P_LINE, P_CARD_SCALE, P_DISCOUNT, P_EARLY_KEEP, P_STAY3_HAND,
 P_STAY3_ADV, P_WALK_HAND, P_WALK_ADV) = range(len(PARAM_NAMES))

PHASE_MAIN, PHASE_DRAW_OFFER, PHASE_DISCARD = 0, 1, 2


# ------------------------------------------------------------------------------------------ Python side
def heuristic_tables(heuristic) -> tuple:
    """What :func:`choose` reads, computed by ``heuristic``'s own code (a
    :class:`~thermopylae_agents.players.coop_heuristic.CoopHeuristic`): ``(combined, quality,
    line_quality, full_gain, full_rows, full_pair, pmf, clipped rows (white, red, bonus), row alias,
    support cost, spartan weights, params)``."""
    p = heuristic.params
    rows = heuristic._rows
    n = len(rows)
    if n > MAX_ROWS:
        raise ValueError(f"the compiled search handles at most {MAX_ROWS} Persian rows, got {n}")
    k = int(round(p["future_dice"]))
    grave, beaten, bonus = heuristic._tables
    combined = np.zeros((2, NUM_VALUES, n, n))
    quality = np.zeros((2, n, n))
    line_quality = np.zeros((2, n, n))
    full_gain = np.zeros((2, NUM_VALUES))
    full_rows = np.zeros((2, n))
    full_pair = np.zeros(2)
    weights = heuristic._spartan_weights
    for flag in (0, 1):
        # The same expressions as CoopHeuristic._future_of, so that the tables are equal to the bit.
        c = p["beaten"] * beaten[:, k] + p["grave"] * grave[:, k]
        if flag:
            c = c + p["bonus"] * bonus[:, k]
        combined[flag] = c
        quality[flag] = np.einsum("v,vij->ij", weights, c)
        for i in range(n):
            for j in range(n):
                line_quality[flag, i, j] = heuristic._line_quality(i, j, bool(flag))
        gain, row_q, pair_q = heuristic._future_of(np.ones(n), bool(flag), ("compiled search", flag))
        heuristic._future_cache.pop(("compiled search", flag), None)
        full_gain[flag] = gain
        full_rows[flag] = row_q
        full_pair[flag] = pair_q
    white = np.array([r[0] for r in rows], dtype=np.int32)
    red = np.array([r[1] for r in rows], dtype=np.int32)
    has_bonus = np.array([r[2] for r in rows], dtype=np.int32)
    alias = np.array([heuristic._row_of[r] for r in rows], dtype=np.int32)
    support_cost = np.array([p["support"] * (m / 20.0) ** p["support_exp"] for m in range(21)])
    params = np.array([p[name] for name in PARAM_NAMES], dtype=np.float64)
    return (combined, quality, line_quality, full_gain, full_rows, full_pair, _PMF_TABLE.copy(), white, red,
            has_bonus, alias, support_cost, weights.astype(np.float64), params)


def compact_state(game, state) -> np.ndarray:
    """The compact int32 form of a :class:`~thermopylae_env.coop.CoopState` of ``game`` (see the module
    docstring); the dice counter starts at 0."""
    s = np.zeros(S_SIZE, dtype=np.int32)
    spartan = game.spartan
    for seat, hand in enumerate(state.hands):
        for card in hand:
            s[S_HANDS + seat * NUM_VALUES + spartan[card] - 10] += 1
    s[S_SPARTAN:S_SPARTAN + SPARTAN_DECK_SIZE] = [spartan[c] - 10 for c in state.spartan_order]
    n = len(state.persian_order)
    if n > MAX_ROWS:
        raise ValueError(f"the compiled search handles at most {MAX_ROWS} Persian rows, got {n}")
    s[S_PERSIAN:S_PERSIAN + n] = state.persian_order
    for row in state.persian_order[state.persian_pos:]:
        s[S_UNSEEN + row] = 1
    s[S_SPOS] = state.spartan_pos
    s[S_PPOS] = state.persian_pos
    s[S_SLOT1] = state.slot1
    s[S_SLOT2] = state.slot2
    s[S_GRAVE] = len(state.graveyard)
    s[S_PDISCARD] = len(state.persian_discard)
    s[S_MARKER] = state.marker
    s[S_SUPPORT] = state.support
    s[S_CUR] = state.current_player
    s[S_PHASE] = state.phase
    s[S_REC] = state.recipient
    s[S_OFFERS] = state.offers
    s[S_TERM] = state.terminated
    s[S_WON] = state.won
    s[S_TURN] = state.turn
    s[S_PLAYERS] = game.num_players
    s[S_ROWS] = n
    s[S_NUNSEEN] = n - state.persian_pos
    return s


# ------------------------------------------------------------------------------------------ unseen sums
@numba.njit(cache=True, inline="always")
def _sums(s, ht, f, flag) -> None:
    """The sums over the unseen rows of one bonus flag, from scratch, in row order: running sums that a
    refill would update by subtraction leave rounding residues where the Python heuristic's sums are
    exact (a zero gain stays zero there), and such residues change near-tied decisions."""
    combined = ht[0]
    n = s[S_ROWS]
    for v in range(NUM_VALUES):
        total = 0.0
        diagonal = 0.0
        for i in range(n):
            if s[S_UNSEEN + i]:
                diagonal += combined[flag, v, i, i]
                for j in range(n):
                    if s[S_UNSEEN + j]:
                        total += combined[flag, v, i, j]
        f[F_TOTAL + flag * NUM_VALUES + v] = total
        f[F_DIAGONAL + flag * NUM_VALUES + v] = diagonal
    f[F_VALID + flag] = 1.0


@numba.njit(cache=True)
def future_init(s, ht, f) -> None:
    """The sums of ``s``'s unseen Persian rows for both bonus flags."""
    _sums(s, ht, f, 0)
    _sums(s, ht, f, 1)


@numba.njit(cache=True, inline="always")
def remove_unseen(s, f, row) -> None:
    """Row ``row`` leaves the Persian deck (a refill): the flag and the count; the sums are recomputed
    at the next decision that reads them."""
    s[S_UNSEEN + row] = 0
    s[S_NUNSEEN] -= 1
    f[F_VALID] = 0.0
    f[F_VALID + 1] = 0.0


# ------------------------------------------------------------------------------------------ fight odds
@numba.njit(cache=True, inline="always")
def _fight_stats(pmf, value, dice, w1, r1, b1, has2, w2, r2, b2):
    """``(e_beaten, e_grave, e_bonus, p_beat1, p_both)`` as :func:`coop_features.fight_stats` sums them."""
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


@numba.njit(cache=True)
def _main(s, ht, f, gain) -> int:
    (_, quality, line_quality, full_gain, full_rows, full_pair, pmf, white, red, has_bonus, alias,
     support_cost_of, weights, params) = ht
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
        if f[F_VALID + flag] == 0.0:
            _sums(s, ht, f, flag)
        scale = float(nu) * float(nu - 1)
        pair_quality = 0.0
        for v in range(NUM_VALUES):
            g = (f[F_TOTAL + flag * NUM_VALUES + v] - f[F_DIAGONAL + flag * NUM_VALUES + v]) / scale
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
                if s[S_UNSEEN + j]:
                    row_sum += quality[flag, i2, j]
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
    b1 = b2 = False
    has1 = slot1 >= 0
    has2 = slot2 >= 0
    if has1:
        w1 = white[slot1]
        r1 = red[slot1]
        b1 = has_bonus[slot1] != 0
    if has2:
        w2 = white[slot2]
        r2 = red[slot2]
        b2 = has_bonus[slot2] != 0
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
                e_beaten, e_grave, e_bonus, p_beat1, p_both = _fight_stats(
                    pmf, value, dice, w1, r1, b1, has2, w2, r2, b2)
            else:
                e_beaten = e_grave = e_bonus = p_beat1 = p_both = 0.0
            base_gain = params[P_BEATEN] * e_beaten + params[P_GRAVE] * e_grave
            p_one = p_beat1 - p_both
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
    NUM_VALUES floats): :meth:`CoopHeuristic.choose_state`."""
    phase = s[S_PHASE]
    cur = s[S_CUR]
    if phase == PHASE_MAIN:
        return _main(s, ht, f, gain)
    if phase == PHASE_DRAW_OFFER:
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
    """:func:`choose` with the sums computed from scratch (what the tests compare)."""
    f = np.zeros(F_SIZE)
    future_init(s, ht, f)
    return choose(s, ht, f, np.zeros(NUM_VALUES))
