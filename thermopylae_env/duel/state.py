"""The duel's state and its chance: [`DuelState`][thermopylae_env.duel.state.DuelState], the
[`Phase`][thermopylae_env.duel.state.Phase] of a decision, and the only two places randomness is drawn,
[`shuffle_decks`][thermopylae_env.duel.state.shuffle_decks] and
[`pick_random_discards`][thermopylae_env.duel.state.pick_random_discards].

The rules that change a state are in [`thermopylae_env.duel.rules`][] (as the co-op game's state is in
[`thermopylae_env.coop.state`][]), so that a reader of states (a tree of the game, a vector engine's
reference state) needs no engine.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from thermopylae_env.duel.layout import DECK_SIZE, PERSIAN, START_TOKENS

__all__ = ["Phase", "DuelState", "shuffle_decks", "pick_random_discards"]


class Phase(enum.IntEnum):
    """The decision pending: whose discard phase, the Persian's attack or the Greek's defence."""

    PERSIAN_DISCARD = 0
    GREEK_DISCARD = 1
    ATTACK = 2
    DEFENCE = 3


# Plain ints on the hot path (comparisons of IntEnum members go through the enum machinery).
_P_DISC = 0
_G_DISC = 1
_ATTACK = 2
_DEFENCE = 3

@dataclass(eq=False)
class DuelState:
    """Everything that changes during a duel. Card locations: deck, hand, table, discard pile.

    ``decks[p]`` is the full shuffled order of player ``p``'s 52 card ids; the cards at positions
    ``deck_pos[p]:`` are still in the deck (the tuple itself never changes, so copies share it).
    ``hands[p]`` lists the card ids in hand and ``hand_counts[p]`` their count per kind; ``build`` counts per
    kind the cards of the acting player added so far to the attack/defence being built (they stay in the
    hand until committed); ``table`` holds the committed Persian attack during the Greek's defence.
    """

    decks: tuple[tuple[int, ...], tuple[int, ...]]
    deck_pos: list[int]
    hands: list[list[int]]
    hand_counts: list[list[int]]
    discards: list[list[int]]
    discard_counts: list[list[int]]
    build: list[int]
    table: list[int]
    table_counts: list[int]
    attack_total: int = 0
    tokens: int = START_TOKENS
    turn: int = 0
    phase: int = _P_DISC
    current_player: int = PERSIAN
    terminated: bool = False
    winner: int = -1  # GREEK, PERSIAN, or -1 while the game goes on
    reason: str | None = None  # None while the game goes on, then "persian_deck_empty" or "no_tokens"
    actions_taken: int = 0  # micro-actions applied by step (automatic resolutions not counted)

    def copy(self) -> DuelState:
        """An independent copy (the immutable deck orders are shared)."""
        return DuelState(
            self.decks,
            self.deck_pos[:],
            [self.hands[0][:], self.hands[1][:]],
            [self.hand_counts[0][:], self.hand_counts[1][:]],
            [self.discards[0][:], self.discards[1][:]],
            [self.discard_counts[0][:], self.discard_counts[1][:]],
            self.build[:],
            self.table[:],
            self.table_counts[:],
            self.attack_total,
            self.tokens,
            self.turn,
            self.phase,
            self.current_player,
            self.terminated,
            self.winner,
            self.reason,
            self.actions_taken,
        )

    def deck_size(self, player: int) -> int:
        """Cards left in ``player``'s deck."""
        return len(self.decks[player]) - self.deck_pos[player]

    def hand_size(self, player: int) -> int:
        """Cards in ``player``'s hand (cards being added to an attack/defence included)."""
        return len(self.hands[player])

    @property
    def phase_enum(self) -> Phase:
        """The pending phase as a [`Phase`][thermopylae_env.duel.state.Phase] member."""
        return Phase(self.phase)


# ----------------------------------------------------------------------------------------------------------
# Chance: the only two places randomness is drawn


def shuffle_decks(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shuffled orders of the Greek (ids 0..51) and the Persian (ids 52..103) decks."""
    greek = tuple(rng.permutation(DECK_SIZE).tolist())
    persian = tuple((rng.permutation(DECK_SIZE) + DECK_SIZE).tolist())
    return greek, persian


def pick_random_discards(rng: np.random.Generator, hand_size: int) -> list[int]:
    """Positions in a hand of ``hand_size`` cards hit by a discard card: 2 at random, all if fewer."""
    if hand_size <= 2:
        return list(range(hand_size))
    return [int(i) for i in rng.choice(hand_size, size=2, replace=False)]
