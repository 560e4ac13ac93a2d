"""The exact solver of the reduced duels (``thermopylae_agents.gametheory``) on the smallest member, "tiny".

"tiny": the Greek holds Greek Allies (10) and Hoplites (40) from the first turn on (one card dealt, one
drawn, the deck is then empty); the Persian deck is Attack, Attack, Persian Archers (40), one card dealt
and one drawn before the first turn; one troop token, hand limit 2. The hand-worked values below follow
from that.
"""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_agents.gametheory.cfr import (
    Evaluator,
    best_response,
    expected_value,
    nash_conv,
    solve,
    uniform_profile,
)
from thermopylae_agents.gametheory.players import agent_strategy, combine, solve_member
from thermopylae_agents.gametheory.tree import CHANCE, TreeTooLarge, build_tree, estimate_tree_nodes
from thermopylae_env.duel.config import FULL_DUEL, SMALL_DUELS, DuelConfig
from thermopylae_env.duel.layout import (
    ADD_BASE,
    COMMIT,
    DECLINE,
    DISCARD_BASE,
    DONE_DISCARDING,
    GREEK,
    NUM_ADD_KINDS,
    NUM_KINDS,
    PERSIAN,
)
from thermopylae_env.duel.rules import DuelGame

TOLERANCE = 1e-3
# Chance after the deal: Xerxes Commands hitting a three-card Greek hand, and draws from a Persian deck
# with cards of several kinds left (the members of SMALL_DUELS have neither).
LATER_CHANCE = {
    "xerxes": DuelConfig("xerxes", greek=(1, 1, 0, 1, 0, 0, 0, 0, 0), persian=(1, 0, 0, 1, 0, 0, 0, 0, 1),
                         start_hand=1, hand_limit=2, start_tokens=1),
    "long persian deck": DuelConfig("long persian deck", greek=(1, 0, 0, 0, 0, 0, 0, 0, 0),
                                    persian=(2, 1, 1, 1, 0, 0, 0, 0, 0), start_hand=1, hand_limit=1,
                                    start_tokens=1),
}


@pytest.fixture(scope="module")
def tiny():
    tree = build_tree(SMALL_DUELS["tiny"])
    return tree, Evaluator(tree)


@pytest.fixture(scope="module")
def tiny_solution(tiny):
    tree, ev = tiny
    return solve(tree, tolerance=TOLERANCE, check_every=25, evaluator=ev)


class _PureDuelPlayer:
    """A pure strategy from the mask alone: keeps its cards (discarding the lowest kind only when over
    the limit), then either declines every attack/defence or adds every card it may and commits."""

    def __init__(self, all_out: bool) -> None:
        self.all_out = all_out

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        if action_mask[DONE_DISCARDING]:
            return DONE_DISCARDING
        discards = [DISCARD_BASE + k for k in range(NUM_KINDS) if action_mask[DISCARD_BASE + k]]
        if discards:
            return discards[0]
        if not self.all_out:
            return DECLINE
        adds = [ADD_BASE + k for k in range(NUM_ADD_KINDS) if action_mask[ADD_BASE + k]]
        if adds:
            return adds[0]
        return COMMIT if action_mask[COMMIT] else DECLINE


def _perfect_information_best_response(ev: Evaluator, profile: np.ndarray, player: int) -> float:
    """What a best responder that saw every card would get (the maximum at every node of its own)."""
    tree = ev.tree
    sign = 1.0 if player == GREEK else -1.0
    probs = ev.edge_probs(profile)
    v = tree.node_value.copy()
    for level, (starts, parents) in zip(reversed(ev.levels), reversed(ev.runs), strict=True):
        child_values = v[ev.child[level]]
        expected = np.add.reduceat(probs[level] * child_values, starts)
        best = sign * np.maximum.reduceat(sign * child_values, starts)
        v[parents] = np.where(tree.node_player[parents] == player, best, expected)
    return float(v[0])


