"""Hostile arguments of ``ppo-native``, ``exploitability`` and ``duel-table``, output paths checked before
any work (``exploitability``, ``bound``, ``duel-table``, ``render``) and Ctrl-C as one line with exit
status 130 in every command (issue 28)."""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

from thermopylae_agents.cli.app import main


def _run(args: list[str], capsys) -> tuple[int, list[str]]:
    try:
        status = main(args)
    except SystemExit as stop:  # argparse's own refusals
        status = stop.code
    return status, capsys.readouterr().err.strip().splitlines()


def _no_work(*args, **kwargs):
    raise AssertionError("the work started before the arguments were checked")


@pytest.fixture
def unwritable(tmp_path) -> Path:
    """A path whose folder is a file: no file can be written there (even by root)."""
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder\n")
    return blocker / "out.json"


# ------------------------------------------------------------------------------------ hostile values

PPO_NATIVE_BAD = [
    ("--total-timesteps", "-1"), ("--total-timesteps", "0"), ("--total-timesteps", "1e99"),
    ("--gamma", "inf"), ("--gamma", "nan"), ("--gamma", "-0.1"), ("--gamma", "1.5"),
    ("--gae-lambda", "nan"), ("--learning-rate", "0"), ("--learning-rate", "-inf"),
    ("--learning-rate", "abc"), ("--time-budget", "-5"), ("--time-budget", "inf"),
    ("--num-envs", "0"), ("--num-envs", "99999999999"), ("--num-steps", "-3"),
    ("--num-minibatches", "0"), ("--update-epochs", "0"), ("--clip-coef", "0"), ("--ent-coef", "nan"),
    ("--vf-coef", "-1"), ("--max-grad-norm", "0"), ("--target-kl", "inf"), ("--players", "5"),
    ("--reward-shaping", "-1"), ("--torch-threads", "0"), ("--eval-games", "-1"), ("--seed", "-1"),
    ("--seed", "x"), ("--exp-name", "a/b"), ("--exp-name", ""), ("--backend", "numpy"), ("--run-dir", " "),
]


@pytest.mark.parametrize(("flag", "value"), PPO_NATIVE_BAD)
def test_ppo_native_refuses_each_bad_value_in_one_line(flag, value, monkeypatch, capsys):
    monkeypatch.setattr("thermopylae_agents.cli.ppo_native.train", _no_work)
    status, err = _run(["ppo-native", f"{flag}={value}"], capsys)
    assert status == 2 and err[-1].startswith("thermopylae ppo-native: error:") and flag in err[-1]


def test_ppo_native_refuses_a_rollout_too_big_and_a_run_dir_that_is_a_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("thermopylae_agents.cli.ppo_native.train", _no_work)
    status, err = _run(["ppo-native", "--num-envs", "65536", "--num-steps", "65536"], capsys)
    assert status == 2 and "num_envs * num_steps" in err[-1]
    file = tmp_path / "file"
    file.write_text("x")
    status, err = _run(["ppo-native", "--run-dir", str(file)], capsys)
    assert status == 2 and "--run-dir" in err[-1]


EXPLOITABILITY_BAD = [
    ("--budget", "-1"), ("--budget", "0"), ("--budget", "nan"), ("--seeds", "-1"), ("--seeds", "1.5"),
    ("--num-envs", "0"), ("--num-envs", "1e9"), ("--curve-points", "0"), ("--eval-games", "0"),
    ("--eval-games", "100000000000"), ("--bc-games", "-5"), ("--bc-epochs", "inf"), ("--out", ""),
    ("--markdown", ""),
]


@pytest.mark.parametrize(("flag", "value"), EXPLOITABILITY_BAD)
def test_exploitability_refuses_each_bad_value_in_one_line(flag, value, monkeypatch, capsys):
    monkeypatch.setattr("thermopylae_agents.cli.exploitability.run", _no_work)
    status, err = _run(["exploitability", "heuristic", "--side", "greek", f"{flag}={value}"], capsys)
    assert status == 2 and err[-1].startswith("thermopylae exploitability: error:") and flag in err[-1]


