"""The co-op search player's two engines: time per move and strength on the same deals.

    python benchmarks/search_speed.py              # the full run (about an hour: see benchmarks/README.md)
    python benchmarks/search_speed.py --positions 6 --games 2 --json /tmp/look.json

A developer script, not a test. :class:`~thermopylae_agents.players.coop_search.CoopSearchExpert` with
``engine="python"`` (rollouts through the reference engine and the Python heuristic: the search before the
compiled engine) and ``engine="compiled"`` (the default), in one process:

* **speed**: positions of heuristic games (every team size of ``--players``; the player to move searches
  them with the search's settings) are searched by both engines, each from a fresh player of the same seed,
  one position after the other; each ``act`` is timed (wall clock and process CPU). Both players draw the
  same samples and dice, so they search the same candidates with the same rollouts: the table shows the
  mean time per move of each engine, over all moves and over the moves that searched (more than one
  candidate), and the ratio. The compiled kernels are compiled (or loaded from numba's disk cache) before
  the timer starts;
* **strength**: both engines play the same ``--games`` deals (deal and game chance from the deal's seed,
  the player's seed from it too), paired: win rates with Wilson intervals, the paired difference with its
  interval and McNemar's exact p (``thermopylae_agents.evaluation.stats``), and the games whose moves
  differed anywhere (the engines play the same moves, so 0 is expected).

The compiled engine's win rate against its search effort is ``benchmarks/search_effort.py``.

The JSON records the settings, the machine (CPUs, load average at the start and the end of each part) and
every number of the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval
from thermopylae_agents.players.coop_heuristic import heuristic_positions
from thermopylae_agents.players.coop_search import CoopSearchExpert
from thermopylae_agents.policies.provenance import load_average
from thermopylae_env.coop.rules import CoopGame

HERE = Path(__file__).resolve().parent
ENGINES = ("python", "compiled")


# A fifth of the positions' moves are random, to vary the positions.
RANDOM_SHARE = 0.2


def _warm_up(num_players: int, options: dict) -> None:
    player = CoopSearchExpert(num_players=num_players, seed=0, **{**options, "n_determinizations": 2,
                                                                  "rollouts": 2})
    for obs, mask in heuristic_positions(num_players, 12345, RANDOM_SHARE, count=6):
        player.act(obs, mask)


def speed(players: list[int], count: int, seed: int, options: dict) -> list[dict]:
    rows = []
    for num_players in players:
        _warm_up(num_players, options)
        positions = heuristic_positions(num_players, seed + num_players, RANDOM_SHARE, count=count)
        timings: dict[str, dict[str, list[float]]] = {}
        moves: dict[str, list[int]] = {}
        searched: list[bool] = []
        for engine in ENGINES:
            player = CoopSearchExpert(num_players=num_players, seed=seed, engine=engine, **options)
            wall, cpu, chosen = [], [], []
            for obs, mask in positions:
                w0, c0 = time.perf_counter(), time.process_time()
                chosen.append(player.act(obs, mask))
                wall.append(time.perf_counter() - w0)
                cpu.append(time.process_time() - c0)
                if engine == "compiled":
                    searched.append(len(player.last_values) > 1)
            timings[engine] = {"wall": wall, "cpu": cpu}
            moves[engine] = chosen
        row = {"num_players": num_players, "positions": len(positions), "searched": int(sum(searched)),
               "same_moves": moves["python"] == moves["compiled"]}
        for engine in ENGINES:
            for clock in ("wall", "cpu"):
                values = timings[engine][clock]
                on_searched = [v for v, s in zip(values, searched, strict=True) if s] or [0.0]
                row[f"{engine}_{clock}_ms"] = 1000 * statistics.fmean(values)
                row[f"{engine}_{clock}_searched_ms"] = 1000 * statistics.fmean(on_searched)
        for clock in ("wall", "cpu"):
            row[f"speedup_{clock}"] = row[f"python_{clock}_ms"] / max(row[f"compiled_{clock}_ms"], 1e-12)
            row[f"speedup_{clock}_searched"] = (row[f"python_{clock}_searched_ms"]
                                                / max(row[f"compiled_{clock}_searched_ms"], 1e-12))
        rows.append(row)
        print(f"  {num_players}p: {len(positions)} moves ({row['searched']} searched), "
              f"python {row['python_cpu_ms']:.1f} ms, compiled {row['compiled_cpu_ms']:.2f} ms CPU per move: "
              f"{row['speedup_cpu']:.0f}x (searched moves {row['speedup_cpu_searched']:.0f}x), "
              f"same moves {row['same_moves']}", flush=True)
    return rows


def play(num_players: int, deal_seed: int, engine: str, options: dict) -> tuple[bool, list[int], float]:
    """One game on the deal of ``deal_seed``: won, the moves, CPU seconds."""
    game = CoopGame(num_players=num_players)
    player = CoopSearchExpert(num_players=num_players, seed=deal_seed, engine=engine, **options)
    rng = np.random.default_rng(deal_seed)
    state = game.init(rng)
    moves = []
    c0 = time.process_time()
    while not state.terminated:
        action = player.act(game.observe(state), game.legal_action_mask(state))
        moves.append(action)
        game.step(state, action, rng)
    return bool(state.won), moves, time.process_time() - c0


def _rate(wins: int, games: int) -> dict:
    low, high = wilson_interval(wins, games)
    return {"wins": wins, "games": games, "rate": wins / games if games else 0.0, "wilson95": [low, high]}


def strength(players: list[int], games: int, seed: int, options: dict) -> list[dict]:
    rows = []
    for num_players in players:
        wins: dict[str, list[bool]] = {e: [] for e in ENGINES}
        seconds: dict[str, float] = {e: 0.0 for e in ENGINES}
        differ = 0
        for g in range(games):
            played = {}
            for engine in ENGINES:
                won, moves, cpu = play(num_players, seed + g, engine, options)
                wins[engine].append(won)
                seconds[engine] += cpu
                played[engine] = moves
            differ += played["python"] != played["compiled"]
        comparison = paired_comparison("compiled", wins["compiled"], "python", wins["python"])
        row = {"num_players": num_players, "games": games, "deal_seeds": [seed, seed + games - 1],
               "games_with_different_moves": differ, "paired": comparison.summary()}
        for engine in ENGINES:
            row[engine] = {**_rate(sum(wins[engine]), games),
                           "cpu_s_per_game": seconds[engine] / max(games, 1)}
        rows.append(row)
        print(f"  {num_players}p: compiled {row['compiled']['wins']}/{games}, python {row['python']['wins']}/"
              f"{games}, McNemar p {row['paired']['p_value']:.3g}, games with different "
              f"moves {differ}; CPU s per game python {row['python']['cpu_s_per_game']:.1f}, compiled "
              f"{row['compiled']['cpu_s_per_game']:.2f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[1, 2, 3, 4], help="team sizes")
    parser.add_argument("--positions", type=int, default=60, help="positions timed per team size (0: skip)")
    parser.add_argument("--games", type=int, default=48, help="paired games per team size (0: skip)")
    parser.add_argument("--n-determinizations", type=int, default=32)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0, help="first deal seed (positions, games)")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "search_speed.json")
    args = parser.parse_args(argv)
    if any(p not in (1, 2, 3, 4) for p in args.players):
        parser.error("team sizes are 1..4")
    options = {"n_determinizations": args.n_determinizations, "rollouts": args.rollouts}
    result: dict = {
        "command": " ".join(["python", "benchmarks/search_speed.py",
                             *(argv if argv is not None else sys.argv[1:])]),
        "search": {**options, "other_settings": "CoopSearchExpert defaults"},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                    "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS", "")},
        "seed": args.seed,
    }
    if args.positions > 0:
        print(f"speed: {args.positions} positions per team size, {options}", flush=True)
        load = load_average()
        result["speed"] = speed(args.players, args.positions, args.seed, options)
        result["speed_load"] = {"start": load, "end": load_average()}
    if args.games > 0:
        print(f"strength: {args.games} paired games per team size", flush=True)
        load = load_average()
        result["strength"] = strength(args.players, args.games, args.seed, options)
        result["strength_load"] = {"start": load, "end": load_average()}
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
