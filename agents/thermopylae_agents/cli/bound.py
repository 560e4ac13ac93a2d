"""Upper bound on the co-op win rate: the exact value of a player who knows both deck orders but not the dice.

For each evaluation deal ``i`` in ``START..START+DEALS-1`` (the deal ``scripts/evaluate.py`` plays as game
``i`` with ``--seed 0``) it computes, exactly (expectation over the dice, no sampling):

* ``bound``: the best win probability of a deck-clairvoyant player (expectimax, memoized per deal);
* ``heuristic``: the win probability of the shipped heuristic on the same deal (the same recursion with
  the heuristic's choices instead of the max), so the gap is paired and has no dice noise.

Per-deal lines go to a JSONL deal log as they finish (``--deal-log``; ``--resume`` skips the deals
already there); the summary (means with 95% intervals, the config, timing, machine load) goes to ``--out``
and a table is printed. ``--until HH:MM`` (UTC) stops starting new deals after that time.

``--merge A.jsonl B.jsonl ...`` solves nothing: it summarizes the deals of several deal logs (one per
process); ``--gaps EVAL.json ...`` adds, for every agent of these ``scripts/evaluate.py --out`` files
(its games in several files pooled), its paired gap to the bound on the deals both hold (a game's seed
is its deal: game ``i`` of ``--seed 0`` is deal ``i``):
the mean over deals of ``bound(deal) - won(deal)``, an unbiased estimate of how far the agent's win
rate is below the bound on those deals (its expected win on a deal is at most the bound).

    nice -n 19 thermopylae bound --deals 1000 --out benchmarks/results/coop_bound.json --resume
    thermopylae-coop-bound --deals 20 --out bound.json           # the same command, installed
    thermopylae bound --merge a.jsonl b.jsonl --gaps eval.json --out bound.json
    thermopylae bound --players 3 --deals 10 --no-heuristic --out bound_3p.json    # a team: deal i is game i
                                                    # of scripts/evaluate.py --players 3 --seed 0

The solvers are in [`thermopylae_agents.evaluation.coop_bound`][]; this module is the command line around
them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from thermopylae_agents.cli.args import check_output_path, description, int_argument
from thermopylae_agents.evaluation.coop_bound import DeckClairvoyantSolver, deal_orders, policy_value
from thermopylae_agents.evaluation.games import results_from_json
from thermopylae_agents.players.coop_heuristic import CoopHeuristic
from thermopylae_agents.policies.provenance import git_commit
from thermopylae_env.coop.rules import CoopGame


def mean_interval(values: list[float]) -> dict[str, float]:
    """Mean with a normal-approximation 95% interval (the values are per-deal probabilities)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": math.nan, "low": math.nan, "high": math.nan}
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(var / n)
    return {"n": n, "mean": mean, "low": mean - half, "high": mean + half}


def solve_deal(seed: int, game: CoopGame, solver: DeckClairvoyantSolver, heuristic: CoopHeuristic | None,
               ) -> dict:
    orders = deal_orders(seed, game.num_players)
    start = time.perf_counter()
    bound = solver.solve(*orders)
    row = {"deal": seed, "bound": bound, "bound_states": solver.stats.states,
           "bound_seconds": time.perf_counter() - start}
    if solver.backend == "numba":
        row["bound_lookups"] = solver.stats.lookups
    if heuristic is not None:
        add_heuristic(row, game, heuristic)
    return row


def add_heuristic(row: dict, game: CoopGame, heuristic: CoopHeuristic) -> dict:
    """Add the heuristic's exact win probability on the row's deal (checked against its bound)."""
    orders = deal_orders(row["deal"], game.num_players)
    start = time.perf_counter()
    memo: dict = {}
    row["heuristic"] = policy_value(game, game.new_state(*orders), heuristic.choose_state, memo)
    row["heuristic_states"] = len(memo)
    row["heuristic_seconds"] = time.perf_counter() - start
    if row["heuristic"] > row["bound"] + 1e-9:
        raise AssertionError(f"deal {row['deal']}: the heuristic's value exceeds the bound")
    return row


