"""The training pipeline (thermopylae_agents.training and .imitation) on the real environments, tiny budgets.

Speed is not tested here (benchmarks/benchmark.py measures it); these tests check that runs start, save,
load, resume and report, and that the configuration files mean what they say.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import shrink_block

pytest.importorskip("sb3_contrib")

from thermopylae_agents.cli.train import main
from thermopylae_agents.evaluation.tables import read_tensorboard_curve
from thermopylae_agents.policies.fight_odds import dice_tail_table
from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.training.config import (
    CONFIG_DIR,
    ENV_IDS,
    TARGETS,
    Config,
    load_config,
    parse_schedule,
    policy_kwargs,
    resolve_config,
)
from thermopylae_agents.training.distribution import speed_up_policy
from thermopylae_agents.training.fight_features import CoopFightFeatures
from thermopylae_agents.training.imitation import collect_bc_data
from thermopylae_agents.training.ppo import build_model, train
from thermopylae_agents.training.report import format_report
from thermopylae_agents.training.selfplay import train_selfplay
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID


def read_report(run_dir: Path) -> dict:
    return json.loads((run_dir / "report.json").read_text())


def shrunk_config(target: str, tmp_path: Path, **budget) -> Path:
    """The shipped config of ``target`` with every key kept but tiny budgets (for end-to-end tests)."""
    data = load_config(target)
    blocks = [GREEK_ID, PERSIAN_ID] if target == "selfplay" else [ENV_IDS[target]]
    for env_id in blocks:
        hp = data[env_id]
        hp["n_envs"] = budget.get("n_envs", 4)
        hp["n_timesteps"] = budget.get("n_timesteps", 256)
        hp["n_steps"] = budget.get("n_steps", 32)
        hp["batch_size"] = budget.get("batch_size", 64)
        hp["n_epochs"] = 1
        shrink_block(hp, **{key: hp[key] for key in ("n_envs", "n_steps", "batch_size", "n_epochs")})
        if "checkpoint_freq" in hp:
            hp["checkpoint_freq"] = 128
        if "eval" in hp:
            hp["eval"].update(freq=128, episodes=4)
        if "bc" in hp:
            hp["bc"].update(episodes=budget.get("bc_episodes", 6), epochs=1)
            if "dagger_episodes" in hp["bc"]:
                hp["bc"].update(dagger_rounds=1, dagger_episodes=3, dagger_epochs=1)
        if "report" in hp:
            hp["report"]["episodes"] = budget.get("report_episodes", 6)
            if "search_episodes" in hp["report"]:
                hp["report"].update(search="search:2,1", search_episodes=2)
    if target == "selfplay":
        data["selfplay"].update(generations=2, report_episodes=4)
    path = tmp_path / f"{target}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# ------------------------------------------------------------------------------------------- configs


@pytest.mark.parametrize("target", TARGETS)
def test_shipped_configs_parse_in_the_zoo_layout(target):
    data = load_config(target)
    blocks = [GREEK_ID, PERSIAN_ID] if target == "selfplay" else [ENV_IDS[target]]
    for env_id in blocks:
        hp = data[env_id]
        for key in ("n_envs", "n_timesteps", "policy", "policy_kwargs", "learning_rate", "n_steps",
                    "batch_size", "n_epochs", "gamma", "gae_lambda", "ent_coef", "clip_range"):
            assert key in hp, f"{target}: {env_id} lacks {key}"
        # A rollout must split into whole minibatches.
        assert (hp["n_envs"] * hp["n_steps"]) % hp["batch_size"] == 0


@pytest.mark.parametrize("players", [2, 3, 4])
def test_each_team_size_config_is_the_coop_recipe_with_only_num_players_changed(players):
    path = CONFIG_DIR / f"coop_{players}p.yaml"
    team, solo = load_config("coop", path), load_config("coop")
    assert team[COOP_ID]["env_kwargs"]["num_players"] == players
    team[COOP_ID]["env_kwargs"]["num_players"] = solo[COOP_ID]["env_kwargs"]["num_players"]
    assert team == solo


def test_unknown_config_key_is_refused(tmp_path):
    data = load_config("coop")
    data[COOP_ID]["learning_rat"] = 1e-3
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="learning_rat"):
        load_config("coop", path)


def test_the_schema_defaults_of_the_ppo_keywords_are_sb3s():
    """A key left out of a block is not passed to (Maskable)PPO, so the schema's default must be SB3's."""
    import dataclasses
    import inspect

    from sb3_contrib import MaskablePPO

    from thermopylae_agents.training.config import PPOKeywords

    signature = inspect.signature(MaskablePPO.__init__).parameters
    for field in dataclasses.fields(PPOKeywords):
        assert field.default == signature[field.name].default, field.name


def test_config_tracks_which_keys_were_read():
    cfg = Config({"a": 1, "b": {"c": 2, "d": 3}})
    assert cfg["a"] == 1
    assert cfg["b"]["c"] == 2
    assert cfg.unused() == ["b.d"]
    assert "b" in cfg and cfg.unused() == ["b.d"]  # a membership test is not a read


def test_linear_schedule_string_is_parsed():
    schedule = parse_schedule("lin_0.001", "learning_rate")
    assert schedule(1.0) == pytest.approx(0.001) and schedule(0.5) == pytest.approx(0.0005)
    assert parse_schedule(3e-4, "learning_rate") == pytest.approx(3e-4)
    with pytest.raises(ValueError):
        parse_schedule([1], "learning_rate")


# ------------------------------------------------------------------------------------- end to end


def test_coop_end_to_end_via_the_command_line(tmp_path):
    """Every key of the shipped co-op config is read, and a run leaves all its files behind."""
    config = shrunk_config("coop", tmp_path)
    out = tmp_path / "run"
    assert main(["coop", "--config", str(config), "--run-dir", str(out), "--no-progress", "--seed", "3"]) == 0
    for name in ("config.yaml", "final_model.zip", "report.json", "eval/evaluations.npz",
                 "eval/best_model.zip"):
        assert (out / name).is_file(), name
    assert list((out / "checkpoints").glob("model_*_steps.zip"))
    assert list((out / "tb").rglob("events.out.tfevents.*"))
    evaluations = np.load(out / "eval" / "evaluations.npz")
    assert "successes" in evaluations.files and evaluations["successes"].shape[1] == 4
    report = read_report(out)
    assert report["unused_config_keys"] == []
    assert report["num_timesteps"] >= 256
    assert report["throughput"]["steps_per_second"] > 0
    assert report["behaviour_cloning"]["decisions"] > 0
    rows = {row["agent"]: row for row in report["evaluation"]["rows"]}
    assert {"ppo", "random", "heuristic", "search"} <= set(rows)
    for row in rows.values():
        assert 0.0 <= row["ci_low"] <= row["win_rate"] <= row["ci_high"] <= 1.0
    # The search expert's few deals are the first deals of every other player: a paired comparison.
    paired = report["evaluation"]["search_deals"]
    assert paired["games"] == rows["search"]["games"] and paired["search"]["wins"] == rows["search"]["wins"]
    for name in ("ppo", "heuristic"):
        assert paired[name]["wins"] <= rows[name]["wins"]
    assert "the ones the search expert played" in format_report(report)
    # Paired statistics for paired deals, from the per-game outcomes the report keeps.
    per_game = report["evaluation"]["per_game"]
    assert {len(per_game[name]) for name in ("ppo", "heuristic")} == {rows["ppo"]["games"]}
    comparisons = {(c["a"], c["b"]): c for c in report["evaluation"]["paired"]}
    ppo_h = comparisons[("ppo", "heuristic")]
    pairs = zip(per_game["ppo"], per_game["heuristic"], strict=True)
    assert ppo_h["only_a"] == sum(p and not h for p, h in pairs)
    assert ppo_h["difference"] == pytest.approx(rows["ppo"]["win_rate"] - rows["heuristic"]["win_rate"])
    assert comparisons[("ppo", "search")]["games"] == rows["search"]["games"]
    assert "McNemar's exact p" in format_report(report)
    resolved = yaml.safe_load((out / "config.yaml").read_text())
    assert resolved["run"]["seed"] == 3 and resolved["run"]["algo"] == "maskable_ppo"


def test_duel_greek_end_to_end_against_the_heuristic(tmp_path):
    config = shrunk_config("duel-greek", tmp_path)
    result = train("duel-greek", config=config, out=tmp_path / "run", progress=False)
    assert result["unused_config_keys"] == []
    opponents = {row["opponent"] for row in result["evaluation"]["rows"]}
    assert {"heuristic", "random"} <= opponents
    assert {c["opponent"] for c in result["evaluation"]["paired"]} == {"heuristic", "random"}
    assert (tmp_path / "run" / "final_model.zip").is_file()


def test_duel_persian_end_to_end(tmp_path):
    config = shrunk_config("duel-persian", tmp_path)
    result = train("duel-persian", config=config, out=tmp_path / "run", progress=False)
    assert result["unused_config_keys"] == []
    assert result["evaluation"]["rows"]


def test_selfplay_tiny_run_saves_both_sides_and_cross_play(tmp_path):
    config = shrunk_config("selfplay", tmp_path, n_timesteps=128, n_envs=2, n_steps=32, batch_size=32)
    result = train_selfplay(config=config, out=tmp_path / "sp", progress=False)
    assert result["unused_config_keys"] == []
    for side in ("greek", "persian"):
        assert (tmp_path / "sp" / f"final_{side}.zip").is_file()
        assert (tmp_path / "sp" / f"final_{side}_policy.zip").is_file()
        assert (tmp_path / "sp" / "snapshots" / f"{side}_gen2.zip").is_file()
        assert result[side]["num_timesteps"] >= 128
        assert sum(result[side]["opponents_sampled"].values()) > 0
    matrix = result["cross_play"]["matrix"]
    assert {"selfplay", "heuristic"} <= set(matrix)
    for row in matrix.values():
        for cell in row.values():
            assert 0.0 <= cell["ci_low"] <= cell["greek_win_rate"] + 1e-12
            assert cell["greek_win_rate"] <= cell["ci_high"] <= 1.0


# ------------------------------------------------------------------------------------- resume, PPO


def test_resume_continues_the_timestep_counter(tmp_path):
    config = shrunk_config("duel-persian", tmp_path, n_timesteps=128, n_envs=2, n_steps=32, batch_size=32)
    out = tmp_path / "run"
    first = train("duel-persian", config=config, out=out, progress=False, report=False)
    assert first["num_timesteps"] == 128
    second = train("duel-persian", resume=out, timesteps=256, progress=False, report=False)
    assert second["resumed_from"] is not None
    assert second["num_timesteps"] == 256  # 128 more steps, counted on from 128
    assert second["throughput"]["env_steps"] == 128
    from sb3_contrib import MaskablePPO

    assert MaskablePPO.load(out / "final_model.zip").num_timesteps == 256


def test_resume_from_a_checkpoint_file(tmp_path):
    config = shrunk_config("coop", tmp_path, n_timesteps=256, bc_episodes=0)
    out = tmp_path / "run"
    train("coop", config=config, out=out, progress=False, report=False)
    checkpoint = sorted((out / "checkpoints").glob("model_*_steps.zip"))[0]
    result = train("coop", resume=checkpoint, timesteps=384, progress=False, report=False)
    assert result["run_dir"] == str(out)
    assert result["num_timesteps"] >= 384


def test_plain_ppo_runs_on_the_unmasked_env(tmp_path):
    """Plain PPO ignores the mask; its illegal actions end episodes as losses instead of crashing."""
    config = shrunk_config("coop", tmp_path, bc_episodes=0)
    result = train("coop", algo="ppo", config=config, out=tmp_path / "ppo", progress=False,
                            report=False, bc_episodes=0)
    from stable_baselines3 import PPO

    model = PPO.load(tmp_path / "ppo" / "final_model.zip")
    assert model.num_timesteps == result["num_timesteps"] >= 256


def test_one_pass_masked_distribution_is_sb3_contribs_distribution():
    """Same log-probabilities, entropies and gradients as sb3-contrib's, masked actions never sampled."""
    import torch as th
    from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution

    from thermopylae_agents.training.distribution import OnePassMaskableCategoricalDistribution

    gen = th.Generator().manual_seed(0)
    logits = th.randn(512, 72, generator=gen) * 3
    masks = th.rand(512, 72, generator=gen) < 0.2
    masks[:, 5] = True
    actions = th.multinomial(masks.float(), 1, generator=gen).flatten()
    results = []
    for cls in (MaskableCategoricalDistribution, OnePassMaskableCategoricalDistribution):
        leaf = logits.clone().requires_grad_(True)
        dist = cls(72).proba_distribution(leaf)
        unmasked = dist.log_prob(actions).detach()
        dist.apply_masking(masks)
        log_prob, entropy = dist.log_prob(actions), dist.entropy()
        (log_prob.sum() + 0.1 * entropy.sum()).backward()
        th.manual_seed(1)
        samples = dist.sample()
        assert masks[th.arange(512), samples].all()
        assert th.equal(dist.mode(), th.where(masks, logits, -1e9).argmax(1))
        results.append((unmasked, log_prob.detach(), entropy.detach(), leaf.grad))
    for ours, theirs in zip(results[1], results[0], strict=True):
        assert th.allclose(ours, theirs, atol=1e-5)


