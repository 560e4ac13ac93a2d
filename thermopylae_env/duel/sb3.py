"""Stable-Baselines3 ``VecEnv`` adapters over the native vector duel engine.

* [`DuelSB3VecEnv`][thermopylae_env.duel.sb3.DuelSB3VecEnv] ``(num_envs, side, opponent)``: one side of the
  duel against a built-in opponent (``"heuristic"``, ``"random"`` or a batched policy with ``act_batch``),
  replacing ``DummyVecEnv([lambda: Monitor(gym.make("thermopylae/DuelGreek-v0"))] * n)`` for ``MaskablePPO``.
* [`DuelSelfPlaySB3VecEnv`][thermopylae_env.duel.sb3.DuelSelfPlaySB3VecEnv]
  ``(num_envs, greek_opponent, persian_opponent)``: for one learner playing both sides, the first half of the
  rows play the Greeks against ``persian_opponent`` and the second half the Persians against
  ``greek_opponent`` (the observation says which side a row plays: entry 5 is 1 for the Persian).
  [`DuelSelfPlaySB3VecEnv.set_opponents`][thermopylae_env.duel.sb3.DuelSelfPlaySB3VecEnv.set_opponents] swaps
  the opponents between rollouts (e.g. frozen snapshots of the learner drawn from a pool), so every transition
  a row collects is the learner's own, from one side's view, as PPO's advantage estimates need.

SB3's conventions (same-step autoreset): when a game ends, ``step_wait`` returns the first observation of the
next game, and that row's info holds ``"terminal_observation"``, ``"TimeLimit.truncated": False``,
``"is_success"`` and ``"episode": {"r", "l", "t"}`` as ``Monitor`` writes it. ``action_masks()`` returns bool
``(num_envs, 21)``, every row that of a running game with at least one legal action (finished games restart in
the step that ends them, so no row waits on an ignored action); sb3-contrib's ``get_action_masks`` calls
``env_method("action_masks")``. Seeding follows SB3: ``env.seed(s)`` gives game ``i`` the seed ``s + i`` at
the next ``reset()``.

This module imports stable-baselines3 (the ``train`` extra); the rest of the package does not need it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from thermopylae_env.actions import as_game_seeds
from thermopylae_env.core import ActionQueue
from thermopylae_env.duel.layout import GREEK, NUM_ACTIONS, OBS_SIZE, PERSIAN
from thermopylae_env.duel.vector import DuelVectorEnv

__all__ = ["DuelSB3VecEnv", "DuelSelfPlaySB3VecEnv"]


class _Part:
    """One native vector env (one side, one opponent) with its rows' episode statistics."""

    def __init__(self, num_envs: int, side: int, opponent: Any, illegal_action: str, penalty: float,
                 parallel: bool | str) -> None:
        self.env = DuelVectorEnv(num_envs, opponent=opponent, illegal_action=illegal_action,
                                 illegal_action_penalty=penalty, autoreset_mode=AutoresetMode.SAME_STEP,
                                 copy=False, parallel=parallel, side=side)
        self.ret = np.zeros(num_envs, np.float64)
        self.length = np.zeros(num_envs, np.int64)

    def reset(self, seeds: list[int | None] | None) -> np.ndarray:
        seed = seeds if seeds is not None and any(s is not None for s in seeds) else None
        obs, _ = self.env.reset(seed=seed)
        self.ret[:] = 0.0
        self.length[:] = 0
        return obs

    def step(self, actions: np.ndarray, t_start: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
        obs, rewards, done, _, info = self.env.step(actions)
        self.ret += rewards
        self.length += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.env.num_envs)]
        if done.any():
            final = info["final_info"]
            elapsed = round(time.time() - t_start, 6)
            illegal = final.get("illegal_action")
            for g in np.flatnonzero(done).tolist():
                row = infos[g]
                row["terminal_observation"] = info["final_obs"][g]
                row["TimeLimit.truncated"] = False
                row["is_success"] = bool(final["is_success"][g])
                row["episode"] = {"r": round(float(self.ret[g]), 6), "l": int(self.length[g]), "t": elapsed}
                if illegal is not None and illegal[g]:
                    row["illegal_action"] = True
                    row["illegal_reason"] = final["illegal_reason"][g]
            self.ret[done] = 0.0
            self.length[done] = 0
        return obs, rewards, done, infos


