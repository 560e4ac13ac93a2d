"""PPO on Ray RLlib for the co-op game and the duel: configs, the training loop, checkpoints and export.

Command line (``scripts/train_rllib.py``, also the ``thermopylae-train-rllib`` console script; ``--help`` on
each subcommand)::

    python scripts/train_rllib.py coop --num-env-runners 2 --envs-per-runner 64 --storage-path runs/rllib_coop
    python scripts/train_rllib.py duel --mode self-play --storage-path runs/rllib_duel
    python scripts/train_rllib.py sweep --num-samples 8 --storage-path runs/rllib_sweep
    python scripts/train_rllib.py coop --address auto ...   # on an existing Ray cluster

Without ``--address`` the script starts a local Ray (``--num-cpus``, default: all cores) and stops it at
the end; with ``--address`` (``auto``, ``HOST:6379`` or ``ray://HOST:10001``) it joins a running cluster.
Checkpoints (``Algorithm.save_to_path``) go to ``STORAGE/checkpoints/iter_NNNNN`` and ``STORAGE/final``;
the trained policies are exported to ``STORAGE/<module>.npz`` (:mod:`thermopylae_agents.rllib.agent`,
loadable without Ray by :func:`~thermopylae_agents.rllib.agent.load_rllib_agent`) and evaluated on fixed
seeded deals; ``STORAGE/summary.json`` records the run. RLlib checkpoints contain pickled objects:
restore only checkpoints you made.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = [
    "PPOSettings",
    "COOP_DEFAULTS",
    "DUEL_DEFAULTS",
    "DUEL_MODES",
    "coop_config",
    "duel_config",
    "start_ray",
    "train",
    "count_illegal",
    "export_policies",
    "evaluate_policy",
    "build_parser",
    "main",
]

DUEL_MODES = ("greek", "persian", "self-play")
_RETURN_KEY = "episode_return_mean"


@dataclass(frozen=True)
class PPOSettings:
    """The PPO hyperparameters of one training run (RLlib names)."""

    total_timesteps: int
    train_batch_size: int
    minibatch_size: int
    num_epochs: int
    lr: float = 3e-4
    entropy_coeff: float = 0.003
    gamma: float = 1.0  # episodes are short and only the outcome counts
    lambda_: float = 0.95
    clip_param: float = 0.2
    vf_loss_coeff: float = 0.5
    grad_clip: float = 0.5
    hiddens: tuple[int, ...] = (128, 128)
    activation: str = "tanh"

    def check(self) -> None:
        """Raise ``ValueError`` naming the first setting out of range."""
        for name in ("total_timesteps", "train_batch_size", "minibatch_size", "num_epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.minibatch_size > self.train_batch_size:
            raise ValueError(
                f"minibatch_size ({self.minibatch_size}) must not exceed train_batch_size "
                f"({self.train_batch_size})"
            )
        for name in ("lr", "entropy_coeff", "gamma", "lambda_", "clip_param", "vf_loss_coeff", "grad_clip"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not self.hiddens or any(int(h) < 1 for h in self.hiddens):
            raise ValueError(f"hiddens must be positive layer widths, got {self.hiddens!r}")


# The same budgets and shapes as the SB3 recipes in thermopylae_agents/configs (coop.yaml, duel_*.yaml),
# without their behaviour-cloning warm start.
COOP_DEFAULTS = PPOSettings(
    total_timesteps=5_000_000, train_batch_size=16384, minibatch_size=4096, num_epochs=2
)
DUEL_DEFAULTS = PPOSettings(
    total_timesteps=1_500_000, train_batch_size=4096, minibatch_size=1024, num_epochs=4
)


# ------------------------------------------------------------------------------------------------- configs
def _model_config(settings: PPOSettings) -> Any:
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return DefaultModelConfig(
        fcnet_hiddens=[int(h) for h in settings.hiddens],
        fcnet_activation=settings.activation,
        head_fcnet_hiddens=[],
        vf_share_layers=False,
    )


def _ppo(settings: PPOSettings, seed: int | None) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig

    settings.check()
    return (
        PPOConfig()
        .training(
            lr=settings.lr,
            entropy_coeff=settings.entropy_coeff,
            train_batch_size_per_learner=settings.train_batch_size,
            minibatch_size=settings.minibatch_size,
            num_epochs=settings.num_epochs,
            gamma=settings.gamma,
            lambda_=settings.lambda_,
            clip_param=settings.clip_param,
            vf_loss_coeff=settings.vf_loss_coeff,
            grad_clip=settings.grad_clip,
        )
        .learners(num_learners=0)
        .debugging(seed=seed)
        .reporting(metrics_num_episodes_for_smoothing=100)
    )


def _check_runners(num_env_runners: int, envs_per_runner: int) -> None:
    if isinstance(num_env_runners, bool) or not isinstance(num_env_runners, int) or num_env_runners < 0:
        raise ValueError(f"num_env_runners must be an integer >= 0, got {num_env_runners!r}")
    if isinstance(envs_per_runner, bool) or not isinstance(envs_per_runner, int) or envs_per_runner < 1:
        raise ValueError(f"envs_per_runner must be a positive integer, got {envs_per_runner!r}")


def coop_config(
    settings: PPOSettings = COOP_DEFAULTS,
    num_env_runners: int = 0,
    envs_per_runner: int = 64,
    vector: str = "native",
    env_config: Mapping[str, Any] | None = None,
    seed: int | None = 0,
    audit_masks: bool = False,
) -> Any:
    """A ``PPOConfig`` for the co-op game with the masked RLModule.

    ``num_env_runners`` parallel env runners (0: sample in the driver), each stepping ``envs_per_runner``
    games: on the native vector engine (``vector="native"``, ``CoopVectorEnv`` inside the runner) or as
    Gymnasium's ``SyncVectorEnv`` of single envs (``"sync"``). ``env_config`` goes to
    :func:`thermopylae_agents.rllib.envs.make_coop`. ``audit_masks`` adds a callback that checks every
    sampled action against its mask (:func:`count_illegal`).
    """
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from thermopylae_agents.rllib.envs import COOP_ENV, register_envs
    from thermopylae_agents.rllib.modules import MaskedPPOTorchRLModule

    _check_runners(num_env_runners, envs_per_runner)
    if vector not in ("native", "sync"):
        raise ValueError(f"vector must be 'native' or 'sync', got {vector!r}")
    register_envs()
    config = (
        _ppo(settings, seed)
        .environment(COOP_ENV, env_config=dict(env_config or {}))
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=envs_per_runner,
            gym_env_vectorize_mode="vector_entry_point" if vector == "native" else "sync",
            rollout_fragment_length="auto",
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=MaskedPPOTorchRLModule, model_config=_model_config(settings)
            )
        )
    )
    return config.callbacks(_audit_callback_class()) if audit_masks else config


def map_duel_agent(agent_id: str, episode: Any = None, *, table: Mapping[str, str], **kwargs: Any) -> str:
    """Policy mapping of the duel: agent ``"greek"``/``"persian"`` -> module id (``table``)."""
    return table[agent_id]


def duel_modules(mode: str) -> tuple[dict[str, str], list[str]]:
    """``(agent -> module id, modules to train)`` of a duel ``mode``.

    * ``"greek"`` / ``"persian"``: that side learns (module ``greek`` / ``persian``) against the other
      side's hand-written player (module ``heuristic_persian`` / ``heuristic_greek``, never trained);
    * ``"self-play"``: two learning modules, ``greek`` and ``persian``, train against each other.
    """
    if mode == "self-play":
        return {"greek": "greek", "persian": "persian"}, ["greek", "persian"]
    if mode == "greek":
        return {"greek": "greek", "persian": "heuristic_persian"}, ["greek"]
    if mode == "persian":
        return {"greek": "heuristic_greek", "persian": "persian"}, ["persian"]
    raise ValueError(f"duel mode must be one of {list(DUEL_MODES)}, got {mode!r}")


def duel_config(
    mode: str = "self-play",
    settings: PPOSettings = DUEL_DEFAULTS,
    num_env_runners: int = 0,
    envs_per_runner: int = 16,
    seed: int | None = 0,
    audit_masks: bool = False,
) -> Any:
    """A multi-agent ``PPOConfig`` for the duel (:class:`~thermopylae_agents.rllib.envs.DuelMultiAgentEnv`)
    with the policy mapping of ``mode`` (see :func:`duel_modules`); ``audit_masks`` as for
    :func:`coop_config`."""
    import gymnasium as gym
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from thermopylae_agents.rllib.envs import DUEL_ENV, masked_space, register_envs
    from thermopylae_agents.rllib.modules import DuelHeuristicRLModule, MaskedPPOTorchRLModule
    from thermopylae_env.duel import NUM_ACTIONS, OBS_SIZE

    _check_runners(num_env_runners, envs_per_runner)
    table, to_train = duel_modules(mode)
    register_envs()
    obs_space, act_space = masked_space(OBS_SIZE, NUM_ACTIONS), gym.spaces.Discrete(NUM_ACTIONS)
    specs = {}
    for module_id in sorted(set(table.values())):
        if module_id.startswith("heuristic_"):
            specs[module_id] = RLModuleSpec(
                module_class=DuelHeuristicRLModule,
                observation_space=obs_space,
                action_space=act_space,
                model_config={"side": module_id.removeprefix("heuristic_")},
            )
        else:
            specs[module_id] = RLModuleSpec(
                module_class=MaskedPPOTorchRLModule,
                observation_space=obs_space,
                action_space=act_space,
                model_config=_model_config(settings),
            )
    config = (
        _ppo(settings, seed)
        # RLlib's env check steps random, unmasked actions, which the duel refuses as illegal.
        .environment(DUEL_ENV, disable_env_checking=True)
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=envs_per_runner,
            rollout_fragment_length="auto",
        )
        .multi_agent(
            policies=set(specs),
            policy_mapping_fn=functools.partial(map_duel_agent, table=table),
            policies_to_train=to_train,
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    )
    return config.callbacks(_audit_callback_class()) if audit_masks else config


# ------------------------------------------------------------------------------------------- mask audit
AUDIT_ACTIONS = "audited_actions"
AUDIT_ILLEGAL = "illegal_actions_sampled"


def count_illegal(episodes: Sequence[Any]) -> tuple[int, int]:
    """``(actions, actions whose mask entry was 0)`` over sampled RLlib episodes (single- or multi-agent),
    each action checked against the mask in the observation it was chosen on."""
    import numpy as np

    total = illegal = 0
    for episode in episodes:
        parts = list(episode.agent_episodes.values()) if hasattr(episode, "agent_episodes") else [episode]
        for part in parts:
            steps = len(part)
            if steps == 0:
                continue
            obs = part.get_observations(slice(0, steps))
            masks = obs["action_mask"] if isinstance(obs, dict) else [o["action_mask"] for o in obs]
            masks = np.asarray(masks).reshape(steps, -1)
            actions = np.asarray(part.get_actions(slice(0, steps))).reshape(steps)
            total += steps
            illegal += int((masks[np.arange(steps), actions] < 0.5).sum())
    return total, illegal


def _audit_callback_class() -> type:
    from ray.rllib.callbacks.callbacks import RLlibCallback

    class MaskAudit(RLlibCallback):
        """Counts, in every env runner, the sampled actions and those the mask forbade (reported as
        ``env_runners/audited_actions`` and ``env_runners/illegal_actions_sampled``, summed over the run)."""

        def on_sample_end(
            self, *, env_runner: Any = None, metrics_logger: Any = None, samples: Any = None, **kwargs: Any
        ) -> None:
            total, illegal = count_illegal(samples or [])
            metrics_logger.log_value(AUDIT_ACTIONS, total, reduce="lifetime_sum")
            metrics_logger.log_value(AUDIT_ILLEGAL, illegal, reduce="lifetime_sum")

    return MaskAudit


# ---------------------------------------------------------------------------------------------------- Ray
def start_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Join the cluster at ``address`` or start a local Ray with ``num_cpus``; returns whether this call
    started (or joined) Ray, i.e. whether the caller should shut it down. Does nothing when Ray runs."""
    import ray

    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False)
    return True


