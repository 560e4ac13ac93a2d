"""The co-op game *Thermopyles* as the OpenSpiel Python game ``python_thermopylae_coop``.

The 1 to 4 Spartan seats play as one team (the rules engine's view: hands are open to the whole team and
every decision is the team's), so for OpenSpiel it is a one-player game against chance; the game
parameter ``seats`` (1..4, default 1) is the engine's ``num_players``. Every move is played by the
reference engine [`thermopylae_env.coop.rules.CoopGame`][]; this module only makes its chance explicit.

Chance nodes (outcome ids, each uniform over what is left):

* the deal: the Spartan deck top card first, one card per chance node, outcome = card id ``0..19``;
  then the Persian deck, outcome = ``20 + row`` (rows ``0..27``). The game starts from
  ``CoopGame.new_state(spartan_order, persian_order)`` of these orders.
* the dice of a fight: after a fight action that rolls ``n`` dice (support plus the location die) come
  ``n`` chance nodes, outcome = ``48 + face - 1`` (faces 1..6); the fight is then played by the engine
  with exactly these dice.

``apply_action`` refuses an outcome its chance node does not list, and an action not in ``legal_actions()``,
with a one-line ``ValueError`` and the state unchanged.

Actions are the 72 of ``thermopylae/Coop-v0`` ([`thermopylae_env.coop.layout`][]). The observation
tensor is the env's 115-value observation (zeros during the deal). The information-state string is the
team's whole history as seen: the Spartan values and Persian rows drawn so far and the team's actions
and dice in order; the information-state tensor is the observation, which is a sufficient statistic here
(the team sees everything but the order of the two decks, and given what it has seen that order is
uniform over the cards left).
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
from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.layout import (
    MAX_PLAYERS,
    NUM_ACTIONS,
    NUM_SUPPORT,
    PIECES,
    SPARTAN_DECK_SIZE,
    decode_action,
)
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import CoopState

__all__ = [
    "SHORT_NAME",
    "SPARTAN_OUTCOME",
    "PERSIAN_OUTCOME",
    "DIE_OUTCOME",
    "NUM_CHANCE_OUTCOMES",
    "MAX_DECISIONS",
    "ThermopylaeCoopGame",
    "ThermopylaeCoopState",
    "chance_outcomes_of",
]

SHORT_NAME = "python_thermopylae_coop"
SPARTAN_OUTCOME = 0
PERSIAN_OUTCOME = SPARTAN_OUTCOME + SPARTAN_DECK_SIZE
DIE_OUTCOME = PERSIAN_OUTCOME + PERSIAN_DECK_SIZE
NUM_CHANCE_OUTCOMES = DIE_OUTCOME + 6
# Team decisions in one game, at most: every action of the acting seat (MAIN) spends a Spartan card or
# moves the marker (at most 6 times, the 6th loses), every MAIN action makes at most 2 draw offers, and
# every discard follows a draw from the Spartan deck (at most 20 - 4 cards are left after the deal).
_MAX_MAIN = SPARTAN_DECK_SIZE + 6
MAX_DECISIONS = _MAX_MAIN + 2 * _MAX_MAIN + (SPARTAN_DECK_SIZE - 4)
_PHASE_NAMES = ("main", "draw offer", "discard")

_DEFAULT_PARAMS = {"seats": 1}
_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="Thermopylae co-op (Thermopyles), the Spartan seats as one team",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=1,
    min_num_players=1,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_DEFAULT_PARAMS,
)
_GAME_INFO = pyspiel.GameInfo(
    num_distinct_actions=NUM_ACTIONS,
    max_chance_outcomes=NUM_CHANCE_OUTCOMES,
    num_players=1,
    min_utility=-1.0,
    max_utility=1.0,
    max_game_length=MAX_DECISIONS,
)


class ThermopylaeCoopGame(pyspiel.Game):
    """``python_thermopylae_coop``: parameter ``seats`` (1..4) is the number of Spartan seats of the team."""

    def __init__(self, params: dict | None = None) -> None:
        super().__init__(_GAME_TYPE, _GAME_INFO, params or {})
        seats = self.get_parameters()["seats"]
        if not 1 <= seats <= MAX_PLAYERS:
            raise ValueError(f"seats must be 1..{MAX_PLAYERS}, got {seats}")
        self.engine = CoopGame(seats)

    def new_initial_state(self) -> ThermopylaeCoopState:
        """The state before the deal (a chance node)."""
        return ThermopylaeCoopState(self)

    def make_py_observer(self, iig_obs_type: pyspiel.IIGObservationType | None = None,
                         params: dict | None = None) -> PieceObserver:
        """The team's observer: the env's observation pieces ([`thermopylae_env.coop.layout.PIECES`][])."""
        return PieceObserver(iig_obs_type, params, PIECES, _write_view)

    def max_chance_nodes_in_history(self) -> int:
        """The deal (one node per card of both decks) and the dice: a fight rolls at most one location die
        and spends a Spartan card (so at most 20 such dice), plus one die per support card, and the
        support is never refilled (at most 4 such dice in a game)."""
        return SPARTAN_DECK_SIZE + len(self.engine.persian) + SPARTAN_DECK_SIZE + NUM_SUPPORT

    def deserialize_state(self, text: str) -> ThermopylaeCoopState:
        """The state that ``state.serialize()`` wrote as ``text``: its history replayed and checked; anything
        else is refused with a one-line ``ValueError``
        ([`state_from_text`][thermopylae_agents.openspiel._common.state_from_text]). Never unpickles."""
        return state_from_text(self, text)


class ThermopylaeCoopState(pyspiel.State):
    """A co-op game: the deal so far, then the engine's [`CoopState`][thermopylae_env.coop.state.CoopState]
    and a fight waiting for dice."""

    def __init__(self, game: ThermopylaeCoopGame) -> None:
        super().__init__(game)
        self._engine: CoopGame = game.engine
        self._spartan: list[int] = []  # the deal so far, top card first
        self._persian: list[int] = []
        self.engine_state: CoopState | None = None  # None until both decks are dealt
        self._fight = -1  # a fight action waiting for its dice
        self._dice_needed = 0
        self._dice: list[int] = []
        self._moves: list[str] = []  # the team's actions and the dice, in order

    def __deepcopy__(self, memo: dict) -> ThermopylaeCoopState:
        # OpenSpiel clones a Python state with deepcopy; the engine (static tables) is shared, not copied.
        other = ThermopylaeCoopState(self.get_game())
        other._spartan = self._spartan[:]
        other._persian = self._persian[:]
        other.engine_state = None if self.engine_state is None else self.engine_state.copy()
        other._fight = self._fight
        other._dice_needed = self._dice_needed
        other._dice = self._dice[:]
        other._moves = self._moves[:]
        return other

    # ------------------------------------------------------------------ OpenSpiel's State API

    def current_player(self) -> int:
        state = self.engine_state
        if state is None or self._fight >= 0:
            return pyspiel.PlayerId.CHANCE
        if state.terminated:
            return pyspiel.PlayerId.TERMINAL
        return 0

    def _legal_actions(self, player: int) -> list[int]:
        return np.flatnonzero(self._engine.legal_action_mask(self.engine_state)).tolist()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        listed, _ = self._listed_outcomes()
        return [(outcome, 1.0 / len(listed)) for outcome in listed]

    def _listed_outcomes(self) -> tuple[list[int], str]:
        """The outcomes of this chance node, ascending, and the node's name for an error message: the one
        list both `chance_outcomes` and the check of an applied outcome read."""
        if self.engine_state is None:
            if len(self._spartan) < SPARTAN_DECK_SIZE:
                left = sorted(set(range(SPARTAN_DECK_SIZE)) - set(self._spartan))
                return [SPARTAN_OUTCOME + card for card in left], "the Spartan deck's deal"
            left = sorted(set(range(len(self._engine.persian))) - set(self._persian))
            return [PERSIAN_OUTCOME + row for row in left], "the Persian deck's deal"
        return [DIE_OUTCOME + face for face in range(6)], "a die"

    def _apply_action(self, action: int) -> None:
        if self.engine_state is None or self._fight >= 0:
            refuse_unlisted_outcome(action, *self._listed_outcomes())
        if self.engine_state is None:
            self._deal(action)
        elif self._fight >= 0:
            self._roll(action)
        else:
            self._act(action)

    def _action_to_string(self, player: int, action: int) -> str:
        if player != pyspiel.PlayerId.CHANCE:
            return decode_action(action)
        if action < PERSIAN_OUTCOME:
            return f"deal Spartan card {action} (value {self._engine.spartan[action]})"
        if action < DIE_OUTCOME:
            card = self._engine.persian[action - PERSIAN_OUTCOME]
            return f"deal Persian row {action - PERSIAN_OUTCOME} ({card.white}/{card.red}" \
                   f"{' bonus' if card.bonus else ''})"
        return f"die {action - DIE_OUTCOME + 1}"

    def is_terminal(self) -> bool:
        return self.engine_state is not None and self.engine_state.terminated

    def serialize(self) -> str:
        """The state as data, one line of JSON: the game's string and the history from the initial state
        ([`state_to_text`][thermopylae_agents.openspiel._common.state_to_text]); read back by
        ``game.deserialize_state``."""
        return state_to_text(self)

    def returns(self) -> list[float]:
        if self.engine_state is None:
            return [0.0]
        return [self._engine.returns(self.engine_state)]

    def __str__(self) -> str:
        if self.engine_state is None:
            return f"dealing: Spartan {self._spartan} Persian {self._persian}"
        state = self.engine_state
        return (f"{self.observation_text(0)}\nSpartan deck {list(state.spartan_deck)}\n"
                f"Persian deck {list(state.persian_deck)}\nfight waiting {self._fight} dice {self._dice}")

    # ------------------------------------------------------------------ transitions

    def _deal(self, outcome: int) -> None:
        if outcome < PERSIAN_OUTCOME:
            self._spartan.append(outcome - SPARTAN_OUTCOME)
        else:
            self._persian.append(outcome - PERSIAN_OUTCOME)
        if len(self._persian) == len(self._engine.persian):
            self.engine_state = self._engine.new_state(self._spartan, self._persian)

    def _act(self, action: int) -> None:
        reason = self._engine.illegal_reason(self.engine_state, action)
        if reason is not None:
            raise ValueError(f"illegal action {action}: {reason}")
        self._moves.append(str(action))
        # The engine says whether the action rolls dice, and how many: it is played on a copy, and a
        # fight that rolls stops at its first roll and waits for its dice as chance nodes.
        trial = self.engine_state.copy()
        try:
            self._engine.apply(trial, action, _DiceProbe())
        except _DiceRequest as request:
            self._fight, self._dice_needed = action, request.count
            return
        self.engine_state = trial

    def _roll(self, outcome: int) -> None:
        face = outcome - DIE_OUTCOME + 1
        self._dice.append(face)
        self._moves.append(f"d{face}")
        if len(self._dice) == self._dice_needed:
            chance = ScriptedChance(dice=self._dice)
            self._engine.apply(self.engine_state, self._fight, chance)
            chance.check_used()
            self._fight, self._dice_needed, self._dice = -1, 0, []

    # ------------------------------------------------------------------ the team's view

    def information_state_text(self, player: int) -> str:
        """The team's history as seen: the cards drawn so far (Spartan values, Persian rows, in deal
        order) and its actions and dice. The rest of the deal is hidden until drawn."""
        state = self.engine_state
        if state is None:
            return "dealing"
        spartan = " ".join(str(self._engine.spartan[c]) for c in state.spartan_order[: state.spartan_pos])
        persian = " ".join(str(r) for r in state.persian_order[: state.persian_pos])
        return f"spartan {spartan} | persian {persian} | moves {' '.join(self._moves)}"

    def observation_text(self, player: int) -> str:
        """The env's observation as text (what `_write_view` writes, readably)."""
        state = self.engine_state
        if state is None:
            return "dealing"
        values = self._engine.spartan
        hands = " / ".join(" ".join(str(v) for v in sorted(values[c] for c in hand)) for hand in state.hands)
        line = " ".join(self._slot_text(slot) for slot in (state.slot1, state.slot2))
        unseen = " ".join(str(v) for v in sorted(values[c] for c in state.spartan_deck))
        phase = "over" if state.terminated else _PHASE_NAMES[state.phase]
        waiting = f" rolling {len(self._dice)}/{self._dice_needed} dice" if self._fight >= 0 else ""
        return (f"{phase}{waiting} seat {state.current_player} recipient {state.recipient} | hands {hands} | "
                f"line {line} | marker {state.marker} support {state.support} | "
                f"graveyard {len(state.graveyard)} persian discard {len(state.persian_discard)} "
                f"offers {state.offers} | "
                f"spartan deck {unseen} | persian deck {sorted(state.persian_deck)}")

    def _slot_text(self, row: int) -> str:
        if row < 0:
            return "-"
        card = self._engine.persian[row]
        return f"{card.white}/{card.red}{'*' if card.bonus else ''}"


def _write_view(state: ThermopylaeCoopState, player: int, out: np.ndarray) -> None:
    if state.engine_state is not None:
        state._engine.observe(state.engine_state, out)


class _DiceRequest(Exception):
    def __init__(self, count: int) -> None:
        super().__init__(f"{count} dice")
        self.count = count


class _DiceProbe:
    """The generator given to a trial move: its first roll stops the move, saying how many dice."""

    def integers(self, low: int, high: int, size: int) -> np.ndarray:
        raise _DiceRequest(int(size))


def chance_outcomes_of(spartan_order: list[int], persian_order: list[int]) -> list[int]:
    """The deal's chance outcomes, in order, of given deck orders (card ids and rows, top first)."""
    return [SPARTAN_OUTCOME + c for c in spartan_order] + [PERSIAN_OUTCOME + r for r in persian_order]


register_game(_GAME_TYPE, ThermopylaeCoopGame)
