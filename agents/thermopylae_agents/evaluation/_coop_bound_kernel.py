"""The compiled (numba) solo kernel of
[`thermopylae_agents.evaluation.coop_bound.DeckClairvoyantSolver`][].

The same recursion as the pure-Python solver, on an integer state: the hand is a base-3 number (one
digit per value 10..20: how many cards of that value it holds), and the memo key packs the Spartan
position, the hand, the Persian position, the graveyard count, the marker and the support into one int64.

What makes it fast, without changing any value (``docs/coop_bound.md``, "Speed", has the proofs):

* an action (a fight or the retreat) is abandoned as soon as the outcomes evaluated so far, plus a proven
  upper bound on the others, show that it cannot beat an action already evaluated; the bounds cost no
  recursion (immediate wins, the memo, the exact zero of too few cards left, and the value of the same
  outcome with one support card less spent). Only the abandoned action's own value is never known: every
  child that is computed is computed in full, so the memo holds exact values;
* a fight whose one more die changes nothing is skipped (spending less is at least as good);
* the memo is an open-addressing hash table in one numpy array (linear probing, a power-of-two prefix in
  use that doubles when half full), its slots prefetched;
* every fight's outcome distribution is tabulated once per deal; scratch arrays are indexed by the
  recursion depth (one MAIN action per level), nothing is allocated per state;
* the recursion passes its arrays without numba's reference counting.

Importing this module imports numba; the solver imports it only when numba is installed. Compiled on first
use and cached on disk.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

NUM_VALUES = 11
POW3 = np.array([3**i for i in range(NUM_VALUES + 1)], dtype=np.int64)
SPARTAN_DECK_SIZE = 20
HAND_LIMIT = 5
GRAVEYARD_WIN = 12
LOSS_MARKER = 7
NUM_SUPPORT = 4
MAX_DICE = NUM_SUPPORT + 1
# One recursion level per MAIN action: at most 20 fights (one card each) and 6 retreats, plus the root.
MAX_DEPTH = SPARTAN_DECK_SIZE + LOSS_MARKER
# Answers to at most 2 offers: each keeps at most 1 + 6 (decline, or take and discard one of 6 values).
MAX_OFFER_RESULTS = 64
# 27 fight result codes: beaten 0..2, graveyard cards 0..2, bonus cards 0..2.
NUM_CODES = 27
MAX_PERSIAN = 32  # the key holds the Persian position (0..28: every deck has 28 cards) in 5 bits
EMPTY = 0.0  # keys are stored plus one (exact in a float64: below 2**53), so zeros are empty
LOAD_LIMIT = 0.75
GROW_LOAD = 0.5
MIN_CAPACITY = 1 << 16
# Abandon a fight only when its bound is below the best by more than any rounding of the sums.
PRUNE_MARGIN = 1e-12
# Two different dice-sum distributions of at most 5 dice differ by a multiple of 6**-5 somewhere.
SAME_TOLERANCE = 1e-9
HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


def hand_info() -> np.ndarray:
    """``info[h]`` of the base-3 hand ``h``: its number of cards (low 3 bits) and which values it holds
    (bit ``3 + i`` for value ``10 + i``), so the recursion never divides by powers of 3."""
    codes = np.arange(3**NUM_VALUES)
    info = np.zeros(3**NUM_VALUES, dtype=np.int16)
    for digit in range(NUM_VALUES):
        count = (codes // 3**digit) % 3
        info += count.astype(np.int16) + ((count > 0).astype(np.int16) << (3 + digit))
    return info


def table_capacity(max_states: int) -> int:
    """The largest memo table: the power of two that holds ``max_states`` entries under the load limit."""
    capacity = MIN_CAPACITY
    while capacity * LOAD_LIMIT < max_states:
        capacity *= 2
    return capacity


def new_table(max_states: int) -> tuple[np.ndarray, np.ndarray]:
    """An empty memo for at most ``max_states`` entries: ``table[i] = (key + 1, value)`` (0: empty) and
    ``fill = [entries, max_states, lookups, fights abandoned, slots in use - 1]``.

    Only a power-of-two prefix of the table is in use; it doubles when half full, so a small deal's
    memo stays small (in the processor's cache) and ``np.zeros`` leaves the rest unmapped."""
    table = np.zeros((table_capacity(max_states), 2), dtype=np.float64)
    fill = np.array([0, max_states, 0, 0, MIN_CAPACITY - 1, 0], dtype=np.int64)
    return table, fill


def new_scratch() -> tuple[np.ndarray, ...]:
    """Per-depth arrays: the offer answers and their buffer, and the fight outcomes' known values."""
    shape = (MAX_DEPTH + 1, MAX_OFFER_RESULTS)
    return (np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64),
            np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64),
            np.zeros((MAX_DEPTH + 1, NUM_CODES)), np.zeros((MAX_DEPTH + 1, NUM_CODES)))


