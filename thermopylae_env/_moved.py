"""The former flat module names of the package, kept importable during a deprecation period.

`MOVED` maps each old module name to its new home. `install` puts `MovedModuleFinder` on
``sys.meta_path``: ``import thermopylae_env.coop_env`` (or ``from thermopylae_env import coop_env``) then
imports ``thermopylae_env.coop.env``, warns once per old name with a ``DeprecationWarning`` naming the new
path, and binds the old name to the very same module object (so a test that patches one patches both).
``thermopylae_env.coop`` and ``thermopylae_env.duel`` are packages now and re-export what the former
modules of those names held.

`PUBLIC` holds the names that are not deprecated but only other names of a module:
``thermopylae_env.duel_v1`` (PettingZoo's ``<game>_v<version>`` name) is ``thermopylae_env.duel.pettingzoo``,
imported without a warning; the former version's name ``duel_v0`` warns (its ``max_cycles`` counted
micro-actions, see the CHANGELOG).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType

__all__ = ["MOVED", "PUBLIC", "MovedModuleFinder", "install"]

MOVED: dict[str, str] = {
    "thermopylae_env.coop_layout": "thermopylae_env.coop.layout",
    "thermopylae_env._coop_kernel": "thermopylae_env.coop.kernel",
    "thermopylae_env.coop_vector": "thermopylae_env.coop.vector",
    "thermopylae_env.coop_env": "thermopylae_env.coop.env",
    "thermopylae_env.sb3_vec": "thermopylae_env.coop.sb3",
    "thermopylae_env.duel_layout": "thermopylae_env.duel.layout",
    "thermopylae_env._duel_kernel": "thermopylae_env.duel.kernel",
    "thermopylae_env.duel_vector": "thermopylae_env.duel.vector",
    "thermopylae_env.duel_env": "thermopylae_env.duel.env",
    "thermopylae_env.duel_sb3_vec": "thermopylae_env.duel.sb3",
    "thermopylae_env.opponents": "thermopylae_env.duel.opponents",
    # The PettingZoo view's version went up when max_cycles came to count cycles (CHANGELOG).
    "thermopylae_env.duel_v0": "thermopylae_env.duel.pettingzoo",
}

PUBLIC: dict[str, str] = {
    "thermopylae_env.duel_v1": "thermopylae_env.duel.pettingzoo",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the new module itself: ``create_module`` returns the imported new module, and
    the import system then binds the old name to it in ``sys.modules`` and on the parent package."""

    def __init__(self, new_name: str, deprecated: bool) -> None:
        self.new_name = new_name
        self.deprecated = deprecated
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if self.deprecated:
            warnings.warn(f"{spec.name} has moved to {self.new_name}; import it from there",
                          DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new_name)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the new module ran at its own import); only its own spec is put back, which the
        import system replaced by the old name's."""
        module.__spec__ = self._spec


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old names of ``moved`` (deprecated: a warning) and ``public`` (other names of a module,
    without a warning), and nothing else; by default this package's `MOVED` and `PUBLIC`. The
    agents package installs one of its own with its maps."""

    def __init__(self, moved: Mapping[str, str] = MOVED, public: Mapping[str, str] = PUBLIC) -> None:
        self.moved = moved
        self.public = public

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        for names, deprecated in ((self.moved, True), (self.public, False)):
            if fullname in names:
                return importlib.machinery.ModuleSpec(fullname, _AliasLoader(names[fullname], deprecated))
        return None


def install(finder: MovedModuleFinder | None = None) -> None:
    """Put ``finder`` (default: one for this package's names) on ``sys.meta_path``; a second call with the
    same maps adds none."""
    finder = finder if finder is not None else MovedModuleFinder()
    if not any(isinstance(f, MovedModuleFinder) and f.moved is finder.moved for f in sys.meta_path):
        sys.meta_path.append(finder)