def test_one_pass_sampling_follows_the_masked_probabilities():
    import torch as th

    from thermopylae_agents.training.distribution import OnePassMaskableCategoricalDistribution

    gen = th.Generator().manual_seed(3)
    logits = th.randn(1, 72, generator=gen) * 2
    masks = th.zeros(1, 72, dtype=th.bool)
    masks[0, [0, 3, 17, 40, 71]] = True
    draws = 40_000
    dist = OnePassMaskableCategoricalDistribution(72).proba_distribution(logits.expand(draws, 72))
    dist.apply_masking(masks.expand(draws, 72))
    th.manual_seed(0)
    samples = dist.sample()
    assert samples.shape == (draws,) and samples.dtype == th.int64
    counts = th.bincount(samples, minlength=72).double()
    assert counts[~masks[0]].sum() == 0  # masked actions are never drawn
    expected = th.softmax(th.where(masks[0], logits[0], -1e9).double(), 0) * draws
    legal = masks[0]
    chi2 = ((counts[legal] - expected[legal]) ** 2 / expected[legal]).sum()
    assert chi2 < 20.5  # 4 degrees of freedom: p = 0.0004
    # A row whose probability sits on its last legal action, and rows of a single legal action.
    point = th.full((3, 72), -1e9)
    point[0, 71] = point[1, 0] = point[2, 36] = 0.0
    dist = OnePassMaskableCategoricalDistribution(72).proba_distribution(point)
    dist.apply_masking(point > -1)
    assert dist.sample().tolist() == [71, 0, 36]


