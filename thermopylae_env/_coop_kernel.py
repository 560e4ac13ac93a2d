"""The compiled kernel of :class:`thermopylae_env.coop_vector.CoopVectorEngine` (the ``numba`` backend).

The NumPy engine advances all games with a fixed sequence of whole-array operations; at large ``N`` much of
its time goes into the temporaries and index subsets those operations need, and at small ``N`` into the
fixed cost of a hundred NumPy calls. :func:`step` does the same work as one compiled loop over the games:
``CoopVectorEngine.transition`` (state, observation rows and mask rows) and ``CoopVectorEngine.reset_games``
(with the default chance source, :func:`thermopylae_env.coop_vector.splitmix_chance`, drawn in the loop),
in one pass, so that the games restarting at a NEXT_STEP autoreset are dealt while the loop passes their
rows. It writes exactly the arrays the NumPy code writes, value for value (``tests/test_coop_vector.py``
runs both backends through the same games and compares every array), so the rest of the package does not
know which backend ran.

One kernel, not one per operation: numba compiles each entry point separately (seconds each), and a
helper that takes the engine's ~40 arrays cannot be inlined (a call with that many arguments compiles to
``f(*args)``) while calling it per game costs more than the game itself.

Importing this module imports numba; ``coop_vector`` imports it only when the numba backend is chosen.
The kernel is compiled on first use and cached on disk (``cache=True``), so only the first process after
an install or an edit pays the compilation (several seconds).
"""

from __future__ import annotations

import numba
import numpy as np

from thermopylae_env.coop_vector import (
    _BITS,
    _CHANCE_WORDS,
    _DECLINE,
    _DISCARD,
    _FIGHT,
    _GIVE,
    _MASK_DISCARD,
    _MASK_NONE,
    _MASK_OFFER,
    _NOOP,
    _O_GRAVEYARD,
    _O_HANDS,
    _O_MARKER,
    _O_OFFERS,
    _O_PERSIAN_DECK,
    _O_PERSIAN_DISCARD,
    _O_SLOTS,
    _O_SPARTAN_DECK,
    _O_UNSEEN_PERSIAN,
    _O_UNSEEN_SPARTAN,
    _RETREAT,
    _TIE_WORDS,
    _WORDS_PER_EPISODE,
    DICE_PER_GAME,
    DISCARD,
    DRAW_OFFER,
    GRAVEYARD_WIN,
    HAND_LIMIT,
    LOSS_MARKER,
    MAIN,
    MAX_PLAYERS,
    MIN_VALUE,
    NUM_SUPPORT,
    NUM_VALUES,
    OVER,
    PERSIAN_DECK_SIZE,
    SPARTAN_DECK_SIZE,
)

__all__ = ["step"]

# uint64 constants as NumPy scalars: numba types a plain Python int above 2**63 as a signed or float value,
# and SplitMix64 needs wrapping unsigned arithmetic throughout.
_U_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_U_M1 = np.uint64(0xBF58476D1CE4E5B9)
_U_M2 = np.uint64(0x94D049BB133111EB)
_U_WORDS_PER_EPISODE = np.uint64(_WORDS_PER_EPISODE)
_U_LOW32 = np.uint64(0xFFFFFFFF)
_U32_KEY27 = np.uint32(0xFFFFFFE0)  # the 27 random bits of a 32-bit sort key
_U_KEY59 = np.uint64(0xFFFFFFFFFFFFFFE0)  # the 59 random bits of a 64-bit sort key


@numba.njit(inline="always")
def _word(key: np.uint64, episode: np.uint64, j: int) -> np.uint64:
    """SplitMix64 output ``128 * episode + j`` of ``key`` (``_random_words`` for one word)."""
    z = key + (episode * _U_WORDS_PER_EPISODE + np.uint64(j + 1)) * _U_GAMMA
    z = z ^ (z >> np.uint64(30))
    z = z * _U_M1
    z = z ^ (z >> np.uint64(27))
    z = z * _U_M2
    return z ^ (z >> np.uint64(31))


@numba.njit(inline="always")
def _put(dst: np.ndarray, i: int, start: int, src: np.ndarray, j: int, count: int) -> None:
    """``dst[i, start : start + count] = src[j, :count]`` as an explicit loop: numba's slice assignment
    goes through general broadcasting code, several times slower for rows this short."""
    for c in range(count):
        dst[i, start + c] = src[j, c]


