"""Speed of two checkouts of the project in one session: alternating rounds of the same benchmark.

Usage::

    python benchmarks/compare_commits.py --old ../old --old-script scripts/benchmark.py \\
        --case single --case native --case duel --rounds 3

Each round runs one case's benchmark command in the old checkout, then in the new one, each in a fresh
process with that checkout (and its ``agents/``) first on ``PYTHONPATH`` and the same interpreter, so that
the load of other jobs on a shared machine falls on both alike. The 1, 5 and 15 minute load averages are
recorded before and after every run. The result (``--json``, default
``benchmarks/results/restructure_speed.json``) keeps every run's rows, the median of each row over the rounds
per checkout and the ratio new / old of those medians (wall-clock and CPU-time steps per second);
``docs/_scripts/make_docs.py`` renders it.

Cases (``--repeats`` is each row's repeats inside one run, whose median the run reports):

* ``single``: ``benchmark.py --single-only`` (the single envs, the duel single envs and RLCard's Leduc),
  plus the derived row ``single make / rlcard leduc``.
* ``native``: the ``native 8192 numba`` row of a full ``benchmark.py`` run (``CoopVectorEnv(8192)``,
  random legal actions, the kernel compiled before the timer), alone: the checkout's own ``benchmark.py``
  is imported and its ``median_of`` / ``bench_vector`` called exactly as its ``main`` calls them.
* ``duel``: ``benchmark.py --duel-only`` (the duel vector engine and heuristic env, the peers).
* ``ppo``: ``benchmark.py --ppo-only --ppo-repeats 1`` (``learn()`` of the default co-op config).

``--threads N`` sets ``NUMBA_NUM_THREADS`` for both checkouts' runs: a fixed kernel thread count that the
old code and the new one's ``thermopylae_env.threads`` both take as given, so that those rows compare the
code alone; without it each checkout chooses its threads as a user's process would. ``--add`` keeps the
runs of the other cases already in ``--json`` (each run records its checkout's commit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The native row, measured as benchmark.py's full run measures it (see the module docstring).
_NATIVE_PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("benchmark_under_test", {script!r})
b = importlib.util.module_from_spec(spec)
spec.loader.exec_module(b)
b.CoopVectorEnv(2, backend="numba").reset(seed=0)
row = b.median_of({repeats}, lambda r: b.bench_vector(b.CoopVectorEnv(8192, backend="numba"), 150, r,
                                                      b._native_masks))
row.update({{"name": "native 8192 numba", "num_envs": 8192}})
with open({out!r}, "w") as f:
    json.dump({{"rows": [row]}}, f)
"""

CASES = ("single", "native", "duel", "ppo")


def _git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def describe(checkout: Path) -> dict:
    """The commit of a checkout and whether its tracked files differ from it."""
    return {"path": str(checkout), "commit": _git(checkout, "rev-parse", "HEAD"),
            "subject": _git(checkout, "log", "-1", "--format=%s")[:120],
            "modified_files": [line[3:] for line in _git(checkout, "status", "--porcelain",
                                                          "--untracked-files=no").splitlines()]}


def command_for(case: str, script: Path, repeats: int, out: Path) -> list[str]:
    """The command line of one run of ``case`` with the benchmark script ``script``."""
    if case == "native":
        return [sys.executable, "-c", _NATIVE_PROBE.format(script=str(script), repeats=repeats, out=str(out))]
    flags = {"single": ["--single-only", "--repeats", str(repeats)],
             "duel": ["--duel-only", "--repeats", str(repeats)],
             "ppo": ["--ppo-only", "--ppo-repeats", "1"]}[case]
    return [sys.executable, str(script), *flags, "--json", str(out)]


def derived_rows(case: str, rows: dict[str, dict]) -> dict[str, dict]:
    """Ratios between rows of one run that the comparison is about."""
    out = {}
    if case == "single" and "single make" in rows and "peer rlcard leduc" in rows:
        make, peer = rows["single make"], rows["peer rlcard leduc"]
        out["single make / rlcard leduc"] = {
            "steps_per_s": make["steps_per_s"] / peer["steps_per_s"],
            "cpu_steps_per_s": make["cpu_steps_per_s"] / peer["cpu_steps_per_s"], "ratio": True}
    return out


