"""Configuration: the project's YAML files, strictly checked, and the run's resolved settings.

The files are keyed by env id but are not RL Zoo's format (rl_zoo3 reads ``configs/rl_zoo/``).

A hyperparameter file maps an environment id to its block (``n_envs``, ``n_timesteps``, PPO keywords,
``policy_kwargs``, and the sections ``eval``, ``bc``, ``report``; self-play adds a ``selfplay`` block).
Each block is declared as a dataclass, a field per key with its type, bounds and default
([`HyperparameterBlock`][thermopylae_agents.training.config.HyperparameterBlock] and its sections), and
checked against it; a key that the pipeline does not know is an error.
[`Config`][thermopylae_agents.training.config.Config] remembers which keys were read, so the tests prove
that every key of a shipped file has an effect.
"""

from __future__ import annotations

import copy
import functools
import math
import os
import reprlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID

__all__ = [
    "check_device", "ALGOS", "LEARNERS", "PRECISIONS", "CONFIG_DIR", "CONFIG_FILES",
    "ENV_IDS", "TARGETS", "VEC_KINDS", "BcSection", "Config", "EvalSection",
    "FastSection", "HyperparameterBlock", "LinearSchedule", "PolicyKwargs", "PPOKeywords", "ReportSection",
    "Schema", "SelfplaySection", "setting", "env_ids_of", "load_config", "parse_schedule", "policy_kwargs",
    "ppo_kwargs", "resolve_config", "size_to_budget", "sized_count", "sized_eval_freq", "env_count",
    "rollout_size",
]

TARGETS = ("coop", "duel-greek", "duel-persian", "selfplay")
ALGOS = ("maskable_ppo", "ppo")
# Who runs PPO's loop: thermopylae_agents.training.fast_ppo (fast) or sb3-contrib's own (sb3). The same
# algorithm, model files and callbacks either way; fast needs maskable_ppo.
Learner = Literal["fast", "sb3"]
# Of the fast learner's matrix products; auto: bfloat16 where the CPU has bfloat16 instructions.
Precision = Literal["auto", "float32", "bfloat16"]
VecKind = Literal["native", "dummy", "subproc"]
FeatureExtractor = Literal["flatten", "coop_fight"]
LEARNERS, PRECISIONS, VEC_KINDS = get_args(Learner), get_args(Precision), get_args(VecKind)
FEATURE_EXTRACTORS = get_args(FeatureExtractor)
ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU", "elu": "ELU", "leaky_relu": "LeakyReLU", "gelu": "GELU"}
ENV_IDS = {"coop": COOP_ID, "duel-greek": GREEK_ID, "duel-persian": PERSIAN_ID}
CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
CONFIG_FILES = {
    "coop": CONFIG_DIR / "coop.yaml",
    "duel-greek": CONFIG_DIR / "duel_greek.yaml",
    "duel-persian": CONFIG_DIR / "duel_persian.yaml",
    "selfplay": CONFIG_DIR / "selfplay.yaml",
}
# SB3's own defaults, used where a config leaves n_envs or n_steps out.
DEFAULT_N_ENVS = 8
DEFAULT_N_STEPS = 2048


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


# ------------------------------------------------------------------------------------------------ the schema

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
MAX_NAME = 1000  # characters of a name (a policy class, an agent spec)

Scalar = bool | int | float | str | None
NetArch = list[int] | dict[str, list[int]]  # SB3's two forms: one list for both, or {pi: [...], vf: [...]}
_Block = TypeVar("_Block", bound="Schema")


def setting(default: Any = MISSING, between: tuple[float, float] | None = None, *, open_low: bool = False,
            check: Callable[[Any], str | None] | None = None) -> Any:
    """A key of a [`Schema`][thermopylae_agents.training.config.Schema] with what its type alone does not
    say: ``default`` (what the pipeline uses when the key is left out; none: the key is required), the
    interval of a number (``between``, the low end left out with ``open_low``), or a ``check`` of its own
    (what the value must be, or ``None`` when it is right)."""
    return field(default=default, metadata={"between": between, "open_low": open_low, "check": check})


