"""How the engines and PPO training share a busy machine: each thread setting alone and beside busy loops.

    python benchmarks/load_benchmark.py            # minutes; writes benchmarks/results/load_benchmark.json
    python benchmarks/load_benchmark.py --seconds 1 --only coop_vector --json /tmp/look.json
    python benchmarks/load_benchmark.py --rounds 3 --settings default serial old   # the docs' table

A developer script, not a test. Each row is one workload under one thread setting, in a fresh process
(the thread runtimes read their settings once, when they load), run first with nothing else of ours on the
machine ("alone") and then beside ``--busy`` (default 2) processes that spin in a Python loop: the load of
other seeds or jobs sharing the cores. The workloads:

* ``coop_vector``: ``gymnasium.make_vec("thermopylae/Coop-v0", 8192)``, random legal actions (drawn
  outside the timer), env steps/s of ``step``;
* ``duel_vector``: ``gymnasium.make_vec("thermopylae/DuelGreek-v0", 8192)`` (the heuristic Persians),
  likewise;
* ``coop_single``: ``gymnasium.make("thermopylae/Coop-v0")``, recorded random legal actions replayed under
  one timer;
* ``ppo``: ``learn()`` of the default co-op training config (agents/thermopylae_agents/configs/coop.yaml,
  built as ``scripts/train.py coop`` builds it, no warm start) for ``--rollouts`` rollouts, steps/s;
* ``ppo_native``: ``thermopylae ppo-native`` (the torch-only PPO on ``CoopVectorEnv``) for ``--rollouts``
  rollouts of its defaults, no evaluation, its end-to-end steps/s.

The settings (environment variables of the row's process; the caller's thread variables are removed):

* ``default``: nothing set: what ``thermopylae_env.threads`` chooses (passive OpenMP waiting, kernel
  threads from the free cores);
* ``serial``: ``THERMOPYLAE_NUM_THREADS=1``;
* ``old``: the behaviour before ``thermopylae_env.threads``, reproduced by running the code of
  ``--old-commit`` (default: where this branch left ``main``; its ``thermopylae_env``, ``agents`` and
  ``seeds`` extracted once to a temporary folder, its kernels compiled there before the first row): numba's
  threads on every CPU, GNU OpenMP's default waiting (it spins before it sleeps) unless the duel kernel
  was imported, and torch's thread count reset to every CPU when numba's pool started. Environment
  variables alone do not reproduce the last;
* ``every_cpu``: passive waiting and kernel threads on every CPU (``THERMOPYLAE_NUM_THREADS`` = the CPU
  count): what ``default`` does while the load average still lags behind a load that just started
  (vector engines only);
* ``workqueue``: ``every_cpu`` with numba's ``workqueue`` threading layer instead of ``omp`` (vector
  engines only).

The single env has no threads of its own: its rows run ``default`` and ``serial`` only. ``--settings``
picks some of the settings.

``--rounds N`` runs every (workload, setting, alone/busy) row N times, interleaved: within one workload and
one of alone/busy (the busy loops stay up for the whole block), round 1 runs each setting once, then round
2 each again, and so on, each round in a rotated order, so that a change of the machine's load falls on
every setting alike. The table reports the median of the rounds.

The JSON records every round's row (the setting, the round, the threads the kernels chose, the load
average before and after), the medians and the machine (CPU count, git commit, the load averages at the
start and the end); ``docs/_scripts/make_docs.py`` renders it in docs/speed.md.
"""

from __future__ import annotations

import argparse
import importlib
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
N = 8192
WORKLOADS = ("coop_vector", "duel_vector", "coop_single", "ppo", "ppo_native")
VECTOR = ("coop_vector", "duel_vector")
THREAD_VARIABLES = ("THERMOPYLAE_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER",
                    "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME",
                    "OPENBLAS_NUM_THREADS",
                    "MKL_NUM_THREADS")


