"""benchmarks/search_effort.py run as a user runs it, on two small settings and a few deals: the games go
into per-setting files that a second run resumes, the join pairs every setting with the reference on the
same deals, and bad options are refused with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "search_effort.py"
SETTINGS = ["2x2", "4x2"]


def effort(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_play_resumes_and_join_pairs_each_setting_with_the_reference(tmp_path: Path) -> None:
    runs, out, png = tmp_path / "runs", tmp_path / "effort.json", tmp_path / "effort.png"
    first = effort("play", "--runs", str(runs), "--games", "2", "--settings", *SETTINGS, cwd=tmp_path)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    resumed = effort("play", "--runs", str(runs), "--games", "3", "--settings", SETTINGS[0], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert [g["seed"] for g in _lines(runs / "p1_2x2.jsonl")] == [0, 1, 2]  # deals 0 and 1 not replayed
    assert [g["seed"] for g in _lines(runs / "p1_4x2.jsonl")] == [0, 1]
    assert len(_lines(runs / "p1_2x2.runs.jsonl")) == 2 and len(_lines(runs / "p1_4x2.runs.jsonl")) == 1

    joined = effort("join", "--runs", str(runs), "--settings", *SETTINGS, "--reference", "4x2",
                    "--json", str(out), "--plot", str(png), cwd=tmp_path)
    assert joined.returncode == 0, joined.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert {"date", "commit", "command", "seconds", "cpu_seconds", "machine"} <= set(doc)
    assert doc["games"] == 2 and doc["deal_seeds"] == [0, 1]  # the deals every setting played
    assert [row["setting"] for row in doc["settings"]] == SETTINGS
    played = {s: {g["seed"]: g for g in _lines(runs / f"p1_{s}.jsonl")} for s in SETTINGS}
    reference_won = [played["4x2"][s]["won"] for s in (0, 1)]
    for row in doc["settings"]:
        won = [played[row["setting"]][s]["won"] for s in (0, 1)]
        assert row["per_game"]["seed"] == [0, 1] and row["per_game"]["won"] == won
        assert row["wins"] == sum(won) and row["ci95"][0] <= row["win_rate"] <= row["ci95"][1]
        moves = sum(row["per_game"]["moves"])
        assert row["cpu_s_per_move"] == pytest.approx(sum(row["per_game"]["cpu_s"]) / moves)
        pair = row["paired_with_reference"]
        assert pair["b"] == "4x2" and pair["games"] == 2
        assert pair["difference"] == pytest.approx((sum(won) - sum(reference_won)) / 2)
    assert doc["settings"][1]["paired_with_reference"]["p_value"] == 1.0  # the reference with itself
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_policy_setting_plays_with_the_teams_policy_and_is_joined_like_the_others(tmp_path: Path) -> None:
    runs, out = tmp_path / "runs", tmp_path / "effort.json"
    played = effort("play", "--runs", str(runs), "--games", "1", "--settings", "2x2+policy", "2x2",
                    cwd=tmp_path)
    assert played.returncode == 0, played.stdout[-2000:] + played.stderr[-2000:]
    joined = effort("join", "--runs", str(runs), "--settings", "2x2+policy", "2x2", "--reference", "2x2",
                    "--json", str(out), cwd=tmp_path)
    assert joined.returncode == 0, joined.stderr[-2000:]
    rows = {row["setting"]: row for row in json.loads(out.read_text())["settings"]}
    assert rows["2x2+policy"]["rollout_policy"] == "coop_maskable_ppo"
    assert rows["2x2"]["rollout_policy"] is None
    assert (rows["2x2+policy"]["n_determinizations"], rows["2x2+policy"]["rollouts"]) == (2, 2)
    assert rows["2x2+policy"]["per_game"]["won"] == [g["won"] for g in _lines(runs / "p1_2x2+policy.jsonl")]


@pytest.mark.parametrize(("args", "message"), [
    (["play", "--runs", "r", "--settings", "8y4"], "a setting is NxK"),
    (["play", "--runs", "r", "--settings", "8x4+heuristic"], "a setting is NxK"),
    (["play", "--runs", "r", "--settings", "0x4"], "a setting is NxK"),
    (["play", "--runs", "r", "--settings", "8x4", "8x4"], "names a setting twice"),
    (["play", "--runs", "r", "--games", "0"], "--games must be at least 1"),
    (["play", "--runs", "r", "--players", "5"], "--players is a team size 1..4"),
    (["join", "--runs", "r", "--json", "o.json", "--settings", "8x4"], "--reference 32x8 is not one of"),
    (["join", "--runs", "r", "--json", "o.json"], "--runs: r is not a folder"),
])
def test_bad_options_are_refused_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    run = effort(*args, cwd=tmp_path)
    assert run.returncode == 2 and message in run.stderr.strip().splitlines()[-1], run.stderr
    assert not (tmp_path / "r").exists() and not (tmp_path / "o.json").exists()
