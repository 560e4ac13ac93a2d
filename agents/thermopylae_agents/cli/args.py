"""Argument types and the one-line error that every subcommand of ``thermopylae`` shares."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from thermopylae_env.actions import as_seed
from thermopylae_env.render import safe_text

__all__ = ["SEED_HELP", "error", "int_argument", "seed_argument"]

SEED_HELP = "shuffle seed, an integer in 0..2**64-1 (default: random, shown on screen)"


def seed_argument(text: str) -> int:
    """An argparse ``type`` for seeds: ASCII decimal digits of an integer in ``0..2**64-1``."""
    if not (text.isascii() and text.isdigit()) or len(text) > 20:
        raise argparse.ArgumentTypeError(f"{safe_text(text[:40], newlines=False)!r} is not an integer in "
                                         "0..2**64-1 (ASCII digits)")
    try:
        return as_seed(int(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def int_argument(low: int, high: int) -> Any:
    """An argparse ``type`` for a whole number in ``low..high`` written in ASCII digits (``\u0663``, ``3.0``
    and ``1e3`` are refused)."""

    def parse(text: str) -> int:
        if not (text.isascii() and text.isdigit()) or len(text) > 18 or not low <= int(text) <= high:
            shown = safe_text(text[:40], newlines=False)
            raise argparse.ArgumentTypeError(
                f"{shown!r} is not a whole number in {low}..{high} (ASCII digits)")
        return int(text)

    parse.__name__ = "integer"  # argparse names the type in its messages
    return parse


def error(prog: str, message: str) -> None:
    """Write ``prog: error: <first line of message>`` to stderr."""
    first = str(message).strip().splitlines()[0] if str(message).strip() else "error"
    sys.stderr.write(f"{prog}: error: {safe_text(first, newlines=False)}\n")
    sys.stderr.flush()
