"""Decoding helpers for the co-op game, shared by the hand-written and the search players.

Everything here reads only what the team knows: the flat observation of ``thermopylae/Coop-v0`` (layout in
``docs/coop_spec.md``) is decoded into a [`TeamView`][thermopylae_agents.players.coop_features.TeamView], a
small plain record that the heuristic works on. The module also holds exact dice-sum distributions and cached
fight-outcome statistics: the fight of card value ``v`` with ``k`` dice against the line ``(slot 1, slot 2)``
depends on nothing else, so its expected result is computed once per distinct matchup and reused.

The layout constants and observation offsets come from their one home, [`thermopylae_env.coop.layout`][]
(through [`thermopylae_env.coop`][] for the action constants); the action codec (``fight_action``,
``give_action``, ``discard_action``) is the env's, [`thermopylae_env.coop`][].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from thermopylae_env.coop.layout import (
    FIGHT_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    MAX_PLAYERS,
    NUM_SUPPORT,
    OBS,
    OBS_SIZE,
    VALUE_SCALE,
)
from thermopylae_env.coop.state import LOCATION_DIE_MARKERS, MAX_DICE

__all__ = [
    "VALUES",
    "PHASE_MAIN",
    "PHASE_DRAW_OFFER",
    "PHASE_DISCARD",
    "PHASE_OVER",
    "TeamView",
    "FightStats",
    "decode_observation",
    "fight_of_action",
    "location_dice",
    "dice_sum_pmf",
    "prob_sum_at_least",
    "fight_stats",
    "fight_win_prob",
    "view_from_state",
]

VALUES = tuple(range(10, 21))

PHASE_MAIN, PHASE_DRAW_OFFER, PHASE_DISCARD = 0, 1, 2
PHASE_OVER = -1

# Observation slices, from the layout module.
_PHASE = OBS["phase"].slice
_ACTING = OBS["seat"].slice
_RECIPIENT = OBS["recipient"].slice
_HANDS = OBS["hands"].slice
_SLOT1 = OBS["slot1"].slice
_SLOT2 = OBS["slot2"].slice
_MARKER = OBS["marker"].slice
_SUPPORT = OBS["support"].offset
_SPARTAN_DECK = OBS["spartan_deck"].offset
_PERSIAN_DECK = OBS["persian_deck"].offset
_GRAVEYARD = OBS["graveyard"].offset
_DISCARD_PILE = OBS["persian_discard"].offset
_PENDING = OBS["offers"].offset
_UNSEEN_SPARTAN = OBS["unseen_spartan"].slice
_UNSEEN_PERSIAN = OBS["unseen_persian"].slice


def fight_of_action(action: int) -> tuple[int, int]:
    """``(value, support)`` of a fight action index (1..55)."""
    offset = action - FIGHT_BASE
    return 10 + offset // (NUM_SUPPORT + 1), offset % (NUM_SUPPORT + 1)


def location_dice(marker: int) -> int:
    """The free dice a fight gets at this marker position (one at 3 and at 6)."""
    return 1 if marker in LOCATION_DIE_MARKERS else 0


@dataclass
class TeamView:
    """What the team knows at a decision, decoded from the observation.

    ``hands[p, v - 10]`` counts seat ``p``'s cards of value ``v``; ``slot1``/``slot2`` are
    ``(white, red, bonus)`` or ``None``; ``unseen_spartan[v - 10]`` counts the Spartan cards of value
    ``v`` still in the deck; ``unseen_persian[i]`` is true for deck-table row ``i`` still in the deck.
    ``phase`` is [`PHASE_OVER`][thermopylae_agents.players.coop_features.PHASE_OVER] once the game has ended.
    """

    phase: int
    acting: int
    recipient: int
    hands: np.ndarray
    slot1: tuple[int, int, bool] | None
    slot2: tuple[int, int, bool] | None
    marker: int
    support: int
    spartan_deck: int
    persian_deck: int
    graveyard: int
    discard_pile: int
    pending_offers: int
    unseen_spartan: np.ndarray
    unseen_persian: np.ndarray

    def hand_of(self, seat: int) -> list[int]:
        """The card values of ``seat``'s hand, ascending, one entry per card."""
        return [v for i, v in enumerate(VALUES) for _ in range(int(self.hands[seat, i]))]

    def hand_size(self, seat: int) -> int:
        return int(self.hands[seat].sum())


def _slot(obs: np.ndarray, part: slice) -> tuple[int, int, bool] | None:
    present, white, red, bonus = obs[part]
    if present < 0.5:
        return None
    return int(round(float(white) * VALUE_SCALE)), int(round(float(red) * VALUE_SCALE)), bool(bonus > 0.5)


