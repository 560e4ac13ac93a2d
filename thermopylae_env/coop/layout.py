"""The one home of the co-op game's layouts: the flat action space and the observation vector.

Every other module (the reference engine [`thermopylae_env.coop.rules`][], the vector engine and its compiled
kernel, the agents' decoders, the tests) reads its offsets from here. The observation is described as
named pieces in the manner of OpenSpiel's observer pieces: each [`Piece`][thermopylae_env.layout.Piece] has a
``name``, an ``offset`` into the vector, a ``size``, a ``shape`` and a ``scale`` (the stored value is the
quantity divided by ``scale``; one-hot and 0/1 pieces have scale 1). The offsets are not written down: each
piece starts where the previous one ends, so a piece cannot be moved in one place and not another.

Actions ([`NUM_ACTIONS`][thermopylae_env.coop.layout.NUM_ACTIONS] = 72), one block per kind of decision:

    RETREAT        0                           phase MAIN
    FIGHT_BASE     1 + (v-10)*5 + s            fight(v, s), card v (10..20), s (0..4) support cards
    GIVE_BASE      56 + p                      give the offered draw to seat p      phase DRAW_OFFER
    DECLINE        60                          decline the offered draw             phase DRAW_OFFER
    DISCARD_BASE   61 + (v-10)                 discard(v) from the recipient's hand phase DISCARD

The vector engine adds one action of its own, [`NOOP_ACTION`][thermopylae_env.coop.layout.NOOP_ACTION] = 72
(outside the action space): the "no move" given to a game that must not move.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from thermopylae_env.actions import as_action_index, as_action_name
from thermopylae_env.cards import PERSIAN_DECK_SIZE, SPARTAN_VALUES
from thermopylae_env.layout import lay_out

__all__ = [
    "fight_action",
    "give_action",
    "discard_action",
    "decode_action",
    "encode_action",
    "MIN_VALUE",
    "NUM_VALUES",
    "MAX_PLAYERS",
    "NUM_SUPPORT",
    "LOSS_MARKER",
    "GRAVEYARD_WIN",
    "SPARTAN_DECK_SIZE",
    "VALUE_SCALE",
    "ActionBlock",
    "ACTION_BLOCKS",
    "RETREAT",
    "FIGHT_BASE",
    "NUM_FIGHTS",
    "GIVE_BASE",
    "DECLINE",
    "DISCARD_BASE",
    "NUM_ACTIONS",
    "NOOP_ACTION",
    "PIECES",
    "OBS",
    "OBS_SIZE",
]

MIN_VALUE = SPARTAN_VALUES[0]  # Spartan card values are MIN_VALUE .. MIN_VALUE + NUM_VALUES - 1
NUM_VALUES = len(SPARTAN_VALUES)
MAX_PLAYERS = 4
NUM_SUPPORT = 4
LOSS_MARKER = 7
GRAVEYARD_WIN = 12
SPARTAN_DECK_SIZE = 20
VALUE_SCALE = 30.0  # a Persian card's white and red values are stored divided by this (clipped to 1)


@dataclass(frozen=True)
class ActionBlock:
    """A contiguous block of the action space: ``start .. start + size - 1``."""

    name: str
    start: int
    size: int

    @property
    def stop(self) -> int:
        return self.start + self.size


def _action_blocks() -> tuple[ActionBlock, ...]:
    sizes = (("retreat", 1), ("fight", NUM_VALUES * (NUM_SUPPORT + 1)), ("give", MAX_PLAYERS),
             ("decline", 1), ("discard", NUM_VALUES))
    blocks = []
    start = 0
    for name, size in sizes:
        blocks.append(ActionBlock(name, start, size))
        start += size
    return tuple(blocks)


ACTION_BLOCKS = _action_blocks()
_BLOCK = {block.name: block for block in ACTION_BLOCKS}
RETREAT = _BLOCK["retreat"].start
FIGHT_BASE = _BLOCK["fight"].start
NUM_FIGHTS = _BLOCK["fight"].size
GIVE_BASE = _BLOCK["give"].start
DECLINE = _BLOCK["decline"].start
DISCARD_BASE = _BLOCK["discard"].start
NUM_ACTIONS = ACTION_BLOCKS[-1].stop
NOOP_ACTION = NUM_ACTIONS


_SLOT = "a Persian card in the line: present, white / 30, red / 30, bonus (all 0 when the slot is empty)"
_PIECE_SPECS: tuple[tuple[str, tuple[int, ...], float, str], ...] = (
    ("phase", (3,), 1.0, "pending decision one-hot MAIN, DRAW_OFFER, DISCARD (all 0 once the game is over)"),
    ("seat", (MAX_PLAYERS,), 1.0, "acting seat one-hot"),
    ("recipient", (MAX_PLAYERS,), 1.0, "seat that must discard, one-hot (DISCARD phase only)"),
    ("hands", (MAX_PLAYERS, NUM_VALUES), 2.0, "count of value v in seat p's hand, at [p, v - 10]"),
    ("slot1", (4,), VALUE_SCALE, _SLOT),
    ("slot2", (4,), VALUE_SCALE, _SLOT),
    ("marker", (LOSS_MARKER,), 1.0, "marker one-hot 1..7"),
    ("support", (1,), float(NUM_SUPPORT), "support cards left"),
    ("spartan_deck", (1,), float(SPARTAN_DECK_SIZE), "Spartan deck size"),
    ("persian_deck", (1,), float(PERSIAN_DECK_SIZE), "Persian deck size"),
    ("graveyard", (1,), float(GRAVEYARD_WIN), "graveyard size"),
    ("persian_discard", (1,), float(PERSIAN_DECK_SIZE), "Persian discard pile size"),
    ("offers", (1,), 2.0, "draw offers still pending after the current one"),
    ("unseen_spartan", (NUM_VALUES,), 2.0, "Spartan cards still in the deck per value 10..20"),
    ("unseen_persian", (PERSIAN_DECK_SIZE,), 1.0, "Persian deck table row i still in the Persian deck"),
)


PIECES = lay_out(_PIECE_SPECS)
OBS = {piece.name: piece for piece in PIECES}
"""The observation pieces by name, e.g. ``OBS["hands"].slice``."""
OBS_SIZE = PIECES[-1].stop


# ----------------------------------------------------------------------------------------------------------
# The action codec: action indices from and to readable names


def fight_action(value: int, support: int) -> int:
    """The action index of fighting with a Spartan card of ``value`` and ``support`` support cards."""
    if value not in SPARTAN_VALUES:
        raise ValueError(f"a Spartan card value is 10..20, got {value!r}")
    if not 0 <= support <= NUM_SUPPORT:
        raise ValueError(f"support must be 0..{NUM_SUPPORT}, got {support!r}")
    return FIGHT_BASE + (value - MIN_VALUE) * (NUM_SUPPORT + 1) + support


def give_action(seat: int) -> int:
    """The action index of giving the offered draw to ``seat``."""
    if not 0 <= seat < MAX_PLAYERS:
        raise ValueError(f"seat must be 0..{MAX_PLAYERS - 1}, got {seat!r}")
    return GIVE_BASE + seat


def discard_action(value: int) -> int:
    """The action index of discarding a card of ``value`` from the recipient's hand."""
    if value not in SPARTAN_VALUES:
        raise ValueError(f"a Spartan card value is 10..20, got {value!r}")
    return DISCARD_BASE + value - MIN_VALUE


