"""Configuration: the project's YAML files, strictly checked, and the run's resolved settings.

The files are keyed by env id but are not RL Zoo's format (rl_zoo3 reads ``configs/rl_zoo/``).

A hyperparameter file maps an environment id to its block (``n_envs``, ``n_timesteps``, PPO keywords,
``policy_kwargs``, and the sections ``eval``, ``bc``, ``report``; self-play adds a ``selfplay`` block). A
key that the pipeline does not know is an error; :class:`Config` remembers which keys were read, so the
tests prove that every key of a shipped file has an effect.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch as th
import yaml

__all__ = [
    "algo_class",
    "ALGOS",
    "CONFIG_DIR",
    "CONFIG_FILES",
    "COOP_ID",
    "ENV_IDS",
    "GREEK_ID",
    "PERSIAN_ID",
    "TARGETS",
    "VEC_KINDS",
    "Config",
    "LinearSchedule",
    "env_ids_of",
    "load_config",
    "parse_schedule",
    "policy_kwargs",
    "ppo_kwargs",
    "resolve_config",
    "size_to_budget",
]

TARGETS = ("coop", "duel-greek", "duel-persian", "selfplay")
ALGOS = ("maskable_ppo", "ppo")
VEC_KINDS = ("native", "dummy", "subproc")
COOP_ID = "thermopylae/Coop-v0"
GREEK_ID = "thermopylae/DuelGreek-v0"
PERSIAN_ID = "thermopylae/DuelPersian-v0"
ENV_IDS = {"coop": COOP_ID, "duel-greek": GREEK_ID, "duel-persian": PERSIAN_ID}
CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
CONFIG_FILES = {
    "coop": CONFIG_DIR / "coop.yaml",
    "duel-greek": CONFIG_DIR / "duel_greek.yaml",
    "duel-persian": CONFIG_DIR / "duel_persian.yaml",
    "selfplay": CONFIG_DIR / "selfplay.yaml",
}

# Keyword arguments of (Maskable)PPO that a config may set.
PPO_KEYS = (
    "learning_rate",
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "clip_range",
    "clip_range_vf",
    "normalize_advantage",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "target_kl",
    "stats_window_size",
)
# Everything else a hyperparameter block may hold.
RUN_KEYS = (
    "env_kwargs",
    "n_envs",
    "n_timesteps",
    "policy",
    "policy_kwargs",
    "vec",
    "checkpoint_freq",
    "eval",
    "bc",
    "report",
)
SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "eval": ("freq", "episodes", "deterministic"),
    "bc": (
        "expert",
        "episodes",
        "epochs",
        "batch_size",
        "learning_rate",
        "value_coef",
        "workers",
        "dagger_rounds",
        "dagger_episodes",
        "dagger_epochs",
    ),
    "report": ("episodes", "search", "search_episodes"),
    "selfplay": (
        "generations",
        "vec",
        "pfsp_power",
        "pfsp_prior_games",
        "latest_prob",
        "heuristic_prob",
        "heuristic_generations",
        "max_pool",
        "snapshot_deterministic",
        "report_episodes",
    ),
}
POLICY_KWARGS = ("net_arch", "activation_fn", "ortho_init", "share_features_extractor", "features_extractor")
FEATURE_EXTRACTORS = ("flatten", "coop_fight")
ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU", "elu": "ELU", "leaky_relu": "LeakyReLU", "gelu": "GELU"}

# Game counts that shrink with a shorter run than the config's (see size_to_budget), each with the
# smallest count that still says something (a Wilson interval of about +-3 points at 1,000 games).
BUDGET_SIZED = {
    ("bc", "episodes"): 500,
    ("bc", "dagger_episodes"): 100,
    ("eval", "episodes"): 200,
    ("report", "episodes"): 1000,
    ("report", "search_episodes"): 4,
}
SELFPLAY_SIZED = {("selfplay", "report_episodes"): 200}


class Config(Mapping[str, Any]):
    """A read-only mapping from a YAML file that remembers which keys were read.

    The pipeline reads every setting through it; :meth:`unused` then lists the keys nobody read, which
    the tests use to prove that each key of a shipped config file has an effect.
    """

    def __init__(self, data: Mapping[str, Any], name: str = "") -> None:
        self._data = dict(data)
        self._name = name
        self._used: set[str] = set()
        self._children: dict[str, Config] = {}

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        self._used.add(key)
        if isinstance(value, Mapping):
            if key not in self._children:
                self._children[key] = Config(value, f"{self._name}.{key}" if self._name else key)
            return self._children[key]
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Config({self._name!r}, {self._data!r})"

    def plain(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` as plain Python data (a whole sub-mapping counts as read)."""
        if key not in self._data:
            return copy.deepcopy(default)
        self._used.add(key)
        return copy.deepcopy(self._data[key])

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._data)

    def unused(self) -> list[str]:
        """Dotted names of the keys that were never read (sub-mappings read with ``[]`` are searched)."""
        prefix = f"{self._name}." if self._name else ""
        missing = [prefix + key for key in self._data if key not in self._used]
        for child in self._children.values():
            missing.extend(child.unused())
        return missing