def _one_hot_index(values: np.ndarray, default: int = -1) -> int:
    if values.max() < 0.5:
        return default
    return int(np.argmax(values))


def decode_observation(obs: np.ndarray) -> TeamView:
    """Decode a ``thermopylae/Coop-v0`` observation (115 floats) into a
    [`TeamView`][thermopylae_agents.players.coop_features.TeamView]."""
    obs = np.asarray(obs, dtype=np.float64)
    if obs.shape != (OBS_SIZE,):
        raise ValueError(f"expected a co-op observation of shape ({OBS_SIZE},), got {obs.shape}")
    phase = _one_hot_index(obs[_PHASE], PHASE_OVER)
    return TeamView(
        phase=phase,
        acting=_one_hot_index(obs[_ACTING], 0),
        recipient=_one_hot_index(obs[_RECIPIENT], -1),
        hands=np.rint(obs[_HANDS] * OBS["hands"].scale).astype(np.int64).reshape(MAX_PLAYERS, len(VALUES)),
        slot1=_slot(obs, _SLOT1),
        slot2=_slot(obs, _SLOT2),
        marker=_one_hot_index(obs[_MARKER], 0) + 1,
        support=int(round(obs[_SUPPORT] * NUM_SUPPORT)),
        spartan_deck=int(round(obs[_SPARTAN_DECK] * OBS["spartan_deck"].scale)),
        persian_deck=int(round(obs[_PERSIAN_DECK] * OBS["persian_deck"].scale)),
        graveyard=int(round(obs[_GRAVEYARD] * GRAVEYARD_WIN)),
        discard_pile=int(round(obs[_DISCARD_PILE] * OBS["persian_discard"].scale)),
        pending_offers=int(round(obs[_PENDING] * OBS["offers"].scale)),
        unseen_spartan=np.rint(obs[_UNSEEN_SPARTAN] * OBS["unseen_spartan"].scale).astype(np.int64),
        unseen_persian=obs[_UNSEEN_PERSIAN] > 0.5,
    )


# ----------------------------------------------------------------------------------------------- dice
def _build_dice_tables(max_dice: int = MAX_DICE + 1) -> tuple[list[np.ndarray], np.ndarray]:
    pmfs = [np.array([1.0])]
    for _ in range(max_dice):
        pmfs.append(np.convolve(pmfs[-1], np.full(6, 1 / 6))[: 6 * len(pmfs)])
    # pmfs[k][j] = P(sum of k dice == j + k); rebase to P(sum == t) on t = 0..6*max_dice.
    size = 6 * max_dice + 2
    table = np.zeros((max_dice + 1, size))
    for k, pmf in enumerate(pmfs):
        table[k, k : k + len(pmf)] = pmf
    return [table[k].copy() for k in range(max_dice + 1)], table


_PMFS, _PMF_TABLE = _build_dice_tables()
# _AT_LEAST[k, t] = P(sum of k dice >= t) for t = 0..size-1 (t <= 0 is certain, t beyond the top is 0).
_AT_LEAST = np.cumsum(_PMF_TABLE[:, ::-1], axis=1)[:, ::-1].copy()


def dice_sum_pmf(k: int) -> np.ndarray:
    """``pmf[t] = P(sum of k six-sided dice == t)`` for ``t = 0..6*(MAX_DICE+1)+1`` (exact)."""
    return _PMFS[k]


def prob_sum_at_least(k: int, target: int) -> float:
    """``P(sum of k dice >= target)``, exact."""
    if target <= 0:
        return 1.0
    if target >= _AT_LEAST.shape[1]:
        return 0.0
    return float(_AT_LEAST[k, target])


@dataclass(frozen=True)
class FightStats:
    """Expected result of one fight (card value ``v`` plus ``k`` dice against the line).

    ``p_beat1``: slot 1 beaten; ``p_grave1``: slot 1 to the graveyard; ``p_beat2``/``p_grave2`` the same
    for slot 2 (which is fought only when slot 1 falls); ``e_beaten``, ``e_grave``, ``e_bonus`` the expected
    numbers of beaten cards, graveyard cards and bonus draws; ``p_both`` both cards beaten.
    ``grave_dist[j]`` is the probability of exactly ``j`` cards going to the graveyard (j = 0, 1, 2).
    """

    p_beat1: float
    p_grave1: float
    p_beat2: float
    p_grave2: float
    p_both: float
    e_beaten: float
    e_grave: float
    e_bonus: float
    grave_dist: tuple[float, float, float]
    beaten_dist: tuple[float, float, float]


