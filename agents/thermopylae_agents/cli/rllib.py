"""``thermopylae rllib {train,sweep}``: PPO on Ray RLlib (``train --game coop|duel``) and the Ray Tune sweep
of co-op PPO (``sweep``), the ``rllib`` extra.

See [`thermopylae_agents.rllib.train`][] and [`thermopylae_agents.rllib.sweep`][].
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from thermopylae_agents.cli.args import GAMES, description, error, float_argument, game_options, int_argument
from thermopylae_agents.rllib.config import (
    COOP_DEFAULTS,
    DUEL_DEFAULTS,
    DUEL_MODES,
    PPOSettings,
    coop_config,
    duel_config,
    duel_modules,
)
from thermopylae_agents.rllib.sweep import SEARCHES, run_sweep
from thermopylae_agents.rllib.train import evaluate_policy, start_ray, train
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.threads import configure_torch

__all__ = ["add_sweep_parser", "build_parser", "main"]

# Bounds of the numeric flags: far above any run worth starting, so that a typo (an extra zero, a sign) is
# one line here instead of a crash inside Ray.
MAX_CPUS = 4096
MAX_ENVS_PER_RUNNER = 65_536
MAX_SEED = 2**31 - 1
MAX_TIMESTEPS = 10**11
MAX_ITERATIONS = 10**9
MAX_BATCH = 2**24
MAX_EPOCHS = 10_000
MAX_WIDTH = 65_536
MAX_GAMES = 10**7
MAX_TRIALS = 10**6


def _settings(args: argparse.Namespace, defaults: PPOSettings) -> PPOSettings:
    changes = {}
    for name in (
        "total_timesteps",
        "train_batch_size",
        "minibatch_size",
        "num_epochs",
        "lr",
        "entropy_coeff",
        "gamma",
    ):
        value = getattr(args, name, None)
        if value is not None:
            changes[name] = value
    if getattr(args, "hiddens", None):
        changes["hiddens"] = tuple(args.hiddens)
    settings = replace(defaults, **changes)
    settings.check()
    return settings


# Options of one game only: given for the other game they are refused; left out, they take these defaults.
COOP_ONLY = {"players": 1, "vector": "native", "backend": "auto"}
DUEL_ONLY = {"mode": "self-play"}
ENVS_PER_RUNNER = {"coop": 64, "duel": 16}


def _per_game(coop: Any, duel: Any) -> str:
    return f"{coop} co-op, {duel} duel"


def _common(parser: argparse.ArgumentParser) -> None:
    coop, duel = COOP_DEFAULTS, DUEL_DEFAULTS
    run = parser.add_argument_group("Ray and storage")
    run.add_argument(
        "--address",
        default=None,
        help="join an existing Ray cluster (auto, HOST:6379 or ray://HOST:10001); default: start a local Ray",
    )
    run.add_argument("--num-cpus", type=int_argument(1, MAX_CPUS), default=None,
                     help="CPUs of the local Ray (default: all)")
    run.add_argument("--run-dir", required=True, metavar="DIR",
                     help="the run folder: checkpoints, exported policies and summary.json")
    run.add_argument(
        "--num-env-runners",
        type=int_argument(0, MAX_CPUS),
        default=0,
        help="parallel env runners, one CPU each (0: sample in the driver)",
    )
    run.add_argument("--envs-per-runner", type=int_argument(1, MAX_ENVS_PER_RUNNER), default=None,
                     help=f"games stepped per runner (default {_per_game(*ENVS_PER_RUNNER.values())})")
    run.add_argument("--seed", type=int_argument(0, MAX_SEED), default=0,
                     help="seed of the algorithm and the env runners (default 0)")
    ppo = parser.add_argument_group("PPO (defaults: the package's recipe for the game)")
    ppo.add_argument("--total-timesteps", type=int_argument(1, MAX_TIMESTEPS), default=None,
                     help="env steps to train for (default "
                     f"{_per_game(coop.total_timesteps, duel.total_timesteps)})")
    ppo.add_argument("--max-iterations", type=int_argument(1, MAX_ITERATIONS), default=None,
                     help="stop after this many iterations")
    ppo.add_argument(
        "--train-batch-size", type=int_argument(1, MAX_BATCH), default=None,
        help=f"env steps per iteration (default {_per_game(coop.train_batch_size, duel.train_batch_size)})"
    )
    ppo.add_argument("--minibatch-size", type=int_argument(1, MAX_BATCH), default=None,
                     help=f"default {_per_game(coop.minibatch_size, duel.minibatch_size)}")
    ppo.add_argument("--num-epochs", type=int_argument(1, MAX_EPOCHS), default=None,
                     help=f"passes over each batch (default {_per_game(coop.num_epochs, duel.num_epochs)})")
    ppo.add_argument("--lr", type=float_argument(0.0, 10.0, low_open=True), default=None,
                     help=f"learning rate (default {_per_game(coop.lr, duel.lr)})")
    ppo.add_argument("--entropy-coeff", type=float_argument(0.0, 1000.0), default=None,
                     help=f"default {_per_game(coop.entropy_coeff, duel.entropy_coeff)}")
    ppo.add_argument("--gamma", type=float_argument(0.0, 1.0), default=None,
                     help=f"discount (default {_per_game(coop.gamma, duel.gamma)})")
    ppo.add_argument("--hiddens", type=int_argument(1, MAX_WIDTH), nargs="+", default=None,
                     help="MLP widths, default 128 128")
    run.add_argument(
        "--torch-threads",
        type=int_argument(1, 1024),
        default=1,
        help="torch threads of the learner in this process (the env runners use one each)",
    )
    parser.add_argument("--checkpoint-every", type=int_argument(0, MAX_ITERATIONS), default=10,
                        help="iterations between checkpoints")
    parser.add_argument(
        "--eval-games",
        type=int_argument(0, MAX_GAMES),
        default=1000,
        help="games of the final evaluation of each exported policy (0: none)",
    )
    parser.add_argument("--eval-seed", type=int_argument(0, MAX_SEED), default=0,
                        help="seed of the first evaluation deal")


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{train,sweep}")
    training = sub.add_parser("train", help="masked PPO on the co-op game or the duel (a multi-agent game)",
                              description="Masked PPO on Ray RLlib: the co-op game, or the duel as a "
                              "multi-agent game.")
    training.add_argument("--game", choices=GAMES, default="coop",
                          help="coop (default): the Spartan team; duel: one side or both (--mode)")
    _common(training)
    coop = training.add_argument_group("co-op only")
    coop.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                      help="the team size, 1..4 (default 1)")
    coop.add_argument(
        "--vector",
        choices=("native", "sync"),
        default=None,
        help="native (default): CoopVectorEnv inside each runner; sync: Gymnasium SyncVectorEnv",
    )
    coop.add_argument(
        "--backend",
        choices=("auto", "numba"),
        default=None,
        help="CoopVectorEnv backend (native vector only; default auto)",
    )
    duel = training.add_argument_group("duel only")
    duel.add_argument(
        "--mode",
        choices=DUEL_MODES,
        default=None,
        help="greek/persian: that side learns against the other's heuristic; self-play (default): both "
        "learn",
    )
    add_sweep_parser(sub)
    return parser


def _machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in load],
        "python": platform.python_version(),
    }


def _run_training(args: argparse.Namespace) -> dict[str, Any]:
    import torch  # extra: train  # noqa: F401  (configure_torch sets the threads of an imported torch)

    if args.torch_threads < 1:
        raise ValueError(f"--torch-threads must be a positive integer, got {args.torch_threads}")
    # The local learner runs in this process; more threads than free cores makes every update crawl.
    configure_torch(args.torch_threads)

    if args.game == "coop":
        settings = _settings(args, COOP_DEFAULTS)
        env_config: dict[str, Any] = {"num_players": args.players}
        if args.vector == "native":
            env_config["backend"] = args.backend
        config = coop_config(
            settings, args.num_env_runners, args.envs_per_runner, args.vector, env_config, args.seed
        )
        env_ids = {"default_policy": COOP_ID}
        eval_kwargs: dict[str, dict[str, Any]] = {"default_policy": {"num_players": args.players}}
    else:
        settings = _settings(args, DUEL_DEFAULTS)
        config = duel_config(args.mode, settings, args.num_env_runners, args.envs_per_runner, args.seed)
        _, to_train = duel_modules(args.mode)
        env_ids = {m: (GREEK_ID if m == "greek" else PERSIAN_ID) for m in to_train}
        eval_kwargs = {m: {} for m in to_train}
    report = train(
        config,
        settings.total_timesteps,
        args.run_dir,
        env_ids,
        args.max_iterations,
        args.checkpoint_every,
    )
    evaluations = {}
    if args.eval_games:
        for module_id, path in report.exported.items():
            evaluations[module_id] = evaluate_policy(
                path, env_ids[module_id], args.eval_games, args.eval_seed, eval_kwargs[module_id]
            )
            ev = evaluations[module_id]
            print(
                f"{module_id}: won {ev['wins']}/{ev['games']} = {ev['win_rate']:.4f} "
                f"(95% CI {ev['ci95'][0]:.4f}..{ev['ci95'][1]:.4f}) on {env_ids[module_id]}"
                + (" against the heuristic" if env_ids[module_id] != COOP_ID else "")
            )
    return {
        "command": args.game,
        "mode": args.mode if args.game == "duel" else None,
        "settings": asdict(settings),
        "num_env_runners": args.num_env_runners,
        "envs_per_runner": args.envs_per_runner,
        "report": asdict(report),
        "evaluation": evaluations,
        "machine": _machine(),
    }


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.command == "train":
        try:  # the other game's options, and the settings' own rules (a minibatch larger than the batch)
            game_options(args, COOP_ONLY, DUEL_ONLY)
            if args.envs_per_runner is None:
                args.envs_per_runner = ENVS_PER_RUNNER[args.game]
            _settings(args, COOP_DEFAULTS if args.game == "coop" else DUEL_DEFAULTS)
        except ValueError as err:  # before Ray starts
            error(f"{parser.prog} train", str(err))
            return 2
    import ray  # extra: rllib

    started = start_ray(args.address, args.num_cpus)
    try:
        summary = run_sweep_from_args(args) if args.command == "sweep" else _run_training(args)
    finally:
        if started:
            ray.shutdown()
    out = Path(args.run_dir) / "summary.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2, default=str))
    print(f"wrote {out}")
    return 0


def add_sweep_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``sweep`` subcommand."""
    p = sub.add_parser("sweep", help="Ray Tune sweep over co-op PPO hyperparameters (ASHA early stopping)")
    p.add_argument("--address", default=None, help="join an existing Ray cluster; default: start a local Ray")
    p.add_argument("--num-cpus", type=int_argument(1, MAX_CPUS), default=None,
                   help="CPUs of the local Ray (default: all)")
    p.add_argument("--run-dir", required=True, metavar="DIR",
                   help="the sweep's folder: Tune's trials and checkpoints, the best policy and summary.json")
    p.add_argument("--name", default="coop_ppo_sweep", help="experiment name (a folder of --run-dir)")
    p.add_argument("--lr", type=float_argument(0.0, 10.0, low_open=True), nargs="+",
                   default=[1e-4, 3e-4, 1e-3], help="learning rates to try (default 1e-4 3e-4 1e-3)")
    p.add_argument("--entropy-coeff", type=float_argument(0.0, 1000.0), nargs="+", default=[0.0, 0.003, 0.01],
                   help="entropy coefficients to try (default 0 0.003 0.01)")
    p.add_argument("--train-batch-size", type=int_argument(1, MAX_BATCH), nargs="+", default=[4096, 16384],
                   help="env steps per iteration to try (default 4096 16384)")
    p.add_argument("--minibatch-size", type=int_argument(1, MAX_BATCH), default=None,
                   help="default: min(4096, smallest batch)")
    p.add_argument("--search", choices=SEARCHES, default="grid",
                   help="grid: every combination of the values; random: num-samples uniform draws; optuna: "
                        "num-samples trials proposed by Optuna's TPE sampler")
    p.add_argument("--num-samples", type=int_argument(1, MAX_TRIALS), default=None,
                   help="grid: passes over the whole grid (default 1); random, optuna: trials (default 8)")
    p.add_argument("--timesteps-per-trial", type=int_argument(1, MAX_TIMESTEPS), default=2_000_000,
                   help="env steps of a trial that ASHA does not stop (default 2000000)")
    p.add_argument("--grace-period", type=int_argument(1, MAX_TIMESTEPS), default=200_000,
                   help="env steps before ASHA may stop a trial")
    p.add_argument("--reduction-factor", type=int_argument(2, 1000), default=3,
                   help="ASHA keeps 1 in this many trials at each rung (default 3)")
    p.add_argument("--max-concurrent", type=int_argument(1, MAX_TRIALS), default=None,
                   help="trials at once (default: as CPUs allow)")
    p.add_argument("--num-env-runners", type=int_argument(0, MAX_CPUS), default=0,
                   help="env runners per trial")
    p.add_argument("--envs-per-runner", type=int_argument(1, MAX_ENVS_PER_RUNNER), default=64,
                   help="games stepped per runner (default 64)")
    p.add_argument("--hiddens", type=int_argument(1, MAX_WIDTH), nargs="+", default=None,
                   help="MLP widths, default 128 128")
    p.add_argument("--eval-games", type=int_argument(0, MAX_GAMES), default=1000,
                   help="games of the best trial's evaluation")
    p.add_argument("--eval-seed", type=int_argument(0, MAX_SEED), default=0,
                   help="seed of the first evaluation deal (default 0)")
    p.add_argument("--seed", type=int_argument(0, MAX_SEED), default=0,
                   help="seed of every trial's PPO and of the optuna search (default 0)")
    return p


def run_sweep_from_args(args: argparse.Namespace) -> dict[str, Any]:
    summary = run_sweep(
        args.run_dir,
        args.name,
        args.lr,
        args.entropy_coeff,
        args.train_batch_size,
        args.num_samples,
        args.timesteps_per_trial,
        args.grace_period,
        args.reduction_factor,
        args.max_concurrent,
        args.num_env_runners,
        args.envs_per_runner,
        args.minibatch_size,
        args.hiddens,
        args.eval_games,
        args.eval_seed,
        args.seed,
        search=args.search,
    )
    best = summary["best"]
    print(
        f"best trial: lr={best['lr']} entropy_coeff={best['entropy_coeff']} "
        f"train_batch_size={best['train_batch_size']} return={best['episode_return_mean']}"
    )
    ev = best.get("evaluation")
    if ev:
        print(
            f"best policy: won {ev['wins']}/{ev['games']} = {ev['win_rate']:.4f} "
            f"(95% CI {ev['ci95'][0]:.4f}..{ev['ci95'][1]:.4f}) on seeds {ev['base_seed']}.."
        )
    return summary
