"""The fast learner's network and gradient (thermopylae_agents.training.lean_mlp) against SB3 and autograd.

LeanMLP runs an SB3 policy's network on its own parameters with the passes written out; ppo_gradients
writes PPO's gradient in closed form. Both are held here to what the SB3 policy computes with autograd
(`evaluate_actions` and sb3-contrib's loss), for the co-op fight features and the duel's plain
observation, tanh and ReLU, with and without the value clip: float32 to rounding, bfloat16 to its
precision.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from thermopylae_agents.training.fight_features import CoopFightFeatures  # noqa: E402
from thermopylae_agents.training.lean_mlp import LeanMLP, ppo_gradients  # noqa: E402
from thermopylae_env.coop.sb3 import CoopSB3VecEnv  # noqa: E402
from thermopylae_env.duel.sb3 import DuelSB3VecEnv  # noqa: E402

ENT_COEF, VF_COEF, CLIP = 0.01, 0.5, 0.2


def played_positions(env, steps: int = 12, seed: int = 3) -> tuple[th.Tensor, th.Tensor]:
    """Observations and masks of games played at random from ``env`` (every phase of the game)."""
    obs, masks = [env.reset()], [env.action_masks()]
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        actions = (rng.random(masks[-1].shape) * masks[-1]).argmax(1)
        obs.append(env.step(actions)[0])
        masks.append(env.action_masks())
    return th.as_tensor(np.concatenate(obs)), th.as_tensor(np.concatenate(masks))


def coop_case(activation: type) -> tuple[MaskablePPO, th.Tensor, th.Tensor]:
    env = CoopSB3VecEnv(32, seed=0)
    net = {"net_arch": {"pi": [32, 32], "vf": [16, 16]}, "activation_fn": activation,
           "features_extractor_class": CoopFightFeatures}
    model = MaskablePPO("MlpPolicy", env, seed=0, policy_kwargs=net)
    return (model, *played_positions(env))


def duel_case(activation: type) -> tuple[MaskablePPO, th.Tensor, th.Tensor]:
    env = DuelSB3VecEnv(32, side="greek")
    env.seed(0)
    net = {"net_arch": {"pi": [32], "vf": [16, 8]}, "activation_fn": activation}
    model = MaskablePPO("MlpPolicy", env, seed=0, policy_kwargs=net)
    return (model, *played_positions(env))


CASES = [(make, activation) for make in (coop_case, duel_case) for activation in (th.nn.Tanh, th.nn.ReLU)]
CASE_IDS = [f"{make.__name__.split('_')[0]}-{activation.__name__}" for make, activation in CASES]


def random_batch(obs: th.Tensor, masks: th.Tensor, seed: int = 1) -> dict[str, th.Tensor]:
    generator = th.Generator().manual_seed(seed)
    size = len(obs)
    return {"masks": masks, "actions": th.multinomial(masks.float(), 1, generator=generator).squeeze(1),
            "old_log_probs": -2 * th.rand(size, generator=generator),
            "old_values": 0.1 * th.randn(size, generator=generator),
            "advantages": th.randn(size, generator=generator), "returns": th.randn(size, generator=generator)}


def sb3_loss(policy, obs, batch, clip_range_vf) -> th.Tensor:
    """sb3-contrib's MaskablePPO.train loss, term for term, through the SB3 policy and autograd."""
    values, log_prob, entropy = policy.evaluate_actions(obs, batch["actions"], action_masks=batch["masks"])
    values = values.flatten()
    advantages = batch["advantages"]
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = th.exp(log_prob - batch["old_log_probs"])
    policy_loss = -th.min(advantages * ratio, advantages * th.clamp(ratio, 1 - CLIP, 1 + CLIP)).mean()
    if clip_range_vf is not None:
        old = batch["old_values"]
        values = old + th.clamp(values - old, -clip_range_vf, clip_range_vf)
    return policy_loss - ENT_COEF * entropy.mean() + VF_COEF * F.mse_loss(batch["returns"], values)


@pytest.mark.parametrize(("make", "activation"), CASES, ids=CASE_IDS)
def test_the_forward_pass_gives_the_sb3_policys_logits_and_values(make, activation) -> None:
    model, obs, _ = make(activation)
    policy = model.policy
    with th.no_grad():
        latent_pi, latent_vf = policy.mlp_extractor(policy.extract_features(obs))
        expected_logits = policy.action_net(latent_pi)
        expected_values = policy.value_net(latent_vf).squeeze(-1)
    net = LeanMLP(policy)
    logits, values = net.forward(net.features(obs))
    assert th.allclose(logits, expected_logits, atol=1e-5)
    assert th.allclose(values, expected_values, atol=1e-5)
    half = LeanMLP(policy, "bfloat16")
    logits16, values16 = half.forward(half.for_update(half.features(obs)))
    assert logits16.dtype == th.float32
    assert th.allclose(logits16, expected_logits, atol=0.05)
    assert th.allclose(values16, expected_values, atol=0.05)


