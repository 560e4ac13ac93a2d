"""The compiled (numba) team kernel (2 to 4 seats) of
[`thermopylae_agents.evaluation.coop_bound.DeckClairvoyantSolver`][].

The team acts as one player who holds every hand: the same recursion as the pure-Python solver, on an
integer state. Each seat's hand is a base-3 number (as in the solo kernel,
`thermopylae_agents.evaluation._coop_bound_kernel`, whose fight tables, hand table and intrinsics it
uses); the acting seat is part of the state, and every action passes the turn to the next seat.

Differences from the solo kernel, all because a team has several hands:

* every draw offer may be declined or given to any seat (a seat then holding 6 cards discards any one
  value): the solo kernel's Lemma 2 (take the card when the hand has room) is not used, since a declined
  card can later go to another seat;
* the memo key is three exact float64 words (the counters and seat with hand 0, hands 1 and 2, hand 3)
  instead of one, in a table of rows ``(word 0 + 1, word 1, word 2, value)``.

The pruning is the solo kernel's (``docs/coop_bound.md``, "Speed"): Lemmas 3 (more support is never worse:
the team copies every action), 4 (a die that changes nothing is skipped) and 5 (too few cards left in the
deck and all hands to win) hold for a team as they stand, and an action is abandoned only when a proven
upper bound shows that it cannot beat an action already evaluated in full.
"""

# Why the recursion is written out again here instead of shared with the solo kernel: numba's disk cache
# (cache=True) checks a compiled function only against the stamp of its own source file, and code it takes
# from another module (a called jitted function, one passed in as an argument, an intrinsic, a global
# constant) is compiled into it, so after that module changes the cache here would keep running the old
# code. Both recursions in one module exceed the 800-line limit, and the solo kernel as this one's one-seat
# case gives up Lemma 2 and doubles the memo row, changing the solo bound's committed speed. The constants
# and the intrinsics _prefetch and _unowned imported below are compiled in here too: after changing them in
# _coop_bound_kernel.py, delete this module's numba cache (__pycache__/_coop_bound_team_kernel.*.nb?).

from __future__ import annotations

import numba
import numpy as np

from thermopylae_agents.evaluation._coop_bound_kernel import (
    GRAVEYARD_WIN,
    GROW_LOAD,
    HAND_LIMIT,
    HASH_MULTIPLIER,
    LOSS_MARKER,
    MAX_DEPTH,
    MIN_CAPACITY,
    NUM_CODES,
    NUM_VALUES,
    POW3,
    PRUNE_MARGIN,
    SPARTAN_DECK_SIZE,
    _prefetch,
    _unowned,
    table_capacity,
)

MAX_SEATS = 4
HAND_BITS = 18  # a base-3 hand of 11 digits is below 3**11 < 2**18
HAND_SPAN = 1 << HAND_BITS
# Answers to at most 2 offers: each declines or gives to one of 4 seats keeping one of at most 6 values.
MAX_OFFER_RESULTS = (1 + MAX_SEATS * (HAND_LIMIT + 1)) ** 2
EMPTY = 0.0  # word 0 is stored plus one, so a zero marks an empty row
SECOND_HASH = np.uint64(0xC2B2AE3D27D4EB4F)


def new_table(max_states: int) -> tuple[np.ndarray, np.ndarray]:
    """An empty memo for at most ``max_states`` entries: ``table[i] = (word0 + 1, word1, word2, value)``
    (0 in column 0: empty) and ``fill`` as the solo kernel's (entries, limit, lookups, abandoned, slots in
    use - 1, skipped dice). Only a power-of-two prefix is in use; it doubles when half full."""
    table = np.zeros((table_capacity(max_states), 4), dtype=np.float64)
    fill = np.array([0, max_states, 0, 0, MIN_CAPACITY - 1, 0], dtype=np.int64)
    return table, fill


def new_scratch() -> tuple[np.ndarray, ...]:
    """Per-depth arrays: the offer answers (positions, hands) and their buffer, and the fight outcomes'
    known values and upper bounds."""
    shape = (MAX_DEPTH + 1, MAX_OFFER_RESULTS)
    return (np.zeros(shape, dtype=np.int64), np.zeros(shape + (MAX_SEATS,), dtype=np.int64),
            np.zeros(shape, dtype=np.int64), np.zeros(shape + (MAX_SEATS,), dtype=np.int64),
            np.zeros((MAX_DEPTH + 1, NUM_CODES)), np.zeros((MAX_DEPTH + 1, NUM_CODES)))


@numba.njit(cache=True, inline="always")
def _words(sp, h0, h1, h2, h3, pp, grave, marker, support, seat):
    """The three exact words of a state's key (each below ``2**53``)."""
    w0 = (((((sp * 32 + pp) * 16 + grave) * 8 + marker) * 8 + support) * 4 + seat) * HAND_SPAN + h0 + 1
    return np.float64(w0), np.float64(h1 * HAND_SPAN + h2), np.float64(h3)