class Schema:
    """A block of a config file declared as a dataclass: a field per key, of the key's name, typed and
    bounded ([`setting`][thermopylae_agents.training.config.setting]); a section is a field typed with
    another schema. The pipeline still reads the file's own data, through
    [`Config`][thermopylae_agents.training.config.Config], which tracks the keys read."""

    @classmethod
    def parse(cls: type[_Block], data: Any, where: str) -> _Block:
        """``data`` checked against the schema, defaults filled in; a one-line ``ValueError`` naming
        ``where`` and the key at the first problem."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where} must be a mapping, got {_short(data)}")
        keys = {f.name: f for f in fields(cls)}
        unknown = sorted((key for key in data if key not in keys), key=str)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(keys)}")
        missing = [name for name, f in keys.items() if name not in data and f.default is MISSING]
        if missing:
            raise ValueError(f"{where}: missing key(s) {missing}")
        hints = get_type_hints(cls)
        block = cls(**{key: _checked(hints[key], value, keys[key].metadata, f"{where}.{key}")
                       for key, value in data.items()})
        block.check(where)
        return block

    def check(self, where: str) -> None:
        """Refuse keys that are each valid but contradict each other (a schema with such keys says which)."""


def _checked(hint: Any, value: Any, meta: Mapping[str, Any], where: str) -> Any:
    """``value`` of the key ``where`` if it fits ``hint`` (a section: its parsed schema), else a
    ``ValueError``."""
    kinds = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    if value is None and type(None) in kinds:
        return None
    section = [kind for kind in kinds if isinstance(kind, type) and issubclass(kind, Schema)]
    if section:
        return section[0].parse(value, where)
    if meta.get("check"):
        problem = meta["check"](value)
    else:
        wanted = [_fits(kind, value, meta, where) for kind in kinds if kind is not type(None)]
        problem = None if any(fits for fits, _ in wanted) else "must be " + " or ".join(t for _, t in wanted)
    if problem:
        raise ValueError(f"{where} {problem}, got {_short(value)}")
    return value


def _fits(member: Any, value: Any, meta: Mapping[str, Any], where: str) -> tuple[bool, str]:
    """Whether ``value`` is of the type ``member`` (within the key's bounds), and that type in words."""
    low, high = meta.get("between") or (None, None)
    open_low = meta.get("open_low", False)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if member is bool:
        return isinstance(value, bool), "true or false"
    if member is int:
        return number and isinstance(value, int) and low <= value <= high, f"an integer in {low}..{high:,}"
    if member is float:
        interval = f"{'(' if open_low else '['}{low:g}, {high:g}{')' if high == math.inf else ']'}"
        finite = number and math.isfinite(value)
        inside = finite and (low < value if open_low else low <= value) and value <= high
        return inside, f"a finite number in {interval}"
    if member is LinearSchedule:  # lin_<x>, or a number that YAML read as text (3e-4)
        if not isinstance(value, str):
            return False, "lin_<such a number>"
        parsed = parse_schedule(value, where)
        initial = parsed.initial if isinstance(parsed, LinearSchedule) else parsed
        return _fits(float, initial, meta, where)[0], "lin_<such a number>"
    if member is str:
        return isinstance(value, str) and 0 < len(value) <= MAX_NAME, "a name (text)"
    if get_origin(member) is Literal:
        choices = get_args(member)
        text = choices[0] if len(choices) == 1 else f"one of {choices}"
        return isinstance(value, str) and value in choices, text
    if get_origin(member) is dict:
        fits = isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, Scalar)
                                                  for k, v in value.items())
        return fits, "a mapping of names to numbers, text or booleans"
    raise TypeError(f"{where}: no rule for the type {member!r}")


def _net_arch_problem(value: Any) -> str | None:
    def layers(widths: Any) -> bool:
        return isinstance(widths, list) and len(widths) <= MAX_LAYERS and all(
            _is_count(width, 1) and width <= MAX_LAYER_WIDTH for width in widths)

    if layers(value) or (isinstance(value, Mapping) and value and set(value) <= {"pi", "vf"}
                         and all(map(layers, value.values()))):
        return None
    return (f"must be a list of at most {MAX_LAYERS} layer widths (integers in 1..{MAX_LAYER_WIDTH}) or "
            "{pi: [...], vf: [...]} of two such lists")


