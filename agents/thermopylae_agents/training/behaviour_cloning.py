"""Behaviour cloning: warm-start a MaskablePPO policy from an expert before PPO fine-tuning.

Why: in the co-op game a fresh policy plays almost at random, and random play walks the marker to 7
nearly every game, so PPO sees next to no wins to learn from. Copying a decent expert first (the
hand-written heuristic or the determinized search) puts PPO where wins are common enough to improve on.

Three steps, each usable alone:

* :func:`collect_expert_data` plays ``episodes`` games with an expert on a Gymnasium env and records
  ``(observation, legal mask, expert action)`` plus the discounted return from each decision;
* :func:`behaviour_cloning` trains the policy's actor with a *masked* cross-entropy (illegal actions get
  no probability, exactly as in MaskablePPO) and, optionally, its critic on those returns so that PPO
  starts from a value function that matches the cloned policy instead of wrecking it in the first update;
* :func:`agreement` measures how often the policy's most likely legal action equals the expert's.

DAgger (Ross et al., 2011) is the same loop with ``actor=`` the cloned policy: the expert labels the states
the clone reaches, the labels join the data, and the policy is trained again; it fixes the mistakes that
lead the clone off the expert's paths, which plain cloning never sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th

__all__ = ["ExpertData", "collect_expert_data", "behaviour_cloning", "agreement"]


@dataclass
class ExpertData:
    """Decisions recorded from an expert: one row per decision."""

    observations: np.ndarray  # float32 (n, obs_size)
    masks: np.ndarray  # bool (n, n_actions)
    actions: np.ndarray  # int64 (n,)
    returns: np.ndarray  # float32 (n,), discounted return from that decision to the end of its episode
    episodes: int
    wins: int

    def __len__(self) -> int:
        return len(self.actions)

    def split(self, fraction: float, seed: int = 0) -> tuple[ExpertData, ExpertData]:
        """Split the rows at random into two sets (``fraction`` of the rows, the rest)."""
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self))
        cut = int(round(fraction * len(self)))
        return self.take(order[:cut]), self.take(order[cut:])

    def take(self, index: np.ndarray) -> ExpertData:
        return ExpertData(
            self.observations[index], self.masks[index], self.actions[index], self.returns[index], 0, 0
        )

    @staticmethod
    def concatenate(parts: list[ExpertData]) -> ExpertData:
        return ExpertData(
            np.concatenate([p.observations for p in parts]),
            np.concatenate([p.masks for p in parts]),
            np.concatenate([p.actions for p in parts]),
            np.concatenate([p.returns for p in parts]),
            sum(p.episodes for p in parts),
            sum(p.wins for p in parts),
        )


def _mask_of(env: gym.Env, info: dict[str, Any]) -> np.ndarray:
    if "action_mask" in info:
        return np.asarray(info["action_mask"], dtype=bool)
    return np.asarray(env.unwrapped.action_masks(), dtype=bool)  # type: ignore[attr-defined]


def collect_expert_data(
    make_env: Callable[[], gym.Env],
    expert: Any,
    episodes: int,
    seed: int = 0,
    gamma: float = 1.0,
    actor: Any = None,
) -> ExpertData:
    """Play ``episodes`` games and record the decisions of ``expert`` (an agent).

    ``expert`` is a :class:`thermopylae_agents.base.Agent`.

    ``make_env`` builds the environment the policy will be trained on (same observation, same reward
    shaping), so the recorded returns are those PPO's critic has to predict. Episode ``i`` is reset with
    ``seed + i``: the data set is reproducible.

    With ``actor`` (DAgger) the games are played by ``actor`` while the expert only labels each state
    with what it would have done: the states are those the learner reaches, where its mistakes happen.
    The returns (and ``wins``) are then the actor's.
    """
    env = make_env()
    observations: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    actions: list[int] = []
    returns: list[float] = []
    wins = 0
    try:
        for episode in range(episodes):
            obs, info = env.reset(seed=seed + episode)
            rewards: list[float] = []
            while True:
                mask = _mask_of(env, info)
                action = int(expert.act(obs, mask))
                observations.append(np.asarray(obs, dtype=np.float32))
                masks.append(mask)
                actions.append(action)
                if actor is not None:
                    action = int(actor.act(obs, mask))
                obs, reward, terminated, truncated, info = env.step(action)
                rewards.append(float(reward))
                if terminated or truncated:
                    wins += bool(info.get("is_success", False))
                    break
            # Discounted return from each decision, computed backwards over the finished episode.
            running = 0.0
            episode_returns = []
            for reward in reversed(rewards):
                running = reward + gamma * running
                episode_returns.append(running)
            returns.extend(reversed(episode_returns))
    finally:
        env.close()
    return ExpertData(
        observations=np.stack(observations),
        masks=np.stack(masks),
        actions=np.asarray(actions, dtype=np.int64),
        returns=np.asarray(returns, dtype=np.float32),
        episodes=episodes,
        wins=wins,
    )


def _batches(n: int, batch_size: int, rng: np.random.Generator):
    order = rng.permutation(n)
    for start in range(0, n, batch_size):
        yield order[start : start + batch_size]


def behaviour_cloning(
    policy: Any,
    data: ExpertData,
    epochs: int = 5,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    value_coef: float = 0.5,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    on_batch: Callable[[int], None] | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Train an SB3 actor-critic policy (``model.policy``) to imitate ``data``.

    Loss = cross-entropy of the expert action + ``value_coef`` x MSE of the critic to the recorded
    return (``value_coef=0`` leaves the critic alone). For a ``MaskableActorCriticPolicy`` the
    cross-entropy is masked (the softmax runs over the legal actions only, as MaskablePPO samples); a
    plain PPO policy samples from all 72 actions, so there it is the plain cross-entropy, which also
    teaches it to avoid illegal actions. Uses its own Adam optimizer, so the PPO optimizer state is
    untouched. Returns per-epoch statistics (cross-entropy, agreement, value MSE).

    ``on_batch(rows)`` is called after each minibatch (progress) and ``on_epoch(stats)`` after each epoch
    (the run writes the statistics to TensorBoard).
    """
    masked = is_maskable(policy)
    device = policy.device
    obs = th.as_tensor(data.observations, device=device)
    masks = th.as_tensor(data.masks, device=device)
    actions = th.as_tensor(data.actions, device=device)
    returns = th.as_tensor(data.returns, device=device)
    optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate)
    rng = np.random.default_rng(seed)
    history = []
    policy.set_training_mode(True)
    for epoch in range(epochs):
        total_loss = total_correct = total_value = 0.0
        for index in _batches(len(data), batch_size, rng):
            idx = th.as_tensor(index, device=device)
            logits = _logits(policy, obs[idx], masks[idx] if masked else None)
            bc_loss = th.nn.functional.cross_entropy(logits, actions[idx])
            loss = bc_loss
            value_loss = th.zeros(())
            if value_coef > 0:
                values = policy.predict_values(obs[idx]).flatten()
                value_loss = th.nn.functional.mse_loss(values, returns[idx])
                loss = loss + value_coef * value_loss
            optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            with th.no_grad():
                chosen = logits.masked_fill(~masks[idx], -th.inf).argmax(dim=1)
                total_correct += float((chosen == actions[idx]).sum())
            total_loss += float(bc_loss.detach()) * len(index)
            total_value += float(value_loss.detach()) * len(index)
            if on_batch is not None:
                on_batch(len(index))
        stats = {
            "epoch": epoch + 1,
            "loss": total_loss / len(data),
            "accuracy": total_correct / len(data),
            "value_mse": total_value / len(data),
        }
        history.append(stats)
        if on_epoch is not None:
            on_epoch(stats)
        if log is not None:
            log(
                f"BC epoch {stats['epoch']}/{epochs}: cross-entropy {stats['loss']:.4f}, "
                f"agreement {stats['accuracy']:.3f}, value MSE {stats['value_mse']:.4f}"
            )
    policy.set_training_mode(False)
    return history


