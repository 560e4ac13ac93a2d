"""Train PPO agents for the thermopylae environments (``thermopylae train``, ``scripts/train.py``).

    thermopylae train coop                        # MaskablePPO on Coop-v0 with configs/coop.yaml
    thermopylae train coop --timesteps 20000      # a short run: warm start and report shrink with it
    thermopylae train duel-greek --timesteps 200000 --seed 3
    thermopylae train duel-persian --algo ppo     # plain PPO: an illegal action ends the episode as a loss
    thermopylae train selfplay                    # both duel sides, in alternation, against snapshot pools
    thermopylae train coop --resume runs/coop-maskable_ppo-seed0   # continue a run (its config, its counter)

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
* [`fight_features`][thermopylae_agents.training.fight_features] -- the co-op fight-odds features extractor
  (SB3); [`fight_torch`][thermopylae_agents.training.fight_torch] -- the same features in torch alone;
* [`kernels`][thermopylae_agents.training.kernels] -- one choice of CPU kernels, pinned before torch loads;
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
  [`best_response`][thermopylae_agents.training.best_response] -- best responses trained against a frozen
  duel player; [`exploiters`][thermopylae_agents.training.exploiters] -- exploiter training.

The command line is [`thermopylae_agents.cli.train`][].

Import each name from the module that defines it. The package itself answers two names only, the
class paths that saved models pickle: an SB3 ``.zip`` stores ``policy_kwargs`` and the
``learning_rate`` / ``clip_range`` schedules (in its ``data`` entry) as cloudpickles, which name a class
by the module that defined it when the model was saved, and before the split into this package that module
was ``thermopylae_agents.training``: the shipped ``policies/coop_maskable_ppo.zip`` names
``thermopylae_agents.training.CoopFightFeatures``, and a run of that time with a ``lin_`` schedule
``thermopylae_agents.training.LinearSchedule``. They resolve on first use, so that importing the package
runs none of its modules (no torch for ``thermopylae train --help``, no import cycle through this file).
"""

from __future__ import annotations

import importlib
from typing import Any

# the pickled name -> the module that defines the class now
_PICKLED: dict[str, str] = {
    "CoopFightFeatures": "thermopylae_agents.training.fight_features",
    "LinearSchedule": "thermopylae_agents.training.config",
}


def __getattr__(name: str) -> Any:
    module = _PICKLED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
