"""Rules engine of the co-operative game *Thermopyles* (Game A of the rules contract), Gymnasium-free.

The engine follows the Pgx / OpenSpiel split: a frozen [`CoopGame`][thermopylae_env.coop.rules.CoopGame] holds
the static information (player count, card tables, action layout) and a small mutable
[`CoopState`][thermopylae_env.coop.state.CoopState] holds everything that changes.
``game.step(state, action, rng)`` mutates the state in place; ``state.copy()`` is cheap, for search. The
action and observation layouts are fixed by ``docs/coop_spec.md``, defined once in
[`thermopylae_env.coop.layout`][] (with the action codec) and summarised below; the state and the dice are in
[`thermopylae_env.coop.state`][], the observer in [`thermopylae_env.coop.observation`][]. The fight resolution
is [`CoopGame.resolve_fight`][thermopylae_env.coop.rules.CoopGame.resolve_fight]; the compiled twin of these
rules is [`thermopylae_env.coop.kernel`][].

Actions (one flat space of [`NUM_ACTIONS`][thermopylae_env.coop.layout.NUM_ACTIONS] = 72 shared by every
decision point):

    0                         RETREAT                    phase MAIN
    1 + (v-10)*5 + s          fight(v, s): card v (10..20) with s (0..4) support cards   phase MAIN
    56 + p                    give(p): draw the offered Spartan card into seat p's hand   phase DRAW_OFFER
    60                        DECLINE the offered draw                                   phase DRAW_OFFER
    61 + (v-10)               discard(v) from the recipient's 6-card hand                phase DISCARD

Every choice of the rules is a decision of the team, made through these actions: the fight (card and
support together, before any die is rolled), the retreat, the recipient of each offered draw (or
declining it), and the discard after a draw into a full hand.

Observation ([`OBS_SIZE`][thermopylae_env.coop.layout.OBS_SIZE] = 115 float32 values in [0, 1]):

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

import os
from collections.abc import Sequence

import numpy as np

from thermopylae_env.actions import IllegalActionError
from thermopylae_env.cards import (
    PERSIAN_DECK_SIZE,
    SPARTAN_VALUES,
    PersianCard,
    PersianRows,
    load_persian_deck,
    load_spartan_deck,
)
from thermopylae_env.coop.layout import (
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
    OBS_SIZE,
    RETREAT,
    SPARTAN_DECK_SIZE,
    VALUE_SCALE,
    decode_action,
)
from thermopylae_env.coop.observation import (  # the offsets of the layout's pieces, named once there
    _OBS_GRAVEYARD,
    _OBS_HANDS,
    _OBS_MARKER,
    _OBS_OFFERS,
    _OBS_PERSIAN_DECK,
    _OBS_PERSIAN_DISCARD,
    _OBS_PHASE,
    _OBS_RECIPIENT,
    _OBS_SEAT,
    _OBS_SLOT1,
    _OBS_SLOT2,
    _OBS_SPARTAN_DECK,
    _OBS_SUPPORT,
    _OBS_UNSEEN_PERSIAN,
    _OBS_UNSEEN_SPARTAN,
    state_from_observation,
)
from thermopylae_env.coop.state import (
    _DISCARD,
    _DRAW_OFFER,
    _GENERATOR,
    _MAIN,
    END_REASONS,
    HAND_LIMIT,
    LOCATION_DIE_MARKERS,
    CoopState,
    roll_dice,
)
from thermopylae_env.errors import InvariantError

__all__ = ["CoopGame"]

_VALUE_SCALE = VALUE_SCALE


class CoopGame:
    """Static information of the co-op game and its rules as functions of a
    [`CoopState`][thermopylae_env.coop.state.CoopState].

    ``num_players`` is 1 to 4 (solo by default); ``persian_deck`` is a CSV path, rows accepted by
    [`thermopylae_env.cards.load_persian_deck`][], or ``None`` for the default (reconstructed) deck.
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
        [`IllegalActionError`][thermopylae_env.actions.IllegalActionError] and leaves ``state`` as it was.
        ``rng`` is used only for the dice; ``events``, when a list, receives what happened as dicts."""
        reason = self.illegal_reason(state, action)
        if reason is not None:
            raise IllegalActionError(reason)
        self.apply(state, int(action), rng, events)

    def apply(self, state: CoopState, a: int, rng: np.random.Generator, events: list | None = None) -> None:
        """[`step`][thermopylae_env.coop.rules.CoopGame.step] for an action ``a`` (a Python int) already known
        to be legal, unchecked: the environments check each action once
        ([`illegal_reason`][thermopylae_env.coop.rules.CoopGame.illegal_reason]) and then apply it here."""
        phase = state.phase
        if phase == _MAIN:
            if a == RETREAT:
                self._retreat(state, events)
            else:
                value, support = divmod(a - FIGHT_BASE, NUM_SUPPORT + 1)
                self.resolve_fight(state, value + MIN_VALUE, support, rng, events)
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

    def resolve_fight(self, state: CoopState, value: int, support: int, rng, events: list | None) -> None:
        """The whole fight of the acting seat with a card of ``value`` and ``support`` support cards: the
        card and the support are spent, the dice rolled, slot 1 resolved, then slot 2 only if slot 1 was
        beaten, and the line, the Spartans' win and the draw offers follow (see the module docstring)."""
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
        """The team's view as a float32 vector of [`OBS_SIZE`][thermopylae_env.coop.layout.OBS_SIZE] values in
        [0, 1]; writes into ``out`` (float32, shape (115,)) when given and returns it."""
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
        """A state consistent with ``obs`` (a determinization): see
        [`thermopylae_env.coop.observation.state_from_observation`][]."""
        return state_from_observation(self, obs, rng)


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
        """Raise [`InvariantError`][thermopylae_env.errors.InvariantError] if ``state`` breaks an invariant of
        the rules (every card in exactly one place, hand limits, counters in range, a full line between
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

def _check_permutation(order: Sequence[int], n: int, name: str) -> tuple[int, ...]:
    try:
        items = tuple(int(i) for i in order)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of card ids 0..{n - 1}") from err
    if sorted(items) != list(range(n)):
        raise ValueError(f"{name} must be a permutation of 0..{n - 1}, got {list(items)}")
    return items


# The MAIN and DISCARD masks by key (the set of values in the hand, and the support left): they depend on
