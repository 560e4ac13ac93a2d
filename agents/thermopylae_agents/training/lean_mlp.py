"""The actor-critic MLP of an SB3 policy with its forward and backward passes written out (no autograd).

[`LeanMLP`][thermopylae_agents.training.lean_mlp.LeanMLP] runs an SB3 ``MaskableActorCriticPolicy``'s
network on the very same parameter tensors, and
[`ppo_gradients`][thermopylae_agents.training.lean_mlp.ppo_gradients] writes the gradient of PPO's loss
(sb3-contrib's: clipped surrogate, value error, entropy bonus of the masked distribution) into their
``.grad``, in closed form. Why by hand: the network is small and the batches large, so autograd's
temporaries and its one pass over memory per elementary operation cost more than the matrix products
themselves; written out, each layer is one matrix product into a kept buffer, its activation in place,
and two products backwards. ``tests/agents/training/test_lean_mlp.py`` holds the outputs and every gradient to
autograd's.

The network: the actor's and the critic's hidden layers (``net_arch=dict(pi=[...], vf=[...])``, one
activation, tanh or ReLU) and their heads. Their first layers read the same input and run as one product.
Behind the co-op fight-odds features
([`CoopFightFeatures`][thermopylae_agents.training.fight_features.CoopFightFeatures]) the input is the
observation plus 220 odds, each a row of a constant table (``fight_odds_table``) at one of four
thresholds, times the presence of a slot (0 or 1). Their share of the first layer is therefore, for each
threshold ``k``, one row of ``odds @ W_k.T`` (the first layer's weights of threshold ``k``'s odds
columns), a row of [`odds_tables`][thermopylae_agents.training.lean_mlp.LeanMLP.odds_tables]: the forward pass
adds the four rows per observation, and the backward pass adds the gradient into the rows it read
([`thermopylae_agents.training._lean_kernels`][]). The function is the SB3 policy's; only the order of the
floating-point sums differs.

``precision="bfloat16"``: the matrix products take bfloat16 inputs and accumulate in float32;
parameters, activations, gradients and the loss stay float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from torch import nn

from thermopylae_agents.policies.fight_odds import (
    MARKER_3,
    MARKER_6,
    MAX_THRESHOLD,
    MIN_THRESHOLD,
    NUM_ODDS,
    SCALE,
    SLOT1,
    SLOT2,
    SLOT_VALUES,
    fight_rows,
    numpy_odds,
)
from thermopylae_agents.training._lean_kernels import add_rows, gather_rows, odds_rows
from thermopylae_agents.training.fight_features import CoopFightFeatures
from thermopylae_env.coop.state import MAX_DICE

__all__ = ["PRECISIONS", "LeanMLP", "Loss", "ppo_gradients"]

PRECISIONS = ("float32", "bfloat16")
_THRESHOLDS = 4  # odds tables per observation: slot 1's white and red, slot 2's two maxima


def _mlp_layers(net: nn.Module) -> tuple[list[nn.Linear], type]:
    """The linear layers of an SB3 MLP (``nn.Sequential``) and its one activation class."""
    layers = [m for m in net.children() if isinstance(m, nn.Linear)]
    kinds = {type(m) for m in net.children() if not isinstance(m, nn.Linear)}
    if len(kinds) > 1 or not kinds <= {nn.Tanh, nn.ReLU}:
        raise ValueError("the fast learner supports MLPs with one activation, tanh or relu")
    return layers, next(iter(kinds), nn.Tanh)


class _Branch:
    """The layers after the shared first product of one side (actor or critic), their head last."""

    def __init__(self, layers: list[nn.Linear]) -> None:
        self.layers = layers
        # Kept by a forward pass for the backward pass: each layer's input activation (float32, for its
        # derivative) and the same input as the product read it (bfloat16 under that precision).
        self.inputs: list[th.Tensor] = []
        self.operands: list[th.Tensor] = []
        self.weights: list[th.Tensor] = []  # the weights as the products read them (see LeanMLP._fold)


class LeanMLP:
    """The network of an SB3 actor-critic policy on its own parameter tensors, forward and backward.

    [`features`][thermopylae_agents.training.lean_mlp.LeanMLP.features] is what the network reads per
    observation (computed once, when the observation is stored, and
    [`for_update`][thermopylae_agents.training.lean_mlp.LeanMLP.for_update] once per rollout);
    [`forward`][thermopylae_agents.training.lean_mlp.LeanMLP.forward] gives logits and values and, with
    ``keep=True``, keeps what [`backward`][thermopylae_agents.training.lean_mlp.LeanMLP.backward] needs.
    """

    def __init__(self, policy: Any, precision: str = "float32") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if not getattr(policy, "share_features_extractor", True):
            raise ValueError("the fast learner needs share_features_extractor=True (SB3's default)")
        extractor = policy.features_extractor
        self.fight = isinstance(extractor, CoopFightFeatures)
        if not self.fight and type(extractor).__name__ != "FlattenExtractor":
            raise ValueError(f"the fast learner does not support the features extractor "
                             f"{type(extractor).__name__}")
        pi, pi_activation = _mlp_layers(policy.mlp_extractor.policy_net)
        vf, vf_activation = _mlp_layers(policy.mlp_extractor.value_net)
        if not pi or not vf or pi_activation is not vf_activation:
            raise ValueError("the fast learner needs an actor and a critic network (net_arch=dict(pi=[...], "
                             "vf=[...])) with the same activation")
        self.policy = policy
        self.precision = precision
        self.low = th.bfloat16 if precision == "bfloat16" else th.float32  # what the products read
        self.tanh = pi_activation is nn.Tanh
        self.first = (pi[0], vf[0])
        self.actor = _Branch([*pi[1:], policy.action_net])
        self.critic = _Branch([*vf[1:], policy.value_net])
        self.obs_size = int(np.prod(policy.observation_space.shape))
        self.pi_width = pi[0].out_features
        self.hidden = pi[0].out_features + vf[0].out_features
        device = pi[0].weight.device
        self._frozen: tuple[float, th.Tensor] | None = None
        self._frozen_products: dict[str, Any] | None = None
        self._kept: tuple[th.Tensor, ...] = ()
        if self.fight:
            self.odds = th.as_tensor(numpy_odds(), device=device)  # (546, 55)
            self.slot_values = th.as_tensor(SLOT_VALUES, device=device)
            self.table_rows = self.odds.shape[0] * _THRESHOLDS
            self.empty_row = self.table_rows  # a zero row, read for an empty slot
            self._row_columns = th.tensor([SLOT1, SLOT2, MARKER_3, MARKER_6, *SLOT_VALUES])  # for the loop

    def parameters(self) -> list[nn.Parameter]:
        """The parameters this network reads, in the policy's order."""
        return list(self.policy.parameters())

    # -------------------------------------------------------------------------------------- features

    def features(self, obs: th.Tensor) -> tuple[th.Tensor, ...]:
        """``(obs,)``, or with the fight features ``(obs, rows)``: per observation the rows of the odds
        tables it reads (int32 (B, 4): row ``4 r + k`` is odds row ``r`` of ``fight_odds_table`` at
        threshold ``k`` of ``fight_rows``; the empty row where the slot is empty)."""
        if not self.fight:
            return (obs,)
        rows = odds_rows(obs, self._row_columns, SCALE, MIN_THRESHOLD, MAX_THRESHOLD, MAX_DICE,
                         MAX_THRESHOLD - MIN_THRESHOLD + 1, self.empty_row)
        return obs, rows if rows is not None else self._torch_odds_rows(obs)

    def _torch_odds_rows(self, obs: th.Tensor) -> th.Tensor:
        """[`features`][thermopylae_agents.training.lean_mlp.LeanMLP.features]' rows in torch (any device);
        the compiled loop computes the same."""
        location = (obs[:, MARKER_3] + obs[:, MARKER_6]).round().long().clamp(0, MAX_DICE)
        slots = (obs.index_select(1, self.slot_values) * SCALE).round().clamp(MIN_THRESHOLD, MAX_THRESHOLD)
        rows = fight_rows(location, *slots.long().unbind(1), lib=th) * _THRESHOLDS
        rows = rows + th.arange(_THRESHOLDS, device=obs.device)
        p1, p2 = obs[:, SLOT1] > 0.5, obs[:, SLOT2] > 0.5
        present = th.stack([p1, p1, p1 & p2, p1 & p2], 1)
        return th.where(present, rows, self.empty_row).to(th.int32)

    def for_update(self, feats: tuple[th.Tensor, ...]) -> tuple[th.Tensor, ...]:
        """A rollout's features as the update reads them: the observations already in the products'
        precision (cast once, not once per minibatch)."""
        return (feats[0].to(self.low), *feats[1:])

    def odds_tables(self, scale: float = 1.0) -> th.Tensor:
        """The first layer's share of every odds row, times ``scale``: ``(4 * 546 + 1, hidden)``, row
        ``4 r + k`` being ``odds[r] @ W_k.T`` with ``W_k`` the weights of threshold ``k``'s odds columns
        (feature column ``obs_size + 4 j + k`` is ``odds[row_k, j]`` times the slot's presence,
        ``fight_features``' layout), and a zero row last."""
        if self._frozen is not None and self._frozen[0] == scale:
            return self._frozen[1]
        weights = self._odds_weights().mul(scale)  # (55, 4 * hidden)
        tables = th.empty((self.table_rows + 1, self.hidden), device=weights.device)
        th.mm(self.odds, weights, out=tables[:-1].view(self.odds.shape[0], -1))
        tables[-1] = 0.0
        return tables

    def _odds_weights(self) -> th.Tensor:
        """The odds columns of the first layer as ``(55, 4 * hidden)``: ``[j, k * hidden + h]`` is the
        weight of feature ``obs_size + 4 j + k`` in hidden unit ``h``."""
        weight = th.cat([self.first[0].weight, self.first[1].weight]).detach()[:, self.obs_size:]
        return weight.reshape(self.hidden, NUM_ODDS, _THRESHOLDS).permute(1, 2, 0).reshape(NUM_ODDS, -1)

    def freeze(self) -> None:
        """While the parameters stay as they are (a rollout), make the products' weights and the odds
        tables once."""
        self.unfreeze()
        self._frozen_products = self._folded()
        if self.fight:
            scale = 2.0 if self.tanh else 1.0
            self._frozen = (scale, self.odds_tables(scale))

    def unfreeze(self) -> None:
        self._frozen = None
        self._frozen_products = None

    # -------------------------------------------------------------------------------------- forward
    #
    # tanh runs as a sigmoid: tanh(z) = 2 sigmoid(2z) - 1, and ATen's CPU tanh is several times slower
    # than its sigmoid. A layer keeps a = sigmoid(2z) as its activation (y = 2a - 1 is never formed): the
    # 2 of the argument goes into the layer's own weights, the affine 2a - 1 into the next layer's
    # (y W.T + b = a (2W).T + (b - W.sum(1))), so an activation is one pass over memory. In general a
    # layer's stored activation a stands for y = ALPHA a + BETA and is computed as act(GAMMA z).

    def _fold(self, head: bool) -> tuple[float, float, float]:
        """``(gamma, alpha, beta)`` of a layer reading an activation (``gamma`` 1 for a head)."""
        if self.tanh:
            return (1.0 if head else 2.0), 2.0, -1.0
        return 1.0, 1.0, 0.0

    def _activate(self, u: th.Tensor) -> th.Tensor:
        """The stored activation of ``u = GAMMA z``, in place."""
        return u.sigmoid_() if self.tanh else u.clamp_(min=0)

    def _product(self, x: th.Tensor, weight: th.Tensor, bias: th.Tensor) -> th.Tensor:
        """``x @ weight.T + bias`` in float32 (``x`` and ``weight`` already in the products' precision)."""
        if self.low is th.float32:
            return th.addmm(bias, x, weight.t())
        return th.mm(x, weight.t()).float().add_(bias)

    def _folded(self) -> dict[str, Any]:
        """Every product's weight (in the products' precision) and bias with the fold applied: the first
        layer's (its observation columns), then each side's layers in order."""
        if self._frozen_products is not None:
            return self._frozen_products
        pi, vf = self.first
        n = self.obs_size
        gamma = 2.0 if self.tanh else 1.0
        folded: dict[str, Any] = {
            "first": (th.cat([pi.weight[:, :n], vf.weight[:, :n]]).detach().mul(gamma).to(self.low),
                      th.cat([pi.bias, vf.bias]).detach().mul(gamma)),
        }
        for name, branch in (("actor", self.actor), ("critic", self.critic)):
            last = len(branch.layers) - 1
            layers = []
            for index, layer in enumerate(branch.layers):
                gamma, alpha, beta = self._fold(head=index == last)
                w = layer.weight.detach()
                bias = layer.bias.detach() + beta * w.sum(1) if beta else layer.bias.detach()
                layers.append((w.mul(gamma * alpha).to(self.low), bias.mul(gamma) if gamma != 1.0 else bias))
            folded[name] = layers
        return folded

    def _first_layer(self, feats: tuple[th.Tensor, ...], folded: dict[str, Any]) -> th.Tensor:
        """The actor's and the critic's first layers side by side, activated: (B, hidden)."""
        weight, bias = folded["first"]
        hidden = self._product(feats[0].to(self.low), weight, bias)
        if self.fight:
            gather_rows(self.odds_tables(2.0 if self.tanh else 1.0), feats[1], hidden)
        return self._activate(hidden)

    def _branch_forward(self, branch: _Branch, layers: list, x: th.Tensor, keep: bool) -> th.Tensor:
        """One side's layers (their folded ``(weight, bias)``) from its part of the first layer's
        activations."""
        branch.inputs, branch.operands, branch.weights = [], [], []
        last = len(layers) - 1
        for index, (weight, bias) in enumerate(layers):
            operand = x.to(self.low)
            if keep:
                branch.inputs.append(x)
                branch.operands.append(operand)
                branch.weights.append(weight)
            x = self._product(operand, weight, bias)
            if index < last:
                x = self._activate(x)
        return x

    def forward(self, feats: tuple[th.Tensor, ...], keep: bool = False) -> tuple[th.Tensor, th.Tensor]:
        """``(logits (B, A), values (B,))`` of the observations behind ``feats`` (no autograd). With
        ``keep`` what ``backward`` needs is kept."""
        folded = self._folded()
        hidden = self._first_layer(feats, folded)
        logits = self._branch_forward(self.actor, folded["actor"], hidden[:, :self.pi_width], keep)
        values = self._branch_forward(self.critic, folded["critic"], hidden[:, self.pi_width:], keep)
        if keep:
            self._kept = feats
        return logits, values.squeeze(-1)

    # -------------------------------------------------------------------------------------- backward

    def _branch_backward(self, branch: _Branch, grad: th.Tensor, out: th.Tensor) -> None:
        """Gradients of one side's layers from its output's ``grad``; writes into ``out`` the gradient with
        respect to ``GAMMA z`` of its part of the first layer."""
        last = len(branch.layers) - 1
        for index in reversed(range(len(branch.layers))):
            layer = branch.layers[index]
            gamma, alpha, beta = self._fold(head=index == last)
            grad_low = grad.to(self.low)
            sums = grad.sum(0)
            # y = ALPHA a + BETA feeds u = GAMMA (y W.T + b): dW = GAMMA (ALPHA g.T a + BETA sum(g))
            product = th.mm(grad_low.t(), branch.operands[index]).float()
            layer.weight.grad = product.mul_(gamma * alpha).add_(sums[:, None], alpha=gamma * beta) \
                if beta else product.mul_(gamma * alpha)
            layer.bias.grad = sums.mul(gamma)
            grad_a = th.mm(grad_low, branch.weights[index]).float()  # d loss / d a: g @ (GAMMA ALPHA W)
            grad = self._activation_grad(grad_a, branch.inputs[index], out if index == 0 else None)

    def _activation_grad(self, grad: th.Tensor, stored: th.Tensor, out: th.Tensor | None) -> th.Tensor:
        """``grad`` (with respect to a stored activation) times its derivative: the gradient with respect
        to the layer's ``GAMMA z``, into ``out`` if given."""
        if self.tanh:
            if out is None:
                return th.ops.aten.sigmoid_backward(grad, stored)
            return th.ops.aten.sigmoid_backward.grad_input(grad, stored, grad_input=out)
        grad = grad.mul_(stored > 0)
        return grad if out is None else out.copy_(grad)

    def backward(self, grad_logits: th.Tensor, grad_values: th.Tensor) -> None:
        """Write into ``.grad`` of every parameter the gradient of a loss whose gradient with respect to
        the logits and values of the last kept ``forward`` is ``grad_logits`` (B, A) and ``grad_values``
        (B,)."""
        feats = self._kept
        grad_hidden = grad_logits.new_empty((len(grad_logits), self.hidden))
        self._branch_backward(self.actor, grad_logits, grad_hidden[:, :self.pi_width])
        self._branch_backward(self.critic, grad_values[:, None], grad_hidden[:, self.pi_width:])
        gamma = 2.0 if self.tanh else 1.0  # grad_hidden is with respect to GAMMA z
        pi, vf = self.first
        grad_w = th.mm(grad_hidden.t().to(self.low), feats[0].to(self.low)).float()
        if self.fight:
            grad_w = th.cat([grad_w, self._odds_weight_grad(grad_hidden, feats[1])], 1)
        grad_w.mul_(gamma)
        grad_bias = grad_hidden.sum(0).mul_(gamma)
        pi.weight.grad, vf.weight.grad = grad_w[:self.pi_width], grad_w[self.pi_width:]
        pi.bias.grad, vf.bias.grad = grad_bias[:self.pi_width], grad_bias[self.pi_width:]
        self._kept = ()
        for branch in (self.actor, self.critic):
            branch.inputs, branch.operands, branch.weights = [], [], []

    def _odds_weight_grad(self, grad_hidden: th.Tensor, rows: th.Tensor) -> th.Tensor:
        """The gradient of the first layer's odds columns: the hidden gradient added into the table rows
        each observation read, then through the tables' product. (hidden, 220), in the columns' order."""
        grad_tables = grad_hidden.new_zeros((self.table_rows + 1, self.hidden))
        add_rows(grad_hidden, rows, grad_tables)
        per_odds = th.mm(self.odds.t(), grad_tables[:-1].view(self.odds.shape[0], -1))  # (55, 4 * hidden)
        return per_odds.view(NUM_ODDS, _THRESHOLDS, self.hidden).permute(2, 0, 1).reshape(self.hidden, -1)


