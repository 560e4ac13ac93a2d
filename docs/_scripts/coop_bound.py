"""The generated tables of docs/coop_bound.md: the co-op game's deck-clairvoyant upper bound."""

from __future__ import annotations

import json

from common import RESULTS, _count, _interval, _load, _pct, _table


def coop_bound_table() -> str:
    """The solo bound and each agent's paired gap to it on deals 0..999 (``coop_bound.json``)."""
    bound = _load(RESULTS / "coop_bound.json")
    exact_gap = bound["gap_bound_minus_heuristic"]
    rows = [
        [
            "deck-clairvoyant bound `V*`",
            str(bound["bound"]["n"]),
            _pct(bound["bound"]["mean"]),
            _interval(bound["bound"]["low"], bound["bound"]["high"]),
            "",
        ],
        [
            "heuristic, exact win probability",
            str(bound["heuristic"]["n"]),
            _pct(bound["heuristic"]["mean"]),
            _interval(bound["heuristic"]["low"], bound["heuristic"]["high"]),
            f"{100 * exact_gap['mean']:.2f} {_interval(exact_gap['low'], exact_gap['high'])}",
        ],
    ]
    for gap in bound["gaps"]:
        rows.append(
            [
                f"`{gap['agent']}`, played once",
                str(gap["deals"]),
                _pct(gap["win_rate"]["mean"]),
                _interval(gap["win_rate"]["low"], gap["win_rate"]["high"]),
                f"{100 * gap['gap']['mean']:.2f} {_interval(gap['gap']['low'], gap['gap']['high'])}",
            ]
        )
    return _table(
        ["player", "deals", "win rate", "95% interval", "bound - player, points [95%]"],
        ["---", "---:", "---:", "---", "---"],
        rows,
    )


def coop_bound_search_table() -> str:
    """Each agent's gap to the bound on deals 0..299, the deals the search expert played."""
    rows = []
    for gap in _load(RESULTS / "coop_bound_search_gaps.json")["gaps"]:
        rows.append(
            [
                f"`{gap['agent']}`",
                str(gap["deals"]),
                _pct(gap["win_rate"]["mean"]),
                _interval(gap["win_rate"]["low"], gap["win_rate"]["high"]),
                f"{_pct(gap['bound']['mean'])} {_interval(gap['bound']['low'], gap['bound']['high'])}",
                f"{100 * gap['gap']['mean']:.2f} {_interval(gap['gap']['low'], gap['gap']['high'])}",
            ]
        )
    return _table(
        [
            "player",
            "deals",
            "win rate",
            "95% interval",
            "bound on these deals",
            "bound - player, points [95%]",
        ],
        ["---", "---:", "---:", "---", "---", "---"],
        rows,
    )


def coop_bound_speed_table() -> str:
    """The first, second and final solo kernels on the same deals (``coop_bound_speed.json``)."""
    rows = []
    for row in _load(RESULTS / "coop_bound_speed.json")["rows"]:
        old, new, final = row["old"], row["new"], row["final"]
        rows.append(
            [
                str(row["deal"]),
                _count(old["states"]),
                f"{old['cpu_s']:.1f}",
                _count(new["states"]),
                f"{new['cpu_s']:.1f}",
                _count(final["states"]),
                f"{final['cpu_s']:.1f}",
                f"{row['cpu_speedup_final']:.1f}x",
                f"{row['abs_diff_old_final']:.0e}",
            ]
        )
    return _table(
        [
            "deal",
            "old states",
            "old CPU s",
            "new states",
            "new CPU s",
            "final states",
            "final CPU s",
            "speed-up (final)",
            "diff",
        ],
        ["---:"] * 9,
        rows,
    )


def coop_bound_first_deals_table() -> str:
    """Deals 0..5 of the first kernel, with the heuristic's exact value (``coop_bound.jsonl``)."""
    rows = []
    with (RESULTS / "coop_bound.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            deal = json.loads(line)
            rows.append(
                [
                    str(deal["deal"]),
                    f"{deal['bound']:.4f}",
                    f"{deal['heuristic']:.4f}",
                    f"{deal['bound'] - deal['heuristic']:.4f}",
                    _count(deal["bound_states"]),
                    _count(deal["bound_seconds"]),
                ]
            )
    return _table(
        ["deal", "bound", "heuristic (exact)", "gap", "states", "seconds (wall)"], ["---:"] * 6, rows
    )


def coop_bound_team_cost_table() -> str:
    """States and CPU seconds of the compiled kernel per team size (``coop_bound_team_cost*.json``)."""
    rows = []
    paths = sorted(RESULTS.glob("coop_bound_team_cost*.json"))
    for row in (row for path in paths for row in _load(path)["rows"]):
        start = "whole deal" if row.get("whole_deal") else f"{row['cards_left']} cards left"
        full = row["memo_full"]
        rows.append(
            [
                str(row["players"]),
                str(row["deal"]),
                f"{start}, support {row['support']}, marker {row['marker']}",
                f"> {_count(row['max_states'])} (memo full)" if full else _count(row["states"]),
                f"{row['cpu_seconds']:.1f}",
                "not reached" if full else f"{row['value']:.4f}",
            ]
        )
    return _table(
        ["players", "deal", "solved from", "memoized states", "CPU s", "value"],
        ["---:", "---:", "---", "---:", "---:", "---:"],
        rows,
    )
