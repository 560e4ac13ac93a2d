"""RLlib scaling: sampling throughput with 1 and 2 env runners, the learner's update throughput, and a
projection of steps/s and wall time of the default co-op and duel training on 4, 16 and 64 workers.

Each phase of a PPO iteration is timed on its own, as RLlib's PPO runs it: parallel sampling of one train
batch from the env runners (``synchronous_parallel_sample``), the learner update on it
(``LearnerGroup.update``: GAE, ``num_epochs`` passes of minibatch SGD) and the weight sync back to the
runners. Each is repeated (``--repeats``, after one warm-up) and the median is kept. The bytes one step
costs on the wire are measured as the pickled size of the sampled episodes.

Projection (PPO is synchronous: a runner samples, then waits for the learner): with ``N`` runners of the
measured one-runner rate ``r`` and a learner of rate ``U`` on a batch of ``B`` steps, an iteration takes
``B / (N r) + B / U + sync`` seconds, so steps/s = ``B`` / that, bounded by the learner as ``N`` grows.
It assumes each runner gets a CPU of its own (a node per 16 runners, say) and a single CPU learner as
measured here; the driver must also take in ``steps/s x bytes/step`` from the network.

    python benchmarks/rllib_scaling.py                 # writes benchmarks/results/rllib_scaling.json
    python benchmarks/rllib_scaling.py --quick         # smaller batches, one repeat (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORKERS = (4, 16, 64)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _median_time(fn: Any, repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def measure(config: Any, batch: int, repeats: int, learn: bool) -> dict[str, Any]:
    """Time sampling ``batch`` env steps from the config's runners (and, with ``learn``, one learner update
    on them and the weight sync) on an algorithm built from ``config``."""
    from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, NUM_MODULE_STEPS_TRAINED_LIFETIME

    algo = config.build_algo()
    try:
        group = algo.env_runner_group

        def sample() -> list:
            return synchronous_parallel_sample(
                worker_set=group, max_env_steps=batch, _uses_new_env_runners=True
            )

        sample()  # warm-up: first forward passes, the numba kernels' load from cache
        seconds, episodes = _median_time(sample, repeats)
        steps = sum(e.env_steps() for e in episodes)
        row: dict[str, Any] = {
            "batch": batch,
            "sampled_steps": steps,
            "sample_seconds": round(seconds, 4),
            "sample_steps_per_s": round(steps / seconds, 1),
            "bytes_per_step": round(len(pickle.dumps(episodes)) / steps, 1),
        }
        if learn:
            cfg = algo.config

            def update() -> Any:
                return algo.learner_group.update(
                    episodes=episodes,
                    timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: steps, NUM_MODULE_STEPS_TRAINED_LIFETIME: 0},
                    num_epochs=cfg.num_epochs,
                    minibatch_size=cfg.minibatch_size,
                    shuffle_batch_per_epoch=cfg.shuffle_batch_per_epoch,
                )

            def sync() -> None:
                group.sync_weights(from_worker_or_learner_group=algo.learner_group, inference_only=True)

            update()  # warm-up
            learn_seconds, _ = _median_time(update, repeats)
            sync_seconds, _ = _median_time(sync, repeats)
            row.update(
                {
                    "learn_seconds": round(learn_seconds, 4),
                    "learn_steps_per_s": round(steps / learn_seconds, 1),
                    "num_epochs": cfg.num_epochs,
                    "minibatch_size": cfg.minibatch_size,
                    "sync_seconds": round(sync_seconds, 4),
                }
            )
        return row
    finally:
        algo.stop()


def project(
    per_runner: float, learner: float, sync: float, batch: int, total: int, bytes_per_step: float
) -> list[dict[str, Any]]:
    """steps/s and wall time of ``total`` steps on 4, 16, 64 runners (see the module docstring)."""
    rows = []
    for n in WORKERS:
        sample_s, learn_s = batch / (n * per_runner), batch / learner
        rate = batch / (sample_s + learn_s + sync)
        rows.append(
            {
                "workers": n,
                "steps_per_s": round(rate, 1),
                "wall_hours": round(total / rate / 3600, 3),
                "sample_share": round(sample_s / (sample_s + learn_s + sync), 3),
                "learner_share": round(learn_s / (sample_s + learn_s + sync), 3),
                "driver_ingest_MB_per_s": round(rate * bytes_per_step / 1e6, 2),
                "limit": "env runners" if sample_s > learn_s else "learner",
            }
        )
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    from thermopylae_agents.rllib.config import COOP_DEFAULTS, DUEL_DEFAULTS, coop_config, duel_config

    quick = args.quick
    coop = COOP_DEFAULTS if not quick else replace(COOP_DEFAULTS, train_batch_size=2048, minibatch_size=512)
    duel = DUEL_DEFAULTS if not quick else replace(DUEL_DEFAULTS, train_batch_size=1024, minibatch_size=256)
    repeats = 1 if quick else args.repeats
    cases = {
        "coop_native": lambda r: (coop_config(coop, r, args.coop_envs, "native"), coop.train_batch_size),
        "coop_sync": lambda r: (
            coop_config(coop, r, args.sync_envs, "sync"),
            max(coop.train_batch_size // 4, 512),
        ),
        "duel_self_play": lambda r: (
            duel_config("self-play", duel, r, args.duel_envs),
            duel.train_batch_size,
        ),
        "duel_greek_vs_heuristic": lambda r: (
            duel_config("greek", duel, r, args.duel_envs),
            duel.train_batch_size,
        ),
    }
    measured: dict[str, dict[str, Any]] = {}
    for name, make in cases.items():
        if args.only and name not in args.only:
            continue
        measured[name] = {}
        for runners in (1, 2):
            config, batch = make(runners)
            learn = runners == 2 and name != "coop_sync"  # the learner does not depend on the sampler
            load = _load()
            row = measure(config, batch, repeats, learn)
            row["load_before"] = load
            row["load_after"] = _load()
            measured[name][str(runners)] = row
            print(
                f"{name:26s} runners={runners} {row['sample_steps_per_s']:9.0f} sampled steps/s"
                + (f"  learner {row['learn_steps_per_s']:8.0f} steps/s" if learn else ""),
                flush=True,
            )
    projections = {}
    budgets = {
        "coop_native": (coop, "coop"),
        "duel_self_play": (duel, "duel"),
        "duel_greek_vs_heuristic": (duel, "duel"),
    }
    for name, (settings, _) in budgets.items():
        if name not in measured:
            continue
        one, two = measured[name]["1"], measured[name]["2"]
        projections[name] = {
            "total_timesteps": settings.total_timesteps,
            "train_batch_size": settings.train_batch_size,
            "per_runner_steps_per_s": one["sample_steps_per_s"],
            "learner_steps_per_s": two["learn_steps_per_s"],
            "two_runner_efficiency": round(two["sample_steps_per_s"] / (2 * one["sample_steps_per_s"]), 3),
            "rows": project(
                one["sample_steps_per_s"],
                two["learn_steps_per_s"],
                two["sync_seconds"],
                settings.train_batch_size,
                settings.total_timesteps,
                two["bytes_per_step"],
            ),
        }
    return {
        "benchmark": "rllib_scaling",
        "quick": quick,
        "repeats": repeats,
        "config": {
            "coop": asdict(coop),
            "duel": asdict(duel),
            "coop_envs_per_runner": args.coop_envs,
            "sync_envs_per_runner": args.sync_envs,
            "duel_envs_per_runner": args.duel_envs,
            "num_cpus": args.num_cpus,
            "torch_threads": args.torch_threads,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_at_start": args.load0,
            "load_at_end": _load(),
            "note": args.note,
        },
        "measured": measured,
        "projection": projections,
    }


def print_tables(result: dict[str, Any]) -> None:
    print("\nmeasured (median of repeats; steps = env steps)")
    print(
        f"{'case':26s} {'runners':>7s} {'batch':>6s} {'sample st/s':>11s} {'learn st/s':>10s} "
        f"{'sync s':>7s} {'B/step':>7s} {'load':>16s}"
    )
    for name, rows in result["measured"].items():
        for runners, row in rows.items():
            learn = f"{row['learn_steps_per_s']:10.0f}" if "learn_steps_per_s" in row else f"{'-':>10s}"
            sync = f"{row['sync_seconds']:7.3f}" if "sync_seconds" in row else f"{'-':>7s}"
            print(
                f"{name:26s} {runners:>7s} {row['batch']:6d} {row['sample_steps_per_s']:11.0f} {learn} "
                f"{sync} {row['bytes_per_step']:7.0f} {str(row['load_before']):>16s}"
            )
    print("\nprojection (one CPU learner, one CPU per runner, PPO synchronous)")
    print(
        f"{'case':26s} {'workers':>7s} {'steps/s':>9s} {'wall h':>8s} {'limit':>12s} {'learner %':>9s} "
        f"{'ingest MB/s':>11s}"
    )
    for name, proj in result["projection"].items():
        for row in proj["rows"]:
            print(
                f"{name:26s} {row['workers']:7d} {row['steps_per_s']:9.0f} {row['wall_hours']:8.2f} "
                f"{row['limit']:>12s} {100 * row['learner_share']:9.0f} {row['driver_ingest_MB_per_s']:11.2f}"
            )


def main(argv: list[str] | None = None) -> int:
    from thermopylae_env.threads import configure_environment

    # The thread settings of the package's entry points (passive OpenMP waiting, one OpenBLAS thread), as
    # the measurements were taken: before torch is imported or a parallel kernel runs, whose OpenMP
    # runtime reads them once, when it loads.
    configure_environment()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default="benchmarks/results/rllib_scaling.json")
    parser.add_argument("--quick", action="store_true", help="small batches, one repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray")
    parser.add_argument("--coop-envs", type=int, default=64, help="co-op games per runner (native engine)")
    parser.add_argument("--sync-envs", type=int, default=16, help="single co-op envs per runner (sync)")
    parser.add_argument("--duel-envs", type=int, default=16, help="duel games per runner")
    parser.add_argument("--only", nargs="*", default=None, help="cases to run (default: all)")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads of the learner")
    parser.add_argument("--note", default="", help="free text on the machine state, stored in the JSON")
    args = parser.parse_args(argv)
    args.load0 = _load()
    import ray
    import torch  # noqa: F401  (configure_torch sets the threads of an imported torch)

    from thermopylae_env.threads import configure_torch

    # The learner runs in this process, as in `thermopylae rllib` (--torch-threads 1).
    configure_torch(args.torch_threads)

    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        result = run(args)
    finally:
        ray.shutdown()
    print_tables(result)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
