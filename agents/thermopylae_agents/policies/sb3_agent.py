"""A trained Stable-Baselines3 / sb3-contrib policy as an [`thermopylae_agents.players.base.Agent`][].

!!! warning
    SB3 model files (``.zip``) contain pickled Python objects: loading one can run arbitrary code. Load
    only models from sources you trust (your own training runs, the policies shipped with the package).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SB3Agent", "load_model"]


def load_model(path: str | os.PathLike[str], device: str = "cpu") -> Any:
    """Load a saved SB3 model: ``sb3_contrib.MaskablePPO`` first, then ``stable_baselines3.PPO``.

    Raises ``ValueError`` naming ``path`` when the file is missing, is not a zip archive, or is a zip
    archive that neither class can load. SB3 files are pickles: load only files from trusted sources.
    """
    p = Path(path)
    if not p.exists() and p.suffix != ".zip" and p.with_suffix(".zip").is_file():
        p = p.with_suffix(".zip")  # SB3 saves "name" as "name.zip"
    if not p.exists():
        raise ValueError(f"model file not found: {p}")
    if not p.is_file():
        raise ValueError(f"model path is not a file: {p}")
    if not zipfile.is_zipfile(p):
        raise ValueError(f"not an SB3 model file (not a zip archive): {p}")
    errors = []
    try:
        from sb3_contrib import MaskablePPO  # extra: train

        return MaskablePPO.load(p, device=device)
    except Exception as err:  # noqa: BLE001 - any failure means: try the next class
        errors.append(f"MaskablePPO: {type(err).__name__}: {err}")
    try:
        from stable_baselines3 import PPO  # extra: train

        return PPO.load(p, device=device)
    except Exception as err:  # noqa: BLE001
        errors.append(f"PPO: {type(err).__name__}: {err}")
    raise ValueError(f"cannot load an SB3 model from {p}: " + "; ".join(errors))


class SB3Agent:
    """Plays a trained SB3 policy greedily.

    ``model`` is a loaded model or the path of a saved one (see
    [`load_model`][thermopylae_agents.policies.sb3_agent.load_model]; SB3 files are pickles, so load only
    files from trusted sources).

    * A ``MaskablePPO`` model (anything whose ``predict`` takes ``action_masks``) plays
      ``predict(obs, action_masks=mask, deterministic=True)``: the most probable legal action.
    * A plain ``PPO`` model knows nothing of the mask. It plays its deterministic prediction when that is
      legal; when it is not, the legal action with the highest policy probability is played instead, so
      the agent never makes an illegal move (a plain policy evaluated this way is slightly helped by the
      mask; count ``illegal_predictions`` to see how often).
    """

    def __init__(self, model: Any, device: str = "cpu", env: Any = None) -> None:
        if isinstance(model, (str, os.PathLike)):
            self.path: Path | None = Path(model)
            model = load_model(model, device=device)
        else:
            self.path = None
        if not hasattr(model, "predict") or not hasattr(model, "policy"):
            raise ValueError(f"expected an SB3 model (with predict and policy), got {type(model).__name__}")
        self.model = model
        if env is not None:
            self.check_fits(env.observation_space, env.action_space)
        try:
            from sb3_contrib import MaskablePPO  # extra: train

            self.maskable = isinstance(model, MaskablePPO)
        except ImportError:  # pragma: no cover - sb3-contrib is part of the train extra
            self.maskable = False
        self.illegal_predictions = 0
        self.decisions = 0

    def check_fits(self, observation_space: Any, action_space: Any) -> None:
        """Raise ``ValueError`` naming the model when its spaces differ from an environment's."""
        want_obs = getattr(observation_space, "shape", None)
        want_n = getattr(action_space, "n", None)
        got_obs = getattr(self.model.observation_space, "shape", None)
        got_n = getattr(self.model.action_space, "n", None)
        if got_obs != want_obs or got_n != want_n:
            raise ValueError(
                f"model {self.label} does not fit this environment: observation shape {got_obs} "
                f"(need {want_obs}), actions {got_n} (need {want_n})"
            )

    @property
    def label(self) -> str:
        return os.fspath(self.path) if self.path is not None else type(self.model).__name__

    def _check(self, observation: np.ndarray, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        obs = np.asarray(observation, dtype=np.float32)
        shape = getattr(self.model.observation_space, "shape", None)
        if shape is not None and obs.shape != tuple(shape):
            raise ValueError(f"the model expects observations of shape {tuple(shape)}, got {obs.shape}")
        mask = np.asarray(action_mask, dtype=bool)
        n = getattr(self.model.action_space, "n", None)
        if n is not None and mask.shape != (int(n),):
            raise ValueError(f"the model has {int(n)} actions, the mask {mask.shape}")
        if not mask.any():
            raise ValueError("no legal action: the action mask is all zeros")
        return obs, mask

    def action_probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The policy's probability of each action, restricted to the legal ones and renormalised
        (float64, zero on illegal actions). Used for hints in human play."""
        obs, mask = self._check(observation, action_mask)
        import torch as th  # extra: train

        policy = self.model.policy
        obs_tensor, _ = policy.obs_to_tensor(obs)
        with th.no_grad():
            distribution = policy.get_distribution(obs_tensor)
            probs = distribution.distribution.probs[0].cpu().numpy().astype(np.float64)
        probs = np.where(mask, probs, 0.0)
        total = probs.sum()
        if total <= 0.0:  # every legal action has underflowed to 0: uniform over the legal ones
            return mask / mask.sum()
        return probs / total

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The greedy legal action (see the class docstring for plain PPO)."""
        obs, mask = self._check(observation, action_mask)
        self.decisions += 1
        if self.maskable:
            action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
            return int(action)
        action, _ = self.model.predict(obs, deterministic=True)
        action = int(action)
        if mask[action]:
            return action
        self.illegal_predictions += 1
        return int(np.argmax(self.action_probabilities(obs, mask)))
