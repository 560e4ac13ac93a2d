"""The old attributes of ``thermopylae_agents.cli`` (``main`` and the others of the former flat module), with
a `DeprecationWarning`: what is left of the layer of old names, because ``cli/__init__.py`` still installs
[`forward_attributes`][thermopylae_agents._moved.forward_attributes]. When that file stops importing it,
this module goes too (the CHANGELOG lists the old names as removed).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["MOVED_ATTRIBUTES", "forward_attributes"]

# old module that is now a package -> the new modules that hold its old attributes, searched in order
MOVED_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "thermopylae_agents.cli": ("thermopylae_agents.cli.app", "thermopylae_agents.cli.play",
                               "thermopylae_agents.cli.args"),
}


def forward_attributes(package: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that finds the attributes of its old flat module in the
    new modules of `MOVED_ATTRIBUTES` (with a `DeprecationWarning`)."""
    sources = MOVED_ATTRIBUTES[package]

    def __getattr__(name: str) -> Any:
        if not name.startswith("__"):
            for source in sources:
                module = importlib.import_module(source)
                if name in vars(module):
                    warnings.warn(f"{package}.{name} moved to {source}.{name}; import it from there",
                                  DeprecationWarning, stacklevel=2)
                    return vars(module)[name]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
