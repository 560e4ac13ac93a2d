"""The duel's action layout and observation as named pieces, the one place their offsets are written.

In the manner of OpenSpiel's observer pieces: each :class:`~thermopylae_env.layout.Piece` (the class
the co-op layout uses too) has a name, an offset, a size and a scale (an observation entry is the raw
count or number divided by its piece's scale, so every entry lies in [0, 1]). The engine
(:mod:`thermopylae_env.duel`), the environments (:mod:`thermopylae_env.duel_env`,
:mod:`thermopylae_env.duel_v0`), the built-in opponents (:mod:`thermopylae_env.opponents`) and the tests
read offsets from here; the docstring tables of the duel environments are checked against these pieces.

Observation (``OBS_SIZE = 56`` float32 values, own = the observing player's side)
----------------------------------------------------------------------------------

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

Actions (``NUM_ACTIONS = 21``, k = card kind of the actor)
-----------------------------------------------------------

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
"""

from __future__ import annotations

import numpy as np

from thermopylae_env.layout import Piece, lay_out

__all__ = [
    "Piece",
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
