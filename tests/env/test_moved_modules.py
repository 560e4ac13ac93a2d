"""The former flat module names of ``thermopylae_env`` (``thermopylae_env._moved``): each still imports,
warns once with a ``DeprecationWarning`` that names its new home, and is that very module object."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import thermopylae_env  # noqa: F401 - installs the finder of the old names
from thermopylae_env._moved import MOVED, PUBLIC

ROOT = Path(__file__).resolve().parents[2]


def _forget(name: str) -> None:
    """Drop an old name from the import system's caches so that the next import goes through the finder."""
    sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    if child in vars(sys.modules[parent]):
        delattr(sys.modules[parent], child)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_name_imports_the_new_module_and_warns_with_its_new_path(old):
    new_module = importlib.import_module(MOVED[old])
    _forget(old)
    with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
        old_module = importlib.import_module(old)
    assert old_module is new_module
    assert sys.modules[old] is new_module


@pytest.mark.parametrize("old", sorted(MOVED))
def test_from_package_import_old_name_gives_the_new_module(old):
    new_module = importlib.import_module(MOVED[old])
    _forget(old)
    child = old.rpartition(".")[2]
    with pytest.warns(DeprecationWarning):
        namespace: dict = {}
        exec(f"from thermopylae_env import {child}", namespace)
    assert namespace[child] is new_module


def test_an_old_name_keeps_the_new_modules_own_name_and_spec():
    for old, new in MOVED.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(old)
        assert module.__name__ == new and module.__spec__.name == new, old


def test_a_patch_through_an_old_name_is_seen_through_the_new_one(monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("thermopylae_env.opponents")
    from thermopylae_env.duel import opponents

    monkeypatch.setattr(old, "RandomAgent", "patched")
    assert opponents.RandomAgent == "patched"


def test_duel_v1_is_the_pettingzoo_module_without_a_warning():
    pytest.importorskip("pettingzoo")
    from thermopylae_env.duel import pettingzoo

    _forget("thermopylae_env.duel_v1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from thermopylae_env import duel_v1
    assert duel_v1 is pettingzoo
    assert PUBLIC == {"thermopylae_env.duel_v1": "thermopylae_env.duel.pettingzoo"}


def test_the_former_version_duel_v0_warns_and_is_the_same_module():
    pytest.importorskip("pettingzoo")
    from thermopylae_env.duel import pettingzoo

    _forget("thermopylae_env.duel_v0")
    with pytest.warns(DeprecationWarning, match=r"duel\.pettingzoo"):
        from thermopylae_env import duel_v0
    assert duel_v0 is pettingzoo


def test_the_former_game_modules_are_packages_that_keep_their_public_names():
    from thermopylae_env import coop, duel
    from thermopylae_env.coop import observation, rules, state
    from thermopylae_env.duel import layout
    from thermopylae_env.duel import rules as duel_rules

    assert coop.CoopGame is rules.CoopGame and coop.CoopState is state.CoopState
    assert coop.CoopView is observation.CoopView
    assert duel.DuelGame is duel_rules.DuelGame and duel.decode_action is layout.decode_action
    for package in (coop, duel):
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert not missing, (package.__name__, missing)


def test_an_unknown_module_name_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("thermopylae_env.no_such_module")


def test_every_old_name_imports_in_a_fresh_interpreter_with_one_warning_each():
    names = sorted(MOVED)
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        f"    for name in {names!r}:\n"
        "        importlib.import_module(name)\n"
        "        importlib.import_module(name)\n"
        "print(sorted(str(w.message).split()[0] for w in caught if w.category is DeprecationWarning))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == repr(names)
