"""The picture of the co-op table ([`render_coop_rgb`][thermopylae_env.coop.render.render_coop_rgb]), drawn
with Pillow; see [`thermopylae_env.render`][] for what it shows and the frame it fills."""

from __future__ import annotations

from typing import Any

import numpy as np

from thermopylae_env.coop.layout import GRAVEYARD_WIN, LOSS_MARKER, NUM_SUPPORT
from thermopylae_env.coop.state import HAND_LIMIT, LOCATION_DIE_MARKERS, Phase
from thermopylae_env.drawing import (
    _BLUE,
    _BRONZE,
    _CARD,
    _CARD_EDGE,
    _GREEN,
    _GREY,
    _HIGHLIGHT,
    _INK,
    _MUTED,
    _RED,
    FRAME_HEIGHT,
    FRAME_WIDTH,
    _centered,
    _font,
    _header,
    _new_canvas,
    _pile,
    _to_array,
)

__all__ = ["render_coop_rgb"]


def render_coop_rgb(game: Any, state: Any) -> np.ndarray:
    """The co-op table as an RGB image of shape [`FRAME_SHAPE`][thermopylae_env.drawing.FRAME_SHAPE] (uint8).

    ``game`` is a [`CoopGame`][thermopylae_env.coop.rules.CoopGame], ``state`` a
    [`CoopState`][thermopylae_env.coop.state.CoopState] (``None`` draws an empty table: the game has not
    started).
    """
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
