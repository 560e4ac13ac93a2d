"""The package's own entry points set the process-wide thread settings (passive OpenMP waiting, one OpenBLAS
thread) before any thread runtime reads them; importing the packages does not (tests/env/test_threads.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ("OMP_WAIT_POLICY", "KMP_BLOCKTIME", "OPENBLAS_NUM_THREADS")
EXPECTED = {"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0", "OPENBLAS_NUM_THREADS": "1"}


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS and k != "GOMP_SPINCOUNT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "agents"), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


# Runs one entry point as its command would (``python -m MODULE``, ``python SCRIPT``, a console script's
# function) inside the child, then prints the settings it left in the process's environment.
RUN_ENTRY_POINT = r"""
import json, os, runpy, sys
kind, target, *argv = sys.argv[1:]
before = {name: os.environ.get(name) for name in SETTINGS}
code = None  # a main that returns, as python -m does with a module without a __main__ block
try:
    if kind == "module":
        sys.argv = [target, *argv]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    elif kind == "script":
        sys.argv = [target, *argv]
        runpy.run_path(target, run_name="__main__")
    else:
        import importlib
        module, _, function = target.partition(":")
        sys.exit(getattr(importlib.import_module(module), function)(argv))
except SystemExit as end:
    code = end.code
print(json.dumps({"code": code, "before": before,
                  "after": {name: os.environ.get(name) for name in SETTINGS}}))
""".replace("SETTINGS", repr(SETTINGS))


@pytest.mark.parametrize("kind, target", [
    ("module", "thermopylae_agents"),  # python -m thermopylae_agents: the thermopylae command
    ("module", "thermopylae_agents.cli.app"),
    ("console", "thermopylae_agents.cli.app:main"),  # the console script thermopylae
    ("script", str(ROOT / "scripts" / "train.py")),
    ("script", str(ROOT / "scripts" / "evaluate.py")),
])
def test_entry_point_sets_the_thread_settings(kind: str, target: str) -> None:
    out = subprocess.run([sys.executable, "-c", RUN_ENTRY_POINT, kind, target, "--help"], env=_child_env(),
                         capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 0, out.stderr
    assert got["before"] == dict.fromkeys(SETTINGS)
    assert got["after"] == EXPECTED


def test_entry_point_keeps_the_users_thread_settings() -> None:
    mine = {"OMP_WAIT_POLICY": "active", "KMP_BLOCKTIME": "200", "OPENBLAS_NUM_THREADS": "3"}
    out = subprocess.run([sys.executable, "-c", RUN_ENTRY_POINT, "module", "thermopylae_agents", "--help"],
                         env=_child_env(**mine), capture_output=True, text=True, timeout=300, check=True,
                         cwd=ROOT)
    assert json.loads(out.stdout.strip().splitlines()[-1])["after"] == mine


def test_thermopylae_command_sets_passive_waiting_before_torch_loads_openmp() -> None:
    """``thermopylae ppo-native`` imports torch, which loads GNU OpenMP: the runtime must find passive
    waiting already set, as it reads the variable once, when it loads."""
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "-m", "thermopylae_agents", "ppo-native", "--help"],
                         env=_child_env(OMP_DISPLAY_ENV="VERBOSE"), capture_output=True, text=True,
                         timeout=300, check=True, cwd=ROOT)
    spin = [line for line in out.stderr.splitlines() if "GOMP_SPINCOUNT" in line]
    if not spin:
        pytest.skip("torch here does not load GNU OpenMP")
    # a spin count of 0 is passive waiting (GNU OpenMP's default without the variable is to spin)
    assert all(line.split("=")[1].strip() == "'0'" for line in spin), spin
