"""A Ray Tune sweep over the co-op PPO hyperparameters, with ASHA early stopping.

Each trial trains masked PPO on the co-op game ([`thermopylae_agents.rllib.config.coop_config`][]) with a
learning rate, an entropy coefficient and a train batch size drawn from the given choices (``num_samples``
trials of random search over them). ASHA (``ray.tune.schedulers.ASHAScheduler``) compares trials on the
mean episode return (``env_runners/episode_return_mean``: in the co-op game ``2 * win rate - 1``) at rungs
of env steps and stops the worse ones early. The best trial's last checkpoint is exported
([`thermopylae_agents.policies.rllib_policy`][]) and evaluated greedily on fixed seeded deals, with its
95% Wilson interval. Trial results and checkpoints go to ``STORAGE/NAME``
(``RunConfig(storage_path=...)``: a local directory; on a cluster of several machines a directory that
every node mounts at the same path, e.g. NFS).

Command line ([`thermopylae_agents.cli.rllib`][]):

    thermopylae rllib sweep --storage-path runs/rllib_sweep --num-samples 8 \\
        --lr 1e-4 3e-4 1e-3 --entropy-coeff 0 0.003 0.01 --train-batch-size 4096 16384 \\
        --timesteps-per-trial 2000000 --grace-period 200000
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

__all__ = ["METRIC", "TIME_ATTR", "run_sweep"]

METRIC = "env_runners/episode_return_mean"
TIME_ATTR = "num_env_steps_sampled_lifetime"


def _positive_list(name: str, values: Sequence[Any], kind: type) -> list[Any]:
    values = list(values)
    if not values:
        raise ValueError(f"{name}: give at least one value")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{name}: every value must be a finite number >= 0, got {v!r}")
        if kind is int and (int(v) != v or v < 1):
            raise ValueError(f"{name}: every value must be a positive integer, got {v!r}")
    return [kind(v) for v in values]


def run_sweep(
    storage_path: str,
    name: str = "coop_ppo_sweep",
    lrs: Sequence[float] = (1e-4, 3e-4, 1e-3),
    entropy_coeffs: Sequence[float] = (0.0, 0.003, 0.01),
    batch_sizes: Sequence[int] = (4096, 16384),
    num_samples: int = 8,
    timesteps_per_trial: int = 2_000_000,
    grace_period: int = 200_000,
    reduction_factor: int = 3,
    max_concurrent: int | None = None,
    num_env_runners: int = 0,
    envs_per_runner: int = 64,
    minibatch_size: int | None = None,
    hiddens: Sequence[int] | None = None,
    eval_games: int = 1000,
    eval_seed: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the sweep (see the module docstring) on the Ray that is running; returns a JSON-friendly summary
    with every trial's hyperparameters and last result, and the best trial with its evaluation."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    from thermopylae_agents.policies.registry import COOP_ID
    from thermopylae_agents.policies.rllib_policy import export_rl_module
    from thermopylae_agents.rllib.config import COOP_DEFAULTS, coop_config
    from thermopylae_agents.rllib.train import evaluate_policy

    lrs = _positive_list("lr", lrs, float)
    entropy_coeffs = _positive_list("entropy_coeff", entropy_coeffs, float)
    batch_sizes = _positive_list("train_batch_size", batch_sizes, int)
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive integer, got {num_samples!r}")
    if grace_period < 1 or timesteps_per_trial < grace_period:
        raise ValueError(
            f"need 1 <= grace_period ({grace_period}) <= timesteps_per_trial ({timesteps_per_trial})"
        )
    # One minibatch size for every trial, so that it must fit the smallest batch.
    minibatch = min(minibatch_size or COOP_DEFAULTS.minibatch_size, min(batch_sizes))
    settings = replace(
        COOP_DEFAULTS,
        total_timesteps=timesteps_per_trial,
        train_batch_size=max(batch_sizes),
        minibatch_size=minibatch,
        hiddens=tuple(hiddens or COOP_DEFAULTS.hiddens),
    )
    config = coop_config(settings, num_env_runners, envs_per_runner, "native", {"backend": "auto"}, seed)
    config = config.training(
        lr=tune.choice(lrs),
        entropy_coeff=tune.choice(entropy_coeffs),
        train_batch_size_per_learner=tune.choice(batch_sizes),
    )
    scheduler = ASHAScheduler(
        time_attr=TIME_ATTR,
        max_t=timesteps_per_trial,
        grace_period=grace_period,
        reduction_factor=reduction_factor,
    )
    tuner = tune.Tuner(
        "PPO",
        param_space=config,
        tune_config=tune.TuneConfig(
            metric=METRIC,
            mode="max",
            scheduler=scheduler,
            num_samples=num_samples,
            max_concurrent_trials=max_concurrent,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(Path(storage_path).resolve()),
            stop={TIME_ATTR: timesteps_per_trial},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True, num_to_keep=1),
            verbose=1,
        ),
    )
    results = tuner.fit()
    trials = []
    for result in results:
        cfg = result.config or {}
        metrics = result.metrics or {}
        trials.append(
            {
                "path": result.path,
                "lr": cfg.get("lr"),
                "entropy_coeff": cfg.get("entropy_coeff"),
                "train_batch_size": cfg.get("_train_batch_size_per_learner"),
                "timesteps": metrics.get(TIME_ATTR),
                "iterations": metrics.get("training_iteration"),
                "episode_return_mean": (metrics.get("env_runners") or {}).get("episode_return_mean"),
                "error": str(result.error) if result.error else None,
            }
        )
    best = results.get_best_result(metric=METRIC, mode="max", scope="last")
    summary: dict[str, Any] = {
        "name": name,
        "metric": METRIC,
        "time_attr": TIME_ATTR,
        "space": {"lr": lrs, "entropy_coeff": entropy_coeffs, "train_batch_size": batch_sizes},
        "num_samples": num_samples,
        "timesteps_per_trial": timesteps_per_trial,
        "grace_period": grace_period,
        "reduction_factor": reduction_factor,
        "settings": asdict(settings),
        "trials": trials,
    }
    best_cfg = best.config or {}
    summary["best"] = {
        "path": best.path,
        "lr": best_cfg.get("lr"),
        "entropy_coeff": best_cfg.get("entropy_coeff"),
        "train_batch_size": best_cfg.get("_train_batch_size_per_learner"),
        "episode_return_mean": (best.metrics.get("env_runners") or {}).get("episode_return_mean"),
        "checkpoint": best.checkpoint.path if best.checkpoint else None,
    }
    if best.checkpoint is not None:
        module = _module_from_checkpoint(best.checkpoint.path)
        export = Path(storage_path) / name / "best_policy.npz"
        summary["best"]["exported"] = str(export_rl_module(module, export, COOP_ID, "default_policy"))
        if eval_games:
            summary["best"]["evaluation"] = evaluate_policy(export, COOP_ID, eval_games, eval_seed)
    return summary


def _module_from_checkpoint(checkpoint: str) -> Any:
    """The co-op RLModule of an algorithm checkpoint (without building env runners)."""
    from ray.rllib.core import (
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_RL_MODULE,
        DEFAULT_MODULE_ID,
    )
    from ray.rllib.core.rl_module.rl_module import RLModule

    path = (
        Path(checkpoint)
        / COMPONENT_LEARNER_GROUP
        / COMPONENT_LEARNER
        / COMPONENT_RL_MODULE
        / DEFAULT_MODULE_ID
    )
    return RLModule.from_checkpoint(path)