def _activation_problem(value: Any) -> str | None:
    if isinstance(value, str) and value.lower() in ACTIVATIONS:
        return None
    return f"must be one of {sorted(ACTIVATIONS)}"


@dataclass(frozen=True, kw_only=True)
class PolicyKwargs(Schema):
    """``policy_kwargs``: the network (SB3's ``policy_kwargs``, names for classes; see
    [`policy_kwargs`][thermopylae_agents.training.config.policy_kwargs])."""

    net_arch: NetArch = setting(None, check=_net_arch_problem)  # None: SB3's [64, 64]
    activation_fn: str = setting("tanh", check=_activation_problem)
    ortho_init: bool = True
    share_features_extractor: bool = True
    features_extractor: FeatureExtractor = "flatten"


@dataclass(frozen=True, kw_only=True)
class EvalSection(Schema):
    """``eval``: the periodic evaluation during PPO (``evaluations.npz``)."""

    freq: int = setting(0, (0, MAX_TIMESTEPS))  # env steps between evaluations; 0: none
    episodes: int = setting(200, (0, MAX_GAMES))
    deterministic: bool = True


@dataclass(frozen=True, kw_only=True)
class BcSection(Schema):
    """``bc``: the behaviour-cloning warm start before PPO, with its DAgger rounds."""

    expert: str = "heuristic"
    episodes: int = setting(between=(0, MAX_GAMES))
    epochs: int = setting(5, (0, MAX_EPOCHS))
    batch_size: int = setting(256, (1, MAX_ROLLOUT))
    learning_rate: float = setting(1e-3, (0.0, 10.0), open_low=True)
    value_coef: float = setting(0.5, (0.0, 1000.0))
    workers: int = setting(1, (1, MAX_WORKERS))
    dagger_rounds: int = setting(0, (0, 1000))
    dagger_episodes: int = setting(None, (0, MAX_GAMES))  # needed by DAgger rounds only
    dagger_epochs: int = setting(2, (0, MAX_EPOCHS))

    def check(self, where: str) -> None:
        if self.dagger_rounds > 0 and self.dagger_episodes is None:
            raise ValueError(f"{where}: dagger_rounds {self.dagger_rounds} needs dagger_episodes")


@dataclass(frozen=True, kw_only=True)
class ReportSection(Schema):
    """``report``: the final evaluation against the baselines (``report.json``)."""

    episodes: int = setting(1000, (0, MAX_GAMES))
    search: str = "search"  # the co-op search expert's spec
    search_episodes: int = setting(0, (0, MAX_GAMES))  # its games: the first of the report's deals


@dataclass(frozen=True, kw_only=True)
class PPOKeywords(Schema):
    """The keyword arguments of (Maskable)PPO that a block may set, with SB3's own defaults."""

    learning_rate: float | LinearSchedule = setting(3e-4, (0.0, 10.0), open_low=True)
    n_steps: int = setting(DEFAULT_N_STEPS, (1, MAX_ROLLOUT))
    batch_size: int = setting(64, (2, MAX_ROLLOUT))  # SB3 normalizes advantages over a batch: not 1
    n_epochs: int = setting(10, (1, MAX_EPOCHS))
    gamma: float = setting(0.99, (0.0, 1.0))
    gae_lambda: float = setting(0.95, (0.0, 1.0))
    clip_range: float | LinearSchedule = setting(0.2, (0.0, 1000.0), open_low=True)
    clip_range_vf: float | LinearSchedule | None = setting(None, (0.0, 1000.0), open_low=True)  # None: none
    normalize_advantage: bool = True
    ent_coef: float = setting(0.0, (0.0, 1000.0))
    vf_coef: float = setting(0.5, (0.0, 1000.0))
    max_grad_norm: float = setting(0.5, (0.0, 1e6), open_low=True)
    target_kl: float | None = setting(None, (0.0, 1000.0), open_low=True)  # None: no limit
    stats_window_size: int = setting(100, (1, 10**6))


