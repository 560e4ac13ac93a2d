"""Training speed of every PPO learner beside sb3-contrib's MaskablePPO, same game, same budget, one run.

    python benchmarks/ppo_speed.py                          # co-op: 10 rollouts x 3 repeats of each learner
    python benchmarks/ppo_speed.py --game duel-greek        # a duel side against the built-in heuristic
    python benchmarks/ppo_speed.py --game selfplay          # the Greek against a frozen Persian snapshot
    python benchmarks/ppo_speed.py --rollouts 2 --repeats 1 --json /tmp/look.json   # a smoke run

A developer script, not a test. The learners (``--learners``, default all of the game's):

* ``sb3``: sb3-contrib's own ``MaskablePPO.learn`` on the shipped config's recipe (``--learner sb3``);
* ``fast``: [`FastMaskablePPO`][thermopylae_agents.training.fast_ppo.FastMaskablePPO] on the shipped
  config (``--learner fast``: its rollout shape and precision);
* ``fast-sb3-recipe``: the fast learner on exactly the sb3 learner's recipe (float32), which separates
  what the lean loop gains from what the fast recipe's settings gain;
* ``ppo-native`` (co-op only): the single-file CleanRL-style PPO (``thermopylae ppo-native``);
* ``sb3@1``: sb3-contrib's loop on one torch thread (``NAME@N`` runs any learner on ``N`` threads), the
  count the project's training used before threads were measured.

Every learner trains a fresh network (no warm start) for ``--rollouts`` whole rollouts after one warm-up
rollout outside the clock (the engines load their compiled kernels then), on ``--threads`` torch threads
(the same for all). The learners alternate, ``--repeats`` times each, and the first learner of a repeat
alternates too, so a change of the machine's load falls on all of them; the table shows the medians:
env steps per wall second and per CPU second, steps per second of collection alone, update seconds per
rollout, and the ratio to ``sb3``.

Floating-point work: the table also counts the multiply-adds of one env step (the rollout's forward pass
plus ``n_epochs`` forward and backward passes of the update: weight gradients of every layer, input
gradients of all but the first) for the dense network the recipe describes and for the lean path the
fast learner runs (the odds tables instead of the 220 odds columns), and divides the lean work per second
by the machine's matrix-product peak measured in the same run (a large product in float32 and in
bfloat16 on ``--threads`` threads): how close the learner runs to what this machine's cores can do.

On a shared machine: ``--busy N`` starts N processes that spin on a CPU for the whole measurement (as
other trainings beside this one would), killed at the end; ``NAME@1`` rows show a learner on one torch
thread, the count a training's threads setting keeps when the other processes leave no core free.

The JSON (default ``benchmarks/results/ppo_speed_<game>.json``, ``..._busy<N>.json`` with ``--busy``;
``--json`` to choose) holds each learner's
median ``steps_per_s`` under its own name (``medians``), every repeat, the configuration, the FLOP counts,
the peaks, the machine and its load averages, and the commit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GAMES = ("coop", "duel-greek", "duel-persian", "selfplay")
SEED = 0


def _block(game: str, learner: str, threads: int, sb3_recipe: bool = False) -> tuple[Any, str]:
    """The resolved hyperparameter block of ``game`` for ``learner`` (and its env id)."""
    from thermopylae_agents.training import config as cfg

    target = "selfplay" if game == "selfplay" else game
    overrides: dict[str, Any] = {"learner": "fast" if learner.startswith("fast") else "sb3",
                                 "threads": threads}
    if learner == "sb3" or sb3_recipe:
        overrides["precision"] = "float32"
    data = cfg.resolve_config(target, **overrides)
    env_id = cfg.GREEK_ID if game == "selfplay" else cfg.ENV_IDS[game]
    hp = data[env_id]
    if sb3_recipe:  # the sb3 learner's own shape and sizes, from the sb3 resolution of the same config
        plain = cfg.resolve_config(target, learner="sb3", precision="float32", threads=threads)[env_id]
        for key in ("n_envs", "n_steps", "batch_size", "n_epochs", "learning_rate"):
            if key in plain:
                hp[key] = plain[key]
    return cfg.Config(hp), env_id


def _env(game: str, env_id: str, hp: Any, seed: int) -> Any:
    from thermopylae_agents.training.envs import build_vec_env

    kwargs = hp.plain("env_kwargs", {})
    if game == "selfplay":
        return _selfplay_env(hp, seed)
    return build_vec_env(env_id, kwargs, int(hp["n_envs"]), seed, str(hp.get("vec", "native")))


def _selfplay_env(hp: Any, seed: int) -> Any:
    """The Greek's env of self-play: the Persian is a frozen snapshot (a fresh network) in the engine."""
    from sb3_contrib import MaskablePPO

    from thermopylae_agents.policies.frozen_policy import FrozenPolicy
    from thermopylae_agents.training.config import policy_kwargs
    from thermopylae_env.duel.sb3 import DuelSB3VecEnv

    persian_env = DuelSB3VecEnv(8, side="persian", opponent="heuristic")
    snapshot = MaskablePPO("MlpPolicy", persian_env, seed=seed + 1,
                           policy_kwargs=policy_kwargs(hp.plain("policy_kwargs")))
    env = DuelSB3VecEnv(int(hp["n_envs"]), side="greek", opponent=FrozenPolicy(snapshot, "persian_gen0"))
    env.seed(seed)
    return env


