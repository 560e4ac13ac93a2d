"""The duel as a PettingZoo AEC environment: agents ``"greek"`` and ``"persian"``.

Usage::

    from thermopylae_env import duel_v0

    env = duel_v0.env()
    env.reset(seed=42)
    for agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        if termination or truncation:
            action = None
        else:
            mask = observation["action_mask"]
            action = env.action_space(agent).sample(mask)
        env.step(action)
    env.close()

Each agent observes ``{"observation": Box(0, 1, (56,), float32), "action_mask": Box(0, 1, (21,), int8)}``
as in PettingZoo's classic games; the layouts are those of :mod:`thermopylae_env.duel` (the mask of the
agent not to act is all zeros). Turns follow the rules, not a fixed alternation: the same agent usually
makes several micro-actions in a row (discards, cards added to an attack). Rewards: +1 to the winner and
-1 to the loser at the end, 0 otherwise. ``env()`` wraps the raw env in PettingZoo's
``TerminateIllegalWrapper`` (an illegal move ends the game, -1 for the mover),
``AssertOutOfBoundsWrapper``, :class:`ActionCheckWrapper` (an action outside the space raises ``TypeError`` /
``ValueError``, as everywhere in the package) and ``OrderEnforcingWrapper``; ``raw_env`` itself raises
:class:`~thermopylae_env.actions.IllegalActionError` on an illegal move and leaves the game unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from thermopylae_env.actions import IllegalActionError, as_action_index
from thermopylae_env.duel import NUM_ACTIONS, OBS_SIZE, PLAYER_NAMES, DuelGame, DuelState, decode_action

__all__ = ["ActionCheckWrapper", "env", "raw_env"]


def env(**kwargs: Any) -> AECEnv:
    """The wrapped AEC environment (illegal moves end the game with -1 for the mover)."""
    aec = raw_env(**kwargs)
    aec = wrappers.TerminateIllegalWrapper(aec, illegal_reward=-1)
    aec = wrappers.AssertOutOfBoundsWrapper(aec)
    aec = ActionCheckWrapper(aec)
    aec = wrappers.OrderEnforcingWrapper(aec)
    return aec


class ActionCheckWrapper(wrappers.BaseWrapper):
    """Refuses an action outside ``Discrete(21)`` with ``TypeError``/``ValueError`` (the package's
    convention, :func:`thermopylae_env.actions.as_action_index`) before PettingZoo's wrappers see it.

    ``AssertOutOfBoundsWrapper`` lets a boolean through (Gymnasium's ``Discrete`` counts it as an int), and
    ``TerminateIllegalWrapper`` would then index the mask with it and fail with NumPy's "truth value of an
    array is ambiguous". ``None`` stays the action of an agent that is done, as in PettingZoo.
    """

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if not (action is None and (self.terminations[agent] or self.truncations[agent])):
            as_action_index(action, NUM_ACTIONS)
        super().step(action)


class raw_env(AECEnv, EzPickle):  # noqa: N801 - PettingZoo's naming convention
    """Thermopylae duel, Greek (``"greek"``) against Persian (``"persian"``); see the module docstring."""

    metadata = {
        "render_modes": ["ansi"],
        "name": "thermopylae_duel_v0",
        "is_parallelizable": False,
        "render_fps": 4,
    }

    def __init__(self, render_mode: str | None = None) -> None:
        EzPickle.__init__(self, render_mode=render_mode)
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.game = DuelGame()
        self.possible_agents = list(PLAYER_NAMES)  # index = engine player id: 0 greek, 1 persian
        self.agents = self.possible_agents[:]
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32),
                    "action_mask": spaces.Box(0, 1, shape=(NUM_ACTIONS,), dtype=np.int8),
                }
            )
            for a in self.possible_agents
        }
        self.state: DuelState | None = None
        self._np_random, _ = seeding.np_random(None)

    # EzPickle alone pickles only the constructor arguments, so that a copy would be a fresh, unstarted
    # env. The duel is pure Python: copies (copy.deepcopy, pickle) carry the whole game and its generator
    # instead, as the package's Gymnasium envs do, and a copy continues exactly as the original would.
    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
        self.state = self.game.init(self._np_random)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.state.current_player]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        player = self.possible_agents.index(agent)
        state = self.state
        if not state.terminated and state.current_player == player:
            mask = self.game.legal_action_mask(state, np.int8)
        else:
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        return {"observation": self.game.observe(state, player), "action_mask": mask}

    def step(self, action: Any) -> None:
        if self.state is None:
            raise RuntimeError("step() called before reset()")
        if not self.agents:
            raise RuntimeError("step() called after the game ended and every agent was removed; call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        state = self.state
        # Check the action (and its legality) before touching anything: a bad action changes nothing.
        index = as_action_index(action, NUM_ACTIONS)
        reason = self.game.illegal_reason(state, index)
        if reason is not None:
            raise IllegalActionError(f"{agent}: {decode_action(index, state.current_player)}: {reason}")
        self._cumulative_rewards[agent] = 0
        self.rewards = dict.fromkeys(self.agents, 0)
        self.game.step(state, index, self._np_random)
        if state.terminated:
            winner = self.possible_agents[state.winner]
            for a in self.agents:
                self.rewards[a] = 1 if a == winner else -1
            self.terminations = dict.fromkeys(self.agents, True)
            # Everyone is done: PettingZoo then asks each agent for its final (None) step in turn.
            self.agent_selection = agent
        else:
            self.agent_selection = self.possible_agents[state.current_player]
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        if self.state is None:
            return "Thermopylae duel: not started (call reset())"
        return self.game.render(self.state)

    def close(self) -> None:
        pass