@pytest.mark.parametrize("clip_range_vf", [None, 0.05], ids=["no-value-clip", "value-clip"])
@pytest.mark.parametrize(("make", "activation"), CASES, ids=CASE_IDS)
def test_the_written_out_gradient_is_autograds_of_sb3_contribs_loss(make, activation, clip_range_vf) -> None:
    model, obs, masks = make(activation)
    batch = random_batch(obs, masks)
    params = list(model.policy.parameters())
    expected_loss = sb3_loss(model.policy, obs, batch, clip_range_vf)
    expected = th.autograd.grad(expected_loss, params)
    net = LeanMLP(model.policy)
    loss = ppo_gradients(net, batch | {"features": net.for_update(net.features(obs))}, CLIP, clip_range_vf,
                         ENT_COEF, VF_COEF)
    assert loss.loss == pytest.approx(float(expected_loss.detach()), abs=1e-5)
    for param, grad in zip(params, expected, strict=True):
        assert th.allclose(param.grad, grad, atol=1e-6, rtol=1e-4)


def test_the_bfloat16_gradient_points_the_way_of_the_float32_one() -> None:
    model, obs, masks = coop_case(th.nn.Tanh)
    batch = random_batch(obs, masks)
    grads = {}
    for precision in ("float32", "bfloat16"):
        net = LeanMLP(model.policy, precision)
        features = net.for_update(net.features(obs))
        ppo_gradients(net, batch | {"features": features}, CLIP, None, ENT_COEF, VF_COEF)
        grads[precision] = th.cat([p.grad.flatten() for p in model.policy.parameters()])
    cosine = F.cosine_similarity(grads["float32"], grads["bfloat16"], dim=0)
    assert cosine > 0.99


def test_the_odds_tables_are_the_first_layers_share_of_the_odds_columns() -> None:
    model, obs, _ = coop_case(th.nn.Tanh)
    policy = model.policy
    net = LeanMLP(policy)
    _, rows = net.features(obs)
    tables = net.odds_tables()
    features = policy.extract_features(obs).detach()[:, net.obs_size:]  # the 220 odds columns
    weight = th.cat([layer.weight for layer in net.first]).detach()[:, net.obs_size:]
    expected = features @ weight.t()
    assert th.allclose(tables[rows.long()].sum(1), expected, atol=1e-5)
    assert th.all(tables[-1] == 0)


def test_frozen_tables_give_the_same_forward_pass() -> None:
    model, obs, _ = coop_case(th.nn.Tanh)
    net = LeanMLP(model.policy)
    feats = net.features(obs)
    before = net.forward(feats)
    net.freeze()
    frozen = net.forward(feats)
    net.unfreeze()
    assert all(th.equal(a, b) for a, b in zip(before, frozen, strict=True))


@pytest.mark.parametrize(
    ("net_arch", "message"),
    [({"pi": [], "vf": [8]}, "actor and a critic"), ({"pi": [8], "vf": [8]}, None)],
    ids=["no-actor-layers", "separate"],
)
def test_only_separate_mlps_are_taken(net_arch, message) -> None:
    env = CoopSB3VecEnv(2, seed=0)
    model = MaskablePPO("MlpPolicy", env, seed=0, policy_kwargs={"net_arch": net_arch})
    if message is None:
        LeanMLP(model.policy)
        return
    with pytest.raises(ValueError, match=message) as error:
        LeanMLP(model.policy)
    assert "\n" not in str(error.value)


def test_an_unsupported_activation_is_refused_in_one_line() -> None:
    env = CoopSB3VecEnv(2, seed=0)
    model = MaskablePPO("MlpPolicy", env, seed=0, policy_kwargs={"net_arch": {"pi": [8], "vf": [8]},
                                                                   "activation_fn": th.nn.ELU})
    with pytest.raises(ValueError, match="tanh or relu"):
        LeanMLP(model.policy)


def test_the_torch_code_other_devices_run_computes_what_the_compiled_loops_compute(monkeypatch) -> None:
    from thermopylae_agents.training import _lean_kernels

    model, obs, masks = coop_case(th.nn.Tanh)
    batch = random_batch(obs, masks)
    results = {}
    for compiled in (True, False):
        monkeypatch.setattr(_lean_kernels, "COMPILED", compiled)
        net = LeanMLP(model.policy)
        feats = net.features(obs)
        logits, values = net.forward(feats)
        ppo_gradients(net, batch | {"features": net.for_update(feats)}, CLIP, None, ENT_COEF, VF_COEF)
        results[compiled] = (feats[1], logits, values, [p.grad.clone() for p in model.policy.parameters()])
    assert th.equal(results[True][0], results[False][0])
    assert th.allclose(results[True][1], results[False][1], atol=1e-5)
    assert th.allclose(results[True][2], results[False][2], atol=1e-5)
    for a, b in zip(results[True][3], results[False][3], strict=True):
        assert th.allclose(a, b, atol=1e-6, rtol=1e-4)
