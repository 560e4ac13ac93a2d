"""Rules engine of the co-operative game *Thermopyles* (Game A of the rules contract), Gymnasium-free.

The engine follows the Pgx / OpenSpiel split: a frozen :class:`CoopGame` holds the static information
(player count, card tables, action layout) and a small mutable :class:`CoopState` holds everything that
changes. ``game.step(state, action, rng)`` mutates the state in place; ``state.copy()`` is cheap, for
search. The action and observation layouts are fixed by ``docs/coop_spec.md``, defined once in
:mod:`thermopylae_env.coop_layout` (re-exported here) and summarised below. The fight resolution is
:meth:`CoopGame._fight`; the compiled twin of these rules is :mod:`thermopylae_env._coop_kernel`.

Actions (one flat space of :data:`NUM_ACTIONS` = 72 shared by every decision point)::

    0                         RETREAT                    phase MAIN
    1 + (v-10)*5 + s          fight(v, s): card v (10..20) with s (0..4) support cards   phase MAIN
    56 + p                    give(p): draw the offered Spartan card into seat p's hand   phase DRAW_OFFER
    60                        DECLINE the offered draw                                   phase DRAW_OFFER
    61 + (v-10)               discard(v) from the recipient's 6-card hand                phase DISCARD

Every choice of the rules is a decision of the team, made through these actions: the fight (card and
support together, before any die is rolled), the retreat, the recipient of each offered draw (or
declining it), and the discard after a draw into a full hand.

Observation (:data:`OBS_SIZE` = 115 float32 values in [0, 1])::

    0:3     pending decision one-hot MAIN, DRAW_OFFER, DISCARD (all 0 once the game is over)
    3:7     acting seat one-hot          7:11   recipient seat one-hot (DISCARD phase only)
    11:55   hands: 11 + 11*p + (v-10) = count / 2
    55:59   slot 1: present, white/30, red/30, bonus      59:63  slot 2: same
    63:70   marker one-hot 1..7           70  support left / 4       71  Spartan deck size / 20
    72      Persian deck size / 28        73  graveyard size / 12    74  Persian discard size / 28
    75      draw offers pending after the current one / 2
    76:87   Spartan cards still in the deck per value 10..20, count / 2
    87:115  Persian deck table row i still in the Persian deck: 1/0

Order of a turn, exactly as the contract says. A retreat moves the marker one step (reaching 7 loses at
once), then offers one draw. A fight spends the support cards, rolls ``s`` dice plus one when the marker
is on 3 or 6, and resolves slot 1, then slot 2 only if slot 1 was beaten: ``S < W`` the card stays and
the fight stops, ``W <= S < R`` it goes to the Persian discard pile, ``S >= R`` to the graveyard, and the
12th graveyard card wins at once (slot 2 is then not fought). The Spartan card played is discarded. The
beaten cards leave the line and a survivor of slot 2 moves to slot 1. If the Persian deck then holds fewer
cards than the line needs, the Spartans win. Otherwise one draw offer is made per beaten bonus card, and
only then is the line refilled. No offer is made while the Spartan deck is empty. After the whole action
(offers included) the game is lost if every hand and the Spartan deck are empty; otherwise the turn
passes to the next seat.

Choices made where the contract and the original texts are silent (also listed in
``seeds/rules_coop.md``):

* Dealing: with 2 to 4 players seat 0 takes the top 3 Spartan cards, seat 1 the next 3, and so on; seat 0
  acts first. The first Persian card drawn goes to slot 1, the second to slot 2.
* Refill: the line is refilled from the top of the Persian deck, slot 1 first when both slots are empty.
* The draw offers of a fight come before the refill, so the team picks recipients without seeing the new
  Persian cards (the contract's order). If the Spartan deck runs out during the offers, the remaining
  offers lapse.
* A draw may be given to any seat, the acting one or another, including a seat with an empty hand or a
  full one (the recipient then discards one of its 6 cards, possibly the card just drawn). Declining is
  always allowed.
* The location die is automatic: rolling it can only raise the total, so it is not a decision.
* A retreat from 6 to 7 loses at once; no draw is offered.
* The win conditions are checked during the fight and end the game before the loss check at the end of
  the action, so a fight that wins with the team's last card is a win.
* At the 12th graveyard card the game stops where it stands: the line is not shifted or refilled.
  After a failed refill the surviving card (if any) sits in slot 1 and the empty slots stay empty.
* Hands are open to the whole team (it plays as one mind); the Persian discard pile and the graveyard are
  open, the deck orders are hidden.
* Once the game is over no further turn is taken: ``current_player`` stays at the seat that acted last.
* ``turn`` counts completed actions, the last (game-ending) one included.
* During DRAW_OFFER and DISCARD the acting seat stays the one whose action caused them; the seat that must
  discard is the separate ``recipient``.
* Observation values above 30 (a custom deck with such a card) are clipped to 1.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from thermopylae_env.actions import IllegalActionError
from thermopylae_env.cards import (
    SPARTAN_VALUES,
    PersianCard,
    PersianRows,
    load_persian_deck,
    load_spartan_deck,
)
from thermopylae_env.coop_layout import (
    DECLINE,
    DISCARD_BASE,
    FIGHT_BASE,
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
    PERSIAN_DECK_SIZE,
    RETREAT,
    SPARTAN_DECK_SIZE,
    VALUE_SCALE,
)
from thermopylae_env.errors import InvariantError

__all__ = [
    "NUM_ACTIONS",
    "OBS_SIZE",
    "RETREAT",
    "DECLINE",
    "FIGHT_BASE",
    "GIVE_BASE",
    "DISCARD_BASE",
    "MAX_PLAYERS",
    "HAND_LIMIT",
    "NUM_SUPPORT",
    "LOSS_MARKER",
    "GRAVEYARD_WIN",
    "MAX_DICE",
    "SPARTAN_DECK_SIZE",
    "Phase",
    "CoopGame",
    "CoopState",
    "CoopView",
    "fight_action",
    "give_action",
    "discard_action",
    "decode_action",
    "encode_action",
    "roll_dice",
]

HAND_LIMIT = 5
LOCATION_DIE_MARKERS = (3, 6)
MAX_DICE = NUM_SUPPORT + 1

# Observation offsets, from the layout (thermopylae_env.coop_layout).
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
_VALUE_SCALE = VALUE_SCALE


class Phase(enum.IntEnum):
    """The decision pending in a state."""

    MAIN = 0  # the acting seat retreats or fights
    DRAW_OFFER = 1  # the team gives the offered Spartan card to a seat, or declines it
    DISCARD = 2  # the recipient of a draw into a full hand discards one of its 6 cards


_MAIN = 0
_DRAW_OFFER = 1
_DISCARD = 2

# Why the game ended: wins "graveyard" / "refill", losses "marker" / "exhausted".
END_REASONS = ("graveyard", "refill", "marker", "exhausted")


def fight_action(value: int, support: int) -> int:
    """The action index of fighting with a Spartan card of ``value`` and ``support`` support cards."""
    if value not in SPARTAN_VALUES:
        raise ValueError(f"a Spartan card value is 10..20, got {value!r}")
    if not 0 <= support <= NUM_SUPPORT:
        raise ValueError(f"support must be 0..{NUM_SUPPORT}, got {support!r}")
    return FIGHT_BASE + (value - MIN_VALUE) * (NUM_SUPPORT + 1) + support


def give_action(seat: int) -> int:
    """The action index of giving the offered draw to ``seat``."""
    if not 0 <= seat < MAX_PLAYERS:
        raise ValueError(f"seat must be 0..{MAX_PLAYERS - 1}, got {seat!r}")
    return GIVE_BASE + seat


def discard_action(value: int) -> int:
    """The action index of discarding a card of ``value`` from the recipient's hand."""
    if value not in SPARTAN_VALUES:
        raise ValueError(f"a Spartan card value is 10..20, got {value!r}")
    return DISCARD_BASE + value - MIN_VALUE


