"""The Python side of the compiled co-op search (`thermopylae_agents.players._coop_search_kernel`):
the tables its heuristic and its rules read, and the compact form of a
[`CoopState`][thermopylae_env.coop.state.CoopState]."""

from __future__ import annotations

import numpy as np

from thermopylae_agents.players._coop_search_kernel import (
    MAX_ROWS,
    PARAM_NAMES,
    PART_BITS,
    S_CUR,
    S_GRAVE,
    S_HANDS,
    S_MARKER,
    S_NUNSEEN,
    S_OFFERS,
    S_PDISCARD,
    S_PERSIAN,
    S_PHASE,
    S_PLAYERS,
    S_PPOS,
    S_REC,
    S_ROWS,
    S_SIZE,
    S_SLOT1,
    S_SLOT2,
    S_SPARTAN,
    S_SPOS,
    S_SUPPORT,
    S_TERM,
    S_TURN,
    S_UNSEEN,
    S_WON,
    outcome_table,
)
from thermopylae_agents.players.coop_features import _PMF_TABLE
from thermopylae_env.coop.layout import NUM_VALUES, SPARTAN_DECK_SIZE

__all__ = ["compact_state", "engine_tables", "heuristic_tables"]


def heuristic_tables(heuristic) -> tuple:
    """What the compiled heuristic reads, computed by ``heuristic``'s own code (a
    [`CoopHeuristic`][thermopylae_agents.players.coop_heuristic.CoopHeuristic]): ``(combined, combined in
    fixed point with the value last, quality, line_quality, full_gain, full_rows, full_pair, pmf, clipped rows
    (white, red, bonus), row alias, support cost, spartan weights, params, outcome table)``."""
    p = heuristic.params
    rows = heuristic._rows
    n = len(rows)
    if n > MAX_ROWS:
        raise ValueError(f"the compiled search handles at most {MAX_ROWS} Persian rows, got {n}")
    k = int(round(p["future_dice"]))
    grave, beaten, bonus = heuristic._tables
    combined = np.zeros((2, NUM_VALUES, n, n))
    quality = np.zeros((2, n, n))
    line_quality = np.zeros((2, n, n))
    full_gain = np.zeros((2, NUM_VALUES))
    full_rows = np.zeros((2, n))
    full_pair = np.zeros(2)
    weights = heuristic._spartan_weights
    for flag in (0, 1):
        # The same expressions as CoopHeuristic._future_of, so that the tables are equal to the bit.
        c = p["beaten"] * beaten[:, k] + p["grave"] * grave[:, k]
        if flag:
            c = c + p["bonus"] * bonus[:, k]
        combined[flag] = c
        quality[flag] = np.einsum("v,vij->ij", weights, c)
        for i in range(n):
            for j in range(n):
                line_quality[flag, i, j] = heuristic._line_quality(i, j, bool(flag))
        gain, row_q, pair_q = heuristic._future_of(np.ones(n), bool(flag), ("compiled search", flag))
        heuristic._future_cache.pop(("compiled search", flag), None)
        full_gain[flag] = gain
        full_rows[flag] = row_q
        full_pair[flag] = pair_q
    white = np.array([r[0] for r in rows], dtype=np.int32)
    red = np.array([r[1] for r in rows], dtype=np.int32)
    has_bonus = np.array([r[2] for r in rows], dtype=np.int32)
    alias = np.array([heuristic._row_of[r] for r in rows], dtype=np.int32)
    support_cost = np.array([p["support"] * (m / 20.0) ** p["support_exp"] for m in range(21)])
    params = np.array([p[name] for name in PARAM_NAMES], dtype=np.float64)
    if not np.isfinite(params).all():
        raise ValueError("the compiled search needs finite heuristic parameters")
    pmf = _PMF_TABLE.copy()
    outcomes = outcome_table(pmf, white, red, has_bonus, p["beaten"], p["grave"])
    if np.abs(combined).max() >= 2.0**20:
        raise ValueError("the compiled search needs heuristic gains below 2**20")
    scaled = np.ascontiguousarray(combined.transpose(0, 2, 3, 1)) * 2.0**PART_BITS  # exact: a power of 2
    high = np.floor(scaled)
    low = np.rint((scaled - high) * 2.0**PART_BITS)
    fixed = np.concatenate([high, low], axis=3).astype(np.int64)
    return (combined, fixed, quality, line_quality, full_gain, full_rows, full_pair, pmf, white, red,
            has_bonus, alias, support_cost, weights.astype(np.float64), params, outcomes)


def compact_state(game, state) -> np.ndarray:
    """The compact int32 form of a [`CoopState`][thermopylae_env.coop.state.CoopState] of ``game`` (see the
    module docstring); the dice counter starts at 0."""
    s = np.zeros(S_SIZE, dtype=np.int32)
    spartan = game.spartan
    for seat, hand in enumerate(state.hands):
        for card in hand:
            s[S_HANDS + seat * NUM_VALUES + spartan[card] - 10] += 1
    s[S_SPARTAN:S_SPARTAN + SPARTAN_DECK_SIZE] = [spartan[c] - 10 for c in state.spartan_order]
    n = len(state.persian_order)
    if n > MAX_ROWS:
        raise ValueError(f"the compiled search handles at most {MAX_ROWS} Persian rows, got {n}")
    s[S_PERSIAN:S_PERSIAN + n] = state.persian_order
    for row in state.persian_order[state.persian_pos:]:
        s[S_UNSEEN + row] = 1
    s[S_SPOS] = state.spartan_pos
    s[S_PPOS] = state.persian_pos
    s[S_SLOT1] = state.slot1
    s[S_SLOT2] = state.slot2
    s[S_GRAVE] = len(state.graveyard)
    s[S_PDISCARD] = len(state.persian_discard)
    s[S_MARKER] = state.marker
    s[S_SUPPORT] = state.support
    s[S_CUR] = state.current_player
    s[S_PHASE] = state.phase
    s[S_REC] = state.recipient
    s[S_OFFERS] = state.offers
    s[S_TERM] = state.terminated
    s[S_WON] = state.won
    s[S_TURN] = state.turn
    s[S_PLAYERS] = game.num_players
    s[S_ROWS] = n
    s[S_NUNSEEN] = n - state.persian_pos
    return s


def engine_tables(game) -> tuple:
    """What the rules read of ``game`` (a [`CoopGame`][thermopylae_env.coop.rules.CoopGame]): the Persian
    rows' white and red values and bonus flags, unclipped."""
    white = np.array([card.white for card in game.persian], dtype=np.int32)
    red = np.array([card.red for card in game.persian], dtype=np.int32)
    bonus = np.array([bool(card.bonus) for card in game.persian], dtype=np.int32)
    return white, red, bonus
