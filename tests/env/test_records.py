"""Game records (thermopylae_env.records): writing, validating, exact replay, and refusing bad files."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401 - registers the environments
from thermopylae_agents.evaluation.replay import record_agent_game as record_game
from thermopylae_env.record_format import FORMAT, VERSION, load_record
from thermopylae_env.records import (
    RecordEpisode,
    RecordMismatchError,
    describe_event,
    iter_replay,
    replay_record,
)

GAMES = [
    ("thermopylae/Coop-v0", {}, "random"),
    ("thermopylae/Coop-v0", {"num_players": 3}, "heuristic"),
    ("thermopylae/DuelGreek-v0", {"opponent": "random"}, "random"),
    ("thermopylae/DuelPersian-v0", {"opponent": "heuristic"}, "heuristic"),
]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, objects: list) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


@pytest.fixture(scope="module")
def coop_record(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("records") / "coop.jsonl"
    record_game("thermopylae/Coop-v0", "heuristic", path, seed=5, options={"num_players": 2})
    return path


@pytest.mark.parametrize(("env_id", "options", "agent"), GAMES)
def test_a_recorded_game_replays_to_the_identical_game(tmp_path, env_id, options, agent):
    path = tmp_path / "game.jsonl"
    result = record_game(env_id, agent, path, seed=11, options=options)
    record = load_record(path)
    assert record.env_id == env_id
    assert record.options == options
    assert record.seed == 11
    assert record.header["agent"] == agent
    assert result["finished"] is True
    assert result["steps"] == len(record.steps) > 0
    assert record.steps[-1]["terminated"] is True
    assert result["return"] == pytest.approx(sum(step["reward"] for step in record.steps))
    summary = replay_record(path)
    assert summary["steps"] == len(record.steps)
    assert summary["won"] == result["won"]


def test_record_layout_header_steps_result(coop_record):
    lines = _lines(coop_record)
    header, steps, result = lines[0], lines[1:-1], lines[-1]
    assert {"format", "version", "env_id", "options", "seed"} <= set(header)
    assert header["format"] == FORMAT and header["version"] == VERSION
    assert header["env_id"] == "thermopylae/Coop-v0" and header["options"] == {"num_players": 2}
    for number, step in enumerate(steps, start=1):
        assert step["type"] == "step" and step["step"] == number
        assert {"action", "action_name", "reward", "events"} <= set(step)
        assert isinstance(step["events"], list) and step["events"]
    assert result["type"] == "result" and result["steps"] == len(steps)
    assert result["reason"] in ("graveyard", "refill", "marker", "exhausted")
    kinds = {event["type"] for step in steps for event in step["events"]}
    assert {"retreat", "fight", "end"} & kinds


def test_the_same_seed_and_agent_write_the_same_record(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (a, b):
        record_game("thermopylae/DuelGreek-v0", "heuristic", path, seed=3, options={"opponent": "random"})
    assert a.read_bytes() == b.read_bytes()


def test_fights_record_their_dice_and_results(tmp_path):
    path = tmp_path / "coop.jsonl"
    record_game("thermopylae/Coop-v0", "heuristic", path, seed=2)
    fights = [e for step in load_record(path).steps for e in step["events"] if e["type"] == "fight"]
    assert fights
    for fight in fights:
        assert fight["total"] == fight["card"] + sum(fight["dice"])
        assert fight["results"]
        assert all(r["outcome"] in ("stays", "discard", "graveyard") for r in fight["results"])


def test_record_episode_wrapper_writes_one_file_per_episode(tmp_path):
    env = gym.make("thermopylae/Coop-v0", num_players=2, record_events=True)
    env = RecordEpisode(env, tmp_path / "episode-{episode}.jsonl", agent="first-legal")
    for seed in (None, 4):  # a reset without a seed records the seed it drew
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            done = terminated or truncated
    env.close()
    paths = sorted(tmp_path.glob("episode-*.jsonl"))
    assert [p.name for p in paths] == ["episode-0.jsonl", "episode-1.jsonl"]
    assert load_record(paths[1]).seed == 4
    for path in paths:
        assert load_record(path).header["agent"] == "first-legal"
        assert replay_record(path)["finished"] is True


def test_an_interrupted_episode_is_recorded_as_unfinished_and_replays(tmp_path):
    path = tmp_path / "cut.jsonl"
    env = RecordEpisode(gym.make("thermopylae/DuelPersian-v0", record_events=True), path)
    _, info = env.reset(seed=8)
    for _ in range(3):
        _, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        assert not terminated
    env.close()
    record = load_record(path)
    assert record.result["finished"] is False and record.result["steps"] == 3
    assert replay_record(path)["steps"] == 3


def test_recording_needs_events_and_json_options(tmp_path):
    with pytest.raises(ValueError, match="record_events=True"):
        RecordEpisode(gym.make("thermopylae/Coop-v0"), tmp_path / "x.jsonl")
    env = gym.make("thermopylae/DuelGreek-v0", opponent=lambda obs, mask: int(np.flatnonzero(mask)[-1]),
                   record_events=True)
    with pytest.raises(ValueError, match="JSON"):
        RecordEpisode(env, tmp_path / "x.jsonl")


def test_a_changed_die_is_caught_by_the_replay(tmp_path, coop_record):
    lines = _lines(coop_record)
    for line in lines[1:-1]:
        fights = [e for e in line["events"] if e["type"] == "fight" and e["dice"]]
        if fights:
            fights[0]["dice"][0] = 7 - fights[0]["dice"][0]  # another face of the die
            step = line["step"]
            break
    else:
        pytest.skip("no fight with dice in this game")
    path = _write(tmp_path / "tampered.jsonl", lines)
    with pytest.raises(RecordMismatchError, match=f"step {step} "):
        replay_record(path)


def test_a_changed_action_is_caught_by_the_replay(tmp_path):
    path = tmp_path / "duel.jsonl"
    record_game("thermopylae/DuelGreek-v0", "heuristic", path, seed=6, options={"opponent": "heuristic"})
    lines = _lines(path)
    lines[1]["action"] = 10 if lines[1]["action"] != 10 else 1  # a different discard-phase action
    _write(path, lines)
    with pytest.raises(RecordMismatchError, match="step 1 "):
        replay_record(path)


def test_iter_replay_yields_the_reset_then_every_step(coop_record):
    record = load_record(coop_record)
    moments = list(iter_replay(record))
    assert [m.index for m in moments] == list(range(len(record.steps) + 1))
    assert moments[0].step is None
    assert moments[-1].done


def _header(**changes) -> dict:
    header = {"type": "header", "format": FORMAT, "version": VERSION, "env_id": "thermopylae/Coop-v0",
              "options": {}, "seed": 1}
    header.update(changes)
    return header


def _step(number: int = 1, **changes) -> dict:
    step = {"type": "step", "step": number, "action": 0, "action_name": "retreat", "reward": 0.0,
            "terminated": False, "truncated": False, "events": []}
    step.update(changes)
    return step


def _result(steps: int = 1, **changes) -> dict:
    result = {"type": "result", "steps": steps, "finished": False, "return": 0.0, "won": None}
    result.update(changes)
    return result


MALFORMED = {
    "empty file": ([], "empty"),
    "not JSON": (["{not json"], "line 1: not valid JSON"),
    "not an object": ([[1, 2]], "line 1: expected a JSON object"),
    "no header": ([_step()], "line 1: the first line must be the header"),
    "wrong format": ([_header(format="chess-pgn"), _result(0)], "line 1: format must be"),
    "newer version": ([_header(version=99), _result(0)], "line 1: record version 99 is newer"),
    "seed not an integer": ([_header(seed="7"), _result(0)], "line 1: seed must be an integer"),
    "options not an object": ([_header(options=[1]), _result(0)], "line 1: options must be an object"),
    "action missing": ([_header(), _step(action=None), _result()], "line 2: action must be an integer"),
    "reward not a number": ([_header(), _step(reward="x"), _result()], "line 2: reward must be a finite"),
    "events not a list": ([_header(), _step(events="draw"), _result()], "line 2: events must be a list"),
    "steps out of order": ([_header(), _step(2), _result()], "line 2: step number 2 where 1 was expected"),
    "unknown line type": ([_header(), {"type": "comment"}, _result(0)], "line 2: unknown line type"),
    "no result line": ([_header(), _step()], "line 2: the record ends without a result line"),
    "line after result": ([_header(), _step(), _result(), _step(2)], "line 4: a line after the result"),
    "result miscounts": ([_header(), _step(), _result(5)], "line 3: the result counts 5 steps"),
    "step after the end": ([_header(), _step(terminated=True), _step(2), _result(2, finished=True)],
                           "line 3: a step after the step that ended the game"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_record_is_refused_with_the_line_and_the_problem(tmp_path, case):
    objects, message = MALFORMED[case]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objects))
    with pytest.raises(ValueError, match=message) as error:
        load_record(path)
    assert str(path) in str(error.value)


def test_a_record_with_unknown_env_options_is_refused(tmp_path):
    path = _write(tmp_path / "bad.jsonl", [_header(options={"colour": "blue"}), _step(), _result()])
    with pytest.raises(ValueError, match="do not fit"):
        replay_record(path)


@pytest.mark.parametrize(("env_id", "options", "agent"), GAMES)
def test_every_recorded_event_has_a_sentence(tmp_path, env_id, options, agent):
    path = tmp_path / "game.jsonl"
    record_game(env_id, agent, path, seed=9, options=options)
    record = load_record(path)
    events = record.header["reset"]["events"] + [e for step in record.steps for e in step["events"]]
    for event in events:
        text = describe_event(event)
        assert text and not text.startswith("(unknown event)"), event


def test_the_duel_description_hides_the_opponents_draws():
    draw = {"type": "draw", "player": 1, "card": 60}
    assert describe_event(draw, viewer=1) == "Persian (you) draws Ethiopian Tribesmen"
    assert describe_event(draw) == "Persian draws Ethiopian Tribesmen"
    assert describe_event(draw, viewer=0) == "Persian draws a card"
    assert describe_event({"type": "add", "player": 1, "kind": 4}, viewer=0) is None
    assert "Immortals" in describe_event({"type": "add", "player": 1, "kind": 4}, viewer=1)


# ------------------------------------------------------------------------------ a record is data (#11)


def test_the_record_format_works_without_the_agents_package(tmp_path):
    """Writing, reading and replaying a record needs nothing from thermopylae_agents."""
    import subprocess
    import sys

    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "thermopylae_agents" or name.startswith("thermopylae_agents."):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import numpy as np
from thermopylae_env.records import record_game, replay_record
first_legal = lambda obs, mask: int(np.flatnonzero(mask)[0])
result = record_game("thermopylae/Coop-v0", first_legal, {str(tmp_path / 'g.jsonl')!r}, seed=3)
assert replay_record({str(tmp_path / 'g.jsonl')!r})["steps"] == result["steps"]
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.fixture(scope="module")
def duel_against_a_model(tmp_path_factory) -> Path:
    pytest.importorskip("sb3_contrib")
    path = tmp_path_factory.mktemp("model-duel") / "duel.jsonl"
    record_game("thermopylae/DuelGreek-v0", "heuristic", path, seed=4,
                options={"opponent": "fast:duel_persian_maskable_ppo"})
    return path


def test_a_replay_never_loads_a_model_that_the_record_names(duel_against_a_model, monkeypatch):
    import thermopylae_agents.policies.sb3_agent as sb3_agent
    from thermopylae_env.records import RecordNeedsOpponentError

    def refuse(*args, **kwargs):
        raise AssertionError("a model file was loaded")

    monkeypatch.setattr(sb3_agent, "load_model", refuse)
    monkeypatch.setattr(sb3_agent.SB3Agent, "__init__", refuse)
    assert load_record(duel_against_a_model).options == {"opponent": "fast:duel_persian_maskable_ppo"}
    with pytest.raises(RecordNeedsOpponentError, match="pass that opponent explicitly"):
        replay_record(duel_against_a_model)


def test_a_game_against_a_model_replays_when_the_caller_passes_the_model(duel_against_a_model):
    from thermopylae_agents.evaluation.replay import replay_opponent

    record = load_record(duel_against_a_model)
    summary = replay_record(record, opponent=replay_opponent(record, "fast:duel_persian_maskable_ppo"))
    assert summary["finished"] is True
    assert summary["steps"] == len(record.steps)
    with pytest.raises(RecordMismatchError):  # another opponent does not reproduce the game
        replay_record(record, opponent=replay_opponent(record, "random"))


def _tamper(path: Path, out: Path, change) -> Path:
    lines = _lines(path)
    change(lines)
    return _write(out, lines)


def _first_step(lines):
    return lines[1]


FALSE_FIELDS = {
    "won flipped": (lambda ls: ls[-1].update(won=not ls[-1]["won"]), "won is"),
    "reason null": (lambda ls: ls[-1].update(reason=None), "the reason is"),
    "reason changed": (lambda ls: ls[-1].update(reason="marker" if ls[-1]["reason"] != "marker"
                                                else "graveyard"), "the reason is"),
    "action name changed": (lambda ls: _first_step(ls).update(action_name="fight 20 +5 support"),
                            "the action name is"),
    "illegal reason added": (lambda ls: _first_step(ls).update(illegal_reason="made up"),
                             "the illegal-move reason is"),
    "return changed": (lambda ls: ls[-1].update({"return": 5.0}), "replay return"),
}


@pytest.mark.parametrize("case", sorted(FALSE_FIELDS))
def test_a_replay_catches_every_false_field_it_would_show(tmp_path, coop_record, case):
    change, message = FALSE_FIELDS[case]
    path = _tamper(coop_record, tmp_path / "false.jsonl", change)
    with pytest.raises(RecordMismatchError, match=message):
        replay_record(path)


def test_replay_returns_the_recomputed_result(coop_record):
    record = load_record(coop_record)
    summary = replay_record(coop_record)
    assert summary == {"steps": len(record.steps), "return": record.result["return"],
                       "won": record.result["won"], "reason": record.result["reason"], "finished": True}


def test_an_unfinished_record_that_claims_a_winner_is_refused(tmp_path):
    path = _write(tmp_path / "claim.jsonl", [_header(), _step(), _result(won=True)])
    with pytest.raises(ValueError, match="an unfinished game has no winner"):
        load_record(path)


HOSTILE_FILES = {
    "deep JSON": (lambda p: p.write_text("[" * 100_000 + "]" * 100_000 + "\n"), "nested deeper"),
    "deep JSON inside the header": (
        lambda p: p.write_text(json.dumps(_header(options={"x": _nest(40)})) + "\n"), "nested deeper"),
    "huge number": (lambda p: p.write_text('{"type": "header", "seed": ' + "9" * 10_000 + "}\n"),
                    "not a usable JSON value"),
    "seed over 2**64": (lambda p: _write(p, [_header(seed=2**64), _result(0)]), "seed must be an integer"),
    "foreign env id": (lambda p: _write(p, [_header(env_id="CartPole-v1"), _result(0)]),
                       "env_id must name an environment of this package"),
    "module import in the env id": (lambda p: _write(p, [_header(env_id="os:Env-v0"), _result(0)]),
                                    "env_id must name an environment of this package"),
    "reason not a string": (lambda p: _write(p, [_header(), _step(terminated=True),
                                                 _result(finished=True, reason=[1])]),
                            "reason must be a string or null"),
}


def _nest(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("case", sorted(HOSTILE_FILES))
def test_a_hostile_record_file_is_refused_in_one_line(tmp_path, case):
    make, message = HOSTILE_FILES[case]
    path = tmp_path / "hostile.jsonl"
    make(path)
    with pytest.raises(ValueError, match=message) as error:
        load_record(path)
    assert "\n" not in str(error.value) and len(str(error.value)) < 400


@pytest.mark.parametrize("kind", ["folder", "device", "fifo", "too large"])
def test_a_record_path_that_is_not_a_small_regular_file_is_refused_before_reading(tmp_path, kind):
    import os

    from thermopylae_env.record_format import MAX_RECORD_BYTES

    path = {"folder": tmp_path, "device": Path("/dev/zero"), "fifo": tmp_path / "pipe",
            "too large": tmp_path / "big.jsonl"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    if kind == "too large":
        with open(path, "wb") as handle:
            handle.truncate(MAX_RECORD_BYTES + 1)  # sparse: no time spent writing
    message = {"folder": "is a folder", "device": "not a regular file", "fifo": "not a regular file",
               "too large": "more than a record may hold"}[kind]
    with pytest.raises(ValueError, match=message):
        load_record(path)


@pytest.mark.parametrize("where", ["folder", "missing read-only parent"])
def test_a_record_path_that_cannot_be_written_is_refused_before_the_game(tmp_path, where):
    import os

    if where == "folder":
        target = tmp_path
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        os.chmod(locked, 0o500)
        if os.access(locked, os.W_OK):  # running as root: permissions do not stop writing
            pytest.skip("permissions are not enforced for this user")
        target = locked / "sub" / "game.jsonl"
    env = gym.make("thermopylae/Coop-v0", record_events=True)
    with pytest.raises(ValueError, match="cannot write the record"):
        RecordEpisode(env, target)
