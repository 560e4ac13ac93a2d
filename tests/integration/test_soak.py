"""benchmarks/soak.py: a tiny soak of every environment must finish with no violation."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "soak.py"
ENVIRONMENTS = ["coop-1p", "coop-2p", "coop-3p", "coop-4p", "duel-greek-vs-random", "duel-greek-vs-heuristic",
                "duel-persian-vs-random", "duel-persian-vs-heuristic", "pettingzoo-duel", "coop-vector-1p",
                "coop-vector-4p-samestep", "coop-sb3-vector-2p"]


def soak(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_a_tiny_soak_of_every_environment_finds_no_violation(tmp_path):
    report = tmp_path / "soak.json"
    # A high illegal rate, so that even a small budget tries every kind of bad action many times.
    run = soak("--steps", "24000", "--illegal-rate", "0.1", "--seed", "3", "--json", str(report))
    assert run.returncode == 0, run.stdout + run.stderr
    for name in ENVIRONMENTS:
        line = next((line for line in run.stdout.splitlines() if line.startswith(name + " ")), None)
        assert line is not None, f"no line for {name}:\n{run.stdout}"
        assert "violations 0 " in line, line
        steps = int(re.search(r"steps\s+([\d,]+)", line).group(1).replace(",", ""))
        bad = int(re.search(r"bad actions\s+([\d,]+)", line).group(1).replace(",", ""))
        assert steps >= 1900 and bad > 50, line
    data = json.loads(report.read_text())
    assert data["violations"] == 0 and [r["env"] for r in data["reports"]] == ENVIRONMENTS
    # Games that ended by the rules (the long duels mostly end by a bad action at this rate).
    assert all(r["games"] > 0 for r in data["reports"]), data["reports"]


def test_a_violation_gives_exit_code_1_and_is_reported():
    # Run the soak in-process with one engine made to lose a card, through the script's own entry point.
    code = (
        "import runpy, sys; sys.argv = ['soak.py', '--steps', '300', '--envs', 'coop-1p'];"
        "from thermopylae_env.coop.rules import CoopGame;"
        "apply = CoopGame.apply\n"  # the envs apply each checked action through the engine's apply
        "def broken(self, state, action, rng, events=None):\n"
        "    apply(self, state, action, rng, events)\n"
        "    if state.spartan_discard: state.spartan_discard.pop()\n"
        "CoopGame.apply = broken\n"
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("coop-1p "))
    assert "violations 0 " not in line and "nowhere" in run.stdout


def test_bad_arguments_are_refused():
    bad = (["--illegal-rate", "1.5"], ["--steps", "0"], ["--quick", "--steps", "5"], ["--envs", "chess"])
    for args in bad:
        run = soak(*args)
        assert run.returncode != 0 and run.stderr, args
