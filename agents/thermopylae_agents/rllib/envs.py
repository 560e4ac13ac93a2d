"""The package's environments in the shapes RLlib wants.

* [`MaskedCoopEnv`][thermopylae_agents.rllib.envs.MaskedCoopEnv] /
  [`MaskedCoopVectorEnv`][thermopylae_agents.rllib.envs.MaskedCoopVectorEnv]: ``thermopylae/Coop-v0`` (one
  game) and the native vector engine [`thermopylae_env.coop.vector.CoopVectorEnv`][] (``num_envs`` games
  stepped together) with the observation ``{"observations": Box(115), "action_mask": Box(72)}``, the layout
  RLlib's action-masking RLModules read.
* [`DuelMultiAgentEnv`][thermopylae_agents.rllib.envs.DuelMultiAgentEnv]: the duel (the PettingZoo AEC game
  [`thermopylae_env.duel_v1`][thermopylae_env.duel.pettingzoo]) as an RLlib ``MultiAgentEnv`` with agents
  ``"greek"`` and ``"persian"``, each observing ``{"observations": Box(56), "action_mask": Box(21)}``.
* [`register_envs`][thermopylae_agents.rllib.envs.register_envs]: registers ``thermopylae-coop`` and
  ``thermopylae-duel`` with Ray Tune, so that every env runner (on any node of a cluster) can build them by
  name.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.tune.registry import register_env

import thermopylae_env  # noqa: F401 - registers the Gymnasium ids
from thermopylae_env.coop.layout import NUM_ACTIONS as COOP_ACTIONS
from thermopylae_env.coop.layout import OBS_SIZE as COOP_OBS
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.duel.layout import NUM_ACTIONS as DUEL_ACTIONS
from thermopylae_env.duel.layout import OBS_SIZE as DUEL_OBS

__all__ = [
    "COOP_ENV",
    "DUEL_ENV",
    "DUEL_AGENTS",
    "MaskedCoopEnv",
    "MaskedCoopVectorEnv",
    "DuelMultiAgentEnv",
    "masked_space",
    "make_coop",
    "make_duel",
    "register_envs",
]

COOP_ENV = "thermopylae-coop"
DUEL_ENV = "thermopylae-duel"
DUEL_AGENTS = ("greek", "persian")
_COOP_KWARGS = ("num_players", "persian_deck", "reward_shaping")
_VECTOR_KWARGS = ("backend",)


def masked_space(obs_size: int, num_actions: int) -> gym.spaces.Dict:
    """``{"observations": Box(0, 1, (obs_size,)), "action_mask": Box(0, 1, (num_actions,))}``, float32."""
    return gym.spaces.Dict(
        {
            "observations": gym.spaces.Box(0.0, 1.0, (obs_size,), np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, (num_actions,), np.float32),
        }
    )


class MaskedCoopEnv(gym.Wrapper):
    """``thermopylae/Coop-v0`` whose observation carries the legal-action mask (``info["action_mask"]``).

    The action mask of the final observation is all zeros, as in the env. Keyword arguments go to
    ``gymnasium.make("thermopylae/Coop-v0", ...)``.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(gym.make("thermopylae/Coop-v0", disable_env_checker=True, **kwargs))
        self.observation_space = masked_space(COOP_OBS, COOP_ACTIONS)

    @staticmethod
    def _masked(obs: np.ndarray, info: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"observations": obs, "action_mask": info["action_mask"].astype(np.float32)}

    def reset(self, **kwargs: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        return self._masked(obs, info), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._masked(obs, info), reward, terminated, truncated, info


class MaskedCoopVectorEnv(VectorEnv):
    """``num_envs`` co-op games on the native vector engine, with dict observations (see the module).

    Wraps [`thermopylae_env.coop.vector.CoopVectorEnv`][] in its default ``NEXT_STEP`` autoreset mode,
    which RLlib's ``SingleAgentEnvRunner`` expects: the step after a game ends ignores that game's action
    and returns its new first observation. Keyword arguments go to ``CoopVectorEnv``.
    """

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        self.env = CoopVectorEnv(num_envs=num_envs, **kwargs)
        self.num_envs = self.env.num_envs
        self.metadata = dict(self.env.metadata)
        self.render_mode = None
        self.single_observation_space = masked_space(COOP_OBS, COOP_ACTIONS)
        self.single_action_space = self.env.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = self.env.action_space

    def _masked(self, obs: np.ndarray, infos: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"observations": obs, "action_mask": infos["action_mask"].astype(np.float32)}

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._masked(obs, infos), infos

    def step(self, actions: Any) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, dict]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return self._masked(obs, infos), rewards, terminated, truncated, infos

    def action_masks(self) -> np.ndarray:
        return self.env.action_masks()

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()


