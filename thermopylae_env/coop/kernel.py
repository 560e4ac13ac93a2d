"""The compiled rules of the co-op game for many games at once: the kernel of
[`thermopylae_env.coop.vector_engine.CoopVectorEngine`][].

There are two implementations of the rules: the readable reference
[`thermopylae_env.coop.CoopGame`][thermopylae_env.coop.rules.CoopGame] and this kernel.
[`step`][thermopylae_env.coop.kernel.step] advances every game by one action (or deals it a new game) in one
loop over the games; each game goes through small named steps that follow the reference engine's:

* `_draw_chance` and `_deal`: ``CoopGame.init`` / ``new_state`` (shuffles and dice from the
  game's own SplitMix64 stream, the deal, the first line);
* `_give`: the top Spartan card of a give (``CoopGame._give``), `_move_card` the one hand cell
  an action changes;
* `_resolve_fight`: the fight (``CoopGame.resolve_fight``: dice, slot 1, then slot 2 only if slot 1 was
  beaten, discard pile or graveyard, the 12th graveyard card);
* `_offers`: the draw offers (``_start_offers``, ``_give``, ``_next_offer``);
* `_refill` and `_end`: the end of an action (``CoopGame._complete`` / ``_end``: refill, loss
  by exhaustion, next seat);
* `_observe`: the phase, the recipient and the mask row (``CoopGame.observe`` /
  ``legal_action_mask``, kept up to date incrementally: only the cells an action can change are written).

The kernel writes the observation and mask rows in place; ``tests/env/coop/test_coop_vector.py`` drives it and
``CoopGame`` through thousands of games with the same shuffles and dice and compares every array.

The steps are written without data-dependent branches where that is cheap (a retreat "adds 0 dice", a
non-fight "beats" nothing): on random actions a branch mispredicts often, and the mispredictions, not the
arithmetic, set the speed. Only the rarer steps that touch more memory (a give, a refill) stay behind
branches. The helpers are inlined into [`step`][thermopylae_env.coop.kernel.step] (numba compiles each entry
point separately, seconds each, and a call per game costs more than the game).

Large batches are split into chunks of [`CHUNK`][thermopylae_env.coop.kernel.CHUNK] games run on all cores
(numba's ``prange``); each game is computed by the same code whichever thread runs it, so the results do not
depend on the number of threads. Where numba cannot be imported the same source runs as plain Python
(identity decorators, [`thermopylae_env.jit`][]; much slower, for checking and for platforms without numba).
The compiled kernel is cached on disk (``cache=True``, keyed on this file and the layouts it reads): only the
first process after an install or an edit compiles it.
"""

from __future__ import annotations

import numpy as np

from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.layout import (
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MAX_PLAYERS,
    MIN_VALUE,
    NUM_ACTIONS,
    NUM_SUPPORT,
    NUM_VALUES,
    OBS,
    SPARTAN_DECK_SIZE,
)
from thermopylae_env.jit import key_cache_on, njit, prange

__all__ = ["CHUNK", "step"]

CHUNK = 1024  # games per parallel task: large enough that scheduling is negligible against the work

HAND_LIMIT = 5
DICE_PER_GAME = SPARTAN_DECK_SIZE + NUM_SUPPORT  # one location die per fight at most, plus the support dice

# Phases; OVER is the engine's own code for a finished game.
MAIN, DRAW_OFFER, DISCARD, OVER = 0, 1, 2, 3

# Action kinds of the action-code table (row NOOP_ACTION is the "no move" of a game that must not move).
NOOP, RETREAT, FIGHT, GIVE, DECLINE, DISCARD_CARD = 0, 1, 2, 3, 4, 5

# Rows of the mask table: MAIN rows are support * 2048 + (bit set of the values the acting seat holds),
# then the DRAW_OFFER row, the DISCARD rows (bit set of the recipient's values) and the all-false row.
BITS = 1 << NUM_VALUES
MASK_OFFER = (NUM_SUPPORT + 1) * BITS
MASK_DISCARD = MASK_OFFER + 1
MASK_NONE = MASK_DISCARD + BITS

