"""SB3Agent, the player of a Stable-Baselines3 zip: missing and non-model files refused with the path named,
legal moves and action probabilities from MaskablePPO and plain PPO models."""

from __future__ import annotations

import zipfile

import gymnasium as gym
import numpy as np
import pytest
from conftest import visit_states

import thermopylae_env  # noqa: F401  (registers the environments)
from thermopylae_agents.policies.sb3_agent import SB3Agent, load_model
from thermopylae_env.coop.layout import OBS_SIZE


def test_load_model_refuses_a_missing_path(tmp_path):
    missing = tmp_path / "nope.zip"
    with pytest.raises(ValueError, match="nope.zip"):
        load_model(missing)
    with pytest.raises(ValueError, match="not found"):
        SB3Agent(missing)


def test_load_model_refuses_non_model_files(tmp_path):
    text = tmp_path / "notes.zip"
    text.write_text("not a model")
    with pytest.raises(ValueError, match="not a zip"):
        load_model(text)
    archive = tmp_path / "other.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("hello.txt", "hi")
    with pytest.raises(ValueError, match="other.zip"):
        load_model(archive)
    with pytest.raises(ValueError, match="not a file"):
        load_model(tmp_path)


def test_sb3_agents_play_legal_moves_and_give_probabilities(tmp_path):
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    env = gym.make("thermopylae/Coop-v0")
    for cls in (MaskablePPO, PPO):
        model = cls("MlpPolicy", env, n_steps=32, batch_size=32, seed=0, device="cpu")
        path = tmp_path / f"{cls.__name__}.zip"
        model.save(path)
        agent = SB3Agent(path)
        assert agent.maskable == (cls is MaskablePPO)

        def check(obs, mask, agent=agent):
            action = agent.act(obs, mask)
            assert mask[action]
            probs = agent.action_probabilities(obs, mask)
            assert probs.shape == mask.shape
            assert probs.sum() == pytest.approx(1.0)
            assert (probs[~mask] == 0).all()

        visit_states(env, 2, 7, check)
    with pytest.raises(ValueError, match="shape"):
        agent.act(np.zeros(OBS_SIZE + 1, dtype=np.float32), np.ones(72, dtype=bool))
