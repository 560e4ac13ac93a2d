"""The generated tables of docs/training.md: RL Zoo and the fast learner (speed, curves, parity, main job)."""

from __future__ import annotations

import json

from common import RESULTS, ci, count_text, load_json, load_range, md_table, paired_result, pct, signed_ci


def rlzoo_coop_table() -> str:
    """rl_zoo3's plain PPO with the shipped file (right after its warm start, and trained), the heuristic
    and random on the same deals, and the trained policy paired with the heuristic and with its warm start
    (``benchmarks/results/rlzoo_coop.json``)."""
    result = load_json(RESULTS / "rlzoo_coop.json")
    illegal = result["illegal_choice_rate"]
    rows = [
        [f"`{name}`", f"{entry['wins']:,} / {entry['games']:,}", pct(entry["win_rate"]),
         ci(*entry["ci95"]), pct(illegal[name]) if name in illegal else "-"]
        for name, entry in result["agents"].items()
    ]
    text = (
        f"`{result['env_id']}` with `{json.dumps(result['env_kwargs'])}`, {result['timesteps']:,} PPO steps "
        f"after the warm start, {result['train_seconds'] / 60:.0f} minutes of `rl_zoo3.train` in all (seed "
        f"{result['seed']}, commit {result['commit']}); illegal choices: how often the policy's choice was "
        f"masked out (and replaced).\n\n"
    )
    table = md_table(["player", "wins", "win rate", "95% interval", "illegal choices"],
                   ["---", "---:", "---:", "---", "---:"], rows)
    trained = "rl_zoo3 PPO"
    pairs = []
    for other in ("heuristic", "rl_zoo3 PPO, warm start only"):
        pair = paired_result(result, trained, other)
        pairs.append([f"`{trained}` - `{other}`", f"{100 * pair['difference']:+.2f}",
                      signed_ci(*pair["ci95"]), f"{pair['p_value']:.3g}"])
    paired = md_table(["paired on the same deals", "difference (points)", "95% interval", "McNemar p"],
                    ["---", "---:", "---", "---:"], pairs)
    return text + table + "\n" + paired


LEARNER_GAMES = (("coop", "co-op"), ("duel_greek", "duel, Greek"), ("duel_persian", "duel, Persian"),
                 ("selfplay", "self-play, Greek"), ("coop_busy2", "co-op, 2 busy processes beside"))


LEARNER_NAMES = {"sb3": "sb3 (sb3-contrib's loop)", "fast": "fast", "fast-sb3-recipe": "fast, sb3's recipe",
                 "ppo-native": "ppo-native (CleanRL style)", "sb3@1": "sb3 on 1 torch thread",
                 "fast@1": "fast on 1 torch thread",
                 "fast:n_epochs=1": "fast, 1 epoch"}


def _recipe(run: dict) -> str:
    recipe = run["recipe"]
    return (f"{recipe['n_envs']} x {recipe['n_steps']}, {recipe['n_epochs']} epoch"
            f"{'s' if recipe['n_epochs'] != 1 else ''}, {recipe['precision']}")


def _machine(doc: dict) -> str:
    machine = doc["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    return (f"{doc['date']}, commit {doc['commit']}, {machine['cpus']} CPUs, "
            f"{_threads(doc['config'].get('torch_threads', 1))}, load average {load_range(loads)}"
            + (f", {doc['config']['busy_processes']} spinning processes beside"
               if doc["config"].get("busy_processes") else ""))


def learner_speed_table() -> str:
    """``benchmarks/results/ppo_speed_*.json``: every learner's median steps/s beside sb3's, per game."""
    rows, notes = [], []
    for name, label in LEARNER_GAMES:
        path = RESULTS / f"ppo_speed_{name}.json"
        if not path.is_file():
            continue
        doc = load_json(path)
        medians, runs = doc["medians"], doc["runs"]
        base = medians["sb3"]["steps_per_s"]
        all_peaks = doc["matmul_peak_gflops"]  # by torch threads
        for learner, row in medians.items():
            run = next(r for r in runs if r["learner"] == learner)
            work = doc["flops_per_step"][learner]["lean" if learner.startswith("fast") else "dense"]
            achieved = work * row["steps_per_s"] / 1e9
            share = achieved / all_peaks[str(row["threads"])][row["precision"]]
            rows.append([label, LEARNER_NAMES.get(learner, learner), _recipe(run),
                         count_text(row["steps_per_s"]), f"{row['steps_per_s'] / base:.2f}x",
                         count_text(row["cpu_steps_per_s"]),
                         f"{work / 1e3:,.0f} k", f"{achieved:.1f} ({share:.0%})"])
        config = doc["config"]
        peaks = "; ".join(f"{peak['float32']:.0f} float32, {peak['bfloat16']:.0f} bfloat16 on {threads}"
                          for threads, peak in sorted(all_peaks.items()))
        notes.append(f"{label}: {_machine(doc)}; {config['repeats']} repeats of {config['rollouts']} "
                     f"rollouts; matrix-product peak (GFLOP/s, by torch threads) {peaks}")
    table = md_table(["game", "learner", "games x steps, epochs, precision", "steps/s", "vs sb3",
                    "steps per CPU s", "FLOP per step", "GFLOP/s (of peak)"],
                   ["---", "---", "---", "---:", "---:", "---:", "---:", "---:"], rows)
    return table + "\n" + "".join(f"* {note}\n" for note in notes)