def run_learner(game: str, learner: str, rollouts: int, threads: int, seed: int) -> dict[str, Any]:
    """``learn()`` of a fresh model of ``learner`` for ``rollouts`` rollouts, timed; collection and update
    timed apart."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    from thermopylae_agents.training.ppo import build_model
    from thermopylae_agents.training.runs import setup_torch
    from thermopylae_env.threads import configure_torch

    hp, env_id = _block(game, learner, threads, sb3_recipe=learner == "fast-sb3-recipe")
    setup_torch(seed)
    env = _env(game, env_id, hp, seed)
    env.reset()
    env.step(get_action_masks(env).argmax(1))
    env.seed(seed)
    model = build_model("maskable_ppo", env, hp, seed, None, "cpu")
    configure_torch(threads)
    spent = {"collect": 0.0, "train": 0.0}

    def timed(name: str, fn: Callable) -> Callable:
        def inner(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start

        return inner

    rollout = int(hp["n_envs"]) * int(hp["n_steps"])
    model.learn(rollout)  # warm-up outside the clock
    model.collect_rollouts = timed("collect", model.collect_rollouts)
    model.train = timed("train", model.train)
    before = int(model.num_timesteps)
    wall, cpu = time.perf_counter(), time.process_time()
    model.learn(rollouts * rollout, reset_num_timesteps=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    env.close()
    steps = int(model.num_timesteps) - before
    return {
        "steps": steps,
        "steps_per_s": steps / wall,
        "cpu_steps_per_s": steps / cpu,
        "collect_steps_per_s": steps / spent["collect"],
        "update_s_per_rollout": spent["train"] / rollouts,
        "recipe": _recipe(hp, model),
    }


def run_native(game: str, learner: str, rollouts: int, threads: int, seed: int) -> dict[str, Any]:
    """``thermopylae ppo-native``'s defaults (the co-op recipe) for ``rollouts`` rollouts."""
    from thermopylae_agents.training.ppo_native import Args, train

    defaults = Args()
    steps = rollouts * defaults.num_envs * defaults.num_steps
    with tempfile.TemporaryDirectory() as run_dir:
        summary = train(Args(total_timesteps=steps, eval_games=0, seed=seed, run_dir=run_dir,
                             torch_threads=threads))
    collect_s = summary["env_steps"] / summary["collection_steps_per_s"]
    return {
        "steps": summary["env_steps"],
        "steps_per_s": summary["steps_per_s"],
        "cpu_steps_per_s": summary["cpu_steps_per_s"],
        "collect_steps_per_s": summary["collection_steps_per_s"],
        "update_s_per_rollout": (summary["train_seconds"] - collect_s) / rollouts,
        "recipe": {"n_envs": defaults.num_envs, "n_steps": defaults.num_steps,
                   "batch_size": defaults.num_envs * defaults.num_steps // defaults.num_minibatches,
                   "n_epochs": defaults.update_epochs, "precision": "float32"},
    }


def _recipe(hp: Any, model: Any) -> dict[str, Any]:
    return {"n_envs": int(model.n_envs), "n_steps": int(model.n_steps), "batch_size": int(model.batch_size),
            "n_epochs": int(model.n_epochs), "learning_rate": float(hp["learning_rate"]),
            "precision": getattr(model, "precision", "float32"),
            "policy_kwargs": hp.plain("policy_kwargs", {})}


