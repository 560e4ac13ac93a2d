"""Packaging: one version, license metadata, typed packages, console scripts, a clean wheel, and a
non-editable install that loads every shipped policy by name without unpickling."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import tomllib

import thermopylae_env
from thermopylae_agents import console

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_has_one_source_read_by_hatch():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "thermopylae_env/__init__.py"
    assert thermopylae_env.__version__.count(".") == 2


def test_license_is_an_spdx_expression_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    # PEP 639: with a license expression, license classifiers are superseded (and refused by tools).
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_classifiers_name_python_versions_status_and_typing():
    classifiers = PYPROJECT["project"]["classifiers"]
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)
    assert "Programming Language :: Python :: 3.10" in classifiers


def test_both_packages_are_marked_typed():
    assert (ROOT / "thermopylae_env" / "py.typed").is_file()
    assert (ROOT / "agents" / "thermopylae_agents" / "py.typed").is_file()


def test_changelog_names_every_registered_environment_version():
    import gymnasium as gym

    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{thermopylae_env.__version__}]" in changelog
    for env_id in [i for i in gym.registry if i.startswith("thermopylae/")]:
        assert env_id in changelog, env_id


def test_every_console_script_target_exists():
    import importlib

    scripts = PYPROJECT["project"]["scripts"]
    wanted = {"thermopylae", "thermopylae-train", "thermopylae-evaluate", "thermopylae-export-policy"}
    assert wanted <= set(scripts)
    for target in scripts.values():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), target


@pytest.mark.parametrize("entry", [console.train, console.evaluate, console.export_policy])
def test_console_scripts_answer_version(entry, capsys):
    assert entry(["--version"]) == 0
    assert capsys.readouterr().out.strip().endswith(thermopylae_env.__version__)


def test_a_missing_extra_gives_one_line_naming_it(monkeypatch, capsys):
    def needs_torch(argv):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr("thermopylae_agents.evaluation.main", needs_torch)
    assert console.evaluate(["--games", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'train' extra" in err and "pip install 'thermopylae-env[train]'" in err


def test_an_import_error_that_is_not_an_extra_keeps_its_traceback(monkeypatch):
    def broken(argv):
        raise ModuleNotFoundError("No module named 'thermopylae_agents.x'", name="thermopylae_agents.x")

    monkeypatch.setattr("thermopylae_agents.evaluation.main", broken)
    with pytest.raises(ModuleNotFoundError):
        console.evaluate([])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built by hatchling from the working tree (without build isolation where
    hatchling is installed, as the dev extra does: no network needed)."""
    out = tmp_path_factory.mktemp("wheel")
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *isolation, "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("thermopylae_env-*.whl")
    return path


@pytest.mark.install
def test_wheel_holds_the_packages_and_no_development_artefacts(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    version = thermopylae_env.__version__
    assert tops == {"thermopylae_env", "thermopylae_agents", f"thermopylae_env-{version}.dist-info"}
    bad = [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".log", ".ipynb"))
           or "/tests/" in n or "/runs/" in n or ".ipynb_checkpoints" in n or n.endswith(".DS_Store")]
    assert bad == []
    assert "thermopylae_env/py.typed" in names and "thermopylae_agents/py.typed" in names
    assert f"thermopylae_env-{version}.dist-info/licenses/LICENSE" in names
    for name in ("coop_maskable_ppo", "duel_greek_maskable_ppo"):
        assert f"thermopylae_agents/policies/{name}.json" in names
        assert f"thermopylae_agents/policies/{name}.npz" in names
    metadata = zipfile.ZipFile(wheel).read(f"thermopylae_env-{version}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata and f"Version: {version}" in metadata


_NO_PICKLE_CHECK = textwrap.dedent(
    """
    import pickle, sys
    import thermopylae_agents, thermopylae_env
    assert "site-packages" in thermopylae_agents.__file__, thermopylae_agents.__file__
    assert sys.prefix != sys.base_prefix and thermopylae_agents.__file__.startswith(sys.prefix)
    import cloudpickle, stable_baselines3, torch  # their own pickle references, bound before the patch

    def refuse(*a, **k):
        raise AssertionError("unpickling while loading a safe policy")

    pickle.load = pickle.loads = pickle.Unpickler = torch.load = refuse
    import gymnasium as gym
    from thermopylae_agents.safe_policy import load_safe_policy, shipped_policy_names
    names = shipped_policy_names()
    assert len(names) == 5, names
    for name in names:
        policy = load_safe_policy(name)
        env = gym.make(policy.env_id)
        obs, info = env.reset(seed=0)
        assert info["action_mask"][policy.act(obs, info["action_mask"])]
    print("loaded", len(names), "policies from", thermopylae_agents.__file__)
    """
)


@pytest.mark.install
def test_non_editable_install_loads_every_shipped_policy_by_name_without_unpickling(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # numpy, gymnasium, torch ... come from this interpreter's environment through a .pth file (what
    # --system-site-packages does for the base interpreter), so the install needs no network
    # (--no-deps --no-index). The editable install's own .pth is not read there (only a site
    # directory's .pth files are), so the project itself comes from the wheel alone.
    ours = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    theirs = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    Path(theirs).mkdir(parents=True, exist_ok=True)
    (Path(theirs) / "_parent_env.pth").write_text(ours + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    done = subprocess.run([python, "-c", _NO_PICKLE_CHECK], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "loaded 5 policies" in done.stdout
    version = subprocess.run([venv / "bin" / "thermopylae-export-policy", "--version"], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path, env=env)
    assert version.stdout.strip() == f"thermopylae-export-policy {thermopylae_env.__version__}"
