"""Hostile input: every bad value gets a clear error that names the problem, and changes nothing.

Covers what the per-module tests do not: the whole catalogue of malformed actions on every environment
(single, PettingZoo, vector, SB3 adapter) with a full before/after snapshot of the game, its generator,
its mask and its observation; ``step`` before ``reset`` and after the end; bad constructor options; broken
Persian deck files; broken model files (the duel opponent, the SB3 agent loader, ``scripts/evaluate.py``);
and record files that cannot be read.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401  (registers the environments)
from thermopylae_env import duel_v1
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.cards import DeckError, default_persian_deck
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.sb3 import CoopSB3VecEnv
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.duel.env import DuelGreekEnv, DuelPersianEnv

ROOT = Path(__file__).resolve().parents[2]


def freeze(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def state_snapshot(state: object) -> tuple:
    """Every field of an engine state (a dataclass), copied."""
    return tuple(freeze(getattr(state, f.name)) for f in dataclasses.fields(state))


# ------------------------------------------------------------------------------------ single environments

SINGLE_ENVS = {
    "coop": lambda: CoopEnv(num_players=2),
    "coop via gym.make": lambda: gym.make("thermopylae/Coop-v0", num_players=3),
    "greek": lambda: DuelGreekEnv(opponent="random"),
    "persian": lambda: DuelPersianEnv(),
    "greek via gym.make": lambda: gym.make("thermopylae/DuelGreek-v0"),
}


def observe(env: gym.Env) -> np.ndarray:
    raw = env.unwrapped
    if isinstance(raw, CoopEnv):
        return raw.game.observe(raw.state)
    return raw.game.observe(raw.state, raw.side)


def env_snapshot(env: gym.Env) -> tuple:
    """The whole game, the generator (dice, shuffles, the random opponent), the mask and the observation."""
    raw = env.unwrapped
    return (state_snapshot(raw.state), raw.np_random.bit_generator.state, raw.action_masks().tobytes(),
            observe(env).tobytes())


class Strange:
    """An object that is nothing like an action."""


# (action, error, what the message must say); "N" stands for the size of the action space.
BAD_ACTIONS = [
    pytest.param("0", TypeError, "got str", id="str"),
    pytest.param(b"\x00", TypeError, "got bytes", id="bytes"),
    pytest.param(1.5, TypeError, "got float 1.5", id="float 1.5"),
    pytest.param(2.0, TypeError, "got float 2.0", id="integral float"),
    pytest.param(np.float32(3.0), TypeError, "float32", id="numpy float32"),
    pytest.param(1j, TypeError, "got complex", id="complex"),
    pytest.param([1], TypeError, "got list", id="list"),
    pytest.param((0,), TypeError, "got tuple", id="tuple"),
    pytest.param({"action": 0}, TypeError, "got dict", id="dict"),
    pytest.param(Strange(), TypeError, "got Strange", id="object"),
    pytest.param(np.array([1, 2]), ValueError, r"scalar, got an array of shape \(2,\)", id="array (2,)"),
    pytest.param(np.array([[0]]), ValueError, r"shape \(1, 1\)", id="array shape (1, 1)"),
    pytest.param(np.array(1.0), TypeError, "got float 1.0", id="0-d float array"),
    pytest.param(np.array([1.0]), ValueError, r"shape \(1,\)", id="float array shape (1,)"),
    pytest.param(-1, ValueError, "action -1 is outside the action space", id="-1"),
    pytest.param("N", ValueError, "is outside the action space", id="n"),
    pytest.param(2**70, ValueError, "is outside the action space", id="2**70"),
    pytest.param(np.int64(-5), ValueError, "action -5 is outside", id="numpy -5"),
    pytest.param(float("nan"), ValueError, "NaN", id="nan"),
    pytest.param(np.array(np.nan), ValueError, "NaN", id="0-d nan array"),
    pytest.param(None, TypeError, "None", id="None"),
    pytest.param(True, TypeError, "boolean", id="True"),
    pytest.param(np.bool_(False), TypeError, "boolean", id="numpy bool"),
    pytest.param(np.array(True), TypeError, "boolean", id="0-d bool array"),
]


def resolve(action: object, n: int) -> object:
    return n if isinstance(action, str) and action == "N" else action


@pytest.mark.parametrize("name", sorted(SINGLE_ENVS))
@pytest.mark.parametrize(("action", "error", "message"), BAD_ACTIONS)
def test_out_of_space_actions_raise_a_clear_error_and_change_nothing(name, action, error, message):
    env = SINGLE_ENVS[name]()
    env.reset(seed=3)
    before = env_snapshot(env)
    with pytest.raises(error, match=message):
        env.step(resolve(action, env.action_space.n))
    assert env_snapshot(env) == before
    legal = int(np.flatnonzero(env.unwrapped.action_masks())[0])
    env.step(legal)  # the game goes on


@pytest.mark.parametrize("name", sorted(SINGLE_ENVS))
def test_step_before_reset_raises_runtime_error(name):
    env = SINGLE_ENVS[name]()
    # the env's own guard (registered without Gymnasium's OrderEnforcing): both error types at once
    with pytest.raises(gym.error.ResetNeeded, match="reset") as caught:
        env.step(0)
    assert isinstance(caught.value, RuntimeError)
    assert env.unwrapped.state is None


@pytest.mark.parametrize("name", sorted(SINGLE_ENVS))
def test_step_after_a_finished_game_raises_runtime_error_and_changes_nothing(name):
    env = SINGLE_ENVS[name]()
    obs, info = env.reset(seed=5)
    rng = np.random.default_rng(0)
    terminated = False
    while not terminated:
        legal = np.flatnonzero(info["action_mask"])
        obs, _, terminated, _, info = env.step(int(legal[rng.integers(legal.size)]))
    assert "illegal_action" not in info  # a game that ended by the rules
    before = env_snapshot(env)
    for action in (0, 1, None, "x"):
        with pytest.raises(RuntimeError, match="ended"):
            env.step(action)
    assert env_snapshot(env) == before
    env.reset(seed=5)  # a reset starts a new game
    assert env.unwrapped.action_masks().any()


@pytest.mark.parametrize("name", sorted(SINGLE_ENVS))
def test_illegal_action_in_raise_mode_names_the_move_and_changes_nothing(name):
    env = SINGLE_ENVS[name]()
    env.unwrapped.illegal_action = "raise"
    env.reset(seed=2)
    before = env_snapshot(env)
    for action in np.flatnonzero(~env.unwrapped.action_masks()):
        with pytest.raises(IllegalActionError, match=r".+: .+"):
            env.step(int(action))
    assert env_snapshot(env) == before


@pytest.mark.parametrize("name", sorted(SINGLE_ENVS))
def test_writing_into_the_handed_out_mask_does_not_make_an_illegal_action_legal(name):
    env = SINGLE_ENVS[name]()
    env.unwrapped.illegal_action = "raise"
    _, info = env.reset(seed=2)
    illegal = np.flatnonzero(info["action_mask"] == 0)
    info["action_mask"][:] = 1
    env.unwrapped.action_masks()[:] = True
    before = env_snapshot(env)
    for action in illegal:
        with pytest.raises(IllegalActionError):
            env.step(int(action))
    assert env_snapshot(env) == before


# --------------------------------------------------------------------------------------------- PettingZoo


def aec_snapshot(raw: duel_v1.raw_env) -> tuple:
    return (state_snapshot(raw.state), raw._np_random.bit_generator.state, raw.agent_selection,
            dict(raw.rewards), dict(raw._cumulative_rewards), dict(raw.terminations), list(raw.agents),
            raw.observe(raw.agent_selection)["observation"].tobytes())


@pytest.mark.parametrize(("action", "error", "message"), BAD_ACTIONS)
def test_raw_aec_env_refuses_out_of_space_actions_and_changes_nothing(action, error, message):
    raw = duel_v1.raw_env()
    raw.reset(seed=4)
    before = aec_snapshot(raw)
    with pytest.raises(error, match=message):
        raw.step(resolve(action, 21))
    assert aec_snapshot(raw) == before


@pytest.mark.parametrize(("action", "error", "message"), BAD_ACTIONS)
def test_wrapped_aec_env_refuses_out_of_space_actions_and_changes_nothing(action, error, message):
    env = duel_v1.env()
    env.reset(seed=4)
    before = aec_snapshot(env.unwrapped)
    with pytest.raises(error, match=message):
        env.step(resolve(action, 21))
    assert aec_snapshot(env.unwrapped) == before
    assert not any(env.terminations.values())


def test_raw_aec_env_refuses_an_illegal_move_without_touching_the_rewards():
    raw = duel_v1.raw_env()
    raw.reset(seed=4)
    raw._cumulative_rewards["persian"] = 7  # must survive a refused move
    before = aec_snapshot(raw)
    mask = raw.observe(raw.agent_selection)["action_mask"]
    for action in np.flatnonzero(mask == 0):
        with pytest.raises(IllegalActionError, match="persian: "):
            raw.step(int(action))
    assert aec_snapshot(raw) == before


def test_aec_env_before_reset_and_after_the_end():
    raw = duel_v1.raw_env()
    with pytest.raises(RuntimeError, match="before reset"):
        raw.step(0)
    env = duel_v1.env()
    with pytest.raises(AssertionError, match="reset"):  # PettingZoo's OrderEnforcingWrapper
        env.step(0)
    raw.reset(seed=8)
    rng = np.random.default_rng(1)
    while not raw.state.terminated:
        legal = np.flatnonzero(raw.observe(raw.agent_selection)["action_mask"])
        raw.step(int(legal[rng.integers(legal.size)]))
    with pytest.raises(ValueError, match="only valid action is None"):  # PettingZoo's dead-agent rule
        raw.step(0)
    raw.step(None)
    raw.step(None)
    assert not raw.agents
    with pytest.raises(RuntimeError, match="ended"):
        raw.step(None)


# ---------------------------------------------------------------------------------- vector environments


def vector_snapshot(engine) -> tuple:
    fields = ("phase", "current", "recipient", "marker", "support", "spartan_pos", "persian_pos", "graveyard",
              "persian_discard", "offers", "slot1", "slot2", "hands", "hand_total", "hand_bits",
              "spartan_order", "persian_order", "dice_sum", "dice_pos", "turn", "won", "lost", "keys",
              "episodes", "obs", "masks")
    return tuple(getattr(engine, name).tobytes() for name in fields)


BAD_BATCHES = [  # for 3 games
    pytest.param(None, TypeError, "None", id="None"),
    pytest.param("000", TypeError, "must be integers", id="str"),
    pytest.param(["0", "1", "2"], TypeError, "must be integers", id="list of str"),
    pytest.param({"a": 1}, TypeError, "must be integers", id="dict"),
    pytest.param(1.5, TypeError, "must be integers", id="float"),
    pytest.param(0, ValueError, r"shape \(3,\), got \(\)", id="scalar"),
    pytest.param([0, 0], ValueError, r"shape \(3,\), got \(2,\)", id="too few"),
    pytest.param([[0], [0], [0]], ValueError, r"shape \(3,\), got \(3, 1\)", id="shape (3, 1)"),
    pytest.param([0, [1], 2], TypeError, "integer array", id="ragged"),
    pytest.param(np.array([0.0, 1.0, 2.0]), TypeError, "dtype float64", id="float array"),
    pytest.param(np.array([0.0, np.nan, 0.0]), ValueError, "NaN", id="nan"),
    pytest.param(np.array([True, False, True]), TypeError, "booleans", id="bool array"),
    pytest.param(np.array([0, 0, -1]), ValueError, "action -1 of game 2 is outside", id="-1"),
    pytest.param(np.array([72, 0, 0]), ValueError, "action 72 of game 0 is outside", id="72"),
]


@pytest.mark.parametrize(("actions", "error", "message"), BAD_BATCHES)
def test_vector_env_refuses_bad_action_batches_and_no_game_moves(actions, error, message):
    env = CoopVectorEnv(num_envs=3, num_players=2)
    env.reset(seed=1)
    before = vector_snapshot(env.engine)
    with pytest.raises(error, match=message):
        env.step(actions)
    assert vector_snapshot(env.engine) == before
    env.step(np.zeros(3, dtype=np.int64))  # retreat everywhere: still playable


@pytest.mark.parametrize(("actions", "error", "message"), BAD_BATCHES)
def test_sb3_adapter_refuses_bad_action_batches_and_no_game_moves(actions, error, message):
    env = CoopSB3VecEnv(num_envs=3, seed=1)
    env.reset()
    before = vector_snapshot(env.engine)
    counters = (env._episode_return.tobytes(), env._episode_length.tobytes())
    with pytest.raises(error, match=message):
        env.step(actions)
    with pytest.raises(error, match=message):  # step_async itself checks, before step_wait
        env.step_async(actions)
    assert vector_snapshot(env.engine) == before
    assert (env._episode_return.tobytes(), env._episode_length.tobytes()) == counters
    env.step(np.zeros(3, dtype=np.int64))


def test_sb3_adapter_names_a_none_action():
    env = CoopSB3VecEnv(num_envs=3, seed=1)
    env.reset()
    with pytest.raises(TypeError, match="actions is None"):
        env.step(None)


def test_observe_rows_of_no_game_is_an_empty_block():
    env = CoopVectorEnv(num_envs=3, num_players=2)
    env.reset(seed=1)
    for empty in (np.array([], dtype=np.intp), np.array([], dtype=np.int64), []):
        rows = env.engine.observe_rows(empty)
        assert rows.shape == (0, 115) and rows.dtype == np.float32
    np.testing.assert_array_equal(env.engine.observe_rows(np.array([2, 0])), env.engine.obs[[2, 0]])


def test_vector_envs_before_reset_and_after_close():
    with pytest.raises(RuntimeError, match="before reset"):
        CoopVectorEnv(num_envs=2).step(np.zeros(2, dtype=np.int64))
    with pytest.raises(RuntimeError, match="before reset"):
        CoopSB3VecEnv(num_envs=2).step(np.zeros(2, dtype=np.int64))
    env = CoopVectorEnv(num_envs=2)
    env.reset(seed=0)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(2, dtype=np.int64))


# ------------------------------------------------------------------------------------- constructor options

COOP_CONSTRUCTORS = {
    "CoopEnv": lambda **kw: CoopEnv(**kw),
    "gym.make": lambda **kw: gym.make("thermopylae/Coop-v0", **kw),
    "CoopVectorEnv": lambda **kw: CoopVectorEnv(num_envs=2, **kw),
    "gym.make_vec": lambda **kw: gym.make_vec("thermopylae/Coop-v0", num_envs=2, **kw),
    "CoopSB3VecEnv": lambda **kw: CoopSB3VecEnv(num_envs=2, **kw),
}


@pytest.mark.parametrize("make", sorted(COOP_CONSTRUCTORS))
@pytest.mark.parametrize(
    ("players", "error", "message"),
    [(0, ValueError, "num_players must be 1..4, got 0"), (5, ValueError, "num_players must be 1..4, got 5"),
     (-1, ValueError, "num_players must be 1..4, got -1"), ("2", TypeError, "num_players must be an integer"),
     (2.0, TypeError, "num_players must be an integer"), (None, TypeError, "num_players must be an integer"),
     (True, TypeError, "num_players must be an integer")],
)
def test_bad_player_counts_are_refused(make, players, error, message):
    with pytest.raises(error, match=message):
        COOP_CONSTRUCTORS[make](num_players=players)


ALL_CONSTRUCTORS = {**COOP_CONSTRUCTORS, "DuelGreekEnv": DuelGreekEnv, "DuelPersianEnv": DuelPersianEnv,
                    "gym.make duel": lambda **kw: gym.make("thermopylae/DuelPersian-v0", **kw)}


@pytest.mark.parametrize("make", sorted(ALL_CONSTRUCTORS))
@pytest.mark.parametrize("mode", ["bogus", "LOSS", "", None, 1])
def test_unknown_illegal_action_policies_are_refused(make, mode):
    with pytest.raises(ValueError, match=r"illegal_action must be one of \('loss', 'raise'(, 'replace')?\)"):
        ALL_CONSTRUCTORS[make](illegal_action=mode)


PENALTIES = [pytest.param("x", "must be a number, got 'x'", id="str"),
             pytest.param(None, "must be a number, got None", id="None"),
             pytest.param(float("nan"), "must be a finite number, got nan", id="nan"),
             pytest.param(float("-inf"), "must be a finite number, got -inf", id="-inf")]


@pytest.mark.parametrize("make", ["CoopEnv", "gym.make", "DuelGreekEnv", "DuelPersianEnv", "gym.make duel"])
@pytest.mark.parametrize(("penalty", "message"), PENALTIES)
def test_a_penalty_that_is_not_a_finite_number_is_refused(make, penalty, message):
    with pytest.raises(ValueError, match=f"illegal_action_penalty {message}"):
        ALL_CONSTRUCTORS[make](illegal_action_penalty=penalty)


@pytest.mark.parametrize("make", ["CoopVectorEnv", "gym.make_vec", "CoopSB3VecEnv"])
@pytest.mark.parametrize(("penalty", "message"), PENALTIES)
def test_vector_envs_refuse_a_penalty_that_is_not_a_finite_number(make, penalty, message):
    with pytest.raises(ValueError, match=f"illegal_action_penalty {message}"):
        ALL_CONSTRUCTORS[make](illegal_action_penalty=penalty)


@pytest.mark.parametrize(("penalty", "message"), PENALTIES)
def test_the_sb3_adapter_refuses_setting_a_penalty_that_is_not_a_finite_number(penalty, message):
    env = CoopSB3VecEnv(num_envs=2)
    with pytest.raises(ValueError, match=f"illegal_action_penalty {message}"):
        env.set_attr("illegal_action_penalty", penalty)
    assert env.get_attr("illegal_action_penalty") == [-1.0, -1.0]
    for shaping in ("x", None, float("nan"), -0.5):
        with pytest.raises(ValueError, match="reward_shaping must be a finite number >= 0"):
            env.set_attr("reward_shaping", shaping)
    assert env.get_attr("reward_shaping") == [0.0, 0.0]


@pytest.mark.parametrize("make", ["CoopEnv", "gym.make", "CoopVectorEnv", "gym.make_vec", "CoopSB3VecEnv"])
@pytest.mark.parametrize("shaping", ["x", None, [1.0], float("nan"), float("inf"), -0.5])
def test_every_coop_env_refuses_a_reward_shaping_that_is_not_a_finite_rate_naming_it(make, shaping):
    with pytest.raises(ValueError, match="^reward_shaping must be a finite number >= 0, got "):
        ALL_CONSTRUCTORS[make](reward_shaping=shaping)


@pytest.mark.parametrize("cls", [DuelGreekEnv, DuelPersianEnv])
def test_unknown_opponent_names_are_refused_naming_the_choices(cls):
    with pytest.raises(ValueError, match=r"bogus.*opponent must be 'heuristic', 'random'"):
        cls(opponent="bogus")
    for bad in (None, 3.5, ["random"]):
        with pytest.raises(ValueError, match="opponent must be 'heuristic', 'random'"):
            cls(opponent=bad)


# --------------------------------------------------------------------------------------------- model files


@pytest.fixture()
def bad_model_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Files that are not SB3 models, with what the error must say about each."""
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    fake_zip = tmp_path / "fake.zip"
    fake_zip.write_text("a text file called .zip")
    empty = tmp_path / "empty.zip"
    empty.write_bytes(b"")
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("data", "{}")
    folder = tmp_path / "folder.zip"
    folder.mkdir()
    return {
        "missing": (tmp_path / "missing.zip", "missing.zip"),
        "folder": (folder, "folder.zip"),
        "text file": (text, "notes.txt"),
        "text file named .zip": (fake_zip, "fake.zip"),
        "empty file": (empty, "empty.zip"),
        "zip that is not a model": (other_zip, "other.zip"),
    }


