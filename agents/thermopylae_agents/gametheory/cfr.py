"""Exact values, best responses and CFR+ on a [`GameTree`][thermopylae_agents.gametheory.tree.GameTree], in
NumPy.

A *strategy profile* is one array over the tree's sequence indices: the probability of each action at its
information set, for both players at once (each information set belongs to one player).

* [`expected_value`][thermopylae_agents.gametheory.cfr.expected_value]: the Greek's expected return under a
  profile (the Persian's is its negative).
* [`best_response`][thermopylae_agents.gametheory.cfr.best_response]: an exact best response of one player to
  the other's fixed strategy. It respects information sets: the responder picks one action per information
  set, the one with the highest value summed over the set's nodes weighted by the chance and opponent reach,
  deepest sets first (the responder's later choices are fixed before an earlier one is made), so it knows only
  its information state.
* [`nash_conv`][thermopylae_agents.gametheory.cfr.nash_conv]: the sum of both players' gains from best
  responding, with the bounds on the game value it gives (the Greek's best-response value is an upper bound,
  the Persian's a lower one).
* [`solve`][thermopylae_agents.gametheory.cfr.solve]: CFR+ (regret matching+, alternating updates, linearly
  weighted average strategy) until the average profile's NashConv is below a tolerance.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from thermopylae_agents.gametheory.tree import CHANCE, GameTree
from thermopylae_env.duel.layout import GREEK, PERSIAN

__all__ = [
    "Evaluator", "NashConv", "SolveResult", "best_response", "expected_value", "nash_conv", "solve",
    "uniform_profile",
]


class Evaluator:
    """The tree's edges arranged by depth for vectorised forward (reach) and backward (value) passes."""

    def __init__(self, tree: GameTree) -> None:
        self.tree = tree
        depth = tree.node_depth[tree.edge_parent]
        order = np.lexsort((tree.edge_parent, depth))
        self.parent = tree.edge_parent[order]
        self.child = tree.edge_child[order]
        self.sa = tree.edge_sa[order]
        self.chance_prob = tree.edge_prob[order]
        self.decision = self.sa >= 0
        self.edge_player = np.where(self.decision, tree.node_player[self.parent], CHANCE).astype(np.int8)
        sorted_depth = depth[order]
        bounds = np.flatnonzero(np.diff(sorted_depth)) + 1
        self.levels = [slice(a, b) for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(order)], strict=True)]
        # Per level: where each parent's run of edges starts (edges of a parent are contiguous).
        self.runs = []
        for level in self.levels:
            p = self.parent[level]
            starts = np.r_[0, np.flatnonzero(np.diff(p)) + 1]
            self.runs.append((starts, p[starts]))
        self.terminal_value = tree.node_value
        self.sa_infoset = tree.sa_infoset()
        self.sa_player = tree.info_player[self.sa_infoset]

    def edge_probs(self, profile: np.ndarray) -> np.ndarray:
        """Probability of each edge: the profile's on decision edges, chance's elsewhere."""
        probs = self.chance_prob.copy()
        probs[self.decision] = profile[self.sa[self.decision]]
        return probs

    def reach(self, probs: np.ndarray, players: tuple[int, ...]) -> np.ndarray:
        """Each node's reach probability counting the edges of ``players`` (GREEK, PERSIAN, CHANCE) only."""
        factor = np.where(np.isin(self.edge_player, players), probs, 1.0)
        reach = np.ones(self.tree.num_nodes)
        for level in self.levels:
            reach[self.child[level]] = reach[self.parent[level]] * factor[level]
        return reach

    def values(self, probs: np.ndarray) -> np.ndarray:
        """The Greek's expected return from every node."""
        v = self.terminal_value.copy()
        for level, (starts, parents) in zip(reversed(self.levels), reversed(self.runs), strict=True):
            weighted = probs[level] * v[self.child[level]]
            v[parents] = np.add.reduceat(weighted, starts)
        return v

    def infoset_sum(self, per_sa: np.ndarray) -> np.ndarray:
        """Sum over each information set's sequence indices, repeated onto them."""
        sums = np.add.reduceat(per_sa, self.tree.info_start)
        return np.repeat(sums, self.tree.info_size)


def uniform_profile(tree: GameTree) -> np.ndarray:
    """Every legal action equally likely at every information set (the uniformly random players)."""
    return 1.0 / np.repeat(tree.info_size, tree.info_size).astype(np.float64)


def expected_value(ev: Evaluator, profile: np.ndarray) -> float:
    """The Greek's expected return when both play ``profile``."""
    return float(ev.values(ev.edge_probs(profile))[0])


