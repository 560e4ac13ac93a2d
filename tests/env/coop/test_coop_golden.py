"""The co-op engines play exactly the games they played before the layout module and the single compiled
kernel: trajectories recorded from commit 85ea8a4 (``tests/data/coop_golden.py``) are replayed and every
digest compared. The recorded runs of the retired NumPy backend are replayed on today's kernel (the two
backends were bit-identical, and both digests are kept)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data"))
import coop_golden  # noqa: E402

GOLDEN = json.loads(coop_golden.GOLDEN.read_text())


def _game_id(case: dict) -> str:
    return f"{case['deck']}-p{case['num_players']}-s{case['seed']}"


@pytest.mark.parametrize("case", GOLDEN["single"], ids=_game_id)
def test_single_engine_replays_the_recorded_games(case):
    assert coop_golden.single_digest(case["num_players"], case["seed"], case["deck"]) == case


# Both old backends' runs of a setting replay the same code today (one kernel, backend=None) and were
# recorded with one digest (test_recorded_backends_agreed), so the NumPy backend's copies run with -m slow.
@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.slow) if c["backend"] == "numpy" else c
             for c in GOLDEN["vector"]],
    ids=lambda c: f"{c['backend']}-{c['deck']}-p{c['num_players']}-{c['mode']}-i{c['illegal_every']}")
def test_vector_env_replays_the_recorded_runs_of_both_old_backends(case):
    got = coop_golden.vector_digest(case["num_players"], None, case["mode"], case["illegal_every"],
                                    case["shaping"], case["deck"])
    assert (got["ends"], got["sha256"]) == (case["ends"], case["sha256"])


def test_recorded_backends_agreed():
    by_backend: dict = {}
    for case in GOLDEN["vector"]:
        key = (case["num_players"], case["mode"], case["illegal_every"], case["shaping"], case["deck"])
        by_backend.setdefault(key, set()).add(case["sha256"])
    assert all(len(digests) == 1 for digests in by_backend.values())


@pytest.mark.parametrize("case", GOLDEN["sb3"], ids=lambda c: f"p{c['num_players']}")
def test_sb3_adapter_replays_the_recorded_runs(case):
    pytest.importorskip("stable_baselines3")
    assert coop_golden.sb3_digest(case["num_players"]) == case


@pytest.mark.parametrize("case", GOLDEN["full"], ids=_game_id)
def test_single_engine_replays_a_full_recorded_trajectory(case):
    got = coop_golden.full_trajectory(case["num_players"], case["seed"], case["deck"])
    assert got["reason"] == case["reason"]
    assert len(got["steps"]) == len(case["steps"])
    for t, (a, b) in enumerate(zip(got["steps"], case["steps"], strict=True)):
        assert a == b, f"step {t} differs"
    obs = np.array(case["steps"][0]["obs_bits"], np.uint32).view(np.float32)
    assert obs.shape == (115,) and ((obs >= 0) & (obs <= 1)).all()