# Observation offsets, from the layout.
O_PHASE = OBS["phase"].offset
O_SEAT = OBS["seat"].offset
O_RECIPIENT = OBS["recipient"].offset
O_HANDS = OBS["hands"].offset
O_SLOTS = OBS["slot1"].offset  # slot 1 and slot 2, written together (8 values)
O_MARKER = OBS["marker"].offset  # the marker one-hot and the support, written together (8 values)
O_SPARTAN_DECK = OBS["spartan_deck"].offset
O_PERSIAN_DECK = OBS["persian_deck"].offset
O_GRAVEYARD = OBS["graveyard"].offset
O_PERSIAN_DISCARD = OBS["persian_discard"].offset
O_OFFERS = OBS["offers"].offset
O_UNSEEN_SPARTAN = OBS["unseen_spartan"].offset
O_UNSEEN_PERSIAN = OBS["unseen_persian"].offset

# Chance: SplitMix64 outputs 128 * episode + j of a game's key (thermopylae_env.coop.chance.splitmix_chance).
WORDS_PER_EPISODE = 128
CHANCE_WORDS = 36  # 72 halves of 32 bits: 20 + 28 sort keys, 24 dice
TIE_WORDS = 64  # words 64..111: 64-bit sort keys for the (rare) shuffles whose 27-bit keys tie

# uint64 constants as NumPy scalars: numba types a plain Python int above 2**63 as a signed or float value,
# and SplitMix64 needs wrapping unsigned arithmetic throughout.
_U_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_U_M1 = np.uint64(0xBF58476D1CE4E5B9)
_U_M2 = np.uint64(0x94D049BB133111EB)
_U_WORDS_PER_EPISODE = np.uint64(WORDS_PER_EPISODE)
_U_LOW32 = np.uint64(0xFFFFFFFF)
_U32_KEY27 = np.uint32(0xFFFFFFE0)  # the 27 random bits of a 32-bit sort key
_U_KEY59 = np.uint64(0xFFFFFFFFFFFFFFE0)  # the 59 random bits of a 64-bit sort key


# ---------------------------------------------------------------------------------------------- chance


@njit(inline="always")
def _word(key: np.uint64, episode: np.uint64, j: int) -> np.uint64:
    """SplitMix64 output ``128 * episode + j`` of ``key``."""
    z = key + (episode * _U_WORDS_PER_EPISODE + np.uint64(j + 1)) * _U_GAMMA
    z = z ^ (z >> np.uint64(30))
    z = z * _U_M1
    z = z ^ (z >> np.uint64(27))
    z = z * _U_M2
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _put(dst: np.ndarray, i: int, start: int, src: np.ndarray, j: int, count: int) -> None:
    """``dst[i, start : start + count] = src[j, :count]`` as an explicit loop: numba's slice assignment
    goes through general broadcasting code, several times slower for rows this short."""
    for c in range(count):
        dst[i, start + c] = src[j, c]


@njit(inline="always")
def _rank_sort(keys: np.ndarray, n: int, rank: np.ndarray, out: np.ndarray) -> None:
    """``out[:n]`` = ``keys[:n]`` sorted, for distinct keys: each key goes to the count of smaller ones.
    Counting has no data-dependent branch (a comparison sort mispredicts on random keys)."""
    for j in range(n):
        rank[j] = 0
    for m in range(n):
        km = keys[m]
        for j in range(n):
            rank[j] += np.int32(km < keys[j])
    for j in range(n):
        out[rank[j]] = keys[j]


@njit(inline="always")
def _permutation(halves: np.ndarray, first: int, n: int, key: np.uint64, episode: np.uint64, tie_word: int,
                 work: tuple, out: np.ndarray, i: int) -> None:
    """A uniform permutation of ``0..n-1`` into row ``i`` of ``out``: sort keys ``halves[first : first + n]``
    (27 random bits, the position in the low 5), redone with 64-bit keys from words ``tie_word ..`` when
    two random parts tie (what ``thermopylae_env.coop.chance._permutations`` does with NumPy's sort)."""
    keys32, sorted32, keys64, sorted64, rank = work
    for j in range(n):
        keys32[j] = (halves[first + j] & _U32_KEY27) | np.uint32(j)
    _rank_sort(keys32, n, rank, sorted32)
    tied = False
    for j in range(1, n):
        tied |= (sorted32[j] ^ sorted32[j - 1]) < np.uint32(32)
    if tied:
        for j in range(n):
            keys64[j] = (_word(key, episode, tie_word + j) & _U_KEY59) | np.uint64(j)
        _rank_sort(keys64, n, rank, sorted64)
        for j in range(n):
            out[i, j] = sorted64[j] & np.uint64(31)
    else:
        for j in range(n):
            out[i, j] = sorted32[j] & np.uint32(31)


