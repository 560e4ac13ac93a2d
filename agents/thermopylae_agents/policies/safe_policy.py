"""Trained policies stored as plain data: NumPy arrays plus a JSON description, loaded without pickle.

An SB3 ``.zip`` is a pickle: loading one can run any code. The shipped policies are therefore also
stored in a form that cannot: for a policy named ``NAME``,

* ``NAME.json`` describes the network: the format and its version, the environment id and the game
  options it was trained with (``env_options``, e.g. ``{"num_players": 2}``; options not recorded are
  the env's defaults), the features the network reads (``"flat"``: the observation itself;
  ``"coop_fight"``: the co-op observation plus the fight odds of
  [`thermopylae_agents.training.fight_features.CoopFightFeatures.numpy_features`][]), the observation
  size, the number of actions, the layers in order (``linear`` with the names of its weight and bias
  arrays, ``tanh``, ``relu``), the SHA-256 of the array file, and (``provenance``) the decks of the game
  (file names and hashes), the package version, commit and command that trained it (``"unknown"`` where
  not known), the training settings the SB3 model recorded (``hyperparameters``: PPO's keywords, the
  parallel envs, the seed, the steps trained, the network's shape) and the version and commit that wrote
  the file;
* ``NAME.safetensors`` holds the float32 arrays in the safetensors format (a JSON header and raw
  little-endian bytes; read by ``safetensors.numpy``, never with pickle).

Format version 1 stored the arrays as ``NAME.npz`` (a zip of ``.npy`` files); such pairs still load
(read from the ``.npy`` headers and raw bytes, never with pickle), and
[`upgrade_policy`][thermopylae_agents.policies.safe_policy.upgrade_policy] rewrites one as version 2. A
Hugging Face folder ([`thermopylae_agents.policies.model_card.write_hf_folder`][]) holds the same two files as
``config.json`` + ``model.safetensors`` beside its ``README.md``; the folder's path loads it. Loading needs
NumPy and ``safetensors`` only (no torch, no SB3).

The network is the actor of a (Maskable)PPO policy: features, the actor MLP
(``mlp_extractor.policy_net``) and the action head (``action_net``); its outputs are the action logits.
[`SafePolicy`][thermopylae_agents.policies.safe_policy.SafePolicy] plays the most likely legal action, the
action an SB3 model plays with ``deterministic=True`` (``tests/agents/policies/test_safe_policy.py`` checks
this game for game on hundreds of games).

[`load_safe_policy`][thermopylae_agents.policies.safe_policy.load_safe_policy] loads a policy by path (either
file of the pair; see [`is_path`][thermopylae_agents.policies.safe_policy.is_path]) or by the name of a
shipped policy ([`shipped_policy_names`][thermopylae_agents.policies.safe_policy.shipped_policy_names]; a name
never means a file of the working folder). Every malformed file is one ``ValueError`` naming the file and the
problem, and every size (the files, the zip members, the ``.npy`` headers) is checked against the description
before anything is read or expanded.
[`export_sb3_policy`][thermopylae_agents.policies.safe_policy.export_sb3_policy] writes the pair from a loaded
SB3 model (``thermopylae export``, which needs the ``train`` extra).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy
from safetensors import SafetensorError
from safetensors.numpy import load, save

from thermopylae_agents.policies.fight_odds import coop_fight_features
from thermopylae_agents.policies.frozen_policy import mlp_forward, numpy_features
from thermopylae_agents.policies.provenance import policy_provenance

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "FEATURES",
    "ACTIVATIONS",
    "POLICY_DIR",
    "SafePolicy",
    "arrays_path",
    "export_sb3_policy",
    "upgrade_policy",
    "write_policy",
    "load_safe_policy",
    "shipped_policy_names",
    "SHIPPED_ENV_IDS",
    "SHIPPED_ENV_OPTIONS",
    "description_path",
    "is_path",
    "read_description",
    "sb3_hyperparameters",
]

FORMAT = "thermopylae-policy"
FORMAT_VERSION = 2
ARRAY_SUFFIXES = {1: ".npz", 2: ".safetensors"}  # the array file of each format version
HF_CONFIG, HF_WEIGHTS = "config.json", "model.safetensors"  # the pair's names in a Hugging Face folder
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

# The game options each shipped policy was trained with: the env_kwargs of its configs/*.yaml that change
# the game (the duel configs' ``opponent`` is the training partner, not a rule of the game).
SHIPPED_ENV_OPTIONS: dict[str, dict[str, Any]] = {
    "coop_maskable_ppo": {"num_players": 1},
    "coop_2p_maskable_ppo": {"num_players": 2},
    "coop_3p_maskable_ppo": {"num_players": 3},
    "coop_4p_maskable_ppo": {"num_players": 4},
    "duel_greek_maskable_ppo": {},
    "duel_persian_maskable_ppo": {},
    "selfplay_greek_maskable_ppo": {},
    "selfplay_persian_maskable_ppo": {},
}

_TOP_KEYS = {"format", "format_version", "env_id", "env_options", "features", "observation_size",
             "num_actions", "layers", "arrays_sha256", "source", "provenance"}
_REQUIRED_KEYS = _TOP_KEYS - {"source", "env_options", "provenance"}
# Bounds that no policy of these games comes near; they keep a hostile description from making the
# loader allocate or read without limit before anything is checked.
_MAX_DIMENSION = 1 << 16
_MAX_PARAMETERS = 1 << 25
_MAX_LAYERS = 64
_MAX_DESCRIPTION_BYTES = 1 << 20
_MAX_OPTIONS = 16
_NPY_HEADER_BYTES = 4096  # the .npy magic and header of one array, at most (numpy pads it to 64 bytes)
_ZIP_ENTRY_BYTES = 4096   # the zip headers of one member, at most
_SAFETENSORS_ENTRY_BYTES = 512  # one array's entry in a safetensors header, at most
_MAX_PROVENANCE_ENTRIES = 32


# --------------------------------------------------------------------------------------------------------
# Playing
# --------------------------------------------------------------------------------------------------------


class SafePolicy:
    """A policy network loaded from plain arrays: features, linear layers and activations, in NumPy.

    ``act(observation, action_mask, rng=None)`` plays the legal action with the highest logit (what SB3
    plays with ``deterministic=True``); with ``deterministic=False`` and an ``rng`` it samples the masked
    softmax instead. ``action_probabilities`` gives the masked, renormalised distribution (hints).
    Build one with [`load_safe_policy`][thermopylae_agents.policies.safe_policy.load_safe_policy].
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
        self.env_options: dict[str, Any] = dict(description.get("env_options", {}))
        self.features_kind: str = description["features"]
        self.observation_size: int = description["observation_size"]
        self.num_actions: int = description["num_actions"]
        self.description = dict(description)
        self.arrays = {key: arrays[key] for key in _expected_arrays(description)}
        self._features = coop_fight_features if self.features_kind == "coop_fight" else None
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
    version = d["format_version"]
    if d["format"] != FORMAT or not _is_int(version) or version not in ARRAY_SUFFIXES:
        raise _fail(where, f"format {d['format']!r} version {version!r}, "
                           f"this code reads {FORMAT!r} versions {sorted(ARRAY_SUFFIXES)}")
    if not isinstance(d["env_id"], str) or not d["env_id"]:
        raise _fail(where, "env_id must be a non-empty string")
    _check_env_options(d.get("env_options", {}), where)
    _check_provenance(d.get("provenance", {}), where, "provenance")
    if d["features"] not in FEATURES:
        raise _fail(where, f"features must be one of {FEATURES}, not {d['features']!r}")
    for key in ("observation_size", "num_actions"):
        if not _is_int(d[key]) or not 1 <= d[key] <= _MAX_DIMENSION:
            raise _fail(where, f"{key} must be a positive integer up to {_MAX_DIMENSION}, not {d[key]!r}")
    layers = d["layers"]
    if not isinstance(layers, list) or not 1 <= len(layers) <= _MAX_LAYERS:
        raise _fail(where, f"layers must be a non-empty list of at most {_MAX_LAYERS}")
    for index, layer in enumerate(layers):
        _check_layer(layer, f"{where} layer {index}")
    parameters = sum((layer["in"] + 1) * layer["out"] for layer in layers if layer["type"] == "linear")
    if parameters > _MAX_PARAMETERS:
        raise _fail(where, f"the layers have {parameters} parameters, more than {_MAX_PARAMETERS}")
    if layers[-1]["type"] != "linear" or layers[-1]["out"] != d["num_actions"]:
        raise _fail(where, f"the last layer must be linear with {d['num_actions']} outputs (the logits)")
    if not isinstance(d["arrays_sha256"], str) or len(d["arrays_sha256"]) != 64:
        raise _fail(where, "arrays_sha256 must be a hex SHA-256 digest")


