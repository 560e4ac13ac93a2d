"""The words of a position for people: the label of each legal action and the text of duel cards, shared
by the terminal game ([`thermopylae_agents.cli.play`][]) and the browser game
([`thermopylae_agents.web`][]), so that both offer the same choices in the same words."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from thermopylae_env.coop.layout import (
    DECLINE,
    DISCARD_BASE,
    FIGHT_BASE,
    GIVE_BASE,
    LOSS_MARKER,
    MIN_VALUE,
    NUM_SUPPORT,
    RETREAT,
)
from thermopylae_env.coop.state import LOCATION_DIE_MARKERS
from thermopylae_env.duel.layout import ADD_BASE, COMMIT, DONE_DISCARDING, decode_action
from thermopylae_env.duel.rules import combat_total

__all__ = ["coop_action_label", "duel_action_label", "duel_card_text", "duel_cards_text"]


def coop_action_label(game: Any, state: Any, action: int) -> str:
    """The name of a legal co-op action with what it does here (the marker step, the dice, the seat)."""
    if action == RETREAT:
        after = state.marker + 1
        if after >= LOSS_MARKER:
            return f"retreat  (marker {state.marker} -> {after}: the game is LOST)"
        return f"retreat  (marker {state.marker} -> {after}, then a draw is offered)"
    if FIGHT_BASE <= action < GIVE_BASE:
        value, support = divmod(action - FIGHT_BASE, NUM_SUPPORT + 1)
        value += MIN_VALUE
        dice = support + (1 if state.marker in LOCATION_DIE_MARKERS else 0)
        if dice == 0:
            return f"fight {value} +{support} support  (total {value})"
        return f"fight {value} +{support} support  ({dice} {'die' if dice == 1 else 'dice'}: total " \
               f"{value + dice}..{value + 6 * dice})"
    if GIVE_BASE <= action < DECLINE:
        seat = action - GIVE_BASE
        held = len(state.hands[seat])
        full = ", full: then discards one" if held >= 5 else ""
        return f"give draw to seat {seat}  (holds {held} card(s){full})"
    if action == DECLINE:
        return "decline draw"
    return f"discard {action - DISCARD_BASE + MIN_VALUE}  (from seat {state.recipient})"


def duel_card_text(game: Any, card: int) -> str:
    """One duel card: its name and its force (or what it does)."""
    kind = game.kinds[card // 52][game.card_kinds[card]]
    name = game.card_names[card]
    if kind.force > 0:
        return f"{name} ({kind.force})"
    return f"{name} ({'multiplier' if kind.kind == 'strategy' else 'discard 2'})"


def duel_cards_text(game: Any, cards: Sequence[int]) -> str:
    """Duel cards grouped by kind (``2 x Hoplite (20), ...``), or ``-`` for none."""
    if not cards:
        return "-"
    ordered = sorted(cards, key=lambda c: (game.card_kinds[c], game.card_names[c]))
    counts = Counter(duel_card_text(game, c) for c in ordered)
    return ", ".join(f"{n} x {text}" if n > 1 else text for text, n in counts.items())


def duel_action_label(game: Any, state: Any, side: int, action: int) -> str:
    """The name of a legal duel action of ``side`` with the total it makes."""
    name = decode_action(action, side)
    if action == DONE_DISCARDING:
        return f"{name}  (keep {len(state.hands[side])} cards)"
    if ADD_BASE <= action < COMMIT:
        build = list(state.build)
        build[action - ADD_BASE] += 1
        return f"{name}  (total {combat_total(state.build)} -> {combat_total(build)})"
    if action == COMMIT:
        return f"{name}  (total {combat_total(state.build)})"
    return name
