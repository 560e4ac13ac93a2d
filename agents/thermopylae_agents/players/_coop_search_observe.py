"""The co-op observation and legal-action mask of the compiled search's compact states, batched (numba): what
a policy network reads when it plays the search's rollouts
([`CoopSearchExpert`][thermopylae_agents.players.coop_search.CoopSearchExpert] with ``rollout_policy``).

`observe_batch` writes, for some rows of an array of compact states
(``_coop_search_tables.compact_state``), exactly the vector of
[`CoopGame.observe`][thermopylae_env.coop.rules.CoopGame.observe] (the pieces of
[`thermopylae_env.coop.layout`][]) and the mask of
[`CoopGame.legal_action_mask`][thermopylae_env.coop.rules.CoopGame.legal_action_mask];
``tests/agents/players/test_coop_search_policy_rollouts.py`` holds them to those on the states of real games.

Why a module of its own: `_coop_search_kernel` would pass the 800 lines a module may have. Its functions call
nothing compiled, so numba's disk cache (which checks only the source file of the function it compiles) cannot
run stale code of another module; the offsets of the compact state they read are copied from
`_coop_search_kernel` below, and the import fails if they ever differ from the kernel's.
"""

from __future__ import annotations

import numba
import numpy as np

from thermopylae_agents.players import _coop_search_kernel as _kernel
from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.layout import (
    DECLINE,
    DISCARD_BASE,
    FIGHT_BASE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MAX_PLAYERS,
    NUM_ACTIONS,
    NUM_SUPPORT,
    NUM_VALUES,
    OBS,
    OBS_SIZE,
    RETREAT,
    SPARTAN_DECK_SIZE,
    VALUE_SCALE,
)

__all__ = ["observe_batch", "slot_codes"]

# The compact state's offsets, as `_coop_search_kernel` defines them (checked below).
MAX_ROWS = 32
S_HANDS = 0
S_SPARTAN = S_HANDS + MAX_PLAYERS * NUM_VALUES
S_PERSIAN = S_SPARTAN + SPARTAN_DECK_SIZE
S_UNSEEN = S_PERSIAN + MAX_ROWS
S_SPOS = S_UNSEEN + MAX_ROWS
S_PPOS = S_SPOS + 1
S_SLOT1 = S_PPOS + 1
S_SLOT2 = S_SLOT1 + 1
S_GRAVE = S_SLOT2 + 1
S_PDISCARD = S_GRAVE + 1
S_MARKER = S_PDISCARD + 1
S_SUPPORT = S_MARKER + 1
S_CUR = S_SUPPORT + 1
S_PHASE = S_CUR + 1
S_REC = S_PHASE + 1
S_OFFERS = S_REC + 1
S_TERM = S_OFFERS + 1
S_PLAYERS = S_TERM + 4
S_ROWS = S_PLAYERS + 1
MAIN, DRAW_OFFER, DISCARD = 0, 1, 2

_COPIED = ("MAX_ROWS", "S_HANDS", "S_SPARTAN", "S_PERSIAN", "S_UNSEEN", "S_SPOS", "S_PPOS", "S_SLOT1",
           "S_SLOT2", "S_GRAVE", "S_PDISCARD", "S_MARKER", "S_SUPPORT", "S_CUR", "S_PHASE", "S_REC",
           "S_OFFERS", "S_TERM", "S_PLAYERS", "S_ROWS", "MAIN", "DRAW_OFFER", "DISCARD")
_DIFFERENT = [name for name in _COPIED if globals()[name] != getattr(_kernel, name)]
if _DIFFERENT:
    raise ImportError(f"_coop_search_observe: the copied offsets {', '.join(_DIFFERENT)} differ from "
                      "_coop_search_kernel's: copy them again")

O_PHASE = OBS["phase"].offset
O_SEAT = OBS["seat"].offset
O_RECIPIENT = OBS["recipient"].offset
O_HANDS = OBS["hands"].offset
O_SLOT1 = OBS["slot1"].offset
O_SLOT2 = OBS["slot2"].offset
O_MARKER = OBS["marker"].offset
O_SUPPORT = OBS["support"].offset
O_SPARTAN_DECK = OBS["spartan_deck"].offset
O_PERSIAN_DECK = OBS["persian_deck"].offset
O_GRAVEYARD = OBS["graveyard"].offset
O_PERSIAN_DISCARD = OBS["persian_discard"].offset
O_OFFERS = OBS["offers"].offset
O_UNSEEN_SPARTAN = OBS["unseen_spartan"].offset
O_UNSEEN_PERSIAN = OBS["unseen_persian"].offset
SUPPORT_SCALE = float(OBS["support"].scale)
OFFERS_SCALE = float(OBS["offers"].scale)


