"""What the exact deck-clairvoyant bound costs per team size: memoized states and CPU seconds of the
compiled kernel, on whole deals and on the states of the same deals with fewer Spartan cards left.

For each team size and evaluation deal (``deal_orders(deal, players)``: game ``deal`` of
``scripts/evaluate.py --seed 0``), the heuristic plays the deal (dice from ``default_rng(deal)``) and the
first decision with at most ``C`` Spartan cards left in the deck and the hands is solved for each ``C`` of
``--cards``, smallest first, until one fills the memo (``--max-states``); then the whole deal is solved
with ``--deal-max-states``. A solve that fills the memo is recorded as such (its value is unknown): the
row says how many states and CPU seconds it had used.

    nice -n 19 python benchmarks/coop_bound_team_cost.py --players 1 2 3 4 --deals 0 1 \
        --json benchmarks/results/coop_bound_team_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from thermopylae_agents.evaluation.coop_bound import DeckClairvoyantSolver, deal_orders
from thermopylae_agents.players.coop_heuristic import CoopHeuristic
from thermopylae_agents.policies.provenance import git_commit
from thermopylae_env.coop.layout import SPARTAN_DECK_SIZE
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import CoopState


def cards_left(state: CoopState) -> int:
    return SPARTAN_DECK_SIZE - state.spartan_pos + sum(len(hand) for hand in state.hands)


def heuristic_states(game: CoopGame, deal: int, cards: list[int]) -> dict[int, CoopState]:
    """The first decision of the heuristic's game on ``deal`` with at most ``c`` cards left, per ``c``."""
    heuristic = CoopHeuristic()
    rng = np.random.default_rng(deal)
    state = game.new_state(*deal_orders(deal, game.num_players))
    found: dict[int, CoopState] = {}
    while not state.terminated and len(found) < len(cards):
        if state.phase == 0:
            for c in cards:
                if c not in found and cards_left(state) <= c:
                    found[c] = state.copy()
        game.step(state, heuristic.choose_state(game, state), rng)
    return found


def timed_value(game: CoopGame, state: CoopState, max_states: int) -> dict:
    solver = DeckClairvoyantSolver(game, max_states=max_states)
    start = time.process_time()
    try:
        value: float | None = solver.value(state)
    except MemoryError:
        value = None
    row = {"value": value, "memo_full": value is None, "cpu_seconds": time.process_time() - start,
           "max_states": max_states}
    if value is not None:
        row["states"] = solver.stats.states
        row["lookups"] = solver.stats.lookups
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--deals", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--cards", type=int, nargs="+", default=[10, 12, 14, 16, 18])
    parser.add_argument("--max-states", type=int, default=5_000_000)
    parser.add_argument("--deal-max-states", type=int, default=20_000_000)
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/coop_bound_team_cost.json"))
    args = parser.parse_args(argv)
    if any(not 1 <= n <= 4 for n in args.players):
        parser.error("--players must be 1..4")
    load_start = os.getloadavg()
    rows = []
    for players in args.players:
        game = CoopGame(players)
        for state in heuristic_states(game, 0, [6]).values():
            DeckClairvoyantSolver(game).value(state)  # load the compiled kernel before timing
        for deal in args.deals:
            for c, state in sorted(heuristic_states(game, deal, sorted(args.cards)).items()):
                row = {"players": players, "deal": deal, "cards_left": cards_left(state), "cards_at_most": c,
                       "support": state.support, "marker": state.marker,
                       **timed_value(game, state, args.max_states)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if row["memo_full"]:
                    break
            state = game.new_state(*deal_orders(deal, players))
            row = {"players": players, "deal": deal, "cards_left": cards_left(state), "whole_deal": True,
                   "support": state.support, "marker": state.marker,
                   **timed_value(game, state, args.deal_max_states)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {
        "description": "memoized states and CPU seconds of the compiled deck-clairvoyant kernel per team "
                       "size, on whole deals and on the heuristic's states of the same deals with fewer "
                       "cards left",
        "command": " ".join(["python", "benchmarks/coop_bound_team_cost.py", *(argv or sys.argv[1:])]),
        "config": {"players": args.players, "deals": args.deals, "cards": args.cards,
                   "max_states": args.max_states, "deal_max_states": args.deal_max_states},
        "machine": {"cpus": os.cpu_count(), "load_start": load_start, "load_end": os.getloadavg(),
                    "python": platform.python_version(), "platform": platform.platform(),
                    "niceness": os.nice(0)},
        "commit": git_commit(),
        "rows": rows,
    }
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