def run_once(case: str, checkout: Path, script: Path, repeats: int, timeout: float,
             threads: int | None = None) -> dict:
    """One run of a case in one checkout: its rows (name -> steps/s wall and CPU), load and time."""
    env = dict(os.environ)
    if threads is not None:
        env["NUMBA_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), str(checkout / "agents")])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        load_before = [round(x, 2) for x in os.getloadavg()]
        start = time.perf_counter()
        proc = subprocess.run(command_for(case, script, repeats, out), cwd=checkout, env=env,
                              capture_output=True, text=True, timeout=timeout)
        seconds = time.perf_counter() - start
        load_after = [round(x, 2) for x in os.getloadavg()]
        if proc.returncode != 0:
            raise RuntimeError(f"{case} in {checkout} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        result = json.loads(out.read_text(encoding="utf-8"))
    rows = {r["name"]: {"steps_per_s": r["steps_per_s"], "cpu_steps_per_s": r["cpu_steps_per_s"]}
            for r in result["rows"]}
    rows.update(derived_rows(case, rows))
    return {"commit": _git(checkout, "rev-parse", "HEAD"), "load_before": load_before,
            "load_after": load_after, "seconds": round(seconds, 1), "rows": rows}


def summarize(runs: list[dict]) -> list[dict]:
    """Per case and row: the median over the rounds of each checkout and the ratio new / old."""
    out = []
    cases = list(dict.fromkeys(r["case"] for r in runs))
    for case in cases:
        mine = [r for r in runs if r["case"] == case]
        names = list(dict.fromkeys(name for r in mine for name in r["rows"]))
        for name in names:
            per = {}
            for side in ("old", "new"):
                got = [r["rows"][name] for r in mine if r["side"] == side and name in r["rows"]]
                if got:
                    per[side] = {"wall": statistics.median(g["steps_per_s"] for g in got),
                                 "cpu": statistics.median(g["cpu_steps_per_s"] for g in got),
                                 "rounds": len(got)}
            if len(per) < 2:
                continue
            is_ratio = any(r["rows"].get(name, {}).get("ratio") for r in mine)
            out.append({"case": case, "row": name, "ratio_row": bool(is_ratio), "old": per["old"],
                        "new": per["new"], "new_over_old": per["new"]["wall"] / per["old"]["wall"],
                        "new_over_old_cpu": per["new"]["cpu"] / per["old"]["cpu"]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, type=Path, help="the old checkout")
    parser.add_argument("--old-script", default="benchmarks/benchmark.py",
                        help="its benchmark script, relative to it")
    parser.add_argument("--new", default=ROOT, type=Path, help="the new checkout (default: this one)")
    parser.add_argument("--new-script", default="benchmarks/benchmark.py")
    parser.add_argument("--case", action="append", choices=CASES, help="cases to run (repeatable)")
    parser.add_argument("--rounds", type=int, default=3, help="old/new rounds per case (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of each row inside one run")
    parser.add_argument("--threads", type=int, default=None,
                        help="set NUMBA_NUM_THREADS for the runs (both checkouts take it as a fixed "
                        "count); the cases are recorded as 'CASE, NUMBA_NUM_THREADS=N'")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one run may take")
    parser.add_argument("--json", type=Path,
                        default=ROOT / "benchmarks" / "results" / "restructure_speed.json")
    parser.add_argument("--add", action="store_true",
                        help="keep the runs of other cases already in --json (each run names its commit)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeats < 1 or (args.threads is not None and args.threads < 1):
        parser.error("--rounds, --repeats and --threads must be positive")
    kinds = args.case or ["single", "native", "duel"]
    suffix = "" if args.threads is None else f", NUMBA_NUM_THREADS={args.threads}"
    cases = [kind + suffix for kind in kinds]
    sides = {}
    for side, checkout, script in (("old", args.old, args.old_script), ("new", args.new, args.new_script)):
        checkout = checkout.resolve()
        if not (checkout / script).is_file():
            parser.error(f"no benchmark script {script} in {checkout}")
        sides[side] = (checkout, checkout / script)

    runs: list[dict] = []
    kept_cases: dict[str, str] = {}
    if args.add and args.json.is_file():
        before = json.loads(args.json.read_text(encoding="utf-8"))
        runs = [{"commit": before["commits"][r["side"]]["commit"], **r} for r in before["runs"]
                if r["case"] not in cases]
        kept_cases = {k: v for k, v in before["config"]["cases"].items() if k not in cases}
    for kind, case in zip(kinds, cases, strict=True):
        for round_ in range(args.rounds):
            for side in ("old", "new"):
                checkout, script = sides[side]
                got = run_once(kind, checkout, script, args.repeats, args.timeout, args.threads)
                runs.append({"case": case, "round": round_, "side": side, **got})
                headline = ", ".join(f"{k} {v['steps_per_s']:,.2f}" for k, v in list(got["rows"].items())[:4])
                print(f"{case} round {round_} {side}: load {got['load_before'][0]:.2f} -> "
                      f"{got['load_after'][0]:.2f}, {got['seconds']:.0f} s; {headline}", flush=True)
    summary = summarize(runs)
    commands = {}
    for kind, case in zip(kinds, cases, strict=True):
        line = command_for(kind, Path("<script>"), args.repeats, Path("<out>"))[1:]
        commands[case] = f"native 8192 numba row of benchmark.py, median of {args.repeats}" \
            if kind == "native" else " ".join(line)
    result = {
        "benchmark": "thermopylae-env speed before and after a change: alternating old/new rounds",
        "config": {
            "cases": kept_cases | commands,
            "rounds": args.rounds,
            "repeats": args.repeats,
            "order": "per case, per round: old, then new",
            "caller_thread_variables": {k: os.environ[k] for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
                                                           "THERMOPYLAE_NUM_THREADS") if k in os.environ},
        },
        "commits": {side: describe(checkout) | {"script": str(script.relative_to(checkout))}
                    for side, (checkout, script) in sides.items()},
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "runs": runs,
        "summary": summary,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for s in summary:
        print(f"  {s['case']:<7} {s['row']:<32} new/old {s['new_over_old']:.2f}x wall, "
              f"{s['new_over_old_cpu']:.2f}x cpu")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
