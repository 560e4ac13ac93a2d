"""Pictures of the table, drawn with Pillow: ``render_coop_rgb`` and ``render_duel_rgb``.

Both return a ``numpy.ndarray`` of shape :data:`FRAME_SHAPE` = ``(360, 640, 3)`` and dtype ``uint8`` (RGB),
whatever the state, so that frames of one game can be stacked into a video (Gymnasium's ``RecordVideo``)
or shown in a window (``HumanRendering``).

* Co-op: the Persian line (white value, red value, bonus mark), the marker track 1..7 with the marker
  (3 and 6 give the location die, 7 loses), the support cards left, the Spartan and Persian deck sizes,
  the Persian discard pile and the graveyard (x/12), and every seat's hand (hands are open to the team).
* Duel, seen from ``side``: the Greek troop tokens, the opponent's hand size (card backs only), deck and
  discard pile, the attack on the table, the own attack/defence being built, and the own hand by card
  name and force. The opponent's hand is never drawn.

:func:`safe_text` is the one place that makes text read from a file (a record's names, a deck's card
names, error messages quoting them) safe to print in a terminal.

Pillow is an optional dependency (``pip install "thermopylae-env[render]"``); it is imported when the
first frame is drawn, and a missing Pillow raises an ``ImportError`` that says how to install it.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "FRAME_HEIGHT",
    "FRAME_WIDTH",
    "FRAME_SHAPE",
    "render_coop_rgb",
    "render_duel_rgb",
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

FRAME_HEIGHT = 360
FRAME_WIDTH = 640
FRAME_SHAPE = (FRAME_HEIGHT, FRAME_WIDTH, 3)

# Colours (RGB).
_BG = (236, 226, 202)
_HEADER = (62, 42, 30)
_INK = (34, 30, 28)
_MUTED = (120, 108, 92)
_CARD = (252, 250, 244)
_CARD_EDGE = (70, 60, 50)
_RED = (178, 34, 34)
_BRONZE = (196, 140, 52)
_BACK = (122, 40, 32)
_BLUE = (44, 84, 150)
_PURPLE = (112, 62, 140)
_GREEN = (46, 120, 60)
_HIGHLIGHT = (236, 186, 30)
_GREY = (170, 164, 152)


def _pil() -> tuple[Any, Any, Any]:
    """``(Image, ImageDraw, ImageFont)`` from Pillow, or an ImportError that says how to install it."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as err:  # pragma: no cover - depends on the installation
        raise ImportError(
            "drawing the table needs Pillow: pip install \"thermopylae-env[render]\" (or pip install pillow)"
        ) from err
    return Image, ImageDraw, ImageFont


@functools.cache
def _font(size: int) -> Any:
    _, _, image_font = _pil()
    try:
        return image_font.load_default(size=size)
    except (TypeError, OSError):  # pragma: no cover - Pillow without FreeType: one fixed bitmap font
        return image_font.load_default()


def _new_canvas() -> tuple[Any, Any]:
    image, image_draw, _ = _pil()
    img = image.new("RGB", (FRAME_WIDTH, FRAME_HEIGHT), _BG)
    return img, image_draw.Draw(img)


def _to_array(img: Any) -> np.ndarray:
    frame = np.asarray(img, dtype=np.uint8)
    assert frame.shape == FRAME_SHAPE
    return np.ascontiguousarray(frame)


def _text_width(text: str, size: int) -> float:
    return _font(size).getlength(text)


def _centered(draw: Any, cx: float, y: float, text: str, size: int, fill=_INK) -> None:
    draw.text((cx - _text_width(text, size) / 2, y), text, font=_font(size), fill=fill)


