"""Tabular magnetic mirror descent (MMD, Sokota et al. 2022, "A Unified Approach to Reinforcement Learning,
Quantal Response Equilibria, and Two-Player Zero-Sum Games") on a
[`GameTree`][thermopylae_agents.gametheory.tree.GameTree], in NumPy.

Each iteration updates both players at once against the other's current strategy. A player's update is the
closed-form solution of one mirror-descent step with a dilated KL regulariser: at every information set
``I`` of the player, deepest first,

    pi_new(a|I)  ∝  exp( (q(I, a) + alpha log rho(a|I) + log pi(a|I) / eta) / (alpha + 1 / eta) )

where ``rho`` is the magnet, ``alpha`` the regularisation temperature, ``eta`` the step size and ``q`` the
value of action ``a`` at ``I`` for the player: the counterfactual value (opponent and chance reach) of the
subtree, with the player's own later information sets already playing their new policy and adding their
regularised value (the soft maximum), divided by the set's counterfactual reach so that every set's values
are returns in [-1, 1] and one temperature fits sets deep and shallow alike. The fixed point of these steps
is a regularised equilibrium with respect to the magnet; moving the magnet to the current policy every
``magnet_every`` iterations (a proximal-point outer loop) moves those equilibria toward a Nash
equilibrium. The reach normalisation makes the regulariser's weights depend on the opponent's current
strategy, so MMD's convergence theorem (a fixed dilated regulariser) is not claimed here: convergence is
measured, on the *current* policy (the last iterate, not an average), with exact NashConv.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from thermopylae_agents.gametheory.cfr import Evaluator, NashConv, nash_conv, uniform_profile
from thermopylae_agents.gametheory.tree import CHANCE, TERMINAL, GameTree
from thermopylae_env.duel.layout import GREEK, PERSIAN

__all__ = ["MMDResult", "mmd"]

_TINY = 1e-300


@dataclass
class MMDResult:
    """The last iterate of MMD and how far it got."""

    profile: np.ndarray
    iterations: int
    check: NashConv
    seconds: float
    history: list[tuple[int, float]]  # (iteration, NashConv of the current profile) at each check


class _Player:
    """One player's view of the tree for the MMD step: own edges, own information sets by depth."""

    def __init__(self, ev: Evaluator, player: int) -> None:
        tree = ev.tree
        self.player = player
        self.sign = 1.0 if player == GREEK else -1.0
        self.own_edges = ev.decision & (ev.edge_player == player)
        self.mine = ev.sa_player == player
        infosets = np.flatnonzero(tree.info_player == player)
        depths = tree.info_depth[infosets]
        self.groups = [infosets[depths == d] for d in np.unique(depths)[::-1]]
        self.group_sa = [np.isin(ev.sa_infoset, g) for g in self.groups]
        self.leaves = tree.node_player == TERMINAL
        self.edge_sa = ev.sa[self.own_edges]
        self.edge_child = ev.child[self.own_edges]
        self.edge_parent = ev.parent[self.own_edges]


def _soft_step(ev: Evaluator, q: np.ndarray, log_magnet: np.ndarray, log_current: np.ndarray, alpha: float,
               eta: float, sa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The new policy on the sequence indices ``sa`` (a boolean mask) and each one's set's soft value."""
    beta = alpha + 1.0 / eta
    z = np.where(sa, (q + alpha * log_magnet + log_current / eta) / beta, -np.inf)
    top = np.maximum.reduceat(np.where(sa, z, -np.inf), ev.tree.info_start)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(sa, np.exp(z - np.repeat(top, ev.tree.info_size)), 0.0)
    total = ev.infoset_sum(e)
    policy = np.where(sa, e / np.where(total > 0, total, 1.0), 0.0)
    soft = beta * (np.log(np.where(total > 0, total, 1.0)) + np.repeat(top, ev.tree.info_size))
    return policy, soft


def _update(ev: Evaluator, me: _Player, current: np.ndarray, magnet: np.ndarray, alpha: float,
            eta: float) -> np.ndarray:
    """``me``'s new policy against the other player's part of ``current``."""
    tree = ev.tree
    probs = ev.edge_probs(current)
    cf_reach = ev.reach(probs, (1 - me.player, CHANCE))
    info_reach = np.bincount(tree.node_infoset[tree.node_player == me.player],
                             weights=cf_reach[tree.node_player == me.player], minlength=tree.num_infosets)
    set_reach = np.maximum(np.repeat(info_reach, tree.info_size), _TINY)
    leaf_value = np.where(me.leaves, me.sign * tree.node_value * cf_reach, 0.0)
    weights = np.where(ev.decision & (ev.edge_player == me.player), probs, 1.0)
    bonus = np.zeros(tree.num_nodes)
    new = current.copy()
    log_magnet = np.log(np.maximum(magnet, _TINY))
    log_current = np.log(np.maximum(current, _TINY))
    for group, sa in zip(me.groups, me.group_sa, strict=True):
        w = leaf_value.copy()
        for level, (starts, parents) in zip(reversed(ev.levels), reversed(ev.runs), strict=True):
            w[parents] = np.add.reduceat(weights[level] * w[ev.child[level]], starts) + bonus[parents]
        q = np.bincount(me.edge_sa, weights=w[me.edge_child], minlength=tree.num_sequences) / set_reach
        policy, soft = _soft_step(ev, q, log_magnet, log_current, alpha, eta, sa)
        new[sa] = policy[sa]
        regulariser = soft - ev.infoset_sum(np.where(sa, policy * q, 0.0))  # soft value minus expected q
        start = tree.info_start[group]
        bonus[tree.info_node[group]] += regulariser[start] * set_reach[start]
        weights = np.where(ev.decision & (ev.edge_player == me.player), ev.edge_probs(new), 1.0)
    return new


def mmd(
    tree: GameTree,
    alpha: float = 0.05,
    eta: float = 1.0,
    magnet_every: int = 10,
    tolerance: float = 1e-3,
    max_iterations: int = 2_000,
    check_every: int = 25,
    evaluator: Evaluator | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> MMDResult:
    """MMD from the uniform profile (also the first magnet) until the current profile's NashConv is at most
    ``tolerance`` (checked every ``check_every`` iterations) or ``max_iterations`` is reached."""
    if not (alpha > 0 and eta > 0 and magnet_every >= 1 and check_every >= 1):
        raise ValueError("mmd: alpha and eta must be positive, magnet_every and check_every at least 1")
    started = time.perf_counter()
    ev = evaluator or Evaluator(tree)
    players = [_Player(ev, GREEK), _Player(ev, PERSIAN)]
    current = uniform_profile(tree)
    magnet = current.copy()
    history: list[tuple[int, float]] = []
    check = None
    iteration = 0
    while iteration < max_iterations:
        iteration += 1
        greek = _update(ev, players[0], current, magnet, alpha, eta)
        persian = _update(ev, players[1], current, magnet, alpha, eta)
        current = np.where(players[0].mine, greek, persian)
        if iteration % magnet_every == 0:
            magnet = current.copy()
        if iteration % check_every == 0 or iteration == max_iterations:
            check = nash_conv(ev, current)
            history.append((iteration, check.nash_conv))
            if progress is not None:
                progress(iteration, check.nash_conv)
            if check.nash_conv <= tolerance:
                break
    if check is None:
        check = nash_conv(ev, current)
    return MMDResult(current, iteration, check, time.perf_counter() - started, history)
