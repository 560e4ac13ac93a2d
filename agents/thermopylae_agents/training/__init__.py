"""Train PPO agents for the thermopylae environments (``thermopylae-train``, ``scripts/train.py``).

    thermopylae-train coop                        # MaskablePPO on Coop-v0 with configs/coop.yaml
    thermopylae-train coop --timesteps 20000      # a short run: warm start and report shrink with it
    thermopylae-train duel-greek --timesteps 200000 --seed 3
    thermopylae-train duel-persian --algo ppo     # plain PPO: an illegal action ends the episode as a loss
    thermopylae-train selfplay                    # both duel sides, in alternation, against snapshot pools
    thermopylae-train coop --resume runs/coop-maskable_ppo-seed0   # continue a run (its config, its counter)

Every run writes one folder (``--run-dir``, default ``runs/<target>-<algo>-seed<seed>``):

    config.yaml         the configuration as resolved (file + command line), written before training
    tb/                 TensorBoard logs (``tensorboard --logdir runs``): PPO, warm_start, summary (hparams)
    checkpoints/        CheckpointCallback snapshots (``model_<steps>_steps.zip``)
    eval/               MaskableEvalCallback: evaluations.npz (with ``successes``), best_model.zip
    final_model.zip     the trained model (``final_policy.zip``: the same policy, smaller, for play)
    report.json         evaluation against the baselines (Wilson 95% intervals) and training throughput

The package, one module per concern:

* [`config`][thermopylae_agents.training.config] -- the YAML files (keyed by env id, every key checked and
  tracked), budget sizing;
* [`envs`][thermopylae_agents.training.envs] -- training and evaluation environments;
* [`distribution`][thermopylae_agents.training.distribution] -- the one-pass masked categorical distribution;
* [`callbacks`][thermopylae_agents.training.callbacks] -- throughput, progress, checkpoints, periodic
  evaluation, TensorBoard writers;
* [`progress`][thermopylae_agents.training.progress] -- progress bars on a terminal, log lines elsewhere;
* [`runs`][thermopylae_agents.training.runs] -- the run skeleton both pipelines share: ``setup_experiment``,
  ``learn``, ``save_trained_model``, ``finish``;
* [`imitation`][thermopylae_agents.training.imitation] -- the warm start (expert games, behaviour cloning,
  DAgger);
* [`rlzoo`][thermopylae_agents.training.rlzoo] -- the same warm start as an RL Baselines3 Zoo callback;
* [`ppo`][thermopylae_agents.training.ppo] -- one agent (``train``);
  [`selfplay`][thermopylae_agents.training.selfplay] -- both duel sides (``train_selfplay``);
* [`report`][thermopylae_agents.training.report] -- the final report and the TensorBoard curve reader;
* [`ppo_native`][thermopylae_agents.training.ppo_native] -- PPO on the native vector engine;
  [`exploiters`][thermopylae_agents.training.exploiters] -- exploiter training.

The command line is [`thermopylae_agents.cli.train`][].

Saved models name ``thermopylae_agents.training.CoopFightFeatures`` (and ``LinearSchedule`` for a
``lin_`` schedule) in their pickles, so those names, and the others this package exported before it was
split, resolve here on first use (`_LAZY`): importing the package runs none of its modules, so that
no import cycle goes through this file.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it
_LAZY: dict[str, str] = {
    "ALGOS": "thermopylae_agents.training.config",
    "CONFIG_DIR": "thermopylae_agents.training.config",
    "CONFIG_FILES": "thermopylae_agents.training.config",
    "COOP_ID": "thermopylae_env",
    "Config": "thermopylae_agents.training.config",
    "CoopFightFeatures": "thermopylae_agents.players.fight_features",
    "ENV_IDS": "thermopylae_agents.training.config",
    "FrozenPolicy": "thermopylae_agents.policies.frozen_policy",
    "GREEK_ID": "thermopylae_env",
    "LinearSchedule": "thermopylae_agents.training.config",
    "OnePassMaskableCategorical": "thermopylae_agents.training.distribution",
    "OnePassMaskableCategoricalDistribution": "thermopylae_agents.training.distribution",
    "OpponentPool": "thermopylae_agents.training.selfplay",
    "PERSIAN_ID": "thermopylae_env",
    "TARGETS": "thermopylae_agents.training.config",
    "ThroughputCallback": "thermopylae_agents.training.callbacks",
    "VEC_KINDS": "thermopylae_agents.training.config",
    "build_eval_env": "thermopylae_agents.training.envs",
    "build_model": "thermopylae_agents.training.ppo",
    "build_parser": "thermopylae_agents.cli.train",
    "build_vec_env": "thermopylae_agents.training.envs",
    "collect_bc_data": "thermopylae_agents.training.imitation",
    "cross_play_report": "thermopylae_agents.training.report",
    "dice_tail_table": "thermopylae_agents.players.fight_odds",
    "evaluate_against_baselines": "thermopylae_agents.training.report",
    "fight_odds_table": "thermopylae_agents.players.fight_odds",
    "format_cross_play": "thermopylae_agents.training.report",
    "format_report": "thermopylae_agents.training.report",
    "load_config": "thermopylae_agents.training.config",
    "main": "thermopylae_agents.cli.train",
    "make_env_fn": "thermopylae_agents.training.envs",
    "make_expert": "thermopylae_agents.training.imitation",
    "parse_schedule": "thermopylae_agents.training.config",
    "policy_kwargs": "thermopylae_agents.training.config",
    "ppo_kwargs": "thermopylae_agents.training.config",
    "read_tensorboard_curve": "thermopylae_agents.evaluation.tables",
    "resolve_config": "thermopylae_agents.training.config",
    "save_for_play": "thermopylae_agents.training.runs",
    "setup_torch": "thermopylae_agents.training.runs",
    "size_to_budget": "thermopylae_agents.training.config",
    "speed_up_policy": "thermopylae_agents.training.distribution",
    "train": "thermopylae_agents.training.ppo",
    "train_selfplay": "thermopylae_agents.training.selfplay",
    "warm_start": "thermopylae_agents.training.imitation",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
