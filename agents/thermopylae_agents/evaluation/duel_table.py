"""Win-rate table of the duel's baseline players: Greek agent x Persian agent, random and heuristic.

Each pairing plays ``--games`` games (default 10,000) on the rules engine. Game ``i`` of every pairing uses
the same seed, so the pairings see the same deals (the random players and the random discards then go
their own ways). The table gives the Greek win rate with its 95% Wilson interval, the Persian win rate,
the mean number of turns and how the games ended; ``--out FILE`` also writes the numbers as JSON.

    thermopylae duel-table                                    # 4 x 10,000 games
    thermopylae duel-table --games 1000 --out duel_table.json
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from thermopylae_agents.evaluation.stats import wilson_interval
from thermopylae_env.duel.layout import GREEK, PERSIAN
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian, RandomAgent
from thermopylae_env.duel.rules import DuelGame

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
