"""Rewrite the generated tables of README.md and docs/ from the committed result files.

A generated table sits between two markers in a Markdown page:

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

and everything between them is replaced by the table that ``NAME`` builds from the JSON files of
``benchmarks/results/`` and ``agents/thermopylae_agents/policies/``. The numbers in those tables are therefore
never typed by hand: rerun a measurement, commit its JSON, then run

    python benchmarks/make_docs.py            # rewrite every generated table
    python benchmarks/make_docs.py --check    # exit 1, naming each table that is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
POLICIES = ROOT / "agents" / "thermopylae_agents" / "policies"
sys.path[:0] = [str(ROOT), str(ROOT / "agents")]

from thermopylae_agents.evaluation.stats import seed_aggregate  # noqa: E402

# The bootstrap of the seeds' aggregate is drawn with this seed, so that ``--check`` is deterministic.
BOOTSTRAP_SEED = 0

MARKER = re.compile(
    r"(?P<start><!-- generated: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(?P<end><!-- end generated -->)",
    re.DOTALL,
)


def _load(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _pct(rate: float) -> str:
    return f"{100 * rate:.2f}%"


def _interval(low: float, high: float) -> str:
    return f"[{100 * low:.2f}, {100 * high:.2f}]"


def _signed_interval(low: float, high: float) -> str:
    return f"[{100 * low:+.2f}, {100 * high:+.2f}]"


def _count(value: float) -> str:
    return f"{round(value):,}"


def _p(value: float) -> str:
    return "0" if value == 0 else f"{value:.3g}"


def _table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _rows_by_name(result: dict) -> dict[str, dict]:
    return {row["name"]: row for row in result["rows"]}


def _benchmark_rows(path: Path) -> str:
    result = _load(path)
    rows = [
        [
            f"`{row['name']}`",
            row["what"].replace("|", "\\|"),
            _count(row["steps_per_s"]),
            _count(row["cpu_steps_per_s"]),
        ]
        for row in result["rows"]
    ]
    return _table(
        ["row", "what", "steps/s (wall)", "steps/s (CPU time)"], ["---", "---", "---:", "---:"], rows
    )


def speed_table() -> str:
    """Every row of the last full ``benchmarks/benchmark.py`` run (``engine_speed.json``), then when
    and where it ran and its same-run ratios against the peers."""
    result = _load(RESULTS / "engine_speed.json")
    rows = _rows_by_name(result)
    machine = result["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    when = (f"{result['date']}, commit {result['commit']}, " if "date" in result else "")
    ratios = []
    for ours, peer in (("single make", "peer rlcard leduc"), ("native 8192 numba", "peer pgx leduc 8192"),
                       ("duel engine 8192 parallel", "peer pgx leduc 8192")):
        if ours in rows and peer in rows:
            ratios.append(f"`{ours}` / `{peer}` {rows[ours]['steps_per_s'] / rows[peer]['steps_per_s']:.2f}x")
    line = (f"\nMeasured {when}{machine['cpus']} CPUs, load average {_load_range(loads)} (start, end). "
            f"Same-run ratios: {', '.join(ratios)}.\n" if ratios else "")
    return _benchmark_rows(RESULTS / "engine_speed.json") + line


def duel_speed_table() -> str:
    """Every row of the last ``benchmark.py --duel-only --duel-ppo`` run (``duel_results.json``)."""
    return _benchmark_rows(RESULTS / "duel_results.json")


def speed_single_table() -> str:
    """The single-env rows and RLCard's Leduc of the last ``--single-only`` round."""
    return _benchmark_rows(RESULTS / "engine_speed_single.json")


def _speed(value: float, ratio: bool) -> str:
    return f"{value:.2f}x" if ratio else _count(value)


