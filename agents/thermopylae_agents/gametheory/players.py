"""Players as strategies on a duel tree, and how far each is from the equilibrium.

[`agent_strategy`][thermopylae_agents.gametheory.players.agent_strategy] turns any player with
``act(observation, action_mask)`` that reads only its own observation (the duel heuristics, a frozen policy)
into the behaviour strategy it plays on the tree: at each of its information sets it is asked once, with the
observation and legal actions of that set.
[`solve_member`][thermopylae_agents.gametheory.players.solve_member] solves one reduced duel and measures the
exact exploitability of the uniformly random players and the heuristics against it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import numpy as np

from thermopylae_agents.gametheory.cfr import (
    Evaluator,
    best_response,
    expected_value,
    nash_conv,
    solve,
    uniform_profile,
)
from thermopylae_agents.gametheory.tree import GameTree, build_tree
from thermopylae_env.duel.config import DuelConfig
from thermopylae_env.duel.layout import GREEK, PERSIAN, PLAYER_NAMES
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian

__all__ = ["ObservationPlayer", "agent_strategy", "combine", "strategy_report", "solve_member"]


class ObservationPlayer(Protocol):
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...


def agent_strategy(tree: GameTree, agent: ObservationPlayer, player: int, base: np.ndarray | None = None
                   ) -> np.ndarray:
    """The profile ``base`` (uniform if None) with ``player``'s part replaced by ``agent``'s pure choices."""
    profile = uniform_profile(tree) if base is None else base.copy()
    for info in np.flatnonzero(tree.info_player == player):
        start, size = int(tree.info_start[info]), int(tree.info_size[info])
        action = int(agent.act(tree.info_obs[info], tree.info_mask[info]))
        actions = tree.sa_action[start:start + size].tolist()
        if action not in actions:
            raise ValueError(
                f"{type(agent).__name__} chose illegal action {action} at information set {info}")
        profile[start:start + size] = 0.0
        profile[start + actions.index(action)] = 1.0
    return profile


def combine(ev: Evaluator, greek: np.ndarray, persian: np.ndarray) -> np.ndarray:
    """The profile that plays ``greek``'s Greek part and ``persian``'s Persian part."""
    return np.where(ev.sa_player == GREEK, greek, persian)


def strategy_report(ev: Evaluator, profile: np.ndarray, player: int, bounds: tuple[float, float],
                    equilibrium: np.ndarray) -> dict:
    """How much a best responder wins against ``player``'s part of ``profile``.

    ``bounds`` are the (lower, upper) bounds on the Greek's game value; the exploitability of the
    strategy is the value minus what it keeps against a best response, so it lies in the returned
    interval. Also its return against the equilibrium's other side."""
    _, br_value = best_response(ev, profile, 1 - player)
    low, high = bounds
    sign = 1.0 if player == GREEK else -1.0
    kept = sign * br_value  # the player's own return against the best response
    own_low, own_high = (low, high) if player == GREEK else (-high, -low)
    against_eq = expected_value(ev, combine(ev, profile, equilibrium) if player == GREEK
                                else combine(ev, equilibrium, profile))
    return {
        "return_against_best_response": kept,
        "exploitability_bounds": [own_low - kept, own_high - kept],
        "return_against_equilibrium": sign * against_eq,
    }


def solve_member(config: DuelConfig, tolerance: float, max_iterations: int = 20_000, check_every: int = 50,
                 progress: Callable[[str], None] | None = None) -> dict:
    """Build, solve and measure one reduced duel; the JSON-ready record of `benchmarks` results."""
    say = progress or (lambda _: None)
    started = time.perf_counter()
    tree = build_tree(config)
    build_seconds = time.perf_counter() - started
    say(f"{config.name}: {tree.num_nodes} nodes built in {build_seconds:.1f} s")
    ev = Evaluator(tree)
    result = solve(tree, tolerance, max_iterations, check_every, ev,
                   lambda i, n: say(f"{config.name}: iteration {i}, NashConv {n:.2e}"))
    check = result.check
    bounds = (check.persian_br, check.greek_br)
    eq = result.profile
    uniform = uniform_profile(tree)
    heuristic = agent_strategy(tree, HeuristicGreek(hand_limit=config.hand_limit), GREEK)
    heuristic = agent_strategy(tree, HeuristicPersian(hand_limit=config.hand_limit), PERSIAN, heuristic)
    players = {}
    for label, profile in (("uniform_random", uniform), ("heuristic", heuristic)):
        for side in (GREEK, PERSIAN):
            players[f"{label}_{PLAYER_NAMES[side]}"] = strategy_report(ev, profile, side, bounds, eq)
    profiles = {"uniform_random": nash_conv(ev, uniform).to_dict(),
                "heuristic": nash_conv(ev, heuristic).to_dict()}
    return {
        "config": config.to_dict(),
        "tree": tree.summary(),
        "build_seconds": round(build_seconds, 2),
        "solver": {"method": "CFR+ (alternating updates, linear averaging)", "tolerance_nash_conv": tolerance,
                   "iterations": result.iterations, "seconds": round(result.seconds, 2),
                   "history": [[i, n] for i, n in result.history]},
        "equilibrium": check.to_dict(),
        "game_value_bounds": [bounds[0], bounds[1]],
        "players": players,
        "profiles": profiles,
        "seconds": round(time.perf_counter() - started, 2),
    }
