"""The ``thermopylae`` command: every command a user runs, as one subcommand each (``--help`` on each).

Usage:

    thermopylae play [--game coop] [--players N] [--seed S] [--hints MODEL.zip] [--record FILE]
    thermopylae play --game duel [--side greek|persian] [--opponent SPEC] [--seed S] [--hints MODEL.zip]
                     [--record FILE]
    thermopylae replay FILE [--step | --all] [--opponent SPEC]
    thermopylae train TARGET ...            train PPO agents (thermopylae_agents.cli.train)
    thermopylae evaluate ...                evaluate agents on paired deals (.cli.evaluate)
    thermopylae export ...                  export SB3 zips to pickle-free policies (.cli.export)
    thermopylae exploitability ...          the exploitability table of duel policies (.cli.exploitability)
    thermopylae bound ...                   the co-op upper bound (.cli.bound)
    thermopylae render ...                  one game as a GIF or a PNG strip (.cli.render)
    thermopylae rllib {train,sweep} ...     Ray RLlib training and sweeps (.cli.rllib)
    thermopylae ppo-native ...              PPO in one file, co-op or duel (.cli.ppo_native)
    thermopylae duel-table ...              the duel strength table of the built-in players (.cli.duel_table)
    thermopylae web [--host H] [--port P]   watch and play in the browser (.cli.web)
    thermopylae distill ...                 the co-op search distilled into a policy (.cli.distill)

Also ``python -m thermopylae_agents ...``. ``play`` and ``replay`` are parsed here; every other subcommand
is its module's ``main(argv, prog)``, imported only when it runs (so that ``thermopylae play`` needs no
optional dependency). A missing optional dependency ends with one line naming the extra to install.

Every bad argument (a seed that is not an integer in 0..2**64-1, a ``--record`` path that cannot be
written, a record that is not a record, a malformed agent spec) ends with a one-line message and exit
code 2. Ctrl-C in a subcommand ends with the line ``thermopylae COMMAND: interrupted`` and exit code 130
(here, for every subcommand at once), not a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from thermopylae_agents.cli.args import (
    GAMES,
    SEED_HELP,
    SIDES,
    error,
    game_options,
    int_argument,
    seed_argument,
)
from thermopylae_agents.cli.console import EXIT_MISSING_EXTRA, missing_extra_message
from thermopylae_agents.cli.play import Terminal, UsageError, play_coop, play_duel, replay
from thermopylae_env import __version__
from thermopylae_env.threads import configure_environment

__all__ = ["COMMANDS", "build_parser", "main"]

# subcommand -> (the module whose main(argv, prog) runs it, its help line)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("thermopylae_agents.cli.train", "train PPO agents (coop, duel-greek, duel-persian, selfplay)"),
    "evaluate": ("thermopylae_agents.cli.evaluate", "evaluate agents on paired deals; tables, plots, curves"),
    "export": ("thermopylae_agents.cli.export", "SB3 zips to pickle-free .json + .safetensors; Hub folders"),
    "exploitability": ("thermopylae_agents.cli.exploitability", "the exploitability table of duel policies"),
    "bound": ("thermopylae_agents.cli.bound", "the co-op upper bound (perfect information) against agents"),
    "render": ("thermopylae_agents.cli.render", "render one game to a GIF or a PNG strip"),
    "rllib": ("thermopylae_agents.cli.rllib", "PPO on Ray RLlib and Ray Tune sweeps (train, sweep)"),
    "ppo-native": ("thermopylae_agents.cli.ppo_native", "masked PPO in one file (co-op, duel)"),
    "duel-table": ("thermopylae_agents.cli.duel_table", "the duel strength table of the built-in players"),
    "web": ("thermopylae_agents.cli.web", "watch and play in the browser (a local web app)"),
    "distill": ("thermopylae_agents.cli.distill", "the co-op search distilled into a policy (DAgger)"),
}


def build_parser(prog: str = "thermopylae") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Play the Thermopylae card games in the terminal, replay game records, train, evaluate "
        "and analyse agents.",
    )

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    play = commands.add_parser("play", help="play a game in the terminal",
                               description="Play a Thermopylae game in the terminal: the co-op game (you "
                               "play the whole Spartan team) or the duel (one side against a built-in "
                               "opponent).")
    play.add_argument("--game", choices=GAMES, default="coop",
                      help="coop (default): you play every seat of the Spartan team; duel: you play one side")
    play.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                      help="co-op: the team size, 1..4 (default 1: solitaire)")
    play.add_argument("--side", choices=SIDES, default=None, help="duel: the side you play (default greek)")
    play.add_argument("--opponent", default=None, metavar="SPEC",
                      help="duel: the other side: heuristic (default), random, a model path, fast:PATH or a "
                      "shipped policy name")
    play.add_argument("--seed", type=seed_argument, default=None, help=SEED_HELP)
    play.add_argument("--hints", metavar="MODEL.zip", default=None,
                      help="a trained agent of your game and side (a path or a shipped policy name) whose "
                      "most probable legal actions are shown")
    play.add_argument("--record", metavar="FILE", default=None, help="write the game record to FILE (.jsonl)")

    rep = commands.add_parser("replay", help="replay a game record, checking that it reproduces the game")
    rep.add_argument("file", metavar="FILE", help="a record written by --record or thermopylae_env.records")
    mode = rep.add_mutually_exclusive_group()
    mode.add_argument("--step", action="store_true",
                      help="pause after each step (the default on a terminal): Enter for the next, q to "
                      "quit; at the end of the input the rest is checked without pausing")
    mode.add_argument("--all", action="store_true",
                      help="print the whole game without pausing (the default when standard input is not a "
                      "terminal); a record that does not replay to the same game exits with 1")
    rep.add_argument("--opponent", default=None, metavar="SPEC",
                     help="duel: the model opponent the game was played against (a replay never loads a "
                     "model that the record names)")

    for command, (_, text) in COMMANDS.items():
        # parsed by the command's own module (thermopylae COMMAND --help)
        commands.add_parser(command, help=text, add_help=False)
    return parser


def run_command(command: str, argv: Sequence[str]) -> int:
    """Run the subcommand ``command`` (a key of [`COMMANDS`][thermopylae_agents.cli.app.COMMANDS]) with
    ``argv``; its exit status. A ``main`` that returns its result for Python callers (a dict) exits with 0."""
    prog = f"thermopylae {command}"
    module_name = COMMANDS[command][0]
    try:
        module = importlib.import_module(module_name)
        result = module.main(list(argv), prog=prog)
    except ImportError as err:
        message = missing_extra_message(prog, err)
        if message is None:
            raise
        sys.stderr.write(message + "\n")
        return EXIT_MISSING_EXTRA
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT, no traceback
        sys.stderr.write(f"\n{prog}: interrupted\n")
        return 130
    return result if isinstance(result, int) else 0


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    # First: the OpenMP runtimes of torch (imported by a subcommand's module) and of numba's parallel kernels
    # read their settings once, when they load, which is after this; NumPy's OpenBLAS, loaded with the
    # package, gets its count set directly.
    configure_environment()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return run_command(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    term = Terminal(stdin, stdout)
    prog = f"thermopylae {args.command}"
    try:
        if args.command == "replay":
            return replay(args, term)
        try:  # the other game's options refused before anything is played
            game_options(args, coop={"players": 1}, duel={"side": "greek", "opponent": "heuristic"})
        except ValueError as err:
            raise UsageError(str(err)) from None
        if args.game == "coop":
            return play_coop(args, term)
        return play_duel(args, term)
    except UsageError as err:
        error(prog, str(err))
        return 2
    except KeyboardInterrupt:
        term.print("\nInterrupted.")
        return 130
    except BrokenPipeError:  # the reader went away (e.g. piped into head): stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
