"""Evaluation output: result tables on the terminal (rich), plots of results and of learning curves
(matplotlib), and the learning curves of training runs read from TensorBoard events or ``progress.csv``."""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.evaluation.games import EvalResult, paired_comparisons
from thermopylae_agents.evaluation.stats import PairedComparison, wilson_interval
from thermopylae_env.render import safe_text

__all__ = [
    "CURVE_TAGS",
    "load_learning_curve",
    "paired_table",
    "plot_learning_curve",
    "plain_table",
    "plot_results",
    "print_table",
    "read_tensorboard_curve",
    "short_label",
]


def _console() -> Any:
    from rich.console import Console  # extra: train

    console = Console()
    if not console.is_terminal:  # piped or captured: no terminal width to respect, keep rows whole
        console = Console(width=160)
    return console


def _result_rows(results: Sequence[EvalResult]) -> tuple[list[str], list[list[str]]]:
    duel = any(r.opponent is not None for r in results)
    columns = ["Greek", "Persian"] if duel else ["agent"]
    columns += ["games", "wins", "win rate", "95% interval", "turns", "s/game"]
    rows = []
    for r in results:
        row = [safe_text(r.agent, newlines=False)] + ([safe_text(r.opponent or "", newlines=False)]
                                                       if duel else [])
        row += [
            str(r.games), str(r.wins), f"{r.win_rate:.2%}", f"[{r.ci95[0]:.2%}, {r.ci95[1]:.2%}]",
            f"{r.mean_turns:.1f}", f"{r.seconds_per_game:.4f}",
        ]
        rows.append(row)
    return columns, rows


_PAIRED_TITLE = ("paired comparisons on the same deals (McNemar's exact test; Newcombe 95% interval of the "
                 "difference)")


def _paired_rows(pairs: Sequence[PairedComparison]) -> tuple[list[str], list[list[str]], int]:
    duel = any(c.opponent is not None for c in pairs)
    names = ["A (Greek)", "B (Greek)", "vs Persian"] if duel else ["A", "B"]
    columns = [*names, "games", "A only", "B only", "A - B", "95% interval", "p"]
    rows = []
    for c in pairs:
        row = [safe_text(c.a, newlines=False), safe_text(c.b, newlines=False)]
        row += [safe_text(c.opponent or "", newlines=False)] if duel else []
        rows.append([*row, str(c.games), str(c.only_a), str(c.only_b), f"{c.difference:+.2%}",
                     f"[{c.ci95[0]:+.2%}, {c.ci95[1]:+.2%}]", f"{c.p_value:.3g}"])
    return columns, rows, len(names)


def plain_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """A table as plain text (the first ``left`` columns aligned left, the others right): what the
    terminal shows when rich, an extra of the ``train`` set, is not installed."""
    widths = [max(len(str(x)) for x in column) for column in zip(columns, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(cell).ljust(w) if i < left else str(cell).rjust(w)
                         for i, (cell, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([safe_text(title, newlines=False), line(columns), rule, *(line(r) for r in rows)])


def print_table(results: Sequence[EvalResult], title: str) -> None:
    """A rich table of the results, then one of the paired comparisons, in the terminal (plain text
    when rich is not installed)."""
    columns, rows = _result_rows(results)
    pairs = paired_comparisons(results)
    try:
        from rich.table import Table  # extra: train
    except ImportError:
        print(plain_table(title, columns, rows, left=2 if columns[1] == "Persian" else 1))
        if pairs:
            paired_columns, paired_rows, names = _paired_rows(pairs)
            print(plain_table(_PAIRED_TITLE, paired_columns, paired_rows, left=names))
        return
    table = Table(title=safe_text(title, newlines=False))
    for index, name in enumerate(columns):
        left = index == 0 or name == "Persian"
        table.add_column(name, justify="left" if left else "right", no_wrap=not left)
    for row in rows:
        table.add_row(*row)
    console = _console()
    console.print(table)
    if pairs:
        console.print(paired_table(pairs))


def paired_table(pairs: Sequence[PairedComparison]) -> Any:
    """A rich table of paired comparisons: the discordant deals, the difference and McNemar's p."""
    from rich.table import Table  # extra: train

    table = Table(title=_PAIRED_TITLE)
    columns, rows, names = _paired_rows(pairs)
    for index, name in enumerate(columns):
        table.add_column(name, justify="left" if index < names else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
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
    import matplotlib  # extra: train

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # extra: train

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
                         "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3,
                         "savefig.dpi": 130, "figure.dpi": 100})
    return plt


def plot_results(results: Sequence[EvalResult], path: str | os.PathLike[str], title: str = "") -> None:
    """A PNG of the results: the duel cross-play as a heatmap (Greek agents x Persian agents, each cell
    the Greek win rate with its 95% Wilson interval); otherwise horizontal bars with the intervals as
    error bars. Labels are [`short_label`][thermopylae_agents.evaluation.tables.short_label] of the agents
    (name them with ``NAME=SPEC``)."""
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
    then the run's TensorBoard logs:
    [`read_tensorboard_curve`][thermopylae_agents.evaluation.tables.read_tensorboard_curve]) or one of those
    files. ``evaluations.npz`` is the file of SB3's ``EvalCallback`` / ``MaskableEvalCallback`` (keys
    ``timesteps``, ``results`` (evaluations x episodes), ``ep_lengths``, optional ``successes``);
    ``progress.csv`` is SB3's CSV logger output (columns ``time/total_timesteps`` and ``eval/success_rate`` or
    ``eval/mean_reward``).

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
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # extra: train

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
