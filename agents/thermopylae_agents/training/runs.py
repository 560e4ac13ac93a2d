"""The run skeleton that the PPO and self-play pipelines share (as RL Zoo's ``ExperimentManager``).

[`setup_experiment`][thermopylae_agents.training.runs.setup_experiment] resolves the config (file + command
line), makes the run folder, writes ``config.yaml`` and seeds torch;
[`learn`][thermopylae_agents.training.runs.learn] trains a model for a number of steps with its callbacks and
says how PPO rounds them; [`save_trained_model`][thermopylae_agents.training.runs.save_trained_model] saves
the model for ``--resume`` and for play; [`finish`][thermopylae_agents.training.runs.finish] writes
``report.json``. A pipeline is then these four calls with its own models between.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch as th  # noqa: F401  (configure_torch sets the threads of an imported torch)
import yaml
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import set_random_seed

from thermopylae_agents.policies.registry import make_agent
from thermopylae_agents.training.callbacks import LearnProgress, save_atomically
from thermopylae_agents.training.config import Config, env_ids_of, resolve_config
from thermopylae_agents.training.fast_ppo import measure_threads
from thermopylae_agents.training.imitation import make_expert
from thermopylae_agents.training.kernels import PINNED, kernel_settings
from thermopylae_agents.training.progress import format_seconds, log
from thermopylae_env import COOP_ID
from thermopylae_env.threads import configure_torch, free_threads

__all__ = [
    "Experiment",
    "find_resume",
    "finish",
    "model_zip_problem",
    "save_interrupted",
    "learn",
    "rollout_size",
    "save_for_play",
    "save_trained_model",
    "set_learner_threads",
    "setup_experiment",
    "setup_torch",
    "check_players",
]


@dataclass
class Experiment:
    """A run being made: its folder, resolved config (plain and tracked) and settings."""

    target: str
    run_dir: Path
    data: dict[str, Any]
    cfg: Config
    algo: str
    seed: int
    device: str
    progress: bool
    resume_model: Path | None = None
    started: float = field(default_factory=time.perf_counter)


def setup_torch(seed: int) -> None:
    """One torch thread and every generator seeded: what a run does before building anything (the
    learner's own thread count is set once its model exists, by
    [`set_learner_threads`][thermopylae_agents.training.runs.set_learner_threads])."""
    configure_torch(1)
    set_random_seed(seed)


# A thread count must be this much faster than the next smaller one to be chosen: on a machine shared by
# several runs, a thread that barely helps one run is taken from another.
THREAD_GAIN = 1.10
MAX_AUTO_THREADS = 8


def set_learner_threads(model: Any, hp: Any) -> dict[str, Any]:
    """Set torch's thread count for training ``model`` from the block's ``threads``: a number, or
    ``auto`` (the default): the fastest of 1 .. the free cores (at most ``MAX_AUTO_THREADS``) at one
    update minibatch of this very network, measured now
    ([`measure_threads`][thermopylae_agents.training.fast_ppo.measure_threads]), a count above another
    only if it is at least ``THREAD_GAIN`` times as fast.

    The thread count changes the order of the floating-point sums, hence the weights: ``config.yaml``
    and ``report.json`` record the count used, and ``--threads N`` repeats it. Returns what was decided
    (and measured)."""
    setting = hp.get("threads", "auto")
    if setting != "auto":
        configure_torch(int(setting))
        return {"threads": int(setting), "chosen_by": "config"}
    free = min(free_threads(), MAX_AUTO_THREADS)
    if free <= 1:
        configure_torch(1)
        return {"threads": 1, "chosen_by": "one free core"}
    rates = measure_threads(model.policy, list(range(1, free + 1)), int(model.batch_size),
                            getattr(model, "precision", "float32"))
    chosen = 1
    for count in sorted(rates):
        if rates[count] >= THREAD_GAIN * rates[chosen]:
            chosen = count
    configure_torch(chosen)
    log(f"torch threads: {chosen} (update minibatches per second by threads: "
        + ", ".join(f"{count}: {rate / model.batch_size:,.1f}" for count, rate in rates.items()) + ")")
    return {"threads": chosen, "chosen_by": "measurement",
            "samples_per_s": {str(count): round(rate) for count, rate in rates.items()}}


def default_run_dir(target: str, algo: str, seed: int) -> Path:
    base = Path("runs") / f"{target}-{algo}-seed{seed}"
    if not base.exists():
        return base
    return Path("runs") / f"{target}-{algo}-seed{seed}-{datetime.datetime.now():%Y%m%d-%H%M%S}"


def write_yaml(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(dict(data), handle, sort_keys=False, default_flow_style=None)


def find_resume(resume: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(run_dir, model_zip)`` for ``--resume``: a run folder (its newest complete model: a truncated
    newest checkpoint is skipped, with a warning naming it) or a model file."""
    path = Path(resume)
    if path.is_dir():
        candidates = list((path / "checkpoints").glob("*.zip")) + [
            p for p in (path / "final_model.zip", path / "interrupted_model.zip") if p.is_file()
        ]
        if not candidates:
            raise FileNotFoundError(f"--resume {path}: no checkpoints/*.zip nor final_model.zip there")
        for candidate in sorted(candidates, key=lambda p: p.stat().st_mtime, reverse=True):
            problem = model_zip_problem(candidate)
            if problem is None:
                return path, candidate
            log(f"warning: --resume skips {candidate}: {problem}")
        raise ValueError(f"--resume {path}: no complete model there (every checkpoint is damaged)")
    if path.is_file():
        problem = model_zip_problem(path)
        if problem is not None:
            raise ValueError(f"--resume {path}: {problem}")
        run_dir = path.parent.parent if path.parent.name in ("checkpoints", "eval") else path.parent
        return run_dir, path
    raise FileNotFoundError(f"--resume {path}: no such run folder or model file")