@pytest.mark.parametrize("args", [["no_such_policy", "--side", "greek"], ["missing.zip", "--side", "persian"],
                                  ["--table", "--policies", "no_such_policy:greek"], ["", "--side", "greek"]])
def test_exploitability_refuses_a_policy_that_does_not_load_in_one_line(args, monkeypatch, capsys):
    monkeypatch.setattr("thermopylae_agents.cli.exploitability.best_response", _no_work, raising=False)
    monkeypatch.setattr("thermopylae_agents.training.best_response.best_response", _no_work)
    status, err = _run(["exploitability", *args], capsys)
    assert status == 2 and err[-1].startswith("thermopylae exploitability: error:")
    assert "Traceback" not in "\n".join(err)


@pytest.mark.parametrize(("flag", "value"), [("--games", "0"), ("--games", "-1"), ("--games", "1e3"),
                                              ("--games", "10000000000000"), ("--seed", "-1"),
                                              ("--seed", "nan"), ("--out", "")])
def test_duel_table_refuses_each_bad_value_in_one_line(flag, value, monkeypatch, capsys):
    monkeypatch.setattr("thermopylae_agents.cli.duel_table.play_pairing", _no_work)
    status, err = _run(["duel-table", f"{flag}={value}"], capsys)
    assert status == 2 and err[-1].startswith("thermopylae duel-table: error:") and flag in err[-1]


# ------------------------------------------------------------------------- exploitability --config


def _fake_exact(config, players, tolerance):
    return {"tree": {"nodes": 3}, "game_value_bounds": [0.0, 0.0], "solver_iterations": 1,
            "players": [{"player": p, "side": "greek" if s == 0 else "persian",
                         "return_against_best_response": 0.0, "exploitability_bounds": [0.0, 0.0]}
                        for p, s in players]}