def learners_of(game: str) -> dict[str, Callable[..., dict[str, Any]]]:
    learners: dict[str, Callable[..., dict[str, Any]]] = {
        "sb3": run_learner, "fast": run_learner, "fast-sb3-recipe": run_learner}
    if game == "coop":
        learners["ppo-native"] = run_native
    return learners


# ------------------------------------------------------------------------------------ floating-point work


def step_flops(hp: Any, obs_size: int, actions: int, epochs: int) -> dict[str, float]:
    """Floating-point operations of one env step (2 per multiply-add): the dense network of the recipe,
    and the lean path (the odds tables instead of the odds columns, per minibatch)."""
    kwargs = hp.plain("policy_kwargs", {})
    arch = kwargs.get("net_arch", {"pi": [64, 64], "vf": [64, 64]})
    if isinstance(arch, list):
        arch = {"pi": arch, "vf": arch}
    fight = kwargs.get("features_extractor") == "coop_fight"
    odds_columns = 220 if fight else 0

    def macs(first_in: int) -> tuple[int, int, int]:
        forward = grad_w = grad_x = 0
        for widths, out in ((arch["pi"], actions), (arch["vf"], 1)):
            sizes = [first_in, *widths, out]
            for index, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
                forward += a * b
                grad_w += a * b
                grad_x += a * b if index else 0
        return forward, grad_w, grad_x

    def per_step(forward: float, grad_w: float, grad_x: float) -> float:
        return 2 * (forward + epochs * (forward + grad_w + grad_x))

    dense = per_step(*macs(obs_size + odds_columns))
    lean = per_step(*macs(obs_size))
    if fight:  # per minibatch: the tables (forward) and their gradient, shared by the minibatch's rows
        hidden = sum(arch["pi"][:1]) + sum(arch["vf"][:1])
        tables = 546 * 55 * hidden * 4
        batch = int(hp["batch_size"])
        lean += 2 * (tables / (int(hp["n_envs"]) * int(hp["n_steps"])) + epochs * 2 * tables / batch)
    return {"dense": dense, "lean": lean}


