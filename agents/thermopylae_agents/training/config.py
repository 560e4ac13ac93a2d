"""Configuration: the project's YAML files, strictly checked, and the run's resolved settings.

The files are keyed by env id but are not RL Zoo's format (rl_zoo3 reads ``configs/rl_zoo/``).

A hyperparameter file maps an environment id to its block (``n_envs``, ``n_timesteps``, PPO keywords,
``policy_kwargs``, and the sections ``eval``, ``bc``, ``report``; self-play adds a ``selfplay`` block). A
key that the pipeline does not know is an error; [`Config`][thermopylae_agents.training.config.Config]
remembers which keys were read, so the tests prove that every key of a shipped file has an effect.
"""

from __future__ import annotations

import copy
import functools
import math
import os
import reprlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID

__all__ = [
    "algo_class",
    "check_device",
    "ALGOS",
    "LEARNERS",
    "PRECISIONS",
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
    "sized_count",
    "sized_eval_freq",
    "env_count",
    "rollout_size",
]

TARGETS = ("coop", "duel-greek", "duel-persian", "selfplay")
ALGOS = ("maskable_ppo", "ppo")
# Who runs PPO's loop: thermopylae_agents.training.fast_ppo (fast) or sb3-contrib's own (sb3). The same
# algorithm, model files and callbacks either way; fast needs maskable_ppo.
LEARNERS = ("fast", "sb3")
# Of the fast learner's matrix products; auto: bfloat16 where the CPU has bfloat16 instructions.
PRECISIONS = ("auto", "float32", "bfloat16")
VEC_KINDS = ("native", "dummy", "subproc")
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
    "learner",
    "precision",
    "threads",
    "fast",
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
    # The fast learner's own recipe: these keys replace the block's when the learner is fast.
    "fast": ("n_envs", "n_steps", "batch_size", "n_epochs", "learning_rate", "precision"),
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
# smallest count that still says something: the warm start needs enough expert decisions to clone, while
# a short run's evaluations are smoke checks whose games should not outweigh its training (a Wilson
# interval of at most about +-10 points at 100 games, +-14 at 50).
BUDGET_SIZED = {
    ("bc", "episodes"): 500,
    ("bc", "dagger_episodes"): 100,
    ("eval", "episodes"): 50,
    ("report", "episodes"): 100,
}
# Counts of slow games (seconds each) rounded down instead: a run below 1/count of the budget plays none.
BUDGET_ROUNDED_DOWN = (("report", "search_episodes"),)
SELFPLAY_SIZED = {("selfplay", "report_episodes"): 200}


