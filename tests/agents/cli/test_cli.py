"""The ``thermopylae`` command: whole games through piped input, input validation, quitting, replays,
hints and the dispatch of every other subcommand."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from thermopylae_agents.cli.app import COMMANDS, main
from thermopylae_env.record_format import load_record
from thermopylae_env.records import replay_record

ROOT = Path(__file__).resolve().parents[3]
USAGE = "Type a number from 1 to"


def run_cli(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "thermopylae_agents", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_a_whole_coop_game_through_piped_input():
    done = run_cli("play", "--game", "coop", "--seed", "3", stdin="1\n" * 400)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "GAME OVER" in done.stdout
    assert "Marker track" in done.stdout and "Persian line" in done.stdout and "Support left" in done.stdout
    assert "End of input" not in done.stdout  # the game ended before the input did


def test_a_whole_coop_game_with_three_players():
    # "2" is out of range when a seat with an empty hand can only retreat: then "1" follows
    done = run_cli("play", "--game", "coop", "--players", "3", "--seed", "1", stdin="2\n1\n" * 400)
    assert done.returncode == 0, done.stderr
    assert "GAME OVER" in done.stdout
    assert "seat 2" in done.stdout


@pytest.mark.parametrize(("side", "opponent"), [("greek", "heuristic"), ("persian", "random")])
def test_a_whole_duel_through_piped_input(side, opponent):
    done = run_cli("play", "--game", "duel", "--side", side, "--opponent", opponent, "--seed", "5",
                   stdin="1\n" * 3000)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "GAME OVER" in done.stdout
    assert "Greek tokens" in done.stdout and "Your hand" in done.stdout
    assert "End of input" not in done.stdout


def test_bad_entries_are_explained_and_asked_again():
    done = run_cli("play", "--game", "coop", "--seed", "3", stdin="abc\n0\n999\n\n-1\n1.5\n1\nq\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count(USAGE) == 6  # one explanation per bad entry
    assert "'abc' is not a choice" in out
    assert "0 is not a choice" in out and "999 is not a choice" in out
    assert "Nothing was entered" in out
    # six bad entries and "1" on the first screen, then "q" on the second: eight prompts
    assert out.count("Your choice (") == 8
    assert "seat 0 retreats" in out  # "1" was accepted after the bad entries
    assert "Quit." in out


def test_help_shows_the_rules_and_asks_again():
    done = run_cli("play", "--game", "duel", "--side", "persian", "--seed", "2", stdin="h\n?\nq\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("How to play (duel") == 2
    assert done.stdout.count("Your choice (") == 3


def test_q_quits_with_exit_code_0():
    done = run_cli("play", "--game", "coop", stdin="q\n")
    assert done.returncode == 0
    assert "Quit." in done.stdout
    assert "GAME OVER" not in done.stdout


def test_end_of_input_quits_cleanly():
    done = run_cli("play", "--game", "duel", "--side", "greek", stdin="")
    assert done.returncode == 0, done.stderr
    assert "End of input" in done.stdout
    assert done.stderr == ""


def test_an_action_name_is_accepted_as_well_as_its_number():
    out = io.StringIO()
    code = main(["play", "--game", "coop", "--seed", "3"], stdin=io.StringIO("retreat\nq\n"), stdout=out)
    assert code == 0
    assert "seat 0 retreats: marker to 2" in out.getvalue()


def test_a_bad_opponent_path_is_a_clear_error():
    done = run_cli("play", "--game", "duel", "--side", "greek", "--opponent", "no/such/model.zip")
    assert done.returncode == 2
    assert "not found" in done.stderr and "no/such/model.zip" in done.stderr


def test_a_bad_hints_path_is_a_clear_error():
    done = run_cli("play", "--game", "coop", "--hints", "missing.zip", stdin="q\n")
    assert done.returncode == 2
    assert "missing.zip" in done.stderr


def test_play_records_a_game_that_replays(tmp_path):
    path = tmp_path / "game.jsonl"
    done = run_cli("play", "--game", "coop", "--seed", "7", "--record", str(path), stdin="1\n" * 400)
    assert done.returncode == 0, done.stderr
    record = load_record(path)
    assert record.seed == 7 and record.header["agent"] == "human"
    assert record.result["finished"] is True
    assert replay_record(path)["steps"] == len(record.steps)

    replay = run_cli("replay", str(path), "--all")
    assert replay.returncode == 0, replay.stderr
    assert "the replay matches the record" in replay.stdout
    assert replay.stdout.count("--- step ") == len(record.steps)


def test_quitting_a_recorded_game_leaves_an_unfinished_record(tmp_path):
    path = tmp_path / "cut.jsonl"
    done = run_cli("play", "--game", "duel", "--side", "persian", "--seed", "4", "--record", str(path),
                   stdin="1\n1\nq\n")
    assert done.returncode == 0, done.stderr
    record = load_record(path)
    assert record.result["finished"] is False
    assert len(record.steps) == 2


def test_replay_steps_on_enter_and_stops_on_q(coop_game_record):
    done = run_cli("replay", str(coop_game_record), "--step", stdin="\n\nq\n")
    assert done.returncode == 0, done.stderr
    assert "--- step 2/" in done.stdout and "--- step 3/" not in done.stdout
    assert "Replay stopped." in done.stdout


def test_replay_refuses_a_malformed_record(tmp_path, coop_game_record):
    lines = coop_game_record.read_text().splitlines()
    lines[2] = lines[2][:-5]  # a truncated JSON line
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    done = run_cli("replay", str(bad), "--all")
    assert done.returncode == 2
    assert "not a valid game record" in done.stderr and "line 3: not valid JSON" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_replay_reports_a_record_that_does_not_reproduce(tmp_path, coop_game_record):
    objects = [json.loads(line) for line in coop_game_record.read_text().splitlines()]
    objects[0]["seed"] += 1  # other shuffles: the recorded events cannot match
    bad = tmp_path / "other-seed.jsonl"
    bad.write_text("".join(json.dumps(o) + "\n" for o in objects))
    done = run_cli("replay", str(bad), "--all")
    assert done.returncode == 1
    assert "does not replay to the same game" in done.stdout


def test_replay_of_a_missing_file():
    done = run_cli("replay", "no-such-record.jsonl")
    assert done.returncode == 2
    assert "no such file" in done.stderr


@pytest.fixture
def coop_game_record(tmp_path) -> Path:
    from thermopylae_agents.evaluation.replay import record_agent_game as record_game

    path = tmp_path / "coop.jsonl"
    record_game("thermopylae/Coop-v0", "heuristic", path, seed=12)
    return path


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_runs_its_module_with_the_arguments_and_its_name(monkeypatch, command):
    seen = []
    module = COMMANDS[command][0]
    fake = types.ModuleType(module)
    fake.main = lambda argv, prog: seen.append((argv, prog)) or 0
    monkeypatch.setitem(sys.modules, module, fake)
    assert main([command, "coop", "--timesteps", "10", "--seed", "3"]) == 0
    assert seen == [(["coop", "--timesteps", "10", "--seed", "3"], f"thermopylae {command}")]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_has_its_own_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    assert f"usage: thermopylae {command}" in capsys.readouterr().out


def test_the_top_level_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("play", "replay", *COMMANDS):
        assert command in out, command


def test_a_missing_optional_dependency_of_a_subcommand_is_one_line(monkeypatch, capsys):
    module = COMMANDS["rllib"][0]
    fake = types.ModuleType(module)

    def main_without_ray(argv, prog):
        raise ModuleNotFoundError("No module named 'ray'", name="ray")

    fake.main = main_without_ray
    monkeypatch.setitem(sys.modules, module, fake)
    assert main(["rllib", "train"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "thermopylae rllib" in err and "rllib" in err


def test_usage_errors_exit_with_code_2():
    bad = (["play", "--game", "chess"], ["play", "--game", "duel", "--side", "spartan"],
           ["play", "--game", "coop", "--players", "5"])
    for args in bad:
        done = run_cli(*args)
        assert done.returncode == 2, args
        assert "usage:" in done.stderr


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """Untrained MaskablePPO policies saved for the co-op game and the Greek side of the duel."""
    pytest.importorskip("sb3_contrib")
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import thermopylae_env  # noqa: F401

    folder = tmp_path_factory.mktemp("models")
    paths = {}
    for name, env_id in (("coop", "thermopylae/Coop-v0"), ("greek", "thermopylae/DuelGreek-v0")):
        paths[name] = folder / f"{name}.zip"
        MaskablePPO("MlpPolicy", gym.make(env_id), n_steps=32, batch_size=32, policy_kwargs={"net_arch": [8]},
                    seed=0, device="cpu").save(paths[name])
    return paths


@pytest.mark.parametrize(("game", "model"), [(["--game", "coop"], "coop"),
                                             (["--game", "duel", "--side", "greek"], "greek")])
def test_hints_show_the_agents_most_probable_legal_actions(tiny_models, game, model):
    out = io.StringIO()
    code = main(["play", *game, "--seed", "3", "--hints", str(tiny_models[model])],
                stdin=io.StringIO("1\nq\n"), stdout=out)
    assert code == 0
    text = out.getvalue()
    assert text.count("Agent hints, most probable first:") == 2
    assert text.count("<- agent ") >= 2 * 2  # at least two marked actions on each screen


def test_hints_from_a_model_of_the_wrong_game_are_refused(tiny_models, capsys):
    code = main(["play", "--game", "coop", "--hints", str(tiny_models["greek"])], stdin=io.StringIO("q\n"),
                stdout=io.StringIO())
    assert code == 2
    assert "does not fit" in capsys.readouterr().err


# ------------------------------------------------------------------------- no traceback, ever (#11)


def _one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout[-500:], done.stderr)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("usage:")
             and not line.startswith("  ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("entry", ["\u0661", "\u00b2", "\uff11", "9" * 10_000, "1" + "0" * 5000])
def test_non_ascii_digits_and_huge_numbers_at_a_prompt_are_explained_and_asked_again(entry):
    out = io.StringIO()
    code = main(["play", "--game", "coop", "--seed", "3"], stdin=io.StringIO(f"{entry}\n1\nq\n"), stdout=out)
    assert code == 0
    text = out.getvalue()
    assert text.count(USAGE) == 1
    assert "seat 0 retreats" in text  # "1" was accepted after the refused entry
    assert len(max(text.splitlines(), key=len)) < 200  # a 10,000-digit entry is not echoed whole


@pytest.mark.parametrize("seed", ["-1", "1.5", "abc", "\u0663", str(2**64), "9" * 10_000])
@pytest.mark.parametrize("game", [["--game", "coop"], ["--game", "duel"]])
def test_a_bad_seed_is_a_one_line_error(game, seed):
    line = _one_line_error(run_cli("play", *game, "--seed", seed))
    assert "--seed" in line and len(line) < 300


def test_a_record_path_that_is_a_folder_is_a_one_line_error_and_plays_nothing(tmp_path):
    done = run_cli("play", "--game", "coop", "--seed", "1", "--record", str(tmp_path), stdin="1\n" * 50)
    assert "cannot write the record" in _one_line_error(done)
    assert "Marker track" not in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_record_path_under_a_file_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = run_cli("play", "--game", "duel", "--record", str(blocker / "game.jsonl"), stdin="1\n")
    assert "cannot write the record" in _one_line_error(done)


@pytest.mark.parametrize("spec", ["search:abc", "fast:", "heuristic:3", "nonsense", "=heuristic"])
def test_a_malformed_opponent_spec_is_a_one_line_error(spec):
    line = _one_line_error(run_cli("play", "--game", "duel", "--opponent", spec, stdin="q\n"))
    assert "thermopylae play: error:" in line


def _write_lines(path: Path, objects: list) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


@pytest.mark.parametrize("case", ["folder", "foreign env id", "deep JSON", "model opponent"])
def test_replay_of_a_bad_record_is_a_one_line_error(tmp_path, case):
    header = {"type": "header", "format": "thermopylae-record", "version": 1, "env_id": "thermopylae/Coop-v0",
              "options": {}, "seed": 1}
    result = {"type": "result", "steps": 0, "finished": False, "return": 0.0, "won": None}
    path = tmp_path / "bad.jsonl"
    if case == "folder":
        path = tmp_path
    elif case == "foreign env id":
        _write_lines(path, [{**header, "env_id": "CartPole-v1"}, result])
    elif case == "deep JSON":
        path.write_text("{\"a\":" * 50_000 + "1" + "}" * 50_000 + "\n")
    else:
        duel = {**header, "env_id": "thermopylae/DuelGreek-v0", "options": {"opponent": "x.zip"}}
        _write_lines(path, [duel, result])
    line = _one_line_error(run_cli("replay", str(path), "--all"))
    assert line.startswith("thermopylae replay: error:")
    if case == "model opponent":
        assert "--opponent" in line


class _InterruptAfter(io.StringIO):
    """Standard input that answers ``lines`` and then behaves as if Ctrl-C were pressed."""

    def __init__(self, lines: int) -> None:
        super().__init__("1\n" * lines)
        self.left = lines

    def readline(self, *args) -> str:
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return super().readline(*args)


def test_ctrl_c_during_a_recorded_game_closes_the_record_as_unfinished(tmp_path):
    path = tmp_path / "cut.jsonl"
    out = io.StringIO()
    code = main(["play", "--game", "duel", "--seed", "4", "--record", str(path)], stdin=_InterruptAfter(3),
                stdout=out)
    assert code == 130
    assert "Interrupted." in out.getvalue()
    record = load_record(path)
    assert record.result["finished"] is False and len(record.steps) == 3
    assert replay_record(path)["steps"] == 3


@pytest.mark.parametrize(("argv", "problem"), [
    (["--side", "persian"], "--side: for --game duel only"),
    (["--side", "persian", "--opponent", "random"], "--side, --opponent: for --game duel only"),
    (["--game", "duel", "--players", "2"], "--players: for --game coop only"),
])
def test_play_refuses_the_options_of_the_other_game_in_one_line(argv, problem):
    done = run_cli("play", *argv, stdin="1\n" * 50)
    assert done.returncode == 2
    assert done.stderr == f"thermopylae play: error: {problem}\n" and done.stdout == ""


def test_play_without_a_game_plays_the_coop_game():
    done = run_cli("play", "--seed", "3", stdin="q\n")
    assert done.returncode == 0, done.stderr
    assert "Marker track" in done.stdout and "Persian line" in done.stdout


def test_play_duel_has_a_default_side():
    done = run_cli("play", "--game", "duel", "--seed", "2", stdin="q\n")
    assert done.returncode == 0, done.stderr
    assert "you: Greek" in done.stdout


def test_the_command_runs_as_python_m_thermopylae_agents():
    done = subprocess.run([sys.executable, "-m", "thermopylae_agents", "play", "--seed", "1"],
                          input="q\n", capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "Marker track" in done.stdout
    assert "usage: thermopylae " in run_cli("play", "--help").stdout


# ----------------------------------------------------------- nothing from a file reaches the terminal raw


def test_escape_sequences_in_a_record_never_reach_the_terminal(tmp_path, coop_game_record):
    objects = [json.loads(line) for line in coop_game_record.read_text().splitlines()]
    objects[0]["agent"] = "\x1b[2J\x1b]0;pwned\x07evil"
    objects[0]["note"] = "\x1b[31mred"
    sneaky = tmp_path / "sneaky\x1b[2J.jsonl"
    sneaky.write_text("".join(json.dumps(o) + "\n" for o in objects))
    done = run_cli("replay", str(sneaky), "--all")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "pwned" not in done.stdout  # the unverifiable agent claim is not shown at all
    objects[1]["action_name"] = "\x1b]0;title\x07retreat"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(o) + "\n" for o in objects))
    done = run_cli("replay", str(bad), "--all")
    assert done.returncode == 1
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr


def test_python_m_thermopylae_env_points_to_the_command():
    done = subprocess.run([sys.executable, "-m", "thermopylae_env"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "python -m thermopylae_agents" in done.stderr and "Traceback" not in done.stderr


def test_the_record_and_text_modules_of_the_env_package_import_no_agents():
    import ast

    for name in ("records.py", "render.py", "cards.py", "__main__.py"):
        tree = ast.parse((ROOT / "thermopylae_env" / name).read_text())
        imported = [node.module if isinstance(node, ast.ImportFrom) else alias.name
                    for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in (node.names if isinstance(node, ast.Import) else [None])]
        assert not [m for m in imported if m and m.startswith("thermopylae_agents")], name


@pytest.mark.parametrize("players", ["\u0663", "3.0", "0", "5", "9" * 100])
def test_the_player_count_takes_ascii_digits_in_1_to_4(players):
    line = _one_line_error(run_cli("play", "--game", "coop", "--players", players))
    assert "--players" in line


def test_hints_accept_a_shipped_policy_by_name():
    pytest.importorskip("sb3_contrib")
    out = io.StringIO()
    code = main(["play", "--game", "coop", "--seed", "3", "--hints", "coop_maskable_ppo"],
                stdin=io.StringIO("q\n"), stdout=out)
    assert code == 0
    assert "Agent hints, most probable first:" in out.getvalue()


def test_the_command_answers_its_version(capsys):
    from thermopylae_env import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"thermopylae {__version__}"


# ------------------------------------------------------------------ replays without a terminal (issue 28)


def test_replay_without_a_terminal_replays_the_whole_record(coop_game_record):
    done = run_cli("replay", str(coop_game_record))
    assert done.returncode == 0, done.stderr
    total = len(load_record(coop_game_record).steps)
    assert done.stdout.count("--- step ") == total
    assert "the replay matches the record" in done.stdout


def test_replay_without_a_terminal_fails_on_a_tampered_record(tmp_path, coop_game_record):
    objects = [json.loads(line) for line in coop_game_record.read_text().splitlines()]
    objects[-2]["reward"] = 99.0  # the last step's reward: only a replay to the end sees it
    bad = tmp_path / "tampered.jsonl"
    bad.write_text("".join(json.dumps(o) + "\n" for o in objects))
    done = run_cli("replay", str(bad))
    assert done.returncode == 1, done.stdout
    assert "does not replay to the same game" in done.stdout


def test_replay_stepping_through_a_pipe_checks_the_rest_at_the_end_of_the_input(tmp_path, coop_game_record):
    objects = [json.loads(line) for line in coop_game_record.read_text().splitlines()]
    objects[-2]["reward"] = 99.0
    bad = tmp_path / "tampered.jsonl"
    bad.write_text("".join(json.dumps(o) + "\n" for o in objects))
    done = run_cli("replay", str(bad), "--step", stdin="\n")
    assert done.returncode == 1, done.stdout


# ---------------------------------------------------------------------- --record targets (issue 28 D10)


@pytest.mark.parametrize("target", ["", "/dev/full", "fifo", "folder"])
def test_play_refuses_a_record_target_that_is_not_a_regular_file_before_playing(tmp_path, target):
    import os

    if target == "fifo":
        target = str(tmp_path / "pipe.jsonl")
        os.mkfifo(target)
    elif target == "folder":
        target = str(tmp_path)
    elif target == "/dev/full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    done = run_cli("play", "--game", "coop", "--seed", "3", "--record", target, stdin="1\n" * 400, timeout=30)
    assert done.returncode == 2, done.stdout[-500:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "--record" in done.stderr
    assert "Marker track" not in done.stdout  # nothing was played


# ----------------------------------------------------------------------- policies and their games (D9)


def test_evaluate_refuses_a_two_player_policy_in_a_solo_game():
    done = run_cli("evaluate", "--game", "coop", "heuristic", "coop_2p_maskable_ppo", "--games", "3",
                   "--no-progress")
    assert done.returncode == 2, done.stdout
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert "num_players=2" in line and "num_players=1" in line


def test_play_refuses_hints_from_a_policy_of_another_team_size():
    done = run_cli("play", "--game", "coop", "--players", "3", "--hints", "coop_2p_maskable_ppo", stdin="q\n")
    assert done.returncode == 2
    assert "num_players=2" in done.stderr and "num_players=3" in done.stderr


# ---------------------------------------------------------------------------- export arguments (D13)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["model.zip", "--game", "chess"], "invalid choice: 'chess'"),
        (["model.zip"], "--game"),
        (["no-such-model.zip", "--game", "duel", "--side", "greek"], "no-such-model.zip"),
        (["model.zip", "--game", "coop"], "--players"),
        (["model.zip", "--game", "duel"], "give --side greek or --side persian"),
        (["model.zip", "--game", "coop", "--players", "2", "--side", "greek"], "--side is for duel models"),
        (["--shipped", "--out-dir", "/dev/null"], "--out-dir"),
        (["--shipped", "--game", "coop"], "--game"),
        (["--game", "coop", "--players", "2"], "are for the models named"),
        (["model.zip", "--game", "duel", "--side", "greek", "--players", "2"], "--players"),
        (["model.zip", "--game", "coop", "--players", "9"], "--players"),
    ],
)
def test_export_refuses_bad_arguments_with_one_line_before_writing(tmp_path, args, problem):
    (tmp_path / "model.zip").write_bytes(b"not read before the arguments are checked")
    done = subprocess.run([sys.executable, "-m", "thermopylae_agents", "export", *args], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'agents'}"})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert problem in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.zip"]


def test_export_records_the_game_the_model_was_trained_on(tmp_path):
    pytest.importorskip("sb3_contrib")
    zip_path = ROOT / "agents" / "thermopylae_agents" / "policies" / "coop_2p_maskable_ppo.zip"
    done = run_cli("export", str(zip_path), "--game", "coop", "--players", "2", "--out-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    description = json.loads((tmp_path / "coop_2p_maskable_ppo.json").read_text())
    assert description["env_id"] == "thermopylae/Coop-v0"
    assert description["env_options"] == {"num_players": 2}


def test_a_record_that_cannot_be_written_during_the_game_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    import errno

    from thermopylae_env.records import RecordEpisode

    written = []

    def full_disk(self, obj):
        written.append(obj)
        if len(written) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(RecordEpisode, "_write", full_disk)
    out = io.StringIO()
    code = main(["play", "--game", "coop", "--seed", "3", "--record", str(tmp_path / "game.jsonl")],
                stdin=io.StringIO("1\n" * 400), stdout=out)
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "No space left on device" in error and "--record" in error


@pytest.mark.parametrize("command", ["exploitability", "render", "bound", "rllib", "duel-table"])
def test_help_shows_plain_names_not_the_documentation_links(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "][" not in text and "``" not in text
    assert f"thermopylae {command}" in text
