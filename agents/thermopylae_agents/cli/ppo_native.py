"""``thermopylae ppo-native``: single-file masked PPO on the native vector engines
([`thermopylae_agents.training.ppo_native`][]).

The flags are the fields of [`Args`][thermopylae_agents.training.ppo_native.Args], parsed by `tyro`
(their docstrings are the help). Every value is then checked here: a bad one ends with one line on
standard error and exit status 2, before anything is written; so does ``--track`` without Weights &
Biases installed. Without the train extra (torch, tyro) ``--help`` still lists the flags, read from the
source of ``Args``, and names the extra."""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import importlib.util
import io
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thermopylae_agents.cli.args import check_output_path, parse_int
from thermopylae_agents.cli.console import extra_message
from thermopylae_env import COOP_ID

if TYPE_CHECKING:
    from thermopylae_agents.training.ppo_native import Args

__all__ = ["build_parser", "check", "main", "parse_args"]

DESCRIPTION = ("Single-file masked PPO (in the manner of CleanRL's ppo.py) on the native vector engines of "
               "the co-op game and the duel; writes RUN_DIR/summary.json and agent.pt.")
MAX_ROLLOUT = 2**24  # num_envs * num_steps observations are held at once (on the device)

# (low, high, low excluded) of each numeric field: bounds far above any useful run that still refuse a
# typo (an extra zero, a sign) with one line instead of a crash deep in training.
BOUNDS: dict[str, tuple[float, float, bool]] = {
    "seed": (0, 2**31 - 1, False),
    "total_timesteps": (1, 10**11, False),
    "time_budget": (0.0, 1e7, False),
    "video_episodes": (1, 1000, False),
    "num_envs": (1, 65_536, False),
    "num_steps": (1, 65_536, False),
    "learning_rate": (0.0, 10.0, True),
    "gamma": (0.0, 1.0, False),
    "gae_lambda": (0.0, 1.0, False),
    "num_minibatches": (1, MAX_ROLLOUT, False),
    "update_epochs": (1, 10_000, False),
    "clip_coef": (0.0, 1000.0, True),
    "ent_coef": (0.0, 1000.0, False),
    "vf_coef": (0.0, 1000.0, False),
    "max_grad_norm": (0.0, 1e6, True),
    "target_kl": (0.0, 1000.0, False),
    "players": (1, 4, False),
    "reward_shaping": (0.0, 1000.0, False),
    "torch_threads": (1, 1024, False),
    "eval_games": (0, 10**7, False),
}
COOP_ONLY = ("players", "reward_shaping", "backend")
DUEL_ONLY = ("opponent",)
# A part of the run folder's name: no path separators, no "." or "..".
EXP_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
_BOX = re.compile(r"[\u2500-\u257f]+")  # the box-drawing characters of tyro's error panels
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class UsageError(ValueError):
    """A bad flag: its one-line message is printed as ``PROG: error: MESSAGE`` with exit status 2."""


def _one_line(panel: str) -> str:
    """The message of tyro's error panel (a box of several lines) on one line: the rows above the
    panel's first rule, without the frame; the help hint below it is left out."""
    rows = []
    for line in _ANSI.sub("", panel).splitlines()[1:]:  # the first line is the panel's title bar
        text = line.strip().strip("\u2502").strip()
        if not text or _BOX.fullmatch(text) or text.startswith("\u2570"):
            if rows:
                break
            continue
        rows.append(text)
    return " ".join(rows) or " ".join(_BOX.sub(" ", _ANSI.sub("", panel)).split())


def check(args: Args) -> None:
    """Raise `UsageError` naming the first bad value of ``args``."""
    from thermopylae_agents.training.ppo_native import Args, default_run_dir  # extra: train

    defaults = Args()
    for name, (low, high, low_open) in BOUNDS.items():
        value = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{flag}: {value} is not a finite number")
        if value < low or value > high or (low_open and value == low):
            interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
            raise UsageError(f"{flag}: {value:g} is outside {interval}")
    batch = args.num_envs * args.num_steps
    if batch > MAX_ROLLOUT:
        raise UsageError(f"num_envs * num_steps must be at most {MAX_ROLLOUT:,}, got {batch:,}")
    if batch % args.num_minibatches:
        raise UsageError(f"num_envs * num_steps ({batch}) must be a multiple of num_minibatches "
                         f"({args.num_minibatches})")
    wrong = DUEL_ONLY if args.env_id == COOP_ID else COOP_ONLY
    for name in wrong:
        if getattr(args, name) != getattr(defaults, name):
            game = "duel" if args.env_id == COOP_ID else "co-op"
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} applies to the {game} game only, not to {args.env_id}")
    if not EXP_NAME.fullmatch(args.exp_name):
        raise UsageError(f"--exp-name: {args.exp_name!r} is not a name of letters, digits, '.', '_' and '-' "
                         "(it names the run folder)")
    if args.track and not args.wandb_project_name.strip():
        raise UsageError("--wandb-project-name: a blank name")
    if args.track and importlib.util.find_spec("wandb") is None:
        raise UsageError("--track: Weights & Biases (wandb) is not installed: pip install wandb")
    if args.run_dir and not args.run_dir.strip():
        raise UsageError("--run-dir: a blank path (leave it out for the default folder)")
    run_dir = default_run_dir(args)
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--run-dir {run_dir}: not a folder")
    try:  # the folder's own files (summary.json, agent.pt) are written into it
        check_output_path(run_dir / "summary.json", "--run-dir")
    except ValueError as err:
        raise UsageError(str(err)) from None