@njit(inline="always")
def _draw_chance(i: int, keys: np.ndarray, episodes: np.ndarray, spartan_order: np.ndarray,
                 persian_order: np.ndarray, dice_sum: np.ndarray, halves: np.ndarray, work: tuple) -> None:
    """The chance of game ``i``'s next game (``splitmix_chance``): both deck orders and the prefix sums of
    its dice; counts the episode."""
    key = keys[i]
    episode = episodes[i]
    for w in range(CHANCE_WORDS):
        word = _word(key, episode, w)
        halves[2 * w] = word & _U_LOW32
        halves[2 * w + 1] = word >> np.uint64(32)
    _permutation(halves, 0, SPARTAN_DECK_SIZE, key, episode, TIE_WORDS, work, spartan_order, i)
    _permutation(halves, SPARTAN_DECK_SIZE, PERSIAN_DECK_SIZE, key, episode, TIE_WORDS + SPARTAN_DECK_SIZE,
                 work, persian_order, i)
    total = 0
    dice_sum[i, 0] = 0
    for j in range(DICE_PER_GAME):
        h = np.uint64(halves[SPARTAN_DECK_SIZE + PERSIAN_DECK_SIZE + j])
        total += np.int64((h * np.uint64(6)) >> np.uint64(32)) + 1
        dice_sum[i, j + 1] = total
    episodes[i] = episode + np.uint64(1)


# ---------------------------------------------------------------------------------------------- the rules
# Scalars read from the int8 / int16 state arrays are widened (np.int32) before arithmetic that could
# leave their range: numba widens them anyway, interpreted NumPy scalars would wrap.


@njit(inline="always")
def _deal(i: int, state: tuple, tables: tuple, bits: np.ndarray, in_hands: np.ndarray) -> None:
    """A new game in slot ``i`` from its chance rows (``CoopGame.new_state``): deal the hands from the
    top, the first two Persian cards to the line; its first observation and mask row. (It takes the
    whole state: a restart is rare, and an inlined call takes at most about 30 arguments.)"""
    (phase, current, recipient, marker, support, spartan_pos, persian_pos, graveyard, persian_discard, offers,
     slot1, slot2, hands, hand_total, hand_bits, spartan_order, persian_order, dice_sum, dice_pos, turn, won,
     lost, obs, masks) = state
    (num_players, per, n_slot, action_code, spartan_value, slot_pack, obs_new_game, full_deck_half,
     obs_spartan_deck, obs_persian_deck, obs_graveyard, obs_discard, obs_offers, obs_slots, obs_phase,
     obs_marker_support, mask_table) = tables
    dealt = per * num_players
    dice_pos[i] = 0
    for seat in range(MAX_PLAYERS):
        bits[seat] = 0
        for v in range(NUM_VALUES):
            hands[i, seat, v] = 0
    for j in range(dealt):
        seat = j // per
        v = spartan_value[spartan_order[i, j]]
        hands[i, seat, v] += 1
        bits[seat] |= np.int16(1) << v
    for seat in range(MAX_PLAYERS):
        hand_bits[seat, i] = bits[seat]
    for v in range(NUM_VALUES):
        in_hands[v] = 0
        for seat in range(num_players):
            in_hands[v] += hands[i, seat, v]
    hand_total[i] = dealt
    phase[i] = MAIN
    current[i] = 0
    recipient[i] = -1
    marker[i] = 1
    support[i] = NUM_SUPPORT
    spartan_pos[i] = dealt
    persian_pos[i] = 2
    graveyard[i] = 0
    persian_discard[i] = 0
    offers[i] = 0
    first = np.int32(persian_order[i, 0])
    second = np.int32(persian_order[i, 1])
    slot1[i] = first
    slot2[i] = second
    turn[i] = 0
    won[i] = False
    lost[i] = False
    for c in range(obs_new_game.shape[0]):
        obs[i, c] = obs_new_game[c]
    for seat in range(MAX_PLAYERS):
        for v in range(NUM_VALUES):
            obs[i, O_HANDS + seat * NUM_VALUES + v] = hands[i, seat, v] * np.float32(0.5)
    for v in range(NUM_VALUES):
        obs[i, O_UNSEEN_SPARTAN + v] = full_deck_half[v] - in_hands[v] * np.float32(0.5)
    _put(obs, i, O_SLOTS, obs_slots, (first + 1) * n_slot + second + 1, 8)
    obs[i, O_UNSEEN_PERSIAN + first] = 0.0
    obs[i, O_UNSEEN_PERSIAN + second] = 0.0
    _put(masks, i, 0, mask_table, NUM_SUPPORT * BITS + bits[0], NUM_ACTIONS)