@numba.njit(cache=True, inline="always")
def _home(w0, w1, w2, mask):
    h = np.uint64(np.int64(w0)) * HASH_MULTIPLIER
    h = (h ^ np.uint64(np.int64(w1))) * SECOND_HASH
    h = (h ^ np.uint64(np.int64(w2))) * HASH_MULTIPLIER
    return np.int64(h >> np.uint64(32)) & mask


@numba.njit(cache=True, inline="always")
def _slot(table, mask, w0, w1, w2):
    """The row holding the key, or the empty row where it would go (linear probing)."""
    i = _home(w0, w1, w2, mask)
    while table[i, 0] != EMPTY and (table[i, 0] != w0 or table[i, 1] != w1 or table[i, 2] != w2):
        i = (i + 1) & mask
    return i


@numba.njit(cache=True)
def _grow(table, fill):
    """Double the part of the table in use, reinserting every entry."""
    old_size = fill[4] + 1
    old = table[:old_size].copy()
    table[:old_size] = 0.0
    mask = 2 * old_size - 1
    fill[4] = mask
    for j in range(old_size):
        if old[j, 0] != EMPTY:
            i = _slot(table, mask, old[j, 0], old[j, 1], old[j, 2])
            table[i, :] = old[j, :]


@numba.njit(cache=True, inline="always")
def _store(table, fill, w0, w1, w2, value):
    if fill[0] >= fill[1]:
        raise MemoryError("the memo of one deal is full (max_states)")
    if fill[0] + 1 > GROW_LOAD * (fill[4] + 1) and 2 * (fill[4] + 1) <= table.shape[0]:
        _grow(table, fill)
    i = _slot(table, fill[4], w0, w1, w2)
    if table[i, 0] == EMPTY:
        table[i, 0] = w0
        table[i, 1] = w1
        table[i, 2] = w2
        fill[0] += 1
    table[i, 3] = value


@numba.njit(cache=True, inline="always")
def _cannot_win(sp, h0, h1, h2, h3, pp, grave, n_persian, sizes):
    """True when too few Spartan cards are left in the deck and all hands for any win (Lemma 5)."""
    held = (sizes[h0] & 7) + (sizes[h1] & 7) + (sizes[h2] & 7) + (sizes[h3] & 7)
    fights = held + SPARTAN_DECK_SIZE - sp
    return 2 * fights < GRAVEYARD_WIN - grave and 2 * fights < n_persian - pp + 1


@numba.njit(cache=True, inline="always")
def _known(sp, h0, h1, h2, h3, pp, grave, marker, support, seat, n_persian, sizes, table, fill):
    """The value of a MAIN state if it is known without recursion (a loss, or in the memo), else -1."""
    if sp >= SPARTAN_DECK_SIZE and h0 == 0 and h1 == 0 and h2 == 0 and h3 == 0:
        return 0.0  # every hand and the deck are empty: lost
    if _cannot_win(sp, h0, h1, h2, h3, pp, grave, n_persian, sizes):
        return 0.0
    fill[2] += 1
    w0, w1, w2 = _words(sp, h0, h1, h2, h3, pp, grave, marker, support, seat)
    i = _slot(table, fill[4], w0, w1, w2)
    if table[i, 0] == w0:
        return table[i, 3]
    return -1.0


@numba.njit(cache=True, inline="always")
def _add_unique(out_sp, out_hands, m, s, hands, seat, hand):
    """Append ``(s, hands with seat's hand replaced by hand)`` unless already there (``seat = -1``: as
    is); returns the new count."""
    for i in range(m):
        if out_sp[i] != s:
            continue
        same = True
        for j in range(MAX_SEATS):
            want = hand if j == seat else hands[j]
            if out_hands[i, j] != want:
                same = False
                break
        if same:
            return m
    out_sp[m] = s
    for j in range(MAX_SEATS):
        out_hands[m, j] = hand if j == seat else hands[j]
    return m + 1


