"""``thermopylae train`` on hostile input: whole-config checks before anything is written, YAML without
aliases, atomic checkpoints with a fallback for a damaged one, and Ctrl-C saving the model (issue 28)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import shrink_block

pytest.importorskip("sb3_contrib")

from thermopylae_agents.cli.train import main  # noqa: E402
from thermopylae_agents.training.callbacks import save_atomically  # noqa: E402
from thermopylae_agents.training.config import (
    load_config,  # noqa: E402
    resolve_config,  # noqa: E402
)
from thermopylae_agents.training.runs import find_resume, model_zip_problem  # noqa: E402
from thermopylae_env import COOP_ID, PERSIAN_ID  # noqa: E402


def _config(tmp_path: Path, edit=None, target: str = "coop", env_id: str = COOP_ID) -> Path:
    """The shipped config of ``target`` made tiny (a bad value that got through would train seconds),
    then ``edit`` applied to its block."""
    data = load_config(target)
    shrink_block(data[env_id], n_envs=2, n_steps=16, batch_size=32, n_timesteps=32, checkpoint_freq=0)
    data[env_id]["bc"]["episodes"] = 0
    data[env_id]["eval"]["freq"] = 0
    if edit is not None:
        edit(data[env_id])
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _refused(args: list[str], out: Path, capsys) -> str:
    """Run the command; assert exit 2, one line on stderr, no traceback, nothing written; the line."""
    try:
        status = main(args)
    except SystemExit as stop:  # argparse's own refusals
        status = stop.code
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2, err
    assert err and "Traceback" not in "\n".join(err)
    assert not out.exists(), "refused only after writing"
    return err[-1]


def _set(path: str, value):
    def edit(hp):
        where = hp
        *sections, key = path.split(".")
        for section in sections:
            where = where.setdefault(section, {})
        where[key] = value

    return edit


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("policy_kwargs.net_arch", ["a", "b"]),
        ("policy_kwargs.net_arch", {"pi": [10**9], "vf": [64]}),
        ("policy_kwargs.net_arch", [64] * 1000),
        ("policy_kwargs.activation_fn", "sigmoid"),
        ("n_envs", 10**9),
        ("n_steps", 10**9),
        ("gamma", float("nan")),
        ("gamma", 2.0),
        ("learning_rate", float("inf")),
        ("learning_rate", "lin_nan"),
        ("ent_coef", "much"),
        ("batch_size", 1),
        ("eval.episodes", -1),
        ("eval.deterministic", "yes"),
        ("bc.expert", [1, 2, 3]),
        ("bc.workers", 10**6),
        ("report.episodes", 10**12),
        ("env_kwargs", {"opponent": {"nested": [1]}}),
        ("normalize_advantage", "no"),
        ("policy_kwargs", [64, 64]),
        ("learner", "jax"),
        ("precision", "float16"),
        ("threads", 0),
        ("threads", 257),
        ("threads", "many"),
    ],
)
def test_a_bad_config_value_is_one_line_before_anything_is_written(key, value, tmp_path, capsys):
    config = _config(tmp_path, _set(key, value))
    out = tmp_path / "run"
    line = _refused(["coop", "--config", str(config), "--run-dir", str(out), "--no-progress", "--no-report"],
                    out, capsys)
    assert line.startswith("thermopylae-train: error:") and key.rpartition(".")[2] in line


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"learner": "sb3", "precision": "bfloat16"}, "precision bfloat16 needs learner: fast"),
        ({"bc.episodes": None}, "missing key(s) ['episodes']"),
        ({"bc.dagger_rounds": 1}, "dagger_rounds 1 needs dagger_episodes"),
    ],
)
def test_config_keys_that_contradict_or_lack_each_other_are_one_line(changes, message, tmp_path, capsys):
    def edit(hp):
        for key, value in changes.items():
            section, _, name = key.rpartition(".")
            where = hp[section] if section else hp
            if value is None:
                del where[name]
            else:
                where[name] = value

    config = _config(tmp_path, edit)
    out = tmp_path / "run"
    line = _refused(["coop", "--config", str(config), "--run-dir", str(out), "--no-progress", "--no-report"],
                    out, capsys)
    assert message in line


@pytest.mark.parametrize(("learner", "precision", "threads"),
                         [("fast", "bfloat16", 1), ("fast", "auto", "auto"), ("sb3", "float32", 256)])
def test_the_learner_precision_and_threads_keys_take_their_documented_values(learner, precision, threads,
                                                                             tmp_path):
    def edit(hp):
        hp.pop("fast", None)  # the fast learner's own recipe would replace the block's precision
        hp.update(learner=learner, precision=precision, threads=threads)

    config = _config(tmp_path, edit)
    hp = resolve_config("coop", config)[COOP_ID]
    assert (hp["learner"], hp["precision"], hp["threads"]) == (learner, precision, threads)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "bogus"], "device"),
        (["--device", "cuda:99"], "device"),
        (["--n-envs", "1000000000"], "--n-envs"),
        (["--n-envs", "1e9"], "--n-envs"),
        (["--timesteps", "10" * 10], "--timesteps"),
        (["--eval-episodes", "99999999999"], "--eval-episodes"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_written(args, message, tmp_path, capsys):
    out = tmp_path / "run"
    config = _config(tmp_path)
    line = _refused(["coop", "--config", str(config), "--run-dir", str(out), "--no-progress", "--no-report",
                     *args], out, capsys)
    assert message in line


def test_an_empty_out_is_refused_instead_of_training_into_the_current_folder(tmp_path, monkeypatch, capsys):
    config = _config(tmp_path)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    line = _refused(["coop", "--config", str(config), "--run-dir", "", "--no-progress", "--no-report"],
                    here / "config.yaml", capsys)
    assert "--run-dir" in line
    assert list(here.iterdir()) == []


def test_a_config_without_n_timesteps_takes_the_command_lines(tmp_path, capsys):
    config = _config(tmp_path, lambda hp: hp.pop("n_timesteps"))
    resolved = resolve_config("coop", config, timesteps=64)
    assert resolved[COOP_ID]["n_timesteps"] == 64
    out = tmp_path / "run"
    line = _refused(["coop", "--config", str(config), "--run-dir", str(out), "--no-progress", "--no-report"],
                    out, capsys)
    assert "n_timesteps" in line


def _billion_laughs(levels: int = 9) -> str:
    """A flow list whose level ``k`` (anchor ``&k``) lists level ``k - 1`` nine times: a few hundred bytes
    of YAML, 9**levels strings once the aliases are expanded."""
    names = "abcdefghijklmnopqrstuvwxyz"[:levels]
    items = ["&a [" + ",".join(["lol"] * 9) + "]"]
    pairs = zip(names, names[1:], strict=False)
    items += [f"&{name} [" + ",".join([f"*{prev}"] * 9) + "]" for prev, name in pairs]
    return "[" + ", ".join(items) + "]"


def test_a_yaml_alias_bomb_in_the_config_is_refused_at_once(tmp_path, capsys):
    config = _config(tmp_path, None, "duel-persian", PERSIAN_ID)
    config.write_text(config.read_text().replace("expert: heuristic", f"expert: {_billion_laughs()}", 1))
    assert config.stat().st_size < 2000
    out = tmp_path / "run"
    line = _refused(["duel-persian", "--config", str(config), "--run-dir", str(out), "--bc-episodes", "0",
                     "--no-progress", "--no-report"], out, capsys)
    assert "alias" in line


def test_a_config_nested_too_deep_is_refused(tmp_path, capsys):
    config = _config(tmp_path)
    config.write_text(config.read_text().replace("expert: heuristic", "expert: " + "[" * 200 + "]" * 200, 1))
    out = tmp_path / "run"
    line = _refused(["coop", "--config", str(config), "--run-dir", str(out), "--no-report"], out, capsys)
    assert "nested" in line


# ------------------------------------------------------------------------------- saving and resuming


class _FakeModel:
    """Writes a model zip through SB3's ``save(file, exclude)`` signature; optionally dies half-way."""

    def __init__(self, die: bool = False) -> None:
        self.die = die

    def save(self, handle, exclude=None) -> None:
        with zipfile.ZipFile(handle, "w") as archive:
            archive.writestr("data", "{}" * 1000)
            if self.die:
                handle.flush()
                raise KeyboardInterrupt