def _load_range(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"


def restructure_speed_table() -> str:
    """Old and new checkout in alternating rounds (``benchmarks/compare_commits.py``,
    ``restructure_speed.json``): each row's median per checkout and the ratio new / old."""
    result = _load(RESULTS / "restructure_speed.json")
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
        + f"; 1-minute load average {_load_range(loads)} around the runs (each run's in the JSON). "
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
    return text + _table(header, ["---", "---", "---:", "---:", "---:", "---:"], rows)


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
    result = _load(RESULTS / "load_benchmark.json")
    machine, arguments = result["machine"], result["arguments"]
    rows = result["rows"]
    rounds = arguments.get("rounds", 1)
    start, end = machine.get("load_average_start"), machine.get("load_average_end")
    load = f"load average {start[0]:.1f} at the start and {end[0]:.1f} at the end, " if start and end else ""
    text = (
        f"Machine: {machine['cpus']} CPUs, commit {machine['commit'][:7]}"
        + (f" (old: {machine['old_commit'][:7]})" if any(r.get("setting") == "old" for r in rows) else "")
        + ", "
        + f"{load}{_load_range([r['load_before'] for r in rows])} before the rows. {rounds} round(s) per "
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
        return f"{_count(median)} ({threads}; {before}{note})", median

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
    return text + _table(header, ["---", "---", "---:", "---:", "---:"], table)


def _paired(result: dict, a: str, b: str) -> dict:
    for pair in result["paired"]:
        if pair["a"] == a and pair["b"] == b:
            return pair
        if pair["a"] == b and pair["b"] == a:
            low, high = pair["ci95"]
            return {**pair, "difference": -pair["difference"], "ci95": [-high, -low]}
    raise KeyError(f"no paired comparison of {a} and {b}")


def _team_rows(players: int, result: dict, policy: str) -> list[list[str]]:
    """One row per agent of a paired co-op evaluation, with the policy's paired difference to it."""
    rows = []
    for entry in result["results"]:
        agent = entry["agent"]
        versus = ""
        if agent != policy:
            pair = _paired(result, policy, agent)
            versus = (
                f"{100 * pair['difference']:+.2f} points {_signed_interval(*pair['ci95'])}, "
                f"p = {_p(pair['p_value'])}"
            )
        rows.append(
            [
                str(players),
                f"`{agent}`",
                f"{entry['games']:,}",
                _pct(entry["win_rate"]),
                _interval(*entry["ci95"]),
                f"{entry['mean_turns']:.1f}",
                versus,
            ]
        )
    return rows


def _team_table(files: dict[int, str]) -> str:
    """The rows of each team size's file of ``benchmarks/results/``; ``coop_{N}p_maskable_ppo`` is the policy
    of ``N`` players, ``coop_maskable_ppo`` the solo one, whose table has no team column."""
    rows = []
    for players, name in files.items():
        policy = "coop_maskable_ppo" if players == 1 else f"coop_{players}p_maskable_ppo"
        rows += _team_rows(players, _load(RESULTS / name), policy)
    header = ["team", "player", "games", "win rate", "95% interval", "mean turns", "policy - player, paired"]
    align = ["---", "---", "---:", "---:", "---", "---:", "---"]
    if set(files) == {1}:
        return _table(header[1:], align[1:], [row[1:] for row in rows])
    return _table(header, align, rows)


def coop_solo_table() -> str:
    """Random, the heuristic and the shipped solo policy on the same deals (``coop_solo_eval.json``)."""
    return _team_table({1: "coop_solo_eval.json"})


def coop_team_sizes_table() -> str:
    """Random, the heuristic and each team-size policy on the same deals (``coop_{N}p_eval.json``)."""
    return _team_table({players: f"coop_{players}p_eval.json" for players in (2, 3, 4)})


def coop_search_table() -> str:
    """The search expert, the team policy and the heuristic on the first 40 deals of 2 and 4 players."""
    return _team_table({players: f"coop_{players}p_search_40.json" for players in (2, 4)})


def duel_baselines_table() -> str:
    """The built-in duel players against each other (``thermopylae duel-table``, ``duel_table.json``)."""
    result = _load(RESULTS / "duel_table.json")
    rows = [
        [
            f"`{row['greek']}`",
            f"`{row['persian']}`",
            f"{row['games']:,}",
            _pct(row["greek_win_rate"]),
            _interval(*row["greek_win_rate_ci95"]),
            f"{row['mean_turns']:.1f}",
        ]
        for row in result["results"]
    ]
    return _table(
        ["Greek", "Persian", "games", "Greek wins", "95% interval", "mean turns"],
        ["---", "---", "---:", "---:", "---", "---:"],
        rows,
    )


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


def _crossplay_players(result: dict) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
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


def duel_crossplay_table() -> str:
    """Greek win rates of every shipped Greek against every shipped Persian (``policies/duel_eval.json``)."""
    greeks, persians, cells = _crossplay_players(_load(POLICIES / "duel_eval.json"))
    rows = []
    for greek in greeks:
        row = [f"`{greek}`"]
        for persian in persians:
            cell = cells[greek, persian]
            row.append(f"{_pct(cell['win_rate'])} {_interval(*cell['ci95'])}")
        rows.append(row)
    return _table(["Greek \\ Persian"] + [f"`{p}`" for p in persians], ["---"] * (len(persians) + 1), rows)


def _curve(row: dict) -> str:
    runs = row["runs"]
    points = []
    for index, point in enumerate(runs[0]["curve"]):
        mean = sum(run["curve"][index]["win_rate"] for run in runs) / len(runs)
        points.append(f"{round(point['timesteps'] / 1000)}k: {100 * mean:.1f}")
    return " → ".join(points)


def _seed_iqm(row: dict) -> str:
    """IQM of the seeds' final win rates with its stratified bootstrap 95% interval, computed here from the
    per-seed results (a fixed bootstrap seed)."""
    agg = seed_aggregate([run["final"]["win_rate"] for run in row["runs"]], seed=BOOTSTRAP_SEED)
    if agg.iqm_ci95 is None:
        return f"{_pct(agg.iqm)} (one seed)"
    return f"{_pct(agg.iqm)} {_interval(*agg.iqm_ci95)}"


def _exploit_row(label: str, row: dict, seeds: list[int], commit: str) -> list[str]:
    """One best-response row: per-seed final win rates, pooled, the seeds' IQM, the reference, the curve."""
    finals = {run["seed"]: run["final"]["win_rate"] for run in row["runs"]}
    pooled, reference = row["pooled_final"], row["reference"]
    return (
        [label, row["frozen_side"]]
        + [_pct(finals[seed]) for seed in seeds]
        + [
            f"{_pct(pooled['win_rate'])} {_interval(*pooled['ci95'])}",
            _seed_iqm(row),
            f"{_pct(reference['win_rate'])} {_interval(*reference['ci95'])}",
            _curve(row),
            commit,
        ]
    )


def _exploit_table(seeds: list[int], rows: list[list[str]]) -> str:
    header = (
        ["frozen player", "side"]
        + [f"BR seed {seed}" for seed in seeds]
        + ["BR pooled [95%]", "BR IQM of seeds [95% bootstrap]", "other side's heuristic vs it [95%]",
           "BR curve, mean of seeds (%)", "commit"]
    )
    return _table(header, ["---", "---"] + ["---:"] * len(seeds) + ["---"] * 5, rows)


def exploitability_table() -> str:
    """Best responses to every duel player, pooled over seeds (``benchmarks/results/exploitability.json``)."""
    result = _load(RESULTS / "exploitability.json")
    seeds = result["rows"][0]["seeds"]
    rows = [_exploit_row(f"`{row['frozen_player']}`", row, seeds, row["measured"]["commit"])
            for row in result["rows"]]
    return _exploit_table(seeds, rows)


def exploitability_exploiters_table() -> str:
    """The exploiter-trained Greek's best responses after 6 and 12 rounds
    (``exploitability_exploiters.json``), beside the shipped PPO Greek and the heuristic Greek
    (``benchmarks/results/exploitability.json``)."""
    result = _load(RESULTS / "exploitability_exploiters.json")
    shipped = {(row["frozen_player"], row["frozen_side"]): row
               for row in _load(RESULTS / "exploitability.json")["rows"]}
    measured = result["exploitability"]
    seeds = next(iter(measured.values()))["seeds"]
    commit = result["commit"].split()[0]
    rows = [_exploit_row(f"exploiter Greek, {key.replace('_', ' ')}", row, seeds, commit)
            for key, row in measured.items()]
    for player in ("duel_greek_maskable_ppo", "heuristic"):
        row = shipped[player, "greek"]
        rows.append(_exploit_row(f"`{player}`", row, seeds, row["measured"]["commit"]))
    return _exploit_table(seeds, rows)


def duel_vec_eval_table() -> str:
    """Each retrained duel file against the one it replaced, on the same deals (``duel_vec_eval.json``)."""
    result = _load(POLICIES / "duel_vec_eval.json")
    rows = []
    for side in ("greek", "persian"):
        block = result[side]
        for name, player in block["players"].items():
            rows.append([side, name, str(block["games"]), _pct(player["win_rate"])])
    return _table(
        ["side", "player", "games", "win rate against the other side's heuristic"],
        ["---", "---", "---:", "---:"],
        rows,
    )


def rllib_measured_table() -> str:
    """Each phase of an RLlib PPO iteration, one and two env runners (``rllib_scaling.json``)."""
    measured = _load(RESULTS / "rllib_scaling.json")["measured"]
    names = {
        "coop_native": "co-op, native vector engine",
        "coop_sync": "co-op, `SyncVectorEnv` of single envs",
        "duel_self_play": "duel self-play",
        "duel_greek_vs_heuristic": "duel Greek vs heuristic",
    }
    rows = []
    for key, label in names.items():
        one, two = measured[key]["1"], measured[key]["2"]
        learn = _count(two["learn_steps_per_s"]) if "learn_steps_per_s" in two else "-"
        rows.append(
            [
                label,
                _count(one["batch"]),
                _count(one["sample_steps_per_s"]),
                _count(two["sample_steps_per_s"]),
                learn,
                _count(two["bytes_per_step"]),
            ]
        )
    return _table(
        ["case", "batch", "sampled steps/s, 1 runner", "2 runners", "learner steps/s", "bytes/step"],
        ["---", "---:", "---:", "---:", "---:", "---:"],
        rows,
    )


def rllib_projection_table() -> str:
    """The projected throughput with more env runners (``benchmarks/results/rllib_scaling.json``)."""
    projection = _load(RESULTS / "rllib_scaling.json")["projection"]
    rows = []
    for key, label in (
        ("coop_native", "co-op"),
        ("duel_self_play", "duel self-play"),
        ("duel_greek_vs_heuristic", "duel Greek vs heuristic"),
    ):
        block = projection[key]
        for row in block["rows"]:
            rows.append(
                [
                    label,
                    str(row["workers"]),
                    _count(row["steps_per_s"]),
                    f"{60 * row['wall_hours']:.1f} min for {_count(block['total_timesteps'])} steps",
                    f"{row['limit']} ({100 * row['learner_share']:.0f}% learner)",
                ]
            )
    return _table(
        ["case", "workers", "steps/s", "time", "limit"], ["---", "---:", "---:", "---", "---"], rows
    )


def _deck(counts: list[int]) -> str:
    """A reduced deck as forces and kinds, e.g. ``10, 40, S`` (S strategy card, D discard card)."""
    names = ["10", "20", "30", "40", "50", "S1", "S2", "S3", "D"]
    return ", ".join(name for name, n in zip(names, counts, strict=True) for _ in range(n))


def duel_small_games_table() -> str:
    """Each reduced duel, its tree and its solution (``benchmarks/results/duel_small_games.json``)."""
    result = _load(RESULTS / "duel_small_games.json")
    rows = []
    for member in result["members"]:
        config, tree, solver = member["config"], member["tree"], member["solver"]
        low, high = member["game_value_bounds"]
        rows.append([
            f"`{config['name']}`", _deck(config["greek"]), _deck(config["persian"]),
            f"{config['start_hand']} / {config['hand_limit']} / {config['start_tokens']}",
            _count(tree["nodes"]),
            f"{_count(tree['infosets']['greek'])} / {_count(tree['infosets']['persian'])}",
            _count(solver["iterations"]), f"{member['equilibrium']['nash_conv']:.1e}",
            f"[{low:+.4f}, {high:+.4f}]", f"{member['seconds']:.0f}",
        ])
    header = ["duel", "Greek deck", "Persian deck", "hand / limit / tokens", "tree nodes",
              "infosets G / P", "CFR+ iterations", "NashConv", "game value (Greek) in", "seconds"]
    return _table(header, ["---"] * 4 + ["---:"] * 6, rows)


def duel_small_players_table() -> str:
    """The exact exploitability of the built-in players on each reduced duel (``duel_small_games.json``)."""
    result = _load(RESULTS / "duel_small_games.json")
    rows = []
    for member in result["members"]:
        for name, report in member["players"].items():
            low, high = report["exploitability_bounds"]
            rows.append([f"`{member['config']['name']}`", name.replace("_", " "),
                         f"{report['return_against_best_response']:+.4f}",
                         f"[{round(low, 4) + 0.0:.4f}, {round(high, 4) + 0.0:.4f}]",
                         f"{report['return_against_equilibrium']:+.4f}"])
        for name, profile in member["profiles"].items():
            rows.append([f"`{member['config']['name']}`", f"both {name.replace('_', ' ')} (NashConv)", "",
                         f"{profile['nash_conv']:.4f}", ""])
    header = ["duel", "player", "its return against a best response", "exploitability in",
              "its return against the equilibrium"]
    return _table(header, ["---", "---", "---:", "---:", "---:"], rows)


def search_speed_table() -> str:
    """The co-op search's Python and compiled engines on the same positions, same run
    (``benchmarks/results/search_speed.json``)."""
    result = _load(RESULTS / "search_speed.json")
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
    return text + _table(header, ["---", "---:", "---", "---:", "---:", "---:", "---:"], rows)


def _effort_rows(result: dict, team: bool) -> list[list[str]]:
    """One row per setting of a ``search_effort.py join`` file, paired with its reference setting."""
    rows = []
    for row in result["settings"]:
        pair = row["paired_with_reference"]
        same = row["setting"] == result["reference"]
        rows.append([*([str(result["players"])] if team else []), f"`{row['setting']}`",
                     f"{row['wins']:,} / {row['games']:,}", _pct(row["win_rate"]),
                     _interval(*row["ci95"]), f"{row['cpu_s_per_game']:.2f}",
                     f"{1000 * row['cpu_s_per_move']:.1f}",
                     "(the default)" if same else f"{100 * pair['difference']:+.2f}",
                     "" if same else _signed_interval(*pair["ci95"]),
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
    result = _load(RESULTS / "search_effort.json")
    machine = result["machine"]
    text = (
        f"{result['games']:,} solo deals (seeds {result['deal_seeds'][0]}..{result['deal_seeds'][1]}), every "
        f"setting on every deal, on {machine['cpus']} cores;{_effort_plays(result)} joined by "
        f"`{result['command']}`.\n\n"
    )
    align = ["---", "---:", "---:", "---", "---:", "---:", "---:", "---", "---:"]
    return text + _table(_EFFORT_HEADER, align, _effort_rows(result, team=False))


def search_effort_teams_table() -> str:
    """The same for teams of 2 to 4 (``benchmarks/results/search_effort_{N}p.json``): the default search with
    heuristic and with policy rollouts on the same deals."""
    rows, notes = [], []
    for players in (2, 3, 4):
        path = RESULTS / f"search_effort_{players}p.json"
        if not path.exists():
            continue
        result = _load(path)
        rows += _effort_rows(result, team=True)
        notes.append(f"{players} players: {result['games']:,} deals (seeds {result['deal_seeds'][0]}.."
                     f"{result['deal_seeds'][1]});{_effort_plays(result)} joined by `{result['command']}`.")
    text = "".join(f"* {note}\n" for note in notes) + "\n"
    return text + _table(["team", *_EFFORT_HEADER],
                         ["---:", "---", "---:", "---:", "---", "---:", "---:", "---:", "---", "---:"], rows)


def _unique_plays(plays: dict[str, list[dict]]) -> list[dict]:
    """Each ``play`` process once (a process that played several settings wrote its header to each)."""
    seen: dict[tuple[str, str], dict] = {}
    for headers in plays.values():
        for header in headers:
            seen.setdefault((header["date"], header["command"]), header)
    return list(seen.values())


def rlzoo_coop_table() -> str:
    """rl_zoo3's plain PPO with the shipped file (right after its warm start, and trained), the heuristic
    and random on the same deals, and the trained policy paired with the heuristic and with its warm start
    (``benchmarks/results/rlzoo_coop.json``)."""
    result = _load(RESULTS / "rlzoo_coop.json")
    illegal = result["illegal_choice_rate"]
    rows = [
        [f"`{name}`", f"{entry['wins']:,} / {entry['games']:,}", _pct(entry["win_rate"]),
         _interval(*entry["ci95"]), _pct(illegal[name]) if name in illegal else "-"]
        for name, entry in result["agents"].items()
    ]
    text = (
        f"`{result['env_id']}` with `{json.dumps(result['env_kwargs'])}`, {result['timesteps']:,} PPO steps "
        f"after the warm start, {result['train_seconds'] / 60:.0f} minutes of `rl_zoo3.train` in all (seed "
        f"{result['seed']}, commit {result['commit']}); illegal choices: how often the policy's choice was "
        f"masked out (and replaced).\n\n"
    )
    table = _table(["player", "wins", "win rate", "95% interval", "illegal choices"],
                   ["---", "---:", "---:", "---", "---:"], rows)
    trained = "rl_zoo3 PPO"
    pairs = []
    for other in ("heuristic", "rl_zoo3 PPO, warm start only"):
        pair = _paired(result, trained, other)
        pairs.append([f"`{trained}` - `{other}`", f"{100 * pair['difference']:+.2f}",
                      _signed_interval(*pair["ci95"]), f"{pair['p_value']:.3g}"])
    paired = _table(["paired on the same deals", "difference (points)", "95% interval", "McNemar p"],
                    ["---", "---:", "---", "---:"], pairs)
    return text + table + "\n" + paired


def coop_search_yardstick_table() -> str:
    """The search expert with random, the heuristic and each team size's policy on the same deals
    (``benchmarks/results/coop_search_yardstick.json``, joined by ``benchmarks/search_yardstick.py``)."""
    result = _load(RESULTS / "coop_search_yardstick.json")
    rows = []
    for players, size in sorted(result["team_sizes"].items(), key=lambda item: int(item[0])):
        rows += _team_rows(int(players), size, "search")
    header = ["team", "player", "games", "win rate", "95% interval", "mean turns", "search - player, paired"]
    return _table(header, ["---", "---", "---:", "---:", "---", "---:", "---"], rows)


def versus_search_table() -> str:
    """A distilled policy and its start policy paired with the default search on the yardstick's deals, and
    the distill run's rounds (``benchmarks/results/expert_iteration_versus_search.json``, written by
    ``benchmarks/versus_search.py``)."""
    result = _load(RESULTS / "expert_iteration_versus_search.json")
    distill = result["distill"]
    minutes = distill["wall_seconds"] / 60
    text = (f"{result['title']}. The distill run read the settings of `{distill['settings_file']}` "
            f"({_count(distill['dataset_decisions'])} labelled states, {minutes:.0f} min); the policies "
            f"played `{result['evaluation_command']}`, paired by `benchmarks/versus_search.py` "
            f"({result['date']}, commit {result['commit']}).\n\n")
    rounds = [[str(r["round"]), f"{r['beta']:.3g}", _count(r["decisions"]),
               f"{r['agreement_before_training']:.3f} -> {r['agreement_after_training']:.3f}",
               _pct(r["held_out_win_rate"])] for r in distill["rounds"]]
    text += _table(["round", "beta", "states labelled", "agreement with the search (before -> after)",
                    f"held-out win rate ({distill['config']['eval_games']:,} deals)"],
                   ["---:", "---:", "---:", "---", "---:"], rounds) + "\n"
    pairs = {pair["a"]: pair for pair in result["paired"]}
    rows = []
    for row in result["results"]:
        pair = pairs.get(row["agent"])
        rows.append([f"`{row['agent']}`", f"{row['wins']:,} / {row['games']:,}", _pct(row["win_rate"]),
                     _interval(*row["ci95"]),
                     "" if pair is None else f"{100 * pair['difference']:+.2f}",
                     "" if pair is None else _signed_interval(*pair["ci95"]),
                     "" if pair is None else _p(pair["p_value"])])
    header = ["player", "wins", "win rate", "95% interval", "minus the search (points)", "95% interval",
              "McNemar p"]
    return text + _table(header, ["---", "---:", "---:", "---", "---:", "---", "---:"], rows)


def _search_spec(row: dict) -> str:
    """The agent spec that plays a ``search_effort.py`` setting."""
    spec = f"search:{row['n_determinizations']},{row['rollouts']}"
    return spec + (f",rollout={row['rollout_policy']}" if row.get("rollout_policy") else "")


def strongest_players_table() -> str:
    """Per team size, the measured search setting with the highest win rate on its effort file's deals,
    as the agent spec that plays it, with its cost per move and its paired difference to the default."""
    files = [(1, RESULTS / "search_effort.json")] + [(n, RESULTS / f"search_effort_{n}p.json")
                                                     for n in (2, 3, 4)]
    rows = []
    for players, path in files:
        if not path.exists():
            continue
        result = _load(path)
        best = max(result["settings"], key=lambda row: row["win_rate"])
        pair = best["paired_with_reference"]
        same = best["setting"] == result["reference"]
        rows.append([str(players), f"`{_search_spec(best)}`", f"{best['games']:,}", _pct(best["win_rate"]),
                     _interval(*best["ci95"]), f"{1000 * best['cpu_s_per_move']:.1f}",
                     "(the default)" if same else f"{100 * pair['difference']:+.2f} "
                     f"{_signed_interval(*pair['ci95'])}, p = {_p(pair['p_value'])}",
                     f"`{path.relative_to(ROOT).as_posix()}`"])
    header = ["team", "agent spec", "deals", "win rate", "95% interval", "CPU ms/move",
              "minus the default search (points), paired", "result file"]
    return _table(header, ["---:", "---", "---:", "---:", "---", "---:", "---", "---"], rows)


def _small_duel(result: dict, name: str) -> dict:
    """The member ``name`` of ``duel_small_games.json``."""
    for member in result["members"]:
        if member["config"].get("name") == name:
            return member
    raise KeyError(f"no reduced duel named {name!r}")
def duel_small_mmd_table() -> str:
    """MMD against CFR+: iterations to each NashConv tolerance per reduced duel (``duel_small_mmd.json``)."""
    result = _load(RESULTS / "duel_small_mmd.json")
    rows = []
    for member in result["members"]:
        for label, run in (("MMD (last iterate)", member["mmd"]), ("CFR+ (average)", member["cfr_plus"])):
            reached = [("-" if n is None else _count(n)) for n in run["iterations_to_tolerance"].values()]
            rows.append([f"`{member['member']}`", label, *reached, f"{run['final_nash_conv']:.1e}",
                         _count(run["iterations"]), f"{run['seconds']:.0f}"])
    tolerances = list(result["members"][0]["mmd"]["iterations_to_tolerance"])
    header = ["duel", "method", *(f"iterations to {t}" for t in tolerances), "final NashConv", "iterations",
              "seconds"]
    return _table(header, ["---", "---"] + ["---:"] * (len(tolerances) + 3), rows)


def duel_small_trained_br_table() -> str:
    """Trained against exact best responses to the heuristic Greek (``duel_small_trained_br.json``)."""
    result = _load(RESULTS / "duel_small_trained_br.json")
    rows = []
    for member in result["members"]:
        exact = member["exact_best_response"]["persian_win_rate"]
        for run in member["trained_best_responses"]:
            curve = ", ".join(f"{_count(p['timesteps'])}: {p['win_rate']:.3f}" for p in run["curve"])
            low, high = run["final"]["ci95"]
            rows.append([f"`{member['member']}`", f"{exact:.3f}", str(run["seed"]),
                         f"{run['final']['win_rate']:.3f} [{low:.3f}, {high:.3f}]", curve])
    header = ["duel", "exact best response wins", "seed", "trained best response wins (95% CI)",
              "learning curve (steps: win rate)"]
    return _table(header, ["---", "---:", "---:", "---:", "---"], rows)


def _team_search_cell() -> str:
    """The headline's search-versus-policy cell of the team sizes (``coop_search_yardstick.json``)."""
    sizes = _load(RESULTS / "coop_search_yardstick.json")["team_sizes"]
    parts = []
    for players in ("2", "3", "4"):
        size = sizes[players]
        policy = f"coop_{players}p_maskable_ppo"
        rates = {entry["agent"]: entry for entry in size["results"]}
        pair = _paired(size, "search", policy)
        parts.append(f"{_pct(rates['search']['win_rate'])} vs {_pct(rates[policy]['win_rate'])}, paired "
                     f"{100 * pair['difference']:+.2f} {_signed_interval(*pair['ci95'])}")
    return " / ".join(parts) + f" points, {sizes['2']['results'][0]['games']:,} deals each"


LEARNER_GAMES = (("coop", "co-op"), ("duel_greek", "duel, Greek"), ("duel_persian", "duel, Persian"),
                 ("selfplay", "self-play, Greek"))
LEARNER_NAMES = {"sb3": "sb3 (sb3-contrib's loop)", "fast": "fast", "fast-sb3-recipe": "fast, sb3's recipe",
                 "ppo-native": "ppo-native (CleanRL style)", "sb3@1": "sb3 on 1 torch thread",
                 "fast:n_epochs=1": "fast, 1 epoch"}


def _recipe(run: dict) -> str:
    recipe = run["recipe"]
    return (f"{recipe['n_envs']} x {recipe['n_steps']}, {recipe['n_epochs']} epoch"
            f"{'s' if recipe['n_epochs'] != 1 else ''}, {recipe['precision']}")


def _machine(doc: dict) -> str:
    machine = doc["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    return (f"{doc['date']}, commit {doc['commit']}, {machine['cpus']} CPUs, "
            f"{doc['config'].get('torch_threads', 1)} torch threads, load average {_load_range(loads)}")


def learner_speed_table() -> str:
    """``benchmarks/results/ppo_speed_*.json``: every learner's median steps/s beside sb3's, per game."""
    rows, notes = [], []
    for name, label in LEARNER_GAMES:
        path = RESULTS / f"ppo_speed_{name}.json"
        if not path.is_file():
            continue
        doc = _load(path)
        medians, runs = doc["medians"], doc["runs"]
        base = medians["sb3"]["steps_per_s"]
        all_peaks = doc["matmul_peak_gflops"]  # by torch threads
        for learner, row in medians.items():
            run = next(r for r in runs if r["learner"] == learner)
            work = doc["flops_per_step"][learner]["lean" if learner.startswith("fast") else "dense"]
            achieved = work * row["steps_per_s"] / 1e9
            share = achieved / all_peaks[str(row["threads"])][row["precision"]]
            rows.append([label, LEARNER_NAMES.get(learner, learner), _recipe(run), _count(row["steps_per_s"]),
                         f"{row['steps_per_s'] / base:.2f}x", _count(row["cpu_steps_per_s"]),
                         f"{work / 1e3:,.0f} k", f"{achieved:.1f} ({share:.0%})"])
        config = doc["config"]
        peaks = "; ".join(f"{peak['float32']:.0f} float32, {peak['bfloat16']:.0f} bfloat16 on {threads}"
                          for threads, peak in sorted(all_peaks.items()))
        notes.append(f"{label}: {_machine(doc)}; {config['repeats']} repeats of {config['rollouts']} "
                     f"rollouts; matrix-product peak (GFLOP/s, by torch threads) {peaks}")
    table = _table(["game", "learner", "games x steps, epochs, precision", "steps/s", "vs sb3",
                    "steps per CPU s", "FLOP per step", "GFLOP/s (of peak)"],
                   ["---", "---", "---", "---:", "---:", "---:", "---:", "---:"], rows)
    return table + "\n" + "".join(f"* {note}\n" for note in notes)


def learning_curves_table() -> str:
    """``benchmarks/results/learning_curves.json``: each learner's report win rate and time per seed."""
    doc = _load(RESULTS / "learning_curves.json")
    target = doc["config"]["target"]
    rows = []
    for run in doc["runs"]:
        report = run["report"]
        reached = run["seconds_to_target"]
        rows.append([str(run["seed"]), LEARNER_NAMES.get(run["learner"], run["learner"]), _recipe(run),
                     f"{run['train_seconds']:,.0f}",
                     f"{_pct(report['win_rate'])} {_interval(report['ci_low'], report['ci_high'])}",
                     "not reached" if reached is None else f"{reached:,.0f}"])
    table = _table(["seed", "learner", "games x steps, epochs, precision", "training seconds",
                    f"win rate on {doc['runs'][0]['report']['games']:,} report deals",
                    f"seconds to {target:.0%} on the curve"],
                   ["---:", "---", "---", "---:", "---:", "---:"], rows)
    config = doc["config"]
    return table + (f"\n{_machine(doc)}; {config['steps']:,} steps per learner; curve points every "
                    f"{config['eval_every']:,} steps on {config['eval_games']:,} deals.\n")


def _variant(name: str) -> str:
    """``fast:n_envs=1024,n_steps=16,n_epochs=1`` as ``fast, 1024 x 16, 1 epoch``."""
    learner, _, changes = name.partition(":")
    if not changes:
        return LEARNER_NAMES.get(learner, learner)
    keys = dict(change.split("=") for change in changes.split(","))
    epochs = keys.get("n_epochs", "")
    shape = f"{keys['n_envs']} x {keys['n_steps']}" if "n_envs" in keys else ""
    return ", ".join(part for part in (learner, shape, f"{epochs} epoch{'s' if epochs != '1' else ''}"
                                       if epochs else "") if part)


def learner_parity_table() -> str:
    """``benchmarks/results/learner_parity.json``: each learner's trained policy in the pipeline's report."""
    doc = _load(RESULTS / "learner_parity.json")
    rows = []
    for run in doc["runs"]:
        for row in run["rows"]:
            if row["agent"] != "ppo" or row.get("opponent", "heuristic") != "heuristic":
                continue
            against = f" against the {row['opponent']}" if row.get("opponent") else ""
            rows.append([run["target"], str(run["seed"]), _variant(run["learner"]),
                         f"{row['games']:,} games{against}",
                         f"{_pct(row['win_rate'])} {_interval(row['ci_low'], row['ci_high'])}",
                         _count(run["steps_per_second"])])
    machine = doc["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    return _table(["target", "seed", "learner", "report", "trained policy's win rate", "env steps/s"],
                  ["---", "---:", "---", "---", "---:", "---:"], rows) + (
        f"\n{doc['date']}, commit {doc['commit']}, {machine['cpus']} CPUs, torch threads "
        f"{doc['config']['threads']}, load average {_load_range(loads)}: the steps/s say how busy the "
        "machine was, not what a learner can do (that is the table above); the JSON's note says how its "
        "two runs were joined.\n")


def main_job_table() -> str:
    """``benchmarks/results/main_job.json``: the main job's times from a fresh clone and its report."""
    doc = _load(RESULTS / "main_job.json")
    split, throughput = doc["time_split"], doc["throughput"]
    rows = [
        ["setup (`scripts/setup.sh`: a new `.venv`, torch 2.13.0 CPU, the package and its extras)",
         f"{doc['setup_seconds']:,.0f} s"],
        ["after setup, in all (`scripts/train.py coop`)", f"{doc['after_setup_seconds']:,.0f} s"],
        ["warm start (expert games and cloning)", f"{split['warm_start_seconds']:,.0f} s"],
        [f"PPO, {doc['learner']} learner ({doc['precision']}, {doc['threads']['threads']} torch threads)",
         f"{split['ppo_seconds']:,.0f} s ({_count(throughput['steps_per_second'])} env steps/s)"],
        ["evaluation: the clone's games, the periodic evaluations, the final report",
         f"{split['clone_evaluation_seconds']:,.0f} + {split['periodic_evaluation_seconds']:,.0f} + "
         f"{split['report_seconds']:,.0f} s"],
    ]
    for agent, row in doc["report_rows"].items():
        rows.append([f"report: {agent} on {row['games']:,} deals",
                     f"{_pct(row['win_rate'])} {_interval(row['ci_low'], row['ci_high'])}"])
    machine = doc["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    return _table(["stage", "measured"], ["---", "---:"], rows) + (
        f"\n{doc['date']}, commit {doc['commit']}, {machine['cpus']} CPUs, load average "
        f"{_load_range(loads)} (start, end).\n")


def _learner_speed_cell() -> str:
    doc = _load(RESULTS / "ppo_speed_coop.json")
    medians = doc["medians"]
    fast, sb3 = medians["fast"]["steps_per_s"], medians["sb3"]["steps_per_s"]
    return (f"{_count(fast)} vs {_count(sb3)} env steps/s ({fast / sb3:.1f}x), {doc['date'][:10]}, "
            f"{doc['machine']['cpus']} CPUs")


def headline_table() -> str:
    """The README's headline: one row per result, each linking the page with its method and command."""
    coop = _load(RESULTS / "coop_bound_agents_eval.json")
    rates = {entry["agent"]: entry for entry in coop["results"]}
    ppo, heuristic = rates["coop_maskable_ppo"], rates["heuristic"]
    pair = _paired(coop, "coop_maskable_ppo", "heuristic")
    bound = _load(RESULTS / "coop_bound.json")["bound"]
    _, _, cells = _crossplay_players(_load(POLICIES / "duel_eval.json"))
    learned = cells["heuristic", "duel_persian_maskable_ppo"]
    baseline = cells["heuristic", "heuristic"]
    exploit = {
        (row["frozen_player"], row["frozen_side"]): row["pooled_final"]
        for row in _load(RESULTS / "exploitability.json")["rows"]
    }
    speed = _rows_by_name(_load(RESULTS / "engine_speed.json"))
    yardstick = _load(RESULTS / "coop_search_yardstick.json")["team_sizes"]["1"]
    by_agent = {entry["agent"]: entry for entry in yardstick["results"]}
    search, search_ppo = by_agent["search"], by_agent["coop_maskable_ppo"]
    search_pair = _paired(yardstick, "search", "coop_maskable_ppo")
    search_speed = _load(RESULTS / "search_speed.json")["speed"][0]
    zoo = _load(RESULTS / "rlzoo_coop.json")
    zoo_pair = _paired(zoo, "rl_zoo3 PPO", "heuristic")
    zoo_ppo, zoo_heuristic = zoo["agents"]["rl_zoo3 PPO"], zoo["agents"]["heuristic"]
    medium = _small_duel(_load(RESULTS / "duel_small_games.json"), "medium")
    greek = medium["players"]["heuristic_greek"]["exploitability_bounds"]
    rows = [
        [
            "[Co-op solo, shipped MaskablePPO vs heuristic](docs/results.md#co-op-solo)",
            f"{_pct(ppo['win_rate'])} vs {_pct(heuristic['win_rate'])} on the same {ppo['games']:,} deals, "
            f"paired {100 * pair['difference']:+.2f} points {_signed_interval(*pair['ci95'])}",
        ],
        [
            "[Co-op solo, the search expert vs the shipped MaskablePPO](docs/results.md"
            "#the-search-expert-on-thousands-of-deals)",
            f"{_pct(search['win_rate'])} vs {_pct(search_ppo['win_rate'])} on the same {search['games']:,} "
            f"deals, paired {100 * search_pair['difference']:+.2f} points "
            f"{_signed_interval(*search_pair['ci95'])}, p = {_p(search_pair['p_value'])}",
        ],
        [
            "[Co-op teams of 2 / 3 / 4, the search expert vs each team's shipped MaskablePPO](docs/results.md"
            "#the-search-expert-on-thousands-of-deals)",
            _team_search_cell(),
        ],
        [
            "[Co-op solo, rl_zoo3's plain PPO with the shipped file vs heuristic](docs/training.md"
            "#rl-baselines3-zoo)",
            f"{_pct(zoo_ppo['win_rate'])} vs {_pct(zoo_heuristic['win_rate'])} on the same "
            f"{zoo_heuristic['games']:,} deals, paired "
            f"{100 * zoo_pair['difference']:+.2f} points {_signed_interval(*zoo_pair['ci95'])}",
        ],
        [
            "[Co-op solo, deck-clairvoyant upper bound](docs/coop_bound.md)",
            f"{_pct(bound['mean'])} {_interval(bound['low'], bound['high'])} on {bound['n']:,} deals",
        ],
        [
            "[Duel, learned vs heuristic Persian, vs the heuristic Greek](docs/results.md#duel-cross-play)",
            f"{_pct(1 - learned['win_rate'])} vs {_pct(1 - baseline['win_rate'])} of {learned['games']:,}",
        ],
        [
            "[Duel: a best response's win rate against the learned / heuristic Persian](docs/strength.md)",
            f"{_pct(exploit['duel_persian_maskable_ppo', 'persian']['win_rate'])} vs "
            f"{_pct(exploit['heuristic', 'persian']['win_rate'])}",
        ],
        [
            "[Duel, the reduced duel `medium` solved exactly (CFR+): the Greek's value, the heuristic "
            "Greek's exact exploitability](docs/duel_theory.md)",
            "[{:.4f}, {:.4f}] (returns in [-1, 1]); heuristic Greek {:.3f} to {:.3f}".format(
                *medium["game_value_bounds"], *greek),
        ],
        [
            "[Co-op search, compiled vs Python rollouts, same positions, same run]"
            "(docs/speed.md#the-co-op-search-python-and-compiled-rollouts)",
            f"{search_speed['compiled_cpu_ms']:.1f} vs {search_speed['python_cpu_ms']:.1f} CPU ms per solo "
            f"move ({search_speed['speedup_cpu']:.1f}x), same moves",
        ],
        [
            "[Co-op PPO, the fast learner vs SB3 MaskablePPO, same recipe network, same run]"
            "(docs/training.md#the-fast-learner)",
            _learner_speed_cell(),
        ],
        [
            "[Single co-op env vs RLCard's Leduc hold'em, same run](docs/speed.md)",
            f"{_count(speed['single make']['steps_per_s'])} vs "
            f"{_count(speed['peer rlcard leduc']['steps_per_s'])} steps/s",
        ],
        [
            "[Co-op native vector engine vs Pgx's Leduc hold'em (JAX, CPU), 8,192 games each, same run]"
            "(docs/speed.md)",
            f"{_count(speed['native 8192 numba']['steps_per_s'])} vs "
            f"{_count(speed['peer pgx leduc 8192']['steps_per_s'])} steps/s",
        ],
        [
            "[Duel engine, both sides, vs Pgx's Leduc hold'em, 8,192 games each, same run]"
            "(docs/speed.md#duel-vector-engine)",
            f"{_count(speed['duel engine 8192 parallel']['steps_per_s'])} vs "
            f"{_count(speed['peer pgx leduc 8192']['steps_per_s'])} steps/s",
        ],
    ]
    return _table(["result (method and command behind the link)", "measured"], ["---", "---"], rows)


GENERATORS: dict[str, Callable[[], str]] = {
    "headline": headline_table,
    "speed": speed_table,
    "speed-single": speed_single_table,
    "duel-speed": duel_speed_table,
    "restructure-speed": restructure_speed_table,
    "load-benchmark": load_benchmark_table,
    "coop-solo": coop_solo_table,
    "coop-team-sizes": coop_team_sizes_table,
    "coop-search-40": coop_search_table,
    "duel-baselines": duel_baselines_table,
    "coop-bound": coop_bound_table,
    "coop-bound-search": coop_bound_search_table,
    "coop-bound-speed": coop_bound_speed_table,
    "coop-bound-first-deals": coop_bound_first_deals_table,
    "coop-bound-team-cost": coop_bound_team_cost_table,
    "duel-crossplay": duel_crossplay_table,
    "duel-vec-eval": duel_vec_eval_table,
    "exploitability": exploitability_table,
    "exploitability-exploiters": exploitability_exploiters_table,
    "rllib-measured": rllib_measured_table,
    "rllib-projection": rllib_projection_table,
    "duel-small-games": duel_small_games_table,
    "duel-small-players": duel_small_players_table,
    "search-speed": search_speed_table,
    "search-effort": search_effort_table,
    "search-effort-teams": search_effort_teams_table,
    "versus-search": versus_search_table,
    "strongest-players": strongest_players_table,
    "rlzoo-coop": rlzoo_coop_table,
    "learner-speed": learner_speed_table,
    "main-job": main_job_table,
    "learner-parity": learner_parity_table,
    "learning-curves": learning_curves_table,
    "coop-search-yardstick": coop_search_yardstick_table,
    "duel-small-mmd": duel_small_mmd_table,
    "duel-small-trained-br": duel_small_trained_br_table,
}


def pages() -> list[Path]:
    """README.md, every Markdown page of docs/ and the shipped policies' README."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), POLICIES / "README.md"]


def render(text: str, page: Path) -> tuple[str, list[str]]:
    """The page with every generated table rewritten, and the names of the tables that changed."""
    stale: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise SystemExit(f"make_docs.py: error: {page.relative_to(ROOT)} names an unknown table {name!r}")
        body = GENERATORS[name]()
        if body != match["body"]:
            stale.append(name)
        return match["start"] + body + match["end"]

    return MARKER.sub(replace, text), stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 naming each table that differs from its JSON",
    )
    parser.add_argument("--list", action="store_true", help="print the name of every table it writes; stop")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(GENERATORS))
        return 0
    stale_pages = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new, stale = render(text, page)
        if not stale:
            continue
        where = page.relative_to(ROOT).as_posix()
        stale_pages += [f"{where}: {name}" for name in stale]
        if not args.check:
            page.write_text(new, encoding="utf-8")
    if args.check and stale_pages:
        for entry in stale_pages:
            print(f"stale generated table: {entry}", file=sys.stderr)
        print("run: python benchmarks/make_docs.py", file=sys.stderr)
        return 1
    for entry in stale_pages:
        print(f"rewrote {entry}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
