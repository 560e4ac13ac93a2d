"""The compiled (numba) solo kernel of :class:`thermopylae_agents.coop_bound.DeckClairvoyantSolver`.

The same recursion as the pure-Python solver, on an integer state: the hand is a base-3 number (one
digit per value 10..20: how many cards of that value it holds), and the memo key packs the Spartan
position, the hand, the Persian position, the graveyard count, the marker and the support into one int64.
Importing this module imports numba; the solver imports it only when numba is installed. Compiled on first
use and cached on disk.
"""

from __future__ import annotations

import numba
import numpy as np

NUM_VALUES = 11
POW3 = np.array([3**i for i in range(NUM_VALUES + 1)], dtype=np.int64)
SPARTAN_DECK_SIZE = 20
HAND_LIMIT = 5
GRAVEYARD_WIN = 12
LOSS_MARKER = 7
MAX_OFFER_RESULTS = 128


def hand_sizes() -> np.ndarray:
    """``sizes[h]``: the number of cards of the base-3 hand ``h``."""
    sizes = np.zeros(3**NUM_VALUES, dtype=np.int8)
    for digit in range(NUM_VALUES):
        sizes += ((np.arange(3**NUM_VALUES) // 3**digit) % 3).astype(np.int8)
    return sizes


@numba.njit(cache=True)
def _key(sp, hand, pp, grave, marker, support):
    return ((((sp * 177147 + hand) * 32 + pp) * 16 + grave) * 8 + marker) * 8 + support


@numba.njit(cache=True)
def _offer_results(sp, hand, count, sv, sizes, out_sp, out_hand):
    """Every ``(Spartan position, hand)`` after answering ``count`` offers: decline, or take the top card
    (a 6-card hand then discards any one value). Returns how many were written (repeats possible)."""
    out_sp[0] = sp
    out_hand[0] = hand
    n = 1
    tmp_sp = np.empty(MAX_OFFER_RESULTS, dtype=np.int64)
    tmp_hand = np.empty(MAX_OFFER_RESULTS, dtype=np.int64)
    for _ in range(count):
        m = 0
        for i in range(n):
            s = out_sp[i]
            h = out_hand[i]
            # Declining into a hand of at most 4 cards is never better than taking the card
            # (docs/coop_bound.md, lemma 2), so only a full hand or an empty deck keeps this option.
            if s >= SPARTAN_DECK_SIZE or sizes[h] >= HAND_LIMIT:
                tmp_sp[m] = s
                tmp_hand[m] = h
                m += 1
            if s >= SPARTAN_DECK_SIZE:
                continue  # the deck is empty: the offer lapses
            taken = h + POW3[sv[s] - 10]
            if sizes[taken] > HAND_LIMIT:
                for v in range(NUM_VALUES):
                    if (taken // POW3[v]) % 3:
                        tmp_sp[m] = s + 1
                        tmp_hand[m] = taken - POW3[v]
                        m += 1
            else:
                tmp_sp[m] = s + 1
                tmp_hand[m] = taken
                m += 1
        for i in range(m):
            out_sp[i] = tmp_sp[i]
            out_hand[i] = tmp_hand[i]
        n = m
    return n



@numba.njit(cache=True)
def solve_main(sp, hand, pp, grave, marker, support, sv, white, red, bonus, pmf, sizes, memo, lucky,
               max_states):
    """The value of a solo MAIN-phase state (see the Python solver for the recursion)."""
    key = _key(sp, hand, pp, grave, marker, support)
    if key in memo:
        return memo[key]
    if len(memo) >= max_states:
        raise MemoryError("the memo of one deal is full")
    n_persian = white.shape[0]
    best = 0.0
    out_sp = np.empty(MAX_OFFER_RESULTS, dtype=np.int64)
    out_hand = np.empty(MAX_OFFER_RESULTS, dtype=np.int64)
    # Retreat: one offer, no refill.
    if marker + 1 < LOSS_MARKER:
        n = _offer_results(sp, hand, 1, sv, sizes, out_sp, out_hand)
        for i in range(n):
            if out_sp[i] >= SPARTAN_DECK_SIZE and out_hand[i] == 0:
                value = 0.0
            else:
                value = solve_main(out_sp[i], out_hand[i], pp, grave, marker + 1, support, sv, white, red,
                                   bonus, pmf, sizes, memo, lucky, max_states)
            if value > best:
                best = value
    extra = 1 if (marker == 3 or marker == 6) else 0
    w1 = white[pp - 2]
    r1 = red[pp - 2]
    b1 = bonus[pp - 2]
    w2 = white[pp - 1]
    r2 = red[pp - 1]
    b2 = bonus[pp - 1]
    probs = np.zeros(27)
    for vi in range(NUM_VALUES):
        if best >= 1.0:
            break
        if (hand // POW3[vi]) % 3 == 0:
            continue
        value_card = vi + 10
        rest = hand - POW3[vi]
        for spent in range(support + 1):
            n_dice = spent + extra
            probs[:] = 0.0
            for s in range(pmf.shape[1]):
                p = pmf[n_dice, s]
                if p == 0.0:
                    continue
                total = value_card + s
                beaten = 0
                gr = 0
                bo = 0
                if total >= w1:
                    beaten = 1
                    gr = 1 if total >= r1 else 0
                    bo = b1
                    if total >= w2:
                        beaten = 2
                        gr += 1 if total >= r2 else 0
                        bo += b2
                probs[beaten * 9 + gr * 3 + bo] += p
            expected = 0.0
            for code in range(27):
                p = probs[code]
                if p == 0.0:
                    continue
                beaten = code // 9
                gr = (code // 3) % 3
                bo = code % 3
                if grave + gr >= GRAVEYARD_WIN or n_persian - pp < beaten:
                    result = 1.0
                else:
                    result = 0.0
                    n = _offer_results(sp, rest, bo, sv, sizes, out_sp, out_hand)
                    for i in range(n):
                        if out_sp[i] >= SPARTAN_DECK_SIZE and out_hand[i] == 0:
                            value = 0.0
                        else:
                            value = solve_main(out_sp[i], out_hand[i], pp + beaten, grave + gr, marker,
                                               support - spent, sv, white, red, bonus, pmf, sizes, memo,
                                               lucky, max_states)
                        if value > result:
                            result = value
                            if result >= 1.0:
                                break
                if lucky:
                    if result > expected:
                        expected = result
                else:
                    expected += p * result
            if expected > best:
                best = expected
                if best >= 1.0:
                    break
    memo[key] = best
    return best