@numba.njit(inline="always")
def _rank_sort(keys: np.ndarray, n: int, out: np.ndarray) -> None:
    """``out[:n]`` = ``keys[:n]`` sorted, for distinct keys: each key goes to the count of smaller ones.
    Counting has no data-dependent branch (a comparison sort mispredicts on random keys) and vectorizes."""
    for j in range(n):
        kj = keys[j]
        below = 0
        for m in range(n):
            below += keys[m] < kj
        out[below] = kj


@numba.njit(inline="always")
def _permutation(halves: np.ndarray, first: int, n: int, key: np.uint64, episode: np.uint64, tie_word: int,
                 work: tuple, out: np.ndarray, i: int) -> None:
    """``_permutations`` for one game, into row ``i`` of ``out``: sort keys ``halves[first : first + n]``
    (27 random bits, the position in the low 5), redone with 64-bit keys from words ``tie_word ..`` when
    two random parts tie. Sorting the packed keys gives the positions in the low bits (``packed.sort()``
    in NumPy); the keys are distinct, so any correct sort agrees with NumPy's."""
    keys32, sorted32, keys64, sorted64 = work
    for j in range(n):
        keys32[j] = (halves[first + j] & _U32_KEY27) | np.uint32(j)
    _rank_sort(keys32, n, sorted32)
    tied = False
    for j in range(1, n):
        tied |= (sorted32[j] ^ sorted32[j - 1]) < np.uint32(32)
    if tied:
        for j in range(n):
            keys64[j] = (_word(key, episode, tie_word + j) & _U_KEY59) | np.uint64(j)
        _rank_sort(keys64, n, sorted64)
        for j in range(n):
            out[i, j] = sorted64[j] & np.uint64(31)
    else:
        for j in range(n):
            out[i, j] = sorted32[j] & np.uint32(31)