class LinearSchedule:
    """``lin_<x>`` of the RL Zoo: decays linearly from ``initial`` (start) to 0 (end of training).

    A class rather than a closure so that saved models pickle it by reference.
    """

    def __init__(self, initial: float) -> None:
        self.initial = float(initial)

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.initial

    def __repr__(self) -> str:
        return f"lin_{self.initial}"


def parse_schedule(value: Any, key: str) -> float | LinearSchedule:
    """A number, or ``lin_<x>`` (a :class:`LinearSchedule`), for ``learning_rate`` / ``clip_range``."""
    if isinstance(value, str):
        try:
            return LinearSchedule(float(value[4:])) if value.startswith("lin_") else float(value)
        except ValueError:
            pass
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ValueError(f"{key} must be a number or 'lin_<number>', got {value!r}")


def _validate_block(block: Mapping[str, Any], where: str, extra: tuple[str, ...] = ()) -> None:
    allowed = set(PPO_KEYS) | set(RUN_KEYS) | set(extra)
    unknown = sorted(set(block) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(allowed)}")
    for section, keys in SECTION_KEYS.items():
        if section in block and block[section] is not None:
            if not isinstance(block[section], Mapping):
                raise ValueError(f"{where}.{section} must be a mapping")
            bad = sorted(set(block[section]) - set(keys))
            if bad:
                raise ValueError(f"{where}.{section}: unknown key(s) {bad}; known keys: {list(keys)}")
    if "policy_kwargs" in block:
        bad = sorted(set(block["policy_kwargs"] or {}) - set(POLICY_KWARGS))
        if bad:
            raise ValueError(f"{where}.policy_kwargs: unknown key(s) {bad}; known: {list(POLICY_KWARGS)}")
    if "vec" in block and block["vec"] not in VEC_KINDS:
        raise ValueError(f"{where}.vec must be one of {VEC_KINDS}, got {block['vec']!r}")
    for key in ("n_envs", "n_timesteps", "n_steps", "batch_size", "n_epochs"):
        if key in block and not _is_count(block[key], minimum=1):
            raise ValueError(f"{where}.{key} must be a positive integer, got {block[key]!r}")


