"""What the page draws: a position as plain JSON (cards, counts, the legal actions with their names), and
the hints for the player to move (an agent's action probabilities or choice, the search's estimated win
chance per action, the exact fight odds).

Everything here is computed from the engine's state and the events it emitted; the page never sees an
object of the engine and never sends one back (it sends an action index, which the server checks against
the action mask).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from thermopylae_agents.evaluation.labels import coop_action_label, duel_action_label, duel_card_text
from thermopylae_agents.players.coop_search import CoopSearchExpert, SearchEstimate
from thermopylae_agents.policies.fight_odds import dice_tail_table
from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.layout import (
    DECLINE,
    DISCARD_BASE,
    FIGHT_BASE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MIN_VALUE,
    NUM_SUPPORT,
    RETREAT,
    discard_action,
    fight_action,
)
from thermopylae_env.coop.state import HAND_LIMIT, LOCATION_DIE_MARKERS, MAX_DICE, Phase
from thermopylae_env.duel.layout import (
    ADD_BASE,
    COMMIT,
    DISCARD_KIND,
    DONE_DISCARDING,
    NUM_ADD_KINDS,
    PLAY_DISCARD_CARD,
    PLAYER_NAMES,
    START_TOKENS,
    add_action,
)
from thermopylae_env.duel.layout import DISCARD_BASE as DUEL_DISCARD_BASE
from thermopylae_env.duel.rules import combat_total
from thermopylae_env.duel.state import Phase as DuelPhase
from thermopylae_env.records import describe_event

__all__ = ["END_SENTENCES", "coop_card_play", "coop_parts", "coop_view", "duel_card_play", "duel_parts",
           "duel_view", "ending", "event_lines", "fight_odds", "legal_actions", "policy_hint", "search_hint"]

_COOP_PHASES = {Phase.MAIN: "main", Phase.DRAW_OFFER: "draw_offer", Phase.DISCARD: "discard"}
_DUEL_PHASES = {DuelPhase.PERSIAN_DISCARD: "Persian discard phase",
                DuelPhase.GREEK_DISCARD: "Greek discard phase",
                DuelPhase.ATTACK: "Persian attack", DuelPhase.DEFENCE: "Greek defence"}


def event_lines(events: Sequence[dict], viewer: int | None = None) -> list[str]:
    """The events as lines of text (those the viewer may not see left out)."""
    return [text for text in (describe_event(event, viewer=viewer) for event in events) if text]


def legal_actions(mask: np.ndarray, label: Any, parts: Any = None) -> list[dict[str, Any]]:
    """``[{"action": index, "label": text}]`` for every legal action of ``mask``; ``parts(action)`` adds
    what the page's cards need: ``short`` (the action's name beside its card, or on a button of its own),
    ``card`` (the card it plays: a co-op value, a duel kind; ``None`` for an action of no card),
    ``seat`` (co-op: whose card) and ``to`` (co-op: the seat a draw is given to)."""
    return [{"action": int(a), "label": label(int(a)), **(parts(int(a)) if parts else {})}
            for a in np.flatnonzero(mask)]


# Why each game ended, in plain words: the one place a reason code of the engines becomes a sentence (the
# page shows it in the end banner; a test holds it to every code the engines' rules can produce).
END_SENTENCES: dict[tuple[str, str], str] = {
    ("coop", "graveyard"): f"The Spartans won: {GRAVEYARD_WIN} Persian cards lie in the graveyard.",
    ("coop", "refill"): "The Spartans won: the Persian deck ran out and could not refill the line.",
    ("coop", "marker"): f"The Spartans lost: they retreated to the last space of the track ({LOSS_MARKER}).",
    ("coop", "exhausted"): "The Spartans lost: no Spartan card was left in any hand or in the deck.",
    ("duel", "persian_deck_empty"): "The Greeks won: the Persian deck ran out and the Persians went home.",
    ("duel", "no_tokens"): "The Persians won: the Greeks lost their last troop token.",
}


def ending(game: str, reason: str | None) -> str | None:
    """The sentence of ``END_SENTENCES`` for a game that ended for ``reason`` (``None`` while it goes on)."""
    if reason is None:
        return None
    return END_SENTENCES.get((game, reason), "The game is over.")


def coop_parts(state: Any) -> Any:
    """The ``parts`` of [`legal_actions`][thermopylae_agents.web.views.legal_actions] for the co-op."""

    def parts(action: int) -> dict[str, Any]:
        if action == RETREAT:
            return {"short": "Retreat", "card": None, "seat": None}
        if FIGHT_BASE <= action < GIVE_BASE:
            value, support = divmod(action - FIGHT_BASE, NUM_SUPPORT + 1)
            return {"short": f"+{support} support", "card": value + MIN_VALUE,
                    "seat": int(state.current_player)}
        if GIVE_BASE <= action < DECLINE:
            seat = action - GIVE_BASE
            return {"short": f"Give to seat {seat}", "card": None, "seat": None, "to": seat}
        if action == DECLINE:
            return {"short": "Decline the draw", "card": None, "seat": None}
        value = action - DISCARD_BASE + MIN_VALUE
        return {"short": f"Discard {value}", "card": value, "seat": int(state.recipient)}
    return parts


def coop_card_play(state: Any, mask: np.ndarray,
                   hands: Sequence[Sequence[int]]) -> list[list[dict[str, Any]]]:
    """For each card of ``hands`` (the view's hands: values, per seat), the legal actions that play it and,
    when there is none, why: the page plays a clicked card, or offers its choices, or says why not."""
    phase = Phase(state.phase)
    acting = int(state.current_player) if phase != Phase.DISCARD else int(state.recipient)
    play = []
    for seat, hand in enumerate(hands):
        cards = []
        for value in hand:
            actions: list[int] = []
            why = None
            if phase == Phase.DRAW_OFFER:
                why = "a drawn card is on offer: give it to a seat or decline it first"
            elif seat != acting and phase == Phase.MAIN:
                why = f"it is seat {acting}'s turn: only its cards can fight now"
            elif seat != acting:
                why = f"seat {acting} holds too many cards and discards one of its own (down to {HAND_LIMIT})"
            elif phase == Phase.MAIN:
                actions = [a for s in range(NUM_SUPPORT + 1) if mask[a := fight_action(value, s)]]
            else:
                actions = [a for a in (discard_action(value),) if mask[a]]
            if not actions and why is None:
                why = "this card cannot be played now"
            cards.append({"actions": actions, "why": why})
        play.append(cards)
    return play


def _persian(game: Any, card: int) -> dict[str, Any] | None:
    if card < 0:
        return None
    p = game.persian[card]
    return {"white": int(p.white), "red": int(p.red), "bonus": bool(p.bonus)}


def coop_view(game: Any, state: Any) -> dict[str, Any]:
    """The co-op table: the Persian line, the marker track, hands, support, decks and graveyard."""
    over = bool(state.terminated)
    return {
        "game": "coop",
        "num_players": int(game.num_players),
        "turn": int(state.turn),
        "marker": int(state.marker),
        "loss_marker": LOSS_MARKER,
        "die_markers": list(LOCATION_DIE_MARKERS),
        "line": [_persian(game, state.slot1), _persian(game, state.slot2)],
        "support": int(state.support),
        "num_support": NUM_SUPPORT,
        "spartan_deck": int(state.spartan_deck_size),
        "persian_deck": int(state.persian_deck_size),
        "persian_deck_total": PERSIAN_DECK_SIZE,
        "persian_discard": [_persian(game, c) for c in state.persian_discard],
        "graveyard": [_persian(game, c) for c in state.graveyard],
        "graveyard_win": GRAVEYARD_WIN,
        "hands": [sorted(int(game.spartan[c]) for c in hand) for hand in state.hands],
        "current": None if over else int(state.current_player),
        "phase": None if over else _COOP_PHASES[Phase(state.phase)],
        "recipient": int(state.recipient) if state.recipient >= 0 and not over else None,
        "terminated": over,
        "won": bool(state.won) if over else None,
        "reason": state.reason,
        "ending": ending("coop", state.reason),
    }


def coop_labels(game: Any, state: Any) -> Any:
    return lambda action: coop_action_label(game, state, action)


def _cards(game: Any, cards: Sequence[int]) -> list[dict[str, Any]]:
    ordered = sorted(cards, key=lambda c: (game.card_kinds[c], game.card_names[c]))
    return [{"text": duel_card_text(game, c), "kind": int(game.card_kinds[c])} for c in ordered]


def duel_view(game: Any, state: Any, side: int, opponent: str, reveal: bool = False) -> dict[str, Any]:
    """The duel table seen by ``side``: its hand, the other hand's size, tokens, decks, discard piles and
    the attack on the table (the other side's hand and draws stay hidden unless ``reveal``: a game of two
    agents, watched, has no hand to hide)."""
    over = bool(state.terminated)
    other = 1 - side
    kinds = game.kinds[side]
    building = [] if over or state.current_player != side else [
        {"label": kinds[k].label, "count": int(n)} for k, n in enumerate(state.build) if n]
    hand = _cards(game, state.hands[side])
    added = list(state.build) if building else []  # an added card stays in the hand until the commit
    for card in hand:
        card["added"] = card["kind"] < len(added) and added[card["kind"]] > 0
        if card["added"]:
            added[card["kind"]] -= 1
    return {
        "game": "duel",
        "side": PLAYER_NAMES[side],
        "opponent": opponent,
        "turn": int(state.turn),
        "phase": None if over else _DUEL_PHASES[DuelPhase(state.phase)],
        "my_move": (not over) and state.current_player == side,
        "tokens": int(state.tokens),
        "start_tokens": START_TOKENS,
        "hand": hand,
        "opponent_hand": len(state.hands[other]),
        "deck": int(state.deck_size(side)),
        "opponent_deck": int(state.deck_size(other)),
        "discards": _cards(game, state.discards[side]),
        "opponent_discards": _cards(game, state.discards[other]),
        "table": _cards(game, state.table),
        "attack_total": int(state.attack_total),
        "build": building,
        "build_total": int(combat_total(state.build)) if building else 0,
        "terminated": over,
        "won": (state.winner == side) if over else None,
        "winner": PLAYER_NAMES[state.winner] if over and state.winner >= 0 else None,
        "opponent_cards": _cards(game, state.hands[other]) if reveal else None,
        "reason": state.reason,
        "ending": ending("duel", state.reason),
    }


def duel_labels(game: Any, state: Any, side: int) -> Any:
    return lambda action: duel_action_label(game, state, side, action)


def duel_parts(state: Any, side: int) -> Any:
    """The ``parts`` of [`legal_actions`][thermopylae_agents.web.views.legal_actions] for the duel side."""
    building = "attack" if side == 1 else "defence"
    other = PLAYER_NAMES[1 - side].capitalize()

    def parts(action: int) -> dict[str, Any]:
        if action == PLAY_DISCARD_CARD:
            return {"short": f"Play it: the {other} discards 2 at random", "card": DISCARD_KIND}
        if DUEL_DISCARD_BASE <= action < DONE_DISCARDING:
            return {"short": "Discard it", "card": action - DUEL_DISCARD_BASE}
        if action == DONE_DISCARDING:
            return {"short": f"Done discarding (keep {len(state.hands[side])})", "card": None}
        if ADD_BASE <= action < COMMIT:
            return {"short": f"Add to the {building}", "card": action - ADD_BASE}
        if action == COMMIT:
            return {"short": f"Commit the {building} (total {combat_total(state.build)})", "card": None}
        return {"short": "Do not attack" if side == 1 else "No defence", "card": None}
    return parts


def duel_card_play(game: Any, state: Any, side: int, mask: np.ndarray,
                   hand: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each card of ``hand`` (the view's hand of ``side``, to move now), the legal actions that play it
    and, when there is none, why (the engine's own reason where it has one)."""
    discarding = DuelPhase(state.phase) in (DuelPhase.PERSIAN_DISCARD, DuelPhase.GREEK_DISCARD)
    building = "attack" if side == 1 else "defence"
    play = []
    for card in hand:
        kind = card["kind"]
        if discarding:
            candidates = [DUEL_DISCARD_BASE + kind] + ([PLAY_DISCARD_CARD] if kind == DISCARD_KIND else [])
        elif kind >= NUM_ADD_KINDS:
            play.append({"actions": [], "why": f"{game.kinds[side][kind].label} is played only in a "
                                              "discard phase"})
            continue
        elif card.get("added"):
            play.append({"actions": [], "why": f"this card is already in your {building}"})
            continue
        else:
            candidates = [add_action(kind)]
        actions = [a for a in candidates if mask[a]]
        why = None if actions else game.illegal_reason(state, candidates[0]) or "it cannot be played now"
        play.append({"actions": actions, "why": why})
    return play


def fight_odds(game: Any, state: Any, mask: np.ndarray) -> list[dict[str, Any]]:
    """The exact odds of each legal fight: beating slot 1 (total >= its white value), sending it to the
    graveyard (>= red), and the same for slot 2, which is fought only when slot 1 was beaten."""
    if state.terminated or state.slot1 < 0:
        return []
    tail = dice_tail_table()
    offset = (tail.shape[1] - 1) // 2
    first = game.persian[state.slot1]
    second = game.persian[state.slot2] if state.slot2 >= 0 else None
    location = 1 if state.marker in LOCATION_DIE_MARKERS else 0

    def chance(dice: int, threshold: int, value: int) -> float:
        need = int(np.clip(threshold - value, -offset, offset))
        return float(tail[dice, need + offset])

    odds = []
    for action in np.flatnonzero(mask):
        if not FIGHT_BASE <= action < GIVE_BASE:
            continue
        value, support = divmod(int(action) - FIGHT_BASE, NUM_SUPPORT + 1)
        value += MIN_VALUE
        dice = min(support + location, MAX_DICE)
        entry = {"action": int(action), "beat1": chance(dice, first.white, value),
                 "kill1": chance(dice, first.red, value), "beat2": None, "kill2": None}
        if second is not None:
            entry["beat2"] = chance(dice, max(first.white, second.white), value)
            entry["kill2"] = chance(dice, max(first.white, second.red), value)
        odds.append(entry)
    return odds


def policy_hint(agent: Any, obs: np.ndarray, mask: np.ndarray, label: Any, top: int = 5) -> dict[str, Any]:
    """What ``agent`` would do here: its action probabilities over the legal actions (the ``top`` most
    probable) where it has them, the search's estimates for the search player, else the action it
    chooses."""
    legal = np.asarray(mask, dtype=bool)
    if isinstance(agent, CoopSearchExpert):
        return search_hint(agent.evaluate(np.array(obs, copy=True), legal.copy()), label)
    probabilities = getattr(agent, "action_probabilities", None)
    if callable(probabilities):
        p = np.asarray(probabilities(np.array(obs, copy=True), legal.copy()), dtype=float)
        ranked = sorted(np.flatnonzero(legal), key=lambda a: (-p[a], a))[:top]
        shown = [{"action": int(a), "label": label(int(a)), "p": float(p[a])} for a in ranked]
        return {"probabilities": shown, "choice": int(ranked[0]) if ranked else None,
                "choice_label": label(int(ranked[0])) if ranked else None}
    choice = int(agent.act(np.array(obs, copy=True), legal.astype(np.int8)))
    return {"probabilities": None, "choice": choice, "choice_label": label(choice)}


def search_hint(estimate: SearchEstimate, label: Any, z: float = 1.96) -> dict[str, Any]:
    """The search's choice and, for each action it searched, its estimated win chance (the action, then
    the heuristic to the end) with the interval of ``z`` standard errors and the rollouts behind it; the
    legal actions it did not search, and why."""
    searched = []
    for entry in estimate.estimates:
        low, high = entry.interval(z)
        searched.append({"action": entry.action, "label": label(entry.action), "win": entry.win_chance,
                         "low": low, "high": high, "rollouts": entry.rollouts, "dropped": entry.dropped})
    skipped = [{"action": a, "label": label(a), "why": "dominated"} for a in estimate.dominated]
    skipped += [{"action": a, "label": label(a), "why": "beyond max_candidates"} for a in estimate.ranked_out]
    return {"probabilities": None, "choice": estimate.action, "choice_label": label(estimate.action),
            "search": {"searched": searched, "not_searched": sorted(skipped, key=lambda e: e["action"]),
                       "default": estimate.default, "z": z}}
