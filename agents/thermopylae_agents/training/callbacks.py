"""Callbacks of ``learn``: throughput, progress, checkpoints and periodic evaluation; TensorBoard writers.

Every number a run measures goes to TensorBoard (``tb/`` of the run folder): PPO's own ``rollout/``,
``train/`` and ``time/`` scalars, ``eval/success_rate`` of the periodic evaluations, ``throughput/`` (steps
per second without the time of evaluations and checkpoints), and in ``tb/warm_start`` the behaviour
cloning and DAgger curves; ``tb/summary`` holds the hyperparameters (TensorBoard's HPARAMS tab) with
the final report's win rates.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback
from stable_baselines3.common.logger import HParam, configure

from thermopylae_agents.training.config import Config
from thermopylae_agents.training.progress import Stage
from thermopylae_env.threads import free_threads

__all__ = [
    "AtomicCheckpointCallback",
    "LearnProgress",
    "ThreadCap",
    "ThroughputCallback",
    "build_callbacks",
    "hparam_dict",
    "save_atomically",
    "scalar_writer",
    "write_summary",
]


def save_atomically(model: Any, path: str | os.PathLike[str], exclude: Sequence[str] | None = None) -> Path:
    """``model.save(path)`` such that ``path`` is either the old file or the whole new one: the zip is
    written to a temporary file of the same folder (``<name>.part``, which ``--resume`` never picks) and
    moved over ``path`` once complete. A crash or Ctrl-C mid-save leaves no truncated model behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.part")
    try:
        with open(part, "wb") as handle:
            model.save(handle, exclude=list(exclude) if exclude is not None else None)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return path


class AtomicCheckpointCallback(CheckpointCallback):
    """SB3's checkpoints (``<prefix>_<steps>_steps.zip``), each written by
    [`save_atomically`][thermopylae_agents.training.callbacks.save_atomically]."""

    def _on_step(self) -> bool:
        if self.n_calls % self.save_freq == 0:
            save_atomically(self.model, self._checkpoint_path(extension="zip"))
        return True


class ThroughputCallback(BaseCallback):
    """Measures env steps per second during ``learn``: overall, and while collecting rollouts.

    Time spent in periodic evaluation and checkpointing (``excluded``, filled in by those callbacks) is
    subtracted, so the numbers describe training itself; both go to TensorBoard after every rollout.
    The summary also gives the process's CPU time (``time.process_time``, all threads) over the same
    span, which a machine shared with other jobs changes much less than the wall time.
    """

    def __init__(self) -> None:
        super().__init__()
        self.excluded = 0.0
        self.excluded_cpu = 0.0
        self.excluded_by: dict[str, float] = {"evaluation": 0.0, "checkpoints": 0.0}
        self.rollout_time = 0.0
        self.wall = 0.0
        self.cpu = 0.0
        self._start_cpu = 0.0
        self.steps = 0
        self._start = 0.0
        self._start_steps = 0
        self._rollout_start = 0.0
        self._excluded_at_rollout = 0.0
        self._run_start_excluded = 0.0
        self._run_rollout_time = 0.0

    def _on_training_start(self) -> None:
        self._start = time.perf_counter()
        self._start_cpu = time.process_time()
        self._start_steps = self.model.num_timesteps
        self._run_start_excluded = self.excluded
        self._run_rollout_time = self.rollout_time

    def _on_rollout_start(self) -> None:
        self._rollout_start = time.perf_counter()
        self._excluded_at_rollout = self.excluded

    def _on_rollout_end(self) -> None:
        spent = time.perf_counter() - self._rollout_start
        self.rollout_time += spent - (self.excluded - self._excluded_at_rollout)
        steps = self.model.num_timesteps - self._start_steps
        train_time = time.perf_counter() - self._start - (self.excluded - self._run_start_excluded)
        self.logger.record("throughput/steps_per_second", steps / max(train_time, 1e-9))
        self.logger.record(
            "throughput/rollout_steps_per_second",
            steps / max(self.rollout_time - self._run_rollout_time, 1e-9),
        )

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        self.wall += time.perf_counter() - self._start
        self.cpu += time.process_time() - self._start_cpu
        self.steps += self.model.num_timesteps - self._start_steps

    def summary(self) -> dict[str, float]:
        train_time = max(self.wall - self.excluded, 1e-9)
        train_cpu = max(self.cpu - self.excluded_cpu, 1e-9)
        return {
            "env_steps": int(self.steps),
            "learn_seconds": round(self.wall, 2),
            "excluded_eval_checkpoint_seconds": round(self.excluded, 2),
            "evaluation_seconds": round(self.excluded_by["evaluation"], 2),
            "checkpoint_seconds": round(self.excluded_by["checkpoints"], 2),
            "steps_per_second": round(self.steps / train_time, 1),
            "rollout_steps_per_second": round(self.steps / max(self.rollout_time, 1e-9), 1),
            "learn_cpu_seconds": round(train_cpu, 2),
            "steps_per_cpu_second": round(self.steps / train_cpu, 1),
        }


class LearnProgress(BaseCallback):
    """The progress of one ``learn`` call (a bar, or log lines when not on a terminal)."""

    def __init__(self, description: str, steps: int, bar: bool) -> None:
        super().__init__()
        self.description, self.total, self.bar = description, int(steps), bar
        self._stage: Stage | None = None
        self._start_steps = 0

    def _on_training_start(self) -> None:
        self._start_steps = self.model.num_timesteps
        self._stage = Stage(self.description, self.total, "steps", self.bar).__enter__()

    def _on_step(self) -> bool:
        assert self._stage is not None
        self._stage.update_to(min(self.model.num_timesteps - self._start_steps, self.total))
        return True

    def _on_training_end(self) -> None:
        if self._stage is not None:
            self._stage.update_to(self.model.num_timesteps - self._start_steps)
            self._stage.__exit__(None)
            self._stage = None


