"""Evaluate agents on the package's environments with paired, seeded deals.

Every agent plays the *same* games: game ``i`` resets the environment with seed ``base_seed + i`` (same
deal, same first dice), and an agent's own randomness is reseeded per game from ``(agent_seed, seed of
the game)``, so a result does not depend on how the games are split over worker processes or over runs
(``--seed 0 --games 200`` plus ``--seed 200 --games 200`` play exactly the games of
``--seed 0 --games 400``), and the same command gives the same numbers. Win rates come with 95% Wilson
intervals (:func:`thermopylae_agents.stats.wilson_interval`).

Agent specs (command line and :func:`make_agent`):

* co-op (``thermopylae/Coop-v0``): ``random``, ``heuristic``, ``search`` or ``search:N,K`` (the search
  player with ``N`` determinizations and ``K`` rollouts per determinization and candidate, or
  ``search:n_determinizations=N,rollouts=K,...`` with any keyword of
  :class:`thermopylae_agents.coop_search.CoopSearchExpert`), or the path of a saved SB3 model (``.zip``);
* duel: ``random``, ``heuristic`` (the side's hand-written player) or a model path, for each side.
  The duel is evaluated as a cross-play matrix: every Greek agent against every Persian agent, played on
  ``thermopylae/DuelGreek-v0`` with the Persian agent as the env's opponent;
* any game: ``fast:PATH`` plays the model at ``PATH`` through
  :class:`thermopylae_agents.training.FrozenPolicy`, a
  NumPy copy of its actor: the same greedy actions as the model itself (the tests check game for game),
  about ten times faster. It copies MLP policies over the flat observation or the co-op fight features.

Command line (``scripts/evaluate.py``, ``thermopylae evaluate``, ``thermopylae-evaluate``)::

    python scripts/evaluate.py --env coop random heuristic search:16,8 --games 10000 --json out.json
    python scripts/evaluate.py --env duel --greek heuristic random --persian heuristic random --plot m.png
    python scripts/evaluate.py --curve runs/coop_ppo --plot curve.png   # learning curve of a training run

SB3 model files are pickles: evaluate only models from trusted sources.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.registry import (
    COOP_ID,
    GREEK_ID,
    PERSIAN_ID,
    make_agent,
    resolve_env_id,
)
from thermopylae_agents.stats import wilson_interval

__all__ = [
    "COOP_ID",
    "GREEK_ID",
    "PERSIAN_ID",
    "EvalResult",
    "GameRecord",
    "make_agent",
    "resolve_env_id",
    "play_games",
    "evaluate",
    "evaluate_duel_matrix",
    "load_learning_curve",
    "plot_results",
    "plot_learning_curve",
    "main",
]

DEFAULT_AGENT_SEED = 1_000_003


def _reseed(agent: Any, seed: Sequence[int]) -> None:
    """Give the agent a fresh generator for one game (agents keep theirs in ``rng``)."""
    if hasattr(agent, "rng"):
        agent.rng = np.random.default_rng(list(seed))


# ------------------------------------------------------------------------------------------------ playing
@dataclass
class GameRecord:
    """One game: the seed of its deal, the result, and its length."""

    seed: int
    won: bool
    turns: int  # the env's info["turn"] at the end (co-op: completed actions; duel: game turns)
    steps: int  # decisions made by the evaluated agent
    seconds: float = field(default=0.0, compare=False)  # wall time of the game in its worker process


@dataclass
class EvalResult:
    """The summary of one agent (or one Greek x Persian pairing) over ``games`` paired games."""

    env_id: str
    agent: str
    games: int
    wins: int
    win_rate: float
    ci95: tuple[float, float]
    mean_turns: float
    mean_steps: float
    seconds: float  # wall time of the whole evaluation (all workers)
    seconds_per_game: float  # mean time of one game in one process (the cost of a game on one core)
    base_seed: int
    agent_seed: int
    opponent: str | None = None
    records: list[GameRecord] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly dict without the per-game records."""
        data = asdict(self)
        data.pop("records")
        data["ci95"] = list(self.ci95)
        return data


def _make_env(env_id: str, env_kwargs: dict[str, Any], opponent: Any = None):
    import gymnasium as gym

    import thermopylae_env  # noqa: F401 - registers the environments

    kwargs = dict(env_kwargs)
    if env_id != COOP_ID and opponent is not None:
        kwargs["opponent"] = opponent
    return gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped


def _play_chunk(task: tuple) -> list[GameRecord]:
    """Play games ``indices`` (worker entry point: builds its own env and agents from specs)."""
    env_id, env_kwargs, agent_spec, opponent_spec, indices, base_seed, agent_seed = task
    agent, _ = make_agent(agent_spec, env_id, env_kwargs=env_kwargs)
    opponent = None
    if opponent_spec is not None:
        opponent_env = PERSIAN_ID if env_id == GREEK_ID else GREEK_ID
        opponent, _ = make_agent(opponent_spec, opponent_env)
    env = _make_env(env_id, env_kwargs, opponent)
    records = []
    for i in indices:
        seed = base_seed + i
        _reseed(agent, (agent_seed, seed))
        if opponent is not None:
            _reseed(opponent, (agent_seed, seed, 1))
        start = time.perf_counter()
        obs, info = env.reset(seed=seed)
        steps = 0
        done = False
        won = False
        while not done:
            action = agent.act(obs, info["action_mask"].astype(bool))
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
            done = terminated or truncated
            if done:
                won = bool(info.get("is_success", False))
        records.append(GameRecord(seed=seed, won=won, turns=int(info.get("turn", 0)), steps=steps,
                                  seconds=time.perf_counter() - start))
    env.close()
    return records


def play_games(
    env_id: str,
    agent: Any,
    games: int,
    base_seed: int = 0,
    agent_seed: int = DEFAULT_AGENT_SEED,
    env_kwargs: dict[str, Any] | None = None,
    opponent: Any = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[GameRecord]:
    """Play ``games`` paired games (game ``i``: env seed ``base_seed + i``) and return their records.

    ``agent`` and ``opponent`` (duel: the other side) are specs or agent objects; objects cannot be sent
    to worker processes, so ``workers > 1`` needs specs. The records are the same for any ``workers``.
    """
    env_id = resolve_env_id(env_id)
    env_kwargs = dict(env_kwargs or {})
    if games < 0:
        raise ValueError(f"games must be >= 0, got {games}")
    chunk = max(1, min(50, math.ceil(games / max(1, workers) / 4)))
    tasks = [
        (env_id, env_kwargs, agent, opponent, range(start, min(start + chunk, games)), base_seed, agent_seed)
        for start in range(0, games, chunk)
    ]
    records: list[GameRecord] = []
    picklable = all(isinstance(x, (str, os.PathLike)) or x is None for x in (agent, opponent))
    if workers > 1 and len(tasks) > 1 and picklable:
        context = multiprocessing.get_context("spawn" if sys.platform == "darwin" else "fork")
        with context.Pool(min(workers, len(tasks))) as pool:
            for part in pool.imap(_play_chunk, tasks):
                records += part
                if progress is not None:
                    progress(len(part))
    else:
        for task in tasks:
            part = _play_chunk(task)
            records += part
            if progress is not None:
                progress(len(part))
    return records


def _summarise(
    env_id: str, label: str, records: list[GameRecord], seconds: float, base_seed: int, agent_seed: int,
    opponent: str | None = None,
) -> EvalResult:
    n = len(records)
    wins = sum(r.won for r in records)
    return EvalResult(
        env_id=env_id,
        agent=label,
        games=n,
        wins=wins,
        win_rate=wins / n if n else 0.0,
        ci95=wilson_interval(wins, n),
        mean_turns=float(np.mean([r.turns for r in records])) if n else 0.0,
        mean_steps=float(np.mean([r.steps for r in records])) if n else 0.0,
        seconds=seconds,
        seconds_per_game=float(np.mean([r.seconds for r in records])) if n else 0.0,
        base_seed=base_seed,
        agent_seed=agent_seed,
        opponent=opponent,
        records=records,
    )


def _label(spec: Any, env_id: str) -> str:
    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec)
    return make_agent(spec, env_id)[1]