def make_coop(config: dict[str, Any] | None = None) -> gym.Env | VectorEnv:
    """Env creator for RLlib: a [`MaskedCoopEnv`][thermopylae_agents.rllib.envs.MaskedCoopEnv], or a
    [`MaskedCoopVectorEnv`][thermopylae_agents.rllib.envs.MaskedCoopVectorEnv] when ``config`` has
    ``num_envs`` (RLlib passes it with ``gym_env_vectorize_mode="vector_entry_point"``).

    ``config`` keys: ``num_players``, ``persian_deck``, ``reward_shaping`` (as for ``thermopylae/Coop-v0``)
    and, for the vector engine, ``backend``. Any other key is refused, naming it.
    """
    config = dict(config or {})
    num_envs = config.pop("num_envs", None)
    known = _COOP_KWARGS + _VECTOR_KWARGS
    unknown = sorted(k for k in config if k not in known)
    if unknown:
        raise ValueError(f"unknown co-op env_config key(s) {unknown}; expected some of {list(known)}")
    env_kwargs = {k: config[k] for k in _COOP_KWARGS if k in config}
    if num_envs is None:
        return MaskedCoopEnv(**env_kwargs)
    vector_kwargs = {k: config[k] for k in _VECTOR_KWARGS if k in config}
    return MaskedCoopVectorEnv(num_envs=int(num_envs), **env_kwargs, **vector_kwargs)


class DuelMultiAgentEnv(MultiAgentEnv):
    """The duel as an RLlib ``MultiAgentEnv``: agents ``"greek"`` and ``"persian"``, turn by turn.

    Wraps the PettingZoo AEC game ``thermopylae_env.duel_v1.raw_env`` (the same rules engine, seeding and
    rewards). Each call returns the observation of the one agent that must act next (the same agent often
    acts several times in a row: discards, cards added to an attack). At the end both agents get their
    final observation, +1 (winner) or -1 (loser) and ``terminateds["__all__"] = True``. The observation is
    ``{"observations": Box(0, 1, (56,)), "action_mask": Box(0, 1, (21,))}`` (float32); the mask of the
    final observation is all zeros. An illegal action raises ``IllegalActionError`` and changes nothing:
    a masked policy never plays one.
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        from thermopylae_env import duel_v1  # extra: rllib (pettingzoo)

        config = dict(config or {})
        config.pop("num_envs", None)
        if config:
            raise ValueError(f"unknown duel env_config key(s) {sorted(config)}; the duel takes none")
        self.game = duel_v1.raw_env()
        self.agents = self.possible_agents = list(DUEL_AGENTS)
        space = masked_space(DUEL_OBS, DUEL_ACTIONS)
        self.observation_spaces = dict.fromkeys(DUEL_AGENTS, space)
        self.action_spaces = {a: gym.spaces.Discrete(DUEL_ACTIONS) for a in DUEL_AGENTS}
        self._acted: set[str] = set()

    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        raw = self.game.observe(agent)
        return {"observations": raw["observation"], "action_mask": raw["action_mask"].astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.game.reset(seed=seed)
        self._acted = set()
        agent = self.game.agent_selection
        return {agent: self._observe(agent)}, {}

    def step(self, action_dict: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        agent = self.game.agent_selection
        if agent not in action_dict:
            raise ValueError(f"it is {agent!r}'s turn; got actions for {sorted(action_dict)}")
        self.game.step(action_dict[agent])
        self._acted.add(agent)
        if self.game.state.terminated:
            # Only agents that acted have an episode in RLlib; each of them gets its last observation.
            ended = [a for a in DUEL_AGENTS if a in self._acted]
            obs = {a: self._observe(a) for a in ended}
            rewards = {a: float(self.game.rewards[a]) for a in ended}
            terminateds = dict.fromkeys(ended, True)
            terminateds["__all__"] = True
            return obs, rewards, terminateds, {"__all__": False}, {}
        nxt = self.game.agent_selection
        # RLlib wants a reward (0 until the end) for every agent that acted and observes again.
        rewards = {a: 0.0 for a in (agent, nxt) if a in self._acted}
        return {nxt: self._observe(nxt)}, rewards, {"__all__": False}, {"__all__": False}, {}


def make_duel(config: dict[str, Any] | None = None) -> DuelMultiAgentEnv:
    """Env creator for RLlib: a [`DuelMultiAgentEnv`][thermopylae_agents.rllib.envs.DuelMultiAgentEnv]."""
    return DuelMultiAgentEnv(config)


def register_envs() -> None:
    """Register ``thermopylae-coop`` and ``thermopylae-duel`` with Ray Tune (needs a running Ray or starts
    nothing: the registry is shipped to the workers with the algorithm)."""
    register_env(COOP_ENV, make_coop)
    register_env(DUEL_ENV, make_duel)
