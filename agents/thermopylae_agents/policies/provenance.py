"""Where a measurement or a policy came from: the git commit of the checkout that made it, the card
files of its game, the package version, and the header of a benchmark's result file."""

from __future__ import annotations

import datetime
import hashlib
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from thermopylae_env import __version__
from thermopylae_env.cards import seeds_dir

__all__ = ["Measurement", "deck_files", "git_commit", "load_average", "policy_provenance"]


def git_commit(where: str | Path | None = None) -> str:
    """The short commit of the git checkout holding ``where`` (this package by default), with
    ``+uncommitted`` when its work tree has changes; ``unknown`` outside a checkout or without git."""
    root = Path(where if where is not None else __file__).resolve()
    if root.is_file():
        root = root.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True,
                               text=True, timeout=10, check=False)
    except OSError:
        return "unknown"
    if out.returncode != 0 or not out.stdout.strip():
        return "unknown"
    return out.stdout.strip() + ("+uncommitted" if dirty.stdout.strip() else "")


# The card files each game reads: a policy's description records their names and hashes, so that a
# changed deck is seen even though the env id stays the same.
_GAME_DECKS = {
    "thermopylae/Coop-v0": {"persian": "persian_deck.csv", "spartan": "spartan_deck.csv"},
    "thermopylae/DuelGreek-v0": {"greek": "duel_greek_deck.csv", "persian": "duel_persian_deck.csv"},
    "thermopylae/DuelPersian-v0": {"greek": "duel_greek_deck.csv", "persian": "duel_persian_deck.csv"},
}


def deck_files(env_id: str) -> dict[str, dict[str, str]]:
    """The default card files of ``env_id``'s game: for each deck its file name and the SHA-256 of the
    file (``ValueError`` for an env id of no game of this package)."""
    if env_id not in _GAME_DECKS:
        raise ValueError(f"unknown env id {env_id!r}; expected one of {', '.join(sorted(_GAME_DECKS))}")
    folder = seeds_dir()
    return {deck: {"name": name, "sha256": hashlib.sha256((folder / name).read_bytes()).hexdigest()}
            for deck, name in _GAME_DECKS[env_id].items()}


def policy_provenance(
    env_id: str,
    training_commit: str = "unknown",
    training_command: str = "unknown",
    package_version: str = "unknown",
    **extra: str,
) -> dict[str, Any]:
    """What a policy description records about where the policy came from: the default decks of its game
    (names and hashes), the package version and git commit of the checkout that trained it and the
    training command (``"unknown"`` where they are not known: an SB3 zip records none of them), the
    package version and commit that wrote the description, and ``extra`` facts (strings)."""
    return {
        "decks": deck_files(env_id),
        "package_version": package_version,
        "training_commit": training_commit,
        "training_command": training_command,
        "written_by": {"package_version": __version__, "commit": git_commit()},
        **extra,
    }


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, rounded to hundredths (other processes share the CPUs and slow
    a measurement down); ``None`` where the OS does not tell."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


class Measurement:
    """The clocks and the load average of one benchmark run, started when it is made; ``header`` then gives
    the fields every result file opens with, so that each says when, from which commit and command, how
    long and on what machine (with its load) it was measured."""

    def __init__(self) -> None:
        self.load_start = load_average()
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def header(self, script: str | Path, argv: list[str] | None = None) -> dict[str, Any]:
        """``date`` (UTC, now), ``commit`` (of the checkout holding ``script``), ``command`` (``script`` as
        ``folder/name`` and its arguments: ``argv``, or the process's own when ``None``), ``seconds`` and
        ``cpu_seconds`` since the start, and ``machine`` (CPUs, platform, load averages at the start and
        now)."""
        path = Path(script).resolve()
        arguments = sys.argv[1:] if argv is None else list(argv)
        return {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": git_commit(path),
            "command": " ".join([f"{path.parent.name}/{path.name}", *arguments]),
            "seconds": round(time.perf_counter() - self._wall, 1),
            "cpu_seconds": round(time.process_time() - self._cpu, 1),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "load_average_start": self.load_start, "load_average_end": load_average()},
        }
