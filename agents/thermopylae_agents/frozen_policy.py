"""A frozen NumPy copy of a (Maskable)PPO actor: the ``fast:`` agent of evaluation and the self-play
snapshots. It lives outside :mod:`thermopylae_agents.training` so that evaluation needs no training code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["FrozenPolicy"]


class FrozenPolicy:
    """A frozen NumPy copy of a (Maskable)PPO actor: a self-play snapshot, or a fast evaluation player.

    Copies the features (flat observation, or :class:`~thermopylae_agents.fight_features.CoopFightFeatures`),
    the actor MLP and the action head (``mlp_extractor.policy_net`` + ``action_net``), so that later PPO
    updates of the live model leave the snapshot as it was, and one observation costs a few small matrix
    products instead of an SB3 ``predict``. ``act`` plays the most likely legal action
    (``deterministic=True``: what :class:`thermopylae_agents.sb3_agent.SB3Agent` plays, checked by the
    tests) or samples the masked softmax with ``rng`` (an env's ``np_random``).
    """

    def __init__(self, model: Any, name: str = "snapshot", deterministic: bool = True) -> None:
        import torch as th
        from stable_baselines3.common.torch_layers import FlattenExtractor

        from thermopylae_agents.fight_features import CoopFightFeatures

        self.name = name
        self.deterministic = deterministic
        extractor = model.policy.pi_features_extractor
        if isinstance(extractor, CoopFightFeatures):
            self.features: Callable[[np.ndarray], np.ndarray] | None = CoopFightFeatures.numpy_features
        elif isinstance(extractor, FlattenExtractor):
            self.features = None
        else:
            raise TypeError(f"FrozenPolicy cannot copy a {type(extractor).__name__} features extractor")
        self.layers: list[tuple[str, Any]] = []
        modules = list(model.policy.mlp_extractor.policy_net) + [model.policy.action_net]
        for module in modules:
            if isinstance(module, th.nn.Linear):
                weight = module.weight.detach().cpu().numpy().T.astype(np.float32)
                bias = module.bias.detach().cpu().numpy().astype(np.float32)
                self.layers.append(("linear", (weight, bias)))
            elif isinstance(module, th.nn.Tanh):
                self.layers.append(("tanh", None))
            elif isinstance(module, th.nn.ReLU):
                self.layers.append(("relu", None))
            else:
                raise TypeError(f"FrozenPolicy cannot copy a {type(module).__name__} layer")

    def logits(self, observation: np.ndarray) -> np.ndarray:
        x = np.asarray(observation, dtype=np.float32)
        if self.features is not None:
            x = self.features(x)
        for kind, params in self.layers:
            if kind == "linear":
                x = x @ params[0] + params[1]
            elif kind == "tanh":
                x = np.tanh(x)
            else:
                x = np.maximum(x, 0.0)
        return x

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator | None = None
    ) -> int:
        legal = np.asarray(action_mask, dtype=bool)
        logits = np.where(legal, self.logits(observation), -np.inf)
        if self.deterministic or rng is None:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        return int(rng.choice(len(p), p=p / p.sum()))

    def __repr__(self) -> str:
        return f"FrozenPolicy({self.name!r})"
