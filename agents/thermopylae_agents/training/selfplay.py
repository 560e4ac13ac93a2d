"""Self-play for the duel: the Greek and the Persian policies trained in alternation, each against a pool
of frozen snapshots of the other side.

Reads top to bottom: set up the experiment, build both sides (env, model cloned from the heuristic or
loaded to resume), then per generation each side learns against the other's pool and leaves a snapshot
in it, save both, report the cross-play matrix. ``selfplay.vec: native`` (the default) collects on the
native duel engine ([`thermopylae_env.duel.sb3.DuelSB3VecEnv`][], one per side) and draws the
opponent per rollout from a [`PFSPPool`][thermopylae_agents.training.selfplay.PFSPPool]; ``dummy`` keeps
single envs and the fixed-probability [`OpponentPool`][thermopylae_agents.training.selfplay.OpponentPool],
drawn per episode. The skeleton (setup, learn, save, finish) is the one of
[`thermopylae_agents.training.ppo`][].
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.training.callbacks import (
    ThreadCap,
    ThroughputCallback,
    build_callbacks,
    hparam_dict,
    save_atomically,
    write_summary,
)
from thermopylae_agents.training.config import env_count
from thermopylae_agents.training.envs import eval_env_kwargs, make_env_fn
from thermopylae_agents.training.imitation import warm_start
from thermopylae_agents.training.ppo import algo_class, build_model, load_model, mark_model_keys_read
from thermopylae_agents.training.progress import log
from thermopylae_agents.training.report import cross_play_report, format_cross_play
from thermopylae_agents.training.runs import (
    finish,
    learn,
    save_trained_model,
    set_learner_threads,
    setup_experiment,
)
from thermopylae_env import GREEK_ID, PERSIAN_ID
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian
from thermopylae_env.duel.sb3 import DuelSB3VecEnv
from thermopylae_env.threads import configure_torch

__all__ = [
    "SIDES",
    "OpponentPool",
    "PFSPCallback",
    "PFSPPool",
    "PoolOpponent",
    "ResampleOpponent",
    "train_selfplay",
]

SIDES = (("greek", GREEK_ID), ("persian", PERSIAN_ID))


class OpponentPool:
    """The opponents one side trains against: hand-written players and frozen snapshots of the other side.

    For each episode [`sample`][thermopylae_agents.training.selfplay.OpponentPool.sample] picks the latest
    snapshot with probability ``latest_prob``, the heuristic (while it is in the pool) with
    ``heuristic_prob``, and otherwise an older snapshot uniformly; probabilities of absent members go to the
    others. At most ``max_pool`` snapshots are kept.
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


