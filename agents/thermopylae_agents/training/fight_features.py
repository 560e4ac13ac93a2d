"""The co-op fight features: the observation plus the exact dice odds of every fight against the line.

The torch features extractor of the co-op PPO recipe (``policy_kwargs.features_extractor: coop_fight``);
the same vector in NumPy is [`thermopylae_agents.policies.fight_odds.coop_fight_features`][]. Saved models
name ``thermopylae_agents.training.CoopFightFeatures`` or
``thermopylae_agents.fight_features.CoopFightFeatures`` in their pickles; both names resolve to this class
([`thermopylae_agents.training`][] and the module ``thermopylae_agents.fight_features``).
"""

from __future__ import annotations

import gymnasium as gym
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from thermopylae_agents.policies.fight_odds import (
    CARD_VALUES,
    NUM_ODDS,
    SLOT_VALUES,
    coop_fight_features,
    dice_tail_table,
    numpy_odds,
)
from thermopylae_agents.training.fight_torch import fight_features
from thermopylae_env.coop.layout import NUM_SUPPORT

__all__ = ["CoopFightFeatures"]


class CoopFightFeatures(BaseFeaturesExtractor):
    """The co-op observation plus the exact odds of every fight against the current line.

    For each card value ``v`` (10..20) and support count ``s`` (0..4), with ``k = s`` dice plus the
    location die on markers 3 and 6, the probabilities that ``S = v + k dice`` reaches slot 1's white
    and red values and, for slot 2 (fought only when slot 1 falls, with the same ``S``), ``max(white1,
    white2)`` and ``max(white1, red2)``: 11 x 5 x 4 = 220 numbers, all read off the observation.

    Why: these odds are what decides which card to fight with, and an MLP learns the threshold arithmetic
    of dice sums only slowly; given them, imitation of the heuristic agrees far more often.
    ``numpy_features`` computes the same vector without torch (fast single-game inference).

    How: the 55 odds of one threshold are one row of
    [`fight_odds_table`][thermopylae_agents.policies.fight_odds.fight_odds_table] (a constant), so a batch
    costs four row lookups per observation instead of 220 gathers with index tensors (the numbers are the
    same, bit for bit). The buffers ``tail``, ``values`` and ``supports`` of the first version are kept so
    that saved models load unchanged.
    """

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        size = int(observation_space.shape[0])
        super().__init__(observation_space, features_dim=size + NUM_ODDS * 4)
        self.register_buffer("tail", th.as_tensor(dice_tail_table()))
        self.register_buffer("values", th.as_tensor(CARD_VALUES))
        self.register_buffer("supports", th.arange(NUM_SUPPORT + 1))
        # Not saved (persistent=False): rebuilt here, so models saved before it existed still load.
        self.register_buffer("odds", th.as_tensor(numpy_odds()), persistent=False)
        self.register_buffer("slot_values", th.as_tensor(SLOT_VALUES), persistent=False)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return fight_features(observations.float(), self.odds, self.slot_values)

    #: The same features for one observation (115,) or a batch (B, 115), in NumPy: the function itself,
    #: [`coop_fight_features`][thermopylae_agents.policies.fight_odds.coop_fight_features], by which the
    #: policies' NumPy copies recognise this extractor without importing the training code
    #: ([`thermopylae_agents.policies.frozen_policy.numpy_features`][]).
    numpy_features = staticmethod(coop_fight_features)
