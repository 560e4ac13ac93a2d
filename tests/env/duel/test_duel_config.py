"""The duel's size as data (``thermopylae_env.duel.config``): the full game by default, reduced duels on the
reference engine, and one-line errors for malformed configs."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from thermopylae_env.duel.config import (
    FULL_DUEL,
    SMALL_DUELS,
    DuelConfig,
    DuelConfigError,
    duel_config_from_mapping,
    full_kind_counts,
    load_duel_config,
)
from thermopylae_env.duel.layout import DECK_SIZE, GREEK, PERSIAN
from thermopylae_env.duel.rules import DuelGame, check_invariants, shuffle_decks

WITH_DISCARD_CARDS = DuelConfig("discard cards", greek=(1, 0, 0, 1, 0, 0, 0, 0, 1),
                                persian=(2, 0, 0, 1, 0, 0, 0, 0, 1), start_hand=2, hand_limit=3,
                                start_tokens=2)


def test_the_default_game_is_the_full_duel():
    game = DuelGame()
    assert game.config is FULL_DUEL and FULL_DUEL.is_full
    assert sum(FULL_DUEL.greek) == sum(FULL_DUEL.persian) == DECK_SIZE
    assert game.deck_ids == (tuple(range(DECK_SIZE)), tuple(range(DECK_SIZE, 2 * DECK_SIZE)))
    assert (game.start_hand, game.hand_limit, game.start_tokens) == (4, 7, 10)


def test_the_full_game_deals_from_the_same_shuffle_as_before():
    state = DuelGame(DuelConfig("renamed full", *full_kind_counts())).init(np.random.default_rng(3))
    assert state.decks == shuffle_decks(np.random.default_rng(3))
    assert state.tokens == 10 and state.deck_size(PERSIAN) == DECK_SIZE - 5


@pytest.mark.parametrize("config", [*SMALL_DUELS.values(), WITH_DISCARD_CARDS], ids=lambda c: c.name)
def test_random_play_of_a_reduced_duel_keeps_every_invariant(config):
    game = DuelGame(config)
    chooser = random.Random(0)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        state = game.init(rng)
        assert [len(d) for d in state.decks] == [sum(config.greek), sum(config.persian)]
        assert state.tokens == config.start_tokens
        while not state.terminated:
            check_invariants(state, game)
            for p in (GREEK, PERSIAN):
                obs = game.observe(state, p)
                assert obs.min() >= 0.0 and obs.max() <= 1.0
            game.step(state, chooser.choice(game.legal_actions(state)), rng)
        check_invariants(state, game)
        assert state.turn <= sum(config.persian) - config.start_hand + 1


def test_a_reduced_hand_limit_is_the_engines_discard_limit():
    game = DuelGame(WITH_DISCARD_CARDS)
    state = game.new_state(game.deck_ids[GREEK], game.deck_ids[PERSIAN])
    assert len(state.hands[PERSIAN]) == 3  # two dealt, one drawn: at the limit
    assert game.illegal_reason(state, 10) is None
    game._draw(state, PERSIAN, None)  # a fourth card: over the limit of 3
    assert game.illegal_reason(state, 10) == "holding 4 cards; discard down to 3 first"


def test_a_reduced_game_refuses_deck_orders_of_other_cards():
    game = DuelGame(SMALL_DUELS["tiny"])
    with pytest.raises(ValueError, match="greek_order must be a permutation of the card ids"):
        game.new_state(range(DECK_SIZE), game.deck_ids[PERSIAN])


def test_a_config_survives_a_json_round_trip(tmp_path):
    path = tmp_path / "duel.json"
    path.write_text(json.dumps(SMALL_DUELS["small"].to_dict()))
    assert load_duel_config(path) == SMALL_DUELS["small"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"greek": [1, 0, 0]}, "greek must hold 9 counts"),
        ({"greek": "123456789"}, "greek must be a list of 9 counts"),
        ({"persian": [9, 0, 0, 0, 0, 0, 0, 0, 0]}, r"persian\[0\] must be in 0..8, got 9"),
        ({"persian": [1.5, 0, 0, 0, 0, 0, 0, 0, 0]}, r"persian\[0\] must be an integer"),
        ({"hand_limit": 8}, "hand_limit must be in 1..7, got 8"),
        ({"start_hand": 3}, "start_hand must be in 1..2, got 3"),
        ({"start_tokens": 0}, "start_tokens must be in 1..10, got 0"),
        ({"persian": [1, 0, 0, 0, 0, 0, 0, 0, 0]}, "the Persian deck holds 1 cards; it needs start_hand"),
        ({"greek": [0] * 9}, "the Greek deck holds 0 cards, fewer than start_hand"),
        ({"name": ""}, "name must be a non-empty string"),
        ({"colour": "red"}, "unknown field"),
    ],
)
def test_a_malformed_config_gets_a_one_line_error(change, message):
    data = SMALL_DUELS["tiny"].to_dict() | change
    with pytest.raises(DuelConfigError, match=message) as error:
        duel_config_from_mapping(data)
    assert "\n" not in str(error.value)


def test_a_config_file_that_is_not_json_or_misses_fields_is_refused(tmp_path):
    path = tmp_path / "duel.json"
    path.write_text("{not json")
    with pytest.raises(DuelConfigError, match="not valid JSON"):
        load_duel_config(path)
    path.write_text(json.dumps({"name": "x"}))
    with pytest.raises(DuelConfigError, match="missing field"):
        load_duel_config(path)
    with pytest.raises(DuelConfigError, match="cannot read"):
        load_duel_config(tmp_path / "absent.json")
