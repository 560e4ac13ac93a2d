"""Stable-Baselines3 ``VecEnv`` over the natively vectorized co-op engine.

``CoopSB3VecEnv(num_envs)`` replaces ``DummyVecEnv([lambda: Monitor(gym.make("thermopylae/Coop-v0"))] * n)``
for SB3 and sb3-contrib's ``MaskablePPO``, with the games stepped together by
[`thermopylae_env.coop.vector_engine.CoopVectorEngine`][]:

    from sb3_contrib import MaskablePPO
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    env = CoopSB3VecEnv(num_envs=64, seed=0)
    model = MaskablePPO("MlpPolicy", env, n_steps=128).learn(100_000)

SB3's conventions (same-step autoreset): when a game ends, ``step_wait`` returns the first observation of
the next game, and that game's ``infos[i]`` holds ``"terminal_observation"`` (the last observation),
``"TimeLimit.truncated": False``, ``"is_success"``, and ``"episode": {"r", "l", "t"}`` as SB3's ``Monitor``
writes it, so ``rollout/ep_rew_mean``, ``ep_len_mean`` and ``success_rate`` are logged without a
``Monitor`` / ``VecMonitor``. Illegal actions follow the engine's policy (default ``"loss"``: the game ends
with ``illegal_action_penalty`` and ``infos[i]["illegal_action"]``). ``action_masks()`` returns the legal
actions, bool ``(num_envs, 72)``; sb3-contrib's ``get_action_masks`` calls ``env_method("action_masks")``,
which returns one row per game. Seeding follows SB3: ``env.seed(s)`` gives game ``i`` the seed ``s + i`` at
the next ``reset()`` (``seed=`` in the constructor does the same before the first one).

This module imports stable-baselines3 (the ``train`` extra); the rest of the package does not need it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from thermopylae_env.actions import check_illegal_action_penalty, check_reward_shaping
from thermopylae_env.cards import PersianRows
from thermopylae_env.coop.chance import ChanceFn
from thermopylae_env.coop.layout import NUM_ACTIONS, OBS_SIZE
from thermopylae_env.coop.vector_engine import CoopVectorEngine
from thermopylae_env.coop.vector_engine import Stepper as _Stepper
from thermopylae_env.core import ActionQueue

__all__ = ["CoopSB3VecEnv"]

# Attributes a caller may read per game with get_attr (the value is the same for every game).
_GAME_ATTRIBUTES = ("num_players", "illegal_action", "illegal_action_penalty", "reward_shaping")


class CoopSB3VecEnv(VecEnv):
    """``num_envs`` co-op games as one SB3 ``VecEnv`` (see the module docstring).

    Arguments: ``num_envs``; ``num_players``, ``persian_deck``, ``illegal_action``,
    ``illegal_action_penalty``, ``reward_shaping`` as for ``thermopylae/Coop-v0``; ``seed`` (int, the seed
    of game 0 at the first reset, or ``None``); ``chance`` (a
    [`thermopylae_env.coop.chance.ChanceFn`][], for tests and replays); ``backend`` of the engine
    (``"auto"``: numba where it is installed, else NumPy; the games are the same either way).
    """

    def __init__(
        self,
        num_envs: int,
        num_players: int = 1,
        persian_deck: str | os.PathLike[str] | PersianRows | None = None,
        illegal_action: str = "loss",
        illegal_action_penalty: float = -1.0,
        reward_shaping: float = 0.0,
        seed: int | None = None,
        chance: ChanceFn | None = None,
        backend: str = "auto",
    ) -> None:
        self.engine = CoopVectorEngine(num_envs, num_players, persian_deck, chance, backend=backend)
        self._stepper = _Stepper(self.engine, illegal_action, illegal_action_penalty, reward_shaping)
        n = self.engine.num_envs
        self._queue = ActionQueue(n, NUM_ACTIONS)
        self._episode_return = np.zeros(n, np.float64)
        self._episode_length = np.zeros(n, np.int64)
        self._t_start = time.time()
        self._ready = False
        super().__init__(
            n,
            gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
            gym.spaces.Discrete(NUM_ACTIONS),
        )
        if seed is not None:
            self.seed(seed)

    # ------------------------------------------------------------------ the VecEnv protocol

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """SB3's ``VecEnv.seed``: game ``i`` gets ``seed + i`` at the next
        [`reset`][thermopylae_env.coop.sb3.CoopSB3VecEnv.reset]. The seed is checked here (an integer in
        ``0 .. 2**64 - num_envs``, [`thermopylae_env.actions.as_seed`][])."""
        if seed is not None:
            self.engine.check_seed(seed)
        return super().seed(seed)

    def reset(self) -> np.ndarray:
        """Start a new game everywhere (with the seeds set by
        [`seed`][thermopylae_env.coop.sb3.CoopSB3VecEnv.seed], if any) and return the observations, float32
        ``(num_envs, 115)``."""
        if any(s is not None for s in self._seeds):
            self.engine.seed(list(self._seeds))
        self.engine.reset_games()
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._ready = True
        return self.engine.obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        """Check ``actions`` (one integer in 0..71 per game) and keep them for
        [`step_wait`][thermopylae_env.coop.sb3.CoopSB3VecEnv.step_wait]. Anything else (None, a wrong shape or
        dtype, a value out of range, NaN) raises ``TypeError`` / ``ValueError`` here, naming the problem, and
        nothing changes (before [`reset`][thermopylae_env.coop.sb3.CoopSB3VecEnv.reset], a ``RuntimeError``:
        nothing is queued for a later [`step_wait`][thermopylae_env.coop.sb3.CoopSB3VecEnv.step_wait])."""
        self._queue.put(actions, self._ready)

    def step_wait(self) -> VecEnvStepReturn:
        actions = self._queue.take(self._ready)
        result = self._stepper(actions, None, checked=True)
        done = result.terminated
        self._episode_return += result.rewards
        self._episode_length += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.any():
            ended = np.flatnonzero(done)
            last = self.engine.obs[ended].copy()
            elapsed = round(time.time() - self._t_start, 6)
            illegal = result.illegal
            reasons = iter(result.reasons or ())
            for row, game in enumerate(ended.tolist()):
                info = infos[game]
                info["terminal_observation"] = last[row]
                info["TimeLimit.truncated"] = False
                info["is_success"] = bool(result.won[game])
                info["episode"] = {
                    "r": round(float(self._episode_return[game]), 6),
                    "l": int(self._episode_length[game]),
                    "t": elapsed,
                }
                if illegal is not None and illegal[game]:
                    info["illegal_action"] = True
                    info["illegal_reason"] = next(reasons)
            self.engine.reset_games(ended)
            self._episode_return[ended] = 0.0
            self._episode_length[ended] = 0
        return self.engine.obs.copy(), result.rewards.astype(np.float32), done.copy(), infos

    def close(self) -> None:
        self._ready = False

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game, bool ``(num_envs, 72)`` (a copy)."""
        return self.engine.masks.copy()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """A per-game attribute (``render_mode``, ``observation_space``, ``action_space``,
        ``num_players``, ``illegal_action`` ..., or the ``action_masks`` method of one game)."""
        games = list(self._get_indices(indices))
        if attr_name == "render_mode":
            return [None for _ in games]
        if attr_name in ("observation_space", "action_space"):
            return [getattr(self, attr_name) for _ in games]
        if attr_name == "num_players":
            return [self.engine.num_players for _ in games]
        if attr_name in _GAME_ATTRIBUTES:
            return [getattr(self._stepper, attr_name) for _ in games]
        if attr_name == "action_masks":
            return [self._game_mask_method(game) for game in games]
        raise AttributeError(f"the co-op games have no attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Only ``illegal_action_penalty`` and ``reward_shaping`` can be set, for all games at once."""
        games = list(self._get_indices(indices))
        if attr_name not in ("illegal_action_penalty", "reward_shaping"):
            raise AttributeError(f"cannot set {attr_name!r} on the co-op games")
        if sorted(games) != list(range(self.num_envs)):
            raise ValueError(f"{attr_name} is shared by all games; set it without indices")
        if attr_name == "reward_shaping":
            self._stepper.reward_shaping = check_reward_shaping(value)
        else:
            self._stepper.illegal_action_penalty = check_illegal_action_penalty(value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """``env_method("action_masks")`` returns one bool mask row (72,) per game (sb3-contrib)."""
        if method_name != "action_masks":
            raise AttributeError(f"the co-op games have no method {method_name!r}")
        # The rows of one fresh copy, not a copy per row (which adds up to about 1 us per game and step
        # in sb3-contrib's get_action_masks, which asks for all games once per step).
        masks = self.engine.masks
        return list(masks.copy() if indices is None else masks[list(self._get_indices(indices))])

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]

    # ------------------------------------------------------------------ helpers

    def _game_mask_method(self, game: int):  # noqa: ANN202
        def action_masks() -> np.ndarray:
            return self.engine.masks[game].copy()

        return action_masks
