"""RL Baselines3 Zoo reads the shipped hyperparameter files as they are, trains on the environments, and
learns the co-op game from the file's behaviour-cloning warm start."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ZOO_DIR = ROOT / "agents" / "thermopylae_agents" / "configs" / "rl_zoo"
ENV_IDS = ("thermopylae/Coop-v0", "thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0")
COOP = "thermopylae/Coop-v0"
# A warm start of a few games, so that a run with the shipped file takes seconds.
TINY_WARM_START = (
    "callback:[{'thermopylae_agents.training.rlzoo.BehaviourCloningWarmStart': dict(episodes=4, epochs=1)}]"
)


def _hyperparams() -> dict:
    return yaml.safe_load((ZOO_DIR / "ppo.yml").read_text())


def test_rl_zoo_ppo_file_has_every_environment_in_rl_zoo_format():
    hyperparams = _hyperparams()
    assert set(hyperparams) == set(ENV_IDS)
    for env_id, block in hyperparams.items():
        # The keys rl_zoo3 needs, and policy_kwargs as the Python expression it evaluates.
        assert block["policy"] == "MlpPolicy" and block["n_timesteps"] > 0, env_id
        assert isinstance(block["policy_kwargs"], str) and block["policy_kwargs"].startswith("dict("), env_id


def test_rl_zoo_file_makes_every_env_replace_illegal_actions():
    for env_id, block in _hyperparams().items():
        assert block["env_kwargs"]["illegal_action"] == "replace", env_id


def test_rl_zoo_coop_block_names_an_importable_warm_start_callback_that_takes_its_arguments():
    pytest.importorskip("stable_baselines3")
    [entry] = _hyperparams()[COOP]["callback"]
    [(path, kwargs)] = entry.items()
    module, _, name = path.rpartition(".")
    callback = getattr(importlib.import_module(module), name)(**kwargs)
    assert callback.bc["expert"] == "heuristic" and callback.bc["episodes"] == kwargs["episodes"]


def test_rl_zoo_coop_policy_kwargs_name_the_fight_odds_features_extractor():
    th = pytest.importorskip("torch")
    from thermopylae_agents.players.fight_features import CoopFightFeatures

    # rl_zoo3 evaluates the string with torch.nn imported as nn.
    kwargs = eval(_hyperparams()[COOP]["policy_kwargs"], {"nn": th.nn})  # noqa: S307 (the shipped file)
    assert kwargs["features_extractor_class"] is CoopFightFeatures
    assert kwargs["activation_fn"] is th.nn.Tanh


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expert": "random"}, "expert must be one of"),
        ({"episodes": 0}, "episodes must be a positive integer"),
        ({"batch_size": 2.5}, "batch_size must be a positive integer"),
        ({"learning_rate": 0.0}, "learning_rate must be > 0"),
    ],
)
def test_warm_start_callback_rejects_bad_arguments_with_one_line(kwargs, message):
    pytest.importorskip("stable_baselines3")
    from thermopylae_agents.training.rlzoo import BehaviourCloningWarmStart

    with pytest.raises(ValueError, match=message) as error:
        BehaviourCloningWarmStart(**kwargs)
    assert "\n" not in str(error.value)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [COOP, "thermopylae/DuelPersian-v0"])
def test_rl_zoo_train_runs_with_the_shipped_file(tmp_path, env_id):
    pytest.importorskip("rl_zoo3")
    from stable_baselines3 import PPO

    from thermopylae_agents.players.fight_features import CoopFightFeatures

    command = [
        sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", env_id,
        "--gym-packages", "thermopylae_env", "--conf-file", str(ZOO_DIR / "ppo.yml"),
        "-n", "256", "--eval-freq", "-1", "--seed", "0", "-f", str(tmp_path),
        # Tiny rollouts so the run takes seconds; every other value comes from the file.
        "--hyperparams", "n_envs:2", "n_steps:64", "batch_size:64", "n_epochs:1",
        *([TINY_WARM_START] if env_id == COOP else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    folder = env_id.replace("/", "-")
    saved = tmp_path / "ppo" / f"{folder}_1" / f"{folder}.zip"
    model = PPO.load(saved)
    assert model.num_timesteps >= 256
    assert model.policy.mlp_extractor.policy_net[0].out_features == 128
    assert isinstance(model.policy.features_extractor, CoopFightFeatures) == (env_id == COOP)


@pytest.mark.slow
def test_rl_zoo_ppo_learns_the_coop_game_from_the_warm_start_on_a_small_budget(tmp_path):
    # A small budget of benchmarks/rlzoo_learning.py (the full one writes benchmarks/rlzoo_coop.json): a
    # warm start on 600 heuristic games, then 8,192 PPO steps, the shipped file otherwise. Random never
    # wins the solo game; the plain PPO policy wins some, choosing the legal actions nearly always although
    # it never sees the mask (from scratch it chose an illegal action on most moves).
    pytest.importorskip("rl_zoo3")
    out = tmp_path / "rlzoo.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "rlzoo_learning.py"), "--timesteps", "8192",
               "--warm-start", "episodes=600", "batch_size=128", "epochs=20", "--games", "150",
               "--hyperparams", "n_envs:16", "batch_size:512", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    agents = result["agents"]
    assert result["timesteps"] >= 8192 and agents["heuristic"]["games"] == 150
    assert agents["random"]["wins"] == 0
    assert agents["rl_zoo3 PPO"]["wins"] >= 8, agents
    assert agents["rl_zoo3 PPO, warm start only"]["wins"] >= 8, agents
    assert result["illegal_choice_rate"]["rl_zoo3 PPO"] < 0.1, result["illegal_choice_rate"]