def matmul_peak(threads: int, seconds: float = 1.0) -> dict[str, float]:
    """GFLOP/s of a large matrix product (4096 x 1024 by 1024 x 1024) in float32 and bfloat16 on
    ``threads`` torch threads: the machine's practical peak for the learners' work."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    peaks = {}
    try:
        for dtype in (torch.float32, torch.bfloat16):
            a, b = torch.randn(4096, 1024, dtype=dtype), torch.randn(1024, 1024, dtype=dtype)
            a @ b
            count, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                a @ b
                count += 1
            peaks[str(dtype).removeprefix("torch.")] = 2 * 4096 * 1024 * 1024 * count / (
                time.perf_counter() - start) / 1e9
    finally:
        torch.set_num_threads(before)
    return peaks


# ------------------------------------------------------------------------------------------------- main


def table(medians: dict[str, dict], flops: dict[str, dict], peaks: dict[str, dict[str, float]]) -> str:
    base = medians.get("sb3", {}).get("steps_per_s")
    lines = [f"{'learner':<16} {'steps/s':>9} {'CPU steps/s':>12} {'collect/s':>10} {'update s':>9} "
             f"{'vs sb3':>7} {'GFLOP/s':>8} {'of peak':>8}"]
    for name, row in medians.items():
        work = flops[name]["lean" if name.startswith("fast") else "dense"]
        precision = row.get("precision", "float32")
        achieved = work * row["steps_per_s"] / 1e9
        peak = peaks[str(row["threads"])]
        lines.append(
            f"{name:<16} {row['steps_per_s']:>9,.0f} {row['cpu_steps_per_s']:>12,.0f} "
            f"{row['collect_steps_per_s']:>10,.0f} {row['update_s_per_rollout']:>9.3f} "
            f"{row['steps_per_s'] / base if base else float('nan'):>6.2f}x {achieved:>8.1f} "
            f"{achieved / peak[precision]:>7.0%}")
    return "\n".join(lines)


def run_all(args: argparse.Namespace, chosen: list[str], available: dict[str, Callable[..., dict[str, Any]]],
            threads: int) -> list[dict[str, Any]]:
    """Every chosen learner ``args.repeats`` times, alternating the order between repeats."""
    runs: list[dict[str, Any]] = []
    for repeat in range(args.repeats):
        order = chosen if repeat % 2 == 0 else list(reversed(chosen))
        for name in order:
            learner, _, own = name.partition("@")  # NAME@N: that learner on N torch threads
            result = available[learner](args.game, learner, args.rollouts, int(own or threads), args.seed)
            result |= {"learner": name, "threads": int(own or threads), "repeat": repeat}
            runs.append(result)
            print(f"repeat {repeat + 1}/{args.repeats}  {name:<16} {result['steps_per_s']:>9,.0f} steps/s",
                  flush=True)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--game", choices=GAMES, default="coop", help="what the learners train")
    parser.add_argument("--learners", nargs="+", default=None, help="a subset of the learners (default: all)")
    parser.add_argument("--rollouts", type=int, default=10, help="timed rollouts per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each learner (the table: medians)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the CPU count)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of every run")
    parser.add_argument("--busy", type=int, default=0,
                        help="processes that spin on a CPU beside the run, as other trainings on a shared "
                             "machine do (default: none)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the results (default: benchmarks/results/ppo_speed_<game>.json, "
                             "ppo_speed_<game>_busy<N>.json with --busy N)")
    args = parser.parse_args(argv)
    if args.rollouts < 1 or args.repeats < 1:
        parser.error("--rollouts and --repeats must be at least 1")
    if not 0 <= args.busy <= 64:
        parser.error("--busy must be in 0..64")
    from thermopylae_agents.training.kernels import pin_kernels

    pin_kernels()  # before torch and NumPy load, as scripts/train.py does
    from thermopylae_env.threads import configure_environment

    configure_environment()  # passive OpenMP waiting: before torch loads its OpenMP runtime
    import os

    from thermopylae_agents.policies.provenance import Measurement
    from thermopylae_agents.training.fast_ppo import reuse_freed_memory

    reuse_freed_memory()  # as the training entry points do, for every learner alike
    threads = args.threads or os.cpu_count() or 1
    clock = Measurement()
    available = learners_of(args.game)
    chosen = args.learners or [*available, "sb3@1"]
    unknown = sorted({name.partition("@")[0] for name in chosen} - set(available))
    if unknown:
        parser.error(f"unknown learner(s) {unknown} for {args.game}; choose from {list(available)}")
    neighbours = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        runs = run_all(args, chosen, available, threads)
    finally:
        for process in neighbours:
            process.kill()
            process.wait()
    keys = ("steps_per_s", "cpu_steps_per_s", "collect_steps_per_s", "update_s_per_rollout")
    medians = {}
    flops = {}
    for name in chosen:
        mine = [r for r in runs if r["learner"] == name]
        medians[name] = {key: statistics.median(r[key] for r in mine) for key in keys}
        medians[name]["precision"] = mine[0]["recipe"]["precision"]
        medians[name]["threads"] = mine[0]["threads"]
        learner = name.partition("@")[0]
        hp, env_id = _block(args.game, learner if learner != "ppo-native" else "sb3", threads,
                            sb3_recipe=learner == "fast-sb3-recipe")
        recipe = mine[0]["recipe"]
        obs_size, actions = (115, 72) if args.game == "coop" else (56, 21)
        merged = hp.to_dict() | {k: recipe[k] for k in ("n_envs", "n_steps", "batch_size")}
        from thermopylae_agents.training.config import Config

        flops[name] = step_flops(Config(merged), obs_size, actions, int(recipe["n_epochs"]))
    peaks = {str(count): matmul_peak(count) for count in sorted({r["threads"] for r in runs})}
    print(table(medians, flops, peaks))
    doc = {
        "title": f"PPO training speed of every learner beside sb3-contrib's MaskablePPO ({args.game})",
        **clock.header(__file__, argv),
        "config": {"game": args.game, "rollouts": args.rollouts, "repeats": args.repeats, "seed": args.seed,
                   "torch_threads": threads, "learners": chosen,
                   "busy_processes": args.busy},
        "medians": medians,
        "flops_per_step": flops,
        "matmul_peak_gflops": peaks,
        "runs": runs,
    }
    suffix = f"_busy{args.busy}" if args.busy else ""
    path = args.json or RESULTS / f"ppo_speed_{args.game.replace('-', '_')}{suffix}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