def model_zip_problem(path: Path) -> str | None:
    """Why ``path`` is not a complete SB3 model zip (truncated, not a zip, no ``data`` entry), or
    ``None``. Every entry's checksum is verified, so a file cut short by a crash is caught here."""
    try:
        with zipfile.ZipFile(path) as archive:
            if "data" not in archive.namelist():
                return "not an SB3 model (no 'data' entry)"
            bad = archive.testzip()
            if bad is not None:
                return f"damaged entry {bad!r}"
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as error:
        return f"not a complete zip file (truncated?): {' '.join(str(error).split())}"
    return None


def check_players(data: dict[str, Any], target: str) -> None:
    """Refuse a malformed expert, report player or duel opponent of a resolved config (one clear error),
    before anything is written or trained."""
    for env_id in env_ids_of(target):
        hp = data[env_id]
        bc = hp.get("bc") or {}
        if bc.get("episodes"):
            make_expert(env_id, str(bc.get("expert", "heuristic")))
        report = hp.get("report") or {}
        if env_id == COOP_ID and report.get("search_episodes"):
            try:
                spec = str(report.get("search", "search"))
                make_agent(spec, env_id)
            except (ValueError, TypeError) as error:  # TypeError: a spec whose options are not numbers
                raise ValueError(f"{env_id}: report.search: bad agent spec {spec!r} ({error})") from None
        opponent = (hp.get("env_kwargs") or {}).get("opponent")
        if (
            isinstance(opponent, str)
            and opponent not in ("heuristic", "random")
            and not opponent.endswith(".zip")
        ):
            raise ValueError(
                f"{env_id}: env_kwargs.opponent must be heuristic, random or a model path (.zip), "
                f"not {opponent!r}"
            )