def settings(cpus: int) -> dict[str, dict[str, str]]:
    return {
        "default": {},
        "serial": {"THERMOPYLAE_NUM_THREADS": "1"},
        "old": {},  # the code of --old-commit, run as it was
        "every_cpu": {"THERMOPYLAE_NUM_THREADS": str(cpus)},
        "workqueue": {"THERMOPYLAE_NUM_THREADS": str(cpus), "NUMBA_THREADING_LAYER": "workqueue"},
    }


# ------------------------------------------------------------------------------------------ one row (child)


def _legal_random(masks, rng):  # noqa: ANN001, ANN202
    import numpy as np

    return (rng.random(masks.shape, dtype=np.float32) * masks).argmax(axis=1)


def run_vector(env_id: str, seconds: float) -> dict:
    import gymnasium as gym
    import numpy as np

    env = gym.make_vec(env_id, num_envs=N)
    rng = np.random.default_rng(0)
    _, infos = env.reset(seed=0)
    for _ in range(3):  # warm-up: the compiled kernels load on first use
        _, _, _, _, infos = env.step(_legal_random(infos["action_mask"], rng))
    spent = 0.0
    steps = 0
    while spent < seconds:
        actions = _legal_random(infos["action_mask"], rng)
        t0 = time.perf_counter()
        _, _, _, _, infos = env.step(actions)
        spent += time.perf_counter() - t0
        steps += 1
    return {"steps": steps * N, "steps_per_s": steps * N / spent}


def run_single(seconds: float) -> dict:
    import gymnasium as gym
    import numpy as np

    env = gym.make("thermopylae/Coop-v0")
    rng = np.random.default_rng(0)
    count = int(seconds * 150_000)
    actions = []
    _, info = env.reset(seed=0)
    for _ in range(count):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        actions.append(action)
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            _, info = env.reset()
    step, reset = env.step, env.reset
    reset(seed=0)
    t0 = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = step(action)
        if terminated or truncated:
            reset()
    return {"steps": count, "steps_per_s": count / (time.perf_counter() - t0)}


def run_ppo(rollouts: int) -> dict:
    from sb3_contrib.common.maskable.utils import get_action_masks

    from thermopylae_agents.training.config import Config, resolve_config
    from thermopylae_agents.training.envs import build_vec_env
    from thermopylae_agents.training.ppo import build_model
    from thermopylae_agents.training.runs import setup_torch
    from thermopylae_env import COOP_ID

    data = resolve_config("coop")
    hp = Config(data)[COOP_ID]
    algo, n = data["run"]["algo"], int(hp["n_envs"])
    setup_torch(0)
    env = build_vec_env(COOP_ID, hp.plain("env_kwargs", {}), n, 0, str(hp.get("vec")))
    env.reset()
    env.step(get_action_masks(env).argmax(1))  # warm-up: the compiled kernels load on first use
    env.seed(0)
    model = build_model(algo, env, hp, 0, None, "cpu")
    steps = rollouts * n * int(hp["n_steps"])
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, **({"use_masking": True} if algo == "maskable_ppo" else {}))
    wall = time.perf_counter() - t0
    env.close()
    return {"steps": int(model.num_timesteps), "steps_per_s": model.num_timesteps / wall}


def run_ppo_native(rollouts: int) -> dict:
    import tempfile

    try:  # the command's entry point and its arguments' defaults
        from thermopylae_agents.cli.ppo_native import main
        from thermopylae_agents.training.ppo_native import Args
    except ImportError:  # the code of --old-commit: one module, by the name it had there
        old = importlib.import_module("thermopylae_agents.ppo_native")
        Args, main = old.Args, old.main

    defaults = Args()
    steps = rollouts * defaults.num_envs * defaults.num_steps
    with tempfile.TemporaryDirectory() as run_dir:
        summary = main(["--total-timesteps", str(steps), "--eval-games", "0",
                                   "--run-dir", run_dir])
    return {"steps": steps, "steps_per_s": summary["steps_per_s"]}