def decode_action(action: int) -> str:
    """A readable name of an action index, e.g. ``"fight 17 +2 support"`` (inverse of encode_action)."""
    a = int(action)
    if a == RETREAT:
        return "retreat"
    if FIGHT_BASE <= a < GIVE_BASE:
        value, support = divmod(a - FIGHT_BASE, NUM_SUPPORT + 1)
        return f"fight {value + MIN_VALUE} +{support} support"
    if GIVE_BASE <= a < DECLINE:
        return f"give draw to seat {a - GIVE_BASE}"
    if a == DECLINE:
        return "decline draw"
    if DISCARD_BASE <= a < NUM_ACTIONS:
        return f"discard {a - DISCARD_BASE + MIN_VALUE}"
    raise ValueError(f"action {action!r} is outside 0..{NUM_ACTIONS - 1}")


_FIGHT_RE = re.compile(r"fight (\d+)(?: \+(\d+) support)?")
_GIVE_RE = re.compile(r"give draw to seat (\d+)")
_DISCARD_RE = re.compile(r"discard (\d+)")


def encode_action(name: str) -> int:
    """The action index of a name written as :func:`decode_action` writes it.

    Case and repeated spaces are ignored; ``"fight 17"`` means ``"fight 17 +0 support"``.
    """
    text = " ".join(str(name).lower().split())
    if text == "retreat":
        return RETREAT
    if text == "decline draw":
        return DECLINE
    match = _FIGHT_RE.fullmatch(text)
    if match:
        return fight_action(int(match.group(1)), int(match.group(2) or 0))
    match = _GIVE_RE.fullmatch(text)
    if match:
        return give_action(int(match.group(1)))
    match = _DISCARD_RE.fullmatch(text)
    if match:
        return discard_action(int(match.group(1)))
    raise ValueError(
        f"unknown action name {name!r}; expected 'retreat', 'fight V +S support', "
        "'give draw to seat P', 'decline draw' or 'discard V'"
    )