# ------------------------------------------------------------------------------------------------ training
def _sampled(result: Mapping[str, Any]) -> int:
    runners = result.get("env_runners", {})
    return int(result.get("num_env_steps_sampled_lifetime", runners.get("num_env_steps_sampled_lifetime", 0)))


def _returns(result: Mapping[str, Any]) -> dict[str, float]:
    """Mean episode return, overall (``"all"``) and per module (multi-agent), over recent episodes."""
    runners = result.get("env_runners", {})
    out: dict[str, float] = {}
    if _RETURN_KEY in runners:
        out["all"] = float(runners[_RETURN_KEY])
    for module_id, value in (runners.get("module_episode_returns_mean") or {}).items():
        out[str(module_id)] = float(value)
    return out


@dataclass
class TrainReport:
    """What :func:`train` did: iterations, steps, time, checkpoints and the exported policies."""

    iterations: int = 0
    timesteps: int = 0
    seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    exported: dict[str, str] = field(default_factory=dict)


def train(
    config: Any,
    total_timesteps: int,
    storage_path: str | os.PathLike[str],
    env_ids: Mapping[str, str],
    max_iterations: int | None = None,
    checkpoint_every: int = 10,
    log: Callable[[str], None] | None = print,
    on_iteration: Callable[[Any, Mapping[str, Any]], None] | None = None,
) -> TrainReport:
    """Build the algorithm of ``config``, train until ``total_timesteps`` env steps (or ``max_iterations``),
    checkpoint every ``checkpoint_every`` iterations (0: only at the end) and export the modules of
    ``env_ids`` (module id -> Gymnasium id of the game it plays) to ``storage_path/<module>.npz``."""
    storage = Path(storage_path).resolve()
    storage.mkdir(parents=True, exist_ok=True)
    report = TrainReport()
    algo = config.build_algo()
    start = time.perf_counter()
    try:
        while report.timesteps < total_timesteps and (
            max_iterations is None or report.iterations < max_iterations
        ):
            result = algo.train()
            report.iterations += 1
            report.timesteps = _sampled(result)
            elapsed = time.perf_counter() - start
            row = {
                "iteration": report.iterations,
                "timesteps": report.timesteps,
                "seconds": round(elapsed, 3),
                "returns": _returns(result),
            }
            report.history.append(row)
            if on_iteration is not None:
                on_iteration(algo, result)
            if log is not None:
                rets = " ".join(f"{k}={v:+.3f}" for k, v in row["returns"].items())
                log(
                    f"iter {report.iterations:4d}  steps {report.timesteps:9d}  "
                    f"{report.timesteps / max(elapsed, 1e-9):8.0f} steps/s  return {rets}"
                )
            if checkpoint_every and report.iterations % checkpoint_every == 0:
                path = algo.save_to_path(str(storage / "checkpoints" / f"iter_{report.iterations:05d}"))
                report.checkpoints.append(str(path))
        report.seconds = time.perf_counter() - start
        report.checkpoints.append(str(algo.save_to_path(str(storage / "final"))))
        report.exported = export_policies(algo, storage, env_ids)
    finally:
        algo.stop()
    return report