def best_response(ev: Evaluator, profile: np.ndarray, player: int) -> tuple[np.ndarray, float]:
    """A pure best response of ``player`` to the other player's part of ``profile``, and the Greek's
    expected return when it is played (``profile`` stays unchanged).

    The responder's information sets are decided in decreasing order of the responder's own history
    length, so every later choice of the responder is fixed before an earlier one is made; at each set
    the action with the highest counterfactual value (summed over the set's nodes) is taken."""
    tree = ev.tree
    sign = 1.0 if player == GREEK else -1.0
    out = profile.copy()
    mine = tree.info_player == player
    out[ev.sa_player == player] = 0.0
    first = tree.info_start[mine]
    out[first] = 1.0  # a placeholder until the set is decided
    probs = ev.edge_probs(out)
    cf_reach = ev.reach(probs, (1 - player, CHANCE))
    own_edges = ev.decision & (ev.edge_player == player)
    edge_sa = ev.sa[own_edges]
    edge_weight = cf_reach[ev.parent[own_edges]]
    edge_child = ev.child[own_edges]
    infosets = np.flatnonzero(mine)
    depths = tree.info_depth[infosets]
    for d in np.unique(depths)[::-1]:
        group = infosets[depths == d]
        v = ev.values(probs)
        q = np.bincount(edge_sa, weights=edge_weight * sign * v[edge_child], minlength=tree.num_sequences)
        for info in group:
            start, size = tree.info_start[info], tree.info_size[info]
            best = start + int(np.argmax(q[start:start + size]))
            out[start:start + size] = 0.0
            out[best] = 1.0
        probs = ev.edge_probs(out)
    return out, expected_value(ev, out)


@dataclass
class NashConv:
    """Best-response values of a profile: the Greek's return when the Greek best responds (``greek_br``,
    an upper bound on the game value) and when the Persian does (``persian_br``, a lower bound)."""

    value: float
    greek_br: float
    persian_br: float

    @property
    def nash_conv(self) -> float:
        return self.greek_br - self.persian_br

    def to_dict(self) -> dict:
        return {"value": self.value, "greek_best_response_value": self.greek_br,
                "persian_best_response_value": self.persian_br, "nash_conv": self.nash_conv,
                "exploitability": self.nash_conv / 2}


def nash_conv(ev: Evaluator, profile: np.ndarray) -> NashConv:
    """The profile's value and both exact best-response values."""
    _, greek_br = best_response(ev, profile, GREEK)
    _, persian_br = best_response(ev, profile, PERSIAN)
    return NashConv(expected_value(ev, profile), greek_br, persian_br)


@dataclass
class SolveResult:
    """The average profile of CFR+ and how far it got."""

    profile: np.ndarray
    iterations: int
    check: NashConv
    seconds: float
    history: list[tuple[int, float]]  # (iteration, NashConv) at each check


def _regret_matching(ev: Evaluator, regrets: np.ndarray) -> np.ndarray:
    positive = np.maximum(regrets, 0.0)
    sums = ev.infoset_sum(positive)
    uniform = 1.0 / np.repeat(ev.tree.info_size, ev.tree.info_size)
    return np.where(sums > 0, positive / np.where(sums > 0, sums, 1.0), uniform)


def _normalise(ev: Evaluator, weights: np.ndarray) -> np.ndarray:
    sums = ev.infoset_sum(weights)
    uniform = 1.0 / np.repeat(ev.tree.info_size, ev.tree.info_size)
    return np.where(sums > 0, weights / np.where(sums > 0, sums, 1.0), uniform)


def solve(
    tree: GameTree,
    tolerance: float = 1e-3,
    max_iterations: int = 10_000,
    check_every: int = 50,
    evaluator: Evaluator | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> SolveResult:
    """CFR+ until the average profile's NashConv is at most ``tolerance`` (checked every ``check_every``
    iterations) or ``max_iterations`` is reached."""
    started = time.perf_counter()
    ev = evaluator or Evaluator(tree)
    regrets = np.zeros(tree.num_sequences)
    average = np.zeros(tree.num_sequences)
    current = uniform_profile(tree)
    own = {p: ev.decision & (ev.edge_player == p) for p in (GREEK, PERSIAN)}
    info_node = tree.info_node[ev.sa_infoset]
    history: list[tuple[int, float]] = []
    check = None
    iteration = 0
    while iteration < max_iterations:
        iteration += 1
        for player in (GREEK, PERSIAN):
            sign = 1.0 if player == GREEK else -1.0
            probs = ev.edge_probs(current)
            v = ev.values(probs)
            cf_reach = ev.reach(probs, (1 - player, CHANCE))
            edges = own[player]
            gain = cf_reach[ev.parent[edges]] * sign * (v[ev.child[edges]] - v[ev.parent[edges]])
            instant = np.bincount(ev.sa[edges], weights=gain, minlength=tree.num_sequences)
            mine = ev.sa_player == player
            own_reach = ev.reach(probs, (player,))[info_node]
            average[mine] += iteration * own_reach[mine] * current[mine]
            regrets[mine] = np.maximum(regrets[mine] + instant[mine], 0.0)
            current = np.where(mine, _regret_matching(ev, regrets), current)
        if iteration % check_every == 0 or iteration == max_iterations:
            check = nash_conv(ev, _normalise(ev, average))
            history.append((iteration, check.nash_conv))
            if progress is not None:
                progress(iteration, check.nash_conv)
            if check.nash_conv <= tolerance:
                break
    profile = _normalise(ev, average)
    if check is None:
        check = nash_conv(ev, profile)
    return SolveResult(profile, iteration, check, time.perf_counter() - started, history)
