"""The console scripts other than ``thermopylae`` (``thermopylae-train``, ``thermopylae-evaluate``, ...):
aliases of ``thermopylae <subcommand>``, kept for the commands users already type.

Each alias runs its subcommand's module of [`thermopylae_agents.cli`][]; the wrapper only answers
``--version`` before that module is imported (so it works without the optional dependencies) and turns an
``ImportError`` of an optional dependency into one line naming the extra to install, and Ctrl-C into the
line ``interrupted`` with exit status 130, instead of a traceback.

A missing optional dependency has one message and one exit status everywhere
([`extra_message`][thermopylae_agents.cli.console.extra_message],
[`EXIT_MISSING_EXTRA`][thermopylae_agents.cli.console.EXIT_MISSING_EXTRA]): the wrappers here and in
``thermopylae``, and [`require_extra`][thermopylae_agents.cli.console.require_extra], which a command calls
before it starts work that needs the extra.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence

from thermopylae_env.threads import configure_environment

__all__ = [
    "EXIT_MISSING_EXTRA",
    "EXTRA_OF_MODULE",
    "extra_message",
    "missing_extra_message",
    "require_extra",
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
    "rich": "train",
    "matplotlib": "train",
    "tyro": "train",
    "pettingzoo": "pettingzoo",
    "PIL": "render",
    "moviepy": "video",
    "pygame": "video",
    "rl_zoo3": "rlzoo",
    "huggingface_hub": "rlzoo",  # thermopylae export --push
    "ray": "rllib",
    "tree": "rllib",  # dm-tree
    "lz4": "rllib",
    "ormsgpack": "rllib",
    "starlette": "web",
    "uvicorn": "web",
}


#: the exit status of a command stopped by a missing optional dependency (that of a usage error too)
EXIT_MISSING_EXTRA = 2


def extra_message(prog: str, extra: str, module: str) -> str:
    """The one line that says the command ``prog`` needs ``extra`` (``module`` is missing)."""
    return f"{prog}: this command needs the '{extra}' extra ({module} is not installed): " \
           f'pip install "thermopylae-env[{extra}]"'


def missing_extra_message(prog: str, error: ImportError) -> str | None:
    """The one-line message for an optional dependency that is missing, or ``None`` for any other
    import error (a bug, which keeps its traceback)."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(name)
    if extra is None:
        return None
    return extra_message(prog, extra, name)


def require_extra(prog: str, *modules: str) -> None:
    """Stop the command ``prog`` with the one-line message and
    [`EXIT_MISSING_EXTRA`][thermopylae_agents.cli.console.EXIT_MISSING_EXTRA] if one of ``modules`` (top-level
    names of [`EXTRA_OF_MODULE`][thermopylae_agents.cli.console.EXTRA_OF_MODULE]) is not installed; call it
    before any work."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            print(extra_message(prog, EXTRA_OF_MODULE[module], module), file=sys.stderr)
            raise SystemExit(EXIT_MISSING_EXTRA)


def _version() -> str:
    from thermopylae_env import __version__

    return __version__


def run(prog: str, target: str, argv: Sequence[str] | None = None) -> int:
    """Run ``target`` (``"module:function"``) as the console script ``prog``; its exit status.

    A ``main`` that returns its result for Python callers (a dict, or ``None``) exits with 0."""
    # Before the command's module is imported: torch's OpenMP runtime reads its settings once, when it loads.
    configure_environment()
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
        return EXIT_MISSING_EXTRA
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