class _DuelSB3Base(VecEnv):
    """The VecEnv protocol over one or two `_Part` (rows of the first part come first)."""

    parts: list[_Part]

    def _start(self, seed: int | None) -> None:
        self._t_start = time.time()
        self._ready = False
        super().__init__(sum(p.env.num_envs for p in self.parts),
                         gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32), gym.spaces.Discrete(NUM_ACTIONS))
        self._queue = ActionQueue(self.num_envs, NUM_ACTIONS)
        if seed is not None:
            self.seed(seed)

    def _split(self, values: Sequence | np.ndarray) -> list:
        out, first = [], 0
        for p in self.parts:
            out.append(values[first:first + p.env.num_envs])
            first += p.env.num_envs
        return out

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """SB3's ``VecEnv.seed``: game ``i`` gets ``seed + i`` at the next `reset`. The seed is
        checked here (an integer in ``0 .. 2**64 - num_envs``, [`thermopylae_env.actions.as_seed`][])."""
        as_game_seeds(seed, self.num_envs)
        return super().seed(seed)

    def reset(self) -> np.ndarray:
        seeds = list(self._seeds) if any(s is not None for s in self._seeds) else None
        chunks = self._split(seeds) if seeds is not None else [None] * len(self.parts)
        obs = np.concatenate([p.reset(c) for p, c in zip(self.parts, chunks, strict=True)])
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._ready = True
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Check ``actions`` (one integer in 0..20 per row); a bad batch, or a call before `reset`,
        raises here and nothing is queued."""
        self._queue.put(actions, self._ready)

    def step_wait(self) -> VecEnvStepReturn:
        actions = self._queue.take(self._ready)
        chunks = self._split(actions)
        first = 0
        for p, a in zip(self.parts, chunks, strict=True):  # every part checked before any part moves
            p.env._check_step(a, first)
            first += p.env.num_envs
        results = [p.step(a, self._t_start) for p, a in zip(self.parts, chunks, strict=True)]
        obs = np.concatenate([r[0] for r in results])
        rewards = np.concatenate([r[1] for r in results]).astype(np.float32)
        dones = np.concatenate([r[2] for r in results])
        infos = [info for r in results for info in r[3]]
        return obs, rewards, dones, infos

    def close(self) -> None:
        self._ready = False

    def action_masks(self) -> np.ndarray:
        """The legal actions of every row, bool ``(num_envs, 21)`` (a copy)."""
        return np.concatenate([p.env.engine.masks for p in self.parts])

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        games = list(self._get_indices(indices))
        if attr_name == "render_mode":
            return [None for _ in games]
        if attr_name in ("observation_space", "action_space"):
            return [getattr(self, attr_name) for _ in games]
        if attr_name == "action_masks":
            return [lambda g=g: self.action_masks()[g] for g in games]
        raise AttributeError(f"the duel games have no attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"cannot set {attr_name!r} on the duel games")

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """``env_method("action_masks")`` returns one bool mask row (21,) per game (sb3-contrib)."""
        if method_name != "action_masks":
            raise AttributeError(f"the duel games have no method {method_name!r}")
        masks = self.action_masks()
        return list(masks if indices is None else masks[list(self._get_indices(indices))])

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


class DuelSB3VecEnv(_DuelSB3Base):
    """``num_envs`` games of one side (``side``: ``GREEK``/``PERSIAN`` or ``"greek"``/``"persian"``) against
    ``opponent`` (``"heuristic"``, ``"random"`` or an object with ``act_batch``), as one SB3 ``VecEnv``.
    ``illegal_action``, ``illegal_action_penalty``, ``parallel`` as for
    [`thermopylae_env.duel.vector.DuelVectorEnv`][]; ``seed``: the seed of game 0 at the first reset."""

    def __init__(self, num_envs: int, side: int | str = GREEK, opponent: Any = "heuristic",
                 illegal_action: str = "loss", illegal_action_penalty: float = -1.0,
                 seed: int | None = None, parallel: bool | str = "auto") -> None:
        self.side = _side(side)
        self.parts = [_Part(num_envs, self.side, opponent, illegal_action, illegal_action_penalty, parallel)]
        self._start(seed)

    def set_opponent(self, opponent: Any) -> None:
        """Replace the opponent (same values as ``opponent``); it takes over at its next move in every game
        (between steps every running game waits on the learner)."""
        self.parts[0].env.set_opponent(opponent)


class DuelSelfPlaySB3VecEnv(_DuelSB3Base):
    """``num_envs`` (even) rows: the first half play the Greeks against ``persian_opponent``, the second
    half the Persians against ``greek_opponent`` (see the module docstring)."""

    def __init__(self, num_envs: int, greek_opponent: Any = "heuristic", persian_opponent: Any = "heuristic",
                 illegal_action: str = "loss", illegal_action_penalty: float = -1.0,
                 seed: int | None = None, parallel: bool | str = "auto") -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 2 \
                or num_envs % 2:
            raise ValueError(f"num_envs must be an even integer >= 2, got {num_envs!r}")
        half = int(num_envs) // 2
        self.parts = [_Part(half, GREEK, persian_opponent, illegal_action, illegal_action_penalty, parallel),
                      _Part(half, PERSIAN, greek_opponent, illegal_action, illegal_action_penalty, parallel)]
        self._start(seed)

    def set_opponents(self, greek_opponent: Any = None, persian_opponent: Any = None) -> None:
        """Replace the opponents (``None`` keeps one); they take over at their next move in every game
        (between steps every running game waits on the learner)."""
        if persian_opponent is not None:
            self.parts[0].env.set_opponent(persian_opponent)
        if greek_opponent is not None:
            self.parts[1].env.set_opponent(greek_opponent)

def _side(side: int | str) -> int:
    if side in (GREEK, "greek"):
        return GREEK
    if side in (PERSIAN, "persian"):
        return PERSIAN
    raise ValueError(f"side must be 0 / 'greek' or 1 / 'persian', got {side!r}")