def test_models_train_with_the_one_pass_distribution_and_save_sb3_contribs(tmp_path):
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution

    from thermopylae_agents.training.distribution import OnePassMaskableCategoricalDistribution
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    hp = Config(load_config("coop")[COOP_ID])
    model = build_model("maskable_ppo", CoopSB3VecEnv(4, seed=0), hp, 0, None, "cpu")
    assert type(model.policy.action_dist) is OnePassMaskableCategoricalDistribution
    model.save(tmp_path / "m.zip")
    loaded = MaskablePPO.load(tmp_path / "m.zip")
    assert type(loaded.policy.action_dist) is MaskableCategoricalDistribution  # files stay standard
    assert type(speed_up_policy(loaded).policy.action_dist) is OnePassMaskableCategoricalDistribution


def test_adapter_masks_for_sb3_contrib_are_a_copy_of_the_engines():
    from sb3_contrib.common.maskable.utils import get_action_masks

    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    env = CoopSB3VecEnv(6, seed=2)
    env.reset()
    rows = env.env_method("action_masks")
    assert len(rows) == 6 and all(row.shape == (72,) and row.dtype == bool for row in rows)
    masks = get_action_masks(env)
    np.testing.assert_array_equal(masks, env.engine.masks)
    rows[0][:] = ~rows[0]
    masks[1][:] = False
    np.testing.assert_array_equal(env.engine.masks, env.action_masks())
    assert env.engine.masks[0].any() and env.engine.masks[1].any()


