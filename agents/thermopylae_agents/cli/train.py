"""``thermopylae train`` (also ``thermopylae-train``, ``scripts/train.py``): train PPO agents
([`thermopylae_agents.training`][]).

Bad input (a missing config file, a negative or non-integer number, a malformed agent spec in the config)
ends with one line on stderr and exit status 2, before anything is written; an interrupted run exits 130.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from thermopylae_agents.cli.args import int_argument
from thermopylae_agents.training.config import (
    ALGOS,
    LEARNERS,
    MAX_ENVS,
    MAX_GAMES,
    MAX_SEED,
    MAX_THREADS,
    MAX_TIMESTEPS,
    PRECISIONS,
    TARGETS,
    VEC_KINDS,
)
from thermopylae_agents.training.progress import set_level

__all__ = ["build_parser", "main"]

PROG = "thermopylae-train"


def _threads(text: str) -> int | str:
    if text.strip() == "auto":
        return "auto"
    return int_argument(1, MAX_THREADS)(text)


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Train (Maskable)PPO agents for the thermopylae environments. Hyperparameters come from "
        "agents/thermopylae_agents/configs/<target>.yaml (or --config); the options below override them.",
    )
    parser.add_argument("target", choices=TARGETS, help="what to train")
    parser.add_argument("--algo", choices=ALGOS, default=None, help="default: maskable_ppo")
    parser.add_argument("--config", default=None, help="YAML config (default: the shipped one)")
    parser.add_argument(
        "--timesteps",
        type=int_argument(1, MAX_TIMESTEPS),
        default=None,
        help="total env steps, rounded up to whole rollouts (self-play: per side; with "
        "--resume: the total to reach); below the config's, the warm start, the periodic evaluation "
        "and the report shrink in proportion",
    )
    parser.add_argument("--seed", type=int_argument(0, MAX_SEED), default=None,
                        help="seed of the run (default 0; with --resume, the resumed run's)")
    parser.add_argument("--n-envs", type=int_argument(1, MAX_ENVS), default=None,
                        help=f"parallel environments (1..{MAX_ENVS})")
    parser.add_argument("--run-dir", default=None, metavar="DIR",
                        help="the run folder (default: runs/<target>-<algo>-seed<seed>)")
    parser.add_argument("--resume", default=None, help="a run folder or a saved model (.zip) to continue")
    parser.add_argument(
        "--eval-freq", type=int_argument(0, MAX_TIMESTEPS), default=None,
        help="env steps between evaluations (0: none)",
    )
    parser.add_argument(
        "--eval-episodes", type=int_argument(0, MAX_GAMES), default=None, help="games per periodic evaluation"
    )
    parser.add_argument("--vec", choices=VEC_KINDS, default=None, help="native (default) | dummy | subproc")
    parser.add_argument(
        "--learner", choices=LEARNERS, default=None,
        help="who runs PPO: fast (thermopylae's lean loop) or sb3 (sb3-contrib's own); the same algorithm "
        "and model files (default: the config's)",
    )
    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="the fast learner's matrix products (default: the config's, else float32)")
    parser.add_argument(
        "--threads", type=_threads, default=None,
        help=f"torch threads: auto (the fastest of the free cores, measured at the start) or "
        f"1..{MAX_THREADS}; a fixed count repeats a run's weights (default: the config's, else auto)",
    )
    parser.add_argument("--bc-episodes", type=int_argument(0, MAX_GAMES), default=None,
                        help="expert games for BC (0: none)")
    parser.add_argument("--no-progress", action="store_true", help="log lines instead of progress bars")
    parser.add_argument(
        "--no-report",
        action="store_true",
        help="skip the final evaluation (report.json keeps an earlier run's)",
    )
    parser.add_argument("--device", default=None, help="torch device (default: cpu)")
    parser.add_argument("--quiet", action="store_true",
                        help="log only warnings and errors (as THERMOPYLAE_LOG_LEVEL=WARNING does)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    prog = prog or PROG
    parser = build_parser(prog)
    args = parser.parse_args(argv)  # before the training imports: --help and usage errors need no torch
    from thermopylae_agents.training.ppo import train  # extra: train
    from thermopylae_agents.training.selfplay import train_selfplay  # extra: train

    if args.quiet:
        set_level("WARNING")
    for flag, value in (("--run-dir", args.run_dir), ("--config", args.config), ("--resume", args.resume)):
        if value is not None and not value.strip():
            parser.error(f"{flag}: empty path")
    kwargs = dict(
        algo=args.algo,
        config=args.config,
        timesteps=args.timesteps,
        seed=args.seed,
        n_envs=args.n_envs,
        out=args.run_dir,
        resume=args.resume,
        eval_freq=args.eval_freq,
        eval_episodes=args.eval_episodes,
        progress=not args.no_progress,
        device=args.device,
        report=not args.no_report,
        learner=args.learner,
        precision=args.precision,
        threads=args.threads,
    )
    try:
        if args.target == "selfplay":
            if args.vec is not None or args.bc_episodes is not None:
                raise ValueError("--vec and --bc-episodes do not apply to selfplay")
            train_selfplay(**kwargs)
        else:
            train(args.target, vec=args.vec, bc_episodes=args.bc_episodes, **kwargs)
    except (ValueError, OSError) as error:
        print(f"{prog}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return 0


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.filename is not None and str(error.filename) not in text:
        text = f"{error.filename}: {text}"
    return " ".join(text.split())
