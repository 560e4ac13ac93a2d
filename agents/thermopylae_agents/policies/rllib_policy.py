"""A trained RLlib policy as an agent of the package, stored as plain data (NumPy ``.npz``, no pickle).

[`export_rl_module`][thermopylae_agents.policies.rllib_policy.export_rl_module] copies the actor of a PPO
RLModule (its actor encoder MLP and policy head) into an ``.npz`` file of weight arrays and a JSON
description; [`load_rllib_agent`][thermopylae_agents.policies.rllib_policy.load_rllib_agent] reads it back as
an [`RLlibAgent`][thermopylae_agents.policies.rllib_policy.RLlibAgent], which needs nothing but NumPy. The
file is data: loading it never runs code (``numpy.load(allow_pickle=False)``), unlike an RLlib checkpoint,
which holds pickled Python objects.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FORMAT", "RLlibAgent", "export_rl_module", "load_rllib_agent", "save_policy"]

FORMAT = "thermopylae-rllib-policy"
_VERSION = 1
_ACTIVATIONS = ("tanh", "relu", "silu", "sigmoid", "elu")


def _apply(kind: str, x: np.ndarray, params: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    if kind == "linear":
        return x @ params[0] + params[1]
    if kind == "tanh":
        return np.tanh(x)
    if kind == "relu":
        return np.maximum(x, 0.0)
    if kind == "silu":
        return x / (1.0 + np.exp(-x))
    if kind == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))  # elu


class RLlibAgent:
    """Plays an exported RLlib policy: the legal action with the largest logit (greedy), or a sample of
    the masked softmax when ``act`` is given an ``rng`` (or ``deterministic=False``: from ``self.rng``).

    ``layers`` is the actor as ``(kind, params)`` pairs: ``("linear", (weight[in, out], bias[out]))`` or an
    activation (``"tanh"``, ``"relu"``, ``"silu"``, ``"sigmoid"``, ``"elu"``) with ``None``. ``meta`` holds
    at least ``obs_size`` and ``num_actions``; ``env_id`` and ``module_id`` name what it was trained on.
    """

    def __init__(
        self,
        layers: Sequence[tuple[str, Any]],
        meta: Mapping[str, Any],
        deterministic: bool = True,
        seed: int | None = None,
        name: str | None = None,
    ) -> None:
        self.layers = [(kind, params) for kind, params in layers]
        self.meta = dict(meta)
        self.obs_size = int(self.meta["obs_size"])
        self.num_actions = int(self.meta["num_actions"])
        _check_layers(self.layers, self.obs_size, self.num_actions)
        self.deterministic = bool(deterministic)
        self.rng = np.random.default_rng(seed)
        self.name = name or f"rllib:{self.meta.get('module_id', 'policy')}"

    @property
    def env_id(self) -> str | None:
        return self.meta.get("env_id")

    def check_fits(self, observation_space: Any, action_space: Any) -> None:
        """Raise ``ValueError`` when an environment's spaces differ from the policy's."""
        shape = getattr(observation_space, "shape", None)
        n = getattr(action_space, "n", None)
        if shape != (self.obs_size,) or n != self.num_actions:
            raise ValueError(
                f"policy {self.name} does not fit this environment: it takes observations of shape "
                f"({self.obs_size},) and {self.num_actions} actions, the environment {shape} and {n}"
            )

    def _check(self, observation: Any, action_mask: Any) -> tuple[np.ndarray, np.ndarray]:
        if action_mask is None and isinstance(observation, Mapping):
            action_mask = observation.get("action_mask")
        if isinstance(observation, Mapping):
            observation = observation.get("observations", observation.get("observation"))
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (self.obs_size,):
            raise ValueError(f"the policy expects observations of shape ({self.obs_size},), got {obs.shape}")
        if action_mask is None:
            raise ValueError("the policy needs an action mask (or a dict observation holding one)")
        mask = np.asarray(action_mask).astype(bool)
        if mask.shape != (self.num_actions,):
            raise ValueError(f"the policy has {self.num_actions} actions, the mask has shape {mask.shape}")
        if not mask.any():
            raise ValueError("no legal action: the action mask is all zeros")
        return obs, mask

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The policy head's raw logits for one observation (or a batch, rows of observations)."""
        x = np.asarray(observation, dtype=np.float32)
        for kind, params in self.layers:
            x = _apply(kind, x, params)
        return x

    def action_probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The masked softmax: the policy's probability of each action, zero on illegal ones (float64).
        Used for hints in human play."""
        obs, mask = self._check(observation, action_mask)
        logits = self.logits(obs).astype(np.float64)
        logits = np.where(mask, logits, -np.inf)
        p = np.exp(logits - logits.max())
        return p / p.sum()

    def act(
        self,
        observation: np.ndarray,
        action_mask: np.ndarray | None = None,
        rng: np.random.Generator | None = None,
    ) -> int:
        """A legal action: greedy, or sampled from the masked softmax with ``rng`` (see the class)."""
        obs, mask = self._check(observation, action_mask)
        if rng is None and self.deterministic:
            logits = np.where(mask, self.logits(obs), -np.inf)
            return int(np.argmax(logits))
        p = self.action_probabilities(obs, mask)
        generator = self.rng if rng is None else rng
        return int(generator.choice(self.num_actions, p=p))


def _check_layers(layers: list[tuple[str, Any]], obs_size: int, num_actions: int) -> None:
    width = obs_size
    for index, (kind, params) in enumerate(layers):
        if kind == "linear":
            weight, bias = params
            if weight.ndim != 2 or weight.shape[0] != width or bias.shape != (weight.shape[1],):
                raise ValueError(
                    f"layer {index}: weight {weight.shape} and bias {bias.shape} do not follow a width "
                    f"of {width}"
                )
            width = weight.shape[1]
        elif kind not in _ACTIVATIONS:
            raise ValueError(f"layer {index}: unknown layer kind {kind!r}")
    if width != num_actions:
        raise ValueError(f"the last layer has {width} outputs, the policy {num_actions} actions")


def save_policy(
    path: str | os.PathLike[str], layers: Sequence[tuple[str, Any]], meta: Mapping[str, Any]
) -> Path:
    """Write ``layers`` (see [`RLlibAgent`][thermopylae_agents.policies.rllib_policy.RLlibAgent]) and ``meta``
    to the ``.npz`` file ``path``."""
    meta = dict(meta, format=FORMAT, version=_VERSION, layers=[kind for kind, _ in layers])
    _check_layers(list(layers), int(meta["obs_size"]), int(meta["num_actions"]))
    arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(meta, sort_keys=True))}
    for index, (kind, params) in enumerate(layers):
        if kind == "linear":
            arrays[f"layer{index}_weight"] = np.asarray(params[0], dtype=np.float32)
            arrays[f"layer{index}_bias"] = np.asarray(params[1], dtype=np.float32)
    out = Path(path)
    if out.suffix != ".npz":
        out = out.with_suffix(out.suffix + ".npz") if out.suffix else out.with_suffix(".npz")
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **arrays)
    return out


def load_rllib_agent(
    path: str | os.PathLike[str], deterministic: bool = True, seed: int | None = None
) -> RLlibAgent:
    """Load an exported RLlib policy (``.npz`` written by
    [`export_rl_module`][thermopylae_agents.policies.rllib_policy.export_rl_module]) as an agent.

    Raises ``ValueError`` naming ``path`` when the file is missing, is not such an export, or is damaged.
    The file is read as data only (no pickle), so any file may be opened safely.
    """
    p = Path(path)
    if p.is_dir() and (p / "policy.npz").is_file():
        p = p / "policy.npz"
    if not p.is_file():
        raise ValueError(f"exported RLlib policy not found: {p}")
    try:
        with np.load(p, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except Exception as err:  # noqa: BLE001 - any failure to read means: not an export
        raise ValueError(f"not an exported RLlib policy (.npz): {p}: {type(err).__name__}: {err}") from None
    try:
        meta = json.loads(str(arrays.pop("meta")))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ValueError(f"its format is not {FORMAT!r}")
        if meta.get("version") != _VERSION:
            raise ValueError(f"format version {meta.get('version')!r}, this package reads {_VERSION}")
        layers: list[tuple[str, Any]] = []
        for index, kind in enumerate(meta["layers"]):
            if kind == "linear":
                weight = arrays[f"layer{index}_weight"].astype(np.float32)
                bias = arrays[f"layer{index}_bias"].astype(np.float32)
                layers.append(("linear", (weight, bias)))
            else:
                layers.append((str(kind), None))
        return RLlibAgent(
            layers, meta, deterministic=deterministic, seed=seed, name=f"rllib:{os.fspath(path)}"
        )
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as err:
        raise ValueError(f"not a valid exported RLlib policy: {p}: {err}") from None


def _actor_layers(module: Any) -> list[tuple[str, Any]]:
    """The actor of a PPO RLModule (encoder's actor path, then the pi head) as ``(kind, params)`` pairs."""
    import torch  # extra: train

    encoder = module.encoder
    actor = getattr(encoder, "actor_encoder", None) or getattr(encoder, "encoder", None)
    if actor is None:
        raise TypeError(f"cannot find the actor encoder of {type(module).__name__}")
    names = {
        torch.nn.Tanh: "tanh",
        torch.nn.ReLU: "relu",
        torch.nn.SiLU: "silu",
        torch.nn.Sigmoid: "sigmoid",
        torch.nn.ELU: "elu",
    }
    layers: list[tuple[str, Any]] = []
    for part in (actor, module.pi):
        for layer in part.modules():
            if any(True for _ in layer.children()):
                continue  # a container: its leaves come next
            if isinstance(layer, torch.nn.Linear):
                weight = layer.weight.detach().cpu().numpy().T.astype(np.float32)
                bias = layer.bias.detach().cpu().numpy().astype(np.float32)
                layers.append(("linear", (weight, bias)))
            elif type(layer) in names:
                layers.append((names[type(layer)], None))
            elif isinstance(layer, (torch.nn.Identity, torch.nn.Dropout)):
                continue
            else:
                raise TypeError(f"cannot export a {type(layer).__name__} layer (only MLPs are supported)")
    return layers


def export_rl_module(
    module: Any,
    path: str | os.PathLike[str],
    env_id: str,
    module_id: str = "default_policy",
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Copy the actor of a (masked) PPO RLModule into the ``.npz`` file ``path``; returns the file written.

    The action mask is not part of the copy: the agent applies the mask it is given at each call, as the
    RLModule applies the environment's.
    """
    layers = _actor_layers(module)
    first = next(params for kind, params in layers if kind == "linear")
    meta = {
        "env_id": env_id,
        "module_id": module_id,
        "obs_size": int(first[0].shape[0]),
        "num_actions": int(module.action_space.n),
        **dict(extra or {}),
    }
    return save_policy(path, layers, meta)
