"""Solve the reduced duels exactly and measure how exploitable the built-in players are on them.

For each member of ``thermopylae_env.duel.config.SMALL_DUELS`` (or a config read from a JSON file): the
whole extensive-form tree over the reference engine, CFR+ to the NashConv tolerance, the game value with
its bounds, and the exact exploitability (exact best responses, information sets respected) of the
uniformly random players and the heuristics of ``duel/opponents.py`` run on the small decks.

    .venv/bin/python benchmarks/solve_small_duels.py                       # every member, writes the JSON
    .venv/bin/python benchmarks/solve_small_duels.py --members tiny small  # some of them
    .venv/bin/python benchmarks/solve_small_duels.py --config my_duel.json --out /tmp/mine.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "agents"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from thermopylae_agents.gametheory.players import solve_member  # noqa: E402
from thermopylae_agents.policies.provenance import Measurement  # noqa: E402
from thermopylae_env.duel.config import SMALL_DUELS, DuelConfigError, load_duel_config  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "duel_small_games.json"


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", nargs="*", default=list(SMALL_DUELS), choices=list(SMALL_DUELS),
                        help="members of SMALL_DUELS to solve (default: all)")
    parser.add_argument("--config", action="append", default=[], help="also solve the duel in this JSON file")
    parser.add_argument("--tolerance", type=float, default=1e-3, help="stop CFR+ at this NashConv")
    parser.add_argument("--max-iterations", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=OUT, help="the JSON file to write")
    args = parser.parse_args(argv)
    if not args.tolerance > 0 or args.max_iterations < 1:
        parser.error("--tolerance must be positive and --max-iterations at least 1")
    try:
        configs = [SMALL_DUELS[name] for name in args.members] + [load_duel_config(p) for p in args.config]
    except DuelConfigError as error:
        parser.error(str(error))
    measurement = Measurement()
    members = []
    for config in configs:
        members.append(solve_member(config, args.tolerance, args.max_iterations,
                                    progress=lambda text: print(text, flush=True)))
        eq = members[-1]["equilibrium"]
        print(f"{config.name}: value in [{members[-1]['game_value_bounds'][0]:.4f}, "
              f"{members[-1]['game_value_bounds'][1]:.4f}], NashConv {eq['nash_conv']:.2e}", flush=True)
    doc = {
        "title": ("Reduced duels solved exactly: equilibria and the exact exploitability of the built-in "
                  "players"),
        "method": ("whole tree over thermopylae_env.duel.rules (thermopylae_agents.gametheory.tree), CFR+ "
                   "with alternating updates and linear averaging, exact best responses per information set "
                   "(thermopylae_agents.gametheory.cfr); values are the Greek's expected return (+1 win, -1 "
                   "loss); exploitability = game value minus the return a strategy keeps against a best "
                   "response, bounded by the solution's value bounds"),
        **measurement.header(__file__, argv),
        "members": members,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