def _check_env_options(options: Any, where: str) -> None:
    if not isinstance(options, Mapping) or len(options) > _MAX_OPTIONS:
        raise _fail(where, f"env_options must be an object of at most {_MAX_OPTIONS} game options")
    for key, value in options.items():
        if value is not None and not isinstance(value, (str, int, float)):
            raise _fail(where, f"env_options {key!r} must be a number, a string or null, not {value!r}")


def _check_provenance(value: Any, where: str, key: str, depth: int = 0) -> None:
    """Provenance is an object of strings, numbers, nulls and objects of those, two levels deep at most."""
    if isinstance(value, Mapping):
        if depth > 2 or len(value) > _MAX_PROVENANCE_ENTRIES:
            raise _fail(where, f"{key} must be an object of at most {_MAX_PROVENANCE_ENTRIES} entries, "
                               "nested two levels at most")
        for name, item in value.items():
            _check_provenance(item, where, f"{key}.{name}", depth + 1)
    elif depth == 0 or not (value is None or isinstance(value, (str, int, float))):
        raise _fail(where, f"{key} must be {'an object' if depth == 0 else 'a string, a number or null'}")


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
    if not all(_is_int(layer[key]) and 1 <= layer[key] <= _MAX_DIMENSION for key in ("in", "out")):
        raise _fail(where, f"in and out must be positive integers up to {_MAX_DIMENSION}")
    if not (isinstance(layer["weight"], str) and isinstance(layer["bias"], str)):
        raise _fail(where, "weight and bias name arrays of the array file")