def _timed(callback: BaseCallback, clock: ThroughputCallback, kind: str) -> BaseCallback:
    """Wrap a callback's ``_on_step`` so that its time is added to ``clock.excluded`` (wall),
    ``clock.excluded_cpu`` and ``clock.excluded_by[kind]``."""
    inner = callback._on_step

    def on_step() -> bool:
        start, start_cpu = time.perf_counter(), time.process_time()
        try:
            return inner()
        finally:
            spent = time.perf_counter() - start
            clock.excluded += spent
            clock.excluded_by[kind] += spent
            clock.excluded_cpu += time.process_time() - start_cpu

    callback._on_step = on_step  # type: ignore[method-assign]
    return callback


def _with_progress(callback: EvalCallback, episodes: int, bar: bool) -> EvalCallback:
    """A periodic evaluation that shows its games as a stage (``evaluate_policy`` calls the success
    callback once per env step; an episode ends where ``done`` is set)."""
    inner_step, inner_success = callback._on_step, callback._log_success_callback
    state: dict[str, Stage | None] = {"stage": None}

    def log_success(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        inner_success(locals_, globals_)
        stage = state["stage"]
        if stage is not None and locals_.get("done"):
            stage.advance(1)

    def on_step() -> bool:
        if callback.eval_freq > 0 and callback.n_calls % callback.eval_freq == 0:
            callback.logger.record("eval/episodes", episodes)  # dumped with the evaluation's own scalars
            with Stage(f"evaluation at {callback.num_timesteps:,} steps", episodes, "games", bar) as stage:
                state["stage"] = stage
                try:
                    return inner_step()
                finally:
                    state["stage"] = None
        return inner_step()

    callback._log_success_callback = log_success  # type: ignore[method-assign]
    callback._on_step = on_step  # type: ignore[method-assign]
    return callback


class ThreadCap(BaseCallback):
    """``threads: auto`` through a run: before each rollout, torch's thread count is the measured best
    capped by the cores other processes leave free now
    ([`free_threads`][thermopylae_env.threads.free_threads], this process's own load not counted).

    Why: torch's threads wait on each other at every operation, so a count that was right when the run
    started collapses when another job takes a core (several trainings at once are the normal case on a
    shared machine); one fewer thread then keeps the run at its single-thread speed. ``counts`` records
    how many rollouts ran on each count (``report.json``'s ``threads.rollouts_by_count``).
    """

    def __init__(self, best: int) -> None:
        super().__init__()
        self.best = int(best)
        self.counts: dict[int, int] = {}

    def _on_rollout_start(self) -> None:
        count = max(1, min(self.best, free_threads()))
        if th.get_num_threads() != count:
            th.set_num_threads(count)
        self.counts[count] = self.counts.get(count, 0) + 1

    def _on_step(self) -> bool:
        return True


def build_callbacks(
    algo: str, hp: Config, run_dir: Path, eval_env: Any, n_envs: int, clock: ThroughputCallback, bar: bool
) -> list[BaseCallback]:
    """The throughput clock, checkpoints (``checkpoint_freq``) and periodic evaluation (``eval``)."""
    callbacks: list[BaseCallback] = [clock]
    checkpoint_freq = int(hp.get("checkpoint_freq", 0))
    if checkpoint_freq > 0:
        checkpoints = AtomicCheckpointCallback(
            max(checkpoint_freq // n_envs, 1), str(run_dir / "checkpoints"), "model"
        )
        callbacks.append(_timed(checkpoints, clock, "checkpoints"))
    ev = hp.get("eval", Config({}))
    freq = int(ev.get("freq", 0))
    if freq > 0 and eval_env is not None:
        episodes = int(ev.get("episodes", 200))
        kwargs = dict(
            n_eval_episodes=episodes,
            eval_freq=max(freq // n_envs, 1),
            log_path=str(run_dir / "eval"),
            best_model_save_path=str(run_dir / "eval"),
            deterministic=bool(ev.get("deterministic", True)),
            verbose=0,
            warn=False,  # the native co-op VecEnv records episodes itself; the eval env has no shaping
        )
        if algo == "maskable_ppo":
            from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback  # extra: train

            evaluation: EvalCallback = MaskableEvalCallback(eval_env, **kwargs)
        else:
            evaluation = EvalCallback(eval_env, **kwargs)
        callbacks.append(_timed(_with_progress(evaluation, episodes, bar), clock, "evaluation"))
    return callbacks


def scalar_writer(folder: Path) -> Any:
    """An SB3 logger writing TensorBoard scalars only (for the warm start and the summary)."""
    return configure(str(folder), ["tensorboard"])


def hparam_dict(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The resolved config flattened to TensorBoard hparams (numbers, strings, booleans)."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(hparam_dict(value, f"{name}/"))
        elif isinstance(value, bool | int | float | str):
            flat[name] = value
        elif value is not None:
            flat[name] = str(value)
    return flat


def write_summary(run_dir: Path, hparams: Mapping[str, Any], metrics: Mapping[str, float]) -> None:
    """``tb/summary``: the run's hyperparameters and final numbers (TensorBoard's HPARAMS tab), and the
    same final numbers as scalars."""
    writer = scalar_writer(run_dir / "tb" / "summary")
    writer.record("hparams", HParam(dict(hparams), dict(metrics)), exclude=("stdout", "log", "json", "csv"))
    for name, value in metrics.items():
        writer.record(name, value)
    writer.dump(0)
    writer.close()
