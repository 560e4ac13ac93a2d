"""The final report of a run (the trained policy against the baselines, on the same deals), and the
reader of a run's TensorBoard learning curve.

Co-op: PPO, random and the heuristic on ``report.episodes`` deals, the slow search expert on the first
``report.search_episodes`` of them (a paired comparison). Duel: the PPO side and the hand-written and
random players of that side, each against the heuristic and the random opponent. Self-play: the
cross-play matrix of both final policies and the hand-written and random players. Every player's games
show as a progress stage.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.evaluation.games import play_games
from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval
from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.policies.sb3_agent import load_model
from thermopylae_agents.training.config import ENV_IDS, Config
from thermopylae_agents.training.envs import eval_env_kwargs
from thermopylae_agents.training.progress import Stage, format_seconds, log
from thermopylae_env import COOP_ID, GREEK_ID

__all__ = [
    "cross_play_report",
    "evaluate_against_baselines",
    "format_cross_play",
    "format_report",
]


def _workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def _play(
    env_id: str,
    spec: Any,
    label: str,
    games: int,
    base_seed: int,
    env_kwargs: Mapping[str, Any],
    bar: bool,
    opponent: Any = None,
) -> list[Any]:
    """The records of ``games`` paired games of one player (game ``i`` on deal ``base_seed + i``)."""
    versus = (
        f" against the {opponent if isinstance(opponent, str) else 'PPO'} " if opponent is not None else " "
    )
    with Stage(f"report: {label}{versus}plays", games, "games", bar) as stage:
        return play_games(
            env_id,
            spec,
            games,
            base_seed=base_seed,
            env_kwargs=dict(env_kwargs),
            opponent=opponent,
            workers=_workers(),
            progress=stage.advance,
        )


def _row(records: Sequence[Any], agent: str, opponent: str | None = None) -> dict[str, Any]:
    games, wins = len(records), sum(bool(r.won) for r in records)
    low, high = wilson_interval(wins, games)
    return {
        "agent": agent,
        "opponent": opponent,
        "games": games,
        "wins": wins,
        "win_rate": wins / games if games else 0.0,
        "ci_low": float(low),
        "ci_high": float(high),
        "seconds_per_game": float(np.mean([r.seconds for r in records])) if games else 0.0,
    }


def _search_deals(records: Mapping[str, list], games: int) -> dict[str, Any]:
    """Every co-op player's wins on the first ``games`` deals, the ones the slow search expert played too:
    a paired comparison with the search expert, however few its games."""
    paired: dict[str, Any] = {"games": games}
    for name in ("search", "ppo", "heuristic"):
        wins = sum(r.won for r in records[name][:games])
        low, high = wilson_interval(wins, games)
        paired[name] = {"wins": wins, "win_rate": wins / games, "ci_low": low, "ci_high": high}
    return paired


def _paired(records: Mapping[str, list], pairs: Sequence[tuple[str, str]], games: int | None = None,
            opponent: str | None = None) -> list[dict[str, Any]]:
    """McNemar's exact test and the paired win-rate difference for each pair of players, on the deals
    both played (the first ``games`` when given)."""
    out = []
    for a, b in pairs:
        if a in records and b in records:
            n = games if games is not None else min(len(records[a]), len(records[b]))
            result = paired_comparison(a, [r.won for r in records[a][:n]], b, [r.won for r in records[b][:n]])
            out.append({**result.summary(), "opponent": opponent})
    return out


def evaluate_against_baselines(
    target: str, model_path: Path, env_kwargs: Mapping[str, Any], rep: Config, seed: int, bar: bool = True
) -> dict[str, Any]:
    """The trained policy and the baselines on the same deals (``report`` block of the config).

    ``beats_heuristic`` is true when PPO's interval lies wholly above the heuristic's on the same games.
    """
    episodes = int(rep.get("episodes", 1000))
    base_seed = 20_000_000 + seed * 100_000  # deals no training or BC game used
    env_id = ENV_IDS[target]
    kwargs = {k: v for k, v in eval_env_kwargs(env_kwargs).items() if k != "opponent"}
    # The trained policy plays greedily (its most likely legal action, as SB3Agent does) through a NumPy
    # copy, much faster than SB3's predict. Objects run in this process; specs in worker processes.
    ppo = FrozenPolicy(load_model(model_path), name="ppo")
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    paired = None
    if target == "coop":
        search_spec = str(rep.get("search", "search"))
        search_episodes = min(int(rep.get("search_episodes", 0)), episodes)
        if search_episodes == 0 and "search_episodes" in rep:
            log("report: the search expert's games skipped (report.search_episodes is 0)")
        players = [
            (ppo, "ppo", episodes),
            ("random", "random", episodes),
            ("heuristic", "heuristic", episodes),
            (search_spec, "search", search_episodes),
        ]
        records: dict[str, list] = {}
        for spec, name, games in players:
            if games <= 0:
                continue
            records[name] = _play(COOP_ID, spec, name, games, base_seed, kwargs, bar)
            rows.append(_row(records[name], name))
            rows[-1]["spec"] = spec if isinstance(spec, str) else str(model_path)
        paired = _search_deals(records, search_episodes) if "search" in records else None
        comparisons = _paired(records, [("ppo", "heuristic"), ("ppo", "random")])
        comparisons += _paired(records, [("ppo", "search"), ("heuristic", "search")], search_episodes)
        per_game = {name: [int(r.won) for r in found] for name, found in records.items()}
    else:
        comparisons, per_game = [], {}
        for opponent in ("heuristic", "random"):
            records = {}
            for spec, name in ((ppo, "ppo"), ("heuristic", "heuristic"), ("random", "random")):
                records[name] = _play(env_id, spec, name, episodes, base_seed, kwargs, bar, opponent=opponent)
                rows.append(_row(records[name], name, opponent))
                per_game[f"{name} vs {opponent}"] = [int(r.won) for r in records[name]]
            comparisons += _paired(records, [("ppo", "heuristic"), ("ppo", "random")], opponent=opponent)
    ppo_row, heuristic_row = rows[0], next(r for r in rows if r["agent"] == "heuristic")
    seconds = round(time.perf_counter() - start, 1)
    games = sum(r["games"] for r in rows)
    log(f"report: {games:,} games in {format_seconds(seconds)}")
    return {
        "base_seed": base_seed,
        "ppo_plays": "greedy: most likely legal action",
        "rows": rows,
        **({"search_deals": paired} if paired else {}),
        "paired": comparisons,
        "per_game": per_game,
        "beats_heuristic": ppo_row["ci_low"] > heuristic_row["ci_high"],
        "games": games,
        "seconds": seconds,
    }


def _rate_cells(r: Mapping[str, Any]) -> str:
    return f"{r['games']:>8}{r['win_rate']:>10.2%}  [{r['ci_low']:.2%}, {r['ci_high']:.2%}]"


def format_report(result: Mapping[str, Any]) -> str:
    """A plain-text table of a run's final evaluation and throughput."""
    lines = [
        f"{result['target']} ({result['algo']}, seed {result['seed']}): {result['num_timesteps']} steps, "
        f"{result['throughput']['steps_per_second']} env steps/s during learn"
    ]
    evaluation = result.get("evaluation") or {}
    rows = evaluation.get("rows", [])
    if rows:
        duel = any(r["opponent"] for r in rows)
        lines.append(
            f"Final report: {evaluation.get('games', sum(r['games'] for r in rows)):,} games in "
            f"{format_seconds(evaluation.get('seconds', 0))}, every player on the same deals"
        )
        lines.append(
            f"{'agent':<12}"
            + (f"{'opponent':<12}" if duel else "")
            + f"{'games':>8}{'win rate':>10}  95% interval"
        )
        for r in rows:
            lines.append(f"{r['agent']:<12}" + (f"{r['opponent']:<12}" if duel else "") + _rate_cells(r))
        lines.append(f"PPO interval above the heuristic's: {evaluation.get('beats_heuristic')}")
        paired = evaluation.get("search_deals")
        if paired:
            lines.append(f"On the first {paired['games']} of those deals, the ones the search expert played:")
            for name in ("search", "ppo", "heuristic"):
                lines.append(f"{name:<12}" + _rate_cells({"games": paired["games"], **paired[name]}))
        comparisons = evaluation.get("paired") or []
        if comparisons:
            lines.append("Paired on the same deals (difference of win rates, 95% interval, "
                         "McNemar's exact p):")
            for c in comparisons:
                versus = f" (against {c['opponent']})" if c.get("opponent") else ""
                low, high = c["ci95"]
                lines.append(f"  {c['a']} - {c['b']}{versus}: {c['difference']:+.2%} "
                             f"[{low:+.2%}, {high:+.2%}], p = {c['p_value']:.3g}, {c['games']:,} deals")
    return "\n".join(lines)


