"""The single-agent duel envs on a reduced duel (``config=``): the reference engine plays the member, the
heuristic opponent takes its hand limit, the vector env refuses it."""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_env.duel.config import FULL_DUEL, SMALL_DUELS
from thermopylae_env.duel.env import DuelGreekEnv, DuelPersianEnv
from thermopylae_env.duel.vector import DuelVectorEnv


@pytest.mark.parametrize("env_class", [DuelGreekEnv, DuelPersianEnv])
def test_a_reduced_duel_env_plays_only_the_members_cards(env_class):
    config = SMALL_DUELS["small"]
    env = env_class(config=config, record_events=True)
    assert env.game.config is config
    rng = np.random.default_rng(0)
    for seed in range(20):
        env.reset(seed=seed)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            _, reward, done, _, _ = env.step(action)
        assert reward in (-1.0, 1.0)
        dealt = set(env.state.decks[0]) | set(env.state.decks[1])
        assert dealt == set(env.game.deck_ids[0]) | set(env.game.deck_ids[1])


def test_the_heuristic_opponent_takes_the_members_hand_limit():
    env = DuelPersianEnv(config=SMALL_DUELS["tiny"])
    assert env._opponent_act.__self__.hand_limit == SMALL_DUELS["tiny"].hand_limit


def test_the_vector_env_refuses_a_reduced_duel_and_takes_the_full_one():
    with pytest.raises(ValueError, match="plays the full game only, not the 'small' duel"):
        DuelVectorEnv(2, config=SMALL_DUELS["small"])
    DuelVectorEnv(2, config=FULL_DUEL).close()
