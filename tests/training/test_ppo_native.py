"""``thermopylae ppo-native`` (thermopylae_agents.training.ppo_native): the single-file masked PPO runs end to
end on a tiny budget and samples only legal actions, also through NEXT_STEP autoresets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils.tensorboard")

from thermopylae_env.coop.vector import CoopVectorEnv  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "thermopylae_agents", "ppo-native"]


def _script():
    from thermopylae_agents.training import ppo_native

    return ppo_native


def test_tiny_run_trains_logs_evaluates_and_saves(tmp_path):
    run_dir = tmp_path / "run"
    command = [*COMMAND, "--total-timesteps", "2048", "--num-envs", "16",
               "--num-steps", "32", "--num-minibatches", "2", "--eval-games", "20",
               "--run-dir", str(run_dir)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] == 2048
    # End to end includes the updates, so it is slower than collection alone.
    assert 0 < summary["steps_per_s"] < summary["collection_steps_per_s"]
    assert summary["steps_per_s"] == pytest.approx(2048 / summary["train_seconds"], rel=0.01)
    assert summary["eval_games"] == 20 and 0.0 <= summary["eval_win_rate"] <= 1.0
    assert summary["config"]["num_envs"] == 16
    assert list(run_dir.glob("events.out.tfevents.*")), "no TensorBoard events written"
    weights = torch.load(run_dir / "agent.pt", weights_only=True)
    assert weights["actor.0.weight"].shape == (128, 335)  # observation + fight odds


def test_bad_config_is_refused_in_one_line():
    done = subprocess.run([*COMMAND, "--num-envs", "3", "--num-steps", "3",
                           "--num-minibatches", "4"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "multiple of num_minibatches" in done.stderr


def test_guarded_sampler_plays_only_legal_actions_through_next_step_resets():
    ppo = _script()
    envs = CoopVectorEnv(num_envs=32, autoreset_mode="NextStep")
    agent = ppo.ActorCritic(envs, fight_features=True)
    obs, _ = envs.reset(seed=0)
    saw_reset_step = False
    waiting = np.zeros(32, bool)
    for _ in range(200):
        raw = envs.action_masks()
        saw_reset_step |= bool(waiting.any())
        mask = torch.as_tensor(ppo.guard(raw))
        with torch.no_grad():
            action, logprob, entropy, _ = agent.get_action_and_value(torch.as_tensor(obs), mask)
        assert torch.isfinite(logprob).all() and torch.isfinite(entropy).all()
        live = ~waiting
        assert raw[live, action.numpy()[live]].all()  # every game that plays gets a legal action
        obs, _, terminated, _, infos = envs.step(action.numpy())
        assert not infos.get("illegal_action", np.zeros(32, bool)).any()
        waiting = terminated
    assert saw_reset_step  # finished games waiting for their NEXT_STEP reset were sampled for too


def test_guard_leaves_live_rows_alone_and_opens_empty_ones():
    ppo = _script()
    mask = np.array([[True, False, False], [False, False, False]])
    guarded = ppo.guard(mask)
    assert guarded.tolist() == [[True, False, False], [True, True, True]]
    assert mask[1].sum() == 0  # the caller's array is not changed
