"""The header every benchmark result file opens with (policies/provenance.py)."""

from __future__ import annotations

import os
from pathlib import Path

from thermopylae_agents.policies.provenance import Measurement, git_commit, load_average

ROOT = Path(__file__).resolve().parents[3]


def test_measurement_header_names_the_command_commit_clocks_and_the_load_at_both_ends():
    measurement = Measurement()
    header = measurement.header(ROOT / "benchmarks" / "solve_small_duels.py", ["--members", "tiny"])
    assert header["command"] == "benchmarks/solve_small_duels.py --members tiny"
    assert header["commit"] == git_commit(ROOT)
    assert header["date"].endswith(" UTC")
    assert header["seconds"] >= 0 and header["cpu_seconds"] >= 0
    machine = header["machine"]
    assert machine["cpus"] == os.cpu_count() and machine["platform"]
    assert machine["load_average_start"] == measurement.load_start
    if hasattr(os, "getloadavg"):
        assert len(machine["load_average_start"]) == 3 and len(machine["load_average_end"]) == 3
    else:
        assert machine["load_average_start"] is None and load_average() is None
