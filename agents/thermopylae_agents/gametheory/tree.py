"""The extensive-form tree of a reduced duel, built by playing the reference engine (``duel/rules.py``).

Every decision node is a state of [`DuelGame`][thermopylae_env.duel.rules.DuelGame] where the player to act
has two or more legal actions (a move the rules force is applied without a node); every chance node lists the
outcomes of one random event with their exact probabilities; a leaf holds the Greek's return (+1 / -1).

Chance, exactly as the engine draws it
--------------------------------------
* The deck order. A shuffled deck is a uniform random order, and nobody sees the cards not yet drawn, so
  drawing the order card by card is the same game: the root deals the opening hands and the first draw
  (all deck orders grouped by the kinds they put in each hand), and whenever a step draws from a deck
  the next card of that deck is chosen by chance among the cards left. Cards of one kind play alike, so
  the outcomes are kinds, with probability (cards of that kind left) / (cards left).
* A discard card's victim loses two cards at random
  ([`pick_random_discards`][thermopylae_env.duel.state.pick_random_discards]): every pair of positions is
  equally likely; the outcomes are the kinds lost.

Information sets
----------------
A player's information state is everything the player has seen: the sequence of the player's own
observations (``DuelGame.observe``, appended whenever it changes) and the player's own actions. That is
perfect recall by construction, and two nodes share an information set exactly when the acting player's
sequences agree (the builder checks that they then have the same legal actions). The opponent's hand and
both deck orders are never in it; what is public (discard piles, hand and deck sizes, the attack on the
table) is.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from thermopylae_env.duel.config import DuelConfig
from thermopylae_env.duel.layout import GREEK, NUM_ACTIONS, PERSIAN, PLAY_DISCARD_CARD
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.duel.state import DuelState

__all__ = ["GameTree", "TreeTooLarge", "build_tree", "estimate_tree_nodes", "TERMINAL", "CHANCE"]

TERMINAL = -1
CHANCE = -2
MAX_DEAL_ORDERS = 20_000_000  # the deal's outcomes are grouped from every ordered hand of each deck


class TreeTooLarge(RuntimeError):
    """The tree outgrew the node limit given to
    [`build_tree`][thermopylae_agents.gametheory.tree.build_tree]."""


class _ForcedPick:
    """Stands in for the generator in ``pick_random_discards``: returns the positions it was given."""

    def __init__(self, picks: list[int]) -> None:
        self.picks = picks

    def choice(self, n: int, size: int, replace: bool) -> list[int]:
        return self.picks


@dataclass
class GameTree:
    """A finite two-player zero-sum game tree with information sets, as flat NumPy arrays.

    Nodes are numbered in depth-first order (a parent before its children). Every node but the root has
    exactly one incoming edge. Edges out of a decision node carry a *sequence index* ``edge_sa`` (one per
    information set and action, contiguous per information set); edges out of a chance node carry
    ``edge_prob``.
    """

    config: DuelConfig
    node_player: np.ndarray  # int8: GREEK, PERSIAN, CHANCE or TERMINAL
    node_value: np.ndarray  # float64: the Greek's return at a leaf, 0 elsewhere
    node_depth: np.ndarray  # int32: edges from the root
    node_infoset: np.ndarray  # int32: information set of a decision node, -1 elsewhere
    edge_parent: np.ndarray
    edge_child: np.ndarray
    edge_prob: np.ndarray  # float64: chance probability (1 on decision edges)
    edge_sa: np.ndarray  # int32: sequence index on decision edges, -1 on chance edges
    info_player: np.ndarray  # int8
    info_start: np.ndarray  # int32: first sequence index of each information set
    info_size: np.ndarray  # int32: number of legal actions
    info_node: np.ndarray  # int32: one node of each information set
    info_depth: np.ndarray  # int32: length of the owner's observation-and-action sequence there
    sa_action: np.ndarray  # int32: the engine action (0..20) of each sequence index
    info_obs: np.ndarray  # float32 [infosets, obs]: the owner's observation there
    info_mask: np.ndarray  # bool [infosets, NUM_ACTIONS]: the legal actions there

    @property
    def num_nodes(self) -> int:
        return int(self.node_player.size)

    @property
    def num_infosets(self) -> int:
        return int(self.info_player.size)

    @property
    def num_sequences(self) -> int:
        return int(self.sa_action.size)

    def sa_infoset(self) -> np.ndarray:
        """The information set of each sequence index."""
        return np.repeat(np.arange(self.num_infosets, dtype=np.int32), self.info_size)

    def summary(self) -> dict:
        """Sizes of the tree, JSON-ready."""
        players = self.info_player
        return {
            "nodes": self.num_nodes,
            "decision_nodes": int(np.count_nonzero(self.node_player >= 0)),
            "chance_nodes": int(np.count_nonzero(self.node_player == CHANCE)),
            "leaves": int(np.count_nonzero(self.node_player == TERMINAL)),
            "depth": int(self.node_depth.max()),
            "infosets": {"greek": int(np.count_nonzero(players == GREEK)),
                         "persian": int(np.count_nonzero(players == PERSIAN))},
            "sequences": self.num_sequences,
        }


def _deal_outcomes(game: DuelGame) -> list[tuple[float, tuple[int, ...], tuple[int, ...]]]:
    """The root's chance outcomes: (probability, Greek deck order, Persian deck order), one per distinct
    (kinds in the hand after the first draw, kind of the next card) pair, each with a representative
    order of card ids."""
    start = game.start_hand
    sides = []
    for p in (GREEK, PERSIAN):
        ids = game.deck_ids[p]
        shown = min(start + 2, len(ids))  # the hand after the first draw, then the next card
        groups: dict[tuple, list] = {}
        for order in itertools.permutations(range(len(ids)), shown):
            kinds = [game.card_kinds[ids[i]] for i in order]
            key = (tuple(sorted(kinds[: start + 1])), tuple(kinds[start + 1:]))
            if key not in groups:
                rest = [i for i in range(len(ids)) if i not in order]
                groups[key] = [0, tuple(ids[i] for i in (*order, *rest))]
            groups[key][0] += 1
        total = math.perm(len(ids), shown)
        sides.append([(count / total, order) for count, order in groups.values()])
    return [(pg * pp, g, q) for (pg, g), (pp, q) in itertools.product(*sides)]


def _next_card_outcomes(game: DuelGame, state: DuelState, p: int) -> list[tuple[float, tuple[int, ...]]]:
    """Chance of the next card of ``p``'s deck: (probability, deck order with a card of that kind next)."""
    deck = state.decks[p]
    pos = state.deck_pos[p]
    rest = deck[pos:]
    if len(rest) <= 1:
        return [(1.0, deck)]
    ck = game.card_kinds
    counts = Counter(ck[c] for c in rest)
    out = []
    for kind, n in sorted(counts.items()):
        i = next(j for j, c in enumerate(rest) if ck[c] == kind)
        order = (rest[i], *rest[:i], *rest[i + 1:])
        out.append((n / len(rest), deck[:pos] + order))
    return out


