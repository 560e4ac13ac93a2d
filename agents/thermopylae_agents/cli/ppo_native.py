"""``thermopylae ppo-native``: PPO on the native co-op vector engine
(:mod:`thermopylae_agents.training.ppo_native`)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

from thermopylae_agents.training.ppo_native import (
    Args,
    train,
)

__all__ = ["build_parser", "main", "parse_args"]


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    for field in dataclasses.fields(Args):
        flag = "--" + field.name.replace("_", "-")
        if field.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=field.default)
        else:
            kind = {"int": int, "float": float, "str": str}[str(field.type)]
            parser.add_argument(flag, type=kind, default=field.default)
    return parser


def parse_args(argv: Sequence[str] | None = None, prog: str | None = None) -> Args:
    parser = build_parser(prog)
    args = Args(**vars(parser.parse_args(argv)))
    if args.num_envs * args.num_steps % args.num_minibatches:
        parser.error("num_envs * num_steps must be a multiple of num_minibatches")
    return args


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> dict:
    return train(parse_args(argv, prog))
