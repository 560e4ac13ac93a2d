"""The duel's size as data (``thermopylae_env.duel.config``): the full game by default, reduced duels on the
reference engine, and one-line errors for malformed configs."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import threading

import numpy as np
import pytest

from thermopylae_env.duel.config import (
    FULL_DUEL,
    MAX_CONFIG_FILE_BYTES,
    SMALL_DUELS,
    DuelConfig,
    DuelConfigError,
    duel_config_from_mapping,
    full_kind_counts,
    load_duel_config,
)
from thermopylae_env.duel.layout import DECK_SIZE, GREEK, PERSIAN
from thermopylae_env.duel.rules import DuelGame, check_invariants
from thermopylae_env.duel.state import shuffle_decks

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


def _one_line(call) -> str:
    with pytest.raises(DuelConfigError) as error:
        call()
    text = str(error.value)
    assert "\n" not in text and len(text) < 300
    return text


def test_a_config_file_nested_deep_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "more than a duel config may" in _one_line(lambda: load_duel_config(path))
    path.write_text("[" * 30_000 + "]" * 30_000)  # under the size cap
    assert "nested too deep" in _one_line(lambda: load_duel_config(path))


def test_a_config_file_over_the_size_cap_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    with open(path, "wb") as handle:
        handle.truncate(MAX_CONFIG_FILE_BYTES + 1)  # sparse: nothing is written
    monkeypatch.setattr(os, "fdopen", _no_read)
    message = _one_line(lambda: load_duel_config(path))
    assert f"more than a duel config may ({MAX_CONFIG_FILE_BYTES})" in message


def _no_read(*args, **kwargs):
    raise AssertionError("the file was read")


def test_a_device_a_folder_and_non_utf8_text_are_refused_in_one_line(tmp_path):
    assert "not a regular file" in _one_line(lambda: load_duel_config("/dev/zero"))
    assert "is a folder" in _one_line(lambda: load_duel_config(tmp_path))
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    assert "not UTF-8" in _one_line(lambda: load_duel_config(path))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    result: list[BaseException | object] = []

    def load() -> None:
        try:
            result.append(load_duel_config(fifo))
        except BaseException as err:  # the refusal, handed to the test's thread
            result.append(err)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # blocked in open(): a writer lets it go, and the test fails
        with open(fifo, "w") as writer:
            writer.write("{}")
        reader.join(10)
        pytest.fail("load_duel_config waited for a writer on a named pipe")
    assert isinstance(result[0], DuelConfigError) and "not a regular file" in str(result[0])


# --- a duel that can end before the Greek's first move ------------------------------------------------


def _ends_before_the_greeks_first_move(config: DuelConfig) -> bool:
    """Exhaustive search of the reference engine: whether some order of the Persian deck and some Persian
    play end the game before the Greek has a decision (the Greek's own cards never matter then: he is dealt
    them in deck order). Positions are memoised by what decides the rest of such a game."""
    game = DuelGame(config)
    rng = np.random.default_rng(0)  # the cards a discard card hits: all the Greek's, or any two of three
    kinds = game.card_kinds
    seen: dict[tuple, bool] = {}

    def search(state) -> bool:
        if state.terminated:
            return True
        if state.current_player == GREEK:
            return False
        key = (tuple(state.hand_counts[PERSIAN]), len(state.hands[GREEK]), tuple(state.deck_pos),
               state.tokens, state.phase, tuple(state.build),
               tuple(kinds[c] for c in state.decks[PERSIAN][state.deck_pos[PERSIAN]:]))
        if key not in seen:
            seen[key] = False
            for action in game.legal_actions(state):
                after = state.copy()
                game.apply(after, action, rng)
                if search(after):
                    seen[key] = True
                    break
        return seen[key]

    persian = game.deck_ids[PERSIAN]
    orders = {tuple(kinds[persian[i]] for i in perm) for perm in itertools.permutations(range(len(persian)))}
    for order in orders:
        left = {k: [c for c in persian if kinds[c] == k] for k in set(order)}
        if search(game.new_state(game.deck_ids[GREEK], [left[k].pop() for k in order])):
            return True
    return False


def _small_configs():
    """Small duels with every way to end before the Greek moves: 1 to 3 cards dealt, Greek decks that run
    out on turn 1 or later, Persian decks with 0 to 3 discard cards, attacks of 10 to 150."""
    greek_decks = [(1, 0, 0, 0, 0, 0, 0, 0, 0), (1, 1, 0, 0, 0, 0, 0, 0, 0), (1, 1, 0, 1, 0, 0, 0, 0, 0),
                   (1, 1, 0, 1, 0, 1, 0, 0, 0), (2, 1, 0, 1, 0, 0, 0, 0, 1)]
    for start_hand, tokens, greek in itertools.product((1, 2, 3), (1, 2, 4), greek_decks):
        for attack, immortals, strategy, discard in itertools.product((0, 1, 2), (0, 1), (0, 1), range(4)):
            persian = (attack, 0, 0, 0, immortals, strategy, 0, 0, discard)
            with contextlib.suppress(DuelConfigError):  # a deck too small for the deal
                yield DuelConfig("probe", greek, persian, start_hand, start_hand + 1, tokens)


def test_greek_may_never_move_agrees_with_an_exhaustive_search_of_the_engine():
    found = accepted = 0
    for config in _small_configs():
        expected = _ends_before_the_greeks_first_move(config)
        why = config.greek_may_never_move()
        assert (why is not None) == expected, config
        found += expected
        accepted += not expected
    assert found > 50 and accepted > 50


@pytest.mark.parametrize("config", [FULL_DUEL, *SMALL_DUELS.values(), WITH_DISCARD_CARDS],
                         ids=lambda c: c.name)
def test_the_full_duel_and_the_named_small_duels_give_the_greek_a_first_move(config):
    assert config.greek_may_never_move() is None
