"""The pickle-free policy format: shipped policies load without unpickling and play as their SB3 zips."""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import re
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env
from thermopylae_agents.policies import safe_policy
from thermopylae_agents.policies.safe_policy import (
    POLICY_DIR,
    SHIPPED_ENV_IDS,
    export_sb3_policy,
    load_safe_policy,
    shipped_policy_names,
)

GAMES = {"thermopylae/Coop-v0": 300, "thermopylae/DuelGreek-v0": 200, "thermopylae/DuelPersian-v0": 200}
TEAM_SIZES = (2, 3, 4)


def _env_kwargs(name: str) -> dict[str, int]:
    """The game a shipped policy was trained on: ``coop_<N>p_...`` a team of N, the others the default."""
    match = re.fullmatch(r"coop_(\d)p_.+", name)
    return {"num_players": int(match.group(1))} if match else {}


def _refuse(*args, **kwargs):
    raise AssertionError("something tried to unpickle or to open an SB3 zip")


@pytest.fixture
def no_unpickling(monkeypatch):
    """Make every way to unpickle (and to open a .zip archive) fail while the test runs.

    Modules that keep their own reference to ``pickle.loads`` (cloudpickle, via SB3) are imported first,
    so that the patch cannot leak into them for later tests."""
    for module in ("cloudpickle", "stable_baselines3", "thermopylae_agents.training"):
        with contextlib.suppress(ImportError):
            __import__(module)
    monkeypatch.setattr(pickle, "load", _refuse)
    monkeypatch.setattr(pickle, "loads", _refuse)
    monkeypatch.setattr(pickle, "Unpickler", _refuse)
    real_zipfile = zipfile.ZipFile

    def guarded_zipfile(file, *args, **kwargs):
        if str(getattr(file, "name", file)).endswith(".zip"):
            _refuse()
        return real_zipfile(file, *args, **kwargs)

    monkeypatch.setattr(zipfile, "ZipFile", guarded_zipfile)
    try:
        import torch

        monkeypatch.setattr(torch, "load", _refuse)
    except ImportError:
        pass


def test_every_shipped_zip_has_a_safe_export():
    assert shipped_policy_names() == sorted(SHIPPED_ENV_IDS)
    assert sorted(p.stem for p in POLICY_DIR.glob("*.zip")) == sorted(SHIPPED_ENV_IDS)


def test_every_shipped_policy_has_a_model_card():
    for name in shipped_policy_names():
        card = (POLICY_DIR / f"{name}.md").read_text()
        assert name in card and SHIPPED_ENV_IDS[name] in card


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_loading_a_shipped_policy_by_name_never_unpickles(name, no_unpickling):
    policy = load_safe_policy(name)
    assert policy.env_id == SHIPPED_ENV_IDS[name]
    env = gym.make(policy.env_id, **_env_kwargs(name))
    obs, info = env.reset(seed=0)
    action = policy.act(obs, info["action_mask"])
    assert info["action_mask"][action]


