"""The SB3 VecEnv adapters over the native vector duel engine."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
sb3_contrib = pytest.importorskip("sb3_contrib")

from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

from thermopylae_env.duel.layout import GREEK, PERSIAN  # noqa: E402
from thermopylae_env.duel.sb3 import DuelSB3VecEnv, DuelSelfPlaySB3VecEnv  # noqa: E402


def _random_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return (rng.random(masks.shape) * masks).argmax(axis=1)


def _play(env: VecEnv, steps: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    obs = env.reset()
    ended = []
    for _ in range(steps):
        masks = np.array(env.env_method("action_masks"))
        assert masks.any(axis=1).all()  # same-step autoreset: every row can act
        obs, rewards, dones, infos = env.step(_random_legal(rng, masks))
        assert obs.shape == (env.num_envs, 56) and rewards.dtype == np.float32
        for i in np.flatnonzero(dones):
            info = infos[i]
            assert info["terminal_observation"].shape == (56,)
            assert info["episode"]["r"] == rewards[i] and info["episode"]["l"] > 0
            assert info["is_success"] == (rewards[i] > 0) and not info["TimeLimit.truncated"]
            ended.append(info)
        assert not any("episode" in infos[i] for i in np.flatnonzero(~dones))
    return ended


@pytest.mark.parametrize("side", ["greek", "persian"])
def test_one_side_adapter_follows_sb3_conventions(side: str) -> None:
    env = DuelSB3VecEnv(8, side=side, opponent="heuristic", seed=1)
    assert len(_play(env, 300, 1)) > 10


def test_one_side_adapter_seeds_like_sb3() -> None:
    a, b = DuelSB3VecEnv(4, seed=3), DuelSB3VecEnv(4)
    b.seed(3)
    assert np.array_equal(a.reset(), b.reset())


def test_self_play_adapter_plays_both_sides_and_swaps_opponents() -> None:
    env = DuelSelfPlaySB3VecEnv(8, seed=2)
    obs = env.reset()
    assert (obs[:4, 5] == GREEK).all() and (obs[4:, 5] == PERSIAN).all()
    assert len(_play(env, 200, 2)) > 5

    class FirstLegal:
        def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
            return masks.argmax(axis=1)

    env.set_opponents(greek_opponent=FirstLegal(), persian_opponent="random")
    assert env.parts[0].env.opponent_label == "random"
    assert len(_play(env, 100, 3)) > 0
    with pytest.raises(ValueError, match="even"):
        DuelSelfPlaySB3VecEnv(3)


def test_bad_actions_raise_before_any_game_moves() -> None:
    env = DuelSB3VecEnv(4, seed=0)
    env.reset()
    before = env.parts[0].env.engine.states.copy()
    with pytest.raises(ValueError):
        env.step_async(np.full(4, 99))
    with pytest.raises(TypeError):
        env.step_async(np.zeros(4, float))
    assert np.array_equal(before, env.parts[0].env.engine.states)


def test_maskable_ppo_learns_on_the_adapter() -> None:
    env = DuelSB3VecEnv(16, side="persian", seed=0)
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=1, seed=0,
                                    policy_kwargs={"net_arch": [32]})
    model.learn(1024)
    assert model.num_timesteps >= 1024