class PFSPPool:
    """The opponents one side trains against, drawn by prioritised fictitious self-play (PFSP).

    Members: the hand-written player (``heuristic_name``, the duel engine's built-in heuristic; it never
    leaves the pool) and the last ``max_pool`` frozen snapshots of the other side. Each member keeps the
    learner's results against it ([`record`][thermopylae_agents.training.selfplay.PFSPPool.record]); its
    estimated learner win rate is ``(wins + prior_games / 2) / (games + prior_games)`` (a member not played
    yet counts as even), and it is drawn with weight ``(1 - win_rate) ** power``: AlphaStar's ``f_hard``, so
    the opponents that beat the learner are played most and the ones it always beats rarely. All weights zero:
    uniform.
    """

    def __init__(self, heuristic: Any = "heuristic", heuristic_name: str = "heuristic", max_pool: int = 5,
                 power: float = 2.0, prior_games: float = 2.0) -> None:
        if int(max_pool) < 1 or not float(power) > 0 or not float(prior_games) > 0:
            raise ValueError("PFSPPool needs max_pool >= 1, power > 0 and prior_games > 0, got "
                             f"{max_pool!r}, {power!r}, {prior_games!r}")
        self.heuristic = heuristic
        self.heuristic_name = heuristic_name
        self.snapshots: list[FrozenPolicy] = []
        self.max_pool = int(max_pool)
        self.power = float(power)
        self.prior_games = float(prior_games)
        self.results: dict[str, list[float]] = {heuristic_name: [0.0, 0.0]}  # name -> [learner wins, games]
        self.counts: dict[str, int] = {}

    def add(self, snapshot: FrozenPolicy) -> None:
        """A new snapshot joins with no results; the oldest snapshot beyond ``max_pool`` leaves."""
        if snapshot.name in self.results:
            raise ValueError(f"the pool already has a member named {snapshot.name!r}")
        self.snapshots.append(snapshot)
        self.results[snapshot.name] = [0.0, 0.0]
        for gone in self.snapshots[: -self.max_pool]:
            del self.results[gone.name]
        del self.snapshots[: -self.max_pool]

    def names(self) -> list[str]:
        return [self.heuristic_name] + [s.name for s in self.snapshots]

    def player(self, name: str) -> Any:
        if name == self.heuristic_name:
            return self.heuristic
        for snapshot in self.snapshots:
            if snapshot.name == name:
                return snapshot
        raise KeyError(f"no pool member named {name!r}")

    def record(self, name: str, learner_wins: float, games: float) -> None:
        """Add ``games`` finished games against ``name``, ``learner_wins`` of them won by the learner (results
        of a member that has left the pool are dropped)."""
        if not 0 <= learner_wins <= games:
            raise ValueError(f"learner_wins must be in 0..games, got {learner_wins!r} of {games!r}")
        if name in self.results:
            self.results[name][0] += float(learner_wins)
            self.results[name][1] += float(games)

    def win_rate(self, name: str) -> float:
        """The learner's estimated win rate against ``name``."""
        wins, games = self.results[name]
        return (wins + self.prior_games / 2) / (games + self.prior_games)

    def members(self) -> list[tuple[str, float]]:
        """``(name, probability)`` of each member, the heuristic first."""
        names = self.names()
        weights = np.array([(1.0 - self.win_rate(n)) ** self.power for n in names], dtype=np.float64)
        total = float(weights.sum())
        probs = weights / total if total > 0 else np.full(len(names), 1.0 / len(names))
        return list(zip(names, probs.tolist(), strict=True))

    def sample(self, rng: np.random.Generator) -> str:
        """The name of one member drawn with the PFSP weights (counted in ``counts``)."""
        members = self.members()
        index = int(rng.choice(len(members), p=[p for _, p in members]))
        name = members[index][0]
        self.counts[name] = self.counts.get(name, 0) + 1
        return name


class PFSPCallback(BaseCallback):
    """Per rollout, draws the side's opponent from a
    [`PFSPPool`][thermopylae_agents.training.selfplay.PFSPPool] and puts it in the native env; every finished
    game goes into the pool's results under the opponent that was playing when it ended (a game running across
    a rollout boundary is credited to the later opponent)."""

    def __init__(self, pool: PFSPPool, env: Any, seed: int) -> None:
        super().__init__()
        self.pool = pool
        self.target_env = env
        self.rng = np.random.default_rng(seed)
        self.current: str | None = None

    def _on_rollout_start(self) -> None:
        self.current = self.pool.sample(self.rng)
        self.target_env.set_opponent(self.pool.player(self.current))

    def _on_step(self) -> bool:
        dones = np.asarray(self.locals.get("dones", ()), dtype=bool)
        if self.current is not None and dones.any():
            infos = self.locals["infos"]
            wins = sum(bool(infos[i].get("is_success")) for i in np.flatnonzero(dones))
            self.pool.record(self.current, wins, int(dones.sum()))
        return True


