"""The environment package's public module names: PettingZoo's ``thermopylae_env.duel_v1``, a clear error for
the removed version ``duel_v0``, and no other name than a module's own (the flat module names of before the
``coop/`` and ``duel/`` packages were never released and are gone)."""

from __future__ import annotations

import importlib

import pytest

import thermopylae_env

FLAT_NAMES = ("coop_layout", "_coop_kernel", "coop_vector", "coop_env", "sb3_vec", "duel_layout",
              "_duel_kernel", "duel_vector", "duel_env", "duel_sb3_vec", "opponents")


def test_duel_v1_holds_the_pettingzoo_constructors_of_the_duel():
    pytest.importorskip("pettingzoo")
    from thermopylae_env import duel_v1
    from thermopylae_env.duel import pettingzoo

    assert (duel_v1.env, duel_v1.raw_env, duel_v1.parallel_env) == \
        (pettingzoo.env, pettingzoo.raw_env, pettingzoo.parallel_env)
    env = duel_v1.env()
    env.reset(seed=0)
    assert env.agent_selection in env.possible_agents


@pytest.mark.parametrize("constructor", ["env", "raw_env", "parallel_env"])
def test_the_removed_version_duel_v0_imports_and_names_duel_v1_when_built(constructor):
    namespace: dict = {}
    exec("from thermopylae_env import duel_v0", namespace)  # as a script of the v0 days wrote it
    duel_v0 = namespace["duel_v0"]
    removed = r"thermopylae_env\.duel_v0 was removed: use thermopylae_env\.duel_v1"
    with pytest.raises(ImportError, match=removed):
        getattr(duel_v0, constructor)()


def test_an_unknown_name_of_the_package_is_an_attribute_error():
    assert getattr(thermopylae_env, "no_such_name", None) is None
    with pytest.raises(ImportError):
        exec("from thermopylae_env import no_such_name", {})


@pytest.mark.parametrize("name", FLAT_NAMES)
def test_a_flat_module_name_of_before_the_game_packages_is_not_importable(name):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"thermopylae_env.{name}")


def test_the_game_packages_hold_no_names_of_their_modules():
    from thermopylae_env import coop, duel

    assert not hasattr(coop, "CoopGame") and not hasattr(duel, "DuelGame")