@njit(inline="always")
def _give(i: int, spartan_pos: np.ndarray, offers: np.ndarray, spartan_order: np.ndarray, obs: np.ndarray,
          spartan_value: np.ndarray, obs_spartan_deck: np.ndarray) -> int:
    """A give draws the top Spartan card (``CoopGame._give``); the last card drawn lapses the other
    offers. Returns the card's value index."""
    pos = spartan_pos[i]
    value = np.int32(spartan_value[spartan_order[i, pos]])
    obs[i, O_UNSEEN_SPARTAN + value] -= np.float32(0.5)
    pos += 1
    spartan_pos[i] = pos
    if pos >= SPARTAN_DECK_SIZE:
        offers[i] = 0
    obs[i, O_SPARTAN_DECK] = obs_spartan_deck[pos]
    return value


@njit(inline="always")
def _move_card(i: int, hands: np.ndarray, hand_total: np.ndarray, hand_bits: np.ndarray, obs: np.ndarray,
               seat: int, value: int, delta: np.int32) -> None:
    """Add ``delta`` (+1 a give, -1 a fight or a discard, 0 otherwise) cards of ``value`` to ``seat``'s
    hand: the count, its observation cell, the hand total and the seat's bit set of values."""
    count = hands[i, seat, value] + delta
    hands[i, seat, value] = count
    obs[i, O_HANDS + seat * NUM_VALUES + value] = count * np.float32(0.5)
    hand_total[i] += delta
    bit = np.int16(1 << value)
    held = bit if count > 0 else np.int16(0)
    hand_bits[seat, i] = (hand_bits[seat, i] & ~bit) | held


@njit(inline="always")
def _resolve_fight(i: int, support: np.ndarray, persian_pos: np.ndarray, graveyard: np.ndarray,
           persian_discard: np.ndarray, slot1: np.ndarray, slot2: np.ndarray, dice_sum: np.ndarray,
           dice_pos: np.ndarray, obs: np.ndarray, slot_pack: np.ndarray, obs_graveyard: np.ndarray,
           obs_discard: np.ndarray, obs_marker_support: np.ndarray, fig: bool, value: int, spent: int,
           m: int) -> tuple:
    """The fight (``CoopGame.resolve_fight``) with the marker ``m`` after this action, for every
    action: a non-fight rolls no dice and has total 0, below every white value, so it beats nothing.

    Spends ``spent`` support cards and rolls them plus the location die (markers 3 and 6); resolves slot 1,
    then slot 2 only if slot 1 was beaten: ``S < W`` stays, ``W <= S < R`` the Persian discard pile,
    ``S >= R`` the graveyard, and the 12th graveyard card wins at once (slot 2 is then not fought). The
    survivor of slot 2 moves to slot 1. Returns ``(won, bonus cards beaten, slot1, slot2)``: the new line,
    before the refill, and whether the fight won (12 graveyard cards, or a deck that cannot refill)."""
    total = (value + MIN_VALUE) * np.int32(fig)
    n_dice = spent + np.int32(fig & ((m == 3) | (m == 6)))
    pos = dice_pos[i]
    total += dice_sum[i, pos + n_dice] - dice_sum[i, pos]
    dice_pos[i] = pos + n_dice
    sup = support[i] - spent
    support[i] = sup
    _put(obs, i, O_MARKER, obs_marker_support, (m - 1) * (NUM_SUPPORT + 1) + sup, 8)

    s1 = slot1[i]
    s2 = slot2[i]
    pack1 = np.int32(slot_pack[s1 + 1])  # white | red << 7 | bonus << 14
    pack2 = np.int32(slot_pack[s2 + 1])
    beat1 = total >= (pack1 & 127)
    grave1 = total >= ((pack1 >> 7) & 127)
    g = graveyard[i] + np.int32(grave1)
    win1 = grave1 & (g == GRAVEYARD_WIN)
    beat2 = beat1 & (not win1) & (total >= (pack2 & 127))
    grave2 = beat2 & (total >= ((pack2 >> 7) & 127))
    g += np.int32(grave2)
    graveyard[i] = g
    wins = win1 | (grave2 & (g == GRAVEYARD_WIN))
    discard = persian_discard[i] + np.int32(beat1 != grave1) + np.int32(beat2 != grave2)
    persian_discard[i] = discard
    bonus = np.int32(beat1 & (pack1 >= 1 << 14)) + np.int32(beat2 & (pack2 >= 1 << 14))
    beaten = np.int32(beat1) + np.int32(beat2)
    won = wins | (beaten > PERSIAN_DECK_SIZE - persian_pos[i])
    beaten_s1 = -1 if (beat2 | win1) else s2
    s2 = (s2 if win1 else -1) if beat1 else s2
    s1 = beaten_s1 if beat1 else s1
    obs[i, O_GRAVEYARD] = obs_graveyard[g]
    obs[i, O_PERSIAN_DISCARD] = obs_discard[discard]
    return won, bonus, s1, s2


