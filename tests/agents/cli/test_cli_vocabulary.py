"""One vocabulary across the subcommands of ``thermopylae`` (docs/cli.md): every option has a help line, each
shared notion (the game, the side, the team size, the seed, the outputs, progress) has one spelling, the
old spellings are gone, and every ``--help`` works without any extra installed."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from thermopylae_agents.cli import app
from thermopylae_agents.cli.app import COMMANDS

ROOT = Path(__file__).resolve().parents[3]

# ppo-native keeps CleanRL's flag names on purpose (docs/cli.md): its parser is left out of the checks of
# spelling and metavars, not of the help lines.
CLEANRL = "thermopylae ppo-native"
# Spellings that a notion had before it got its one name (CHANGELOG.md), and the commands where the same
# spelling still means something else on purpose.
RETIRED = {
    "--env": "--game",
    "--env-id": "--game",
    "--num-players": "--players",
    "--storage-path": "--run-dir",
    "--json": "--out",
    "--hf-folder": "--out-dir",
    "--progress": "--no-progress (bars), --deal-log (bound's file)",
}
CLEANRL_KEEPS = {"--env-id"}
# Where --seed left out is not 0: play deals a fresh random game (the seed is shown on screen), train and
# distill take the config's (0 in every shipped one; a resumed run keeps its own).
SEED_NOT_ZERO = {"thermopylae play", "thermopylae train", "thermopylae distill"}


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser of the command line by its prog: ``thermopylae``, ``play``, ``replay``, each subcommand's
    own (``build_parser`` of its module) and their subcommands (``rllib train``, ``rllib sweep``)."""
    found: dict[str, argparse.ArgumentParser] = {}
    todo = [app.build_parser()]
    todo += [importlib.import_module(module).build_parser(f"thermopylae {name}")
             for name, (module, _) in COMMANDS.items()]
    while todo:
        parser = todo.pop()
        found[parser.prog] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                # the top level's entries of the other subcommands are placeholders: their modules parse
                todo += [sub for name, sub in action.choices.items()
                         if not (parser.prog == "thermopylae" and name in COMMANDS)]
    return found


PARSERS = _parsers()


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions if not isinstance(action, argparse._SubParsersAction)]


def _named(flag: str) -> list[tuple[str, argparse.Action]]:
    return [(prog, action) for prog, parser in PARSERS.items() for action in _options(parser)
            if flag in action.option_strings]


def test_the_walk_finds_every_subcommand_and_its_own_subcommands():
    expected = {"thermopylae", "thermopylae play", "thermopylae replay", "thermopylae rllib train",
                "thermopylae rllib sweep", *(f"thermopylae {name}" for name in COMMANDS)}
    assert set(PARSERS) == expected


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_every_option_and_argument_of_every_command_has_help(prog):
    parser = PARSERS[prog]
    missing = [action.option_strings or [action.dest] for action in _options(parser)
               if not (action.help and action.help.strip()) or action.help == argparse.SUPPRESS]
    assert missing == [], f"{prog}: no help for {missing}"
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            unexplained = [choice.dest for choice in action._choices_actions
                           if not (choice.help or "").strip()]
            assert unexplained == [], f"{prog}: no help for the subcommands {unexplained}"


def test_no_command_keeps_an_old_spelling():
    for flag, new in RETIRED.items():
        users = [prog for prog, _ in _named(flag) if not (prog == CLEANRL and flag in CLEANRL_KEEPS)]
        assert users == [], f"{flag} is now {new}, still in {users}"


def test_the_game_is_game_coop_or_duel_and_the_side_greek_or_persian():
    games = _named("--game")
    assert {prog for prog, _ in games} == {"thermopylae play", "thermopylae evaluate", "thermopylae export",
                                           "thermopylae render", "thermopylae rllib train"}
    for prog, action in games:
        assert tuple(action.choices) == ("coop", "duel"), prog
        assert action.default in ("coop", None), prog  # None: export needs it named with the models
    for prog, action in _named("--side"):
        assert tuple(sorted(action.choices)) == ("greek", "persian"), prog


def test_players_is_the_team_size_1_to_4_wherever_it_appears():
    users = _named("--players")
    assert len(users) >= 8
    for prog, action in users:
        assert action.nargs is None and "team size" in action.help, prog
        if prog == CLEANRL:
            continue
        assert action.metavar == "N", prog
        for bad in ("0", "5", "heuristic:greek"):
            with pytest.raises(argparse.ArgumentTypeError):
                action.type(bad)
        assert [action.type(text) for text in ("1", "4")] == [1, 4]


def test_the_seed_is_seed_and_defaults_to_0():
    users = _named("--seed")
    assert len(users) >= 9
    for prog, action in users:
        if prog in SEED_NOT_ZERO:
            assert action.default is None, prog
        else:
            assert action.default in (0, "0"), f"{prog} --seed defaults to {action.default!r}"


def test_outputs_are_run_dir_out_or_out_dir_by_what_they_are():
    for flag, metavar in (("--run-dir", "DIR"), ("--out", "FILE"), ("--out-dir", "DIR")):
        for prog, action in _named(flag):
            if prog != CLEANRL:
                assert action.metavar == metavar, f"{prog} {flag}"
    runs = {prog for prog, _ in _named("--run-dir")}
    assert runs == {"thermopylae train", "thermopylae distill", "thermopylae rllib train",
                    "thermopylae rllib sweep", CLEANRL}


def test_no_progress_is_the_only_progress_flag():
    for prog, parser in PARSERS.items():
        for action in _options(parser):
            for flag in action.option_strings:
                if "progress" in flag:
                    assert flag == "--no-progress" and action.nargs == 0, f"{prog} {flag}"


# Every module of every extra, as if none were installed: ``import NAME`` fails and
# ``importlib.util.find_spec(NAME)`` answers None, as they do for a missing package.
_EXTRAS = ["torch", "stable_baselines3", "sb3_contrib", "tensorboard", "yaml", "rich", "matplotlib", "scipy",
           "tyro", "pettingzoo", "open_spiel", "pyspiel", "PIL", "moviepy", "pygame", "rl_zoo3", "requests",
           "huggingface_hub", "ray", "tree", "lz4", "ormsgpack", "optuna", "starlette", "uvicorn", "wandb"]

_HELP_WITHOUT_EXTRAS = textwrap.dedent(
    """
    import contextlib, io, json, sys
    for name in sys.argv[1].split(","):
        sys.modules[name] = None
    from thermopylae_agents.cli.app import main
    answers = {}
    for argv in json.loads(sys.argv[2]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as stop:
                status = stop.code
        answers[" ".join(argv)] = [status, out.getvalue(), err.getvalue()]
    print(json.dumps(answers))
    """
)


def test_every_help_works_without_any_extra_installed():
    from thermopylae_agents.cli.console import EXTRA_OF_MODULE

    hidden = sorted(set(_EXTRAS) | set(EXTRA_OF_MODULE))
    commands = [prog.split()[1:] for prog in sorted(PARSERS)]
    done = subprocess.run([sys.executable, "-c", _HELP_WITHOUT_EXTRAS, ",".join(hidden),
                           json.dumps([[*command, "--help"] for command in commands])],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'agents'}"})
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    for command in commands:
        status, out, err = answers[" ".join([*command, "--help"])]
        prog = " ".join(["thermopylae", *command])
        assert status == 0 and out.startswith(f"usage: {prog}"), (prog, status, err[-1000:])
        assert "Traceback" not in err, (prog, err[-1000:])
