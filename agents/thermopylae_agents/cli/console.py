"""One message and one exit status for a missing optional dependency, everywhere
([`extra_message`][thermopylae_agents.cli.console.extra_message],
[`EXIT_MISSING_EXTRA`][thermopylae_agents.cli.console.EXIT_MISSING_EXTRA]): ``thermopylae`` turns an
``ImportError`` of an optional dependency into that one line
([`missing_extra_message`][thermopylae_agents.cli.console.missing_extra_message]), and
[`require_extra`][thermopylae_agents.cli.console.require_extra] is what a command calls before it starts work
that needs the extra.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["EXIT_MISSING_EXTRA", "EXTRA_OF_MODULE", "extra_message", "missing_extra_message", "require_extra"]

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
