"""Both learners through the whole training pipeline, same seeds: do their policies play as well?

    python benchmarks/learner_parity.py                              # both duel sides, seed 0, full budgets
    python benchmarks/learner_parity.py --targets coop --seeds 0 1   # the co-op game (learning_curves.py
                                                                     # adds the curves for it)

A developer script, not a test. For each target and seed it runs `scripts/train.py TARGET --learner L
--seed S` for both learners (the shipped config: warm start, the full budget, the final report) and keeps
each run's report rows (win rates with 95% intervals on the same deals, paired differences), its
throughput and time split. Writes ``benchmarks/results/learner_parity.json`` (``--json``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEARNERS = ("fast", "sb3")


def variant_config(target: str, variant: str, folder: Path) -> tuple[str, Path | None]:
    """``(learner, config)`` of a variant: ``fast``, ``sb3``, or ``fast:KEY=VALUE,...`` (the shipped
    config with those keys of its fast section changed, written to ``folder``)."""
    learner, _, changes = variant.partition(":")
    if learner not in LEARNERS:
        raise SystemExit(f"learner_parity.py: error: unknown learner in {variant!r}")
    if not changes:
        return learner, None
    import yaml

    from thermopylae_agents.training.config import env_ids_of, load_config

    data = load_config(target)
    for change in changes.split(","):
        key, _, value = change.partition("=")
        for env_id in env_ids_of(target):
            data[env_id]["fast"][key] = yaml.safe_load(value)
    path = folder / f"{target}-{variant.replace(':', '-').replace(',', '-').replace('=', '')}.yaml"
    path.write_text(yaml.safe_dump(data))
    return learner, path


def train(target: str, variant: str, seed: int, out: Path, threads: str) -> dict:
    """One run of ``scripts/train.py``; its ``report.json``."""
    learner, config = variant_config(target, variant, out.parent)
    command = [sys.executable, str(ROOT / "scripts" / "train.py"), target, "--learner", learner, "--seed",
               str(seed), "--threads", threads, "--run-dir", str(out), "--no-progress",
               *(["--config", str(config)] if config else [])]
    subprocess.run(command, check=True, cwd=ROOT)
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


ROW_KEYS = ("agent", "opponent", "games", "win_rate", "ci_low", "ci_high")


def summary(report: dict) -> dict:
    evaluation = report["evaluation"]
    return {
        "rows": [{key: row.get(key) for key in ROW_KEYS} for row in evaluation["rows"]],
        "paired": evaluation.get("paired", []),
        "num_timesteps": report["num_timesteps"],
        "precision": report.get("precision"),
        "threads": report.get("threads"),
        "steps_per_second": report["throughput"]["steps_per_second"],
        "time_split": report["time_split"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["duel-greek", "duel-persian"],
                        choices=["coop", "duel-greek", "duel-persian"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=list(LEARNERS),
                        help="fast, sb3, or fast:KEY=VALUE,... (the fast section's keys changed)")
    parser.add_argument("--threads", default="auto", help="--threads of every run (auto: measured per run)")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "learner_parity.json")
    args = parser.parse_args(argv)
    from thermopylae_agents.policies.provenance import Measurement

    clock = Measurement()
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for target in args.targets:
            for seed in args.seeds:
                for variant in args.variants:
                    out = Path(folder) / f"{target}-{variant.replace(':', '-')}-{seed}"
                    report = train(target, variant, seed, out, args.threads)
                    runs.append({"target": target, "learner": variant, "seed": seed, **summary(report)})
    doc = {"title": "The fast and the sb3 learner through the whole pipeline, same targets and seeds",
           **clock.header(__file__, argv),
           "config": {"targets": args.targets, "seeds": args.seeds, "variants": args.variants,
                      "threads": args.threads},
           "runs": runs}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