MODEL_FILE_CASES = ["missing", "folder", "text file", "text file named .zip", "empty file",
                    "zip that is not a model"]


@pytest.mark.parametrize("case", MODEL_FILE_CASES)
@pytest.mark.parametrize("cls", [DuelGreekEnv, DuelPersianEnv])
def test_duel_opponent_paths_are_refused_unread_naming_the_file(bad_model_files, case, cls):
    path, name = bad_model_files[case]
    with pytest.raises(ValueError, match=f"{name}.*loads no model file"):
        cls(opponent=path)
    with pytest.raises(ValueError, match=f"{name}.*loads no model file"):
        cls(opponent=str(path))


@pytest.mark.parametrize("case", MODEL_FILE_CASES)
def test_sb3_agent_loader_refuses_non_model_files(bad_model_files, case):
    from thermopylae_agents.policies.sb3_agent import SB3Agent, load_model

    path, name = bad_model_files[case]
    expected = {"missing": "model file not found", "folder": "not a file", "text file": "not a zip archive",
                "text file named .zip": "not a zip archive", "empty file": "not a zip archive",
                "zip that is not a model": "cannot load an SB3 model"}[case]
    with pytest.raises(ValueError, match=expected) as error:
        load_model(path)
    assert name in str(error.value)
    with pytest.raises(ValueError, match=name):
        SB3Agent(str(path))


