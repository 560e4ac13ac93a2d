"""Expert iteration for the co-op game: distil the determinized search into a MaskablePPO policy (DAgger).

Why: the search expert ([`CoopSearchExpert`][thermopylae_agents.players.coop_search.CoopSearchExpert]) wins
more often than the shipped PPO policies but costs a search per move; a policy network that imitates it
plays in microseconds. Plain cloning of the search's own games only shows the network the search's
states; DAgger (Ross et al., 2011) lets the network play and asks the search what it would have done in
the states the network reaches, which is where the network's mistakes lead.

One run is [`setup`][thermopylae_agents.training.expert_iteration.setup] (check the config, make the run
folder, load or build the start policy), [`learn`][thermopylae_agents.training.expert_iteration.learn]
(the rounds) and [`save`][thermopylae_agents.training.expert_iteration.save] (an SB3 zip and its
pickle-free ``.json`` + ``.safetensors`` export beside it, the data set, ``report.json``), as RL Zoo's
``ExperimentManager``. Each round

1. plays ``games_per_round`` games (deal ``i`` of round ``r`` seeded ``train_seed + r * 100_000 + i``,
   far from the evaluation deals) on the co-op env; at each decision the search labels the state and,
   with probability ``beta`` (``beta_start * beta_decay ** r``), its action is played, else the current
   policy's greedy action;
2. labels every state with the search's action, the search's randomness seeded from ``(seed, deal
   seed, decision index)`` ([`label_rng`][thermopylae_agents.training.expert_iteration.label_rng]), so any
   label can be reproduced alone;
3. adds the states to the data set of all rounds and trains the policy on it (masked cross-entropy,
   [`behaviour_cloning`][thermopylae_agents.training.imitation.behaviour_cloning]), optionally followed by a
   short MaskablePPO fine-tune;
4. plays the policy greedily on ``eval_games`` held-out deals (``eval_seed + i``), the start policy on the
   same deals before the first round, and compares them pairwise.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from thermopylae_agents.evaluation.games import play_games
from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval
from thermopylae_agents.players.coop_search import CoopSearchExpert
from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.policies.safe_policy import (
    POLICY_DIR,
    SHIPPED_ENV_OPTIONS,
    export_sb3_policy,
    is_path,
)
from thermopylae_agents.policies.sb3_agent import load_model
from thermopylae_agents.training.config import CONFIG_DIR, MAX_SEED, Config, env_count, resolve_config
from thermopylae_agents.training.envs import build_vec_env
from thermopylae_agents.training.progress import Stage, log
from thermopylae_env import COOP_ID

__all__ = [
    "DEFAULT_CONFIG",
    "DistillData",
    "ExpertIterationConfig",
    "Distillation",
    "collect_round",
    "label_rng",
    "learn",
    "load_distill_config",
    "run",
    "save",
    "setup",
]

DEFAULT_CONFIG = CONFIG_DIR / "coop_expert_iteration.yaml"
BC_START = "bc-heuristic"  # the start policy cloned from the heuristic instead of a shipped or saved one
_ROUND_STRIDE = 100_000  # deal seeds of consecutive rounds; games_per_round stays below it
_TRAIN_SEED = 30_000_000  # the training deals start here: the evaluation deals are 0, 1, ...
_LABEL_STREAM, _MIX_STREAM = 1, 2
# The CoopSearchExpert keywords a config may set (its rng, seed and game come from the run).
SEARCH_KEYS = ("n_determinizations", "rollouts", "max_candidates", "min_rounds", "z_drop", "z_pick", "engine")


@dataclass
class ExpertIterationConfig:
    """The settings of one distillation run (``configs/coop_expert_iteration.yaml`` holds the defaults).

    Parameters
    ----------
    num_players:
        The team size, 1..4.
    start:
        The start policy: a shipped policy name (its SB3 zip of the package), the path of an SB3 zip, or
        ``bc-heuristic`` (a fresh network of ``ppo_config`` cloned from ``bc_episodes`` heuristic games);
        ``None``: the shipped policy of the team size (``coop_maskable_ppo``, ``coop_Np_maskable_ppo``).
    rounds, games_per_round:
        DAgger rounds, and the games each round plays and labels.
    beta_start, beta_decay:
        Round ``r`` plays the search's action with probability ``beta_start * beta_decay ** r``.
    search:
        Keyword arguments of the search ([`SEARCH_KEYS`][thermopylae_agents.training.expert_iteration]).
    epochs, batch_size, learning_rate, value_coef:
        The cloning of each round (passes over the whole data set; ``value_coef`` > 0 also fits the
        critic to the games' outcomes).
    ppo_timesteps:
        A MaskablePPO fine-tune after each round's cloning (0: none).
    eval_games, eval_seed:
        Held-out deals ``eval_seed + i`` on which the policy is measured after each round.
    seed:
        Seeds the deals, the labels, the mixing coins and torch.
    workers:
        Processes that play and label the games (the data are the same for any number).
    ppo_config, bc_episodes:
        The PPO config of the network built for ``bc-heuristic`` and of the fine-tune (default: the
        shipped ``coop.yaml`` / ``coop_Np.yaml``), and the heuristic games cloned for ``bc-heuristic``.
    """

    num_players: int = 1
    start: str | None = None
    rounds: int = 3
    games_per_round: int = 300
    beta_start: float = 0.5
    beta_decay: float = 0.5
    search: dict[str, Any] = field(default_factory=dict)
    epochs: int = 4
    batch_size: int = 256
    learning_rate: float = 3.0e-4
    value_coef: float = 0.0
    ppo_timesteps: int = 0
    eval_games: int = 1000
    eval_seed: int = 0
    seed: int = 0
    workers: int = 1
    ppo_config: str | None = None
    bc_episodes: int = 2000

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse a bad setting with a one-line ``ValueError`` naming it."""
        counts = {"num_players": (1, 4), "rounds": (1, 1000), "games_per_round": (1, _ROUND_STRIDE - 1),
                  "epochs": (0, 10_000), "batch_size": (1, 1 << 20), "ppo_timesteps": (0, 10**9),
                  "eval_games": (0, 10**7), "eval_seed": (0, MAX_SEED), "seed": (0, 2**20),
                  "workers": (1, 256), "bc_episodes": (0, 10**7)}
        for name, (low, high) in counts.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
        for name, low, high in (("beta_start", 0.0, 1.0), ("beta_decay", 0.0, 1.0),
                                ("learning_rate", 1e-9, 10.0), ("value_coef", 0.0, 100.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"{name} must be a number in {low:g}..{high:g}, got {value!r}")
        if self.start is None:
            self.start = "coop_maskable_ppo" if self.num_players == 1 else \
                f"coop_{self.num_players}p_maskable_ppo"
        if not isinstance(self.start, str) or not self.start.strip():
            raise ValueError("start must be a shipped policy name, an SB3 zip path or bc-heuristic")
        if self.ppo_config is not None and not (isinstance(self.ppo_config, str) and self.ppo_config.strip()):
            raise ValueError(f"ppo_config must be a YAML path, got {self.ppo_config!r}")
        if not isinstance(self.search, dict):
            raise ValueError(f"search must be a mapping of search settings, got {self.search!r}")
        unknown = sorted(set(self.search) - set(SEARCH_KEYS))
        if unknown:
            raise ValueError(f"search: unknown setting {unknown[0]!r}; known: {', '.join(SEARCH_KEYS)}")
        try:
            self.make_search(0)
        except (ValueError, TypeError) as error:
            raise ValueError(f"search: {error}") from None

    def beta(self, round_: int) -> float:
        """The probability that the search's action is played in round ``round_`` (0-based)."""
        return float(self.beta_start) * float(self.beta_decay) ** round_

    def round_seed(self, round_: int) -> int:
        """The seed of the first deal of round ``round_``."""
        return _TRAIN_SEED + self.seed * 1000 * _ROUND_STRIDE + round_ * _ROUND_STRIDE

    def make_search(self, game_seed: int, step: int = 0) -> Any:
        """The search that labels decision ``step`` of the deal ``game_seed`` (its own generator)."""
        return CoopSearchExpert(num_players=self.num_players, rng=label_rng(self.seed, game_seed, step),
                                **self.search)

    def ppo_config_path(self) -> Path:
        if self.ppo_config is not None:
            return Path(self.ppo_config)
        suffix = "" if self.num_players == 1 else f"_{self.num_players}p"
        return CONFIG_DIR / f"coop{suffix}.yaml"


def load_distill_config(
    path: str | os.PathLike[str] | None = None, **overrides: Any
) -> ExpertIterationConfig:
    """The config file (default: the shipped one) with ``overrides`` (those not ``None``) applied; a key
    the config does not know, or a bad value, is a one-line ``ValueError``."""
    source = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"{source}: cannot read the config ({error.strerror or error})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{source}: not valid YAML ({' '.join(str(error).split())[:200]})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a config is a mapping of settings, not {type(data).__name__}")
    known = {f.name for f in fields(ExpertIterationConfig)}
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise ValueError(f"{source}: unknown setting {unknown[0]!r}")
    data.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return ExpertIterationConfig(**data)
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None


def label_rng(seed: int, game_seed: int, step: int) -> np.random.Generator:
    """The search's generator for decision ``step`` of the deal ``game_seed``: one stream per state, so a
    label does not depend on the states labelled before it."""
    return np.random.default_rng([int(seed), _LABEL_STREAM, int(game_seed), int(step)])


# ------------------------------------------------------------------------------------------------ data set
@dataclass
class DistillData:
    """Labelled states: one row per decision of the games played."""

    observations: np.ndarray  # float32 (n, obs)
    masks: np.ndarray  # bool (n, actions)
    labels: np.ndarray  # int64 (n,): the search's action
    played: np.ndarray  # int64 (n,): the action played (the search's or the policy's)
    returns: np.ndarray  # float32 (n,): the game's undiscounted return from that decision
    game_seeds: np.ndarray  # int64 (n,): the deal
    steps: np.ndarray  # int64 (n,): the decision's index in its game
    rounds: np.ndarray  # int64 (n,)
    games: int = 0
    wins: int = 0

    ARRAYS = ("observations", "masks", "labels", "played", "returns", "game_seeds", "steps", "rounds")

    def __len__(self) -> int:
        return len(self.labels)

    @staticmethod
    def concatenate(parts: list[DistillData]) -> DistillData:
        arrays = {name: np.concatenate([getattr(p, name) for p in parts]) for name in DistillData.ARRAYS}
        return DistillData(**arrays, games=sum(p.games for p in parts), wins=sum(p.wins for p in parts))

    def expert_data(self) -> Any:
        """As [`ExpertData`][thermopylae_agents.training.imitation.ExpertData], what cloning trains on."""
        from thermopylae_agents.training.imitation import ExpertData  # extra: train

        return ExpertData(self.observations, self.masks, self.labels, self.returns, self.games, self.wins)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Plain arrays in an ``.npz`` (read back with ``allow_pickle=False``)."""
        path = Path(path)
        np.savez_compressed(path, **{name: getattr(self, name) for name in self.ARRAYS},
                            counts=np.asarray([self.games, self.wins], dtype=np.int64))
        return path

    @staticmethod
    def load(path: str | os.PathLike[str]) -> DistillData:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in DistillData.ARRAYS}
            games, wins = (int(x) for x in archive["counts"])
        return DistillData(**arrays, games=games, wins=wins)


def _play_and_label(task: tuple) -> DistillData:
    """Play the deals ``seeds`` and label every state (a worker's entry point)."""
    cfg, actor, seeds, round_, beta = task
    env = gym.make(COOP_ID, num_players=cfg.num_players, disable_env_checker=True).unwrapped
    search = cfg.make_search(0)
    rows: dict[str, list] = {name: [] for name in DistillData.ARRAYS}
    wins = 0
    for game_seed in seeds:
        coins = np.random.default_rng([cfg.seed, _MIX_STREAM, game_seed])
        obs, info = env.reset(seed=game_seed)
        rewards: list[float] = []
        step = 0
        while True:
            mask = np.asarray(info["action_mask"], dtype=bool)
            search.rng = label_rng(cfg.seed, game_seed, step)
            label = int(search.act(obs, mask))
            expert_turn = coins.random() < beta
            action = label if expert_turn or actor is None else int(actor.act(obs, mask))
            for name, value in (("observations", np.asarray(obs, dtype=np.float32)), ("masks", mask),
                                ("labels", label), ("played", action), ("game_seeds", game_seed),
                                ("steps", step), ("rounds", round_)):
                rows[name].append(value)
            obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(float(reward))
            step += 1
            if terminated or truncated:
                wins += bool(info.get("is_success", False))
                break
        rows["returns"].extend(np.cumsum(rewards[::-1])[::-1].tolist())
    env.close()
    return DistillData(
        observations=np.stack(rows["observations"]),
        masks=np.stack(rows["masks"]),
        labels=np.asarray(rows["labels"], dtype=np.int64),
        played=np.asarray(rows["played"], dtype=np.int64),
        returns=np.asarray(rows["returns"], dtype=np.float32),
        game_seeds=np.asarray(rows["game_seeds"], dtype=np.int64),
        steps=np.asarray(rows["steps"], dtype=np.int64),
        rounds=np.asarray(rows["rounds"], dtype=np.int64),
        games=len(seeds),
        wins=wins,
    )


def collect_round(cfg: ExpertIterationConfig, actor: Any, round_: int, progress: Any = None) -> DistillData:
    """The labelled states of round ``round_``'s games, played by ``actor`` (a picklable player, e.g. a
    [`FrozenPolicy`][thermopylae_agents.policies.frozen_policy.FrozenPolicy]; ``None``: the search plays
    every move) mixed with the search. The same for any ``cfg.workers``; ``progress(games)`` after each
    chunk."""
    first = cfg.round_seed(round_)
    seeds = list(range(first, first + cfg.games_per_round))
    chunk = max(1, min(25, math.ceil(len(seeds) / (cfg.workers * 4))))
    beta = cfg.beta(round_) if actor is not None else 1.0
    tasks = [(cfg, actor, seeds[i:i + chunk], round_, beta) for i in range(0, len(seeds), chunk)]
    parts: list[DistillData] = []
    if cfg.workers > 1 and len(tasks) > 1:
        with multiprocessing.get_context("fork").Pool(min(cfg.workers, len(tasks))) as pool:
            for part in pool.imap(_play_and_label, tasks):
                parts.append(part)
                if progress is not None:
                    progress(part.games)
    else:
        for task in tasks:
            parts.append(_play_and_label(task))
            if progress is not None:
                progress(parts[-1].games)
    return DistillData.concatenate(parts)


# ------------------------------------------------------------------------------------------------ the run
@dataclass
class Distillation:
    """A run being made: its config, folder, model, data and measurements."""

    cfg: ExpertIterationConfig
    run_dir: Path
    model: Any
    progress: bool = True
    data: DistillData | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)
    start_eval: dict[str, Any] | None = None
    start_wins: list[bool] | None = None
    started: float = field(default_factory=time.perf_counter)


def _load_start(cfg: ExpertIterationConfig, progress: bool) -> Any:
    """The start model: a shipped policy's zip, a zip path, or a fresh network cloned from the heuristic."""
    from thermopylae_agents.training.distribution import speed_up_policy  # extra: train

    if cfg.start == BC_START:
        return _bc_start(cfg, progress)
    if is_path(cfg.start):
        path = Path(cfg.start)
    else:
        options = SHIPPED_ENV_OPTIONS.get(cfg.start)
        if options is None or "num_players" not in options:
            names = ", ".join(n for n, o in SHIPPED_ENV_OPTIONS.items() if "num_players" in o)
            raise ValueError(f"start: no shipped co-op policy {cfg.start!r}; known: {names}, {BC_START} "
                             "or the path of an SB3 zip")
        if options["num_players"] != cfg.num_players:
            raise ValueError(f"start: {cfg.start} plays a team of {options['num_players']}, not "
                             f"{cfg.num_players}")
        path = POLICY_DIR / f"{cfg.start}.zip"
    model = load_model(path)
    if getattr(model.observation_space, "shape", None) != _coop_observation_shape(cfg.num_players):
        raise ValueError(f"start: {path} does not take the observations of a team of {cfg.num_players}")
    return speed_up_policy(model)


def _coop_observation_shape(num_players: int) -> tuple[int, ...]:
    env = gym.make(COOP_ID, num_players=num_players, disable_env_checker=True)
    shape = tuple(env.observation_space.shape)
    env.close()
    return shape


def _ppo_block(cfg: ExpertIterationConfig, n_envs: int | None = None) -> Any:
    data = resolve_config("coop", cfg.ppo_config_path(), seed=cfg.seed, n_envs=n_envs)
    hp = data[COOP_ID]
    if int((hp.get("env_kwargs") or {}).get("num_players", 1)) != cfg.num_players:
        raise ValueError(f"ppo_config {cfg.ppo_config_path()}: not a config for a team of {cfg.num_players}")
    return Config(hp, COOP_ID)


def _bc_start(cfg: ExpertIterationConfig, progress: bool) -> Any:
    from thermopylae_agents.training.imitation import warm_start  # extra: train
    from thermopylae_agents.training.ppo import build_model  # extra: train

    hp = _ppo_block(cfg)
    env_kwargs = hp.plain("env_kwargs", {})
    env = build_vec_env(COOP_ID, env_kwargs, env_count(hp), cfg.seed, "native")
    model = build_model("maskable_ppo", env, hp, cfg.seed, None, "cpu")
    if cfg.bc_episodes > 0:
        bc = dict(hp.plain("bc") or {})
        bc.update(expert="heuristic", episodes=cfg.bc_episodes, dagger_rounds=0, workers=cfg.workers)
        warm_start(model, COOP_ID, env_kwargs, Config(bc, "bc"), cfg.seed, bar=progress)
    return model


def setup(cfg: ExpertIterationConfig, out: str | os.PathLike[str] | None = None,
          progress: bool = True) -> Distillation:
    """Check everything, make the run folder (``out``, default ``runs/coop-distill-seedS``), write
    ``config.yaml``, seed torch and load or build the start policy."""
    from thermopylae_agents.training.runs import default_run_dir, setup_torch, write_yaml  # extra: train

    cfg.validate()
    if out is not None and not os.fspath(out).strip():
        raise ValueError("out: empty path (give a run folder)")
    if cfg.ppo_config is not None or cfg.ppo_timesteps > 0 or cfg.start == BC_START:
        _ppo_block(cfg)  # a bad PPO config is refused before anything is written
    run_dir = Path(out) if out is not None else default_run_dir("coop", "distill", cfg.seed)
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(f"out: {run_dir} is not a folder")
    setup_torch(cfg.seed)
    model = _load_start(cfg, progress)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_yaml(run_dir / "config.yaml", asdict(cfg))
    return Distillation(cfg, run_dir, model, progress)


def _evaluate(exp: Distillation, agent: Any, label: str) -> tuple[dict[str, Any], list[bool]]:
    cfg = exp.cfg
    start = time.perf_counter()
    records = play_games(COOP_ID, agent, cfg.eval_games, cfg.eval_seed,
                         env_kwargs={"num_players": cfg.num_players})
    wins = [r.won for r in records]
    summary = {"agent": label, "games": len(wins), "wins": int(sum(wins)),
               "win_rate": float(np.mean(wins)) if wins else 0.0,
               "ci95": list(wilson_interval(int(sum(wins)), len(wins))),
               "seconds": round(time.perf_counter() - start, 2)}
    return summary, wins


def _fine_tune(exp: Distillation) -> int:
    cfg, model = exp.cfg, exp.model
    env = build_vec_env(COOP_ID, {"num_players": cfg.num_players}, model.n_envs,
                        cfg.seed * 1_000_003 + len(exp.rounds), "native")
    model.set_env(env)
    before = int(model.num_timesteps)
    try:
        model.learn(total_timesteps=cfg.ppo_timesteps, reset_num_timesteps=False, use_masking=True)
    finally:
        env.close()
    return int(model.num_timesteps) - before


def learn(exp: Distillation) -> list[dict[str, Any]]:
    """The rounds: play and label, aggregate, clone (and fine-tune), evaluate; returns one dict a round."""
    from thermopylae_agents.training.imitation import agreement, behaviour_cloning  # extra: train

    cfg = exp.cfg
    if cfg.eval_games > 0 and exp.start_eval is None:
        exp.start_eval, exp.start_wins = _evaluate(exp, FrozenPolicy(exp.model, name="start"), cfg.start)
        log(f"start policy {cfg.start}: won {exp.start_eval['wins']} of {cfg.eval_games} held-out deals")
    for round_ in range(len(exp.rounds), cfg.rounds):
        began = time.perf_counter()
        actor = FrozenPolicy(exp.model, name=f"round{round_}")
        with Stage(f"round {round_ + 1}/{cfg.rounds}: playing and labelling", cfg.games_per_round, "games",
                   exp.progress) as stage:
            new = collect_round(cfg, actor, round_, stage.advance)
        on_policy = agreement(exp.model.policy, new.expert_data())
        exp.data = new if exp.data is None else DistillData.concatenate([exp.data, new])
        history = behaviour_cloning(exp.model.policy, exp.data.expert_data(), epochs=cfg.epochs,
                                    batch_size=cfg.batch_size, learning_rate=cfg.learning_rate,
                                    value_coef=cfg.value_coef, seed=cfg.seed * 1000 + round_)
        tuned = _fine_tune(exp) if cfg.ppo_timesteps > 0 else 0
        row: dict[str, Any] = {
            "round": round_ + 1, "beta": cfg.beta(round_), "games": new.games,
            "played_win_rate": new.wins / max(new.games, 1), "decisions": len(new),
            "dataset_decisions": len(exp.data),
            "moves_played_equal_to_label": int((new.played == new.labels).sum()),
            "agreement_before_training": on_policy,
            "agreement_after_training": agreement(exp.model.policy, exp.data.expert_data()),
            "last_epoch": history[-1] if history else None, "ppo_timesteps": tuned,
        }
        if cfg.eval_games > 0:
            row["evaluation"], wins = _evaluate(exp, FrozenPolicy(exp.model, name="distilled"), "distilled")
            row["paired_vs_start"] = paired_comparison("distilled", wins, cfg.start, exp.start_wins).summary()
        row["seconds"] = round(time.perf_counter() - began, 2)
        exp.rounds.append(row)
        rate = f", held-out win rate {row['evaluation']['win_rate']:.4f}" if "evaluation" in row else ""
        log(f"round {round_ + 1}/{cfg.rounds}: {len(new):,} states ({new.games} games, beta "
            f"{row['beta']:.3f}), agreement {on_policy:.3f} -> {row['agreement_after_training']:.3f}{rate}")
    return exp.rounds


def save(exp: Distillation, command: str | None = None) -> dict[str, Any]:
    """``policy.zip`` (SB3, for play and further training), ``policy.json`` + ``policy.safetensors`` (the
    pickle-free export, so that ``RUN/policy.json`` or ``RUN/policy.zip`` is an agent spec),
    ``dataset.npz`` and ``report.json``; returns the report."""
    from thermopylae_agents.training.runs import save_for_play  # extra: train

    cfg, run_dir = exp.cfg, exp.run_dir
    zip_path = save_for_play(exp.model, run_dir / "policy.zip")
    command = command if command is not None else shlex.join(["thermopylae", "distill", *sys.argv[1:]])
    json_path, arrays = export_sb3_policy(exp.model, run_dir / "policy", COOP_ID, source=zip_path.name,
                                          env_options={"num_players": cfg.num_players},
                                          provenance={"training_command": command})
    if exp.data is not None:
        exp.data.save(run_dir / "dataset.npz")
    report = {"config": asdict(cfg), "command": command, "policy_zip": str(zip_path),
              "policy_json": str(json_path), "start_evaluation": exp.start_eval, "rounds": exp.rounds,
              "dataset_decisions": len(exp.data) if exp.data is not None else 0,
              "wall_seconds": round(time.perf_counter() - exp.started, 1)}
    (run_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log(f"saved {zip_path} and {json_path.name} + {arrays.name} -> {run_dir}")
    return report


def run(cfg: ExpertIterationConfig, out: str | os.PathLike[str] | None = None, progress: bool = True,
        command: str | None = None) -> dict[str, Any]:
    """[`setup`][thermopylae_agents.training.expert_iteration.setup], then
    [`learn`][thermopylae_agents.training.expert_iteration.learn], then
    [`save`][thermopylae_agents.training.expert_iteration.save]; returns the report."""
    exp = setup(cfg, out, progress)
    learn(exp)
    return save(exp, command)
