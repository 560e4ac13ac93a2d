"""The generated tables of docs/cluster.md: an RLlib PPO iteration's phases, measured and projected."""

from __future__ import annotations

from common import RESULTS, count_text, load_json, md_table


def rllib_measured_table() -> str:
    """Each phase of an RLlib PPO iteration, one and two env runners (``rllib_scaling.json``)."""
    measured = load_json(RESULTS / "rllib_scaling.json")["measured"]
    names = {
        "coop_native": "co-op, native vector engine",
        "coop_sync": "co-op, `SyncVectorEnv` of single envs",
        "duel_self_play": "duel self-play",
        "duel_greek_vs_heuristic": "duel Greek vs heuristic",
    }
    rows = []
    for key, label in names.items():
        one, two = measured[key]["1"], measured[key]["2"]
        learn = count_text(two["learn_steps_per_s"]) if "learn_steps_per_s" in two else "-"
        rows.append(
            [
                label,
                count_text(one["batch"]),
                count_text(one["sample_steps_per_s"]),
                count_text(two["sample_steps_per_s"]),
                learn,
                count_text(two["bytes_per_step"]),
            ]
        )
    return md_table(
        ["case", "batch", "sampled steps/s, 1 runner", "2 runners", "learner steps/s", "bytes/step"],
        ["---", "---:", "---:", "---:", "---:", "---:"],
        rows,
    )


def rllib_projection_table() -> str:
    """The projected throughput with more env runners (``benchmarks/results/rllib_scaling.json``)."""
    projection = load_json(RESULTS / "rllib_scaling.json")["projection"]
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
                    count_text(row["steps_per_s"]),
                    f"{60 * row['wall_hours']:.1f} min for {count_text(block['total_timesteps'])} steps",
                    f"{row['limit']} ({100 * row['learner_share']:.0f}% learner)",
                ]
            )
    return md_table(
        ["case", "workers", "steps/s", "time", "limit"], ["---", "---:", "---:", "---", "---"], rows
    )