class PoolOpponent:
    """The ``opponent=`` of one duel env: a member of an
    [`OpponentPool`][thermopylae_agents.training.selfplay.OpponentPool], drawn anew each episode.

    [`ResampleOpponent`][thermopylae_agents.training.selfplay.ResampleOpponent] clears the choice on
    ``reset``; the first opponent move of the episode (the env plays it inside ``reset``, after reseeding)
    then draws from the env's ``np_random``.
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
    """Makes the env's [`PoolOpponent`][thermopylae_agents.training.selfplay.PoolOpponent] draw a new opponent
    at every ``reset``."""

    def __init__(self, env: gym.Env, opponent: PoolOpponent) -> None:
        super().__init__(env)
        self.opponent = opponent
        opponent.env = env

    def reset(self, **kwargs: Any):
        self.opponent.current = None
        return self.env.reset(**kwargs)


def _pool_env_fn(env_id: str, env_kwargs: Mapping[str, Any], pool: OpponentPool) -> Callable[[], gym.Env]:
    kwargs = {k: v for k, v in env_kwargs.items() if k != "opponent"}

    def thunk() -> gym.Env:
        opponent = PoolOpponent(pool)
        env = ResampleOpponent(gym.make(env_id, opponent=opponent, **kwargs), opponent)
        return Monitor(env, info_keywords=("is_success",))

    return thunk


def _completed_generations(snap_dir: os.PathLike[str] | str) -> int:
    done = 0
    while all((Path(snap_dir) / f"{side}_gen{done + 1}.zip").is_file() for side, _ in SIDES):
        done += 1
    return done


def _side_envs(exp, side: str, env_id: str, pool: Any, n: int, vec: str):
    """The training env of one side (opponents from ``pool``) and its evaluation env (the heuristic)."""
    env_kwargs = exp.cfg[env_id].plain("env_kwargs", {})
    eval_kwargs = dict(eval_env_kwargs(env_kwargs), opponent="heuristic")
    if vec == "native":
        kwargs = {k: v for k, v in env_kwargs.items() if k != "opponent"}
        env = DuelSB3VecEnv(n, side=side, opponent="heuristic", **kwargs)
        eval_env = DuelSB3VecEnv(min(32, n), side=side, **eval_kwargs)
    else:
        env = DummyVecEnv([_pool_env_fn(env_id, env_kwargs, pool) for _ in range(n)])
        eval_env = DummyVecEnv([make_env_fn(env_id, eval_kwargs) for _ in range(min(8, n))])
    return env, eval_env


def _build_side(
    exp, side: str, index: int, env_id: str, pool: Any, start_generation: int, verbose: int, vec: str
) -> dict[str, Any]:
    """One side: its env (opponents drawn from ``pool``), evaluation env, model, callbacks."""
    hp = exp.cfg[env_id]
    env_kwargs = hp.plain("env_kwargs", {})
    n = env_count(hp)
    side_seed = exp.seed + 1000 * index
    env, eval_env = _side_envs(exp, side, env_id, pool, n, vec)
    resume_offset = start_generation * 7919 if start_generation else 0
    env.seed(side_seed + resume_offset)
    eval_env.seed(side_seed + 1_000_000)
    tb = exp.run_dir / "tb" / side
    if start_generation == 0:
        model = build_model(exp.algo, env, hp, side_seed, str(tb), exp.device, verbose)
        bc = hp.get("bc")
        if bc is not None and int(bc["episodes"]) > 0:
            warm_start(
                model,
                env_id,
                dict(env_kwargs, opponent="heuristic"),
                bc,
                side_seed,
                bar=exp.progress,
                tb_dir=tb / "warm_start",
            )
    else:
        snapshot = exp.run_dir / "snapshots" / f"{side}_gen{start_generation}.zip"
        model = load_model(exp.algo, hp, snapshot, env=env, device=exp.device)
        model.tensorboard_log = str(tb)
        mark_model_keys_read(hp)
    clock = ThroughputCallback()
    generations = int(exp.cfg["selfplay"]["generations"])
    callbacks = build_callbacks(exp.algo, hp, exp.run_dir / side, eval_env, n, clock, exp.progress)
    if isinstance(pool, PFSPPool):
        callbacks.append(PFSPCallback(pool, env, side_seed + 2_000_000 + resume_offset))
    return {
        "env": env,
        "eval_env": eval_env,
        "model": model,
        "clock": clock,
        "per_generation": max(int(hp["n_timesteps"]) // generations, 1),
        "callbacks": callbacks,
    }


def _make_pools(sp: Any, vec: str) -> dict[str, Any]:
    """pools[side]: the players that side trains AGAINST (the other side's heuristic and snapshots)."""
    if vec == "native":
        kwargs = {
            "max_pool": int(sp.get("max_pool", 5)),
            "power": float(sp.get("pfsp_power", 2.0)),
            "prior_games": float(sp.get("pfsp_prior_games", 2.0)),
        }
        return {"greek": PFSPPool(**kwargs), "persian": PFSPPool(**kwargs)}

    args = (
        float(sp.get("latest_prob", 0.4)),
        float(sp.get("heuristic_prob", 0.3)),
        int(sp.get("max_pool", 5)),
    )
    return {
        "greek": OpponentPool(HeuristicPersian(), *args),
        "persian": OpponentPool(HeuristicGreek(), *args),
    }


def _pool_line(pool: Any) -> str:
    if isinstance(pool, PFSPPool):
        return ", ".join(f"{n}:{q:.2f} (learner wins {pool.win_rate(n):.2f})" for n, q in pool.members())
    return ", ".join(f"{getattr(p, 'name', 'heuristic')}:{q:.2f}" for p, q in pool.members())


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
    learner: str | None = None,
    precision: str | None = None,
    threads: int | str | None = None,
    progress: bool = True,
    device: str | None = None,
    report: bool = True,
    verbose: int = 0,
) -> dict[str, Any]:
    """Self-play for the duel: the Greek and the Persian policies trained in alternation.

    Generation ``g``: the Greek trains ``n_timesteps / generations`` steps against the Persian pool, a
    frozen snapshot of it joins the Greek pool; then the same for the Persian against the Greek pool. The
    pools start with the heuristic player (it gives the first snapshots something meaningful to beat),
    which stays for good in the PFSP pool (``vec: native``) and for ``heuristic_generations`` generations
    in the fixed one (``vec: dummy``). Models and snapshots are saved per generation in
    ``snapshots/``; ``resume`` (the run folder) continues after the last completed generation.
    """
    resume_dir = None
    if resume is not None:
        resume_dir = Path(resume)
        if not (resume_dir / "config.yaml").is_file():
            raise FileNotFoundError(f"--resume {resume_dir}: not a self-play run folder (no config.yaml)")

    # 1. Experiment.
    exp = setup_experiment(
        "selfplay",
        config=config,
        out=out,
        resume_dir=resume_dir,
        progress=progress,
        algo=algo,
        seed=seed,
        timesteps=timesteps,
        n_envs=n_envs,
        eval_freq=eval_freq,
        eval_episodes=eval_episodes,
        learner=learner,
        precision=precision,
        threads=threads,
        device=device,
    )
    if exp.algo != "maskable_ppo":
        raise ValueError("self-play uses maskable_ppo (snapshots play the legal actions only)")
    sp = exp.cfg["selfplay"]
    generations = int(sp["generations"])
    deterministic = bool(sp.get("snapshot_deterministic", True))
    vec = str(sp.get("vec", "native"))
    # The PFSP pool (native) keeps the heuristic for good; the fixed pool may retire it.
    heuristic_generations = generations
    if vec == "dummy":
        heuristic_generations = int(sp.get("heuristic_generations", generations))
    snap_dir = exp.run_dir / "snapshots"
    snap_dir.mkdir(exist_ok=True)
    start_generation = 0
    if resume_dir is not None:
        start_generation = _completed_generations(snap_dir)
        if start_generation == 0:
            raise FileNotFoundError(f"--resume {resume_dir}: no completed generation in {snap_dir}")
        log(
            f"resuming self-play after generation {start_generation}: {generations - start_generation} more "
            f"generation(s) of both sides"
        )

    # 2. Both sides. pools[side] holds the players that side trains AGAINST (snapshots of the other side).
    pools = _make_pools(sp, vec)
    sides = {
        side: _build_side(exp, side, index, env_id, pools[side], start_generation, verbose, vec)
        for index, (side, env_id) in enumerate(SIDES)
    }
    # Each side's torch threads, measured (or set) once; each side trains on its own count.
    threads = {side: set_learner_threads(sides[side]["model"], exp.cfg[env_id]) for side, env_id in SIDES}
    caps = {side: ThreadCap(threads[side]["threads"]) for side in threads
            if threads[side]["chosen_by"] == "measurement" and threads[side]["threads"] > 1}
    for side, cap in caps.items():
        sides[side]["callbacks"].append(cap)
    for g in range(1, start_generation + 1):  # snapshots of completed generations go back into the pools
        for side, other in (("greek", "persian"), ("persian", "greek")):
            snap = algo_class(exp.algo).load(snap_dir / f"{side}_gen{g}.zip", device="cpu")
            pools[other].add(FrozenPolicy(snap, f"{side}_gen{g}", deterministic))

    # 3. Learn, generation by generation.
    for g in range(start_generation + 1, generations + 1):
        for side, other in (("greek", "persian"), ("persian", "greek")):
            if isinstance(pools[side], OpponentPool):
                pools[side].use_heuristic = g <= heuristic_generations
            entry = sides[side]
            configure_torch(threads[side]["threads"])
            log(f"generation {g}/{generations}: {side} trains against [{_pool_line(pools[side])}]")
            try:
                learn(
                    entry["model"],
                    entry["per_generation"],
                    entry["callbacks"],
                    exp,
                    f"self-play generation {g}/{generations}, {side}",
                )
            except KeyboardInterrupt:
                # A resume restarts the unfinished generation from the snapshots of the finished ones.
                log(f"interrupted in generation {g}/{generations}: generations 1..{g - 1} are saved in "
                    f"{snap_dir}; resume with: thermopylae train selfplay --resume {exp.run_dir}")
                raise
            save_atomically(entry["model"], snap_dir / f"{side}_gen{g}.zip")
            pools[other].add(FrozenPolicy(entry["model"], f"{side}_gen{g}", deterministic))

    # 4. Save.
    result: dict[str, Any] = {
        "target": "selfplay",
        "algo": exp.algo,
        "seed": exp.seed,
        "run_dir": str(exp.run_dir),
        "generations": generations,
        "vec": vec,
        "learner": {side: exp.cfg[env_id].get("learner", "sb3") for side, env_id in SIDES},
        "threads": {side: threads[side] | ({"rollouts_by_count": {str(count): n for count, n in
                                                                   sorted(caps[side].counts.items())}}
                                           if side in caps else {}) for side in threads},
        "resumed_after_generation": start_generation or None,
    }
    for side, entry in sides.items():
        path = save_trained_model(entry["model"], exp.run_dir, f"final_{side}")
        entry["env"].close()
        entry["eval_env"].close()
        result[side] = {
            "model": str(path),
            "num_timesteps": int(entry["model"].num_timesteps),
            "throughput": entry["clock"].summary(),
            "opponents_sampled": dict(pools[side].counts),
        }
        if isinstance(pools[side], PFSPPool):
            result[side]["pfsp_learner_win_rates"] = {n: pools[side].win_rate(n) for n in pools[side].names()}

    # 5. Report.
    report_episodes = int(sp.get("report_episodes", 1000))
    metrics = {
        f"throughput/{side}_steps_per_second": float(result[side]["throughput"]["steps_per_second"])
        for side, _ in SIDES
    }
    if report:
        result["cross_play"] = cross_play_report(
            exp.run_dir / "final_greek.zip",
            exp.run_dir / "final_persian.zip",
            report_episodes,
            exp.seed,
            progress,
        )
        print(format_cross_play(result["cross_play"]), flush=True)
        for g, row in result["cross_play"]["matrix"].items():
            for p, cell in row.items():
                metrics[f"report/greek_{g}_vs_persian_{p}_win_rate"] = float(cell["greek_win_rate"])
    write_summary(exp.run_dir, hparam_dict(exp.data), metrics)
    return finish(exp, result, reported=report)