@njit(inline="always")
def _offers(i: int, spartan_pos: np.ndarray, offers: np.ndarray, hands: np.ndarray, hand_total: np.ndarray,
            obs: np.ndarray, obs_offers: np.ndarray, kind: int, offered: np.int32, ended: bool,
            give_seat: int, multi: bool) -> tuple:
    """The draw offers (``CoopGame._start_offers``, ``_give``, ``_next_offer``): a retreat offers one
    draw, a fight one per beaten bonus card, none from an empty deck or once the game is won or lost; a
    give into a full hand asks for a discard; a decline, a discard or a give that fits moves on to the
    next pending offer. Returns ``(start, cont, full, complete)``: offers start, the next offer is made,
    the recipient must discard, the action is complete (the turn ends)."""
    giv = kind == GIVE
    deck_left = spartan_pos[i] < SPARTAN_DECK_SIZE
    start = (offered > 0) & deck_left & (not ended)
    full = False
    if giv:
        if multi:
            size = 0
            for v in range(NUM_VALUES):
                size += hands[i, give_seat, v]
        else:
            size = hand_total[i]
        full = size > HAND_LIMIT
    moved_on = (kind >= DECLINE) | (giv & (not full))
    o = offers[i]
    cont = moved_on & (o > 0) & deck_left
    o = (0 if moved_on else o) + np.int32(start & (offered > 1))  # at most one offer ever pending
    offers[i] = o
    obs[i, O_OFFERS] = obs_offers[o]
    complete = (((kind == RETREAT) | (kind == FIGHT)) & (not ended) & (not start)) | (moved_on & (not cont))
    return start, cont, full, complete


@njit(inline="always")
def _refill(i: int, persian_pos: np.ndarray, slot1: np.ndarray, slot2: np.ndarray, persian_order: np.ndarray,
            obs: np.ndarray, n_slot: int, obs_persian_deck: np.ndarray, obs_slots: np.ndarray, complete: bool,
            s1: int, s2: int) -> None:
    """At the end of an action refill the line from the top of the Persian deck, slot 1 first when both
    slots are empty (``CoopGame._complete``), and write the line."""
    if complete & (s2 < 0):  # slot 1 is never empty while slot 2 is full
        both = s1 < 0
        pos = persian_pos[i]
        first = persian_order[i, pos]
        second = persian_order[i, pos + 1] if both else first
        s1 = first if both else s1
        s2 = second if both else first
        pos += 2 if both else 1
        persian_pos[i] = pos
        obs[i, O_UNSEEN_PERSIAN + first] = 0.0
        obs[i, O_UNSEEN_PERSIAN + second] = 0.0
        obs[i, O_PERSIAN_DECK] = obs_persian_deck[pos]
    slot1[i] = s1
    slot2[i] = s2
    _put(obs, i, O_SLOTS, obs_slots, (np.int32(s1) + 1) * n_slot + s2 + 1, 8)


@njit(inline="always")
def _end(i: int, current: np.ndarray, spartan_pos: np.ndarray, hand_total: np.ndarray, turn: np.ndarray,
         won: np.ndarray, lost: np.ndarray, obs: np.ndarray, num_players: int, complete: bool, is_won: bool,
         lose_marker: bool, cur: int) -> tuple:
    """The end of an action (``CoopGame._complete`` / ``_end``): the loss by exhaustion (every hand and the
    Spartan deck empty), the turn passes to the next seat, the turn counter. Returns ``(ended, seat)``."""
    exhausted = complete & (spartan_pos[i] >= SPARTAN_DECK_SIZE) & (hand_total[i] == 0)
    is_lost = lose_marker | exhausted
    ended = is_won | is_lost
    if num_players > 1:
        nxt = cur + np.int32(complete & (not exhausted))
        nxt = 0 if nxt >= num_players else nxt
        obs[i, O_SEAT + cur] = 0.0
        obs[i, O_SEAT + nxt] = 1.0
        current[i] = nxt
        cur = nxt
    won[i] |= is_won
    lost[i] |= is_lost
    turn[i] += np.int32(complete | ended)
    return ended, cur


