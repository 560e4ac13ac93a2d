"""One agent trained with (Maskable)PPO: ``coop``, ``duel-greek`` or ``duel-persian``.

Reads top to bottom: set up the experiment, build the environments, build the model (behaviour-cloned
from the expert) or load it (``--resume``), learn, save, report.
"""

from __future__ import annotations

import os
import time
from typing import Any

from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

from thermopylae_agents.training.callbacks import (
    ThreadCap,
    ThroughputCallback,
    build_callbacks,
    hparam_dict,
    write_summary,
)
from thermopylae_agents.training.config import (
    ALGOS,
    ENV_IDS,
    LEARNERS,
    PPO_KEYS,
    Config,
    env_count,
    policy_kwargs,
    ppo_kwargs,
)
from thermopylae_agents.training.distribution import speed_up_policy
from thermopylae_agents.training.envs import build_eval_env, build_vec_env
from thermopylae_agents.training.fast_ppo import FastMaskablePPO, resolve_precision
from thermopylae_agents.training.imitation import warm_start
from thermopylae_agents.training.progress import format_seconds, log
from thermopylae_agents.training.report import evaluate_against_baselines, format_report
from thermopylae_agents.training.runs import (
    find_resume,
    finish,
    learn,
    rollout_size,
    save_interrupted,
    save_trained_model,
    set_learner_threads,
    setup_experiment,
    setup_torch,
)

__all__ = [
    "algo_class", "build_model", "format_time_split", "learner_kwargs", "load_model", "time_split", "train",
]


def algo_class(algo: str, learner: str = "sb3") -> Any:
    """The SB3 class of ``algo`` (``maskable_ppo``: sb3_contrib's MaskablePPO, or with ``learner="fast"``
    its lean subclass [`FastMaskablePPO`][thermopylae_agents.training.fast_ppo.FastMaskablePPO];
    ``ppo``: plain PPO)."""
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
    if learner == "fast":
        if algo != "maskable_ppo":
            raise ValueError(f"learner fast runs maskable_ppo, not {algo!r}")
        return FastMaskablePPO
    if algo == "maskable_ppo":
        return MaskablePPO
    if algo == "ppo":
        return PPO
    raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")


def learner_kwargs(hp: Config, device: str = "cpu") -> dict[str, Any]:
    """The learner's own arguments of a hyperparameter block (the fast learner's ``precision``, with
    ``auto`` resolved for ``device``)."""
    if hp.get("learner", "sb3") == "fast":
        return {"precision": resolve_precision(hp.get("precision", "auto"), device)}
    return {}


def build_model(
    algo: str, env: Any, hp: Config, seed: int, tensorboard_log: str | None, device: str, verbose: int = 0
) -> Any:
    """A fresh (Maskable)PPO model for ``env`` from the hyperparameter block ``hp``, of the block's
    ``learner`` ([`FastMaskablePPO`][thermopylae_agents.training.fast_ppo.FastMaskablePPO] for ``fast``),
    with [`speed_up_policy`][thermopylae_agents.training.distribution.speed_up_policy] applied."""
    model = algo_class(algo, hp.get("learner", "sb3"))(
        hp.get("policy", "MlpPolicy"),
        env,
        policy_kwargs=policy_kwargs(hp.plain("policy_kwargs")),
        seed=seed,
        tensorboard_log=tensorboard_log,
        device=device,
        verbose=verbose,
        **ppo_kwargs(hp),
        **learner_kwargs(hp, device),
    )
    return speed_up_policy(model)


def load_model(algo: str, hp: Config, path: Any, **kwargs: Any) -> Any:
    """A saved model to train on, loaded as the block's ``learner`` (a file of either learner loads as
    either), with its settings."""
    model = algo_class(algo, hp.get("learner", "sb3")).load(path, **kwargs)
    for key, value in learner_kwargs(hp, str(kwargs.get("device", "cpu"))).items():
        setattr(model, key, value)
    return speed_up_policy(model)


def mark_model_keys_read(hp: Config) -> None:
    """On resume the network and PPO settings come from the saved model (built from these very keys)."""
    for key in (*PPO_KEYS, "policy", "precision"):
        if key in hp:
            hp[key]
    hp.plain("policy_kwargs")
    hp.plain("bc")  # the warm start happened before the first run; it is not repeated


