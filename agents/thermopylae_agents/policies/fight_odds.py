"""The co-op fight odds in NumPy: the exact dice odds of every fight against the line, read off the
observation ([`coop_fight_features`][thermopylae_agents.policies.fight_odds.coop_fight_features]), without
torch.

[`thermopylae_agents.training.fight_features.CoopFightFeatures`][] (the torch features extractor of the
co-op PPO recipe) computes the same vector from these tables; the pickle-free policies
([`thermopylae_agents.policies.safe_policy`][], [`thermopylae_agents.policies.frozen_policy`][]) use this
module, so that playing them imports neither torch nor SB3.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from thermopylae_env.coop.layout import MIN_VALUE, NUM_SUPPORT, NUM_VALUES, OBS, VALUE_SCALE
from thermopylae_env.coop.state import LOCATION_DIE_MARKERS, MAX_DICE

__all__ = [
    "CARD_VALUES",
    "MARKER_3",
    "MARKER_6",
    "MAX_THRESHOLD",
    "MIN_THRESHOLD",
    "NUM_ODDS",
    "SCALE",
    "SLOT1",
    "SLOT2",
    "SLOT_VALUES",
    "coop_fight_features",
    "dice_tail_table",
    "fight_odds_table",
    "fight_rows",
    "numpy_odds",
]

# Observation entries the features read: a slot is (present, white/30, red/30, bonus); the marker is
# one-hot from marker 1, and markers 3 and 6 carry the location die.
SLOT1, SLOT2 = OBS["slot1"].offset, OBS["slot2"].offset
MARKER_3, MARKER_6 = (OBS["marker"].offset + marker - 1 for marker in LOCATION_DIE_MARKERS)
CARD_VALUES = np.arange(MIN_VALUE, MIN_VALUE + NUM_VALUES, dtype=np.float32)
SCALE = int(VALUE_SCALE)
_MAX_DICE = MAX_DICE
_NUM_SUPPORT = NUM_SUPPORT
_TAIL_OFFSET = 30


def dice_tail_table(max_dice: int = _MAX_DICE, offset: int = _TAIL_OFFSET) -> np.ndarray:
    """``table[k, d + offset]`` = P(sum of ``k`` six-sided dice >= ``d``), for ``-offset <= d <= offset``."""
    pmf = [np.array([1.0])]
    for _ in range(max_dice):
        pmf.append(np.convolve(pmf[-1], np.full(6, 1.0 / 6.0)))
    table = np.zeros((max_dice + 1, 2 * offset + 1), np.float64)
    for k, p in enumerate(pmf):
        sums = np.arange(len(p)) + k  # p[j] = P(sum == j + k)
        for index, d in enumerate(range(-offset, offset + 1)):
            table[k, index] = p[sums >= d].sum()
    return table.astype(np.float32)


# Every fight feature is ``P(v + min(s + location, 5) dice >= t)`` for a threshold ``t``; thresholds below
# -30 or above 60 give the same odds as these ends (``need`` is clipped to the tail table), so the odds of
# all thresholds in between, per location, make a small table that one lookup per threshold reads.
MIN_THRESHOLD, MAX_THRESHOLD = -_TAIL_OFFSET, 2 * _TAIL_OFFSET
_NUM_THRESHOLDS = MAX_THRESHOLD - MIN_THRESHOLD + 1
NUM_ODDS = len(CARD_VALUES) * (_NUM_SUPPORT + 1)  # per threshold: value-major, support-minor
SLOT_VALUES = [SLOT1 + 1, SLOT1 + 2, SLOT2 + 1, SLOT2 + 2]  # white1, red1, white2, red2 (/30)


def fight_odds_table() -> np.ndarray:
    """``table[location * 91 + t + 30, (v - 10) * 5 + s]`` = P(``v`` + ``min(s + location, 5)`` dice
    >= ``t``) for locations 0..5 (dice from the marker), thresholds ``-30 <= t <= 60``, card values
    ``v`` 10..20 and support counts ``s`` 0..4: float32 (546, 55), entries of
    [`dice_tail_table`][thermopylae_agents.policies.fight_odds.dice_tail_table]."""
    tail = dice_tail_table()
    locations = np.arange(_MAX_DICE + 1)
    dice = np.minimum(np.arange(_NUM_SUPPORT + 1)[None, :] + locations[:, None], _MAX_DICE)  # (L, S)
    thresholds = np.arange(MIN_THRESHOLD, MAX_THRESHOLD + 1)
    need = np.clip(thresholds[:, None] - CARD_VALUES[None, :] + _TAIL_OFFSET, 0, 2 * _TAIL_OFFSET)
    table = tail[dice[:, None, None, :], need.astype(np.int64)[None, :, :, None]]  # (L, T, V, S)
    return np.ascontiguousarray(table.reshape(len(locations) * _NUM_THRESHOLDS, NUM_ODDS))


def fight_rows(location: Any, w1: Any, r1: Any, w2: Any, r2: Any, lib: Any) -> Any:
    """Rows of [`fight_odds_table`][thermopylae_agents.policies.fight_odds.fight_odds_table] for the four
    thresholds of each observation, (B, 4)."""
    thresholds = lib.stack([w1, r1, lib.maximum(w1, w2), lib.maximum(w1, r2)], 1)
    return location[:, None] * _NUM_THRESHOLDS + thresholds - MIN_THRESHOLD



def coop_fight_features(observation: np.ndarray) -> np.ndarray:
    """The co-op observation plus its fight odds for one observation (115,) or a batch (B, 115)."""
    obs = np.atleast_2d(np.asarray(observation, dtype=np.float32))
    location = np.clip(np.rint(obs[:, MARKER_3] + obs[:, MARKER_6]), 0, _MAX_DICE).astype(np.int64)
    slots = np.clip(np.rint(obs[:, SLOT_VALUES] * SCALE), MIN_THRESHOLD, MAX_THRESHOLD)
    rows = fight_rows(location, *slots.astype(np.int64).T, lib=np)
    odds = numpy_odds()[rows]  # (B, 4, 55)
    p1, p2 = obs[:, SLOT1], obs[:, SLOT2]
    present = np.stack([p1, p1, p1 * p2, p1 * p2], 1)
    fights = (odds * present[:, :, None]).transpose(0, 2, 1).reshape(obs.shape[0], -1)
    features = np.concatenate([obs, fights], 1)
    return features[0] if np.ndim(observation) == 1 else features


_ODDS_CACHE: list[np.ndarray] = []


def numpy_odds() -> np.ndarray:
    if not _ODDS_CACHE:
        _ODDS_CACHE.append(fight_odds_table())
    return _ODDS_CACHE[0]