def evaluate(
    env_id: str,
    agents: Sequence[Any],
    games: int = 10_000,
    base_seed: int = 0,
    agent_seed: int = DEFAULT_AGENT_SEED,
    env_kwargs: dict[str, Any] | None = None,
    workers: int = 1,
    opponent: Any = None,
    progress: bool = False,
) -> list[EvalResult]:
    """Evaluate each agent on the same ``games`` deals of ``env_id``; one :class:`EvalResult` each.

    For a duel env, ``opponent`` is the other side (a spec or an object; default: the env's default).
    """
    env_id = resolve_env_id(env_id)
    results = []
    for spec in agents:
        label = _label(spec, env_id)
        start = time.perf_counter()
        with _progress_bar(progress, games, label) as advance:
            records = play_games(env_id, spec, games, base_seed, agent_seed, env_kwargs, opponent, workers,
                                 advance)
        seconds = time.perf_counter() - start
        opp = None if opponent is None else _label(opponent, PERSIAN_ID if env_id == GREEK_ID else GREEK_ID)
        results.append(_summarise(env_id, label, records, seconds, base_seed, agent_seed, opp))
    return results


def evaluate_duel_matrix(
    greek_agents: Sequence[Any],
    persian_agents: Sequence[Any],
    games: int = 10_000,
    base_seed: int = 0,
    agent_seed: int = DEFAULT_AGENT_SEED,
    workers: int = 1,
    progress: bool = False,
) -> list[EvalResult]:
    """Cross-play: every Greek agent against every Persian agent on the same deals (Greek win rates)."""
    results = []
    for persian in persian_agents:
        results += evaluate(GREEK_ID, greek_agents, games, base_seed, agent_seed, None, workers, persian,
                            progress)
    return results


class _progress_bar:
    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self.enabled = enabled and total > 0
        self.total = total
        self.label = label
        self._progress = None

    def __enter__(self) -> Callable[[int], None] | None:
        if not self.enabled:
            return None
        from rich.progress import Progress

        self._progress = Progress(transient=True)
        self._progress.start()
        task = self._progress.add_task(self.label, total=self.total)
        return lambda n: self._progress.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