def _features_size(features: str, observation_size: int, where: str) -> int:
    if features == "flat":
        return observation_size

    try:
        return int(coop_fight_features(np.zeros(observation_size, np.float32)).shape[0])
    except (IndexError, ValueError):
        raise _fail(where, f"coop_fight features need a co-op observation, not {observation_size} numbers") \
            from None


def _check_chain(d: Mapping[str, Any], where: str) -> None:
    """Each linear layer takes as many inputs as the features or the layer before it give."""
    size = _features_size(d["features"], d["observation_size"], where)
    for index, layer in enumerate(d["layers"]):
        if layer["type"] == "linear":
            if layer["in"] != size:
                raise _fail(where, f"layer {index} takes {layer['in']} inputs, the previous layer gives "
                                   f"{size}")
            size = layer["out"]


def _check_arrays(d: Mapping[str, Any], arrays: Mapping[str, np.ndarray], where: str) -> None:
    """Every named array exists, is finite float32 of its layer's shape, and the layers chain."""
    size = _features_size(d["features"], d["observation_size"], where)
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
                raise _fail(where, f"layer {index}: array {name!r} is not in the array file")
            array = arrays[name]
            if array.dtype != np.float32 or array.shape != shape:
                raise _fail(where, f"array {name!r} is {array.dtype} {array.shape}, need float32 {shape}")
            if not np.isfinite(array).all():
                raise _fail(where, f"array {name!r} has non-finite values")
        size = layer["out"]
    extra = sorted(set(arrays) - named)
    if extra:
        raise _fail(where, f"the array file has arrays no layer uses: {extra}")


def _array_files(json_path: Path) -> list[Path]:
    """The array files a description may have beside it, newest format first."""
    if json_path.name == HF_CONFIG:
        return [json_path.with_name(HF_WEIGHTS)]
    return [json_path.with_suffix(suffix) for _, suffix in sorted(ARRAY_SUFFIXES.items(), reverse=True)]


def arrays_path(json_path: str | os.PathLike[str], format_version: int = FORMAT_VERSION) -> Path:
    """The array file of the description ``json_path`` of that format version: ``NAME.safetensors``
    (version 2; ``model.safetensors`` beside a Hugging Face folder's ``config.json``) or ``NAME.npz``
    (version 1)."""
    path = Path(json_path)
    if path.name == HF_CONFIG:
        if format_version != 2:
            raise _fail(os.fspath(path), f"a {HF_CONFIG} of format version {format_version}: a Hugging Face "
                                         f"folder holds version 2 ({HF_WEIGHTS})")
        return path.with_name(HF_WEIGHTS)
    return path.with_suffix(ARRAY_SUFFIXES[format_version])


