"""The env's incremental observations and cached masks (``CoopView``) equal the engine's own
``observe`` / ``legal_action_mask``, and the dice of a real generator are those of NumPy's array draw."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from thermopylae_env.coop import state as coop_state
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.observation import CoopView
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import roll_dice


def assert_view_matches(env: CoopEnv, obs: np.ndarray, info: dict) -> None:
    game, state = env.game, env.state
    assert obs.dtype == np.float32
    np.testing.assert_array_equal(obs, game.observe(state))
    if not state.terminated:
        assert info["action_mask"].dtype == np.int8
        np.testing.assert_array_equal(info["action_mask"], game.legal_action_mask(state).astype(np.int8))


@pytest.mark.parametrize("num_players", [1, 2, 3, 4])
def test_every_observation_and_mask_of_random_play_equals_the_engines(num_players):
    env = CoopEnv(num_players=num_players)
    rng = np.random.default_rng(num_players)
    obs, info = env.reset(seed=num_players)
    for _ in range(3000):
        assert_view_matches(env, obs, info)
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, _, terminated, _, info = env.step(action)
        if terminated:
            assert_view_matches(env, obs, info)
            obs, info = env.reset()


def test_observations_and_masks_handed_out_are_not_changed_by_later_steps_or_by_the_caller():
    env = CoopEnv()
    obs, info = env.reset(seed=3)
    kept_obs, kept_mask = obs.copy(), info["action_mask"].copy()
    next_obs, _, _, _, next_info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    np.testing.assert_array_equal(obs, kept_obs)
    np.testing.assert_array_equal(info["action_mask"], kept_mask)
    next_obs[:] = 0.5
    next_info["action_mask"][:] = 1
    assert_view_matches(env, env._view.observe(env.state), {"action_mask": env._view.mask(env.state)})


def test_a_state_changed_between_steps_is_observed_as_it_is():
    env = CoopEnv(num_players=2)
    env.reset(seed=5)
    state = env.state
    state.marker = 5
    state.support = 1
    state.hands[1].append(state.hands[0].pop())
    view = env._view
    np.testing.assert_array_equal(view.observe(state), env.game.observe(state))
    np.testing.assert_array_equal(view.mask(state), env.game.legal_action_mask(state).astype(np.int8))


@pytest.mark.parametrize(
    "edit",
    [
        lambda hand, other: hand.insert(0, other.pop()),  # a card drawn but not appended
        lambda hand, other: hand.reverse(),  # the same cards in another order
        lambda hand, other: (hand.pop(0), hand.__setitem__(0, other.pop())),  # one out, one swapped
        lambda hand, other: hand.__setitem__(slice(None), hand[1:] + [other.pop(), other.pop()]),
    ],
)
def test_hand_changes_the_engine_never_makes_are_observed_as_they_are(edit):
    env = CoopEnv(num_players=2)
    env.reset(seed=11)
    state = env.state
    edit(state.hands[0], state.hands[1])
    view = env._view
    np.testing.assert_array_equal(view.observe(state), env.game.observe(state))


@pytest.mark.parametrize("deck", ["spartan", "persian"])
def test_a_deck_that_grew_back_between_steps_is_observed_as_it_is(deck):
    env = CoopEnv()
    _, info = env.reset(seed=4)
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    state = env.state
    if deck == "spartan":  # the last card drawn goes back on top of the deck
        state.hands[0].remove(state.spartan_order[state.spartan_pos - 1])
        state.spartan_pos -= 1
    else:  # the card in slot 2 goes back on top of the Persian deck
        state.slot2 = -1
        state.persian_pos -= 1
    np.testing.assert_array_equal(env._view.observe(state), env.game.observe(state))


def test_the_cached_masks_cannot_be_written_and_the_env_hands_out_writable_copies():
    env = CoopEnv()
    _, info = env.reset(seed=2)
    cached = env._view.mask(env.state)
    with pytest.raises(ValueError, match="read-only"):
        cached[0] = 0
    assert info["action_mask"].flags.writeable
    assert not np.shares_memory(info["action_mask"], cached)


def test_a_view_follows_a_different_state_object_from_scratch():
    game = CoopGame(3)
    view = CoopView(game)
    rng = np.random.default_rng(0)
    first = game.init(rng)
    view.observe(first)
    second = game.init(rng)
    np.testing.assert_array_equal(view.observe(second), game.observe(second))


def test_the_dice_of_a_generator_equal_numpys_array_draw_interleaved_with_shuffles():
    for seed in range(50):
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        for n in (1, 3, 5, 2, 4, 1):
            assert roll_dice(ours, n) == numpys.integers(1, 7, size=n).tolist()
            assert ours.permutation(20).tolist() == numpys.permutation(20).tolist()


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))])
def test_a_copied_env_mid_game_observes_its_own_state(clone):
    env = CoopEnv(num_players=2)
    _, info = env.reset(seed=8)
    _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
    twin = clone(env)
    assert twin._view._buf is not env._view._buf
    action = int(np.flatnonzero(info["action_mask"])[0])
    obs, _, _, _, twin_info = twin.step(action)
    assert_view_matches(twin, obs, twin_info)
    np.testing.assert_array_equal(obs, env.step(action)[0])


def test_a_new_game_shuffles_both_decks_as_rng_permutation_does():
    game = CoopGame(3)
    for seed in range(50):
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        for n in (1, 2, 3):  # dice between deals: the 32-bit halves of the stream are shared
            state = game.init(ours)
            assert state.spartan_order == tuple(numpys.permutation(20).tolist())
            assert state.persian_order == tuple(numpys.permutation(len(game.persian)).tolist())
            assert roll_dice(ours, n) == numpys.integers(1, 7, size=n).tolist()


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: setattr(s, "marker", 7),
        lambda s: setattr(s, "marker", 12),  # past the track: clipped as the engine clips it
        lambda s: setattr(s, "marker", 0),
        lambda s: setattr(s, "terminated", True),
        lambda s: (setattr(s, "phase", 2), setattr(s, "recipient", 1)),
        lambda s: setattr(s, "phase", 2),  # DISCARD without a recipient
        lambda s: setattr(s, "current_player", 1),
        lambda s: setattr(s, "slot1", -1),
        lambda s: setattr(s, "slot2", len(s.persian_order) - 1),
        lambda s: setattr(s, "offers", 2),
        lambda s: setattr(s, "support", 0),
        lambda s: s.graveyard.append(s.persian_order[-1]),
        lambda s: s.persian_discard.append(s.persian_order[-1]),
    ],
)
def test_a_single_field_changed_between_steps_is_observed_as_the_engine_observes_it(edit):
    env = CoopEnv(num_players=2)
    _, info = env.reset(seed=8)
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    state = env.state
    edit(state)
    np.testing.assert_array_equal(env._view.observe(state), env.game.observe(state))
    edit(state)  # the same edit again: nothing more to write
    np.testing.assert_array_equal(env._view.observe(state), env.game.observe(state))


def test_a_die_is_made_from_32_bit_draws_as_numpy_makes_it_rejection_included():
    def scripted(values):
        it = iter(values)
        return lambda where: next(it)

    assert coop_state._die(scripted([2**32 - 1]), None) == 6
    assert coop_state._die(scripted([0x2AAAAAAA]), None) == 1  # the largest 32-bit value that gives a 1
    assert coop_state._die(scripted([0x2AAAAAAC]), None) == 2
    assert coop_state._die(scripted([0x2AAAAAAB, 0x2AAAAAAC]), None) == 2  # low bits 2: rejected, drawn again
    # products whose low 32 bits fall below 4 are rejected (a 0, then 2**31, whose product is 3 * 2**32)
    assert coop_state._die(scripted([0, 2**31, 1]), None) == 1


def test_ten_thousand_dice_of_a_generator_equal_numpys_draws_and_leave_the_same_state():
    ours, numpys = np.random.default_rng(2024), np.random.default_rng(2024)
    dice = [d for _ in range(2000) for d in roll_dice(ours, 5)]
    assert dice == numpys.integers(1, 7, size=10000).tolist()
    assert ours.bit_generator.state == numpys.bit_generator.state


@pytest.mark.parametrize(
    "bit_generator",
    [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64],
)
def test_the_dice_equal_numpys_on_every_bit_generator_numpy_ships(bit_generator):
    for seed in range(10):
        ours, numpys = np.random.Generator(bit_generator(seed)), np.random.Generator(bit_generator(seed))
        for n in (1, 3, 5, 2) * 3:
            assert roll_dice(ours, n) == numpys.integers(1, 7, size=n).tolist()
            assert ours.permutation(20).tolist() == numpys.permutation(20).tolist()
        assert ours.integers(0, 2**62, size=4).tolist() == numpys.integers(0, 2**62, size=4).tolist()
