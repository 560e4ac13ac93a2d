"""Win-rate table of the duel's baseline players: Greek agent x Persian agent, random and heuristic.

Each pairing plays ``--games`` games (default 10,000) on the rules engine. Game ``i`` of every pairing uses
the same seed, so the pairings see the same deals (the random players and the random discards then go
their own ways). The table gives the Greek win rate with its 95% Wilson interval, the Persian win rate,
the mean number of turns and how the games ended; ``--json PATH`` also writes the numbers as JSON.

    thermopylae-duel-table                                    # 4 x 10,000 games
    thermopylae-duel-table --games 1000 --json duel_table.json
    .venv/bin/python scripts/duel_table.py --games 1000       # the same, from a checkout
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from thermopylae_agents.evaluation.stats import wilson_interval
from thermopylae_agents.players.duel_heuristic import HeuristicGreek, HeuristicPersian
from thermopylae_agents.players.random_agent import RandomAgent
from thermopylae_env.duel import GREEK, PERSIAN, DuelGame

PAIRINGS = (  # (Greek agent, Persian agent)
    ("random", "random"),
    ("heuristic", "random"),
    ("random", "heuristic"),
    ("heuristic", "heuristic"),
)


def make_player(kind: str, side: int):
    """``act(observation, mask, rng) -> action`` for a player ``kind`` of ``side``."""
    if kind == "random":
        agent = RandomAgent()
        return lambda obs, mask, rng: agent.act(obs, mask, rng)
    player = HeuristicGreek() if side == GREEK else HeuristicPersian()
    return lambda obs, mask, rng: player.act(obs, mask)


def play_pairing(greek: str, persian: str, games: int, seed: int) -> dict:
    game = DuelGame()
    players = (make_player(greek, GREEK), make_player(persian, PERSIAN))
    greek_wins = 0
    turns = 0
    actions = 0
    ends: Counter[str] = Counter()
    start = time.perf_counter()
    for i in range(games):
        rng = np.random.default_rng([seed, i])
        state = game.init(rng)
        while not state.terminated:
            p = state.current_player
            action = players[p](game.observe(state, p), game.legal_action_mask(state, np.int8), rng)
            game.step(state, action, rng)
        greek_wins += state.winner == GREEK
        turns += state.turn
        actions += state.actions_taken
        ends[state.reason] += 1
    elapsed = time.perf_counter() - start
    low, high = wilson_interval(greek_wins, games)
    return {
        "greek": greek,
        "persian": persian,
        "games": games,
        "greek_wins": greek_wins,
        "greek_win_rate": greek_wins / games,
        "greek_win_rate_ci95": [low, high],
        "persian_win_rate": 1 - greek_wins / games,
        "mean_turns": turns / games,
        "mean_micro_actions": actions / games,
        "end_reasons": dict(ends),
        "seconds": elapsed,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000, help="games per pairing (default 10,000)")
    parser.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write JSON there")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error("--games must be at least 1")
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
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