@pytest.mark.parametrize("case", MODEL_FILE_CASES)
def test_record_agents_refuse_non_model_files(bad_model_files, case):
    from thermopylae_agents.evaluation.replay import agent_for_env as make_agent

    path, name = bad_model_files[case]
    with pytest.raises(ValueError, match=name):
        make_agent(str(path), CoopEnv())


@pytest.mark.parametrize("case", ["missing", "text file named .zip", "zip that is not a model"])
def test_evaluate_script_refuses_non_model_files_with_the_path_in_the_message(bad_model_files, case):
    path, name = bad_model_files[case]
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "evaluate.py"), str(path), "--games", "1", "--no-progress"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert name in last and ("model" in last or "zip" in last), run.stderr


# ------------------------------------------------------------------------------------- Persian deck files


def deck_rows() -> list[list[str]]:
    return [[str(c.white), str(c.red), str(int(c.bonus))] for c in default_persian_deck()]


def write_csv(path: Path, header: list[str] | None, rows: list[list[str]]) -> Path:
    lines = ([",".join(header)] if header is not None else []) + [",".join(row) for row in rows]
    path.write_text("\n".join(lines) + ("\n" if lines else ""))
    return path


HEADER = ["white", "red", "bonus"]


def bad_deck(case: str, tmp_path: Path) -> tuple[object, str]:
    """A broken Persian deck (a path, or a Python value) and what the error must say."""
    rows = deck_rows()
    target = tmp_path / f"{case.replace(' ', '_')}.csv"
    if case == "missing rows":
        return write_csv(target, HEADER, rows[:27]), "expected 28 cards, got 27"
    if case == "extra rows":
        return write_csv(target, HEADER, rows + [rows[0]]), "expected 28 cards, got 29"
    if case == "red < white":
        rows[4] = ["20", "15", "0"]
        return write_csv(target, HEADER, rows), "row 5 .*red 15 is smaller than white 20"
    if case == "non-numeric cell":
        rows[2][0] = "twenty"
        return write_csv(target, HEADER, rows), "row 3 .*white must be a whole number"
    if case == "fractional cell":
        rows[0][1] = "21.5"
        return write_csv(target, HEADER, rows), "row 1 .*red must be a whole number"
    if case == "nan cell":
        rows[0][0] = "nan"
        return write_csv(target, HEADER, rows), "row 1 .*white must be a whole number"
    if case == "negative value":
        rows[7] = ["-3", "5", "0"]
        return write_csv(target, HEADER, rows), r"row 8 .*white -3 is outside 1\.\.99"
    if case == "bad bonus":
        rows[1][2] = "2"
        return write_csv(target, HEADER, rows), "row 2 .*bonus must be 0 or 1"
    if case == "missing cell":
        rows[3] = rows[3][:2]
        return write_csv(target, HEADER, rows), "row 4 .*expected 3 cells, got 2"
    if case == "duplicate header":
        return write_csv(target, ["white", "red", "red"], rows), "column 3 repeats column 2"
    if case == "wrong header":
        return write_csv(target, ["combat", "red", "bonus"], rows), r"missing column\(s\) \['white'\]"
    if case == "header only":
        return write_csv(target, HEADER, []), "expected 28 cards, got 0"
    if case == "empty file":
        target.write_text("")
        return target, "is empty"
    if case == "blank lines only":
        target.write_text("\n \n,,\n")
        return target, "is empty"
    if case == "missing file":
        return tmp_path / "nowhere.csv", "cannot read .*nowhere.csv"
    if case == "folder":
        return tmp_path, "cannot read"
    if case == "binary file":
        target.write_bytes(b"\xff\xfe\x00\x81garbage")
        return target, "not a UTF-8 text"
    if case == "not a path or rows":
        return 123, "expected a CSV path, rows .* got int 123"
    if case in ("exponent", "underscore", "non-ASCII digits", "full-width digits", "float text"):
        rows[5][0] = {"exponent": "1e1", "underscore": "1_0", "non-ASCII digits": "\u0661\u0660",
                      "full-width digits": "\uff11\uff10", "float text": "10.0"}[case]
        return write_csv(target, HEADER, rows), "row 6 .*white must be a whole number of ASCII digits"
    if case == "empty bonus":
        rows[9][2] = ""
        return write_csv(target, HEADER, rows), "row 10 .*bonus is empty: write 0 for no bonus"
    if case == "cell over the csv field limit":
        target.write_text("white,red,bonus\n" + "10,12,0\n" * 3 + '"' + "9" * 200_000 + '",12,0\n')
        return target, "line 5: .*(not a valid CSV row|longer than)"
    if case == "device":
        return Path("/dev/zero"), "not a regular file"
    if case == "fifo":
        os.mkfifo(target)
        return target, "not a regular file"
    if case == "two million rows":
        target.write_text("white,red,bonus\n" + "10,12,0\n" * 2_000_000)
        return target, "more than a deck file may"
    if case == "too many rows":
        target.write_text("white,red,bonus\n" + "10,12,0\n" * 1001)
        return target, "more than 1000 rows"
    raise AssertionError(case)


