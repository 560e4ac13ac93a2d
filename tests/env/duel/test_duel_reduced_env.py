"""The single-agent duel envs on a reduced duel (``config=``): the reference engine plays the member, the
heuristic opponent takes its hand limit, the vector env refuses it, and the Greek env refuses a duel that can
end before the Greek's first move."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from thermopylae_env import GREEK_ID
from thermopylae_env.duel.config import FULL_DUEL, SMALL_DUELS, DuelConfig, DuelConfigError
from thermopylae_env.duel.env import DuelGreekEnv, DuelPersianEnv
from thermopylae_env.duel.layout import PERSIAN
from thermopylae_env.duel.rules import DuelGame
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


# Turn 1: Xerxes Commands empties the Greek's two cards, and the Persian's other card, an Attack, takes the
# Greek's only token before he has moved.
GREEK_MAY_NEVER_MOVE = DuelConfig("greek may never move", greek=(1, 1, 0, 1, 0, 0, 0, 0, 0),
                                  persian=(1, 0, 0, 1, 0, 0, 0, 0, 1), start_hand=1, hand_limit=2,
                                  start_tokens=1)


def test_such_a_duel_ends_before_the_greeks_first_move_in_some_games():
    game = DuelGame(GREEK_MAY_NEVER_MOVE)  # a random Persian, as the Greek env's reset() would play him
    rng = np.random.default_rng(0)
    over = 0
    for _ in range(200):
        state = game.init(rng)
        while not state.terminated and state.current_player == PERSIAN:
            game.step(state, int(rng.choice(game.legal_actions(state))), rng)
        over += state.terminated
    assert over > 0


@pytest.mark.parametrize("make", [lambda c: DuelGreekEnv(config=c),
                                  lambda c: DuelGreekEnv(config=c.to_dict()),
                                  lambda c: gymnasium.make(GREEK_ID, config=c)])
def test_the_greek_env_refuses_a_duel_that_can_end_before_his_first_move(make):
    with pytest.raises(DuelConfigError, match="can end before the Greek's first move") as err:
        make(GREEK_MAY_NEVER_MOVE)
    assert "\n" not in str(err.value) and "greek may never move" in str(err.value)


def test_the_persian_env_plays_a_duel_that_can_end_before_the_greeks_first_move():
    env = DuelPersianEnv(config=GREEK_MAY_NEVER_MOVE)
    rng = np.random.default_rng(1)
    for seed in range(30):
        _, info = env.reset(seed=seed)
        assert info["action_mask"].any()
        done = False
        while not done:
            _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
