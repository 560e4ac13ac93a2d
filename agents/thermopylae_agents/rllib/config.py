"""The PPO settings and RLlib configs of co-op and duel training: what a training run and a sweep share.

Needs Ray (the ``rllib`` extra) when a config is built; the settings themselves are plain data.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from thermopylae_env.duel.layout import NUM_ACTIONS, OBS_SIZE

__all__ = [
    "AUDIT_ACTIONS",
    "AUDIT_ILLEGAL",
    "count_illegal",
    "COOP_DEFAULTS",
    "DUEL_DEFAULTS",
    "DUEL_MODES",
    "PPOSettings",
    "coop_config",
    "duel_config",
    "duel_modules",
    "map_duel_agent",
]

DUEL_MODES = ("greek", "persian", "self-play")


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
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig  # extra: rllib

    return DefaultModelConfig(
        fcnet_hiddens=[int(h) for h in settings.hiddens],
        fcnet_activation=settings.activation,
        head_fcnet_hiddens=[],
        vf_share_layers=False,
    )


def _ppo(settings: PPOSettings, seed: int | None) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig  # extra: rllib

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
    [`thermopylae_agents.rllib.envs.make_coop`][]. ``audit_masks`` adds a callback that checks every
    sampled action against its mask ([`count_illegal`][thermopylae_agents.rllib.config.count_illegal]).
    """
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # extra: rllib

    from thermopylae_agents.rllib.envs import COOP_ENV, register_envs  # extra: rllib
    from thermopylae_agents.rllib.modules import MaskedPPOTorchRLModule  # extra: rllib

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
    """A multi-agent ``PPOConfig`` for the duel
    ([`DuelMultiAgentEnv`][thermopylae_agents.rllib.envs.DuelMultiAgentEnv]) with the policy mapping of
    ``mode`` (see [`duel_modules`][thermopylae_agents.rllib.config.duel_modules]); ``audit_masks`` as for
    [`coop_config`][thermopylae_agents.rllib.config.coop_config]."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec  # extra: rllib
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # extra: rllib

    from thermopylae_agents.rllib.envs import DUEL_ENV, masked_space, register_envs  # extra: rllib
    from thermopylae_agents.rllib.modules import DuelHeuristicRLModule, MaskedPPOTorchRLModule  # extra: rllib

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
    from ray.rllib.callbacks.callbacks import RLlibCallback  # extra: rllib

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
