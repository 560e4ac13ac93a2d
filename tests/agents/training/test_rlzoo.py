"""RL Baselines3 Zoo reads the shipped hyperparameter files as they are, trains on the environments, sizes
the file's behaviour-cloning warm start to the run's budget, and learns the co-op game from it."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ZOO_DIR = ROOT / "agents" / "thermopylae_agents" / "configs" / "rl_zoo"
ENV_IDS = ("thermopylae/Coop-v0", "thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0")
COOP = "thermopylae/Coop-v0"
# rl_zoo3 configures no logging: the runner shows the project's log lines (the warm start's among them).
ZOO_TRAIN_WITH_LOG = (
    "import logging, runpy, sys; logging.basicConfig(level=logging.INFO, format='%(message)s'); "
    "sys.argv = ['rl_zoo3.train', *sys.argv[1:]]; runpy.run_module('rl_zoo3.train', run_name='__main__')"
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
    from thermopylae_agents.training.fight_features import CoopFightFeatures

    # rl_zoo3 evaluates the string with torch.nn imported as nn.
    kwargs = eval(_hyperparams()[COOP]["policy_kwargs"], {"nn": th.nn})  # noqa: S307 (the shipped file)
    assert kwargs["features_extractor_class"] is CoopFightFeatures
    assert kwargs["activation_fn"] is th.nn.Tanh


def _file_callback(**changes):
    pytest.importorskip("stable_baselines3")
    from thermopylae_agents.training.rlzoo import BehaviourCloningWarmStart

    [entry] = _hyperparams()[COOP]["callback"]
    [(_, kwargs)] = entry.items()
    return BehaviourCloningWarmStart(**{**kwargs, **changes})


def test_rl_zoo_warm_start_counts_are_for_the_blocks_own_budget():
    block = _hyperparams()[COOP]
    callback = _file_callback()
    assert callback.n_timesteps == block["n_timesteps"]
    # the file's own budget (and any longer one) keeps the recipe exactly
    assert callback.sized_episodes(int(block["n_timesteps"])) == callback.bc["episodes"] == 5000
    assert callback.sized_episodes(10 * int(block["n_timesteps"])) == 5000


def test_rl_zoo_warm_start_of_a_shorter_run_plays_games_in_proportion_with_the_trainers_floor():
    from thermopylae_agents.training.config import BUDGET_SIZED

    callback = _file_callback()
    floor = BUDGET_SIZED[("bc", "episodes")]
    assert callback.sized_episodes(256) == floor == 500  # a tiny run: the floor
    assert callback.sized_episodes(2_500_000) == 2500  # half the budget: half the games
    assert callback.sized_episodes(1_000_001) == 1001  # rounded up
    assert _file_callback(n_timesteps=None).sized_episodes(256) == 5000  # no budget given: never sized
    assert _file_callback(episodes=300).sized_episodes(256) == 300  # never more than the file's


class _Env:
    def get_attr(self, name, indices):
        return [type("Spec", (), {"id": COOP, "kwargs": {"num_players": 1}})()]


@pytest.mark.parametrize(("total", "done", "games"), [(256, 0, 500), (5_000_000, 0, 5000),
                                                      (2_600_000, 100_000, 2500)])
def test_rl_zoo_warm_start_reads_the_budget_of_the_learn_call(monkeypatch, total, done, games):
    from thermopylae_agents.training import rlzoo

    played = []
    monkeypatch.setattr(rlzoo, "warm_start", lambda model, env_id, kwargs, bc, seed, bar: played.append(
        (env_id, bc["episodes"], bc["epochs"])) or {})
    callback = _file_callback()
    callback.model = type("Model", (), {"seed": 0, "num_timesteps": done, "_total_timesteps": total,
                                        "get_env": lambda self: _Env()})()
    # SB3 hands learn()'s locals over: total_timesteps counts the steps of a continued run too
    callback.on_training_start({"total_timesteps": total}, {})
    assert played == [(COOP, games, 8)]  # the epochs stay the file's
    assert callback.sized == ({} if games == 5000 else {"episodes": {"full": 5000, "sized": games}})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expert": "random"}, "expert must be one of"),
        ({"episodes": 0}, "episodes must be a positive integer"),
        ({"batch_size": 2.5}, "batch_size must be a positive integer"),
        ({"learning_rate": 0.0}, "learning_rate must be > 0"),
        ({"n_timesteps": 0}, "n_timesteps must be a positive whole number"),
        ({"n_timesteps": 2.5}, "n_timesteps must be a positive whole number"),
        ({"n_timesteps": float("inf")}, "n_timesteps must be a positive whole number"),
        ({"n_timesteps": "5e6"}, "n_timesteps must be a positive whole number"),
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

    from thermopylae_agents.training.fight_features import CoopFightFeatures

    command = [
        sys.executable, "-c", ZOO_TRAIN_WITH_LOG, "--algo", "ppo", "--env", env_id,
        "--gym-packages", "thermopylae_env", "--conf-file", str(ZOO_DIR / "ppo.yml"),
        "-n", "256", "--eval-freq", "-1", "--seed", "0", "-f", str(tmp_path),
        # Tiny rollouts; every other value comes from the file, the co-op warm start too, which a run of
        # 256 steps sizes down to the trainer's floor of expert games.
        "--hyperparams", "n_envs:2", "n_steps:64", "batch_size:64", "n_epochs:1",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    if env_id == COOP:
        log = done.stdout + done.stderr
        assert "500 expert games instead of 5,000 for a run of 256 steps" in log, log[-2000:]
        assert "from 500 heuristic games" in log, log[-2000:]
    folder = env_id.replace("/", "-")
    saved = tmp_path / "ppo" / f"{folder}_1" / f"{folder}.zip"
    model = PPO.load(saved)
    assert model.num_timesteps >= 256
    assert model.policy.mlp_extractor.policy_net[0].out_features == 128
    assert isinstance(model.policy.features_extractor, CoopFightFeatures) == (env_id == COOP)


@pytest.mark.slow
def test_rl_zoo_ppo_learns_the_coop_game_from_the_warm_start_on_a_small_budget(tmp_path):
    # A small budget of benchmarks/rlzoo_learning.py (the full one writes
    # benchmarks/results/rlzoo_coop.json): a warm start on 600 heuristic games, then 8,192 PPO steps, the
    # shipped file otherwise. Random never wins the solo game; the plain PPO policy wins some, choosing the
    # legal actions nearly always although it never sees the mask (from scratch it chose an illegal action
    # on most moves).
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
