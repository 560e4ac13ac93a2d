"""What the page modules share: where the result files are, how a JSON file is read, how a number is
written, and the helpers more than one page uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
POLICIES = ROOT / "agents" / "thermopylae_agents" / "policies"
# The checkout's packages, not an installed copy (strength.py imports thermopylae_agents).
sys.path[:0] = [str(ROOT), str(ROOT / "agents")]


def load_json(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def pct(rate: float) -> str:
    return f"{100 * rate:.2f}%"


def ci(low: float, high: float) -> str:
    return f"[{100 * low:.2f}, {100 * high:.2f}]"


def signed_ci(low: float, high: float) -> str:
    return f"[{100 * low:+.2f}, {100 * high:+.2f}]"


def count_text(value: float) -> str:
    return f"{round(value):,}"


def p_text(value: float) -> str:
    return "0" if value == 0 else f"{value:.3g}"


def md_table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def rows_by_name(result: dict) -> dict[str, dict]:
    return {row["name"]: row for row in result["rows"]}


def load_range(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"


def paired_result(result: dict, a: str, b: str) -> dict:
    for pair in result["paired"]:
        if pair["a"] == a and pair["b"] == b:
            return pair
        if pair["a"] == b and pair["b"] == a:
            low, high = pair["ci95"]
            return {**pair, "difference": -pair["difference"], "ci95": [-high, -low]}
    raise KeyError(f"no paired comparison of {a} and {b}")


def crossplay_players(result: dict) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    greeks: list[str] = []
    persians: list[str] = []
    cells = {}
    for entry in result["results"]:
        greek, persian = entry["agent"], entry["opponent"]
        if greek not in greeks:
            greeks.append(greek)
        if persian not in persians:
            persians.append(persian)
        cells[greek, persian] = entry
    return greeks, persians, cells
