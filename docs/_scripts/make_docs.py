"""Rewrite the generated tables of README.md and docs/ from the committed result files.

A generated table sits between two markers in a Markdown page:

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

and everything between them is replaced by the table that ``NAME`` builds from the JSON files of
``benchmarks/results/`` and ``agents/thermopylae_agents/policies/``. The numbers in those tables are therefore
never typed by hand: rerun a measurement, commit its JSON, then run

    python docs/_scripts/make_docs.py            # rewrite every generated table
    python docs/_scripts/make_docs.py --check    # exit 1, naming each table that is out of date

The tables of each page are built by the module of this folder named for it (``speed.py`` for
docs/speed.md, ``readme.py`` for the README's headline, ...); ``common.py`` reads the files and writes the
numbers. ``GENERATORS`` below maps each table's name to its function.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import cluster
import coop_bound
import duel_theory
import readme
import results
import speed
import strength
import training
from common import POLICIES, ROOT

MARKER = re.compile(
    r"(?P<start><!-- generated: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(?P<end><!-- end generated -->)",
    re.DOTALL,
)


GENERATORS: dict[str, Callable[[], str]] = {
    "headline": readme.headline_table,
    "speed": speed.speed_table,
    "speed-single": speed.speed_single_table,
    "duel-speed": speed.duel_speed_table,
    "restructure-speed": speed.restructure_speed_table,
    "load-benchmark": speed.load_benchmark_table,
    "coop-solo": results.coop_solo_table,
    "coop-team-sizes": results.coop_team_sizes_table,
    "coop-search-40": results.coop_search_table,
    "duel-baselines": results.duel_baselines_table,
    "coop-bound": coop_bound.coop_bound_table,
    "coop-bound-search": coop_bound.coop_bound_search_table,
    "coop-bound-speed": coop_bound.coop_bound_speed_table,
    "coop-bound-first-deals": coop_bound.coop_bound_first_deals_table,
    "coop-bound-team-cost": coop_bound.coop_bound_team_cost_table,
    "duel-crossplay": results.duel_crossplay_table,
    "duel-vec-eval": results.duel_vec_eval_table,
    "exploitability": strength.exploitability_table,
    "exploitability-exploiters": strength.exploitability_exploiters_table,
    "rllib-measured": cluster.rllib_measured_table,
    "rllib-projection": cluster.rllib_projection_table,
    "duel-small-games": duel_theory.duel_small_games_table,
    "duel-small-players": duel_theory.duel_small_players_table,
    "search-speed": speed.search_speed_table,
    "search-effort": speed.search_effort_table,
    "search-effort-teams": speed.search_effort_teams_table,
    "versus-search": results.versus_search_table,
    "strongest-players": results.strongest_players_table,
    "rlzoo-coop": training.rlzoo_coop_table,
    "learner-speed": training.learner_speed_table,
    "main-job": training.main_job_table,
    "learner-parity": training.learner_parity_table,
    "learning-curves": training.learning_curves_table,
    "coop-search-yardstick": results.coop_search_yardstick_table,
    "duel-small-mmd": duel_theory.duel_small_mmd_table,
    "duel-small-trained-br": duel_theory.duel_small_trained_br_table,
}


def pages() -> list[Path]:
    """README.md, every Markdown page of docs/ and the shipped policies' README."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), POLICIES / "README.md"]


def render(text: str, page: Path) -> tuple[str, list[str]]:
    """The page with every generated table rewritten, and the names of the tables that changed."""
    stale: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise SystemExit(f"make_docs.py: error: {page.relative_to(ROOT)} names an unknown table {name!r}")
        body = GENERATORS[name]()
        if body != match["body"]:
            stale.append(name)
        return match["start"] + body + match["end"]

    return MARKER.sub(replace, text), stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 naming each table that differs from its JSON",
    )
    parser.add_argument("--list", action="store_true", help="print the name of every table it writes; stop")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(GENERATORS))
        return 0
    stale_pages = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new, stale = render(text, page)
        if not stale:
            continue
        where = page.relative_to(ROOT).as_posix()
        stale_pages += [f"{where}: {name}" for name in stale]
        if not args.check:
            page.write_text(new, encoding="utf-8")
    if args.check and stale_pages:
        for entry in stale_pages:
            print(f"stale generated table: {entry}", file=sys.stderr)
        print("run: python docs/_scripts/make_docs.py", file=sys.stderr)
        return 1
    for entry in stale_pages:
        print(f"rewrote {entry}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