def roll_dice(rng: np.random.Generator, n: int) -> list[int]:
    """Roll ``n`` six-sided dice, as a list of Python ints: the only place the engine rolls dice (tests
    replace it).

    The dice are ``rng.integers(1, 7, size=n)``. For a real ``numpy.random.Generator`` each die is made
    as that call makes it, one die after the other (NumPy fills an array by the same per-value draw), from
    the generator's own 32-bit draw reached through its ``ctypes`` interface, under the generator's lock:
    the very same values and the same generator state afterwards (tested), without the Python-level
    cost of ``integers``. Any other chance source (a test's scripted dice) is asked for the array.
    """
    if type(rng) is _GENERATOR:
        bit_generator = rng.bit_generator
        c_interface = bit_generator.ctypes
        draw, where = c_interface.next_uint32, c_interface.state
        with bit_generator.lock:
            return [_die(draw, where) for _ in range(n)]
    return [int(d) for d in rng.integers(1, 7, size=n)]


def _die(draw: Callable[[object], int], where: object) -> int:
    """One die from ``draw(where)`` (32 random bits per call: the bit generator's ``next_uint32`` and
    its state's address) as ``Generator.integers(1, 7)`` makes it:
    Lemire's multiply-and-shift, with NumPy's rejection of the low products below
    ``(2**32 - 6) % 6 == 4`` that would bias the result."""
    m = draw(where) * 6
    while (m & 0xFFFFFFFF) < 4:
        m = draw(where) * 6
    return (m >> 32) + 1


_GENERATOR = np.random.Generator


@dataclass(eq=False, slots=True)
class CoopState:
    """Everything that changes during a game. Cards are ids: Spartan card ``i`` has value
    ``game.spartan[i]``; Persian card ``j`` is row ``j`` of ``game.persian``.

    Each card is in exactly one place: a Spartan card in the deck (``spartan_order[spartan_pos:]``, top
    first), a hand, or the Spartan discard pile; a Persian card in the deck (``persian_order[persian_pos:]``),
    slot 1, slot 2, the Persian discard pile or the graveyard. The order tuples are never mutated, so
    copies share them.
    """

    spartan_order: tuple[int, ...]
    spartan_pos: int
    persian_order: tuple[int, ...]
    persian_pos: int
    hands: list[list[int]]
    spartan_discard: list[int]
    slot1: int  # Persian card id, -1 when empty
    slot2: int
    persian_discard: list[int]
    graveyard: list[int]
    marker: int = 1
    support: int = NUM_SUPPORT
    current_player: int = 0
    phase: int = _MAIN
    recipient: int = -1  # seat that must discard (DISCARD phase), else -1
    offers: int = 0  # draw offers still pending after the current one
    terminated: bool = False
    won: bool = False
    reason: str | None = None  # one of END_REASONS once the game is over
    turn: int = 0  # completed actions

    def copy(self) -> CoopState:
        """An independent copy (the deck-order tuples are immutable and shared)."""
        return CoopState(
            self.spartan_order,
            self.spartan_pos,
            self.persian_order,
            self.persian_pos,
            [hand[:] for hand in self.hands],
            self.spartan_discard[:],
            self.slot1,
            self.slot2,
            self.persian_discard[:],
            self.graveyard[:],
            self.marker,
            self.support,
            self.current_player,
            self.phase,
            self.recipient,
            self.offers,
            self.terminated,
            self.won,
            self.reason,
            self.turn,
        )

    @property
    def spartan_deck(self) -> tuple[int, ...]:
        """The Spartan card ids still in the deck, top first."""
        return self.spartan_order[self.spartan_pos :]

    @property
    def persian_deck(self) -> tuple[int, ...]:
        """The Persian card ids still in the deck, top first."""
        return self.persian_order[self.persian_pos :]

    @property
    def spartan_deck_size(self) -> int:
        return len(self.spartan_order) - self.spartan_pos

    @property
    def persian_deck_size(self) -> int:
        return len(self.persian_order) - self.persian_pos

    def key(self) -> tuple:
        """A hashable summary of the whole state (equal keys: equal states), for tests and search."""
        return (
            self.spartan_order[self.spartan_pos :],
            self.persian_order[self.persian_pos :],
            tuple(tuple(sorted(hand)) for hand in self.hands),
            tuple(sorted(self.spartan_discard)),
            self.slot1,
            self.slot2,
            tuple(sorted(self.persian_discard)),
            tuple(sorted(self.graveyard)),
            self.marker,
            self.support,
            self.current_player,
            self.phase,
            self.recipient,
            self.offers,
            self.terminated,
            self.won,
            self.reason,
            self.turn,
        )


