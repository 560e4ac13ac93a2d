"""Evaluate agents on the package's environments with paired, seeded deals.

Every agent plays the *same* games: game ``i`` resets the environment with seed ``base_seed + i`` (same
deal, same first dice), and an agent's own randomness is reseeded per game from ``(agent_seed, seed of
the game)``, so a result does not depend on how the games are split over worker processes or over runs
(``--seed 0 --games 200`` plus ``--seed 200 --games 200`` play exactly the games of
``--seed 0 --games 400``), and the same command gives the same numbers. Win rates come with 95% Wilson
intervals ([`thermopylae_agents.evaluation.stats.wilson_interval`][]).

Agent specs (command line and [`make_agent`][thermopylae_agents.policies.registry.make_agent]):

* co-op (``thermopylae/Coop-v0``): ``random``, ``heuristic``, ``search`` or ``search:N,K`` (the search
  player with ``N`` determinizations and ``K`` rollouts per determinization and candidate, or
  ``search:n_determinizations=N,rollouts=K,...`` with any keyword of
  [`thermopylae_agents.players.coop_search.CoopSearchExpert`][]), or the path of a saved SB3 model
  (``.zip``);
* duel: ``random``, ``heuristic`` (the side's hand-written player) or a model path, for each side.
  The duel is evaluated as a cross-play matrix: every Greek agent against every Persian agent, played on
  ``thermopylae/DuelGreek-v0`` with the Persian agent as the env's opponent;
* any game: ``fast:PATH`` plays the model at ``PATH`` through
  [`thermopylae_agents.policies.frozen_policy.FrozenPolicy`][], a
  NumPy copy of its actor: the same greedy actions as the model itself (the tests check game for game),
  about ten times faster. It copies MLP policies over the flat observation or the co-op fight features.

Command line (``thermopylae evaluate``: [`thermopylae_agents.cli.evaluate`][]; also ``scripts/evaluate.py``):

    thermopylae evaluate --game coop random heuristic search:16,8 --games 10000 --out out.json
    thermopylae evaluate --game duel --greek heuristic random --persian heuristic random --plot m.png
    thermopylae evaluate --curve runs/coop_ppo --plot curve.png   # learning curve of a training run

SB3 model files are pickles: evaluate only models from trusted sources.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from thermopylae_agents.evaluation.stats import PairedComparison, paired_comparison, wilson_interval
from thermopylae_agents.policies.registry import check_agent_game, make_agent, parse_spec, resolve_env_id
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.render import safe_text

__all__ = [
    "EvalResult",
    "GameResult",
    "play_games",
    "evaluate",
    "evaluate_duel_matrix",
    "paired_comparisons",
    "progress_bar",
    "results_from_json",
    "results_json",
]

DEFAULT_AGENT_SEED = 1_000_003


def _reseed(agent: Any, seed: Sequence[int]) -> None:
    """Give the agent a fresh generator for one game (agents keep theirs in ``rng``)."""
    if hasattr(agent, "rng"):
        agent.rng = np.random.default_rng(list(seed))


# ------------------------------------------------------------------------------------------------ playing
@dataclass
class GameResult:
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
    records: list[GameResult] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly dict without the per-game records."""
        data = asdict(self)
        data.pop("records")
        data["ci95"] = list(self.ci95)
        return data


def _make_env(env_id: str, env_kwargs: dict[str, Any], opponent: Any = None):
    kwargs = dict(env_kwargs)
    if env_id != COOP_ID and opponent is not None:
        kwargs["opponent"] = opponent
    return gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped


def _play_chunk(task: tuple) -> list[GameResult]:
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
        records.append(GameResult(seed=seed, won=won, turns=int(info.get("turn", 0)), steps=steps,
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
) -> list[GameResult]:
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
    records: list[GameResult] = []
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
    env_id: str, label: str, records: list[GameResult], seconds: float, base_seed: int, agent_seed: int,
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
    """Evaluate each agent on the same ``games`` deals of ``env_id``; one
    [`EvalResult`][thermopylae_agents.evaluation.games.EvalResult] each.

    For a duel env, ``opponent`` is the other side (a spec or an object; default: the env's default).
    ``progress``: a progress bar with the time left on a terminal, one line per agent otherwise (on
    standard error); ``stage`` is put in front of what it says.
    """
    env_id = resolve_env_id(env_id)
    opponent_env = PERSIAN_ID if env_id == GREEK_ID else GREEK_ID
    for spec in agents:  # every policy fits this game, before any game is played
        check_agent_game(spec, env_id, env_kwargs)
    if opponent is not None and env_id != COOP_ID:
        check_agent_game(opponent, opponent_env)
    results = []
    opp = None if opponent is None else _label(opponent, opponent_env)
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
        from rich.console import Console  # extra: train
        from rich.progress import (  # extra: train
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
    """The results of an evaluation's JSON
    ([`results_json`][thermopylae_agents.evaluation.games.results_json], or an older one without
    ``per_game``)."""
    results = []
    for data in document["results"]:
        data = dict(data)
        per_game = data.pop("per_game", None)
        data.pop("records", None)
        data["ci95"] = tuple(data["ci95"])
        records = []
        if per_game:
            records = [GameResult(seed=int(s), won=bool(w), turns=int(t), steps=int(n)) for s, w, t, n in
                       zip(per_game["seed"], per_game["won"], per_game["turns"], per_game["steps"],
                           strict=True)]
        fields = {f.name for f in dataclasses.fields(EvalResult)}
        results.append(EvalResult(**{k: v for k, v in data.items() if k in fields}, records=records))
    return results