def cross_play_report(
    greek: Path, persian: Path, episodes: int, seed: int, bar: bool = True
) -> dict[str, Any]:
    """Cross-play of the self-play policies and the hand-written and random players (Greek win rates).

    The policies play through their NumPy copies (``fast:``), the same moves as the saved models."""
    base_seed = 30_000_000 + seed * 100_000
    start = time.perf_counter()
    greeks = [(f"fast:{greek}", "selfplay"), ("heuristic", "heuristic"), ("random", "random")]
    persians = [(f"fast:{persian}", "selfplay"), ("heuristic", "heuristic"), ("random", "random")]
    matrix: dict[str, dict[str, dict[str, Any]]] = {}

    with Stage("report: cross-play", len(greeks) * len(persians) * episodes, "games", bar) as stage:
        for persian_spec, p in persians:
            for greek_spec, g in greeks:
                records = play_games(
                    GREEK_ID,
                    greek_spec,
                    episodes,
                    base_seed=base_seed,
                    opponent=persian_spec,
                    workers=_workers(),
                    progress=stage.advance,
                )
                wins = sum(bool(r.won) for r in records)
                low, high = wilson_interval(wins, episodes)
                matrix.setdefault(g, {})[p] = {
                    "games": episodes,
                    "greek_wins": wins,
                    "greek_win_rate": wins / episodes,
                    "ci_low": low,
                    "ci_high": high,
                }
    matrix = {g: {p: matrix[g][p] for _, p in persians} for _, g in greeks}
    return {
        "base_seed": base_seed,
        "games": episodes,
        "matrix": matrix,
        "seconds": round(time.perf_counter() - start, 1),
    }


def format_cross_play(cross: Mapping[str, Any]) -> str:
    matrix = cross["matrix"]
    persians = list(next(iter(matrix.values())))
    lines = [
        f"Greek win rate (rows: Greek, columns: Persian), {cross['games']} games each, 95% interval",
        f"{'':<12}" + "".join(f"{p:>28}" for p in persians),
    ]
    for g, row in matrix.items():
        cells = "".join(
            f"{c['greek_win_rate']:.1%} [{c['ci_low']:.1%}, {c['ci_high']:.1%}]".rjust(28)
            for c in row.values()
        )
        lines.append(f"{g:<12}{cells}")
    return "\n".join(lines)


