"""What the co-op team sees: [`CoopView`][thermopylae_env.coop.observation.CoopView] (the observations and
legal masks of one game followed step by step, as ``Coop-v0`` hands them out) and
[`state_from_observation`][thermopylae_env.coop.observation.state_from_observation] (a state consistent with
an observation, for search).

The observation's layout is [`thermopylae_env.coop.layout.PIECES`][]; the reference writer of an
observation is [`thermopylae_env.coop.rules.CoopGame.observe`][], which every value here equals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.layout import (
    DECLINE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MAX_PLAYERS,
    MIN_VALUE,
    NUM_ACTIONS,
    NUM_SUPPORT,
    NUM_VALUES,
    OBS,
    OBS_SIZE,
    SPARTAN_DECK_SIZE,
)
from thermopylae_env.coop.state import _DISCARD, _DRAW_OFFER, _MAIN, CoopState
from thermopylae_env.errors import InvariantError

__all__ = ["CoopView", "ObservedGame", "state_from_observation"]


class ObservedGame(Protocol):
    """What the observer reads from a [`thermopylae_env.coop.rules.CoopGame`][] (the engine imports this
    module, so the observer names the game by what it uses rather than importing it)."""

    num_players: int
    persian: Sequence
    spartan: tuple[int, ...]
    _ids_by_value: tuple[tuple[int, ...], ...]
    _slot_code: tuple[tuple[float, float, float], ...]

    def observe(self, state: CoopState, out: np.ndarray | None = None) -> np.ndarray: ...

    def legal_action_mask(self, state: CoopState) -> np.ndarray: ...

    def check_invariants(self, state: CoopState) -> None: ...

# Observation offsets, from the layout (thermopylae_env.coop.layout).
_OBS_PHASE = OBS["phase"].offset
_OBS_SEAT = OBS["seat"].offset
_OBS_RECIPIENT = OBS["recipient"].offset
_OBS_HANDS = OBS["hands"].offset
_OBS_SLOT1 = OBS["slot1"].offset
_OBS_SLOT2 = OBS["slot2"].offset
_OBS_MARKER = OBS["marker"].offset
_OBS_SUPPORT = OBS["support"].offset
_OBS_SPARTAN_DECK = OBS["spartan_deck"].offset
_OBS_PERSIAN_DECK = OBS["persian_deck"].offset
_OBS_GRAVEYARD = OBS["graveyard"].offset
_OBS_PERSIAN_DISCARD = OBS["persian_discard"].offset
_OBS_OFFERS = OBS["offers"].offset
_OBS_UNSEEN_SPARTAN = OBS["unseen_spartan"].offset
_OBS_UNSEEN_PERSIAN = OBS["unseen_persian"].offset


def state_from_observation(game: ObservedGame, obs: np.ndarray, rng: np.random.Generator) -> CoopState:
    """A state consistent with ``obs`` (a determinization): the hidden deck orders are shuffled with
    ``rng``; which seen Persian rows are in the discard pile and which in the graveyard is not
    observed and does not matter to the rules, so they are assigned in row order. ``turn`` is not
    observed and is set to 0. Raises ``ValueError`` when ``obs`` cannot come from this game.
    """
    x = _check_observation(obs)

    def count(index: int, scale: float) -> int:
        return int(round(float(x[index]) * scale))

    phase_bits = [count(_OBS_PHASE + i, 1) for i in range(3)]
    terminated = sum(phase_bits) == 0
    phase = _MAIN if terminated else phase_bits.index(1)
    seats = [count(_OBS_SEAT + i, 1) for i in range(MAX_PLAYERS)]
    current = seats.index(1) if 1 in seats else 0
    recipient = -1
    if phase == _DISCARD:
        bits = [count(_OBS_RECIPIENT + i, 1) for i in range(MAX_PLAYERS)]
        if 1 not in bits:
            raise ValueError("DISCARD phase without a recipient")
        recipient = bits.index(1)
    if current >= game.num_players or recipient >= game.num_players:
        raise ValueError(f"the observation names a seat beyond the {game.num_players} of this game")

    # Spartan cards: hands, then the deck (unseen counts), the rest in the discard pile.
    free = [list(group) for group in game._ids_by_value]
    hands: list[list[int]] = []
    for seat in range(game.num_players):
        hand: list[int] = []
        for v in range(NUM_VALUES):
            for _ in range(count(_OBS_HANDS + NUM_VALUES * seat + v, 2)):
                if not free[v]:
                    raise ValueError(f"too many Spartan cards of value {v + MIN_VALUE}")
                hand.append(free[v].pop())
        hands.append(hand)
    deck: list[int] = []
    for v in range(NUM_VALUES):
        for _ in range(count(_OBS_UNSEEN_SPARTAN + v, 2)):
            if not free[v]:
                raise ValueError(f"too many Spartan cards of value {v + MIN_VALUE}")
            deck.append(free[v].pop())
    discard = sorted(card for group in free for card in group)
    if len(deck) != count(_OBS_SPARTAN_DECK, SPARTAN_DECK_SIZE):
        raise ValueError("the Spartan deck size disagrees with the unseen Spartan cards")
    shuffled_deck = [deck[i] for i in rng.permutation(len(deck))]
    spartan_order = tuple(discard) + tuple(card for hand in hands for card in hand) + tuple(shuffled_deck)
    spartan_pos = SPARTAN_DECK_SIZE - len(deck)

    # Persian cards: unseen rows are the deck; among the seen rows find the line, the rest are
    # split into graveyard and discard pile by their sizes.
    n_rows = len(game.persian)
    unseen = [row for row in range(n_rows) if count(_OBS_UNSEEN_PERSIAN + row, 1)]
    unseen_set = set(unseen)
    seen = [row for row in range(n_rows) if row not in unseen_set]
    slots = []
    for base in (_OBS_SLOT1, _OBS_SLOT2):
        if not count(base, 1):
            slots.append(-1)
            continue
        code = (float(x[base + 1]), float(x[base + 2]), float(x[base + 3]))
        match = next((row for row in seen if row not in slots and game._slot_code[row] == code), None)
        if match is None:
            raise ValueError(f"no seen Persian row matches the line card {code}")
        slots.append(match)
    rest = [row for row in seen if row not in slots]
    n_grave = count(_OBS_GRAVEYARD, GRAVEYARD_WIN)
    n_discard = count(_OBS_PERSIAN_DISCARD, PERSIAN_DECK_SIZE)
    if n_grave + n_discard != len(rest):
        raise ValueError("graveyard and discard sizes disagree with the seen Persian rows")
    if len(unseen) != count(_OBS_PERSIAN_DECK, PERSIAN_DECK_SIZE):
        raise ValueError("the Persian deck size disagrees with the unseen Persian rows")
    graveyard = rest[:n_grave]
    persian_discard = rest[n_grave:]
    shuffled_unseen = [unseen[i] for i in rng.permutation(len(unseen))]
    persian_order = tuple(rest) + tuple(row for row in slots if row >= 0) + tuple(shuffled_unseen)

    markers = [count(_OBS_MARKER + i, 1) for i in range(LOSS_MARKER)]
    marker = markers.index(1) + 1 if 1 in markers else 1
    won = False
    reason = None
    if terminated:
        if n_grave >= GRAVEYARD_WIN:
            won, reason = True, "graveyard"
        elif marker >= LOSS_MARKER:
            won, reason = False, "marker"
        elif slots[0] < 0 or slots[1] < 0:
            won, reason = True, "refill"
        else:
            won, reason = False, "exhausted"
    state = CoopState(
        spartan_order=spartan_order,
        spartan_pos=spartan_pos,
        persian_order=persian_order,
        persian_pos=n_rows - len(unseen),
        hands=hands,
        spartan_discard=discard,
        slot1=slots[0],
        slot2=slots[1],
        persian_discard=persian_discard,
        graveyard=graveyard,
        marker=marker,
        support=count(_OBS_SUPPORT, NUM_SUPPORT),
        current_player=current,
        phase=phase,
        recipient=recipient,
        offers=count(_OBS_OFFERS, 2),
        terminated=terminated,
        won=won,
        reason=reason,
        turn=0,
    )
    try:
        game.check_invariants(state)
    except InvariantError as err:
        raise ValueError(f"the observation cannot come from this game: {err}") from None
    return state

# ------------------------------------------------------------------ checking


# Observation pieces that hold 0/1 values, at most one 1 (one-hot), and those that hold counts (the stored
# value times the scale is a whole number).
_ONE_HOT_PIECES = ("phase", "seat", "recipient", "marker")
_COUNT_PIECES = ("hands", "support", "spartan_deck", "persian_deck", "graveyard", "persian_discard", "offers",
                 "unseen_spartan", "unseen_persian")


def _check_observation(obs: object) -> np.ndarray:
    """``obs`` as a float32 vector if every entry is one an observation can hold, else ``ValueError``
    naming the first piece that is wrong (the one place ``state_from_observation`` checks its input)."""
    try:
        x = np.asarray(obs, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError) as err:
        raise ValueError(f"observation must be {OBS_SIZE} numbers, got {type(obs).__name__}") from err
    if x.shape != (OBS_SIZE,):
        raise ValueError(f"observation must have {OBS_SIZE} values, got shape {np.shape(obs)}")
    if not np.isfinite(x).all():
        raise ValueError(f"observation entry {int(np.flatnonzero(~np.isfinite(x))[0])} is not finite")
    outside = (x < 0) | (x > 1)
    if outside.any():
        index = int(np.flatnonzero(outside)[0])
        raise ValueError(f"observation entry {index} is {float(x[index])}, outside [0, 1]")
    for name in _ONE_HOT_PIECES:
        part = x[OBS[name].slice]
        if not np.isin(part, (0.0, 1.0)).all() or part.sum() > 1:
            raise ValueError(f"observation piece {name!r} must be one-hot (0/1, at most one 1), got {part}")
    for slot in ("slot1", "slot2"):
        part = x[OBS[slot].slice]
        if not np.isin(part[[0, 3]], (0.0, 1.0)).all() or (part[0] == 0 and part.any()):
            raise ValueError(f"observation piece {slot!r} is not a line card or an empty slot, got {part}")
    for name in _COUNT_PIECES:
        piece = OBS[name]
        scaled = x[piece.slice].astype(np.float64) * piece.scale
        if (np.abs(scaled - np.rint(scaled)) > 1e-3).any():
            raise ValueError(f"observation piece {name!r} must hold counts / {piece.scale:g}, got "
                             f"{x[piece.slice]}")
    return x


# nothing else, so every view in the process shares them, and a new env starts with the masks seen before.
_MAIN_MASKS: dict[int, np.ndarray] = {}
_DISCARD_MASKS: dict[int, np.ndarray] = {}

# CoopView writes some pieces whole, as the bytes of their float32 values: the byte range of each piece in
# the observation buffer, and the bytes of each value a piece takes (the head's are built below).
_BYTES_HEAD = slice(4 * OBS["phase"].offset, 4 * OBS["recipient"].stop)
_BYTES_SLOT1 = slice(4 * OBS["slot1"].offset, 4 * OBS["slot1"].stop)
_BYTES_SLOT2 = slice(4 * OBS["slot2"].offset, 4 * OBS["slot2"].stop)
_BYTES_MARKER = slice(4 * OBS["marker"].offset, 4 * OBS["marker"].stop)
_EMPTY_SLOT = bytes(4 * OBS["slot1"].size)
# the marker piece by marker position 1..7 (no position 0)
_MARKER_PIECES = (None, *(row.tobytes() for row in np.eye(LOSS_MARKER, dtype=np.float32)))

# What CoopView.observe last wrote, by name (the slots of its ``_seen`` list).
(_SEEN_SPARTAN_ORDER, _SEEN_PERSIAN_ORDER, _SEEN_SPARTAN_POS, _SEEN_PERSIAN_POS, _SEEN_HEAD, _SEEN_SLOT1,
 _SEEN_SLOT2, _SEEN_MARKER, _SEEN_COUNTERS) = range(9)


class CoopView:
    """The observations and int8 legal masks of one game followed step by step (what ``Coop-v0`` hands
    out), with the same values as [`CoopGame.observe`][thermopylae_env.coop.rules.CoopGame.observe] and
    [`CoopGame.legal_action_mask`][thermopylae_env.coop.rules.CoopGame.legal_action_mask].

    The observation lives in a persistent buffer: each call compares the state with the one it last wrote
    and rewrites only the pieces that differ (a move changes a few), then returns a copy. A different
    state object, other deck orders, decks that grew back, or any change the engine never makes (a hand
    that did not gain or lose exactly one card, a phase, seat or marker outside the rules) are written
    from scratch, as [`CoopGame.observe`][thermopylae_env.coop.rules.CoopGame.observe] writes them. Single
    entries are written through a ``memoryview`` of the buffer (cheaper than NumPy item assignment, the same
    float32 rounding); the phase, seat and recipient one-hots, each slot and the marker are written whole, as
    one slice of bytes from tables built once. The masks of the MAIN and DISCARD phases depend only on the
    values in one hand (and the support left), so each distinct one is built once (shared by the views of a
    process, read-only).
    """

    __slots__ = ("game", "_buf", "_mv", "_bytes", "_state", "_seen", "_hands", "_main_masks",
                 "_discard_masks", "_offer_mask", "_none_mask", "_undrawn", "_bit", "_slot_pieces")

    def __init__(self, game: ObservedGame) -> None:
        self.game = game
        self._buf = np.zeros(OBS_SIZE, dtype=np.float32)
        self._mv = memoryview(self._buf)
        self._bytes = self._mv.cast("B")
        self._state: CoopState | None = None
        self._seen: list = []
        self._hands: list[list[int]] = []
        self._main_masks = _MAIN_MASKS
        self._discard_masks = _DISCARD_MASKS
        offer = np.zeros(NUM_ACTIONS, dtype=np.int8)
        offer[GIVE_BASE : GIVE_BASE + game.num_players] = 1
        offer[DECLINE] = 1
        self._offer_mask = _read_only(offer)
        self._none_mask = _read_only(np.zeros(NUM_ACTIONS, dtype=np.int8))
        full = np.zeros(NUM_VALUES, dtype=np.float32)
        for value in game.spartan:
            full[value - MIN_VALUE] += 0.5
        # the observation of a game with nothing dealt: both decks whole, every other entry 0
        undrawn = np.zeros(OBS_SIZE, dtype=np.float32)
        undrawn[_OBS_UNSEEN_SPARTAN : _OBS_UNSEEN_SPARTAN + NUM_VALUES] = full
        undrawn[_OBS_UNSEEN_PERSIAN : _OBS_UNSEEN_PERSIAN + len(game.persian)] = 1.0
        self._undrawn = undrawn
        # per Spartan card id, the bit of its value in a hand's value set
        self._bit = tuple(1 << (value - MIN_VALUE) for value in game.spartan)
        # per Persian row, the bytes of the slot piece of a slot holding it
        self._slot_pieces = tuple(
            np.array((1.0, *code), dtype=np.float32).tobytes() for code in game._slot_code
        )

    def __getstate__(self) -> dict:
        # a memoryview cannot be copied or pickled: it is rebuilt over the copied buffer; the shared mask
        # caches stay behind (a copy uses those of its own process)
        skip = ("_mv", "_bytes", "_main_masks", "_discard_masks")
        return {name: getattr(self, name) for name in self.__slots__ if name not in skip}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._mv = memoryview(self._buf)
        self._bytes = self._mv.cast("B")
        self._main_masks = _MAIN_MASKS
        self._discard_masks = _DISCARD_MASKS

    # ------------------------------------------------------------------ masks

    def mask(self, state: CoopState) -> np.ndarray:
        """``game.legal_action_mask(state)`` as int8: a cached read-only array, shared between calls (the
        env hands out copies)."""
        if state.terminated:
            return self._none_mask
        phase = state.phase
        if phase == _DRAW_OFFER:
            return self._offer_mask
        bit = self._bit
        bits = 0
        if phase == _MAIN:
            for card in state.hands[state.current_player]:
                bits |= bit[card]
            key = bits * (NUM_SUPPORT + 1) + state.support
            masks = self._main_masks
        else:
            for card in state.hands[state.recipient]:
                bits |= bit[card]
            key = bits
            masks = self._discard_masks
        mask = masks.get(key)
        if mask is None:
            mask = masks[key] = _read_only(self.game.legal_action_mask(state).astype(np.int8))
        return mask

    # ------------------------------------------------------------------ observations

    def observe(self, state: CoopState) -> np.ndarray:
        """``game.observe(state)``, written incrementally (a new array each call)."""
        seen = self._seen
        if (
            state is not self._state
            or state.spartan_order is not seen[_SEEN_SPARTAN_ORDER]
            or state.persian_order is not seen[_SEEN_PERSIAN_ORDER]
        ):
            return self._observe_from_scratch(state)
        head = (state.terminated, state.phase, state.current_player, state.recipient)
        if head != seen[_SEEN_HEAD]:
            piece = _HEAD_PIECES.get(head)
            if piece is None:  # a seat or phase out of the rules' range: written as game.observe writes it
                return self._observe_from_scratch(state)
            self._bytes[_BYTES_HEAD] = piece
            seen[_SEEN_HEAD] = head
        hands = self._hands
        if state.hands != hands:
            for index, hand in enumerate(state.hands):
                if hand != hands[index] and not self._write_hand(index, hand):
                    return self._observe_from_scratch(state)
        # the slot and marker pieces are written whole, as bytes (one slice copy each)
        slot = state.slot1
        if slot != seen[_SEEN_SLOT1]:
            self._bytes[_BYTES_SLOT1] = self._slot_pieces[slot] if slot >= 0 else _EMPTY_SLOT
            seen[_SEEN_SLOT1] = slot
        slot = state.slot2
        if slot != seen[_SEEN_SLOT2]:
            self._bytes[_BYTES_SLOT2] = self._slot_pieces[slot] if slot >= 0 else _EMPTY_SLOT
            seen[_SEEN_SLOT2] = slot
        marker = state.marker
        if marker != seen[_SEEN_MARKER]:
            if marker < 1:  # no position of the track: written as game.observe writes it
                return self._observe_from_scratch(state)
            self._bytes[_BYTES_MARKER] = _MARKER_PIECES[min(marker, LOSS_MARKER)]
            seen[_SEEN_MARKER] = marker
        if state.spartan_pos != seen[_SEEN_SPARTAN_POS]:
            if state.spartan_pos < seen[_SEEN_SPARTAN_POS]:  # the deck grew back: no incremental update
                return self._observe_from_scratch(state)
            self._draw_spartan(state, seen[_SEEN_SPARTAN_POS])
            seen[_SEEN_SPARTAN_POS] = state.spartan_pos
        if state.persian_pos != seen[_SEEN_PERSIAN_POS]:
            if state.persian_pos < seen[_SEEN_PERSIAN_POS]:
                return self._observe_from_scratch(state)
            self._draw_persian(state, seen[_SEEN_PERSIAN_POS])
            seen[_SEEN_PERSIAN_POS] = state.persian_pos
        # the four counters, which change on few steps, compared as one tuple
        counters = (state.support, state.offers, len(state.graveyard), len(state.persian_discard))
        if counters != seen[_SEEN_COUNTERS]:
            self._write_counters(counters)
            seen[_SEEN_COUNTERS] = counters
        return self._buf.copy()

    def _observe_from_scratch(self, state: CoopState) -> np.ndarray:
        """Write the whole observation of ``state``, entry for entry as
        [`CoopGame.observe`][thermopylae_env.coop.rules.CoopGame.observe] writes it, and follow ``state`` from
        now on."""
        mv = self._mv
        mv[:] = self._undrawn
        head = (state.terminated, state.phase, state.current_player, state.recipient)
        piece = _HEAD_PIECES.get(head)
        if piece is not None:
            self._bytes[_BYTES_HEAD] = piece
        else:
            for index in _head_entries(*head):
                if index >= 0:
                    mv[index] = 1.0
        spartan = self.game.spartan
        for index, hand in enumerate(state.hands):
            base = _OBS_HANDS + NUM_VALUES * index - MIN_VALUE
            for card in hand:
                mv[base + spartan[card]] += 0.5
        if state.slot1 >= 0:
            self._bytes[_BYTES_SLOT1] = self._slot_pieces[state.slot1]
        if state.slot2 >= 0:
            self._bytes[_BYTES_SLOT2] = self._slot_pieces[state.slot2]
        mv[_OBS_MARKER + min(state.marker, LOSS_MARKER) - 1] = 1.0
        counters = (state.support, state.offers, len(state.graveyard), len(state.persian_discard))
        self._write_counters(counters)
        # The decks as whole decks less the cards already drawn (few, early in a game).
        self._draw_spartan(state, 0)
        self._draw_persian(state, 0)
        self._state = state
        self._hands = list(map(list, state.hands))
        self._seen = [  # in the order of the _SEEN_ slots
            state.spartan_order,
            state.persian_order,
            state.spartan_pos,
            state.persian_pos,
            head,
            state.slot1,
            state.slot2,
            state.marker,
            counters,
        ]
        return self._buf.copy()

    def _write_hand(self, seat: int, hand: list[int]) -> bool:
        """Move the entry of the one card by which ``hand`` differs from the hand of seat ``seat`` last
        written, if ``hand`` is that hand with a card appended or with one card taken out (the engine's
        two moves); return ``False``, writing nothing, for any other change (the caller then writes
        the whole observation)."""
        old = self._hands[seat]
        n = len(old)
        if len(hand) == n + 1 and hand[:n] == old:  # a card drawn
            card = hand[n]
            old.append(card)
            delta = 0.5
        elif len(hand) == n - 1:  # a card played or discarded: the card the sums differ by, if any
            card = sum(old) - sum(hand)
            if card not in old:
                return False
            old.remove(card)
            if old != hand:
                return False
            delta = -0.5
        else:
            return False
        self._mv[_OBS_HANDS + NUM_VALUES * seat - MIN_VALUE + self.game.spartan[card]] += delta
        return True

    def _write_counters(self, counters: tuple[int, int, int, int]) -> None:
        """The support, offers, graveyard and Persian discard entries."""
        support, offers, graveyard, discard = counters
        mv = self._mv
        mv[_OBS_SUPPORT] = support / NUM_SUPPORT
        mv[_OBS_OFFERS] = offers / 2
        mv[_OBS_GRAVEYARD] = graveyard / GRAVEYARD_WIN
        mv[_OBS_PERSIAN_DISCARD] = discard / PERSIAN_DECK_SIZE

    def _draw_spartan(self, state: CoopState, old: int) -> None:
        """Take the Spartan cards drawn since position ``old`` off the unseen counts."""
        mv = self._mv
        base = _OBS_UNSEEN_SPARTAN - MIN_VALUE
        spartan = self.game.spartan
        order = state.spartan_order
        for index in range(old, state.spartan_pos):
            mv[base + spartan[order[index]]] -= 0.5
        mv[_OBS_SPARTAN_DECK] = (SPARTAN_DECK_SIZE - state.spartan_pos) / SPARTAN_DECK_SIZE

    def _draw_persian(self, state: CoopState, old: int) -> None:
        """Take the Persian rows drawn since position ``old`` off the unseen rows."""
        mv = self._mv
        order = state.persian_order
        for index in range(old, state.persian_pos):
            mv[_OBS_UNSEEN_PERSIAN + order[index]] = 0.0
        mv[_OBS_PERSIAN_DECK] = (len(order) - state.persian_pos) / PERSIAN_DECK_SIZE


def _head_pieces() -> dict[tuple[bool, int, int, int], bytes]:
    """The bytes of the phase, seat and recipient one-hots by (terminated, phase, current_player,
    recipient), for every state the rules can reach (a recipient only in DISCARD)."""
    pieces = {}
    for terminated in (False, True):
        for phase in (_MAIN, _DRAW_OFFER, _DISCARD):
            for seat in range(MAX_PLAYERS):
                for recipient in range(-1, MAX_PLAYERS):
                    if recipient == -1 and phase == _DISCARD and not terminated:
                        continue
                    piece = np.zeros(OBS["recipient"].stop - _OBS_PHASE, dtype=np.float32)
                    for index in _head_entries(terminated, phase, seat, recipient):
                        if index >= 0:
                            piece[index - _OBS_PHASE] = 1.0
                    pieces[(terminated, phase, seat, recipient)] = piece.tobytes()
    return pieces


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _head_entries(terminated: bool, phase: int, seat: int, recipient: int) -> tuple[int, int, int]:
    """The entries of the phase, seat and recipient one-hots that hold the 1 in the observation of a state
    with these fields (-1: that piece is all zero: no phase once the game is over, no recipient outside
    DISCARD)."""
    if terminated:
        return -1, _OBS_SEAT + seat, -1
    if phase == _DISCARD:
        return _OBS_PHASE + _DISCARD, _OBS_SEAT + seat, _OBS_RECIPIENT + recipient
    return _OBS_PHASE + phase, _OBS_SEAT + seat, -1


_HEAD_PIECES = _head_pieces()