def time_split(
    warm_start_seconds: float, bc_stats: dict[str, Any] | None, throughput: dict[str, Any],
    report_seconds: float,
) -> dict[str, float]:
    """Where a run's wall time went: training (the warm start's expert games and cloning, PPO's rollouts
    and updates) against evaluation (the clone's games, the periodic evaluations, the final report).

    Checkpoints count as neither."""
    clone = float((bc_stats or {}).get("evaluate_seconds", 0.0))
    ppo = throughput["learn_seconds"] - throughput["excluded_eval_checkpoint_seconds"]
    periodic = throughput["evaluation_seconds"]
    training = warm_start_seconds - clone + ppo
    evaluation = clone + periodic + report_seconds
    return {
        "training_seconds": round(training, 1),
        "evaluation_seconds": round(evaluation, 1),
        "training_share": round(training / max(training + evaluation, 1e-9), 3),
        "warm_start_seconds": round(warm_start_seconds - clone, 1),
        "ppo_seconds": round(ppo, 1),
        "clone_evaluation_seconds": round(clone, 1),
        "periodic_evaluation_seconds": round(periodic, 1),
        "report_seconds": round(float(report_seconds), 1),
        "checkpoint_seconds": round(throughput["checkpoint_seconds"], 1),
    }


def format_time_split(split: dict[str, float]) -> str:
    """One log line of [`time_split`][thermopylae_agents.training.ppo.time_split]."""
    return (
        f"time: training {format_seconds(split['training_seconds'])} (warm start "
        f"{format_seconds(split['warm_start_seconds'])}, PPO {format_seconds(split['ppo_seconds'])}), "
        f"evaluation {format_seconds(split['evaluation_seconds'])} (clone "
        f"{format_seconds(split['clone_evaluation_seconds'])}, periodic "
        f"{format_seconds(split['periodic_evaluation_seconds'])}, final report "
        f"{format_seconds(split['report_seconds'])}): {split['training_share']:.0%} training"
    )