def export_policies(
    algo: Any, directory: str | os.PathLike[str], env_ids: Mapping[str, str]
) -> dict[str, str]:
    """Export each module of ``env_ids`` (module id -> Gymnasium id) of ``algo`` to ``directory/<id>.npz``."""
    from thermopylae_agents.rllib.agent import export_rl_module

    out = {}
    for module_id, env_id in env_ids.items():
        module = algo.get_module(module_id)
        out[module_id] = str(
            export_rl_module(module, Path(directory) / f"{module_id}.npz", env_id, module_id)
        )
    return out


def evaluate_policy(
    path: str | os.PathLike[str],
    env_id: str,
    games: int,
    base_seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Win rate of the exported policy at ``path`` on ``games`` fixed seeded deals (seeds ``base_seed`` ..),
    with its 95% Wilson interval, through :func:`thermopylae_agents.evaluation.evaluate`."""
    from thermopylae_agents.evaluation import evaluate
    from thermopylae_agents.rllib.agent import load_rllib_agent

    agent = load_rllib_agent(path)
    result = evaluate(env_id, [agent], games, base_seed, env_kwargs=dict(env_kwargs or {}))[0]
    return {
        "env_id": env_id,
        "policy": os.fspath(path),
        "games": result.games,
        "wins": result.wins,
        "win_rate": result.win_rate,
        "ci95": list(result.ci95),
        "base_seed": base_seed,
    }


# ------------------------------------------------------------------------------------------ command line
def _settings(args: argparse.Namespace, defaults: PPOSettings) -> PPOSettings:
    changes = {}
    for name in (
        "total_timesteps",
        "train_batch_size",
        "minibatch_size",
        "num_epochs",
        "lr",
        "entropy_coeff",
        "gamma",
    ):
        value = getattr(args, name, None)
        if value is not None:
            changes[name] = value
    if getattr(args, "hiddens", None):
        changes["hiddens"] = tuple(args.hiddens)
    settings = replace(defaults, **changes)
    settings.check()
    return settings


def _common(parser: argparse.ArgumentParser, defaults: PPOSettings, envs_per_runner: int) -> None:
    run = parser.add_argument_group("Ray and storage")
    run.add_argument(
        "--address",
        default=None,
        help="join an existing Ray cluster (auto, HOST:6379 or ray://HOST:10001); default: start a local Ray",
    )
    run.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray (default: all)")
    run.add_argument("--storage-path", required=True, help="directory for checkpoints, exports and summary")
    run.add_argument(
        "--num-env-runners",
        type=int,
        default=0,
        help="parallel env runners, one CPU each (0: sample in the driver)",
    )
    run.add_argument("--envs-per-runner", type=int, default=envs_per_runner, help="games stepped per runner")
    run.add_argument("--seed", type=int, default=0)
    ppo = parser.add_argument_group("PPO (defaults: the package's recipe)")
    ppo.add_argument("--total-timesteps", type=int, default=None, help=f"default {defaults.total_timesteps}")
    ppo.add_argument("--max-iterations", type=int, default=None, help="stop after this many iterations")
    ppo.add_argument(
        "--train-batch-size", type=int, default=None, help=f"default {defaults.train_batch_size}"
    )
    ppo.add_argument("--minibatch-size", type=int, default=None, help=f"default {defaults.minibatch_size}")
    ppo.add_argument("--num-epochs", type=int, default=None, help=f"default {defaults.num_epochs}")
    ppo.add_argument("--lr", type=float, default=None, help=f"default {defaults.lr}")
    ppo.add_argument("--entropy-coeff", type=float, default=None, help=f"default {defaults.entropy_coeff}")
    ppo.add_argument("--gamma", type=float, default=None, help=f"default {defaults.gamma}")
    ppo.add_argument("--hiddens", type=int, nargs="+", default=None, help="MLP widths, default 128 128")
    run.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads of the learner in this process (the env runners use one each)",
    )
    parser.add_argument("--checkpoint-every", type=int, default=10, help="iterations between checkpoints")
    parser.add_argument(
        "--eval-games",
        type=int,
        default=1000,
        help="games of the final evaluation of each exported policy (0: none)",
    )
    parser.add_argument("--eval-seed", type=int, default=0, help="seed of the first evaluation deal")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    coop = sub.add_parser("coop", help="masked PPO on the co-op game")
    _common(coop, COOP_DEFAULTS, 64)
    coop.add_argument(
        "--vector",
        choices=("native", "sync"),
        default="native",
        help="native: CoopVectorEnv inside each runner; sync: Gymnasium SyncVectorEnv",
    )
    coop.add_argument("--num-players", type=int, default=1)
    coop.add_argument(
        "--backend",
        choices=("auto", "numba"),
        default="auto",
        help="CoopVectorEnv backend (native vector only)",
    )
    duel = sub.add_parser("duel", help="the duel as a multi-agent game")
    _common(duel, DUEL_DEFAULTS, 16)
    duel.add_argument(
        "--mode",
        choices=DUEL_MODES,
        default="self-play",
        help="greek/persian: that side learns against the other's heuristic; self-play: both learn",
    )
    from thermopylae_agents.rllib.sweep import add_sweep_parser

    add_sweep_parser(sub)
    return parser


def _machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in load],
        "python": platform.python_version(),
    }


def _run_training(args: argparse.Namespace) -> dict[str, Any]:
    import torch  # noqa: F401  (configure_torch sets the threads of an imported torch)

    from thermopylae_agents.evaluation import COOP_ID, GREEK_ID, PERSIAN_ID
    from thermopylae_env.threads import configure_torch

    if args.torch_threads < 1:
        raise ValueError(f"--torch-threads must be a positive integer, got {args.torch_threads}")
    # The local learner runs in this process; more threads than free cores makes every update crawl.
    configure_torch(args.torch_threads)

    if args.command == "coop":
        settings = _settings(args, COOP_DEFAULTS)
        env_config: dict[str, Any] = {"num_players": args.num_players}
        if args.vector == "native":
            env_config["backend"] = args.backend
        config = coop_config(
            settings, args.num_env_runners, args.envs_per_runner, args.vector, env_config, args.seed
        )
        env_ids = {"default_policy": COOP_ID}
        eval_kwargs: dict[str, dict[str, Any]] = {"default_policy": {"num_players": args.num_players}}
    else:
        settings = _settings(args, DUEL_DEFAULTS)
        config = duel_config(args.mode, settings, args.num_env_runners, args.envs_per_runner, args.seed)
        _, to_train = duel_modules(args.mode)
        env_ids = {m: (GREEK_ID if m == "greek" else PERSIAN_ID) for m in to_train}
        eval_kwargs = {m: {} for m in to_train}
    report = train(
        config,
        settings.total_timesteps,
        args.storage_path,
        env_ids,
        args.max_iterations,
        args.checkpoint_every,
    )
    evaluations = {}
    if args.eval_games:
        for module_id, path in report.exported.items():
            evaluations[module_id] = evaluate_policy(
                path, env_ids[module_id], args.eval_games, args.eval_seed, eval_kwargs[module_id]
            )
            ev = evaluations[module_id]
            print(
                f"{module_id}: won {ev['wins']}/{ev['games']} = {ev['win_rate']:.4f} "
                f"(95% CI {ev['ci95'][0]:.4f}..{ev['ci95'][1]:.4f}) on {env_ids[module_id]}"
                + (" against the heuristic" if env_ids[module_id] != COOP_ID else "")
            )
    return {
        "command": args.command,
        "mode": getattr(args, "mode", None),
        "settings": asdict(settings),
        "num_env_runners": args.num_env_runners,
        "envs_per_runner": args.envs_per_runner,
        "report": asdict(report),
        "evaluation": evaluations,
        "machine": _machine(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import ray

    started = start_ray(args.address, args.num_cpus)
    try:
        if args.command == "sweep":
            from thermopylae_agents.rllib.sweep import run_sweep_from_args

            summary = run_sweep_from_args(args)
        else:
            summary = _run_training(args)
    finally:
        if started:
            ray.shutdown()
    out = Path(args.storage_path) / "summary.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
