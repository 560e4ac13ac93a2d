"""Packaging: one version, license metadata, typed packages, one console script, a clean wheel, and a
non-editable install that loads every shipped policy by name without unpickling."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import tomllib

import thermopylae_env
from thermopylae_agents.cli.app import main as thermopylae

ROOT = Path(__file__).resolve().parents[2]
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


def test_metadata_names_its_authors_and_no_project_urls():
    project = PYPROJECT["project"]
    assert project["authors"] == [{"name": "thermopylae-env developers"}]
    assert "urls" not in project  # no public home yet: no address that leads nowhere


def test_changelog_dates_every_section():
    sections = re.findall(r"^## (.*)$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert sections and sections[0].startswith("[Unreleased]")
    for section in sections:
        assert re.fullmatch(r"\[[^\]]+\] - (since )?\d{4}-\d{2}-\d{2}", section), section


def test_both_packages_are_marked_typed():
    assert (ROOT / "thermopylae_env" / "py.typed").is_file()
    assert (ROOT / "agents" / "thermopylae_agents" / "py.typed").is_file()


def test_changelog_names_every_registered_environment_version():
    import gymnasium as gym

    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{thermopylae_env.__version__}]" in changelog
    for env_id in [i for i in gym.registry if i.startswith("thermopylae/")]:
        assert env_id in changelog, env_id


# The scripts of the repository that stay thin wrappers of the command line (the others are subcommands).
WRAPPER_SCRIPTS = {"train.py", "evaluate.py"}
# The developer experiments in benchmarks/: benchmarks and checks that write into
# the repository's benchmarks/results/ or study the shipped players, not tools for one's own agents.
DEVELOPER_SCRIPTS = {
    "benchmark.py", "soak.py", "rllib_scaling.py", "duel_greek_headroom.py", "rollout_coop.py",
    "rlzoo_learning.py",
    "duel_crossplay.py", "duel_vec_eval.py", "train_exploiters.py", "load_benchmark.py",
    "compare_commits.py", "policy_files.py", "ppo_speed.py", "solve_small_duels.py", "search_speed.py",
    "coop_bound_team_cost.py", "search_yardstick.py", "search_effort.py", "versus_search.py",
    "mmd_small_duels.py", "trained_br_small_duels.py", "learning_curves.py", "learner_parity.py",
    "main_job.py", "device_speed.py",
}
# Subcommands whose --help is answered from their own module (some need an extra for it).
HELP_NEEDS = {"ppo-native": "torch.utils.tensorboard", "exploitability": "sb3_contrib", "train": None,
              "duel-table": None, "bound": None, "render": None}


def test_the_one_console_script_is_thermopylae():
    import importlib

    scripts = PYPROJECT["project"]["scripts"]
    assert scripts == {"thermopylae": "thermopylae_agents.cli.app:main"}
    module, _, function = scripts["thermopylae"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))


def test_every_python_script_is_a_wrapper_of_the_command_line_or_a_listed_developer_tool():
    scripts = {path.name for path in (ROOT / "scripts").glob("*.py")}
    assert scripts == WRAPPER_SCRIPTS
    assert {path.name for path in (ROOT / "benchmarks").glob("*.py")} == DEVELOPER_SCRIPTS


def test_the_command_answers_version(capsys):
    with pytest.raises(SystemExit) as done:
        thermopylae(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"thermopylae {thermopylae_env.__version__}"


@pytest.mark.parametrize("command", sorted(HELP_NEEDS))
def test_a_subcommand_answers_help_under_its_own_name(command, capsys):
    if HELP_NEEDS[command]:
        pytest.importorskip(HELP_NEEDS[command])
    with pytest.raises(SystemExit) as done:
        thermopylae([command, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: thermopylae {command}")


def test_duel_table_plays_its_table(tmp_path, capsys):
    out = tmp_path / "table.json"
    assert thermopylae(["duel-table", "--games", "3", "--seed", "5", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "heuristic  heuristic" in printed and f"wrote {out}" in printed
    table = json.loads(out.read_text())
    assert table["games_per_pairing"] == 3 and len(table["results"]) == 4


def test_render_writes_a_gif(tmp_path, capsys):
    pytest.importorskip("PIL")
    out = tmp_path / "game.gif"
    assert thermopylae(["render", "--agent", "random", "--seed", "2", "--out", str(out)]) == 0
    assert out.stat().st_size > 0 and f"wrote {out}" in capsys.readouterr().out


def test_ppo_native_trains_a_tiny_run(tmp_path, capsys):
    pytest.importorskip("torch.utils.tensorboard")
    run_dir = tmp_path / "run"
    assert thermopylae(["ppo-native", "--total-timesteps", "256", "--num-envs", "8", "--num-steps", "32",
                        "--num-minibatches", "2", "--eval-games", "4", "--run-dir", str(run_dir)]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["env_steps"] == 256
    assert "greedy win rate on 4 fixed deals" in capsys.readouterr().out


def test_an_uninstalled_ray_names_the_rllib_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if Ray were not installed
    assert thermopylae(["rllib", "train", "--run-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "thermopylae rllib: this command needs the 'rllib' extra (ray is not installed): " \
                  'pip install "thermopylae-env[rllib]"\n'


def test_an_uninstalled_torch_stops_ppo_native_naming_the_train_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.delitem(sys.modules, "thermopylae_agents.training.ppo_native", raising=False)
    monkeypatch.delitem(sys.modules, "thermopylae_agents.cli.ppo_native", raising=False)
    assert thermopylae(["ppo-native", "--run-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("thermopylae ppo-native: ") and "'train' extra" in err


def test_render_without_pillow_names_the_render_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(SystemExit) as stop:  # before the game is played, as a usage error stops it
        thermopylae(["render", "--agent", "random", "--out", str(tmp_path / "g.gif")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err == "thermopylae render: this command needs the 'render' extra (PIL is not installed): " \
                  'pip install "thermopylae-env[render]"\n'
    assert not (tmp_path / "g.gif").exists()


def test_a_main_that_returns_its_result_exits_with_zero(monkeypatch):
    monkeypatch.setattr("thermopylae_agents.cli.duel_table.main", lambda argv, prog=None: {"results": []})
    assert thermopylae(["duel-table"]) == 0
    monkeypatch.setattr("thermopylae_agents.cli.duel_table.main", lambda argv, prog=None: 3)
    assert thermopylae(["duel-table"]) == 3


def test_the_wrapper_scripts_and_python_m_run_the_command_line(tmp_path):
    out = tmp_path / "table.json"
    path = os.pathsep.join([str(ROOT), str(ROOT / "agents")])
    done = subprocess.run([sys.executable, "-m", "thermopylae_agents", "duel-table", "--games", "2", "--out",
                           str(out)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("Thermopylae duel: 2 games per pairing, seed 0")
    assert json.loads(out.read_text())["games_per_pairing"] == 2
    for script, usage in (("train.py", "usage: thermopylae-train"), ("evaluate.py", "usage: evaluate.py")):
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, script + done.stderr[-2000:]
        assert done.stdout.startswith(usage), script


def test_a_missing_extra_gives_one_line_naming_it(monkeypatch, capsys):
    def needs_torch(argv, prog=None):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr("thermopylae_agents.cli.evaluate.main", needs_torch)
    assert thermopylae(["evaluate", "--games", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'train' extra" in err and 'pip install "thermopylae-env[train]"' in err


def test_an_import_error_that_is_not_an_extra_keeps_its_traceback(monkeypatch):
    def broken(argv, prog=None):
        raise ModuleNotFoundError("No module named 'thermopylae_agents.x'", name="thermopylae_agents.x")

    monkeypatch.setattr("thermopylae_agents.cli.evaluate.main", broken)
    with pytest.raises(ModuleNotFoundError):
        thermopylae(["evaluate"])


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
    for name in ("index.html", "app.js", "style.css", "favicon.svg"):  # the page of thermopylae web
        assert f"thermopylae_agents/web/static/{name}" in names
    for name in ("coop_maskable_ppo", "duel_greek_maskable_ppo"):
        assert f"thermopylae_agents/policies/{name}.json" in names
        assert f"thermopylae_agents/policies/{name}.safetensors" in names
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
    from thermopylae_agents.policies.safe_policy import load_safe_policy, shipped_policy_names
    names = shipped_policy_names()
    assert len(names) == 8, names
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
    assert "loaded 8 policies" in done.stdout
    installed = sorted(path.name for path in (venv / "bin").glob("thermopylae*"))
    assert installed == ["thermopylae"]
    version = subprocess.run([venv / "bin" / "thermopylae", "--version"], capture_output=True, text=True,
                             timeout=120, cwd=tmp_path, env=env)
    assert version.stdout.strip() == f"thermopylae {thermopylae_env.__version__}", version.stderr[-2000:]
    table = subprocess.run([venv / "bin" / "thermopylae", "duel-table", "--games", "2"], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path, env=env)
    assert table.returncode == 0 and "heuristic  heuristic" in table.stdout, table.stderr[-2000:]


def _core_site(folder: Path) -> Path:
    """A site folder holding only the core dependencies (pyproject's ``dependencies`` and what they
    require), linked from this environment: a venv reading it has NumPy, Gymnasium, numba and
    safetensors, and no torch, SB3 or PyYAML."""
    import importlib.metadata as metadata
    import re

    folder.mkdir()
    wanted = [re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in PYPROJECT["project"]["dependencies"]]
    seen: set[str] = set()
    while wanted:
        name = wanted.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a requirement whose marker excludes this Python
        for requirement in dist.requires or []:
            if "extra ==" not in requirement.partition(";")[2]:
                wanted.append(re.match(r"[A-Za-z0-9_.-]+", requirement).group(0))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source = Path(dist.locate_file(top))
            if source.exists() and not (folder / top).exists():
                (folder / top).symlink_to(source)
    assert {"numpy", "gymnasium", "numba", "safetensors"} <= seen
    return folder


_TORCH_FREE_CHECK = textwrap.dedent(
    """
    import importlib.util, subprocess, sys
    import thermopylae_agents
    assert "site-packages" in thermopylae_agents.__file__, thermopylae_agents.__file__
    for name in ("torch", "stable_baselines3", "sb3_contrib", "yaml", "rich", "scipy"):
        assert importlib.util.find_spec(name) is None, name + " is installed"
    from thermopylae_agents.evaluation.games import evaluate, evaluate_duel_matrix
    from thermopylae_agents.policies.model_card import write_hf_folder
    from thermopylae_agents.policies.safe_policy import load_safe_policy
    coop = evaluate("thermopylae/Coop-v0", ["coop_2p_maskable_ppo", "heuristic"], games=3,
                    env_kwargs={"num_players": 2})
    duel = evaluate_duel_matrix(["duel_greek_maskable_ppo"], ["duel_persian_maskable_ppo", "heuristic"],
                                games=3)
    assert [r.games for r in coop + duel] == [3, 3, 3, 3]
    folder = write_hf_folder("duel_greek_maskable_ppo", "hub")
    assert load_safe_policy(folder).arrays.keys() == load_safe_policy("duel_greek_maskable_ppo").arrays.keys()
    from thermopylae_agents.cli.app import main
    assert main(["evaluate", "--game", "duel", "--greek", "./hub", "heuristic", "--persian",
                 "selfplay_persian_maskable_ppo", "--games", "2"]) == 0
    loaded = [name for name in ("torch", "stable_baselines3", "sb3_contrib", "yaml") if name in sys.modules]
    assert loaded == [], loaded
    print("played without torch")
    """
)


@pytest.mark.install
def test_an_install_without_the_extras_plays_evaluates_and_hints_with_shipped_policies(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    theirs = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    Path(theirs).mkdir(parents=True, exist_ok=True)
    (Path(theirs) / "_core_deps.pth").write_text(f"{_core_site(tmp_path / 'core')}\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([python, "-c", _TORCH_FREE_CHECK], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "played without torch" in done.stdout and "paired comparisons" in done.stdout
    hints = subprocess.run([venv / "bin" / "thermopylae", "play", "--game", "coop", "--players", "2",
                            "--seed", "3", "--hints", "coop_2p_maskable_ppo"], input="1\n" * 300,
                           capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert "Agent hints, most probable first" in hints.stdout, hints.stderr[-2000:]
