"""Progress of the long stages of a run (expert games, cloning, DAgger, PPO, evaluations, the report).

On a terminal each stage is a tqdm bar that says what is being done and the time left. Elsewhere (a log
file, a pipe, ``--no-progress``) a stage prints one line when it starts and one when it ends, and a long
stage also a line every [`HEARTBEAT_SECONDS`][thermopylae_agents.training.progress.HEARTBEAT_SECONDS] with its
count and the time left, so a job watched through ``tee`` or a CI log never goes silent for long.
"""

from __future__ import annotations

import datetime
import sys
import time
from typing import Any

__all__ = ["HEARTBEAT_SECONDS", "Stage", "format_seconds", "log"]

HEARTBEAT_SECONDS = 20.0


def log(message: str) -> None:
    """One line of the run's log (stdout, flushed, with the time of day)."""
    print(f"[train {datetime.datetime.now():%H:%M:%S}] {message}", flush=True)


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
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=self.total,
                desc=self.description,
                unit=f" {self.unit}",
                leave=False,
                dynamic_ncols=True,
                smoothing=0.05,
            )
        log(f"{self.description}: {self.total:,} {self.unit} ...")
        return self

    def advance(self, n: int = 1) -> None:
        self.update_to(self.done + int(n))

    def update_to(self, done: int) -> None:
        step, self.done = int(done) - self.done, int(done)
        if self._bar is not None:
            self._bar.update(step)
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
            self._bar.close()
        if kind is None:
            log(f"{self.description}: done, {self.done:,} {self.unit} in {format_seconds(self.seconds)}")