def test_adapter_runs_on_the_engine_backend_it_is_given():
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    envs = [CoopSB3VecEnv(3, seed=5, backend=backend) for backend in ("numba", "auto")]
    assert envs[0].engine.backend == "numba"
    with pytest.raises(ValueError, match="no longer available"):
        CoopSB3VecEnv(2, backend="numpy")
    observations = [env.reset() for env in envs]
    np.testing.assert_array_equal(*observations)
    with pytest.raises(ValueError, match="backend"):
        CoopSB3VecEnv(2, backend="fortran")


# ------------------------------------------------------------------------------------- imitation


def test_behaviour_cloning_increases_agreement_with_the_expert():
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    from thermopylae_agents.training.imitation import agreement, behaviour_cloning
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    data = collect_bc_data(COOP_ID, {}, "heuristic", 60, seed=0, gamma=1.0, workers=1)
    held = collect_bc_data(COOP_ID, {}, "heuristic", 20, seed=1000, gamma=1.0, workers=1)
    assert len(data) > 500 and data.masks[np.arange(len(data)), data.actions].all()
    model = MaskablePPO("MlpPolicy", CoopSB3VecEnv(2, seed=0), seed=0, policy_kwargs={"net_arch": [64, 64]})
    before = agreement(model.policy, held)
    history = behaviour_cloning(model.policy, data, epochs=4, batch_size=128, learning_rate=3e-3)
    after = agreement(model.policy, held)
    assert history[-1]["loss"] < history[0]["loss"]
    assert after > before + 0.3 and after > 0.7
    assert isinstance(gym.make(COOP_ID).action_space, gym.spaces.Discrete)


# ------------------------------------------------------------------------------------- policies


@pytest.mark.parametrize("extractor", ["flatten", "coop_fight"])
def test_frozen_numpy_policy_plays_what_sb3_agent_plays(extractor):
    """The NumPy copy used for snapshots and fast reports is the same greedy masked policy."""
    import gymnasium as gym
    import torch as th
    from sb3_contrib import MaskablePPO

    from thermopylae_agents.policies.sb3_agent import SB3Agent
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    kwargs = policy_kwargs({"net_arch": [32, 32], "features_extractor": extractor})
    model = MaskablePPO("MlpPolicy", CoopSB3VecEnv(2, seed=0), seed=1, policy_kwargs=kwargs)
    with th.no_grad():  # spread the untrained logits so that argmax ties are not an issue
        model.policy.action_net.weight.mul_(50.0)
    frozen, reference = FrozenPolicy(model), SB3Agent(model)
    env = gym.make(COOP_ID)
    rng = np.random.default_rng(0)
    decisions = 0
    for episode in range(10):
        obs, info = env.reset(seed=episode)
        done = False
        while not done:
            mask = info["action_mask"].astype(bool)
            assert frozen.act(obs, mask) == reference.act(obs, mask)
            decisions += 1
            legal = np.flatnonzero(mask)  # walk the game at random to see varied states
            obs, _, done, _, info = env.step(int(legal[rng.integers(legal.size)]))
    assert decisions > 100


def test_the_policies_recognise_the_fight_extractor_by_its_numpy_function_not_its_class():
    """The policies layer copies and exports SB3 models without importing the training layer's extractor:
    it knows the extractor by the NumPy function the extractor names, and refuses any other."""
    import gymnasium as gym
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, FlattenExtractor

    from thermopylae_agents.policies.fight_odds import coop_fight_features
    from thermopylae_agents.policies.frozen_policy import numpy_features

    space = gym.make(COOP_ID).observation_space

    class Lookalike(BaseFeaturesExtractor):
        numpy_features = staticmethod(lambda observation: observation)

    assert numpy_features(CoopFightFeatures(space)) == ("coop_fight", coop_fight_features)
    assert numpy_features(FlattenExtractor(space)) == ("flat", None)
    assert numpy_features(Lookalike(space, features_dim=space.shape[0])) is None


