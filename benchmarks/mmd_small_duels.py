"""Magnetic mirror descent against CFR+ on the reduced duels: exact NashConv curves and iterations to reach
each tolerance.

For each member of ``thermopylae_env.duel.config.SMALL_DUELS``: tabular MMD
(``thermopylae_agents.gametheory.mmd``, last iterate) and CFR+ (``thermopylae_agents.gametheory.cfr``,
linearly weighted average), both from the uniform profile, with the exact NashConv of the measured profile
every few iterations; the iterations (at the check resolution) and seconds each needs to reach every
tolerance of ``--tolerances``.

    .venv/bin/python benchmarks/mmd_small_duels.py                      # every member, writes the JSON
    .venv/bin/python benchmarks/mmd_small_duels.py --members tiny --out /tmp/mmd.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "agents"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from thermopylae_agents.gametheory.cfr import Evaluator, solve  # noqa: E402
from thermopylae_agents.gametheory.mmd import mmd  # noqa: E402
from thermopylae_agents.gametheory.tree import build_tree  # noqa: E402
from thermopylae_agents.policies.provenance import Measurement  # noqa: E402
from thermopylae_env.duel.config import SMALL_DUELS  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "duel_small_mmd.json"


def _reached(history: list[tuple[int, float]], tolerances: list[float]) -> dict[str, int | None]:
    """The first checked iteration at which NashConv is at most each tolerance (None: never)."""
    return {f"{tol:g}": next((i for i, conv in history if conv <= tol), None) for tol in tolerances}


def _timed(run) -> tuple[object, float]:
    started = time.perf_counter()
    result = run()
    return result, time.perf_counter() - started


def member_record(name: str, args: argparse.Namespace) -> dict:
    tree = build_tree(SMALL_DUELS[name])
    ev = Evaluator(tree)
    say = lambda method: lambda i, conv: print(f"{name} {method}: iteration {i}, NashConv {conv:.2e}",  # noqa: E731
                                               flush=True)
    low = min(args.tolerances)
    m, m_seconds = _timed(lambda: mmd(tree, args.alpha, args.eta, args.magnet_every, low, args.max_iterations,
                                      args.mmd_check_every, ev, say("MMD")))
    c, c_seconds = _timed(lambda: solve(tree, min(args.cfr_tolerances), args.max_iterations,
                                        args.cfr_check_every, ev, say("CFR+")))
    return {
        "member": name,
        "tree": tree.summary(),
        "mmd": {"alpha": args.alpha, "eta": args.eta, "magnet_every": args.magnet_every,
                "check_every": args.mmd_check_every, "iterations": m.iterations,
                "seconds": round(m_seconds, 2), "final_nash_conv": m.check.nash_conv,
                "iterations_to_tolerance": _reached(m.history, args.tolerances),
                "curve": [[i, conv] for i, conv in m.history]},
        "cfr_plus": {"check_every": args.cfr_check_every, "iterations": c.iterations,
                     "seconds": round(c_seconds, 2), "final_nash_conv": c.check.nash_conv,
                     "iterations_to_tolerance": _reached(c.history, args.tolerances),
                     "curve": [[i, conv] for i, conv in c.history]},
    }


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", nargs="*", default=list(SMALL_DUELS), choices=list(SMALL_DUELS))
    parser.add_argument("--alpha", type=float, default=0.05, help="MMD: regularisation temperature")
    parser.add_argument("--eta", type=float, default=1.0, help="MMD: step size")
    parser.add_argument("--magnet-every", type=int, default=10, help="MMD: iterations between magnet moves")
    parser.add_argument("--tolerances", type=float, nargs="+", default=[1e-2, 1e-3, 1e-4, 1e-6],
                        help="NashConv tolerances to report; MMD runs to the smallest")
    parser.add_argument("--cfr-tolerances", type=float, nargs="+", default=[1e-3],
                        help="CFR+ runs to the smallest of these (it is slow below)")
    parser.add_argument("--max-iterations", type=int, default=3000)
    parser.add_argument("--mmd-check-every", type=int, default=2)
    parser.add_argument("--cfr-check-every", type=int, default=10)
    parser.add_argument("--out", type=Path, default=OUT, help="the JSON file to write")
    args = parser.parse_args(argv)
    if min(args.tolerances + args.cfr_tolerances) <= 0 or args.max_iterations < 1:
        parser.error("tolerances must be positive and --max-iterations at least 1")
    measurement = Measurement()
    members = [member_record(name, args) for name in args.members]
    doc = {
        "title": "Magnetic mirror descent against CFR+ on the reduced duels: exact NashConv curves",
        "method": ("MMD: tabular magnetic mirror descent (Sokota et al. 2022), dilated KL steps normalised "
                   "by counterfactual reach, simultaneous updates, magnet moved to the current policy every "
                   "magnet_every iterations, NashConv of the last iterate; CFR+: alternating updates, linear "
                   "averaging, NashConv of the average; both exact (whole tree, exact best responses); "
                   "iterations_to_tolerance at the check resolution, null when not reached within the run "
                   "(CFR+ runs to the smallest --cfr-tolerances only)"),
        **measurement.header(__file__, argv),
        "members": members,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