def test_a_save_cut_short_leaves_the_previous_model_whole(tmp_path):
    path = tmp_path / "final_model.zip"
    save_atomically(_FakeModel(), path)
    before = path.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        save_atomically(_FakeModel(die=True), path)
    assert path.read_bytes() == before and model_zip_problem(path) is None
    assert [p.name for p in tmp_path.iterdir()] == ["final_model.zip"]  # no temporary file left


def test_resume_falls_back_from_a_truncated_newest_checkpoint_with_a_warning(tmp_path, capsys):
    import os

    checkpoints = tmp_path / "checkpoints"
    good = save_atomically(_FakeModel(), checkpoints / "model_100_steps.zip")
    bad = checkpoints / "model_200_steps.zip"
    save_atomically(_FakeModel(), bad)
    bad.write_bytes(bad.read_bytes()[: bad.stat().st_size // 2])
    os.utime(good, (1, 1))  # the truncated file is the newest
    assert find_resume(tmp_path) == (tmp_path, good)
    out = capsys.readouterr().out
    assert "warning" in out and str(bad) in out


def test_resume_of_a_truncated_model_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "final_model.zip"
    bad.write_bytes(b"PK\x03\x04 cut")
    out = tmp_path / "other"
    line = _refused(["coop", "--resume", str(bad), "--run-dir", str(out), "--no-progress"], out, capsys)
    assert str(bad) in line


def test_ctrl_c_during_training_saves_an_interrupted_model_to_resume_from(tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    config = _config(tmp_path, None, "duel-persian", PERSIAN_ID)
    out = tmp_path / "run"
    monkeypatch.setattr("thermopylae_agents.training.ppo.learn", interrupted)
    status = main(["duel-persian", "--config", str(config), "--run-dir", str(out), "--no-progress",
                   "--no-report"])
    assert status == 130
    saved = out / "interrupted_model.zip"
    assert saved.is_file() and model_zip_problem(saved) is None
    captured = capsys.readouterr()
    assert f"--resume {out}" in captured.out
    assert captured.err.strip().splitlines() == ["thermopylae-train: interrupted"]
    assert find_resume(out) == (out, saved)


def _interrupting_callbacks(at_steps: int):
    """``build_callbacks`` of the PPO run, plus one that raises ``KeyboardInterrupt`` (as Ctrl-C does) once
    the run has collected ``at_steps`` env steps: inside a rollout, before its update."""
    from stable_baselines3.common.callbacks import BaseCallback

    from thermopylae_agents.training.callbacks import build_callbacks

    class CtrlC(BaseCallback):
        def _on_step(self) -> bool:
            if self.model.num_timesteps >= at_steps:
                raise KeyboardInterrupt
            return True

    def build(*args, **kwargs):
        return [*build_callbacks(*args, **kwargs), CtrlC()]

    return build


def test_ctrl_c_inside_a_rollout_saves_the_steps_learned_from_and_resume_trains_the_rest(
        tmp_path, monkeypatch, capsys):
    from sb3_contrib import MaskablePPO

    config = _config(tmp_path, lambda hp: hp.update(n_timesteps=960))
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr("thermopylae_agents.training.ppo.build_callbacks", _interrupting_callbacks(40))
        # sized to a budget of 3 rollouts of 2 envs x 16 steps, which the resumed run keeps
        status = main(["coop", "--config", str(config), "--run-dir", str(out), "--timesteps", "96",
                       "--no-progress", "--no-report"])
    assert status == 130
    saved = out / "interrupted_model.zip"
    # interrupted 8 steps into the second rollout: the weights learned from the first one only
    assert MaskablePPO.load(saved).num_timesteps == 32
    capsys.readouterr()
    assert main(["coop", "--resume", str(out), "--no-progress", "--no-report"]) == 0
    assert "at 32 steps: 64 more to reach 96" in capsys.readouterr().out
    assert MaskablePPO.load(out / "final_model.zip").num_timesteps == 96


@pytest.mark.slow
def test_sigint_mid_rollout_keeps_a_loadable_model_and_resume_continues_from_it(tmp_path):
    """The real thing, as a person does it: ``thermopylae train`` in its own process, SIGINT once its first
    rollout is under way (an evaluation inside the rollout has been logged), then ``--resume``."""
    import os
    import signal
    import subprocess
    import sys

    from sb3_contrib import MaskablePPO

    out = tmp_path / "run"
    command = [sys.executable, "-m", "thermopylae_agents", "train", "coop", "--timesteps", "20000",
               "--bc-episodes", "20", "--no-report", "--no-progress", "--run-dir", str(out)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # each log line as it is written
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as run:
        for line in run.stdout:
            if "evaluation at 4,096 steps: done" in line:  # 4,096 of the rollout's 16,384 steps
                run.send_signal(signal.SIGINT)
                break
        else:
            pytest.fail("the run ended before its first rollout")
        run.stdout.read()
        err = run.stderr.read()
        assert run.wait(timeout=300) == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "thermopylae train: interrupted"
    interrupted = MaskablePPO.load(out / "interrupted_model.zip")
    assert interrupted.num_timesteps % 16_384 == 0  # whole rollouts learned from, none half-collected
    done = subprocess.run([sys.executable, "-m", "thermopylae_agents", "train", "coop", "--resume", str(out),
                           "--no-report", "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"resuming {out / 'interrupted_model.zip'} at {interrupted.num_timesteps:,} steps" in done.stdout
    assert MaskablePPO.load(out / "final_model.zip").num_timesteps >= 20_000