DECK_CASES = ["missing rows", "extra rows", "red < white", "non-numeric cell", "fractional cell", "nan cell",
              "negative value", "bad bonus", "missing cell", "duplicate header", "wrong header",
              "header only", "empty file", "blank lines only", "missing file", "folder", "binary file",
              "not a path or rows", "exponent", "underscore", "non-ASCII digits", "full-width digits",
              "float text", "empty bonus", "cell over the csv field limit", "device", "fifo",
              "two million rows", "too many rows"]


@pytest.mark.parametrize("make", sorted(COOP_CONSTRUCTORS))
@pytest.mark.parametrize("case", DECK_CASES)
def test_broken_persian_deck_files_are_refused_naming_the_problem(tmp_path, make, case):
    deck, message = bad_deck(case, tmp_path)
    with pytest.raises(DeckError, match=message) as error:
        COOP_CONSTRUCTORS[make](persian_deck=deck)
    if isinstance(deck, Path) and case != "folder":
        assert deck.name in str(error.value)  # the message names the file
    assert "\n" not in str(error.value)  # one line


# ------------------------------------------------------------------------------------------- record files


def _record(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "game.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


HEADER_LINE = {"type": "header", "format": "thermopylae-record", "version": 1,
               "env_id": "thermopylae/Coop-v0", "options": {}, "seed": 1}
RESULT_LINE = {"type": "result", "steps": 1, "finished": False, "return": 0.0, "won": None}


def _step(action: object) -> dict:
    return {"type": "step", "step": 1, "action": action, "action_name": "retreat", "reward": 0.0,
            "terminated": False, "truncated": False, "events": []}


def test_a_missing_record_file_raises_file_not_found(tmp_path):
    from thermopylae_env.record_format import load_record

    with pytest.raises(FileNotFoundError, match="nowhere.jsonl"):
        load_record(tmp_path / "nowhere.jsonl")


def test_a_folder_given_as_record_names_the_path(tmp_path):
    from thermopylae_env.record_format import load_record

    with pytest.raises(ValueError, match=f"{tmp_path}: is a folder"):
        load_record(tmp_path)


def test_a_binary_record_file_is_refused_naming_the_file(tmp_path):
    from thermopylae_env.record_format import load_record

    path = tmp_path / "game.jsonl"
    path.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(ValueError, match="game.jsonl"):
        load_record(path)


@pytest.mark.parametrize(
    ("action", "message"),
    [(-1, "line 2: action must be an integer >= 0, got -1"), (1.0, "line 2: action must be an integer"),
     (True, "line 2: action must be an integer"), ("0", "line 2: action must be an integer")],
)
def test_a_record_with_an_action_that_is_not_an_action_is_refused(tmp_path, action, message):
    from thermopylae_env.record_format import load_record

    with pytest.raises(ValueError, match=message):
        load_record(_record(tmp_path, [HEADER_LINE, _step(action), RESULT_LINE]))


@pytest.mark.parametrize("action", [72, 10**9, 60])  # outside the space; inside but illegal at the start
def test_replaying_a_record_with_an_impossible_action_is_refused(tmp_path, action):
    from thermopylae_env.records import RecordMismatchError, replay_record

    with pytest.raises(RecordMismatchError, match=f"action {action} is not legal"):
        replay_record(_record(tmp_path, [HEADER_LINE, _step(action), RESULT_LINE]))


@pytest.mark.parametrize(
    ("header", "message"),
    [({"env_id": "nope/Nothing-v0"}, "env_id must name an environment of this package"),
     ({"env_id": "thermopylae/Nothing-v0"}, "unknown env_id 'thermopylae/Nothing-v0'"),
     ({"options": {"num_players": 9}}, "num_players must be 1..4, got 9"),
     ({"options": {"colour": "blue"}}, "do not fit")],
)
def test_replaying_a_record_of_an_impossible_env_is_refused(tmp_path, header, message):
    from thermopylae_env.records import replay_record

    lines = [{**HEADER_LINE, **header}, {**RESULT_LINE, "steps": 0}]
    path = _record(tmp_path, lines)
    with pytest.raises(ValueError, match=message) as caught:
        replay_record(path)
    assert str(path) in str(caught.value)
