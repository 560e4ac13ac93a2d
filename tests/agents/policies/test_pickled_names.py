"""The class paths that saved SB3 models pickle: the shipped zips (and users' runs of the same time) name
``thermopylae_agents.training.CoopFightFeatures`` and ``thermopylae_agents.fight_features.CoopFightFeatures``,
and a run with a ``lin_`` schedule saved before ``training`` became a package names
``thermopylae_agents.training.LinearSchedule``. These names, and no other old name, resolve."""

from __future__ import annotations

import base64
import importlib
import json
import pickletools
import zipfile
from pathlib import Path

import gymnasium as gym
import pytest

from thermopylae_env import COOP_ID

POLICY_DIR = Path(__file__).resolve().parents[3] / "agents" / "thermopylae_agents" / "policies"
ZIPS = sorted(POLICY_DIR.glob("*.zip"))
PICKLED_PATHS = {
    ("thermopylae_agents.training", "CoopFightFeatures"),
    ("thermopylae_agents.fight_features", "CoopFightFeatures"),
}


def _pickled_globals(path: Path) -> set[tuple[str, str]]:
    """The (module, name) pairs of this project that the cloudpickles in an SB3 zip's ``data`` entry name."""
    data = json.loads(zipfile.ZipFile(path).read("data"))
    found = set()
    for value in data.values():
        if not (isinstance(value, dict) and ":serialized:" in value):
            continue
        strings = [arg for _, arg, _ in pickletools.genops(base64.b64decode(value[":serialized:"]))
                   if isinstance(arg, str)]
        found |= {(module, name) for module, name in zip(strings, strings[1:], strict=False)
                  if module.startswith("thermopylae_agents")}
    return found


def test_the_shipped_zips_name_exactly_the_kept_class_paths():
    named = set().union(*(_pickled_globals(path) for path in ZIPS))
    assert named == PICKLED_PATHS


@pytest.mark.parametrize(("module", "name"), sorted(PICKLED_PATHS))
def test_each_pickled_class_path_is_the_class_of_its_home(module, name):
    pytest.importorskip("torch")
    from thermopylae_agents.training.fight_features import CoopFightFeatures

    assert getattr(importlib.import_module(module), name) is CoopFightFeatures


@pytest.mark.parametrize("zip_name", ["coop_maskable_ppo", "coop_2p_maskable_ppo"])
def test_a_shipped_zip_of_each_old_path_loads_with_maskable_ppo_and_plays_a_whole_game(zip_name):
    """``coop_maskable_ppo.zip`` pickles the ``training`` path, ``coop_2p_maskable_ppo.zip`` the
    ``fight_features`` one."""
    sb3_contrib = pytest.importorskip("sb3_contrib")
    model = sb3_contrib.MaskablePPO.load(POLICY_DIR / f"{zip_name}.zip", device="cpu")
    env = gym.make(COOP_ID, num_players=2 if zip_name.startswith("coop_2p") else 1)
    obs, info = env.reset(seed=0)
    for _ in range(1000):
        action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
        obs, _, terminated, truncated, info = env.step(int(action))
        assert not info.get("illegal_action")
        if terminated or truncated:
            break
    assert terminated and "is_success" in info


def test_a_linear_schedule_saved_under_the_pre_split_path_loads(monkeypatch):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.save_util import data_to_json, json_to_data

    from thermopylae_agents.training.config import LinearSchedule

    # SB3 writes the schedule as a cloudpickle that names the class by its __module__ at save time.
    monkeypatch.setattr(LinearSchedule, "__module__", "thermopylae_agents.training")
    saved = data_to_json({"learning_rate": LinearSchedule(3e-4)})
    monkeypatch.undo()
    assert b"thermopylae_agents.training.config" not in base64.b64decode(
        json.loads(saved)["learning_rate"][":serialized:"])
    loaded = json_to_data(saved)["learning_rate"]
    assert type(loaded) is LinearSchedule and loaded(0.5) == pytest.approx(1.5e-4)


@pytest.mark.parametrize("name", ["train", "Config", "FrozenPolicy", "warm_start"])
def test_the_training_package_answers_no_other_name(name):
    from thermopylae_agents import training

    with pytest.raises(AttributeError):
        getattr(training, name)


@pytest.mark.parametrize("old", ["thermopylae_agents.sb3_agent", "thermopylae_agents.registry",
                                 "thermopylae_agents.coop_heuristic", "thermopylae_agents.rllib.agent"])
def test_a_flat_module_name_of_before_the_layers_is_not_importable(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)

