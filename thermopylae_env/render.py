"""Pictures of the table, drawn with Pillow: ``render_coop_rgb`` and ``render_duel_rgb`` (import them from
[`thermopylae_env.coop.render`][] and [`thermopylae_env.duel.render`][]), and ``render_env_rgb``.

Both return a ``numpy.ndarray`` of shape [`FRAME_SHAPE`][thermopylae_env.drawing.FRAME_SHAPE] =
``(360, 640, 3)`` and dtype ``uint8`` (RGB), whatever the state, so that frames of one game can be stacked
into a video (Gymnasium's ``RecordVideo``) or shown in a window (``HumanRendering``).

* Co-op: the Persian line (white value, red value, bonus mark), the marker track 1..7 with the marker
  (3 and 6 give the location die, 7 loses), the support cards left, the Spartan and Persian deck sizes,
  the Persian discard pile and the graveyard (x/12), and every seat's hand (hands are open to the team).
* Duel, seen from ``side``: the Greek troop tokens, the opponent's hand size (card backs only), deck and
  discard pile, the attack on the table, the own attack/defence being built, and the own hand by card
  name and force. The opponent's hand is never drawn.

[`safe_text`][thermopylae_env.render.safe_text] is the one place that makes text read from a file (a record's
names, a deck's card names, error messages quoting them) safe to print in a terminal.

Pillow is an optional dependency (``pip install "thermopylae-env[render]"``); it is imported when the
first frame is drawn, and a missing Pillow raises an ``ImportError`` that says how to install it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from thermopylae_env.coop.render import render_coop_rgb
from thermopylae_env.duel.render import render_duel_rgb

__all__ = [
    "render_env_rgb",
    "safe_text",
]

_UNSAFE = re.compile(r"[^\t\n\x20-\x7e]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return char if char.isprintable() else char.encode("unicode_escape").decode("ascii")


def safe_text(text: object, *, newlines: bool = True) -> str:
    """``text`` with every character a terminal would obey rather than show (ANSI/OSC escape sequences,
    other control characters, bidirectional overrides and other invisible format characters) written as
    a visible ``\\x1b`` / ``\\u202e`` escape. Printable text, tabs and (with ``newlines``) line breaks
    pass unchanged; ``newlines=False`` escapes line breaks too (for one field on one line)."""
    result = _UNSAFE.sub(_escape, str(text))
    return result if newlines else result.replace("\n", "\\n")


def render_env_rgb(env: Any) -> np.ndarray:
    """The frame of a co-op or duel environment (wrappers allowed), from its ``game`` and ``state``.

    Works whatever the env's ``render_mode``: the duel is drawn from the agent's side.
    """
    base = getattr(env, "unwrapped", env)
    side = getattr(base, "side", None)
    if side is None:
        return render_coop_rgb(base.game, base.state)
    return render_duel_rgb(base.game, base.state, side)