class CoopGame:
    """Static information of the co-op game and its rules as functions of a :class:`CoopState`.

    ``num_players`` is 1 to 4 (solo by default); ``persian_deck`` is a CSV path, rows accepted by
    :func:`thermopylae_env.cards.load_persian_deck`, or ``None`` for the default (reconstructed) deck.
    """

    __slots__ = (
        "num_players",
        "persian",
        "spartan",
        "_white",
        "_red",
        "_bonus",
        "_slot_code",
        "_ids_by_value",
        "_frozen",
    )

    def __init__(
        self,
        num_players: int = 1,
        persian_deck: str | os.PathLike[str] | PersianRows | None = None,
    ) -> None:
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)):
            raise TypeError(f"num_players must be an integer, got {num_players!r}")
        if not 1 <= int(num_players) <= MAX_PLAYERS:
            raise ValueError(f"num_players must be 1..{MAX_PLAYERS}, got {num_players}")
        self.num_players: int = int(num_players)
        self.persian: tuple[PersianCard, ...] = load_persian_deck(persian_deck)
        self.spartan: tuple[int, ...] = load_spartan_deck()
        if len(self.spartan) != SPARTAN_DECK_SIZE:
            raise ValueError(f"the Spartan deck must hold {SPARTAN_DECK_SIZE} cards, got {len(self.spartan)}")
        self._white = tuple(card.white for card in self.persian)
        self._red = tuple(card.red for card in self.persian)
        self._bonus = tuple(card.bonus for card in self.persian)
        # What a slot holding row j writes into the observation (float32-exact, for the inverse map).
        self._slot_code = tuple(
            (
                float(np.float32(min(1.0, card.white / _VALUE_SCALE))),
                float(np.float32(min(1.0, card.red / _VALUE_SCALE))),
                1.0 if card.bonus else 0.0,
            )
            for card in self.persian
        )
        ids: list[list[int]] = [[] for _ in range(NUM_VALUES)]
        for card_id, value in enumerate(self.spartan):
            ids[value - MIN_VALUE].append(card_id)
        self._ids_by_value = tuple(tuple(group) for group in ids)
        self._frozen = True

    def __setattr__(self, name: str, value: object) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"CoopGame is frozen: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"CoopGame(num_players={self.num_players})"

    def __reduce__(self) -> tuple:
        # Rebuild through __init__ (the instance is frozen, so slot-by-slot unpickling cannot set it).
        return (CoopGame, (self.num_players, self.persian))

    # ------------------------------------------------------------------ setup

    @property
    def hand_size_at_start(self) -> int:
        return 4 if self.num_players == 1 else 3

    def init(self, rng: np.random.Generator) -> CoopState:
        """A new game with both decks shuffled by ``rng.permutation`` (the Spartan deck first)."""
        if type(rng) is _GENERATOR:
            # A real generator shuffles a list with the very same draws as ``permutation`` shuffles its
            # array (the same swaps, top down), without building arrays; its orders need no checking.
            spartan_order = list(range(SPARTAN_DECK_SIZE))
            rng.shuffle(spartan_order)
            persian_order = list(range(len(self.persian)))
            rng.shuffle(persian_order)
            return self._deal(tuple(spartan_order), tuple(persian_order))
        return self.new_state(rng.permutation(SPARTAN_DECK_SIZE), rng.permutation(len(self.persian)))

    def new_state(self, spartan_order: Sequence[int], persian_order: Sequence[int]) -> CoopState:
        """A new game from given deck orders (explicit chance, for tests and replays).

        ``spartan_order`` is a permutation of the Spartan card ids ``0..19`` (card ``i`` has value
        ``self.spartan[i]``, ascending), ``persian_order`` a permutation of the Persian rows ``0..27``;
        the first element of each is the top of the deck. Hands are dealt from the top (solo: 4 cards;
        otherwise 3 to seat 0, the next 3 to seat 1, ...), then the first Persian card goes to slot 1
        and the second to slot 2.
        """
        spartan = _check_permutation(spartan_order, SPARTAN_DECK_SIZE, "spartan_order")
        persian = _check_permutation(persian_order, len(self.persian), "persian_order")
        return self._deal(spartan, persian)

    def _deal(self, spartan: tuple[int, ...], persian: tuple[int, ...]) -> CoopState:
        """The new game of two checked deck orders (tuples of Python ints)."""
        per_seat = self.hand_size_at_start
        hands = [list(spartan[seat * per_seat : (seat + 1) * per_seat]) for seat in range(self.num_players)]
        spartan_pos = per_seat * self.num_players
        return CoopState(spartan, spartan_pos, persian, 2, hands, [], persian[0], persian[1], [], [])

    def spartan_order_from_values(self, values: Sequence[int]) -> tuple[int, ...]:
        """A Spartan deck order whose top cards have the given ``values`` (the rest follow, ascending)."""
        taken: list[int] = []
        used: set[int] = set()
        for value in values:
            if value not in SPARTAN_VALUES:
                raise ValueError(f"a Spartan card value is 10..20, got {value!r}")
            free = [i for i in self._ids_by_value[value - MIN_VALUE] if i not in used]
            if not free:
                raise ValueError(f"the Spartan deck holds only {len(self._ids_by_value[value - MIN_VALUE])} "
                                 f"card(s) of value {value}")
            taken.append(free[0])
            used.add(free[0])
        return tuple(taken) + tuple(i for i in range(SPARTAN_DECK_SIZE) if i not in used)

    # ------------------------------------------------------------------ rules

    def legal_action_mask(self, state: CoopState) -> np.ndarray:
        """Boolean mask over the 72 actions (all false once the game is over)."""
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        if state.terminated:
            return mask
        phase = state.phase
        if phase == _MAIN:
            mask[RETREAT] = True
            spartan = self.spartan
            width = state.support + 1
            for card in state.hands[state.current_player]:
                base = FIGHT_BASE + (spartan[card] - MIN_VALUE) * (NUM_SUPPORT + 1)
                mask[base : base + width] = True
        elif phase == _DRAW_OFFER:
            mask[GIVE_BASE : GIVE_BASE + self.num_players] = True
            mask[DECLINE] = True
        else:
            spartan = self.spartan
            for card in state.hands[state.recipient]:
                mask[DISCARD_BASE + spartan[card] - MIN_VALUE] = True
        return mask

    def is_legal(self, state: CoopState, action: int) -> bool:
        """Whether ``action`` is legal in ``state``."""
        return self.illegal_reason(state, action) is None

    def illegal_reason(self, state: CoopState, action: int) -> str | None:
        """``None`` if ``action`` is legal in ``state``, else a sentence saying why not."""
        if state.terminated:
            return "the game is over"
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            return f"action must be an integer, got {action!r}"
        a = int(action)
        if not 0 <= a < NUM_ACTIONS:
            return f"action {a} is outside 0..{NUM_ACTIONS - 1}"
        phase = state.phase
        if phase == _MAIN:
            if a == RETREAT:
                return None
            if a >= GIVE_BASE:
                return f"{decode_action(a)}: no draw is offered (the acting seat must retreat or fight)"
            value, support = divmod(a - FIGHT_BASE, NUM_SUPPORT + 1)
            value += MIN_VALUE
            seat = state.current_player
            if not self._holds(state.hands[seat], value):
                return f"{decode_action(a)}: seat {seat} holds no card of value {value}"
            if support > state.support:
                return f"{decode_action(a)}: only {state.support} support card(s) left"
            return None
        if phase == _DRAW_OFFER:
            if GIVE_BASE <= a < GIVE_BASE + self.num_players or a == DECLINE:
                return None
            if GIVE_BASE <= a < DECLINE:
                return f"{decode_action(a)}: there are only {self.num_players} seat(s)"
            return f"{decode_action(a)}: a draw is offered (give it to a seat or decline it)"
        if a >= DISCARD_BASE:
            value = a - DISCARD_BASE + MIN_VALUE
            if self._holds(state.hands[state.recipient], value):
                return None
            return f"{decode_action(a)}: seat {state.recipient} holds no card of value {value}"
        return f"{decode_action(a)}: seat {state.recipient} must discard down to {HAND_LIMIT} cards"

    def _holds(self, hand: list[int], value: int) -> bool:
        spartan = self.spartan
        for card in hand:  # noqa: SIM110 (a plain loop: this runs on every step and beats any())
            if spartan[card] == value:
                return True
        return False

    def _take(self, hand: list[int], value: int) -> int:
        """Remove and return a card of ``value`` from ``hand`` (the last one of that value)."""
        spartan = self.spartan
        for index in range(len(hand) - 1, -1, -1):
            if spartan[hand[index]] == value:
                return hand.pop(index)
        raise AssertionError("card not in hand")  # unreachable: legality was checked

    def step(
        self,
        state: CoopState,
        action: int,
        rng: np.random.Generator,
        events: list | None = None,
    ) -> None:
        """Apply ``action`` (mutates ``state``). An illegal action raises
        :class:`~thermopylae_env.actions.IllegalActionError` and leaves ``state`` as it was.
        ``rng`` is used only for the dice; ``events``, when a list, receives what happened as dicts."""
        reason = self.illegal_reason(state, action)
        if reason is not None:
            raise IllegalActionError(reason)
        self.apply(state, int(action), rng, events)

    def apply(self, state: CoopState, a: int, rng: np.random.Generator, events: list | None = None) -> None:
        """:meth:`step` for an action ``a`` (a Python int) already known to be legal, unchecked: the
        environments check each action once (:meth:`illegal_reason`) and then apply it here."""
        phase = state.phase
        if phase == _MAIN:
            if a == RETREAT:
                self._retreat(state, events)
            else:
                value, support = divmod(a - FIGHT_BASE, NUM_SUPPORT + 1)
                self._fight(state, value + MIN_VALUE, support, rng, events)
        elif phase == _DRAW_OFFER:
            if a == DECLINE:
                if events is not None:
                    events.append({"type": "decline"})
                self._next_offer(state, events)
            else:
                self._give(state, a - GIVE_BASE, events)
        else:
            seat = state.recipient
            card = self._take(state.hands[seat], a - DISCARD_BASE + MIN_VALUE)
            state.spartan_discard.append(card)
            if events is not None:
                events.append({"type": "discard", "seat": seat, "card": self.spartan[card]})
            state.recipient = -1
            self._next_offer(state, events)

    def _retreat(self, state: CoopState, events: list | None) -> None:
        state.marker += 1
        if events is not None:
            events.append({"type": "retreat", "seat": state.current_player, "marker": state.marker})
        if state.marker >= LOSS_MARKER:
            self._end(state, False, "marker", events)
            return
        self._start_offers(state, 1, events)

    def _fight(self, state: CoopState, value: int, support: int, rng, events: list | None) -> None:
        seat = state.current_player
        card = self._take(state.hands[seat], value)
        state.spartan_discard.append(card)
        state.support -= support
        n_dice = support + (1 if state.marker in LOCATION_DIE_MARKERS else 0)
        if n_dice:
            dice = roll_dice(rng, n_dice)
            total = value + sum(dice)
        else:
            dice = []
            total = value
        results = [] if events is not None else None
        if events is not None:
            events.append({"type": "fight", "seat": seat, "card": value, "support": support,
                           "location_die": n_dice > support, "dice": dice, "total": total,
                           "results": results})
        beaten = 0
        bonus_beaten = 0
        for slot in (1, 2):
            persian = state.slot1 if slot == 1 else state.slot2
            white = self._white[persian]
            red = self._red[persian]
            if total < white:
                if results is not None:
                    results.append({"slot": slot, "white": white, "red": red,
                                    "bonus": self._bonus[persian], "outcome": "stays"})
                break
            beaten += 1
            if self._bonus[persian]:
                bonus_beaten += 1
            if slot == 1:
                state.slot1 = -1
            else:
                state.slot2 = -1
            if total >= red:
                state.graveyard.append(persian)
                outcome = "graveyard"
            else:
                state.persian_discard.append(persian)
                outcome = "discard"
            if results is not None:
                results.append({"slot": slot, "white": white, "red": red,
                                "bonus": self._bonus[persian], "outcome": outcome})
            if outcome == "graveyard" and len(state.graveyard) >= GRAVEYARD_WIN:
                self._end(state, True, "graveyard", events)
                return
        if beaten == 0:
            self._complete(state, events)
            return
        if beaten == 1:  # the survivor of slot 2 moves up
            state.slot1 = state.slot2
            state.slot2 = -1
        if state.persian_deck_size < beaten:
            self._end(state, True, "refill", events)
            return
        self._start_offers(state, bonus_beaten, events)

    def _start_offers(self, state: CoopState, count: int, events: list | None) -> None:
        if count and state.spartan_pos < SPARTAN_DECK_SIZE:
            state.phase = _DRAW_OFFER
            state.offers = count - 1
            if events is not None:
                events.append({"type": "offer", "pending": count - 1})
        else:
            self._complete(state, events)

    def _give(self, state: CoopState, seat: int, events: list | None) -> None:
        card = state.spartan_order[state.spartan_pos]
        state.spartan_pos += 1
        hand = state.hands[seat]
        hand.append(card)
        if events is not None:
            events.append({"type": "draw", "seat": seat, "card": self.spartan[card]})
        if state.spartan_pos >= SPARTAN_DECK_SIZE:
            state.offers = 0  # nothing left to offer
        if len(hand) > HAND_LIMIT:
            state.phase = _DISCARD
            state.recipient = seat
        else:
            self._next_offer(state, events)

    def _next_offer(self, state: CoopState, events: list | None) -> None:
        if state.offers and state.spartan_pos < SPARTAN_DECK_SIZE:
            state.offers -= 1
            state.phase = _DRAW_OFFER
            if events is not None:
                events.append({"type": "offer", "pending": state.offers})
        else:
            state.offers = 0
            self._complete(state, events)

    def _complete(self, state: CoopState, events: list | None) -> None:
        """End of an action: refill the line, check the loss by exhaustion, pass the turn."""
        state.phase = _MAIN
        if state.slot1 < 0:
            state.slot1 = state.persian_order[state.persian_pos]
            state.persian_pos += 1
            if events is not None:
                self._refill_event(events, 1, state.slot1)
        if state.slot2 < 0:
            state.slot2 = state.persian_order[state.persian_pos]
            state.persian_pos += 1
            if events is not None:
                self._refill_event(events, 2, state.slot2)
        if state.spartan_pos >= SPARTAN_DECK_SIZE and not any(state.hands):
            self._end(state, False, "exhausted", events)
            return
        state.turn += 1
        state.current_player = (state.current_player + 1) % self.num_players

    def _refill_event(self, events: list, slot: int, persian: int) -> None:
        events.append({"type": "refill", "slot": slot, "white": self._white[persian],
                       "red": self._red[persian], "bonus": self._bonus[persian]})

    def _end(self, state: CoopState, won: bool, reason: str, events: list | None) -> None:
        state.terminated = True
        state.won = won
        state.reason = reason
        state.phase = _MAIN
        state.offers = 0
        state.recipient = -1
        state.turn += 1
        if events is not None:
            events.append({"type": "end", "won": won, "reason": reason})

    def returns(self, state: CoopState) -> float:
        """+1 for a win, -1 for a loss, 0 while the game goes on."""
        if not state.terminated:
            return 0.0
        return 1.0 if state.won else -1.0

    # ------------------------------------------------------------------ observation

    def observe(self, state: CoopState, out: np.ndarray | None = None) -> np.ndarray:
        """The team's view as a float32 vector of :data:`OBS_SIZE` values in [0, 1]; writes into
        ``out`` (float32, shape (115,)) when given and returns it."""
        buf = [0.0] * OBS_SIZE
        if not state.terminated:
            buf[_OBS_PHASE + state.phase] = 1.0
            if state.phase == _DISCARD:
                buf[_OBS_RECIPIENT + state.recipient] = 1.0
        buf[_OBS_SEAT + state.current_player] = 1.0
        spartan = self.spartan
        for seat, hand in enumerate(state.hands):
            base = _OBS_HANDS + NUM_VALUES * seat - MIN_VALUE
            for card in hand:
                buf[base + spartan[card]] += 0.5
        if state.slot1 >= 0:
            code = self._slot_code[state.slot1]
            buf[_OBS_SLOT1] = 1.0
            buf[_OBS_SLOT1 + 1] = code[0]
            buf[_OBS_SLOT1 + 2] = code[1]
            buf[_OBS_SLOT1 + 3] = code[2]
        if state.slot2 >= 0:
            code = self._slot_code[state.slot2]
            buf[_OBS_SLOT2] = 1.0
            buf[_OBS_SLOT2 + 1] = code[0]
            buf[_OBS_SLOT2 + 2] = code[1]
            buf[_OBS_SLOT2 + 3] = code[2]
        buf[_OBS_MARKER + min(state.marker, LOSS_MARKER) - 1] = 1.0
        buf[_OBS_SUPPORT] = state.support / NUM_SUPPORT
        buf[_OBS_SPARTAN_DECK] = (SPARTAN_DECK_SIZE - state.spartan_pos) / SPARTAN_DECK_SIZE
        buf[_OBS_PERSIAN_DECK] = (len(state.persian_order) - state.persian_pos) / PERSIAN_DECK_SIZE
        buf[_OBS_GRAVEYARD] = len(state.graveyard) / GRAVEYARD_WIN
        buf[_OBS_PERSIAN_DISCARD] = len(state.persian_discard) / PERSIAN_DECK_SIZE
        buf[_OBS_OFFERS] = state.offers / 2
        base = _OBS_UNSEEN_SPARTAN - MIN_VALUE
        order = state.spartan_order
        for index in range(state.spartan_pos, SPARTAN_DECK_SIZE):
            buf[base + spartan[order[index]]] += 0.5
        order = state.persian_order
        for index in range(state.persian_pos, len(order)):
            buf[_OBS_UNSEEN_PERSIAN + order[index]] = 1.0
        if out is None:
            return np.array(buf, dtype=np.float32)
        out[:] = buf
        return out

    def state_from_observation(self, obs: np.ndarray, rng: np.random.Generator) -> CoopState:
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
        if current >= self.num_players or recipient >= self.num_players:
            raise ValueError(f"the observation names a seat beyond the {self.num_players} of this game")

        # Spartan cards: hands, then the deck (unseen counts), the rest in the discard pile.
        free = [list(group) for group in self._ids_by_value]
        hands: list[list[int]] = []
        for seat in range(self.num_players):
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
        n_rows = len(self.persian)
        unseen = [row for row in range(n_rows) if count(_OBS_UNSEEN_PERSIAN + row, 1)]
        unseen_set = set(unseen)
        seen = [row for row in range(n_rows) if row not in unseen_set]
        slots = []
        for base in (_OBS_SLOT1, _OBS_SLOT2):
            if not count(base, 1):
                slots.append(-1)
                continue
            code = (float(x[base + 1]), float(x[base + 2]), float(x[base + 3]))
            match = next((row for row in seen if row not in slots and self._slot_code[row] == code), None)
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
            self.check_invariants(state)
        except InvariantError as err:
            raise ValueError(f"the observation cannot come from this game: {err}") from None
        return state

    # ------------------------------------------------------------------ checking

    def card_locations(self, state: CoopState) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Where each card is: ``(spartan, persian)``, one location name per card id.

        Spartan locations: ``"deck"``, ``"hand0"`` .. ``"hand3"``, ``"discard"``; Persian: ``"deck"``,
        ``"slot1"``, ``"slot2"``, ``"discard"``, ``"graveyard"``. Raises ``ValueError`` if a card is in
        no place or in two places.
        """
        spartan: list[str | None] = [None] * SPARTAN_DECK_SIZE
        persian: list[str | None] = [None] * len(self.persian)

        def put(table: list[str | None], card: int, where: str, kind: str) -> None:
            if not 0 <= card < len(table):
                raise ValueError(f"{kind} card id {card} in {where} does not exist")
            if table[card] is not None:
                raise ValueError(f"{kind} card {card} is both in {table[card]} and in {where}")
            table[card] = where

        for card in state.spartan_order[state.spartan_pos :]:
            put(spartan, card, "deck", "Spartan")
        for seat, hand in enumerate(state.hands):
            for card in hand:
                put(spartan, card, f"hand{seat}", "Spartan")
        for card in state.spartan_discard:
            put(spartan, card, "discard", "Spartan")
        for card in state.persian_order[state.persian_pos :]:
            put(persian, card, "deck", "Persian")
        if state.slot1 >= 0:
            put(persian, state.slot1, "slot1", "Persian")
        if state.slot2 >= 0:
            put(persian, state.slot2, "slot2", "Persian")
        for card in state.persian_discard:
            put(persian, card, "discard", "Persian")
        for card in state.graveyard:
            put(persian, card, "graveyard", "Persian")
        for kind, table in (("Spartan", spartan), ("Persian", persian)):
            missing = [card for card, where in enumerate(table) if where is None]
            if missing:
                raise ValueError(f"{kind} card(s) {missing} are nowhere")
        return tuple(spartan), tuple(persian)  # type: ignore[arg-type]

    def check_invariants(self, state: CoopState) -> None:
        """Raise :class:`~thermopylae_env.errors.InvariantError` if ``state`` breaks an invariant of the
        rules (every card in exactly one place, hand limits, counters in range, a full line between
        actions, ``terminated`` and ``reason`` in step)."""
        try:
            self.card_locations(state)
        except ValueError as err:
            raise InvariantError(f"invalid state: {err}") from None
        problems = []
        if len(state.hands) != self.num_players:
            problems.append(f"{len(state.hands)} hands for {self.num_players} players")
        if not 0 <= state.support <= NUM_SUPPORT:
            problems.append(f"support {state.support}")
        if not 1 <= state.marker <= LOSS_MARKER:
            problems.append(f"marker {state.marker}")
        if state.marker == LOSS_MARKER and not (state.terminated and not state.won):
            problems.append("marker on 7 but the game is not lost")
        if len(state.graveyard) > GRAVEYARD_WIN:
            problems.append(f"{len(state.graveyard)} cards in the graveyard")
        if not 0 <= state.current_player < self.num_players:
            problems.append(f"current player {state.current_player}")
        for seat, hand in enumerate(state.hands):
            limit = HAND_LIMIT + 1 if (state.phase == _DISCARD and seat == state.recipient) else HAND_LIMIT
            if len(hand) > limit:
                problems.append(f"seat {seat} holds {len(hand)} cards")
        if state.phase == _DISCARD and len(state.hands[state.recipient]) != HAND_LIMIT + 1:
            problems.append("DISCARD phase but the recipient does not hold 6 cards")
        if state.phase == _DRAW_OFFER and state.spartan_pos >= SPARTAN_DECK_SIZE:
            problems.append("a draw is offered from an empty Spartan deck")
        if state.offers < 0 or state.offers > 1:
            problems.append(f"{state.offers} pending offers")
        if state.phase == _MAIN and not state.terminated and (state.slot1 < 0 or state.slot2 < 0):
            problems.append("the line is not full between actions")
        if state.terminated != (state.reason is not None):
            problems.append("terminated and reason disagree")
        if state.terminated and state.reason not in END_REASONS:
            problems.append(f"unknown end reason {state.reason!r}")
        if state.phase == _DISCARD and not 0 <= state.recipient < self.num_players:
            problems.append(f"DISCARD phase with recipient {state.recipient}")
        if problems:
            raise InvariantError("invalid state: " + "; ".join(problems))


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


def _check_permutation(order: Sequence[int], n: int, name: str) -> tuple[int, ...]:
    try:
        items = tuple(int(i) for i in order)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of card ids 0..{n - 1}") from err
    if sorted(items) != list(range(n)):
        raise ValueError(f"{name} must be a permutation of 0..{n - 1}, got {list(items)}")
    return items


# The MAIN and DISCARD masks by key (the set of values in the hand, and the support left): they depend on
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
    out), with the same values as :meth:`CoopGame.observe` and :meth:`CoopGame.legal_action_mask`.

    The observation lives in a persistent buffer: each call compares the state with the one it last wrote
    and rewrites only the pieces that differ (a move changes a few), then returns a copy. A different
    state object, other deck orders, decks that grew back, or any change the engine never makes (a hand
    that did not gain or lose exactly one card, a phase, seat or marker outside the rules) are written
    from scratch, as :meth:`CoopGame.observe` writes them. Single entries are written through a
    ``memoryview`` of the buffer (cheaper than NumPy item assignment, the same float32 rounding); the
    phase, seat and recipient one-hots, each slot and the marker are written whole, as one slice of bytes
    from tables built once. The masks of the MAIN and DISCARD phases depend only on the values in one
    hand (and the support left), so each distinct one is built once (shared by the views of a process,
    read-only).
    """

    __slots__ = ("game", "_buf", "_mv", "_bytes", "_state", "_seen", "_hands", "_main_masks",
                 "_discard_masks", "_offer_mask", "_none_mask", "_undrawn", "_bit", "_slot_pieces")

    def __init__(self, game: CoopGame) -> None:
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
        """Write the whole observation of ``state``, entry for entry as :meth:`CoopGame.observe` writes
        it, and follow ``state`` from now on."""
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