@dataclass
class Loss:
    """The terms of PPO's loss on one minibatch (floats), as sb3-contrib's logs show them."""

    loss: float
    policy: float
    value: float
    entropy: float
    approx_kl: float
    clip_fraction: float


def ppo_gradients(
    net: LeanMLP,
    batch: dict[str, Any],
    clip_range: float,
    clip_range_vf: float | None = None,
    ent_coef: float = 0.0,
    vf_coef: float = 0.5,
    normalize_advantage: bool = True,
) -> Loss:
    """Forward the minibatch ``batch``, then write the gradient of sb3-contrib's PPO loss into the
    parameters' ``.grad``; returns the loss terms.

    The loss is ``policy + ent_coef * entropy_loss + vf_coef * value_loss`` with sb3-contrib's terms: the
    clipped surrogate of the (per minibatch normalized) advantages, the mean squared error of the values
    (clipped around the old values with ``clip_range_vf``), and minus the mean entropy of the masked
    distribution. Its gradient with respect to the logits ``z`` and values ``v``, for a row with legal
    actions' probabilities ``p``, log-probabilities ``l`` and entropy ``H``:

    * surrogate: ``g * (onehot(a) - p)``, with ``g = -A r / B`` where the unclipped term is the smaller
      (``r`` the probability ratio, ``A`` the advantage, ``B`` the minibatch size), else 0;
    * entropy bonus: ``ent_coef / B * p * (l + H)``;
    * values: ``vf_coef * 2 (v - R) / B``, 0 where the value clip holds ``v``.
    """
    logits, values = net.forward(batch["features"], keep=True)
    masks, actions = batch["masks"], batch["actions"]
    size = len(actions)
    rows = th.arange(size, device=logits.device)
    masked = logits.masked_fill_(~masks, -th.inf)
    probs = th.softmax(masked, dim=-1)  # not exp(log_probs): ATen's exp is slow on -inf, softmax is not
    log_probs = th.log_softmax(masked, dim=-1)
    safe = log_probs.masked_fill_(~masks, 0.0)  # log-probabilities with 0 for illegal actions
    entropy = -(probs * safe).sum(1)
    advantages = batch["advantages"]
    if normalize_advantage and size > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = safe[rows, actions] - batch["old_log_probs"]
    ratio = log_ratio.exp()
    unclipped = advantages * ratio
    clipped = advantages * ratio.clamp(1 - clip_range, 1 + clip_range)
    surrogate = th.minimum(unclipped, clipped)
    g = -(unclipped * (unclipped <= clipped)) / size  # d loss / d log p(a)
    grad_logits = safe.add_(entropy[:, None]).mul_(ent_coef / size).sub_(g[:, None]).mul_(probs)
    grad_logits[rows, actions] += g
    predicted = values
    old = batch["old_values"]
    inside = None
    if clip_range_vf is not None:
        predicted = old + (values - old).clamp(-clip_range_vf, clip_range_vf)
        inside = (values - old).abs() < clip_range_vf
    error = predicted - batch["returns"]
    grad_values = error * (2 * vf_coef / size)
    if inside is not None:
        grad_values = grad_values * inside
    net.backward(grad_logits, grad_values)
    policy_loss = -float(surrogate.mean())
    value_loss = float(error.square().mean())
    entropy_loss = -float(entropy.mean())
    return Loss(
        loss=policy_loss + ent_coef * entropy_loss + vf_coef * value_loss,
        policy=policy_loss,
        value=value_loss,
        entropy=entropy_loss,
        approx_kl=float(((ratio - 1) - log_ratio).mean()),
        clip_fraction=float(((ratio - 1).abs() > clip_range).float().mean()),
    )
