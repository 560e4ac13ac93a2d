"""Every mask row a vector env or SB3 adapter hands out has a legal action, finished games included, so a
masked sampler (``rng.choice(np.flatnonzero(row))``, ``logits.masked_fill(~mask, -inf)`` then softmax)
can sample every row through whole episodes; the action drawn on a finished row is ignored."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import thermopylae_env  # noqa: F401  (registers the ids)
from thermopylae_env.duel.vector import DuelSelfPlayVectorEnv


def _masked_sample(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """Draw one action per row the two ways masked samplers do; both fail on an all-false row."""
    masks = np.asarray(masks).astype(bool)
    logits = rng.normal(size=masks.shape)
    masked = np.where(masks, logits, -np.inf)
    with np.errstate(invalid="ignore"):
        probs = np.exp(masked - masked.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
    assert not np.isnan(probs).any(), f"rows {np.flatnonzero(np.isnan(probs).any(axis=1))[:5]} have no action"
    return np.array([rng.choice(np.flatnonzero(row)) for row in masks])


def _vector_envs() -> list[tuple[str, object]]:
    out = []
    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        for env_id in ("thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"):
            out.append((f"{env_id}-{mode.value}", lambda e=env_id, m=mode: gym.make_vec(
                e, num_envs=64, opponent="random", autoreset_mode=m)))
        out.append((f"selfplay-{mode.value}", lambda m=mode: DuelSelfPlayVectorEnv(64, autoreset_mode=m)))
        out.append((f"coop-{mode.value}", lambda m=mode: gym.make_vec(
            "thermopylae/Coop-v0", num_envs=64, autoreset_mode=m)))
    return out


@pytest.mark.parametrize("name,make", _vector_envs(), ids=[n for n, _ in _vector_envs()])
def test_every_vector_mask_row_can_be_sampled_through_whole_episodes(name: str, make: object) -> None:
    env = make()
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=5)
    finished = 0
    waiting = np.zeros(env.num_envs, bool)
    for _ in range(300):
        masks = env.action_masks()
        assert np.array_equal(masks, info["action_mask"].astype(bool))
        if waiting.any():  # a finished game's row allows exactly one action, which the reset step ignores
            assert (masks[waiting].sum(axis=1) == 1).all()
        _masked_sample(rng, info["action_mask"])
        _, _, terminated, truncated, info = env.step(_masked_sample(rng, masks))
        assert "illegal_action" not in info and "illegal_action" not in info.get("final_info", {})
        finished += int(terminated.sum())
        waiting = terminated if env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP else waiting
    assert finished > 64


def _sb3_envs() -> list[tuple[str, object]]:
    pytest.importorskip("stable_baselines3")
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv
    from thermopylae_env.duel.sb3 import DuelSB3VecEnv, DuelSelfPlaySB3VecEnv

    return [("duel-greek", lambda: DuelSB3VecEnv(32, side="greek", opponent="random", seed=3)),
            ("duel-persian", lambda: DuelSB3VecEnv(32, side="persian", seed=3)),
            ("duel-selfplay", lambda: DuelSelfPlaySB3VecEnv(32, persian_opponent="random", seed=3)),
            ("coop", lambda: CoopSB3VecEnv(32, seed=3))]


@pytest.mark.parametrize("name", ["duel-greek", "duel-persian", "duel-selfplay", "coop"])
def test_every_sb3_mask_row_can_be_sampled_through_whole_episodes(name: str) -> None:
    env = dict(_sb3_envs())[name]()
    rng = np.random.default_rng(1)
    env.reset()
    finished = 0
    for _ in range(300):
        masks = np.array(env.env_method("action_masks"))
        assert np.array_equal(masks, env.action_masks())
        _, _, dones, infos = env.step(_masked_sample(rng, masks))
        assert not any(info.get("illegal_action") for info in infos)
        finished += int(dones.sum())
    assert finished > 32


def test_the_heuristic_moves_a_finished_row_with_its_one_allowed_action() -> None:
    from thermopylae_env.duel import kernel as K
    from thermopylae_env.duel.vector import DuelGreekVectorEnv

    env = DuelGreekVectorEnv(32, opponent="heuristic")
    _, info = env.reset(seed=2)
    seen = 0
    for _ in range(200):
        live = np.flatnonzero(info["action_mask"].any(axis=1))  # every row: finished ones allow action 0
        assert live.size == env.num_envs
        actions = env.engine.heuristic_actions(live)
        over = env.engine.states[:, K.PHASE] == K.OVER
        assert (actions[over] == 0).all()
        seen += int(over.sum())
        _, _, _, _, info = env.step(actions)
        assert "illegal_action" not in info
    assert seen > 0