def _visited_positions(
    policy, env_id: str, games: int, env_kwargs: dict[str, int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Play ``games`` games with the safe policy; return every observation, mask and chosen action."""
    env = gym.make(env_id, **(env_kwargs or {}))
    observations, masks, actions = [], [], []
    for game in range(games):
        obs, info = env.reset(seed=7_000 + game)
        done = False
        while not done:
            action = policy.act(obs, info["action_mask"])
            observations.append(obs)
            masks.append(np.asarray(info["action_mask"], bool))
            actions.append(action)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    return np.array(observations), np.array(masks), np.array(actions)


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_safe_policy_plays_the_same_greedy_actions_as_its_sb3_zip(name):
    pytest.importorskip("sb3_contrib")
    from thermopylae_agents.policies.sb3_agent import load_model

    policy = load_safe_policy(name)
    observations, masks, actions = _visited_positions(
        policy, policy.env_id, GAMES[policy.env_id], _env_kwargs(name)
    )
    model = load_model(POLICY_DIR / f"{name}.zip")
    sb3_actions, _ = model.predict(observations, action_masks=masks, deterministic=True)
    # Same action in every position of every game: so the games themselves are the same.
    assert len(actions) > 1000
    np.testing.assert_array_equal(sb3_actions, actions)


def test_export_then_load_round_trip_gives_the_same_logits(tmp_path):
    pytest.importorskip("sb3_contrib")
    from thermopylae_agents.policies.frozen_policy import FrozenPolicy
    from thermopylae_agents.policies.sb3_agent import load_model

    model = load_model(POLICY_DIR / "duel_greek_maskable_ppo.zip")
    json_path, arrays_path = export_sb3_policy(model, tmp_path / "greek", "thermopylae/DuelGreek-v0",
                                               provenance={"training_command": "python train.py"})
    assert arrays_path.suffix == ".safetensors"
    policy = load_safe_policy(json_path)
    obs = np.random.default_rng(0).random((64, policy.observation_size), dtype=np.float32)
    np.testing.assert_allclose(policy.logits(obs), FrozenPolicy(model).logits(obs), rtol=1e-5, atol=1e-5)
    assert load_safe_policy(arrays_path).name == "greek"
    provenance = policy.description["provenance"]
    assert provenance["training_commit"] == "unknown" and provenance["package_version"] == "unknown"
    assert provenance["training_command"] == "python train.py"
    assert provenance["written_by"]["package_version"] == thermopylae_env.__version__
    assert set(provenance["decks"]) == {"greek", "persian"}
    settings = provenance["hyperparameters"]
    assert (settings["algo"], settings["n_envs"], settings["n_steps"]) == ("MaskablePPO", model.n_envs,
                                                                          model.n_steps)
    assert settings["total_timesteps"] == model.num_timesteps and settings["clip_range"] == 0.2
    assert json.loads(settings["net_arch"]) == model.policy.net_arch
    assert settings["features_extractor"] == "FlattenExtractor" and settings["activation_fn"] == "Tanh"


def test_a_changing_schedule_is_recorded_as_its_text_and_a_constant_one_as_its_value():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from thermopylae_agents.training.config import LinearSchedule

    env = gym.make("thermopylae/DuelGreek-v0")
    model = MaskablePPO("MlpPolicy", env, learning_rate=LinearSchedule(3e-4), clip_range=0.1, n_steps=32,
                        batch_size=32, seed=5, policy_kwargs={"net_arch": [8]})
    settings = safe_policy.sb3_hyperparameters(model)
    assert settings["learning_rate"] == "lin_0.0003" and settings["clip_range"] == 0.1
    assert settings["seed"] == 5 and settings["total_timesteps"] == 0
    assert all(value is None or isinstance(value, (str, int, float)) for value in settings.values())


def _copy_pair(tmp_path: Path, name: str = "coop_maskable_ppo") -> tuple[Path, Path]:
    """An old (format version 1) pair of the shipped policy ``name``: its arrays as ``NAME.npz``."""
    json_path, npz_path = tmp_path / f"{name}.json", tmp_path / f"{name}.npz"
    np.savez(npz_path, **load_safe_policy(name).arrays)
    description = json.loads((POLICY_DIR / f"{name}.json").read_text())
    description.pop("provenance")
    description.update(format_version=1, arrays_sha256=safe_policy._sha256(npz_path))
    json_path.write_text(json.dumps(description))
    return json_path, npz_path


def _copy_v2_pair(tmp_path: Path, name: str = "coop_maskable_ppo") -> tuple[Path, Path]:
    """A copy of the shipped pair ``name`` (format version 2: ``NAME.safetensors``)."""
    json_path, st_path = tmp_path / f"{name}.json", tmp_path / f"{name}.safetensors"
    json_path.write_bytes((POLICY_DIR / f"{name}.json").read_bytes())
    st_path.write_bytes((POLICY_DIR / f"{name}.safetensors").read_bytes())
    return json_path, st_path


def test_array_file_that_does_not_match_its_description_is_refused(tmp_path):
    json_path, npz_path = _copy_pair(tmp_path)
    with np.load(npz_path) as data:
        arrays = {key: data[key] for key in data.files}
    arrays["linear0.bias"] = arrays["linear0.bias"] + 1
    np.savez(npz_path, **arrays)
    with pytest.raises(ValueError, match="SHA-256"):
        load_safe_policy(json_path)


def test_object_arrays_are_refused_without_unpickling(tmp_path, no_unpickling):
    json_path, npz_path = _copy_pair(tmp_path)
    # A pickled object array in place of the first weight: numpy refuses it with allow_pickle=False.
    np.savez(npz_path, **{"linear0.weight": np.array([{"evil": 1}], dtype=object)})
    description = json.loads(json_path.read_text())
    description["arrays_sha256"] = safe_policy._sha256(npz_path)
    json_path.write_text(json.dumps(description))
    with pytest.raises(ValueError, match="without pickle"):
        load_safe_policy(json_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(features="conv"), "features must be one of"),
        (lambda d: d.update(format_version=3), "version"),
        (lambda d: d.update(format_version=True), "version"),
        (lambda d: d.update(provenance=[]), "provenance must be an object"),
        (lambda d: d.update(provenance={"a": {"b": {"c": {}}}}), "nested two levels"),
        (lambda d: d.update(provenance={"decks": [1]}), "provenance.decks must be"),
        (lambda d: d["layers"].insert(1, {"type": "sigmoid"}), "type must be linear"),
        (lambda d: d["layers"][0].update({"in": 115}), "takes 115 inputs"),
        (lambda d: d.update(extra=1), "unknown keys"),
        (lambda d: d.pop("env_id"), "missing keys"),
        (lambda d: d.update(num_actions=True), "positive integer"),
    ],
)
def test_bad_description_is_refused_with_the_problem_named(tmp_path, change, message):
    json_path, _ = _copy_v2_pair(tmp_path)
    description = json.loads(json_path.read_text())
    change(description)
    json_path.write_text(json.dumps(description))
    with pytest.raises(ValueError, match=message):
        load_safe_policy(json_path)


def test_an_sb3_zip_or_an_unknown_name_is_refused_with_a_hint():
    with pytest.raises(ValueError, match="export it first"):
        load_safe_policy(POLICY_DIR / "coop_maskable_ppo.zip")
    with pytest.raises(ValueError, match="coop_maskable_ppo"):
        load_safe_policy("no_such_policy")


def test_bad_observation_or_empty_mask_is_refused():
    policy = load_safe_policy("coop_maskable_ppo")
    with pytest.raises(ValueError, match="observation of shape"):
        policy.act(np.zeros(10, np.float32), np.ones(72, bool))
    with pytest.raises(ValueError, match="all zeros"):
        policy.act(np.zeros(115, np.float32), np.zeros(72, bool))


def test_sampling_with_an_rng_plays_only_legal_actions():
    policy = load_safe_policy("coop_maskable_ppo", deterministic=False)
    env = gym.make("thermopylae/Coop-v0")
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    mask = info["action_mask"].astype(bool)
    picks = {policy.act(obs, mask, rng=rng) for _ in range(200)}
    assert picks and all(mask[a] for a in picks)
    assert np.isclose(policy.action_probabilities(obs, mask).sum(), 1.0)


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_the_registry_plays_a_shipped_policy_name_without_unpickling(name, no_unpickling):
    from thermopylae_agents.policies.registry import make_agent

    for spec in (name, f"fast:{name}"):
        agent, label = make_agent(spec, SHIPPED_ENV_IDS[name], env_kwargs=_env_kwargs(name))
        assert label == spec and agent.env_id == SHIPPED_ENV_IDS[name]


@pytest.mark.parametrize("players", TEAM_SIZES)
def test_each_team_size_has_a_shipped_policy_that_plays_every_seat_of_its_game(players, no_unpickling):
    from thermopylae_agents.policies.registry import make_agent, shipped_policies

    name = f"coop_{players}p_maskable_ppo"
    assert name in shipped_policies() and SHIPPED_ENV_IDS[name] == "thermopylae/Coop-v0"
    assert f"num_players={players}" in (POLICY_DIR / f"{name}.md").read_text()
    agent, label = make_agent(name, "coop", env_kwargs={"num_players": players})
    assert label == name
    env = gym.make("thermopylae/Coop-v0", num_players=players)
    seats = set()
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            seats.add(info["current_player"])
            action = agent.act(obs, info["action_mask"])
            assert info["action_mask"][action]
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    assert seats == set(range(players))


def test_the_registry_refuses_a_shipped_policy_for_another_game():
    from thermopylae_agents.policies.registry import AgentSpecError, make_agent

    with pytest.raises(AgentSpecError, match="plays thermopylae/Coop-v0"):
        make_agent("coop_maskable_ppo", "thermopylae/DuelGreek-v0")


def test_the_registry_plays_an_exported_json_path(no_unpickling):
    from thermopylae_agents.policies.registry import make_agent

    agent, _ = make_agent(str(POLICY_DIR / "duel_persian_maskable_ppo.json"), "thermopylae/DuelPersian-v0")
    assert agent.env_id == "thermopylae/DuelPersian-v0"


@pytest.mark.parametrize("spec", ["coop_maskable_ppo", "duel_greek_maskable_ppo"])
def test_playing_a_shipped_pickle_free_policy_imports_neither_torch_nor_sb3(spec):
    """In a fresh interpreter: load a shipped policy by name through the registry and play one move."""
    import os
    import subprocess
    import sys

    env_id = SHIPPED_ENV_IDS[spec]
    code = (
        "import sys, gymnasium as gym, thermopylae_env\n"
        "from thermopylae_agents.policies.registry import make_agent\n"
        f"env = gym.make({env_id!r})\n"
        "obs, info = env.reset(seed=0)\n"
        f"agent, _ = make_agent({spec!r}, {env_id!r})\n"
        "agent.act(obs, info['action_mask'])\n"
        "heavy = [m for m in ('torch', 'stable_baselines3', 'sb3_contrib', 'cloudpickle')\n"
        "         if m in sys.modules]\n"
        "training = sorted(m for m in sys.modules if m.startswith('thermopylae_agents.training'))\n"
        "print(heavy, training)\n"
    )
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "agents")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] []"


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_every_shipped_sb3_zip_still_loads(name):
    """The zips pickle ``thermopylae_agents.training.CoopFightFeatures`` or
    ``thermopylae_agents.fight_features.CoopFightFeatures``: both old names must keep resolving."""
    pytest.importorskip("sb3_contrib")
    from thermopylae_agents.policies.sb3_agent import load_model
    from thermopylae_agents.training.fight_features import CoopFightFeatures

    model = load_model(POLICY_DIR / f"{name}.zip")
    extractor = model.policy.pi_features_extractor
    env = gym.make(SHIPPED_ENV_IDS[name], **_env_kwargs(name))
    assert model.observation_space.shape == env.observation_space.shape
    if name.startswith("coop"):
        assert isinstance(extractor, CoopFightFeatures)


# ------------------------------------------------------------------ the game a policy was trained for


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_every_shipped_description_records_the_game_it_was_trained_on(name):
    description = json.loads((POLICY_DIR / f"{name}.json").read_text())
    assert description["env_id"] == SHIPPED_ENV_IDS[name]
    expected = {"num_players": _env_kwargs(name).get("num_players", 1)} if name.startswith("coop") else {}
    assert description["env_options"] == expected


@pytest.mark.parametrize(("spec", "players"), [("coop_2p_maskable_ppo", 1), ("coop_2p_maskable_ppo", 3),
                                               ("coop_maskable_ppo", 2), ("fast:coop_4p_maskable_ppo", 1)])
def test_the_registry_refuses_a_policy_for_another_team_size(spec, players, no_unpickling):
    from thermopylae_agents.policies.registry import AgentSpecError, make_agent

    kwargs = {} if players == 1 else {"num_players": players}
    with pytest.raises(AgentSpecError) as caught:
        make_agent(spec, "coop", env_kwargs=kwargs)
    message = str(caught.value)
    assert "\n" not in message
    trained = json.loads((POLICY_DIR / f"{spec.removeprefix('fast:')}.json").read_text())
    assert f"num_players={trained['env_options']['num_players']}" in message
    assert f"num_players={players}" in message


def test_an_sb3_zip_beside_its_description_is_refused_for_another_team_size_before_unpickling(no_unpickling):
    from thermopylae_agents.policies.registry import AgentSpecError, make_agent

    with pytest.raises(AgentSpecError, match="num_players=2"):
        make_agent(str(POLICY_DIR / "coop_2p_maskable_ppo.zip"), "coop", env_kwargs={"num_players": 4})


def test_a_description_without_env_options_was_trained_on_the_default_game(tmp_path):
    from thermopylae_agents.policies.registry import AgentSpecError, make_agent

    json_path, _ = _copy_pair(tmp_path)
    description = json.loads(json_path.read_text())
    description.pop("env_options")
    json_path.write_text(json.dumps(description))
    assert make_agent(str(json_path), "coop")[0].env_id == "thermopylae/Coop-v0"
    with pytest.raises(AgentSpecError, match="num_players=1"):
        make_agent(str(json_path), "coop", env_kwargs={"num_players": 2})


# -------------------------------------------------------------- shipped names are never local files


def _fake_pair(folder: Path, name: str) -> None:
    """A valid pair named ``name`` in ``folder`` that is not the shipped policy of that name (the duel
    Greek network, which also plays another game)."""
    greek = POLICY_DIR / "duel_greek_maskable_ppo.safetensors"
    (folder / f"{name}.safetensors").write_bytes(greek.read_bytes())
    (folder / f"{name}.json").write_bytes((POLICY_DIR / "duel_greek_maskable_ppo.json").read_bytes())


def test_a_pair_in_the_working_folder_does_not_replace_a_shipped_policy(tmp_path, monkeypatch):
    from thermopylae_agents.policies.registry import make_agent

    _fake_pair(tmp_path, "coop_maskable_ppo")
    monkeypatch.chdir(tmp_path)
    shipped = json.loads((POLICY_DIR / "coop_maskable_ppo.json").read_text())
    assert load_safe_policy("coop_maskable_ppo").description["arrays_sha256"] == shipped["arrays_sha256"]
    assert make_agent("coop_maskable_ppo", "coop")[0].env_id == "thermopylae/Coop-v0"
    # a path means the path
    assert load_safe_policy("./coop_maskable_ppo.json").env_id == "thermopylae/DuelGreek-v0"
    assert load_safe_policy("coop_maskable_ppo.json").env_id == "thermopylae/DuelGreek-v0"


def test_a_bare_name_that_is_not_shipped_is_not_looked_up_in_the_working_folder(tmp_path, monkeypatch):
    _fake_pair(tmp_path, "mine")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="no shipped policy"):
        load_safe_policy("mine")
    assert load_safe_policy("mine.json").name == "mine"


# ------------------------------------------------------------------------------------- hostile files


def _rehash(json_path: Path, npz_path: Path, change=None) -> None:
    description = json.loads(json_path.read_text())
    if change is not None:
        change(description)
    description["arrays_sha256"] = safe_policy._sha256(npz_path)
    json_path.write_text(json.dumps(description))


def _write_npz_bytes(tmp_path: Path, data: bytes) -> Path:
    json_path, npz_path = _copy_pair(tmp_path)
    npz_path.write_bytes(data)
    _rehash(json_path, npz_path)
    return json_path


def _single_value_error(json_path: Path) -> str:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the type is what is checked
        load_safe_policy(json_path)
    assert type(caught.value) is ValueError, f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert "\n" not in message and json_path.name in message
    return message


def test_an_array_file_that_is_not_a_zip_is_one_value_error(tmp_path):
    assert "not a zip" in _single_value_error(_write_npz_bytes(tmp_path, b"PK\x03\x04" + b"\0" * 200))


def test_a_truncated_array_file_is_one_value_error(tmp_path):
    (tmp_path / "whole").mkdir()
    _, npz_path = _copy_pair(tmp_path / "whole")
    data = npz_path.read_bytes()
    _single_value_error(_write_npz_bytes(tmp_path, data[: len(data) // 2]))


def test_a_deeply_nested_description_is_one_value_error(tmp_path):
    json_path, _ = _copy_pair(tmp_path)
    json_path.write_text("[" * 100_000 + "]" * 100_000)
    _single_value_error(json_path)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(features="coop_fight", observation_size=3),   # too short for the fight odds
        lambda d: d.update(observation_size=10**12),                      # would allocate terabytes
        lambda d: d["layers"][0].update({"in": 10**9}),
        lambda d: d.update(env_options={"num_players": [[1]]}),
        lambda d: d.update(env_options=[]),
    ],
)
def test_a_hostile_description_is_one_value_error(tmp_path, change):
    json_path, _ = _copy_pair(tmp_path)
    description = json.loads(json_path.read_text())
    change(description)
    json_path.write_text(json.dumps(description))
    _single_value_error(json_path)


def test_a_compressed_array_larger_than_its_description_is_refused_before_it_is_expanded(tmp_path):
    import tracemalloc

    json_path, npz_path = _copy_pair(tmp_path)
    with np.load(npz_path) as data:
        arrays = {key: data[key] for key in data.files}
    arrays["linear0.weight"] = np.zeros((335, 128 * 600), np.float32)  # ~100 MB, a few hundred KB zipped
    np.savez_compressed(npz_path, **arrays)
    assert npz_path.stat().st_size < 2_000_000
    _rehash(json_path, npz_path)
    tracemalloc.start()
    try:
        message = _single_value_error(json_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "linear0.weight" in message
    assert peak < 20_000_000


def test_an_npy_header_with_another_shape_is_refused(tmp_path):
    json_path, npz_path = _copy_pair(tmp_path)
    with np.load(npz_path) as data:
        arrays = {key: data[key] for key in data.files}
    arrays["linear0.bias"] = arrays["linear0.bias"][:64]
    np.savez(npz_path, **arrays)
    _rehash(json_path, npz_path)
    assert "linear0.bias" in _single_value_error(json_path)


# ----------------------------------------------------------------- format 2 (safetensors), format 1


def test_an_old_npz_pair_still_loads_and_plays_as_the_shipped_safetensors(tmp_path):
    json_path, npz_path = _copy_pair(tmp_path)
    old, new = load_safe_policy(npz_path), load_safe_policy("coop_maskable_ppo")
    assert old.description["format_version"] == 1 and new.description["format_version"] == 2
    obs = np.random.default_rng(1).random((32, old.observation_size), dtype=np.float32)
    np.testing.assert_array_equal(old.logits(obs), new.logits(obs))


def test_upgrade_policy_rewrites_an_old_pair_with_bit_identical_arrays(tmp_path):
    json_path, _ = _copy_pair(tmp_path)
    written, arrays_path = safe_policy.upgrade_policy(json_path, tmp_path / "new", {"training_commit": "abc"})
    assert arrays_path.name == "new.safetensors"
    upgraded = load_safe_policy(written)
    assert upgraded.description["format_version"] == 2
    assert upgraded.description["provenance"] == {"training_commit": "abc"}
    for key, array in load_safe_policy(json_path).arrays.items():
        assert upgraded.arrays[key].dtype == array.dtype and upgraded.arrays[key].tobytes() == array.tobytes()


def _write_safetensors(tmp_path: Path, arrays=None, data: bytes | None = None) -> Path:
    """A copy of the shipped pair whose ``.safetensors`` holds ``arrays`` (or the bytes ``data``),
    rehashed so that only the arrays are wrong."""
    from safetensors.numpy import save

    json_path, st_path = _copy_v2_pair(tmp_path)
    st_path.write_bytes(data if data is not None else save(arrays))
    _rehash(json_path, st_path)
    return json_path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a.update({"linear0.bias": a["linear0.bias"].astype(np.float64)}), "float32"),
        (lambda a: a.update({"linear0.bias": a["linear0.bias"][:64]}), "linear0.bias"),
        (lambda a: a.update({"extra": np.zeros(3, np.float32)}), "no layer uses"),
        (lambda a: a.pop("linear1.weight"), "linear1.weight"),
        (lambda a: a.update({"linear0.bias": a["linear0.bias"] * np.float32("nan")}), "non-finite"),
    ],
)
def test_a_safetensors_file_that_does_not_fit_its_description_is_one_value_error(tmp_path, change, message):
    arrays = dict(load_safe_policy("coop_maskable_ppo").arrays)
    change(arrays)
    assert message in _single_value_error(_write_safetensors(tmp_path, arrays))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff" * 64,
        (10**12).to_bytes(8, "little") + b"{}",        # a header that claims a terabyte
        (2).to_bytes(8, "little") + b"[]",             # a header that is not an object
    ],
)
def test_bytes_that_are_not_a_safetensors_file_are_one_value_error(tmp_path, data):
    _single_value_error(_write_safetensors(tmp_path, data=data))


def test_a_truncated_safetensors_file_is_one_value_error(tmp_path):
    data = (POLICY_DIR / "coop_maskable_ppo.safetensors").read_bytes()
    _single_value_error(_write_safetensors(tmp_path, data=data[: len(data) // 2]))


def test_a_safetensors_file_larger_than_its_description_is_refused_before_it_is_read(tmp_path):
    json_path, st_path = _copy_v2_pair(tmp_path)
    st_path.write_bytes(st_path.read_bytes() + b"\0" * 100_000)
    assert "at most" in _single_value_error(json_path)


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_every_shipped_description_records_its_provenance(name):
    from thermopylae_env.cards import seeds_dir

    description = json.loads((POLICY_DIR / f"{name}.json").read_text())
    assert description["format_version"] == 2 and (POLICY_DIR / f"{name}.safetensors").is_file()
    assert not (POLICY_DIR / f"{name}.npz").exists()
    provenance = description["provenance"]
    # never recorded when the shipped files were trained: said, not guessed
    assert provenance["training_commit"] == "unknown"
    assert provenance["package_version"] == thermopylae_env.__version__
    assert "scripts/train.py" in provenance["training_command"]
    assert re.fullmatch(r"[0-9a-f]{7,40}", provenance["shipped_in_commit"])
    decks = provenance["decks"]
    assert "persian" in decks
    settings = provenance["hyperparameters"]  # read from the zip by thermopylae export --shipped
    assert settings["algo"] == "MaskablePPO" and settings["total_timesteps"] > 0
    assert settings["features_extractor"] == ("CoopFightFeatures" if "coop" in name else "FlattenExtractor")
    for entry in decks.values():
        digest = hashlib.sha256((seeds_dir() / entry["name"]).read_bytes()).hexdigest()
        assert entry["sha256"] == digest, entry["name"]


def test_exporting_the_shipped_zips_again_gives_the_same_arrays_and_keeps_their_provenance(tmp_path):
    pytest.importorskip("sb3_contrib")
    from thermopylae_agents.cli.export import main

    assert main(["--shipped", "--out-dir", str(tmp_path)]) == 0
    for name in SHIPPED_ENV_IDS:
        again = json.loads((tmp_path / f"{name}.json").read_text())
        shipped = json.loads((POLICY_DIR / f"{name}.json").read_text())
        assert (tmp_path / f"{name}.safetensors").read_bytes() == \
            (POLICY_DIR / f"{name}.safetensors").read_bytes(), name
        assert again["arrays_sha256"] == shipped["arrays_sha256"]
        kept = {k: v for k, v in again["provenance"].items() if k != "written_by"}
        assert kept == {k: v for k, v in shipped["provenance"].items() if k != "written_by"}, name


def test_export_records_the_training_given_and_unknown_otherwise(tmp_path):
    pytest.importorskip("sb3_contrib")
    from thermopylae_agents.cli.export import main

    zip_path = str(POLICY_DIR / "duel_greek_maskable_ppo.zip")
    training = ["--training-commit", "abc1234", "--training-command", "python scripts/train.py duel-greek",
                "--package-version", "0.1.0"]
    duel_greek = ["--game", "duel", "--side", "greek"]
    assert main([zip_path, *duel_greek, "--out-dir", str(tmp_path / "a"), *training]) == 0
    assert main([zip_path, *duel_greek, "--out-dir", str(tmp_path / "b")]) == 0
    given = load_safe_policy(tmp_path / "a" / "duel_greek_maskable_ppo.json").description["provenance"]
    assert (given["training_commit"], given["package_version"]) == ("abc1234", "0.1.0")
    assert given["training_command"] == "python scripts/train.py duel-greek"
    unknown = load_safe_policy(tmp_path / "b" / "duel_greek_maskable_ppo.json").description["provenance"]
    assert [unknown[k] for k in ("training_commit", "training_command", "package_version")] == ["unknown"] * 3


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--shipped", "--training-commit", "abc"], "shipped ones are known"),
        (["--policy", "coop_maskable_ppo"], "--policy needs --out-dir DIR"),
        (["--out-dir", "hub", "--policy", "coop_maskable_ppo", "--shipped"], "--policy takes --out-dir"),
        (["--out-dir", "hub", "--policy", "no_such_policy"], "no shipped policy"),
        (["--shipped", "--eval-games", "3"], "--eval-games is for --policy"),
    ],
)
def test_export_refuses_bad_provenance_or_folder_arguments_before_writing(tmp_path, monkeypatch, capsys, args,
                                                                          problem):
    from thermopylae_agents.cli.export import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err
    assert list(tmp_path.iterdir()) == []