def _check_integers(argv: list[str]) -> None:
    """The integer flags' values through the commands' one integer rule
    ([`parse_int`][thermopylae_agents.cli.args.parse_int]) before tyro reads them: tyro's ``int()`` takes
    ``1_0``, `` 5`` and non-ASCII digits."""
    bounds = {name: (low, high) for name, (low, high, _) in BOUNDS.items()
              if isinstance(low, int) and isinstance(high, int)}
    flags = {f"--{name.replace('_', '-')}": name for name in bounds} | {f"--{name}": name for name in bounds}
    tokens = iter(argv)
    for token in tokens:
        flag, equals, value = token.partition("=")
        if flag not in flags:
            continue
        if not equals:
            value = next(tokens, None)
            if value is None:
                return  # tyro says that the value is missing
        try:
            parse_int(value, *bounds[flags[flag]])
        except ValueError as err:
            raise UsageError(f"{flag}: {err}") from None


def parse_args(argv: Sequence[str] | None = None, prog: str | None = None) -> Args:
    """``Args`` from the command line (``--help`` prints the flags and exits), checked by `check`, with
    ``run_dir`` named (``runs/{run_name}`` unless given); a bad flag prints one line and exits with
    status 2."""
    import tyro  # extra: train

    from thermopylae_agents.training.ppo_native import Args, default_run_dir  # extra: train

    prog = prog or Path(sys.argv[0]).name
    argv = list(sys.argv[1:] if argv is None else argv)
    panel = io.StringIO()
    try:
        _check_integers(argv)
        # tyro draws its errors as a panel of several lines; the project's rule is one line.
        with contextlib.redirect_stderr(panel):
            args = tyro.cli(Args, args=argv, prog=prog, description=DESCRIPTION)
        if args.run_dir == "":  # the run's name has the time in it: named once, checked and used as it is
            args = dataclasses.replace(args, run_dir=str(default_run_dir(args)))
        check(args)
    except SystemExit as done:
        if done.code in (0, None):
            raise
        _fail(prog, _one_line(panel.getvalue()) or "invalid arguments (see --help)")
    except UsageError as err:
        _fail(prog, str(err))
    return args


def _fail(prog: str, message: str) -> None:
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The flags of ``Args`` as an argparse parser, their types, defaults and docstrings read from the source
    of ``Args`` (importing it needs torch): the help without the train extra, and what the tests walk. The
    command line itself is parsed by tyro ([`parse_args`][thermopylae_agents.cli.ppo_native.parse_args])."""
    source = Path(__file__).resolve().parents[1] / "training" / "ppo_native.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    body = next(node.body for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Args")
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    for field, doc in zip(body, body[1:], strict=False):
        if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)):
            continue
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
            raise ValueError(f"Args.{field.target.id} has no docstring: every flag needs its help")
        name, kind = field.target.id, field.annotation
        if name == "exp_name":  # CleanRL's default: the file's name
            default: Any = source.stem
        elif isinstance(field.value, ast.Name):  # the env id
            default = {"COOP_ID": COOP_ID}.get(field.value.id, "")
        else:
            default = ast.literal_eval(field.value)
        text = f"{doc.value.value} (default: {default})" if default != "" else doc.value.value
        flag = "--" + name.replace("_", "-")
        if isinstance(kind, ast.Subscript) and ast.unparse(kind.value) == "Literal":
            parser.add_argument(flag, choices=ast.literal_eval(kind.slice), default=default, help=text)
        elif ast.unparse(kind) == "bool":
            parser.add_argument(flag, "--no-" + flag[2:], action="store_true", default=default, help=text)
        else:
            parser.add_argument(flag, metavar=ast.unparse(kind).upper(), default=default, help=text)
    return parser


def _help_without_training(prog: str) -> str | None:
    """``--help`` where the train extra is not installed (``None`` where it is): the flags of
    [`build_parser`][thermopylae_agents.cli.ppo_native.build_parser], then the line that names the extra."""
    missing = [module for module in ("tyro", "torch") if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    return build_parser(prog).format_help() + "\n" + extra_message(prog, "train", missing[0]) + "\n"


def train(args: Args) -> dict[str, Any]:
    """[`thermopylae_agents.training.ppo_native.train`][]: imported when a run starts, so that this module
    loads without torch."""
    from thermopylae_agents.training.ppo_native import train as run  # extra: train

    return run(args)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> dict[str, Any]:
    prog = prog or Path(sys.argv[0]).name
    argv = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(argv) and (text := _help_without_training(prog)) is not None:
        print(text, end="")
        raise SystemExit(0)
    return train(parse_args(argv, prog))

