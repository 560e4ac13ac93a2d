"""The generated tables of docs/cluster.md: an RLlib PPO iteration's phases, measured and projected."""

from __future__ import annotations

from common import RESULTS, _count, _load, _table


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
