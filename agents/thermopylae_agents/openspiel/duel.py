"""The duel *Thermopylae* as the OpenSpiel Python game ``python_thermopylae_duel``.

Two players, zero-sum, imperfect information: player 0 is the Greek, player 1 the Persian (the engine's
``GREEK`` and ``PERSIAN``; the Persian acts first). Every move is played by the reference engine
[`thermopylae_env.duel.rules.DuelGame`][]; this module only makes its chance explicit.

Chance nodes (outcome ids are card ids ``0..103``; each uniform over what is left):

* the deal: the Greek deck top card first, one card per chance node (ids ``0..51``), then the Persian
  deck (ids ``52..103``). The game starts from ``DuelGame.new_state(greek_order, persian_order)``.
* the random discards of a discard card: after the action that plays it come (when the victim holds
  more than 2 cards) 2 chance nodes, each the id of a card of the victim's hand not yet picked; the
  engine then plays the action with exactly these cards.

``apply_action`` refuses an outcome its chance node does not list, and an action not in ``legal_actions()``,
with a one-line ``ValueError`` and the state unchanged.

Actions are the 21 of the duel environments ([`thermopylae_env.duel.layout`][]). The observation
tensor is the environments' 56-value observation of the player (zeros during the deal). The
information-state string is the player's history as seen (cards by kind): its own cards drawn, its
own actions, and the opponent's public moves (discards, the discard card and what it hit, attacks and
defences once committed, a declined attack or defence); cards an opponent adds to an attack or defence
are not seen, nor how many, until committed. The information-state tensor is the observation: a summary
of that history for neural agents, not a perfect-recall encoding (tabular algorithms key on the string).

Game parameter ``member`` (default ``full``): the duel played, ``full`` or a member of the reduced family
[`SMALL_DUELS`][thermopylae_env.duel.config.SMALL_DUELS] (``pyspiel.load_game(name, {"member": "tiny"})``).
A reduced duel deals only its decks' card ids. `_engine_for` is the one place that builds the engine from
the game's parameters and `_game_info` the one place that sizes the game from the engine.
"""

from __future__ import annotations

import numpy as np
import pyspiel

from thermopylae_agents.openspiel._common import (
    PieceObserver,
    ScriptedChance,
    refuse_unlisted_outcome,
    register_game,
    state_from_text,
    state_to_text,
)
from thermopylae_env.duel.config import FULL_DUEL, SMALL_DUELS
from thermopylae_env.duel.layout import (
    DECK_SIZE,
    DISCARD_KIND,
    GREEK,
    MAX_GAME_ACTIONS,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_PLAYERS,
    OBSERVATION_PIECES,
    PLAYER_NAMES,
    decode_action,
)
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.duel.state import DuelState

__all__ = ["SHORT_NAME", "ThermopylaeDuelGame", "ThermopylaeDuelState", "chance_outcomes_of"]

SHORT_NAME = "python_thermopylae_duel"
_SIDE = ("G", "P")
_DEFAULT_PARAMS: dict = {"member": "full"}
_MEMBERS = {"full": FULL_DUEL, **SMALL_DUELS}

_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="Thermopylae duel, Greek (player 0) against Persian (player 1)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=NUM_PLAYERS,
    min_num_players=NUM_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_DEFAULT_PARAMS,
)


def _engine_for(params: dict) -> DuelGame:
    """The rules engine of a duel with these game parameters (an unknown member: one-line ValueError)."""
    member = params.get("member", "full")
    if member not in _MEMBERS:
        raise ValueError(f"member must be one of {', '.join(_MEMBERS)}, got {member!r}")
    return DuelGame(_MEMBERS[member])


def _game_info(engine: DuelGame) -> pyspiel.GameInfo:
    return pyspiel.GameInfo(
        num_distinct_actions=NUM_ACTIONS,
        max_chance_outcomes=NUM_CARDS,
        num_players=NUM_PLAYERS,
        min_utility=-1.0,
        max_utility=1.0,
        utility_sum=0.0,
        max_game_length=MAX_GAME_ACTIONS,
    )


class ThermopylaeDuelGame(pyspiel.Game):
    """``python_thermopylae_duel``: Greek (player 0) against Persian (player 1)."""

    def __init__(self, params: dict | None = None) -> None:
        merged = {**_DEFAULT_PARAMS, **(params or {})}
        self.engine = _engine_for(merged)
        super().__init__(_GAME_TYPE, _game_info(self.engine), params or {})

    def new_initial_state(self) -> ThermopylaeDuelState:
        """The state before the deal (a chance node)."""
        return ThermopylaeDuelState(self)

    def make_py_observer(self, iig_obs_type: pyspiel.IIGObservationType | None = None,
                         params: dict | None = None) -> PieceObserver:
        """A player's observer: the environments' observation pieces
        ([`thermopylae_env.duel.layout.OBSERVATION_PIECES`][])."""
        return PieceObserver(iig_obs_type, params, OBSERVATION_PIECES, _write_view)

    def max_chance_nodes_in_history(self) -> int:
        """The deal (one node per card of both decks) and two random discards per discard card, each of
        which is played at most once (it then lies in the discard pile for good)."""
        decks = self.engine.deck_ids
        discard_cards = sum(self.engine.card_kinds[card] == DISCARD_KIND for deck in decks for card in deck)
        return len(decks[0]) + len(decks[1]) + 2 * discard_cards

    def deserialize_state(self, text: str) -> ThermopylaeDuelState:
        """The state that ``state.serialize()`` wrote as ``text``: its history replayed and checked; anything
        else is refused with a one-line ``ValueError``
        ([`state_from_text`][thermopylae_agents.openspiel._common.state_from_text]). Never unpickles."""
        return state_from_text(self, text)