# ------------------------------------------------------------------------------------------------ output
def print_table(results: Sequence[EvalResult], title: str) -> None:
    """A rich table of the results in the terminal."""
    from rich.console import Console
    from rich.table import Table

    duel = any(r.opponent is not None for r in results)
    table = Table(title=title)
    table.add_column("Greek" if duel else "agent")
    if duel:
        table.add_column("Persian")
    for name in ("games", "wins", "win rate", "95% interval", "turns", "s/game"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in results:
        row = [r.agent] + ([r.opponent or ""] if duel else [])
        row += [
            str(r.games), str(r.wins), f"{r.win_rate:.2%}", f"[{r.ci95[0]:.2%}, {r.ci95[1]:.2%}]",
            f"{r.mean_turns:.1f}", f"{r.seconds_per_game:.4f}",
        ]
        table.add_row(*row)
    console = Console()
    if not console.is_terminal:  # piped or captured: no terminal width to respect, keep rows whole
        console = Console(width=160)
    console.print(table)


def plot_results(results: Sequence[EvalResult], path: str | os.PathLike[str], title: str = "") -> None:
    """A PNG of the win rates with their 95% Wilson intervals as error bars (duel: pairings labelled
    ``Greek vs Persian``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r.agent if r.opponent is None else f"{r.agent}\nvs {r.opponent}" for r in results]
    rates = np.array([r.win_rate for r in results])
    low = np.clip(rates - np.array([r.ci95[0] for r in results]), 0.0, None)
    high = np.clip(np.array([r.ci95[1] for r in results]) - rates, 0.0, None)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(results) + 1.5), 4.0))
    positions = np.arange(len(results))
    ax.bar(positions, rates, yerr=np.vstack([low, high]), capsize=5, color="tab:blue", alpha=0.8)
    for x, r in zip(positions, results, strict=True):
        ax.text(x, r.ci95[1] + 0.01, f"{r.win_rate:.1%}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(positions, labels, fontsize=8)
    ax.set_ylabel("win rate (95% Wilson interval)")
    ax.set_ylim(0, min(1.05, max(0.1, float(max(r.ci95[1] for r in results)) + 0.1)) if results else 1)
    n = results[0].games if results else 0
    ax.set_title(title or f"{results[0].env_id if results else ''}: {n} paired games", fontsize=9, wrap=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def load_learning_curve(logdir: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a training run's evaluation log.

    ``logdir`` is a folder (searched for ``evaluations.npz``, also under ``eval/``, then ``progress.csv``)
    or one of those files. ``evaluations.npz`` is the file of SB3's ``EvalCallback`` /
    ``MaskableEvalCallback`` (keys ``timesteps``, ``results`` (evaluations x episodes), ``ep_lengths``,
    optional ``successes``); ``progress.csv`` is SB3's CSV logger output (columns
    ``time/total_timesteps`` and ``eval/success_rate`` or ``eval/mean_reward``).

    Returns ``timesteps``, ``mean_reward``, ``mean_length`` and, where successes are known,
    ``success_rate``, ``ci_low``, ``ci_high`` (Wilson, per evaluation) and ``episodes``.
    """
    path = Path(logdir)
    candidates = [path] if path.is_file() else [
        path / "evaluations.npz", path / "eval" / "evaluations.npz", path / "progress.csv",
    ]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise ValueError(f"no evaluations.npz or progress.csv in {path}")
    if found.suffix == ".npz":
        with np.load(found) as data:
            if "timesteps" not in data or "results" not in data:
                raise ValueError(f"{found} has no 'timesteps'/'results' (not an EvalCallback log)")
            timesteps = np.asarray(data["timesteps"], dtype=np.int64)
            results = np.asarray(data["results"], dtype=np.float64).reshape(len(timesteps), -1)
            lengths = np.asarray(data["ep_lengths"], dtype=np.float64).reshape(len(timesteps), -1) \
                if "ep_lengths" in data else np.full_like(results, np.nan)
            successes = np.asarray(data["successes"], dtype=np.float64).reshape(len(timesteps), -1) \
                if "successes" in data and np.size(data["successes"]) else None
        curve = {"timesteps": timesteps, "mean_reward": results.mean(axis=1),
                 "mean_length": lengths.mean(axis=1)}
        if successes is None and results.size and np.isin(results, (-1.0, 1.0)).all():
            successes = (results > 0).astype(np.float64)  # +1/-1 rewards: a win is a positive return
        if successes is not None:
            wins = successes.sum(axis=1).round().astype(int)
            episodes = np.full(len(timesteps), successes.shape[1])
            _add_intervals(curve, wins, episodes)
        return curve
    return _load_progress_csv(found)


def _add_intervals(curve: dict[str, np.ndarray], wins: np.ndarray, episodes: np.ndarray) -> None:
    pairs = zip(wins, episodes, strict=True)
    bounds = np.array([wilson_interval(int(w), int(n)) for w, n in pairs]).reshape(-1, 2)
    curve["success_rate"] = np.where(episodes > 0, wins / np.maximum(episodes, 1), np.nan)
    curve["ci_low"], curve["ci_high"] = bounds[:, 0], bounds[:, 1]
    curve["episodes"] = episodes


def _load_progress_csv(path: Path) -> dict[str, np.ndarray]:
    import csv

    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))

    def column(name: str) -> np.ndarray:
        return np.array([float(r[name]) if r.get(name) not in (None, "") else np.nan for r in rows])

    if not rows or "time/total_timesteps" not in rows[0]:
        raise ValueError(f"{path} has no 'time/total_timesteps' column (not an SB3 progress.csv)")
    names = rows[0].keys()
    keep = ~np.isnan(column("eval/mean_reward")) if "eval/mean_reward" in names else np.ones(len(rows), bool)
    curve = {"timesteps": column("time/total_timesteps")[keep].astype(np.int64)}
    curve["mean_reward"] = column("eval/mean_reward")[keep] if "eval/mean_reward" in names \
        else np.full(keep.sum(), np.nan)
    curve["mean_length"] = column("eval/mean_ep_length")[keep] if "eval/mean_ep_length" in names \
        else np.full(keep.sum(), np.nan)
    if "eval/success_rate" in names:
        curve["success_rate"] = column("eval/success_rate")[keep]
    return curve


