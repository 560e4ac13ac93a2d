"""The duel as a PettingZoo environment: agents ``"greek"`` and ``"persian"``, AEC
([`env`][thermopylae_env.duel.pettingzoo.env]) or parallel
([`parallel_env`][thermopylae_env.duel.pettingzoo.parallel_env]).

Usage:

    from thermopylae_env import duel_v1

    env = duel_v1.env()
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
as in PettingZoo's classic games; the layouts are the pieces of [`thermopylae_env.duel.layout`][] (the
mask of the agent not to act is all zeros). Turns follow the rules, not a fixed alternation: the same agent
usually makes several micro-actions in a row (discards, cards added to an attack). Rewards (floats): +1.0
to the winner and -1.0 to the loser at the end, 0.0 otherwise.

``env(illegal_action="loss", illegal_action_penalty=-1.0, max_cycles=None, render_mode=None)`` wraps the
raw env in PettingZoo's ``TerminateIllegalWrapper`` (with ``illegal_action="loss"``: an illegal move ends
the game, ``illegal_action_penalty`` for the mover; with ``"raise"`` it is left out and the move raises
[`IllegalActionError`][thermopylae_env.actions.IllegalActionError], changing nothing),
``AssertOutOfBoundsWrapper``, [`ActionCheckWrapper`][thermopylae_env.duel.pettingzoo.ActionCheckWrapper] (an
action outside the space raises ``TypeError`` / ``ValueError``, as everywhere in the package) and
``OrderEnforcingWrapper``. ``raw_env`` itself raises
[`IllegalActionError`][thermopylae_env.actions.IllegalActionError] on an illegal move and leaves the game
unchanged.

* ``max_cycles`` (``None`` or a positive int): truncate the game (both agents) after that many cycles,
  in PettingZoo's sense: a cycle is over once every agent has acted in it (in a game that alternates, one
  action of each agent). The duel's turns do not alternate, so a cycle holds one or more micro-actions of
  each agent: it ends with the first move of the second agent to act in it. ``None`` (default) never
  truncates, the game being finite (at most 1632 micro-actions). PettingZoo's ``max_cycles_test`` does not
  apply: it samples unmasked actions (here an illegal move ends the game at once) and expects every agent to
  have made exactly ``max_cycles`` moves, which a game where one agent moves several times in a row cannot
  promise; ``tests/env/duel/test_duel_pettingzoo.py`` checks the cycle count instead.
* ``render_mode``: ``"ansi"`` (the whole table as text, both hands: for people), ``"rgb_array"`` (a
  (360, 640, 3) uint8 picture of the table seen by the agent to act; needs Pillow) or ``"human"`` (the text
  table printed to the terminal, ``render()`` returning ``None``; there is no window).
* ``reset(seed=..., options=...)``: the seed follows [`thermopylae_env.actions.as_seed`][]; the view
  reads no option (``options`` must be ``None`` or a dict; PettingZoo's ``parallel_api_test`` passes an
  arbitrary one, so its keys are not checked here).

[`parallel_env`][thermopylae_env.duel.pettingzoo.parallel_env] is PettingZoo's ``turn_based_aec_to_parallel``
of [`env`][thermopylae_env.duel.pettingzoo.env] (same arguments): at each parallel step only the agent to act
(``infos[agent]["active_agent"]``) is moved; the other agent's action is ignored. The observation is a
``Dict`` holding the mask, as in PettingZoo's classic games; for SuperSuit and SB3 see the README's PettingZoo
section (single-agent training uses the Gymnasium duel envs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from thermopylae_env.actions import (
    IllegalActionError,
    as_action_index,
    as_seed,
    check_illegal_action_mode,
    check_illegal_action_penalty,
)
from thermopylae_env.core import check_render_mode
from thermopylae_env.duel.layout import NUM_ACTIONS, OBS_SIZE, PLAYER_NAMES, decode_action
from thermopylae_env.duel.render import render_duel_rgb
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.duel.state import DuelState

__all__ = ["ActionCheckWrapper", "env", "parallel_env", "raw_env"]


def env(illegal_action: str = "loss", illegal_action_penalty: float = -1.0, **kwargs: Any) -> AECEnv:
    """The wrapped AEC environment (by default an illegal move ends the game, -1.0 for the mover);
    ``kwargs`` go to [`raw_env`][thermopylae_env.duel.pettingzoo.raw_env] (``render_mode``,
    ``max_cycles``)."""
    mode = check_illegal_action_mode(illegal_action)
    penalty = check_illegal_action_penalty(illegal_action_penalty)
    aec = raw_env(**kwargs)
    if mode == "loss":
        aec = wrappers.TerminateIllegalWrapper(aec, illegal_reward=penalty)
    aec = wrappers.AssertOutOfBoundsWrapper(aec)
    aec = ActionCheckWrapper(aec)
    aec = wrappers.OrderEnforcingWrapper(aec)
    return aec


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """[`env`][thermopylae_env.duel.pettingzoo.env] (same arguments) as a PettingZoo ``ParallelEnv``:
    ``turn_based_aec_to_parallel``."""
    return turn_based_aec_to_parallel(env(**kwargs))


def _check_max_cycles(max_cycles: object) -> int | None:
    if max_cycles is None:
        return None
    if isinstance(max_cycles, bool) or not isinstance(max_cycles, (int, np.integer)) or max_cycles < 1:
        raise ValueError(f"max_cycles must be None or a positive integer, got {max_cycles!r}")
    return int(max_cycles)


class ActionCheckWrapper(wrappers.BaseWrapper):
    """Refuses an action outside ``Discrete(21)`` with ``TypeError``/``ValueError`` (the package's
    convention, [`thermopylae_env.actions.as_action_index`][]) before PettingZoo's wrappers see it.

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
        "render_modes": ["ansi", "rgb_array", "human"],
        "name": "thermopylae_duel_v1",
        "is_parallelizable": False,
        "render_fps": 4,
    }

    def __init__(self, render_mode: str | None = None, max_cycles: int | None = None) -> None:
        EzPickle.__init__(self, render_mode=render_mode, max_cycles=max_cycles)
        super().__init__()
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.max_cycles = _check_max_cycles(max_cycles)
        self._cycles = 0  # cycles completed: every agent acted in each
        self._acted: set[str] = set()  # the agents that acted in the cycle under way
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
        seed = as_seed(seed)
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be None or a dict, got {type(options).__name__}")
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
        self.state = self.game.init(self._np_random)
        self._cycles = 0
        self._acted = set()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
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
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.game.apply(state, index, self._np_random)  # checked above: applied unchecked
        self._count_cycle(agent)
        if state.terminated:
            winner = self.possible_agents[state.winner]
            for a in self.agents:
                self.rewards[a] = 1.0 if a == winner else -1.0
            self.terminations = dict.fromkeys(self.agents, True)
            # Everyone is done: PettingZoo then asks each agent for its final (None) step in turn.
            self.agent_selection = agent
        elif self.max_cycles is not None and self._cycles >= self.max_cycles:
            self.truncations = dict.fromkeys(self.agents, True)
            self.agent_selection = agent
        else:
            self.agent_selection = self.possible_agents[state.current_player]
        self._accumulate_rewards()

    def _count_cycle(self, agent: str) -> None:
        self._acted.add(agent)
        if len(self._acted) == len(self.possible_agents):
            self._cycles += 1
            self._acted = set()

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            state = self.state
            side = state.current_player if state is not None and not state.terminated else 0
            return render_duel_rgb(self.game, state, side)
        if self.state is None:
            text = "Thermopylae duel: not started (call reset())"
        else:
            text = self.game.render(self.state)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass
