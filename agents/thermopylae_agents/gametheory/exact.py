"""The exact exploitability of any duel player on a reduced duel (``thermopylae exploitability --member``).

[`player_profile`][thermopylae_agents.gametheory.exact.player_profile] turns a player spec into its strategy
on the member's tree: ``random`` is the uniform strategy itself (not a sample of it), ``heuristic`` the
side's heuristic of ``duel/opponents.py`` run with the member's hand limit, anything else an agent built by
[`make_agent`][thermopylae_agents.policies.registry.make_agent] and asked once per information set (a
shipped policy plays its most likely legal action, so it is a pure strategy).
[`exact_exploitability`][thermopylae_agents.gametheory.exact.exact_exploitability] solves the member with
CFR+ to a NashConv tolerance (the game value is then known to lie in an interval of that width) and reports
each player's return against an exact best response and its exploitability bounds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from thermopylae_agents.gametheory.cfr import Evaluator, nash_conv, solve, uniform_profile
from thermopylae_agents.gametheory.players import agent_strategy, strategy_report
from thermopylae_agents.gametheory.tree import GameTree, build_tree
from thermopylae_agents.policies.registry import AgentSpecError, make_agent
from thermopylae_env import GREEK_ID, PERSIAN_ID
from thermopylae_env.duel.config import SMALL_DUELS, DuelConfig
from thermopylae_env.duel.layout import GREEK, PLAYER_NAMES
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian

__all__ = ["MemberError", "exact_exploitability", "member_config", "player_profile"]


class MemberError(ValueError):
    """An unknown member of the family, or a player that cannot play the member (one line)."""


def member_config(name: str) -> DuelConfig:
    """The member ``name`` of [`SMALL_DUELS`][thermopylae_env.duel.config.SMALL_DUELS]."""
    if name not in SMALL_DUELS:
        raise MemberError(f"unknown duel member {name!r}; known: {', '.join(SMALL_DUELS)}")
    return SMALL_DUELS[name]


def player_profile(tree: GameTree, spec: str, side: int) -> np.ndarray:
    """The uniform profile with ``side``'s part replaced by the strategy of the player ``spec``."""
    name = PLAYER_NAMES[side]
    if spec == "random":
        return uniform_profile(tree)
    if spec == "heuristic":
        limit = tree.config.hand_limit
        agent = HeuristicGreek(hand_limit=limit) if side == GREEK else HeuristicPersian(hand_limit=limit)
    else:
        try:
            agent, _ = make_agent(spec, GREEK_ID if side == GREEK else PERSIAN_ID, seed=0)
        except (AgentSpecError, ValueError, FileNotFoundError) as err:
            raise MemberError(f"{spec} ({name}) cannot play the {tree.config.name!r} duel: {err}") from None
    try:
        return agent_strategy(tree, agent, side)
    except (ValueError, IndexError) as err:
        raise MemberError(f"{spec} ({name}) cannot play the {tree.config.name!r} duel: {err}") from None


def exact_exploitability(config: DuelConfig, players: Sequence[tuple[str, int]], tolerance: float = 1e-3,
                         max_iterations: int = 20_000) -> dict:
    """The exact exploitability of each ``(spec, side)`` on ``config``: every player is turned into its
    strategy first (a player that cannot play the member is refused before the solve), then the member is
    solved and each strategy is measured against an exact best response. JSON-ready."""
    started = time.perf_counter()
    tree = build_tree(config)
    ev = Evaluator(tree)
    profiles = [(spec, side, player_profile(tree, spec, side)) for spec, side in players]
    result = solve(tree, tolerance, max_iterations, evaluator=ev)
    bounds = (result.check.persian_br, result.check.greek_br)
    rows = []
    for spec, side, profile in profiles:
        report = strategy_report(ev, profile, side, bounds, result.profile)
        rows.append({"player": spec, "side": PLAYER_NAMES[side], **report})
    return {
        "config": config.to_dict(),
        "tree": tree.summary(),
        "method": "exact: CFR+ to the NashConv tolerance and exact best responses on the whole tree",
        "tolerance_nash_conv": tolerance,
        "solver_iterations": result.iterations,
        "equilibrium": nash_conv(ev, result.profile).to_dict(),
        "game_value_bounds": [bounds[0], bounds[1]],
        "players": rows,
        "seconds": round(time.perf_counter() - started, 2),
    }