@njit(inline="always")
def _observe(i: int, phase: np.ndarray, recipient: np.ndarray, support: np.ndarray, hand_bits: np.ndarray,
             obs: np.ndarray, masks: np.ndarray, obs_phase: np.ndarray, mask_table: np.ndarray, ph: np.int32,
             full: bool, dis: bool, give_seat: int, rec: int, cur: int, multi: bool) -> None:
    """The phase one-hot, the recipient (set by a draw into a full hand, cleared by the discard) and the
    mask row of the new state (``CoopGame.legal_action_mask``), one row of the mask table."""
    phase[i] = ph
    _put(obs, i, O_PHASE, obs_phase, ph, 3)
    if full:
        rec = give_seat if multi else 0
        recipient[i] = rec
        obs[i, O_RECIPIENT + rec] = 1.0
    if dis:
        obs[i, O_RECIPIENT + rec] = 0.0
        recipient[i] = -1
    seat_bits = hand_bits[((rec if ph == DISCARD else cur) if multi else 0), i]
    other = MASK_OFFER if ph == DRAW_OFFER else MASK_NONE
    other = MASK_DISCARD + seat_bits if ph == DISCARD else other
    mcode = np.int32(support[i]) * BITS + seat_bits if ph == MAIN else other
    _put(masks, i, 0, mask_table, mcode, NUM_ACTIONS)


# ---------------------------------------------------------------------------------------------- entry point


@njit(inline="always")
def _check_actions(actions: np.ndarray, restart: np.ndarray, masks: np.ndarray, noop: int) -> None:
    """The loop of [`step`][thermopylae_env.coop.kernel.step] indexes raw memory with what the actions imply,
    so it takes no action that the masks forbid (the callers check legality first; this is the guard, before
    any game moves)."""
    restarting = restart.shape[0] > 0
    for i in range(actions.shape[0]):
        a = actions[i]
        if a < 0 or a > noop:
            raise IndexError("an action is outside 0..NOOP_ACTION")
        if a != noop and not masks[i, a] and not (restarting and restart[i]):
            raise ValueError("an action is illegal (its mask entry is false)")