def setup_experiment(
    target: str,
    *,
    config: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    resume_dir: Path | None = None,
    resume_model: Path | None = None,
    progress: bool = True,
    **overrides: Any,
) -> Experiment:
    """Resolve the config, make the run folder (``out``, the resumed run's, or ``runs/...``), write
    ``config.yaml``, seed torch. On resume the run's own ``config.yaml`` is the default config."""
    if resume_dir is not None and config is None:
        config = resume_dir / "config.yaml"
    data = resolve_config(target, config, **overrides)
    check_players(data, target)
    run = data["run"]
    algo, seed, device = run["algo"], run["seed"], run["device"]
    if out is not None:
        if not os.fspath(out).strip():
            raise ValueError("out: empty path (give a run folder)")
        run_dir = Path(out)
    elif resume_dir is not None:
        run_dir = resume_dir
    else:
        run_dir = default_run_dir(target, algo, seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_yaml(run_dir / "config.yaml", data)
    cfg = Config(data)
    for key in ("target", "algo", "seed", "device"):  # consumed above, through resolve_config
        cfg["run"][key]
    cfg["run"].plain("sized_to_budget")
    # Said when this command sized the run; a resumed run keeps its first command's sizing, said then.
    sized_now = overrides.get("timesteps") is not None
    for name, change in (run.get("sized_to_budget") or {}).items() if sized_now else ():
        log(
            f"sized to the budget of {overrides.get('timesteps'):,} steps: {name} {change['full']:,} -> "
            f"{change['sized']:,}"
        )
    kernels = kernel_settings()
    if any(kernels[name] != value for name, value in PINNED.items()):
        log("CPU kernels not pinned (scripts/train.py pins them): on a CPU with other instruction sets "
            "this seed may train other weights")
    setup_torch(seed)
    return Experiment(target, run_dir, data, cfg, algo, seed, device, progress, resume_model)


def rollout_size(model: Any) -> int:
    """Env steps per PPO rollout: ``learn`` always trains whole rollouts."""
    return int(model.n_envs * model.n_steps)


class _RolloutTracker(BaseCallback):
    """Whether ``learn`` is collecting a rollout, and the steps counted when it began."""

    def __init__(self) -> None:
        super().__init__()
        self.collecting = False
        self.started_at = 0

    def _on_rollout_start(self) -> None:
        self.collecting, self.started_at = True, int(self.model.num_timesteps)

    def _on_rollout_end(self) -> None:
        self.collecting = False

    def _on_step(self) -> bool:
        return True


def learn(model: Any, steps: int, callbacks: list, exp: Experiment, description: str) -> int:
    """Train ``model`` for ``steps`` more env steps (rounded up to whole rollouts, which is announced);
    returns the steps really trained."""
    rollout = rollout_size(model)
    planned = math.ceil(steps / rollout) * rollout
    if planned != steps:
        log(
            f"{description}: {steps:,} steps rounded up to {planned:,} ({planned // rollout} whole "
            f"rollouts of {model.n_envs} envs x {model.n_steps} steps)"
        )
    before = int(model.num_timesteps)
    learn_kwargs = {"use_masking": True} if exp.algo == "maskable_ppo" else {}
    rollouts = _RolloutTracker()
    try:
        model.learn(
            total_timesteps=steps,
            callback=[*callbacks, LearnProgress(description, planned, exp.progress), rollouts],
            progress_bar=False,
            reset_num_timesteps=before == 0,
            tb_log_name=exp.algo,
            **learn_kwargs,
        )
    except KeyboardInterrupt:
        # Ctrl-C inside a rollout: the weights never learned from its steps, so the model that is saved
        # to resume from must not count them (a resumed run would skip them, or train nothing at all).
        if rollouts.collecting:
            model.num_timesteps = rollouts.started_at
        raise
    trained = int(model.num_timesteps) - before
    log(f"{description}: trained {trained:,} steps ({int(model.num_timesteps):,} in all)")
    return trained


# Attributes a model needs to train on, not to play: the last rollout's observations and episode buffers.
_TRAINING_LEFTOVERS = [
    "_last_obs",
    "_last_original_obs",
    "_last_episode_starts",
    "ep_info_buffer",
    "ep_success_buffer",
]


def save_for_play(model: Any, path: str | os.PathLike[str]) -> Path:
    """Save ``model`` to be played or shipped: the same policy, a fraction of the size.

    The Adam moments (twice the network's size) are replaced by a fresh optimizer's empty state and the
    last rollout's observations are left out. The file loads with ``MaskablePPO.load`` / ``SB3Agent`` like
    any model (training it further simply restarts Adam); the full model keeps everything for ``--resume``.
    """
    policy = model.policy
    optimizer = policy.optimizer
    policy.optimizer = policy.optimizer_class(
        policy.parameters(), lr=optimizer.param_groups[0]["lr"], **policy.optimizer_kwargs
    )
    try:
        save_atomically(model, path, exclude=_TRAINING_LEFTOVERS)
    finally:
        policy.optimizer = optimizer
    return Path(path)


def save_trained_model(model: Any, run_dir: Path, stem: str) -> Path:
    """``<stem>.zip`` (everything, for ``--resume``) and ``<stem without _model>_policy.zip`` (for play)."""
    path = save_atomically(model, run_dir / f"{stem}.zip")
    save_for_play(model, run_dir / f"{stem.removesuffix('_model')}_policy.zip")
    return path


def save_interrupted(model: Any, exp: Experiment, resume_hint: str) -> Path:
    """On Ctrl-C: the model as it is, ``interrupted_model.zip`` (atomically, for ``--resume``), and a line
    saying how to go on."""
    path = save_atomically(model, exp.run_dir / "interrupted_model.zip")
    log(f"interrupted at {int(model.num_timesteps):,} steps: saved {path}; resume with: {resume_hint}")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


# Keys of report.json that hold an evaluation (a run without --no-report writes them).
EVALUATION_KEYS = ("evaluation", "cross_play")


def finish(exp: Experiment, result: dict[str, Any], reported: bool) -> dict[str, Any]:
    """Write ``report.json``. A run without a report (``--no-report``) keeps the evaluation of the report it
    replaces, marked with the steps of the model it evaluated."""
    path = exp.run_dir / "report.json"
    if not reported and path.is_file():
        try:
            earlier = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            earlier = {}
        for key in EVALUATION_KEYS:
            if isinstance(earlier, dict) and key in earlier:
                result[key] = earlier[key]
                result["evaluation_kept_from"] = earlier.get(
                    "evaluation_kept_from",
                    {
                        "num_timesteps": earlier.get("num_timesteps"),
                        "note": "the report of an earlier run of this folder; this run made none",
                    },
                )
        if "evaluation_kept_from" in result:
            log(
                f"kept the earlier report (of the model at {result['evaluation_kept_from']['num_timesteps']} "
                "steps) in report.json"
            )
    result["kernels"] = kernel_settings()
    result["wall_seconds"] = round(time.perf_counter() - exp.started, 1)
    result["unused_config_keys"] = exp.cfg.unused()
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2, default=_json_default)
    log(f"run finished in {format_seconds(result['wall_seconds'])} -> {exp.run_dir}")
    return result