def test_exploitability_shows_a_config_name_escaped_and_cut(tmp_path, monkeypatch, capsys):
    from thermopylae_env.duel.config import SMALL_DUELS

    monkeypatch.setattr("thermopylae_agents.gametheory.exact_exploitability.exact_exploitability",
                        _fake_exact)
    path = tmp_path / "hostile.json"
    name = "\x1b]0;owned\x07\x1b[2J" + "A" * 50_000 + "\u202e"
    path.write_text(json.dumps(SMALL_DUELS["tiny"].to_dict() | {"name": name}))
    assert main(["exploitability", "--config", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "\x1b" not in first and "\x07" not in first and "\u202e" not in first
    assert "\\x1b]0;owned" in first and len(first) < 300 and "50015 characters" in first


def _full_duel_file(path: Path) -> Path:
    from thermopylae_env.duel.config import FULL_DUEL

    path.write_text(json.dumps(FULL_DUEL.to_dict()))
    return path


BAD_CONFIGS = {
    "missing": (lambda tmp: tmp / "absent.json", "cannot read"),
    "folder": (lambda tmp: tmp, "is a folder"),
    "device": (lambda tmp: Path("/dev/zero"), "not a regular file"),
    "pipe": (lambda tmp: (os.mkfifo(tmp / "pipe"), tmp / "pipe")[1], "not a regular file"),
    "nested": (lambda tmp: (tmp / "n.json").write_text("[" * 100_000 + "]" * 100_000) and tmp / "n.json",
               "more than a duel config may"),
    "latin-1": (lambda tmp: (tmp / "l.json").write_bytes(b'{"name": "caf\xe9"}') and tmp / "l.json",
                "not UTF-8"),
    "the full duel": (lambda tmp: _full_duel_file(tmp / "full.json"), "more than 5000000 tree nodes"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_exploitability_refuses_each_bad_config_at_once_in_one_line(case, tmp_path, monkeypatch, capsys):
    make, message = BAD_CONFIGS[case]
    if case == "pipe" and not hasattr(os, "mkfifo"):
        pytest.skip("named pipes are POSIX")
    status, err = _run(["exploitability", "--config", str(make(tmp_path))], capsys)
    assert status == 2 and len(err) == 1 and err[0].startswith("thermopylae exploitability: error:")
    assert message in err[0]


# ----------------------------------------------------------------------- integers: one rule everywhere


def test_bound_takes_the_largest_start_and_says_the_truth_about_one_more(tmp_path, monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr("thermopylae_agents.cli.bound._solve_deals", _interrupt_with_args(seen))
    out = tmp_path / "bound.json"
    assert main(["bound", "--deals", "1", "--start", "9223372036854775807", "--out", str(out)]) == 130
    assert seen["args"][0].start == 9223372036854775807
    status, err = _run(["bound", "--start", "9223372036854775808"], capsys)
    assert status == 2 and err[-1].endswith(
        "--start: '9223372036854775808' is not a whole number in 0..9223372036854775807")
    status, err = _run(["bound", "--start", "1" * 5000], capsys)
    assert status == 2 and "is not a whole number in 0..9223372036854775807" in err[-1] and len(err[-1]) < 300


def _interrupt_with_args(seen: dict):
    def work(*args, **kwargs):
        seen["args"] = [*args, *kwargs.values()]
        raise KeyboardInterrupt

    return work


@pytest.mark.parametrize("value", ["\u0663", "1_0", " 5", "5 ", "3.0", "1e3", "0x10", ""])
@pytest.mark.parametrize("argv", [["train", "coop", "--seed"], ["bound", "--deals"], ["evaluate", "--games"],
                                  ["rllib", "train", "--run-dir", "/tmp/x", "--seed"],
                                  ["play", "--game", "coop", "--players"],
                                  ["play", "--game", "duel", "--seed"],
                                  ["ppo-native", "--seed"], ["ppo-native", "--num-envs"]])
def test_every_command_refuses_an_integer_that_is_not_ascii_digits_in_one_line(argv, value, monkeypatch,
                                                                                capsys):
    for work in ("training.ppo.train", "training.selfplay.train_selfplay", "cli.evaluate.evaluate",
                 "cli.bound._solve_deals", "cli.app.play_coop", "cli.app.play_duel", "cli.ppo_native.train"):
        monkeypatch.setattr(f"thermopylae_agents.{work}", _no_work)  # a value taken would start no work
    status, err = _run([*argv, value], capsys)
    assert status == 2 and argv[-1] in err[-1] and "is not an integer" in err[-1]
    assert "Traceback" not in "\n".join(err)


def _parsers(module: str) -> list:
    """Every argparse parser the command of ``module`` builds (its subcommands' too), caught as it parses."""
    import argparse
    import importlib

    caught = []

    class Caught(Exception):
        pass

    def parse(self, *args, **kwargs):
        caught.append(self)
        raise Caught

    main = importlib.import_module(module).main  # before the patch: a failed import must not leave it behind
    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = parse
    try:
        main([]) if module.endswith(".app") else main([], prog="x")
    except Caught:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    found, todo = [], list(caught)
    while todo:
        parser = todo.pop()
        found.append(parser)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    return found


CLI_MODULES = ["app", "train", "evaluate", "export", "exploitability", "bound", "render", "rllib",
               "duel-table", "web", "distill"]


@pytest.mark.parametrize("name", CLI_MODULES)
def test_every_integer_option_of_every_command_is_parsed_by_the_one_rule(name):
    from thermopylae_agents.cli import args as rule

    module = f"thermopylae_agents.cli.{name.replace('-', '_')}"
    options = [(parser.prog, action.dest, action.type) for parser in _parsers(module)
               for action in parser._actions if action.type is not None]
    assert options or name in ("export", "web")
    for prog, dest, kind in options:
        assert kind is not int, f"{prog} --{dest}: Python's int() (takes '\u0663', '1_0', ' 5')"
        if getattr(kind, "__name__", "") == "integer" or kind is rule.seed_argument:
            assert getattr(kind, "integer_rule", None) is rule.parse_int, f"{prog} --{dest}"


def test_the_one_integer_rule_parses_first_then_checks_the_range():
    from thermopylae_agents.cli.args import parse_int, seed_argument

    assert parse_int("9223372036854775807", 0, 2**63 - 1) == 2**63 - 1
    assert parse_int("-5", -10, 10) == -5 and parse_int("+5", 0, 10) == 5 and parse_int("0007", 0, 10) == 7
    with pytest.raises(ValueError, match=r"^'11' is not a whole number in 0\.\.10$"):
        parse_int("11", 0, 10)
    with pytest.raises(ValueError, match=r"^'-1' is not a whole number in 0\.\.10$"):
        parse_int("-1", 0, 10)
    with pytest.raises(ValueError, match=r"'1\.5' is not an integer"):
        parse_int("1.5", 0, 10)
    assert seed_argument(str(2**64 - 1)) == 2**64 - 1
    with pytest.raises(Exception, match=r"'18446744073709551616' is not an integer in 0\.\.2\*\*64-1"):
        seed_argument(str(2**64))


# ------------------------------------------------------- files that do not load, before any work starts


@pytest.mark.parametrize("case", ["missing model", "folder", "not a zip", "non-UTF-8 deck", "folder deck"])
def test_evaluate_refuses_what_does_not_load_before_its_first_progress_line(case, tmp_path, monkeypatch,
                                                                           capsys):
    monkeypatch.setattr("thermopylae_agents.evaluation.games.play_games", _no_work)
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"\xff\xfe not a zip")
    deck = tmp_path / "deck.csv"
    deck.write_bytes(b"\xff\xfe\x00")
    argv = {"missing model": [str(tmp_path / "missing.zip")], "folder": [str(tmp_path) + "/"],
            "not a zip": [str(bad)], "non-UTF-8 deck": ["random", "--persian-deck", str(deck)],
            "folder deck": ["random", "--persian-deck", str(tmp_path)]}[case]
    status, err = _run(["evaluate", *argv, "--games", "2"], capsys)
    assert status == 2 and len(err) == 1 and err[0].startswith("thermopylae evaluate: error:"), err


@pytest.mark.parametrize("argv", [["--out", "x.txt"], ["--out", "{tmp}/x.gif", "--agent", "\udcff"],
                                  ["--out", "{tmp}/x.gif", "--agent", "{tmp}/missing.zip"],
                                  ["--out", "{tmp}/x.gif", "--side", "persian"],
                                  ["--out", "{tmp}/x.gif", "--game", "duel", "--players", "2"]])
def test_render_refuses_bad_input_with_the_error_line_of_every_command(argv, tmp_path, capsys):
    pytest.importorskip("PIL")
    status, err = _run(["render", *(a.replace("{tmp}", str(tmp_path)) for a in argv)], capsys)
    assert status == 2 and len(err) == 1 and err[0].startswith("thermopylae render: error: "), err
    assert "\udcff" not in err[0]


@pytest.mark.parametrize(("argv", "problem"), [
    (["--game", "duel", "--players", "2"], "--players: for --game coop only"),
    (["--game", "duel", "--vector", "sync", "--backend", "numba"],
     "--vector, --backend: for --game coop only"),
    (["--mode", "greek"], "--mode: for --game duel only"),
])
def test_rllib_refuses_the_options_of_the_other_game_before_ray_starts(argv, problem, tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # reaching Ray would end with the missing-extra line
    status, err = _run(["rllib", "train", "--run-dir", str(tmp_path), *argv], capsys)
    assert status == 2 and err == [f"thermopylae rllib train: error: {problem}"]


@pytest.mark.parametrize(("game", "defaults"), [
    ("coop", {"players": 1, "vector": "native", "backend": "auto", "envs_per_runner": 64, "mode": None}),
    ("duel", {"players": None, "vector": None, "backend": None, "envs_per_runner": 16, "mode": "self-play"}),
])
def test_rllib_train_takes_the_defaults_of_its_game(game, defaults, tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))  # Ray is never started here
    monkeypatch.setattr("thermopylae_agents.cli.rllib.start_ray", lambda address, num_cpus: False)
    monkeypatch.setattr("thermopylae_agents.cli.rllib._run_training",
                        lambda args: seen.update(vars(args)) or {})
    assert main(["rllib", "train", "--game", game, "--run-dir", str(tmp_path)]) == 0
    assert {name: seen[name] for name in defaults} == defaults
    assert json.loads((tmp_path / "summary.json").read_text()) == {}


# ------------------------------------------------------------------- output paths before the work


@pytest.mark.parametrize("case", ["parent is a file", "a folder"])
@pytest.mark.parametrize(
    ("command", "work"),
    [
        (["exploitability", "heuristic", "--side", "greek", "--out"], "cli.exploitability.run"),
        (["exploitability", "--table", "--markdown"], "cli.exploitability.run_table"),
        (["duel-table", "--games", "1", "--out"], "cli.duel_table.play_pairing"),
        (["bound", "--deals", "1", "--out"], "cli.bound._solve_deals"),
    ],
)
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(command, work, case, unwritable,
                                                                          tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(f"thermopylae_agents.{work}", _no_work)
    path = unwritable if case == "parent is a file" else tmp_path
    status, err = _run([*command, str(path)], capsys)
    assert status == 2 and "error:" in err[-1] and str(path) in err[-1]
    assert "Traceback" not in "\n".join(err)


def test_bound_checks_its_deal_log_before_solving(unwritable, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("thermopylae_agents.cli.bound._solve_deals", _no_work)
    status, err = _run(["bound", "--deals", "1", "--out", str(tmp_path / "b.json"), "--deal-log",
                        str(unwritable)], capsys)
    assert status == 2 and "--deal-log" in err[-1]


def test_render_checks_its_output_before_playing(unwritable, monkeypatch, capsys):
    pytest.importorskip("PIL")
    monkeypatch.setattr("thermopylae_agents.cli.render.play", _no_work)
    gif = unwritable.with_name("game.gif")
    status, err = _run(["render", "--out", str(gif)], capsys)
    assert status == 2 and str(gif) in err[-1]


# ---------------------------------------------------------------------------------------------- Ctrl-C


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


CTRL_C = [
    ("evaluate", "cli.evaluate.evaluate", ["random", "--games", "2", "--no-progress"]),
    ("duel-table", "cli.duel_table.play_pairing", ["--games", "1"]),
    ("bound", "cli.bound._solve_deals", ["--deals", "1", "--out", "{tmp}/b.json"]),
    ("exploitability", "cli.exploitability.run", ["heuristic", "--side", "greek"]),
]


@pytest.mark.parametrize(("command", "work", "args"), CTRL_C, ids=[c[0] for c in CTRL_C])
def test_ctrl_c_is_one_line_and_exit_130_in_each_command(command, work, args, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(f"thermopylae_agents.{work}", _interrupt)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main([command, *args]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"thermopylae {command}: interrupted"]


@pytest.mark.parametrize(("command", "work", "flag", "value"), [
    ("bound", "cli.bound._solve_deals", "--deals", "0"),
    ("bound", "cli.bound._solve_deals", "--start", "-1"),
    ("bound", "cli.bound._solve_deals", "--players", "9"),
    ("bound", "cli.bound._solve_deals", "--max-states", "-5"),
    ("render", "cli.render.play", "--players", "0"),
    ("render", "cli.render.play", "--seed", "-1"),
    ("render", "cli.render.play", "--every", "0"),
    ("render", "cli.render.play", "--max-frames", "-1"),
    ("render", "cli.render.play", "--fps", "nan"),
    ("render", "cli.render.play", "--fps", "0"),
    ("render", "cli.render.play", "--columns", "0"),
    ("render", "cli.render.play", "--scale", "inf"),
])
def test_bound_and_render_refuse_each_bad_number_in_one_line(command, work, flag, value, tmp_path,
                                                             monkeypatch, capsys):
    monkeypatch.setattr(f"thermopylae_agents.{work}", _no_work)
    out = ["--out", str(tmp_path / ("b.json" if command == "bound" else "g.gif"))]
    status, err = _run([command, *out, f"{flag}={value}"], capsys)
    assert status == 2 and err[-1].startswith(f"thermopylae {command}: error:") and flag in err[-1]
