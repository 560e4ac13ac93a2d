"""The PettingZoo AEC view of the duel (``thermopylae_env.duel_v0``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, seed_test  # noqa: E402

from thermopylae_agents.duel_heuristic import HeuristicGreek, HeuristicPersian  # noqa: E402
from thermopylae_env import duel_v0  # noqa: E402
from thermopylae_env.actions import IllegalActionError  # noqa: E402
from thermopylae_env.duel import COMMIT, NUM_ACTIONS, OBS_SIZE, check_invariants  # noqa: E402


def test_api_test_wrapped_and_raw():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on Dict spaces and agent names
        api_test(duel_v0.env(), num_cycles=300)
        api_test(duel_v0.raw_env(), num_cycles=300)


def test_seed_test():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_test(duel_v0.env, num_cycles=300)


def test_spaces_and_agent_order_follow_the_rules():
    env = duel_v0.env()
    env.reset(seed=3)
    assert env.possible_agents == ["greek", "persian"]
    for agent in env.possible_agents:
        space = env.observation_space(agent)
        assert space["observation"].shape == (OBS_SIZE,) and space["action_mask"].dtype == np.int8
        assert env.action_space(agent).n == NUM_ACTIONS
    raw = env.unwrapped
    assert env.agent_selection == "persian"  # the Persian's discard phase comes first
    rng = np.random.default_rng(0)
    finals = {}
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        if termination or truncation:
            finals[agent] = reward
            env.step(None)
            continue
        assert agent == raw.possible_agents[raw.state.current_player]
        other = "greek" if agent == "persian" else "persian"
        assert not env.observe(other)["action_mask"].any()
        player = raw.possible_agents.index(agent)
        assert np.array_equal(obs["observation"], raw.game.observe(raw.state, player))
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.integers(legal.size)]))
    check_invariants(raw.state, raw.game)
    winner = raw.possible_agents[raw.state.winner]
    assert finals == {winner: 1, ("greek" if winner == "persian" else "persian"): -1}


def test_heuristic_players_through_the_aec_api():
    env = duel_v0.env()
    players = {"greek": HeuristicGreek(), "persian": HeuristicPersian()}
    env.reset(seed=1)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else players[agent].act(obs["observation"],
                                                                          obs["action_mask"]))
    assert env.unwrapped.state.terminated


def test_illegal_moves():
    env = duel_v0.env()
    env.reset(seed=0)
    env.step(COMMIT)  # illegal in the Persian's discard phase: the wrapper ends the game
    assert all(env.terminations.values())
    assert env.rewards["persian"] == -1
    raw = duel_v0.raw_env()
    raw.reset(seed=0)
    before = raw.state.copy()
    with pytest.raises(IllegalActionError):
        raw.step(COMMIT)
    assert raw.state.hands == before.hands and raw.agent_selection == "persian"


def test_render_ansi():
    raw = duel_v0.raw_env(render_mode="ansi")
    raw.reset(seed=0)
    assert "Greek tokens 10" in raw.render()
    assert duel_v0.raw_env().render() is None  # no render mode: nothing drawn
