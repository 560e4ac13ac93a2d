"""The main job, timed as a new user meets it: a fresh clone, then `bash scripts/main.sh`.

    python benchmarks/main_job.py                    # clone HEAD into a temporary folder, run, time, delete
    python benchmarks/main_job.py --keep /tmp/clone  # keep the clone (its .venv and run folder) there

A developer script, not a test. It clones this repository's HEAD (committed files only) into a new folder,
runs the README's main-job command there (`bash scripts/main.sh`: setup of a new `.venv`, then
`scripts/train.py coop`) and records, from the command's own output and the run's `report.json`: the
setup's seconds, the seconds after setup (training, periodic evaluation and the final report), the run's
`time_split` and throughput, the printed report's rows, and the machine's load before and after.
Writes ``benchmarks/results/main_job.json`` (``--json``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUP_DONE = re.compile(r"\[main\] setup done in (\d+) s")
RUN_DIR = Path("runs") / "coop-maskable_ppo-seed0"


def run_main_job(clone: Path) -> dict:
    """Run ``bash scripts/main.sh`` in ``clone``; its output lines with their times, and the timings."""
    start = time.perf_counter()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(["bash", "scripts/main.sh"], cwd=clone, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as job:
        assert job.stdout is not None
        for line in job.stdout:
            lines.append((time.perf_counter() - start, line.rstrip("\n")))
            print(line, end="", flush=True)
    total = time.perf_counter() - start
    if job.returncode != 0:
        raise SystemExit(f"main_job.py: error: scripts/main.sh exited with {job.returncode}")
    setup = next((float(m[1]) for _, text in lines if (m := SETUP_DONE.search(text))), None)
    setup_at = next((at for at, text in lines if SETUP_DONE.search(text)), None)
    table_start = next((i for i, (_, text) in enumerate(lines) if text.startswith("Final report")), None)
    return {
        "total_seconds": round(total, 1),
        "setup_seconds": setup,
        "after_setup_seconds": None if setup_at is None else round(total - setup_at, 1),
        "printed_report": [text for _, text in lines[table_start:]] if table_start is not None else [],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--keep", type=Path, default=None,
                        help="clone here and keep it (default: a temporary folder, deleted at the end)")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "main_job.json")
    args = parser.parse_args(argv)
    from thermopylae_agents.policies.provenance import Measurement

    clock = Measurement()
    with tempfile.TemporaryDirectory() as temporary:
        clone = args.keep or Path(temporary) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        timings = run_main_job(clone)
        report = json.loads((clone / RUN_DIR / "report.json").read_text(encoding="utf-8"))
    rows = {row["agent"]: {key: row[key] for key in ("games", "win_rate", "ci_low", "ci_high")}
            for row in report["evaluation"]["rows"]}
    doc = {
        "title": "The main job from a fresh clone: bash scripts/main.sh",
        **clock.header(__file__, argv),
        **timings,
        "time_split": report["time_split"],
        "throughput": report["throughput"],
        "learner": report.get("learner"),
        "precision": report.get("precision"),
        "threads": report.get("threads"),
        "report_rows": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"setup {timings['setup_seconds']} s, then {timings['after_setup_seconds']} s; wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
