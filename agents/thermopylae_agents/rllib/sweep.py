"""A Ray Tune sweep over the co-op PPO hyperparameters, with ASHA early stopping.

Each trial trains masked PPO on the co-op game ([`thermopylae_agents.rllib.config.coop_config`][]) with a
learning rate, an entropy coefficient and a train batch size from the given values. ``search`` says how:

* ``"grid"`` (default): every combination once (``tune.grid_search`` on each list), the whole grid
  ``num_samples`` times (default once), so no value is left out by chance;
* ``"random"``: ``num_samples`` trials (default 8), each drawing every value uniformly (``tune.choice``), so
  two trials may draw the same learning rate;
* ``"optuna"``: ``num_samples`` trials (default 8) proposed by Optuna's TPE sampler
  (``ray.tune.search.optuna.OptunaSearch``, seeded with ``seed``) from the same choices, each new trial
  informed by the finished ones.

ASHA (``ray.tune.schedulers.ASHAScheduler``) compares trials on the
mean episode return (``env_runners/episode_return_mean``: in the co-op game ``2 * win rate - 1``) at rungs
of env steps and stops the worse ones early. The best trial's last checkpoint is exported
([`thermopylae_agents.policies.rllib_policy`][]) and evaluated greedily on fixed seeded deals, with its
95% Wilson interval. Trial results and checkpoints go to ``STORAGE/NAME``
(``RunConfig(storage_path=...)``: a local directory; on a cluster of several machines a directory that
every node mounts at the same path, e.g. NFS).

Command line ([`thermopylae_agents.cli.rllib`][]):

    thermopylae rllib sweep --run-dir runs/rllib_sweep --search grid \\
        --lr 1e-4 3e-4 1e-3 --entropy-coeff 0 0.003 0.01 --train-batch-size 4096 16384 \\
        --timesteps-per-trial 2000000 --grace-period 200000
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from thermopylae_agents.policies.rllib_policy import export_rl_module
from thermopylae_agents.rllib.config import COOP_DEFAULTS, coop_config
from thermopylae_agents.rllib.train import evaluate_policy
from thermopylae_env import COOP_ID

__all__ = ["METRIC", "SEARCHES", "TIME_ATTR", "run_sweep", "search_algorithm", "search_space"]

METRIC = "env_runners/episode_return_mean"
TIME_ATTR = "num_env_steps_sampled_lifetime"
SEARCHES = ("grid", "random", "optuna")
DEFAULT_SAMPLES = {"grid": 1, "random": 8, "optuna": 8}


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


def search_space(lrs: Sequence[float], entropy_coeffs: Sequence[float], batch_sizes: Sequence[int],
                 search: str = "grid") -> dict[str, Any]:
    """The keyword arguments of ``AlgorithmConfig.training`` that Tune varies: a grid over every list
    (``search="grid"``) or a uniform choice from it (``"random"``, ``"optuna"``)."""
    from ray import tune  # extra: rllib

    if search not in SEARCHES:
        raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
    values = {
        "lr": _positive_list("lr", lrs, float),
        "entropy_coeff": _positive_list("entropy_coeff", entropy_coeffs, float),
        "train_batch_size_per_learner": _positive_list("train_batch_size", batch_sizes, int),
    }
    vary = tune.grid_search if search == "grid" else tune.choice
    return {key: vary(choices) for key, choices in values.items()}


def search_algorithm(search: str, seed: int = 0) -> Any:
    """Tune's ``search_alg`` for ``search``: ``None`` (Tune's variant generator: grid or random) or an
    ``OptunaSearch`` (``pip install optuna``)."""
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
    if search != "optuna":
        return None
    import optuna  # extra: rllib
    from ray.tune.search.optuna import OptunaSearch  # extra: rllib

    return OptunaSearch(sampler=optuna.samplers.TPESampler(seed=seed))


def run_sweep(
    storage_path: str,
    name: str = "coop_ppo_sweep",
    lrs: Sequence[float] = (1e-4, 3e-4, 1e-3),
    entropy_coeffs: Sequence[float] = (0.0, 0.003, 0.01),
    batch_sizes: Sequence[int] = (4096, 16384),
    num_samples: int | None = None,
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
    search: str = "grid",
) -> dict[str, Any]:
    """Run the sweep (see the module docstring) on the Ray that is running; returns a JSON-friendly summary
    with every trial's hyperparameters and last result, and the best trial with its evaluation."""
    from ray import tune  # extra: rllib
    from ray.tune.schedulers import ASHAScheduler  # extra: rllib

    space = search_space(lrs, entropy_coeffs, batch_sizes, search)
    lrs = _positive_list("lr", lrs, float)
    entropy_coeffs = _positive_list("entropy_coeff", entropy_coeffs, float)
    batch_sizes = _positive_list("train_batch_size", batch_sizes, int)
    if num_samples is None:
        num_samples = DEFAULT_SAMPLES[search]
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
    config = config.training(**space)
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
            search_alg=search_algorithm(search, seed),
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
        "search": search,
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
    from ray.rllib.core import (  # extra: rllib
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_RL_MODULE,
        DEFAULT_MODULE_ID,
    )
    from ray.rllib.core.rl_module.rl_module import RLModule  # extra: rllib

    path = (
        Path(checkpoint)
        / COMPONENT_LEARNER_GROUP
        / COMPONENT_LEARNER
        / COMPONENT_RL_MODULE
        / DEFAULT_MODULE_ID
    )
    return RLModule.from_checkpoint(path)
