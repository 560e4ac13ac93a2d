"""The duel's action layout and observation as named pieces, the one place their offsets are written.

In the manner of OpenSpiel's observer pieces: each [`Piece`][thermopylae_env.layout.Piece] (the class
the co-op layout uses too) has a name, an offset, a size and a scale (an observation entry is the raw
count or number divided by its piece's scale, so every entry lies in [0, 1]). The engine
([`thermopylae_env.duel.rules`][]), the environments ([`thermopylae_env.duel.env`][],
[`thermopylae_env.duel.pettingzoo`][]), the built-in opponents ([`thermopylae_env.duel.opponents`][])
and the tests read offsets from here; the docstring tables of the duel environments are checked against
these pieces. Here too: the sides and card kinds (read from the duel deck lists, as the action names use
them) and the one action codec (``discard_action``, ``add_action``, ``decode_action``, ``encode_action``).

Observation (``OBS_SIZE = 56`` float32 values, own = the observing player's side)
----------------------------------------------------------------------------------

```text
=============== ====== ==== ===== ==========================================================================
piece           offset size scale content
=============== ====== ==== ===== ==========================================================================
phase           0      4    1     pending phase one-hot: Persian discard, Greek discard, attack, defence
                                  (all 0 once the game is over)
to_act          4      1    1     1 if the observing player must act now
is_persian      5      1    1     1 if the observing player is the Persian
hand            6      9    8     own hand, count per kind 0..8 (cards being added included)
build           15     8    8     own cards added so far to the attack/defence being built, per kind 0..7
opp_hand_size   23     1    8     number of cards in the opponent's hand
own_deck        24     1    48    cards left in the own deck
opp_deck        25     1    48    cards left in the opponent's deck
own_discards    26     9    8     own discard pile, count per kind
opp_discards    35     9    8     opponent's discard pile, count per kind
tokens          44     1    10    Greek troop tokens
turn            45     1    49    turn number
table           46     8    8     the Persian attack on the table (defence phase), per Persian kind 0..7
table_total     54     1    800   total of the attack on the table
build_total     55     1    800   total of the own attack/defence being built
=============== ====== ==== ===== ==========================================================================
```

Actions (``NUM_ACTIONS = 21``, k = card kind of the actor)
-----------------------------------------------------------

```text
=================== ====== ==== ==========================================================================
piece               offset size action
=================== ====== ==== ==========================================================================
play_discard_card   0      1    play the discard card (the opponent discards 2 cards at random)
discard             1      9    discard a card of kind k (0..8) unplayed
done_discarding     10     1    end the own discard phase (at most 7 cards held)
add                 11     8    add a card of kind k (0..7) to the attack/defence being built
commit              19     1    commit the attack (needs an Attack card) / the defence (needs force > 0)
decline             20     1    do not attack / do not defend (cards added go back to the hand)
=================== ====== ==== ==========================================================================
```
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from thermopylae_env.actions import as_action_index, as_action_name
from thermopylae_env.cards import DeckError, load_duel_deck
from thermopylae_env.layout import Piece, lay_out

__all__ = [
    "OBSERVATION_PIECES",
    "ACTION_PIECES",
    "OBS_PIECE",
    "ACTION_PIECE",
    "OBS_SIZE",
    "NUM_ACTIONS",
    "OBS_SCALE",
    "COUNT_SCALE",
    "DECK_SCALE",
    "TOKEN_SCALE",
    "TURN_SCALE",
    "TOTAL_SCALE",
    "GREEK",
    "PERSIAN",
    "PLAYER_NAMES",
    "NUM_PLAYERS",
    "DECK_SIZE",
    "NUM_CARDS",
    "START_HAND",
    "HAND_LIMIT",
    "MAX_HAND",
    "START_TOKENS",
    "NUM_KINDS",
    "NUM_FORCE_KINDS",
    "STRATEGY_KINDS",
    "DISCARD_KIND",
    "ATTACK_KIND",
    "KIND_FORCE",
    "MAX_TURNS",
    "MAX_ACTIONS_PER_TURN",
    "MAX_GAME_ACTIONS",
    "PLAY_DISCARD_CARD",
    "DISCARD_BASE",
    "DONE_DISCARDING",
    "ADD_BASE",
    "NUM_ADD_KINDS",
    "COMMIT",
    "DECLINE",
    "OBS_PHASE",
    "OBS_TO_ACT",
    "OBS_IS_PERSIAN",
    "OBS_HAND",
    "OBS_BUILD",
    "OBS_OPP_HAND_SIZE",
    "OBS_OWN_DECK",
    "OBS_OPP_DECK",
    "OBS_OWN_DISCARDS",
    "OBS_OPP_DISCARDS",
    "OBS_TOKENS",
    "OBS_TURN",
    "OBS_TABLE",
    "OBS_TABLE_TOTAL",
    "OBS_BUILD_TOTAL",
    "DuelKind",
    "discard_action",
    "add_action",
    "decode_action",
    "encode_action",
    "card_kind",
    "card_name",
    "card_owner",
    "duel_kinds",
]

COUNT_SCALE = 8.0  # the largest number of cards of one kind (and of a hand)
DECK_SCALE = 48.0  # cards in a deck after the deal
TOKEN_SCALE = 10.0  # Greek tokens at the start
TURN_SCALE = 49.0  # the last turn: the Persian's deck is empty at its draw
TOTAL_SCALE = 800.0  # the largest total: 4 Phalanx x (3 strategy cards + 1)


def _lay_out(spec: tuple[tuple[str, int, float], ...]) -> tuple[Piece, ...]:
    """Pieces laid end to end in the order given, from (name, size, scale)."""
    return lay_out((name, (size,), scale, "") for name, size, scale in spec)


OBSERVATION_PIECES: tuple[Piece, ...] = _lay_out((
    ("phase", 4, 1.0),
    ("to_act", 1, 1.0),
    ("is_persian", 1, 1.0),
    ("hand", 9, COUNT_SCALE),
    ("build", 8, COUNT_SCALE),
    ("opp_hand_size", 1, COUNT_SCALE),
    ("own_deck", 1, DECK_SCALE),
    ("opp_deck", 1, DECK_SCALE),
    ("own_discards", 9, COUNT_SCALE),
    ("opp_discards", 9, COUNT_SCALE),
    ("tokens", 1, TOKEN_SCALE),
    ("turn", 1, TURN_SCALE),
    ("table", 8, COUNT_SCALE),
    ("table_total", 1, TOTAL_SCALE),
    ("build_total", 1, TOTAL_SCALE),
))

ACTION_PIECES: tuple[Piece, ...] = _lay_out((
    ("play_discard_card", 1, 1.0),
    ("discard", 9, 1.0),
    ("done_discarding", 1, 1.0),
    ("add", 8, 1.0),
    ("commit", 1, 1.0),
    ("decline", 1, 1.0),
))

OBS_PIECE: dict[str, Piece] = {p.name: p for p in OBSERVATION_PIECES}
ACTION_PIECE: dict[str, Piece] = {p.name: p for p in ACTION_PIECES}
OBS_SIZE = OBSERVATION_PIECES[-1].stop  # 56
NUM_ACTIONS = ACTION_PIECES[-1].stop  # 21

# observation = raw values x OBS_SCALE (one multiplication for the whole vector)
OBS_SCALE = np.array([1.0 / p.scale for p in OBSERVATION_PIECES for _ in range(p.size)], dtype=np.float32)
OBS_SCALE.flags.writeable = False


# ----------------------------------------------------------------------------------------------------------
# Sides, card kinds and bounds, and the offsets of the pieces by name

GREEK = 0
PERSIAN = 1
PLAYER_NAMES = ("greek", "persian")
NUM_PLAYERS = 2
DECK_SIZE = 52
NUM_CARDS = 2 * DECK_SIZE
START_HAND = 4
HAND_LIMIT = 7
MAX_HAND = HAND_LIMIT + 1  # a hand never holds more than this (7 after the discard phase, plus one draw)
START_TOKENS = 10

NUM_KINDS = 9
NUM_FORCE_KINDS = 5  # kinds 0..4: force 10, 20, 30, 40, 50
STRATEGY_KINDS = (5, 6, 7)
DISCARD_KIND = 8
ATTACK_KIND = 0  # the Persian's kind 0 is the Attack card
KIND_FORCE = (10, 20, 30, 40, 50, 0, 0, 0, 0)

MAX_TURNS = DECK_SIZE - START_HAND + 1  # 49
MAX_ACTIONS_PER_TURN = 2 * (MAX_HAND + 1) + 2 * (HAND_LIMIT + 1)  # 34
MAX_GAME_ACTIONS = (MAX_TURNS - 1) * MAX_ACTIONS_PER_TURN  # 1632

# Offsets of the action layout and the observation, from their one definition in duel_layout.
PLAY_DISCARD_CARD = ACTION_PIECE["play_discard_card"].offset  # 0
DISCARD_BASE = ACTION_PIECE["discard"].offset  # 1
DONE_DISCARDING = ACTION_PIECE["done_discarding"].offset  # 10
ADD_BASE = ACTION_PIECE["add"].offset  # 11
NUM_ADD_KINDS = ACTION_PIECE["add"].size  # 8: the discard card never joins a combat
COMMIT = ACTION_PIECE["commit"].offset  # 19
DECLINE = ACTION_PIECE["decline"].offset  # 20

OBS_PHASE = OBS_PIECE["phase"].slice
OBS_TO_ACT = OBS_PIECE["to_act"].offset
OBS_IS_PERSIAN = OBS_PIECE["is_persian"].offset
OBS_HAND = OBS_PIECE["hand"].slice
OBS_BUILD = OBS_PIECE["build"].slice
OBS_OPP_HAND_SIZE = OBS_PIECE["opp_hand_size"].offset
OBS_OWN_DECK = OBS_PIECE["own_deck"].offset
OBS_OPP_DECK = OBS_PIECE["opp_deck"].offset
OBS_OWN_DISCARDS = OBS_PIECE["own_discards"].slice
OBS_OPP_DISCARDS = OBS_PIECE["opp_discards"].slice
OBS_TOKENS = OBS_PIECE["tokens"].offset
OBS_TURN = OBS_PIECE["turn"].offset
OBS_TABLE = OBS_PIECE["table"].slice
OBS_TABLE_TOTAL = OBS_PIECE["table_total"].offset
OBS_BUILD_TOTAL = OBS_PIECE["build_total"].offset


# ----------------------------------------------------------------------------------------------------------
# The card kinds of each side, read from the duel deck lists (the codec names actions by them)


@dataclass(frozen=True)
class DuelKind:
    """One kind of card of one side: cards that play alike (same force, same effect)."""

    side: int
    index: int
    kind: str  # "attack", "force", "strategy" or "discard"
    force: int
    count: int
    names: tuple[str, ...]

    @property
    def label(self) -> str:
        """Display name: the card names joined by '/', with the force for cards that have one."""
        text = "/".join(self.names)
        return f"{text} ({self.force})" if self.force > 0 else text


@functools.cache
def duel_kinds() -> tuple[tuple[DuelKind, ...], tuple[DuelKind, ...]]:
    """The nine kinds of each side, ``(greek_kinds, persian_kinds)``, read from the duel deck lists."""
    return _build_tables()[0]


@functools.cache
def _build_tables() -> tuple[tuple[tuple[DuelKind, ...], ...], tuple[int, ...], tuple[str, ...]]:
    all_kinds = []
    card_kind: list[int] = []
    card_name: list[str] = []
    for side, side_name in enumerate(PLAYER_NAMES):
        types = load_duel_deck(side_name)
        what = f"{side_name} duel deck"
        members: list[list[tuple[str, int]]] = [[] for _ in range(NUM_KINDS)]  # (name, count)
        kind_of_type: list[str] = [""] * NUM_KINDS
        strategies: list[str] = []
        for t in types:
            if t.kind in ("attack", "force"):
                if t.force not in KIND_FORCE[:NUM_FORCE_KINDS]:
                    raise DeckError(f"{what}: {t.name!r} has force {t.force}; the duel knows forces 10..50")
                index = t.force // 10 - 1
                wanted = "attack" if (side == PERSIAN and index == ATTACK_KIND) else "force"
                if t.kind != wanted:
                    raise DeckError(
                        f"{what}: {t.name!r} is a {t.kind} card of force {t.force}; the engine expects "
                        f"{wanted} cards there (Persian force-10 cards are the Attack cards)"
                    )
            elif t.kind == "strategy":
                if t.force != 0:
                    raise DeckError(f"{what}: strategy card {t.name!r} must have force 0, got {t.force}")
                if t.name not in strategies:
                    strategies.append(t.name)
                if len(strategies) > len(STRATEGY_KINDS):
                    raise DeckError(f"{what}: more than {len(STRATEGY_KINDS)} strategy types")
                index = STRATEGY_KINDS[strategies.index(t.name)]
            else:  # "discard"
                if t.force != 0:
                    raise DeckError(f"{what}: discard card {t.name!r} must have force 0, got {t.force}")
                index = DISCARD_KIND
            kind_of_type[index] = t.kind
            members[index].append((t.name, t.count))
        side_kinds = []
        for index in range(NUM_KINDS):
            if not members[index] or sum(c for _, c in members[index]) == 0:
                raise DeckError(f"{what}: no card of kind {index} (the engine needs all nine kinds)")
            names = tuple(dict.fromkeys(name for name, _ in members[index]))
            count = sum(c for _, c in members[index])
            if count > COUNT_SCALE:
                raise DeckError(f"{what}: kind {index} has {count} cards; at most {int(COUNT_SCALE)}")
            side_kinds.append(DuelKind(side, index, kind_of_type[index], KIND_FORCE[index], count, names))
        # Card ids follow the rows of the CSV file.
        for t in types:
            index = next(k.index for k in side_kinds if t.name in k.names)
            card_kind.extend([index] * t.count)
            card_name.extend([t.name] * t.count)
        all_kinds.append(tuple(side_kinds))
    if len(card_kind) != NUM_CARDS:
        raise DeckError(f"duel decks: expected {NUM_CARDS} cards, got {len(card_kind)}")
    return (all_kinds[0], all_kinds[1]), tuple(card_kind), tuple(card_name)


def card_kind(card: int) -> int:
    """Kind (0..8) of card id ``card``."""
    return _build_tables()[1][card]


def card_name(card: int) -> str:
    """Printed name of card id ``card``."""
    return _build_tables()[2][card]


def card_owner(card: int) -> int:
    """``GREEK`` (ids 0..51) or ``PERSIAN`` (ids 52..103)."""
    return card // DECK_SIZE


# ----------------------------------------------------------------------------------------------------------
# The action codec: action indices from and to readable names


def discard_action(kind: int) -> int:
    """The action that discards a card of ``kind`` (0..8) in a discard phase."""
    if not 0 <= kind < NUM_KINDS:
        raise ValueError(f"kind must be in 0..{NUM_KINDS - 1}, got {kind}")
    return DISCARD_BASE + kind


def add_action(kind: int) -> int:
    """The action that adds a card of ``kind`` (0..7) to the attack or defence being built."""
    if not 0 <= kind < NUM_ADD_KINDS:
        raise ValueError(f"kind must be in 0..{NUM_ADD_KINDS - 1}, got {kind}")
    return ADD_BASE + kind


def _describe(action: int, player: int) -> str:
    kinds = duel_kinds()[player]
    if action == PLAY_DISCARD_CARD:
        return f"play {kinds[DISCARD_KIND].label}"
    if action < DONE_DISCARDING:
        return f"discard {kinds[action - DISCARD_BASE].label}"
    if action == DONE_DISCARDING:
        return "done discarding"
    if action < COMMIT:
        return f"add {kinds[action - ADD_BASE].label} to {'attack' if player == PERSIAN else 'defence'}"
    if action == COMMIT:
        return "commit attack" if player == PERSIAN else "commit defence"
    return "decline attack" if player == PERSIAN else "no defence"


def decode_action(action: int, player: int | None = None) -> str:
    """Readable name of ``action``, e.g. ``"add Immortals (50) to attack"`` for the Persian.

    With ``player=None`` the name covers both sides: the Greek reading, ``" | "``, the Persian reading
    (a single reading where both agree, e.g. ``"done discarding"``).
    """
    action = as_action_index(action, NUM_ACTIONS)
    if player is None:
        greek, persian = _describe(action, GREEK), _describe(action, PERSIAN)
        return greek if greek == persian else f"{greek} | {persian}"
    if player not in (GREEK, PERSIAN):
        raise ValueError(f"player must be {GREEK} (Greek), {PERSIAN} (Persian) or None, got {player!r}")
    return _describe(action, player)


@functools.cache
def _action_names() -> dict[str, int]:
    names: dict[str, int] = {}
    for action in range(NUM_ACTIONS):
        for player in (None, GREEK, PERSIAN):
            names[decode_action(action, player).lower()] = action
    return names


def encode_action(name: str) -> int:
    """Inverse of [`decode_action`][thermopylae_env.duel.layout.decode_action] (any of its readings; case and
    outer spaces ignored). A name that is not a ``str`` raises ``TypeError``, an unknown one
    ``ValueError``."""
    try:
        return _action_names()[as_action_name(name).strip().lower()]
    except KeyError:
        raise ValueError(f"unknown duel action {name!r}") from None
