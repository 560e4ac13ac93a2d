"""Train PPO agents for the thermopylae environments (``thermopylae-train``, ``scripts/train.py``).

::

    thermopylae-train coop                        # MaskablePPO on Coop-v0 with configs/coop.yaml
    thermopylae-train coop --timesteps 20000      # a short run: warm start and report shrink with it
    thermopylae-train duel-greek --timesteps 200000 --seed 3
    thermopylae-train duel-persian --algo ppo     # plain PPO: an illegal action ends the episode as a loss
    thermopylae-train selfplay                    # both duel sides, in alternation, against snapshot pools
    thermopylae-train coop --resume runs/coop-maskable_ppo-seed0   # continue a run (its config, its counter)

Every run writes one folder (``--out``, default ``runs/<target>-<algo>-seed<seed>``)::

    config.yaml         the configuration as resolved (file + command line), written before training
    tb/                 TensorBoard logs (``tensorboard --logdir runs``): PPO, warm_start, summary (hparams)
    checkpoints/        CheckpointCallback snapshots (``model_<steps>_steps.zip``)
    eval/               MaskableEvalCallback: evaluations.npz (with ``successes``), best_model.zip
    final_model.zip     the trained model (``final_policy.zip``: the same policy, smaller, for play)
    report.json         evaluation against the baselines (Wilson 95% intervals) and training throughput

The package, one module per concern:

* :mod:`~.config` -- the YAML files (keyed by env id, every key checked and tracked), budget sizing;
* :mod:`~.envs` -- training and evaluation environments;
* :mod:`~.distribution` -- the one-pass masked categorical distribution;
* :mod:`~.callbacks` -- throughput, progress, checkpoints, periodic evaluation, TensorBoard writers;
* :mod:`~.progress` -- progress bars on a terminal, log lines elsewhere;
* :mod:`~.runs` -- the run skeleton both pipelines share: ``setup_experiment``, ``learn``,
  ``save_trained_model``, ``finish``;
* :mod:`~.imitation` -- the warm start (expert games, behaviour cloning, DAgger);
* :mod:`~.ppo` -- one agent (``train``); :mod:`~.selfplay` -- both duel sides (``train_selfplay``);
* :mod:`~.report` -- the final report and the TensorBoard curve reader; :mod:`~.cli` -- the command line.

Saved models name ``thermopylae_agents.training.CoopFightFeatures`` (and ``LinearSchedule`` for a
``lin_`` schedule) in their pickles, so both stay importable from here; ``FrozenPolicy`` too, for
callers that predate :mod:`thermopylae_agents.policies.frozen_policy`.
"""

from __future__ import annotations

from thermopylae_agents.players.fight_features import CoopFightFeatures, dice_tail_table, fight_odds_table
from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.training.callbacks import ThroughputCallback
from thermopylae_agents.cli.play.train import build_parser, main
from thermopylae_agents.training.config import (
    ALGOS,
    CONFIG_DIR,
    CONFIG_FILES,
    COOP_ID,
    ENV_IDS,
    GREEK_ID,
    PERSIAN_ID,
    TARGETS,
    VEC_KINDS,
    Config,
    LinearSchedule,
    load_config,
    parse_schedule,
    policy_kwargs,
    ppo_kwargs,
    resolve_config,
    size_to_budget,
)
from thermopylae_agents.training.distribution import (
    OnePassMaskableCategorical,
    OnePassMaskableCategoricalDistribution,
    speed_up_policy,
)
from thermopylae_agents.training.envs import build_eval_env, build_vec_env, make_env_fn
from thermopylae_agents.training.imitation import collect_bc_data, make_expert, warm_start
from thermopylae_agents.training.ppo import build_model, train
from thermopylae_agents.training.report import (
    cross_play_report,
    evaluate_against_baselines,
    format_cross_play,
    format_report,
    read_tensorboard_curve,
)
from thermopylae_agents.training.runs import save_for_play, setup_torch
from thermopylae_agents.training.selfplay import OpponentPool, train_selfplay

__all__ = [
    "ALGOS",
    "CONFIG_DIR",
    "CONFIG_FILES",
    "COOP_ID",
    "ENV_IDS",
    "GREEK_ID",
    "PERSIAN_ID",
    "TARGETS",
    "VEC_KINDS",
    "Config",
    "CoopFightFeatures",
    "FrozenPolicy",
    "LinearSchedule",
    "OnePassMaskableCategorical",
    "OnePassMaskableCategoricalDistribution",
    "OpponentPool",
    "ThroughputCallback",
    "build_eval_env",
    "build_model",
    "build_parser",
    "build_vec_env",
    "collect_bc_data",
    "cross_play_report",
    "dice_tail_table",
    "evaluate_against_baselines",
    "fight_odds_table",
    "format_cross_play",
    "format_report",
    "load_config",
    "main",
    "make_env_fn",
    "make_expert",
    "parse_schedule",
    "policy_kwargs",
    "ppo_kwargs",
    "read_tensorboard_curve",
    "resolve_config",
    "save_for_play",
    "setup_torch",
    "size_to_budget",
    "speed_up_policy",
    "train",
    "train_selfplay",
    "warm_start",
]
