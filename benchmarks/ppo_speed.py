"""Training speed of the single-file PPO (``thermopylae ppo-native``) beside SB3's MaskablePPO, same env,
same recipe, same budget, in one run.

    python benchmarks/ppo_speed.py                         # 10 rollouts x 3 repeats each: minutes
    python benchmarks/ppo_speed.py --rollouts 2 --repeats 1 --json /tmp/look.json   # a smoke run

A developer script, not a test. Both learners train on the co-op game (``thermopylae/Coop-v0``, the
numba engine) with the shipped co-op recipe (``agents/thermopylae_agents/configs/coop.yaml``: 256 games
x 64 steps per rollout, batch 4096, 2 epochs, actor [128, 128] and critic [64, 64] with tanh over the
observation plus the fight odds, one torch thread, no warm start) for ``--rollouts`` whole rollouts:

* ``ppo-native``: ``thermopylae_agents.training.ppo_native.train`` on ``CoopVectorEnv`` (no
  evaluation, no TensorBoard);
* ``sb3 MaskablePPO``: ``learn()`` of the model ``thermopylae_agents.training.build_model`` builds on the
  SB3 adapter ``CoopSB3VecEnv`` (what ``thermopylae train coop`` trains on).

Each learner warms its engine up outside the timer. The learners alternate, ``--repeats`` times each
(the first learner of a repeat alternates too, so that a change of the machine's load falls on both);
the table shows the medians: steps per wall second and per CPU second of the whole training, steps per
second of collection alone, and the seconds of gradient updates per rollout. The JSON (default
``benchmarks/ppo_speed.json``) holds every repeat, the configuration, the machine (CPU count, load
averages at the start and the end, versions) and the git commit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = ROOT / "benchmarks" / "ppo_speed.json"
SEED = 0


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def run_native(rollouts: int, seed: int) -> dict:
    """``ppo-native``'s defaults (the co-op recipe) for ``rollouts`` rollouts."""
    from thermopylae_agents.training.ppo_native import Args, train

    defaults = Args()
    steps = rollouts * defaults.num_envs * defaults.num_steps
    with tempfile.TemporaryDirectory() as run_dir:
        summary = train(Args(total_timesteps=steps, eval_games=0, seed=seed, run_dir=run_dir))
    collect_s = summary["env_steps"] / summary["collection_steps_per_s"]
    return {
        "steps": summary["env_steps"],
        "steps_per_s": summary["steps_per_s"],
        "cpu_steps_per_s": summary["cpu_steps_per_s"],
        "collect_steps_per_s": summary["collection_steps_per_s"],
        "update_s_per_rollout": (summary["train_seconds"] - collect_s) / rollouts,
    }


