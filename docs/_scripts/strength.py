"""The generated tables of docs/strength.md: best responses to the duel players."""

from __future__ import annotations

from common import RESULTS, ci, load_json, md_table, pct

# common has put the checkout's packages first on sys.path.
from thermopylae_agents.evaluation.stats import seed_aggregate

# The bootstrap of the seeds' aggregate is drawn with this seed, so that ``--check`` is deterministic.
BOOTSTRAP_SEED = 0


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
        return f"{pct(agg.iqm)} (one seed)"
    return f"{pct(agg.iqm)} {ci(*agg.iqm_ci95)}"


def _exploit_row(label: str, row: dict, seeds: list[int], commit: str) -> list[str]:
    """One best-response row: per-seed final win rates, pooled, the seeds' IQM, the reference, the curve."""
    finals = {run["seed"]: run["final"]["win_rate"] for run in row["runs"]}
    pooled, reference = row["pooled_final"], row["reference"]
    return (
        [label, row["frozen_side"]]
        + [pct(finals[seed]) for seed in seeds]
        + [
            f"{pct(pooled['win_rate'])} {ci(*pooled['ci95'])}",
            _seed_iqm(row),
            f"{pct(reference['win_rate'])} {ci(*reference['ci95'])}",
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
    return md_table(header, ["---", "---"] + ["---:"] * len(seeds) + ["---"] * 5, rows)


def exploitability_table() -> str:
    """Best responses to every duel player, pooled over seeds (``benchmarks/results/exploitability.json``)."""
    result = load_json(RESULTS / "exploitability.json")
    seeds = result["rows"][0]["seeds"]
    rows = [_exploit_row(f"`{row['frozen_player']}`", row, seeds, row["measured"]["commit"])
            for row in result["rows"]]
    return _exploit_table(seeds, rows)


def exploitability_exploiters_table() -> str:
    """The exploiter-trained Greek's best responses after 6 and 12 rounds
    (``exploitability_exploiters.json``), beside the shipped PPO Greek and the heuristic Greek
    (``benchmarks/results/exploitability.json``)."""
    result = load_json(RESULTS / "exploitability_exploiters.json")
    shipped = {(row["frozen_player"], row["frozen_side"]): row
               for row in load_json(RESULTS / "exploitability.json")["rows"]}
    measured = result["exploitability"]
    seeds = next(iter(measured.values()))["seeds"]
    commit = result["commit"].split()[0]
    rows = [_exploit_row(f"exploiter Greek, {key.replace('_', ' ')}", row, seeds, commit)
            for key, row in measured.items()]
    for player in ("duel_greek_maskable_ppo", "heuristic"):
        row = shipped[player, "greek"]
        rows.append(_exploit_row(f"`{player}`", row, seeds, row["measured"]["commit"]))
    return _exploit_table(seeds, rows)
