"""The single-agent duel environments ``thermopylae/DuelGreek-v0`` and ``thermopylae/DuelPersian-v0``."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401  (registers the ids)
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.duel import (
    COMMIT,
    DONE_DISCARDING,
    GREEK,
    NUM_ACTIONS,
    OBS_IS_PERSIAN,
    OBS_SIZE,
    PERSIAN,
    check_invariants,
)
from thermopylae_env.duel_env import DuelGreekEnv, DuelPersianEnv
from thermopylae_env.opponents import HeuristicGreek, HeuristicPersian, RandomAgent

ENVS = [DuelGreekEnv, DuelPersianEnv]


def random_episode(env: gym.Env, seed: int, rng: np.random.Generator) -> tuple[list, float, dict]:
    obs, info = env.reset(seed=seed)
    trace = [obs]
    while True:
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(int(legal[rng.integers(legal.size)]))
        trace.append(obs)
        assert not truncated
        if terminated:
            return trace, reward, info
        assert reward == 0.0


@pytest.mark.parametrize("env_id", ["thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"])
def test_gymnasium_make_both_ids(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) and env.action_space.n == NUM_ACTIONS
    side = PERSIAN if "Persian" in env_id else GREEK
    assert obs[OBS_IS_PERSIAN] == side
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].any()
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    env.close()


@pytest.mark.parametrize("cls", ENVS)
def test_gymnasium_check_env(cls):
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(cls(), skip_render_check=False)
        check_env(cls(render_mode="ansi"))


@pytest.mark.parametrize("cls", ENVS)
def test_sb3_check_env(cls):
    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(cls(), warn=True)


@pytest.mark.parametrize("cls", ENVS)
def test_masks_agree_and_the_agent_always_has_a_choice(cls):
    env = cls(opponent="random")
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=1)
    steps = 0
    while True:
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (NUM_ACTIONS,)
        assert np.array_equal(env.action_masks(), mask.astype(bool)) and env.action_masks().dtype == bool
        assert env.state.current_player == env.side and mask.any()
        assert obs.dtype == np.float32 and obs.shape == (OBS_SIZE,)
        legal = np.flatnonzero(mask)
        obs, reward, terminated, _, info = env.step(int(legal[rng.integers(legal.size)]))
        steps += 1
        check_invariants(env.state, env.game)
        if terminated:
            break
    assert not info["action_mask"].any() and not env.action_masks().any()
    assert steps > 5


@pytest.mark.parametrize("cls", ENVS)
def test_rewards_and_is_success(cls):
    rng = np.random.default_rng(3)
    env = cls(opponent="random")
    outcomes = set()
    for seed in range(30):
        _, reward, info = random_episode(env, seed, rng)
        assert reward in (1.0, -1.0)
        assert info["is_success"] == (reward == 1.0) == (env.state.winner == env.side)
        outcomes.add(reward)
    assert outcomes == {1.0, -1.0}


@pytest.mark.parametrize("cls", ENVS)
def test_seeded_replay(cls):
    for opponent in ("random", "heuristic"):
        env_a, env_b = cls(opponent=opponent), cls(opponent=opponent)
        trace_a, _, _ = random_episode(env_a, 42, np.random.default_rng(9))
        trace_b, _, _ = random_episode(env_b, 42, np.random.default_rng(9))
        assert len(trace_a) == len(trace_b)
        assert all(np.array_equal(a, b) for a, b in zip(trace_a, trace_b, strict=True))
    trace_c, _, _ = random_episode(cls(opponent="random"), 43, np.random.default_rng(9))
    same = len(trace_c) == len(trace_a) and all(
        np.array_equal(a, c) for a, c in zip(trace_a, trace_c, strict=True)
    )
    assert not same


@pytest.mark.parametrize("cls", ENVS)
def test_illegal_action_ends_as_a_loss_by_default(cls):
    env = cls()
    _, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = env.step(illegal)
    assert terminated and not truncated and reward == -1.0
    assert info["illegal_action"] and info["illegal_reason"] and info["is_success"] is False
    with pytest.raises(RuntimeError):
        env.step(DONE_DISCARDING)
    env = cls(illegal_action_penalty=-5.0)
    _, info = env.reset(seed=0)
    assert env.step(illegal)[1] == -5.0


@pytest.mark.parametrize("cls", ENVS)
def test_illegal_action_raise_mode_changes_nothing(cls):
    env = cls(illegal_action="raise")
    obs, info = env.reset(seed=0)
    before = env.state.copy()
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError):
        env.step(illegal)
    assert env.state.hands == before.hands and env.state.phase == before.phase
    legal = int(np.flatnonzero(info["action_mask"])[0])
    env.step(legal)  # the episode goes on
    with pytest.raises(ValueError):
        cls(illegal_action="ignore")


@pytest.mark.parametrize("cls", ENVS)
def test_out_of_space_actions_raise_and_change_nothing(cls):
    env = cls()
    with pytest.raises(RuntimeError):
        env.step(0)  # before reset
    env.reset(seed=0)
    before = env.state.copy()
    for bad, err in ((NUM_ACTIONS, ValueError), (-1, ValueError), (np.array([1, 2]), ValueError),
                     (2.5, TypeError), (None, TypeError), ("done", TypeError)):
        with pytest.raises(err):
            env.step(bad)
    assert env.state.hands == before.hands and env.state.deck_pos == before.deck_pos
    assert env.state.actions_taken == before.actions_taken


def test_render_ansi_and_action_names():
    env = DuelPersianEnv(render_mode="ansi")
    assert "not started" in env.render()
    env.reset(seed=0)
    text = env.render()
    assert "you: persian" in text and "Turn 1" in text and "Greek tokens 10" in text
    assert env.decode_action(15) == "add Immortals (50) to attack"
    assert DuelGreekEnv().decode_action(15) == "add Phalanx (50) to defence"
    assert env.encode_action("commit attack") == COMMIT
    with pytest.raises(ValueError):
        DuelGreekEnv(render_mode="human")


def test_record_events():
    env = DuelGreekEnv(record_events=True)
    _, info = env.reset(seed=0)
    assert info["events"][0]["type"] == "deal"
    assert any(e["type"] == "done_discarding" and e["player"] == PERSIAN for e in info["events"])
    _, _, _, _, info = env.step(DONE_DISCARDING)
    assert info["events"][0] == {"type": "done_discarding", "player": GREEK}


# --- opponents ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ENVS)
def test_callable_opponent_sees_only_its_own_side(cls):
    calls = []

    def opponent(observation, action_mask):
        env_state = env.state
        opp = 1 - env.side
        assert env_state.current_player == opp
        assert np.array_equal(observation, env.game.observe(env_state, opp))
        assert observation[OBS_IS_PERSIAN] == opp
        assert np.array_equal(action_mask, env.game.legal_action_mask(env_state, np.int8))
        calls.append(1)
        legal = np.flatnonzero(action_mask)
        return int(legal[-1])  # e.g. "done discarding", "decline"

    env = cls(opponent=opponent)
    random_episode(env, 0, np.random.default_rng(0))
    assert len(calls) > 10 and env.opponent_label == "opponent"


def test_opponent_objects_with_act_and_illegal_opponent_moves():
    env = DuelGreekEnv(opponent=HeuristicPersian(attack_threshold=100))
    random_episode(env, 0, np.random.default_rng(0))
    env = DuelGreekEnv(opponent=lambda obs, mask: COMMIT)  # never legal in the Persian's discard phase
    with pytest.raises(IllegalActionError, match="persian opponent"):
        env.reset(seed=0)
    with pytest.raises(ValueError, match="opponent must be"):
        DuelGreekEnv(opponent=42)


@pytest.mark.parametrize("cls", ENVS)
def test_random_opponent_draws_from_the_env_rng(cls):
    firsts = []
    for _ in range(2):
        env = cls(opponent="random")
        trace, _, _ = random_episode(env, 5, np.random.default_rng(1))
        firsts.append(trace)
    assert all(np.array_equal(a, b) for a, b in zip(*firsts, strict=True))
    assert cls(opponent="random").opponent_label == "random"


def test_model_paths_are_refused_with_a_pointer_to_the_agents_loader(tmp_path):
    missing = tmp_path / "nowhere.zip"
    with pytest.raises(ValueError, match=r"nowhere.zip.*loads no model file.*thermopylae_agents"):
        DuelGreekEnv(opponent=str(missing))
    with pytest.raises(ValueError, match="heuristc"):
        DuelGreekEnv(opponent="heuristc")  # a typo is not silently a path that works
    junk = tmp_path / "junk.zip"
    junk.write_text("not a model")
    with pytest.raises(ValueError, match="junk.zip"):
        DuelPersianEnv(opponent=junk)


def test_saved_models_loaded_by_the_caller_play_as_opponent_objects(tmp_path):
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    from thermopylae_agents.sb3_agent import SB3Agent

    maskable_path = tmp_path / "persian_maskable.zip"
    MaskablePPO("MlpPolicy", DuelPersianEnv(), n_steps=64, batch_size=32, seed=0, device="cpu").save(
        maskable_path)
    opponent = SB3Agent(maskable_path)
    env = DuelGreekEnv(opponent=opponent, illegal_action="raise")
    assert env.opponent_label.endswith("persian_maskable.zip") and opponent.maskable
    random_episode(env, 0, np.random.default_rng(0))  # every opponent move legal, or it would raise

    ppo_path = tmp_path / "greek_ppo.zip"
    PPO("MlpPolicy", DuelGreekEnv(), n_steps=64, batch_size=32, seed=0, device="cpu").save(ppo_path)
    opponent = SB3Agent(str(ppo_path))
    env = DuelPersianEnv(opponent=opponent, illegal_action="raise")
    assert not opponent.maskable  # loaded by the PPO fallback: best legal action
    random_episode(env, 0, np.random.default_rng(0))

    wrong = tmp_path / "cartpole.zip"
    PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, device="cpu").save(wrong)
    with pytest.raises(ValueError, match="cartpole.zip"):  # the agent's check_fits, asked by the env
        DuelGreekEnv(opponent=SB3Agent(wrong))


def test_heuristic_players_beat_random_on_both_sides():
    for cls, agent in ((DuelGreekEnv, HeuristicGreek()), (DuelPersianEnv, HeuristicPersian())):
        env = cls(opponent="random")
        wins = 0
        for seed in range(40):
            obs, info = env.reset(seed=seed)
            while True:
                obs, reward, terminated, _, info = env.step(agent.act(obs, info["action_mask"]))
                if terminated:
                    wins += reward > 0
                    break
        assert wins >= 34, (cls.__name__, wins)
    random_agent = RandomAgent(seed=0)
    env = DuelGreekEnv()  # a random Greek against the heuristic Persian
    wins = 0
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        while True:
            obs, reward, terminated, _, info = env.step(random_agent.act(obs, info["action_mask"]))
            if terminated:
                wins += reward > 0
                break
    assert wins <= 6