@dataclass(frozen=True, kw_only=True)
class HyperparameterBlock(PPOKeywords):
    """A hyperparameter block (one environment id of a config file): the PPO keywords, the run's own keys
    and the sections."""

    env_kwargs: dict[str, Scalar] | None = None  # for gymnasium.make
    n_envs: int = setting(DEFAULT_N_ENVS, (1, MAX_ENVS))
    n_timesteps: int = setting(None, (1, MAX_TIMESTEPS))  # None: --timesteps must give it
    policy: str = "MlpPolicy"
    policy_kwargs: PolicyKwargs | None = None
    vec: VecKind = "native"
    learner: Learner = "sb3"
    precision: Precision = "auto"
    threads: Literal["auto"] | int = setting("auto", (1, MAX_THREADS))
    fast: FastSection | None = None  # the fast learner's recipe, over the block's when the learner is fast
    checkpoint_freq: int = setting(0, (0, MAX_TIMESTEPS))  # env steps between checkpoints; 0: none
    eval: EvalSection | None = None
    bc: BcSection | None = None
    report: ReportSection | None = None

    def check(self, where: str) -> None:
        evaluation, report = self.eval or EvalSection(), self.report or ReportSection()
        if evaluation.freq > 0 and evaluation.episodes == 0:
            raise ValueError(f"{where}: eval.freq {evaluation.freq:,} asks for periodic evaluations of 0 "
                             "games; give eval.episodes (--eval-episodes) above 0, or eval.freq 0 "
                             "(--eval-freq 0) for none")
        if self.learner == "sb3" and self.precision == "bfloat16":
            raise ValueError(f"{where}: precision {self.precision} needs learner: fast (sb3-contrib's loop "
                             "trains in float32)")
        if report.search_episodes > report.episodes:
            raise ValueError(f"{where}: report.search_episodes ({report.search_episodes:,}) must not "
                             f"exceed report.episodes ({report.episodes:,}): the search expert plays the "
                             "first of the report's deals")
        rollout = self.n_envs * self.n_steps
        if not 2 <= rollout <= MAX_ROLLOUT:
            raise ValueError(f"{where}: n_envs x n_steps = {rollout:,} steps per rollout, not in "
                             f"2..{MAX_ROLLOUT:,}")


def _same_as(block: type, key: str) -> Any:
    """The key ``key`` of ``block`` again, with its bounds and no default (the block's value stands)."""
    return field(default=None, metadata={f.name: f for f in fields(block)}[key].metadata)


@dataclass(frozen=True, kw_only=True)
class FastSection(Schema):
    """``fast``: the fast learner's own recipe, which replaces the block's keys of the same names when the
    learner is fast (and is checked either way, so that a recipe an sb3 run ignores is still right)."""

    n_envs: int = _same_as(HyperparameterBlock, "n_envs")
    n_steps: int = _same_as(HyperparameterBlock, "n_steps")
    batch_size: int = _same_as(HyperparameterBlock, "batch_size")
    n_epochs: int = _same_as(HyperparameterBlock, "n_epochs")
    learning_rate: float | LinearSchedule = _same_as(HyperparameterBlock, "learning_rate")
    precision: Precision = _same_as(HyperparameterBlock, "precision")


@dataclass(frozen=True, kw_only=True)
class SelfplaySection(Schema):
    """``selfplay``: the alternation of the duel sides and their pools of opponents."""

    generations: int = setting(between=(1, 10_000))
    vec: Literal["native", "dummy"] = "native"  # native: the vector engine and the PFSP pool
    pfsp_power: float = setting(2.0, (0.0, math.inf), open_low=True)
    pfsp_prior_games: float = setting(2.0, (0.0, math.inf), open_low=True)
    latest_prob: float = setting(0.4, (0.0, 1.0))  # the pool of vec: dummy
    heuristic_prob: float = setting(0.3, (0.0, 1.0))
    heuristic_generations: int = setting(None, (0, 10_000))  # None: every generation
    max_pool: int = setting(5, (1, 1000))
    snapshot_deterministic: bool = True
    report_episodes: int = setting(1000, (0, MAX_GAMES))

    def check(self, where: str) -> None:
        if self.vec == "native" and not self.snapshot_deterministic:
            raise ValueError(f"{where}: snapshot_deterministic: false needs vec: dummy (the native engine's "
                             "snapshots play their most likely legal action)")