def is_maskable(policy: Any) -> bool:
    """Whether ``policy`` is sb3-contrib's ``MaskableActorCriticPolicy`` (it samples legal actions only)."""
    try:
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    except ImportError:  # pragma: no cover - sb3-contrib is part of the train extra
        return False
    return isinstance(policy, MaskableActorCriticPolicy)


def _logits(policy: Any, obs: th.Tensor, masks: th.Tensor | None) -> th.Tensor:
    """The policy's action logits; illegal actions pushed to a large negative value when ``masks``."""
    features = policy.extract_features(obs, policy.pi_features_extractor)
    logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
    if masks is not None:
        logits = logits.masked_fill(~masks, -1e8)
    return logits


def agreement(policy: Any, data: ExpertData, batch_size: int = 4096) -> float:
    """Fraction of ``data``'s decisions where the policy's most likely legal action is the expert's.

    This is the choice of the greedy masked player; a plain PPO policy is scored the same way, on the legal
    actions only, which is how
    :class:`thermopylae_agents.sb3_agent.SB3Agent` falls back when its prediction is illegal.
    """
    if len(data) == 0:
        raise ValueError("agreement needs at least one decision")
    device = policy.device
    correct = 0
    policy.set_training_mode(False)
    with th.no_grad():
        for start in range(0, len(data), batch_size):
            sl = slice(start, start + batch_size)
            logits = _logits(
                policy,
                th.as_tensor(data.observations[sl], device=device),
                th.as_tensor(data.masks[sl], device=device),
            )
            correct += int((logits.argmax(dim=1).cpu().numpy() == data.actions[sl]).sum())
    return correct / len(data)
