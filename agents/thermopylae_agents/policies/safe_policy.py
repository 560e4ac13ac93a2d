"""Trained policies stored as plain data: NumPy arrays plus a JSON description, loaded without pickle.

An SB3 ``.zip`` is a pickle: loading one can run any code. The shipped policies are therefore also
stored in a form that cannot: for a policy named ``NAME``,

* ``NAME.json`` describes the network: the format and its version, the environment id, the features
  the network reads (``"flat"``: the observation itself; ``"coop_fight"``: the co-op observation plus
  the fight odds of :meth:`thermopylae_agents.players.fight_features.CoopFightFeatures.numpy_features`), the
  observation size, the number of actions, the layers in order (``linear`` with the names of its weight
  and bias arrays, ``tanh``, ``relu``), and the SHA-256 of the array file;
* ``NAME.npz`` holds the float32 arrays, read with ``numpy.load(allow_pickle=False)``.

The network is the actor of a (Maskable)PPO policy: features, the actor MLP
(``mlp_extractor.policy_net``) and the action head (``action_net``); its outputs are the action logits.
:class:`SafePolicy` plays the most likely legal action, the action an SB3 model plays with
``deterministic=True`` (``tests/agents/test_safe_policy.py`` checks this game for game on hundreds of games).

:func:`load_safe_policy` loads a policy by path (either file of the pair) or by the name of a shipped
policy (:func:`shipped_policy_names`); :func:`export_sb3_policy` writes the pair from a loaded SB3 model
(``thermopylae export``, ``thermopylae-export-policy``, which needs the ``train`` extra).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.policies.frozen_policy import mlp_forward

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "FEATURES",
    "ACTIVATIONS",
    "POLICY_DIR",
    "SafePolicy",
    "export_sb3_policy",
    "load_safe_policy",
    "shipped_policy_names",
    "SHIPPED_ENV_IDS",
]

FORMAT = "thermopylae-policy"
FORMAT_VERSION = 1
FEATURES = ("flat", "coop_fight")
ACTIVATIONS = ("tanh", "relu")
POLICY_DIR = Path(__file__).resolve().parent  # the shipped files lie beside the modules of this package

# The environment each shipped SB3 file was trained on (an SB3 zip does not record it).
SHIPPED_ENV_IDS = {
    "coop_maskable_ppo": "thermopylae/Coop-v0",
    "coop_2p_maskable_ppo": "thermopylae/Coop-v0",  # a team of 2 players (num_players=2)
    "coop_3p_maskable_ppo": "thermopylae/Coop-v0",
    "coop_4p_maskable_ppo": "thermopylae/Coop-v0",
    "duel_greek_maskable_ppo": "thermopylae/DuelGreek-v0",
    "duel_persian_maskable_ppo": "thermopylae/DuelPersian-v0",
    "selfplay_greek_maskable_ppo": "thermopylae/DuelGreek-v0",
    "selfplay_persian_maskable_ppo": "thermopylae/DuelPersian-v0",
}

_TOP_KEYS = {"format", "format_version", "env_id", "features", "observation_size", "num_actions",
             "layers", "arrays_sha256", "source"}
_REQUIRED_KEYS = _TOP_KEYS - {"source"}


# --------------------------------------------------------------------------------------------------------
# Playing
# --------------------------------------------------------------------------------------------------------


def _coop_fight_features() -> Callable[[np.ndarray], np.ndarray]:
    from thermopylae_agents.players.fight_odds import coop_fight_features

    return coop_fight_features


class SafePolicy:
    """A policy network loaded from plain arrays: features, linear layers and activations, in NumPy.

    ``act(observation, action_mask, rng=None)`` plays the legal action with the highest logit (what SB3
    plays with ``deterministic=True``); with ``deterministic=False`` and an ``rng`` it samples the masked
    softmax instead. ``action_probabilities`` gives the masked, renormalised distribution (hints).
    Build one with :func:`load_safe_policy`.
    """

    def __init__(
        self,
        description: Mapping[str, Any],
        arrays: Mapping[str, np.ndarray],
        name: str = "policy",
        deterministic: bool = True,
    ) -> None:
        _check_description(description, name)
        self.name = name
        self.deterministic = deterministic
        self.env_id: str = description["env_id"]
        self.features_kind: str = description["features"]
        self.observation_size: int = description["observation_size"]
        self.num_actions: int = description["num_actions"]
        self.description = dict(description)
        self._features = _coop_fight_features() if self.features_kind == "coop_fight" else None
        self.layers: list[tuple[str, tuple[np.ndarray, np.ndarray] | None]] = []
        for layer in description["layers"]:
            if layer["type"] == "linear":
                self.layers.append(("linear", (arrays[layer["weight"]], arrays[layer["bias"]])))
            else:
                self.layers.append((layer["type"], None))

    def _check(self, observation: Any, action_mask: Any) -> tuple[np.ndarray, np.ndarray]:
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (self.observation_size,):
            raise ValueError(
                f"policy {self.name}: observation of shape {obs.shape}, need ({self.observation_size},)"
            )
        mask = np.asarray(action_mask, dtype=bool)
        if mask.shape != (self.num_actions,):
            raise ValueError(
                f"policy {self.name}: action mask of shape {mask.shape}, need ({self.num_actions},)"
            )
        if not mask.any():
            raise ValueError(f"policy {self.name}: no legal action: the action mask is all zeros")
        return obs, mask

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The network's action logits for one observation ``(obs,)`` or a batch ``(B, obs)``."""
        x = np.asarray(observation, dtype=np.float32)
        if self._features is not None:
            x = self._features(x)
        return mlp_forward(x, self.layers)

    def action_probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The softmax over the legal actions (float64, zero on illegal ones)."""
        obs, mask = self._check(observation, action_mask)
        logits = np.where(mask, self.logits(obs).astype(np.float64), -np.inf)
        p = np.exp(logits - logits.max())
        return p / p.sum()

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator | None = None
    ) -> int:
        """The most likely legal action; a sample of the masked softmax when not deterministic and
        ``rng`` is given."""
        obs, mask = self._check(observation, action_mask)
        if self.deterministic or rng is None:
            return int(np.argmax(np.where(mask, self.logits(obs), -np.inf)))
        p = self.action_probabilities(obs, mask)
        return int(rng.choice(len(p), p=p))

    def __repr__(self) -> str:
        return f"SafePolicy({self.name!r}, env_id={self.env_id!r})"


# --------------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------------


def _fail(where: str, problem: str) -> ValueError:
    return ValueError(f"policy description {where}: {problem}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_description(d: Any, where: str) -> None:
    """Raise ``ValueError`` naming the first problem of a policy description (dims, kinds, keys)."""
    if not isinstance(d, Mapping):
        raise _fail(where, f"expected a JSON object, got {type(d).__name__}")
    missing = sorted(_REQUIRED_KEYS - set(d))
    unknown = sorted(set(d) - _TOP_KEYS)
    if missing or unknown:
        raise _fail(where, f"missing keys {missing}, unknown keys {unknown}")
    if d["format"] != FORMAT or d["format_version"] != FORMAT_VERSION:
        raise _fail(where, f"format {d['format']!r} version {d['format_version']!r}, "
                           f"this code reads {FORMAT!r} version {FORMAT_VERSION}")
    if not isinstance(d["env_id"], str) or not d["env_id"]:
        raise _fail(where, "env_id must be a non-empty string")
    if d["features"] not in FEATURES:
        raise _fail(where, f"features must be one of {FEATURES}, not {d['features']!r}")
    for key in ("observation_size", "num_actions"):
        if not _is_int(d[key]) or d[key] < 1:
            raise _fail(where, f"{key} must be a positive integer, not {d[key]!r}")
    layers = d["layers"]
    if not isinstance(layers, list) or not layers:
        raise _fail(where, "layers must be a non-empty list")
    for index, layer in enumerate(layers):
        _check_layer(layer, f"{where} layer {index}")
    if layers[-1]["type"] != "linear" or layers[-1]["out"] != d["num_actions"]:
        raise _fail(where, f"the last layer must be linear with {d['num_actions']} outputs (the logits)")
    if not isinstance(d["arrays_sha256"], str) or len(d["arrays_sha256"]) != 64:
        raise _fail(where, "arrays_sha256 must be a hex SHA-256 digest")


def _check_layer(layer: Any, where: str) -> None:
    if not isinstance(layer, Mapping) or "type" not in layer:
        raise _fail(where, "each layer is an object with a type")
    kind = layer["type"]
    if kind in ACTIVATIONS:
        if set(layer) != {"type"}:
            raise _fail(where, f"an activation has only a type, got keys {sorted(layer)}")
        return
    if kind != "linear":
        raise _fail(where, f"type must be linear or one of {ACTIVATIONS}, not {kind!r}")
    if set(layer) != {"type", "in", "out", "weight", "bias"}:
        raise _fail(where, f"a linear layer has keys type, in, out, weight, bias; got {sorted(layer)}")
    if not (_is_int(layer["in"]) and _is_int(layer["out"]) and layer["in"] > 0 and layer["out"] > 0):
        raise _fail(where, "in and out must be positive integers")
    if not (isinstance(layer["weight"], str) and isinstance(layer["bias"], str)):
        raise _fail(where, "weight and bias name arrays of the .npz file")


def _features_size(features: str, observation_size: int) -> int:
    if features == "flat":
        return observation_size
    from thermopylae_agents.players.fight_odds import coop_fight_features

    return int(coop_fight_features(np.zeros(observation_size, np.float32)).shape[0])


def _check_arrays(d: Mapping[str, Any], arrays: Mapping[str, np.ndarray], where: str) -> None:
    """Every named array exists, is finite float32 of its layer's shape, and the layers chain."""
    size = _features_size(d["features"], d["observation_size"])
    named = set()
    for index, layer in enumerate(d["layers"]):
        if layer["type"] != "linear":
            continue
        if layer["in"] != size:
            raise _fail(where, f"layer {index} takes {layer['in']} inputs, the previous layer gives {size}")
        for key, shape in (("weight", (layer["in"], layer["out"])), ("bias", (layer["out"],))):
            name = layer[key]
            named.add(name)
            if name not in arrays:
                raise _fail(where, f"layer {index}: array {name!r} is not in the .npz file")
            array = arrays[name]
            if array.dtype != np.float32 or array.shape != shape:
                raise _fail(where, f"array {name!r} is {array.dtype} {array.shape}, need float32 {shape}")
            if not np.isfinite(array).all():
                raise _fail(where, f"array {name!r} has non-finite values")
        size = layer["out"]
    extra = sorted(set(arrays) - named)
    if extra:
        raise _fail(where, f"the .npz file has arrays no layer uses: {extra}")