@numba.njit(cache=True)
def _offer_results(sp, h0, h1, h2, h3, count, n_seats, sv, sizes, out_sp, out_hands, tmp_sp, tmp_hands):
    """Every ``(Spartan position, hands)`` after answering ``count`` offers: decline (the card stays on
    top), or give the top card to any seat (a 6-card hand then discards any one value), into
    ``out_sp``/``out_hands`` (``tmp_*``: a buffer). Returns how many were written, each once."""
    out_sp[0] = sp
    out_hands[0, 0] = h0
    out_hands[0, 1] = h1
    out_hands[0, 2] = h2
    out_hands[0, 3] = h3
    n = 1
    for _ in range(count):
        m = 0
        for i in range(n):
            s = out_sp[i]
            hands = out_hands[i]
            m = _add_unique(tmp_sp, tmp_hands, m, s, hands, -1, 0)
            if s >= SPARTAN_DECK_SIZE:
                continue  # the deck is empty: the offer lapses
            card = POW3[sv[s] - 10]
            for seat in range(n_seats):
                taken = hands[seat] + card
                held = sizes[taken]
                if (held & 7) > HAND_LIMIT:
                    for v in range(NUM_VALUES):
                        if (held >> (3 + v)) & 1:
                            m = _add_unique(tmp_sp, tmp_hands, m, s + 1, hands, seat, taken - POW3[v])
                else:
                    m = _add_unique(tmp_sp, tmp_hands, m, s + 1, hands, seat, taken)
        for i in range(m):
            out_sp[i] = tmp_sp[i]
            for j in range(MAX_SEATS):
                out_hands[i, j] = tmp_hands[i, j]
        n = m
    return n


@numba.njit(cache=True, inline="always")
def _best_known(out_sp, out_hands, n, pp, grave, marker, support, seat, n_persian, sizes, table, fill):
    """The best known value among the ``n`` answers (0 if none is known) and whether all are known."""
    best = 0.0
    complete = True
    for i in range(n):
        value = _known(out_sp[i], out_hands[i, 0], out_hands[i, 1], out_hands[i, 2], out_hands[i, 3], pp,
                       grave, marker, support, seat, n_persian, sizes, table, fill)
        if value < 0.0:
            complete = False
        elif value > best:
            best = value
            if best >= 1.0:
                return best, True
    return best, complete


@numba.njit(cache=True, inline="always")
def _replace(h0, h1, h2, h3, seat, hand):
    """The four hands with ``seat``'s replaced by ``hand``."""
    if seat == 0:
        return hand, h1, h2, h3
    if seat == 1:
        return h0, hand, h2, h3
    if seat == 2:
        return h0, h1, hand, h3
    return h0, h1, h2, hand


