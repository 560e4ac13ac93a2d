"""RL Baselines3 Zoo reads the shipped hyperparameter files as they are and trains on the environments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ZOO_DIR = ROOT / "agents" / "thermopylae_agents" / "configs" / "rl_zoo"
ENV_IDS = ("thermopylae/Coop-v0", "thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0")


def test_rl_zoo_ppo_file_has_every_environment_in_rl_zoo_format():
    hyperparams = yaml.safe_load((ZOO_DIR / "ppo.yml").read_text())
    assert set(hyperparams) == set(ENV_IDS)
    for env_id, block in hyperparams.items():
        # The keys rl_zoo3 needs, and policy_kwargs as the Python expression it evaluates.
        assert block["policy"] == "MlpPolicy" and block["n_timesteps"] > 0, env_id
        assert isinstance(block["policy_kwargs"], str) and block["policy_kwargs"].startswith("dict("), env_id


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["thermopylae/Coop-v0", "thermopylae/DuelPersian-v0"])
def test_rl_zoo_train_runs_with_the_shipped_file(tmp_path, env_id):
    pytest.importorskip("rl_zoo3")
    from stable_baselines3 import PPO

    command = [
        sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", env_id,
        "--gym-packages", "thermopylae_env", "--conf-file", str(ZOO_DIR / "ppo.yml"),
        "-n", "256", "--eval-freq", "-1", "--seed", "0", "-f", str(tmp_path),
        # Tiny rollouts so the run takes seconds; every other value comes from the file.
        "--hyperparams", "n_envs:2", "n_steps:64", "batch_size:64", "n_epochs:1",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    folder = env_id.replace("/", "-")
    saved = tmp_path / "ppo" / f"{folder}_1" / f"{folder}.zip"
    model = PPO.load(saved)
    assert model.num_timesteps >= 256
    assert model.policy.mlp_extractor.policy_net[0].out_features == 128


def test_rl_zoo_file_makes_every_env_replace_illegal_actions():
    hyperparams = yaml.safe_load((ZOO_DIR / "ppo.yml").read_text())
    for env_id, block in hyperparams.items():
        assert block["env_kwargs"]["illegal_action"] == "replace", env_id
    assert hyperparams["thermopylae/Coop-v0"]["env_kwargs"]["reward_shaping"] > 0


@pytest.mark.slow
def test_rl_zoo_ppo_learns_the_coop_game_with_the_shipped_file(tmp_path):
    # A small budget of benchmarks/rlzoo_learning.py (the full one writes benchmarks/rlzoo_coop.json):
    # the training return rises from the first tenth of the episodes to the last.
    pytest.importorskip("rl_zoo3")
    out = tmp_path / "rlzoo.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "rlzoo_learning.py"), "--timesteps", "150000",
               "--games", "200", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    curve = result["training_return_by_tenth"]
    assert result["timesteps"] >= 150_000 and len(curve) == 10
    assert curve[-1] > curve[0] + 0.01, curve
    assert result["agents"]["heuristic"]["games"] == 200
