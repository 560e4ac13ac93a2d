"""``thermopylae ppo-native``: PPO on the native co-op vector engine
([`thermopylae_agents.training.ppo_native`][]).

Every numeric argument is a finite number within stated bounds; a bad one ends with one line and exit
status 2 before anything is written."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from thermopylae_agents.cli.args import check_output_path, device_argument, float_argument, int_argument
from thermopylae_agents.training.ppo_native import (
    Args,
    train,
)

__all__ = ["build_parser", "main", "parse_args"]

MAX_ROLLOUT = 2**24  # num_envs * num_steps observations are held at once (on the device)

# The type of each numeric or named field of Args: bounds far above any useful run that still refuse a
# typo (an extra zero, a sign) with one line instead of a crash deep in training.
FIELD_TYPES: dict[str, Callable[[str], Any]] = {
    "seed": int_argument(0, 2**31 - 1),
    "total_timesteps": int_argument(1, 10**11),
    "time_budget": float_argument(0.0, 1e7),
    "num_envs": int_argument(1, 65_536),
    "num_steps": int_argument(1, 65_536),
    "learning_rate": float_argument(0.0, 10.0, low_open=True),
    "gamma": float_argument(0.0, 1.0),
    "gae_lambda": float_argument(0.0, 1.0),
    "num_minibatches": int_argument(1, MAX_ROLLOUT),
    "update_epochs": int_argument(1, 10_000),
    "clip_coef": float_argument(0.0, 1000.0, low_open=True),
    "ent_coef": float_argument(0.0, 1000.0),
    "vf_coef": float_argument(0.0, 1000.0),
    "max_grad_norm": float_argument(0.0, 1e6, low_open=True),
    "target_kl": float_argument(0.0, 1000.0),
    "num_players": int_argument(1, 4),
    "reward_shaping": float_argument(0.0, 1000.0),
    "torch_threads": int_argument(1, 1024),
    "device": device_argument,
    "eval_games": int_argument(0, 10**7),
}
CHOICES = {"backend": ("auto", "numba")}


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    for field in dataclasses.fields(Args):
        flag = "--" + field.name.replace("_", "-")
        if field.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=field.default)
        elif field.name in CHOICES:
            parser.add_argument(flag, choices=CHOICES[field.name], default=field.default)
        else:
            parser.add_argument(flag, type=FIELD_TYPES.get(field.name, str), default=field.default)
    return parser


def parse_args(argv: Sequence[str] | None = None, prog: str | None = None) -> Args:
    parser = build_parser(prog)
    args = Args(**vars(parser.parse_args(argv)))
    if args.num_envs * args.num_steps > MAX_ROLLOUT:
        parser.error(f"num_envs * num_steps must be at most {MAX_ROLLOUT:,}")
    if args.num_envs * args.num_steps % args.num_minibatches:
        parser.error("num_envs * num_steps must be a multiple of num_minibatches")
    if args.device.startswith("cuda"):
        import torch

        index = int(args.device.partition(":")[2] or 0)
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            parser.error(f"--device {args.device}: no such CUDA device on this machine")
    if args.device == "mps":
        import torch

        if not torch.backends.mps.is_available():
            parser.error("--device mps: MPS is not available on this machine")
    if args.run_dir and not args.run_dir.strip():
        parser.error("--run-dir: a blank path (leave it out for the default folder)")
    run_dir = Path(args.run_dir or f"runs/ppo_native_s{args.seed}")
    if run_dir.exists() and not run_dir.is_dir():
        parser.error(f"--run-dir {run_dir}: not a folder")
    try:  # the folder's own files (summary.json, agent.pt) are written into it
        check_output_path(run_dir / "summary.json", "--run-dir")
    except ValueError as err:
        parser.error(str(err))
    return args


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> dict:
    return train(parse_args(argv, prog))
