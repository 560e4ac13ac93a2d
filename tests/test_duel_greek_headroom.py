"""benchmarks/duel_greek_headroom.py: its search Greek samples only what the Greek cannot see, and its
measurements are consistent on a few games."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_script

from thermopylae_env.duel import GREEK, PERSIAN, DuelGame, Phase, check_invariants


@pytest.fixture(scope="module")
def headroom():
    return load_script("duel_greek_headroom")


def test_determinization_redraws_only_hidden_cards_and_loses_none(headroom):
    game = DuelGame()
    rng = np.random.default_rng(7)
    state = game.init(rng)
    for _ in range(60):  # play into the game, so that hands, discards and decks are all in use
        game.step(state, int(rng.choice(np.flatnonzero(game.legal_action_mask(state)))), rng)
        if state.terminated:
            state = game.init(rng)
    search = headroom.SearchGreek(determinizations=1, seed=0)
    changed_persian_hand = False
    for _ in range(20):
        d = search.determinize(state)
        check_invariants(d, game)  # every one of the 104 cards in exactly one place
        # What the Greek sees is kept: its hand, both discard piles, the table, sizes, tokens, phase.
        assert d.hands[GREEK] == state.hands[GREEK] and d.discards == state.discards
        assert d.table == state.table and d.tokens == state.tokens and d.phase == state.phase
        assert len(d.hands[PERSIAN]) == len(state.hands[PERSIAN]) and d.deck_pos == state.deck_pos
        changed_persian_hand |= sorted(d.hands[PERSIAN]) != sorted(state.hands[PERSIAN])
    assert changed_persian_hand
    assert state.hands is not d.hands  # the real state is untouched


def test_search_greek_plays_whole_games_and_measurements_agree(headroom):
    persian = headroom.heuristic_player(headroom.HeuristicPersian(), PERSIAN)
    results = [headroom.play(headroom.SearchGreek(determinizations=2, seed=i), persian, i) for i in range(3)]
    assert all(isinstance(r, bool) for r in results)
    fatal = headroom.fatal_attacks(40, seed=0)
    assert fatal["losses_to_a_fatal_attack"] <= fatal["greek_losses"] == 40 - fatal["greek"]["wins"]
    assert sum(fatal["attacks"].values()) > 0
    assert 0 <= headroom.oracle_leonidas(20, seed=0)["win_rate"] <= 1
    # theta 0 never holds Leonidas back: the inferred-timing Greek is then the heuristic itself.
    always = headroom.inferred_leonidas(20, seed=0, theta=0.0)
    greek = headroom.heuristic_player(headroom.HeuristicGreek(), GREEK)
    persian = headroom.heuristic_player(headroom.HeuristicPersian(), PERSIAN)
    assert always["wins"] == sum(headroom.play(greek, persian, i) for i in range(20))
    assert Phase.DEFENCE == 3  # the script's phase comparisons rely on the engine's numbering