def _add_heuristic_values(by_deal: dict[int, dict], players: int, out: Path,
                          deadline: dt.datetime | None) -> None:
    """The heuristic's exact value on every merged deal lacking it, in deal order, appended to ``out``
    as deal-log lines (``--merge`` then prefers them) until ``deadline``."""
    game = CoopGame(players)
    heuristic = CoopHeuristic()
    out.parent.mkdir(parents=True, exist_ok=True)
    for deal in sorted(by_deal):
        if "heuristic" in by_deal[deal]:
            continue
        if deadline is not None and dt.datetime.now(dt.timezone.utc) >= deadline:
            break
        row = add_heuristic(dict(by_deal[deal]), game, heuristic)
        row["config"] = {**row["config"], "heuristic": True}
        by_deal[deal] = row
        with out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{deal:>5} bound {row['bound']:.4f} heuristic {row['heuristic']:.4f}", flush=True)


def read_done(path: Path, config: dict) -> dict[int, dict]:
    done: dict[int, dict] = {}
    if not path.exists():
        return done
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("config") == config:
            done[int(row["deal"])] = row
    return done


def merge_rows(paths: list[Path], players: int, mode: str) -> dict[int, dict]:
    """The computed deals of several deal logs for one team size and mode, by deal; a deal in
    several files must have the same bound (to 1e-9), and the row with the heuristic's value is kept."""
    merged: dict[int, dict] = {}
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            try:
                row = json.loads(line)
                config = row["config"]
                deal = int(row["deal"])
                bound = float(row["bound"])
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path}:{number}: not a deal-log line of thermopylae bound ({err})"
                                 ) from None
            if config.get("players") != players or config.get("mode") != mode:
                continue
            if deal in merged:
                if abs(merged[deal]["bound"] - bound) > 1e-9:
                    raise ValueError(f"{path}:{number}: deal {deal} has two different bounds")
                if "heuristic" in merged[deal]:
                    continue
            merged[deal] = row
    return merged


def paired_gaps(bounds: dict[int, float], evaluation: dict | list[dict]) -> list[dict]:
    """For each agent of one or more ``scripts/evaluate.py --out`` documents (an agent's games in
    several documents are pooled by deal; one deal played twice must have one outcome): its win rate and
    its paired gap ``bound - won`` (mean with a 95% interval over deals) on the deals both the bound and
    its games hold (the game's seed is the deal)."""
    won_by_agent = _games_by_agent([evaluation] if isinstance(evaluation, dict) else evaluation)
    gaps = []
    for agent, won in won_by_agent.items():
        deals = sorted(set(won) & set(bounds))
        if not deals:
            raise ValueError(f"{agent}: no game of the evaluation is on a deal of the bound")
        gaps.append({
            "agent": agent,
            "deals": len(deals),
            "win_rate": mean_interval([won[d] for d in deals]),
            "bound": mean_interval([bounds[d] for d in deals]),
            "gap": mean_interval([bounds[d] - won[d] for d in deals]),
        })
    return gaps


def _games_by_agent(evaluations: list[dict]) -> dict[str, dict[int, float]]:
    """``{agent: {deal: won}}`` over the co-op games of every evaluation document."""
    won_by_agent: dict[str, dict[int, float]] = {}
    for evaluation in evaluations:
        for result in results_from_json(evaluation):
            if "Coop" not in result.env_id:
                raise ValueError(f"{result.agent}: played {result.env_id}, not the co-op game")
            won = won_by_agent.setdefault(result.agent, {})
            for record in result.records:
                if won.setdefault(record.seed, float(record.won)) != float(record.won):
                    raise ValueError(f"{result.agent}: deal {record.seed} was played twice with different "
                                     "outcomes")
    return won_by_agent