@numba.njit(cache=True)
def step(
    actions: np.ndarray, restart: np.ndarray, draw: bool, keys: np.ndarray, episodes: np.ndarray,
    state: tuple, tables: tuple,
) -> np.ndarray:
    """Advance every game by one action, or deal it a new game: ``CoopVectorEngine.transition`` and
    ``CoopVectorEngine.reset_games`` in one pass over the games. Returns the games that ended (bool).

    ``actions``: intp, one per game (``NOOP_ACTION`` leaves a game untouched), or empty (reset only).
    ``restart``: bool, one per game, or empty: the games that start a new game, ignoring their action.
    ``draw``: deal them from ``splitmix_chance`` (their key and episode number; the episode is counted
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
    halves = np.empty(2 * _CHANCE_WORDS, np.uint32)
    work = (np.empty(PERSIAN_DECK_SIZE, np.uint32), np.empty(PERSIAN_DECK_SIZE, np.uint32),
            np.empty(PERSIAN_DECK_SIZE, np.uint64), np.empty(PERSIAN_DECK_SIZE, np.uint64))
    bits = np.empty(MAX_PLAYERS, np.int16)
    in_hands = np.empty(NUM_VALUES, np.int8)
    n = obs.shape[0]
    done = np.zeros(n, np.bool_)
    acting = actions.shape[0] > 0
    restarting = restart.shape[0] > 0
    if acting:
        # The loop below indexes raw memory with what the actions imply, so it takes no action that the
        # masks forbid (the callers check legality first; this is the guard, before any game moves).
        noop = action_code.shape[0] - 1
        for i in range(n):
            a = actions[i]
            if a < 0 or a > noop:
                raise IndexError("an action is outside 0..NOOP_ACTION")
            if a != noop and not masks[i, a] and not (restarting and restart[i]):
                raise ValueError("an action is illegal (its mask entry is false)")
    multi = num_players > 1
    dealt = per * num_players
    for i in range(n):
        if restarting and restart[i]:
            # --- a new game (reset_games)
            if draw:
                key = keys[i]
                episode = episodes[i]
                for w in range(_CHANCE_WORDS):
                    word = _word(key, episode, w)
                    halves[2 * w] = word & _U_LOW32
                    halves[2 * w + 1] = word >> np.uint64(32)
                _permutation(halves, 0, SPARTAN_DECK_SIZE, key, episode, _TIE_WORDS, work, spartan_order, i)
                _permutation(halves, SPARTAN_DECK_SIZE, PERSIAN_DECK_SIZE, key, episode,
                             _TIE_WORDS + SPARTAN_DECK_SIZE, work, persian_order, i)
                total = 0
                dice_sum[i, 0] = 0
                for j in range(DICE_PER_GAME):
                    h = np.uint64(halves[SPARTAN_DECK_SIZE + PERSIAN_DECK_SIZE + j])
                    total += np.int64((h * np.uint64(6)) >> np.uint64(32)) + 1
                    dice_sum[i, j + 1] = total
                episodes[i] = episode + np.uint64(1)
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
            first = persian_order[i, 0]
            second = persian_order[i, 1]
            slot1[i] = first
            slot2[i] = second
            turn[i] = 0
            won[i] = False
            lost[i] = False
            for c in range(obs_new_game.shape[0]):
                obs[i, c] = obs_new_game[c]
            for seat in range(MAX_PLAYERS):
                for v in range(NUM_VALUES):
                    obs[i, _O_HANDS + seat * NUM_VALUES + v] = hands[i, seat, v] * np.float32(0.5)
            for v in range(NUM_VALUES):
                obs[i, _O_UNSEEN_SPARTAN + v] = full_deck_half[v] - in_hands[v] * np.float32(0.5)
            _put(obs, i, _O_SLOTS, obs_slots, (first + 1) * n_slot + second + 1, _O_MARKER - _O_SLOTS)
            obs[i, _O_UNSEEN_PERSIAN + first] = 0.0
            obs[i, _O_UNSEEN_PERSIAN + second] = 0.0
            _put(masks, i, 0, mask_table, NUM_SUPPORT * _BITS + bits[0], mask_table.shape[1])
            continue
        if not acting:
            continue
        code = np.int32(action_code[actions[i]])
        kind = code >> 9
        if kind == _NOOP:
            continue  # the NumPy code rewrites a no-op game's cells with the values they hold

        # --- one action (transition); the order of the steps and every formula follow the NumPy code,
        # branch for branch; where that code applies a step to an index subset, the subset's condition
        # guards it here
        value = code & 15
        spent = (code >> 4) & 7
        give_seat = (code >> 7) & 3
        ret = kind == _RETREAT
        fig = kind == _FIGHT
        giv = kind == _GIVE
        dis = kind == _DISCARD
        phase_before = phase[i]
        offers_before = offers[i]

        # a give draws the top Spartan card
        if giv:
            gpos = spartan_pos[i]
            value = spartan_value[spartan_order[i, gpos]]
            obs[i, _O_UNSEEN_SPARTAN + value] -= np.float32(0.5)
            gpos += 1
            spartan_pos[i] = gpos
            if gpos >= SPARTAN_DECK_SIZE:
                offers[i] = 0  # the last card drawn: the other offers lapse
            obs[i, _O_SPARTAN_DECK] = obs_spartan_deck[gpos]

        # the one hand cell an action changes
        delta = 1 if giv else (-1 if (fig or dis) else 0)
        hseat = (give_seat if giv else (recipient[i] if dis else current[i])) if multi else 0
        count = hands[i, hseat, value] + delta
        hands[i, hseat, value] = count
        if delta != 0:
            obs[i, _O_HANDS + hseat * NUM_VALUES + value] = count * np.float32(0.5)
        hand_total[i] += delta
        bit = np.int16(1 << value)
        held = bit if count > 0 else np.int16(0)
        hand_bits[hseat, i] = (hand_bits[hseat, i] & ~bit) | held

        # retreat
        if ret:
            marker[i] += 1
        m = marker[i]
        lose_marker = ret and m == LOSS_MARKER

        # fight: S = card + dice (support dice, plus one on markers 3 and 6)
        total = value + MIN_VALUE if fig else 0
        n_dice = spent + (1 if (fig and (m == 3 or m == 6)) else 0)
        if n_dice > 0:
            pos = dice_pos[i]
            total += dice_sum[i, pos + n_dice] - dice_sum[i, pos]
            dice_pos[i] = pos + n_dice
            support[i] -= spent
        if ret or spent > 0:
            _put(obs, i, _O_MARKER, obs_marker_support, (m - 1) * (NUM_SUPPORT + 1) + support[i],
                 obs_marker_support.shape[1])
        s1 = slot1[i]
        s2 = slot2[i]
        pack1 = np.int32(slot_pack[s1 + 1])
        pack2 = np.int32(slot_pack[s2 + 1])
        beat1 = total >= (pack1 & 127)
        grave1 = total >= ((pack1 >> 7) & 127)
        g = graveyard[i] + (1 if grave1 else 0)
        win1 = grave1 and g == GRAVEYARD_WIN
        beat2 = beat1 and not win1 and total >= (pack2 & 127)
        grave2 = beat2 and total >= ((pack2 >> 7) & 127)
        g += 1 if grave2 else 0
        graveyard[i] = g
        wins = win1 or (grave2 and g == GRAVEYARD_WIN)
        persian_discard[i] += (1 if beat1 != grave1 else 0) + (1 if beat2 != grave2 else 0)
        bonus = (1 if (beat1 and pack1 >= 1 << 14) else 0) + (1 if (beat2 and pack2 >= 1 << 14) else 0)
        beaten = (1 if beat1 else 0) + (1 if beat2 else 0)
        is_won = wins or beaten > PERSIAN_DECK_SIZE - persian_pos[i]
        line_changed = beat1
        if beat1:
            s1 = -1 if (beat2 or win1) else s2
            s2 = slot2[i] if win1 else -1  # still the slot 2 from before the fight
            slot1[i] = s1
            slot2[i] = s2
            obs[i, _O_GRAVEYARD] = obs_graveyard[g]
            obs[i, _O_PERSIAN_DISCARD] = obs_discard[persian_discard[i]]

        # draw offers: a retreat offers one, a fight one per beaten bonus card, none from an empty deck
        deck_left = spartan_pos[i] < SPARTAN_DECK_SIZE
        ended = lose_marker or is_won
        offered = bonus + (1 if ret else 0)
        start = offered > 0 and deck_left and not ended
        full = False
        if giv:
            if multi:
                size = 0
                for v in range(NUM_VALUES):
                    size += hands[i, give_seat, v]
            else:
                size = hand_total[i]
            full = size > HAND_LIMIT
        moved_on = kind >= _DECLINE or (giv and not full)
        o = offers[i]
        cont = moved_on and o > 0 and deck_left
        o &= 0 if moved_on else 1  # the NumPy code's ``offers &= ~moved_on`` (offers is 0 or 1)
        if start and offered > 1:
            o += 1
        offers[i] = o
        if o != offers_before:
            obs[i, _O_OFFERS] = obs_offers[o]
        complete = ((ret or fig) and not ended and not start) or (moved_on and not cont)

        # end of an action: refill the line (slot 1 first), the loss by exhaustion, the next seat
        if complete and s2 < 0:
            both = s1 < 0
            pos = persian_pos[i]
            first = persian_order[i, pos]
            second = persian_order[i, pos + 1] if both else first
            if both:
                s1 = first
                s2 = second
            else:
                s2 = first
            slot1[i] = s1
            slot2[i] = s2
            pos += 2 if both else 1
            persian_pos[i] = pos
            obs[i, _O_UNSEEN_PERSIAN + first] = 0.0
            obs[i, _O_UNSEEN_PERSIAN + second] = 0.0
            obs[i, _O_PERSIAN_DECK] = obs_persian_deck[pos]
            line_changed = True
        if line_changed:
            _put(obs, i, _O_SLOTS, obs_slots, (s1 + 1) * n_slot + s2 + 1, _O_MARKER - _O_SLOTS)
        exhausted = complete and not deck_left and hand_total[i] == 0
        is_lost = lose_marker or exhausted
        ended_now = is_won or is_lost
        if multi and complete and not exhausted:
            cur = current[i]
            obs[i, 3 + cur] = 0.0
            cur += 1
            if cur >= num_players:
                cur = 0
            current[i] = cur
            obs[i, 3 + cur] = 1.0
        if is_won:
            won[i] = True
        if is_lost:
            lost[i] = True
        if complete or ended_now:
            turn[i] += 1

        # phase (and the recipient of a draw into a full hand)
        ph = (1 if (start or cont) else 0) + (2 if full else 0)
        if ended_now:
            ph |= OVER
        phase[i] = ph
        if ph != phase_before:
            _put(obs, i, 0, obs_phase, ph, obs_phase.shape[1])
        if full:
            recipient[i] = give_seat if multi else 0
            obs[i, 7 + recipient[i]] = 1.0
        if dis:
            obs[i, 7 + recipient[i]] = 0.0
            recipient[i] = -1

        # the mask row, from the new state (CoopVectorEngine._mask_codes)
        if ph == MAIN:
            mcode = support[i] * _BITS + hand_bits[current[i] if multi else 0, i]
        elif ph == DISCARD:
            mcode = _MASK_DISCARD + hand_bits[recipient[i] if multi else 0, i]
        elif ph == DRAW_OFFER:
            mcode = _MASK_OFFER
        else:
            mcode = _MASK_NONE
        _put(masks, i, 0, mask_table, mcode, mask_table.shape[1])
        done[i] = ended_now
    return done
