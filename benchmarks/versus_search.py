"""Agents paired with the search yardstick: each agent of an evaluation against the co-op search, same deals.

Issue #24 asks for a pure policy that beats the default search paired (the difference, its 95% interval and
McNemar's p) on the yardstick's deals. The search's games are committed in
``benchmarks/results/coop_search_yardstick.json`` (per game); this script takes a
``thermopylae evaluate --out`` file of other agents on the same seeds (per game, as ``evaluate`` writes it),
keeps the deals both played, and writes each agent's win rate and its paired comparison with the search. With
``--distill-report`` the ``report.json`` of the ``thermopylae distill`` run behind a policy is summarized in
the result (its config, its rounds' agreement and held-out win rates, its wall time).

Usage (from the repository root)::

    thermopylae evaluate --players 1 distilled=runs/ei/policy.json coop_maskable_ppo --games 5000 \\
        --json runs/ei/eval.json
    python benchmarks/versus_search.py --players 1 --eval runs/ei/eval.json \\
        --eval-command "thermopylae evaluate ..." --distill-report runs/ei/report.json \\
        --distill-settings benchmarks/expert_iteration_64x16.yaml \\
        --json benchmarks/results/expert_iteration_versus_search.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval
from thermopylae_agents.policies.provenance import Measurement

YARDSTICK = Path(__file__).resolve().parent / "results" / "coop_search_yardstick.json"
_ROUND_KEYS = ("round", "beta", "games", "decisions", "dataset_decisions", "agreement_before_training",
               "agreement_after_training", "seconds")


def outcomes(entry: dict) -> dict[int, bool]:
    """Seed -> won, from one agent's per-game record of an evaluation file."""
    games = entry.get("per_game")
    if not games:
        raise SystemExit(f"versus_search.py: error: agent {entry.get('agent')!r} has no per-game record")
    return {int(seed): bool(won) for seed, won in zip(games["seed"], games["won"], strict=True)}


def search_outcomes(players: int) -> tuple[dict[int, bool], dict]:
    """The yardstick search's outcomes for one team size, and its team-size block."""
    block = json.loads(YARDSTICK.read_text())["team_sizes"].get(str(players))
    if block is None:
        raise SystemExit(f"versus_search.py: error: {YARDSTICK.name} has no team size {players}")
    (entry,) = [e for e in block["results"] if e["agent"] == "search"]
    return outcomes(entry), block


def pair_with_search(players: int, evaluation: dict) -> dict:
    """Every agent of ``evaluation`` on the deals it shares with the search, paired with the search."""
    search, block = search_outcomes(players)
    agents = {entry["agent"]: outcomes(entry) for entry in evaluation["results"]}
    seeds = sorted(set(search).intersection(*agents.values()))
    if not seeds:
        raise SystemExit("versus_search.py: error: the evaluation shares no deal with the search yardstick")
    rows = []
    for agent, games in {"search": search, **agents}.items():
        wins = sum(games[s] for s in seeds)
        rows.append({"agent": agent, "games": len(seeds), "wins": wins, "win_rate": wins / len(seeds),
                     "ci95": list(wilson_interval(wins, len(seeds)))})
    paired = []
    for agent, games in agents.items():
        pair = vars(paired_comparison(agent, [games[s] for s in seeds], "search", [search[s] for s in seeds]))
        paired.append({**pair, "ci95": list(pair["ci95"])})
    return {"title": f"thermopylae/Coop-v0, {players} player(s): {len(seeds):,} paired deals "
                     f"(seeds {seeds[0]}..{seeds[-1]}) against the default search",
            "players": players, "search_title": block["title"], "results": rows, "paired": paired}


def distill_summary(report: dict) -> dict:
    """What a ``thermopylae distill`` report says about how its policy was made."""
    rounds = [{key: r.get(key) for key in _ROUND_KEYS} | {"held_out_win_rate": r["evaluation"]["win_rate"]}
              for r in report.get("rounds", [])]
    return {"command": report.get("command"), "config": report.get("config"), "rounds": rounds,
            "wall_seconds": report.get("wall_seconds"), "dataset_decisions": report.get("dataset_decisions")}


def main(argv: list[str] | None = None) -> int:
    measurement = Measurement()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, choices=(1, 2, 3, 4), required=True)
    parser.add_argument("--eval", type=Path, required=True, help="a `thermopylae evaluate --out` file")
    parser.add_argument("--eval-command", help="the command that wrote --eval (recorded in the result)")
    parser.add_argument("--distill-report", type=Path, help="report.json of the distill run behind a policy")
    parser.add_argument("--distill-settings", help="the committed copy of the settings file the run read")
    parser.add_argument("--json", type=Path, required=True, help="output file")
    args = parser.parse_args(argv)
    evaluation = json.loads(args.eval.read_text())
    document = {**measurement.header(__file__, argv), "evaluation_command": args.eval_command,
                **pair_with_search(args.players, evaluation)}
    if args.distill_report:
        document["distill"] = {**distill_summary(json.loads(args.distill_report.read_text())),
                               "settings_file": args.distill_settings}
    args.json.write_text(json.dumps(document, indent=1) + "\n")
    print(document["title"])
    for row in document["results"]:
        low, high = row["ci95"]
        print(f"  {row['agent']:<24} {row['win_rate']:.2%} [{low:.2%}, {high:.2%}]")
    for pair in document["paired"]:
        low, high = pair["ci95"]
        print(f"  {pair['a']:<20} - search {pair['difference']:+.2%} [{low:+.2%}, {high:+.2%}] "
              f"p = {pair['p_value']:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