def plot_learning_curve(curve: dict[str, np.ndarray], path: str | os.PathLike[str], title: str = "") -> None:
    """A PNG of the evaluation success rate (with Wilson bands when the episodes are known) or, without
    successes, the mean evaluation reward, against training timesteps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    x = curve["timesteps"]
    if "success_rate" in curve:
        ax.plot(x, curve["success_rate"], marker="o", ms=3, label="win rate")
        if "ci_low" in curve:
            ax.fill_between(x, curve["ci_low"], curve["ci_high"], alpha=0.25, label="95% Wilson interval")
        ax.set_ylabel("evaluation win rate")
        ax.set_ylim(0, 1)
    else:
        ax.plot(x, curve["mean_reward"], marker="o", ms=3, label="mean reward")
        ax.set_ylabel("evaluation mean reward")
    ax.set_xlabel("training timesteps")
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    ax.set_title(title or "learning curve")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------------- command line
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evaluate",
        description="Evaluate agents on the same seeded deals (paired), with 95% Wilson intervals.",
    )
    parser.add_argument("agents", nargs="*", help="agent specs: random, heuristic, search[:N,K], model.zip")
    parser.add_argument("--env", default="coop", help="coop (default), duel, greek, persian or a full env id")
    parser.add_argument("--greek", nargs="+", default=None, help="duel: Greek agents")
    parser.add_argument("--persian", nargs="+", default=None, help="duel: Persian agents")
    parser.add_argument("--games", type=int, default=10_000, help="games per agent or pairing (10000)")
    parser.add_argument("--seed", type=int, default=0, help="game i is dealt with seed SEED + i (default 0)")
    parser.add_argument("--agent-seed", type=int, default=DEFAULT_AGENT_SEED,
                        help="seed of the agents' own randomness (reseeded per game)")
    parser.add_argument("--players", type=int, default=None, help="co-op: number of players (1..4)")
    parser.add_argument("--persian-deck", default=None, help="co-op: Persian deck CSV")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--json", default=None, help="write the results as JSON to this file")
    parser.add_argument("--plot", default=None, help="write a PNG plot to this file")
    parser.add_argument("--curve", default=None, metavar="LOGDIR",
                        help="plot the learning curve of a training run (evaluations.npz or progress.csv)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.games < 1:
        raise SystemExit("--games must be at least 1")
    if args.workers < 1:
        raise SystemExit("--workers must be at least 1")
    if args.curve is not None:
        curve = load_learning_curve(args.curve)
        folder = args.curve if os.path.isdir(args.curve) else "."
        out = args.plot or os.path.join(folder, "learning_curve.png")
        plot_learning_curve(curve, out, title=f"learning curve: {args.curve}")
        print(f"learning curve ({len(curve['timesteps'])} evaluations) written to {out}")
        if args.json:
            Path(args.json).write_text(json.dumps({k: np.asarray(v).tolist() for k, v in curve.items()},
                                                  indent=2))
        return 0
    env_id = resolve_env_id(args.env)
    progress = not args.no_progress and sys.stderr.isatty()
    if env_id == COOP_ID:
        if args.greek or args.persian:
            raise SystemExit("--greek/--persian are for the duel")
        env_kwargs: dict[str, Any] = {}
        if args.players is not None:
            env_kwargs["num_players"] = args.players
        if args.persian_deck is not None:
            env_kwargs["persian_deck"] = args.persian_deck
        specs = args.agents or ["random", "heuristic"]
        results = evaluate(env_id, specs, args.games, args.seed, args.agent_seed, env_kwargs, args.workers,
                           progress=progress)
        title = f"{env_id}: {args.games} paired games (seeds {args.seed}..{args.seed + args.games - 1})"
    else:
        if args.players is not None or args.persian_deck is not None:
            raise SystemExit("--players/--persian-deck are for the co-op game")
        if env_id == GREEK_ID:
            greek = (args.greek or []) + list(args.agents)
            persian = args.persian or ["heuristic"]
        else:
            greek = args.greek or ["heuristic"]
            persian = (args.persian or []) + list(args.agents)
        results = evaluate_duel_matrix(greek or ["heuristic"], persian or ["heuristic"], args.games,
                                       args.seed, args.agent_seed, args.workers, progress)
        title = f"duel cross-play, Greek win rates: {args.games} paired games per pairing"
    print_table(results, title)
    if args.json:
        Path(args.json).write_text(json.dumps({"title": title, "results": [r.summary() for r in results]},
                                              indent=2))
    if args.plot:
        plot_results(results, args.plot, title)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