def learning_curves_table() -> str:
    """``benchmarks/results/learning_curves.json``: each learner's report win rate and time per seed."""
    doc = load_json(RESULTS / "learning_curves.json")
    target = doc["config"]["target"]
    rows = []
    for run in doc["runs"]:
        report = run["report"]
        reached = run["seconds_to_target"]
        rows.append([str(run["seed"]), LEARNER_NAMES.get(run["learner"], run["learner"]), _recipe(run),
                     f"{run['train_seconds']:,.0f}",
                     f"{pct(report['win_rate'])} {ci(report['ci_low'], report['ci_high'])}",
                     "not reached" if reached is None else f"{reached:,.0f}"])
    table = md_table(["seed", "learner", "games x steps, epochs, precision", "training seconds",
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
    doc = load_json(RESULTS / "learner_parity.json")
    rows = []
    for run in doc["runs"]:
        for row in run["rows"]:
            if row["agent"] != "ppo" or row.get("opponent", "heuristic") != "heuristic":
                continue
            against = f" against the {row['opponent']}" if row.get("opponent") else ""
            rows.append([run["target"], str(run["seed"]), _variant(run["learner"]),
                         f"{row['games']:,} games{against}",
                         f"{pct(row['win_rate'])} {ci(row['ci_low'], row['ci_high'])}",
                         count_text(run["steps_per_second"])])
    machine = doc["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    return md_table(["target", "seed", "learner", "report", "trained policy's win rate", "env steps/s"],
                  ["---", "---:", "---", "---", "---:", "---:"], rows) + (
        f"\n{doc['date']}, commit {doc['commit']}, {machine['cpus']} CPUs, torch threads "
        f"{doc['config']['threads']}, load average {load_range(loads)}: the steps/s say how busy the "
        "machine was, not what a learner can do (that is the table above); the JSON's note says how its "
        "two runs were joined.\n")


def main_job_table() -> str:
    """``benchmarks/results/main_job.json``: the main job's times from a fresh clone and its report."""
    doc = load_json(RESULTS / "main_job.json")
    split, throughput = doc["time_split"], doc["throughput"]
    rows = [
        ["setup (`scripts/setup.sh`: a new `.venv`, torch 2.13.0 CPU, the package and its extras)",
         f"{doc['setup_seconds']:,.0f} s"],
        ["after setup, in all (`scripts/train.py coop`)", f"{doc['after_setup_seconds']:,.0f} s"],
        ["warm start (expert games and cloning)", f"{split['warm_start_seconds']:,.0f} s"],
        [f"PPO, {doc['learner']} learner ({doc['precision']}, {_threads(doc['threads']['threads'])})",
         f"{split['ppo_seconds']:,.0f} s ({count_text(throughput['steps_per_second'])} env steps/s)"],
        ["evaluation: the clone's games, the periodic evaluations, the final report",
         f"{split['clone_evaluation_seconds']:,.0f} + {split['periodic_evaluation_seconds']:,.0f} + "
         f"{split['report_seconds']:,.0f} s"],
    ]
    for agent, row in doc["report_rows"].items():
        rows.append([f"report: {agent} on {row['games']:,} deals",
                     f"{pct(row['win_rate'])} {ci(row['ci_low'], row['ci_high'])}"])
    machine = doc["machine"]
    loads = [*machine["load_average_start"][:1], *machine["load_average_end"][:1]]
    return md_table(["stage", "measured"], ["---", "---:"], rows) + (
        f"\n{doc['date']}, commit {doc['commit']}, {machine['cpus']} CPUs, load average "
        f"{load_range(loads)} (start, end).\n")


def _threads(count: int) -> str:
    return f"{count} torch thread" + ("" if count == 1 else "s")