@functools.lru_cache(maxsize=65536)
def fight_stats(
    value: int,
    dice: int,
    slot1: tuple[int, int, bool] | None,
    slot2: tuple[int, int, bool] | None,
) -> FightStats:
    """Exact [`FightStats`][thermopylae_agents.players.coop_features.FightStats] of fighting with
    ``value + dice`` against ``slot1`` then ``slot2``."""
    if slot1 is None:
        return FightStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, (1.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    pmf = _PMFS[dice]
    w1, r1, b1 = slot1
    p_beat1 = p_grave1 = p_beat2 = p_grave2 = 0.0
    grave = [0.0, 0.0, 0.0]
    beaten = [0.0, 0.0, 0.0]
    bonus = 0.0
    for t, p in enumerate(pmf):
        if p == 0.0:
            continue
        total = value + t
        if total < w1:
            grave[0] += p
            beaten[0] += p
            continue
        p_beat1 += p
        g = 0
        n = 1
        if b1:
            bonus += p
        if total >= r1:
            p_grave1 += p
            g = 1
        if slot2 is not None:
            w2, r2, b2 = slot2
            if total >= w2:
                p_beat2 += p
                n = 2
                if b2:
                    bonus += p
                if total >= r2:
                    p_grave2 += p
                    g += 1
        grave[g] += p
        beaten[n] += p
    e_grave = grave[1] + 2 * grave[2]
    e_beaten = beaten[1] + 2 * beaten[2]
    # Plain Python floats: the callers do scalar arithmetic, much slower on NumPy scalars.
    return FightStats(
        float(p_beat1), float(p_grave1), float(p_beat2), float(p_grave2), float(beaten[2]), float(e_beaten),
        float(e_grave), float(bonus), (float(grave[0]), float(grave[1]), float(grave[2])),
        (float(beaten[0]), float(beaten[1]), float(beaten[2])),
    )


@functools.lru_cache(maxsize=65536)
def fight_win_prob(
    value: int,
    dice: int,
    slot1: tuple[int, int, bool] | None,
    slot2: tuple[int, int, bool] | None,
    need_grave: int,
    persian_deck: int,
) -> float:
    """Exact chance that the fight wins at once: the ``need_grave``-th graveyard card (slot 2 is then
    not fought), or more beaten cards than the ``persian_deck`` cards left to refill the line."""
    if slot1 is None:
        return 0.0
    pmf = _PMFS[dice]
    w1, r1, _ = slot1
    win = 0.0
    for t, p in enumerate(pmf):
        if p == 0.0:
            continue
        total = value + t
        if total < w1:
            continue
        grave = 1 if total >= r1 else 0
        beaten = 1
        if grave < need_grave and slot2 is not None and total >= slot2[0]:
            beaten = 2
            grave += 1 if total >= slot2[1] else 0
        if grave >= need_grave or beaten > persian_deck:
            win += p
    return float(win)


def view_from_state(game, state) -> TeamView:
    """The [`TeamView`][thermopylae_agents.players.coop_features.TeamView] of an engine state, equal to
    ``decode_observation(game.observe(state))`` but without building the observation (the search player's
    rollouts call this at every decision).

    Only public parts of the state are read (hands, line, counters, which cards are still unseen).
    """
    spartan = game.spartan
    n_values = len(VALUES)
    hands = np.zeros((MAX_PLAYERS, n_values), dtype=np.int64)
    for seat, hand in enumerate(state.hands):
        if hand:
            hands[seat] = np.bincount([spartan[card] - 10 for card in hand], minlength=n_values)
    deck = state.spartan_order[state.spartan_pos :]
    if deck:
        unseen_spartan = np.bincount([spartan[card] - 10 for card in deck], minlength=n_values)
    else:
        unseen_spartan = np.zeros(n_values, dtype=np.int64)
    unseen_persian = np.zeros(len(game.persian), dtype=bool)
    unseen_persian[list(state.persian_order[state.persian_pos :])] = True
    terminated = state.terminated
    return TeamView(
        phase=PHASE_OVER if terminated else int(state.phase),
        acting=int(state.current_player),
        recipient=int(state.recipient) if (not terminated and state.phase == PHASE_DISCARD) else -1,
        hands=hands,
        slot1=_card_of(game, state.slot1),
        slot2=_card_of(game, state.slot2),
        marker=min(int(state.marker), LOSS_MARKER),
        support=int(state.support),
        spartan_deck=len(state.spartan_order) - state.spartan_pos,
        persian_deck=len(state.persian_order) - state.persian_pos,
        graveyard=len(state.graveyard),
        discard_pile=len(state.persian_discard),
        pending_offers=int(state.offers),
        unseen_spartan=unseen_spartan,
        unseen_persian=unseen_persian,
    )


def _card_of(game, card: int) -> tuple[int, int, bool] | None:
    if card < 0:
        return None
    row = game.persian[card]
    # The observation clips values to 30; clip the same way so that both views agree exactly.
    return min(row.white, 30), min(row.red, 30), bool(row.bonus)
