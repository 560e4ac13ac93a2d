"""benchmarks/duel_greek_headroom.py run as a user runs it, on a few games: its measurements of the same deals
agree with each other, and bad counts are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "duel_greek_headroom.py"


def headroom(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_headroom_measurements_of_the_same_deals_agree(tmp_path: Path) -> None:
    out = tmp_path / "headroom.json"
    run = headroom("--games", "12", "--search-games", "12", "--determinizations", "2", "--json", str(out),
                   cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    doc = json.loads(out.read_text())
    fatal = doc["fatal_attacks"]
    rates = [fatal["greek"], doc["oracle_leonidas"], *doc["sweep"], *doc["inferred_leonidas"],
             doc["search"]["search"], doc["search"]["heuristic_same_deals"]]
    for r in rates:
        assert r["games"] == 12 and 0 <= r["wins"] <= 12 and r["win_rate"] == pytest.approx(r["wins"] / 12)
        assert r["ci95"][0] <= r["win_rate"] <= r["ci95"][1]
    assert fatal["losses_to_a_fatal_attack"] <= fatal["greek_losses"] == 12 - fatal["greek"]["wins"]
    assert sum(fatal["attacks"].values()) > 0
    # The sweep covers the shipped heuristic's settings, which play the very games of the first measurement.
    (default,) = [r for r in doc["sweep"] if (r["token_value"], r["strategy_cost"]) == (25, 80)]
    assert len(doc["sweep"]) == 12 and default["wins"] == fatal["greek"]["wins"]
    search = doc["search"]
    assert search["heuristic_same_deals"]["wins"] == fatal["greek"]["wins"]
    assert (search["search"]["wins"] - search["heuristic_same_deals"]["wins"]
            == search["deals_won_by_search_only"] - search["deals_won_by_heuristic_only"])
    assert [r["theta"] for r in doc["inferred_leonidas"]] == [0.2, 0.4, 0.6]
    assert f"wrote {out}" in " ".join(run.stdout.split())


def test_headroom_refuses_bad_counts_with_one_line(tmp_path: Path) -> None:
    for args in (["--games", "0"], ["--determinizations", "0"], ["--search-games", "-1"]):
        run = headroom(*args, cwd=tmp_path)
        assert run.returncode == 2 and "--games and --determinizations must be >= 1" in run.stderr, args
