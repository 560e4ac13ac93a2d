"""The generated tables of docs/speed.md: the engines' and the co-op search's speed."""

from __future__ import annotations

import statistics
from pathlib import Path

from common import (
    RESULTS,
    ci,
    count_text,
    load_json,
    load_range,
    md_table,
    pct,
    rows_by_name,
    signed_ci,
)


def _benchmark_rows(path: Path) -> str:
    result = load_json(path)
    rows = [
        [
            f"`{row['name']}`",
            row["what"].replace("|", "\\|"),
            count_text(row["steps_per_s"]),
            count_text(row["cpu_steps_per_s"]),
        ]
        for row in result["rows"]
    ]
    return md_table(
        ["row", "what", "steps/s (wall)", "steps/s (CPU time)"], ["---", "---", "---:", "---:"], rows
    )


def speed_table() -> str:
    """Every row of the last full ``benchmarks/benchmark.py`` run (``engine_speed.json``), then when
    and where it ran and its same-run ratios against the peers."""
    result = load_json(RESULTS / "engine_speed.json")
    rows = rows_by_name(result)
    machine = result["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    when = (f"{result['date']}, commit {result['commit']}, " if "date" in result else "")
    ratios = []
    for ours, peer in (("single make", "peer rlcard leduc"), ("native 8192 numba", "peer pgx leduc 8192"),
                       ("duel engine 8192 parallel", "peer pgx leduc 8192")):
        if ours in rows and peer in rows:
            ratios.append(f"`{ours}` / `{peer}` {rows[ours]['steps_per_s'] / rows[peer]['steps_per_s']:.2f}x")
    line = (f"\nMeasured {when}{machine['cpus']} CPUs, load average {load_range(loads)} (start, end). "
            f"Same-run ratios: {', '.join(ratios)}.\n" if ratios else "")
    return _benchmark_rows(RESULTS / "engine_speed.json") + line


def duel_speed_table() -> str:
    """Every row of the last ``benchmark.py --duel-only --duel-ppo`` run (``duel_results.json``)."""
    return _benchmark_rows(RESULTS / "duel_results.json")


def speed_single_table() -> str:
    """The single-env rows and RLCard's Leduc of the last ``--single-only`` round."""
    return _benchmark_rows(RESULTS / "engine_speed_single.json")


def _speed(value: float, ratio: bool) -> str:
    return f"{value:.2f}x" if ratio else count_text(value)


def restructure_speed_table() -> str:
    """Old and new checkout in alternating rounds (``benchmarks/compare_commits.py``,
    ``restructure_speed.json``): each row's median per checkout and the ratio new / old."""
    result = load_json(RESULTS / "restructure_speed.json")
    commits, config = result["commits"], result["config"]
    loads = [load[0] for run in result["runs"] for load in (run["load_before"], run["load_after"])]
    rounds = {case: max(r["round"] for r in result["runs"] if r["case"] == case) + 1
              for case in config["cases"]}
    measured = {side: ", ".join(dict.fromkeys(r.get("commit", commits[side]["commit"])[:7]
                                              for r in result["runs"] if r["side"] == side))
                for side in ("old", "new")}
    text = (
        f"Old: commit {measured['old']} (its own `{Path(commits['old']['script']).name}`); new: commit "
        f"{measured['new']} (`{commits['new']['script']}`). {result['machine']['nproc']} CPUs; "
        + (f"{min(rounds.values())} rounds per case" if len(set(rounds.values())) == 1
           else "rounds per case: " + "; ".join(f"{case}: {n}" for case, n in rounds.items()))
        + f"; 1-minute load average {load_range(loads)} around the runs (each run's in the JSON). "
        "Steps/s are medians over the rounds of each run's median; ratio rows are medians of each run's "
        "ratio.\n\n"
    )
    rows = [
        [
            case_row["case"],
            f"`{case_row['row']}`",
            _speed(case_row["old"]["wall"], case_row["ratio_row"]),
            _speed(case_row["new"]["wall"], case_row["ratio_row"]),
            f"{case_row['new_over_old']:.2f}x",
            f"{case_row['new_over_old_cpu']:.2f}x",
        ]
        for case_row in result["summary"]
    ]
    header = ["case", "row", "old (wall)", "new (wall)", "new / old (wall)", "new / old (CPU time)"]
    return text + md_table(header, ["---", "---", "---:", "---:", "---:", "---:"], rows)


LOAD_WORKLOADS = {
    "coop_vector": '`make_vec("thermopylae/Coop-v0", 8192)`',
    "duel_vector": '`make_vec("thermopylae/DuelGreek-v0", 8192)`, heuristic Persians',
    "coop_single": '`make("thermopylae/Coop-v0")` (no threads)',
    "ppo": "PPO `learn()`, default co-op config",
    "ppo_native": "`thermopylae ppo-native`",
}


def load_benchmark_table() -> str:
    """Each workload and thread setting alone and beside busy loops, median of the rounds
    (``benchmarks/load_benchmark.py``, ``load_benchmark.json``)."""
    result = load_json(RESULTS / "load_benchmark.json")
    machine, arguments = result["machine"], result["arguments"]
    rows = result["rows"]
    rounds = arguments.get("rounds", 1)
    start, end = machine.get("load_average_start"), machine.get("load_average_end")
    load = f"load average {start[0]:.1f} at the start and {end[0]:.1f} at the end, " if start and end else ""
    text = (
        f"Machine: {machine['cpus']} CPUs, commit {machine['commit'][:7]}"
        + (f" (old: {machine['old_commit'][:7]})" if any(r.get("setting") == "old" for r in rows) else "")
        + ", "
        + f"{load}{load_range([r['load_before'] for r in rows])} before the rows. {rounds} round(s) per "
        f"row, interleaved; cells: the median steps/s (the kernel threads chosen; the load average before "
        f"each round). Last column: the row's median beside {machine['busy']} busy loops over `serial`'s.\n\n"
    )

    def cell(mine: list[dict]) -> tuple[str, float | None]:
        speeds = [r["steps_per_s"] for r in mine if "steps_per_s" in r]
        if not speeds:
            return ("error: " + mine[0]["error"] if mine else ""), None
        median = statistics.median(speeds)
        threads = ",".join(str(t) for t in sorted({r["kernel_threads"] for r in mine
                                                    if "kernel_threads" in r}))
        before = ", ".join(f"{r['load_before']:.1f}" for r in mine)
        failed = sum("steps_per_s" not in r for r in mine)
        note = f"; {failed} failed" if failed else ""
        return f"{count_text(median)} ({threads}; {before}{note})", median

    table = []
    for workload in result["workloads"]:
        first = True
        busy_serial = cell([r for r in rows if (r["workload"], r["setting"], r["where"])
                            == (workload, "serial", "busy")])[1]
        for setting in result["settings"]:
            alone, _ = cell([r for r in rows if (r["workload"], r["setting"], r["where"])
                             == (workload, setting, "alone")])
            busy, busy_median = cell([r for r in rows if (r["workload"], r["setting"], r["where"])
                                      == (workload, setting, "busy")])
            if not (alone or busy):
                continue
            ratio = f"{busy_median / busy_serial:.2f}x" if busy_median and busy_serial else ""
            label = LOAD_WORKLOADS.get(workload, workload) if first else ""
            table.append([label, setting, alone, busy, ratio])
            first = False
    busy = f"beside {machine['busy']} busy loops"
    header = ["workload", "setting", "alone", busy, f"{busy}: / serial"]
    return text + md_table(header, ["---", "---", "---:", "---:", "---:"], table)


def search_speed_table() -> str:
    """The co-op search's Python and compiled engines on the same positions, same run
    (``benchmarks/results/search_speed.json``)."""
    result = load_json(RESULTS / "search_speed.json")
    search = result["search"]
    rows = [
        [
            str(row["num_players"]),
            f"{row['positions']} ({row['searched']} searched)",
            "yes" if row["same_moves"] else "no",
            f"{row['python_cpu_ms']:.1f}",
            f"{row['compiled_cpu_ms']:.1f}",
            f"{row['speedup_cpu']:.1f}x",
            f"{row['speedup_wall']:.1f}x",
        ]
        for row in result["speed"]
    ]
    load = result["speed_load"]
    text = (
        f"`{result['command']}`: {search['n_determinizations']} determinizations x {search['rollouts']} "
        f"rounds ({search['other_settings']}); load average {load['start'][0]:.1f} at the start, "
        f"{load['end'][0]:.1f} at the end, on {result['machine']['cpus']} cores.\n\n"
    )
    header = ["team", "positions", "same moves", "Python CPU ms/move", "compiled CPU ms/move",
              "speed-up (CPU)", "speed-up (wall)"]
    return text + md_table(header, ["---", "---:", "---", "---:", "---:", "---:", "---:"], rows)


def _effort_rows(result: dict, team: bool) -> list[list[str]]:
    """One row per setting of a ``search_effort.py join`` file, paired with its reference setting."""
    rows = []
    for row in result["settings"]:
        pair = row["paired_with_reference"]
        same = row["setting"] == result["reference"]
        rows.append([*([str(result["players"])] if team else []), f"`{row['setting']}`",
                     f"{row['wins']:,} / {row['games']:,}", pct(row["win_rate"]),
                     ci(*row["ci95"]), f"{row['cpu_s_per_game']:.2f}",
                     f"{1000 * row['cpu_s_per_move']:.1f}",
                     "(the default)" if same else f"{100 * pair['difference']:+.2f}",
                     "" if same else signed_ci(*pair["ci95"]),
                     "" if same else f"{pair['p_value']:.3g}"])
    return rows


def _effort_plays(result: dict) -> str:
    return "".join(f" `{play['command']}` ({play['date']}, commit {play['commit']}, load average "
                   f"{play['machine']['load_average_start'][0]:.1f} at the start, "
                   f"{play['machine']['load_average_end'][0]:.1f} at the end);"
                   for play in _unique_plays(result["plays"]))


_EFFORT_HEADER = ["setting (determinizations x rollouts)", "wins", "win rate", "95% interval", "CPU s/game",
                  "CPU ms/move", "minus the default (points)", "95% interval", "McNemar p"]


def search_effort_table() -> str:
    """The compiled co-op search at several settings on the same deals, each paired with the default
    (``benchmarks/results/search_effort.json``, written by ``benchmarks/search_effort.py``)."""
    result = load_json(RESULTS / "search_effort.json")
    machine = result["machine"]
    text = (
        f"{result['games']:,} solo deals (seeds {result['deal_seeds'][0]}..{result['deal_seeds'][1]}), every "
        f"setting on every deal, on {machine['cpus']} cores;{_effort_plays(result)} joined by "
        f"`{result['command']}`.\n\n"
    )
    align = ["---", "---:", "---:", "---", "---:", "---:", "---:", "---", "---:"]
    return text + md_table(_EFFORT_HEADER, align, _effort_rows(result, team=False))


def search_effort_teams_table() -> str:
    """The same for teams of 2 to 4 (``benchmarks/results/search_effort_{N}p.json``): the default search with
    heuristic and with policy rollouts on the same deals."""
    rows, notes = [], []
    for players in (2, 3, 4):
        path = RESULTS / f"search_effort_{players}p.json"
        if not path.exists():
            continue
        result = load_json(path)
        rows += _effort_rows(result, team=True)
        notes.append(f"{players} players: {result['games']:,} deals (seeds {result['deal_seeds'][0]}.."
                     f"{result['deal_seeds'][1]});{_effort_plays(result)} joined by `{result['command']}`.")
    text = "".join(f"* {note}\n" for note in notes) + "\n"
    return text + md_table(["team", *_EFFORT_HEADER],
                         ["---:", "---", "---:", "---:", "---", "---:", "---:", "---:", "---", "---:"], rows)


def _unique_plays(plays: dict[str, list[dict]]) -> list[dict]:
    """Each ``play`` process once (a process that played several settings wrote its header to each)."""
    seen: dict[tuple[str, str], dict] = {}
    for headers in plays.values():
        for header in headers:
            seen.setdefault((header["date"], header["command"]), header)
    return list(seen.values())
