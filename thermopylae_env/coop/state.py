"""The co-op game's state and its one source of chance: [`CoopState`][thermopylae_env.coop.state.CoopState],
the [`Phase`][thermopylae_env.coop.state.Phase] of a decision, and
[`roll_dice`][thermopylae_env.coop.state.roll_dice].

The rules that change a state are in [`thermopylae_env.coop.rules`][]; the state is here, apart from
them, so that the observer ([`thermopylae_env.coop.observation`][]) can rebuild one from an observation
without importing the engine that calls it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from thermopylae_env.coop.layout import NUM_SUPPORT

__all__ = ["HAND_LIMIT", "LOCATION_DIE_MARKERS", "MAX_DICE", "END_REASONS", "Phase", "CoopState", "roll_dice"]

HAND_LIMIT = 5
LOCATION_DIE_MARKERS = (3, 6)
MAX_DICE = NUM_SUPPORT + 1

class Phase(enum.IntEnum):
    """The decision pending in a state."""

    MAIN = 0  # the acting seat retreats or fights
    DRAW_OFFER = 1  # the team gives the offered Spartan card to a seat, or declines it
    DISCARD = 2  # the recipient of a draw into a full hand discards one of its 6 cards


_MAIN = 0
_DRAW_OFFER = 1
_DISCARD = 2

# Why the game ended: wins "graveyard" / "refill", losses "marker" / "exhausted".
END_REASONS = ("graveyard", "refill", "marker", "exhausted")


def roll_dice(rng: np.random.Generator, n: int) -> list[int]:
    """Roll ``n`` six-sided dice, as a list of Python ints: the only place the engine rolls dice (tests
    replace it).

    The dice are ``rng.integers(1, 7, size=n)``. For a real ``numpy.random.Generator`` each die is made
    as that call makes it, one die after the other (NumPy fills an array by the same per-value draw), from
    the generator's own 32-bit draw reached through its ``ctypes`` interface, under the generator's lock:
    the very same values and the same generator state afterwards (tested), without the Python-level
    cost of ``integers``. Any other chance source (a test's scripted dice) is asked for the array.
    """
    if type(rng) is _GENERATOR:
        bit_generator = rng.bit_generator
        c_interface = bit_generator.ctypes
        draw, where = c_interface.next_uint32, c_interface.state
        with bit_generator.lock:
            return [_die(draw, where) for _ in range(n)]
    return [int(d) for d in rng.integers(1, 7, size=n)]


def _die(draw: Callable[[object], int], where: object) -> int:
    """One die from ``draw(where)`` (32 random bits per call: the bit generator's ``next_uint32`` and
    its state's address) as ``Generator.integers(1, 7)`` makes it:
    Lemire's multiply-and-shift, with NumPy's rejection of the low products below
    ``(2**32 - 6) % 6 == 4`` that would bias the result."""
    m = draw(where) * 6
    while (m & 0xFFFFFFFF) < 4:
        m = draw(where) * 6
    return (m >> 32) + 1


_GENERATOR = np.random.Generator


@dataclass(eq=False, slots=True)
class CoopState:
    """Everything that changes during a game. Cards are ids: Spartan card ``i`` has value
    ``game.spartan[i]``; Persian card ``j`` is row ``j`` of ``game.persian``.

    Each card is in exactly one place: a Spartan card in the deck (``spartan_order[spartan_pos:]``, top
    first), a hand, or the Spartan discard pile; a Persian card in the deck (``persian_order[persian_pos:]``),
    slot 1, slot 2, the Persian discard pile or the graveyard. The order tuples are never mutated, so
    copies share them.
    """

    spartan_order: tuple[int, ...]
    spartan_pos: int
    persian_order: tuple[int, ...]
    persian_pos: int
    hands: list[list[int]]
    spartan_discard: list[int]
    slot1: int  # Persian card id, -1 when empty
    slot2: int
    persian_discard: list[int]
    graveyard: list[int]
    marker: int = 1
    support: int = NUM_SUPPORT
    current_player: int = 0
    phase: int = _MAIN
    recipient: int = -1  # seat that must discard (DISCARD phase), else -1
    offers: int = 0  # draw offers still pending after the current one
    terminated: bool = False
    won: bool = False
    reason: str | None = None  # one of END_REASONS once the game is over
    turn: int = 0  # completed actions

    def copy(self) -> CoopState:
        """An independent copy (the deck-order tuples are immutable and shared)."""
        return CoopState(
            self.spartan_order,
            self.spartan_pos,
            self.persian_order,
            self.persian_pos,
            [hand[:] for hand in self.hands],
            self.spartan_discard[:],
            self.slot1,
            self.slot2,
            self.persian_discard[:],
            self.graveyard[:],
            self.marker,
            self.support,
            self.current_player,
            self.phase,
            self.recipient,
            self.offers,
            self.terminated,
            self.won,
            self.reason,
            self.turn,
        )

    @property
    def spartan_deck(self) -> tuple[int, ...]:
        """The Spartan card ids still in the deck, top first."""
        return self.spartan_order[self.spartan_pos :]

    @property
    def persian_deck(self) -> tuple[int, ...]:
        """The Persian card ids still in the deck, top first."""
        return self.persian_order[self.persian_pos :]

    @property
    def spartan_deck_size(self) -> int:
        return len(self.spartan_order) - self.spartan_pos

    @property
    def persian_deck_size(self) -> int:
        return len(self.persian_order) - self.persian_pos

    def key(self) -> tuple:
        """A hashable summary of the whole state (equal keys: equal states), for tests and search."""
        return (
            self.spartan_order[self.spartan_pos :],
            self.persian_order[self.persian_pos :],
            tuple(tuple(sorted(hand)) for hand in self.hands),
            tuple(sorted(self.spartan_discard)),
            self.slot1,
            self.slot2,
            tuple(sorted(self.persian_discard)),
            tuple(sorted(self.graveyard)),
            self.marker,
            self.support,
            self.current_player,
            self.phase,
            self.recipient,
            self.offers,
            self.terminated,
            self.won,
            self.reason,
            self.turn,
        )