def test_fight_features_match_the_dice_odds():
    """Torch and NumPy fight features agree, and one entry is checked by hand."""
    import torch as th

    from thermopylae_env.coop.rules import CoopGame

    game = CoopGame()
    state = game.init(np.random.default_rng(3))
    obs = game.observe(state)
    extractor = CoopFightFeatures(gym_box())
    torch_features = extractor(th.as_tensor(obs[None])).numpy()[0]
    numpy_features = CoopFightFeatures.numpy_features(obs)
    assert np.allclose(torch_features, numpy_features)
    assert np.array_equal(numpy_features[:115], obs)
    # Card 10 with no support on marker 1 (no location die): S = 10, below every white value.
    white1 = round(float(obs[56]) * 30)
    assert white1 > 10 and numpy_features[115] == 0.0
    # Card 20 with 4 support dice against slot 1's white value: P(20 + 4d6 >= white1).
    sums = np.array(np.meshgrid(*[np.arange(1, 7)] * 4)).reshape(4, -1).sum(0)
    expected = np.mean(20 + sums >= white1)
    index = 115 + ((20 - 10) * 5 + 4) * 4
    assert numpy_features[index] == pytest.approx(expected, abs=1e-6)


def reference_fight_features(obs: np.ndarray) -> np.ndarray:
    """The fight features computed the direct way: 220 gathers from the dice tail table per observation."""
    tail = dice_tail_table()
    values = np.arange(10, 21)
    location = np.rint(obs[:, 65] + obs[:, 68]).astype(np.int64)
    dice = np.minimum(np.arange(5)[None, :] + location[:, None], 5)
    w1, r1 = np.rint(obs[:, 56] * 30), np.rint(obs[:, 57] * 30)
    w2, r2 = np.rint(obs[:, 60] * 30), np.rint(obs[:, 61] * 30)
    thresholds = np.stack([w1, r1, np.maximum(w1, w2), np.maximum(w1, r2)], 1)
    need = np.clip(thresholds[:, None, None, :] - values[None, :, None, None] + 30, 0, 60).astype(np.int64)
    shape = (len(obs), 11, 5, 4)
    probs = tail[np.broadcast_to(dice[:, None, :, None], shape), np.broadcast_to(need, shape)]
    present = np.stack([obs[:, 55], obs[:, 55], obs[:, 55] * obs[:, 59], obs[:, 55] * obs[:, 59]], 1)
    return np.concatenate([obs, (probs * present[:, None, None, :]).reshape(len(obs), -1)], 1)


def test_fight_features_table_lookup_equals_the_direct_computation_bit_for_bit():
    """The odds-table lookup (torch and NumPy) gives exactly the numbers of the direct computation, on
    observations of real games (every marker, slot and threshold that play reaches) and on arbitrary
    points of the observation box."""
    import torch as th

    from thermopylae_env.coop.vector import CoopVectorEnv

    env = CoopVectorEnv(256)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    seen = []
    for _ in range(60):
        masks = env.engine.masks
        obs, *_ = env.step((rng.random(masks.shape) * masks).argmax(1))
        seen.append(obs.copy())
    games = np.concatenate(seen)
    box = rng.random((2000, 115)).astype(np.float32)
    extractor = CoopFightFeatures(gym_box())
    for obs in (games, box):
        expected = reference_fight_features(obs)
        assert np.array_equal(extractor(th.as_tensor(obs)).numpy(), expected)
        assert np.array_equal(CoopFightFeatures.numpy_features(obs), expected)
    single = CoopFightFeatures.numpy_features(games[3])
    assert np.array_equal(single, reference_fight_features(games[3:4])[0])
    # The table is not part of the saved state: models saved before it existed load as they were.
    assert set(extractor.state_dict()) == {"tail", "values", "supports"}


def gym_box():
    import gymnasium as gym

    return gym.spaces.Box(0.0, 1.0, (115,), np.float32)


def test_dagger_records_the_expert_labels_on_the_actors_games():
    from thermopylae_agents.players.coop_heuristic import CoopHeuristic
    from thermopylae_env.duel.opponents import RandomAgent

    data = collect_bc_data(COOP_ID, {}, "heuristic", 30, seed=5, gamma=1.0, actor=RandomAgent(0))
    assert data.wins == 0  # random play (the actor) never wins the co-op game
    expert = CoopHeuristic()
    labels = [expert.act(o, m) for o, m in zip(data.observations, data.masks, strict=True)]
    assert np.array_equal(labels, data.actions)
    assert np.all(data.returns == -1.0)  # gamma 1: every decision of a lost game has return -1


def test_selfplay_resume_continues_after_the_last_completed_generation(tmp_path):
    config = shrunk_config("selfplay", tmp_path, n_timesteps=128, n_envs=2, n_steps=32, batch_size=32)
    out = tmp_path / "sp"
    train_selfplay(config=config, out=out, progress=False, report=False)
    for side in ("greek", "persian"):  # as if the run had stopped during generation 2
        (out / "snapshots" / f"{side}_gen2.zip").unlink()
    result = train_selfplay(resume=out, progress=False, report=False)
    assert result["resumed_after_generation"] == 1
    for side in ("greek", "persian"):
        assert (out / "snapshots" / f"{side}_gen2.zip").is_file()
        assert result[side]["num_timesteps"] == 128  # 64 from generation 1 (loaded) + 64 more
        assert result[side]["throughput"]["env_steps"] == 64