def child(workload: str, seconds: float, rollouts: int) -> dict:
    try:
        from thermopylae_env import threads
    except ImportError:  # the code of --old-commit (which made the settings when it was imported)
        threads = None
        import thermopylae_env  # noqa: F401
    else:  # as an entry point makes them: before the workload loads torch or runs a parallel kernel
        threads.configure_environment()

    if workload == "coop_vector":
        result = run_vector("thermopylae/Coop-v0", seconds)
    elif workload == "duel_vector":
        result = run_vector("thermopylae/DuelGreek-v0", seconds)
    elif workload == "coop_single":
        result = run_single(seconds)
    elif workload == "ppo":
        result = run_ppo(rollouts)
    else:
        result = run_ppo_native(rollouts)
    import numba

    result["kernel_threads"] = threads.free_threads() if threads else numba.get_num_threads()
    try:
        result["numba_layer"] = numba.threading_layer()
    except ValueError:  # no parallel kernel ran
        result["numba_layer"] = None
    result["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
    if "torch" in sys.modules:
        result["torch_threads"] = sys.modules["torch"].get_num_threads()
    return result


# ---------------------------------------------------------------------------------------- the table (parent)


def _row(workload: str, setting: str, env_vars: dict[str, str], args: argparse.Namespace,
         root: Path = ROOT) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(env_vars)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "agents"), env.get("PYTHONPATH", "")])
    before = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", workload, "--seconds", str(args.seconds),
             "--rollouts", str(args.rollouts)],
            env=env, capture_output=True, text=True, timeout=args.row_timeout, check=False)
        if out.returncode:
            result = {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
        else:
            result = json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        result = {"error": f"over {args.row_timeout} s"}
    return {"workload": workload, "setting": setting, "env": env_vars, **result,
            "load_before": round(before, 2), "load_after": round(os.getloadavg()[0], 2),
            "row_seconds": round(time.perf_counter() - t0, 1)}


def _busy(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def _git(*argv: str) -> str:
    try:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def old_tree(commit: str, args: argparse.Namespace) -> Path:
    """``thermopylae_env``, ``agents`` and ``seeds`` (the card data) of ``commit`` in a temporary folder
    (kept between runs), with their kernels compiled (a row that compiled would time the compiler)."""
    folder = Path(tempfile.gettempdir()) / f"thermopylae_load_benchmark_{commit[:12]}"
    if not (folder / "seeds").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit, "thermopylae_env", "agents", "seeds"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    warm = argparse.Namespace(**{**vars(args), "seconds": 0.01, "row_timeout": 600.0})
    for workload in ("coop_vector", "duel_vector"):
        row = _row(workload, "old", {}, warm, folder)
        if "error" in row:
            raise RuntimeError(f"the code of {commit} does not run: {row['error']}")
    return folder


def medians(rows: list[dict]) -> list[dict]:
    """Per (workload, setting, alone/busy): the median steps/s of its rounds that ran, with each round's."""
    keys = list(dict.fromkeys((r["workload"], r["setting"], r["where"]) for r in rows))
    out = []
    for workload, setting, where in keys:
        mine = [r for r in rows if (r["workload"], r["setting"], r["where"]) == (workload, setting, where)]
        ok = [r for r in mine if "steps_per_s" in r]
        entry = {"workload": workload, "setting": setting, "where": where, "rounds": len(mine),
                 "steps_per_s_rounds": [r.get("steps_per_s") for r in mine],
                 "kernel_threads": sorted({r["kernel_threads"] for r in ok}),
                 "load_before": [r["load_before"] for r in mine]}
        if ok:
            entry["steps_per_s"] = statistics.median(r["steps_per_s"] for r in ok)
        errors = [r["error"] for r in mine if "error" in r]
        if errors:
            entry["errors"] = errors
        out.append(entry)
    return out


def markdown(report: dict) -> str:
    rows = report.get("medians") or report["rows"]
    lines = [f"Machine: {report['machine']['cpus']} CPUs, commit {report['machine']['commit'][:7]} (old: "
             f"{report['machine']['old_commit'][:7]}), "
             f"{report['machine']['busy']} busy loops beside the second column. Steps/s (threads the "
             "kernels chose; load average before the row).", "",
             "| workload | setting | alone | beside busy loops |", "|---|---|---:|---:|"]
    for workload in report["workloads"]:
        for setting in report["settings"]:
            cells = []
            for where in ("alone", "busy"):
                row = next((r for r in rows if r["workload"] == workload and r["setting"] == setting
                            and r["where"] == where), None)
                if row is None:
                    cells.append("")
                elif "steps_per_s" not in row:
                    cells.append(f"error: {row.get('error') or row['errors'][0]}")
                else:
                    threads, before = row["kernel_threads"], row["load_before"]
                    threads = ",".join(map(str, threads)) if isinstance(threads, list) else threads
                    before = ", ".join(map(str, before)) if isinstance(before, list) else before
                    cells.append(f"{row['steps_per_s']:,.0f} ({threads}; {before})")
            if any(cells):
                lines.append(f"| {workload} | {setting} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=1.5, help="timed seconds per engine row")
    parser.add_argument("--rollouts", type=int, default=2, help="PPO rollouts per PPO row")
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the second column")
    parser.add_argument("--only", nargs="*", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--settings", nargs="*", choices=list(settings(1)), default=list(settings(1)),
                        help="thread settings to run (default: all)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of every row, interleaved; the table reports their median")
    parser.add_argument("--row-timeout", type=float, default=90.0, help="seconds before a row is given up")
    parser.add_argument("--old-commit", default=_git("merge-base", "HEAD", "main") or "HEAD",
                        help="the code of the 'old' rows (default: where this branch left main)")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "load_benchmark.json")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.seconds, args.rollouts)))
        return 0
    if args.rounds < 1:
        parser.error(f"--rounds must be a positive integer, got {args.rounds}")
    cpus = len(os.sched_getaffinity(0))
    table = {name: value for name, value in settings(cpus).items() if name in args.settings}
    load_start = [round(x, 2) for x in os.getloadavg()]
    rows = []
    started = time.perf_counter()
    old_commit = _git("rev-parse", args.old_commit)
    if not old_commit:
        parser.error(f"--old-commit {args.old_commit}: not a commit of this repository")
    old_root = old_tree(old_commit, args) if "old" in table else ROOT
    if "old" in table:
        print(f"old: {old_commit[:12]} in {old_root} ({time.perf_counter() - started:.0f} s)", flush=True)
    for workload in args.only:
        names = [s for s in table if workload in VECTOR or s in ("default", "serial")
                 or (s == "old" and workload != "coop_single")]
        for where in ("alone", "busy"):
            procs = _busy(args.busy) if where == "busy" else []
            try:
                for round_ in range(args.rounds):
                    shift = round_ % len(names)
                    for name in names[shift:] + names[:shift]:
                        row = _row(workload, name, table[name], args, old_root if name == "old" else ROOT)
                        row["where"] = where
                        row["round"] = round_
                        rows.append(row)
                        speed = f"{row['steps_per_s']:,.0f}" if "steps_per_s" in row else row["error"]
                        print(f"{workload:12} {where:5} {name:10} round {round_} {speed:>12} steps/s  "
                              f"threads {row.get('kernel_threads')}  load {row['load_before']}", flush=True)
            finally:
                _stop(procs)
    report = {
        "machine": {"cpus": cpus, "nproc": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "commit": _git("rev-parse", "HEAD"),
                    "old_commit": old_commit, "busy": args.busy,
                    "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
                    "load_average_start": load_start,
                    "load_average_end": [round(x, 2) for x in os.getloadavg()]},
        "arguments": {"seconds": args.seconds, "rollouts": args.rollouts, "num_envs": N,
                      "rounds": args.rounds},
        "settings": table, "workloads": args.only, "medians": medians(rows), "rows": rows,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    text = markdown(report)
    print(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
