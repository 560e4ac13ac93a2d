"""Win rate against wall seconds for each PPO learner, from the same warm start, on one machine in one run.

    python benchmarks/learning_curves.py                         # sb3 and fast, seeds 0 and 1, 5M steps
    python benchmarks/learning_curves.py --seeds 0 --steps 655360 --report-games 1000   # a short look

A developer script, not a test. For each seed the co-op config's warm start is made once (behaviour
cloning of the heuristic, as ``thermopylae train coop`` makes it) and every learner starts from a copy of
it: ``sb3`` (sb3-contrib's own loop with the config's recipe) and ``fast`` (the fast learner with the
config's fast recipe), each on ``--threads`` torch threads. While a learner trains, its greedy policy
plays ``--eval-games`` fixed deals every ``--eval-every`` steps (on the native vector engine; the time of
these evaluations is not counted), giving win rate against training wall seconds. At the end each
trained policy plays the run's ``--report-games`` report deals (those of ``thermopylae train coop``'s
final report for that seed), and the table gives its win rate with the 95% interval, the wall seconds,
and the seconds until its curve first reached ``--target`` (default 30%).

Writes ``benchmarks/results/learning_curves.json`` (``--json``: every curve point, the report win rates,
the configuration, the machine and its load) and the plot ``docs/images/learning_curves.png``
(``--plot``).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVAL_SEED = 30_000_000  # the curve's deals: apart from training, warm start and report seeds
LEARNERS = ("sb3", "fast")


def hyperparameters(learner: str, threads: int) -> Any:
    from thermopylae_agents.training import config as cfg

    data = cfg.resolve_config("coop", learner=learner, threads=threads)
    return cfg.Config(data[cfg.COOP_ID])


def warm_policy(seed: int, threads: int) -> tuple[dict, dict]:
    """The warm start of ``seed`` (the policy's state dict) and what it measured."""
    from thermopylae_agents.training.envs import build_vec_env
    from thermopylae_agents.training.imitation import warm_start
    from thermopylae_agents.training.ppo import build_model
    from thermopylae_agents.training.runs import setup_torch

    hp = hyperparameters("sb3", threads)
    setup_torch(seed)
    env = build_vec_env("thermopylae/Coop-v0", hp.plain("env_kwargs", {}), 8, seed, "native")
    model = build_model("maskable_ppo", env, hp, seed, None, "cpu")
    stats = warm_start(model, "thermopylae/Coop-v0", hp.plain("env_kwargs", {}), hp["bc"], seed, bar=False)
    return copy.deepcopy(model.policy.state_dict()), {k: v for k, v in stats.items() if k != "history"}


def greedy_win_rate(policy: Any, games: int, seed: int) -> float:
    """The greedy policy's win rate on ``games`` fixed deals of the native vector engine."""
    import numpy as np
    import torch as th

    from thermopylae_env.coop.vector import CoopVectorEnv

    env = CoopVectorEnv(num_envs=games, autoreset_mode="SameStep")
    obs, _ = env.reset(seed=seed)
    finished = np.zeros(games, bool)
    won = np.zeros(games, bool)
    while not finished.all():
        with th.no_grad():
            actions, _ = policy.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, terminated, _, infos = env.step(actions)
        first = terminated & ~finished
        success = np.asarray(infos.get("final_info", {}).get("is_success", np.zeros(games)), bool)
        won[first] = success[first]
        finished |= terminated
    env.close()
    return float(won.mean())


def train_curve(learner: str, seed: int, state: dict, args: argparse.Namespace) -> dict[str, Any]:
    """``learner`` from the warm start ``state`` for ``args.steps`` steps, with its curve."""
    from stable_baselines3.common.callbacks import BaseCallback

    from thermopylae_agents.training.envs import build_vec_env
    from thermopylae_agents.training.ppo import build_model
    from thermopylae_agents.training.runs import setup_torch
    from thermopylae_env.threads import configure_torch

    hp = hyperparameters(learner, args.threads)
    setup_torch(seed)
    env = build_vec_env("thermopylae/Coop-v0", hp.plain("env_kwargs", {}), int(hp["n_envs"]), seed, "native")
    model = build_model("maskable_ppo", env, hp, seed, None, "cpu")
    model.policy.load_state_dict(state)
    configure_torch(args.threads)
    points: list[dict[str, float]] = []

    class Curve(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.excluded = 0.0
            self.start = 0.0
            self.next = 0

        def measure(self) -> None:
            began = time.perf_counter()
            seconds = began - self.start - self.excluded
            rate = greedy_win_rate(self.model.policy, args.eval_games, EVAL_SEED)
            self.excluded += time.perf_counter() - began
            points.append({"steps": int(self.model.num_timesteps), "seconds": round(seconds, 2),
                           "win_rate": rate})
            self.next += args.eval_every

        def _on_training_start(self) -> None:
            self.start = time.perf_counter()
            self.measure()

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            if self.model.num_timesteps >= self.next:
                self.measure()

    curve = Curve()
    began = time.perf_counter()
    model.learn(args.steps, callback=curve)
    wall = time.perf_counter() - began - curve.excluded
    if points[-1]["steps"] != model.num_timesteps:
        curve.measure()
    env.close()
    return {"learner": learner, "seed": seed, "model": model, "train_seconds": round(wall, 1),
            "steps": int(model.num_timesteps), "curve": points,
            "recipe": {k: hp.plain(k) for k in ("n_envs", "n_steps", "batch_size", "n_epochs") if k in hp}
            | {"precision": getattr(model, "precision", "float32")}}


def report_win_rate(model: Any, seed: int, games: int) -> dict[str, Any]:
    """The trained policy on the report deals of ``seed`` (``thermopylae train coop``'s final report)."""
    from thermopylae_agents.evaluation.games import play_games
    from thermopylae_agents.evaluation.stats import wilson_interval
    from thermopylae_agents.policies.frozen_policy import FrozenPolicy

    base_seed = 20_000_000 + seed * 100_000
    records = play_games("thermopylae/Coop-v0", FrozenPolicy(model, name="ppo"), games, base_seed=base_seed,
                         env_kwargs={"num_players": 1})
    wins = sum(int(r.won) for r in records)
    low, high = wilson_interval(wins, games)
    return {"games": games, "wins": wins, "win_rate": wins / games, "ci_low": low, "ci_high": high,
            "base_seed": base_seed}


def seconds_to(points: list[dict[str, float]], target: float) -> float | None:
    """Training seconds of the first curve point at or above ``target`` (None if none is)."""
    return next((p["seconds"] for p in points if p["win_rate"] >= target), None)


def plot(runs: list[dict[str, Any]], target: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = {"sb3": "tab:blue", "fast": "tab:orange"}
    for run in runs:
        xs = [p["seconds"] for p in run["curve"]]
        ys = [100 * p["win_rate"] for p in run["curve"]]
        ax.plot(xs, ys, color=colors.get(run["learner"], "gray"), marker=".",
                linestyle="-" if run["seed"] == runs[0]["seed"] else "--",
                label=f"{run['learner']} seed {run['seed']}")
    ax.axhline(100 * target, color="gray", linewidth=0.8, linestyle=":")
    ax.set_xlabel("training wall seconds (evaluations excluded)")
    ax.set_ylabel("greedy win rate, %")
    ax.set_title("Co-op solo: win rate against training time, same warm start")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="training seeds")
    parser.add_argument("--learners", nargs="+", choices=LEARNERS, default=list(LEARNERS))
    parser.add_argument("--steps", type=int, default=5_013_504, help="env steps per learner (the main job's)")
    parser.add_argument("--eval-every", type=int, default=327_680, help="steps between curve points")
    parser.add_argument("--eval-games", type=int, default=2000, help="deals per curve point")
    parser.add_argument("--report-games", type=int, default=10_000, help="report deals per trained policy")
    parser.add_argument("--target", type=float, default=0.30, help="the win rate whose time the table gives")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the CPU count)")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "learning_curves.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "images" / "learning_curves.png")
    args = parser.parse_args(argv)
    from thermopylae_agents.training.kernels import pin_kernels

    pin_kernels()
    from thermopylae_env.threads import configure_environment

    configure_environment()  # passive OpenMP waiting: before torch loads its OpenMP runtime
    import os

    from thermopylae_agents.policies.provenance import Measurement
    from thermopylae_agents.training.fast_ppo import reuse_freed_memory

    reuse_freed_memory()
    args.threads = args.threads or os.cpu_count() or 1
    clock = Measurement()
    runs: list[dict[str, Any]] = []
    warm: dict[int, dict] = {}
    for seed in args.seeds:
        state, warm[seed] = warm_policy(seed, args.threads)
        for learner in args.learners:
            run = train_curve(learner, seed, state, args)
            run["report"] = report_win_rate(run.pop("model"), seed, args.report_games)
            run["seconds_to_target"] = seconds_to(run["curve"], args.target)
            runs.append(run)
            r = run["report"]
            print(f"seed {seed} {learner:<5} {run['steps']:,} steps in {run['train_seconds']:,.0f} s: "
                  f"{100 * r['win_rate']:.2f}% [{100 * r['ci_low']:.2f}, {100 * r['ci_high']:.2f}] of "
                  f"{r['games']:,} report deals; {args.target:.0%} after {run['seconds_to_target']} s",
                  flush=True)
    doc = {
        "title": "Co-op solo learning curves: win rate against training wall seconds, per learner",
        **clock.header(__file__, argv),
        "config": {"seeds": args.seeds, "learners": args.learners, "steps": args.steps,
                   "eval_every": args.eval_every, "eval_games": args.eval_games, "eval_seed": EVAL_SEED,
                   "report_games": args.report_games, "target": args.target, "torch_threads": args.threads},
        "warm_start": warm,
        "runs": runs,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    plot(runs, args.target, args.plot)
    print(f"wrote {args.json} and {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