def shipped_policy_names() -> list[str]:
    """Names of the policies shipped with the package in the safe format (``NAME.json`` beside
    ``NAME.safetensors``, or an old ``NAME.npz``)."""
    return sorted(p.stem for p in POLICY_DIR.glob("*.json") if any(a.is_file() for a in _array_files(p)))


def is_path(text: str) -> bool:
    """Whether a policy argument names a file: it has a folder separator or a suffix (``.json``,
    ``.safetensors``, ``.npz``, ``.zip``, ...). Anything else is a name, looked up among the shipped
    policies only, so a file of the working folder never stands in for a shipped policy of the same name."""
    return os.sep in text or "/" in text or (os.altsep is not None and os.altsep in text) or \
        Path(text).suffix != ""


def is_policy_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder holding a policy as a Hugging Face folder does (``config.json`` +
    ``model.safetensors``)."""
    folder = Path(path)
    return folder.is_dir() and (folder / HF_CONFIG).is_file() and (folder / HF_WEIGHTS).is_file()


def description_path(path_or_name: str | os.PathLike[str]) -> Path:
    """The ``.json`` file of a path (``.json``, ``.safetensors``, ``.npz``, no suffix, or a Hugging Face
    folder) or of a shipped policy's name (``ValueError`` when there is no such pair)."""
    text = os.fspath(path_or_name)
    if not is_path(text):
        if text in shipped_policy_names():
            return POLICY_DIR / f"{text}.json"
        raise ValueError(f"no shipped policy named {text!r} (shipped: {', '.join(shipped_policy_names())}); "
                         f"a policy file is named by its path, e.g. ./{text}.json")
    p = Path(text)
    if p.suffix == ".zip":
        raise ValueError(f"{text}: an SB3 zip is a pickle; export it first (thermopylae export) "
                         "and load the .json/.safetensors pair")
    if is_policy_folder(p):
        return p / HF_CONFIG
    if p.suffix in (".json", *ARRAY_SUFFIXES.values()):
        json_path = p.with_name(HF_CONFIG) if p.name == HF_WEIGHTS else p.with_suffix(".json")
    else:
        json_path = p.with_name(p.name + ".json")
    if not (json_path.is_file() and any(a.is_file() for a in _array_files(json_path))):
        raise ValueError(f"no safe policy {text!r}: give a NAME.json / NAME.safetensors pair (or an old "
                         f"NAME.json / NAME.npz pair; regular files), a folder of "
                         f"{HF_CONFIG} + {HF_WEIGHTS}, or the name of a shipped policy: "
                         f"{', '.join(shipped_policy_names())}")
    return json_path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_description(json_path: str | os.PathLike[str]) -> dict[str, Any]:
    """The checked description of a policy (its ``.json`` file), reading no array: what it plays, its
    network. Raises one ``ValueError`` naming the file and the problem for any malformed file."""
    path = Path(json_path)
    where = os.fspath(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise _fail(where, "not a regular file")
        if size > _MAX_DESCRIPTION_BYTES:
            raise _fail(where, f"{size} bytes, more than a description's {_MAX_DESCRIPTION_BYTES}")
        with path.open("rb") as stream:
            text = stream.read(_MAX_DESCRIPTION_BYTES + 1).decode("utf-8")
        description = json.loads(text)
    except OSError as err:
        raise _fail(where, f"cannot be read ({err.strerror or type(err).__name__})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        problem = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise _fail(where, f"not valid JSON ({problem})") from None
    _check_description(description, where)
    return description


def _expected_arrays(d: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for layer in d["layers"]:
        if layer["type"] == "linear":
            shapes[layer["weight"]] = (layer["in"], layer["out"])
            shapes[layer["bias"]] = (layer["out"],)
    return shapes


def _check_array_file(path: Path, d: Mapping[str, Any], where: str, limit: int) -> None:
    """The array file is a regular file of at most ``limit`` bytes whose SHA-256 is the described one."""
    try:
        size = path.stat().st_size
    except OSError as err:
        raise _fail(where, f"{path.name} cannot be read ({err.strerror or type(err).__name__})") from None
    if not path.is_file() or size > limit:
        raise _fail(where, f"{path.name} is not a regular file of at most {limit} bytes (the arrays "
                           "described)")
    if _sha256(path) != d["arrays_sha256"]:
        raise _fail(where, f"{path.name} does not match its description (SHA-256 differs)")


def _read_safetensors(path: Path, d: Mapping[str, Any], where: str) -> dict[str, np.ndarray]:
    """The arrays of a safetensors file, its size and hash checked against the description first (the
    parser then checks that the header's offsets and shapes fit the bytes)."""
    shapes = _expected_arrays(d)
    limit = 8 + 4 * sum(int(np.prod(shape)) for shape in shapes.values()) + \
        (len(shapes) + 1) * _SAFETENSORS_ENTRY_BYTES
    _check_array_file(path, d, where, limit)
    try:
        arrays = load(path.read_bytes())
    except (SafetensorError, ValueError, TypeError, OSError) as err:
        problem = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _fail(where, f"{path.name} is not a safetensors file of arrays ({problem})") from None
    unknown = sorted(set(arrays) - set(shapes))
    if unknown:
        raise _fail(where, f"{path.name} holds arrays no layer uses: {unknown}")
    return {key: np.array(value, dtype=value.dtype, copy=True) for key, value in arrays.items()}


def _read_arrays(path: Path, d: Mapping[str, Any], where: str) -> dict[str, np.ndarray]:
    """The arrays of the description's array file (version 2: safetensors; version 1: npz)."""
    if d["format_version"] == 2:
        return _read_safetensors(path, d, where)
    return _read_npz(path, d, where)


def _read_npz(npz_path: Path, d: Mapping[str, Any], where: str) -> dict[str, np.ndarray]:
    """The arrays of ``npz_path``, every size checked against the description before it is read: the
    file's, each zip member's (its central directory entry) and each array's (its ``.npy`` header)."""
    shapes = _expected_arrays(d)
    array_bytes = {name: 4 * int(np.prod(shape)) for name, shape in shapes.items()}
    limit = sum(array_bytes.values()) + (len(shapes) + 1) * (_NPY_HEADER_BYTES + _ZIP_ENTRY_BYTES)
    name = npz_path.name
    _check_array_file(npz_path, d, where, limit)
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(npz_path) as archive:
            members = archive.infolist()
            if len(members) > len(shapes) or len({m.filename for m in members}) != len(members):
                raise _fail(where, f"{name} holds {len(members)} members (repeated or more than the "
                                   f"{len(shapes)} arrays described)")
            for member in members:
                key = member.filename.removesuffix(".npy")
                if key not in shapes or not member.filename.endswith(".npy"):
                    raise _fail(where, f"{name} holds {member.filename!r}, an array no layer uses")
                if member.file_size > array_bytes[key] + _NPY_HEADER_BYTES:
                    raise _fail(where, f"array {key!r} expands to {member.file_size} bytes, more than its "
                                       f"float32 {shapes[key]} needs")
                with archive.open(member) as stream:
                    arrays[key] = _read_npy(stream, key, shapes[key], where)
    except ValueError as err:
        if str(err).startswith("policy description"):
            raise
        raise _fail(where, f"{name}: cannot read the arrays without pickle ({err})") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError,
            KeyError) as err:  # RuntimeError: an encrypted member; NotImplementedError: an unknown method
        raise _fail(where, f"{name} is not a zip archive of arrays ({type(err).__name__}: {err})") from None
    return arrays


def _read_npy(stream: Any, key: str, shape: tuple[int, ...], where: str) -> np.ndarray:
    """One array of its ``.npy`` stream, its header checked (float32, C order, ``shape``) first."""
    version = npy.read_magic(stream)
    if version == (1, 0):
        header = npy.read_array_header_1_0(stream, max_header_size=_NPY_HEADER_BYTES)
    elif version in ((2, 0), (3, 0)):
        header = npy.read_array_header_2_0(stream, max_header_size=_NPY_HEADER_BYTES)
    else:
        raise ValueError(f"array {key!r}: unknown .npy version {version}")
    found_shape, fortran, dtype = header
    if dtype.hasobject:
        raise ValueError(f"array {key!r} holds Python objects")
    if dtype != np.dtype("<f4") or fortran or tuple(found_shape) != shape:
        raise _fail(where, f"array {key!r} is {dtype} {tuple(found_shape)}, need float32 {shape}")
    data = stream.read(4 * int(np.prod(shape)) + 1)
    if len(data) != 4 * int(np.prod(shape)):
        raise _fail(where, f"array {key!r} holds {len(data)} bytes, not the {4 * int(np.prod(shape))} "
                           "of its header")
    return np.frombuffer(data, dtype="<f4").reshape(shape).copy()


def load_safe_policy(path_or_name: str | os.PathLike[str], deterministic: bool = True) -> SafePolicy:
    """Load a policy from its ``.json`` / ``.safetensors`` pair (a path: see
    [`is_path`][thermopylae_agents.policies.safe_policy.is_path]; an old ``.json`` / ``.npz`` pair, a Hugging
    Face folder) or a shipped name.

    Nothing here can run code from the files: the description is JSON, the arrays are read by the
    safetensors parser (an old ``.npz``: from their ``.npy`` headers and raw bytes; never pickle). Every
    size is checked against the description before anything is read or expanded. Raises one
    ``ValueError`` naming the file and the problem when the files are missing, malformed, do not match
    (SHA-256), or describe a network that does not fit its arrays.
    """
    json_path = description_path(path_or_name)
    where = os.fspath(json_path)
    description = read_description(json_path)
    _check_chain(description, where)
    arrays = _read_arrays(arrays_path(json_path, description["format_version"]), description, where)
    _check_arrays(description, arrays, where)
    name = json_path.parent.name if json_path.name == HF_CONFIG else json_path.stem
    return SafePolicy(description, arrays, name=name, deterministic=deterministic)


# --------------------------------------------------------------------------------------------------------
# Export (needs the train extra: torch, stable-baselines3)
# --------------------------------------------------------------------------------------------------------


def _extract_layers(model: Any) -> tuple[str, list[dict[str, Any]], dict[str, np.ndarray]]:
    import torch as th  # extra: train

    extractor = model.policy.pi_features_extractor
    kind = numpy_features(extractor)
    if kind is None:
        raise ValueError(f"cannot export a {type(extractor).__name__} features extractor")
    features = kind[0]
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


def write_policy(
    json_path: str | os.PathLike[str], description: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> tuple[Path, Path]:
    """Write a version 2 pair: ``arrays`` as safetensors beside ``json_path`` (``NAME.safetensors``;
    ``model.safetensors`` for a ``config.json``), then the description with the format, its version and
    the arrays' SHA-256 filled in. The pair is loaded back and its arrays compared (bit for bit) before
    returning ``(json_path, arrays_path)``; a description that does not fit the arrays is refused
    before anything is written."""
    json_path = Path(json_path)
    if json_path.suffix != ".json":
        raise ValueError(f"{json_path}: a policy description is a .json file")
    data = {key: np.ascontiguousarray(value) for key, value in arrays.items()}
    full = {**description, "format": FORMAT, "format_version": FORMAT_VERSION, "arrays_sha256": "0" * 64}
    where = os.fspath(json_path)
    _check_description(full, where)
    _check_arrays(full, data, where)
    target = arrays_path(json_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(save(data))  # the process's usual file mode (save_file makes owner-only files)
    full["arrays_sha256"] = _sha256(target)
    json_path.write_text(json.dumps(full, indent=2) + "\n", encoding="utf-8")
    loaded = load_safe_policy(json_path)
    if set(loaded.arrays) != set(data) or not all(
            loaded.arrays[key].dtype == data[key].dtype and np.array_equal(loaded.arrays[key], data[key])
            for key in data):
        raise ValueError(f"{target}: the arrays read back differ from the arrays written")
    return json_path, target


def upgrade_policy(
    source: str | os.PathLike[str], out: str | os.PathLike[str], provenance: Mapping[str, Any] | None = None
) -> tuple[Path, Path]:
    """Rewrite the policy ``source`` (a path or shipped name, any format version) as a version 2 pair at
    ``out`` (``OUT.json`` + ``OUT.safetensors``), with the same network and arrays (compared bit for bit)
    and ``provenance`` added to what the description already records."""
    policy = load_safe_policy(source)
    description = {key: value for key, value in policy.description.items()
                   if key not in ("format", "format_version", "arrays_sha256")}
    description["provenance"] = {**description.get("provenance", {}), **dict(provenance or {})}
    stem = Path(out)
    if stem.suffix in (".json", *ARRAY_SUFFIXES.values()):
        stem = stem.with_suffix("")
    return write_policy(stem.with_name(stem.name + ".json"), description, policy.arrays)


# PPO's settings that a loaded (Maskable)PPO model holds, recorded under provenance.hyperparameters.
_SB3_SETTINGS = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range",
                 "clip_range_vf", "normalize_advantage", "ent_coef", "vf_coef", "max_grad_norm", "target_kl",
                 "n_envs", "seed")


def _plain(value: Any) -> str | int | float | None:
    """A setting as JSON data a description may hold: a schedule as its constant value, or its text when it
    changes during training (a description holds no code)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    inner = getattr(value, "value_schedule", value)  # SB3 wraps every schedule in a FloatSchedule
    constant = getattr(inner, "val", None)
    if isinstance(constant, (int, float, np.integer, np.floating)) and not isinstance(constant, bool):
        return float(constant)
    return repr(inner)[:200]


def sb3_hyperparameters(model: Any) -> dict[str, str | int | float | None]:
    """The training settings a loaded SB3 (Maskable)PPO ``model`` records: its algorithm and policy class,
    PPO's keywords, the parallel envs, the seed, the steps it trained (``total_timesteps``) and its network
    (``net_arch`` as JSON text, the activation and the features extractor). A schedule is its constant
    value, or its text when it changes during training."""
    settings: dict[str, str | int | float | None] = {
        "algo": type(model).__name__, "policy": type(model.policy).__name__}
    for key in _SB3_SETTINGS:
        if hasattr(model, key):
            settings[key] = _plain(getattr(model, key))
    settings["total_timesteps"] = int(model.num_timesteps)
    net_arch = getattr(model.policy, "net_arch", None)
    settings["net_arch"] = json.dumps(net_arch) if net_arch is not None else None
    activation = getattr(model.policy, "activation_fn", None)
    settings["activation_fn"] = getattr(activation, "__name__", None)
    settings["features_extractor"] = type(model.policy.pi_features_extractor).__name__
    return settings


def export_sb3_policy(
    model: Any,
    out: str | os.PathLike[str],
    env_id: str,
    source: str | None = None,
    env_options: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> tuple[Path, Path]:
    """Write the actor of a loaded (Maskable)PPO ``model`` as ``OUT.json`` + ``OUT.safetensors``; returns
    both paths.

    ``env_id`` (one of the package's envs) and ``env_options`` (the game options the model was trained
    with, e.g. ``{"num_players": 2}``; omitted options are the env's defaults) are recorded: SB3 files do
    not say which game they were trained on. ``source`` (e.g. the zip's name) too, when given.
    ``provenance`` (the training commit, command and package version; see
    [`thermopylae_agents.policies.provenance.policy_provenance`][]) is added to the decks of the game and
    the version and commit of this export, which are always recorded, and so are the model's training
    settings (``provenance.hyperparameters``, from
    [`sb3_hyperparameters`][thermopylae_agents.policies.safe_policy.sb3_hyperparameters]: the model holds
    them, so they are facts of the file rather than of a config that may have changed since). The written
    pair is loaded back and checked before returning.
    """
    known = sorted(set(SHIPPED_ENV_IDS.values()))
    if env_id not in known:
        raise ValueError(f"unknown env id {env_id!r}; expected one of {', '.join(known)}")
    options = dict(env_options or {})
    _check_env_options(options, "to export")
    stem = Path(out)
    if stem.suffix in (".json", *ARRAY_SUFFIXES.values()):
        stem = stem.with_suffix("")
    features, layers, arrays = _extract_layers(model)
    obs_shape = tuple(model.observation_space.shape)
    if len(obs_shape) != 1:
        raise ValueError(f"cannot export a policy over observations of shape {obs_shape}")
    description: dict[str, Any] = {
        "env_id": env_id,
        "env_options": options,
        "features": features,
        "observation_size": int(obs_shape[0]),
        "num_actions": int(model.action_space.n),
        "layers": layers,
        "provenance": {**policy_provenance(env_id), **dict(provenance or {}),
                       "hyperparameters": sb3_hyperparameters(model)},
    }
    if source is not None:
        description["source"] = source
    return write_policy(stem.with_name(stem.name + ".json"), description, arrays)
