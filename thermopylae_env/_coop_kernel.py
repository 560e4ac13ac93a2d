"""The compiled kernel of :class:`thermopylae_env.coop_vector.CoopVectorEngine` (the ``numba`` backend).

The NumPy engine advances all games with a fixed sequence of whole-array operations; at large ``N`` much of
its time goes into the temporaries and index subsets those operations need, and at small ``N`` into the
fixed cost of a hundred NumPy calls. :func:`step` does the same work as one compiled loop over the games:
``CoopVectorEngine.transition`` (state, observation rows and mask rows) and ``CoopVectorEngine.reset_games``
(with the default chance source, :func:`thermopylae_env.coop_vector.splitmix_chance`, drawn in the kernel)
in the same call, so that the games restarting at a NEXT_STEP autoreset are dealt while the loop passes
their rows. It writes exactly the arrays the NumPy code writes, value for value
(``tests/test_coop_vector.py`` runs both backends through the same games and compares every array), so the
rest of the package does not know which backend ran.

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
    NUM_ACTIONS,
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
def _rank_sort(keys: np.ndarray, n: int, rank: np.ndarray, out: np.ndarray) -> None:
    """``out[:n]`` = ``keys[:n]`` sorted, for distinct keys: each key goes to the count of smaller ones.
    Counting has no data-dependent branch (a comparison sort mispredicts on random keys), and counting for
    all keys at once, one key against all of them per pass, is elementwise work that vectorizes."""
    for j in range(n):
        rank[j] = 0
    for m in range(n):
        km = keys[m]
        for j in range(n):
            rank[j] += np.int32(km < keys[j])
    for j in range(n):
        out[rank[j]] = keys[j]


@numba.njit(inline="always")
def _permutation(halves: np.ndarray, first: int, n: int, key: np.uint64, episode: np.uint64, tie_word: int,
                 work: tuple, out: np.ndarray, i: int) -> None:
    """``_permutations`` for one game, into row ``i`` of ``out``: sort keys ``halves[first : first + n]``
    (27 random bits, the position in the low 5), redone with 64-bit keys from words ``tie_word ..`` when
    two random parts tie. Sorting the packed keys gives the positions in the low bits (``packed.sort()``
    in NumPy); the keys are distinct, so any correct sort agrees with NumPy's."""
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


