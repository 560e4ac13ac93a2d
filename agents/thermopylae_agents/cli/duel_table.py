"""``thermopylae duel-table``: the duel strength table of the built-in players
([`thermopylae_agents.evaluation.duel_table`][])."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from thermopylae_agents.cli.args import description, int_argument, output_path_argument, seed_argument
from thermopylae_agents.evaluation.duel_table import (
    PAIRINGS,
    play_pairing,
)

__all__ = ["build_parser", "main"]

MAX_GAMES = 10**8  # games are played one after another: the bound is on time, not memory


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    parser.add_argument("--games", type=int_argument(1, MAX_GAMES), default=10_000,
                        help=f"games per pairing, 1..{MAX_GAMES:,} (default 10,000)")
    parser.add_argument("--seed", type=seed_argument, default=0, help="base seed, 0..2**64-1 (default 0)")
    parser.add_argument("--out", type=output_path_argument, default=None, metavar="FILE",
                        help="also write the table as JSON to FILE")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> dict:
    args = build_parser(prog).parse_args(argv)
    rows = []
    print(f"Thermopylae duel: {args.games} games per pairing, seed {args.seed}")
    header = (
        f"{'Greek':10s} {'Persian':10s} {'Greek wins':>10s} {'95% Wilson CI':>18s} {'Persian wins':>12s}"
        f" {'turns':>6s} {'actions':>7s}"
    )
    print(header)
    print("-" * len(header))
    for greek, persian in PAIRINGS:
        row = play_pairing(greek, persian, args.games, args.seed)
        rows.append(row)
        low, high = row["greek_win_rate_ci95"]
        print(
            f"{greek:10s} {persian:10s} {row['greek_win_rate']:>10.2%} [{low:7.2%}, {high:7.2%}]"
            f" {row['persian_win_rate']:>12.2%} {row['mean_turns']:>6.1f} {row['mean_micro_actions']:>7.1f}",
            flush=True,
        )
    result = {"games_per_pairing": args.games, "seed": args.seed, "results": rows}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return result
