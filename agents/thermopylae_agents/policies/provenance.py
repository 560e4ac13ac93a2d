"""Where a measurement came from: the git commit of the checkout that made it."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git_commit"]


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