def _parse_until(parser: argparse.ArgumentParser, until: str | None) -> dt.datetime | None:
    if until is None:
        return None
    try:
        hour, minute = (int(x) for x in until.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        return now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    except ValueError:
        parser.error(f"--until must be HH:MM, got {until!r}")
    return None


def _solve_deals(args: argparse.Namespace, config: dict, progress: Path,
                 deadline: dt.datetime | None) -> tuple[dict[int, dict], bool, str]:
    """Solve the deals of ``--start``/``--deals`` not yet in the deal log ``progress``; returns the rows
    by deal, whether ``--until`` stopped it, and the solver's backend."""
    game = CoopGame(args.players)
    solver = DeckClairvoyantSolver(game, args.mode, max_states=args.max_states)
    heuristic = None if args.no_heuristic else CoopHeuristic()
    done = read_done(progress, config) if args.resume else {}
    if not args.resume and progress.exists():
        progress.unlink()
    progress.parent.mkdir(parents=True, exist_ok=True)
    stopped_early = False
    print(f"{'deal':>5} {'bound':>8} {'heur.':>8} {'states':>10} {'s':>7}", flush=True)
    for seed in range(args.start, args.start + args.deals):
        if seed in done:
            continue
        if deadline is not None and dt.datetime.now(dt.timezone.utc) >= deadline:
            stopped_early = True
            break
        try:
            row = solve_deal(seed, game, solver, heuristic)
        except MemoryError as err:
            raise MemoryError(f"deal {seed}: {err}; the deals before it are in {progress} (--resume goes on "
                              "from there; a larger --max-states solves it, with more memory)") from None
        row["config"] = config
        done[seed] = row
        with progress.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        heur = row.get("heuristic", math.nan)
        print(f"{seed:>5} {row['bound']:8.4f} {heur:8.4f} {row['bound_states']:>10} "
              f"{row['bound_seconds']:7.1f}", flush=True)
    rows = {s: done[s] for s in done if args.start <= s < args.start + args.deals}
    return rows, stopped_early, solver.backend


def _timing(rows: list[dict]) -> dict:
    n = max(len(rows), 1)
    return {
        "deals": len(rows),
        "bound_seconds_total": sum(r["bound_seconds"] for r in rows),
        "bound_seconds_mean": sum(r["bound_seconds"] for r in rows) / n,
        "bound_seconds_max": max((r["bound_seconds"] for r in rows), default=0.0),
        "bound_states_mean": sum(r["bound_states"] for r in rows) / n,
        "bound_states_max": max((r["bound_states"] for r in rows), default=0),
    }


def summarize(rows: list[dict]) -> dict:
    """Means with 95% intervals over the deals of ``rows``: the bound, and, on the deals that have it,
    the heuristic's exact value and the paired gap; timing of the bound."""
    summary: dict = {"deals_done": len(rows), "bound": mean_interval([r["bound"] for r in rows])}
    with_heuristic = [r for r in rows if "heuristic" in r]
    if with_heuristic:
        summary["heuristic_deals"] = [r["deal"] for r in with_heuristic]
        summary["heuristic"] = mean_interval([r["heuristic"] for r in with_heuristic])
        summary["gap_bound_minus_heuristic"] = mean_interval([r["bound"] - r["heuristic"]
                                                              for r in with_heuristic])
    summary["timing"] = _timing(rows)
    # Rows with memo lookups were computed by the pruning kernel; the others by the first one.
    summary["timing_pruning_kernel"] = _timing([r for r in rows if "bound_lookups" in r])
    return summary


def _print_summary(summary: dict, gaps: list[dict]) -> None:
    print(f"{'quantity':<40} {'mean':>8} {'95% interval':>20} {'deals':>6}")
    items = [("deck-clairvoyant bound", summary["bound"])]
    if "heuristic" in summary:
        items += [("heuristic (exact, same deals)", summary["heuristic"]),
                  ("gap bound - heuristic exact (paired)", summary["gap_bound_minus_heuristic"])]
    for gap in gaps:
        items += [(f"{gap['agent']} win rate (same deals)", gap["win_rate"]),
                  (f"gap bound - {gap['agent']} (paired)", gap["gap"])]
    for name, stat in items:
        print(f"{name:<40} {stat['mean']:8.4f} [{stat['low']:8.4f}, {stat['high']:8.4f}] {stat['n']:>6}")
    timing = summary["timing"]
    print(f"mean {timing['bound_seconds_mean']:.1f} s and {timing['bound_states_mean']:.0f} states per deal")


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    parser.add_argument("--deals", type=int_argument(1, 10**7), default=1000,
                        help="number of deals (default 1000)")
    parser.add_argument("--start", type=int_argument(0, 2**63 - 1), default=0, help="first deal (default 0)")
    parser.add_argument("--players", type=int_argument(1, 4), default=1, metavar="N",
                        help="the team size, 1..4 (default 1); every size is solved by the compiled kernel")
    parser.add_argument("--mode", choices=("expect", "lucky"), default="expect",
                        help="expect: dice unknown (the bound); lucky: best dice outcome")
    parser.add_argument("--no-heuristic", action="store_true", help="skip the heuristic's exact value")
    parser.add_argument("--max-states", type=int_argument(1, 10**10), default=40_000_000,
                        help="memo limit per deal")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/coop_bound.json"),
                        metavar="FILE",
                        help="write the summary (JSON) to FILE (default benchmarks/results/coop_bound.json)")
    parser.add_argument("--deal-log", type=Path, default=None, metavar="JSONL",
                        help="one JSON line per finished deal (default: --out with .jsonl)")
    parser.add_argument("--resume", action="store_true", help="skip deals already in the deal log")
    parser.add_argument("--until", default=None, help="UTC HH:MM after which no new deal is started")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, metavar="JSONL",
                        help="solve nothing: summarize every deal of these deal logs")
    parser.add_argument("--add-heuristic", type=Path, default=None, metavar="JSONL",
                        help="with --merge: the heuristic's exact value on the merged deals lacking it, "
                             "appended to this deal log (give it to --merge next time)")
    parser.add_argument("--gaps", type=Path, nargs="+", default=None, metavar="EVAL_JSON",
                        help="paired gap to the bound of each agent of these thermopylae evaluate --out "
                             "files (a game's seed is its deal; an agent's games in several files pooled)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.deals < 1 or args.start < 0:
        parser.error("--deals must be >= 1 and --start >= 0")
    if not 1 <= args.players <= 4:
        parser.error("--players must be 1..4")
    if args.add_heuristic is not None and args.merge is None:
        parser.error("--add-heuristic needs --merge")
    for path in (args.merge or []) + (args.gaps or []):
        if not path.is_file():
            parser.error(f"no such file: {path}")
    # Every file this run writes, checked before hours of solving (a crash at the end loses them).
    outputs = [("--out", args.out)]
    if args.merge is None:
        outputs.append(("--deal-log", args.deal_log or args.out.with_suffix(".jsonl")))
    if args.add_heuristic is not None:
        outputs.append(("--add-heuristic", args.add_heuristic))
    for flag, path in outputs:
        try:
            check_output_path(path, flag)
        except ValueError as err:
            parser.error(str(err))
    deadline = _parse_until(parser, args.until)
    evaluations = []
    for path in args.gaps or []:
        try:
            evaluations.append(json.loads(path.read_text()))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            parser.error(f"{path}: not JSON ({err})")
    config = {"players": args.players, "mode": args.mode, "heuristic": not args.no_heuristic}
    load_start = os.getloadavg()
    started = time.perf_counter()
    stopped_early = False
    backend = None
    if args.merge is not None:
        try:
            by_deal = merge_rows(args.merge, args.players, args.mode)
        except ValueError as err:
            parser.error(str(err))
        if args.add_heuristic is not None:
            _add_heuristic_values(by_deal, args.players, args.add_heuristic, deadline)
    else:
        progress = args.deal_log or args.out.with_suffix(".jsonl")
        try:
            by_deal, stopped_early, backend = _solve_deals(args, config, progress, deadline)
        except MemoryError as err:
            parser.exit(1, f"{parser.prog}: error: {err}\n")
    rows = [by_deal[s] for s in sorted(by_deal)]
    try:
        gaps = paired_gaps({r["deal"]: r["bound"] for r in rows}, evaluations) if evaluations else []
    except (ValueError, KeyError, TypeError) as err:
        parser.error(f"--gaps {' '.join(str(p) for p in args.gaps)}: {err}")
    summary = {
        "description": "exact win probability of a player who knows both deck orders but not the dice "
                       f"(mode {args.mode}), per evaluation deal",
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "config": {"players": args.players, "mode": args.mode, "max_states": args.max_states,
                   "backend": backend,
                   **({"merged": [str(p) for p in args.merge]} if args.merge is not None else
                      {"heuristic": not args.no_heuristic, "start": args.start,
                       "deals_requested": args.deals})},
        "stopped_early": stopped_early,
        **summarize(rows),
        "gaps": gaps,
        "wall_seconds_this_run": time.perf_counter() - started,
        "machine": {"cpus": os.cpu_count(), "load_start": load_start, "load_end": os.getloadavg(),
                    "python": platform.python_version(), "platform": platform.platform(),
                    "niceness": os.nice(0)},
        "commit": git_commit(),
        "deals": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print()
    deals = [r["deal"] for r in rows]
    span = f"{min(deals)}..{max(deals)}" if deals else "none"
    print(f"{len(rows)} deals ({span})" + (" (stopped at --until)" if stopped_early else "")
          + f"; JSON: {args.out}")
    _print_summary(summary, gaps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
