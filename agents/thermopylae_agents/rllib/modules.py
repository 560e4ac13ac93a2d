"""RLModules (RLlib's current API stack) for the package's games.

* [`MaskedPPOTorchRLModule`][thermopylae_agents.rllib.modules.MaskedPPOTorchRLModule]: RLlib's default PPO
  torch module over the ``"observations"`` part of a dict observation, whose action logits get ``log(mask)``
  added (``-3.4e38`` on illegal actions), so that sampling, greedy play and the PPO loss all see only legal
  actions. The critic reads the same observation without the mask.
* [`DuelHeuristicRLModule`][thermopylae_agents.rllib.modules.DuelHeuristicRLModule]: the duel's hand-written
  player of one side ([`thermopylae_env.duel.opponents`][]) as a module that is never trained: the built-in
  opponent of a learning side, reached through RLlib's policy mapping.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.utils.torch_utils import FLOAT_MIN

from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian

__all__ = ["MaskedPPOTorchRLModule", "DuelHeuristicRLModule"]


def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(mask, batch with OBS = the plain observations)``; the caller's batch is left as it was."""
    obs = batch[Columns.OBS]
    if not isinstance(obs, dict) or "action_mask" not in obs or "observations" not in obs:
        raise ValueError("the masked module needs dict observations {'observations', 'action_mask'}")
    plain = dict(batch)
    plain[Columns.OBS] = obs["observations"]
    return obs["action_mask"], plain


def _masked(outs: dict[str, Any], mask: Any) -> dict[str, Any]:
    outs[Columns.ACTION_DIST_INPUTS] = outs[Columns.ACTION_DIST_INPUTS] + torch.clamp(
        torch.log(mask), min=FLOAT_MIN
    )
    return outs


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """PPO's default MLP actor-critic over ``obs["observations"]``, with ``obs["action_mask"]`` applied to
    the logits (see the module docstring). The observation space must be a ``Dict`` with those two keys.
    """

    def __init__(self, *args: Any, observation_space: gym.Space | None = None, **kwargs: Any) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space.spaces) != {
            "observations",
            "action_mask",
        }:
            raise ValueError(
                "MaskedPPOTorchRLModule needs a Dict observation space {'observations', 'action_mask'}, "
                f"got {observation_space}"
            )
        self.observation_space_with_mask = observation_space
        # The networks are built for the plain observation; the mask only edits the logits.
        super().__init__(*args, observation_space=observation_space["observations"], **kwargs)

    def setup(self) -> None:
        super().setup()
        self.observation_space = self.observation_space_with_mask

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, plain = _split(batch)
        return _masked(super()._forward_inference(plain, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, plain = _split(batch)
        return _masked(super()._forward_exploration(plain, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, plain = _split(batch)
        return _masked(super()._forward_train(plain, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if isinstance(batch[Columns.OBS], dict):
            _, batch = _split(batch)
        return super().compute_values(batch, embeddings)


class DuelHeuristicRLModule(RLModule):
    """The duel's hand-written player of one side, as an RLModule that RLlib never trains.

    ``model_config={"side": "greek"}`` or ``{"side": "persian"}``. It reads the dict observation
    ``{"observations", "action_mask"}`` of [`thermopylae_agents.rllib.envs.DuelMultiAgentEnv`][] and
    returns the heuristic's actions directly (``Columns.ACTIONS``), so RLlib samples nothing for it. Leave
    it out of ``policies_to_train``.
    """

    def setup(self) -> None:
        side = (self.model_config or {}).get("side")
        if side not in ("greek", "persian"):
            raise ValueError(
                f"DuelHeuristicRLModule needs model_config side 'greek' or 'persian', got {side!r}"
            )
        self.side = side
        self.player = HeuristicGreek() if side == "greek" else HeuristicPersian()

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        observations = np.asarray(_numpy(obs["observations"]), dtype=np.float32)
        masks = np.asarray(_numpy(obs["action_mask"])) > 0.5
        actions = [self.player.act(o, m) for o, m in zip(observations, masks, strict=True)]
        return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_inference(batch, **kwargs)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("the duel heuristic is not trainable: leave it out of policies_to_train")


def _numpy(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