@njit(cache=True, parallel=True)
def step(
    actions: np.ndarray, restart: np.ndarray, draw: bool, keys: np.ndarray, episodes: np.ndarray,
    state: tuple, tables: tuple,
) -> np.ndarray:
    """Advance every game by one action, or deal it a new game. Returns the games that ended (bool).

    ``actions``: intp, one per game (``NOOP_ACTION`` leaves a game untouched), or empty (reset only).
    ``restart``: bool, one per game, or empty: the games that start a new game, ignoring their action.
    ``draw``: deal them from their SplitMix64 stream (their key and episode number; the episode is counted
    here); otherwise the caller has written their ``spartan_order``, ``persian_order`` and ``dice_sum``
    rows (and counted the episode).
    ``state``: the arrays the engine's step writes, ``(phase, current, recipient, marker, support,
    spartan_pos, persian_pos, graveyard, persian_discard, offers, slot1, slot2, hands, hand_total,
    hand_bits, spartan_order, persian_order, dice_sum, dice_pos, turn, won, lost, obs, masks)``;
    ``tables``: what it only reads, ``(num_players, cards dealt per seat, Persian rows + 1, action_code,
    spartan_value, slot_pack, obs_new_game, full_deck_half, obs_spartan_deck, obs_persian_deck,
    obs_graveyard, obs_discard, obs_offers, obs_slots, obs_phase, obs_marker_support, masks)`` (the
    engine's ``_Tables``).
    """
    (phase, current, recipient, marker, support, spartan_pos, persian_pos, graveyard, persian_discard, offers,
     slot1, slot2, hands, hand_total, hand_bits, spartan_order, persian_order, dice_sum, dice_pos, turn, won,
     lost, obs, masks) = state
    (num_players, per, n_slot, action_code, spartan_value, slot_pack, obs_new_game, full_deck_half,
     obs_spartan_deck, obs_persian_deck, obs_graveyard, obs_discard, obs_offers, obs_slots, obs_phase,
     obs_marker_support, mask_table) = tables
    n = masks.shape[0]
    multi = num_players > 1
    done = np.zeros(n, np.bool_)
    acting = actions.shape[0] > 0
    restarting = restart.shape[0] > 0
    noop = action_code.shape[0] - 1
    if acting:
        _check_actions(actions, restart, masks, noop)
    chunks = (n + CHUNK - 1) // CHUNK
    for c in prange(chunks):
        # Work space per chunk: the threads share nothing they write but their own games' rows.
        halves = np.empty(2 * CHANCE_WORDS, np.uint32)
        work = (np.empty(PERSIAN_DECK_SIZE, np.uint32), np.empty(PERSIAN_DECK_SIZE, np.uint32),
                np.empty(PERSIAN_DECK_SIZE, np.uint64), np.empty(PERSIAN_DECK_SIZE, np.uint64),
                np.empty(PERSIAN_DECK_SIZE, np.int32))
        bits = np.empty(MAX_PLAYERS, np.int16)
        in_hands = np.empty(NUM_VALUES, np.int8)
        lo = c * CHUNK
        hi = min(n, lo + CHUNK)
        if restarting and draw:
            # the chance of the games that restart, in a loop of its own: drawn inside the game loop below,
            # the same code runs about twice as slow (that loop body is too large to optimize as well)
            for i in range(lo, hi):
                if restart[i]:
                    _draw_chance(i, keys, episodes, spartan_order, persian_order, dice_sum, halves, work)
        for i in range(lo, hi):
            if restarting and restart[i]:
                _deal(i, state, tables, bits, in_hands)
                continue
            if not acting or actions[i] == noop:
                continue
            # --- one action (``CoopGame.step``), in the reference engine's order
            code = np.int32(action_code[actions[i]])  # value index | support << 4 | seat << 7 | kind << 9
            kind = code >> 9
            value = code & 15
            spent = (code >> 4) & 7
            give_seat = (code >> 7) & 3
            ret = kind == RETREAT
            fig = kind == FIGHT
            giv = kind == GIVE
            dis = kind == DISCARD_CARD
            cur = current[i]
            rec = recipient[i]

            if giv:
                value = _give(i, spartan_pos, offers, spartan_order, obs, spartan_value, obs_spartan_deck)
            hseat = (give_seat if giv else (rec if dis else cur)) if multi else 0
            delta = np.int32(giv) - np.int32(fig | dis)  # a give adds a card, a fight or a discard takes one
            _move_card(i, hands, hand_total, hand_bits, obs, hseat, value, delta)

            m = marker[i] + np.int32(ret)  # the retreat (``CoopGame._retreat``)
            marker[i] = m
            lose_marker = ret & (m == LOSS_MARKER)
            is_won, bonus, s1, s2 = _resolve_fight(i, support, persian_pos, graveyard, persian_discard, slot1,
                                                   slot2, dice_sum, dice_pos, obs, slot_pack, obs_graveyard,
                                                   obs_discard, obs_marker_support, fig, value, spent, m)

            ended = lose_marker | is_won
            start, cont, full, complete = _offers(i, spartan_pos, offers, hands, hand_total, obs, obs_offers,
                                                  kind, bonus + np.int32(ret), ended, give_seat, multi)
            _refill(i, persian_pos, slot1, slot2, persian_order, obs, n_slot, obs_persian_deck, obs_slots,
                    complete, s1, s2)
            ended_now, cur = _end(i, current, spartan_pos, hand_total, turn, won, lost, obs, num_players,
                                  complete, is_won, lose_marker, cur)

            ph = np.int32(start | cont) + 2 * np.int32(full)
            ph = ph | OVER if ended_now else ph
            _observe(i, phase, recipient, support, hand_bits, obs, masks, obs_phase, mask_table, ph, full,
                     dis, give_seat, rec, cur, multi)
            done[i] = ended_now
    return done


# What step compiles in from other modules: the layout's offsets and the decks' sizes (and what they read).
key_cache_on(globals(), "thermopylae_env.coop.layout", "thermopylae_env.actions", "thermopylae_env.cards",
             "thermopylae_env.layout")
