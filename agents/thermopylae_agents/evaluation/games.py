"""Evaluate agents on the package's environments with paired, seeded deals.

Every agent plays the *same* games: game ``i`` resets the environment with seed ``base_seed + i`` (same
deal, same first dice), and an agent's own randomness is reseeded per game from ``(agent_seed, seed of
the game)``, so a result does not depend on how the games are split over worker processes or over runs
(``--seed 0 --games 200`` plus ``--seed 200 --games 200`` play exactly the games of
``--seed 0 --games 400``), and the same command gives the same numbers. Win rates come with 95% Wilson
intervals (:func:`thermopylae_agents.evaluation.stats.wilson_interval`).

Agent specs (command line and :func:`make_agent`):

* co-op (``thermopylae/Coop-v0``): ``random``, ``heuristic``, ``search`` or ``search:N,K`` (the search
  player with ``N`` determinizations and ``K`` rollouts per determinization and candidate, or
  ``search:n_determinizations=N,rollouts=K,...`` with any keyword of
  :class:`thermopylae_agents.players.coop_search.CoopSearchExpert`), or the path of a saved SB3 model (``.zip``);
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
import dataclasses
import json
import math
import multiprocessing
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.evaluation.stats import PairedComparison, paired_comparison, wilson_interval
from thermopylae_agents.policies.registry import (
    COOP_ID,
    GREEK_ID,
    PERSIAN_ID,
    AgentSpecError,
    make_agent,
    parse_spec,
    resolve_env_id,
)
from thermopylae_env.render import safe_text

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
    "paired_comparisons",
    "progress_bar",
    "results_from_json",
    "results_json",
    "short_label",
    "CURVE_TAGS",
    "load_learning_curve",
    "read_tensorboard_curve",
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
        return parse_spec(spec).label
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
    stage: str = "",
) -> list[EvalResult]:
    """Evaluate each agent on the same ``games`` deals of ``env_id``; one :class:`EvalResult` each.

    For a duel env, ``opponent`` is the other side (a spec or an object; default: the env's default).
    ``progress``: a progress bar with the time left on a terminal, one line per agent otherwise (on
    standard error); ``stage`` is put in front of what it says.
    """
    env_id = resolve_env_id(env_id)
    results = []
    opp = None if opponent is None else _label(opponent, PERSIAN_ID if env_id == GREEK_ID else GREEK_ID)
    for spec in agents:
        label = _label(spec, env_id)
        what = f"{stage}{label}" + (f" vs {opp}" if opp is not None else "")
        start = time.perf_counter()
        with progress_bar(progress, games, f"evaluating {what}", unit="games") as advance:
            records = play_games(env_id, spec, games, base_seed, agent_seed, env_kwargs, opponent, workers,
                                 advance)
        seconds = time.perf_counter() - start
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
    pairings = len(greek_agents) * len(persian_agents)
    for column, persian in enumerate(persian_agents):
        first = column * len(greek_agents) + 1
        stage = f"cross-play pairings {first}-{first + len(greek_agents) - 1} of {pairings}: "
        results += evaluate(GREEK_ID, greek_agents, games, base_seed, agent_seed, None, workers, persian,
                            progress, stage=stage)
    return results


class progress_bar:
    """``with progress_bar(enabled, total, what) as advance: ... advance(n)``.

    On a terminal (standard error): a rich progress bar saying ``what``, with the count, the elapsed time
    and an estimate of the time left. Not on a terminal: one line saying ``what`` when the stage starts
    and one with its time when it ends, nothing in between. Disabled: ``advance`` is ``None``.
    """

    def __init__(self, enabled: bool, total: int, what: str, unit: str = "games",
                 stream: Any = None) -> None:
        self.enabled = enabled and total > 0
        self.total = total
        self.what = safe_text(what, newlines=False)
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self._progress = None
        self._start = 0.0

    def __enter__(self) -> Callable[[int], None] | None:
        if not self.enabled:
            return None
        self._start = time.perf_counter()
        if not _isatty(self.stream):
            self.stream.write(f"{self.what}: {self.total} {self.unit}...\n")
            self.stream.flush()
            return lambda n: None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(self.unit),
            TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
            console=Console(file=self.stream), transient=True,
        )
        self._progress.start()
        task = self._progress.add_task(self.what, total=self.total)
        return lambda n: self._progress.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
        elif self.enabled and exc[0] is None:
            self.stream.write(f"{self.what}: done in {time.perf_counter() - self._start:.1f} s\n")
            self.stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# ------------------------------------------------------------------------------------ paired statistics
def paired_comparisons(results: Sequence[EvalResult]) -> list[PairedComparison]:
    """McNemar's exact test and the paired win-rate difference (with its 95% interval) for every pair of
    results played on the same deals (same env, opponent and seeds: a co-op evaluation, or the Greek
    agents facing one Persian agent); results without per-game records are skipped."""
    groups: dict[tuple, list[EvalResult]] = {}
    for r in results:
        if r.records:
            key = (r.env_id, r.opponent, tuple(g.seed for g in r.records))
            groups.setdefault(key, []).append(r)
    pairs = []
    for group in groups.values():
        for i, first in enumerate(group):
            for second in group[i + 1:]:
                comparison = paired_comparison(first.agent, [g.won for g in first.records],
                                               second.agent, [g.won for g in second.records])
                pairs.append(dataclasses.replace(comparison, opponent=first.opponent))
    return pairs


def results_json(results: Sequence[EvalResult], title: str) -> dict[str, Any]:
    """The JSON document of an evaluation: each result's summary with its per-game outcomes
    (``per_game``: seed, won, turns, steps), and the paired comparisons."""
    documents = []
    for r in results:
        data = r.summary()
        data["per_game"] = {"seed": [g.seed for g in r.records], "won": [int(g.won) for g in r.records],
                            "turns": [g.turns for g in r.records], "steps": [g.steps for g in r.records]}
        documents.append(data)
    return {"title": title, "results": documents,
            "paired": [c.summary() for c in paired_comparisons(results)]}


def results_from_json(document: dict[str, Any]) -> list[EvalResult]:
    """The results of an evaluation's JSON (:func:`results_json`, or an older one without ``per_game``)."""
    results = []
    for data in document["results"]:
        data = dict(data)
        per_game = data.pop("per_game", None)
        data.pop("records", None)
        data["ci95"] = tuple(data["ci95"])
        records = []
        if per_game:
            records = [GameRecord(seed=int(s), won=bool(w), turns=int(t), steps=int(n)) for s, w, t, n in
                       zip(per_game["seed"], per_game["won"], per_game["turns"], per_game["steps"],
                           strict=True)]
        fields = {f.name for f in dataclasses.fields(EvalResult)}
        results.append(EvalResult(**{k: v for k, v in data.items() if k in fields}, records=records))
    return results


# ------------------------------------------------------------------------------------------------ output
def _console() -> Any:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped or captured: no terminal width to respect, keep rows whole
        console = Console(width=160)
    return console


def print_table(results: Sequence[EvalResult], title: str) -> None:
    """A rich table of the results, then one of the paired comparisons, in the terminal."""
    from rich.table import Table

    duel = any(r.opponent is not None for r in results)
    table = Table(title=safe_text(title, newlines=False))
    table.add_column("Greek" if duel else "agent")
    if duel:
        table.add_column("Persian")
    for name in ("games", "wins", "win rate", "95% interval", "turns", "s/game"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in results:
        row = [safe_text(r.agent, newlines=False)] + ([safe_text(r.opponent or "", newlines=False)]
                                                       if duel else [])
        row += [
            str(r.games), str(r.wins), f"{r.win_rate:.2%}", f"[{r.ci95[0]:.2%}, {r.ci95[1]:.2%}]",
            f"{r.mean_turns:.1f}", f"{r.seconds_per_game:.4f}",
        ]
        table.add_row(*row)
    console = _console()
    console.print(table)
    pairs = paired_comparisons(results)
    if pairs:
        console.print(paired_table(pairs))


def paired_table(pairs: Sequence[PairedComparison]) -> Any:
    """A rich table of paired comparisons: the discordant deals, the difference and McNemar's p."""
    from rich.table import Table

    table = Table(title="paired comparisons on the same deals (McNemar's exact test; Newcombe 95% "
                  "interval of the difference)")
    duel = any(c.opponent is not None for c in pairs)
    names = ("A (Greek)", "B (Greek)", "vs Persian") if duel else ("A", "B")
    for name in (*names, "games", "A only", "B only", "A - B", "95% interval", "p"):
        table.add_column(name, justify="left" if name in names else "right", no_wrap=True)
    for c in pairs:
        row = [safe_text(c.a, newlines=False), safe_text(c.b, newlines=False)]
        row += [safe_text(c.opponent or "", newlines=False)] if duel else []
        table.add_row(*row, str(c.games), str(c.only_a), str(c.only_b), f"{c.difference:+.2%}",
                      f"[{c.ci95[0]:+.2%}, {c.ci95[1]:+.2%}]", f"{c.p_value:.3g}")
    return table


def short_label(label: str, limit: int = 32) -> str:
    """A label that fits a plot: a model path becomes its file name without ``.zip`` (``fast:`` kept);
    anything longer than ``limit`` is cut with an ellipsis. ``NAME=SPEC`` specs give their own names."""
    prefix, _, rest = label.partition(":") if label.startswith("fast:") else ("", "", label)
    if rest.endswith(".zip") or "/" in rest or os.sep in rest:
        rest = Path(rest).name.removesuffix(".zip")
    text = f"{prefix}:{rest}" if prefix else rest
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _wrap_label(text: str, width: int = 16) -> str:
    """``text`` on lines of about ``width`` characters, broken after ``:`` or ``_`` (tick labels that do
    not run into their neighbours)."""
    lines, line = [], ""
    for piece in re.split(r"(?<=[:_ ])", text):
        if line and len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        line += piece
    return "\n".join([*lines, line] if line else lines)


def _style() -> Any:
    """matplotlib with the one style of every evaluation plot (Agg backend, no file-specific state)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
                         "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3,
                         "savefig.dpi": 130, "figure.dpi": 100})
    return plt


def plot_results(results: Sequence[EvalResult], path: str | os.PathLike[str], title: str = "") -> None:
    """A PNG of the results: the duel cross-play as a heatmap (Greek agents x Persian agents, each cell
    the Greek win rate with its 95% Wilson interval); otherwise horizontal bars with the intervals as
    error bars. Labels are :func:`short_label` of the agents (name them with ``NAME=SPEC``)."""
    if any(r.opponent is not None for r in results):
        _plot_heatmap(results, path, title)
        return
    plt = _style()
    labels = [_wrap_label(short_label(r.agent, 48), 28) for r in results]
    rates = np.array([r.win_rate for r in results])
    low = np.clip(rates - np.array([r.ci95[0] for r in results]), 0.0, None)
    high = np.clip(np.array([r.ci95[1] for r in results]) - rates, 0.0, None)
    fig, ax = plt.subplots(figsize=(7.0, 1.0 + 0.55 * max(1, len(results))))
    positions = np.arange(len(results))[::-1]
    ax.barh(positions, rates, xerr=np.vstack([low, high]), capsize=4, color="tab:blue", alpha=0.85,
            height=0.6)
    for y, r in zip(positions, results, strict=True):
        ax.text(r.ci95[1] + 0.01, y, f"{r.win_rate:.1%}  [{r.ci95[0]:.1%}, {r.ci95[1]:.1%}]", va="center",
                fontsize=8)
    ax.set_yticks(positions, labels)
    ax.grid(axis="y", visible=False)
    top = float(max((r.ci95[1] for r in results), default=0.1))
    ax.set_xlim(0, min(1.0, top + 0.25) if top < 0.75 else 1.2)
    ax.set_xlabel("win rate (95% Wilson interval)")
    n = results[0].games if results else 0
    ax.set_title(title or f"{results[0].env_id if results else ''}: {n} paired games", wrap=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_heatmap(results: Sequence[EvalResult], path: str | os.PathLike[str], title: str) -> None:
    plt = _style()
    greeks = list(dict.fromkeys(r.agent for r in results))
    persians = list(dict.fromkeys(r.opponent for r in results))
    rates = np.full((len(greeks), len(persians)), np.nan)
    cells: dict[tuple[int, int], EvalResult] = {}
    for r in results:
        i, j = greeks.index(r.agent), persians.index(r.opponent)
        rates[i, j] = r.win_rate
        cells[i, j] = r
    fig, ax = plt.subplots(figsize=(1.9 * len(persians) + 3.4, 0.9 * len(greeks) + 2.0))
    low, high = float(np.nanmin(rates)), float(np.nanmax(rates))
    spread = max(high - low, 0.02)  # the colours span the measured rates, so close cells still differ
    image = ax.imshow(rates, cmap="YlGnBu", vmin=max(0.0, low - 0.1 * spread), vmax=high + 0.1 * spread,
                      aspect="auto")
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for (i, j), r in cells.items():
        red, green, blue, _ = image.cmap(image.norm(r.win_rate))
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
        ax.text(j, i, f"{r.win_rate:.1%}\n[{r.ci95[0]:.1%}, {r.ci95[1]:.1%}]", ha="center", va="center",
                fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(persians)), [_wrap_label(short_label(p, 48)) for p in persians])
    ax.set_yticks(range(len(greeks)), [_wrap_label(short_label(g, 48), 24) for g in greeks])
    ax.set_xlabel("Persian agent (the env's opponent)")
    ax.set_ylabel("Greek agent")
    games = results[0].games if results else 0
    ax.set_title(title or f"duel cross-play: Greek win rate, {games} paired games per cell", wrap=True)
    fig.colorbar(image, ax=ax, label="Greek win rate", fraction=0.05, pad=0.03)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def load_learning_curve(logdir: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a training run's evaluation log.

    ``logdir`` is a folder (searched for ``evaluations.npz``, also under ``eval/``, then ``progress.csv``,
    then the run's TensorBoard logs: :func:`read_tensorboard_curve`) or one of those files.
    ``evaluations.npz`` is the file of SB3's ``EvalCallback`` /
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
        if path.is_dir() and any(path.rglob("events.out.tfevents.*")):
            return read_tensorboard_curve(path)
        raise ValueError(f"no evaluations.npz, progress.csv or TensorBoard logs in {path}")
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


CURVE_TAGS = {
    "eval/success_rate": "success_rate",
    "eval/mean_reward": "mean_reward",
    "eval/mean_ep_length": "mean_length",
    "eval/episodes": "episodes",
}


def read_tensorboard_curve(run_dir: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The periodic-evaluation curve of a run from its TensorBoard logs (when there is no evaluations.npz).

    ``run_dir`` is a run folder (its ``tb/`` is searched), a ``tb/`` folder, or one side's folder of a
    self-play run (``tb/greek``). Returns ``timesteps`` and, where logged, ``success_rate``,
    ``mean_reward``, ``mean_length`` and ``episodes`` (games per evaluation), with ``ci_low`` / ``ci_high``
    (Wilson 95%) when both the rate and the game count are there; a resumed run's logs are joined in
    step order. Raises ``ValueError`` when no event file holds ``eval/`` scalars, or when they come from
    more than one self-play side.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    root = Path(run_dir)
    if (root / "tb").is_dir():
        root = root / "tb"
    files = sorted(root.rglob("events.out.tfevents.*"))
    series: dict[str, dict[int, float]] = {}
    sources: set[Path] = set()
    for path in files:
        events = EventAccumulator(str(path), size_guidance={"scalars": 0})
        events.Reload()
        tags = set(events.Tags().get("scalars", []))
        for tag, name in CURVE_TAGS.items():
            if tag in tags:
                sources.add(path.parent.relative_to(root).parts[0] if path.parent != root else Path("."))
                for event in events.Scalars(tag):
                    series.setdefault(name, {})[int(event.step)] = float(event.value)
    if "success_rate" not in series and "mean_reward" not in series:
        raise ValueError(f"no periodic evaluation (eval/ scalars) in the TensorBoard logs under {root}")
    sides = {str(s) for s in sources} & {"greek", "persian"}
    if len(sides) > 1:
        raise ValueError(
            f"{root} holds the curves of both self-play sides; pass {root}/greek or {root}/persian"
        )
    steps = sorted(set().union(*(set(values) for values in series.values())))
    curve = {"timesteps": np.asarray(steps, dtype=np.int64)}
    for name, values in series.items():
        curve[name] = np.asarray([values.get(step, np.nan) for step in steps], dtype=np.float64)
    if "success_rate" in curve and "episodes" in curve:
        episodes = np.nan_to_num(curve["episodes"]).astype(np.int64)
        wins = np.rint(np.nan_to_num(curve["success_rate"]) * episodes).astype(np.int64)
        bounds = np.array(
            [
                wilson_interval(int(w), int(n)) if n > 0 else (np.nan, np.nan)
                for w, n in zip(wins, episodes, strict=True)
            ]
        ).reshape(-1, 2)
        curve["ci_low"], curve["ci_high"] = bounds[:, 0], bounds[:, 1]
    return curve


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
    """A PNG of the evaluation success rate (with its 95% Wilson band when the episodes are known) or,
    without successes, the mean evaluation reward, against training timesteps."""
    plt = _style()
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    x = curve["timesteps"]
    if "success_rate" in curve:
        ax.plot(x, curve["success_rate"], marker="o", ms=3, color="tab:blue", label="win rate")
        if "ci_low" in curve:
            ax.fill_between(x, curve["ci_low"], curve["ci_high"], color="tab:blue", alpha=0.2,
                            label="95% Wilson interval")
        ax.set_ylabel("evaluation win rate")
        top = float(np.nanmax(curve.get("ci_high", curve["success_rate"]))) if len(x) else 1.0
        ax.set_ylim(0, min(1.0, max(0.05, top * 1.15)))
    else:
        ax.plot(x, curve["mean_reward"], marker="o", ms=3, color="tab:blue", label="mean reward")
        ax.set_ylabel("evaluation mean reward")
    ax.set_xlabel("training timesteps")
    ax.legend(loc="best")
    ax.set_title(safe_text(title, newlines=False) or "learning curve", wrap=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------------------------------------- command line
def _agent_spec(text: str) -> str:
    try:
        parse_spec(text)
    except AgentSpecError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    from thermopylae_agents.cli.play import int_argument, seed_argument

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Evaluate agents on the same seeded deals (paired), with 95% Wilson intervals and "
        "paired comparisons (McNemar's exact test, the win-rate difference with its 95% interval).",
    )
    spec_help = ("random, heuristic, search[:N,K], a model path, fast:PATH, a shipped policy; NAME=SPEC "
                 "names it")
    parser.add_argument("agents", nargs="*", type=_agent_spec, help=f"agent specs: {spec_help}")
    parser.add_argument("--env", default="coop", help="coop (default), duel, greek, persian or a full env id")
    parser.add_argument("--greek", nargs="+", type=_agent_spec, default=None, help="duel: Greek agents")
    parser.add_argument("--persian", nargs="+", type=_agent_spec, default=None, help="duel: Persian agents")
    parser.add_argument("--games", type=int_argument(1, 10**9), default=10_000,
                        help="games per agent or pairing (10000)")
    parser.add_argument("--seed", type=seed_argument, default=0,
                        help="game i is dealt with seed SEED + i (default 0)")
    parser.add_argument("--agent-seed", type=seed_argument, default=DEFAULT_AGENT_SEED,
                        help="seed of the agents' own randomness (reseeded per game)")
    parser.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                        help="co-op: number of players (1..4)")
    parser.add_argument("--persian-deck", default=None, help="co-op: Persian deck CSV")
    parser.add_argument("--workers", type=int_argument(1, 1024), default=1,
                        help="worker processes (default 1)")
    parser.add_argument("--json", default=None, help="write the results (per-game outcomes included) as JSON")
    parser.add_argument("--plot", default=None, help="write a PNG plot to this file")
    parser.add_argument("--curve", default=None, metavar="LOGDIR",
                        help="plot the learning curve of a training run (evaluations.npz or progress.csv)")
    parser.add_argument("--replot", default=None, metavar="JSON",
                        help="plot (--plot) and print the results of an earlier --json file, playing nothing")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    return parser


def _check_output(parser: argparse.ArgumentParser, path: str | None, option: str) -> None:
    if path is None:
        return
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir() or not parent.is_dir() or not os.access(parent, os.W_OK):
        parser.error(f"{option} {path}: cannot write there (a folder, or a missing or read-only folder)")


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """The command line (``prog`` names it in the usage line: ``evaluate.py``, ``thermopylae evaluate``).
    Bad arguments and agents that cannot be built end with a one-line error and exit code 2."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    _check_output(parser, args.json, "--json")
    _check_output(parser, args.plot, "--plot")
    try:
        return _run(parser, args)
    except (ValueError, OSError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        sys.stderr.write(f"{parser.prog}: error: {safe_text(first, newlines=False)}\n")
        return 2


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
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
    if args.replot is not None:
        document = _read_json(args.replot)
        results = results_from_json(document)
        title = str(document.get("title", args.replot))
        print_table(results, title)
        if args.plot:
            plot_results(results, args.plot, title)
        return 0
    env_id = resolve_env_id(args.env)
    progress = not args.no_progress
    if env_id == COOP_ID:
        if args.greek or args.persian:
            parser.error("--greek/--persian are for the duel")
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
            parser.error("--players/--persian-deck are for the co-op game")
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
        Path(args.json).write_text(json.dumps(results_json(results, title)))
    if args.plot:
        plot_results(results, args.plot, title)
    return 0


def _read_json(path: str) -> dict[str, Any]:
    target = Path(path)
    if not target.is_file():
        raise ValueError(f"{path}: not a file")
    if target.stat().st_size > 512 * 1024 * 1024:
        raise ValueError(f"{path}: too large for an evaluation JSON")
    try:
        document = json.loads(target.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise ValueError(f"{path}: not an evaluation JSON ({type(err).__name__})") from None
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise ValueError(f"{path}: not an evaluation JSON (no 'results' list)")
    return document


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
