"""A frozen NumPy copy of a (Maskable)PPO actor: the ``fast:`` agent of evaluation and the self-play
snapshots. It lives outside [`thermopylae_agents.training`][] so that evaluation needs no training code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from thermopylae_agents.policies.fight_odds import coop_fight_features

__all__ = ["FrozenPolicy", "mlp_forward", "numpy_features"]


class FrozenPolicy:
    """A frozen NumPy copy of a (Maskable)PPO actor: a self-play snapshot, or a fast evaluation player.

    Copies the features (flat observation, or
    [`CoopFightFeatures`][thermopylae_agents.training.fight_features.CoopFightFeatures]),
    the actor MLP and the action head (``mlp_extractor.policy_net`` + ``action_net``), so that later PPO
    updates of the live model leave the snapshot as it was, and one observation costs a few small matrix
    products instead of an SB3 ``predict``. ``act`` plays the most likely legal action
    (``deterministic=True``: what [`thermopylae_agents.policies.sb3_agent.SB3Agent`][] plays, checked by
    the tests) or samples the masked softmax with ``rng`` (an env's ``np_random``); ``act_batch`` plays the
    greedy actions of many rows in one call.
    """

    def __init__(self, model: Any, name: str = "snapshot", deterministic: bool = True) -> None:
        import torch as th  # extra: train

        self.name = name
        self.deterministic = deterministic
        extractor = model.policy.pi_features_extractor
        kind = numpy_features(extractor)
        if kind is None:
            raise TypeError(f"FrozenPolicy cannot copy a {type(extractor).__name__} features extractor")
        self.features: Callable[[np.ndarray], np.ndarray] | None = kind[1]
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
        return mlp_forward(x, self.layers)

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator | None = None
    ) -> int:
        legal = np.asarray(action_mask, dtype=bool)
        logits = np.where(legal, self.logits(observation), -np.inf)
        if self.deterministic or rng is None:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        return int(rng.choice(len(p), p=p / p.sum()))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The most likely legal action of every row (``observations`` ``(k, obs)``, ``masks`` bool
        ``(k, actions)``, each row with a legal action): the batched player of the native duel engine
        ([`thermopylae_env.duel.vector.BatchOpponent`][]), always greedy, as ``act`` with
        ``deterministic=True``. Returns int64 ``(k,)``."""
        legal = np.asarray(masks, dtype=bool)
        obs = np.asarray(observations, dtype=np.float32)
        if obs.ndim != 2 or legal.ndim != 2 or len(obs) != len(legal):
            raise ValueError(
                f"act_batch takes observations (k, n) and masks (k, actions), got {obs.shape}, {legal.shape}"
            )
        if len(obs) == 0:
            return np.zeros(0, dtype=np.int64)
        if not legal.any(axis=1).all():
            raise ValueError("act_batch: a mask row has no legal action")
        logits = np.where(legal, self.logits(obs), -np.inf)
        return np.argmax(logits, axis=1).astype(np.int64)

    def __repr__(self) -> str:
        return f"FrozenPolicy({self.name!r})"


def numpy_features(extractor: Any) -> tuple[str, Callable[[np.ndarray], np.ndarray] | None] | None:
    """The features that an SB3 features extractor computes, as a policy file names them, with their NumPy
    twin: ``("flat", None)`` for SB3's ``FlattenExtractor``, ``("coop_fight", coop_fight_features)`` for an
    extractor whose ``numpy_features`` is
    [`coop_fight_features`][thermopylae_agents.policies.fight_odds.coop_fight_features]
    ([`CoopFightFeatures`][thermopylae_agents.training.fight_features.CoopFightFeatures]); ``None`` for any
    other extractor.

    The extractor is recognised by the NumPy function it names, not by its class: the class belongs to the
    training layer, above this one, and a policy is copied or exported wherever it was trained."""
    from stable_baselines3.common.torch_layers import FlattenExtractor  # extra: train

    if getattr(type(extractor), "numpy_features", None) is coop_fight_features:
        return "coop_fight", coop_fight_features
    if isinstance(extractor, FlattenExtractor):
        return "flat", None
    return None


def mlp_forward(x: np.ndarray, layers: list[tuple[str, Any]]) -> np.ndarray:
    """The forward pass of an MLP copied as ``(kind, params)`` layers: ``("linear", (weight, bias))`` with
    the weight laid out ``(in, out)``, ``("tanh", None)`` or ``("relu", None)``; ``x`` is one observation
    or a batch. Shared by every NumPy copy of a policy (frozen snapshots, pickle-free weights)."""
    for kind, params in layers:
        if kind == "linear":
            x = x @ params[0] + params[1]
        elif kind == "tanh":
            x = np.tanh(x)
        else:
            x = np.maximum(x, 0.0)
    return x
