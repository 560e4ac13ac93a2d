#!/usr/bin/env python
"""Random rollouts of thermopylae/Coop-v0: the win rate of uniformly random play.

Masked (default): each step picks uniformly among the legal actions (``info["action_mask"]``) and the
script prints the win rate with its 95% Wilson interval, the mean episode length and how the games ended.
``--unmasked``: each step samples the whole action space, showing the documented illegal-action policy
(the episode ends as a loss with ``info["illegal_action"]``); the script prints how the episodes ended.

    .venv/bin/python benchmarks/rollout_coop.py                   # 10,000 solo episodes
    .venv/bin/python benchmarks/rollout_coop.py --players 1 2 3 4 -n 2000
    .venv/bin/python benchmarks/rollout_coop.py --unmasked -n 1000
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from thermopylae_agents.evaluation.stats import wilson_interval
from thermopylae_env.coop.env import CoopEnv


def rollout(players: int, episodes: int, seed: int, unmasked: bool, persian_deck: str | None) -> None:
    env = CoopEnv(num_players=players, persian_deck=persian_deck)
    env.action_space.seed(seed)
    rng = np.random.default_rng(seed)
    wins = 0
    steps = 0
    ends: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    start = time.perf_counter()
    for episode in range(episodes):
        _, info = env.reset(seed=seed + episode)
        length = 0
        while True:
            if unmasked:
                action = int(env.action_space.sample())
            else:
                legal = np.flatnonzero(info["action_mask"])
                action = int(legal[rng.integers(legal.size)])
            _, _, terminated, truncated, info = env.step(action)
            length += 1
            if terminated or truncated:
                break
        steps += length
        wins += bool(info["is_success"])
        if info.get("illegal_action"):
            ends["illegal action (loss)"] += 1
            reasons[info["illegal_reason"].split(":")[-1].strip()] += 1
        else:
            ends[f"{'win' if env.state.won else 'loss'}: {env.state.reason}"] += 1
    elapsed = time.perf_counter() - start
    low, high = wilson_interval(wins, episodes)
    mode = "unmasked random" if unmasked else "masked random"
    print(f"{mode}, {players} player(s), {episodes} episodes (seeds {seed}..{seed + episodes - 1})")
    print(f"  win rate {wins / episodes:.4f}  ({wins} wins), 95% Wilson interval [{low:.4f}, {high:.4f}]")
    print(f"  mean length {steps / episodes:.2f} steps  ({steps / elapsed:,.0f} steps/s)")
    print("  endings: " + ", ".join(f"{name} {count}" for name, count in sorted(ends.items())))
    if reasons:
        print("  most common illegal reasons:")
        for reason, count in reasons.most_common(5):
            print(f"    {count:6d}  {reason}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--episodes", type=int, default=10_000, help="episodes per player count")
    parser.add_argument("--players", type=int, nargs="+", default=[1], choices=[1, 2, 3, 4])
    parser.add_argument("--seed", type=int, default=0, help="first reset seed (episode i uses seed + i)")
    parser.add_argument("--unmasked", action="store_true", help="sample the whole action space")
    parser.add_argument("--persian-deck", default=None, help="CSV of the Persian deck (white,red,bonus)")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    for players in args.players:
        rollout(players, args.episodes, args.seed, args.unmasked, args.persian_deck)


if __name__ == "__main__":
    main()