@pytest.mark.slow
def test_benchmark_ppo_rows_time_the_default_coop_config_on_both_envs(tmp_path):
    """benchmarks/benchmark.py --ppo-only --quick, run as a user runs it: learn() of the default co-op config
    (one rollout) on the adapter and on DummyVecEnv, the time split into collection and updates."""
    script = Path(__file__).resolve().parents[3] / "benchmarks" / "benchmark.py"
    out = tmp_path / "ppo.json"
    run = subprocess.run([sys.executable, str(script), "--ppo-only", "--quick", "--json", str(out)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(out.read_text())
    hp = resolve_config("coop")[COOP_ID]  # the learner the config chooses, with its recipe
    summary = result["ppo"]["config"]
    assert (summary["n_envs"], summary["n_steps"], summary["n_epochs"], summary["batch_size"]) == (
        hp["n_envs"], hp["n_steps"], hp["n_epochs"], hp["batch_size"])
    assert summary["features_extractor"] == hp["policy_kwargs"]["features_extractor"]
    assert result["ppo_only"] and result["ppo"]["rollouts_per_run"] == 1 and result["ppo"]["repeats"] == 1
    rows = result["rows"]
    assert [row["name"] for row in rows] == ["ppo adapter", "ppo dummy"]
    for row in rows:
        assert row["steps"] == hp["n_envs"] * hp["n_steps"]
        assert row["steps_per_s"] < row["collect_steps_per_s"]  # learn() = collection + updates
        assert 0 < row["train_share"] < 1 and row["train_s_per_rollout"] > 0
    ratio = result["ppo"]["adapter_over_dummy"]
    assert ratio["wall"] == pytest.approx(rows[0]["steps_per_s"] / rows[1]["steps_per_s"])
    assert "ppo adapter / dummy:" in run.stdout


# ------------------------------------------------------------------------------- package and policies


def test_evaluation_imports_no_training_code():
    """evaluation (and the fast: agent) needs frozen_policy only: no import cycle with training."""
    import subprocess
    import sys

    code = ("import sys, thermopylae_agents.evaluation.games, thermopylae_agents.policies.frozen_policy; "
            "print(sorted(m for m in sys.modules if m.startswith('thermopylae_agents.training')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


POLICY_DIR = Path(__file__).resolve().parents[3] / "agents" / "thermopylae_agents" / "policies"
POLICIES = sorted(POLICY_DIR.glob("*.zip"))
assert POLICIES, f"no shipped policy zip in {POLICY_DIR}"  # an empty list would parametrize no test


@pytest.mark.parametrize("path", POLICIES, ids=[p.name for p in POLICIES])
def test_each_shipped_policy_file_loads_and_plays_a_legal_action(path):
    from thermopylae_agents.policies.sb3_agent import load_model

    model = load_model(path)
    frozen = FrozenPolicy(model)
    size = model.observation_space.shape[0]
    mask = np.zeros(model.action_space.n, dtype=bool)
    mask[[0, 3]] = True
    assert frozen.act(np.zeros(size, np.float32), mask) in (0, 3)


def test_fight_features_read_the_offsets_of_the_coop_layout():
    from thermopylae_agents.policies import fight_odds
    from thermopylae_env.coop import rules as coop

    assert fight_odds.SLOT1 == coop._OBS_SLOT1 and fight_odds.SLOT2 == coop._OBS_SLOT2
    marker_entries = [coop._OBS_MARKER + m - 1 for m in coop.LOCATION_DIE_MARKERS]
    assert marker_entries == [fight_odds.MARKER_3, fight_odds.MARKER_6]


# ------------------------------------------------------------------------------ one tiny co-op run


@pytest.fixture(scope="module")
def coop_run(tmp_path_factory):
    """One tiny co-op run through the command line, with a DAgger round and periodic evaluations; its
    log (stdout, not a terminal) is kept for the progress tests."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("coop_run")
    config = shrunk_config("coop", tmp)
    data = yaml.safe_load(config.read_text())
    data[COOP_ID]["bc"].update(dagger_rounds=1, dagger_episodes=3, dagger_epochs=1)
    config.write_text(yaml.safe_dump(data))
    out = tmp / "run"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["coop", "--config", str(config), "--run-dir", str(out), "--no-progress",
                     "--seed", "2"]) == 0
    return out, stdout.getvalue()


def scalar_tags(folder: Path) -> dict[str, set[str]]:
    """TensorBoard scalar tags of each event folder under ``folder`` (read back with EventAccumulator)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags: dict[str, set[str]] = {}
    for path in folder.rglob("events.out.tfevents.*"):
        events = EventAccumulator(str(path))
        events.Reload()
        tags.setdefault(path.parent.name, set()).update(events.Tags()["scalars"])
    return tags


def test_tensorboard_holds_cloning_dagger_evaluation_throughput_and_hparams(coop_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, _ = coop_run
    tags = scalar_tags(out / "tb")
    warm_start = {"bc/cross_entropy", "bc/agreement", "bc/value_mse", "bc/held_out_agreement",
                  "bc/clone_win_rate", "dagger/clone_win_rate", "dagger/agreement_on_clone_states",
                  "dagger/decisions"}
    assert warm_start <= tags["warm_start"]
    [ppo] = [name for name in tags if name.startswith("maskable_ppo")]
    assert {"eval/success_rate", "eval/mean_reward", "eval/episodes", "throughput/steps_per_second",
            "throughput/rollout_steps_per_second", "train/loss"} <= tags[ppo]
    assert {"report/ppo_win_rate", "report/heuristic_win_rate"} <= tags["summary"]
    [summary] = (out / "tb" / "summary").glob("events.out.tfevents.*")
    events = EventAccumulator(str(summary))
    events.Reload()
    assert "_hparams_/session_start_info" in events.PluginTagToContent("hparams")


def test_tensorboard_curve_is_the_curve_of_evaluations_npz(coop_run):
    out, _ = coop_run
    curve = read_tensorboard_curve(out)
    npz = np.load(out / "eval" / "evaluations.npz")
    np.testing.assert_array_equal(curve["timesteps"], npz["timesteps"])
    np.testing.assert_allclose(curve["success_rate"], npz["successes"].mean(axis=1), atol=1e-6)
    np.testing.assert_allclose(curve["mean_reward"], npz["results"].mean(axis=1), atol=1e-6)
    assert (curve["episodes"] == 4).all()
    assert (curve["ci_low"] <= curve["success_rate"]).all()
    assert (curve["success_rate"] <= curve["ci_high"]).all()
    with pytest.raises(ValueError, match="no periodic evaluation"):
        read_tensorboard_curve(out / "tb" / "warm_start")


def test_evaluate_curve_reads_the_tensorboard_logs_when_there_is_no_evaluations_npz(coop_run, tmp_path):
    import shutil

    from thermopylae_agents.evaluation.tables import load_learning_curve

    out, _ = coop_run
    expected = read_tensorboard_curve(out)
    copy = tmp_path / "run"
    shutil.copytree(out / "tb", copy / "tb")
    curve = load_learning_curve(copy)
    np.testing.assert_array_equal(curve["timesteps"], expected["timesteps"])
    np.testing.assert_array_equal(curve["success_rate"], expected["success_rate"])
    with pytest.raises(ValueError, match="no evaluations.npz, progress.csv or TensorBoard logs"):
        load_learning_curve(tmp_path / "empty")


def test_every_stage_logs_a_line_when_not_on_a_terminal(coop_run):
    _, log = coop_run
    for stage in ("BC: playing heuristic games: done", "BC: 1 epochs of cloning: done", "DAgger 1/1",
                  "evaluation at", "PPO coop: done", "report: ppo plays: done", "report: search plays: done"):
        assert stage in log, stage
    assert "Final report: " in log and "games in" in log
    report = read_report(coop_run[0])
    assert report["evaluation"]["games"] == sum(row["games"] for row in report["evaluation"]["rows"])


# ------------------------------------------------------------------------------------ budget sizing


def test_a_short_run_shrinks_the_warm_start_and_the_report_in_proportion():
    data = resolve_config("coop", timesteps=20_000)
    hp = data[COOP_ID]
    full = load_config("coop")[COOP_ID]
    assert hp["n_timesteps"] == 20_000
    assert 500 <= hp["bc"]["episodes"] < full["bc"]["episodes"]
    assert 100 <= hp["report"]["episodes"] < full["report"]["episodes"]
    assert hp["report"]["search_episodes"] == 0  # the slow search games are rounded down
    assert data["run"]["sized_to_budget"][f"{COOP_ID}.bc.episodes"] == {"full": full["bc"]["episodes"],
                                                                         "sized": hp["bc"]["episodes"]}
    # The config's own budget (or more) keeps every count; an explicit override wins over sizing.
    same = resolve_config("coop", timesteps=full["n_timesteps"])[COOP_ID]
    assert same["report"] == full["report"] and same["bc"] == full["bc"]
    assert resolve_config("coop", timesteps=20_000, bc_episodes=7)[COOP_ID]["bc"]["episodes"] == 7


def test_a_resumed_run_is_sized_from_the_full_counts(tmp_path):
    data = resolve_config("coop", timesteps=20_000)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    full = load_config("coop")[COOP_ID]
    longer = resolve_config("coop", path, timesteps=full["n_timesteps"])
    assert longer[COOP_ID]["report"] == full["report"] and longer[COOP_ID]["bc"] == full["bc"]


def test_rounding_to_whole_rollouts_and_resume_steps_are_announced(tmp_path, capsys):
    config = shrunk_config("duel-persian", tmp_path, n_timesteps=100, n_envs=2, n_steps=32, batch_size=32)
    out = tmp_path / "run"
    first = train("duel-persian", config=config, out=out, progress=False, report=True)
    text = capsys.readouterr().out
    assert "100 steps rounded up to 128 (2 whole rollouts of 2 envs x 32 steps)" in text
    assert "trained 128 steps (128 in all)" in text
    assert first["requested_timesteps"] == 100 and first["num_timesteps"] == 128
    second = train("duel-persian", resume=out, timesteps=200, progress=False, report=False)
    text = capsys.readouterr().out
    assert "at 128 steps: 72 more to reach 200 (trains 128" in text
    assert second["num_timesteps"] == 256
    # --no-report keeps the earlier report, marked with the steps of the model it evaluated.
    assert second["evaluation"] == first["evaluation"]
    assert second["evaluation_kept_from"]["num_timesteps"] == 128
    assert read_report(out)["evaluation"] == first["evaluation"]


# ------------------------------------------------------------------------------- command-line errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--config", "no/such/file.yaml"], "no such file"),
        (["--seed", "-1"], "--seed"),
        (["--seed", "1.5"], "--seed"),
        (["--seed", "٣"], "--seed"),
        (["--timesteps", "-5"], "--timesteps"),
        (["--timesteps", "0"], "--timesteps"),
        (["--n-envs", "x"], "--n-envs"),
    ],
)
def test_bad_command_line_is_one_line_and_a_nonzero_exit(args, message, tmp_path, capsys):
    out = tmp_path / "run"
    try:
        status = main(["coop", "--run-dir", str(out), "--no-progress", *args])
    except SystemExit as stop:  # argparse's own refusals
        status = stop.code
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()[-1:]) == 1 and message in err.splitlines()[-1] and "Traceback" not in err
    assert not out.exists()  # refused before anything was written


@pytest.mark.parametrize(("section", "key", "value"), [("report", "search", "search:abc"),
                                                       ("bc", "expert", "oracle")])
def test_a_malformed_agent_spec_in_the_config_is_refused_before_training(section, key, value, tmp_path,
                                                                        capsys):
    data = load_config("coop")
    data[COOP_ID][section][key] = value
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    assert main(["coop", "--config", str(config), "--run-dir", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("thermopylae-train: error:") and value.split(":")[-1] in err[0]
    assert not out.exists()


# ---------------------------------------------------------------------------------- reproducibility


def _cpu_has_avx2() -> bool:
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def _weights_digest(model_zip: Path) -> str:
    import hashlib

    from sb3_contrib import MaskablePPO

    digest = hashlib.sha256()
    for _, tensor in sorted(MaskablePPO.load(model_zip).policy.state_dict().items()):
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


@pytest.mark.slow
@pytest.mark.skipif(not _cpu_has_avx2(), reason="the pinned kernels are the AVX2 ones of x86-64")
@pytest.mark.parametrize("learner", ["sb3", "fast"])
def test_train_py_trains_the_same_weights_in_separate_processes_and_with_an_avx2_only_mkl(tmp_path, learner):
    """scripts/train.py pins the CPU kernels: the same seed, thread count and precision (float32) give the
    same weights bit for bit in two processes, the second with MKL restricted to AVX2 as on a CPU without
    AVX512; for either learner."""
    import os
    import subprocess
    import sys

    from thermopylae_agents.training.kernels import PINNED

    config = shrunk_config("coop", tmp_path, bc_episodes=4)
    script = Path(__file__).resolve().parents[3] / "scripts" / "train.py"
    base_env = {k: v for k, v in os.environ.items() if k not in PINNED and k != "MKL_ENABLE_INSTRUCTIONS"}
    digests = []
    for name, extra in (("a", {}), ("avx2_mkl", {"MKL_ENABLE_INSTRUCTIONS": "AVX2"})):
        out = tmp_path / name
        subprocess.run([sys.executable, str(script), "coop", "--config", str(config), "--run-dir", str(out),
                        "--no-report", "--no-progress", "--seed", "5", "--learner", learner, "--threads", "1",
                        *(["--precision", "float32"] if learner == "fast" else [])],
                       env={**base_env, **extra}, check=True, capture_output=True, timeout=600)
        report = read_report(out)
        assert report["kernels"]["ATEN_CPU_CAPABILITY"] == PINNED["ATEN_CPU_CAPABILITY"]
        assert report["learner"] == learner and report["threads"]["threads"] == 1
        digests.append(_weights_digest(out / "final_model.zip"))
    assert digests[0] == digests[1]


@pytest.mark.slow
def test_the_fast_learner_in_bfloat16_trains_the_same_weights_twice_on_one_machine(tmp_path):
    """The default precision where the CPU has bfloat16 instructions: the same seed and thread count give
    the same weights in two processes on the same machine (other CPUs may multiply bfloat16 otherwise)."""
    import subprocess
    import sys

    config = shrunk_config("coop", tmp_path, bc_episodes=4)
    script = Path(__file__).resolve().parents[3] / "scripts" / "train.py"
    digests = []
    for name in ("a", "b"):
        out = tmp_path / name
        subprocess.run([sys.executable, str(script), "coop", "--config", str(config), "--run-dir", str(out),
                        "--no-report", "--no-progress", "--seed", "5", "--threads", "2",
                        "--precision", "bfloat16"], check=True, capture_output=True, timeout=600)
        assert read_report(out)["precision"] == "bfloat16"
        digests.append(_weights_digest(out / "final_model.zip"))
    assert digests[0] == digests[1]