def shipped_policy_names() -> list[str]:
    """Names of the policies shipped with the package in the safe format (``NAME.json`` + ``NAME.npz``)."""
    return sorted(p.stem for p in POLICY_DIR.glob("*.json") if p.with_suffix(".npz").is_file())


def _resolve(path_or_name: str | os.PathLike[str]) -> Path:
    """The ``.json`` file of a path (``.json``, ``.npz`` or no suffix) or of a shipped policy's name."""
    text = os.fspath(path_or_name)
    p = Path(text)
    pair = p.with_suffix(".json").is_file() and p.with_suffix(".npz").is_file()
    if p.suffix in (".json", ".npz", "") and pair:
        return p.with_suffix(".json")
    if os.sep not in text and "/" not in text and text in shipped_policy_names():
        return POLICY_DIR / f"{text}.json"
    if p.suffix == ".zip":
        raise ValueError(f"{text}: an SB3 zip is a pickle; export it first (thermopylae export) "
                         "and load the .json/.npz pair")
    raise ValueError(f"no safe policy {text!r}: give a NAME.json / NAME.npz pair (both files) or the name "
                     f"of a shipped policy: {', '.join(shipped_policy_names()) or 'none'}")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_safe_policy(path_or_name: str | os.PathLike[str], deterministic: bool = True) -> SafePolicy:
    """Load a policy from its ``.json`` / ``.npz`` pair (either path, or the stem) or a shipped name.

    Nothing here can run code from the files: the description is JSON, the arrays are read with
    ``allow_pickle=False``. Raises ``ValueError`` naming the problem when the files are missing, do not
    match (SHA-256), or describe a network that does not fit its arrays.
    """
    json_path = _resolve(path_or_name)
    npz_path = json_path.with_suffix(".npz")
    where = os.fspath(json_path)
    try:
        description = json.loads(json_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _fail(where, f"not valid JSON ({err})") from None
    _check_description(description, where)
    if _sha256(npz_path) != description["arrays_sha256"]:
        raise _fail(where, f"{npz_path.name} does not match its description (SHA-256 differs)")
    try:
        with np.load(npz_path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except ValueError as err:
        raise ValueError(f"{npz_path}: cannot read the arrays without pickle ({err})") from None
    _check_arrays(description, arrays, where)
    return SafePolicy(description, arrays, name=json_path.stem, deterministic=deterministic)


# --------------------------------------------------------------------------------------------------------
# Export (needs the train extra: torch, stable-baselines3)
# --------------------------------------------------------------------------------------------------------


def _extract_layers(model: Any) -> tuple[str, list[dict[str, Any]], dict[str, np.ndarray]]:
    import torch as th
    from stable_baselines3.common.torch_layers import FlattenExtractor

    from thermopylae_agents.players.fight_features import CoopFightFeatures

    extractor = model.policy.pi_features_extractor
    if isinstance(extractor, CoopFightFeatures):
        features = "coop_fight"
    elif isinstance(extractor, FlattenExtractor):
        features = "flat"
    else:
        raise ValueError(f"cannot export a {type(extractor).__name__} features extractor")
    layers: list[dict[str, Any]] = []
    arrays: dict[str, np.ndarray] = {}
    for module in [*model.policy.mlp_extractor.policy_net, model.policy.action_net]:
        if isinstance(module, th.nn.Linear):
            index = len(arrays) // 2
            weight, bias = f"linear{index}.weight", f"linear{index}.bias"
            arrays[weight] = np.ascontiguousarray(module.weight.detach().cpu().numpy().T, dtype=np.float32)
            arrays[bias] = module.bias.detach().cpu().numpy().astype(np.float32)
            layers.append({"type": "linear", "in": int(module.in_features), "out": int(module.out_features),
                           "weight": weight, "bias": bias})
        elif isinstance(module, th.nn.Tanh):
            layers.append({"type": "tanh"})
        elif isinstance(module, th.nn.ReLU):
            layers.append({"type": "relu"})
        else:
            raise ValueError(f"cannot export a {type(module).__name__} layer")
    return features, layers, arrays


def export_sb3_policy(
    model: Any, out: str | os.PathLike[str], env_id: str, source: str | None = None
) -> tuple[Path, Path]:
    """Write the actor of a loaded (Maskable)PPO ``model`` as ``OUT.json`` + ``OUT.npz``; returns both paths.

    ``env_id`` is recorded (SB3 files do not say which environment they were trained on); ``source``
    (e.g. the zip's name) too, when given. The written pair is loaded back and checked before returning.
    """
    stem = Path(out)
    if stem.suffix in (".json", ".npz"):
        stem = stem.with_suffix("")
    features, layers, arrays = _extract_layers(model)
    obs_shape = tuple(model.observation_space.shape)
    if len(obs_shape) != 1:
        raise ValueError(f"cannot export a policy over observations of shape {obs_shape}")
    npz_path, json_path = stem.with_suffix(".npz"), stem.with_suffix(".json")
    npz_path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(npz_path, **arrays)
    description: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "env_id": env_id,
        "features": features,
        "observation_size": int(obs_shape[0]),
        "num_actions": int(model.action_space.n),
        "layers": layers,
        "arrays_sha256": _sha256(npz_path),
    }
    if source is not None:
        description["source"] = source
    json_path.write_text(json.dumps(description, indent=2) + "\n", encoding="utf-8")
    load_safe_policy(json_path)
    return json_path, npz_path