def decode_action(action: int) -> str:
    """A readable name of an action index, e.g. ``"fight 17 +2 support"`` (inverse of encode_action).

    ``action`` is an integer (Python or NumPy, not a boolean) in ``0..NUM_ACTIONS-1``: anything else
    raises ``TypeError`` / ``ValueError`` ([`thermopylae_env.actions.as_action_index`][])."""
    a = as_action_index(action, NUM_ACTIONS)
    if a == RETREAT:
        return "retreat"
    if FIGHT_BASE <= a < GIVE_BASE:
        value, support = divmod(a - FIGHT_BASE, NUM_SUPPORT + 1)
        return f"fight {value + MIN_VALUE} +{support} support"
    if GIVE_BASE <= a < DECLINE:
        return f"give draw to seat {a - GIVE_BASE}"
    if a == DECLINE:
        return "decline draw"
    if DISCARD_BASE <= a < NUM_ACTIONS:
        return f"discard {a - DISCARD_BASE + MIN_VALUE}"
    raise AssertionError(f"action {a}: no block of the layout holds it")


_FIGHT_RE = re.compile(r"fight (\d+)(?: \+(\d+) support)?")
_GIVE_RE = re.compile(r"give draw to seat (\d+)")
_DISCARD_RE = re.compile(r"discard (\d+)")


def encode_action(name: str) -> int:
    """The action index of a name written as [`decode_action`][thermopylae_env.coop.layout.decode_action]
    writes it.

    Case and repeated spaces are ignored; ``"fight 17"`` means ``"fight 17 +0 support"``. A name that is
    not a ``str`` raises ``TypeError``, an unknown one ``ValueError``.
    """
    text = " ".join(as_action_name(name).lower().split())
    if text == "retreat":
        return RETREAT
    if text == "decline draw":
        return DECLINE
    match = _FIGHT_RE.fullmatch(text)
    if match:
        return fight_action(int(match.group(1)), int(match.group(2) or 0))
    match = _GIVE_RE.fullmatch(text)
    if match:
        return give_action(int(match.group(1)))
    match = _DISCARD_RE.fullmatch(text)
    if match:
        return discard_action(int(match.group(1)))
    raise ValueError(
        f"unknown action name {name!r}; expected 'retreat', 'fight V +S support', "
        "'give draw to seat P', 'decline draw' or 'discard V'"
    )