def run_sb3(rollouts: int, seed: int) -> dict:
    """``learn()`` of MaskablePPO with the co-op config for ``rollouts`` rollouts (as
    ``benchmarks/benchmark.py --ppo-only`` times it)."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    from thermopylae_agents import training

    data = training.resolve_config("coop")
    hp = training.Config(data)[training.COOP_ID]
    algo, n = data["run"]["algo"], int(hp["n_envs"])
    training.setup_torch(seed)  # one torch thread and the seeds, as a training run starts
    env = training.build_vec_env(training.COOP_ID, hp.plain("env_kwargs", {}), n, seed, str(hp["vec"]))
    env.reset()  # warm-up outside the timer: the numba engine loads its kernels on first use
    env.step(get_action_masks(env).argmax(1))
    env.seed(seed)
    model = training.build_model(algo, env, hp, seed, None, "cpu")
    spent = {"collect": 0.0, "train": 0.0}

    def timed(name: str, fn: Callable) -> Callable:
        def inner(*args, **kwargs):  # noqa: ANN202
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start

        return inner

    model.collect_rollouts = timed("collect", model.collect_rollouts)
    model.train = timed("train", model.train)
    steps = rollouts * n * int(hp["n_steps"])
    w0, c0 = _clock()
    model.learn(total_timesteps=steps, use_masking=True)
    w1, c1 = _clock()
    env.close()
    done = int(model.num_timesteps)
    return {
        "steps": done,
        "steps_per_s": done / (w1 - w0),
        "cpu_steps_per_s": done / (c1 - c0),
        "collect_steps_per_s": done / spent["collect"],
        "update_s_per_rollout": spent["train"] / rollouts,
    }


LEARNERS = {"ppo-native": run_native, "sb3 MaskablePPO": run_sb3}


def recipe() -> dict:
    """The settings both learners share, read from each (so the JSON shows they agree)."""
    from thermopylae_agents import training
    from thermopylae_agents.training.ppo_native import Args

    hp = training.Config(training.resolve_config("coop"))[training.COOP_ID]
    native = Args()
    return {
        "env_id": "thermopylae/Coop-v0",
        "sb3": {"n_envs": int(hp["n_envs"]), "n_steps": int(hp["n_steps"]),
                "batch_size": int(hp["batch_size"]), "n_epochs": int(hp["n_epochs"]),
                "learning_rate": float(hp["learning_rate"]),
                "ent_coef": float(hp["ent_coef"]), "policy_kwargs": hp.plain("policy_kwargs", {})},
        "native": {"num_envs": native.num_envs, "num_steps": native.num_steps,
                   "minibatch_size": native.num_envs * native.num_steps // native.num_minibatches,
                   "update_epochs": native.update_epochs, "learning_rate": native.learning_rate,
                   "ent_coef": native.ent_coef, "net": "actor [128, 128], critic [64, 64], tanh, fight odds"},
    }


def _load() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _commit() -> str | None:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or None


def table(medians: dict[str, dict]) -> str:
    base = medians["sb3 MaskablePPO"]["steps_per_s"]
    lines = [f"{'learner':<16} {'steps/s':>9} {'CPU steps/s':>12} {'collect steps/s':>16} "
             f"{'update s/rollout':>17} {'vs SB3':>7}"]
    for name, row in medians.items():
        lines.append(f"{name:<16} {row['steps_per_s']:>9,.0f} {row['cpu_steps_per_s']:>12,.0f} "
                     f"{row['collect_steps_per_s']:>16,.0f} {row['update_s_per_rollout']:>17.3f} "
                     f"{row['steps_per_s'] / base:>6.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from thermopylae_env.threads import configure_environment

    # The thread settings of the package's entry points (passive OpenMP waiting, one OpenBLAS thread), as
    # the measurements were taken: before torch is imported or a parallel kernel runs, whose OpenMP
    # runtime reads them once, when it loads.
    configure_environment()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=10, help="rollouts (256 x 64 steps) per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each learner (the table: medians)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    args = parser.parse_args(argv)
    if args.rollouts < 1 or args.repeats < 1:
        parser.error("--rollouts and --repeats must be at least 1")
    start, load_start = time.time(), _load()
    runs: list[dict] = []
    for repeat in range(args.repeats):
        order = list(LEARNERS) if repeat % 2 == 0 else list(reversed(LEARNERS))
        for name in order:
            result = LEARNERS[name](args.rollouts, args.seed) | {"learner": name, "repeat": repeat,
                                                                 "load_before": _load()}
            runs.append(result)
            print(f"repeat {repeat + 1}/{args.repeats}  {name:<16} {result['steps_per_s']:,.0f} steps/s",
                  flush=True)
    keys = ("steps_per_s", "cpu_steps_per_s", "collect_steps_per_s", "update_s_per_rollout")
    medians = {name: {key: statistics.median(r[key] for r in runs if r["learner"] == name) for key in keys}
               for name in LEARNERS}
    print(table(medians))
    import numpy
    import torch

    doc = {
        "title": "PPO training speed: ppo-native beside SB3 MaskablePPO (co-op recipe, same budget)",
        "command": " ".join([Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start)),
        "commit": _commit(),
        "config": {"rollouts": args.rollouts, "repeats": args.repeats, "seed": args.seed,
                   "steps_per_run": runs[0]["steps"], "torch_threads": 1, "recipe": recipe()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "numpy": numpy.__version__,
                    "torch": torch.__version__,
                    "load_average_at_start": load_start, "load_average_at_end": _load()},
        "seconds": time.time() - start,
        "medians": medians,
        "runs": runs,
    }
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
