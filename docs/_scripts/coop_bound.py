"""The generated tables of docs/coop_bound.md: the co-op game's deck-clairvoyant upper bound."""

from __future__ import annotations

import json

from common import RESULTS, ci, count_text, load_json, md_table, pct


def coop_bound_table() -> str:
    """The solo bound and each agent's paired gap to it on deals 0..999 (``coop_bound.json``)."""
    bound = load_json(RESULTS / "coop_bound.json")
    exact_gap = bound["gap_bound_minus_heuristic"]
    rows = [
        [
            "deck-clairvoyant bound `V*`",
            str(bound["bound"]["n"]),
            pct(bound["bound"]["mean"]),
            ci(bound["bound"]["low"], bound["bound"]["high"]),
            "",
        ],
        [
            "heuristic, exact win probability",
            str(bound["heuristic"]["n"]),
            pct(bound["heuristic"]["mean"]),
            ci(bound["heuristic"]["low"], bound["heuristic"]["high"]),
            f"{100 * exact_gap['mean']:.2f} {ci(exact_gap['low'], exact_gap['high'])}",
        ],
    ]
    for gap in bound["gaps"]:
        rows.append(
            [
                f"`{gap['agent']}`, played once",
                str(gap["deals"]),
                pct(gap["win_rate"]["mean"]),
                ci(gap["win_rate"]["low"], gap["win_rate"]["high"]),
                f"{100 * gap['gap']['mean']:.2f} {ci(gap['gap']['low'], gap['gap']['high'])}",
            ]
        )
    return md_table(
        ["player", "deals", "win rate", "95% interval", "bound - player, points [95%]"],
        ["---", "---:", "---:", "---", "---"],
        rows,
    )


def coop_bound_search_table() -> str:
    """Each agent's gap to the bound on deals 0..299, the deals the search expert played."""
    rows = []
    for gap in load_json(RESULTS / "coop_bound_search_gaps.json")["gaps"]:
        rows.append(
            [
                f"`{gap['agent']}`",
                str(gap["deals"]),
                pct(gap["win_rate"]["mean"]),
                ci(gap["win_rate"]["low"], gap["win_rate"]["high"]),
                f"{pct(gap['bound']['mean'])} {ci(gap['bound']['low'], gap['bound']['high'])}",
                f"{100 * gap['gap']['mean']:.2f} {ci(gap['gap']['low'], gap['gap']['high'])}",
            ]
        )
    return md_table(
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
    for row in load_json(RESULTS / "coop_bound_speed.json")["rows"]:
        old, new, final = row["old"], row["new"], row["final"]
        rows.append(
            [
                str(row["deal"]),
                count_text(old["states"]),
                f"{old['cpu_s']:.1f}",
                count_text(new["states"]),
                f"{new['cpu_s']:.1f}",
                count_text(final["states"]),
                f"{final['cpu_s']:.1f}",
                f"{row['cpu_speedup_final']:.1f}x",
                f"{row['abs_diff_old_final']:.0e}",
            ]
        )
    return md_table(
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
                    count_text(deal["bound_states"]),
                    count_text(deal["bound_seconds"]),
                ]
            )
    return md_table(
        ["deal", "bound", "heuristic (exact)", "gap", "states", "seconds (wall)"], ["---:"] * 6, rows
    )


def coop_bound_team_cost_table() -> str:
    """States and CPU seconds of the compiled kernel per team size (``coop_bound_team_cost*.json``)."""
    rows = []
    paths = sorted(RESULTS.glob("coop_bound_team_cost*.json"))
    for row in (row for path in paths for row in load_json(path)["rows"]):
        start = "whole deal" if row.get("whole_deal") else f"{row['cards_left']} cards left"
        full = row["memo_full"]
        rows.append(
            [
                str(row["players"]),
                str(row["deal"]),
                f"{start}, support {row['support']}, marker {row['marker']}",
                f"> {count_text(row['max_states'])} (memo full)" if full else count_text(row["states"]),
                f"{row['cpu_seconds']:.1f}",
                "not reached" if full else f"{row['value']:.4f}",
            ]
        )
    return md_table(
        ["players", "deal", "solved from", "memoized states", "CPU s", "value"],
        ["---:", "---:", "---", "---:", "---:", "---:"],
        rows,
    )
