"""Argument types and the one-line error that every subcommand of ``thermopylae`` shares."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.actions import as_seed
from thermopylae_env.render import safe_text

__all__ = [
    "GAMES",
    "SEED_HELP",
    "SIDES",
    "check_output_path",
    "description",
    "device_argument",
    "env_id_of",
    "error",
    "float_argument",
    "game_options",
    "int_argument",
    "output_path_argument",
    "parse_int",
    "seed_argument",
    "short",
    "shown",
    "signed_int_argument",
]

SEED_HELP = "shuffle seed, an integer in 0..2**64-1 (default: random, shown on screen)"

#: the values of ``--game`` in every command that takes a game (docs/cli.md)
GAMES = ("coop", "duel")
#: the values of ``--side``: a duel player, or the duel model, plays one side
SIDES = ("greek", "persian")


def env_id_of(game: str, side: str | None = None) -> str:
    """The Gymnasium id of ``--game`` and, for the duel, ``--side`` (default greek): the co-op env, or the
    env in which one plays ``side`` of the duel."""
    if game == "coop":
        return COOP_ID
    if game != "duel":
        raise ValueError(f"unknown game {shown(game)!r}; expected coop or duel")
    return PERSIAN_ID if side == "persian" else GREEK_ID


def game_options(args: argparse.Namespace, coop: dict[str, Any], duel: dict[str, Any]) -> None:
    """Refuse the options of the game that ``args.game`` is not (``coop`` and ``duel`` map each game's own
    options, by ``dest``, to their defaults; an option left out is ``None``) with a ``ValueError`` of one
    line, ``--side, --opponent: for --game duel only``; then fill in the defaults of this game's options
    that were left out. Every command that takes ``--game`` says it in the same words."""
    mine, other, other_game = (coop, duel, "duel") if args.game == "coop" else (duel, coop, "coop")
    given = ["--" + name.replace("_", "-") for name in other if getattr(args, name) is not None]
    if given:
        raise ValueError(f"{', '.join(given)}: for --game {other_game} only")
    for name, default in mine.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


_REFERENCE = re.compile(r"\[`([^`]+)`\]\[[^\]]*\]")


def description(doc: str | None) -> str:
    """The first paragraph of a module docstring as plain text for ``--help``.

    The docstrings are written for the documentation site (``[`name`][target]`` links, ````code````); a
    terminal shows the names alone.
    """
    first = (doc or "").strip().split("\n\n")[0]
    return _REFERENCE.sub(r"\1", first).replace("``", "")


def parse_int(text: str, low: int, high: int, *, noun: str = "a whole number", span: str | None = None,
              ) -> int:
    """The one rule for an integer typed on the command line, behind every integer option of every command.

    An optional sign and ASCII decimal digits (``\u0663``, ``3.0``, ``1e3``, ``1_000``, ``0x10`` and spaces
    are refused: Python's ``int()`` takes some of them), parsed first and then checked against
    ``low..high``, so that the message says which of the two is wrong: ``'1.5' is not an integer``, or
    ``'-1' is not a whole number in 0..10`` (``noun`` and ``span``, e.g. ``"0..2**64-1"``, word it). A number
    of more digits than the bounds have is out of range without being converted, so a pasted novel of
    digits costs nothing. Raises ``ValueError`` with a one-line message."""
    quoted = repr(shown(text))
    span = span or f"{low}..{high}"
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"{quoted} is not an integer (ASCII digits); expected {noun} in {span}")
    widest = max(len(str(abs(low))), len(str(abs(high))))
    if len(digits.lstrip("0")) > widest or not low <= int(text) <= high:
        raise ValueError(f"{quoted} is not {noun} in {span}")
    return int(text)


def _argument_type(parse: Any, name: str) -> Any:
    """``parse`` as an argparse ``type`` (argparse names it ``name`` in its messages), marked as built on
    [`parse_int`][thermopylae_agents.cli.args.parse_int] (a test holds every integer option to it)."""

    def argument(text: str) -> int:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    argument.__name__ = name
    argument.integer_rule = parse_int  # type: ignore[attr-defined]
    return argument


def seed_argument(text: str) -> int:
    """An argparse ``type`` for seeds: an integer in ``0..2**64-1``
    ([`parse_int`][thermopylae_agents.cli.args.parse_int], then the envs' own seed rule)."""
    try:
        return as_seed(parse_int(text, 0, 2**64 - 1, noun="an integer", span="0..2**64-1"))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


seed_argument.integer_rule = parse_int  # type: ignore[attr-defined]


def int_argument(low: int, high: int) -> Any:
    """An argparse ``type`` for a whole number in ``low..high``
    ([`parse_int`][thermopylae_agents.cli.args.parse_int]: ASCII digits, then the range)."""
    return _argument_type(lambda text: parse_int(text, low, high), "integer")


def signed_int_argument(low: int, high: int) -> Any:
    """[`int_argument`][thermopylae_agents.cli.args.int_argument] under its older name, for a range that holds
    negative numbers (the rule takes a sign for every range)."""
    return int_argument(low, high)


def float_argument(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Any:
    """An argparse ``type`` for a finite number in the interval ``low..high`` (each end excluded when its
    ``*_open`` is set); ``nan``, ``inf`` and text that is not a number are refused."""
    left, right = "(" if low_open else "[", ")" if high_open else "]"
    interval = f"{left}{low:g}, {high:g}{right}"

    def parse(text: str) -> float:
        try:
            value = float(text) if text.isascii() and len(text) <= 40 else math.nan
        except ValueError:
            value = math.nan
        inside = (math.isfinite(value) and (low < value if low_open else low <= value)
                  and (value < high if high_open else value <= high))
        if not inside:
            shown = safe_text(text[:40], newlines=False)
            raise argparse.ArgumentTypeError(f"{shown!r} is not a finite number in {interval}")
        return value

    parse.__name__ = "number"
    return parse


DEVICE_KINDS = ("cpu", "cuda", "mps")


def device_argument(text: str) -> str:
    """An argparse ``type`` for a torch device: ``cpu``, ``cuda``, ``cuda:N`` or ``mps`` (checked by name
    only; whether the machine has it is the caller's to check, as torch is not imported here)."""
    kind, sep, index = text.partition(":")
    if kind not in DEVICE_KINDS or (sep and not (index.isascii() and index.isdigit() and len(index) < 4)):
        shown = safe_text(text[:40], newlines=False)
        raise argparse.ArgumentTypeError(f"{shown!r} is not a torch device (cpu, cuda, cuda:N or mps)")
    return text


def check_output_path(path: str | os.PathLike[str], what: str = "output") -> Path:
    """``path`` as a `Path` if a file can be written there: not empty, not a folder, and its
    folder exists or can be made (its nearest existing ancestor is a writable folder). Raises
    ``ValueError`` with a one-line message otherwise. Commands call it before any work, so that a run
    never ends in a crash that loses its results."""
    text = os.fspath(path)
    if not text.strip():
        raise ValueError(f"{what}: empty path")
    out = Path(text)
    if out.is_dir():
        raise ValueError(f"{what} {out}: is a folder, not a file")
    if out.exists() and not os.access(out, os.W_OK):
        raise ValueError(f"{what} {out}: not writable")
    ancestor = out.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"{what} {out}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {out}: folder {ancestor} is not writable")
    return out


def output_path_argument(text: str) -> Path:
    """An argparse ``type`` for a file to write (see
    [`check_output_path`][thermopylae_agents.cli.args.check_output_path])."""
    try:
        return check_output_path(text, "file")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


output_path_argument.__name__ = "path"


def short(text: str, limit: int = 40) -> str:
    """``text``, or its start and its length when it is longer than ``limit`` (a pasted novel)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def shown(text: object, limit: int = 40) -> str:
    """Text from a file or a user (a record's field, a config's name) as one line a terminal shows, never
    obeys: cut as [`short`][thermopylae_agents.cli.args.short] cuts it, then escaped by
    [`thermopylae_env.render.safe_text`][]."""
    return safe_text(short(str(text), limit), newlines=False)


def error(prog: str, message: str) -> None:
    """Write ``prog: error: <first line of message>`` to stderr."""
    first = str(message).strip().splitlines()[0] if str(message).strip() else "error"
    sys.stderr.write(f"{prog}: error: {safe_text(first, newlines=False)}\n")
    sys.stderr.flush()