class _Builder:
    def __init__(self, game: DuelGame, max_nodes: int) -> None:
        self.game = game
        self.max_nodes = max_nodes
        self.rng = np.random.default_rng(0)  # never drawn from: every random event is enumerated
        self.node_player: list[int] = []
        self.node_value: list[float] = []
        self.node_depth: list[int] = []
        self.node_infoset: list[int] = []
        self.edges: list[tuple[int, int, float, int]] = []  # parent, child, prob, sa
        self.obs_ids: dict[bytes, int] = {}
        self.traces: dict[tuple[int, int], int] = {(-1, -1): 0}
        self.trace_last = [-1]  # last token of each trace
        self.trace_len = [0]
        self.infosets: dict[tuple[int, int], int] = {}
        self.info_player: list[int] = []
        self.info_actions: list[tuple[int, ...]] = []
        self.info_node: list[int] = []
        self.info_depth: list[int] = []
        self.info_obs: list[np.ndarray] = []

    # --- information states ------------------------------------------------------------------------

    def _extend(self, trace: int, token: int) -> int:
        key = (trace, token)
        found = self.traces.get(key)
        if found is None:
            found = len(self.trace_last)
            self.traces[key] = found
            self.trace_last.append(token)
            self.trace_len.append(self.trace_len[trace] + 1)
        return found

    def _observe(self, state: DuelState, traces: tuple[int, int]) -> tuple[int, int]:
        out = []
        for p in (GREEK, PERSIAN):
            data = self.game.observe(state, p).tobytes()
            token = self.obs_ids.setdefault(data, len(self.obs_ids))
            out.append(traces[p] if self.trace_last[traces[p]] == token else self._extend(traces[p], token))
        return out[0], out[1]

    # --- nodes -------------------------------------------------------------------------------------

    def _new_node(self, player: int, depth: int, value: float = 0.0, infoset: int = -1) -> int:
        node = len(self.node_player)
        if node >= self.max_nodes:
            raise TreeTooLarge(
                f"the {self.game.config.name[:40]!r} duel has more than {self.max_nodes} tree nodes")
        self.node_player.append(player)
        self.node_value.append(value)
        self.node_depth.append(depth)
        self.node_infoset.append(infoset)
        return node

    def root(self) -> int:
        outcomes = []
        for prob, greek, persian in _deal_outcomes(self.game):
            outcomes.append((prob, self.game.new_state(greek, persian)))
        node = self._new_node(CHANCE, 0)
        for prob, state in outcomes:
            child = self.node(state, self._observe(state, (0, 0)), 1)
            self.edges.append((node, child, prob, -1))
        return node

    def node(self, state: DuelState, traces: tuple[int, int], depth: int) -> int:
        if state.terminated:
            return self._new_node(TERMINAL, depth, 1.0 if state.winner == GREEK else -1.0)
        p = state.current_player
        legal = tuple(self.game.legal_actions(state))
        if len(legal) == 1:
            return self._after(state, traces, legal[0], depth)
        key = (p, traces[p])
        infoset = self.infosets.get(key)
        if infoset is None:
            infoset = len(self.info_player)
            self.infosets[key] = infoset
            self.info_player.append(p)
            self.info_actions.append(legal)
            self.info_node.append(len(self.node_player))
            self.info_depth.append(self.trace_len[traces[p]])
            self.info_obs.append(self.game.observe(state, p))
        elif self.info_actions[infoset] != legal:
            raise AssertionError("two nodes of one information set have different legal actions")
        node = self._new_node(p, depth, infoset=infoset)
        for a in legal:
            child = self._after(state, traces, a, depth + 1)
            self.edges.append((node, child, 1.0, a))  # a is replaced by the sequence index later
        return node

    def _after(self, state: DuelState, traces: tuple[int, int], action: int, depth: int) -> int:
        """The subtree after ``action``: its random discards, then the next cards of the decks drawn from."""
        p = state.current_player
        acted = list(traces)
        acted[p] = self._extend(traces[p], -1 - action)
        outcomes = []
        for prob, child in self._apply(state, action):
            for deck_prob, drawn in self._refill(state, child):
                outcomes.append((prob * deck_prob, drawn))
        if len(outcomes) == 1:
            child = outcomes[0][1]
            return self.node(child, self._observe(child, (acted[0], acted[1])), depth)
        node = self._new_node(CHANCE, depth)
        for prob, child in outcomes:
            sub = self.node(child, self._observe(child, (acted[0], acted[1])), depth + 1)
            self.edges.append((node, sub, prob, -1))
        return node

    def _apply(self, state: DuelState, action: int) -> list[tuple[float, DuelState]]:
        victim_hand = len(state.hands[1 - state.current_player])
        if action != PLAY_DISCARD_CARD or victim_hand <= 2:
            child = state.copy()
            self.game.apply(child, action, self.rng)
            return [(1.0, child)]
        ck = self.game.card_kinds
        hand = state.hands[1 - state.current_player]
        groups: dict[tuple[int, int], list] = {}
        pairs = list(itertools.combinations(range(victim_hand), 2))
        for pair in pairs:
            key = tuple(sorted((ck[hand[pair[0]]], ck[hand[pair[1]]])))
            if key not in groups:
                child = state.copy()
                self.game.apply(child, action, _ForcedPick(list(pair)))
                groups[key] = [0, child]
            groups[key][0] += 1
        return [(count / len(pairs), child) for count, child in groups.values()]

    def _refill(self, before: DuelState, after: DuelState) -> list[tuple[float, DuelState]]:
        """Fix by chance the next card of each deck that the step drew from."""
        out = [(1.0, after)]
        for p in (GREEK, PERSIAN):
            if after.deck_pos[p] == before.deck_pos[p]:
                continue
            expanded = []
            for prob, state in out:
                for q, order in _next_card_outcomes(self.game, state, p):
                    child = state.copy()
                    decks = list(child.decks)
                    decks[p] = order
                    child.decks = (decks[0], decks[1])
                    expanded.append((prob * q, child))
            out = expanded
        return out


