"""The co-op search expert measured on thousands of deals, paired with the other agents on the same deals.

The search's games are played in chunks (``thermopylae evaluate --players N search --games G --seed S
--json CHUNK.json``, one process each, so that the work can be spread over cores and resumed). This script
joins the chunks of each team size with the committed evaluation of the other agents on the same seeds
(``coop_solo_eval.json``, ``coop_{N}p_eval.json``: random, the heuristic and the shipped policy, per-game
outcomes included), keeps the deals that every agent played, and writes one file in the format of
``thermopylae evaluate --out``: each agent's win rate with its Wilson interval and the paired comparison
of the search with each other agent (McNemar's exact test, Newcombe's interval of the difference).

Usage (from the repository root)::

    python benchmarks/search_yardstick.py --chunks runs/yard \
        --json benchmarks/results/coop_search_yardstick.json

Chunk files are named ``p{N}_{OFFSET}.json`` (N the team size); their ``base_seed`` says which deals they
played.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval

RESULTS = Path(__file__).resolve().parent / "results"
REFERENCE = {1: "coop_solo_eval.json", 2: "coop_2p_eval.json", 3: "coop_3p_eval.json", 4: "coop_4p_eval.json"}


def _outcomes(entry: dict) -> dict[int, tuple[bool, int, int]]:
    """Seed -> (won, turns, steps) of one agent's per-game record."""
    games = entry["per_game"]
    return {
        int(seed): (bool(won), int(turns), int(steps))
        for seed, won, turns, steps in zip(games["seed"], games["won"], games["turns"], games["steps"],
                                           strict=True)
    }


def _search_chunks(directory: Path, players: int) -> tuple[dict[int, tuple[bool, int, int]], list[dict]]:
    """The search's outcomes over every chunk of one team size, and a summary of each chunk."""
    outcomes: dict[int, tuple[bool, int, int]] = {}
    chunks = []
    for path in sorted(directory.glob(f"p{players}_*.json")):
        (entry,) = [e for e in json.loads(path.read_text())["results"] if e["agent"].startswith("search")]
        games = _outcomes(entry)
        overlap = set(games) & set(outcomes)
        if overlap:
            raise SystemExit(f"search_yardstick.py: error: {path.name} plays deal {min(overlap)} again")
        outcomes.update(games)
        chunks.append({"file": path.name, "base_seed": entry["base_seed"], "games": entry["games"],
                       "agent_seed": entry["agent_seed"], "seconds": entry["seconds"]})
    return outcomes, chunks


def _result(agent: str, games: dict[int, tuple[bool, int, int]], seeds: list[int], template: dict) -> dict:
    won = [games[s][0] for s in seeds]
    wins = sum(won)
    return {
        "env_id": template["env_id"], "agent": agent, "games": len(seeds), "wins": wins,
        "win_rate": wins / len(seeds), "ci95": list(wilson_interval(wins, len(seeds))),
        "mean_turns": sum(games[s][1] for s in seeds) / len(seeds),
        "mean_steps": sum(games[s][2] for s in seeds) / len(seeds),
        "per_game": {"seed": seeds, "won": [int(w) for w in won],
                     "turns": [games[s][1] for s in seeds], "steps": [games[s][2] for s in seeds]},
    }


def team_size(directory: Path, players: int) -> dict | None:
    """The joined evaluation of one team size, or None when it has no chunk."""
    search, chunks = _search_chunks(directory, players)
    if not search:
        return None
    reference = json.loads((RESULTS / REFERENCE[players]).read_text())
    others = {entry["agent"]: _outcomes(entry) for entry in reference["results"]}
    seeds = sorted(s for s in search if all(s in games for games in others.values()))
    if len(seeds) != len(search):
        raise SystemExit(f"search_yardstick.py: error: {len(search) - len(seeds)} search deals of "
                         f"{players} player(s) are not in {REFERENCE[players]}")
    template = reference["results"][0]
    results = [_result("search", search, seeds, template)]
    results += [_result(agent, games, seeds, template) for agent, games in others.items()]
    won = {r["agent"]: r["per_game"]["won"] for r in results}
    paired = [vars(paired_comparison("search", won["search"], agent, won[agent]))
              for agent in others]
    for pair in paired:
        pair["ci95"] = list(pair["ci95"])
    return {
        "title": f"thermopylae/Coop-v0, {players} player(s): {len(seeds):,} paired deals "
                 f"(seeds {seeds[0]}..{seeds[-1]})",
        "players": players, "results": results, "paired": paired, "search_chunks": chunks,
        "reference": REFERENCE[players],
        "search_wall_seconds_per_game": sum(c["seconds"] for c in chunks) / len(seeds),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=Path, required=True, help="folder of the p{N}_{OFFSET}.json chunks")
    parser.add_argument("--json", type=Path, required=True, help="output file")
    args = parser.parse_args(argv)
    if not args.chunks.is_dir():
        parser.error(f"--chunks: {args.chunks} is not a folder")
    sizes = {str(p): r for p in (1, 2, 3, 4) if (r := team_size(args.chunks, p)) is not None}
    document = {
        "command": "thermopylae evaluate --players N search --games 500 --seed S --json pN_S.json (chunks); "
                   "python benchmarks/search_yardstick.py --chunks DIR --json " + str(args.json),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "load_at_join": list(os.getloadavg())},
        "team_sizes": sizes,
    }
    args.json.write_text(json.dumps(document, indent=1) + "\n")
    for result in sizes.values():
        print(result["title"])
        for entry in result["results"]:
            low, high = entry["ci95"]
            print(f"  {entry['agent']:<24} {entry['win_rate']:.2%} [{low:.2%}, {high:.2%}]")
        for pair in result["paired"]:
            low, high = pair["ci95"]
            print(f"  search - {pair['b']:<15} {pair['difference']:+.2%} [{low:+.2%}, {high:+.2%}] "
                  f"p = {pair['p_value']:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