@numba.njit(cache=True)
def step(
    actions: np.ndarray, restart: np.ndarray, draw: bool, keys: np.ndarray, episodes: np.ndarray,
    state: tuple, tables: tuple,
) -> np.ndarray:
    """Advance every game by one action, or deal it a new game: ``CoopVectorEngine.transition`` and
    ``CoopVectorEngine.reset_games`` in one loop over the games (after a pass that checks the actions and
    one that draws the restarting games' chance). Returns the games that ended (bool).

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
            np.empty(PERSIAN_DECK_SIZE, np.uint64), np.empty(PERSIAN_DECK_SIZE, np.uint64),
            np.empty(PERSIAN_DECK_SIZE, np.int32))
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
    if restarting and draw:
        # the chance of the games that restart, in a loop of its own: drawn inside the game loop below,
        # the same code measured about twice as slow (that loop body is too large to optimize as well)
        for i in range(n):
            if restart[i]:
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
    multi = num_players > 1
    dealt = per * num_players
    for i in range(n):
        if restarting and restart[i]:
            # --- a new game (reset_games)
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
            _put(obs, i, _O_SLOTS, obs_slots, (first + 1) * n_slot + second + 1, 8)
            obs[i, _O_UNSEEN_PERSIAN + first] = 0.0
            obs[i, _O_UNSEEN_PERSIAN + second] = 0.0
            _put(masks, i, 0, mask_table, NUM_SUPPORT * _BITS + bits[0], NUM_ACTIONS)
            continue
        if not acting:
            continue
        code = np.int32(action_code[actions[i]])
        kind = code >> 9
        if kind == _NOOP:
            continue  # the NumPy code rewrites a no-op game's cells with the values they hold

        # --- one action (transition). Every formula is the NumPy code's, in its order. What that code
        # applies to an index subset is applied here to every game where it is cheap and leaves the others
        # as they are (adding 0, rewriting an observation cell with the value it already holds: a game
        # that moves has its observation in step with its state), because a branch on a random action
        # mispredicts often, and the mispredictions, not the arithmetic, set the speed (about 20% here).
        # Only the rarer steps that touch more memory (a give, a refill, a discard) stay behind branches.
        value = code & 15
        spent = (code >> 4) & 7
        give_seat = (code >> 7) & 3
        ret = kind == _RETREAT
        fig = kind == _FIGHT
        giv = kind == _GIVE
        dis = kind == _DISCARD
        cur = current[i]
        rec = recipient[i]

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

        # the one hand cell an action changes (a retreat or a decline adds 0 to the current seat's first)
        delta = np.int32(giv) - np.int32(fig | dis)
        hseat = (give_seat if giv else (rec if dis else cur)) if multi else 0
        count = hands[i, hseat, value] + delta
        hands[i, hseat, value] = count
        obs[i, _O_HANDS + hseat * NUM_VALUES + value] = count * np.float32(0.5)
        hand_total[i] += delta
        bit = np.int16(1 << value)
        held = bit if count > 0 else np.int16(0)
        hand_bits[hseat, i] = (hand_bits[hseat, i] & ~bit) | held

        # retreat
        m = marker[i] + np.int32(ret)
        marker[i] = m
        lose_marker = ret & (m == LOSS_MARKER)

        # fight: S = card + dice (support dice, plus one on markers 3 and 6); no dice reads as 0 dice
        total = (value + MIN_VALUE) * np.int32(fig)
        n_dice = spent + np.int32(fig & ((m == 3) | (m == 6)))
        pos = dice_pos[i]
        total += dice_sum[i, pos + n_dice] - dice_sum[i, pos]
        dice_pos[i] = pos + n_dice
        sup = support[i] - spent
        support[i] = sup
        _put(obs, i, _O_MARKER, obs_marker_support, (m - 1) * (NUM_SUPPORT + 1) + sup, 8)
        s1 = slot1[i]
        s2 = slot2[i]
        pack1 = np.int32(slot_pack[s1 + 1])
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
        is_won = wins | (beaten > PERSIAN_DECK_SIZE - persian_pos[i])
        beaten_s1 = -1 if (beat2 | win1) else s2
        s2 = (s2 if win1 else -1) if beat1 else s2
        s1 = beaten_s1 if beat1 else s1
        obs[i, _O_GRAVEYARD] = obs_graveyard[g]
        obs[i, _O_PERSIAN_DISCARD] = obs_discard[discard]

        # draw offers: a retreat offers one, a fight one per beaten bonus card, none from an empty deck
        deck_left = spartan_pos[i] < SPARTAN_DECK_SIZE
        ended = lose_marker | is_won
        offered = bonus + np.int32(ret)
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
        moved_on = (kind >= _DECLINE) | (giv & (not full))
        o = offers[i]
        cont = moved_on & (o > 0) & deck_left
        o = (0 if moved_on else o) + np.int32(start & (offered > 1))  # ``offers &= ~moved_on`` (0 or 1)
        offers[i] = o
        obs[i, _O_OFFERS] = obs_offers[o]
        complete = ((ret | fig) & (not ended) & (not start)) | (moved_on & (not cont))

        # end of an action: refill the line (slot 1 first), the loss by exhaustion, the next seat
        if complete & (s2 < 0):
            both = s1 < 0
            ppos = persian_pos[i]
            first = persian_order[i, ppos]
            second = persian_order[i, ppos + 1] if both else first
            s1 = first if both else s1
            s2 = second if both else first
            ppos += 2 if both else 1
            persian_pos[i] = ppos
            obs[i, _O_UNSEEN_PERSIAN + first] = 0.0
            obs[i, _O_UNSEEN_PERSIAN + second] = 0.0
            obs[i, _O_PERSIAN_DECK] = obs_persian_deck[ppos]
        slot1[i] = s1
        slot2[i] = s2
        _put(obs, i, _O_SLOTS, obs_slots, (s1 + 1) * n_slot + s2 + 1, 8)
        exhausted = complete & (not deck_left) & (hand_total[i] == 0)
        is_lost = lose_marker | exhausted
        ended_now = is_won | is_lost
        if multi:
            nxt = cur + np.int32(complete & (not exhausted))
            nxt = 0 if nxt >= num_players else nxt
            obs[i, 3 + cur] = 0.0
            obs[i, 3 + nxt] = 1.0
            current[i] = nxt
            cur = nxt
        won[i] |= is_won
        lost[i] |= is_lost
        turn[i] += np.int32(complete | ended_now)

        # phase (and the recipient of a draw into a full hand)
        ph = np.int32(start | cont) + 2 * np.int32(full)
        ph = ph | OVER if ended_now else ph
        phase[i] = ph
        _put(obs, i, 0, obs_phase, ph, 3)
        if full:
            rec = give_seat if multi else 0
            recipient[i] = rec
            obs[i, 7 + rec] = 1.0
        if dis:
            obs[i, 7 + rec] = 0.0
            recipient[i] = -1

        # the mask row, from the new state (CoopVectorEngine._mask_codes)
        seat_bits = hand_bits[((rec if ph == DISCARD else cur) if multi else 0), i]
        other = _MASK_OFFER if ph == DRAW_OFFER else _MASK_NONE
        other = _MASK_DISCARD + seat_bits if ph == DISCARD else other
        mcode = sup * _BITS + seat_bits if ph == MAIN else other
        _put(masks, i, 0, mask_table, mcode, NUM_ACTIONS)
        done[i] = ended_now
    return done
