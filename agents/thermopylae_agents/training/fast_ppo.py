"""sb3-contrib's MaskablePPO with a lean rollout and update: the same algorithm at the engines' pace.

[`FastMaskablePPO`][thermopylae_agents.training.fast_ppo.FastMaskablePPO] is a ``MaskablePPO`` whose
``collect_rollouts`` and ``train`` are rewritten for speed; everything else is sb3-contrib's: the policy
object and its parameters, the optimizer, ``learn()`` with its callbacks and logger, ``save`` / ``load``
(a model trained here loads with ``MaskablePPO.load`` and plays, evaluates and exports like any other).
``thermopylae train --learner fast`` uses it; ``--learner sb3`` runs sb3-contrib's own loop.

The same as sb3-contrib's loop: masked sampling from the policy, the rollout (``n_envs`` games for
``n_steps`` steps), generalized advantage estimation with SB3's episode-start convention (a game cut by a
time limit bootstraps from its last observation's value), the clipped surrogate, SB3's value loss (mean
squared error, no 1/2), the entropy bonus of the masked distribution, per-minibatch advantage
normalization, gradient clipping, ``n_epochs`` passes over ``np.random.permutation`` minibatches, the
learning-rate and clip-range schedules, ``target_kl`` early stopping, the callbacks' ``locals`` and the
``train/`` and ``rollout/`` scalars.

What makes it faster:

* The rollout lives in a few preallocated torch tensors written in place (SB3 copies every step into
  NumPy buffers and every minibatch back into tensors), and GAE is one vectorized pass over the steps.
* The policy runs through [`PolicyCore`][thermopylae_agents.training.fast_ppo.PolicyCore]: the very
  parameter tensors of the SB3 policy, without distribution objects, with the first layers of the actor
  and the critic as one matrix product. Behind the co-op fight-odds features
  ([`CoopFightFeatures`][thermopylae_agents.players.fight_features.CoopFightFeatures]), the 220 odds are
  never built: each is a row of a constant table times a slot's presence, so their share of the first
  layer is that table times the weights, looked up per observation (``embedding_bag``). The function is
  the same; only the order of the floating-point sums differs.
* tanh is computed as ``2 sigmoid(2x) - 1`` (ATen's CPU tanh is several times slower than its sigmoid),
  illegal logits are ``-inf`` rather than sb3-contrib's ``-1e8`` (both give probability 0 in float32, but
  ``exp`` of -1e8 takes a slow path), and only the infos of games that ended are read.
* ``precision="bfloat16"`` runs the matrix products under CPU autocast (bfloat16 inputs, float32
  accumulation; parameters, optimizer and losses stay float32). CPUs with bfloat16 instructions
  (AVX512_BF16, AMX) run them about twice as fast; others emulate them, slower than float32.

Reproducibility: the same seed, thread count (``torch.get_num_threads()``) and precision give the same
weights on the same machine (``tests/training/test_fast_ppo.py`` trains twice and compares); another
thread count sums in another order, so it trains other weights.
"""

from __future__ import annotations

import copy
import ctypes
import ctypes.util
import sys
import time
from typing import Any

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import explained_variance
from stable_baselines3.common.vec_env import VecEnv
from torch import nn
from torch.nn import functional as F

