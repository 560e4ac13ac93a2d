"""The console scripts other than ``thermopylae`` (``thermopylae-train``, ``thermopylae-evaluate``, ...):
aliases of ``thermopylae <subcommand>``, kept for the commands users already type.

Each alias runs its subcommand's module of [`thermopylae_agents.cli`][]; the wrapper only answers
``--version`` before that module is imported (so it works without the optional dependencies) and turns an
``ImportError`` of an optional dependency into one line naming the extra to install, and Ctrl-C into the
line ``interrupted`` with exit status 130, instead of a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = [
    "EXTRA_OF_MODULE",
    "missing_extra_message",
    "run",
    "train",
    "evaluate",
    "export_policy",
    "train_rllib",
    "exploitability",
    "coop_bound",
    "ppo_native",
    "duel_table",
    "render_game",
]

# Top-level module -> the extra of pyproject.toml that installs it.
EXTRA_OF_MODULE = {
    "torch": "train",
    "stable_baselines3": "train",
    "sb3_contrib": "train",
    "tensorboard": "train",
    "yaml": "train",
    "tqdm": "train",
    "rich": "train",
    "matplotlib": "train",
    "tyro": "train",
    "pettingzoo": "pettingzoo",
    "PIL": "render",
    "moviepy": "video",
    "pygame": "video",
    "rl_zoo3": "rlzoo",
    "ray": "rllib",
    "tree": "rllib",  # dm-tree
    "lz4": "rllib",
    "ormsgpack": "rllib",
    "starlette": "web",
    "uvicorn": "web",
}


def missing_extra_message(prog: str, error: ImportError) -> str | None:
    """The one-line message for an optional dependency that is missing, or ``None`` for any other
    import error (a bug, which keeps its traceback)."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(name)
    if extra is None:
        return None
    return f"{prog}: this command needs the '{extra}' extra ({name} is not installed): " \
           f"pip install 'thermopylae-env[{extra}]'"


def _version() -> str:
    from thermopylae_env import __version__

    return __version__


def run(prog: str, target: str, argv: Sequence[str] | None = None) -> int:
    """Run ``target`` (``"module:function"``) as the console script ``prog``; its exit status.

    A ``main`` that returns its result for Python callers (a dict, or ``None``) exits with 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        print(f"{prog} {_version()}")
        return 0
    module_name, _, function = target.partition(":")
    try:
        main = getattr(importlib.import_module(module_name), function)
        result = main(args)
    except ImportError as err:
        message = missing_extra_message(prog, err)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT, no traceback
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0


def train(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-train", "thermopylae_agents.cli.train:main", argv)


def evaluate(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-evaluate", "thermopylae_agents.cli.evaluate:main", argv)


def export_policy(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-export-policy", "thermopylae_agents.cli.export:main", argv)


def train_rllib(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-train-rllib", "thermopylae_agents.cli.rllib:main", argv)


def exploitability(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-exploitability", "thermopylae_agents.cli.exploitability:main", argv)


def coop_bound(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-coop-bound", "thermopylae_agents.cli.bound:main", argv)


def ppo_native(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-ppo-native", "thermopylae_agents.cli.ppo_native:main", argv)


def duel_table(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-duel-table", "thermopylae_agents.cli.duel_table:main", argv)


def render_game(argv: Sequence[str] | None = None) -> int:
    return run("thermopylae-render-game", "thermopylae_agents.cli.render:main", argv)
