"""Duel training on the native vector engine: the batched frozen player, the PFSP opponent pool, the
three duel targets end to end on tiny budgets (speed is measured by scripts, not here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import shrink_block

pytest.importorskip("sb3_contrib")

from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.training.config import (
    ENV_IDS,
    load_config,  # noqa: E402
)
from thermopylae_agents.training.ppo import train
from thermopylae_agents.training.selfplay import PFSPCallback, PFSPPool, train_selfplay  # noqa: E402
from thermopylae_env import GREEK_ID, PERSIAN_ID  # noqa: E402


class NamedPlayer:
    """A stand-in snapshot: only its name matters to the pool."""

    def __init__(self, name: str) -> None:
        self.name = name


def tiny_config(target: str, tmp_path: Path, n_timesteps: int = 2048, **changes) -> Path:
    """The shipped config of ``target`` with a budget of ``n_timesteps`` steps per side."""
    data = load_config(target)
    blocks = [GREEK_ID, PERSIAN_ID] if target == "selfplay" else [ENV_IDS[target]]
    for env_id in blocks:
        hp = data[env_id]
        shrink_block(hp, n_envs=8, n_timesteps=n_timesteps, n_steps=64, batch_size=256, n_epochs=1)
        hp["checkpoint_freq"] = n_timesteps // 2
        hp["eval"].update(freq=n_timesteps // 2, episodes=8)
        hp["bc"].update(episodes=8, epochs=1)
        hp.setdefault("report", {})["episodes"] = 8
        hp.update(changes.get("hp", {}))
    if target == "selfplay":
        data["selfplay"].update(generations=2, report_episodes=4, **changes.get("selfplay", {}))
    path = tmp_path / f"{target}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def small_model(side: str = "greek"):
    import torch as th
    from sb3_contrib import MaskablePPO

    from thermopylae_env.duel.sb3 import DuelSB3VecEnv

    env = DuelSB3VecEnv(4, side=side, seed=0)
    model = MaskablePPO("MlpPolicy", env, seed=1, policy_kwargs={"net_arch": [32, 32]})
    with th.no_grad():  # spread the untrained logits so that argmax ties are not an issue
        model.policy.action_net.weight.mul_(50.0)
    return model, env


# ------------------------------------------------------------------------------------- batched player


def test_frozen_policy_act_batch_plays_the_greedy_actions_of_act():
    model, env = small_model()
    frozen = FrozenPolicy(model, deterministic=True)
    sampler = FrozenPolicy(model, deterministic=False)
    obs = env.reset()
    rng = np.random.default_rng(0)
    rows = 0
    for _ in range(60):
        masks = env.action_masks()
        batch = frozen.act_batch(obs, masks)
        assert batch.dtype == np.int64 and batch.shape == (env.num_envs,)
        assert batch.tolist() == [frozen.act(o, m) for o, m in zip(obs, masks, strict=True)]
        assert batch.tolist() == [sampler.act(o, m) for o, m in zip(obs, masks, strict=True)]  # no rng
        assert masks[np.arange(env.num_envs), batch].all()
        rows += env.num_envs
        legal = [np.flatnonzero(m) for m in masks]  # walk the games at random to see varied states
        obs, _, _, _ = env.step(np.array([row[rng.integers(row.size)] for row in legal]))
    assert rows >= 240


def test_frozen_policy_act_batch_refuses_a_row_without_legal_action():
    model, env = small_model("persian")
    frozen = FrozenPolicy(model)
    obs, masks = env.reset(), env.action_masks()
    masks[1] = False
    with pytest.raises(ValueError, match="no legal action"):
        frozen.act_batch(obs, masks)
    with pytest.raises(ValueError, match="observations"):
        frozen.act_batch(obs[0], masks[0])
    assert frozen.act_batch(obs[:0], masks[:0]).shape == (0,)


def test_frozen_policy_is_a_batched_opponent_of_the_native_engine():
    from thermopylae_env.duel.sb3 import DuelSB3VecEnv

    model, _ = small_model("persian")
    env = DuelSB3VecEnv(6, side="greek", opponent=FrozenPolicy(model, "persian"), seed=3)
    env.reset()
    rng = np.random.default_rng(1)
    finished = 0
    for _ in range(400):
        legal = [np.flatnonzero(m) for m in env.action_masks()]
        _, _, dones, _ = env.step(np.array([row[rng.integers(row.size)] for row in legal]))
        finished += int(dones.sum())
    assert finished > 0


# ------------------------------------------------------------------------------------- PFSP pool


def test_pfsp_weights_follow_the_recorded_results():
    pool = PFSPPool(max_pool=5, power=2.0, prior_games=2.0)
    for name in ("a", "b", "c"):
        pool.add(NamedPlayer(name))
    assert [p for _, p in pool.members()] == pytest.approx([0.25] * 4)  # nothing played: all even
    pool.record("heuristic", 9, 10)  # the learner wins 9 of 10: (9 + 1) / (10 + 2)
    pool.record("a", 1, 10)  # loses 9 of 10
    pool.record("b", 5, 10)
    assert pool.win_rate("heuristic") == pytest.approx(10 / 12)
    assert pool.win_rate("a") == pytest.approx(2 / 12)
    weights = {"heuristic": (2 / 12) ** 2, "a": (10 / 12) ** 2, "b": 0.5**2, "c": 0.5**2}
    total = sum(weights.values())
    assert dict(pool.members()) == pytest.approx({n: w / total for n, w in weights.items()})
    members = dict(pool.members())
    assert members["a"] > members["b"] == members["c"] > members["heuristic"]


def test_pfsp_power_sharpens_the_weights():
    soft, hard = PFSPPool(power=1.0), PFSPPool(power=3.0)
    for pool in (soft, hard):
        pool.add(NamedPlayer("s"))
        pool.record("s", 0, 8)
        pool.record("heuristic", 8, 8)
    assert dict(hard.members())["s"] > dict(soft.members())["s"] > 0.5


def test_pfsp_keeps_the_heuristic_and_drops_the_oldest_snapshots():
    pool = PFSPPool(max_pool=2)
    pool.record("heuristic", 10, 10)
    for name in ("g1", "g2", "g3", "g4"):
        pool.add(NamedPlayer(name))
    assert pool.names() == ["heuristic", "g3", "g4"]
    assert pool.player("heuristic") == "heuristic"
    assert pool.win_rate("heuristic") == pytest.approx(11 / 12)  # its results stay
    pool.record("g1", 1, 1)  # a member that left: nothing recorded, nothing raised
    assert "g1" not in pool.results
    with pytest.raises(KeyError, match="g1"):
        pool.player("g1")


def test_pfsp_sampling_is_deterministic_under_a_seed_and_follows_the_weights():
    def draws(seed: int) -> list[str]:
        pool = PFSPPool()
        pool.add(NamedPlayer("strong"))
        pool.record("strong", 10, 30)
        pool.record("heuristic", 20, 30)
        rng = np.random.default_rng(seed)
        return [pool.sample(rng) for _ in range(4000)]

    first = draws(7)
    assert first == draws(7)
    assert first != draws(8)
    share = first.count("strong") / len(first)
    p_strong = (21 / 32) ** 2 / ((21 / 32) ** 2 + (11 / 32) ** 2)
    assert abs(share - p_strong) < 0.03


def test_pfsp_pool_refuses_bad_settings_and_results():
    with pytest.raises(ValueError, match="power"):
        PFSPPool(power=0)
    pool = PFSPPool()
    pool.add(NamedPlayer("x"))
    with pytest.raises(ValueError, match="already"):
        pool.add(NamedPlayer("x"))
    with pytest.raises(ValueError, match="learner_wins"):
        pool.record("x", 3, 2)
    assert pool.results["x"] == [0.0, 0.0]


def test_pfsp_callback_sets_the_drawn_opponent_and_records_finished_games():
    class FakeEnv:
        def __init__(self) -> None:
            self.opponents: list = []

        def set_opponent(self, opponent) -> None:
            self.opponents.append(opponent)

    pool, env = PFSPPool(), FakeEnv()
    callback = PFSPCallback(pool, env, seed=0)
    callback._on_rollout_start()
    assert env.opponents == ["heuristic"] and callback.current == "heuristic"
    callback.locals = {
        "dones": np.array([True, False, True, True]),
        "infos": [{"is_success": True}, {"is_success": True}, {"is_success": False}, {}],
    }
    assert callback._on_step()
    assert pool.results["heuristic"] == [1.0, 3.0]


# ------------------------------------------------------------------------------------- config


def test_selfplay_config_checks_the_pfsp_keys(tmp_path):
    for change, message in (
        ({"pfsp_power": 0}, "pfsp_power"),
        ({"pfsp_prior_games": "two"}, "pfsp_prior_games"),
        ({"vec": "subproc"}, "vec"),
        ({"max_pool": 0}, "max_pool"),
        ({"snapshot_deterministic": False}, "snapshot_deterministic"),
        ({"pfsp_weight": 2}, "unknown key"),
    ):
        path = tiny_config("selfplay", tmp_path, selfplay=change)
        with pytest.raises(ValueError, match=message):
            load_config("selfplay", path)
    data = load_config("selfplay")
    assert data["selfplay"]["vec"] == "native"
    assert load_config("duel-greek")[GREEK_ID]["vec"] == "native"
    assert load_config("duel-persian")[PERSIAN_ID]["vec"] == "native"


# ------------------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("target", ["duel-greek", "duel-persian"])
def test_duel_target_trains_on_the_native_engine_saves_and_reports(tmp_path, target):
    from thermopylae_env.duel.sb3 import DuelSB3VecEnv

    out = tmp_path / "run"
    result = train(target, config=tiny_config(target, tmp_path), out=out, progress=False)
    assert result["vec"] == "native"
    assert result["num_timesteps"] >= 2048
    assert (out / "final_model.zip").is_file()
    report = json.loads((out / "report.json").read_text())
    assert report["num_timesteps"] == result["num_timesteps"]
    throughput = report["throughput"]
    assert throughput["learn_cpu_seconds"] > 0
    assert throughput["steps_per_cpu_second"] == pytest.approx(
        throughput["env_steps"] / throughput["learn_cpu_seconds"], rel=0.1)  # seconds rounded to 0.01
    evaluations = np.load(out / "eval" / "evaluations.npz")
    assert evaluations["results"].shape[1] == 8
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(out / "final_model.zip")
    side = "greek" if target == "duel-greek" else "persian"
    frozen = FrozenPolicy(model)
    env = DuelSB3VecEnv(3, side=side, seed=5)
    obs = env.reset()
    assert env.action_masks()[np.arange(3), frozen.act_batch(obs, env.action_masks())].all()


def test_duel_target_still_trains_on_single_envs_with_vec_dummy(tmp_path):
    config = tiny_config("duel-persian", tmp_path, n_timesteps=1024, hp={"vec": "dummy"})
    result = train("duel-persian", config=config, out=tmp_path / "run", progress=False, report=False)
    assert result["vec"] == "dummy" and result["num_timesteps"] >= 1024


def test_selfplay_collects_on_the_native_engine_with_the_pfsp_pool(tmp_path):
    out = tmp_path / "sp"
    result = train_selfplay(config=tiny_config("selfplay", tmp_path), out=out, progress=False)
    assert result["vec"] == "native"
    for side, other in (("greek", "persian"), ("persian", "greek")):
        assert result[side]["num_timesteps"] >= 2048
        assert Path(result[side]["model"]).is_file()
        assert (out / "snapshots" / f"{side}_gen2.zip").is_file()
        sampled = result[side]["opponents_sampled"]
        assert sum(sampled.values()) >= 4  # one draw per rollout, 2048 / (8 x 64) rollouts
        assert set(sampled) <= {"heuristic", f"{other}_gen1", f"{other}_gen2"}
        rates = result[side]["pfsp_learner_win_rates"]
        assert set(rates) == {"heuristic", f"{other}_gen1", f"{other}_gen2"}
        assert all(0 < r < 1 for r in rates.values())
    assert result["greek"]["pfsp_learner_win_rates"]["heuristic"] != 0.5  # games were recorded
    assert {"selfplay", "heuristic"} <= set(result["cross_play"]["matrix"])


def test_selfplay_still_collects_on_single_envs_with_vec_dummy(tmp_path):
    config = tiny_config("selfplay", tmp_path, n_timesteps=1024, selfplay={"vec": "dummy"})
    result = train_selfplay(config=config, out=tmp_path / "sp", progress=False, report=False)
    assert result["vec"] == "dummy"
    for side in ("greek", "persian"):
        assert result[side]["num_timesteps"] >= 1024 and "pfsp_learner_win_rates" not in result[side]


def test_native_duel_env_plays_a_saved_model_opponent_greedily(tmp_path):
    from thermopylae_agents.training.envs import build_vec_env

    model, _ = small_model("persian")
    model.save(tmp_path / "persian.zip")
    env = build_vec_env(GREEK_ID, {"opponent": str(tmp_path / "persian.zip")}, 4, seed=2, vec="native")
    opponent = env.parts[0].env._opponent
    assert isinstance(opponent, FrozenPolicy) and opponent.deterministic
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(100):
        legal = [np.flatnonzero(m) for m in env.action_masks()]
        env.step(np.array([row[rng.integers(row.size)] for row in legal]))