def slot_codes(game) -> np.ndarray:
    """Per Persian row of ``game`` (a [`CoopGame`][thermopylae_env.coop.rules.CoopGame]) the three values
    its line slot shows in the observation: white and red divided by ``VALUE_SCALE`` (clipped to 1, rounded
    to float32 as the observation stores them) and the bonus flag."""
    codes = np.zeros((len(game.persian), 3))
    for row, card in enumerate(game.persian):
        white = np.float32(min(1.0, card.white / VALUE_SCALE))
        codes[row] = (white, np.float32(min(1.0, card.red / VALUE_SCALE)), 1.0 if card.bonus else 0.0)
    return codes


@numba.njit(cache=True, inline="always")
def _slot(s, slot, codes, obs, k, offset) -> None:
    row = s[slot]
    if row >= 0:
        obs[k, offset] = 1.0
        for i in range(3):
            obs[k, offset + 1 + i] = codes[row, i]


@numba.njit(cache=True)
def _observe(s, codes, obs, k) -> None:
    """``CoopGame.observe`` of the compact state ``s`` into ``obs[k]``."""
    for i in range(OBS_SIZE):
        obs[k, i] = 0.0
    if not s[S_TERM]:
        obs[k, O_PHASE + s[S_PHASE]] = 1.0
        if s[S_PHASE] == DISCARD:
            obs[k, O_RECIPIENT + s[S_REC]] = 1.0
    obs[k, O_SEAT + s[S_CUR]] = 1.0
    for c in range(MAX_PLAYERS * NUM_VALUES):
        obs[k, O_HANDS + c] = 0.5 * s[S_HANDS + c]
    _slot(s, S_SLOT1, codes, obs, k, O_SLOT1)
    _slot(s, S_SLOT2, codes, obs, k, O_SLOT2)
    obs[k, O_MARKER + min(s[S_MARKER], LOSS_MARKER) - 1] = 1.0
    obs[k, O_SUPPORT] = s[S_SUPPORT] / SUPPORT_SCALE
    obs[k, O_SPARTAN_DECK] = (SPARTAN_DECK_SIZE - s[S_SPOS]) / SPARTAN_DECK_SIZE
    obs[k, O_PERSIAN_DECK] = (s[S_ROWS] - s[S_PPOS]) / PERSIAN_DECK_SIZE
    obs[k, O_GRAVEYARD] = s[S_GRAVE] / GRAVEYARD_WIN
    obs[k, O_PERSIAN_DISCARD] = s[S_PDISCARD] / PERSIAN_DECK_SIZE
    obs[k, O_OFFERS] = s[S_OFFERS] / OFFERS_SCALE
    for i in range(s[S_SPOS], SPARTAN_DECK_SIZE):
        obs[k, O_UNSEEN_SPARTAN + s[S_SPARTAN + i]] += 0.5
    for row in range(s[S_ROWS]):
        if s[S_UNSEEN + row]:
            obs[k, O_UNSEEN_PERSIAN + row] = 1.0


@numba.njit(cache=True)
def _legal(s, mask, k) -> None:
    """``CoopGame.legal_action_mask`` of the compact state ``s`` into ``mask[k]``."""
    for a in range(NUM_ACTIONS):
        mask[k, a] = False
    if s[S_TERM]:
        return
    phase = s[S_PHASE]
    if phase == MAIN:
        mask[k, RETREAT] = True
        hand = S_HANDS + s[S_CUR] * NUM_VALUES
        for v in range(NUM_VALUES):
            if s[hand + v]:
                base = FIGHT_BASE + v * (NUM_SUPPORT + 1)
                for support in range(s[S_SUPPORT] + 1):
                    mask[k, base + support] = True
    elif phase == DRAW_OFFER:
        for seat in range(s[S_PLAYERS]):
            mask[k, GIVE_BASE + seat] = True
        mask[k, DECLINE] = True
    else:
        hand = S_HANDS + s[S_REC] * NUM_VALUES
        for v in range(NUM_VALUES):
            if s[hand + v]:
                mask[k, DISCARD_BASE + v] = True


@numba.njit(cache=True)
def observe_batch(states, rows, codes, obs, mask) -> None:
    """For each ``k``, the observation (float32, ``OBS_SIZE``) and the legal-action mask (bool,
    ``NUM_ACTIONS``) of the compact state ``states[rows[k]]`` into ``obs[k]`` and ``mask[k]`` (``codes``:
    `slot_codes` of the game)."""
    for k in range(rows.shape[0]):
        s = states[rows[k]]
        _observe(s, codes, obs, k)
        _legal(s, mask, k)