@numba.njit(cache=True)
def solve_team(sp, h0, h1, h2, h3, pp, grave, marker, support, seat, n_seats, depth, sv, n_persian, counts,
               codes, probs, sizes, table, fill, scratch_sp, scratch_hands, buffer_sp, buffer_hands, known,
               upper, lucky):
    """The value of a team MAIN-phase state (seat ``seat`` acts; unused seats hold 0) that is not in the
    memo yet; it is memoized on return. Actions: the acting seat's fights, high cards first, then the
    retreat (``vi = -1``); every outcome passes the turn to the next seat."""
    if depth >= MAX_DEPTH:
        raise RuntimeError("the recursion is deeper than a game can be")
    if depth == 0:
        # The caller holds every array until the call returns (see the solo kernel).
        sv = _unowned(sv)
        counts = _unowned(counts)
        codes = _unowned(codes)
        probs = _unowned(probs)
        sizes = _unowned(sizes)
        table = _unowned(table)
        fill = _unowned(fill)
        scratch_sp = _unowned(scratch_sp)
        scratch_hands = _unowned(scratch_hands)
        buffer_sp = _unowned(buffer_sp)
        buffer_hands = _unowned(buffer_hands)
        known = _unowned(known)
        upper = _unowned(upper)
    out_sp = scratch_sp[depth]
    out_hands = scratch_hands[depth]
    known_k = known[depth]
    upper_c = upper[depth]
    nxt = seat + 1 if seat + 1 < n_seats else 0
    best = 0.0
    extra = 1 if (marker == 3 or marker == 6) else 0
    if seat == 0:
        hand = h0
    elif seat == 1:
        hand = h1
    elif seat == 2:
        hand = h2
    else:
        hand = h3
    held = sizes[hand]
    # Start loading the memo rows of every fight's outcomes without bonus cards (most of the lookups).
    for vi in range(NUM_VALUES):
        if ((held >> (3 + vi)) & 1) == 0:
            continue
        r0, r1, r2, r3 = _replace(h0, h1, h2, h3, seat, hand - POW3[vi])
        for spent in range(support + 1):
            for k in range(abs(counts[pp, vi, spent + extra])):
                code = codes[pp, vi, spent + extra, k]
                if code % 3 == 0:
                    w0, w1, w2 = _words(sp, r0, r1, r2, r3, pp + code // 9, grave + (code // 3) % 3, marker,
                                        support - spent, nxt)
                    _prefetch(table, _home(w0, w1, w2, fill[4]))
    for vi in range(NUM_VALUES - 1, -2, -1):
        if best >= 1.0:
            break
        if vi >= 0:
            if ((held >> (3 + vi)) & 1) == 0:
                continue
            r0, r1, r2, r3 = _replace(h0, h1, h2, h3, seat, hand - POW3[vi])
            n_spent = support + 1
            next_marker = marker
        elif marker + 1 < LOSS_MARKER:
            r0, r1, r2, r3 = h0, h1, h2, h3
            n_spent = 1
            next_marker = marker + 1
        else:
            break  # a retreat to 7 loses at once
        upper_c[:] = 1.0
        for spent in range(n_spent):
            if vi >= 0:
                n_dice = spent + extra
                n_out = counts[pp, vi, n_dice]
                if n_out < 0:
                    if spent > 0:
                        fill[5] += 1
                        continue  # the same fight with less support spent is at least as good
                    n_out = -n_out
            else:
                n_out = 1
            left = support - spent
            # Pass 1: outcomes known without recursion; the others count as their upper bound.
            expected = 0.0
            unknown = 0.0
            unseen = 1.0
            abandoned = False
            for k in range(n_out):
                if vi >= 0:
                    code = codes[pp, vi, n_dice, k]
                    p = probs[pp, vi, n_dice, k]
                else:
                    code = 1  # nothing beaten, one offer
                    p = 1.0
                unseen -= p
                beaten = code // 9
                gr = (code // 3) % 3
                bo = code % 3
                if grave + gr >= GRAVEYARD_WIN or n_persian - pp < beaten:
                    result = 1.0  # the 12th graveyard card, or a refill the deck cannot supply
                elif bo == 0:
                    result = _known(sp, r0, r1, r2, r3, pp + beaten, grave + gr, next_marker, left, nxt,
                                    n_persian, sizes, table, fill)
                else:
                    n = _offer_results(sp, r0, r1, r2, r3, bo, n_seats, sv, sizes, out_sp, out_hands,
                                       buffer_sp[depth], buffer_hands[depth])
                    result, complete = _best_known(out_sp, out_hands, n, pp + beaten, grave + gr, next_marker,
                                                   left, nxt, n_persian, sizes, table, fill)
                    if not complete:
                        result = -1.0
                known_k[k] = result
                if result < 0.0:
                    unknown += p * upper_c[code]
                else:
                    upper_c[code] = result
                    if lucky:
                        if result > expected:
                            expected = result
                    else:
                        expected += p * result
                if not lucky and expected + unknown + unseen < best - PRUNE_MARGIN:
                    abandoned = True
                    break
            if lucky:
                if expected >= 1.0:
                    best = 1.0
                    break
            elif abandoned:
                fill[3] += 1
                continue  # this fight cannot beat the best action: its value is not needed
            # Pass 2: the rest, largest probability first, until the fight cannot beat the best.
            for k in range(n_out):
                if known_k[k] >= 0.0:
                    continue
                if vi >= 0:
                    code = codes[pp, vi, n_dice, k]
                    p = probs[pp, vi, n_dice, k]
                else:
                    code = 1
                    p = 1.0
                beaten = code // 9
                gr = (code // 3) % 3
                bo = code % 3
                n = _offer_results(sp, r0, r1, r2, r3, bo, n_seats, sv, sizes, out_sp, out_hands,
                                   buffer_sp[depth], buffer_hands[depth])
                result = 0.0
                for i in range(n):
                    s = out_sp[i]
                    a0 = out_hands[i, 0]
                    a1 = out_hands[i, 1]
                    a2 = out_hands[i, 2]
                    a3 = out_hands[i, 3]
                    value = _known(s, a0, a1, a2, a3, pp + beaten, grave + gr, next_marker, left, nxt,
                                   n_persian, sizes, table, fill)
                    if value < 0.0:
                        # out_sp/out_hands belong to this level; the recursion writes deeper rows only.
                        value = solve_team(s, a0, a1, a2, a3, pp + beaten, grave + gr, next_marker, left, nxt,
                                           n_seats, depth + 1, sv, n_persian, counts, codes, probs, sizes,
                                           table, fill, scratch_sp, scratch_hands, buffer_sp, buffer_hands,
                                           known, upper, lucky)
                    if value > result:
                        result = value
                        if result >= 1.0:
                            break
                if lucky:
                    if result > expected:
                        expected = result
                    if expected >= 1.0:
                        break
                else:
                    unknown -= p * upper_c[code]
                    upper_c[code] = result
                    expected += p * result
                    if expected + unknown < best - PRUNE_MARGIN:
                        fill[3] += 1
                        break  # this fight cannot beat the best action: its value is not needed
            if expected > best:
                best = expected
                if best >= 1.0:
                    break
    w0, w1, w2 = _words(sp, h0, h1, h2, h3, pp, grave, marker, support, seat)
    _store(table, fill, w0, w1, w2, best)
    return best
