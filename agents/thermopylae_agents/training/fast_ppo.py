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

* The network runs through [`LeanMLP`][thermopylae_agents.training.lean_mlp.LeanMLP] on the SB3 policy's
  own parameter tensors, and the update's gradient is written out in closed form
  ([`ppo_gradients`][thermopylae_agents.training.lean_mlp.ppo_gradients]) instead of autograd's graph
  of temporaries: per layer one matrix product forward and two backward, the activation in place. The
  co-op fight odds are read as rows of precomputed tables, not built as 220 columns.
* The rollout lives in a few preallocated torch tensors written in place (SB3 copies every step into
  NumPy buffers and every minibatch back into tensors), GAE is one vectorized pass over the steps, and
  only the infos of games that ended are read.
* ``precision="bfloat16"`` multiplies bfloat16 matrices with float32 accumulation (parameters,
  activations, gradients, Adam and the loss stay float32). CPUs with bfloat16 instructions (AVX512_BF16,
  AMX) run them about twice as fast; others emulate them, slower than float32, so ``auto``
  ([`resolve_precision`][thermopylae_agents.training.fast_ppo.resolve_precision]) picks bfloat16 only where
  the instructions are.

Reproducibility: the same seed, thread count (``torch.get_num_threads()``) and precision give the same
weights on the same machine (``tests/agents/training/test_fast_ppo.py`` trains twice and compares); another
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

from thermopylae_agents.training._lean_kernels import sample_masked
from thermopylae_agents.training.config import PRECISIONS as SETTINGS
from thermopylae_agents.training.lean_mlp import PRECISIONS, LeanMLP, Loss, ppo_gradients

__all__ = [
    "FastMaskablePPO",
    "act",
    "masked_log_probs",
    "measure_threads",
    "native_bfloat16",
    "resolve_precision",
    "reuse_freed_memory",
    "sample",
]


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


# --------------------------------------------------------------------------------- masked distribution