def test_chance_outcomes_of_every_chance_node_sum_to_one(tiny):
    tree, _ = tiny
    chance = tree.node_player[tree.edge_parent] == CHANCE
    totals = np.bincount(tree.edge_parent[chance], weights=tree.edge_prob[chance], minlength=tree.num_nodes)
    assert np.allclose(totals[tree.node_player == CHANCE], 1.0)
    assert np.all(tree.edge_sa[~chance] >= 0)


def _sampled_uniform_value(config, games: int) -> tuple[float, float]:
    """Mean and standard error of the Greek's return over ``games`` uniformly random engine games."""
    game = DuelGame(config)
    returns = []
    for seed in range(games):
        rng = np.random.default_rng(seed)
        state = game.init(rng)
        while not state.terminated:
            legal = game.legal_actions(state)
            game.apply(state, legal[int(rng.integers(len(legal)))], rng)
        returns.append(1.0 if state.winner == GREEK else -1.0)
    return float(np.mean(returns)), float(np.std(returns) / np.sqrt(games))


def _check_against_sampled_games(config: DuelConfig) -> None:
    tree = build_tree(config)
    exact = expected_value(Evaluator(tree), uniform_profile(tree))
    mean, error = _sampled_uniform_value(config, 3000)
    assert abs(mean - exact) < 4 * error + 1e-9


def test_the_trees_value_of_random_play_matches_the_engines_random_games():
    _check_against_sampled_games(SMALL_DUELS["tiny"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LATER_CHANCE))
def test_the_trees_later_chance_matches_the_engines_random_games(name):
    tree = build_tree(LATER_CHANCE[name])
    chance = tree.node_player == CHANCE
    assert np.count_nonzero(chance) > 1  # not only the deal
    _check_against_sampled_games(LATER_CHANCE[name])


def test_cfr_plus_reaches_the_stated_nash_conv_on_the_tiny_duel(tiny, tiny_solution):
    _, ev = tiny
    result = tiny_solution
    assert result.check.nash_conv <= TOLERANCE
    again = nash_conv(ev, result.profile)  # recomputed from the profile, not taken from the solver
    assert again.nash_conv == pytest.approx(result.check.nash_conv)
    assert again.persian_br - 1e-12 <= again.value <= again.greek_br + 1e-12


def test_the_tiny_duel_is_a_persian_win_by_hand(tiny_solution):
    # The Persian always holds an Attack card on turn 1 (two of Attack, Attack, Archers): attacking with
    # one Attack card either costs the Greek his only token or a card; on turn 2 the Persian holds the
    # other Attack card and the Archers (50) against what the Greek has left (at most 40).
    check = tiny_solution.check
    assert check.persian_br == pytest.approx(-1.0)
    assert check.greek_br <= -1.0 + TOLERANCE


def test_uniform_random_players_are_more_exploitable_than_the_equilibrium(tiny, tiny_solution):
    tree, ev = tiny
    random_conv = nash_conv(ev, uniform_profile(tree)).nash_conv
    assert random_conv > tiny_solution.check.nash_conv + 0.5


def test_best_response_to_an_all_out_persian_is_minus_a_third_by_hand(tiny):
    # The Persian attacks at once with every card: with Attack, Attack (probability 1/3) it attacks 20,
    # the Greek defends with Hoplites and keeps Allies, the Persian then holds only the Archers and the
    # Greek wins; with Attack, Archers (2/3) it attacks 50, the Greek must spend both cards to lose no
    # token and the Persian's last Attack card then takes it: (1/3)(+1) + (2/3)(-1) = -1/3.
    tree, ev = tiny
    profile = agent_strategy(tree, _PureDuelPlayer(all_out=True), PERSIAN)
    response, value = best_response(ev, profile, GREEK)
    assert value == pytest.approx(-1.0 / 3.0)
    assert expected_value(ev, response) == pytest.approx(value)
    never_attack = agent_strategy(tree, _PureDuelPlayer(all_out=False), PERSIAN)
    assert best_response(ev, never_attack, GREEK)[1] == pytest.approx(1.0)  # the Persian deck runs out
    never_defend = agent_strategy(tree, _PureDuelPlayer(all_out=False), GREEK)
    assert best_response(ev, never_defend, PERSIAN)[1] == pytest.approx(-1.0)


