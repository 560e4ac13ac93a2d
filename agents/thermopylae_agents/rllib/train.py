"""PPO on Ray RLlib for the co-op game and the duel: configs, the training loop, checkpoints and export.

The configs are in [`thermopylae_agents.rllib.config`][]; the command line is ``thermopylae rllib``
([`thermopylae_agents.cli.rllib`][]):

    thermopylae rllib train --game coop --num-env-runners 2 --envs-per-runner 64 --run-dir runs/rllib_coop
    thermopylae rllib train --game duel --mode self-play --run-dir runs/rllib_duel
    thermopylae rllib sweep --num-samples 8 --run-dir runs/rllib_sweep
    thermopylae rllib train --address auto ...   # on an existing Ray cluster

Without ``--address`` the script starts a local Ray (``--num-cpus``, default: all cores) and stops it at
the end; with ``--address`` (``auto``, ``HOST:6379`` or ``ray://HOST:10001``) it joins a running cluster.
Checkpoints (``Algorithm.save_to_path``) go to ``STORAGE/checkpoints/iter_NNNNN`` and ``STORAGE/final``;
the trained policies are exported to ``STORAGE/<module>.npz``
([`thermopylae_agents.policies.rllib_policy`][], loadable without Ray by
[`load_rllib_agent`][thermopylae_agents.policies.rllib_policy.load_rllib_agent]) and evaluated on fixed seeded
deals; ``STORAGE/summary.json`` records the run. RLlib checkpoints contain pickled objects: restore only
checkpoints you made.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thermopylae_agents.evaluation.games import evaluate
from thermopylae_agents.policies.rllib_policy import export_rl_module, load_rllib_agent

# COOP_DEFAULTS .. duel_config: benchmarks/rllib_scaling.py imports them from here
from thermopylae_agents.rllib.config import (  # noqa: F401
    COOP_DEFAULTS,
    DUEL_DEFAULTS,
    coop_config,
    duel_config,
)

__all__ = [
    "start_ray",
    "train",
    "export_policies",
    "evaluate_policy",
    "TrainReport",
]

_RETURN_KEY = "episode_return_mean"


def start_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Join the cluster at ``address`` or start a local Ray with ``num_cpus``; returns whether this call
    started (or joined) Ray, i.e. whether the caller should shut it down. Does nothing when Ray runs."""
    import ray  # extra: rllib

    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False)
    return True


# ------------------------------------------------------------------------------------------------ training
def _sampled(result: Mapping[str, Any]) -> int:
    runners = result.get("env_runners", {})
    return int(result.get("num_env_steps_sampled_lifetime", runners.get("num_env_steps_sampled_lifetime", 0)))


def _returns(result: Mapping[str, Any]) -> dict[str, float]:
    """Mean episode return, overall (``"all"``) and per module (multi-agent), over recent episodes."""
    runners = result.get("env_runners", {})
    out: dict[str, float] = {}
    if _RETURN_KEY in runners:
        out["all"] = float(runners[_RETURN_KEY])
    for module_id, value in (runners.get("module_episode_returns_mean") or {}).items():
        out[str(module_id)] = float(value)
    return out


@dataclass
class TrainReport:
    """What [`train`][thermopylae_agents.rllib.train.train] did: iterations, steps, time, checkpoints and the
    exported policies."""

    iterations: int = 0
    timesteps: int = 0
    seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    exported: dict[str, str] = field(default_factory=dict)


def train(
    config: Any,
    total_timesteps: int,
    storage_path: str | os.PathLike[str],
    env_ids: Mapping[str, str],
    max_iterations: int | None = None,
    checkpoint_every: int = 10,
    log: Callable[[str], None] | None = print,
    on_iteration: Callable[[Any, Mapping[str, Any]], None] | None = None,
) -> TrainReport:
    """Build the algorithm of ``config``, train until ``total_timesteps`` env steps (or ``max_iterations``),
    checkpoint every ``checkpoint_every`` iterations (0: only at the end) and export the modules of
    ``env_ids`` (module id -> Gymnasium id of the game it plays) to ``storage_path/<module>.npz``."""
    storage = Path(storage_path).resolve()
    storage.mkdir(parents=True, exist_ok=True)
    report = TrainReport()
    algo = config.build_algo()
    start = time.perf_counter()
    try:
        while report.timesteps < total_timesteps and (
            max_iterations is None or report.iterations < max_iterations
        ):
            result = algo.train()
            report.iterations += 1
            report.timesteps = _sampled(result)
            elapsed = time.perf_counter() - start
            row = {
                "iteration": report.iterations,
                "timesteps": report.timesteps,
                "seconds": round(elapsed, 3),
                "returns": _returns(result),
            }
            report.history.append(row)
            if on_iteration is not None:
                on_iteration(algo, result)
            if log is not None:
                rets = " ".join(f"{k}={v:+.3f}" for k, v in row["returns"].items())
                log(
                    f"iter {report.iterations:4d}  steps {report.timesteps:9d}  "
                    f"{report.timesteps / max(elapsed, 1e-9):8.0f} steps/s  return {rets}"
                )
            if checkpoint_every and report.iterations % checkpoint_every == 0:
                path = algo.save_to_path(str(storage / "checkpoints" / f"iter_{report.iterations:05d}"))
                report.checkpoints.append(str(path))
        report.seconds = time.perf_counter() - start
        report.checkpoints.append(str(algo.save_to_path(str(storage / "final"))))
        report.exported = export_policies(algo, storage, env_ids)
    finally:
        algo.stop()
    return report


def export_policies(
    algo: Any, directory: str | os.PathLike[str], env_ids: Mapping[str, str]
) -> dict[str, str]:
    """Export each module of ``env_ids`` (module id -> Gymnasium id) of ``algo`` to ``directory/<id>.npz``."""
    out = {}
    for module_id, env_id in env_ids.items():
        module = algo.get_module(module_id)
        out[module_id] = str(
            export_rl_module(module, Path(directory) / f"{module_id}.npz", env_id, module_id)
        )
    return out


def evaluate_policy(
    path: str | os.PathLike[str],
    env_id: str,
    games: int,
    base_seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Win rate of the exported policy at ``path`` on ``games`` fixed seeded deals (seeds ``base_seed`` ..),
    with its 95% Wilson interval, through [`thermopylae_agents.evaluation.games.evaluate`][]."""
    agent = load_rllib_agent(path)
    result = evaluate(env_id, [agent], games, base_seed, env_kwargs=dict(env_kwargs or {}))[0]
    return {
        "env_id": env_id,
        "policy": os.fspath(path),
        "games": result.games,
        "wins": result.wins,
        "win_rate": result.win_rate,
        "ci95": list(result.ci95),
        "base_seed": base_seed,
    }
