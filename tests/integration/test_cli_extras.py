"""One way of saying that an extra is missing: one line, one exit status, from every command; and the help
of the training command needs none of the training extra."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from thermopylae_agents.cli.app import main as thermopylae
from thermopylae_agents.cli.console import EXIT_MISSING_EXTRA, extra_message, require_extra

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "agents")])}
POLICY = ROOT / "agents" / "thermopylae_agents" / "policies" / "duel_greek_maskable_ppo.zip"


def test_the_missing_extra_message_is_one_line_with_the_install_command():
    assert extra_message("thermopylae render", "render", "PIL") == (
        "thermopylae render: this command needs the 'render' extra (PIL is not installed): "
        'pip install "thermopylae-env[render]"')


def test_require_extra_stops_with_the_message_and_the_missing_extra_status(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    with pytest.raises(SystemExit) as stop:
        require_extra("thermopylae x", "numpy", "pettingzoo")
    assert stop.value.code == EXIT_MISSING_EXTRA
    assert capsys.readouterr().err == extra_message("thermopylae x", "pettingzoo", "pettingzoo") + "\n"


def test_require_extra_lets_installed_modules_pass(capsys):
    require_extra("thermopylae x", "numpy")
    assert capsys.readouterr().err == ""


def test_export_without_the_train_extra_says_so_in_the_common_format(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)
    with pytest.raises(SystemExit) as stop:  # as argparse's usage errors stop a command
        thermopylae(["export", str(POLICY), "--game", "duel", "--side", "greek", "--out-dir", str(tmp_path)])
    assert stop.value.code == EXIT_MISSING_EXTRA
    expected = extra_message("thermopylae export", "train", "sb3_contrib")
    assert capsys.readouterr().err == expected + "\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["--models-are-missing"],
                                  ["no-such-model.zip", "--game", "duel", "--side", "greek"],
                                  ["--game", "duel", "--side", "greek"]])
def test_export_refuses_bad_arguments_with_one_line_and_no_traceback(argv, tmp_path):
    done = subprocess.run([sys.executable, "-m", "thermopylae_agents", "export", *argv,
                           "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=SOURCE_ENV)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith(
        "thermopylae export: error: ")


_WITHOUT_TRAINING = textwrap.dedent(
    """
    import sys
    from importlib.abc import MetaPathFinder

    class Uninstalled(MetaPathFinder):  # torch, SB3 and PyYAML as if the train extra were not installed
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"torch", "stable_baselines3", "sb3_contrib", "yaml", "tensorboard"}:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Uninstalled())
    from thermopylae_agents.cli.app import main
    sys.exit(main(["train", *sys.argv[1:]]))
    """
)


def _train_without_torch(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _WITHOUT_TRAINING, *argv], capture_output=True, text=True,
                          timeout=120, env=SOURCE_ENV)


def test_train_help_works_without_the_train_extra():
    done = _train_without_torch("--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: thermopylae train")


def test_training_without_the_train_extra_names_it_in_one_line():
    done = _train_without_torch("coop", "--timesteps", "10")
    assert done.returncode == EXIT_MISSING_EXTRA
    assert done.stderr.count("\n") == 1 and "needs the 'train' extra" in done.stderr


def test_export_refuses_a_model_of_another_game_and_writes_nothing(tmp_path, capsys):
    coop = ROOT / "agents" / "thermopylae_agents" / "policies" / "coop_maskable_ppo.zip"
    with pytest.raises(SystemExit) as stop:
        thermopylae(["export", str(coop), "--game", "duel", "--side", "greek", "--out-dir", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "are --game and --side right?" in err
    assert list(tmp_path.iterdir()) == []
