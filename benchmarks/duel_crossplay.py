#!/usr/bin/env python
"""Cross-play of duel players on the native vector engine: every Greek player x every Persian player.

Usage::

    python benchmarks/duel_crossplay.py                                   # the shipped players, 10,000 games
    python benchmarks/duel_crossplay.py --games 10000 --check-games 300 \
        --json agents/thermopylae_agents/policies/duel_eval.json \
        --plot agents/thermopylae_agents/policies/duel_eval.png \
        --markdown benchmarks/results/duel_crossplay.md

Players (``--greek`` / ``--persian``): ``random``, ``heuristic`` (the compiled twin of the hand-written
player), or a registry spec of a policy: a shipped policy's name (its pickle-free ``.json``/``.npz``
weights), the path of such a ``.json``, or ``fast:MODEL.zip`` (a pickle: only files you trust). Default:
random, heuristic and the shipped duel policies of each side.

Each pairing plays ``--games`` games at once
(:func:`thermopylae_agents.evaluation.duel_batch.play_native`), game ``i`` from the engine's seed
``--seed + i``, so every pairing sees the same deals (shuffles and discards;
the random players then go their own ways). The table gives the Greek win rate with its 95% Wilson
interval; the JSON holds the summaries in :func:`thermopylae_agents.evaluation.results_json`'s form
(``scripts/evaluate.py --replot`` redraws it) plus the paired comparisons (McNemar's exact test,
Newcombe's interval) of two Greeks against the same Persian and of two Persians against the same Greek.

``--check-games N`` checks the first ``N`` games of every pairing against the single-env path
(``thermopylae/DuelGreek-v0`` with the Persian as its opponent, the players through the registry): game
for game (winner, turns, Greek decisions) where neither player is random, replaying each game's shuffles
and discards (:class:`thermopylae_agents.evaluation.duel_batch.ReplayChance`); by win rate on
``evaluate.py``'s own deals where one is (a random player's moves are drawn from another stream there).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from thermopylae_agents.evaluation.duel_batch import (  # noqa: E402
    NativeGames,
    ReplayChance,
    batched_player,
    play_native,
)
from thermopylae_agents.evaluation.games import EvalResult, GameResult, paired_comparisons  # noqa: E402
from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval  # noqa: E402
from thermopylae_agents.policies.provenance import git_commit  # noqa: E402
from thermopylae_agents.policies.registry import make_agent  # noqa: E402
from thermopylae_env import GREEK_ID, PERSIAN_ID  # noqa: E402
from thermopylae_env.duel.layout import GREEK, PERSIAN  # noqa: E402
from thermopylae_env.threads import configure_environment  # noqa: E402

GREEKS = ("random", "heuristic", "duel_greek_maskable_ppo", "selfplay_greek_maskable_ppo")
PERSIANS = ("random", "heuristic", "duel_persian_maskable_ppo", "selfplay_persian_maskable_ppo")


def _result(greek: str, persian: str, games: NativeGames, seconds: float, agent_seed: int) -> EvalResult:
    wins = int(games.greek_won.sum())
    n = games.games
    records = [GameResult(seed=games.seed + i, won=bool(games.greek_won[i]), turns=int(games.turns[i]),
                          steps=int(games.steps[GREEK, i])) for i in range(n)]
    return EvalResult(
        env_id=GREEK_ID, agent=greek, games=n, wins=wins, win_rate=wins / n, ci95=wilson_interval(wins, n),
        mean_turns=float(games.turns.mean()), mean_steps=float(games.steps[GREEK].mean()), seconds=seconds,
        seconds_per_game=seconds / n, base_seed=games.seed, agent_seed=agent_seed, opponent=persian,
        records=records)


def cross_play(greeks: list[str], persians: list[str], games: int, seed: int, agent_seed: int = 0,
               log: Any = None) -> tuple[list[EvalResult], dict[tuple[str, str], NativeGames]]:
    """Every pairing on the same ``games`` deals; the results (Persian-major, as ``evaluate.py``) and the
    per-game outcomes of each pairing."""
    results = []
    played: dict[tuple[str, str], NativeGames] = {}
    greek_players = {g: batched_player(g, GREEK, agent_seed) for g in greeks}
    for persian in persians:
        for greek in greeks:
            # a random player starts from the same generator state in every pairing
            greek_player = greek_players[greek]
            if greek == "random":
                greek_player = batched_player(greek, GREEK, agent_seed)
            start = time.perf_counter()
            outcome = play_native(greek_player, batched_player(persian, PERSIAN, agent_seed), games, seed)
            seconds = time.perf_counter() - start
            played[greek, persian] = outcome
            result = _result(greek, persian, outcome, seconds, agent_seed)
            results.append(result)
            if log is not None:
                log(f"{greek} vs {persian}: Greek {result.win_rate:.2%} [{result.ci95[0]:.2%}, "
                    f"{result.ci95[1]:.2%}] over {games} games ({seconds:.1f} s)")
    return results, played


def persian_comparisons(played: dict[tuple[str, str], NativeGames], greeks: list[str],
                        persians: list[str]) -> list[dict]:
    """Two Persians against the same Greek on the same deals: Persian win rates, paired."""
    out = []
    for greek in greeks:
        for i, a in enumerate(persians):
            for b in persians[i + 1:]:
                c = paired_comparison(a, ~played[greek, a].greek_won, b, ~played[greek, b].greek_won)
                out.append(c.summary() | {"opponent": greek, "rates_of": "persian"})
    return out


# --------------------------------------------------------------------------------- the single-env check
def _single_env_game(greek_agent: Any, persian_agent: Any, base: int) -> tuple[bool, int, int]:
    from thermopylae_env.duel.env import DuelGreekEnv

    env = DuelGreekEnv(opponent=persian_agent)
    env.np_random = ReplayChance(base)
    obs, info = env.reset()
    steps = 0
    while True:
        obs, _, terminated, truncated, info = env.step(greek_agent.act(obs, info["action_mask"].astype(bool)))
        steps += 1
        if terminated or truncated:
            env.close()
            return bool(info["is_success"]), int(info["turn"]), steps


def _z(k1: int, n1: int, k2: int, n2: int) -> float:
    p = (k1 + k2) / (n1 + n2)
    spread = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    return 0.0 if spread == 0 else (k1 / n1 - k2 / n2) / spread


def check_single_env(played: dict[tuple[str, str], NativeGames], games: int, log: Any = None) -> list[dict]:
    """The first ``games`` games of each pairing against the single-env path (module docstring)."""
    from thermopylae_agents.evaluation.games import play_games

    out = []
    for (greek, persian), native in played.items():
        n = min(games, native.games)
        start = time.perf_counter()
        if "random" in (greek, persian):
            records = play_games(GREEK_ID, greek, n, base_seed=native.seed, opponent=persian)
            single = sum(r.won for r in records)
            ours = int(native.greek_won[:n].sum())
            z = _z(ours, n, single, n)
            row = {"greek": greek, "persian": persian, "games": n, "how": "win rate, other deals",
                   "native_wins": ours, "single_env_wins": single, "z": z, "agree": abs(z) < 3.0}
        else:
            greek_agent, _ = make_agent(greek, GREEK_ID)
            persian_agent = "heuristic" if persian == "heuristic" else make_agent(persian, PERSIAN_ID)[0]
            same = 0
            for i in range(n):
                won, turns, steps = _single_env_game(greek_agent, persian_agent, int(native.chance_bases[i]))
                same += (won, turns, steps) == (bool(native.greek_won[i]), int(native.turns[i]),
                                                int(native.steps[GREEK, i]))
            row = {"greek": greek, "persian": persian, "games": n, "how": "game for game, same deals",
                   "identical_games": same, "agree": same == n}
        row["seconds"] = time.perf_counter() - start
        out.append(row)
        if log is not None:
            if "identical_games" in row:
                detail = f"{row['identical_games']}/{n} identical games"
            else:
                detail = (f"native {row['native_wins']}/{n}, single env {row['single_env_wins']}/{n}, "
                          f"z {row['z']:+.2f}")
            log(f"check {greek} vs {persian}: {detail}: {'agree' if row['agree'] else 'DISAGREE'}")
    return out


# ------------------------------------------------------------------------------------------- reporting
def _pct(rate: float, ci: list[float] | tuple[float, float]) -> str:
    return f"{rate:.2%} [{ci[0]:.2%}, {ci[1]:.2%}]"


def _diff_word(ci: list[float]) -> str:
    if ci[0] > 0:
        return "more often (the interval is above 0)"
    if ci[1] < 0:
        return "less often (the interval is below 0)"
    return "level (the interval contains 0)"


def _oriented(c: dict) -> dict:
    """A paired comparison as ``a - b`` with ``b`` the heuristic."""
    if c["a"] != "heuristic":
        return c
    low, high = c["ci95"]
    return c | {"a": c["b"], "b": c["a"], "only_a": c["only_b"], "only_b": c["only_a"],
                "difference": -c["difference"], "ci95": [-high, -low]}


def verdicts(doc: dict) -> list[str]:
    """For each learned player: does it beat the other side's heuristic at least as often as its own side's
    heuristic does (paired, same deals)?"""
    lines = []
    for c in map(_oriented, doc["paired"]):
        if c["b"] != "heuristic" or c["a"] in ("heuristic", "random") or c["opponent"] != "heuristic":
            continue
        side = "Persian" if c.get("rates_of") == "persian" else "Greek"
        other = "Greek" if side == "Persian" else "Persian"
        rate_a = (c["both"] + c["only_a"]) / c["games"]
        rate_b = (c["both"] + c["only_b"]) / c["games"]
        lines.append(f"- {side} `{c['a']}` against the heuristic {other}: {rate_a:.2%} ({side} wins), the "
                     f"heuristic {side} {rate_b:.2%}; paired difference {c['difference']:+.2%} "
                     f"[{c['ci95'][0]:+.2%}, {c['ci95'][1]:+.2%}] over {c['games']} deals, McNemar "
                     f"p = {c['p_value']:.3g}: {_diff_word(c['ci95'])}.")
    return lines


def markdown(doc: dict) -> str:
    results = doc["results"]
    greeks = list(dict.fromkeys(r["agent"] for r in results))
    persians = list(dict.fromkeys(r["opponent"] for r in results))
    cell = {(r["agent"], r["opponent"]): r for r in results}
    lines = [
        f"Greek win rates (the Persian wins the rest) on the same {doc['games_per_pairing']:,} deals per "
        f"pairing (native engine seeds {doc['seed']} + i), 95% Wilson intervals. {doc['date']}, commit "
        f"{doc['commit']}, {doc['seconds']:.0f} s.",
        "",
        "| Greek \\ Persian | " + " | ".join(persians) + " |",
        "| --- | " + " | ".join("---" for _ in persians) + " |",
    ]
    for g in greeks:
        lines.append(f"| {g} | " + " | ".join(_pct(cell[g, p]["win_rate"], cell[g, p]["ci95"])
                                               for p in persians) + " |")
    found = verdicts(doc)
    if found:
        lines += ["", *found]
    if doc.get("single_env_check"):
        checks = doc["single_env_check"]
        same = [c for c in checks if "identical_games" in c]
        rates = [c for c in checks if "z" in c]
        largest = max((abs(c["z"]) for c in rates), default=0.0)
        lines += ["", f"Single-env check (first {max(c['games'] for c in checks)} games of each pairing): "
                      f"{sum(c['identical_games'] for c in same)} of {sum(c['games'] for c in same)} games "
                      f"identical in the {len(same)} pairings without a random player; in the {len(rates)} "
                      f"with one, the win rates (other deals) agree within noise in "
                      f"{sum(c['agree'] for c in rates)} (largest |z| {largest:.2f})."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    # The thread settings of the package's entry points (passive OpenMP waiting, one OpenBLAS thread), as
    # the measurements were taken: before torch is imported or a parallel kernel runs, whose OpenMP
    # runtime reads them once, when it loads.
    configure_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--greek", nargs="+", default=list(GREEKS), help="Greek players (specs)")
    parser.add_argument("--persian", nargs="+", default=list(PERSIANS), help="Persian players (specs)")
    parser.add_argument("--games", type=int, default=10_000, help="games per pairing (10,000)")
    parser.add_argument("--seed", type=int, default=0, help="game i: engine seed SEED + i (0)")
    parser.add_argument("--agent-seed", type=int, default=0, help="seed of the random players (0)")
    parser.add_argument("--check-games", type=int, default=0, metavar="N",
                        help="check the first N games of each pairing against the single-env path")
    parser.add_argument("--json", default=None, help="write the results here (evaluate.py's form)")
    parser.add_argument("--plot", default=None, help="write the heatmap PNG here")
    parser.add_argument("--markdown", default=None, help="write the Markdown table here")
    args = parser.parse_args(argv)
    if args.games < 1 or args.check_games < 0:
        parser.error("--games must be at least 1 and --check-games at least 0")
    log = lambda text: print(text, flush=True)  # noqa: E731
    start = time.perf_counter()
    results, played = cross_play(args.greek, args.persian, args.games, args.seed, args.agent_seed, log)
    seconds = time.perf_counter() - start
    title = f"duel cross-play, Greek win rates: {args.games} paired games per pairing (native engine)"
    doc: dict[str, Any] = {
        "title": title,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(ROOT), "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "engine": ("thermopylae_env.duel.vector (native), "
                   "thermopylae_agents.evaluation.duel_batch.play_native"),
        "games_per_pairing": args.games, "seed": args.seed, "agent_seed": args.agent_seed, "seconds": seconds,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None},
        "results": [r.summary() for r in results],
        "paired": [c.summary() | {"rates_of": "greek"} for c in paired_comparisons(results)]
        + persian_comparisons(played, args.greek, args.persian),
    }
    if args.check_games:
        doc["single_env_check"] = check_single_env(played, args.check_games, log)
    text = markdown(doc)
    print(text)
    for path, content in ((args.json, json.dumps(doc, indent=1) + "\n"), (args.markdown, text)):
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(content, encoding="utf-8")
            print(f"wrote {path}")
    if args.plot:
        from thermopylae_agents.evaluation.tables import plot_results

        plot_results(results, args.plot, title)
        print(f"wrote {args.plot}")
    bad = [c for c in doc.get("single_env_check", []) if not c["agree"]]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
