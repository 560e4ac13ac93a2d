"""benchmarks/versus_search.py run as a user runs it: the committed solo evaluation paired with the search
yardstick gives the yardstick's own pairing of the search and the shipped policy, and an evaluation without
per-game records is refused with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "versus_search.py"


def versus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_pairs_each_agent_with_the_search_on_the_yardsticks_deals(tmp_path: Path) -> None:
    out = tmp_path / "versus.json"
    done = versus("--players", "1", "--eval", str(ROOT / "benchmarks" / "results" / "coop_solo_eval.json"),
                  "--eval-command", "evaluate", "--json", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    yardstick_file = ROOT / "benchmarks" / "results" / "coop_search_yardstick.json"
    yardstick = json.loads(yardstick_file.read_text())["team_sizes"]["1"]
    (expected,) = [p for p in yardstick["paired"] if p["b"] == "coop_maskable_ppo"]
    (pair,) = [p for p in doc["paired"] if p["a"] == "coop_maskable_ppo"]
    assert pair["b"] == "search" and pair["games"] == expected["games"]
    # The same deals from the other side: the search's wins alone are the policy's losses alone.
    assert (pair["only_a"], pair["only_b"]) == (expected["only_b"], expected["only_a"])
    assert pair["difference"] == -expected["difference"]
    assert pair["p_value"] == expected["p_value"]
    rates = {row["agent"]: row["win_rate"] for row in doc["results"]}
    assert rates["search"] == yardstick["results"][0]["win_rate"]
    assert doc["evaluation_command"] == "evaluate" and "distill" not in doc


def test_an_evaluation_without_per_game_records_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"results": [{"agent": "x", "games": 1, "wins": 0}]}))
    done = versus("--players", "1", "--eval", str(bare), "--json", str(tmp_path / "o.json"), cwd=tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == "versus_search.py: error: agent 'x' has no per-game record"
    assert not (tmp_path / "o.json").exists()
