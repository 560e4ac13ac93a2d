"""Progress of the long stages of a run (expert games, cloning, DAgger, PPO, evaluations, the report).

On a terminal each stage is a rich progress bar (the library of the evaluation's bars too) that says what
is being done and the time left. Elsewhere (a log file, a pipe, ``--no-progress``) a stage logs one line
when it starts and one when it ends, and a long stage also a line every
[`HEARTBEAT_SECONDS`][thermopylae_agents.training.progress.HEARTBEAT_SECONDS] with its count and the time
left, so a job watched through ``tee`` or a CI log never goes silent for long.

The lines go through the standard `logging` module, logger ``thermopylae_agents.training``, to
standard output with the time of day. Its level comes from the environment variable
``THERMOPYLAE_LOG_LEVEL`` (``DEBUG``, ``INFO``: the default, ``WARNING`` ...; ``thermopylae train
--quiet`` sets ``WARNING``); a program that configures logging itself can replace the handler.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

__all__ = ["HEARTBEAT_SECONDS", "LOG_LEVEL_VARIABLE", "LOGGER", "Stage", "format_seconds", "log", "set_level"]

HEARTBEAT_SECONDS = 20.0
LOG_LEVEL_VARIABLE = "THERMOPYLAE_LOG_LEVEL"
LOGGER = logging.getLogger("thermopylae_agents.training")


class _StdoutHandler(logging.StreamHandler):
    """A handler that writes to the ``sys.stdout`` of the moment (a redirected or captured one too)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, value: Any) -> None:  # StreamHandler.__init__ sets it; the property wins
        pass


def _level_from_environment() -> int:
    name = os.environ.get(LOG_LEVEL_VARIABLE, "INFO").strip().upper()
    level = logging.getLevelName(name)
    return level if isinstance(level, int) else logging.INFO  # an unknown name keeps the default


def set_level(level: int | str) -> None:
    """Set the level of the training log (``logging.WARNING`` or ``"WARNING"``: only warnings)."""
    LOGGER.setLevel(level)


if not LOGGER.handlers:
    _handler = _StdoutHandler()
    _handler.setFormatter(logging.Formatter("[train %(asctime)s] %(message)s", datefmt="%H:%M:%S"))
    LOGGER.addHandler(_handler)
    LOGGER.propagate = False  # one line per message, whatever the root logger does
    LOGGER.setLevel(_level_from_environment())


def log(message: str) -> None:
    """One line of the run's log (logger ``thermopylae_agents.training``, level INFO)."""
    LOGGER.info(message)


def format_seconds(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


def _is_terminal() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class Stage:
    """A stage of ``total`` units (games, steps, decisions): ``with Stage(...) as stage: stage.advance(n)``.

    ``bar=False`` (``--no-progress``) or output that is not a terminal gives log lines instead of a bar.
    """

    def __init__(self, description: str, total: int, unit: str = "games", bar: bool = True) -> None:
        self.description = description
        self.total = max(int(total), 0)
        self.unit = unit
        self.done = 0
        self._bar: Any = None
        self._use_bar = bar and _is_terminal()
        self._start = 0.0
        self._last_line = 0.0

    def __enter__(self) -> Stage:
        self._start = self._last_line = time.perf_counter()
        if self._use_bar:
            self._bar = _rich_bar(self.description, self.total, self.unit)
        log(f"{self.description}: {self.total:,} {self.unit} ...")
        return self

    def advance(self, n: int = 1) -> None:
        self.update_to(self.done + int(n))

    def update_to(self, done: int) -> None:
        step, self.done = int(done) - self.done, int(done)
        if self._bar is not None:
            progress, task = self._bar
            progress.advance(task, step)
            return
        now = time.perf_counter()
        if now - self._last_line >= HEARTBEAT_SECONDS and self.done < self.total:
            self._last_line = now
            log(f"{self.description}: {self.done:,}/{self.total:,} {self.unit}, {self._left(now)} left")

    def _left(self, now: float) -> str:
        if self.done <= 0:
            return "unknown time"
        return format_seconds((now - self._start) * (self.total - self.done) / self.done)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self._start

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if self._bar is not None:
            self._bar[0].stop()
        if kind is None:
            log(f"{self.description}: done, {self.done:,} {self.unit} in {format_seconds(self.seconds)}")


def _rich_bar(description: str, total: int, unit: str) -> tuple[Any, Any]:
    """A started rich bar on standard error (cleared when it stops) and its task."""
    from rich.console import Console  # extra: train
    from rich.progress import (  # extra: train
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                        TextColumn("left"), TimeRemainingColumn(), console=Console(file=sys.stderr),
                        transient=True)
    progress.start()
    return progress, progress.add_task(description, total=total)
