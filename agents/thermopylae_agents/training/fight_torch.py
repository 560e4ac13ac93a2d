"""The co-op fight features in torch, without Stable-Baselines3: the observation plus the exact dice odds
of every fight against the current line (220 numbers; see
[`CoopFightFeatures`][thermopylae_agents.training.fight_features.CoopFightFeatures] for what they are).

[`fight_features`][thermopylae_agents.training.fight_torch.fight_features] is the one computation: the
SB3 features extractor and the single-file PPO's network both call it, so the two read the same
features bit for bit.
"""

from __future__ import annotations

import torch
from torch import nn

from thermopylae_agents.policies.fight_odds import (
    MARKER_3,
    MARKER_6,
    MAX_THRESHOLD,
    MIN_THRESHOLD,
    NUM_ODDS,
    SCALE,
    SLOT1,
    SLOT2,
    SLOT_VALUES,
    fight_rows,
    numpy_odds,
)
from thermopylae_env.coop.state import MAX_DICE

__all__ = ["FightFeatures", "fight_features"]


def fight_features(obs: torch.Tensor, odds: torch.Tensor, slot_values: torch.Tensor) -> torch.Tensor:
    """``obs`` (B, 115) float with the odds of every fight appended: (B, 115 + 220). ``odds`` is
    ``numpy_odds()`` and ``slot_values`` ``SLOT_VALUES`` as tensors on ``obs``'s device."""
    location = (obs[:, MARKER_3] + obs[:, MARKER_6]).round().long().clamp(0, MAX_DICE)
    slots = (obs.index_select(1, slot_values) * SCALE).round().clamp(MIN_THRESHOLD, MAX_THRESHOLD)
    rows = fight_rows(location, *slots.long().unbind(1), lib=torch)  # (B, 4)
    table = nn.functional.embedding(rows, odds)  # (B, 4, 55)
    p1, p2 = obs[:, SLOT1], obs[:, SLOT2]
    present = torch.stack([p1, p1, p1 * p2, p1 * p2], 1)
    fights = (table * present[:, :, None]).transpose(1, 2).reshape(obs.shape[0], -1)  # (B, 55 * 4)
    return torch.cat([obs, fights], 1)


class FightFeatures(nn.Module):
    """[`fight_features`][thermopylae_agents.training.fight_torch.fight_features] as a module with its
    constant tables (not saved in a state dict: they are rebuilt here)."""

    def __init__(self, obs_size: int) -> None:
        super().__init__()
        self.features_dim = obs_size + NUM_ODDS * 4
        self.register_buffer("odds", torch.as_tensor(numpy_odds()), persistent=False)
        self.register_buffer("slot_values", torch.as_tensor(SLOT_VALUES), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return fight_features(obs, self.odds, self.slot_values)
