"""The drawing bits both games' pictures share (Pillow, loaded on first use): the frame size, the colours,
the fonts, and small helpers (canvas, centred and wrapped text, header, card backs, piles). The pictures
themselves are [`thermopylae_env.coop.render`][] and [`thermopylae_env.duel.render`][]; the public
entry point is [`thermopylae_env.render`][].
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["FRAME_HEIGHT", "FRAME_WIDTH", "FRAME_SHAPE"]


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
        from PIL import Image, ImageDraw, ImageFont  # extra: render
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
