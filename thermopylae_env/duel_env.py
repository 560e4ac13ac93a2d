"""``thermopylae/DuelGreek-v0`` and ``thermopylae/DuelPersian-v0``: one side of the duel against a built-in
opponent, as single-agent Gymnasium environments.

Thin adapters over the rules engine :mod:`thermopylae_env.duel`. The opponent is pluggable: a hand-written
player (default), a random player, any callable, or a saved SB3 / sb3-contrib policy.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from thermopylae_env.actions import (
    IllegalActionError,
    as_action_index,
    check_illegal_action_mode,
    check_illegal_action_penalty,
)
from thermopylae_env.duel import (
    GREEK,
    NUM_ACTIONS,
    OBS_SIZE,
    PERSIAN,
    PLAYER_NAMES,
    DuelGame,
    DuelState,
    decode_action,
    encode_action,
)

__all__ = ["DuelGreekEnv", "DuelPersianEnv", "DuelEnv", "make_opponent"]

OpponentFn = Callable[[np.ndarray, np.ndarray], int]


class EnvRandomOpponent:
    """A uniformly random legal player that draws from its env's ``np_random`` at each move.

    An object rather than a closure, so that a copied (``copy.deepcopy``) or pickled env gets an opponent
    that draws from the copy's generator, and the copy continues exactly as the original would.
    """

    def __init__(self, env: gym.Env) -> None:
        from thermopylae_agents.random_agent import RandomAgent

        self.env = env
        self.agent = RandomAgent()

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.agent.act(observation, action_mask, self.env.np_random)


def make_opponent(opponent: Any, side: int, env: gym.Env) -> tuple[OpponentFn, str]:
    """Turn the ``opponent=`` argument into ``act(observation, mask) -> int`` for ``side``, and a label.

    Randomness (the random player's) is drawn from ``env.np_random`` at each call, so that seeding the env
    seeds the opponent too.
    """
    if isinstance(opponent, str) and opponent == "heuristic":
        from thermopylae_agents.duel_heuristic import HeuristicGreek, HeuristicPersian

        player = HeuristicGreek() if side == GREEK else HeuristicPersian()
        return player.act, "heuristic"
    if isinstance(opponent, str) and opponent == "random":
        return EnvRandomOpponent(env).act, "random"
    if isinstance(opponent, (str, os.PathLike)):
        from thermopylae_agents.sb3_agent import SB3Agent

        if not Path(opponent).is_file():
            raise ValueError(
                f"opponent model file not found: {os.fspath(opponent)} (opponent must be 'heuristic', "
                "'random', a callable, or the path of a saved SB3 .zip)"
            )
        policy = SB3Agent(opponent)
        policy.check_fits(spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32), spaces.Discrete(NUM_ACTIONS))
        return policy.act, f"model {os.fspath(opponent)}"
    if hasattr(opponent, "act") and callable(opponent.act):
        return opponent.act, type(opponent).__name__
    if callable(opponent):
        return opponent, getattr(opponent, "__name__", type(opponent).__name__)
    raise ValueError(
        "opponent must be 'heuristic', 'random', a callable (observation, action_mask) -> action, an object "
        f"with such an act method, or the path of a saved SB3 model; got {opponent!r}"
    )


class DuelEnv(gym.Env[np.ndarray, np.int64]):
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
    :meth:`action_masks` (bool, for sb3-contrib's ``MaskablePPO``) mark the legal ones. k = card kind of
    the agent's side (0..4: force 10..50, the Persian's kind 0 being the Attack card; 5..7: the three
    strategy types; 8: the discard card).

    | index | action | legal |
    | --- | --- | --- |
    | 0 | play the discard card (opponent discards 2 at random) | own discard phase, card held |
    | 1 + k | discard a card of kind k (0..8) | own discard phase, card held |
    | 10 | done discarding | own discard phase, at most 7 cards held |
    | 11 + k | add a card of kind k (0..7) to the attack/defence | building; in hand, strategy types once |
    | 19 | commit the attack (needs an Attack card) / the defence (needs a force card) | building |
    | 20 | decline the attack / do not defend (cards added go back to the hand) | building |

    :meth:`decode_action` names an index from the agent's side (``"add Immortals (50) to attack"``),
    :func:`encode_action` does the reverse.

    ## Observation Space

    ``Box(0, 1, (56,), float32)``, the agent's side only (the opponent's hand and both deck orders are
    never in it):

    | slice | content |
    | --- | --- |
    | 0:4 | phase one-hot: Persian discard, Greek discard, attack, defence (all 0 once over) |
    | 4 | 1 if the agent must act |
    | 5 | 1 if the agent is the Persian |
    | 6:15 | own hand per kind / 8 |
    | 15:23 | own cards added so far to the attack/defence per kind 0..7 / 8 |
    | 23 | opponent hand size / 8 |
    | 24, 25 | own, opponent deck size / 48 |
    | 26:35, 35:44 | own, opponent discard pile per kind / 8 |
    | 44 | Greek tokens / 10 |
    | 45 | turn / 49 |
    | 46:54 | Persian attack on the table per kind 0..7 / 8 (defence phase) |
    | 54 | attack total on the table / 800 |
    | 55 | total of the own attack/defence being built / 800 |

    ## Rewards

    +1 on the step that wins, -1 on the step that loses (also when the loss happens during the
    opponent's moves), 0 otherwise. An illegal action (``illegal_action="loss"``) ends the episode with
    ``illegal_action_penalty``.

    ## Starting State

    Both decks shuffled, four cards each, 10 Greek tokens, turn 1 drawn. ``reset`` plays the opponent's
    moves until the agent must act: the Persian agent starts at his first discard phase, the Greek agent
    at his (after the Persian's).

    ## Episode End

    Terminated when the Persian must draw from an empty deck (Greeks win; at most 49 turns) or the Greeks
    have no tokens left (Persians win), or on an illegal action in ``"loss"`` mode. The game is finite
    (at most 1632 micro-actions), so there is no truncation. ``info["is_success"]`` is set on the final
    step.

    ## Arguments

    * ``opponent``: ``"heuristic"`` (default, :mod:`thermopylae_agents.duel_heuristic`), ``"random"``, a
      callable
      ``(observation, action_mask) -> action`` (or an object with such an ``act`` method), or the path
      of a saved SB3 model (``MaskablePPO``, else ``PPO``; loaded when the env is made; a bad path raises
      ``ValueError``). Its randomness comes from ``env.np_random``.
    * ``illegal_action``: ``"loss"`` (default) or ``"raise"`` (``IllegalActionError``, nothing changes);
      out-of-space actions always raise ``TypeError``/``ValueError`` and change nothing.
    * ``illegal_action_penalty`` (float, default -1.0)
    * ``render_mode``: ``None``, ``"ansi"`` (the whole table, both hands: for people, not agents) or
      ``"rgb_array"`` (a (360, 640, 3) uint8 picture of the table seen by the agent's side, the opponent's
      hand face down: :func:`thermopylae_env.render.render_duel_rgb`; needs Pillow)
    * ``record_events`` (bool, default False): the engine's events of each step (both sides' moves, the
      cards drawn: hidden information, for records and display) in ``info["events"]``

    ``env.game`` is the :class:`~thermopylae_env.duel.DuelGame`, ``env.state`` the live
    :class:`~thermopylae_env.duel.DuelState` (``None`` before the first reset).

    ## Version History

    * v0: initial version.
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
    ) -> None:
        self._game = DuelGame()
        self.illegal_action = check_illegal_action_mode(illegal_action)
        self.illegal_action_penalty = check_illegal_action_penalty(illegal_action_penalty)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.record_events = bool(record_events)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)
        self.opponent_side = 1 - self.side
        self._opponent_act, self.opponent_label = make_opponent(opponent, self.opponent_side, self)
        self._state: DuelState | None = None
        self._episode_over = False
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self._last_events: list[dict] = []

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

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        events: list[dict] | None = [] if self.record_events else None
        self._state = self._game.init(self.np_random, events)
        self._play_opponent(events)
        self._episode_over = self._state.terminated
        self._last_events = events or []
        info = self._info()
        if self._episode_over:  # pragma: no cover - the first decision always comes before any end
            info["is_success"] = self._state.winner == self.side
        return self._game.observe(self._state, self.side), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        state = self._state
        if state is None:
            raise RuntimeError("step() called before reset()")
        if self._episode_over:
            raise RuntimeError("step() called after the episode ended; call reset()")
        a = as_action_index(action, NUM_ACTIONS)
        game = self._game
        reason = game.illegal_reason(state, a)
        if reason is not None:
            if self.illegal_action == "raise":
                raise IllegalActionError(f"{decode_action(a, self.side)}: {reason}")
            self._episode_over = True
            self._last_events = []
            info = self._info()
            info["illegal_action"] = True
            info["illegal_reason"] = reason
            info["is_success"] = False
            return game.observe(state, self.side), self.illegal_action_penalty, True, False, info
        events: list[dict] | None = [] if self.record_events else None
        game.step(state, a, self.np_random, events)
        self._play_opponent(events)
        if events is not None:
            self._last_events = events
        if state.terminated:
            self._episode_over = True
            won = state.winner == self.side
            info = self._info()
            info["is_success"] = won
            return game.observe(state, self.side), (1.0 if won else -1.0), True, False, info
        return game.observe(state, self.side), 0.0, False, False, self._info()

    def _play_opponent(self, events: list[dict] | None) -> None:
        state = self._state
        game = self._game
        side = self.opponent_side
        act = self._opponent_act
        while not state.terminated and state.current_player == side:
            mask = game.legal_action_mask(state, np.int8)
            action = act(game.observe(state, side), mask)
            try:
                game.step(state, action, self.np_random, events)
            except (IllegalActionError, TypeError, ValueError) as err:
                raise IllegalActionError(
                    f"the {PLAYER_NAMES[side]} opponent ({self.opponent_label}) chose {action!r}: {err}"
                ) from err

    def _info(self) -> dict[str, Any]:
        state = self._state
        if self._episode_over:
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        else:
            mask = self._game.legal_action_mask(state, np.int8)
        self._mask = mask
        info: dict[str, Any] = {"action_mask": mask, "phase": state.phase, "turn": state.turn}
        if self.record_events:
            info["events"] = self._last_events
        return info

    def action_masks(self) -> np.ndarray:
        """Boolean legal-action mask of the current state (all false once the episode is over)."""
        if self._state is None:
            raise RuntimeError("action_masks() called before reset()")
        return self._mask.astype(bool)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' to the env")
            return None
        if self.render_mode == "rgb_array":
            from thermopylae_env.render import render_duel_rgb

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
