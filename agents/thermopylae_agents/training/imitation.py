"""The warm start of a run: expert games, behaviour cloning and DAgger rounds before PPO.

The algorithms are in :mod:`thermopylae_agents.imitation`; this module plays the expert games (in worker
processes), shows each stage's progress, and writes the curves to ``tb/warm_start``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.frozen_policy import FrozenPolicy
from thermopylae_agents.training.callbacks import scalar_writer
from thermopylae_agents.training.config import COOP_ID, GREEK_ID, PERSIAN_ID, Config
from thermopylae_agents.training.envs import make_env_fn, register_envs
from thermopylae_agents.training.progress import Stage, log

__all__ = ["collect_bc_data", "make_expert", "policy_win_rate", "warm_start"]


def make_expert(env_id: str, name: str, seed: int = 0) -> Any:
    """The expert player ``name`` for ``env_id``: an :class:`thermopylae_agents.base.Agent`."""
    if env_id == COOP_ID:
        if name == "heuristic":
            from thermopylae_agents.coop_heuristic import CoopHeuristic

            return CoopHeuristic()
        if name == "search":
            from thermopylae_agents.coop_search import CoopSearchExpert

            return CoopSearchExpert(seed=seed)
    elif env_id in (GREEK_ID, PERSIAN_ID) and name == "heuristic":
        from thermopylae_agents.duel_heuristic import HeuristicGreek, HeuristicPersian

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
    from thermopylae_agents.imitation import collect_expert_data

    register_envs()
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

    ``actor`` (a picklable player such as :class:`FrozenPolicy`) plays the games instead of the expert,
    which then only labels the states (DAgger). The games are played in consecutive chunks, in order, so
    the data are the same for any number of workers; ``stage`` advances by each finished chunk.
    """
    from thermopylae_agents.imitation import ExpertData

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
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

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
    from thermopylae_agents.imitation import ExpertData, agreement, behaviour_cloning

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
    from sb3_contrib import MaskablePPO

    if isinstance(model, MaskablePPO):
        from sb3_contrib.common.maskable.evaluation import evaluate_policy
    else:
        from stable_baselines3.common.evaluation import evaluate_policy
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
