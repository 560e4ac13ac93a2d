"""The environment package stands alone: nothing under ``thermopylae_env/`` imports ``thermopylae_agents``
(layers point one way: engines <- environments <- agents), and the built-in duel opponents live there."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "thermopylae_env"

# Modules whose agents imports are being removed by the "records" work (a replay and the play command load
# the agent specs); nothing else may import the agents package, and these two only inside functions.
PENDING = {"cli.py", "records.py"}


def _agents_imports(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(name == "thermopylae_agents" or name.startswith("thermopylae_agents.") for name in names):
            lines.append(node.lineno)
    return lines


def test_no_module_of_the_env_package_imports_the_agents_package():
    offenders = {p.name: _agents_imports(p) for p in sorted(PACKAGE.rglob("*.py"))}
    offenders = {name: lines for name, lines in offenders.items() if lines}
    assert set(offenders) <= PENDING, offenders
    for name in offenders:  # the pending ones import lazily, never at module level
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not any(n.lineno in offenders[name] for n in top), name


_PROBE = """
import json, sys
import gymnasium as gym
import numpy as np
import thermopylae_env
from thermopylae_env import actions, cards, coop, core, duel
from thermopylae_env.coop import env as coop_env
from thermopylae_env.duel import env as duel_env, layout as duel_layout, opponents
from thermopylae_env import errors, render
for env_id, kwargs in [("thermopylae/Coop-v0", {}), ("thermopylae/DuelGreek-v0", {}),
                       ("thermopylae/DuelPersian-v0", {"opponent": "random"})]:
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=0)
    for _ in range(50):
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        if term:
            obs, info = env.reset()
try:
    from thermopylae_env import duel_v1
    duel_v1.env().reset(seed=0)
except ImportError:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "thermopylae_agents")))
"""


def test_importing_and_playing_every_env_loads_no_agents_module():
    run = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


def test_the_agents_package_re_exports_the_built_in_players():
    from thermopylae_env.duel import opponents
    from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian, RandomAgent

    assert (HeuristicGreek, HeuristicPersian, RandomAgent) == (
        opponents.HeuristicGreek, opponents.HeuristicPersian, opponents.RandomAgent)