@numba.njit(cache=True, inline="always")
def _key(sp, hand, pp, grave, marker, support):
    return ((((sp * 177147 + hand) * 32 + pp) * 16 + grave) * 8 + marker) * 8 + support + 1


@numba.njit(cache=True, inline="always")
def _home(key, mask):
    """The first slot tried for ``key`` (Fibonacci hashing)."""
    return np.int64((np.uint64(key) * HASH_MULTIPLIER) >> np.uint64(32)) & mask


@numba.njit(cache=True, inline="always")
def _slot(table, mask, key):
    """The slot holding ``key``, or the empty slot where it would go (linear probing)."""
    i = _home(key, mask)
    fkey = np.float64(key)
    while table[i, 0] != fkey and table[i, 0] != EMPTY:
        i = (i + 1) & mask
    return i


@intrinsic
def _prefetch(typingctx, table, row):
    """Ask the processor to start loading ``table[row]`` into the cache (LLVM's prefetch; no effect on
    any value)."""
    sig = types.void(table, row)

    def codegen(context, builder, signature, args):
        table_type = signature.args[0]
        array = context.make_array(table_type)(context, builder, args[0])
        zero = ir.Constant(ir.IntType(64), 0)
        pointer = cgutils.get_item_pointer(context, builder, table_type, array, [args[1], zero])
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]),
            "llvm.prefetch.p0")
        # read access, high temporal locality, data cache
        builder.call(function, [builder.bitcast(pointer, byte_pointer), ir.Constant(int32, 0),
                                ir.Constant(int32, 3), ir.Constant(int32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _unowned(typingctx, array):
    """The same array without its reference count: numba then skips the atomic increments and decrements
    it makes for every array passed to a call (otherwise the largest cost of the recursion). Only for
    arrays that the caller keeps alive for the whole call."""
    sig = array(array)

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        source = context.make_array(array_type)(context, builder, args[0])
        borrowed = context.make_array(array_type)(context, builder)
        for field in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(borrowed, field, getattr(source, field))
        borrowed.meminfo = cgutils.get_null_value(borrowed.meminfo.type)
        borrowed.parent = cgutils.get_null_value(borrowed.parent.type)
        return borrowed._getvalue()

    return sig, codegen


@numba.njit(cache=True, inline="always")
def _prefetch_key(table, fill, key):
    _prefetch(table, _home(key, fill[4]))


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
            i = _slot(table, mask, np.int64(old[j, 0]))
            table[i, 0] = old[j, 0]
            table[i, 1] = old[j, 1]


@numba.njit(cache=True, inline="always")
def _store(table, fill, key, value):
    if fill[0] >= fill[1]:
        raise MemoryError("the memo of one deal is full (max_states)")
    if fill[0] + 1 > GROW_LOAD * (fill[4] + 1) and 2 * (fill[4] + 1) <= table.shape[0]:
        _grow(table, fill)
    i = _slot(table, fill[4], key)
    if table[i, 0] == EMPTY:
        table[i, 0] = np.float64(key)
        fill[0] += 1
    table[i, 1] = value


@numba.njit(cache=True, inline="always")
def _lookup(table, fill, key):
    """The memoized value of ``key``, or -1.0 when it has none."""
    fill[2] += 1
    i = _slot(table, fill[4], key)
    if table[i, 0] == np.float64(key):
        return table[i, 1]
    return -1.0


@numba.njit(cache=True)
def fight_tables(white, red, bonus, pmf):
    """For each Persian position ``pp``, card value index and number of dice: the distinct fight results
    ``(code, probability)``, largest probability first; ``code = beaten * 9 + graveyard * 3 + bonus``.
    Their number is negative when one die more changes nothing (the same results, same probabilities)."""
    n_persian = white.shape[0]
    counts = np.zeros((MAX_PERSIAN, NUM_VALUES, MAX_DICE + 1), dtype=np.int64)
    codes = np.zeros((MAX_PERSIAN, NUM_VALUES, MAX_DICE + 1, NUM_CODES), dtype=np.int64)
    probs = np.zeros((MAX_PERSIAN, NUM_VALUES, MAX_DICE + 1, NUM_CODES))
    merged = np.zeros(NUM_CODES)
    for pp in range(2, n_persian + 1):
        w1 = white[pp - 2]
        r1 = red[pp - 2]
        b1 = bonus[pp - 2]
        w2 = white[pp - 1]
        r2 = red[pp - 1]
        b2 = bonus[pp - 1]
        for vi in range(NUM_VALUES):
            for n_dice in range(MAX_DICE + 1):
                merged[:] = 0.0
                for s in range(pmf.shape[1]):
                    p = pmf[n_dice, s]
                    if p == 0.0:
                        continue
                    total = vi + 10 + s
                    beaten = 0
                    gr = 0
                    bo = 0
                    if total >= w1:
                        beaten = 1
                        gr = 1 if total >= r1 else 0
                        bo = b1
                        if total >= w2:  # slot 2 is fought only after slot 1 is beaten
                            beaten = 2
                            gr += 1 if total >= r2 else 0
                            bo += b2
                    merged[beaten * 9 + gr * 3 + bo] += p
                n = 0
                for code in np.argsort(-merged, kind="mergesort"):
                    if merged[code] > 0.0:
                        codes[pp, vi, n_dice, n] = code
                        probs[pp, vi, n_dice, n] = merged[code]
                        n += 1
                counts[pp, vi, n_dice] = n
                if n_dice > 0 and n == abs(counts[pp, vi, n_dice - 1]):
                    same = True
                    for k in range(n):
                        if codes[pp, vi, n_dice, k] != codes[pp, vi, n_dice - 1, k] or abs(
                                probs[pp, vi, n_dice, k] - probs[pp, vi, n_dice - 1, k]) > SAME_TOLERANCE:
                            same = False
                    if same:
                        counts[pp, vi, n_dice] = -n
    return counts, codes, probs


@numba.njit(cache=True, inline="always")
def _offer_results(sp, hand, count, sv, sizes, out_sp, out_hand, tmp_sp, tmp_hand):
    """Every ``(Spartan position, hand)`` after answering ``count`` offers: decline, or take the top card
    (a 6-card hand then discards any one value), into ``out_sp``/``out_hand`` (``tmp_*``: a buffer).
    Returns how many were written; no pair is written twice."""
    out_sp[0] = sp
    out_hand[0] = hand
    n = 1
    for _ in range(count):
        m = 0
        for i in range(n):
            s = out_sp[i]
            h = out_hand[i]
            # Declining into a hand of at most 4 cards is never better than taking the card
            # (docs/coop_bound.md, lemma 2), so only a full hand or an empty deck keeps this option.
            if s >= SPARTAN_DECK_SIZE or (sizes[h] & 7) >= HAND_LIMIT:
                m = _add_unique(tmp_sp, tmp_hand, m, s, h)
            if s >= SPARTAN_DECK_SIZE:
                continue  # the deck is empty: the offer lapses
            taken = h + POW3[sv[s] - 10]
            held = sizes[taken]
            if (held & 7) > HAND_LIMIT:
                for v in range(NUM_VALUES):
                    if (held >> (3 + v)) & 1:
                        m = _add_unique(tmp_sp, tmp_hand, m, s + 1, taken - POW3[v])
            else:
                m = _add_unique(tmp_sp, tmp_hand, m, s + 1, taken)
        for i in range(m):
            out_sp[i] = tmp_sp[i]
            out_hand[i] = tmp_hand[i]
        n = m
    return n


@numba.njit(cache=True, inline="always")
def _add_unique(out_sp, out_hand, m, s, h):
    for i in range(m):
        if out_sp[i] == s and out_hand[i] == h:
            return m
    out_sp[m] = s
    out_hand[m] = h
    return m + 1


@numba.njit(cache=True, inline="always")
def _cannot_win(sp, hand, pp, grave, n_persian, sizes):
    """True when too few Spartan cards are left for any win: each fight plays one and beats at most two
    Persian cards, and a win needs the 12th graveyard card or a refill the Persian deck cannot supply."""
    fights = (sizes[hand] & 7) + SPARTAN_DECK_SIZE - sp
    return 2 * fights < GRAVEYARD_WIN - grave and 2 * fights < n_persian - pp + 1


@numba.njit(cache=True, inline="always")
def _known(sp, hand, pp, grave, marker, support, n_persian, sizes, table, fill):
    """The value of a MAIN state if it is known without recursion (a loss, or in the memo), else -1."""
    if sp >= SPARTAN_DECK_SIZE and hand == 0:
        return 0.0  # every hand and the deck are empty: lost
    if _cannot_win(sp, hand, pp, grave, n_persian, sizes):
        return 0.0
    return _lookup(table, fill, _key(sp, hand, pp, grave, marker, support))


@numba.njit(cache=True, inline="always")
def _best_known(out_sp, out_hand, n, pp, grave, marker, support, n_persian, sizes, table, fill):
    """The best known value among the ``n`` MAIN states ``(out_sp[i], out_hand[i], pp, ...)`` (0 if none is
    known) and whether all of them are known."""
    best = 0.0
    complete = True
    for i in range(n):
        value = _known(out_sp[i], out_hand[i], pp, grave, marker, support, n_persian, sizes, table,
                       fill)
        if value < 0.0:
            complete = False
        elif value > best:
            best = value
            if best >= 1.0:
                return best, True
    return best, complete


@numba.njit(cache=True)
def solve_main(sp, hand, pp, grave, marker, support, depth, sv, n_persian, counts, codes, probs, sizes, table,
               fill, scratch_sp, scratch_hand, buffer_sp, buffer_hand, known, upper, lucky):
    """The value of a solo MAIN-phase state that is not in the memo yet (see the Python solver for the
    recursion); it is memoized on return.

    The actions are the fights (card value index ``vi``, support spent), high cards first (a good fight
    found early lets the others be abandoned sooner), then the retreat (``vi = -1``: one outcome, one
    offer, the marker moves)."""
    if depth >= MAX_DEPTH:
        raise RuntimeError("the recursion is deeper than a game can be")
    if depth == 0:
        # The caller holds every array until the call returns, so the recursion passes them on without
        # reference counting.
        sv = _unowned(sv)
        counts = _unowned(counts)
        codes = _unowned(codes)
        probs = _unowned(probs)
        sizes = _unowned(sizes)
        table = _unowned(table)
        fill = _unowned(fill)
        scratch_sp = _unowned(scratch_sp)
        scratch_hand = _unowned(scratch_hand)
        buffer_sp = _unowned(buffer_sp)
        buffer_hand = _unowned(buffer_hand)
        known = _unowned(known)
        upper = _unowned(upper)
    out_sp = scratch_sp[depth]
    out_hand = scratch_hand[depth]
    known_k = known[depth]
    upper_c = upper[depth]
    best = 0.0
    extra = 1 if (marker == 3 or marker == 6) else 0
    held = sizes[hand]
    # Start loading the memo slots of every fight's outcomes without bonus cards (most of the lookups).
    for vi in range(NUM_VALUES):
        if ((held >> (3 + vi)) & 1) == 0:
            continue
        rest = hand - POW3[vi]
        for spent in range(support + 1):
            for k in range(abs(counts[pp, vi, spent + extra])):
                code = codes[pp, vi, spent + extra, k]
                if code % 3 == 0:
                    _prefetch_key(table, fill, _key(sp, rest, pp + code // 9, grave + (code // 3) % 3, marker,
                                                    support - spent))
    for vi in range(NUM_VALUES - 1, -2, -1):
        if best >= 1.0:
            break
        if vi >= 0:
            if ((held >> (3 + vi)) & 1) == 0:
                continue
            rest = hand - POW3[vi]
            n_spent = support + 1
            upper_c[:] = 1.0
            next_marker = marker
        elif marker + 1 < LOSS_MARKER:
            rest = hand
            n_spent = 1
            next_marker = marker + 1
            upper_c[:] = 1.0
        else:
            break  # a retreat to 7 loses at once
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
            # Pass 1: the outcomes whose value is known without recursion; the others count as their
            # upper bound: the value of the same outcome with less support spent, else 1.
            # It stops as soon as the outcomes seen prove that the fight cannot beat the best action.
            expected = 0.0
            unknown = 0.0
            unseen = 1.0  # probability of the outcomes not looked at yet
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
                    result = _known(sp, rest, pp + beaten, grave + gr, next_marker, left, n_persian, sizes,
                                    table, fill)
                else:
                    n = _offer_results(sp, rest, bo, sv, sizes, out_sp, out_hand, buffer_sp[depth],
                                       buffer_hand[depth])
                    result, complete = _best_known(out_sp, out_hand, n, pp + beaten, grave + gr, next_marker,
                                                   left, n_persian, sizes, table, fill)
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
                n = _offer_results(sp, rest, bo, sv, sizes, out_sp, out_hand, buffer_sp[depth],
                                   buffer_hand[depth])
                result = 0.0
                for i in range(n):
                    s = out_sp[i]
                    h = out_hand[i]
                    value = _known(s, h, pp + beaten, grave + gr, next_marker, left, n_persian, sizes, table,
                                   fill)
                    if value < 0.0:
                        # out_sp/out_hand belong to this level; the recursion writes deeper rows only.
                        value = solve_main(s, h, pp + beaten, grave + gr, next_marker, left, depth + 1, sv,
                                           n_persian, counts, codes, probs, sizes, table, fill,
                                           scratch_sp, scratch_hand, buffer_sp, buffer_hand, known, upper,
                                           lucky)
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
    _store(table, fill, _key(sp, hand, pp, grave, marker, support), best)
    return best