def masked_log_probs(logits: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """Log-probabilities of the masked distribution, ``-inf`` for an illegal action (the legal actions'
    are sb3-contrib's, whose -1e8 gives probability 0 in float32 too)."""
    return th.log_softmax(logits.masked_fill(~masks, -th.inf), dim=-1)


def sample(probs: th.Tensor, uniform: th.Tensor) -> th.Tensor:
    """One action per row of ``probs`` (B, A): the uniform draw ``uniform`` ((B, 1) in [0, 1)) against the
    cumulative probabilities. An action of probability 0 is never drawn."""
    cdf = probs.cumsum(-1)
    total = cdf[:, -1:]
    draw = th.minimum(uniform * total, th.nextafter(total, th.zeros_like(total)))
    return th.searchsorted(cdf, draw, right=True).squeeze(-1)


def act(net: LeanMLP, obs: th.Tensor, masks: th.Tensor, uniform: th.Tensor) -> tuple[Any, ...]:
    """One rollout step of the policy: ``(actions, their log-probabilities, values, features)``."""
    feats = net.features(obs)
    logits, values = net.forward(feats)
    sampled = sample_masked(logits, masks, uniform.reshape(-1))
    if sampled is not None:
        return (*sampled, values, feats)
    masked = logits.masked_fill_(~masks, -th.inf)
    # softmax, not exp of the log-probabilities: ATen's exp is slow on -inf, its softmax is not
    actions = sample(th.softmax(masked, dim=-1), uniform)
    log_probs = th.log_softmax(masked, dim=-1)
    return actions, log_probs.gather(1, actions[:, None]).squeeze(1), values, feats


# ------------------------------------------------------------------------------------------ the rollout


class _Rollout:
    """One rollout of ``steps`` x ``games``, preallocated and written in place."""

    def __init__(self, steps: int, games: int, obs_size: int, actions: int, device: Any = "cpu") -> None:
        self.shape = (steps, games, obs_size, actions)
        self.device = th.device(device)
        self.obs = self._zeros(steps, games, obs_size)
        self.masks = self._zeros(steps, games, actions, dtype=th.bool)
        self.actions = self._zeros(steps, games, dtype=th.long)
        self.log_probs = self._zeros(steps, games)
        self.values = self._zeros(steps, games)
        self.rewards = self._zeros(steps, games)
        self.starts = self._zeros(steps, games)
        self.advantages = self._zeros(steps, games)
        self.returns = self._zeros(steps, games)
        self.extras: list[th.Tensor] = []  # the features beyond the observation, (steps, games, ...)

    def _zeros(self, *shape: int, dtype: th.dtype = th.float32) -> th.Tensor:
        return th.zeros(shape, dtype=dtype, device=self.device)

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
    [`LeanMLP`][thermopylae_agents.training.lean_mlp.LeanMLP]. ``MaskablePPO.load`` loads what it saves
    (``precision`` is one more attribute of the file).
    """

    def __init__(self, *args: Any, precision: str = "float32", **kwargs: Any) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.precision = precision
        super().__init__(*args, **kwargs)

    # Built on first use: a loaded model does not run __init__ with them, and none of them is saved.
    _net: LeanMLP | None = None
    _rollout: _Rollout | None = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_net", "_rollout"]

    def _lean_net(self) -> LeanMLP:
        precision = getattr(self, "precision", "float32")
        net = self._net
        if net is None or net.precision != precision or net.policy is not self.policy:
            self._net = net = LeanMLP(self.policy, precision)
        return net

    def _rollout_buffer(self) -> _Rollout:
        shape = (self.n_steps, self.n_envs, int(np.prod(self.observation_space.shape)),
                 int(self.action_space.n))
        if self._rollout is None or self._rollout.shape != shape or self._rollout.device != self.device:
            self._rollout = _Rollout(*shape, device=self.device)
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
        net = self._lean_net()
        rollout = self._rollout_buffer()
        callback.on_rollout_start()
        net.freeze()
        try:
            extras: list[tuple[th.Tensor, ...]] = []
            for step in range(n_rollout_steps):
                if not self._rollout_step(env, callback, net, rollout, step, extras):
                    return False
            rollout.extras = [th.stack(part) for part in zip(*extras, strict=True)]
            last = th.as_tensor(self._last_obs, device=self.device).reshape(self.n_envs, -1).float()
            _, last_values = net.forward(net.features(last))
        finally:
            net.unfreeze()
        last_dones = th.as_tensor(self._last_episode_starts, dtype=th.float32, device=self.device)
        rollout.gae(last_values, last_dones, self.gamma, self.gae_lambda)
        callback.on_rollout_end()
        return True

    def _rollout_step(
        self, env: VecEnv, callback: BaseCallback, net: LeanMLP, rollout: _Rollout, step: int,
        extras: list[tuple[th.Tensor, ...]],
    ) -> bool:
        """One step of every game: act, step the env, let the callbacks see it, store it."""
        obs = rollout.obs[step]
        obs.copy_(th.as_tensor(self._last_obs).reshape(obs.shape))
        masks = rollout.masks[step]
        masks.copy_(th.from_numpy(_action_masks(env)))
        uniform = th.rand(self.n_envs, 1).to(self.device)  # drawn on the CPU on every device: same draws
        actions, log_prob, values, feats = act(net, obs, masks, uniform)
        extras.append(feats[1:])
        rollout.actions[step] = actions
        rollout.log_probs[step] = log_prob
        rollout.values[step] = values
        new_obs, rewards, dones, infos = env.step(actions.cpu().numpy())
        self.num_timesteps += env.num_envs
        callback.update_locals(locals())
        if not callback.on_step():
            return False
        ended = np.flatnonzero(dones)
        if len(ended):
            self._update_info_buffer([infos[i] for i in ended], dones[ended])
            rewards = self._bootstrap_cut_games(rewards, ended, infos, net)
        rollout.rewards[step] = th.as_tensor(rewards, dtype=th.float32).to(self.device)
        rollout.starts[step] = th.as_tensor(self._last_episode_starts, dtype=th.float32).to(self.device)
        self._last_obs = new_obs
        self._last_episode_starts = dones
        return True

    def _bootstrap_cut_games(
        self, rewards: np.ndarray, ended: np.ndarray, infos: list, net: LeanMLP
    ) -> np.ndarray:
        """SB3's time-limit handling: a game cut by a time limit adds gamma * V(its last observation)."""
        cut = [i for i in ended if infos[i].get("terminal_observation") is not None
               and infos[i].get("TimeLimit.truncated", False)]
        if not cut:
            return rewards
        rewards = np.array(rewards, dtype=np.float32)
        last = th.as_tensor(np.stack([infos[i]["terminal_observation"] for i in cut])).float()
        _, values = net.forward(net.features(last.reshape(len(cut), -1).to(self.device)))
        rewards[cut] += self.gamma * values.cpu().numpy()
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
        net = self._lean_net()
        batch = self._rollout.flat()
        batch["features"] = net.for_update(batch["features"])
        size = len(batch["actions"])
        params = net.parameters()
        optimizer = self.policy.optimizer
        losses: list[Loss] = []
        stop = False
        for epoch in range(self.n_epochs):
            # NumPy's global generator, as SB3's RolloutBuffer.get: set_random_seed(seed) seeds it.
            order = th.from_numpy(np.random.permutation(size)).to(self.device)  # noqa: NPY002
            for start in range(0, size, self.batch_size):
                minibatch = _rows(batch, order[start:start + self.batch_size])
                loss = ppo_gradients(net, minibatch, clip_range, clip_range_vf, self.ent_coef, self.vf_coef,
                                     self.normalize_advantage)
                losses.append(loss)
                if self.target_kl is not None and loss.approx_kl > 1.5 * self.target_kl:
                    stop = True
                    if self.verbose >= 1:
                        print(f"Early stopping at step {epoch} due to reaching max kl: {loss.approx_kl:.2f}")
                    break
                th.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                optimizer.step()
            self._n_updates += 1
            if stop:
                break
        self._record_train_logs(losses, clip_range, clip_range_vf, batch)

    def _record_train_logs(
        self, losses: list[Loss], clip_range: float, clip_range_vf: float | None, batch: dict[str, Any]
    ) -> None:
        """The ``train/`` scalars of sb3-contrib's ``train``."""
        self.logger.record("train/entropy_loss", np.mean([loss.entropy for loss in losses]))
        self.logger.record("train/policy_gradient_loss", np.mean([loss.policy for loss in losses]))
        self.logger.record("train/value_loss", np.mean([loss.value for loss in losses]))
        self.logger.record("train/approx_kl", np.mean([loss.approx_kl for loss in losses]))
        self.logger.record("train/clip_fraction", np.mean([loss.clip_fraction for loss in losses]))
        self.logger.record("train/loss", losses[-1].loss)
        values, returns = batch["old_values"].cpu().numpy(), batch["returns"].cpu().numpy()
        self.logger.record("train/explained_variance", explained_variance(values, returns))
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
    net = LeanMLP(clone, precision)
    optimizer = th.optim.Adam(clone.parameters(), lr=1e-6)
    generator = th.Generator().manual_seed(0)
    obs = th.rand((batch_size, net.obs_size), generator=generator)
    actions = int(clone.action_space.n)
    batch = {"features": net.features(obs), "masks": th.ones((batch_size, actions), dtype=th.bool),
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
                ppo_gradients(net, batch, clip_range=0.2)
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
