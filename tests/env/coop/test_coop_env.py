"""thermopylae/Coop-v0: the Gymnasium adapter of the co-op engine."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401  (registers the environments)
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.layout import (
    DECLINE,
    RETREAT,
    decode_action,
    encode_action,
    fight_action,
    give_action,
)
from thermopylae_env.coop.state import CoopState, Phase

EASY_DECK = [(1, 1, 0)] * 28  # every fight sends both Persian cards to the graveyard
BONUS_DECK = [(1, 40, 1)] * 28  # every fight beats both cards to the discard pile, two draw offers


def masked_random_action(info: dict, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(info["action_mask"])))


def play_masked(env: CoopEnv, seed: int, rng: np.random.Generator) -> tuple[list, float, dict]:
    obs, info = env.reset(seed=seed)
    trajectory = [obs]
    total = 0.0
    while True:
        obs, reward, terminated, truncated, info = env.step(masked_random_action(info, rng))
        trajectory.append(obs)
        total += reward
        assert not truncated
        if terminated:
            return trajectory, total, info


# ---------------------------------------------------------------- registration and checkers


def test_gymnasium_env_checker_passes():
    from gymnasium.utils.env_checker import check_env

    for kwargs in ({}, {"num_players": 3, "render_mode": "ansi"}):
        env = gym.make("thermopylae/Coop-v0", **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)


def test_stable_baselines3_env_checker_passes():
    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(CoopEnv(num_players=2), warn=True)


def test_gymnasium_make_works_with_and_without_the_module_prefix():
    for env_id in ("thermopylae/Coop-v0", "thermopylae_env:thermopylae/Coop-v0"):
        env = gym.make(env_id, num_players=4)
        obs, info = env.reset(seed=0)
        assert env.action_space == gym.spaces.Discrete(72)
        assert env.observation_space.shape == (115,) and env.observation_space.dtype == np.float32
        assert obs in env.observation_space
        assert isinstance(env.unwrapped, CoopEnv) and env.unwrapped.game.num_players == 4
        env.close()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="illegal_action"):
        CoopEnv(illegal_action="ignore")
    with pytest.raises(ValueError, match="render_mode"):
        CoopEnv(render_mode="human")
    with pytest.raises(ValueError, match="num_players"):
        CoopEnv(num_players=5)
    with pytest.raises(ValueError, match="reward_shaping"):
        CoopEnv(reward_shaping=-0.5)


# ---------------------------------------------------------------- episodes


def test_same_seed_replays_the_same_episode():
    runs = []
    for _ in range(2):
        env = CoopEnv(num_players=2)
        trajectory, total, _ = play_masked(env, seed=11, rng=np.random.default_rng(5))
        runs.append((np.stack(trajectory), total))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    other, _, _ = play_masked(CoopEnv(num_players=2), seed=12, rng=np.random.default_rng(5))
    assert len(other) != len(runs[0][0]) or not np.array_equal(np.stack(other), runs[0][0])


def test_masked_random_episodes_keep_observations_in_space_and_cards_in_place():
    rng = np.random.default_rng(0)
    for players in (1, 2, 3, 4):
        env = CoopEnv(num_players=players)
        for episode in range(30):
            obs, info = env.reset(seed=episode)
            while True:
                assert obs in env.observation_space
                assert info["action_mask"].dtype == np.int8
                assert np.array_equal(info["action_mask"].astype(bool), env.action_masks())
                env.game.check_invariants(env.state)
                obs, reward, terminated, truncated, info = env.step(masked_random_action(info, rng))
                if terminated:
                    assert reward in (1.0, -1.0) and info["is_success"] == (reward == 1.0)
                    assert not info["action_mask"].any() and not env.action_masks().any()
                    env.game.card_locations(env.state)
                    break
                assert reward == 0.0 and "is_success" not in info


def test_a_won_game_reports_success_and_reward_plus_one():
    env = CoopEnv(persian_deck=EASY_DECK)
    obs, info = env.reset(seed=0)
    rewards = []
    terminated = False
    while not terminated:
        hand = env.state.hands[env.state.current_player]
        if info["phase"] == Phase.MAIN:
            action = fight_action(env.game.spartan[hand[0]], 0) if hand else RETREAT
        else:
            action = give_action(0)
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
    assert info["is_success"] is True and rewards[-1] == 1.0 and sum(rewards) == 1.0
    assert env.state.reason == "graveyard"


def test_a_lost_game_reports_failure_and_reward_minus_one():
    env = CoopEnv()
    env.reset(seed=0)
    env.state.marker = 6
    obs, reward, terminated, truncated, info = env.step(RETREAT)
    assert terminated and reward == -1.0 and info["is_success"] is False
    assert obs[63 + 6] == 1.0


def test_reward_shaping_counts_beaten_cards_and_retreats_and_keeps_the_final_reward():
    env = CoopEnv(persian_deck=BONUS_DECK, reward_shaping=0.1)
    obs, info = env.reset(seed=0)
    value = env.game.spartan[env.state.hands[0][0]]
    _, reward, _, _, _ = env.step(fight_action(value, 0))
    assert math.isclose(reward, 0.2)  # two cards beaten to the discard pile
    env.step(DECLINE)
    env.step(DECLINE)
    _, reward, _, _, _ = env.step(RETREAT)
    assert math.isclose(reward, -0.1)
    env.step(DECLINE)
    env.state.marker = 6
    _, reward, terminated, _, _ = env.step(RETREAT)
    assert terminated and reward == -1.0

    graveyard_env = CoopEnv(persian_deck=EASY_DECK, reward_shaping=0.1)
    graveyard_env.reset(seed=0)
    value = graveyard_env.game.spartan[graveyard_env.state.hands[0][0]]
    _, reward, _, _, _ = graveyard_env.step(fight_action(value, 0))
    assert math.isclose(reward, 0.4)  # two cards to the graveyard count double


def test_without_shaping_every_non_final_reward_is_zero():
    env = CoopEnv(persian_deck=EASY_DECK)
    obs, info = env.reset(seed=0)
    value = env.game.spartan[env.state.hands[0][0]]
    _, reward, terminated, _, _ = env.step(fight_action(value, 0))
    assert reward == 0.0 and not terminated


# ---------------------------------------------------------------- illegal and invalid actions


def test_unmasked_random_rollout_ends_with_an_illegal_action_loss():
    env = CoopEnv(illegal_action_penalty=-2.0)
    env.action_space.seed(0)
    ended_illegally = 0
    for seed in range(20):
        env.reset(seed=seed)
        while True:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            if terminated:
                break
        if info.get("illegal_action"):
            ended_illegally += 1
            assert reward == -2.0 and info["is_success"] is False and info["illegal_reason"]
            assert not info["action_mask"].any()
            with pytest.raises(RuntimeError):
                env.step(RETREAT)
    assert ended_illegally >= 15


def test_illegal_action_in_loss_mode_leaves_the_engine_state_as_it_was():
    env = CoopEnv()
    env.reset(seed=3)
    before = env.state.key()
    obs, reward, terminated, truncated, info = env.step(DECLINE)
    assert terminated and reward == -1.0 and info["illegal_action"] is True
    assert "no draw is offered" in info["illegal_reason"]
    assert env.state.key() == before
    assert np.array_equal(obs, env.game.observe(env.state))


def test_illegal_action_in_raise_mode_raises_and_the_episode_goes_on():
    env = CoopEnv(illegal_action="raise")
    env.reset(seed=3)
    before = env.state.key()
    with pytest.raises(IllegalActionError, match="no draw is offered"):
        env.step(give_action(0))
    assert env.state.key() == before
    obs, reward, terminated, truncated, info = env.step(RETREAT)
    assert not terminated and "illegal_action" not in info


@pytest.mark.parametrize(
    ("action", "error"),
    [(-1, ValueError), (72, ValueError), (1.5, TypeError), (float("nan"), ValueError), (None, TypeError),
     (np.array([1, 2]), ValueError), (True, TypeError), ("0", TypeError)],
)
def test_out_of_space_actions_raise_and_leave_the_state_unchanged(action, error):
    env = CoopEnv()
    env.reset(seed=1)
    before = env.state.key()
    with pytest.raises(error):
        env.step(action)
    assert env.state.key() == before
    env.step(np.int64(RETREAT))  # still playable
    assert env.state.marker == 2


def test_numpy_and_zero_dimensional_actions_are_accepted():
    env = CoopEnv()
    env.reset(seed=1)
    env.step(np.array(RETREAT))
    assert env.state.marker == 2


def test_step_before_reset_raises_runtime_error():
    env = CoopEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(RETREAT)
    assert env.state is None
    with pytest.raises(RuntimeError):
        env.action_masks()


def test_step_after_the_episode_ended_raises_and_changes_nothing():
    env = CoopEnv()
    env.reset(seed=0)
    env.state.marker = 6
    env.step(RETREAT)
    before = env.state.key()
    with pytest.raises(RuntimeError, match="ended"):
        env.step(RETREAT)
    assert env.state.key() == before
    env.reset(seed=0)
    assert env.state.marker == 1


# ---------------------------------------------------------------- masks, vector envs, extras


def test_action_masks_match_the_info_mask_and_the_engine():
    env = CoopEnv(num_players=2)
    obs, info = env.reset(seed=4)
    mask = env.action_masks()
    assert mask.dtype == bool and mask.shape == (72,)
    assert np.array_equal(mask, info["action_mask"].astype(bool))
    assert np.array_equal(mask, env.game.legal_action_mask(env.state))


def test_action_masks_work_through_subprocvecenv():
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import SubprocVecEnv

    vec = SubprocVecEnv([lambda: CoopEnv(num_players=2), lambda: CoopEnv(num_players=3)])
    try:
        vec.seed(0)
        vec.reset()
        masks = get_action_masks(vec)
        direct = np.stack(vec.env_method("action_masks"))
        assert masks.shape == (2, 72) and masks.dtype == bool
        assert np.array_equal(masks, direct)
        assert masks[:, RETREAT].all() and not masks[:, DECLINE].any()
        vec.step(np.array([RETREAT, RETREAT]))
        masks = get_action_masks(vec)
        assert masks[:, DECLINE].all() and masks[0, give_action(1)] and not masks[0, give_action(2)]
        assert masks[1, give_action(2)]
    finally:
        vec.close()


def test_state_from_observation_round_trips_an_env_observation():
    env = CoopEnv(num_players=3)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=2)
    for _ in range(12):
        rebuilt = env.game.state_from_observation(obs, rng)
        assert np.array_equal(env.game.observe(rebuilt), obs)
        obs, reward, terminated, truncated, info = env.step(masked_random_action(info, rng))
        if terminated:
            break


def test_events_are_in_info_only_when_recorded():
    env = CoopEnv(record_events=True)
    obs, info = env.reset(seed=0)
    assert info["events"] == []
    obs, reward, terminated, truncated, info = env.step(RETREAT)
    assert info["events"][0] == {"type": "retreat", "seat": 0, "marker": 2}
    plain = CoopEnv()
    plain.reset(seed=0)
    assert "events" not in plain.step(RETREAT)[4]


def test_render_ansi_shows_hands_line_marker_support_and_decks():
    env = CoopEnv(num_players=2, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    state = env.state
    assert isinstance(text, str)
    persian = env.game.persian[state.slot1]
    assert f"white {persian.white:>2} red {persian.red:>2}" in text
    assert "[1]" in text and "3*" in text and "6*" in text and " 7 " in text
    assert "Support   4/4" in text and "Spartan deck 14" in text and "Persian deck 26" in text
    for seat in range(2):
        values = " ".join(str(v) for v in sorted(env.game.spartan[c] for c in state.hands[seat]))
        assert f"seat {seat}: {values}" in text
    with pytest.warns(UserWarning, match="render_mode"):
        assert CoopEnv().render() is None


def test_encode_and_decode_action_are_exported_by_the_env_module():
    assert encode_action("fight 17 +2 support") == fight_action(17, 2)
    assert decode_action(60) == "decline draw"
    assert CoopEnv.encode_action("retreat") == RETREAT and CoopEnv().decode_action(0) == "retreat"
    assert decode_action is decode_action


def test_game_and_state_are_exposed():
    env = CoopEnv(num_players=2)
    assert env.game.num_players == 2 and env.state is None
    env.reset(seed=0)
    assert isinstance(env.state, CoopState) and len(env.state.hands) == 2
