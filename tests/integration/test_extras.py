"""Each extra of pyproject.toml installs what its documented commands import.

For every extra, a fresh virtual environment (``python -m venv``, without the system's site packages) gets
the project's wheel with that extra alone, and runs the commands the README, docs/ and the command line
document for it, each in a tiny form. The extras that need torch start from one venv that holds only
``torch==2.13.0`` (what the README installs first), copied with hard links so that torch is installed
once; pip's cache is reused. ``fast`` is empty and ``dev`` is the union of the others, so neither has
commands of its own. The test needs the package index (CI installs from it). Where a command writes files,
the test checks that they were written (``WRITES``): the ``rllib`` extra trains both games for one tiny
iteration on a local Ray and exports their policies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
TORCH = "torch==2.13.0"
NEEDS_TORCH = {"train", "rlzoo", "rllib"}
NO_COMMANDS_OF_THEIR_OWN = {"fast", "dev"}
INSTALL_WORKERS = 4
ZOO_FILE = "import thermopylae_agents, pathlib; print(pathlib.Path(thermopylae_agents.__file__).parent)"

# The shortest RL Zoo run: the shipped file's Coop-v0 block with a tiny rollout and warm start.
_ZOO_TRAIN = ["python", "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "thermopylae/Coop-v0",
              "--gym-packages", "thermopylae_env", "--conf-file", "{agents}/configs/rl_zoo/ppo.yml",
              "-n", "64", "--eval-freq", "-1", "-f", "zoo", "--hyperparams", "n_envs:1", "n_steps:64",
              "batch_size:64", "n_epochs:1",
              "callback:[{'thermopylae_agents.training.rlzoo.BehaviourCloningWarmStart': dict(episodes=2)}]"]
_ZOO_ENJOY = ["python", "-m", "rl_zoo3.enjoy", "--algo", "ppo", "--env", "thermopylae/Coop-v0",
              "--gym-packages", "thermopylae_env", "-f", "zoo", "-n", "20", "--no-render"]

# What a Ray worker of `thermopylae rllib train` runs: the env creators of the registered envs,
# and the modules the driver and the sweep import.
_RLLIB_WORKER = textwrap.dedent(
    """
    import numpy as np
    from thermopylae_agents.rllib.envs import make_coop, make_duel, register_envs
    from thermopylae_agents.rllib.modules import DuelHeuristicRLModule, MaskedPPOTorchRLModule
    from thermopylae_agents.rllib import sweep, train
    register_envs()
    for env in (make_duel({}), make_coop({})):
        obs, info = env.reset(seed=0)
        print(type(env).__name__, "reset")
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    print("rllib worker imports ok")
    """
)

_VIDEO = textwrap.dedent(
    """
    import gymnasium as gym, numpy as np
    import thermopylae_env
    from gymnasium.wrappers import RecordVideo
    env = RecordVideo(gym.make("thermopylae/Coop-v0", render_mode="rgb_array"), "video",
                      episode_trigger=lambda i: True, disable_logger=True)
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        done = term or trunc
    env.close()
    print("video ok")
    """
)

# The smallest `thermopylae rllib` run: one iteration of a tiny batch on a local Ray of 2 CPUs, sampling in
# the driver, and a 2-game evaluation of each exported policy.
_RLLIB_TINY = ["--num-cpus", "2", "--num-env-runners", "0", "--envs-per-runner", "2", "--max-iterations", "1",
               "--train-batch-size", "128", "--minibatch-size", "64", "--num-epochs", "1", "--hiddens", "16",
               "--checkpoint-every", "1", "--eval-games", "2"]

# extra -> the commands it is installed for: (argv, text the output must contain). "python" is the
# venv's interpreter, other names its console scripts; {agents} the installed thermopylae_agents folder.
COMMANDS: dict[str, list[tuple[list[str], str]]] = {
    "": [
        (["thermopylae", "--version"], "thermopylae "),
        (["thermopylae", "train", "--help"], "usage: thermopylae train"),
        (["thermopylae", "ppo-native", "--help"], "needs the 'train' extra"),  # the flags, read from the file
        (["thermopylae", "duel-table", "--games", "2"], "heuristic  heuristic"),
        (["python", "-c", "import importlib.util as u; print('torch', u.find_spec('torch') is not None)"],
         "torch False"),
    ],
    "train": [
        (["thermopylae", "evaluate", "--game", "coop", "random", "heuristic", "--games", "4",
          "--no-progress"],
         "heuristic"),
        (["thermopylae", "train", "duel-greek", "--timesteps", "128", "--n-envs", "2", "--bc-episodes", "0",
          "--eval-freq", "0", "--no-report", "--no-progress", "--vec", "dummy", "--run-dir", "run"],
         "run finished"),
        (["thermopylae", "export", "--help"], "usage:"),
        (["thermopylae", "exploitability", "--help"], "usage:"),
        (["thermopylae", "bound", "--help"], "usage:"),
        (["thermopylae", "ppo-native", "--help"], "usage: thermopylae ppo-native [-h] [OPTIONS]"),  # tyro's
    ],
    "pettingzoo": [
        (["python", "-c", "from pettingzoo.test import api_test; from thermopylae_env import duel_v1; "
          "api_test(duel_v1.env(), num_cycles=20); print('api ok')"], "api ok"),
    ],
    "render": [
        (["thermopylae", "render", "--game", "coop", "--agent", "heuristic", "--out", "game.gif"],
         "wrote game.gif"),
    ],
    "video": [(["python", "-c", _VIDEO], "video ok")],
    "rlzoo": [
        (_ZOO_TRAIN, ""),
        (_ZOO_ENJOY, ""),
        (["python", "-c", "import huggingface_hub; print('hub ok')"], "hub ok"),  # thermopylae export --push
    ],
    "rllib": [
        (["thermopylae", "rllib", "train", "--help"], "usage:"),
        (["thermopylae", "rllib", "sweep", "--help"], "usage:"),
        (["python", "-c", _RLLIB_WORKER], "rllib worker imports ok"),
        (["thermopylae", "rllib", "train", "--game", "coop", "--run-dir", "rllib_coop", *_RLLIB_TINY],
         "default_policy: won"),
        (["thermopylae", "rllib", "train", "--game", "duel", "--run-dir", "rllib_duel", *_RLLIB_TINY],
         "persian: won"),
    ],
    "docs": [
        (["python", "-c", "import mkdocs, mkdocstrings, nbclient, nbformat, ipykernel; print('docs ok')"],
         "docs ok"),
        (["mkdocs", "--version"], "mkdocs"),
    ],
    "test": [
        (["python", "-c", "import hypothesis, PIL, moviepy, pettingzoo, xdist; print('test ok')"], "test ok"),
        (["python", "-m", "pytest", "--version"], "pytest"),
    ],
    "bench": [
        (["python", "-c", "import rlcard, pgx, jax; print('bench ok')"], "bench ok"),
    ],
    "web": [
        (["thermopylae", "web", "--help"], "usage: thermopylae web"),
        (["python", "-c", "from thermopylae_agents.web.app import create_app; "
          "print('web app', type(create_app()).__name__)"], "web app Starlette"),
    ],
    "openspiel": [
        (["python", "-c", "import pyspiel, thermopylae_agents.openspiel; "
          "g = pyspiel.load_game('python_thermopylae_duel'); s = g.new_initial_state(); "
          "print('openspiel', g.num_players(), s.is_chance_node())"], "openspiel 2 True"),
    ],
}


# extra -> the files its commands must have written (relative to the folder they ran in).
WRITES: dict[str, list[str]] = {
    "render": ["game.gif"],
    "rllib": ["rllib_coop/summary.json", "rllib_coop/default_policy.npz",
              "rllib_coop/final/rllib_checkpoint.json", "rllib_duel/summary.json", "rllib_duel/greek.npz",
              "rllib_duel/persian.npz", "rllib_duel/final/rllib_checkpoint.json"],
}


def test_every_extra_has_its_commands_listed():
    assert set(EXTRAS) == (set(COMMANDS) - {""}) | NO_COMMANDS_OF_THEIR_OWN
    assert set(WRITES) <= set(COMMANDS)
    assert {e for e in EXTRAS if any(r.startswith("torch") for r in EXTRAS[e])} <= NEEDS_TORCH


def _pip(python: Path, *args: str) -> None:
    # --no-compile: byte-compiling Ray's and torch's thousands of files is most of an install's time
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile", *args],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *isolation, "-w", str(out), str(ROOT)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("thermopylae_env-*.whl")
    return path


def _copy_venv(source: Path, target: Path) -> Path:
    try:
        shutil.copytree(source, target, symlinks=True, copy_function=os.link)
    except OSError:  # another file system: a plain copy
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, symlinks=True)
    return target / "bin" / "python"


def _selected_extras(session: pytest.Session) -> list[str]:
    name = "test_an_extra_alone_runs_its_documented_commands"
    return sorted({item.callspec.params["extra"] for item in session.items
                   if getattr(item, "originalname", "") == name})


@pytest.fixture(scope="module")
def venvs(wheel, tmp_path_factory, request) -> dict[str, Path | BaseException]:
    """The venv of every selected extra, installed :data:`INSTALL_WORKERS` at a time (an install waits on
    downloads and the disk more than on the CPU). The torch extras copy one venv that holds torch alone
    (hard links: seconds, no disk). An extra whose install failed maps to the failure."""
    root = tmp_path_factory.mktemp("venvs")
    extras = _selected_extras(request.session)

    def install_torch() -> Path:
        _pip(_venv(root / "torch"), TORCH)
        return root / "torch"

    def install(extra: str, torch: Future | None) -> Path:
        venv = root / (extra or "core")
        python = _venv(venv) if torch is None else _copy_venv(torch.result(), venv)
        _pip(python, f"{wheel}[{extra}]" if extra else str(wheel))
        return venv

    with ThreadPoolExecutor(INSTALL_WORKERS) as pool:
        torch = pool.submit(install_torch) if set(extras) & NEEDS_TORCH else None
        # the torch extras last: each waits for torch, holding a worker
        order = sorted(extras, key=lambda e: e in NEEDS_TORCH)
        futures = {e: pool.submit(install, e, torch if e in NEEDS_TORCH else None) for e in order}
    done: dict[str, Path | BaseException] = {}
    for extra, future in futures.items():
        error = future.exception()
        done[extra] = future.result() if error is None else error
    return done


@pytest.mark.slow
@pytest.mark.install
@pytest.mark.parametrize("extra", sorted(COMMANDS))
def test_an_extra_alone_runs_its_documented_commands(extra, venvs, tmp_path):
    venv = venvs[extra]
    if isinstance(venv, BaseException):
        raise venv
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    agents = subprocess.run([str(python), "-c", ZOO_FILE], capture_output=True, text=True, env=env,
                            cwd=tmp_path, check=True).stdout.strip()
    for argv, expected in COMMANDS[extra]:
        argv = [str(python) if a == "python" else a.replace("{agents}", agents) for a in argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{extra}: {argv[:4]} -> {done.returncode}\n{output[-3000:]}"
        assert expected in output, f"{extra}: {argv[:4]}\n{output[-3000:]}"
    missing = [name for name in WRITES.get(extra, []) if not (tmp_path / name).is_file()]
    assert missing == [], f"{extra}: not written: {missing}"
