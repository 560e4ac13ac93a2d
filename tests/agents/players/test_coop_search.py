"""CoopSearchExpert.evaluate: the search's own estimates of the move act() plays (the same move for the same
seed), win chances in [0, 1] with their intervals, and every legal action searched or said not to be."""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_agents.players.coop_heuristic import heuristic_positions
from thermopylae_agents.players.coop_search import CoopSearchExpert


def _search(num_players: int, seed: int) -> CoopSearchExpert:
    return CoopSearchExpert(n_determinizations=6, rollouts=3, max_candidates=3, num_players=num_players,
                            seed=seed)


@pytest.mark.parametrize("num_players", [1, 2, 3, 4])
def test_the_estimates_chosen_action_is_the_move_act_plays_for_the_same_seed(num_players):
    acting, evaluating = _search(num_players, 9), _search(num_players, 9)
    searched = 0
    for obs, mask in heuristic_positions(num_players, 50 + num_players, 0.3, games=3):
        estimate = evaluating.evaluate(obs, mask)
        assert estimate.action == acting.act(obs, mask)
        assert {e.action: e.mean_return for e in estimate.estimates} == acting.last_values
        searched += len(estimate.estimates) > 1
    assert searched > 3


@pytest.mark.parametrize("num_players", [1, 3])
def test_every_legal_action_is_searched_or_said_not_to_be_and_win_chances_lie_in_0_1(num_players):
    search = _search(num_players, 4)
    seen_ranked_out = seen_dropped = False
    for obs, mask in heuristic_positions(num_players, 70 + num_players, 0.3, games=3):
        estimate = search.evaluate(obs, mask)
        legal = sorted(int(a) for a in np.flatnonzero(mask))
        parts = [*estimate.candidates, *estimate.dominated, *estimate.ranked_out]
        assert sorted(parts) == legal  # each legal action in exactly one of the three
        assert estimate.action in estimate.candidates and estimate.candidates[0] == estimate.default
        assert len(estimate.ranked_out) == 0 or len(estimate.candidates) >= search.max_candidates
        if len(estimate.candidates) == 1:
            assert estimate.estimates == ()
            continue
        assert [e.action for e in estimate.estimates] == list(estimate.candidates)
        most = max(e.rollouts for e in estimate.estimates)
        for e in estimate.estimates:
            assert 0.0 <= e.win_chance <= 1.0 and e.win_chance == pytest.approx((e.mean_return + 1) / 2)
            low, high = e.interval()
            assert 0.0 <= low <= e.win_chance <= high <= 1.0
            assert e.rollouts % search.n_determinizations == 0
            assert e.dropped or e.rollouts == most  # those left in the race played every round
            assert not (e.dropped and e.action == estimate.action)
        seen_ranked_out |= bool(estimate.ranked_out)
        seen_dropped |= any(e.dropped for e in estimate.estimates)
    assert seen_ranked_out and seen_dropped

