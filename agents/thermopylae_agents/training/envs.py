"""Environments of a run: the training ``VecEnv`` and the evaluation env, seeded."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.training.config import VEC_KINDS
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID

__all__ = ["build_eval_env", "build_vec_env", "eval_env_kwargs", "make_env_fn"]


def make_env_fn(
    env_id: str, env_kwargs: Mapping[str, Any], wrapper: Callable[[gym.Env], gym.Env] | None = None
) -> Callable[[], gym.Env]:
    """A thunk building one Monitor-wrapped environment (what SB3's vectorized envs take)."""
    return functools.partial(_monitored_env, env_id, dict(env_kwargs), wrapper)


def _monitored_env(
    env_id: str, kwargs: dict[str, Any], wrapper: Callable[[gym.Env], gym.Env] | None
) -> gym.Env:
    # A function of this module, not a closure: a SubprocVecEnv worker (a fresh interpreter) that unpickles
    # the thunk imports this module, and with it thermopylae_env, which registers the environments.
    from stable_baselines3.common.monitor import Monitor  # extra: train

    env = gym.make(env_id, **kwargs)
    if wrapper is not None:
        env = wrapper(env)
    return Monitor(env, info_keywords=("is_success",))


def build_vec_env(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    n_envs: int,
    seed: int,
    vec: str = "dummy",
    wrapper: Callable[[gym.Env], gym.Env] | None = None,
):
    """``n_envs`` copies of ``env_id`` as one SB3 ``VecEnv`` (episode statistics recorded), seeded.

    ``vec="native"`` uses the vector engines, which record episode statistics themselves
    ([`thermopylae_env.coop.sb3.CoopSB3VecEnv`][], [`thermopylae_env.duel.sb3.DuelSB3VecEnv`][]
    with the duel's built-in opponent; a model path opponent plays greedily through a
    [`FrozenPolicy`][thermopylae_agents.policies.frozen_policy.FrozenPolicy]); ``"dummy"`` / ``"subproc"``
    stack single environments in this process / in worker processes. Environment ``i`` is seeded with
    ``seed + i``.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv  # extra: train

    if vec not in VEC_KINDS:
        raise ValueError(f"vec must be one of {VEC_KINDS}, got {vec!r}")
    if vec == "native":
        if env_id not in DUEL_SIDES and env_id != COOP_ID:
            raise ValueError(f"the native vector engine exists for {COOP_ID} and the duel, not {env_id}")
        if wrapper is not None:
            raise ValueError("a per-env wrapper needs vec='dummy' or 'subproc'")
        if env_id in DUEL_SIDES:
            venv = build_duel_native(env_id, env_kwargs, n_envs)
        else:
            from thermopylae_env.coop.sb3 import CoopSB3VecEnv  # extra: train

            venv = CoopSB3VecEnv(n_envs, **dict(env_kwargs))
    else:
        fns = [make_env_fn(env_id, env_kwargs, wrapper) for _ in range(n_envs)]
        venv = SubprocVecEnv(fns) if vec == "subproc" else DummyVecEnv(fns)
    venv.seed(seed)
    return venv


DUEL_SIDES = {GREEK_ID: "greek", PERSIAN_ID: "persian"}


def build_duel_native(env_id: str, env_kwargs: Mapping[str, Any], n_envs: int):
    """``n_envs`` games of ``env_id``'s side on the native duel engine, as one SB3 ``VecEnv``."""
    from thermopylae_env.duel.sb3 import DuelSB3VecEnv  # extra: train

    kwargs = dict(env_kwargs)
    kwargs["opponent"] = native_opponent(kwargs.get("opponent", "heuristic"))
    return DuelSB3VecEnv(n_envs, side=DUEL_SIDES[env_id], **kwargs)


def native_opponent(opponent: Any) -> Any:
    """The duel engine's ``opponent=``: the built-in names as they are; a saved model's path (engines load no
    file) loaded here as a batched player of its most likely legal actions."""
    if isinstance(opponent, str) and opponent not in ("heuristic", "random"):
        from sb3_contrib import MaskablePPO  # extra: train

        model = MaskablePPO.load(opponent, device="cpu")
        return FrozenPolicy(model, name=opponent, deterministic=True)
    return opponent


def build_eval_env(env_id: str, env_kwargs: Mapping[str, Any], n_envs: int, seed: int, vec: str):
    """The env of the periodic evaluation: like the training env, without reward shaping, other seeds."""
    kind = "native" if vec == "native" else "dummy"
    return build_vec_env(env_id, eval_env_kwargs(env_kwargs), n_envs, seed, kind)


def eval_env_kwargs(env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The training env's settings without reward shaping: evaluation reports the true +1/-1 reward."""
    kwargs = dict(env_kwargs)
    kwargs.pop("reward_shaping", None)
    return kwargs
