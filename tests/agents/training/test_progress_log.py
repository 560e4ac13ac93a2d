"""The training log goes through the standard logging module: time-stamped lines on standard output, a
level from THERMOPYLAE_LOG_LEVEL or ``thermopylae train --quiet``."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from thermopylae_agents.cli import train as train_cli
from thermopylae_agents.training import progress
from thermopylae_agents.training.progress import LOGGER, Stage, log, set_level

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _keep_level():
    level = LOGGER.level
    yield
    LOGGER.setLevel(level)


def test_a_log_line_is_time_stamped_on_standard_output(capsys):
    set_level(logging.INFO)
    log("hello")
    assert re.fullmatch(r"\[train \d\d:\d\d:\d\d\] hello\n", capsys.readouterr().out)


def test_a_stage_without_a_bar_logs_its_start_and_its_end(capsys):
    set_level(logging.INFO)
    with Stage("expert games", 3, bar=False) as stage:
        stage.advance(3)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("expert games: 3 games ...") and "expert games: done, 3 games in" in lines[1]


def test_the_warning_level_silences_the_progress_lines(capsys):
    set_level("WARNING")
    log("not shown")
    assert capsys.readouterr().out == ""


def test_the_level_comes_from_the_environment_variable():
    code = "from thermopylae_agents.training.progress import log; log('shown?')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "agents")])}
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**env, progress.LOG_LEVEL_VARIABLE: "warning"})
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert quiet.returncode == loud.returncode == 0
    assert quiet.stdout == "" and loud.stdout.endswith("] shown?\n")


def test_train_quiet_sets_the_warning_level(monkeypatch, capsys):
    set_level(logging.INFO)
    monkeypatch.setattr("thermopylae_agents.training.ppo.train", lambda target, **kwargs: log("training"))
    assert train_cli.main(["coop", "--quiet"]) == 0
    assert capsys.readouterr().out == "" and LOGGER.level == logging.WARNING
