"""The fast learner (thermopylae_agents.training.fast_ppo): the same algorithm as sb3-contrib's MaskablePPO.

Each lean piece is held to the sb3-contrib piece it replaces (the masked distribution, sampling, GAE; the
network and the loss's gradient in test_lean_mlp.py), then whole runs: the same seed twice gives the same
weights, the files load as MaskablePPO, the duel and the callbacks' locals work. Speed is measured by
benchmarks/ppo_speed.py, not here.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch as th

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer  # noqa: E402
from sb3_contrib.common.maskable.distributions import MaskableCategorical  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.utils import set_random_seed  # noqa: E402

from thermopylae_agents.training.fast_ppo import (  # noqa: E402
    FastMaskablePPO,
    _Rollout,
    masked_log_probs,
    measure_threads,
    native_bfloat16,
    resolve_precision,
    reuse_freed_memory,
    sample,
)
from thermopylae_agents.training.fight_features import CoopFightFeatures  # noqa: E402
from thermopylae_env.coop.sb3 import CoopSB3VecEnv  # noqa: E402
from thermopylae_env.duel.sb3 import DuelSB3VecEnv  # noqa: E402

RECIPE_NET = {"net_arch": {"pi": [32, 32], "vf": [16, 16]}, "activation_fn": th.nn.Tanh,
              "features_extractor_class": CoopFightFeatures}
SMALL = {"n_steps": 16, "batch_size": 64, "n_epochs": 2, "gamma": 1.0, "ent_coef": 0.003}


def coop_model(cls: type = FastMaskablePPO, seed: int = 0, n_envs: int = 8, **kwargs) -> MaskablePPO:
    env = CoopSB3VecEnv(n_envs, seed=seed)
    return cls("MlpPolicy", env, seed=seed, policy_kwargs=RECIPE_NET, **(SMALL | kwargs))


def weights_digest(model: MaskablePPO) -> str:
    arrays = (p.detach().numpy().tobytes() for p in model.policy.parameters())
    return hashlib.sha256(b"".join(arrays)).hexdigest()


# ------------------------------------------------------------------------- the pieces against sb3-contrib


def test_masked_log_probs_are_sb3_contribs() -> None:
    generator = th.Generator().manual_seed(0)
    logits = th.randn((200, 72), generator=generator) * 3
    masks = th.rand((200, 72), generator=generator) < 0.2
    masks[:, 5] = True
    reference = MaskableCategorical(logits=logits)
    reference.apply_masking(masks)
    log_probs = masked_log_probs(logits, masks)
    assert th.allclose(log_probs[masks], reference.logits[masks], atol=1e-5)
    assert th.all(log_probs[~masks] == -th.inf)


def test_sampling_follows_the_probabilities_and_never_draws_an_illegal_action() -> None:
    masks = th.zeros((1, 72), dtype=th.bool)
    masks[0, [3, 10, 40]] = True
    logits = th.zeros((1, 72))
    logits[0, 10] = np.log(2.0)  # probabilities 1/4, 1/2, 1/4
    probs = masked_log_probs(logits, masks).exp().expand(40_000, 72)
    uniform = th.rand((40_000, 1), generator=th.Generator().manual_seed(1))
    drawn = sample(probs, uniform)
    counts = th.bincount(drawn, minlength=72).numpy() / 40_000
    assert set(np.flatnonzero(counts)) == {3, 10, 40}
    assert counts[[3, 10, 40]] == pytest.approx([0.25, 0.5, 0.25], abs=0.01)


def test_the_compiled_sampler_follows_the_probabilities_and_gives_their_log() -> None:
    from thermopylae_agents.training._lean_kernels import sample_masked

    masks = th.zeros((40_000, 72), dtype=th.bool)
    masks[:, [3, 10, 40]] = True
    logits = th.zeros((40_000, 72))
    logits[:, 10] = np.log(2.0)
    logits[:, 20] = 50.0  # illegal, however likely its logit says it is
    uniform = th.rand(40_000, generator=th.Generator().manual_seed(2))
    actions, log_probs = sample_masked(logits, masks, uniform)
    counts = th.bincount(actions, minlength=72).numpy() / 40_000
    assert set(np.flatnonzero(counts)) == {3, 10, 40}
    assert counts[[3, 10, 40]] == pytest.approx([0.25, 0.5, 0.25], abs=0.01)
    expected = masked_log_probs(logits, masks).gather(1, actions[:, None]).squeeze(1)
    assert th.allclose(log_probs, expected, atol=1e-6)


def test_the_fast_learner_trains_on_the_torch_code_other_devices_run(monkeypatch) -> None:
    from thermopylae_agents.training import _lean_kernels

    monkeypatch.setattr(_lean_kernels, "COMPILED", False)
    model = coop_model()
    before = weights_digest(model)
    model.learn(2 * 8 * 16)
    assert weights_digest(model) != before and model.num_timesteps == 2 * 8 * 16


def test_gae_is_sb3s() -> None:
    steps, games = 16, 5
    generator = th.Generator().manual_seed(2)
    rollout = _Rollout(steps, games, 3, 4)
    rollout.rewards.copy_(th.randint(-1, 2, (steps, games), generator=generator).float())
    rollout.values.copy_(th.randn((steps, games), generator=generator))
    rollout.starts.copy_((th.rand((steps, games), generator=generator) < 0.2).float())
    last_values = th.randn(games, generator=generator)
    last_dones = (th.rand(games, generator=generator) < 0.5).float()
    rollout.gae(last_values, last_dones, gamma=0.99, lam=0.9)

    import gymnasium as gym

    buffer = MaskableRolloutBuffer(steps, gym.spaces.Box(0, 1, (3,)), gym.spaces.Discrete(4), gamma=0.99,
                                   gae_lambda=0.9, n_envs=games)
    buffer.rewards[:] = rollout.rewards.numpy()
    buffer.values[:] = rollout.values.numpy()
    buffer.episode_starts[:] = rollout.starts.numpy()
    buffer.compute_returns_and_advantage(last_values, last_dones.numpy())
    assert np.allclose(rollout.advantages.numpy(), buffer.advantages, atol=1e-5)
    assert np.allclose(rollout.returns.numpy(), buffer.returns, atol=1e-5)


# ------------------------------------------------------------------------------------------ whole runs


def test_the_same_seed_trains_the_same_weights_twice() -> None:
    digests = []
    for _ in range(2):
        set_random_seed(7)
        model = coop_model(seed=7)
        model.learn(3 * 8 * 16)
        digests.append(weights_digest(model))
    assert digests[0] == digests[1]


def test_another_seed_trains_other_weights() -> None:
    runs = []
    for seed in (7, 8):
        set_random_seed(seed)
        model = coop_model(seed=seed)
        model.learn(2 * 8 * 16)
        runs.append(weights_digest(model))
    assert runs[0] != runs[1]


def test_training_changes_the_weights_and_counts_the_steps() -> None:
    model = coop_model()
    before = weights_digest(model)
    model.learn(2 * 8 * 16)
    assert model.num_timesteps == 2 * 8 * 16
    assert weights_digest(model) != before
    assert model._n_updates == 2 * SMALL["n_epochs"]


def test_a_fast_model_file_loads_as_maskable_ppo_and_plays(tmp_path) -> None:
    model = coop_model(precision="bfloat16")
    model.learn(8 * 16)
    model.save(tmp_path / "model.zip")
    loaded = MaskablePPO.load(tmp_path / "model.zip")
    assert weights_digest(loaded) == weights_digest(model)
    env = CoopSB3VecEnv(4, seed=1)
    action, _ = loaded.predict(env.reset(), action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[np.arange(4), action].all()
    again = FastMaskablePPO.load(tmp_path / "model.zip", env=env)
    assert again.precision == "bfloat16"
    again.learn(4 * 16)


def test_a_duel_side_trains_and_the_callbacks_see_the_ended_games() -> None:
    class Ended(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.games = 0

        def _on_step(self) -> bool:
            dones = self.locals["dones"]
            infos = self.locals["infos"]
            self.games += int(dones.sum())
            assert all("is_success" in infos[i] for i in np.flatnonzero(dones))
            return True

    env = DuelSB3VecEnv(16, side="persian", opponent="heuristic")
    env.seed(0)
    model = FastMaskablePPO("MlpPolicy", env, seed=0, policy_kwargs={"net_arch": {"pi": [16], "vf": [8]}},
                            **(SMALL | {"n_steps": 64, "batch_size": 256}))
    counter = Ended()
    model.learn(4 * 16 * 64, callback=counter)
    assert counter.games > 0
    assert len(model.ep_success_buffer) > 0


def test_a_callback_that_stops_ends_learn_early() -> None:
    class StopAtOnce(BaseCallback):
        def _on_step(self) -> bool:
            return False

    model = coop_model()
    model.learn(10 * 8 * 16, callback=StopAtOnce())
    assert model.num_timesteps == 8


def test_a_policy_the_fast_learner_cannot_run_is_refused_in_one_line() -> None:
    env = CoopSB3VecEnv(4, seed=0)
    net = {"net_arch": {"pi": [], "vf": [8]}}
    no_actor_layers = FastMaskablePPO("MlpPolicy", env, seed=0, policy_kwargs=net, **SMALL)
    with pytest.raises(ValueError, match="actor and a critic") as error:
        no_actor_layers.learn(4 * 16)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="precision"):
        FastMaskablePPO("MlpPolicy", env, precision="float16", **SMALL)


def test_measuring_threads_leaves_the_policy_and_the_generators_as_they_were() -> None:
    model = coop_model()
    before = weights_digest(model)
    th.manual_seed(5)
    expected = th.rand(3)
    th.manual_seed(5)
    threads = th.get_num_threads()
    rates = measure_threads(model.policy, [1, 2], batch_size=64, repeats=1)
    assert set(rates) == {1, 2} and all(rate > 0 for rate in rates.values())
    assert th.equal(th.rand(3), expected)
    assert weights_digest(model) == before
    assert th.get_num_threads() == threads


def test_auto_precision_is_bfloat16_only_with_bfloat16_instructions() -> None:
    assert native_bfloat16("processor : 0\nflags : fpu avx2 avx512f avx512_bf16\n")
    assert native_bfloat16("flags\t\t: fpu amx_bf16 amx_tile\n")
    assert not native_bfloat16("flags : fpu sse avx2 avx512f avx512bw\n")
    assert not native_bfloat16("")
    expected = "bfloat16" if native_bfloat16() else "float32"
    assert resolve_precision("auto") == expected
    assert resolve_precision("auto", device="cuda") == "float32"
    assert resolve_precision("float32") == "float32" and resolve_precision("bfloat16") == "bfloat16"
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("half")


def test_reusing_freed_memory_is_applied_on_linux() -> None:
    import sys

    assert reuse_freed_memory() is sys.platform.startswith("linux")