def _wrap(text: str, size: int, width: float, max_lines: int) -> list[str]:
    """Split ``text`` into at most ``max_lines`` lines no wider than ``width`` (long words are cut)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}".strip()
        if _text_width(candidate, size) <= width or not current:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    out = []
    for line in lines[:max_lines]:
        while len(line) > 1 and _text_width(line, size) > width:
            line = line[:-1]
        out.append(line)
    return out


def _header(draw: Any, text: str) -> None:
    draw.rectangle((0, 0, FRAME_WIDTH, 25), fill=_HEADER)
    lines = _wrap(text, 13, FRAME_WIDTH - 16, 1)
    draw.text((8, 5), lines[0] if lines else "", font=_font(13), fill=(250, 244, 230))


def _card_back(draw: Any, box: tuple[float, float, float, float]) -> None:
    draw.rounded_rectangle(box, radius=4, fill=_BACK, outline=_CARD_EDGE, width=1)
    x0, y0, x1, y1 = box
    draw.rectangle((x0 + 4, y0 + 4, x1 - 4, y1 - 4), outline=(214, 170, 110), width=1)


def _pile(draw: Any, x: float, y: float, count: int, label: str, w: int = 44, h: int = 60) -> None:
    """A face-down pile with its size written on it and a label below."""
    if count > 0:
        for k in range(min(3, count) - 1, -1, -1):
            _card_back(draw, (x + 2 * k, y - 2 * k, x + w + 2 * k, y + h - 2 * k))
        _centered(draw, x + w / 2, y + h / 2 - 9, str(count), 16, fill=(250, 244, 230))
    else:
        draw.rounded_rectangle((x, y, x + w, y + h), radius=4, outline=_GREY, width=1)
        _centered(draw, x + w / 2, y + h / 2 - 7, "0", 13, fill=_MUTED)
    _centered(draw, x + w / 2, y + h + 3, label, 11, fill=_INK)


# ------------------------------------------------------------------------------------------------ co-op


def render_coop_rgb(game: Any, state: Any) -> np.ndarray:
    """The co-op table as an RGB image of shape :data:`FRAME_SHAPE` (uint8).

    ``game`` is a :class:`~thermopylae_env.coop.CoopGame`, ``state`` a
    :class:`~thermopylae_env.coop.CoopState` (``None`` draws an empty table: the game has not started).
    """
    from thermopylae_env.coop.layout import GRAVEYARD_WIN, LOSS_MARKER, NUM_SUPPORT
    from thermopylae_env.coop.state import HAND_LIMIT, LOCATION_DIE_MARKERS, Phase

    img, draw = _new_canvas()
    if state is None:
        _header(draw, f"Thermopyles co-op | {game.num_players} player(s) | not started")
        _centered(draw, FRAME_WIDTH / 2, FRAME_HEIGHT / 2, "call reset() to deal the cards", 16, fill=_MUTED)
        return _to_array(img)

    if state.terminated:
        why = {
            "graveyard": f"{GRAVEYARD_WIN} Persians in the graveyard",
            "refill": "the Persian deck cannot refill the line",
            "marker": f"the marker reached {LOSS_MARKER}",
            "exhausted": "no Spartan cards left",
        }.get(state.reason, str(state.reason))
        status = f"{'WON' if state.won else 'LOST'}: {why}"
    elif state.phase == Phase.MAIN:
        status = f"seat {state.current_player} to act: retreat or fight"
    elif state.phase == Phase.DRAW_OFFER:
        status = "a draw is offered: give it to a seat or decline"
    else:
        status = f"seat {state.recipient} holds {HAND_LIMIT + 1} cards: discard one"
    _header(draw, f"Thermopyles co-op | {game.num_players} player(s) | turn {state.turn} | {status}")

    # The Persian line.
    draw.text((14, 32), "Persian line", font=_font(13), fill=_INK)
    for index, card in enumerate((state.slot1, state.slot2)):
        x0, y0 = 14 + index * 100, 52
        box = (x0, y0, x0 + 88, y0 + 112)
        _centered(draw, x0 + 44, y0 + 114, f"slot {index + 1}", 11, fill=_MUTED)
        if card < 0:
            draw.rounded_rectangle(box, radius=6, outline=_GREY, width=2)
            _centered(draw, x0 + 44, y0 + 48, "empty", 13, fill=_MUTED)
            continue
        persian = game.persian[card]
        draw.rounded_rectangle(box, radius=6, fill=_CARD, outline=_CARD_EDGE, width=2)
        draw.rounded_rectangle((x0 + 8, y0 + 8, x0 + 80, y0 + 46), radius=4, fill=(255, 255, 255),
                               outline=_CARD_EDGE)
        _centered(draw, x0 + 44, y0 + 10, str(persian.white), 26, fill=_INK)
        draw.rounded_rectangle((x0 + 8, y0 + 52, x0 + 80, y0 + 86), radius=4, fill=_RED)
        _centered(draw, x0 + 44, y0 + 54, str(persian.red), 24, fill=(255, 255, 255))
        if persian.bonus:
            _centered(draw, x0 + 44, y0 + 92, "* BONUS *", 11, fill=_GREEN)
    draw.text((14, 186), "white: beat it   red: graveyard", font=_font(11), fill=_MUTED)

    # Persian deck, discard pile, graveyard.
    _pile(draw, 222, 60, state.persian_deck_size, "Persian deck")
    draw.text((282, 52), "discard", font=_font(11), fill=_INK)
    _centered(draw, 302, 68, str(len(state.persian_discard)), 20)
    draw.text((214, 146), f"graveyard {len(state.graveyard)}/{GRAVEYARD_WIN}", font=_font(12), fill=_INK)
    for pip in range(GRAVEYARD_WIN):
        x = 214 + pip * 10
        filled = pip < len(state.graveyard)
        draw.rectangle((x, 166, x + 7, 178), fill=_INK if filled else None, outline=_INK)

    # The marker track.
    draw.text((352, 32), "Marker track (7 loses)", font=_font(13), fill=_INK)
    for position in range(1, LOSS_MARKER + 1):
        cx, cy = 366 + (position - 1) * 40, 84
        loss = position == LOSS_MARKER
        here = position == state.marker
        fill = _BRONZE if here else (_RED if loss else _CARD)
        draw.ellipse((cx - 15, cy - 15, cx + 15, cy + 15), fill=fill, outline=_INK, width=3 if here else 1)
        _centered(draw, cx, cy - 9, str(position), 15, fill=(255, 255, 255) if (here or loss) else _INK)
        if position in LOCATION_DIE_MARKERS:
            draw.rounded_rectangle((cx - 8, cy + 20, cx + 8, cy + 36), radius=3, fill=(255, 255, 255),
                                   outline=_INK)
            draw.ellipse((cx - 2, cy + 26, cx + 2, cy + 30), fill=_INK)
        if here:
            draw.polygon(((cx - 7, cy - 28), (cx + 7, cy - 28), (cx, cy - 18)), fill=_INK)
    draw.text((352, 124), "die = +1 die in every fight there", font=_font(11), fill=_MUTED)

    # Support cards and the Spartan deck.
    draw.text((352, 146), f"Support {state.support}/{NUM_SUPPORT}", font=_font(13), fill=_INK)
    for k in range(NUM_SUPPORT):
        x0 = 352 + k * 36
        box = (x0, 166, x0 + 30, 206)
        if k < state.support:
            draw.rounded_rectangle(box, radius=3, fill=_BLUE, outline=_INK)
            _centered(draw, x0 + 15, 177, "+d6", 11, fill=(255, 255, 255))
        else:
            draw.rounded_rectangle(box, radius=3, outline=_GREY)
            draw.line((x0 + 4, 170, x0 + 26, 202), fill=_GREY, width=2)
    _pile(draw, 520, 150, state.spartan_deck_size, "Spartan deck", w=40, h=54)
    draw.text((576, 150), "discard", font=_font(11), fill=_INK)
    _centered(draw, 596, 166, str(len(state.spartan_discard)), 18)

    # Hands (open to the whole team).
    top = 226
    draw.line((8, top - 6, FRAME_WIDTH - 8, top - 6), fill=_MUTED)
    seats = len(state.hands)
    row_h = (FRAME_HEIGHT - top - 4) // max(seats, 1)
    card_h = min(row_h - 6, 100)
    card_w = max(30, min(52, int(card_h * 0.7)))
    value_size = 22 if card_h >= 50 else 15
    for seat, hand in enumerate(state.hands):
        y0 = top + seat * row_h
        acting = not state.terminated and seat == state.current_player
        must_discard = not state.terminated and state.phase == Phase.DISCARD and seat == state.recipient
        label = f"{'> ' if acting else ''}seat {seat}"
        draw.text((12, y0 + card_h / 2 - 14), label, font=_font(13), fill=_INK)
        draw.text((12, y0 + card_h / 2 + 2), f"{len(hand)} card(s)", font=_font(11), fill=_MUTED)
        values = sorted(game.spartan[c] for c in hand)
        for k, value in enumerate(values):
            x0 = 96 + k * (card_w + 8)
            box = (x0, y0, x0 + card_w, y0 + card_h)
            edge = _RED if must_discard else (_HIGHLIGHT if acting else _CARD_EDGE)
            draw.rounded_rectangle(box, radius=4, fill=_CARD, outline=edge, width=3 if acting or must_discard
                                   else 1)
            _centered(draw, x0 + card_w / 2, y0 + card_h / 2 - value_size * 0.6, str(value), value_size)
        if not values:
            draw.text((96, y0 + card_h / 2 - 8), "(empty hand)", font=_font(12), fill=_MUTED)
    return _to_array(img)


# ------------------------------------------------------------------------------------------------- duel

_KIND_COLOURS = {"attack": _RED, "force": _CARD_EDGE, "strategy": _BLUE, "discard": _PURPLE}


def _duel_card(draw: Any, box: tuple[float, float, float, float], card_kind: Any, name: str,
               highlight: bool = False) -> None:
    x0, y0, x1, y1 = box
    colour = _KIND_COLOURS.get(card_kind.kind, _CARD_EDGE)
    draw.rounded_rectangle(box, radius=5, fill=_CARD, outline=_HIGHLIGHT if highlight else colour,
                           width=3 if highlight else 2)
    draw.rectangle((x0 + 3, y0 + 3, x1 - 3, y0 + 8), fill=colour)
    width = x1 - x0
    height = y1 - y0
    small = height < 70
    size = 9 if small else 10
    while size > 7 and any(_text_width(word, size) > width - 6 for word in name.split()):
        size -= 1  # a long word ("Outflanking") gets a smaller font rather than being cut
    lines = _wrap(name, size, width - 6, 2 if small else 3)
    for k, line in enumerate(lines):
        _centered(draw, x0 + width / 2, y0 + 11 + k * (size + 2), line, size)
    if card_kind.force > 0:
        _centered(draw, x0 + width / 2, y1 - (20 if small else 28), str(card_kind.force), 14 if small else 20,
                  fill=colour if card_kind.kind == "attack" else _INK)
    else:
        tag = "x mult" if card_kind.kind == "strategy" else "discard 2"
        _centered(draw, x0 + width / 2, y1 - 16, tag, 9, fill=colour)


def _pile_summary(game: Any, cards: Sequence[int]) -> str:
    counts = Counter(game.card_kinds[c] for c in cards)
    if not counts:
        return "empty"
    owner = cards[0] // 52
    kinds = game.kinds[owner]
    parts = []
    for kind in sorted(counts):
        k = kinds[kind]
        short = f"{k.force}" if k.kind == "force" else ("Attack" if k.kind == "attack" else k.names[0])
        parts.append(f"{counts[kind]}x{short}")
    return " ".join(parts)


def render_duel_rgb(game: Any, state: Any, side: int) -> np.ndarray:
    """The duel table seen by ``side`` (0 Greek, 1 Persian) as an RGB image of shape :data:`FRAME_SHAPE`.

    ``game`` is a :class:`~thermopylae_env.duel.DuelGame`, ``state`` a
    :class:`~thermopylae_env.duel.DuelState` (``None``: not started). Only what ``side`` may see is drawn:
    the opponent's hand appears as card backs.
    """
    from thermopylae_env.duel.layout import (
        ATTACK_KIND,
        GREEK,
        PERSIAN,
        PLAYER_NAMES,
        START_TOKENS,
    )
    from thermopylae_env.duel.rules import Phase, combat_total

    if side not in (GREEK, PERSIAN):
        raise ValueError(f"side must be {GREEK} (Greek) or {PERSIAN} (Persian), got {side!r}")
    img, draw = _new_canvas()
    me = PLAYER_NAMES[side].capitalize()
    opp_side = 1 - side
    them = PLAYER_NAMES[opp_side].capitalize()
    if state is None:
        _header(draw, f"Thermopylae duel | you: {me} | not started")
        _centered(draw, FRAME_WIDTH / 2, FRAME_HEIGHT / 2, "call reset() to deal the cards", 16, fill=_MUTED)
        return _to_array(img)

    if state.terminated:
        winner = PLAYER_NAMES[state.winner].capitalize()
        why = {"persian_deck_empty": "the Persian deck is empty", "no_tokens": "no Greek tokens left"}.get(
            state.reason, state.reason)
        verdict = "you win" if state.winner == side else "you lose"
        status = f"game over: {winner}s win ({why}) - {verdict}"
    else:
        phase = {
            Phase.PERSIAN_DISCARD: "Persian discard phase",
            Phase.GREEK_DISCARD: "Greek discard phase",
            Phase.ATTACK: "Persian attack",
            Phase.DEFENCE: "Greek defence",
        }[Phase(state.phase)]
        who = "you" if state.current_player == side else them
        status = f"{phase}, {who} to act"
    _header(draw, f"Thermopylae duel | you: {me} | turn {state.turn} | {status}")

    # Greek tokens.
    draw.text((10, 31), f"Greek tokens {state.tokens}/{START_TOKENS}", font=_font(12), fill=_INK)
    for k in range(START_TOKENS):
        cx = 150 + k * 20
        filled = k < state.tokens
        draw.ellipse((cx - 7, 32, cx + 7, 46), fill=_BRONZE if filled else None, outline=_INK)

    # The opponent: card backs, deck, discard pile.
    opp_hand = len(state.hands[opp_side])
    draw.text((10, 54), f"Opponent ({them}): {opp_hand} card(s) in hand", font=_font(12), fill=_INK)
    for k in range(opp_hand):
        x0 = 10 + k * 30
        _card_back(draw, (x0, 72, x0 + 26, 108))
    _pile(draw, 300, 62, state.deck_size(opp_side), "deck", w=30, h=40)
    opp_discards = state.discards[opp_side]
    draw.text((350, 56), f"{them} discard pile: {len(opp_discards)}", font=_font(12), fill=_INK)
    for k, line in enumerate(_wrap(_pile_summary(game, opp_discards), 10, 280, 3)):
        draw.text((350, 74 + k * 12), line, font=_font(10), fill=_MUTED)

    # The table: the committed attack, or the attack/defence being built.
    top = 124
    draw.line((8, top, FRAME_WIDTH - 8, top), fill=_MUTED)
    kinds_p = game.kinds[PERSIAN]
    if state.table:
        title = f"Attack on the table: total {state.attack_total}"
        draw.text((10, top + 4), title, font=_font(12), fill=_RED)
        for k, card in enumerate(state.table[:7]):
            x0 = 10 + k * 70
            _duel_card(draw, (x0, top + 22, x0 + 66, top + 86), kinds_p[game.card_kinds[card]],
                       game.card_names[card])
    else:
        draw.text((10, top + 4), "No attack on the table", font=_font(12), fill=_MUTED)
    building = (not state.terminated and state.phase in (Phase.ATTACK, Phase.DEFENCE)
                and state.current_player == side and any(state.build))
    if building:
        what = "attack" if side == PERSIAN else "defence"
        draw.text((520, top + 4), f"your {what}", font=_font(12), fill=_INK)
        _centered(draw, 575, top + 22, str(combat_total(state.build)), 26, fill=_HIGHLIGHT)
        draw.text((520, top + 56), "(cards in yellow)", font=_font(10), fill=_MUTED)
    elif (not state.terminated and state.phase == Phase.ATTACK and side == GREEK
          and state.hand_counts[PERSIAN][ATTACK_KIND]):
        draw.text((520, top + 30), "Persian decides", font=_font(11), fill=_MUTED)

    # The own side: hand (cards being added highlighted), deck, discard pile.
    top = 222
    draw.line((8, top - 4, FRAME_WIDTH - 8, top - 4), fill=_MUTED)
    hand = state.hands[side]
    draw.text((10, top), f"Your hand ({me}): {len(hand)} card(s)", font=_font(12), fill=_INK)
    kinds = game.kinds[side]
    order = sorted(hand, key=lambda c: (game.card_kinds[c], game.card_names[c]))
    to_mark = list(state.build) if building else [0] * len(kinds)
    for k, card in enumerate(order):
        kind = game.card_kinds[card]
        mark = kind < len(to_mark) and to_mark[kind] > 0
        if mark:
            to_mark[kind] -= 1
        x0 = 10 + k * 62
        box = (x0, top + 18, x0 + 58, top + 112)
        _duel_card(draw, box, kinds[kind], game.card_names[card], highlight=mark)
    _pile(draw, 528, top + 20, state.deck_size(side), "your deck", w=40, h=54)
    own_discards = state.discards[side]
    draw.text((580, top + 16), "discards", font=_font(10), fill=_INK)
    _centered(draw, 604, top + 30, str(len(own_discards)), 18)
    return _to_array(img)


def render_env_rgb(env: Any) -> np.ndarray:
    """The frame of a co-op or duel environment (wrappers allowed), from its ``game`` and ``state``.

    Works whatever the env's ``render_mode``: the duel is drawn from the agent's side.
    """
    base = getattr(env, "unwrapped", env)
    side = getattr(base, "side", None)
    if side is None:
        return render_coop_rgb(base.game, base.state)
    return render_duel_rgb(base.game, base.state, side)
