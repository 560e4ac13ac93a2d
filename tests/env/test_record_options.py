"""A record's header options are data: they are checked against the env's own option names and types
before anything is made, a custom Persian deck is recorded as its rows, and neither a record nor a deck
error ever reads out a file the record names."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401 - registers the environments
from thermopylae_env import cards
from thermopylae_env.cards import DeckError, default_persian_deck, load_persian_deck
from thermopylae_env.record_format import ENV_OPTIONS, RESERVED_OPTIONS, GameRecord, load_record
from thermopylae_env.records import RecordEpisode, make_record_env, record_game, replay_record

SECRET = "TOP-SECRET-first-line"


def _first_legal(obs: np.ndarray, mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _header(**changes: object) -> dict:
    header = {"type": "header", "format": "thermopylae-record", "version": 1, "env_id": "thermopylae/Coop-v0",
              "options": {}, "seed": 1}
    header.update(changes)
    return header


RESULT = {"type": "result", "steps": 0, "finished": False, "return": 0.0, "won": None}


def _write(path: Path, header: dict) -> Path:
    path.write_text(json.dumps(header) + "\n" + json.dumps(RESULT) + "\n")
    return path


def _custom_deck_rows() -> list[list[int]]:
    """The default deck with every red value raised by one: a deck that plays differently."""
    return [[c.white, c.red + 1, int(c.bonus)] for c in default_persian_deck()]


def _write_deck(path: Path, rows: list[list[int]]) -> Path:
    path.write_text("white,red,bonus\n" + "".join(f"{w},{r},{b}\n" for w, r, b in rows))
    return path


@pytest.fixture
def no_file_reads(monkeypatch):
    """Fails the test if a deck file is opened."""

    def refuse(source, what):
        raise AssertionError(f"a deck file was read: {source}")

    monkeypatch.setattr(cards, "_read_csv", refuse)


# ------------------------------------------------------------------------------- records name no files


@pytest.mark.parametrize("deck", ["private", "missing", "/etc/passwd"])
def test_a_record_whose_deck_option_names_a_file_is_refused_without_reading_it(tmp_path, no_file_reads, deck):
    secret = tmp_path / "private.csv"
    secret.write_text(SECRET + "\n")
    target = {"private": str(secret), "missing": str(tmp_path / "nowhere.csv"), "/etc/passwd": deck}[deck]
    path = _write(tmp_path / "game.jsonl", _header(options={"persian_deck": target}))
    for load in (load_record, replay_record):
        with pytest.raises(ValueError, match="persian_deck must be the deck's rows") as caught:
            load(path)
        message = str(caught.value)
        assert "\n" not in message and SECRET not in message and str(path) in message


def test_a_record_built_in_memory_with_a_deck_path_is_refused_before_anything_is_made(tmp_path, no_file_reads,
                                                                                      monkeypatch):
    secret = tmp_path / "private.csv"
    secret.write_text(SECRET + "\n")
    monkeypatch.setattr(gym, "make", lambda *a, **k: pytest.fail("an env was made"))
    record = GameRecord(header=_header(options={"persian_deck": str(secret)}), steps=[], result=dict(RESULT))
    with pytest.raises(ValueError, match="persian_deck must be the deck's rows") as caught:
        make_record_env(record)
    assert SECRET not in str(caught.value)


def test_a_game_played_with_a_deck_file_records_the_rows_and_replays_without_the_file(tmp_path):
    rows = _custom_deck_rows()
    deck = _write_deck(tmp_path / "deck.csv", rows)
    path = tmp_path / "game.jsonl"
    result = record_game("thermopylae/Coop-v0", _first_legal, path, seed=4, options={"persian_deck": deck})
    record = load_record(path)
    assert record.options == {"persian_deck": rows}
    assert str(deck) not in path.read_text()
    deck.unlink()
    assert replay_record(path)["return"] == result["return"]
    assert make_record_env(record).unwrapped.game.persian == load_persian_deck(rows)


def test_the_record_episode_wrapper_records_the_rows_of_a_deck_file(tmp_path):
    rows = _custom_deck_rows()
    deck = _write_deck(tmp_path / "deck.csv", rows)
    env = gym.make("thermopylae/Coop-v0", persian_deck=str(deck), record_events=True)
    recorder = RecordEpisode(env, tmp_path / "game.jsonl")
    obs, info = recorder.reset(seed=2)
    recorder.step(_first_legal(obs, info["action_mask"]))
    recorder.close()
    assert load_record(tmp_path / "game.jsonl").options == {"persian_deck": rows}
    assert replay_record(tmp_path / "game.jsonl")["steps"] == 1


# ------------------------------------------------------------------------- options checked before make

BAD_OPTIONS = {
    "gym.make's step limit": ("thermopylae/Coop-v0", {"max_episode_steps": 3},
                              "unknown option 'max_episode_steps'"),
    "gym.make's checker switch": ("thermopylae/Coop-v0", {"disable_env_checker": False},
                                  "unknown option 'disable_env_checker'"),
    "gym.make's autoreset": ("thermopylae/DuelGreek-v0", {"autoreset": True}, "unknown option 'autoreset'"),
    "a duel option in the co-op": ("thermopylae/Coop-v0", {"opponent": "random"},
                                   "unknown option 'opponent'"),
    "a co-op option in the duel": ("thermopylae/DuelPersian-v0", {"persian_deck": None},
                                   "unknown option 'persian_deck'"),
    "render mode": ("thermopylae/Coop-v0", {"render_mode": "ansi"}, "must not set"),
    "player count as text": ("thermopylae/Coop-v0", {"num_players": "2"}, "num_players must be an integer"),
    "player count as a boolean": ("thermopylae/Coop-v0", {"num_players": True},
                                  "num_players must be an integer"),
    "shaping as text": ("thermopylae/Coop-v0", {"reward_shaping": "0.1"}, "reward_shaping must be a number"),
    "penalty as a boolean": ("thermopylae/DuelGreek-v0", {"illegal_action_penalty": True},
                             "illegal_action_penalty must be a number"),
    "policy as a number": ("thermopylae/Coop-v0", {"illegal_action": 1}, "illegal_action must be a string"),
    "opponent as an object": ("thermopylae/DuelGreek-v0", {"opponent": {"module": "os"}},
                              "opponent must be a string"),
    "deck as an object": ("thermopylae/Coop-v0", {"persian_deck": {"white": 1}},
                          "persian_deck must be the deck's"),
    "an env id of no env": ("thermopylae/Nothing-v0", {}, "not an environment of this package"),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_record_options_are_checked_against_the_env_before_anything_is_made(tmp_path, monkeypatch, case):
    env_id, options, message = BAD_OPTIONS[case]
    path = _write(tmp_path / "game.jsonl", _header(env_id=env_id, options=options))
    with pytest.raises(ValueError, match=message) as caught:
        load_record(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    monkeypatch.setattr(gym, "make", lambda *a, **k: pytest.fail("an env was made"))
    record = GameRecord(header=_header(env_id=env_id, options=options), steps=[], result=dict(RESULT))
    with pytest.raises(ValueError, match=message):
        make_record_env(record)


def test_good_record_options_load_and_replay(tmp_path):
    options = {"num_players": 2, "persian_deck": _custom_deck_rows(), "illegal_action": "loss",
               "illegal_action_penalty": -2, "reward_shaping": 0.5}
    path = _write(tmp_path / "game.jsonl", _header(options=options))
    assert load_record(path).options == options
    assert replay_record(path)["steps"] == 0


@pytest.mark.parametrize("env_id", sorted(ENV_OPTIONS))
def test_the_record_option_table_lists_exactly_the_options_of_each_env(env_id):
    cls = gym.spec(env_id).entry_point
    module, name = cls.split(":")
    signature = inspect.signature(getattr(__import__(module, fromlist=[name]), name).__init__)
    accepted = {p for p in signature.parameters if p != "self"} - set(RESERVED_OPTIONS)
    assert set(ENV_OPTIONS[env_id]) == accepted
    assert set(ENV_OPTIONS) == {i for i in gym.registry if i.startswith("thermopylae/")}


# ------------------------------------------------------------------- deck files are named, never quoted


def _rows_with(cell: tuple[int, int] | None = None, header: list[str] | None = None) -> list[list[str]]:
    rows = [[str(v) for v in row] for row in _custom_deck_rows()]
    if cell is not None:
        rows[cell[0]][cell[1]] = SECRET
    return [header or ["white", "red", "bonus"]] + rows


DECK_FILES = {
    "white cell": (lambda: _rows_with((2, 0)), "row 3 .*white must be a whole number"),
    "red cell": (lambda: _rows_with((0, 1)), "row 1 .*red must be a whole number"),
    "bonus cell": (lambda: _rows_with((5, 2)), "row 6 .*bonus must be 0 or 1"),
    "unknown column": (lambda: _rows_with(header=["white", "red", SECRET]), r"unknown column at position 3"),
    "first line of a private file": (lambda: [[SECRET, "x"]],
                                     r"missing column\(s\) \['white', 'red', 'bonus'\]"),
    "duplicate unknown column": (lambda: _rows_with(header=[SECRET, SECRET, "bonus"]), "column 2 repeats"),
}


@pytest.mark.parametrize("case", sorted(DECK_FILES))
def test_a_broken_deck_file_is_named_and_nothing_of_it_is_quoted(tmp_path, case):
    make_rows, message = DECK_FILES[case]
    path = tmp_path / "deck.csv"
    path.write_text("".join(",".join(row) + "\n" for row in make_rows()))
    with pytest.raises(DeckError, match=message) as caught:
        load_persian_deck(path)
    text = str(caught.value)
    assert str(path) in text and SECRET.lower() not in text.lower() and "\n" not in text


def test_a_reduced_duel_is_recorded_as_its_config_object_and_replays_the_same_game(tmp_path):
    from thermopylae_env.duel.config import SMALL_DUELS
    from thermopylae_env.record_format import load_record
    from thermopylae_env.records import RecordEpisode, replay_record

    config = SMALL_DUELS["small"]
    env = RecordEpisode(gym.make("thermopylae/DuelGreek-v0", config=config, record_events=True),
                        tmp_path / "small.jsonl")
    obs, info = env.reset(seed=3)
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        done = terminated or truncated
    env.close()
    record = load_record(tmp_path / "small.jsonl")
    assert record.header["options"]["config"] == config.to_dict()
    replayed = replay_record(record)
    assert replayed["finished"] and replayed["won"] == record.result["won"]


def test_a_duel_config_given_as_json_is_checked_in_one_line():
    from thermopylae_env.duel.config import DuelConfigError

    with pytest.raises(DuelConfigError, match=r"missing field\(s\) greek, persian"):
        gym.make("thermopylae/DuelGreek-v0", config={"name": "mine"})