PPO_KEYS = tuple(f.name for f in fields(PPOKeywords))


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
    import yaml  # extra: train

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
    import yaml  # extra: train

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
        HyperparameterBlock.parse(data[env_id], f"{path}:{env_id}")
    if target == "selfplay":
        if not isinstance(data.get("selfplay"), Mapping):
            raise ValueError(f"{path}: missing the 'selfplay' block")
        SelfplaySection.parse(data["selfplay"], f"{path}:selfplay")
    return dict(data)


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
    if timesteps is not None and not _is_count(timesteps, 1):  # sizes the counts before the block's check
        raise ValueError(f"timesteps must be a positive integer, got {_short(timesteps)}")
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
        _choose_learner(data[env_id], learner)
    if timesteps is not None:
        _restore_full_size(data, run.get("sized_to_budget") or {})
        run["sized_to_budget"] = size_to_budget(data, target, int(timesteps))
    overrides = {"n_envs": n_envs, "vec": vec, "precision": precision, "threads": threads,  # learner: above
                 "eval.freq": eval_freq, "eval.episodes": eval_episodes, "bc.episodes": bc_episodes}
    for env_id in env_ids_of(target):
        hp = data[env_id]
        for key, value in overrides.items():  # checked with the block's own keys below
            section, _, name = key.rpartition(".")
            if value is not None and section:
                hp[section] = {**(hp.get(section) or {}), name: value}
            elif value is not None:
                hp[name] = value
        if hp.get("learner", "sb3") == "fast" and run["algo"] != "maskable_ppo":
            raise ValueError(f"{target}:{env_id}: learner fast runs maskable_ppo, not {run['algo']} "
                             "(use --learner sb3)")
        HyperparameterBlock.parse(hp, f"{target}:{env_id}")
        if "n_timesteps" not in hp:
            raise ValueError(f"{target}:{env_id}: no n_timesteps in the config; give it there or --timesteps")
    run["device"] = check_device(run["device"])
    data["run"] = run
    return data


def _choose_learner(hp: dict[str, Any], learner: str | None) -> None:
    """Set the block's learner (``learner`` if given) and, for the fast learner, put its ``fast`` section's
    recipe over the block's; the section leaves the block either way."""
    if learner is not None:
        hp["learner"] = learner
    fast = hp.pop("fast", None)  # checked with the block (FastSection) when the file was read
    if hp.get("learner", "sb3") == "fast":
        hp.update(fast or {})


def check_device(device: Any) -> str:
    """``device`` if torch can train on it here (``cpu``, ``cuda``, ``cuda:N``, ``mps``, ``auto``), else a
    one-line ``ValueError``."""
    if not isinstance(device, str) or not device:
        raise ValueError(f"device must be a torch device name such as cpu or cuda, got {_short(device)}")
    if device == "auto":
        return device
    import torch as th  # extra: train

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
    """SB3 ``policy_kwargs`` from a config's (checked against
    [`PolicyKwargs`][thermopylae_agents.training.config.PolicyKwargs]): activation and features extractor
    names become classes."""
    import torch as th  # extra: train

    from thermopylae_agents.training.fight_features import CoopFightFeatures  # extra: train

    PolicyKwargs.parse(raw or {}, "policy_kwargs")
    kwargs = dict(raw or {})
    if "activation_fn" in kwargs:
        kwargs["activation_fn"] = getattr(th.nn, ACTIVATIONS[kwargs["activation_fn"].lower()])
    if "net_arch" in kwargs and isinstance(kwargs["net_arch"], Mapping):
        kwargs["net_arch"] = dict(kwargs["net_arch"])
    if kwargs.pop("features_extractor", None) == "coop_fight":
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
