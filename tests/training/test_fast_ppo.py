"""The fast learner (thermopylae_agents.training.fast_ppo): the same algorithm as sb3-contrib's MaskablePPO.

Each lean piece is held to the sb3-contrib piece it replaces (the policy's logits and values, the masked
distribution, GAE, the loss), then whole runs: the same seed twice gives the same weights, the files load
as MaskablePPO, the duel and the callbacks' locals work. Speed is measured by benchmarks/ppo_speed.py,
not here.
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

from thermopylae_agents.players.fight_features import CoopFightFeatures  # noqa: E402
from thermopylae_agents.training.fast_ppo import (  # noqa: E402
    FastMaskablePPO,
    PolicyCore,
    _Rollout,
    entropy_of,
    masked_log_probs,
    measure_threads,
    minibatch_loss,
    reuse_freed_memory,
    sample,
)
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


def coop_observations(games: int = 64, steps: int = 12, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of games played at random (all phases, lines with zero, one or two slots)."""
    env = CoopSB3VecEnv(games, seed=seed)
    obs = [env.reset()]
    masks = [env.action_masks()]
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        legal = masks[-1]
        actions = (rng.random(legal.shape) * legal).argmax(1)
        obs.append(env.step(actions)[0])
        masks.append(env.action_masks())
    return np.concatenate(obs), np.concatenate(masks)


# ------------------------------------------------------------------------- the pieces against sb3-contrib


def test_policy_core_gives_the_sb3_policys_logits_and_values_with_the_fight_features() -> None:
    model = coop_model()
    obs, masks = coop_observations()
    policy = model.policy
    with th.no_grad():
        tensor = th.as_tensor(obs)
        features = policy.extract_features(tensor)
        latent_pi, latent_vf = policy.mlp_extractor(features)
        expected_logits = policy.action_net(latent_pi)
        expected_values = policy.value_net(latent_vf).squeeze(-1)
        core = PolicyCore(policy)
        logits, values = core(core.features(tensor))
    assert th.allclose(logits, expected_logits, atol=1e-5)
    assert th.allclose(values, expected_values, atol=1e-5)


def test_policy_core_gives_the_sb3_policys_outputs_on_the_duel() -> None:
    env = DuelSB3VecEnv(8, side="greek", opponent="heuristic")
    env.seed(0)
    net = {"net_arch": {"pi": [16], "vf": [8]}}
    model = FastMaskablePPO("MlpPolicy", env, seed=0, policy_kwargs=net, **SMALL)
    obs = th.as_tensor(env.reset())
    with th.no_grad():
        latent_pi, latent_vf = model.policy.mlp_extractor(model.policy.extract_features(obs))
        core = PolicyCore(model.policy)
        logits, values = core(core.features(obs))
    assert th.allclose(logits, model.policy.action_net(latent_pi), atol=1e-5)
    assert th.allclose(values, model.policy.value_net(latent_vf).squeeze(-1), atol=1e-5)


def test_bfloat16_policy_core_stays_close_to_float32() -> None:
    model = coop_model()
    obs = th.as_tensor(coop_observations()[0])
    with th.no_grad():
        exact = PolicyCore(model.policy)
        half = PolicyCore(model.policy, "bfloat16")
        logits32, values32 = exact(exact.features(obs))
        logits16, values16 = half(half.features(obs))
    assert logits16.dtype == th.float32
    assert th.allclose(logits16, logits32, atol=0.05)
    assert th.allclose(values16, values32, atol=0.05)


def test_frozen_odds_tables_give_the_same_forward_pass() -> None:
    model = coop_model()
    obs = th.as_tensor(coop_observations()[0])
    core = PolicyCore(model.policy)
    with th.no_grad():
        before = core(core.features(obs))
        core.freeze()
        frozen = core(core.features(obs))
        core.unfreeze()
    assert all(th.equal(a, b) for a, b in zip(before, frozen, strict=True))


