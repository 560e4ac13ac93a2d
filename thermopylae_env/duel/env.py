"""``thermopylae/DuelGreek-v0`` and ``thermopylae/DuelPersian-v0``: one side of the duel against a built-in
opponent, as single-agent Gymnasium environments.

Thin adapters over the rules engine [`thermopylae_env.duel.rules`][], on the shared base
[`thermopylae_env.core.TurnBasedEnv`][] (step guard, illegal-action policy). The opponent is part of
the environment: a hand-written player (default) or a random player from
[`thermopylae_env.duel.opponents`][], or any callable or object the caller passes in (a saved model is
loaded by the caller, e.g. with ``thermopylae_agents``, never by the env).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from thermopylae_env.actions import IllegalActionError, as_action_index
from thermopylae_env.core import TurnBasedEnv
from thermopylae_env.duel.config import DuelConfig, DuelConfigError, duel_config_from_mapping
from thermopylae_env.duel.layout import (
    GREEK,
    HAND_LIMIT,
    NUM_ACTIONS,
    OBS_SIZE,
    PERSIAN,
    PLAYER_NAMES,
    decode_action,
    encode_action,
)
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian, RandomAgent
from thermopylae_env.duel.render import render_duel_rgb
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.duel.state import DuelState

__all__ = ["DuelGreekEnv", "DuelPersianEnv", "DuelEnv", "make_opponent"]

OpponentFn = Callable[[np.ndarray, np.ndarray], int]

_OPPONENT_CHOICES = (
    "opponent must be 'heuristic', 'random', a callable (observation, action_mask) -> action, "
    "or an object with such an act(observation, action_mask[, rng]) method"
)


class EnvRandomOpponent:
    """A uniformly random legal player that draws from its env's ``np_random`` at each move.

    An object rather than a closure, so that a copied (``copy.deepcopy``) or pickled env gets an opponent
    that draws from the copy's generator, and the copy continues exactly as the original would.
    """

    def __init__(self, env: gym.Env) -> None:
        self.env = env
        self.agent = RandomAgent()

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.agent.act(observation, action_mask, self.env.np_random)


def _check_callable(fn: Any, what: str) -> None:
    """Refuse ``fn`` unless it can be called as ``fn(observation, action_mask)``."""
    if not callable(fn):
        raise ValueError(f"{what} is not callable; {_OPPONENT_CHOICES}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have no signature: let them be tried
        return
    try:
        signature.bind(None, None)
    except TypeError as err:
        raise ValueError(f"{what} cannot be called as (observation, action_mask): {err}; "
                         f"{_OPPONENT_CHOICES}") from None


def make_opponent(opponent: Any, side: int, env: gym.Env) -> tuple[OpponentFn, str]:
    """Turn the ``opponent=`` argument into ``act(observation, mask) -> int`` for ``side``, and a label.

    Refuses (``ValueError``) anything that cannot act: a string other than ``"heuristic"``/``"random"``
    (a model path included: the env loads no file), a class, a non-callable, a callable or ``act`` that
    cannot take ``(observation, action_mask)``. An object with ``check_fits(observation_space,
    action_space)`` (as ``thermopylae_agents``' SB3 agent has) is asked whether it fits the duel's spaces.
    Randomness of the random player is drawn from ``env.np_random`` at each call, so that seeding the env
    seeds the opponent too.
    """
    if isinstance(opponent, str) and opponent == "heuristic":
        limit = getattr(getattr(env, "game", None), "hand_limit", HAND_LIMIT)  # a reduced duel's limit
        player = HeuristicGreek(hand_limit=limit) if side == GREEK else HeuristicPersian(hand_limit=limit)
        return player.act, "heuristic"
    if isinstance(opponent, str) and opponent == "random":
        return EnvRandomOpponent(env).act, "random"
    if isinstance(opponent, (str, bytes, os.PathLike)):
        shown = os.fsdecode(opponent) if not isinstance(opponent, bytes) else repr(opponent)
        raise ValueError(
            f"opponent {shown[:200]!r} is not 'heuristic' or 'random', and the env loads no model file: "
            "load a saved policy with thermopylae_agents "
            "(e.g. thermopylae_agents.policies.sb3_agent.SB3Agent(path)) "
            f"and pass the object; {_OPPONENT_CHOICES}"
        )
    if isinstance(opponent, type):
        name = opponent.__name__
        raise ValueError(f"opponent is the class {name}, not a player: pass an instance ({name}(...)); "
                         f"{_OPPONENT_CHOICES}")
    act = getattr(opponent, "act", None)
    if act is not None:
        label = getattr(opponent, "label", None)
        label = label if isinstance(label, str) and label else type(opponent).__name__
        _check_callable(act, f"opponent {label}'s act")
        check_fits = getattr(opponent, "check_fits", None)
        if callable(check_fits):
            check_fits(spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32), spaces.Discrete(NUM_ACTIONS))
        return act, label
    if callable(opponent):
        label = getattr(opponent, "__name__", type(opponent).__name__)
        _check_callable(opponent, f"opponent {label}")
        return opponent, label
    raise ValueError(f"{_OPPONENT_CHOICES}; got {repr(opponent)[:200]}")


class DuelEnv(TurnBasedEnv):
    """The two-player card game *Thermopylae* (Greek against Persian), seen from one side.

    ## Description

    Each side has its own 52-card deck: troop cards of force 10..50 (the Persian's force-10 cards are the
    Attack cards he needs to attack), three types of strategy cards (multipliers) and a discard card
    (Xerxes Commands / Leonidas Strategy) that makes the opponent discard two cards at random. Each turn
    both draw (the Persian first: his empty deck wins the game for the Greeks), then the Persian and then
    the Greek may play discard cards and discard unwanted cards down to at most 7, then the Persian may
    attack with an Attack card, troops and distinct strategy cards: total = sum of forces x (strategy
    cards + 1). The Greek sees the attack and may defend the same way; the Greeks lose (attack - defence)
    / 10 of their 10 troop tokens when the attack is larger. No tokens left: the Persians win. Rules in
    ``seeds/rules_duel.md``.

    The agent plays one side; the other is played by ``opponent``, which sees only its own side's
    observation and mask. Every choice is a sequence of *micro-actions* (discard one card, add one card
    to the attack, commit), so one flat action space serves both sides and all phases. Decisions with a
    single possibility are made by the engine.

    ## Action Space

    ``Discrete(21)``, the same for both sides and all phases; ``info["action_mask"]`` (int8) and
    [`action_masks`][thermopylae_env.core.TurnBasedEnv.action_masks] (bool, for sb3-contrib's ``MaskablePPO``)
    mark the legal ones. k = card kind of the agent's side (0..4: force 10..50, the Persian's kind 0 being the
    Attack card; 5..7: the three strategy types; 8: the discard card). The pieces are those of
    [`thermopylae_env.duel.layout.ACTION_PIECES`][]:

    | index | piece | action | legal |
    | --- | --- | --- | --- |
    | 0 | play_discard_card | play the discard card (opponent discards 2) | own discard phase, card held |
    | 1..9 | discard | discard a card of kind k = index - 1 (0..8) | own discard phase, card held |
    | 10 | done_discarding | done discarding | own discard phase, at most 7 cards held |
    | 11..18 | add | add a card of kind k = index - 11 (0..7) to the build | in hand, strategy types once |
    | 19 | commit | commit the attack (an Attack card in it) / defence (a force card) | building |
    | 20 | decline | decline the attack / do not defend (added cards go back to the hand) | building |

    [`decode_action`][thermopylae_env.duel.env.DuelEnv.decode_action] names an index from the agent's side
    (``"add Immortals (50) to attack"``), [`encode_action`][thermopylae_env.duel.env.DuelEnv.encode_action]
    does the reverse.

    ## Observation Space

    ``Box(0, 1, (56,), float32)``, the agent's side only (the opponent's hand and both deck orders are
    never in it). Each entry is a count or number divided by the piece's scale; the pieces are those of
    [`thermopylae_env.duel.layout.OBSERVATION_PIECES`][]:

    | slice | piece | content | scale |
    | --- | --- | --- | --- |
    | 0:4 | phase | phase one-hot: Persian discard, Greek discard, attack, defence (all 0 once over) | 1 |
    | 4:5 | to_act | 1 if the agent must act | 1 |
    | 5:6 | is_persian | 1 if the agent is the Persian | 1 |
    | 6:15 | hand | own hand per kind | 8 |
    | 15:23 | build | own cards added so far to the attack/defence per kind 0..7 | 8 |
    | 23:24 | opp_hand_size | opponent hand size | 8 |
    | 24:25 | own_deck | own deck size | 48 |
    | 25:26 | opp_deck | opponent deck size | 48 |
    | 26:35 | own_discards | own discard pile per kind | 8 |
    | 35:44 | opp_discards | opponent discard pile per kind | 8 |
    | 44:45 | tokens | Greek tokens | 10 |
    | 45:46 | turn | turn | 49 |
    | 46:54 | table | Persian attack on the table per kind 0..7 (defence phase) | 8 |
    | 54:55 | table_total | attack total on the table | 800 |
    | 55:56 | build_total | total of the own attack/defence being built | 800 |

    ## Rewards

    +1 on the step that wins, -1 on the step that loses (also when the loss happens during the
    opponent's moves), 0 otherwise. An illegal action (``illegal_action="loss"``) ends the episode with
    ``illegal_action_penalty``.

    ## Starting State

    Both decks shuffled, four cards each, 10 Greek tokens, turn 1 drawn. ``reset`` plays the opponent's
    moves until the agent must act: the Persian agent starts at his first discard phase, the Greek agent
    at his (after the Persian's). ``reset`` takes no options (``options`` must be ``None`` or ``{}``).

    ## Episode End

    Terminated when the Persian must draw from an empty deck (Greeks win; at most 49 turns) or the Greeks
    have no tokens left (Persians win), or on an illegal action in ``"loss"`` mode. The game is finite
    (at most 1632 micro-actions), so there is no truncation. ``info["is_success"]`` is set on the final
    step.

    When the opponent fails (raises, returns an illegal action or a non-integer) during ``step`` or
    ``reset``, its error is raised and the env refuses every further ``step`` with a ``RuntimeError``
    saying why, until the next ``reset``.

    ## Arguments

    * ``opponent``: ``"heuristic"`` (default, [`thermopylae_env.duel.opponents.HeuristicGreek`][] /
      [`HeuristicPersian`][thermopylae_env.duel.opponents.HeuristicPersian]), ``"random"`` (drawing from
      ``env.np_random``), a callable ``(observation, action_mask) -> action``, or an object with such an
      ``act(observation, action_mask[, rng])`` method (called with two arguments; an object with
      ``check_fits(observation_space, action_space)`` is asked whether it fits). The env loads no model
      file: a string other than the two names (a path included), a class or anything that cannot act
      raises ``ValueError`` when the env is made. Load a saved policy with ``thermopylae_agents`` (e.g.
      ``SB3Agent(path)``) and pass the object.
    * ``illegal_action``: ``"loss"`` (default) or ``"raise"`` (``IllegalActionError``, nothing changes);
      out-of-space actions always raise ``TypeError``/``ValueError`` and change nothing.
      ``"replace"``: the nearest legal action is played (see [`thermopylae_env.actions`][]).
    * ``illegal_action_penalty`` (float, default -1.0)
    * ``render_mode``: ``None``, ``"ansi"`` (the whole table, both hands: for people, not agents) or
      ``"rgb_array"`` (a (360, 640, 3) uint8 picture of the table seen by the agent's side, the opponent's
      hand face down: [`render_duel_rgb`][thermopylae_env.duel.render.render_duel_rgb];
      needs Pillow)
    * ``record_events`` (bool, default False): the engine's events of each step (both sides' moves, the
      cards drawn: hidden information, for records and display) in ``info["events"]``
    * ``config`` ([`DuelConfig`][thermopylae_env.duel.config.DuelConfig] or its JSON form
      ([`DuelConfig.to_dict`][thermopylae_env.duel.config.DuelConfig.to_dict]), default the full game): a
      reduced duel (``SMALL_DUELS``), played by the reference engine with the same observation layout;
      the heuristic opponent takes its hand limit. The vector envs play the full game only. The Greek env
      refuses (``DuelConfigError``, one line) a duel in which some game can end before the Greek's first
      move ([`DuelConfig.greek_may_never_move`][thermopylae_env.duel.config.DuelConfig.greek_may_never_move]):
      its ``reset`` would return a finished game.

    ``env.game`` is the [`DuelGame`][thermopylae_env.duel.rules.DuelGame], ``env.state`` the live
    [`DuelState`][thermopylae_env.duel.state.DuelState] (``None`` before the first reset).

    ## Version History

    The version number of an id changes whenever the same seed and actions could give a different
    episode (other observations, masks, rewards or ends): a rule change, a new observation or action
    layout, another default opponent or a change of a default deck (the Persian's included) is a new
    version. Additions that leave every existing episode as it was (a new argument with a default that
    keeps the old behaviour, a new render mode) keep the version.

    * v0: initial version. Later changes that kept every episode: the shared env base
      ([`thermopylae_env.core`][]), the layout module, model-file opponents no longer loaded by the env,
      NumPy integer seeds accepted, unknown reset options refused.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    side: int = GREEK

    encode_action = staticmethod(encode_action)

    def __init__(
        self,
        opponent: Any = "heuristic",
        illegal_action: str = "loss",
        illegal_action_penalty: float = -1.0,
        render_mode: str | None = None,
        record_events: bool = False,
        config: DuelConfig | Mapping[str, Any] | None = None,
    ) -> None:
        if config is not None and not isinstance(config, DuelConfig):
            config = duel_config_from_mapping(config)  # the JSON form (a record's options, a config file)
        why = None if config is None or self.side != GREEK else config.greek_may_never_move()
        if why is not None:
            # Such a duel is a sound game (the solvers and the Persian env play it), but reset() has no way
            # to say that the game it returns is already over: refused here, before anything is built.
            raise DuelConfigError(
                f"duel config {config.name[:40]!r}: a game can end before the "
                f"Greek's first move ({why}); DuelGreekEnv cannot start it, DuelPersianEnv can")
        self._init_core(DuelGame(config), NUM_ACTIONS, illegal_action, illegal_action_penalty, render_mode,
                        record_events)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)
        self.opponent_side = 1 - self.side
        self._opponent_act, self.opponent_label = make_opponent(opponent, self.opponent_side, self)

    @property
    def game(self) -> DuelGame:
        """The static game (card tables, action layout)."""
        return self._game

    @property
    def state(self) -> DuelState | None:
        """The engine state of the running episode (``None`` before the first reset)."""
        return self._state

    def decode_action(self, action: int) -> str:
        """Readable name of ``action`` from the agent's side."""
        return decode_action(action, self.side)

    # --- the parts of TurnBasedEnv --------------------------------------------------------------------

    def _start(self, events: list[dict] | None, options: dict[str, Any]) -> DuelState:
        state = self._game.init(self.np_random, events)
        self._state = state  # the opponent may look at env.state while it plays
        self._play_opponent(state, events, "reset")
        return state

    def _advance(self, state: DuelState, action: int, events: list[dict] | None) -> float:
        self._game.apply(state, action, self.np_random, events)
        self._play_opponent(state, events, "step")
        return 0.0

    def _observe(self, state: DuelState) -> np.ndarray:
        return self._game.observe(state, self.side)

    def _won(self, state: DuelState) -> bool:
        return state.winner == self.side

    def _new_info(self, state: DuelState, action_mask: np.ndarray) -> dict[str, Any]:
        return {"action_mask": action_mask, "phase": state.phase, "turn": state.turn}

    def _illegal_message(self, action: int, reason: str) -> str:
        return f"{decode_action(action, self.side)}: {reason}"

    def _play_opponent(self, state: DuelState, events: list[dict] | None, during: str) -> None:
        """The opponent's moves until the agent must act or the game ends. Each move is checked once and
        applied unchecked; a failing opponent leaves the env refusing every step until ``reset``."""
        game = self._game
        side = self.opponent_side
        act = self._opponent_act
        while not state.terminated and state.current_player == side:
            try:
                action = act(game.observe(state, side), game.legal_action_mask(state, np.int8))
            except BaseException as err:
                self._break(f"the {PLAYER_NAMES[side]} opponent ({self.opponent_label}) raised "
                            f"{type(err).__name__} during {during}()")
                raise
            try:
                # a Python int in range needs no further type check (what the built-in players return)
                a = action if type(action) is int and 0 <= action < NUM_ACTIONS else as_action_index(
                    action, NUM_ACTIONS)
                reason = game.illegal_reason(state, a)
                if reason is not None:
                    raise IllegalActionError(f"{decode_action(a, side)}: {reason}")
            except (IllegalActionError, TypeError, ValueError) as err:
                message = f"the {PLAYER_NAMES[side]} opponent ({self.opponent_label}) chose {action!r}: {err}"
                self._break(message)
                raise IllegalActionError(f"{message}; the env refuses further steps until reset()") from err
            game.apply(state, a, self.np_random, events)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' to the env")
            return None
        if self.render_mode == "rgb_array":
            return render_duel_rgb(self._game, self._state, self.side)
        who = f"Thermopylae duel | you: {PLAYER_NAMES[self.side]} | opponent: {self.opponent_label}"
        if self._state is None:
            return who + "\nnot started (call reset())\n"
        return who + "\n" + self._game.render(self._state) + "\n"


class DuelGreekEnv(DuelEnv):
    __doc__ = DuelEnv.__doc__
    side = GREEK


class DuelPersianEnv(DuelEnv):
    __doc__ = DuelEnv.__doc__
    side = PERSIAN