class Config(Mapping[str, Any]):
    """A read-only mapping from a YAML file that remembers which keys were read.

    The pipeline reads every setting through it; [`unused`][thermopylae_agents.training.config.Config.unused]
    then lists the keys nobody read, which the tests use to prove that each key of a shipped config file has
    an effect.
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
    """A number, or ``lin_<x>`` (a [`LinearSchedule`][thermopylae_agents.training.config.LinearSchedule]), for
    ``learning_rate`` / ``clip_range``."""
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
    for key, choices in (("learner", LEARNERS), ("precision", PRECISIONS)):
        if key in block and block[key] not in choices:
            raise ValueError(f"{where}.{key} must be one of {choices}, got {_short(block[key])}")
    fast = block.get("fast")
    if isinstance(fast, Mapping):  # checked here too, so a recipe that sb3 runs ignore is still right
        if "precision" in fast and fast["precision"] not in PRECISIONS:
            raise ValueError(f"{where}.fast.precision must be one of {PRECISIONS}, "
                             f"got {_short(fast['precision'])}")
        _validate_values(fast, f"{where}.fast")
    threads = block.get("threads", "auto")
    if threads != "auto" and not (_is_count(threads, 1) and threads <= MAX_THREADS):
        raise ValueError(f"{where}.threads must be auto or an integer in 1..{MAX_THREADS}, "
                         f"got {_short(threads)}")
    _validate_values(block, where)
    _validate_combinations(block, where)


def _validate_combinations(block: Mapping[str, Any], where: str) -> None:
    """Settings that are each valid but contradict each other."""
    present, freq = _lookup(block, "eval.freq")
    if present and freq > 0 and _lookup(block, "eval.episodes") == (True, 0):
        raise ValueError(f"{where}: eval.freq {freq:,} asks for periodic evaluations of 0 games; give "
                         "eval.episodes (--eval-episodes) above 0, or eval.freq 0 (--eval-freq 0) for none")
    if block.get("learner", "sb3") == "sb3" and block.get("precision", "float32") == "bfloat16":
        raise ValueError(f"{where}: precision {block['precision']} needs learner: fast (sb3-contrib's loop "
                         "trains in float32)")
    present, search = _lookup(block, "report.search_episodes")
    has_episodes, episodes = _lookup(block, "report.episodes")
    if present and has_episodes and search > episodes:
        raise ValueError(f"{where}: report.search_episodes ({search:,}) must not exceed report.episodes "
                         f"({episodes:,}): the search expert plays the first of the report's deals")


# Bounds of a config's numbers: far above any useful run, low enough that a typo (an extra zero, 1e9)
# is refused with a clear message instead of exhausting memory or hanging before the first step.
MAX_ENVS = 4096
MAX_SEED = 2**31 - 1  # torch, NumPy's legacy seeding and the per-side offsets stay within 32 bits
MAX_TIMESTEPS = 10**11
MAX_ROLLOUT = 2**24  # n_envs * n_steps: the rollout buffer holds that many observations
MAX_LAYERS = 16
MAX_LAYER_WIDTH = 4096
MAX_GAMES = 10**7
MAX_EPOCHS = 10_000
MAX_WORKERS = 256
MAX_THREADS = 256
# (key, minimum, maximum) of the whole numbers of a block and of its sections.
COUNT_BOUNDS: dict[str, tuple[int, int]] = {
    "n_envs": (1, MAX_ENVS),
    "n_timesteps": (1, MAX_TIMESTEPS),
    "n_steps": (1, MAX_ROLLOUT),
    "batch_size": (2, MAX_ROLLOUT),  # SB3 normalizes advantages over a batch: one sample is refused
    "n_epochs": (1, MAX_EPOCHS),
    "stats_window_size": (1, 10**6),
    "checkpoint_freq": (0, MAX_TIMESTEPS),
    "eval.freq": (0, MAX_TIMESTEPS),
    "eval.episodes": (0, MAX_GAMES),
    "bc.episodes": (0, MAX_GAMES),
    "bc.epochs": (0, MAX_EPOCHS),
    "bc.batch_size": (1, MAX_ROLLOUT),
    "bc.workers": (1, MAX_WORKERS),
    "bc.dagger_rounds": (0, 1000),
    "bc.dagger_episodes": (0, MAX_GAMES),
    "bc.dagger_epochs": (0, MAX_EPOCHS),
    "report.episodes": (0, MAX_GAMES),
    "report.search_episodes": (0, MAX_GAMES),
}
# (key, minimum, maximum, minimum excluded) of the real numbers.
NUMBER_BOUNDS: dict[str, tuple[float, float, bool]] = {
    "gamma": (0.0, 1.0, False),
    "gae_lambda": (0.0, 1.0, False),
    "ent_coef": (0.0, 1000.0, False),
    "vf_coef": (0.0, 1000.0, False),
    "max_grad_norm": (0.0, 1e6, True),
    "target_kl": (0.0, 1000.0, True),
    "learning_rate": (0.0, 10.0, True),
    "clip_range": (0.0, 1000.0, True),
    "clip_range_vf": (0.0, 1000.0, True),
    "bc.learning_rate": (0.0, 10.0, True),
    "bc.value_coef": (0.0, 1000.0, False),
}
BOOLEAN_KEYS = ("normalize_advantage", "eval.deterministic", "policy_kwargs.ortho_init",
                "policy_kwargs.share_features_extractor")
TEXT_KEYS = ("policy", "bc.expert", "report.search")
# May be null in a config (SB3's default: no limit / no value clipping).
NULLABLE_KEYS = ("target_kl", "clip_range_vf")
SCHEDULE_KEYS = ("learning_rate", "clip_range", "clip_range_vf")  # a number or lin_<number>
SCALAR_TYPES = (bool, int, float, str, type(None))


def _lookup(block: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    section, _, key = dotted.rpartition(".")
    where = block.get(section) if section else block
    if not isinstance(where, Mapping) or key not in where:
        return False, None
    return True, where[key]


def _validate_values(block: Mapping[str, Any], where: str) -> None:
    """Every value of a hyperparameter block: its type, and numbers finite and within bounds."""
    for name, (low, high) in COUNT_BOUNDS.items():
        present, value = _lookup(block, name)
        if present and not (_is_count(value, low) and value <= high):
            raise ValueError(f"{where}.{name} must be an integer in {low}..{high:,}, got {_short(value)}")
    for name, (low, high, low_open) in NUMBER_BOUNDS.items():
        present, value = _lookup(block, name)
        if not present or (value is None and name in NULLABLE_KEYS):
            continue
        if name.rpartition(".")[2] in SCHEDULE_KEYS and isinstance(value, str):
            parsed = parse_schedule(value, f"{where}.{name}")
            value = parsed.initial if isinstance(parsed, LinearSchedule) else parsed
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        if not (math.isfinite(number) and (low < number if low_open else low <= number) and number <= high):
            interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
            raise ValueError(f"{where}.{name} must be a finite number in {interval}, got {_short(value)}")
    for name in BOOLEAN_KEYS:
        present, value = _lookup(block, name)
        if present and not isinstance(value, bool):
            raise ValueError(f"{where}.{name} must be true or false, got {_short(value)}")
    for name in TEXT_KEYS:
        present, value = _lookup(block, name)
        if present and not (isinstance(value, str) and 0 < len(value) <= 1000):
            raise ValueError(f"{where}.{name} must be a name (text), got {_short(value)}")
    env_kwargs = block.get("env_kwargs")
    if env_kwargs is not None and (not isinstance(env_kwargs, Mapping) or not all(
        isinstance(k, str) and isinstance(v, SCALAR_TYPES) for k, v in env_kwargs.items()
    )):
        raise ValueError(f"{where}.env_kwargs must map names to numbers, text or booleans, got "
                         f"{_short(env_kwargs)}")
    kwargs = block.get("policy_kwargs")
    if isinstance(kwargs, Mapping):
        if "net_arch" in kwargs:
            _validate_net_arch(kwargs["net_arch"], f"{where}.policy_kwargs.net_arch")
        name = kwargs.get("activation_fn")
        if "activation_fn" in kwargs and (not isinstance(name, str) or name.lower() not in ACTIVATIONS):
            raise ValueError(f"{where}.policy_kwargs.activation_fn must be one of {sorted(ACTIVATIONS)}, "
                             f"got {_short(name)}")
        name = kwargs.get("features_extractor")
        if "features_extractor" in kwargs and name not in FEATURE_EXTRACTORS:
            raise ValueError(f"{where}.policy_kwargs.features_extractor must be one of "
                             f"{FEATURE_EXTRACTORS}, got {_short(name)}")


def _validate_net_arch(value: Any, where: str) -> None:
    """A list of layer widths, or ``{pi: [...], vf: [...]}`` (SB3's two forms)."""
    if isinstance(value, Mapping):
        if not value or set(value) - {"pi", "vf"}:
            raise ValueError(f"{where} must be a list of layer widths or {{pi: [...], vf: [...]}}, "
                             f"got {_short(value)}")
        for key, layers in value.items():
            _validate_layers(layers, f"{where}.{key}")
    else:
        _validate_layers(value, where)


def _validate_layers(layers: Any, where: str) -> None:
    if not isinstance(layers, list) or len(layers) > MAX_LAYERS or not all(
        _is_count(width, 1) and width <= MAX_LAYER_WIDTH for width in layers
    ):
        raise ValueError(f"{where} must be a list of at most {MAX_LAYERS} layer widths, integers in "
                         f"1..{MAX_LAYER_WIDTH}, got {_short(layers)}")


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a config's value may be huge)."""
    text = reprlib.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_count(value: Any, minimum: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


MAX_CONFIG_BYTES = 1_000_000
MAX_CONFIG_DEPTH = 32


@functools.cache
def _data_loader() -> type:
    """The YAML loader of configs, made on first use (so that ``thermopylae train --help`` needs no
    PyYAML)."""
    import yaml

    class _DataLoader(yaml.SafeLoader):
        """YAML's safe loader without aliases: a config is data, and an alias (``*name``) lets a small file
        expand into a structure of any size (the "billion laughs"), which the run would then walk. Nesting is
        bounded too."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"aliases (*{event.anchor}) are not allowed in a config", event.start_mark
                )
            self._depth = getattr(self, "_depth", 0) + 1
            try:
                if self._depth > MAX_CONFIG_DEPTH:
                    raise yaml.composer.ComposerError(
                        None, None, f"nested deeper than {MAX_CONFIG_DEPTH} levels",
                        self.peek_event().start_mark,
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return _DataLoader


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
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"{path}: a config file is at most {MAX_CONFIG_BYTES:,} bytes")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text file") from None
    import yaml

    try:
        data = yaml.load(text, Loader=_data_loader())  # noqa: S506  (a SafeLoader that refuses aliases)
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not a YAML config ({str(error).strip().splitlines()[0]})") from None
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
    for key, high in (("generations", 10_000), ("max_pool", 1000), ("heuristic_generations", 10_000),
                      ("report_episodes", MAX_GAMES)):
        low = 0 if key in ("heuristic_generations", "report_episodes") else 1
        if key in block and not (_is_count(block[key], minimum=low) and block[key] <= high):
            raise ValueError(f"{where}.{key} must be an integer in {low}..{high:,}, got {_short(block[key])}")
    for key in ("pfsp_power", "pfsp_prior_games"):
        if key in block and not math.isfinite(block[key]):
            raise ValueError(f"{where}.{key} must be a finite number, got {block[key]!r}")
    for key in ("latest_prob", "heuristic_prob"):
        value = block.get(key)
        if key in block and (isinstance(value, bool) or not isinstance(value, (int, float))
                             or not 0 <= value <= 1):
            raise ValueError(f"{where}.{key} must be a probability in [0, 1], got {_short(value)}")
    if "snapshot_deterministic" in block and not isinstance(block["snapshot_deterministic"], bool):
        raise ValueError(f"{where}.snapshot_deterministic must be true or false")
    if block.get("vec", "native") == "native" and block.get("snapshot_deterministic", True) is not True:
        raise ValueError(f"{where}: snapshot_deterministic: false needs vec: dummy (the native engine's "
                         "snapshots play their most likely legal action)")


def sized_count(full: int, floor: int, scale: float) -> int:
    """A game count of ``full`` for a run of ``scale`` times its config's budget: in proportion, rounded up,
    never below ``floor`` nor above ``full`` (the sizing of
    [`size_to_budget`][thermopylae_agents.training.config.size_to_budget], and of the RL Zoo warm start)."""
    return min(full, max(floor, math.ceil(full * scale)))


def size_to_budget(data: dict[str, Any], target: str, timesteps: int) -> dict[str, dict[str, int]]:
    """Shrink the game counts of ``data`` (in place) for a run of ``timesteps`` steps per block.

    A run shorter than its config's ``n_timesteps`` gets a warm start, periodic evaluations and a final
    report in proportion (``count * timesteps / n_timesteps``), never below the floors of
    ``BUDGET_SIZED`` nor above the config's own counts; the search expert's report games
    (``BUDGET_ROUNDED_DOWN``) are rounded down, so that a short run skips them. A single agent's periodic
    evaluation comes as often in proportion too (see ``sized_eval_freq``), so that a short run keeps the
    full run's number of points on its learning curve. Returns ``{"block.section.key": {"full": n,
    "sized": m}}`` for every count that changed, which the run records so that a resume can undo it.
    """
    changes: dict[str, dict[str, int]] = {}

    def change(where: dict[str, Any], name: str, section: str, key: str, new: int) -> None:
        full = where[section][key]
        if new != full:
            where[section][key] = new
            changes[f"{name}.{section}.{key}"] = {"full": full, "sized": new}

    def shrink(where: dict[str, Any], name: str, sized: Mapping[tuple[str, str], int], scale: float) -> None:
        for (section, key), floor in sized.items():
            if _has_count(where, section, key):
                full = where[section][key]
                change(where, name, section, key, sized_count(full, floor, scale))

    scales = []
    for env_id in env_ids_of(target):
        hp = data[env_id]
        full = int(hp.get("n_timesteps", timesteps))  # a config without n_timesteps: --timesteps is all
        scale = min(1.0, timesteps / full)
        scales.append(scale)
        hp["n_timesteps"] = int(timesteps)
        if scale < 1.0:
            shrink(hp, env_id, BUDGET_SIZED, scale)
            for section, key in BUDGET_ROUNDED_DOWN:
                if _has_count(hp, section, key):
                    change(hp, env_id, section, key, math.floor(hp[section][key] * scale))
            if target != "selfplay" and _has_count(hp, "eval", "freq"):
                change(hp, env_id, "eval", "freq", sized_eval_freq(hp, full, timesteps))
    if target == "selfplay" and min(scales) < 1.0:
        shrink(data, "top", SELFPLAY_SIZED, min(scales))
    return changes


# A short run's periodic evaluations per rollout at most. The policy changes only between rollouts, so
# the evaluations inside one rollout measure the same policy on other deals: a few give a run of two or
# three rollouts a curve to draw, more would only repeat the measurement.
EVALUATIONS_PER_ROLLOUT = 4


def sized_eval_freq(hp: Mapping[str, Any], full: int, timesteps: int) -> int:
    """The periodic evaluation's ``freq`` for a run of ``timesteps`` steps of a block whose config trains
    ``full``: the config's ``freq`` in proportion to the steps the run trains (whole rollouts), so that
    the run has as many evaluations as the config's own, but at most ``EVALUATIONS_PER_ROLLOUT`` per
    rollout and never less often than the config."""
    freq = int(hp["eval"]["freq"])
    n_envs = env_count(hp)
    rollout = rollout_size(hp)
    trained = -(-int(timesteps) // rollout) * rollout
    return min(freq, max(n_envs, rollout // EVALUATIONS_PER_ROLLOUT, math.ceil(freq * trained / full)))


# SB3's own defaults, used where a config leaves n_envs or n_steps out.
DEFAULT_N_ENVS = 8
DEFAULT_N_STEPS = 2048


def env_count(hp: Mapping[str, Any]) -> int:
    """The number of parallel envs of one env block (``n_envs``, else SB3's default)."""
    return int(hp.get("n_envs", DEFAULT_N_ENVS))


def rollout_size(hp: Mapping[str, Any]) -> int:
    """Env steps per PPO rollout of one env block: ``n_envs x n_steps``."""
    return env_count(hp) * int(hp.get("n_steps", DEFAULT_N_STEPS))


def _has_count(where: Mapping[str, Any], section: str, key: str) -> bool:
    block = where.get(section)
    return isinstance(block, dict) and _is_count(block.get(key), 1)


def _restore_full_size(data: dict[str, Any], changes: Mapping[str, Mapping[str, int]]) -> None:
    """Undo [`size_to_budget`][thermopylae_agents.training.config.size_to_budget] on a run's own
    ``config.yaml`` (before sizing it anew)."""
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
    learner: str | None = None,
    precision: str | None = None,
    threads: int | str | None = None,
    bc_episodes: int | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """The config file of ``target`` with the command-line overrides applied (plain data).

    ``run`` records the run's own settings (target, algorithm, seed, device, and the game counts that
    ``timesteps`` shrank, see [`size_to_budget`][thermopylae_agents.training.config.size_to_budget]) so that
    ``config.yaml`` alone describes, and can repeat or resume, the run.
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
    run["seed"] = seed if seed is not None else run.get("seed", 0)
    if not (_is_count(run["seed"]) and run["seed"] <= MAX_SEED):
        raise ValueError(f"seed must be an integer in 0..{MAX_SEED}, got {_short(run['seed'])}")
    run["device"] = device or run.get("device", "cpu")
    if learner is None and run["algo"] != "maskable_ppo":
        learner = "sb3"  # plain PPO runs in SB3's own loop; the fast learner is MaskablePPO's
    for env_id in env_ids_of(target):  # first: the learner's recipe is what budgets size and flags change
        _choose_learner(data[env_id], learner, f"{target}:{env_id}")
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
        for key, value in (("precision", precision), ("threads", threads)):
            if value is not None:
                hp[key] = value
        if hp.get("learner", "sb3") == "fast" and run["algo"] != "maskable_ppo":
            raise ValueError(f"{target}:{env_id}: learner fast runs maskable_ppo, not {run['algo']} "
                             "(use --learner sb3)")
        _validate_block(hp, f"{target}:{env_id}")
        if "n_timesteps" not in hp:
            raise ValueError(f"{target}:{env_id}: no n_timesteps in the config; give it there or --timesteps")
        rollout = rollout_size(hp)
        if not 2 <= rollout <= MAX_ROLLOUT:
            raise ValueError(f"{target}:{env_id}: n_envs x n_steps = {rollout:,} steps per rollout, not in "
                             f"2..{MAX_ROLLOUT:,}")
    run["device"] = check_device(run["device"])
    data["run"] = run
    return data


def _choose_learner(hp: dict[str, Any], learner: str | None, where: str) -> None:
    """Set the block's learner (``learner`` if given) and, for the fast learner, put its ``fast`` section's
    recipe over the block's; the section leaves the block either way."""
    if learner is not None:
        hp["learner"] = learner
    fast = hp.pop("fast", None)
    if fast is not None and not isinstance(fast, Mapping):
        raise ValueError(f"{where}.fast must be a mapping")
    unknown = sorted(set(fast or {}) - set(SECTION_KEYS["fast"]))
    if unknown:
        raise ValueError(f"{where}.fast: unknown key(s) {unknown}; known keys: {list(SECTION_KEYS['fast'])}")
    if hp.get("learner", "sb3") == "fast":
        hp.update(fast or {})


def check_device(device: Any) -> str:
    """``device`` if torch can train on it here (``cpu``, ``cuda``, ``cuda:N``, ``mps``, ``auto``), else a
    one-line ``ValueError``."""
    if not isinstance(device, str) or not device:
        raise ValueError(f"device must be a torch device name such as cpu or cuda, got {_short(device)}")
    if device == "auto":
        return device
    import torch as th

    try:
        parsed = th.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"device {_short(device)} is not a torch device (cpu, cuda, cuda:N, mps, auto)") \
            from None
    if parsed.type == "cuda" and (
        not th.cuda.is_available() or (parsed.index or 0) >= th.cuda.device_count()
    ):
        raise ValueError(f"device {device!r}: no such CUDA device on this machine")
    if parsed.type == "mps" and not th.backends.mps.is_available():
        raise ValueError(f"device {device!r}: MPS is not available on this machine")
    if parsed.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device {device!r}: training runs on cpu, cuda or mps")
    return device


def policy_kwargs(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """SB3 ``policy_kwargs`` from a config's: activation and features extractor names become classes."""
    import torch as th

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


def algo_class(algo: str, learner: str = "sb3") -> Any:
    """The SB3 class of ``algo`` (``maskable_ppo``: sb3_contrib's MaskablePPO, or with ``learner="fast"``
    its lean subclass [`FastMaskablePPO`][thermopylae_agents.training.fast_ppo.FastMaskablePPO];
    ``ppo``: plain PPO)."""
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
    if learner == "fast":
        if algo != "maskable_ppo":
            raise ValueError(f"learner fast runs maskable_ppo, not {algo!r}")
        from thermopylae_agents.training.fast_ppo import FastMaskablePPO

        return FastMaskablePPO
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO
    raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