def _deal_probability(game: DuelGame, order: tuple[int, ...]) -> float:
    """The probability of the root outcome of one side that the deck ``order`` falls in (see
    `_deal_outcomes`: the kinds of the hand after the first draw, and the kind of the next card)."""
    kinds = [game.card_kinds[c] for c in order]
    n = len(kinds)
    shown = min(game.start_hand + 1, n)
    total = Counter(kinds)
    hand = Counter(kinds[:shown])
    p = math.prod(math.comb(total[k], hand[k]) for k in hand) / math.comb(n, shown)
    if n > shown:
        p *= (total[kinds[shown]] - hand[kinds[shown]]) / (n - shown)
    return p


def estimate_tree_nodes(config: DuelConfig, probes: int = 256, seed: int = 0, stop_above: float = math.inf,
                        ) -> float:
    """An unbiased estimate of the node count of [`build_tree`][thermopylae_agents.gametheory.tree.build_tree]
    ``(config)``, from ``probes`` random paths of the same tree (Knuth's estimator: each path adds, for every
    node on it, one over the probability of having chosen that path so far; decisions are chosen uniformly,
    chance outcomes with their own probabilities). No tree is held and the deal is never enumerated, so the
    full duel's estimate takes a moment. Returns as soon as the estimate must exceed ``stop_above``."""
    game = DuelGame(config)
    walker = _Builder(game, max_nodes=0)  # only its _apply and _refill, which add no node
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(probes):
        orders = [tuple(ids[i] for i in rng.permutation(len(ids)).tolist()) for ids in game.deck_ids]
        count = 1.0  # the root, a chance node over the deals
        weight = 1.0 / (_deal_probability(game, orders[GREEK]) * _deal_probability(game, orders[PERSIAN]))
        state = game.new_state(*orders)
        while True:
            if state.terminated:
                count += weight
                break
            legal = game.legal_actions(state)
            if len(legal) > 1:  # a forced move adds no node
                count += weight
                weight *= len(legal)
            action = legal[int(rng.integers(len(legal)))]
            outcomes = [(p * q, drawn) for p, child in walker._apply(state, action)
                        for q, drawn in walker._refill(state, child)]
            if len(outcomes) > 1:
                count += weight
                probs = np.array([p for p, _ in outcomes])
                pick = int(rng.choice(len(outcomes), p=probs / probs.sum()))
                weight /= outcomes[pick][0]
                state = outcomes[pick][1]
            else:
                state = outcomes[0][1]
        total += count
        if total > stop_above * probes:  # the mean of all the probes is past it already
            break
    return total / probes