def test_the_best_response_plays_one_action_per_information_set_and_sees_no_hidden_card(tiny):
    tree, ev = tiny
    uniform = uniform_profile(tree)
    for player in (GREEK, PERSIAN):
        response, value = best_response(ev, uniform, player)
        mine = ev.sa_player == player
        assert set(np.unique(response[mine])) <= {0.0, 1.0}
        assert np.allclose(np.add.reduceat(response, tree.info_start), 1.0)
        sign = 1.0 if player == GREEK else -1.0
        assert sign * value <= sign * _perfect_information_best_response(ev, uniform, player) + 1e-12


def test_a_best_responder_that_cannot_see_the_opponents_cards_gets_less_than_one_that_can():
    # In "small" the Persian attacks without seeing the Greek's hand (in tiny the Greek holds his whole
    # deck, so nothing of his is hidden): a Persian who saw it would take more from the random Greek.
    tree = build_tree(SMALL_DUELS["small"])
    ev = Evaluator(tree)
    uniform = uniform_profile(tree)
    persian = best_response(ev, uniform, PERSIAN)[1]
    assert persian > _perfect_information_best_response(ev, uniform, PERSIAN) + 1e-3


def test_a_profile_mixes_one_sides_strategy_with_the_other(tiny, tiny_solution):
    tree, ev = tiny
    uniform = uniform_profile(tree)
    mixed = combine(ev, uniform, tiny_solution.profile)
    assert np.array_equal(mixed[ev.sa_player == GREEK], uniform[ev.sa_player == GREEK])
    assert np.array_equal(mixed[ev.sa_player == PERSIAN], tiny_solution.profile[ev.sa_player == PERSIAN])


def test_solve_member_reports_the_tiny_duel(tmp_path):
    record = solve_member(SMALL_DUELS["tiny"], TOLERANCE)
    assert record["equilibrium"]["nash_conv"] <= TOLERANCE
    low, high = record["game_value_bounds"]
    assert low <= record["equilibrium"]["value"] <= high
    for name, report in record["players"].items():
        assert report["exploitability_bounds"][1] >= -1e-12, name
    assert record["profiles"]["uniform_random"]["nash_conv"] > record["equilibrium"]["nash_conv"]


def test_a_tree_over_the_node_limit_is_refused():
    with pytest.raises(TreeTooLarge, match="more than 100 tree nodes"):
        build_tree(SMALL_DUELS["tiny"], max_nodes=100)


def test_the_builder_still_stops_at_the_node_limit_when_the_estimate_lets_it_start():
    with pytest.raises(TreeTooLarge, match="has more than 6000 tree nodes"):
        build_tree(SMALL_DUELS["tiny"], max_nodes=6000)  # about 8,000 nodes: under twice the limit


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_the_tree_size_estimate_is_near_the_members_size(name):
    nodes = build_tree(SMALL_DUELS[name]).num_nodes
    assert nodes / 2 < estimate_tree_nodes(SMALL_DUELS[name]) < 2 * nodes


def test_the_full_duel_is_refused_by_its_estimate_before_any_tree_is_built(monkeypatch):
    def built(*args, **kwargs):
        raise AssertionError("the tree was started")

    monkeypatch.setattr("thermopylae_agents.gametheory.tree._Builder.root", built)
    monkeypatch.setattr("thermopylae_agents.gametheory.tree._deal_outcomes", built)
    with pytest.raises(TreeTooLarge, match=r"'full' duel has about \de\+\d+ tree nodes \(estimated") as error:
        build_tree(FULL_DUEL)
    assert "\n" not in str(error.value)
