"""Upper bound on the co-op win rate: the exact value of a player who knows both deck orders but not the dice.

For each evaluation deal ``i`` in ``START..START+DEALS-1`` (the deal ``scripts/evaluate.py`` plays as game
``i`` with ``--seed 0``) it computes, exactly (expectation over the dice, no sampling):

* ``bound``: the best win probability of a deck-clairvoyant player (expectimax, memoized per deal);
* ``heuristic``: the win probability of the shipped heuristic on the same deal (the same recursion with
  the heuristic's choices instead of the max), so the gap is paired and has no dice noise.

Per-deal lines go to a JSONL progress file as they finish (``--resume`` skips the deals already there);
the summary (means with 95% intervals, the config, timing, machine load) goes to ``--json`` and a table
is printed. ``--until HH:MM`` (UTC) stops starting new deals after that time.

    nice -n 19 python scripts/coop_bound.py --deals 1000 --json benchmarks/coop_bound.json --resume
    thermopylae-coop-bound --deals 20 --json bound.json          # the same command, installed

The solvers are in :mod:`thermopylae_agents.coop_bound`; this module is the command line around them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from thermopylae_agents.coop_bound import DeckClairvoyantSolver, deal_orders, policy_value
from thermopylae_agents.coop_heuristic import CoopHeuristic
from thermopylae_env.coop import CoopGame


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
    if heuristic is not None:
        start = time.perf_counter()
        memo: dict = {}
        row["heuristic"] = policy_value(game, game.new_state(*orders), heuristic.choose_state, memo)
        row["heuristic_states"] = len(memo)
        row["heuristic_seconds"] = time.perf_counter() - start
        if row["heuristic"] > bound + 1e-9:
            raise AssertionError(f"deal {seed}: the heuristic's value exceeds the bound")
    return row


def read_done(path: Path, config: dict) -> dict[int, dict]:
    done: dict[int, dict] = {}
    if not path.exists():
        return done
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("config") == config:
            done[int(row["deal"])] = row
    return done


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=1000, help="number of deals (default 1000)")
    parser.add_argument("--start", type=int, default=0, help="first deal (default 0)")
    parser.add_argument("--players", type=int, default=1, help="team size 1..4 (default 1; 2-4: slow)")
    parser.add_argument("--mode", choices=("expect", "lucky"), default="expect",
                        help="expect: dice unknown (the bound); lucky: best dice outcome")
    parser.add_argument("--no-heuristic", action="store_true", help="skip the heuristic's exact value")
    parser.add_argument("--max-states", type=int, default=40_000_000, help="memo limit per deal")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/coop_bound.json"))
    parser.add_argument("--progress", type=Path, default=None,
                        help="JSONL of finished deals (default: the JSON path with .jsonl)")
    parser.add_argument("--resume", action="store_true", help="skip deals already in the progress file")
    parser.add_argument("--until", default=None, help="UTC HH:MM after which no new deal is started")
    args = parser.parse_args(argv)
    if args.deals < 1 or args.start < 0:
        parser.error("--deals must be >= 1 and --start >= 0")
    if not 1 <= args.players <= 4:
        parser.error("--players must be 1..4")
    deadline = None
    if args.until is not None:
        try:
            hour, minute = (int(x) for x in args.until.split(":"))
            now = dt.datetime.now(dt.timezone.utc)
            deadline = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        except ValueError:
            parser.error(f"--until must be HH:MM, got {args.until!r}")
    progress = args.progress or args.json.with_suffix(".jsonl")
    config = {"players": args.players, "mode": args.mode, "heuristic": not args.no_heuristic}

    game = CoopGame(args.players)
    solver = DeckClairvoyantSolver(game, args.mode, max_states=args.max_states)
    heuristic = None if args.no_heuristic else CoopHeuristic()
    done = read_done(progress, config) if args.resume else {}
    if not args.resume and progress.exists():
        progress.unlink()
    progress.parent.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    started = time.perf_counter()
    stopped_early = False
    print(f"{'deal':>5} {'bound':>8} {'heur.':>8} {'states':>10} {'s':>7}", flush=True)
    for seed in range(args.start, args.start + args.deals):
        if seed in done:
            continue
        if deadline is not None and dt.datetime.now(dt.timezone.utc) >= deadline:
            stopped_early = True
            break
        row = solve_deal(seed, game, solver, heuristic)
        row["config"] = config
        done[seed] = row
        with progress.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        heur = row.get("heuristic", math.nan)
        print(f"{seed:>5} {row['bound']:8.4f} {heur:8.4f} {row['bound_states']:>10} "
              f"{row['bound_seconds']:7.1f}", flush=True)

    rows = [done[s] for s in sorted(done) if args.start <= s < args.start + args.deals]
    bound = mean_interval([r["bound"] for r in rows])
    summary = {
        "description": "exact win probability of a player who knows both deck orders but not the dice "
                       f"(mode {args.mode}), per evaluation deal",
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "config": {**config, "start": args.start, "deals_requested": args.deals,
                   "max_states": args.max_states, "backend": solver.backend},
        "deals_done": len(rows),
        "stopped_early": stopped_early,
        "bound": bound,
        "timing": {
            "wall_seconds_this_run": time.perf_counter() - started,
            "bound_seconds_total": sum(r["bound_seconds"] for r in rows),
            "bound_seconds_mean": sum(r["bound_seconds"] for r in rows) / max(len(rows), 1),
            "bound_states_mean": sum(r["bound_states"] for r in rows) / max(len(rows), 1),
            "bound_states_max": max((r["bound_states"] for r in rows), default=0),
        },
        "machine": {"cpus": os.cpu_count(), "load_start": load_start, "load_end": os.getloadavg(),
                    "python": platform.python_version(), "platform": platform.platform(),
                    "niceness": os.nice(0)},
        "commit": _git_commit(),
        "deals": rows,
    }
    if heuristic is not None:
        summary["heuristic"] = mean_interval([r["heuristic"] for r in rows])
        summary["gap_bound_minus_heuristic"] = mean_interval([r["bound"] - r["heuristic"] for r in rows])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(summary, indent=1) + "\n")

    print()
    print(f"deals {args.start}..{args.start + args.deals - 1}: {len(rows)} done"
          + (" (stopped at --until)" if stopped_early else ""))
    print(f"{'quantity':<36} {'mean':>8} {'95% interval':>20}")
    items = [("deck-clairvoyant bound", bound)]
    if heuristic is not None:
        items += [("heuristic (exact, same deals)", summary["heuristic"]),
                  ("gap bound - heuristic (paired)", summary["gap_bound_minus_heuristic"])]
    for name, stat in items:
        print(f"{name:<36} {stat['mean']:8.4f} [{stat['low']:8.4f}, {stat['high']:8.4f}]")
    print(f"mean {summary['timing']['bound_seconds_mean']:.1f} s and "
          f"{summary['timing']['bound_states_mean']:.0f} states per deal; JSON: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
