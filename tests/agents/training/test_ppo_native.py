"""``thermopylae ppo-native`` (thermopylae_agents.training.ppo_native, .cli.ppo_native): the single-file
masked PPO runs end to end on a tiny budget on both games without Stable-Baselines3, samples only legal
actions, also through NEXT_STEP autoresets, takes CleanRL's flags with CleanRL's meanings (run name and
folder, Weights & Biases, cuDNN determinism, CUDA) and refuses bad flags in one line."""

from __future__ import annotations

import dataclasses
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils.tensorboard")

from thermopylae_env.coop.vector import CoopVectorEnv  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
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
    assert summary["device"] == ("cuda" if torch.cuda.is_available() else "cpu")  # --cuda is the default


BAD_FLAGS = [
    (["--num-envs", "3", "--num-steps", "3", "--num-minibatches", "4"], "multiple of num_minibatches"),
    (["--num-envs", "0"], "--num-envs: '0' is not a whole number in 1..65536"),
    (["--num-envs", "x"], "--num-envs"),
    (["--learning-rate", "0"], "--learning-rate: 0 is outside (0, 10]"),
    (["--learning-rate", "nan"], "--learning-rate: nan is not a finite number"),
    (["--env-id", "CartPole-v1"], "invalid choice 'CartPole-v1' for argument '--env-id'"),
    (["--env-id", "thermopylae/DuelGreek-v0", "--players", "2"], "--players applies to the co-op"),
    (["--num-players", "2"], "Unrecognized options: --num-players"),  # the team size is --players
    (["--opponent", "random"], "--opponent applies to the duel game only"),
    (["--exp-name", "../elsewhere"], "--exp-name: '../elsewhere' is not a name"),
    (["--track", "--wandb-project-name", " "], "--wandb-project-name: a blank name"),
    (["--device", "cpu"], "Unrecognized options: --device"),  # CleanRL's --cuda / --no-cuda instead
    (["--no-such-flag"], "Unrecognized options: --no-such-flag"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS)
def test_a_bad_flag_is_refused_in_one_line_with_status_2(tmp_path, capsys, flags, message):
    from thermopylae_agents.cli.ppo_native import main

    with pytest.raises(SystemExit) as done:
        main([*flags, "--run-dir", str(tmp_path / "run")], prog="thermopylae ppo-native")
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("thermopylae ppo-native: error: ") and message in err
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_the_command_refuses_bad_flags_without_a_traceback(tmp_path):
    for flags, message in (BAD_FLAGS[1], BAD_FLAGS[2]):
        done = subprocess.run([*COMMAND, *flags, "--run-dir", str(tmp_path / "run")], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr and message in done.stderr


def test_help_describes_every_flag():
    done = subprocess.run([*COMMAND, "--help"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0 and done.stdout.startswith("usage: thermopylae ppo-native")
    from thermopylae_agents.training.ppo_native import Args

    for field in dataclasses.fields(Args):
        assert "--" + field.name.replace("_", "-") in done.stdout, field.name
    for text in ("games played at once", "the surrogate clipping coefficient",
                 "duel: the built-in player of the other side"):  # the fields' docstrings
        assert text in done.stdout


def test_training_imports_no_stable_baselines3(tmp_path):
    script = (
        "import sys\n"
        "from thermopylae_agents.cli.ppo_native import main\n"
        f"main(['--total-timesteps', '256', '--num-envs', '8', '--num-steps', '16', '--eval-games', '4', "
        f"'--run-dir', {str(tmp_path / 'run')!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('stable_baselines3', 'sb3_contrib')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "run" / "summary.json").is_file()


@pytest.mark.parametrize("env_id", ["thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"])
def test_the_duel_trains_against_the_built_in_opponent(tmp_path, env_id):
    from thermopylae_agents.cli.ppo_native import parse_args

    run_dir = tmp_path / "run"
    args = parse_args(["--env-id", env_id, "--opponent", "random", "--total-timesteps", "512", "--num-envs",
                       "8", "--num-steps", "32", "--eval-games", "8", "--run-dir", str(run_dir)])
    summary = _script().train(args)
    assert summary == json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] == 512 and summary["config"]["env_id"] == env_id
    assert summary["eval_games"] == 8 and 0.0 <= summary["eval_win_rate"] <= 1.0
    weights = torch.load(run_dir / "agent.pt", weights_only=True)
    assert weights["actor.0.weight"].shape == (128, 56)  # the duel observation alone
    assert list(run_dir.glob("events.out.tfevents.*"))  # TensorBoard without --track, as in CleanRL


def test_the_default_run_folder_is_cleanrls_runs_run_name(tmp_path, monkeypatch):
    from thermopylae_agents.cli.ppo_native import parse_args

    monkeypatch.chdir(tmp_path)
    args = parse_args(["--env-id", "thermopylae/DuelPersian-v0", "--exp-name", "tuned", "--seed", "7"])
    assert re.fullmatch(r"runs/DuelPersian-v0__tuned__7__\d{10}", args.run_dir), args.run_dir
    assert parse_args(["--seed", "7"]).run_dir.startswith("runs/Coop-v0__ppo_native__7__")
    assert not (tmp_path / "runs").exists()  # named, not made, before training


def test_track_without_weights_and_biases_is_one_line_and_status_2_before_training(tmp_path, monkeypatch,
                                                                                    capsys):
    from thermopylae_agents.cli.ppo_native import main

    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    with pytest.raises(SystemExit) as done:
        main(["--track", "--run-dir", str(tmp_path / "run")], prog="thermopylae ppo-native")
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1
    assert err.startswith("thermopylae ppo-native: error: --track: Weights & Biases (wandb) is not installed")
    assert not (tmp_path / "run").exists()


def test_track_syncs_the_run_to_weights_and_biases_and_the_cleanrl_switches_apply(tmp_path, monkeypatch):
    """--track: wandb.init with the project, entity, run name and config, TensorBoard synced, the run
    finished; --no-torch-deterministic and --no-cuda reach cuDNN and the device."""
    calls = {}

    class Run:
        def log(self, data):
            calls["log"] = data

        def finish(self):
            calls["finished"] = True

    def init(**kwargs):
        calls["init"] = kwargs
        return Run()

    wandb = types.ModuleType("wandb")
    wandb.__spec__ = importlib.machinery.ModuleSpec("wandb", None)  # found as if installed
    wandb.init = init
    monkeypatch.setitem(sys.modules, "wandb", wandb)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)  # restored after the test
    from thermopylae_agents.cli.ppo_native import main

    summary = main(["--track", "--wandb-project-name", "games", "--wandb-entity", "team",
                    "--no-torch-deterministic", "--no-cuda", "--total-timesteps", "256", "--num-envs", "8",
                    "--num-steps", "32", "--eval-games", "0", "--run-dir", str(tmp_path / "run")])
    init_kwargs = calls["init"]
    assert (init_kwargs["project"], init_kwargs["entity"], init_kwargs["name"]) == ("games", "team", "run")
    assert init_kwargs["sync_tensorboard"] is True and init_kwargs["config"]["exp_name"] == "ppo_native"
    assert calls["finished"] and list((tmp_path / "run").glob("events.out.tfevents.*"))
    assert torch.backends.cudnn.deterministic is False and summary["device"] == "cpu"


def test_help_lists_every_flag_without_the_train_extra():
    """Without torch and tyro, --help reads the flags from the source of Args and names the extra."""
    script = textwrap.dedent("""
        import sys
        for name in ("torch", "tyro", "tensorboard", "stable_baselines3", "sb3_contrib", "yaml"):
            sys.modules[name] = None  # as if the train extra were not installed
        from thermopylae_agents.cli.app import main
        sys.exit(main(sys.argv[1:]))
    """)
    done = subprocess.run([sys.executable, "-c", script, "ppo-native", "--help"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: thermopylae ppo-native")
    from thermopylae_agents.training.ppo_native import Args

    for field in dataclasses.fields(Args):
        assert "--" + field.name.replace("_", "-") in done.stdout, field.name
    for text in ("games played at once", "(default: ppo_native)", "(default: thermopylae/Coop-v0)",
                 "--cuda, --no-cuda", "needs the 'train' extra"):
        assert text in done.stdout, text


def test_masked_sampling_is_legal_in_the_duel():
    ppo = _script()
    args = ppo.Args(env_id="thermopylae/DuelGreek-v0", num_envs=16)
    envs = ppo.make_env(args, 16)
    agent = ppo.Agent(envs, fight_features=False)
    obs, _ = envs.reset(seed=3)
    for _ in range(300):
        raw = envs.action_masks()
        with torch.no_grad():
            action, *_ = agent.get_action_and_value(torch.as_tensor(obs), torch.as_tensor(ppo.guard(raw)))
        assert raw[np.arange(16), action.numpy()].all()
        obs, _, terminated, _, infos = envs.step(action.numpy())
        final = infos.get("final_info", {})
        assert not np.asarray(final.get("illegal_action", np.zeros(16, bool)))[terminated].any()


def test_the_torch_fight_features_are_the_sb3_extractors_and_the_numpy_ones():
    pytest.importorskip("stable_baselines3")
    from thermopylae_agents.policies.fight_odds import coop_fight_features
    from thermopylae_agents.training.fight_features import CoopFightFeatures
    from thermopylae_agents.training.fight_torch import FightFeatures

    ppo = _script()
    envs = CoopVectorEnv(num_envs=64)
    obs, _ = envs.reset(seed=5)
    batch = [obs]
    for _ in range(20):
        obs, *_ = envs.step(ppo.guard(envs.action_masks()).argmax(1))
        batch.append(obs)
    x = torch.as_tensor(np.concatenate(batch))
    ours = FightFeatures(x.shape[1])(x)
    assert torch.equal(ours, CoopFightFeatures(envs.single_observation_space)(x))
    assert np.allclose(ours.numpy(), coop_fight_features(x.numpy()), atol=1e-6)


def test_capture_video_records_the_evaluation_games(tmp_path, capsys):
    ppo = _script()
    run_dir = tmp_path / "run"
    summary = ppo.train(ppo.Args(total_timesteps=128, num_envs=8, num_steps=16, eval_games=0,
                                 capture_video=True, video_episodes=2, run_dir=str(run_dir)))
    missing = ppo.video_missing()
    if missing:
        assert missing in capsys.readouterr().out and not (run_dir / "videos").exists()
        pytest.skip(missing)
    assert len(summary["videos"]) == 2 and all(Path(v).stat().st_size > 0 for v in summary["videos"])