from thermopylae_agents.players.fight_features import CoopFightFeatures
from thermopylae_agents.players.fight_odds import (
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
from thermopylae_agents.training.config import PRECISIONS as SETTINGS
from thermopylae_env.coop.state import MAX_DICE

__all__ = [
    "PRECISIONS",
    "FastMaskablePPO",
    "PolicyCore",
    "act",
    "entropy_of",
    "masked_log_probs",
    "measure_threads",
    "minibatch_loss",
    "native_bfloat16",
    "resolve_precision",
    "reuse_freed_memory",
    "sample",
]

PRECISIONS = tuple(name for name in SETTINGS if name != "auto")  # what a model runs with


def native_bfloat16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (the AVX512_BF16 or AMX_BF16 flags of
    ``/proc/cpuinfo``, or of ``cpuinfo``); ``False`` where that cannot be read."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
                cpuinfo = handle.read()
        except OSError:
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def resolve_precision(setting: str, device: str = "cpu") -> str:
    """The precision a ``precision`` setting means here: ``auto`` is ``bfloat16`` when training on a CPU
    with bfloat16 instructions, else ``float32`` (other CPUs emulate bfloat16 products, slower than
    float32; on a GPU ``bfloat16`` must be asked for)."""
    if setting not in SETTINGS:
        raise ValueError(f"precision must be one of {SETTINGS}, got {setting!r}")
    if setting != "auto":
        return setting
    if device == "auto":  # SB3's: a GPU where there is one
        device = "cuda" if th.cuda.is_available() else "cpu"
    return "bfloat16" if str(device).startswith("cpu") and native_bfloat16() else "float32"


# ------------------------------------------------------------------------------------------ the network


class _Tanh(th.autograd.Function):
    """tanh as ``2 sigmoid(2x) - 1`` (ATen's CPU tanh is several times slower than its sigmoid); the
    backward is ATen's own ``tanh_backward`` of the output."""

    @staticmethod
    def forward(ctx: Any, x: th.Tensor) -> th.Tensor:
        y = th.sigmoid(x * 2).mul_(2).sub_(1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: th.Tensor) -> th.Tensor:
        (y,) = ctx.saved_tensors
        return th.ops.aten.tanh_backward(grad, y)


def _tanh(x: th.Tensor) -> th.Tensor:
    # Under bfloat16 autocast the activations come out of the matrix products in bfloat16, where ATen's
    # sigmoid is slow too: they are computed in float32 (the next product casts them back).
    return _Tanh.apply(x.float())


def _mlp_layers(net: nn.Module) -> tuple[list[nn.Linear], type]:
    """The linear layers of an SB3 MLP and its one activation class."""
    layers = [m for m in net.children() if isinstance(m, nn.Linear)]
    kinds = {type(m) for m in net.children() if not isinstance(m, nn.Linear)}
    if len(kinds) > 1 or not kinds <= {nn.Tanh, nn.ReLU}:
        raise ValueError("the fast learner supports MLPs with one activation, tanh or relu")
    return layers, next(iter(kinds), nn.Tanh)


class PolicyCore(nn.Module):
    """The logits and values of an SB3 ``MaskableActorCriticPolicy``, computed lean from the very same
    parameter tensors (nothing is copied: training through this trains the policy).

    Supported: an MLP policy with separate, non-empty actor and critic networks (``net_arch=dict(pi=...,
    vf=...)``) and one activation (tanh or ReLU), over a ``FlattenExtractor`` or the co-op
    ``CoopFightFeatures``. [`features`][thermopylae_agents.training.fast_ppo.PolicyCore.features] is what
    the forward pass needs per observation; the rollout stores it, so the update does not recompute it.
    """

    def __init__(self, policy: Any, precision: str = "float32") -> None:
        super().__init__()
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
        self.precision = precision
        self.activation = _tanh if pi_activation is nn.Tanh else th.relu
        # Plain lists and attributes, not submodules: the parameters stay registered in the policy only.
        self._pi, self._vf = pi, vf
        self._heads = (policy.action_net, policy.value_net)
        self.obs_size = int(np.prod(policy.observation_space.shape))
        self.pi_width = pi[0].out_features
        self._frozen: th.Tensor | None = None
        if self.fight:
            self.register_buffer("odds", th.as_tensor(numpy_odds()), persistent=False)
            self.register_buffer("slot_values", th.as_tensor(SLOT_VALUES), persistent=False)

    def features(self, obs: th.Tensor) -> tuple[th.Tensor, ...]:
        """``(obs,)``, or with the fight features ``(obs, rows, presence)``: per observation the rows of
        the four stacked odds tables (int64 (B, 4); table k for the threshold k of ``fight_rows``) and the
        weight of each (float32 (B, 4): 0 where the slot is empty), as ``fight_features`` reads them."""
        if not self.fight:
            return (obs,)
        location = (obs[:, MARKER_3] + obs[:, MARKER_6]).round().long().clamp(0, MAX_DICE)
        slots = (obs.index_select(1, self.slot_values) * SCALE).round().clamp(MIN_THRESHOLD, MAX_THRESHOLD)
        rows = fight_rows(location, *slots.long().unbind(1), lib=th)
        rows = rows + th.arange(4, device=obs.device) * self.odds.shape[0]
        p1, p2 = obs[:, SLOT1], obs[:, SLOT2]
        return obs, rows, th.stack([p1, p1, p1 * p2, p1 * p2], 1)

    def _odds_tables(self, weight: th.Tensor) -> th.Tensor:
        """``(odds @ W_k.T)`` for the four thresholds k, stacked: (4 * 546, hidden). Feature column
        ``obs_size + 4 j + k`` of the first layer is ``odds[row_k, j] * presence_k`` (fight_features'
        layout), so these tables times the presences are its whole share of the layer."""
        if self._frozen is not None:
            return self._frozen
        hidden = weight.shape[0]
        per_threshold = weight[:, self.obs_size:].reshape(hidden, NUM_ODDS, 4)
        return th.einsum("rj,hjk->krh", self.odds, per_threshold).reshape(-1, hidden)

    def _first_layer(self, feats: tuple[th.Tensor, ...]) -> th.Tensor:
        """The first layers of the actor and the critic side by side: (B, pi_width + vf_width)."""
        weight = th.cat([self._pi[0].weight, self._vf[0].weight], 0)
        bias = th.cat([self._pi[0].bias, self._vf[0].bias], 0)
        if not self.fight:
            return F.linear(feats[0], weight, bias)
        obs, rows, presence = feats
        n = self.obs_size
        with th.autocast(obs.device.type, enabled=False):  # a small sparse part: float32 at any precision
            odds = F.embedding_bag(rows, self._odds_tables(weight), per_sample_weights=presence, mode="sum")
        return F.linear(obs[:, :n], weight[:, :n], bias) + odds

    def forward(self, feats: tuple[th.Tensor, ...]) -> tuple[th.Tensor, th.Tensor]:
        """``(logits (B, A), values (B,))``, float32, of the observations behind ``feats``."""
        device = feats[0].device.type
        with th.autocast(device, dtype=th.bfloat16, enabled=self.precision == "bfloat16"):
            first = self.activation(self._first_layer(feats))
            x, v = first[:, :self.pi_width], first[:, self.pi_width:]
            for layer in self._pi[1:]:
                x = self.activation(layer(x))
            for layer in self._vf[1:]:
                v = self.activation(layer(v))
            logits, values = self._heads[0](x), self._heads[1](v)
        return logits.float(), values.float().squeeze(-1)

    def freeze(self) -> None:
        """While the parameters stay as they are (a rollout), build the odds tables once."""
        self._frozen = None
        if self.fight:
            with th.no_grad():
                self._frozen = self._odds_tables(th.cat([self._pi[0].weight, self._vf[0].weight], 0))

    def unfreeze(self) -> None:
        self._frozen = None


# --------------------------------------------------------------------------------- masked distribution


def masked_log_probs(logits: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """Log-probabilities of the masked distribution, ``-inf`` for an illegal action (the legal actions'
    are sb3-contrib's, whose -1e8 gives probability 0 in float32 too)."""
    return th.log_softmax(logits.masked_fill(~masks, -th.inf), dim=-1)


def entropy_of(log_probs: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """Entropy of the masked distribution: illegal actions add nothing (and no ``0 * -inf`` reaches the
    gradient)."""
    safe = log_probs.masked_fill(~masks, 0.0)
    return -(safe.exp().masked_fill(~masks, 0.0) * safe).sum(-1)


def sample(log_probs: th.Tensor, uniform: th.Tensor) -> th.Tensor:
    """One action per row: the uniform draw ``uniform`` ((B, 1) in [0, 1)) against the cumulative
    probabilities. An action of probability 0 is never drawn."""
    cdf = log_probs.exp().cumsum(-1)
    total = cdf[:, -1:]
    draw = th.minimum(uniform * total, th.nextafter(total, th.zeros_like(total)))
    return th.searchsorted(cdf, draw, right=True).squeeze(-1)


def act(core: PolicyCore, obs: th.Tensor, masks: th.Tensor, uniform: th.Tensor) -> tuple[Any, ...]:
    """One rollout step of the policy: ``(actions, their log-probabilities, values, features)``."""
    feats = core.features(obs)
    logits, values = core(feats)
    log_probs = masked_log_probs(logits, masks)
    actions = sample(log_probs, uniform)
    return actions, log_probs.gather(1, actions[:, None]).squeeze(1), values, feats


def minibatch_loss(
    core: PolicyCore,
    batch: dict[str, Any],
    clip_range: float,
    clip_range_vf: float | None = None,
    ent_coef: float = 0.0,
    vf_coef: float = 0.5,
    normalize_advantage: bool = True,
) -> dict[str, th.Tensor]:
    """PPO's loss on one minibatch, term for term sb3-contrib's (the arguments are ``MaskablePPO``'s), and
    the parts its logs show."""
    logits, values = core(batch["features"])
    log_probs = masked_log_probs(logits, batch["masks"])
    log_prob = log_probs.gather(1, batch["actions"][:, None]).squeeze(1)
    advantages = batch["advantages"]
    if normalize_advantage and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = log_prob - batch["old_log_probs"]
    ratio = th.exp(log_ratio)
    clipped = th.clamp(ratio, 1 - clip_range, 1 + clip_range)
    policy_loss = -th.min(advantages * ratio, advantages * clipped).mean()
    if clip_range_vf is not None:
        old = batch["old_values"]
        values = old + th.clamp(values - old, -clip_range_vf, clip_range_vf)
    value_loss = F.mse_loss(batch["returns"], values)
    entropy_loss = -entropy_of(log_probs, batch["masks"]).mean()
    loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss
    with th.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean()
        clip_fraction = ((ratio - 1).abs() > clip_range).float().mean()
    return {"loss": loss, "policy": policy_loss, "value": value_loss, "entropy": entropy_loss,
            "approx_kl": approx_kl, "clip_fraction": clip_fraction}


# ------------------------------------------------------------------------------------------ the rollout


class _Rollout:
    """One rollout of ``steps`` x ``games``, preallocated and written in place."""

    def __init__(self, steps: int, games: int, obs_size: int, actions: int) -> None:
        self.shape = (steps, games, obs_size, actions)
        self.obs = th.zeros((steps, games, obs_size))
        self.masks = th.zeros((steps, games, actions), dtype=th.bool)
        self.actions = th.zeros((steps, games), dtype=th.long)
        self.log_probs = th.zeros((steps, games))
        self.values = th.zeros((steps, games))
        self.rewards = th.zeros((steps, games))
        self.starts = th.zeros((steps, games))
        self.advantages = th.zeros((steps, games))
        self.returns = th.zeros((steps, games))
        self.extras: list[th.Tensor] = []  # the features beyond the observation, (steps, games, ...)

    def gae(self, last_values: th.Tensor, last_dones: th.Tensor, gamma: float, lam: float) -> None:
        """SB3's ``compute_returns_and_advantage``: step t bootstraps from t + 1 unless a game started
        there."""
        steps = self.shape[0]
        running = th.zeros_like(last_values)
        for t in reversed(range(steps)):
            if t == steps - 1:
                live, following = 1.0 - last_dones, last_values
            else:
                live, following = 1.0 - self.starts[t + 1], self.values[t + 1]
            delta = self.rewards[t] + gamma * following * live - self.values[t]
            running = delta + gamma * lam * live * running
            self.advantages[t] = running
        th.add(self.advantages, self.values, out=self.returns)

    def flat(self) -> dict[str, Any]:
        """The rollout as one batch of ``steps * games`` rows."""
        steps, games, obs_size, actions = self.shape
        size = steps * games
        return {
            "features": (self.obs.reshape(size, obs_size),
                         *(e.reshape(size, *e.shape[2:]) for e in self.extras)),
            "masks": self.masks.reshape(size, actions),
            "actions": self.actions.reshape(size),
            "old_log_probs": self.log_probs.reshape(size),
            "old_values": self.values.reshape(size),
            "advantages": self.advantages.reshape(size),
            "returns": self.returns.reshape(size),
        }


def _rows(batch: dict[str, Any], index: th.Tensor) -> dict[str, Any]:
    return {key: tuple(t[index] for t in value) if key == "features" else value[index]
            for key, value in batch.items()}


def _action_masks(env: VecEnv) -> np.ndarray:
    """The legal actions of every game; a row with none becomes all legal (a masked softmax over nothing
    is undefined, and such a row can only belong to a game whose action the env ignores)."""
    direct = getattr(env, "action_masks", None)
    masks = np.asarray(direct() if callable(direct) else np.stack(env.env_method("action_masks")), dtype=bool)
    empty = ~masks.any(axis=1)
    if empty.any():
        masks[empty] = True
    return masks


# ------------------------------------------------------------------------------------------ the learner


class FastMaskablePPO(MaskablePPO):
    """sb3-contrib's ``MaskablePPO`` with the lean rollout and update of this module (its docstring says
    what is the same and what differs).

    Takes ``MaskablePPO``'s arguments and ``precision`` (``"float32"``, or ``"bfloat16"`` for the matrix
    products). The environment gives masks (``env.action_masks()`` or ``env_method("action_masks")``);
    the action space is ``Discrete``; the policy fits
    [`PolicyCore`][thermopylae_agents.training.fast_ppo.PolicyCore]. ``MaskablePPO.load`` loads what it
    saves (``precision`` is one more attribute of the file).
    """

    def __init__(self, *args: Any, precision: str = "float32", **kwargs: Any) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.precision = precision
        super().__init__(*args, **kwargs)

    # Built on first use: a loaded model does not run __init__ with them, and none of them is saved.
    _core: PolicyCore | None = None
    _rollout: _Rollout | None = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_core", "_rollout"]

    def _policy_core(self) -> PolicyCore:
        precision = getattr(self, "precision", "float32")
        core = self._core
        if core is None or core.precision != precision or core._heads[0] is not self.policy.action_net:
            self._core = core = PolicyCore(self.policy, precision).to(self.device)
        return core

    def _rollout_buffer(self) -> _Rollout:
        shape = (self.n_steps, self.n_envs, int(np.prod(self.observation_space.shape)),
                 int(self.action_space.n))
        if self._rollout is None or self._rollout.shape != shape:
            self._rollout = _Rollout(*shape)
        return self._rollout

    def collect_rollouts(  # type: ignore[override]
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: Any,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        """Play ``n_rollout_steps`` steps of every game with the current policy into the lean buffer and
        compute its advantages; ``False`` if a callback stopped training. (SB3's ``rollout_buffer``
        argument is not used.)"""
        if not use_masking:
            raise ValueError("the fast learner always masks (use_masking=False is MaskablePPO's own loop)")
        self.policy.set_training_mode(False)
        core = self._policy_core()
        rollout = self._rollout_buffer()
        callback.on_rollout_start()
        core.freeze()
        try:
            extras: list[tuple[th.Tensor, ...]] = []
            for step in range(n_rollout_steps):
                if not self._rollout_step(env, callback, core, rollout, step, extras):
                    return False
            rollout.extras = [th.stack(part) for part in zip(*extras, strict=True)]
            with th.no_grad():
                last = th.as_tensor(self._last_obs).reshape(self.n_envs, -1).float()
                _, last_values = core(core.features(last))
        finally:
            core.unfreeze()
        last_dones = th.as_tensor(self._last_episode_starts, dtype=th.float32)
        rollout.gae(last_values, last_dones, self.gamma, self.gae_lambda)
        callback.on_rollout_end()
        return True

    def _rollout_step(
        self, env: VecEnv, callback: BaseCallback, core: PolicyCore, rollout: _Rollout, step: int,
        extras: list[tuple[th.Tensor, ...]],
    ) -> bool:
        """One step of every game: act, step the env, let the callbacks see it, store it."""
        obs = rollout.obs[step]
        obs.copy_(th.as_tensor(self._last_obs).reshape(obs.shape))
        masks = rollout.masks[step]
        masks.copy_(th.from_numpy(_action_masks(env)))
        with th.no_grad():
            actions, log_prob, values, feats = act(core, obs, masks, th.rand(self.n_envs, 1))
        extras.append(feats[1:])
        rollout.actions[step] = actions
        rollout.log_probs[step] = log_prob
        rollout.values[step] = values
        new_obs, rewards, dones, infos = env.step(actions.numpy())
        self.num_timesteps += env.num_envs
        callback.update_locals(locals())
        if not callback.on_step():
            return False
        ended = np.flatnonzero(dones)
        if len(ended):
            self._update_info_buffer([infos[i] for i in ended], dones[ended])
            rewards = self._bootstrap_cut_games(rewards, ended, infos, core)
        rollout.rewards[step] = th.as_tensor(rewards, dtype=th.float32)
        rollout.starts[step] = th.as_tensor(self._last_episode_starts, dtype=th.float32)
        self._last_obs = new_obs
        self._last_episode_starts = dones
        return True

    def _bootstrap_cut_games(
        self, rewards: np.ndarray, ended: np.ndarray, infos: list, core: PolicyCore
    ) -> np.ndarray:
        """SB3's time-limit handling: a game cut by a time limit adds gamma * V(its last observation)."""
        cut = [i for i in ended if infos[i].get("terminal_observation") is not None
               and infos[i].get("TimeLimit.truncated", False)]
        if not cut:
            return rewards
        rewards = np.array(rewards, dtype=np.float32)
        last = th.as_tensor(np.stack([infos[i]["terminal_observation"] for i in cut])).float()
        with th.no_grad():
            _, values = core(core.features(last.reshape(len(cut), -1)))
        rewards[cut] += self.gamma * values.numpy()
        return rewards

    def train(self) -> None:
        """``n_epochs`` passes of clipped PPO over the lean buffer in minibatches of ``batch_size``."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        progress = self._current_progress_remaining
        clip_range = float(self.clip_range(progress))
        clip_range_vf = None if self.clip_range_vf is None else float(self.clip_range_vf(progress))
        if self._rollout is None:
            raise RuntimeError("train() runs after collect_rollouts()")
        core = self._policy_core()
        batch = self._rollout.flat()
        size = len(batch["actions"])
        params = list(self.policy.parameters())
        optimizer = self.policy.optimizer
        logged: dict[str, list[float]] = {"policy": [], "value": [], "entropy": [], "clip_fraction": [],
                                          "approx_kl": []}
        last_loss = 0.0
        stop = False
        for epoch in range(self.n_epochs):
            # NumPy's global generator, as SB3's RolloutBuffer.get: set_random_seed(seed) seeds it.
            order = th.from_numpy(np.random.permutation(size))  # noqa: NPY002
            for start in range(0, size, self.batch_size):
                terms = minibatch_loss(core, _rows(batch, order[start:start + self.batch_size]), clip_range,
                                       clip_range_vf, self.ent_coef, self.vf_coef, self.normalize_advantage)
                for key in logged:
                    logged[key].append(float(terms[key].detach()))
                if self.target_kl is not None and logged["approx_kl"][-1] > 1.5 * self.target_kl:
                    stop = True
                    if self.verbose >= 1:
                        print(f"Early stopping at step {epoch} due to reaching max kl: "
                              f"{logged['approx_kl'][-1]:.2f}")
                    break
                optimizer.zero_grad(set_to_none=True)
                terms["loss"].backward()
                th.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                optimizer.step()
                last_loss = float(terms["loss"].detach())
            self._n_updates += 1
            if stop:
                break
        self._record_train_logs(logged, last_loss, clip_range, clip_range_vf, batch)

    def _record_train_logs(
        self, logged: dict[str, list[float]], loss: float, clip_range: float, clip_range_vf: float | None,
        batch: dict[str, Any],
    ) -> None:
        """The ``train/`` scalars of sb3-contrib's ``train``."""
        self.logger.record("train/entropy_loss", np.mean(logged["entropy"]))
        self.logger.record("train/policy_gradient_loss", np.mean(logged["policy"]))
        self.logger.record("train/value_loss", np.mean(logged["value"]))
        self.logger.record("train/approx_kl", np.mean(logged["approx_kl"]))
        self.logger.record("train/clip_fraction", np.mean(logged["clip_fraction"]))
        self.logger.record("train/loss", loss)
        self.logger.record("train/explained_variance",
                           explained_variance(batch["old_values"].numpy(), batch["returns"].numpy()))
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)
        if clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)


# ------------------------------------------------------------------------------------------ the machine


def measure_threads(
    policy: Any, candidates: list[int], batch_size: int = 4096, precision: str = "float32",
    repeats: int = 3,
) -> dict[int, float]:
    """Samples per second of one PPO minibatch update (forward, backward, Adam) of a copy of ``policy``
    on ``batch_size`` synthetic observations, for each thread count of ``candidates``.

    The copy and its own optimizer take the steps, so ``policy`` and the random generators are untouched;
    torch's thread count is put back. The best of ``repeats`` timings counts (the others were disturbed).
    """
    clone = copy.deepcopy(policy).cpu()
    core = PolicyCore(clone, precision)
    optimizer = th.optim.Adam(clone.parameters(), lr=1e-6)
    obs_size = core.obs_size
    generator = th.Generator().manual_seed(0)
    obs = th.rand((batch_size, obs_size), generator=generator)
    actions_n = int(clone.action_space.n)
    batch = {"features": core.features(obs), "masks": th.ones((batch_size, actions_n), dtype=th.bool),
             "actions": th.zeros(batch_size, dtype=th.long), "old_log_probs": th.zeros(batch_size),
             "old_values": th.zeros(batch_size), "advantages": th.randn(batch_size, generator=generator),
             "returns": th.zeros(batch_size)}
    before = th.get_num_threads()
    rates: dict[int, float] = {}
    try:
        for threads in candidates:
            th.set_num_threads(threads)
            best = float("inf")
            for attempt in range(repeats + 1):
                start = time.perf_counter()
                terms = minibatch_loss(core, batch, clip_range=0.2)
                optimizer.zero_grad(set_to_none=True)
                terms["loss"].backward()
                optimizer.step()
                if attempt:  # the first one warms the allocator and the kernels up
                    best = min(best, time.perf_counter() - start)
            rates[threads] = batch_size / best
    finally:
        th.set_num_threads(before)
    return rates


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def reuse_freed_memory() -> bool:
    """Ask glibc's allocator to keep freed memory for reuse (a process-wide setting; ``True`` if it was
    applied, ``False`` on other C libraries).

    The update allocates and frees tensors of a few megabytes many times a second; by default glibc maps
    each of them from the operating system and unmaps it on free, so every allocation pays page faults.
    Raising the mmap threshold (to its maximum, 32 MiB) and the trim threshold lets it reuse the memory.
    The package's training entry points call this; a library user may call it before training.
    """
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 30))
