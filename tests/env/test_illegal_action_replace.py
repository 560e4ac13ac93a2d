"""``illegal_action="replace"``: a single env plays the legal action with the nearest id instead of an
illegal one, says so in ``info``, and the game goes on exactly as if that action had been chosen."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401 - registers the environments
from thermopylae_env.actions import nearest_legal_action
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.records import RecordEpisode, replay_record

ENV_IDS = ("thermopylae/Coop-v0", "thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0")


def test_nearest_legal_action_takes_the_nearest_id_and_the_lower_one_on_a_tie():
    mask = np.array([0, 1, 0, 0, 0, 1, 0, 1], dtype=np.int8)
    assert nearest_legal_action(mask, 0) == 1
    assert nearest_legal_action(mask, 3) == 1  # 1 and 5 are both two away: the lower id
    assert nearest_legal_action(mask, 4) == 5
    assert nearest_legal_action(mask, 6) == 5  # 5 and 7 tie
    assert nearest_legal_action(mask, 7) == 7


def test_nearest_legal_action_refuses_a_mask_without_legal_actions():
    with pytest.raises(ValueError, match="no legal action"):
        nearest_legal_action(np.zeros(4, dtype=np.int8), 2)


def _first_illegal(mask: np.ndarray) -> int | None:
    illegal = np.flatnonzero(mask == 0)
    return int(illegal[0]) if illegal.size else None


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_replace_plays_the_nearest_legal_action_and_flags_it(env_id):
    replacing = gym.make(env_id, illegal_action="replace")
    reference = gym.make(env_id)
    obs, info = replacing.reset(seed=3)
    reference.reset(seed=3)
    replaced_steps = 0
    for _ in range(200):
        mask = info["action_mask"]
        action = _first_illegal(mask)
        if action is None:
            action = int(np.flatnonzero(mask)[0])
        expected = nearest_legal_action(mask, action)
        obs, reward, terminated, truncated, info = replacing.step(action)
        ref_obs, ref_reward, ref_terminated, _, ref_info = reference.step(expected)
        np.testing.assert_array_equal(obs, ref_obs)
        assert (reward, terminated) == (ref_reward, ref_terminated)
        if mask[action]:
            assert "illegal_action_replaced" not in info
        else:
            replaced_steps += 1
            assert info["illegal_action_replaced"] is True and info["played_action"] == expected
            assert info["illegal_reason"] and "illegal_action" not in info
        if terminated:
            break
    assert replaced_steps > 0 and terminated


def test_replace_is_refused_by_the_vector_env_that_does_not_implement_it():
    with pytest.raises(ValueError, match="illegal_action must be one of"):
        CoopVectorEnv(2, illegal_action="replace")


def test_unknown_illegal_action_mode_is_refused_naming_the_modes():
    with pytest.raises(ValueError, match="'loss', 'raise', 'replace'"):
        gym.make("thermopylae/Coop-v0", illegal_action="skip")


def test_a_recorded_game_with_replaced_actions_replays(tmp_path):
    env = RecordEpisode(gym.make("thermopylae/Coop-v0", illegal_action="replace", record_events=True),
                        tmp_path / "game.jsonl")
    _, info = env.reset(seed=5)
    terminated = False
    while not terminated:
        action = _first_illegal(info["action_mask"])
        _, _, terminated, _, info = env.step(0 if action is None else action)
    env.close()
    assert replay_record(tmp_path / "game.jsonl")["finished"]
