"""The picture of the duel table ([`render_duel_rgb`][thermopylae_env.duel.render.render_duel_rgb]), drawn
with Pillow; see [`thermopylae_env.render`][] for what it shows and the frame it fills."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from thermopylae_env.drawing import (
    _BLUE,
    _BRONZE,
    _CARD,
    _CARD_EDGE,
    _HIGHLIGHT,
    _INK,
    _MUTED,
    _PURPLE,
    _RED,
    FRAME_HEIGHT,
    FRAME_WIDTH,
    _card_back,
    _centered,
    _font,
    _header,
    _new_canvas,
    _pile,
    _text_width,
    _to_array,
    _wrap,
)
from thermopylae_env.duel.layout import (
    ATTACK_KIND,
    GREEK,
    PERSIAN,
    PLAYER_NAMES,
    START_TOKENS,
)
from thermopylae_env.duel.rules import combat_total
from thermopylae_env.duel.state import Phase

__all__ = ["render_duel_rgb"]


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
    """The duel table seen by ``side`` (0 Greek, 1 Persian) as an RGB image of shape
    [`FRAME_SHAPE`][thermopylae_env.drawing.FRAME_SHAPE].

    ``game`` is a [`DuelGame`][thermopylae_env.duel.rules.DuelGame], ``state`` a
    [`DuelState`][thermopylae_env.duel.state.DuelState] (``None``: not started). Only what ``side`` may see is
    drawn: the opponent's hand appears as card backs.
    """
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
