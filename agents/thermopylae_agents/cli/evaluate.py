"""``thermopylae evaluate``: evaluate agents on paired deals, print and plot the results
([`thermopylae_agents.evaluation.games`][])."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.cli.args import GAMES, SIDES, env_id_of, game_options, int_argument, seed_argument
from thermopylae_agents.evaluation.games import (
    DEFAULT_AGENT_SEED,
    evaluate,
    evaluate_duel_matrix,
    results_from_json,
    results_json,
)
from thermopylae_agents.evaluation.tables import (
    load_learning_curve,
    plot_learning_curve,
    plot_results,
    print_table,
)
from thermopylae_agents.policies.registry import AgentSpecError, make_agent, parse_spec
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.cards import load_persian_deck
from thermopylae_env.render import safe_text

__all__ = ["build_parser", "main"]


def _agent_spec(text: str) -> str:
    try:
        parse_spec(text)
    except AgentSpecError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Evaluate agents on the same seeded deals (paired), with 95% Wilson intervals and "
        "paired comparisons (McNemar's exact test, the win-rate difference with its 95% interval).",
    )
    spec_help = ("random, heuristic, search[:N,K], a model path, fast:PATH, a shipped policy; NAME=SPEC "
                 "names it")
    parser.add_argument("agents", nargs="*", type=_agent_spec,
                        help=f"agent specs (the duel: of --side): {spec_help}")
    parser.add_argument("--game", choices=GAMES, default="coop",
                        help="coop (default): each agent plays the same deals; duel: every Greek agent "
                        "against every Persian agent")
    parser.add_argument("--side", choices=SIDES, default=None,
                        help="duel: the side the positional agents play (default greek; the other side: "
                        "--greek / --persian, else the heuristic)")
    parser.add_argument("--greek", nargs="+", type=_agent_spec, default=None, help="duel: Greek agents")
    parser.add_argument("--persian", nargs="+", type=_agent_spec, default=None, help="duel: Persian agents")
    parser.add_argument("--games", type=int_argument(1, 10**9), default=10_000,
                        help="games per agent or pairing (10000)")
    parser.add_argument("--seed", type=seed_argument, default=0,
                        help="game i is dealt with seed SEED + i (default 0)")
    parser.add_argument("--agent-seed", type=seed_argument, default=DEFAULT_AGENT_SEED,
                        help="seed of the agents' own randomness (reseeded per game)")
    parser.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                        help="co-op: the team size, 1..4 (default 1)")
    parser.add_argument("--persian-deck", default=None, help="co-op: Persian deck CSV")
    parser.add_argument("--workers", type=int_argument(1, 1024), default=1,
                        help="worker processes (default 1)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="write the results (per-game outcomes included) as JSON to FILE")
    parser.add_argument("--plot", default=None, help="write a PNG plot to this file")
    parser.add_argument("--curve", default=None, metavar="LOGDIR",
                        help="plot the learning curve of a training run (evaluations.npz or progress.csv)")
    parser.add_argument("--replot", default=None, metavar="JSON",
                        help="plot (--plot) and print the results of an earlier --out file, playing nothing")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    return parser


def _check_output(parser: argparse.ArgumentParser, path: str | None, option: str) -> None:
    if path is None:
        return
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir() or not parent.is_dir() or not os.access(parent, os.W_OK):
        parser.error(f"{option} {path}: cannot write there (a folder, or a missing or read-only folder)")


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """The command line (``prog`` names it in the usage line: ``evaluate.py``, ``thermopylae evaluate``).
    Bad arguments and agents that cannot be built end with a one-line error and exit code 2."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    _check_output(parser, args.out, "--out")
    _check_output(parser, args.plot, "--plot")
    try:
        return _run(parser, args)
    except (ValueError, OSError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        sys.stderr.write(f"{parser.prog}: error: {safe_text(first, newlines=False)}\n")
        return 2


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.curve is not None:
        curve = load_learning_curve(args.curve)
        folder = args.curve if os.path.isdir(args.curve) else "."
        out = args.plot or os.path.join(folder, "learning_curve.png")
        plot_learning_curve(curve, out, title=f"learning curve: {args.curve}")
        print(f"learning curve ({len(curve['timesteps'])} evaluations) written to {out}")
        if args.out:
            Path(args.out).write_text(json.dumps({k: np.asarray(v).tolist() for k, v in curve.items()},
                                                 indent=2))
        return 0
    if args.replot is not None:
        document = _read_json(args.replot)
        results = results_from_json(document)
        title = str(document.get("title", args.replot))
        print_table(results, title)
        if args.plot:
            plot_results(results, args.plot, title)
        return 0
    try:  # the other game's options, refused in one line
        game_options(args, coop={"players": None, "persian_deck": None},
                     duel={"side": None, "greek": None, "persian": None})
    except ValueError as err:
        parser.error(str(err))
    env_id = env_id_of(args.game, args.side)
    progress = not args.no_progress
    if env_id == COOP_ID:
        env_kwargs: dict[str, Any] = {}
        if args.players is not None:
            env_kwargs["num_players"] = args.players
        if args.persian_deck is not None:
            env_kwargs["persian_deck"] = args.persian_deck
        specs = args.agents or ["random", "heuristic"]
        _check_loads(specs, env_id, env_kwargs)
        results = evaluate(env_id, specs, args.games, args.seed, args.agent_seed, env_kwargs, args.workers,
                           progress=progress)
        title = f"{env_id}: {args.games} paired games (seeds {args.seed}..{args.seed + args.games - 1})"
    else:
        if env_id == GREEK_ID:
            greek = (args.greek or []) + list(args.agents)
            persian = args.persian or ["heuristic"]
        else:
            greek = args.greek or ["heuristic"]
            persian = (args.persian or []) + list(args.agents)
        _check_loads(greek, GREEK_ID)
        _check_loads(persian, PERSIAN_ID)
        results = evaluate_duel_matrix(greek or ["heuristic"], persian or ["heuristic"], args.games,
                                       args.seed, args.agent_seed, args.workers, progress)
        title = f"duel cross-play, Greek win rates: {args.games} paired games per pairing"
    print_table(results, title)
    if args.out:
        Path(args.out).write_text(json.dumps(results_json(results, title)))
    if args.plot:
        plot_results(results, args.plot, title)
    return 0


def _check_loads(specs: Sequence[Any], env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
    """Build every agent (and the Persian deck) once before any game: a model that does not load is one
    line before the first progress line, not after it (the games build their own copies)."""
    if env_kwargs and env_kwargs.get("persian_deck") is not None:
        load_persian_deck(env_kwargs["persian_deck"])
    for spec in specs:
        make_agent(spec, env_id, seed=0, env_kwargs=env_kwargs)


def _read_json(path: str) -> dict[str, Any]:
    target = Path(path)
    if not target.is_file():
        raise ValueError(f"{path}: not a file")
    if target.stat().st_size > 512 * 1024 * 1024:
        raise ValueError(f"{path}: too large for an evaluation JSON")
    try:
        document = json.loads(target.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise ValueError(f"{path}: not an evaluation JSON ({type(err).__name__})") from None
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise ValueError(f"{path}: not an evaluation JSON (no 'results' list)")
    return document