class ThermopylaeDuelState(pyspiel.State):
    """A duel: the deal so far, then the engine's [`DuelState`][thermopylae_env.duel.state.DuelState] and a
    discard card waiting for the cards it hits."""

    def __init__(self, game: ThermopylaeDuelGame) -> None:
        super().__init__(game)
        self._engine: DuelGame = game.engine
        self._deal: tuple[list[int], list[int]] = ([], [])
        self.engine_state: DuelState | None = None  # None until both decks are dealt
        self._waiting = -1  # an action waiting for its random discards
        self._picks_needed = 0
        self._picks: list[int] = []  # card ids hit so far
        self._logs: tuple[list[str], list[str]] = ([], [])  # each player's history as seen

    def __deepcopy__(self, memo: dict) -> ThermopylaeDuelState:
        # OpenSpiel clones a Python state with deepcopy; the engine (static tables) is shared, not copied.
        other = ThermopylaeDuelState(self.get_game())
        other._deal = (self._deal[0][:], self._deal[1][:])
        other.engine_state = None if self.engine_state is None else self.engine_state.copy()
        other._waiting = self._waiting
        other._picks_needed = self._picks_needed
        other._picks = self._picks[:]
        other._logs = (self._logs[0][:], self._logs[1][:])
        return other

    # ------------------------------------------------------------------ OpenSpiel's State API

    def current_player(self) -> int:
        state = self.engine_state
        if state is None or self._waiting >= 0:
            return pyspiel.PlayerId.CHANCE
        if state.terminated:
            return pyspiel.PlayerId.TERMINAL
        return state.current_player

    def _legal_actions(self, player: int) -> list[int]:
        return self._engine.legal_actions(self.engine_state)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        listed, _ = self._listed_outcomes()
        return [(card, 1.0 / len(listed)) for card in listed]

    def _listed_outcomes(self) -> tuple[list[int], str]:
        """The outcomes (card ids) of this chance node, ascending, and the node's name for an error
        message: the one list both `chance_outcomes` and the check of an applied outcome read."""
        state = self.engine_state
        if state is None:
            decks = self._engine.deck_ids
            player = GREEK if len(self._deal[GREEK]) < len(decks[GREEK]) else 1 - GREEK
            return sorted(set(decks[player]) - set(self._deal[player])), \
                f"the {PLAYER_NAMES[player].capitalize()} deck's deal"
        victim = 1 - state.current_player
        return sorted(set(state.hands[victim]) - set(self._picks)), \
            f"a random discard from the {PLAYER_NAMES[victim].capitalize()} hand"

    def _apply_action(self, action: int) -> None:
        if self.engine_state is None or self._waiting >= 0:
            refuse_unlisted_outcome(action, *self._listed_outcomes())
        if self.engine_state is None:
            self._deal_card(action)
        elif self._waiting >= 0:
            self._pick(action)
        else:
            self._act(action)

    def _action_to_string(self, player: int, action: int) -> str:
        if player != pyspiel.PlayerId.CHANCE:
            return decode_action(action, player)
        name = self._engine.card_names[action]
        if self.engine_state is None:
            return f"deal {PLAYER_NAMES[action // DECK_SIZE]} card {action} ({name})"
        return f"discard card hits {name} ({action})"

    def is_terminal(self) -> bool:
        return self.engine_state is not None and self.engine_state.terminated

    def serialize(self) -> str:
        """The state as data, one line of JSON: the game's string and the history from the initial state
        ([`state_to_text`][thermopylae_agents.openspiel._common.state_to_text]); read back by
        ``game.deserialize_state``."""
        return state_to_text(self)

    def returns(self) -> list[float]:
        if self.engine_state is None:
            return [0.0, 0.0]
        return [float(r) for r in self._engine.returns(self.engine_state)]

    def __str__(self) -> str:
        if self.engine_state is None:
            return f"dealing: Greek {self._deal[0]} Persian {self._deal[1]}"
        text = self._engine.render(self.engine_state)
        if self._waiting >= 0:
            text += f"\nwaiting for {self._picks_needed} random discards, hit so far {self._picks}"
        return text

    # ------------------------------------------------------------------ transitions

    def _deal_card(self, card: int) -> None:
        self._deal[card // DECK_SIZE].append(card)
        if len(self._deal[1 - GREEK]) == len(self._engine.deck_ids[1 - GREEK]):
            events: list = []
            self.engine_state = self._engine.new_state(self._deal[0], self._deal[1], events)
            self._log(events)

    def _act(self, action: int) -> None:
        # The engine's illegal_reason expects an id of the action space (the environments check that
        # first); an id outside it could pass its phase tests.
        if not 0 <= action < NUM_ACTIONS:
            raise ValueError(f"illegal action {action}: outside 0..{NUM_ACTIONS - 1}")
        reason = self._engine.illegal_reason(self.engine_state, action)
        if reason is not None:
            raise ValueError(f"illegal action {action}: {reason}")
        # The engine says whether the action draws random discards, and how many: it is played on a
        # copy, and a discard card that hits cards at random stops at the draw and waits for its chance
        # nodes.
        trial = self.engine_state.copy()
        events: list = []
        try:
            self._engine.apply(trial, action, _PickProbe(), events)
        except _PickRequest as request:
            self._waiting, self._picks_needed = action, request.count
            return
        self.engine_state = trial
        self._log(events)

    def _pick(self, card: int) -> None:
        self._picks.append(card)
        if len(self._picks) < self._picks_needed:
            return
        state = self.engine_state
        hand = state.hands[1 - state.current_player]
        chance = ScriptedChance(picks=[hand.index(c) for c in self._picks])
        events: list = []
        self._engine.apply(state, self._waiting, chance, events)
        chance.check_used()
        self._waiting, self._picks_needed, self._picks = -1, 0, []
        self._log(events)

    # ------------------------------------------------------------------ the players' views

    def _log(self, events: list[dict]) -> None:
        """Add what each player sees of the engine's ``events`` to that player's history."""
        kind = self._engine.card_kinds
        for viewer in (0, 1):
            log = self._logs[viewer]
            for event in events:
                token = _seen(event, viewer, kind)
                if token:
                    log.append(token)

    def information_state_text(self, player: int) -> str:
        """``player``'s history as seen (see the module docstring)."""
        return f"{PLAYER_NAMES[player]} | " + " ".join(self._logs[player])

    def observation_text(self, player: int) -> str:
        """``player``'s observation as text: each piece's raw values (the tensor times its scale)."""
        out = np.zeros(OBSERVATION_PIECES[-1].stop, np.float32)
        _write_view(self, player, out)
        parts = []
        for piece in OBSERVATION_PIECES:
            values = np.rint(out[piece.slice] * piece.scale).astype(int).tolist()
            parts.append(f"{piece.name} {' '.join(str(v) for v in values)}")
        return " | ".join(parts)


def _seen(event: dict, viewer: int, kind: tuple[int, ...]) -> str:
    """What ``viewer`` sees of one engine event, as a token ("" for nothing)."""
    what = event["type"]
    if what == "deal":
        return "hand " + ",".join(str(kind[c]) for c in sorted(event["hands"][viewer], key=kind.__getitem__))
    side = _SIDE[event["player"]] if "player" in event else ""
    auto = "(auto)" if event.get("auto") else ""
    if what == "draw":
        return f"draw{kind[event['card']]}" if event["player"] == viewer else f"{side}draw"
    if what == "add":
        return f"add{event['kind']}" if event["player"] == viewer else ""
    if what == "play_discard_card":
        hit = ",".join(str(kind[c]) for c in sorted(event["discarded"], key=kind.__getitem__))
        return f"{side}x{DISCARD_KIND}:{hit}"
    if what == "discard":
        return f"{side}x{kind[event['card']]}"
    if what in ("attack", "defence"):
        return f"{side}{what}:" + ",".join(str(kind[c]) for c in sorted(event["cards"], key=kind.__getitem__))
    if what == "combat":
        return f"tokens{event['tokens']}"
    if what == "end":
        return f"end:{_SIDE[event['winner']]}"
    return f"{side}{what}{auto}"  # done_discarding, no_attack, no_defence


def _write_view(state: ThermopylaeDuelState, player: int, out: np.ndarray) -> None:
    if state.engine_state is not None:
        state._engine.observe(state.engine_state, player, out)


class _PickRequest(Exception):
    def __init__(self, count: int) -> None:
        super().__init__(f"{count} random discards")
        self.count = count


class _PickProbe:
    """The generator given to a trial move: a draw of random discards stops the move, saying how many."""

    def choice(self, n: int, size: int, replace: bool) -> np.ndarray:
        raise _PickRequest(int(size))


def chance_outcomes_of(greek_order: list[int], persian_order: list[int]) -> list[int]:
    """The deal's chance outcomes, in order, of given deck orders (card ids, top first)."""
    return [int(c) for c in greek_order] + [int(c) for c in persian_order]


register_game(_GAME_TYPE, ThermopylaeDuelGame)
