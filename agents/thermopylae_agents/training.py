"""Train PPO agents for the thermopylae environments (``thermopylae-train``, ``scripts/train.py``).

::

    thermopylae-train coop                        # MaskablePPO on Coop-v0 with configs/coop.yaml
    thermopylae-train duel-greek --timesteps 200000 --seed 3
    thermopylae-train duel-persian --algo ppo     # plain PPO: an illegal action ends the episode as a loss
    thermopylae-train selfplay                    # both duel sides, in alternation, against snapshot pools
    thermopylae-train coop --resume runs/coop-maskable_ppo-seed0   # continue a run (its config, its counter)

Every run writes one folder (``--out``, default ``runs/<target>-<algo>-seed<seed>``)::

    config.yaml         the configuration as resolved (file + command line), written before training
    tb/                 TensorBoard logs (``tensorboard --logdir runs``)
    checkpoints/        CheckpointCallback snapshots (``model_<steps>_steps.zip``)
    eval/               MaskableEvalCallback: evaluations.npz (with ``successes``), best_model.zip
    final_model.zip     the trained model
    report.json         evaluation against the baselines (Wilson 95% intervals) and training throughput

Hyperparameters live in readable YAML files, one per environment, in the RL-Zoo layout (the top-level key
is the environment id, the hyperparameters below it):
``agents/thermopylae_agents/configs/{coop,duel_greek,duel_persian,
selfplay}.yaml``. A key that the pipeline does not know is an error, and the test-suite checks that every
key of every shipped file is read. ``learning_rate`` and ``clip_range`` take a number or ``lin_<x>`` (a
linear decay from ``x`` to 0, as in the zoo).

All logic is here; ``scripts/train.py`` only calls :func:`main`.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
import yaml
from sb3_contrib.common.maskable.distributions import MaskableCategorical, MaskableCategoricalDistribution
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch.distributions import Categorical

__all__ = [
    "ALGOS",
    "CONFIG_DIR",
    "CONFIG_FILES",
    "ENV_IDS",
    "TARGETS",
    "VEC_KINDS",
    "Config",
    "LinearSchedule",
    "build_parser",
    "load_config",
    "main",
    "train",
    "train_selfplay",
]

TARGETS = ("coop", "duel-greek", "duel-persian", "selfplay")
ALGOS = ("maskable_ppo", "ppo")
VEC_KINDS = ("native", "dummy", "subproc")
COOP_ID = "thermopylae/Coop-v0"
GREEK_ID = "thermopylae/DuelGreek-v0"
PERSIAN_ID = "thermopylae/DuelPersian-v0"
ENV_IDS = {"coop": COOP_ID, "duel-greek": GREEK_ID, "duel-persian": PERSIAN_ID}
CONFIG_DIR = Path(__file__).resolve().parent / "configs"
CONFIG_FILES = {
    "coop": CONFIG_DIR / "coop.yaml",
    "duel-greek": CONFIG_DIR / "duel_greek.yaml",
    "duel-persian": CONFIG_DIR / "duel_persian.yaml",
    "selfplay": CONFIG_DIR / "selfplay.yaml",
}

# Keyword arguments of (Maskable)PPO that a config may set, with the model attribute each ends up in.
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


# --------------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------------


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


def _schedule(value: Any, key: str) -> float | LinearSchedule:
    if isinstance(value, str):
        if value.startswith("lin_"):
            return LinearSchedule(float(value[4:]))
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
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


def load_config(target: str, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Read and check the YAML config of ``target`` (the shipped file unless ``path`` is given).

    Returns the plain mapping ``{env_id: hyperparameters, ...}`` (plus ``selfplay`` for self-play and
    ``run`` for a config written by a run, which holds the run's own settings such as its seed).
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    path = Path(path) if path is not None else CONFIG_FILES[target]
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: a config file must be a mapping of environment id to hyperparameters")
    expected = [GREEK_ID, PERSIAN_ID] if target == "selfplay" else [ENV_IDS[target]]
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
    return dict(data)


def _policy_kwargs(raw: Mapping[str, Any] | None) -> dict[str, Any]:
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


# --------------------------------------------------------------------------------------------------------
# Co-op fight features
# --------------------------------------------------------------------------------------------------------

# Observation indices of the co-op layout (docs/coop_spec.md) that the fight features read.
_SLOT1 = 55  # present, white/30, red/30, bonus
_SLOT2 = 59
_MARKER_3, _MARKER_6 = 65, 68  # one-hot entries of markers 3 and 6 (a location die)
_CARD_VALUES = np.arange(10, 21, dtype=np.float32)
_MAX_DICE = 5
_NUM_SUPPORT = 4
_TAIL_OFFSET = 30


def dice_tail_table(max_dice: int = _MAX_DICE, offset: int = _TAIL_OFFSET) -> np.ndarray:
    """``table[k, d + offset]`` = P(sum of ``k`` six-sided dice >= ``d``), for ``-offset <= d <= offset``."""
    pmf = [np.array([1.0])]
    for _ in range(max_dice):
        pmf.append(np.convolve(pmf[-1], np.full(6, 1.0 / 6.0)))
    table = np.zeros((max_dice + 1, 2 * offset + 1), np.float64)
    for k, p in enumerate(pmf):
        sums = np.arange(len(p)) + k  # p[j] = P(sum == j + k)
        for index, d in enumerate(range(-offset, offset + 1)):
            table[k, index] = p[sums >= d].sum()
    return table.astype(np.float32)


# Every fight feature is ``P(v + min(s + location, 5) dice >= t)`` for a threshold ``t``; thresholds below
# -30 or above 60 give the same odds as these ends (``need`` is clipped to the tail table), so the odds of
# all thresholds in between, per location, make a small table that one lookup per threshold reads.
_MIN_THRESHOLD, _MAX_THRESHOLD = -_TAIL_OFFSET, 2 * _TAIL_OFFSET
_NUM_THRESHOLDS = _MAX_THRESHOLD - _MIN_THRESHOLD + 1
_NUM_ODDS = len(_CARD_VALUES) * (_NUM_SUPPORT + 1)  # 55 per threshold: value-major, support-minor
_SLOT_VALUES = [_SLOT1 + 1, _SLOT1 + 2, _SLOT2 + 1, _SLOT2 + 2]  # white1, red1, white2, red2 (/30)


def fight_odds_table() -> np.ndarray:
    """``table[location * 91 + t + 30, (v - 10) * 5 + s]`` = P(``v`` + ``min(s + location, 5)`` dice
    >= ``t``) for locations 0..5 (dice from the marker), thresholds ``-30 <= t <= 60``, card values
    ``v`` 10..20 and support counts ``s`` 0..4: float32 (546, 55), entries of :func:`dice_tail_table`."""
    tail = dice_tail_table()
    locations = np.arange(_MAX_DICE + 1)
    dice = np.minimum(np.arange(_NUM_SUPPORT + 1)[None, :] + locations[:, None], _MAX_DICE)  # (L, S)
    thresholds = np.arange(_MIN_THRESHOLD, _MAX_THRESHOLD + 1)
    need = np.clip(thresholds[:, None] - _CARD_VALUES[None, :] + _TAIL_OFFSET, 0, 2 * _TAIL_OFFSET)
    table = tail[dice[:, None, None, :], need.astype(np.int64)[None, :, :, None]]  # (L, T, V, S)
    return np.ascontiguousarray(table.reshape(len(locations) * _NUM_THRESHOLDS, _NUM_ODDS))


def _fight_rows(location: Any, w1: Any, r1: Any, w2: Any, r2: Any, lib: Any) -> Any:
    """Rows of :func:`fight_odds_table` for the four thresholds of each observation, (B, 4)."""
    thresholds = lib.stack([w1, r1, lib.maximum(w1, w2), lib.maximum(w1, r2)], 1)
    return location[:, None] * _NUM_THRESHOLDS + thresholds - _MIN_THRESHOLD


class CoopFightFeatures(BaseFeaturesExtractor):
    """The co-op observation plus the exact odds of every fight against the current line.

    For each card value ``v`` (10..20) and support count ``s`` (0..4), with ``k = s`` dice plus the
    location die on markers 3 and 6, the probabilities that ``S = v + k dice`` reaches slot 1's white
    and red values and, for slot 2 (fought only when slot 1 falls, with the same ``S``), ``max(white1,
    white2)`` and ``max(white1, red2)``: 11 x 5 x 4 = 220 numbers, all read off the observation.

    Why: these odds are what decides which card to fight with, and an MLP learns the threshold arithmetic
    of dice sums only slowly; given them, imitation of the heuristic went from 91% to 96% agreement.
    ``numpy_features`` computes the same vector without torch (fast single-game inference).

    How: the 55 odds of one threshold are one row of :func:`fight_odds_table` (a constant, 120 KB), so
    a batch costs four row lookups per observation instead of 220 gathers with index tensors (7x faster
    on a training minibatch; the numbers are the same, bit for bit). The buffers ``tail``, ``values``
    and ``supports`` of the first version are kept so that saved models load unchanged.
    """

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        size = int(observation_space.shape[0])
        super().__init__(observation_space, features_dim=size + _NUM_ODDS * 4)
        self.register_buffer("tail", th.as_tensor(dice_tail_table()))
        self.register_buffer("values", th.as_tensor(_CARD_VALUES))
        self.register_buffer("supports", th.arange(_NUM_SUPPORT + 1))
        # Not saved (persistent=False): rebuilt here, so models saved before it existed still load.
        self.register_buffer("odds", th.as_tensor(_numpy_odds()), persistent=False)
        self.register_buffer("slot_values", th.as_tensor(_SLOT_VALUES), persistent=False)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        obs = observations.float()
        batch = obs.shape[0]
        location = (obs[:, _MARKER_3] + obs[:, _MARKER_6]).round().long().clamp(0, _MAX_DICE)
        slots = (obs.index_select(1, self.slot_values) * 30).round().clamp(_MIN_THRESHOLD, _MAX_THRESHOLD)
        rows = _fight_rows(location, *slots.long().unbind(1), lib=th)  # (B, 4)
        odds = th.nn.functional.embedding(rows, self.odds)  # (B, 4, 55)
        p1, p2 = obs[:, _SLOT1], obs[:, _SLOT2]
        present = th.stack([p1, p1, p1 * p2, p1 * p2], 1)
        fights = (odds * present[:, :, None]).transpose(1, 2).reshape(batch, -1)  # (B, 55 * 4)
        return th.cat([obs, fights], 1)

    @staticmethod
    def numpy_features(observation: np.ndarray) -> np.ndarray:
        """The same features for one observation (115,) or a batch (B, 115), in NumPy."""
        obs = np.atleast_2d(np.asarray(observation, dtype=np.float32))
        location = np.clip(np.rint(obs[:, _MARKER_3] + obs[:, _MARKER_6]), 0, _MAX_DICE).astype(np.int64)
        slots = np.clip(np.rint(obs[:, _SLOT_VALUES] * 30), _MIN_THRESHOLD, _MAX_THRESHOLD).astype(np.int64)
        rows = _fight_rows(location, *slots.T, lib=np)
        odds = _numpy_odds()[rows]  # (B, 4, 55)
        p1, p2 = obs[:, _SLOT1], obs[:, _SLOT2]
        present = np.stack([p1, p1, p1 * p2, p1 * p2], 1)
        fights = (odds * present[:, :, None]).transpose(0, 2, 1).reshape(obs.shape[0], -1)
        features = np.concatenate([obs, fights], 1)
        return features[0] if np.ndim(observation) == 1 else features


_ODDS_CACHE: list[np.ndarray] = []


def _numpy_odds() -> np.ndarray:
    if not _ODDS_CACHE:
        _ODDS_CACHE.append(fight_odds_table())
    return _ODDS_CACHE[0]


# --------------------------------------------------------------------------------------------------------
# Environments
# --------------------------------------------------------------------------------------------------------


def _register_envs() -> None:
    import thermopylae_env  # noqa: F401  (importing registers the environments)


def make_env_fn(
    env_id: str, env_kwargs: Mapping[str, Any], wrapper: Callable[[gym.Env], gym.Env] | None = None
) -> Callable[[], gym.Env]:
    """A thunk building one Monitor-wrapped environment (what SB3's vectorized envs take)."""
    from stable_baselines3.common.monitor import Monitor

    kwargs = dict(env_kwargs)

    def thunk() -> gym.Env:
        _register_envs()
        env = gym.make(env_id, **kwargs)
        if wrapper is not None:
            env = wrapper(env)
        return Monitor(env, info_keywords=("is_success",))

    return thunk


def _native_coop_vec_env(n_envs: int, env_kwargs: Mapping[str, Any]):
    """The native NumPy co-op engine as an SB3 ``VecEnv`` (it records episode statistics itself)."""
    from thermopylae_env.sb3_vec import CoopSB3VecEnv

    return CoopSB3VecEnv(n_envs, **dict(env_kwargs))


def build_vec_env(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    n_envs: int,
    seed: int,
    vec: str = "dummy",
    wrapper: Callable[[gym.Env], gym.Env] | None = None,
):
    """``n_envs`` copies of ``env_id`` as one SB3 ``VecEnv`` (episode statistics recorded), seeded.

    ``vec="native"`` (co-op only) uses the NumPy vector engine; ``"dummy"`` / ``"subproc"`` stack single
    environments in this process / in worker processes. Environment ``i`` is seeded with ``seed + i``.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if vec not in VEC_KINDS:
        raise ValueError(f"vec must be one of {VEC_KINDS}, got {vec!r}")
    if vec == "native":
        if env_id != COOP_ID:
            raise ValueError(f"the native vector engine exists for {COOP_ID} only, not {env_id}")
        if wrapper is not None:
            raise ValueError("a per-env wrapper needs vec='dummy' or 'subproc'")
        venv = _native_coop_vec_env(n_envs, env_kwargs)
    else:
        fns = [make_env_fn(env_id, env_kwargs, wrapper) for _ in range(n_envs)]
        venv = SubprocVecEnv(fns) if vec == "subproc" else DummyVecEnv(fns)
    venv.seed(seed)
    return venv


def build_eval_env(env_id: str, env_kwargs: Mapping[str, Any], n_envs: int, seed: int, vec: str):
    """The env of the periodic evaluation: like the training env, without reward shaping, other seeds."""
    kind = "native" if vec == "native" else "dummy"
    return build_vec_env(env_id, _eval_env_kwargs(env_id, env_kwargs), n_envs, seed, kind)


def _eval_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The training env's settings without reward shaping: evaluation reports the true +1/-1 reward."""
    kwargs = dict(env_kwargs)
    kwargs.pop("reward_shaping", None)
    return kwargs


# --------------------------------------------------------------------------------------------------------
# Model, callbacks, throughput
# --------------------------------------------------------------------------------------------------------


def _algo_class(algo: str):
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO
    raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")


def ppo_kwargs(hp: Config) -> dict[str, Any]:
    """The (Maskable)PPO keyword arguments of a hyperparameter block (schedules parsed)."""
    kwargs: dict[str, Any] = {}
    for key in PPO_KEYS:
        if key not in hp:
            continue
        value = hp[key]
        if key in ("learning_rate", "clip_range") or (key == "clip_range_vf" and value is not None):
            value = _schedule(value, key)
        kwargs[key] = value
    return kwargs


class OnePassMaskableCategorical(MaskableCategorical):
    """sb3-contrib's ``MaskableCategorical`` that normalizes the logits once per masking.

    The original builds the distribution three times for one masked evaluation (construction, its own
    ``apply_masking(None)``, then the policy's ``apply_masking(masks)``): three log-sum-exps over the
    (batch, 72) logits, all three in the autograd graph, plus argument checks. Here the masked raw logits
    are normalized once, without argument validation: the same distribution (log-probabilities equal to
    float rounding), a quarter less time per PPO update on the co-op config. Sampling (rollout
    collection) draws from the cumulative probabilities instead of calling ``torch.multinomial``.
    """

    def __init__(self, logits: th.Tensor) -> None:
        self.masks = None
        self._raw_logits = logits
        Categorical.__init__(self, logits=logits, validate_args=False)
        self._original_logits = self.logits

    def apply_masking(self, masks: Any) -> None:
        if masks is None:
            self.masks = None
            logits = self._raw_logits
        else:
            raw = self._raw_logits
            self.masks = th.as_tensor(masks, dtype=th.bool, device=raw.device).reshape(raw.shape)
            logits = th.where(self.masks, raw, -1e8)  # -1e8: sb3-contrib's stand-in for -inf
        self.__dict__.pop("probs", None)  # lazily computed from the previous logits
        Categorical.__init__(self, logits=logits, validate_args=False)

    def sample(self, sample_shape: th.Size = th.Size()) -> th.Tensor:  # noqa: B008
        """One action per row by inverse transform sampling: a uniform draw against the cumulative
        probabilities (``torch.multinomial`` takes 5 us per row of 72 on one thread, this 0.5 us). An
        action of probability 0, a masked one, is never drawn."""
        probs = self.probs
        if len(sample_shape) or probs.dim() != 2:
            return super().sample(sample_shape)
        cdf = probs.cumsum(-1)
        total = cdf[:, -1:]
        # u * total < total, so some entry of the cdf exceeds it: the first one has a positive probability.
        draw = th.minimum(th.rand_like(total) * total, th.nextafter(total, th.zeros_like(total)))
        return th.searchsorted(cdf, draw, right=True).squeeze(-1)


class OnePassMaskableCategoricalDistribution(MaskableCategoricalDistribution):
    """``MaskableCategoricalDistribution`` over :class:`OnePassMaskableCategorical`."""

    def proba_distribution(self, action_logits: th.Tensor) -> OnePassMaskableCategoricalDistribution:
        self.distribution = OnePassMaskableCategorical(action_logits.view(-1, self.action_dim))
        return self


def speed_up_policy(model: Any) -> Any:
    """Give a maskable model's policy the one-pass masked distribution (:class:`OnePassMaskableCategorical`).

    Only the live policy object changes: saved files keep sb3-contrib's classes (the distribution holds no
    parameters), so call this again after ``load`` to train on at the same speed. Other models are
    returned as they are.
    """
    policy = getattr(model, "policy", None)
    dist = getattr(policy, "action_dist", None)
    if type(dist) is MaskableCategoricalDistribution:
        policy.action_dist = OnePassMaskableCategoricalDistribution(dist.action_dim)
    return model


def build_model(
    algo: str, env, hp: Config, seed: int, tensorboard_log: str | None, device: str, verbose: int = 0
):
    """A fresh (Maskable)PPO model for ``env`` from the hyperparameter block ``hp`` (with
    :func:`speed_up_policy` applied)."""
    cls = _algo_class(algo)
    model = cls(
        hp.get("policy", "MlpPolicy"),
        env,
        policy_kwargs=_policy_kwargs(hp.plain("policy_kwargs")),
        seed=seed,
        tensorboard_log=tensorboard_log,
        device=device,
        verbose=verbose,
        **ppo_kwargs(hp),
    )
    return speed_up_policy(model)


def _throughput_callback():
    from stable_baselines3.common.callbacks import BaseCallback

    class ThroughputCallback(BaseCallback):
        """Measures env steps per second during ``learn``: overall, and while collecting rollouts.

        Time spent in periodic evaluation and checkpointing (``excluded``, filled in by those callbacks)
        is subtracted, so the numbers describe training itself.
        """

        def __init__(self) -> None:
            super().__init__()
            self.excluded = 0.0
            self.rollout_time = 0.0
            self.wall = 0.0
            self.steps = 0
            self._start = 0.0
            self._start_steps = 0
            self._rollout_start = 0.0
            self._excluded_at_rollout = 0.0

        def _on_training_start(self) -> None:
            self._start = time.perf_counter()
            self._start_steps = self.model.num_timesteps

        def _on_rollout_start(self) -> None:
            self._rollout_start = time.perf_counter()
            self._excluded_at_rollout = self.excluded

        def _on_rollout_end(self) -> None:
            spent = time.perf_counter() - self._rollout_start
            self.rollout_time += spent - (self.excluded - self._excluded_at_rollout)

        def _on_step(self) -> bool:
            return True

        def _on_training_end(self) -> None:
            self.wall += time.perf_counter() - self._start
            self.steps += self.model.num_timesteps - self._start_steps

        def summary(self) -> dict[str, float]:
            train_time = max(self.wall - self.excluded, 1e-9)
            return {
                "env_steps": int(self.steps),
                "learn_seconds": round(self.wall, 2),
                "excluded_eval_checkpoint_seconds": round(self.excluded, 2),
                "steps_per_second": round(self.steps / train_time, 1),
                "rollout_steps_per_second": round(self.steps / max(self.rollout_time, 1e-9), 1),
            }

    return ThroughputCallback()


def _timed(callback, clock):
    """Wrap a callback's ``_on_step`` so that its time is added to ``clock.excluded``."""
    inner = callback._on_step

    def on_step() -> bool:
        start = time.perf_counter()
        try:
            return inner()
        finally:
            clock.excluded += time.perf_counter() - start

    callback._on_step = on_step
    return callback


def _callbacks(algo: str, hp: Config, run_dir: Path, eval_env, n_envs: int, clock) -> list:
    from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback

    callbacks = [clock]
    checkpoint_freq = int(hp.get("checkpoint_freq", 0))
    if checkpoint_freq > 0:
        callbacks.append(
            _timed(
                CheckpointCallback(
                    save_freq=max(checkpoint_freq // n_envs, 1),
                    save_path=str(run_dir / "checkpoints"),
                    name_prefix="model",
                ),
                clock,
            )
        )
    ev = hp.get("eval", Config({}))
    freq = int(ev.get("freq", 0))
    if freq > 0 and eval_env is not None:
        kwargs = dict(
            n_eval_episodes=int(ev.get("episodes", 200)),
            eval_freq=max(freq // n_envs, 1),
            log_path=str(run_dir / "eval"),
            best_model_save_path=str(run_dir / "eval"),
            deterministic=bool(ev.get("deterministic", True)),
            verbose=1,
            warn=False,  # the native co-op VecEnv records episodes itself; the eval env has no shaping
        )
        if algo == "maskable_ppo":
            from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback

            callbacks.append(_timed(MaskableEvalCallback(eval_env, **kwargs), clock))
        else:
            callbacks.append(_timed(EvalCallback(eval_env, **kwargs), clock))
    return callbacks


# --------------------------------------------------------------------------------------------------------
# Runs: folder, config, resume
# --------------------------------------------------------------------------------------------------------


def _log(message: str) -> None:
    print(f"[train {datetime.datetime.now():%H:%M:%S}] {message}", flush=True)


def _default_run_dir(target: str, algo: str, seed: int) -> Path:
    base = Path("runs") / f"{target}-{algo}-seed{seed}"
    if not base.exists():
        return base
    return Path("runs") / f"{target}-{algo}-seed{seed}-{datetime.datetime.now():%Y%m%d-%H%M%S}"


def _write_yaml(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(dict(data), handle, sort_keys=False, default_flow_style=None)


def _find_resume(resume: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(run_dir, model_zip)`` for ``--resume``: a run folder (its newest model) or a model file."""
    path = Path(resume)
    if path.is_dir():
        candidates = list((path / "checkpoints").glob("*.zip")) + [
            p for p in (path / "final_model.zip", path / "interrupted_model.zip") if p.is_file()
        ]
        if not candidates:
            raise FileNotFoundError(f"--resume {path}: no checkpoints/*.zip nor final_model.zip there")
        return path, max(candidates, key=lambda p: p.stat().st_mtime)
    if path.is_file():
        run_dir = path.parent.parent if path.parent.name in ("checkpoints", "eval") else path.parent
        return run_dir, path
    raise FileNotFoundError(f"--resume {path}: no such run folder or model file")


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

    ``run`` records the run's own settings (target, algorithm, seed, device) so that ``config.yaml``
    alone describes, and can repeat or resume, the run.
    """
    data = copy.deepcopy(load_config(target, config_path))
    run = dict(data.pop("run", None) or {})
    run["target"] = target
    run["algo"] = algo or run.get("algo", "maskable_ppo")
    if run["algo"] not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {run['algo']!r}")
    run["seed"] = int(seed if seed is not None else run.get("seed", 0))
    run["device"] = device or run.get("device", "cpu")
    env_ids = [GREEK_ID, PERSIAN_ID] if target == "selfplay" else [ENV_IDS[target]]
    for env_id in env_ids:
        hp = data[env_id]
        if timesteps is not None:
            hp["n_timesteps"] = int(timesteps)
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


# --------------------------------------------------------------------------------------------------------
# Behaviour cloning warm start
# --------------------------------------------------------------------------------------------------------


def make_expert(env_id: str, name: str, seed: int = 0):
    """The expert player ``name`` for ``env_id``: an :class:`thermopylae_agents.base.Agent`."""
    if env_id == COOP_ID:
        if name == "heuristic":
            from thermopylae_agents.coop_heuristic import CoopHeuristic

            return CoopHeuristic()
        if name == "search":
            from thermopylae_agents.coop_search import CoopSearchExpert

            return CoopSearchExpert(seed=seed)
    elif env_id in (GREEK_ID, PERSIAN_ID) and name == "heuristic":
        from thermopylae_agents.duel_heuristic import HeuristicGreek, HeuristicPersian

        return HeuristicGreek() if env_id == GREEK_ID else HeuristicPersian()
    raise ValueError(f"no expert {name!r} for {env_id}")


def _collect_part(
    env_id: str,
    env_kwargs: dict[str, Any],
    expert: str,
    episodes: int,
    seed: int,
    gamma: float,
    actor: Any = None,
):
    from thermopylae_agents.imitation import collect_expert_data

    _register_envs()
    return collect_expert_data(
        make_env_fn(env_id, env_kwargs),
        make_expert(env_id, expert, seed),
        episodes,
        seed=seed,
        gamma=gamma,
        actor=actor,
    )


def collect_bc_data(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    expert: str,
    episodes: int,
    seed: int,
    gamma: float,
    workers: int = 1,
    actor: Any = None,
):
    """Expert decisions from ``episodes`` games, played in ``workers`` processes (episode seeds disjoint).

    ``actor`` (a picklable player such as :class:`FrozenPolicy`) plays the games instead of the expert,
    which then only labels the states (DAgger).
    """
    from thermopylae_agents.imitation import ExpertData

    workers = max(1, min(int(workers), episodes))
    shares = [episodes // workers + (i < episodes % workers) for i in range(workers)]
    starts = np.cumsum([0, *shares[:-1]])
    jobs = [
        (env_id, dict(env_kwargs), expert, n, seed + int(s), gamma, actor)
        for n, s in zip(shares, starts, strict=True)
    ]
    if workers == 1:
        return _collect_part(*jobs[0])
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        parts = list(pool.map(_collect_part, *zip(*jobs, strict=True)))
    return ExpertData.concatenate(parts)


def warm_start(
    model,
    env_id: str,
    env_kwargs: Mapping[str, Any],
    bc: Config,
    seed: int,
    eval_env=None,
    eval_episodes: int = 0,
) -> dict[str, Any]:
    """Behaviour cloning of ``bc.expert`` into ``model.policy`` before PPO; returns what was measured.

    With ``eval_env`` the cloned policy is also played for ``eval_episodes`` games (the starting point
    that PPO then improves on).
    """
    from thermopylae_agents.imitation import ExpertData, agreement, behaviour_cloning

    episodes = int(bc["episodes"])
    expert = str(bc.get("expert", "heuristic"))
    workers = int(bc.get("workers", 1))
    start = time.perf_counter()
    # Seeds far from the training envs' so that the cloned games are not replayed by PPO.
    bc_seed = 10_000_000 + seed * 100_000
    data = collect_bc_data(env_id, env_kwargs, expert, episodes, bc_seed, model.gamma, workers)
    collect_seconds = time.perf_counter() - start
    _log(
        f"BC: {len(data)} decisions from {data.episodes} {expert} games (win rate "
        f"{data.wins / max(data.episodes, 1):.3f}) in {collect_seconds:.1f}s"
    )
    train_data, held_out = data.split(0.9, seed=seed)
    before = agreement(model.policy, held_out)
    start = time.perf_counter()
    settings = dict(
        batch_size=int(bc.get("batch_size", 256)),
        learning_rate=float(bc.get("learning_rate", 1e-3)),
        value_coef=float(bc.get("value_coef", 0.5)),
        log=_log,
    )
    epochs = int(bc.get("epochs", 5))
    history = behaviour_cloning(model.policy, train_data, epochs=epochs, seed=seed, **settings)
    after = agreement(model.policy, held_out)
    _log(f"BC: held-out agreement with the {expert} {before:.3f} -> {after:.3f}")
    train_seconds = time.perf_counter() - start
    dagger = []
    rounds = int(bc.get("dagger_rounds", 0))
    for r in range(1, rounds + 1):
        start = time.perf_counter()
        actor = FrozenPolicy(model, name=f"dagger{r}")
        n_new = int(bc["dagger_episodes"])
        new = collect_bc_data(env_id, env_kwargs, expert, n_new, bc_seed + episodes + (r - 1) * n_new,
                              model.gamma, workers, actor=actor)
        on_policy = agreement(model.policy, new)
        train_data = ExpertData.concatenate([train_data, new])
        behaviour_cloning(model.policy, train_data, epochs=int(bc.get("dagger_epochs", 2)), seed=seed + r,
                          **settings)
        dagger.append({
            "round": r,
            "clone_win_rate": new.wins / max(new.episodes, 1),
            "agreement_on_clone_states": on_policy,
            "decisions": len(train_data),
            "seconds": round(time.perf_counter() - start, 2),
        })
        _log(f"DAgger {r}/{rounds}: the clone won {dagger[-1]['clone_win_rate']:.3f} of {new.episodes} games "
             f"and agreed with the {expert} on {on_policy:.3f} of its states; {len(train_data)} decisions")
    if rounds:
        after = agreement(model.policy, held_out)
        _log(f"BC after DAgger: held-out agreement {after:.3f}")
    win_rate = None
    if eval_env is not None and eval_episodes > 0:
        win_rate = policy_win_rate(model, eval_env, eval_episodes)
        _log(f"BC: the cloned policy wins {win_rate:.3f} of {eval_episodes} evaluation games")
    return {
        "expert": expert,
        "episodes": data.episodes,
        "decisions": len(data),
        "expert_win_rate": data.wins / max(data.episodes, 1),
        "collect_seconds": round(collect_seconds, 2),
        "train_seconds": round(train_seconds, 2),
        "held_out_agreement_before": before,
        "held_out_agreement_after": after,
        "dagger": dagger,
        "win_rate_after_bc": win_rate,
        "win_rate_games": eval_episodes if win_rate is not None else 0,
        "history": history,
    }


def policy_win_rate(model, eval_env, episodes: int) -> float:
    """Share of ``episodes`` evaluation games the model's greedy (masked) policy wins.

    The evaluation env has no reward shaping, so an episode's reward is +1 for a win and -1 otherwise.
    """
    from stable_baselines3.common.base_class import BaseAlgorithm

    assert isinstance(model, BaseAlgorithm)
    if _is_maskable_model(model):
        from sb3_contrib.common.maskable.evaluation import evaluate_policy
    else:
        from stable_baselines3.common.evaluation import evaluate_policy
    rewards, _ = evaluate_policy(
        model, eval_env, episodes, deterministic=True, return_episode_rewards=True, warn=False
    )
    return float(np.mean(np.asarray(rewards) > 0))


def _is_maskable_model(model) -> bool:
    try:
        from sb3_contrib import MaskablePPO
    except ImportError:  # pragma: no cover
        return False
    return isinstance(model, MaskablePPO)


# --------------------------------------------------------------------------------------------------------
# Single-environment training (coop, duel-greek, duel-persian)
# --------------------------------------------------------------------------------------------------------


def _mark_model_keys_read(hp: Config) -> None:
    """On resume the network and PPO settings come from the saved model (built from these very keys)."""
    for key in (*PPO_KEYS, "policy"):
        if key in hp:
            hp[key]
    hp.plain("policy_kwargs")
    hp.plain("bc")  # the warm start happened before the first run; it is not repeated


def _setup_torch(seed: int) -> None:
    from stable_baselines3.common.utils import set_random_seed

    # These MLPs are tiny: one thread beats two on a 2-core machine (no oversubscription with the envs).
    th.set_num_threads(1)
    set_random_seed(seed)


def train(
    target: str,
    *,
    algo: str | None = None,
    config: str | os.PathLike[str] | None = None,
    timesteps: int | None = None,
    seed: int | None = None,
    n_envs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    eval_freq: int | None = None,
    eval_episodes: int | None = None,
    vec: str | None = None,
    bc_episodes: int | None = None,
    progress: bool = True,
    device: str | None = None,
    report: bool = True,
    verbose: int = 0,
) -> dict[str, Any]:
    """Train one agent (``coop``, ``duel-greek`` or ``duel-persian``); returns the run's report.

    With ``resume`` (a run folder or a saved model) the model is loaded with the run's ``config.yaml``
    and trained on, keeping its timestep counter, until it has seen ``timesteps`` steps in all (default:
    the config's ``n_timesteps``). Arguments left ``None`` come from the config file.
    """
    if target not in ENV_IDS:
        raise ValueError(f"train() takes one of {tuple(ENV_IDS)}; use train_selfplay() for self-play")
    started = time.perf_counter()
    env_id = ENV_IDS[target]
    resume_model = None
    if resume is not None:
        run_dir, resume_model = _find_resume(resume)
        if config is None:
            config = run_dir / "config.yaml"
        if out is not None and Path(out) != run_dir:
            run_dir = Path(out)
    data = resolve_config(
        target,
        config,
        algo=algo,
        seed=seed,
        timesteps=timesteps,
        n_envs=n_envs,
        eval_freq=eval_freq,
        eval_episodes=eval_episodes,
        vec=vec,
        bc_episodes=bc_episodes,
        device=device,
    )
    run = data["run"]
    algo, seed, device = run["algo"], run["seed"], run["device"]
    if resume is None:
        run_dir = Path(out) if out is not None else _default_run_dir(target, algo, seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_yaml(run_dir / "config.yaml", data)

    cfg = Config(data)
    hp = cfg[env_id]
    for key in ("target", "algo", "seed", "device"):  # consumed above, through resolve_config
        cfg["run"][key]
    env_kwargs = hp.plain("env_kwargs", {})
    n = int(hp.get("n_envs", 8))
    total = int(hp["n_timesteps"])
    default_vec = "native" if env_id == COOP_ID else "dummy"
    vec_kind = str(hp.get("vec", default_vec))

    env_seed = seed
    _setup_torch(seed)
    model = None
    if resume_model is not None:
        cls = _algo_class(algo)
        model = speed_up_policy(cls.load(resume_model, device=device))
        # New seeds for the continued run: the first env seeds would replay the games already seen.
        env_seed = seed + model.num_timesteps
        _setup_torch(env_seed)
        _log(f"resuming {resume_model} at {model.num_timesteps} steps")
    env = build_vec_env(env_id, env_kwargs, n, env_seed, vec_kind)
    # The native engine evaluates many games per policy call; single envs gain little past 8.
    eval_n = min(32 if vec_kind == "native" else 8, n)
    eval_env = build_eval_env(env_id, env_kwargs, eval_n, seed + 1_000_000, vec_kind)

    bc_stats = None
    if model is None:
        model = build_model(algo, env, hp, seed, str(run_dir / "tb"), device, verbose)
        bc = hp.get("bc")
        if bc is not None and int(bc["episodes"]) > 0:
            ev = hp.get("eval", Config({}))
            bc_stats = warm_start(model, env_id, env_kwargs, bc, seed, eval_env, int(ev.get("episodes", 0)))
    else:
        model.set_env(env)
        model.tensorboard_log = str(run_dir / "tb")
        _mark_model_keys_read(hp)

    clock = _throughput_callback()
    callbacks = _callbacks(algo, hp, run_dir, eval_env, n, clock)
    remaining = total - model.num_timesteps if resume_model is not None else total
    if remaining > 0:
        _log(f"training {algo} on {env_id} for {remaining} steps ({n} envs, {vec_kind}) -> {run_dir}")
        learn_kwargs = {"use_masking": True} if algo == "maskable_ppo" else {}
        model.learn(
            total_timesteps=remaining,
            callback=callbacks,
            progress_bar=progress,
            reset_num_timesteps=resume_model is None,
            tb_log_name=algo,
            **learn_kwargs,
        )
    else:
        _log(f"the model has {model.num_timesteps} steps already (target {total}); nothing to train")
    model.save(run_dir / "final_model.zip")
    save_for_play(model, run_dir / "final_policy.zip")
    env.close()
    eval_env.close()
    result: dict[str, Any] = {
        "target": target,
        "env_id": env_id,
        "algo": algo,
        "seed": seed,
        "run_dir": str(run_dir),
        "num_timesteps": int(model.num_timesteps),
        "resumed_from": str(resume_model) if resume_model is not None else None,
        "n_envs": n,
        "vec": vec_kind,
        "throughput": clock.summary(),
        "behaviour_cloning": bc_stats,
    }
    result["train_wall_seconds"] = round(time.perf_counter() - started, 1)
    _log(f"trained in {result['train_wall_seconds']} s (BC included, final evaluation not)")
    if report:
        final = run_dir / "final_model.zip"
        rep = hp.get("report", Config({}))
        result["evaluation"] = evaluate_against_baselines(target, final, env_kwargs, rep, seed)
        print(format_report(result))
    result["unused_config_keys"] = cfg.unused()
    with open(run_dir / "report.json", "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2, default=_json_default)
    return result


# Attributes a model needs to train on, not to play: the last rollout's observations and episode buffers.
_TRAINING_LEFTOVERS = ["_last_obs", "_last_original_obs", "_last_episode_starts", "ep_info_buffer",
                       "ep_success_buffer"]


def save_for_play(model, path: str | os.PathLike[str]) -> Path:
    """Save ``model`` to be played or shipped: the same policy, a fraction of the size.

    The Adam moments (twice the network's size) are replaced by a fresh optimizer's empty state and the
    last rollout's observations are left out. The file loads with ``MaskablePPO.load`` / ``SB3Agent`` like
    any model (training it further simply restarts Adam); ``final_model.zip`` keeps everything for
    ``--resume``.
    """
    policy = model.policy
    optimizer = policy.optimizer
    policy.optimizer = policy.optimizer_class(
        policy.parameters(), lr=optimizer.param_groups[0]["lr"], **policy.optimizer_kwargs
    )
    try:
        model.save(path, exclude=_TRAINING_LEFTOVERS)
    finally:
        policy.optimizer = optimizer
    return Path(path)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


# --------------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thermopylae-train",
        description="Train (Maskable)PPO agents for the thermopylae environments. Hyperparameters come from "
        "agents/thermopylae_agents/configs/<target>.yaml (or --config); the options below override them.",
    )
    parser.add_argument("target", choices=TARGETS, help="what to train")
    parser.add_argument("--algo", choices=ALGOS, default=None, help="default: maskable_ppo")
    parser.add_argument("--config", default=None, help="YAML config (default: the shipped one)")
    parser.add_argument("--timesteps", type=int, default=None,
                        help="total env steps (self-play: per side; with --resume: the total to reach)")
    parser.add_argument("--seed", type=int, default=None, help="default: 0")
    parser.add_argument("--n-envs", type=int, default=None, help="parallel environments")
    parser.add_argument("--out", default=None, help="run folder (default: runs/<target>-<algo>-seed<seed>)")
    parser.add_argument("--resume", default=None, help="a run folder or a saved model (.zip) to continue")
    parser.add_argument("--eval-freq", type=int, default=None, help="env steps between evaluations (0: none)")
    parser.add_argument("--eval-episodes", type=int, default=None, help="games per periodic evaluation")
    parser.add_argument("--vec", choices=VEC_KINDS, default=None, help="co-op env: native (default)")
    parser.add_argument("--bc-episodes", type=int, default=None, help="expert games for BC (0: none)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-report", action="store_true", help="skip the final evaluation")
    parser.add_argument("--device", default=None, help="torch device (default: cpu)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    kwargs = dict(
        algo=args.algo,
        config=args.config,
        timesteps=args.timesteps,
        seed=args.seed,
        n_envs=args.n_envs,
        out=args.out,
        resume=args.resume,
        eval_freq=args.eval_freq,
        eval_episodes=args.eval_episodes,
        progress=not args.no_progress,
        device=args.device,
        report=not args.no_report,
    )
    if args.target == "selfplay":
        if args.vec is not None or args.bc_episodes is not None:
            raise SystemExit("--vec and --bc-episodes do not apply to selfplay")
        train_selfplay(**kwargs)
    else:
        train(args.target, vec=args.vec, bc_episodes=args.bc_episodes, **kwargs)
    return 0


# --------------------------------------------------------------------------------------------------------
# Self-play (duel): both sides in alternation, each against a pool of frozen snapshots of the other
# --------------------------------------------------------------------------------------------------------


class FrozenPolicy:
    """A frozen NumPy copy of a (Maskable)PPO actor: a self-play snapshot, or a fast evaluation player.

    Copies the features (flat observation, or :class:`CoopFightFeatures`), the actor MLP and the action
    head (``mlp_extractor.policy_net`` + ``action_net``), so that later PPO updates of the live model leave
    the snapshot as it was, and one observation costs a few small matrix products (about 15 us) instead
    of an SB3 ``predict`` (about 300 us). ``act`` plays the most likely legal action
    (``deterministic=True``: what :class:`thermopylae_agents.sb3_agent.SB3Agent` plays, checked by the
    tests) or
    samples the masked softmax with ``rng`` (an env's ``np_random``).
    """

    def __init__(self, model: Any, name: str = "snapshot", deterministic: bool = True) -> None:
        from stable_baselines3.common.torch_layers import FlattenExtractor

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


class OpponentPool:
    """The opponents one side trains against: hand-written players and frozen snapshots of the other side.

    For each episode :meth:`sample` picks the latest snapshot with probability ``latest_prob``, the
    heuristic (while it is in the pool) with ``heuristic_prob``, and otherwise an older snapshot uniformly;
    probabilities of absent members go to the others. At most ``max_pool`` snapshots are kept.
    """

    def __init__(self, heuristic: Any, latest_prob: float, heuristic_prob: float, max_pool: int) -> None:
        self.heuristic = heuristic
        self.use_heuristic = heuristic is not None
        self.snapshots: list[FrozenPolicy] = []
        self.latest_prob = float(latest_prob)
        self.heuristic_prob = float(heuristic_prob)
        self.max_pool = int(max_pool)
        self.counts: dict[str, int] = {}

    def add(self, snapshot: FrozenPolicy) -> None:
        self.snapshots.append(snapshot)
        del self.snapshots[: -self.max_pool]

    def members(self) -> list[tuple[Any, float]]:
        """``(player, probability)`` of each member now in the pool."""
        entries: list[tuple[Any, float]] = []
        if self.snapshots:
            entries.append((self.snapshots[-1], self.latest_prob))
        if self.use_heuristic:
            entries.append((self.heuristic, self.heuristic_prob))
        older = self.snapshots[:-1]
        rest = max(0.0, 1.0 - sum(p for _, p in entries))
        entries.extend((s, rest / len(older)) for s in older)
        total = sum(p for _, p in entries)
        if total <= 0:
            return [(player, 1.0 / len(entries)) for player, _ in entries]
        return [(player, p / total) for player, p in entries]

    def sample(self, rng: np.random.Generator) -> Any:
        members = self.members()
        if not members:
            raise RuntimeError("the opponent pool is empty")
        index = int(rng.choice(len(members), p=[p for _, p in members]))
        player = members[index][0]
        name = getattr(player, "name", type(player).__name__)
        self.counts[name] = self.counts.get(name, 0) + 1
        return player


class PoolOpponent:
    """The ``opponent=`` of one duel env: a member of an :class:`OpponentPool`, drawn anew each episode.

    :class:`ResampleOpponent` clears the choice on ``reset``; the first opponent move of the episode (the
    env plays it inside ``reset``, after reseeding) then draws from the env's ``np_random``.
    """

    def __init__(self, pool: OpponentPool) -> None:
        self.pool = pool
        self.env: gym.Env | None = None
        self.current: Any = None

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        rng = self.env.unwrapped.np_random if self.env is not None else np.random.default_rng()
        if self.current is None:
            self.current = self.pool.sample(rng)
        if isinstance(self.current, FrozenPolicy):
            return self.current.act(observation, action_mask, rng)
        return int(self.current.act(observation, action_mask))


class ResampleOpponent(gym.Wrapper):
    """Makes the env's :class:`PoolOpponent` draw a new opponent at every ``reset``."""

    def __init__(self, env: gym.Env, opponent: PoolOpponent) -> None:
        super().__init__(env)
        self.opponent = opponent
        opponent.env = env

    def reset(self, **kwargs: Any):
        self.opponent.current = None
        return self.env.reset(**kwargs)


def _pool_env_fn(env_id: str, env_kwargs: Mapping[str, Any], pool: OpponentPool) -> Callable[[], gym.Env]:
    from stable_baselines3.common.monitor import Monitor

    kwargs = {k: v for k, v in env_kwargs.items() if k != "opponent"}

    def thunk() -> gym.Env:
        _register_envs()
        opponent = PoolOpponent(pool)
        env = ResampleOpponent(gym.make(env_id, opponent=opponent, **kwargs), opponent)
        return Monitor(env, info_keywords=("is_success",))

    return thunk


SIDES = (("greek", GREEK_ID), ("persian", PERSIAN_ID))


def train_selfplay(
    *,
    algo: str | None = None,
    config: str | os.PathLike[str] | None = None,
    timesteps: int | None = None,
    seed: int | None = None,
    n_envs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    eval_freq: int | None = None,
    eval_episodes: int | None = None,
    progress: bool = True,
    device: str | None = None,
    report: bool = True,
    verbose: int = 0,
) -> dict[str, Any]:
    """Self-play for the duel: the Greek and the Persian policies trained in alternation.

    Generation ``g``: the Greek trains ``n_timesteps / generations`` steps against the Persian pool, a
    frozen snapshot of it joins the Greek pool; then the same for the Persian against the Greek pool. The
    pools start with the heuristic player, which stays for ``heuristic_generations`` generations (it gives
    the first snapshots something meaningful to beat). Models and snapshots are saved per generation in
    ``snapshots/``; ``resume`` (the run folder) continues after the last completed generation.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv

    start_generation = 0
    run_dir: Path | None = None
    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.yaml").is_file():
            raise FileNotFoundError(f"--resume {run_dir}: not a self-play run folder (no config.yaml)")
        config = config or run_dir / "config.yaml"
    data = resolve_config(
        "selfplay",
        config,
        algo=algo,
        seed=seed,
        timesteps=timesteps,
        n_envs=n_envs,
        eval_freq=eval_freq,
        eval_episodes=eval_episodes,
        device=device,
    )
    run = data["run"]
    algo, seed, device = run["algo"], run["seed"], run["device"]
    if algo != "maskable_ppo":
        raise ValueError("self-play uses maskable_ppo (snapshots play the legal actions only)")
    if run_dir is None:
        run_dir = Path(out) if out is not None else _default_run_dir("selfplay", algo, seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_yaml(run_dir / "config.yaml", data)
    cfg = Config(data)
    for key in ("target", "algo", "seed", "device"):
        cfg["run"][key]
    sp = cfg["selfplay"]
    generations = int(sp["generations"])
    deterministic = bool(sp.get("snapshot_deterministic", True))
    heuristic_generations = int(sp.get("heuristic_generations", generations))
    _setup_torch(seed)

    from thermopylae_agents.duel_heuristic import HeuristicGreek, HeuristicPersian

    # pools[side] holds the players that side trains AGAINST (snapshots of the other side).
    pools = {
        "greek": OpponentPool(
            HeuristicPersian(), sp["latest_prob"], sp["heuristic_prob"], sp["max_pool"]
        ),
        "persian": OpponentPool(HeuristicGreek(), sp["latest_prob"], sp["heuristic_prob"], sp["max_pool"]),
    }
    snap_dir = run_dir / "snapshots"
    snap_dir.mkdir(exist_ok=True)
    if resume is not None:
        while all((snap_dir / f"{side}_gen{start_generation + 1}.zip").is_file() for side, _ in SIDES):
            start_generation += 1
        if start_generation == 0:
            raise FileNotFoundError(f"--resume {run_dir}: no completed generation in {snap_dir}")
        _log(f"resuming self-play after generation {start_generation}")

    sides: dict[str, dict[str, Any]] = {}
    for index, (side, env_id) in enumerate(SIDES):
        hp = cfg[env_id]
        env_kwargs = hp.plain("env_kwargs", {})
        n = int(hp.get("n_envs", 8))
        side_seed = seed + 1000 * index
        env = DummyVecEnv([_pool_env_fn(env_id, env_kwargs, pools[side]) for _ in range(n)])
        env.seed(side_seed + (start_generation * 7919 if start_generation else 0))
        eval_kwargs = dict(_eval_env_kwargs(env_id, env_kwargs), opponent="heuristic")
        eval_env = DummyVecEnv([make_env_fn(env_id, eval_kwargs) for _ in range(min(8, n))])
        eval_env.seed(side_seed + 1_000_000)
        if resume is None:
            model = build_model(algo, env, hp, side_seed, str(run_dir / "tb" / side), device, verbose)
            bc = hp.get("bc")
            if bc is not None and int(bc["episodes"]) > 0:
                warm_start(model, env_id, dict(env_kwargs, opponent="heuristic"), bc, side_seed)
        else:
            cls = _algo_class(algo)
            model = cls.load(snap_dir / f"{side}_gen{start_generation}.zip", env=env, device=device)
            speed_up_policy(model)
            model.tensorboard_log = str(run_dir / "tb" / side)
            _mark_model_keys_read(hp)
        clock = _throughput_callback()
        sides[side] = {
            "env_id": env_id,
            "hp": hp,
            "env": env,
            "eval_env": eval_env,
            "model": model,
            "n_envs": n,
            "clock": clock,
            "per_generation": max(int(hp["n_timesteps"]) // generations, 1),
            "callbacks": _callbacks(algo, hp, run_dir / side, eval_env, n, clock),
        }
    # Snapshots of completed generations (resume) go back into the pools.
    for g in range(1, start_generation + 1):
        for side, other in (("greek", "persian"), ("persian", "greek")):
            snap = _algo_class(algo).load(snap_dir / f"{side}_gen{g}.zip", device="cpu")
            pools[other].add(FrozenPolicy(snap, f"{side}_gen{g}", deterministic))
    for g in range(start_generation + 1, generations + 1):
        for side, other in (("greek", "persian"), ("persian", "greek")):
            pools[side].use_heuristic = g <= heuristic_generations
            entry = sides[side]
            model = entry["model"]
            names = ", ".join(f"{getattr(p, 'name', 'heuristic')}:{q:.2f}" for p, q in pools[side].members())
            steps = entry["per_generation"]
            _log(f"generation {g}/{generations}: {side} trains {steps} steps against [{names}]")
            learn_kwargs = {"use_masking": True}
            model.learn(
                total_timesteps=entry["per_generation"],
                callback=entry["callbacks"],
                progress_bar=progress,
                reset_num_timesteps=model.num_timesteps == 0,
                tb_log_name=algo,
                **learn_kwargs,
            )
            model.save(snap_dir / f"{side}_gen{g}.zip")
            pools[other].add(FrozenPolicy(model, f"{side}_gen{g}", deterministic))
    result: dict[str, Any] = {
        "target": "selfplay",
        "algo": algo,
        "seed": seed,
        "run_dir": str(run_dir),
        "generations": generations,
        "resumed_after_generation": start_generation or None,
    }
    for side, entry in sides.items():
        path = run_dir / f"final_{side}.zip"
        entry["model"].save(path)
        save_for_play(entry["model"], run_dir / f"final_{side}_policy.zip")
        entry["env"].close()
        entry["eval_env"].close()
        result[side] = {
            "model": str(path),
            "num_timesteps": int(entry["model"].num_timesteps),
            "throughput": entry["clock"].summary(),
            "opponents_sampled": dict(pools[side].counts),
        }
    report_episodes = int(sp.get("report_episodes", 1000))
    if report:
        result["cross_play"] = cross_play_report(
            run_dir / "final_greek.zip", run_dir / "final_persian.zip", report_episodes, seed
        )
        print(format_cross_play(result["cross_play"]))
    result["unused_config_keys"] = cfg.unused()
    with open(run_dir / "report.json", "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2, default=_json_default)
    return result


# --------------------------------------------------------------------------------------------------------
# Final evaluation against the baselines (agents/evaluation.py: paired deals, Wilson 95% intervals)
# --------------------------------------------------------------------------------------------------------


def _row(result: Any, agent: str, opponent: str | None = None) -> dict[str, Any]:
    return {
        "agent": agent,
        "opponent": opponent,
        "games": int(result.games),
        "wins": int(result.wins),
        "win_rate": float(result.win_rate),
        "ci_low": float(result.ci95[0]),
        "ci_high": float(result.ci95[1]),
        "seconds_per_game": float(result.seconds_per_game),
    }


def _search_deals(records: Mapping[str, list], games: int) -> dict[str, Any]:
    """Every co-op player's wins on the first ``games`` deals, the ones the slow search expert played too:
    a paired comparison with the search expert, however few its games."""
    from thermopylae_agents.stats import wilson_interval

    paired: dict[str, Any] = {"games": games}
    for name in ("search", "ppo", "heuristic"):
        wins = sum(r.won for r in records[name][:games])
        low, high = wilson_interval(wins, games)
        paired[name] = {"wins": wins, "win_rate": wins / games, "ci_low": low, "ci_high": high}
    return paired


def _workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def evaluate_against_baselines(
    target: str, model_path: Path, env_kwargs: Mapping[str, Any], rep: Config, seed: int
) -> dict[str, Any]:
    """The trained policy and the baselines on the same deals (``report`` block of the config).

    Co-op: PPO, random, heuristic on ``episodes`` games; the (slow) search expert on the first
    ``search_episodes`` of them. Duel: the PPO side and the hand-written and random players of that side,
    each against the heuristic and the random opponent. ``beats_heuristic`` is true when PPO's interval
    lies wholly above the heuristic's on the same games.
    """
    from thermopylae_agents.evaluation import evaluate
    from thermopylae_agents.sb3_agent import load_model

    episodes = int(rep.get("episodes", 1000))
    base_seed = 20_000_000 + seed * 100_000  # deals no training or BC game used
    env_id = ENV_IDS[target]
    kwargs = {k: v for k, v in _eval_env_kwargs(env_id, env_kwargs).items() if k != "opponent"}
    # The trained policy plays greedily (its most likely legal action, as SB3Agent does) through a NumPy
    # copy: 20x faster than SB3's predict, so 10,000 games take seconds. Objects run in this process.
    ppo = FrozenPolicy(load_model(model_path), name="ppo")
    workers = _workers()
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    paired = None
    if target == "coop":
        search_spec = str(rep.get("search", "search"))
        search_episodes = min(int(rep.get("search_episodes", 0)), episodes)
        players = [
            (ppo, "ppo", episodes),
            ("random", "random", episodes),
            ("heuristic", "heuristic", episodes),
            (search_spec, "search", search_episodes),
        ]
        records: dict[str, list] = {}
        for spec, name, games in players:
            if games <= 0:
                continue
            [result] = evaluate(COOP_ID, [spec], games, base_seed, env_kwargs=kwargs, workers=workers)
            rows.append(_row(result, name))
            rows[-1]["spec"] = spec if isinstance(spec, str) else str(model_path)
            records[name] = result.records
        paired = _search_deals(records, search_episodes) if "search" in records else None
    else:
        for opponent in ("heuristic", "random"):
            for spec, name in ((ppo, "ppo"), ("heuristic", "heuristic"), ("random", "random")):
                [result] = evaluate(env_id, [spec], episodes, base_seed, env_kwargs=kwargs, workers=workers,
                                    opponent=opponent)
                rows.append(_row(result, name, opponent))
    ppo_row, heuristic_row = rows[0], next(r for r in rows if r["agent"] == "heuristic")
    verdict = {"beats_heuristic": ppo_row["ci_low"] > heuristic_row["ci_high"]}
    return {
        "base_seed": base_seed,
        "ppo_plays": "greedy: most likely legal action",
        "rows": rows,
        **({"search_deals": paired} if paired else {}),
        **verdict,
        "seconds": round(time.perf_counter() - start, 1),
    }


def _rate_cells(r: Mapping[str, Any]) -> str:
    return f"{r['games']:>8}{r['win_rate']:>10.2%}  [{r['ci_low']:.2%}, {r['ci_high']:.2%}]"


def format_report(result: Mapping[str, Any]) -> str:
    """A plain-text table of a run's final evaluation and throughput."""
    lines = [
        f"{result['target']} ({result['algo']}, seed {result['seed']}): {result['num_timesteps']} steps, "
        f"{result['throughput']['steps_per_second']} env steps/s during learn"
    ]
    evaluation = result.get("evaluation") or {}
    rows = evaluation.get("rows", [])
    if rows:
        duel = any(r["opponent"] for r in rows)
        lines.append(
            f"{'agent':<12}" + (f"{'opponent':<12}" if duel else "")
            + f"{'games':>8}{'win rate':>10}  95% interval"
        )
        for r in rows:
            lines.append(f"{r['agent']:<12}" + (f"{r['opponent']:<12}" if duel else "") + _rate_cells(r))
        lines.append(f"PPO interval above the heuristic's: {evaluation.get('beats_heuristic')}")
        paired = evaluation.get("search_deals")
        if paired:
            lines.append(f"On the first {paired['games']} of those deals, the ones the search expert played:")
            for name in ("search", "ppo", "heuristic"):
                lines.append(f"{name:<12}" + _rate_cells({"games": paired["games"], **paired[name]}))
    return "\n".join(lines)


def cross_play_report(greek: Path, persian: Path, episodes: int, seed: int) -> dict[str, Any]:
    """Cross-play of the self-play policies and the hand-written and random players (Greek win rates)."""
    from thermopylae_agents.evaluation import evaluate_duel_matrix

    names = {str(greek): "selfplay", str(persian): "selfplay", "heuristic": "heuristic", "random": "random"}
    base_seed = 30_000_000 + seed * 100_000
    start = time.perf_counter()
    results = evaluate_duel_matrix(
        [str(greek), "heuristic", "random"], [str(persian), "heuristic", "random"], episodes, base_seed,
        workers=_workers(),
    )
    matrix: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        g, p = names.get(r.agent, r.agent), names.get(r.opponent, r.opponent)
        matrix.setdefault(g, {})[p] = {
            "games": int(r.games),
            "greek_wins": int(r.wins),
            "greek_win_rate": float(r.win_rate),
            "ci_low": float(r.ci95[0]),
            "ci_high": float(r.ci95[1]),
        }
    return {"base_seed": base_seed, "games": episodes, "matrix": matrix,
            "seconds": round(time.perf_counter() - start, 1)}


def format_cross_play(cross: Mapping[str, Any]) -> str:
    matrix = cross["matrix"]
    persians = list(next(iter(matrix.values())))
    lines = [f"Greek win rate (rows: Greek, columns: Persian), {cross['games']} games each, 95% interval",
             f"{'':<12}" + "".join(f"{p:>28}" for p in persians)]
    for g, row in matrix.items():
        cells = "".join(
            f"{c['greek_win_rate']:.1%} [{c['ci_low']:.1%}, {c['ci_high']:.1%}]".rjust(28)
            for c in row.values()
        )
        lines.append(f"{g:<12}{cells}")
    return "\n".join(lines)