def test_masked_log_probs_and_entropy_are_sb3_contribs() -> None:
    generator = th.Generator().manual_seed(0)
    logits = th.randn((200, 72), generator=generator) * 3
    masks = th.rand((200, 72), generator=generator) < 0.2
    masks[:, 5] = True
    reference = MaskableCategorical(logits=logits)
    reference.apply_masking(masks)
    log_probs = masked_log_probs(logits, masks)
    assert th.allclose(log_probs[masks], reference.logits[masks], atol=1e-5)
    assert th.all(log_probs[~masks] == -th.inf)
    assert th.allclose(entropy_of(log_probs, masks), reference.entropy(), atol=1e-5)


def test_the_entropy_gradient_has_no_nan_from_illegal_actions() -> None:
    logits = th.randn((10, 72), requires_grad=True)
    masks = th.zeros((10, 72), dtype=th.bool)
    masks[:, :3] = True
    entropy_of(masked_log_probs(logits, masks), masks).sum().backward()
    assert th.isfinite(logits.grad).all()
    assert th.all(logits.grad[~masks] == 0)


def test_sampling_follows_the_probabilities_and_never_draws_an_illegal_action() -> None:
    masks = th.zeros((1, 72), dtype=th.bool)
    masks[0, [3, 10, 40]] = True
    logits = th.zeros((1, 72))
    logits[0, 10] = np.log(2.0)  # probabilities 1/4, 1/2, 1/4
    log_probs = masked_log_probs(logits, masks).expand(40_000, 72)
    uniform = th.rand((40_000, 1), generator=th.Generator().manual_seed(1))
    drawn = sample(log_probs, uniform)
    counts = th.bincount(drawn, minlength=72).numpy() / 40_000
    assert set(np.flatnonzero(counts)) == {3, 10, 40}
    assert counts[[3, 10, 40]] == pytest.approx([0.25, 0.5, 0.25], abs=0.01)


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


def test_minibatch_loss_is_sb3_contribs_loss() -> None:
    model = coop_model(ent_coef=0.01, vf_coef=0.7)
    obs, masks = coop_observations(games=16, steps=4)
    policy = model.policy
    tensor, mask_tensor = th.as_tensor(obs), th.as_tensor(masks)
    generator = th.Generator().manual_seed(4)
    with th.no_grad():
        distribution = policy.get_distribution(tensor, action_masks=masks)
        actions = distribution.distribution.sample()
        old_log_probs = distribution.log_prob(actions) + 0.05 * th.randn(len(obs), generator=generator)
    advantages = th.randn(len(obs), generator=generator)
    returns = th.randn(len(obs), generator=generator)
    core = PolicyCore(policy)
    batch = {"features": core.features(tensor), "masks": mask_tensor, "actions": actions,
             "old_log_probs": old_log_probs, "old_values": th.zeros(len(obs)), "advantages": advantages,
             "returns": returns}
    terms = minibatch_loss(core, batch, 0.2, None, model.ent_coef, model.vf_coef)

    values, log_prob, entropy = policy.evaluate_actions(tensor, actions, action_masks=masks)
    normalized = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = th.exp(log_prob - old_log_probs)
    policy_loss = -th.min(normalized * ratio, normalized * th.clamp(ratio, 0.8, 1.2)).mean()
    value_loss = th.nn.functional.mse_loss(returns, values.flatten())
    expected = policy_loss - model.ent_coef * entropy.mean() + model.vf_coef * value_loss
    assert float(terms["loss"].detach()) == pytest.approx(float(expected.detach()), abs=1e-5)

    mine = th.autograd.grad(terms["loss"], list(policy.parameters()), allow_unused=True)
    theirs = th.autograd.grad(expected, list(policy.parameters()), allow_unused=True)
    for a, b in zip(mine, theirs, strict=True):
        if b is not None:
            assert th.allclose(a, b, atol=1e-5)


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


def test_reusing_freed_memory_is_applied_on_linux() -> None:
    import sys

    assert reuse_freed_memory() is sys.platform.startswith("linux")
