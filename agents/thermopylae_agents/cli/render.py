"""``thermopylae render``: one game rendered to an animated GIF or a PNG strip of frames
([`thermopylae_agents.evaluation.render_game`][])."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from thermopylae_agents.cli.args import (
    GAMES,
    SIDES,
    check_output_path,
    description,
    error,
    float_argument,
    game_options,
    int_argument,
    seed_argument,
)
from thermopylae_agents.cli.console import require_extra
from thermopylae_agents.evaluation.render_game import (
    play,
    save_gif,
    save_strip,
    select,
)

__all__ = ["build_parser", "main"]


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    parser.add_argument("--game", choices=GAMES, default="coop",
                        help="coop (default): the agent plays every seat; duel: one side (--side)")
    parser.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                        help="co-op: the team size, 1..4 (default 1)")
    parser.add_argument("--side", choices=SIDES, default=None,
                        help="duel: the agent's side (default greek)")
    parser.add_argument("--opponent", default=None,
                        help="duel: the other side: heuristic (default), random or a model path")
    parser.add_argument("--agent", default="heuristic", help="random, heuristic or a model path (.zip)")
    parser.add_argument("--seed", type=seed_argument, default=0,
                        help="shuffle seed, an integer in 0..2**64-1 (default 0)")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="the file to write: .gif (animation) or .png (strip)")
    parser.add_argument("--every", type=int_argument(1, 10**6), default=1,
                        help="keep every N-th frame (default 1: all)")
    parser.add_argument("--max-frames", type=int_argument(1, 10**5), default=None,
                        help="at most this many frames (default: 300 for a GIF, 24 for a PNG strip)")
    parser.add_argument("--fps", type=float_argument(0.0, 100.0, low_open=True), default=2.0,
                        help="GIF frames per second (default 2)")
    parser.add_argument("--columns", type=int_argument(1, 100), default=4,
                        help="PNG strip: frames per row (default 4)")
    parser.add_argument("--scale", type=float_argument(0.0, 4.0, low_open=True), default=0.5,
                        help="PNG strip: frame scale (default 0.5)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    prog = prog or "thermopylae-render-game"
    args = build_parser(prog).parse_args(argv)
    try:
        game_options(args, coop={"players": 1}, duel={"side": "greek", "opponent": "heuristic"})
    except ValueError as err:
        error(prog, str(err))
        return 2
    out = Path(args.out)
    suffix = out.suffix.lower()
    if suffix not in (".gif", ".png"):
        error(prog, f"--out must end in .gif or .png, got {out}")
        return 2
    try:  # before the game is played: a path that cannot be written would lose the frames
        check_output_path(out, "--out")
    except ValueError as err:
        error(prog, str(err))
        return 2
    require_extra(prog, "PIL")
    limit = args.max_frames if args.max_frames is not None else (300 if suffix == ".gif" else 24)
    try:
        frames, summary = play(args)
        kept = select(frames, args.every, limit)
        out.parent.mkdir(parents=True, exist_ok=True)
        if suffix == ".gif":
            save_gif(kept, out, args.fps)
        else:
            save_strip(kept, out, args.columns, args.scale)
    except ValueError as err:
        error(prog, str(err))
        return 2
    outcome = "won" if summary["won"] else "lost"
    print(f"wrote {out}: {len(kept)} of {len(frames)} frames; agent {summary['agent']} {outcome} after "
          f"{summary['steps']} steps (return {summary['return']:g})")
    return 0