def _is_count(value: Any, minimum: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def env_ids_of(target: str) -> list[str]:
    """The hyperparameter blocks of ``target``: one env id, or both duel sides for self-play."""
    return [GREEK_ID, PERSIAN_ID] if target == "selfplay" else [ENV_IDS[target]]


def load_config(target: str, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Read and check the YAML config of ``target`` (the shipped file unless ``path`` is given).

    Returns the plain mapping ``{env_id: hyperparameters, ...}`` (plus ``selfplay`` for self-play and
    ``run`` for a config written by a run, which holds the run's own settings such as its seed).
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    path = Path(path) if path is not None else CONFIG_FILES[target]
    if not path.is_file():
        raise FileNotFoundError(f"config file {path}: no such file")
    with open(path, encoding="utf-8") as handle:
        try:
            data = yaml.safe_load(handle)
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: not a YAML file ({str(error).splitlines()[0]})") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: a config file must be a mapping of environment id to hyperparameters")
    expected = env_ids_of(target)
    allowed_top = set(expected) | {"run"} | ({"selfplay"} if target == "selfplay" else set())
    unknown = sorted(set(data) - allowed_top)
    if unknown:
        raise ValueError(f"{path}: unknown top-level key(s) {unknown}; expected {sorted(allowed_top)}")
    for env_id in expected:
        if not isinstance(data.get(env_id), Mapping):
            raise ValueError(f"{path}: missing the hyperparameter block {env_id!r}")
        _validate_block(data[env_id], f"{path}:{env_id}")
    if target == "selfplay":
        if not isinstance(data.get("selfplay"), Mapping):
            raise ValueError(f"{path}: missing the 'selfplay' block")
        bad = sorted(set(data["selfplay"]) - set(SECTION_KEYS["selfplay"]))
        if bad:
            raise ValueError(f"{path}:selfplay: unknown key(s) {bad}")
        _validate_selfplay(data["selfplay"], f"{path}:selfplay")
    return dict(data)


SELFPLAY_VEC_KINDS = ("native", "dummy")


def _validate_selfplay(block: Mapping[str, Any], where: str) -> None:
    """The values of the ``selfplay`` block that the keys alone do not check."""
    if "vec" in block and block["vec"] not in SELFPLAY_VEC_KINDS:
        raise ValueError(f"{where}.vec must be one of {SELFPLAY_VEC_KINDS}, got {block['vec']!r}")
    for key in ("pfsp_power", "pfsp_prior_games"):
        value = block.get(key)
        if key in block and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
            raise ValueError(f"{where}.{key} must be a positive number, got {value!r}")
    for key in ("generations", "max_pool"):
        if key in block and not _is_count(block[key], minimum=1):
            raise ValueError(f"{where}.{key} must be a positive integer, got {block[key]!r}")
    if block.get("vec", "native") == "native" and block.get("snapshot_deterministic", True) is not True:
        raise ValueError(f"{where}: snapshot_deterministic: false needs vec: dummy (the native engine's "
                         "snapshots play their most likely legal action)")


def size_to_budget(data: dict[str, Any], target: str, timesteps: int) -> dict[str, dict[str, int]]:
    """Shrink the game counts of ``data`` (in place) for a run of ``timesteps`` steps per block.

    A run shorter than its config's ``n_timesteps`` gets a warm start, periodic evaluations and a final
    report in proportion (``count * timesteps / n_timesteps``), never below the floors of
    ``BUDGET_SIZED`` nor above the config's own counts. Returns ``{"block.section.key": {"full": n,
    "sized": m}}`` for every count that changed, which the run records so that a resume can undo it.
    """
    changes: dict[str, dict[str, int]] = {}

    def shrink(where: dict[str, Any], name: str, sized: Mapping[tuple[str, str], int], scale: float) -> None:
        for (section, key), floor in sized.items():
            block = where.get(section)
            if not isinstance(block, dict) or not _is_count(block.get(key), 1):
                continue
            full = block[key]
            new = min(full, max(floor, math.ceil(full * scale)))
            if new != full:
                block[key] = new
                changes[f"{name}.{section}.{key}"] = {"full": full, "sized": new}

    scales = []
    for env_id in env_ids_of(target):
        hp = data[env_id]
        full = int(hp["n_timesteps"])
        scale = min(1.0, timesteps / full)
        scales.append(scale)
        hp["n_timesteps"] = int(timesteps)
        if scale < 1.0:
            shrink(hp, env_id, BUDGET_SIZED, scale)
    if target == "selfplay" and min(scales) < 1.0:
        shrink(data, "top", SELFPLAY_SIZED, min(scales))
    return changes


def _restore_full_size(data: dict[str, Any], changes: Mapping[str, Mapping[str, int]]) -> None:
    """Undo :func:`size_to_budget` on a run's own ``config.yaml`` (before sizing it anew)."""
    for name, change in changes.items():
        block, section, key = name.rsplit(".", 2)
        where = data if block == "top" else data[block]
        if isinstance(where.get(section), dict) and where[section].get(key) == change["sized"]:
            where[section][key] = change["full"]


def resolve_config(
    target: str,
    config_path: str | os.PathLike[str] | None = None,
    *,
    algo: str | None = None,
    seed: int | None = None,
    timesteps: int | None = None,
    n_envs: int | None = None,
    eval_freq: int | None = None,
    eval_episodes: int | None = None,
    vec: str | None = None,
    bc_episodes: int | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """The config file of ``target`` with the command-line overrides applied (plain data).

    ``run`` records the run's own settings (target, algorithm, seed, device, and the game counts that
    ``timesteps`` shrank, see :func:`size_to_budget`) so that ``config.yaml`` alone describes, and can
    repeat or resume, the run.
    """
    for name, value, minimum in (
        ("timesteps", timesteps, 1),
        ("n_envs", n_envs, 1),
        ("seed", seed, 0),
        ("eval_freq", eval_freq, 0),
        ("eval_episodes", eval_episodes, 0),
        ("bc_episodes", bc_episodes, 0),
    ):
        if value is not None and not _is_count(value, minimum):
            kind = "a positive" if minimum else "a non-negative"
            raise ValueError(f"{name} must be {kind} integer, got {value!r}")
    data = copy.deepcopy(load_config(target, config_path))
    run = dict(data.pop("run", None) or {})
    run["target"] = target
    run["algo"] = algo or run.get("algo", "maskable_ppo")
    if run["algo"] not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {run['algo']!r}")
    run["seed"] = int(seed if seed is not None else run.get("seed", 0))
    run["device"] = device or run.get("device", "cpu")
    if timesteps is not None:
        _restore_full_size(data, run.get("sized_to_budget") or {})
        run["sized_to_budget"] = size_to_budget(data, target, int(timesteps))
    for env_id in env_ids_of(target):
        hp = data[env_id]
        if n_envs is not None:
            hp["n_envs"] = int(n_envs)
        if eval_freq is not None:
            hp.setdefault("eval", {})["freq"] = int(eval_freq)
        if eval_episodes is not None:
            hp.setdefault("eval", {})["episodes"] = int(eval_episodes)
        if vec is not None:
            if vec not in VEC_KINDS:
                raise ValueError(f"vec must be one of {VEC_KINDS}, got {vec!r}")
            hp["vec"] = vec
        if bc_episodes is not None:
            hp.setdefault("bc", {})["episodes"] = int(bc_episodes)
        _validate_block(hp, f"{target}:{env_id}")
    data["run"] = run
    return data


def policy_kwargs(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """SB3 ``policy_kwargs`` from a config's: activation and features extractor names become classes."""
    from thermopylae_agents.players.fight_features import CoopFightFeatures

    kwargs = dict(raw or {})
    if "activation_fn" in kwargs:
        name = str(kwargs["activation_fn"]).lower()
        if name not in ACTIVATIONS:
            raise ValueError(f"policy_kwargs.activation_fn: one of {sorted(ACTIVATIONS)}, not {name!r}")
        kwargs["activation_fn"] = getattr(th.nn, ACTIVATIONS[name])
    if "net_arch" in kwargs and isinstance(kwargs["net_arch"], Mapping):
        kwargs["net_arch"] = dict(kwargs["net_arch"])
    if "features_extractor" in kwargs:
        name = kwargs.pop("features_extractor")
        if name not in FEATURE_EXTRACTORS:
            raise ValueError(f"policy_kwargs.features_extractor: one of {FEATURE_EXTRACTORS}, not {name!r}")
        if name == "coop_fight":
            kwargs["features_extractor_class"] = CoopFightFeatures
    return kwargs


def ppo_kwargs(hp: Config) -> dict[str, Any]:
    """The (Maskable)PPO keyword arguments of a hyperparameter block (schedules parsed)."""
    kwargs: dict[str, Any] = {}
    for key in PPO_KEYS:
        if key not in hp:
            continue
        value = hp[key]
        if key in ("learning_rate", "clip_range") or (key == "clip_range_vf" and value is not None):
            value = parse_schedule(value, key)
        kwargs[key] = value
    return kwargs


def algo_class(algo: str) -> Any:
    """The SB3 class of ``algo`` (``maskable_ppo``: sb3_contrib's MaskablePPO; ``ppo``: plain PPO)."""
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO
    raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