def _summary_metrics(result: dict[str, Any]) -> dict[str, float]:
    metrics = {
        "throughput/steps_per_second": float(result["throughput"]["steps_per_second"]),
        "train/num_timesteps": float(result["num_timesteps"]),
    }
    for row in (result.get("evaluation") or {}).get("rows", []):
        name = (
            f"report/{row['agent']}" + (f"_vs_{row['opponent']}" if row.get("opponent") else "") + "_win_rate"
        )
        metrics[name] = float(row["win_rate"])
    return metrics


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
    learner: str | None = None,
    precision: str | None = None,
    threads: int | str | None = None,
    bc_episodes: int | None = None,
    progress: bool = True,
    device: str | None = None,
    report: bool = True,
    verbose: int = 0,
) -> dict[str, Any]:
    """Train one agent (``coop``, ``duel-greek`` or ``duel-persian``); returns the run's report.

    With ``resume`` (a run folder or a saved model) the model is loaded with the run's ``config.yaml``
    and trained on, keeping its timestep counter, until it has seen ``timesteps`` steps in all (default:
    the config's ``n_timesteps``). Arguments left ``None`` come from the config file. A ``timesteps``
    below the config's ``n_timesteps`` shrinks the warm start, the periodic evaluation and the report in
    proportion ([`thermopylae_agents.training.config.size_to_budget`][]). The report's ``time_split``
    says where the run's time went ([`time_split`][thermopylae_agents.training.ppo.time_split]).
    """
    if target not in ENV_IDS:
        raise ValueError(f"train() takes one of {tuple(ENV_IDS)}; use train_selfplay() for self-play")
    env_id = ENV_IDS[target]
    resume_dir = resume_model = None
    if resume is not None:
        resume_dir, resume_model = find_resume(resume)

    # 1. Experiment: config (file + command line), run folder, seeds.
    exp = setup_experiment(
        target,
        config=config,
        out=out,
        resume_dir=resume_dir,
        resume_model=resume_model,
        progress=progress,
        algo=algo,
        seed=seed,
        timesteps=timesteps,
        n_envs=n_envs,
        eval_freq=eval_freq,
        eval_episodes=eval_episodes,
        vec=vec,
        learner=learner,
        precision=precision,
        threads=threads,
        bc_episodes=bc_episodes,
        device=device,
    )
    hp = exp.cfg[env_id]
    env_kwargs = hp.plain("env_kwargs", {})
    n = env_count(hp)
    total = int(hp["n_timesteps"])
    vec_kind = str(hp.get("vec", "native"))
    ev = hp.get("eval", Config({}))

    # 2. Model: loaded to continue, or new and cloned from the expert.
    env_seed = exp.seed
    model = None
    if resume_model is not None:
        model = load_model(exp.algo, hp, resume_model, device=exp.device)
        # New seeds for the continued run: the first env seeds would replay the games already seen.
        env_seed = exp.seed + model.num_timesteps
        setup_torch(env_seed)
    env = build_vec_env(env_id, env_kwargs, n, env_seed, vec_kind)
    # The native engine evaluates many games per policy call; single envs gain little past 8.
    eval_n = min(32 if vec_kind == "native" else 8, n)
    eval_env = build_eval_env(env_id, env_kwargs, eval_n, exp.seed + 1_000_000, vec_kind)
    bc_stats = None
    warm_start_seconds = 0.0
    if model is None:
        model = build_model(exp.algo, env, hp, exp.seed, str(exp.run_dir / "tb"), exp.device, verbose)
        bc = hp.get("bc")
        if bc is not None and int(bc["episodes"]) > 0:
            warm_start_began = time.perf_counter()
            bc_stats = warm_start(
                model,
                env_id,
                env_kwargs,
                bc,
                exp.seed,
                eval_env,
                int(ev.get("episodes", 0)),
                bar=progress,
                tb_dir=exp.run_dir / "tb" / "warm_start",
            )
            warm_start_seconds = time.perf_counter() - warm_start_began
        remaining = total
    else:
        model.set_env(env)
        model.tensorboard_log = str(exp.run_dir / "tb")
        mark_model_keys_read(hp)
        remaining = total - int(model.num_timesteps)
        rollout = rollout_size(model)
        more = -(-max(remaining, 0) // rollout) * rollout
        log(
            f"resuming {resume_model} at {model.num_timesteps:,} steps: {max(remaining, 0):,} more to reach "
            f"{total:,} (trains {more:,}, whole rollouts of {rollout:,})"
        )

    # 3. Learn.
    threads = set_learner_threads(model, hp)
    clock = ThroughputCallback()
    callbacks = build_callbacks(exp.algo, hp, exp.run_dir, eval_env, n, clock, progress)
    cap = ThreadCap(threads["threads"]) if threads["chosen_by"] == "measurement" and threads["threads"] > 1 \
        else None
    if cap is not None:
        callbacks.append(cap)
    if remaining > 0:
        log(f"training {exp.algo} on {env_id}: {remaining:,} steps ({n} envs, {vec_kind}) -> {exp.run_dir}")
        try:
            learn(model, remaining, callbacks, exp, f"PPO {target}")
        except KeyboardInterrupt:
            env.close()
            eval_env.close()
            save_interrupted(model, exp, f"thermopylae train {target} --resume {exp.run_dir}")
            raise
    else:
        log(f"the model has {model.num_timesteps:,} steps already (target {total:,}); nothing to train")
    env.close()
    eval_env.close()

    # 4. Save.
    final = save_trained_model(model, exp.run_dir, "final_model")
    result: dict[str, Any] = {
        "target": target,
        "env_id": env_id,
        "algo": exp.algo,
        "seed": exp.seed,
        "run_dir": str(exp.run_dir),
        "requested_timesteps": total,
        "num_timesteps": int(model.num_timesteps),
        "resumed_from": str(resume_model) if resume_model is not None else None,
        "n_envs": n,
        "vec": vec_kind,
        "learner": hp.get("learner", "sb3"),
        "precision": getattr(model, "precision", "float32"),
        "threads": threads,
        "throughput": clock.summary(),
        "behaviour_cloning": bc_stats,
    }
    if cap is not None:
        threads["rollouts_by_count"] = {str(count): n for count, n in sorted(cap.counts.items())}
    result["train_wall_seconds"] = round(time.perf_counter() - exp.started, 1)
    log(f"trained in {format_seconds(result['train_wall_seconds'])} (BC included, final report not)")

    # 5. Report.
    if report:
        rep = hp.get("report", Config({}))
        result["evaluation"] = evaluate_against_baselines(target, final, env_kwargs, rep, exp.seed, progress)
        print(format_report(result), flush=True)
    result["time_split"] = time_split(warm_start_seconds, bc_stats, result["throughput"],
                                      (result.get("evaluation") or {}).get("seconds", 0.0) if report else 0.0)
    log(format_time_split(result["time_split"]))
    write_summary(exp.run_dir, hparam_dict(exp.data), _summary_metrics(result))
    return finish(exp, result, reported=report)
