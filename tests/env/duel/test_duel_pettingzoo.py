"""The PettingZoo AEC view of the duel (``thermopylae_env.duel_v1``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test  # noqa: E402

from thermopylae_env import duel_v1  # noqa: E402
from thermopylae_env.actions import IllegalActionError  # noqa: E402
from thermopylae_env.duel.layout import COMMIT, DONE_DISCARDING, NUM_ACTIONS, OBS_SIZE  # noqa: E402
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian  # noqa: E402
from thermopylae_env.duel.rules import check_invariants  # noqa: E402


def test_api_test_wrapped_and_raw():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on Dict spaces and agent names
        api_test(duel_v1.env(), num_cycles=300)
        api_test(duel_v1.raw_env(), num_cycles=300)


def test_seed_test():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_test(duel_v1.env, num_cycles=300)


def test_spaces_and_agent_order_follow_the_rules():
    env = duel_v1.env()
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
    assert finals == {winner: 1.0, ("greek" if winner == "persian" else "persian"): -1.0}
    assert all(type(r) is float for r in finals.values())


def test_heuristic_players_through_the_aec_api():
    env = duel_v1.env()
    players = {"greek": HeuristicGreek(), "persian": HeuristicPersian()}
    env.reset(seed=1)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else players[agent].act(obs["observation"],
                                                                          obs["action_mask"]))
    assert env.unwrapped.state.terminated


def test_illegal_moves():
    env = duel_v1.env()
    env.reset(seed=0)
    env.step(COMMIT)  # illegal in the Persian's discard phase: the wrapper ends the game
    assert all(env.terminations.values())
    assert env.rewards["persian"] == -1
    raw = duel_v1.raw_env()
    raw.reset(seed=0)
    before = raw.state.copy()
    with pytest.raises(IllegalActionError):
        raw.step(COMMIT)
    assert raw.state.hands == before.hands and raw.agent_selection == "persian"


def test_render_ansi():
    raw = duel_v1.raw_env(render_mode="ansi")
    raw.reset(seed=0)
    assert "Greek tokens 10" in raw.render()
    assert duel_v1.raw_env().render() is None  # no render mode: nothing drawn


def test_parallel_env_passes_pettingzoos_parallel_api_and_seed_tests():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(duel_v1.parallel_env(), num_cycles=300)
        parallel_seed_test(duel_v1.parallel_env, num_cycles=300)


def test_parallel_env_moves_only_the_agent_to_act_and_ends_with_float_rewards():
    env = duel_v1.parallel_env()
    observations, infos = env.reset(seed=2)
    rng = np.random.default_rng(2)
    total = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        active = env.unwrapped.possible_agents[env.unwrapped.state.current_player]
        mask = observations[active]["action_mask"]
        other = "greek" if active == "persian" else "persian"
        actions = {active: int(rng.choice(np.flatnonzero(mask))), other: COMMIT}  # the other's is ignored
        observations, rewards, terminations, truncations, infos = env.step(actions)
        for agent, reward in rewards.items():
            assert type(reward) is float
            total[agent] += reward
    assert sorted(total.values()) == [-1.0, 1.0]
    check_invariants(env.unwrapped.state, env.unwrapped.game)


def test_render_test_passes_for_every_render_mode(capsys):
    pytest.importorskip("PIL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        render_test(duel_v1.env)
        render_test(duel_v1.raw_env)
    assert "Greek tokens" in capsys.readouterr().out  # "human" prints the table
    frame = duel_v1.env(render_mode="rgb_array")
    frame.reset(seed=0)
    image = frame.render()
    assert image.shape == (360, 640, 3) and image.dtype == np.uint8


def _cycles(movers: list[str]) -> int:
    """PettingZoo's cycles in a sequence of movers: a cycle is over once every agent has moved in it."""
    cycles, seen = 0, set()
    for mover in movers:
        seen.add(mover)
        if seen == {"greek", "persian"}:
            cycles, seen = cycles + 1, set()
    return cycles


@pytest.mark.parametrize("max_cycles", [1, 2, 5, 12])
def test_max_cycles_truncates_both_agents_after_that_many_cycles(max_cycles):
    env = duel_v1.env(max_cycles=max_cycles)
    env.reset(seed=0)
    movers, ended = [], []
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _ = env.last()
        if termination or truncation:
            assert truncation and not termination and reward == 0.0
            ended.append(agent)
            env.step(None)
            continue
        movers.append(agent)
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert sorted(ended) == ["greek", "persian"] and not env.unwrapped.state.terminated
    # Truncated by the move that completed cycle max_cycles, not before; the same agent moves several
    # times in a row, so there are more moves than cycles.
    assert _cycles(movers) == max_cycles and _cycles(movers[:-1]) == max_cycles - 1
    assert len(movers) > 2 * max_cycles
    assert min(movers.count("greek"), movers.count("persian")) >= max_cycles


def test_max_cycles_is_none_by_default_and_a_game_plays_to_its_end():
    env = duel_v1.env()
    env.reset(seed=3)
    for _agent in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else int(np.flatnonzero(obs["action_mask"])[-1]))
    assert env.unwrapped.state.terminated
    for bad in (0, -1, 2.5, True, "5"):
        with pytest.raises(ValueError, match="max_cycles must be None or a positive integer"):
            duel_v1.env(max_cycles=bad)


def test_illegal_action_options_of_the_wrapped_env():
    env = duel_v1.env(illegal_action="loss", illegal_action_penalty=-2.5)
    env.reset(seed=0)
    env.step(COMMIT)
    assert env.rewards["persian"] == -2.5 and all(env.terminations.values())
    env = duel_v1.env(illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalActionError):
        env.step(COMMIT)
    env.step(DONE_DISCARDING)  # nothing changed: the game goes on
    with pytest.raises(ValueError, match="illegal_action must be one of"):
        duel_v1.env(illegal_action="ignore")
    with pytest.raises(ValueError, match="illegal_action_penalty must be a finite number"):
        duel_v1.env(illegal_action_penalty=float("nan"))


def test_reset_follows_the_package_seed_rule():
    env = duel_v1.raw_env()
    env.reset(seed=np.int64(4))
    a = env.observe("persian")["observation"]
    env.reset(seed=4)
    assert np.array_equal(a, env.observe("persian")["observation"])
    for bad, error in ((-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="seed must"):
            env.reset(seed=bad)
    with pytest.raises(TypeError, match="options must be None or a dict"):
        env.reset(options=[1])