def build_tree(config: DuelConfig, max_nodes: int = 5_000_000) -> GameTree:
    """The whole game tree of the duel ``config`` (raises
    [`TreeTooLarge`][thermopylae_agents.gametheory.tree.TreeTooLarge] past ``max_nodes``).

    A duel whose tree [`estimate_tree_nodes`][thermopylae_agents.gametheory.tree.estimate_tree_nodes] puts
    above twice ``max_nodes`` (the margin covers the estimate's spread), or whose deal alone would walk more
    than ``MAX_DEAL_ORDERS`` deck orders, is refused before anything is built: the full duel in a moment,
    not after minutes of building."""
    name = repr(config.name[:40])
    game = DuelGame(config)
    estimate = estimate_tree_nodes(config, stop_above=2 * max_nodes)
    if estimate > 2 * max_nodes:
        raise TreeTooLarge(f"the {name} duel has about {estimate:.1g} tree nodes (estimated from random "
                           f"paths), more than {max_nodes} tree nodes")
    orders = max(math.perm(len(ids), min(game.start_hand + 2, len(ids))) for ids in game.deck_ids)
    if orders > MAX_DEAL_ORDERS:
        raise TreeTooLarge(f"the {name} duel's deal alone walks {orders:.3g} orders of a deck, more than "
                           f"{MAX_DEAL_ORDERS} (a few cards a side make a tree the solver takes)")
    b = _Builder(game, max_nodes)
    b.root()
    info_size = np.array([len(a) for a in b.info_actions], dtype=np.int32)
    info_start = np.concatenate([[0], np.cumsum(info_size)[:-1]]).astype(np.int32)
    sa_action = np.array([a for acts in b.info_actions for a in acts], dtype=np.int32)
    node_infoset = np.array(b.node_infoset, dtype=np.int32)
    edges = np.array(b.edges, dtype=np.float64).reshape(-1, 4)
    parent = edges[:, 0].astype(np.int64)
    decision = edges[:, 3] >= 0
    edge_sa = np.full(len(edges), -1, dtype=np.int64)
    for e in np.flatnonzero(decision):  # action -> its sequence index in the parent's information set
        info = node_infoset[parent[e]]
        start = info_start[info]
        edge_sa[e] = start + b.info_actions[info].index(int(edges[e, 3]))
    mask = np.zeros((len(b.info_actions), NUM_ACTIONS), dtype=bool)
    for i, acts in enumerate(b.info_actions):
        mask[i, list(acts)] = True
    return GameTree(
        config=config,
        node_player=np.array(b.node_player, dtype=np.int8),
        node_value=np.array(b.node_value, dtype=np.float64),
        node_depth=np.array(b.node_depth, dtype=np.int32),
        node_infoset=node_infoset,
        edge_parent=parent,
        edge_child=edges[:, 1].astype(np.int64),
        edge_prob=edges[:, 2].copy(),
        edge_sa=edge_sa,
        info_player=np.array(b.info_player, dtype=np.int8),
        info_start=info_start,
        info_size=info_size,
        info_node=np.array(b.info_node, dtype=np.int32),
        info_depth=np.array(b.info_depth, dtype=np.int32),
        sa_action=sa_action,
        info_obs=np.array(b.info_obs, dtype=np.float32).reshape(len(b.info_obs), -1),
        info_mask=mask,
    )
