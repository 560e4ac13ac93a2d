"""The package's old module paths, kept importable: each old name loads its new module, with a
`DeprecationWarning` naming the new path.

Saved SB3 models pickle the classes they use by module path (``thermopylae_agents.fight_features``), and
scripts and notebooks written before the package was split into ``players``, ``policies``, ``evaluation``,
``training`` and ``cli`` import the flat names. A finder on `sys.meta_path` answers exactly the names
of `MOVED`; the two old modules whose names are now packages (``evaluation``, ``cli``) forward
their old attributes through `forward_attributes`. Imports nothing from this package (only the env
package's alias finder), so that the package ``__init__`` can install it before anything else is loaded.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import warnings
from collections.abc import Callable
from typing import Any

from thermopylae_env._moved import MovedModuleFinder
from thermopylae_env._moved import install as install_finder

__all__ = ["MOVED", "MOVED_ATTRIBUTES", "PICKLED", "RENAMED", "forward_attributes", "install"]

_P = "thermopylae_agents"

# old module -> new module
MOVED: dict[str, str] = {
    f"{_P}.base": f"{_P}.players.base",
    f"{_P}.random_agent": "thermopylae_env.duel.opponents",
    f"{_P}.coop_heuristic": f"{_P}.players.coop_heuristic",
    f"{_P}.coop_search": f"{_P}.players.coop_search",
    f"{_P}.coop_features": f"{_P}.players.coop_features",
    f"{_P}.fight_features": f"{_P}.players.fight_features",
    f"{_P}.duel_heuristic": "thermopylae_env.duel.opponents",
    f"{_P}.duel_batch": f"{_P}.evaluation.duel_batch",
    f"{_P}.kernels": f"{_P}.players.kernels",
    f"{_P}.registry": f"{_P}.policies.registry",
    f"{_P}.sb3_agent": f"{_P}.policies.sb3_agent",
    f"{_P}.frozen_policy": f"{_P}.policies.frozen_policy",
    f"{_P}.safe_policy": f"{_P}.policies.safe_policy",
    f"{_P}.provenance": f"{_P}.policies.provenance",
    f"{_P}.stats": f"{_P}.evaluation.stats",
    f"{_P}.exploitability": f"{_P}.training.exploitability",
    f"{_P}.rllib.agent": f"{_P}.policies.rllib_policy",
    f"{_P}.coop_bound": f"{_P}.evaluation.coop_bound",
    f"{_P}._coop_bound_kernel": f"{_P}.evaluation._coop_bound_kernel",
    f"{_P}.duel_table": f"{_P}.evaluation.duel_table",
    f"{_P}.render_game": f"{_P}.evaluation.render_game",
    f"{_P}.replay": f"{_P}.evaluation.replay",
    f"{_P}.imitation": f"{_P}.training.imitation",
    f"{_P}.ppo_native": f"{_P}.training.ppo_native",
    f"{_P}.console": f"{_P}.cli.console",
    f"{_P}.coop_bound_cli": f"{_P}.cli.bound",
    f"{_P}.training.cli": f"{_P}.cli.train",
}

# Old names that the shipped SB3 zips pickle: a saved model is not code its user can update, so these
# load without a warning.
PICKLED = frozenset({f"{_P}.fight_features"})

# old module that is now a package -> the new modules that hold its old attributes, searched in order
MOVED_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    f"{_P}.evaluation": (f"{_P}.evaluation.games", f"{_P}.evaluation.tables", f"{_P}.evaluation.stats",
                         f"{_P}.cli.evaluate"),
    f"{_P}.cli": (f"{_P}.cli.app", f"{_P}.cli.play", f"{_P}.cli.args"),
}

# old package attribute -> (the module that now defines it, its new name): names given to a different
# thing than the env's class of the same name
RENAMED: dict[str, dict[str, tuple[str, str]]] = {
    f"{_P}.evaluation": {"GameRecord": (f"{_P}.evaluation.games", "GameResult")},
}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; import it from there", DeprecationWarning, stacklevel=3)


# Every old name loads its new module through the env package's one alias finder; the pickled names as
# other names of a module, without a warning.
_FINDER = MovedModuleFinder(
    moved={old: new for old, new in MOVED.items() if old not in PICKLED},
    public={old: MOVED[old] for old in PICKLED},
)


def install() -> None:
    """Put the finder of the old names on `sys.meta_path` (once)."""
    install_finder(_FINDER)


def forward_attributes(package: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that finds the attributes of its old flat module in the
    new modules of `MOVED_ATTRIBUTES` (with a `DeprecationWarning`)."""
    sources = MOVED_ATTRIBUTES[package]
    renamed = RENAMED.get(package, {})

    def __getattr__(name: str) -> Any:
        if name in renamed:
            source, new_name = renamed[name]
            _warn(f"{package}.{name}", f"{source}.{new_name}")
            return getattr(importlib.import_module(source), new_name)
        if not name.startswith("__"):
            for source in sources:
                module = importlib.import_module(source)
                if name in vars(module):
                    _warn(f"{package}.{name}", f"{source}.{name}")
                    return vars(module)[name]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
