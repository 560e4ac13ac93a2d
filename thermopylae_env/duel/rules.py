"""Rules engine of Game B, the Thermopylae duel (Greek against Persian), without Gymnasium.

The engine follows ``/work/shared/RULES.md`` (Game B) and the project's write-up ``seeds/rules_duel.md``.
It is laid out like the co-op engine and like Pgx: a static [`DuelGame`][thermopylae_env.duel.rules.DuelGame]
(card tables, action layout) and a small mutable [`DuelState`][thermopylae_env.duel.state.DuelState] with a
cheap [`DuelState.copy`][thermopylae_env.duel.state.DuelState.copy] (in [`thermopylae_env.duel.state`][]).
All randomness comes from the ``numpy.random.Generator`` passed in, drawn in exactly two places:
[`shuffle_decks`][thermopylae_env.duel.state.shuffle_decks] and
[`pick_random_discards`][thermopylae_env.duel.state.pick_random_discards].

The size of the game is data ([`thermopylae_env.duel.config`][]): ``DuelGame()`` plays the full game,
``DuelGame(config)`` a reduced duel with fewer cards (a subset of the full game's card ids), another
opening hand, hand limit or token count. The numbers below are the full game's.

Players: ``GREEK = 0``, ``PERSIAN = 1``. Card ids: the 52 Greek cards are ``0..51`` and the 52 Persian cards
``52..103``, in the row order of ``seeds/duel_{greek,persian}_deck.csv`` (so ``card // 52`` is the owner).

Card kinds
----------
Cards of equal force and effect play alike, so hands are tracked by *kind* (the card ids are kept as well,
for names in displays and records). Both sides have nine kinds with the same shape:

```text
==== ===================================================== ================================================
kind Greek                                                 Persian
==== ===================================================== ================================================
0    Greek Allies (force 10)                               Attack (force 10; needed to attack)
1    Overlapping Shields (20)                              Ethiopian Tribesmen / Egyptian Levies / Mede
                                                           Cavalry (20)
2    Heavy Infantry (30)                                   Bactrian Spearmen / Indian Heavy Chariots /
                                                           Scythed Chariots / Assyrian Light Chariots (30)
3    Hoplites (40)                                         Persian Archers / Scythian Horse Archers /
                                                           Phrygian Javelineers (40)
4    Phalanx (50)                                          Immortals (50)
5    Heroic Last Stand (strategy)                          Greek Traitor (strategy)
6    Spartan Training (strategy)                           Outflanking March (strategy)
7    Narrow Defile (strategy)                              Mountain Path (strategy)
8    Leonidas Strategy (discard card)                      Xerxes Commands (discard card)
==== ===================================================== ================================================
```

Phases and turn
---------------
A turn is: draw (automatic), ``PERSIAN_DISCARD``, ``GREEK_DISCARD``, ``ATTACK`` (the Persian builds or
declines an attack), ``DEFENCE`` (the Greek builds a defence or does not defend). A decision point where the
rules leave exactly one possibility is resolved by the engine and reported as an event with
``"auto": True``: a Greek with an empty hand ends his discard phase, a Persian without an Attack card does
not attack, a Greek without a card of force > 0 does not defend.

Action layout (``NUM_ACTIONS = 21``, one flat space for both sides and all phases; k = kind of the actor)
--------------------------------------------------------------------------------------------------------

When each action is legal (the offsets are those of [`thermopylae_env.duel.layout.ACTION_PIECES`][]):

```text
========= ======================= ===================================================================
index     name                    legal when
========= ======================= ===================================================================
0         ``PLAY_DISCARD_CARD``   own discard phase, holding the discard card (kind 8): play it; the
                                  opponent discards 2 cards at random (all if fewer)
1 + k     ``discard(k)``, k 0..8  own discard phase, holding a card of kind k: discard it unplayed
10        ``DONE_DISCARDING``     own discard phase, holding at most 7 cards
11 + k    ``add(k)``, k 0..7      ATTACK (Persian) / DEFENCE (Greek): a card of kind k still in hand
                                  and not yet added; a strategy kind (5..7) at most once
19        ``COMMIT``              ATTACK: at least one Attack card added; DEFENCE: at least one card of
                                  force > 0 added
20        ``DECLINE``             ATTACK: do not attack; DEFENCE: do not defend. Always legal there;
                                  cards added so far go back to the hand unseen
========= ======================= ===================================================================
```

Observation layout (``OBS_SIZE = 56``, float32, all in [0, 1]; ``observe(state, player)``)
------------------------------------------------------------------------------------------

The named pieces (offset, size, scale) of the observation and of the action layout are defined once, in
[`thermopylae_env.duel.layout`][]; the ``OBS_*`` and action constants below are read from there.
Everything in it is public or the observer's own: hands of the opponent and the order of both decks are
never part of it.

Bounds
------
* Game length: each turn begins with a Persian draw; after the deal the Persian deck holds 48 cards, so the
  draw of turn 49 finds it empty and the Greeks win then, if not before: ``turn <= MAX_TURNS = 49``, and
  turn 49 has no decision.
* Micro-actions per turn: a hand holds at most 8 cards after the draw (at most 7 at the end of each
  discard phase, one drawn per turn). In a discard phase every action but ``DONE_DISCARDING`` removes a
  card from the actor's hand: at most 8 + 1 = 9 actions per side. At the attack/defence the hand holds at
  most 7 cards and every ``add`` uses one, and one ``COMMIT``/``DECLINE`` ends it: at most 8 per side.
  So at most 9 + 9 + 8 + 8 = ``MAX_ACTIONS_PER_TURN = 34`` per turn (17 per side) and
  48 * 34 = ``MAX_GAME_ACTIONS = 1632`` per game.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from thermopylae_env.actions import IllegalActionError, as_action_index
from thermopylae_env.duel.config import FULL_DUEL, DuelConfig
from thermopylae_env.duel.layout import (
    ADD_BASE,
    ATTACK_KIND,
    COMMIT,
    DECK_SIZE,
    DECLINE,
    DISCARD_BASE,
    DISCARD_KIND,
    DONE_DISCARDING,
    GREEK,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_FORCE_KINDS,
    NUM_KINDS,
    NUM_PLAYERS,
    OBS_SCALE,
    OBS_SIZE,
    PERSIAN,
    PLAY_DISCARD_CARD,
    PLAYER_NAMES,
    STRATEGY_KINDS,
    DuelKind,
    _build_tables,
    card_owner,
    decode_action,
)
from thermopylae_env.duel.state import (
    _ATTACK,
    _DEFENCE,
    _G_DISC,
    _P_DISC,
    DuelState,
    Phase,
    pick_random_discards,
    shuffle_decks,
)
from thermopylae_env.errors import InvariantError

__all__ = ["DuelGame", "combat_total", "check_invariants"]


_HEAD = tuple(  # [phase][acting] -> phase one-hot + "must act" flag
    tuple((*(int(i == ph) for i in range(4)), int(me)) for me in (False, True)) for ph in range(4)
)
_HEAD_OVER = (0, 0, 0, 0, 0)
_NO_BUILD = (0,) * NUM_KINDS
_ZEROS = (0,) * NUM_ACTIONS


def combat_total(counts: Sequence[int]) -> int:
    """Total of an attack or defence given its count per kind: sum of forces x (strategy cards + 1)."""
    force = 10 * counts[0] + 20 * counts[1] + 30 * counts[2] + 40 * counts[3] + 50 * counts[4]
    return force * (1 + counts[5] + counts[6] + counts[7])


# ----------------------------------------------------------------------------------------------------------
# Game


class DuelGame:
    """Static information and rules of the duel (Pgx style: ``init``, ``step``, ``observe``, ...)."""

    num_players = NUM_PLAYERS
    num_actions = NUM_ACTIONS
    obs_size = OBS_SIZE

    def __init__(self, config: DuelConfig | None = None) -> None:
        kinds, card_kinds, card_names = _build_tables()
        self.kinds: tuple[tuple[DuelKind, ...], tuple[DuelKind, ...]] = kinds
        self.card_kinds: tuple[int, ...] = card_kinds
        self.card_names: tuple[str, ...] = card_names
        # The size of the game (thermopylae_env.duel.config): the full game unless a reduced one is given.
        self.config: DuelConfig = FULL_DUEL if config is None else config
        self.deck_ids: tuple[tuple[int, ...], tuple[int, ...]] = self.config.deck_ids(card_kinds)
        self.start_hand: int = self.config.start_hand
        self.hand_limit: int = self.config.hand_limit
        self.start_tokens: int = self.config.start_tokens
        self._full = self.config.is_full

    # --- setup ---------------------------------------------------------------------------------------

    def init(self, rng: np.random.Generator, events: list | None = None) -> DuelState:
        """Shuffle both decks with ``rng``, deal 4 cards each (``config.start_hand``) and play the first
        draw."""
        if self._full:
            greek, persian = shuffle_decks(rng)
        else:
            greek, persian = (tuple(ids[i] for i in rng.permutation(len(ids)).tolist())
                              for ids in self.deck_ids)
        return self.new_state(greek, persian, events)

    def new_state(
        self, greek_order: Sequence[int], persian_order: Sequence[int], events: list | None = None
    ) -> DuelState:
        """The state after the deal and the first draw for given deck orders (explicit chance).

        ``greek_order`` must be a permutation of 0..51 and ``persian_order`` of 52..103 (top card first); in a
        reduced game (``config``), permutations of [`deck_ids`][thermopylae_env.duel.rules.DuelGame.deck_ids].
        """
        greek = tuple(int(c) for c in greek_order)
        persian = tuple(int(c) for c in persian_order)
        if self._full:
            if sorted(greek) != list(range(DECK_SIZE)):
                raise ValueError("greek_order must be a permutation of the Greek card ids 0..51")
            if sorted(persian) != list(range(DECK_SIZE, NUM_CARDS)):
                raise ValueError("persian_order must be a permutation of the Persian card ids 52..103")
        else:
            for order, ids, name in ((greek, self.deck_ids[GREEK], "greek"), (persian, self.deck_ids[PERSIAN],
                                                                                "persian")):
                if sorted(order) != list(ids):
                    raise ValueError(f"{name}_order must be a permutation of the card ids {list(ids)} of "
                                     f"the {self.config.name!r} duel")
        ck = self.card_kinds
        start = self.start_hand
        hands = [list(greek[:start]), list(persian[:start])]
        hand_counts = [[0] * NUM_KINDS, [0] * NUM_KINDS]
        for p in (GREEK, PERSIAN):
            for c in hands[p]:
                hand_counts[p][ck[c]] += 1
        state = DuelState(
            decks=(greek, persian),
            deck_pos=[start, start],
            hands=hands,
            hand_counts=hand_counts,
            discards=[[], []],
            discard_counts=[[0] * NUM_KINDS, [0] * NUM_KINDS],
            build=[0] * NUM_KINDS,
            table=[],
            table_counts=[0] * NUM_KINDS,
            tokens=self.start_tokens,
        )
        if events is not None:
            events.append({"type": "deal", "hands": [hands[0][:], hands[1][:]]})
        self._begin_turn(state, events)
        return state

    # --- legality ------------------------------------------------------------------------------------

    def illegal_reason(self, state: DuelState, action: int) -> str | None:
        """``None`` if ``action`` (an int in 0..20) is legal now, else why not."""
        if state.terminated:
            return "the game is over"
        p = state.current_player
        counts = state.hand_counts[p]
        phase = state.phase
        if phase <= _G_DISC:
            if action == PLAY_DISCARD_CARD:
                return None if counts[DISCARD_KIND] else f"no {self.kinds[p][DISCARD_KIND].label} in hand"
            if action < DONE_DISCARDING:
                k = action - DISCARD_BASE
                return None if counts[k] else f"no {self.kinds[p][k].label} in hand to discard"
            if action == DONE_DISCARDING:
                n = len(state.hands[p])
                limit = self.hand_limit
                return None if n <= limit else f"holding {n} cards; discard down to {limit} first"
            return "only discard-phase actions (0..10) are legal in a discard phase"
        if action < ADD_BASE:
            return "discard-phase actions are not legal while an attack/defence is being built"
        if action < COMMIT:
            k = action - ADD_BASE
            if counts[k] <= state.build[k]:
                return f"no {self.kinds[p][k].label} left in hand to add"
            if k >= NUM_FORCE_KINDS and state.build[k]:
                return f"{self.kinds[p][k].label} already added (strategy types must be distinct)"
            return None
        if action == COMMIT:
            b = state.build
            if phase == _ATTACK:
                return None if b[ATTACK_KIND] else "an attack needs at least one Attack card"
            if b[0] or b[1] or b[2] or b[3] or b[4]:
                return None
            return "a defence needs at least one card of force > 0"
        return None  # DECLINE

    def is_legal(self, state: DuelState, action: int) -> bool:
        """Whether ``action`` is legal for ``state.current_player`` now."""
        return self.illegal_reason(state, action) is None

    def legal_actions(self, state: DuelState) -> list[int]:
        """The legal actions, ascending."""
        if state.terminated:
            return []
        p = state.current_player
        counts = state.hand_counts[p]
        if state.phase <= _G_DISC:
            legal = [PLAY_DISCARD_CARD] if counts[DISCARD_KIND] else []
            legal += [DISCARD_BASE + k for k in range(NUM_KINDS) if counts[k]]
            if len(state.hands[p]) <= self.hand_limit:
                legal.append(DONE_DISCARDING)
            return legal
        b = state.build
        legal = [ADD_BASE + k for k in range(NUM_FORCE_KINDS) if counts[k] > b[k]]
        legal += [ADD_BASE + k for k in STRATEGY_KINDS if counts[k] and not b[k]]
        if (b[ATTACK_KIND] if state.phase == _ATTACK else (b[0] or b[1] or b[2] or b[3] or b[4])):
            legal.append(COMMIT)
        legal.append(DECLINE)
        return legal

    def legal_action_mask(self, state: DuelState, dtype: type = np.bool_) -> np.ndarray:
        """Mask over the 21 actions for ``state.current_player`` (all False once the game is over)."""
        if state.terminated:
            return np.zeros(NUM_ACTIONS, dtype=dtype)
        p = state.current_player
        c = state.hand_counts[p]
        if state.phase <= _G_DISC:
            values = [
                c[8], c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8],
                len(state.hands[p]) <= self.hand_limit,
                *_ZEROS[:NUM_ACTIONS - ADD_BASE],  # add, commit, decline: not in a discard phase
            ]
        else:
            b = state.build
            commit = b[ATTACK_KIND] if state.phase == _ATTACK else (b[0] or b[1] or b[2] or b[3] or b[4])
            values = [
                *_ZEROS[:ADD_BASE],  # discard-phase actions
                c[0] > b[0], c[1] > b[1], c[2] > b[2], c[3] > b[3], c[4] > b[4],
                c[5] > b[5] == 0, c[6] > b[6] == 0, c[7] > b[7] == 0, commit, True,
            ]
        mask = np.array(values, dtype=np.bool_)  # counts > 0 become True
        if dtype is np.bool_:
            return mask
        return mask.view(np.int8) if dtype is np.int8 else mask.astype(dtype)

    # --- transition ----------------------------------------------------------------------------------

    def step(
        self, state: DuelState, action: int, rng: np.random.Generator, events: list | None = None
    ) -> None:
        """Apply ``action`` of ``state.current_player`` in place, then any automatic resolution.

        Raises [`IllegalActionError`][thermopylae_env.actions.IllegalActionError] (state untouched) for an
        action the rules forbid now, and ``TypeError``/``ValueError`` for a value outside the action space.
        """
        if type(action) is not int:
            action = as_action_index(action, NUM_ACTIONS)
        elif not 0 <= action < NUM_ACTIONS:
            raise ValueError(f"action {action} is outside the action space Discrete({NUM_ACTIONS})")
        reason = self.illegal_reason(state, action)
        if reason is not None:
            raise IllegalActionError(f"{decode_action(action, state.current_player)}: {reason}")
        self.apply(state, action, rng, events)

    def apply(
        self, state: DuelState, action: int, rng: np.random.Generator, events: list | None = None
    ) -> None:
        """[`step`][thermopylae_env.duel.rules.DuelGame.step] for an ``action`` (a Python int) already known
        to be legal: the environments check each action once
        ([`illegal_reason`][thermopylae_env.duel.rules.DuelGame.illegal_reason]) and then apply it here,
        unchecked. An illegal action would corrupt the state; call
        [`step`][thermopylae_env.duel.rules.DuelGame.step] unless legality was checked."""
        state.actions_taken += 1
        p = state.current_player
        if state.phase <= _G_DISC:
            if action == PLAY_DISCARD_CARD:
                card = self._remove_kind(state, p, DISCARD_KIND)
                self._to_discard(state, p, card)
                victim = 1 - p
                hand = state.hands[victim]
                hit = sorted(pick_random_discards(rng, len(hand)), reverse=True)
                lost = []
                for i in hit:
                    c = hand.pop(i)
                    state.hand_counts[victim][self.card_kinds[c]] -= 1
                    self._to_discard(state, victim, c)
                    lost.append(c)
                if events is not None:
                    events.append({"type": "play_discard_card", "player": p, "card": card, "victim": victim,
                                   "discarded": lost})
            elif action < DONE_DISCARDING:
                card = self._remove_kind(state, p, action - DISCARD_BASE)
                self._to_discard(state, p, card)
                if events is not None:
                    events.append({"type": "discard", "player": p, "card": card})
            else:
                if events is not None:
                    events.append({"type": "done_discarding", "player": p})
                self._end_discard_phase(state, p, events)
            return
        if action < COMMIT:
            state.build[action - ADD_BASE] += 1
            if events is not None:
                events.append({"type": "add", "player": p, "kind": action - ADD_BASE})
            return
        if state.phase == _ATTACK:
            if action == COMMIT:
                cards = self._take_build(state, PERSIAN)
                state.table = cards
                counts = state.table_counts
                for c in cards:
                    counts[self.card_kinds[c]] += 1
                state.attack_total = combat_total(counts)
                if events is not None:
                    events.append({"type": "attack", "player": PERSIAN, "cards": cards[:],
                                   "total": state.attack_total})
                self._start_defence(state, events)
            else:
                state.build = [0] * NUM_KINDS
                if events is not None:
                    events.append({"type": "no_attack", "player": PERSIAN})
                self._begin_turn(state, events)
            return
        if action == COMMIT:
            cards = self._take_build(state, GREEK)
            counts = [0] * NUM_KINDS
            for c in cards:
                counts[self.card_kinds[c]] += 1
                self._to_discard(state, GREEK, c)
            total = combat_total(counts)
            if events is not None:
                events.append({"type": "defence", "player": GREEK, "cards": cards, "total": total})
            self.resolve_combat(state, total, events)
        else:
            state.build = [0] * NUM_KINDS
            if events is not None:
                events.append({"type": "no_defence", "player": GREEK})
            self.resolve_combat(state, 0, events)

    # --- helpers of step -----------------------------------------------------------------------------

    def _remove_kind(self, state: DuelState, p: int, kind: int) -> int:
        hand = state.hands[p]
        ck = self.card_kinds
        for i, c in enumerate(hand):
            if ck[c] == kind:
                del hand[i]
                state.hand_counts[p][kind] -= 1
                return c
        raise AssertionError("hand_counts out of step with hands")  # pragma: no cover

    def _to_discard(self, state: DuelState, p: int, card: int) -> None:
        state.discards[p].append(card)
        state.discard_counts[p][self.card_kinds[card]] += 1

    def _take_build(self, state: DuelState, p: int) -> list[int]:
        """Move the cards counted in ``build`` out of ``p``'s hand and return their ids."""
        build = state.build
        hand = state.hands[p]
        counts = state.hand_counts[p]
        ck = self.card_kinds
        need = build[:]
        taken = []
        kept = []
        for c in hand:
            k = ck[c]
            if need[k]:
                need[k] -= 1
                counts[k] -= 1
                taken.append(c)
            else:
                kept.append(c)
        state.hands[p] = kept
        state.build = [0] * NUM_KINDS
        return taken

    def _draw(self, state: DuelState, p: int, events: list | None) -> None:
        card = state.decks[p][state.deck_pos[p]]
        state.deck_pos[p] += 1
        state.hands[p].append(card)
        state.hand_counts[p][self.card_kinds[card]] += 1
        if events is not None:
            events.append({"type": "draw", "player": p, "card": card})

    def _end(self, state: DuelState, winner: int, reason: str, events: list | None) -> None:
        state.terminated = True
        state.winner = winner
        state.reason = reason
        if events is not None:
            events.append({"type": "end", "winner": winner, "reason": reason})

    def _begin_turn(self, state: DuelState, events: list | None) -> None:
        state.turn += 1
        if state.deck_pos[PERSIAN] >= len(state.decks[PERSIAN]):
            self._end(state, GREEK, "persian_deck_empty", events)
            return
        self._draw(state, PERSIAN, events)
        if state.deck_pos[GREEK] < len(state.decks[GREEK]):
            self._draw(state, GREEK, events)
        state.phase = _P_DISC
        state.current_player = PERSIAN

    def _end_discard_phase(self, state: DuelState, p: int, events: list | None) -> None:
        if p == PERSIAN:
            state.phase = _G_DISC
            state.current_player = GREEK
            if state.hands[GREEK]:
                return
            if events is not None:
                events.append({"type": "done_discarding", "player": GREEK, "auto": True})
        if state.hand_counts[PERSIAN][ATTACK_KIND]:
            state.phase = _ATTACK
            state.current_player = PERSIAN
            return
        if events is not None:
            events.append({"type": "no_attack", "player": PERSIAN, "auto": True})
        self._begin_turn(state, events)

    def _start_defence(self, state: DuelState, events: list | None) -> None:
        c = state.hand_counts[GREEK]
        if c[0] or c[1] or c[2] or c[3] or c[4]:
            state.phase = _DEFENCE
            state.current_player = GREEK
            return
        if events is not None:
            events.append({"type": "no_defence", "player": GREEK, "auto": True})
        self.resolve_combat(state, 0, events)

    def resolve_combat(self, state: DuelState, defence: int, events: list | None) -> None:
        """The combat of a turn: the Persian attack on the table against the Greek ``defence`` total. Each
        full 10 points by which the attack exceeds the defence cost the Greeks one troop token; the
        attack's cards go to the Persian discard pile; the Persians win when no token is left, otherwise the
        next turn begins."""
        attack = state.attack_total
        lost = (attack - defence) // 10 if attack > defence else 0
        state.tokens = max(0, state.tokens - lost)
        for c in state.table:
            self._to_discard(state, PERSIAN, c)
        state.table = []
        state.table_counts = [0] * NUM_KINDS
        state.attack_total = 0
        if events is not None:
            events.append({"type": "combat", "attack": attack, "defence": defence, "tokens_lost": lost,
                           "tokens": state.tokens})
        if state.tokens <= 0:
            self._end(state, PERSIAN, "no_tokens", events)
        else:
            self._begin_turn(state, events)

    # --- observation and outcome ---------------------------------------------------------------------

    def observe(self, state: DuelState, player: int, out: np.ndarray | None = None) -> np.ndarray:
        """The float32 observation of ``player`` (layout in the module docstring)."""
        o = 1 - player
        if state.terminated:
            head = _HEAD_OVER
            build = _NO_BUILD
            build_total = 0
        else:
            head = _HEAD[state.phase][state.current_player == player]
            if state.phase >= _ATTACK and state.current_player == player:
                build = state.build
                build_total = combat_total(build)
            else:
                build = _NO_BUILD
                build_total = 0
        dp = state.deck_pos
        b = build
        t = state.table_counts
        values = [
            *head, player, *state.hand_counts[player], b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            len(state.hands[o]), len(state.decks[player]) - dp[player], len(state.decks[o]) - dp[o],
            *state.discard_counts[player], *state.discard_counts[o], state.tokens, state.turn,
            t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], state.attack_total, build_total,
        ]
        if out is None:
            out = np.array(values, dtype=np.float32)
        else:
            out[:] = values
        out *= OBS_SCALE
        return out

    def check_invariants(self, state: DuelState) -> None:
        """Raise [`InvariantError`][thermopylae_env.errors.InvariantError] unless ``state`` keeps every rule
        no legal play can break (each of the 104 cards in exactly one place, counts, phase, tokens, turn)."""
        check_invariants(state, self)

    def returns(self, state: DuelState) -> np.ndarray:
        """``[greek, persian]`` returns: +1 for the winner, -1 for the loser, zeros while the game goes on."""
        r = np.zeros(NUM_PLAYERS, dtype=np.float32)
        if state.terminated:
            r[state.winner] = 1.0
            r[1 - state.winner] = -1.0
        return r

    # --- display -------------------------------------------------------------------------------------

    def describe_cards(self, cards: Sequence[int]) -> str:
        """Names of ``cards`` joined by commas ('-' for none)."""
        return ", ".join(self.card_names[c] for c in cards) or "-"

    def render(self, state: DuelState) -> str:
        """A plain-text picture of the whole state (both hands shown: for people, not for agents)."""
        lines = [f"Turn {state.turn}  Greek tokens {state.tokens}"]
        if state.terminated:
            lines.append(f"Game over: {PLAYER_NAMES[state.winner]} win ({state.reason})")
        else:
            lines.append(f"Phase {Phase(state.phase).name}, {PLAYER_NAMES[state.current_player]} to act")
        for p in (PERSIAN, GREEK):
            lines.append(
                f"{PLAYER_NAMES[p].capitalize():8s} deck {state.deck_size(p):2d}"
                f"  discards {len(state.discards[p]):2d}"
                f"  hand: {self.describe_cards(state.hands[p])}"
            )
        if not state.terminated and state.phase >= _ATTACK and any(state.build):
            kinds = self.kinds[state.current_player]
            parts = [f"{n} x {kinds[k].label}" for k, n in enumerate(state.build) if n]
            lines.append(f"Being added ({combat_total(state.build)}): " + ", ".join(parts))
        if state.table:
            lines.append(f"Attack on the table ({state.attack_total}): {self.describe_cards(state.table)}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------
# Invariants


def _require(condition: object, message: str) -> None:
    if not condition:
        raise InvariantError(f"invalid duel state: {message}")


def check_invariants(state: DuelState, game: DuelGame | None = None) -> None:
    """Raise [`InvariantError`][thermopylae_env.errors.InvariantError] unless every one of the 104 cards is in
    exactly one place, and the counts, phase, tokens and turn agree with the rules (also
    [`DuelGame.check_invariants`][thermopylae_env.duel.rules.DuelGame.check_invariants])."""
    game = game or DuelGame()
    ck = game.card_kinds
    seen: dict[int, str] = {}
    limit = game.hand_limit
    persian_deck = len(game.deck_ids[PERSIAN])

    def place(card: int, where: str) -> None:
        _require(0 <= card < NUM_CARDS, f"card id {card} out of range (in {where})")
        if card in seen:
            _require(False, f"card {card} ({ck[card]}) is both in {seen[card]} and in {where}")
        seen[card] = where

    for p in (GREEK, PERSIAN):
        name = PLAYER_NAMES[p]
        own_ids = list(game.deck_ids[p])
        _require(sorted(state.decks[p]) == own_ids, f"{name} deck order")
        _require(game.start_hand <= state.deck_pos[p] <= len(own_ids),
                 f"{name} deck position {state.deck_pos[p]}")
        for c in state.decks[p][state.deck_pos[p]:]:
            place(c, f"{name} deck")
        for c in state.hands[p]:
            _require(card_owner(c) == p, f"card {c} in the {name} hand belongs to the other side")
            place(c, f"{name} hand")
        for c in state.discards[p]:
            _require(card_owner(c) == p, f"card {c} in the {name} discard pile belongs to the other side")
            place(c, f"{name} discard pile")
        for counts, cards, what in (
            (state.hand_counts[p], state.hands[p], "hand"),
            (state.discard_counts[p], state.discards[p], "discard pile"),
        ):
            expect = [0] * NUM_KINDS
            for c in cards:
                expect[ck[c]] += 1
            _require(list(counts) == expect, f"{name} {what} counts {counts} != {expect}")
        if not state.terminated:
            _require(len(state.hands[p]) <= limit + 1, f"{name} holds {len(state.hands[p])} cards")
    for c in state.table:
        _require(card_owner(c) == PERSIAN, f"Greek card {c} on the attack table")
        place(c, "table")
    cards = len(game.deck_ids[GREEK]) + persian_deck
    _require(len(seen) == cards, f"{cards - len(seen)} card(s) are nowhere")
    expect = [0] * NUM_KINDS
    for c in state.table:
        expect[ck[c]] += 1
    _require(list(state.table_counts) == expect, "table counts")
    _require(state.attack_total == combat_total(state.table_counts), "attack total")
    _require(0 <= state.tokens <= game.start_tokens, f"tokens {state.tokens}")
    _require(1 <= state.turn <= persian_deck - game.start_hand + 1, f"turn {state.turn}")
    _require(state.terminated == (state.reason is not None), "terminated and reason disagree")
    if state.terminated:
        _require(state.winner in (GREEK, PERSIAN), f"winner {state.winner}")
        _require((state.winner == PERSIAN) == (state.tokens == 0), "the Persian wins iff no token is left")
        return
    _require(state.phase in (_P_DISC, _G_DISC, _ATTACK, _DEFENCE), f"phase {state.phase}")
    expected_player = PERSIAN if state.phase in (_P_DISC, _ATTACK) else GREEK
    _require(state.current_player == expected_player, "current player does not match the phase")
    _require((state.phase == _DEFENCE) == bool(state.table), "an attack is on the table iff defending")
    counts = state.hand_counts[state.current_player]
    for k, n in enumerate(state.build):
        _require(0 <= n <= counts[k], f"build of kind {k} exceeds the hand")
        if k >= NUM_FORCE_KINDS:
            _require(n <= 1, f"strategy kind {k} added twice")
    if state.phase <= _G_DISC:
        _require(not any(state.build), "cards added outside an attack/defence")
    if state.phase == _ATTACK:
        _require(counts[ATTACK_KIND] > 0, "Persian asked to attack without an Attack card")
        _require(len(state.hands[PERSIAN]) <= limit, f"the attacking Persian holds more than {limit} cards")
    if state.phase == _DEFENCE:
        _require(any(counts[:NUM_FORCE_KINDS]), "Greek asked to defend without a card of force > 0")
        _require(len(state.hands[GREEK]) <= limit, f"the defending Greek holds more than {limit} cards")
