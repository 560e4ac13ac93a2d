"""The base of the package's single-agent environments: the step guard and the illegal-action policy,
written once (in the manner of Pgx's ``core.Env.step``).

[`TurnBasedEnv`][thermopylae_env.core.TurnBasedEnv] owns everything that is the same in
``thermopylae/Coop-v0``, ``thermopylae/DuelGreek-v0`` and ``thermopylae/DuelPersian-v0``:

* ``reset``: the seed rule ([`as_seed`][thermopylae_env.actions.as_seed]) and the reset options
  ([`check_options`][thermopylae_env.actions.check_options], against the env's
  [`reset_options`][thermopylae_env.core.TurnBasedEnv.reset_options]), both checked before anything changes;
* ``step``: the guard (no step before ``reset``, after the end, or after a failure that left the game
  unusable), the action check ([`as_action_index`][thermopylae_env.actions.as_action_index]), the one legality
  check and the illegal-action policy (``"loss"``, ``"raise"`` or ``"replace"``: the nearest legal action is
  played); a legal action then goes to the engine's unchecked ``apply``, so each step is validated once. The
  legality check reads the legal mask the env computed for the state it handed out (a private array, never the
  one in ``info``, so a caller who writes into ``info["action_mask"]`` changes nothing); only an action
  outside that mask asks the engine's ``illegal_reason``, for the sentence that says why (and the engine has
  the last word);
* the ``info`` dict with the int8 ``action_mask`` and
  [`action_masks`][thermopylae_env.core.TurnBasedEnv.action_masks].

A subclass supplies the game-specific parts: `_start` (the state after ``reset``),
`_advance` (apply a legal action; the reward of a step that does not end the game),
`_observe`, `_won`, `_new_info` and `_illegal_message`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from thermopylae_env.actions import (
    SINGLE_ENV_ILLEGAL_ACTION_MODES,
    IllegalActionError,
    as_action_batch,
    as_action_index,
    as_seed,
    check_illegal_action_mode,
    check_illegal_action_penalty,
    check_options,
    nearest_legal_action,
)

__all__ = ["ActionQueue", "ResetNeeded", "TurnBasedEnv", "check_render_mode"]


class ResetNeeded(RuntimeError, gym.error.ResetNeeded):
    """``step`` refused until ``reset``: before the first reset, after the end, or after a failure that left
    the game unusable. It is both a ``RuntimeError`` and Gymnasium's ``ResetNeeded`` (what Gymnasium's
    ``OrderEnforcing`` wrapper raises), so the envs need no such wrapper: they are registered with
    ``order_enforce=False``, which saves a wrapper call on every step."""


def check_render_mode(render_mode: str | None, modes: list[str]) -> str | None:
    """Return ``render_mode`` if it is ``None`` or one of ``modes``, else raise a ``ValueError``."""
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode must be None or one of {modes}, got {render_mode!r}")
    return render_mode


class TurnBasedEnv(gym.Env[np.ndarray, np.int64]):
    """Shared ``reset``/``step`` of a turn-based card game seen by one agent (see the module docstring).

    Attributes a subclass sets in ``__init__`` through `_init_core`: ``_game`` (the engine, with
    ``illegal_reason(state, action)``, ``apply(state, action, rng, events)`` and
    ``legal_action_mask(state)``), the number of actions, the illegal-action policy, ``render_mode`` and
    ``record_events``.
    """

    #: the keys ``reset(options=...)`` accepts (any other key, or a non-dict, is refused)
    reset_options: tuple[str, ...] = ()

    def _init_core(
        self,
        game: Any,
        num_actions: int,
        illegal_action: str,
        illegal_action_penalty: float,
        render_mode: str | None,
        record_events: bool,
    ) -> None:
        self._game = game
        self._num_actions = num_actions
        self.illegal_action = check_illegal_action_mode(illegal_action, SINGLE_ENV_ILLEGAL_ACTION_MODES)
        self.illegal_action_penalty = check_illegal_action_penalty(illegal_action_penalty)
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.record_events = bool(record_events)
        self._state: Any = None
        self._episode_over = False
        self._broken: str | None = None  # why the game cannot go on (a failed opponent), until reset
        self._none = np.zeros(num_actions, dtype=np.int8)
        self._legal = self._none  # the legal mask of the state handed out (private: info gets a copy)
        self._last_events: list[dict] = []

    @property
    def game(self) -> Any:
        """The static game (the rules engine)."""
        return self._game

    @property
    def state(self) -> Any:
        """The engine state of the running episode (``None`` before the first reset)."""
        return self._state

    # --- reset and step -------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        seed = as_seed(seed)
        options = check_options(options, self.reset_options)
        super().reset(seed=seed)
        self._episode_over = False
        self._broken = None
        self._legal = self._none
        events: list[dict] | None = [] if self.record_events else None
        self._state = None
        self._state = self._start(events, options)
        self._last_events = events or []
        state = self._state
        self._episode_over = state.terminated
        info = self._info()
        if self._episode_over:  # pragma: no cover - in both games the first decision comes before any end
            info["is_success"] = self._won(state)
        return self._observe(state), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        state = self._state
        if self._episode_over or state is None:  # a broken game is also over
            self._refuse_step()
        if type(action) is int and 0 <= action < self._num_actions:  # the common case, checked cheaply
            a = action
        else:
            a = as_action_index(action, self._num_actions)
        replaced: tuple[int, str] | None = None
        if not self._legal[a]:
            reason = self._game.illegal_reason(state, a)
            if reason is not None:
                if self.illegal_action != "replace":
                    return self._refuse(state, a, reason)
                replaced = (nearest_legal_action(self._legal, a), reason)
                a = replaced[0]
        if self.record_events:
            events: list[dict] | None = []
            reward = self._advance(state, a, events)
            self._last_events = events
        else:
            events = None
            reward = self._advance(state, a, None)
        if state.terminated:
            self._episode_over = True
            won = self._won(state)
            info = self._info()
            info["is_success"] = won
            if replaced is not None:
                self._mark_replaced(info, *replaced)
            return self._observe(state), (1.0 if won else -1.0), True, False, info
        # the running game's info, as _info builds it (written out here: this runs on every step)
        legal = self._legal = self._legal_mask(state)
        info = self._new_info(state, legal.copy())
        if events is not None:
            info["events"] = events
        if replaced is not None:
            self._mark_replaced(info, *replaced)
        return self._observe(state), reward, False, False, info

    @staticmethod
    def _mark_replaced(info: dict[str, Any], played: int, reason: str) -> None:
        """Say in ``info`` that an illegal action was replaced (``illegal_action="replace"``), by which."""
        info["illegal_action_replaced"] = True
        info["played_action"] = played
        info["illegal_reason"] = reason

    def _refuse_step(self) -> None:
        """Raise the [`ResetNeeded`][thermopylae_env.core.ResetNeeded] of a step that may not be taken
        (broken, not reset, or over)."""
        if self._broken is not None:
            raise ResetNeeded(f"step() refused: {self._broken}; call reset()")
        if self._state is None:
            raise ResetNeeded("step() called before reset()")
        raise ResetNeeded("step() called after the episode ended; call reset()")

    def _refuse(self, state: Any, action: int, reason: str) -> tuple[np.ndarray, float, bool, bool, dict]:
        """The illegal-action policy: raise (nothing changed) or end the episode as a loss."""
        if self.illegal_action == "raise":
            raise IllegalActionError(self._illegal_message(action, reason))
        self._episode_over = True
        self._last_events = []
        info = self._info()
        info["illegal_action"] = True
        info["illegal_reason"] = reason
        info["is_success"] = False
        return self._observe(state), self.illegal_action_penalty, True, False, info

    def _break(self, why: str) -> None:
        """Refuse every further step until ``reset`` (the game was left where the agent may not act)."""
        self._broken = why
        self._episode_over = True
        self._legal = self._none

    # --- info and masks -------------------------------------------------------------------------------

    def _info(self) -> dict[str, Any]:
        state = self._state
        legal = self._legal = self._none if self._episode_over else self._legal_mask(state)
        info = self._new_info(state, legal.copy())
        if self.record_events:
            info["events"] = self._last_events
        return info

    def action_masks(self) -> np.ndarray:
        """Boolean legal-action mask of the current state (all false once the episode is over)."""
        if self._state is None and self._broken is None:
            raise RuntimeError("action_masks() called before reset()")
        return self._legal.astype(bool)

    # --- the game-specific parts ----------------------------------------------------------------------

    def _start(self, events: list[dict] | None, options: dict[str, Any]) -> Any:
        """The state of a new episode, drawn from ``self.np_random``, at the agent's first decision."""
        raise NotImplementedError

    def _advance(self, state: Any, action: int, events: list[dict] | None) -> float:
        """Apply the legal ``action`` (and anything played before the agent's next decision); return the
        reward of a step that does not end the game."""
        raise NotImplementedError

    def _observe(self, state: Any) -> np.ndarray:
        raise NotImplementedError

    def _legal_mask(self, state: Any) -> np.ndarray:
        """The int8 legal-action mask of a running game. The env keeps it to check the next action and
        hands out copies only, so it may be an array the subclass caches and shares (never written to)."""
        return self._game.legal_action_mask(state).view(np.int8)

    def _won(self, state: Any) -> bool:
        """Whether the ended game is a win for the agent."""
        raise NotImplementedError

    def _new_info(self, state: Any, action_mask: np.ndarray) -> dict[str, Any]:
        """A step's ``info``: ``action_mask`` first, then the env's own entries (one dict literal: this
        runs on every step)."""
        return {"action_mask": action_mask}

    def _illegal_message(self, action: int, reason: str) -> str:
        """The message of the ``IllegalActionError`` raised in ``"raise"`` mode."""
        return reason


class ActionQueue:
    """The batch an SB3 ``VecEnv`` adapter holds between ``step_async`` and ``step_wait``, for every adapter
    of the package: checked when it is queued (nothing is kept from a refused batch), taken once, and
    refused before the adapter's first reset, so that nothing queued then is played later."""

    def __init__(self, num_envs: int, num_actions: int) -> None:
        self.num_envs = num_envs
        self.num_actions = num_actions
        self._actions: np.ndarray | None = None

    def put(self, actions: object, ready: bool) -> None:
        if not ready:
            raise RuntimeError("step() called before reset()")
        self._actions = as_action_batch(actions, self.num_envs, self.num_actions)

    def take(self, ready: bool) -> np.ndarray:
        if not ready:
            raise RuntimeError("step() called before reset()")
        actions, self._actions = self._actions, None
        if actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        return actions
