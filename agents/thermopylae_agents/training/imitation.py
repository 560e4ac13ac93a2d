"""Imitation: behaviour cloning and DAgger, and the warm start of a training run built on them.

Why: in the co-op game a fresh policy plays almost at random, and random play walks the marker to 7
nearly every game, so PPO sees next to no wins to learn from. Copying a decent expert first (the
hand-written heuristic or the determinized search) puts PPO where wins are common enough to improve on.

Three steps, each usable alone:

* [`collect_expert_data`][thermopylae_agents.training.imitation.collect_expert_data] plays ``episodes`` games
  with an expert on a Gymnasium env and records ``(observation, legal mask, expert action)`` plus the
  discounted return from each decision;
* [`behaviour_cloning`][thermopylae_agents.training.imitation.behaviour_cloning] trains the policy's actor
  with a *masked* cross-entropy (illegal actions get no probability, exactly as in MaskablePPO) and,
  optionally, its critic on those returns so that PPO starts from a value function that matches the cloned
  policy instead of wrecking it in the first update;
* [`agreement`][thermopylae_agents.training.imitation.agreement] measures how often the policy's most likely
  legal action equals the expert's.

DAgger (Ross et al., 2011) is the same loop with ``actor=`` the cloned policy: the expert labels the states
the clone reaches, the labels join the data, and the policy is trained again; it fixes the mistakes that
lead the clone off the expert's paths, which plain cloning never sees.

The warm start of a run ([`warm_start`][thermopylae_agents.training.imitation.warm_start]) plays the expert
games (in worker processes), shows each stage's progress, and writes the curves to ``tb/warm_start``.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.evaluation import evaluate_policy as evaluate_unmasked

from thermopylae_agents.players.coop_heuristic import CoopHeuristic
from thermopylae_agents.players.coop_search import CoopSearchExpert
from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.training.callbacks import scalar_writer
from thermopylae_agents.training.config import Config
from thermopylae_agents.training.envs import make_env_fn
from thermopylae_agents.training.progress import Stage, log
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian

__all__ = [
    "ExpertData",
    "agreement",
    "behaviour_cloning",
    "collect_bc_data",
    "collect_expert_data",
    "make_expert",
    "policy_win_rate",
    "warm_start",
]


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

    ``expert`` is a [`thermopylae_agents.players.base.Agent`][].

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
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy  # extra: train
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
    [`thermopylae_agents.policies.sb3_agent.SB3Agent`][] falls back when its prediction is illegal.
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



def make_expert(env_id: str, name: str, seed: int = 0) -> Any:
    """The expert player ``name`` for ``env_id``: an [`thermopylae_agents.players.base.Agent`][]."""
    if env_id == COOP_ID:
        if name == "heuristic":
            return CoopHeuristic()
        if name == "search":
            return CoopSearchExpert(seed=seed)
    elif env_id in (GREEK_ID, PERSIAN_ID) and name == "heuristic":
        return HeuristicGreek() if env_id == GREEK_ID else HeuristicPersian()
    raise ValueError(
        f"no expert {name!r} for {env_id}: the experts are heuristic (any game) and search (co-op)"
    )


def _collect_part(
    env_id: str,
    env_kwargs: dict[str, Any],
    expert: str,
    episodes: int,
    seed: int,
    gamma: float,
    actor: Any = None,
):
    return collect_expert_data(
        make_env_fn(env_id, env_kwargs),
        make_expert(env_id, expert, seed),
        episodes,
        seed=seed,
        gamma=gamma,
        actor=actor,
    )


def collect_bc_data(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    expert: str,
    episodes: int,
    seed: int,
    gamma: float,
    workers: int = 1,
    actor: Any = None,
    stage: Stage | None = None,
):
    """Expert decisions from ``episodes`` games (game ``i`` seeded ``seed + i``), in ``workers`` processes.

    ``actor`` (a picklable player such as
    [`FrozenPolicy`][thermopylae_agents.policies.frozen_policy.FrozenPolicy]) plays the games instead of the
    expert, which then only labels the states (DAgger). The games are played in consecutive chunks, in order,
    so the data are the same for any number of workers; ``stage`` advances by each finished chunk.
    """

    workers = max(1, min(int(workers), episodes))
    chunk = max(1, min(100, math.ceil(episodes / (workers * 8))))
    jobs = [
        (env_id, dict(env_kwargs), expert, min(chunk, episodes - start), seed + start, gamma, actor)
        for start in range(0, episodes, chunk)
    ]
    parts = []
    if workers == 1:
        for job in jobs:
            parts.append(_collect_part(*job))
            if stage is not None:
                stage.advance(job[3])
    else:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            for job, part in zip(jobs, pool.map(_collect_part, *zip(*jobs, strict=True)), strict=True):
                parts.append(part)
                if stage is not None:
                    stage.advance(job[3])
    return ExpertData.concatenate(parts)


def warm_start(
    model: Any,
    env_id: str,
    env_kwargs: Mapping[str, Any],
    bc: Config,
    seed: int,
    eval_env: Any = None,
    eval_episodes: int = 0,
    *,
    bar: bool = True,
    tb_dir: Path | None = None,
) -> dict[str, Any]:
    """Behaviour cloning of ``bc.expert`` into ``model.policy`` before PPO; returns what was measured.

    With ``eval_env`` the cloned policy is also played for ``eval_episodes`` games (the starting point that
    PPO then improves on). With ``tb_dir`` the per-epoch losses and agreement, the held-out agreement, the
    DAgger rounds and the clone's win rate are written there as TensorBoard scalars.
    """

    episodes = int(bc["episodes"])
    expert = str(bc.get("expert", "heuristic"))
    workers = int(bc.get("workers", 1))
    writer = scalar_writer(tb_dir) if tb_dir is not None else None
    # Seeds far from the training envs' so that the cloned games are not replayed by PPO.
    bc_seed = 10_000_000 + seed * 100_000
    with Stage(f"BC: playing {expert} games", episodes, "games", bar) as stage:
        data = collect_bc_data(
            env_id, env_kwargs, expert, episodes, bc_seed, model.gamma, workers, stage=stage
        )
    collect_seconds = stage.seconds
    log(
        f"BC: {len(data):,} decisions from {data.episodes:,} {expert} games (win rate "
        f"{data.wins / max(data.episodes, 1):.3f})"
    )
    train_data, held_out = data.split(0.9, seed=seed)
    before = agreement(model.policy, held_out)
    settings = dict(
        batch_size=int(bc.get("batch_size", 256)),
        learning_rate=float(bc.get("learning_rate", 1e-3)),
        value_coef=float(bc.get("value_coef", 0.5)),
    )
    epochs = int(bc.get("epochs", 5))
    epoch_step = [0]

    def record_epoch(stats: Mapping[str, float]) -> None:
        epoch_step[0] += 1
        if writer is not None:
            writer.record("bc/cross_entropy", stats["loss"])
            writer.record("bc/agreement", stats["accuracy"])
            writer.record("bc/value_mse", stats["value_mse"])
            writer.dump(epoch_step[0])

    with Stage(f"BC: {epochs} epochs of cloning", epochs * len(train_data), "decisions", bar) as stage:
        history = behaviour_cloning(
            model.policy,
            train_data,
            epochs=epochs,
            seed=seed,
            on_batch=stage.advance,
            on_epoch=record_epoch,
            **settings,
        )
    train_seconds = stage.seconds
    after = agreement(model.policy, held_out)
    log(
        f"BC: held-out agreement with the {expert} {before:.3f} -> {after:.3f} "
        f"(last epoch: cross-entropy {history[-1]['loss']:.4f})"
        if history
        else "BC: no epochs"
    )
    if writer is not None:
        writer.record("bc/held_out_agreement", before)
        writer.dump(0)
        writer.record("bc/held_out_agreement", after)
        writer.dump(1)
    dagger = []
    rounds = int(bc.get("dagger_rounds", 0))
    for r in range(1, rounds + 1):
        start = time.perf_counter()
        actor = FrozenPolicy(model, name=f"dagger{r}")
        n_new = int(bc["dagger_episodes"])
        dagger_epochs = int(bc.get("dagger_epochs", 2))
        with Stage(
            f"DAgger {r}/{rounds}: the clone plays, the {expert} labels", n_new, "games", bar
        ) as stage:
            new = collect_bc_data(
                env_id,
                env_kwargs,
                expert,
                n_new,
                bc_seed + episodes + (r - 1) * n_new,
                model.gamma,
                workers,
                actor=actor,
                stage=stage,
            )
        on_policy = agreement(model.policy, new)
        train_data = ExpertData.concatenate([train_data, new])
        with Stage(
            f"DAgger {r}/{rounds}: {dagger_epochs} epochs", dagger_epochs * len(train_data), "decisions", bar
        ) as stage:
            behaviour_cloning(
                model.policy,
                train_data,
                epochs=dagger_epochs,
                seed=seed + r,
                on_batch=stage.advance,
                **settings,
            )
        dagger.append(
            {
                "round": r,
                "clone_win_rate": new.wins / max(new.episodes, 1),
                "agreement_on_clone_states": on_policy,
                "decisions": len(train_data),
                "seconds": round(time.perf_counter() - start, 2),
            }
        )
        if writer is not None:
            writer.record("dagger/clone_win_rate", dagger[-1]["clone_win_rate"])
            writer.record("dagger/agreement_on_clone_states", on_policy)
            writer.record("dagger/decisions", len(train_data))
            writer.dump(r)
        log(
            f"DAgger {r}/{rounds}: the clone won {dagger[-1]['clone_win_rate']:.3f} of {new.episodes} games "
            f"and agreed with the {expert} on {on_policy:.3f} of its states; {len(train_data):,} decisions"
        )
    if rounds:
        after = agreement(model.policy, held_out)
        log(f"BC after DAgger: held-out agreement {after:.3f}")
    win_rate = None
    evaluate_start = time.perf_counter()
    if eval_env is not None and eval_episodes > 0:
        win_rate = policy_win_rate(model, eval_env, eval_episodes, "BC: the clone plays", bar)
        log(f"BC: the cloned policy wins {win_rate:.3f} of {eval_episodes:,} evaluation games")
        if writer is not None:
            writer.record("bc/clone_win_rate", win_rate)
            writer.dump(0)
    if writer is not None:
        writer.close()
    return {
        "expert": expert,
        "episodes": data.episodes,
        "decisions": len(data),
        "expert_win_rate": data.wins / max(data.episodes, 1),
        "collect_seconds": round(collect_seconds, 2),
        "train_seconds": round(train_seconds, 2),
        "evaluate_seconds": round(time.perf_counter() - evaluate_start, 2),
        "held_out_agreement_before": before,
        "held_out_agreement_after": after,
        "dagger": dagger,
        "win_rate_after_bc": win_rate,
        "win_rate_games": eval_episodes if win_rate is not None else 0,
        "history": history,
    }


def policy_win_rate(
    model: Any, eval_env: Any, episodes: int, description: str = "evaluation", bar: bool = True
) -> float:
    """Share of ``episodes`` evaluation games the model's greedy (masked) policy wins.

    The evaluation env has no reward shaping, so an episode's reward is +1 for a win and -1 otherwise.
    """
    from sb3_contrib import MaskablePPO  # extra: train
    from sb3_contrib.common.maskable.evaluation import evaluate_policy as evaluate_masked  # extra: train

    evaluate_policy = evaluate_masked if isinstance(model, MaskablePPO) else evaluate_unmasked
    with Stage(description, episodes, "games", bar) as stage:

        def count(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
            if locals_.get("done"):
                stage.advance(1)

        rewards, _ = evaluate_policy(
            model,
            eval_env,
            episodes,
            deterministic=True,
            return_episode_rewards=True,
            warn=False,
            callback=count,
        )
    return float(np.mean(np.asarray(rewards) > 0))
