"""The vectorized co-op engine and its environments (thermopylae_env.coop.vector, thermopylae_env.coop.sb3).

The core check: fed the same shuffles and dice, the vector engine's kernel and the single engine
(``thermopylae_env.coop``) play identical games, observation for observation, mask for mask. The kernel's
source also runs uncompiled (NUMBA_DISABLE_JIT, or without numba) and on all cores, with the same results.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from conftest import ScriptedChance, assert_same_engines, assert_same_snapshot, engine_snapshot
from gymnasium.vector import AutoresetMode

import thermopylae_env  # noqa: F401  (registers the environments)
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.coop import vector as coop_vector
from thermopylae_env.coop import vector_engine
from thermopylae_env.coop.chance import _permutations, seed_keys, splitmix_chance
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.kernel import DICE_PER_GAME
from thermopylae_env.coop.layout import NOOP_ACTION
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.coop.vector_engine import CoopVectorEngine
from thermopylae_env.jit import HAVE_NUMBA

# Custom decks that make the rare endings common under the test policy: every beaten card goes to the
# graveyard (12th-graveyard wins); no card ever reaches the graveyard (refill wins, exhaustion losses).
GRAVEYARD_DECK = [(8 + i % 8, 8 + i % 8, i % 2) for i in range(28)]
DISCARD_DECK = [(8 + i % 10, 99, int(i % 3 == 0)) for i in range(28)]
MIXED_DECK = [(8 + i % 10, 18 + i % 9, i % 2) for i in range(28)]


def choose(mask: np.ndarray, rng: np.random.Generator, greedy: float = 0.5, give: float = 0.8) -> int:
    """A test policy that reaches every part of the rules: often the strongest fight, usually taking the
    offered draw (so hands fill up and discards happen), otherwise uniform over the legal actions."""
    legal = np.flatnonzero(mask)
    if not len(legal):  # a game that ended and waits for its NEXT_STEP reset: any action is ignored
        return 0
    fights = legal[(legal >= 1) & (legal <= 55)]
    if len(fights) and rng.random() < greedy:
        return int(fights[-1])
    gives = legal[(legal >= 56) & (legal <= 59)]
    if len(gives) and rng.random() < give:
        return int(rng.choice(gives))
    return int(rng.choice(legal))


def play_both(
    num_players: int, deck, games_in_parallel: int, steps: int, seed: int
) -> Counter:
    """Drive the vector engine and one single engine per game with the same chance and actions; assert
    that everything observable agrees at every step. Returns what happened (end reasons, event kinds)."""
    engine = CoopVectorEngine(games_in_parallel, num_players, persian_deck=deck)
    engine.seed(seed)
    engine.reset_games()
    game = CoopGame(num_players, persian_deck=deck)
    rng = np.random.default_rng(seed)
    singles: list = [None] * games_in_parallel

    def start(i: int) -> None:
        spartan, persian, dice = engine.chance_tables(i)
        singles[i] = (game.new_state(spartan, persian), ScriptedChance(dice, spartan, persian))

    for i in range(games_in_parallel):
        start(i)
    seen: Counter = Counter()
    actions = np.empty(games_in_parallel, np.intp)
    for _ in range(steps):
        for i, (state, _) in enumerate(singles):
            mask = game.legal_action_mask(state)
            np.testing.assert_array_equal(engine.masks[i], mask)
            np.testing.assert_array_equal(engine.obs[i], game.observe(state))
            actions[i] = choose(mask, rng)
        done = engine.transition(actions)
        # the incremental observation equals a full rebuild from the state arrays
        np.testing.assert_array_equal(engine.obs, engine.observe_rows(np.arange(games_in_parallel)))
        np.testing.assert_array_equal(engine.masks, engine.masks_of())
        for i, (state, dice) in enumerate(singles):
            events: list = []
            game.step(state, int(actions[i]), dice, events)
            for event in events:
                kind = event["type"]
                if kind == "fight":
                    kind += f"_beats_{sum(r['outcome'] != 'stays' for r in event['results'])}"
                seen[kind] += 1
            assert bool(done[i]) == state.terminated
            assert int(engine.turn[i]) == state.turn
            if state.terminated:
                seen["end_" + state.reason] += 1
                assert bool(engine.won[i]) == state.won
                assert game.returns(state) == (1.0 if engine.won[i] else -1.0)
                np.testing.assert_array_equal(engine.obs[i], game.observe(state))
                assert not engine.masks[i].any()
        ended = np.flatnonzero(done)
        engine.reset_games(ended)
        for i in ended:
            start(int(i))
    return seen


@pytest.mark.parametrize("num_players", [1, 2, 3, 4])
def test_engine_plays_the_same_games_as_the_single_engine(num_players):
    seen = Counter()
    for deck, seed in ((None, 1), (GRAVEYARD_DECK, 2), (DISCARD_DECK, 3), (MIXED_DECK, 4)):
        seen += play_both(num_players, deck, games_in_parallel=24, steps=120, seed=seed + 10 * num_players,
                          )
    games = sum(count for key, count in seen.items() if key.startswith("end_"))
    assert games >= 400
    # every branch of the rules was taken, so the comparison covered it
    for key in ("retreat", "fight_beats_0", "fight_beats_1", "fight_beats_2", "draw", "decline", "discard",
                "refill", "end_marker", "end_graveyard", "end_refill"):
        assert seen[key] > 0, (key, seen)


def test_exhaustion_loss_matches():
    # The rarest ending (no Spartan card in any hand or the deck) needs long games: no card is ever
    # annihilated and draws are always taken.
    seen = Counter()
    for players in (2, 3, 4):
        seen += play_both(players, DISCARD_DECK, games_in_parallel=32, steps=100, seed=100 + players,
                          )
    assert seen["end_exhausted"] > 0, seen


# ---------------------------------------------------------------------------------------------- env level


def make_single(vec: CoopVectorEnv, game: int, **kwargs) -> CoopEnv:
    """A single env whose next reset deals the game now running in slot ``game`` of ``vec``."""
    env = CoopEnv(**kwargs)
    env._np_random = ScriptedChance.from_tables(vec.chance_tables(game))
    return env


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("num_players", [1, 3])
def test_env_matches_single_envs_including_illegal_actions_and_autoreset(mode, num_players):
    n = 12
    kwargs = {"num_players": num_players, "persian_deck": MIXED_DECK, "reward_shaping": 0.01}
    vec = CoopVectorEnv(n, autoreset_mode=mode, **kwargs)
    obs, infos = vec.reset(seed=7)
    singles = [make_single(vec, i, **kwargs) for i in range(n)]
    single_obs = [env.reset()[0] for env in singles]
    np.testing.assert_array_equal(obs, np.stack(single_obs))
    rng = np.random.default_rng(5)
    pending_reset = np.zeros(n, bool)
    episodes = 0
    for _ in range(150):
        masks = vec.action_masks()
        np.testing.assert_array_equal(infos["action_mask"], masks.astype(np.int8))
        actions = np.array([choose(m, rng) for m in masks])
        wild = rng.random(n) < 0.02  # now and then an action the rules forbid
        actions[wild] = rng.integers(0, 72, wild.sum())
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        assert not truncated.any()
        for i, env in enumerate(singles):
            if pending_reset[i]:  # NEXT_STEP: this step started a new game and ignored the action
                env._np_random = ScriptedChance.from_tables(vec.chance_tables(i))
                first, info = env.reset()
                np.testing.assert_array_equal(obs[i], first)
                assert rewards[i] == 0.0 and not terminated[i]
                assert infos["turn"][i] == 0 and infos["phase"][i] == info["phase"]
                continue
            o, r, t, _, info = env.step(int(actions[i]))
            assert r == pytest.approx(rewards[i], abs=1e-12)
            assert t == terminated[i]
            final = infos.get("final_info", infos) if (t and mode == AutoresetMode.SAME_STEP) else infos
            for key in ("phase", "current_player", "turn"):
                assert final[key][i] == info[key], key
            expected_mask = info["action_mask"].copy()
            if t and mode == AutoresetMode.NEXT_STEP:
                expected_mask[0] = 1  # a finished game waiting for its reset step allows the ignored action 0
            np.testing.assert_array_equal(final["action_mask"][i], expected_mask)
            flagged = final.get("illegal_action", np.zeros(n, bool))[i]
            assert bool(flagged) == info.get("illegal_action", False)
            if info.get("illegal_action"):
                assert final["illegal_reason"][i] == info["illegal_reason"]
            if t:
                episodes += 1
                assert final["_is_success"][i] and final["is_success"][i] == info["is_success"]
                if mode == AutoresetMode.SAME_STEP:
                    np.testing.assert_array_equal(infos["final_obs"][i], o)
                    assert infos["_final_obs"][i]
                    env._np_random = ScriptedChance.from_tables(vec.chance_tables(i))
                    first, _ = env.reset()
                    np.testing.assert_array_equal(obs[i], first)
                else:
                    np.testing.assert_array_equal(obs[i], o)
                    assert np.flatnonzero(vec.action_masks()[i]).tolist() == [0]
            else:
                np.testing.assert_array_equal(obs[i], o)
        pending_reset = terminated.copy() if mode == AutoresetMode.NEXT_STEP else np.zeros(n, bool)
    assert episodes >= 40


def test_outcome_statistics_match_the_single_env_under_their_own_rngs():
    # Random legal play on a deck where it sometimes wins: the vector env with its own chance source and
    # the single env with numpy's Generator must agree on the win rate and the mean game length.
    kwargs = {"num_players": 2, "persian_deck": MIXED_DECK}
    rng = np.random.default_rng(11)
    vec = CoopVectorEnv(256, **kwargs)
    vec.reset(seed=2024)
    v_wins = v_games = 0
    v_lengths: list[int] = []
    length = np.zeros(256, np.int64)
    while v_games < 3000:
        masks = vec.action_masks()
        noise = rng.random(masks.shape) * masks
        actions = noise.argmax(axis=1)
        _, _, terminated, _, infos = vec.step(actions)
        length += 1
        if terminated.any():
            ended = np.flatnonzero(terminated)
            v_games += len(ended)
            v_wins += int(infos["is_success"][ended].sum())
            v_lengths += length[ended].tolist()
            length[ended] = -1  # the next step (NEXT_STEP autoreset) is not part of a game
    env = CoopEnv(**kwargs)
    s_wins = 0
    s_lengths: list[int] = []
    for episode in range(2000):
        env.reset(seed=episode)
        steps = 0
        while True:
            action = rng.choice(np.flatnonzero(env.action_masks()))
            _, _, terminated, _, info = env.step(action)
            steps += 1
            if terminated:
                s_wins += info["is_success"]
                s_lengths.append(steps)
                break
    p1, p2 = v_wins / v_games, s_wins / 2000
    pooled = (v_wins + s_wins) / (v_games + 2000)
    z_win = (p1 - p2) / math.sqrt(pooled * (1 - pooled) * (1 / v_games + 1 / 2000))
    a, b = np.array(v_lengths, float), np.array(s_lengths, float)
    z_len = (a.mean() - b.mean()) / math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    assert 0.02 < p2 < 0.5, "the deck should make wins neither rare nor common"
    assert abs(z_win) < 4.0, (p1, p2)
    assert abs(z_len) < 4.0, (a.mean(), b.mean())


def test_chance_source_deals_uniform_permutations():
    keys = seed_keys(range(30000))
    spartan, persian, dice = splitmix_chance(np.arange(30000), keys, np.zeros(30000, np.uint64))
    assert sorted(spartan[0].tolist()) == list(range(20))
    assert (np.sort(persian, axis=1) == np.arange(28)).all()
    assert dice.shape == (30000, DICE_PER_GAME) and dice.min() == 1 and dice.max() == 6

    def chi2(counts: np.ndarray) -> float:
        expected = counts.sum() / len(counts)
        return float(((counts - expected) ** 2 / expected).sum())

    # top card and the card at position 13: 19 degrees of freedom, 99.99% quantile about 51
    assert chi2(np.bincount(spartan[:, 0], minlength=20)) < 51
    assert chi2(np.bincount(spartan[:, 13], minlength=20)) < 51
    assert chi2(np.bincount(persian[:, 0], minlength=28)) < 66  # 27 d.f.
    assert chi2(np.bincount(dice.reshape(-1), minlength=7)[1:]) < 26  # 5 d.f.
    # The rare shuffles whose 27-bit sort keys tie are redone with 64-bit keys: force one.
    halves = np.zeros((2, 20), np.uint32)
    halves[1] = np.arange(20, dtype=np.uint32) << 5  # distinct keys: the identity order
    perms = _permutations(halves, keys[:2], np.zeros(2, np.uint64), 64)
    assert sorted(perms[0].tolist()) == list(range(20)) and perms[0].tolist() != list(range(20))
    assert perms[1].tolist() == list(range(20))
    # successive episodes of one key differ
    s2, _, _ = splitmix_chance(np.arange(3), keys[:3], np.ones(3, np.uint64))
    assert not (s2 == spartan[:3]).all()


# ---------------------------------------------------------------------------------------------- API


def test_make_vec_builds_the_native_vector_env():
    env = gym.make_vec("thermopylae/Coop-v0", num_envs=5, num_players=2)
    assert isinstance(env, CoopVectorEnv)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert env.single_action_space == gym.spaces.Discrete(72)
    assert env.action_space.shape == (5,)
    assert env.single_observation_space.shape == (115,)
    obs, infos = env.reset(seed=3)
    assert obs.shape == (5, 115) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    assert env.action_masks().shape == (5, 72) and env.action_masks().dtype == bool
    assert infos["action_mask"].dtype == np.int8
    same = gym.make_vec("thermopylae/Coop-v0", num_envs=5, num_players=2, autoreset_mode="SameStep")
    assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    sync = gym.make_vec("thermopylae/Coop-v0", num_envs=2, vectorization_mode="sync")
    assert isinstance(sync, gym.vector.SyncVectorEnv)
    env.close()
    # Gymnasium's own vector wrappers (they expect NEXT_STEP autoreset) work on it
    stats = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec("thermopylae/Coop-v0", num_envs=8))
    stats.reset(seed=0)
    rng = np.random.default_rng(0)
    recorded = 0
    for _ in range(120):
        masks = stats.unwrapped.action_masks()
        _, _, _, _, infos = stats.step(np.array([choose(m, rng) for m in masks]))
        if "episode" in infos:
            recorded += int(infos["_episode"].sum())
    assert recorded > 0


def test_next_step_autoreset_ignores_the_action_after_the_end():
    env = CoopVectorEnv(3, autoreset_mode=AutoresetMode.NEXT_STEP)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        masks = env.action_masks()
        _, rewards, terminated, _, infos = env.step(np.array([choose(m, rng) for m in masks]))
        if terminated[0]:
            break
    assert terminated[0] and rewards[0] in (1.0, -1.0)
    assert np.flatnonzero(env.action_masks()[0]).tolist() == [0]  # only the action the reset step ignores
    actions = np.array([71, *[choose(m, rng) for m in env.action_masks()[1:]]])  # 71 is never legal here
    obs, rewards, terminated, _, infos = env.step(actions)
    assert rewards[0] == 0.0 and not terminated[0] and "illegal_action" not in infos
    assert infos["turn"][0] == 0 and obs[0, 0] == 1.0 and obs[0, 63] == 1.0  # MAIN phase, marker on 1
    assert env.action_masks()[0, 0]


def test_same_step_autoreset_returns_the_new_game_and_the_final_observation():
    env = CoopVectorEnv(4, autoreset_mode=AutoresetMode.SAME_STEP)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(300):
        obs, rewards, terminated, _, infos = env.step(np.array([choose(m, rng) for m in env.action_masks()]))
        if terminated.any():
            break
    i = int(np.flatnonzero(terminated)[0])
    final = infos["final_obs"][i]
    assert infos["_final_obs"][i] and final.shape == (115,) and final[:3].sum() == 0  # game over
    assert infos["final_info"]["_is_success"][i]
    assert obs[i, 0] == 1.0 and infos["turn"][i] == 0 and env.action_masks()[i, 0]
    assert [x is None for x in infos["final_obs"]] == list(~terminated)


def test_per_game_seeding():
    a = CoopVectorEnv(4)
    a.reset(seed=100)
    b = CoopVectorEnv(2)
    b.reset(seed=[102, 101])
    assert a.chance_tables(2) == b.chance_tables(0) and a.chance_tables(1) == b.chance_tables(1)
    assert a.chance_tables(0) != a.chance_tables(1)
    c = CoopVectorEnv(4)
    c.reset(seed=100)
    np.testing.assert_array_equal(a.engine.obs, c.engine.obs)
    # A game's sequence of deals depends on its own seed only, not on when the other games end.
    first = a.chance_tables(3)
    a.reset(options={"reset_mask": np.array([True, True, True, False])})
    assert a.chance_tables(3) == first
    a.reset(options={"reset_mask": np.array([False, False, False, True])})
    d = CoopVectorEnv(1)
    d.reset(seed=103)
    d.reset()
    assert a.chance_tables(3) == d.chance_tables(0) != first
    e = CoopVectorEnv(2)
    e.reset()  # OS entropy
    e.reset(seed=[None, 101])
    assert e.chance_tables(1) == b.chance_tables(1)


def test_out_of_space_actions_raise_and_change_nothing():
    env = CoopVectorEnv(3)
    obs, _ = env.reset(seed=4)
    masks = env.action_masks()
    bad = [
        (None, TypeError),
        (np.array([0.0, 0.0, 0.0]), TypeError),
        (np.array([np.nan, 0, 0]), ValueError),
        (np.array([True, False, True]), TypeError),
        (np.array([0, 0]), ValueError),
        (np.array([[0, 0, 0]]), ValueError),
        (np.array([0, 72, 0]), ValueError),
        (np.array([-1, 0, 0]), ValueError),
        ("abc", TypeError),
        (np.array(["a", "b", "c"]), TypeError),
    ]
    for actions, error in bad:
        with pytest.raises(error):
            env.step(actions)
        np.testing.assert_array_equal(env.engine.obs, obs)
        np.testing.assert_array_equal(env.action_masks(), masks)
    env.step([0, 0, 0])  # a plain list of legal ints is fine


def test_illegal_action_raise_changes_nothing():
    env = CoopVectorEnv(2, illegal_action="raise")
    obs, _ = env.reset(seed=5)
    turn = env.engine.turn.copy()
    with pytest.raises(IllegalActionError, match="game 1"):
        env.step(np.array([0, 60]))  # decline while no draw is offered
    np.testing.assert_array_equal(env.engine.obs, obs)
    np.testing.assert_array_equal(env.engine.turn, turn)
    _, rewards, terminated, _, _ = env.step(np.array([0, 0]))
    assert not terminated.any()


def test_illegal_action_loss():
    env = CoopVectorEnv(2, illegal_action_penalty=-2.5)
    obs, _ = env.reset(seed=6)
    new_obs, rewards, terminated, _, infos = env.step(np.array([0, 60]))
    assert list(terminated) == [False, True] and rewards[1] == -2.5
    assert infos["illegal_action"][1] and not infos["illegal_action"][0] and infos["_illegal_action"][1]
    assert "no draw is offered" in infos["illegal_reason"][1]
    assert infos["is_success"][1] == False  # noqa: E712
    np.testing.assert_array_equal(new_obs[1], obs[1])  # the position stays as it was
    assert not env.engine.masks[1].any()  # the game is over ...
    # ... and, until its reset step, offers only the action that step ignores
    assert np.flatnonzero(env.action_masks()[1]).tolist() == [0]
    assert np.flatnonzero(infos["action_mask"][1]).tolist() == [0]


def test_step_before_reset_and_bad_arguments():
    env = CoopVectorEnv(2)
    with pytest.raises(RuntimeError):
        env.step(np.zeros(2, int))
    with pytest.raises(ValueError):
        CoopVectorEnv(2, num_players=5)
    with pytest.raises(TypeError):
        CoopVectorEnv(2, num_players=1.5)
    with pytest.raises(ValueError):
        CoopVectorEnv(0)
    with pytest.raises(ValueError):
        CoopVectorEnv(2, illegal_action="ignore")
    with pytest.raises(ValueError):
        CoopVectorEnv(2, render_mode="human")
    with pytest.raises(ValueError):
        CoopVectorEnv(2, autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError):
        CoopVectorEnv(2, reward_shaping=-1)
    env.close()
    with pytest.raises(RuntimeError):
        env.step(np.zeros(2, int))


def test_copy_false_returns_the_live_buffer():
    env = CoopVectorEnv(2, copy=False)
    obs, _ = env.reset(seed=8)
    assert obs is env.engine.obs
    fresh = CoopVectorEnv(2)
    obs2, _ = fresh.reset(seed=8)
    assert obs2 is not fresh.engine.obs
    np.testing.assert_array_equal(obs, obs2)


def test_injected_chance_source_is_used():
    def chance(games, keys, episodes):
        k = len(games)
        spartan = np.tile(np.arange(20, dtype=np.int8)[::-1], (k, 1))  # the two 19s and the 20 on top
        persian = np.tile(np.arange(28, dtype=np.int8), (k, 1))
        return spartan, persian, np.full((k, DICE_PER_GAME), 6, np.int8)

    env = CoopVectorEnv(3, chance=chance)
    obs, _ = env.reset(seed=0)
    game = CoopGame()
    state = game.new_state(tuple(range(20))[::-1], tuple(range(28)))
    for row in obs:
        np.testing.assert_array_equal(row, game.observe(state))
    assert env.engine.dice_sum[0, -1] == 6 * DICE_PER_GAME


def test_engine_noop_leaves_games_untouched_and_memory_is_small():
    engine = CoopVectorEngine(16)
    engine.seed(1)
    engine.reset_games()
    obs, masks = engine.obs.copy(), engine.masks.copy()
    done = engine.transition(np.full(16, NOOP_ACTION, np.intp))
    assert not done.any()
    np.testing.assert_array_equal(engine.obs, obs)
    np.testing.assert_array_equal(engine.masks, masks)
    memory = engine.memory()
    assert memory["state"] / 16 < 400  # bytes of game state per game, chance tables included


# ---------------------------------------------------------------------------------------------- the kernel


def assert_same_infos(x: dict[str, Any], y: dict[str, Any], where: str) -> None:
    assert x.keys() == y.keys(), where
    for key, value in x.items():
        if key == "final_info":
            assert_same_infos(value, y[key], where)
        elif key == "final_obs":
            assert [v is None for v in value] == [v is None for v in y[key]], where
            for u, v in zip(value, y[key], strict=True):
                assert u is None or np.array_equal(u, v), where
        else:
            assert value.dtype == y[key].dtype and np.array_equal(value, y[key]), (where, key)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize(("num_players", "deck"), [(1, None), (2, MIXED_DECK), (3, DISCARD_DECK),
                                                    (4, GRAVEYARD_DECK)])
def test_chance_drawn_in_the_kernel_or_passed_in_plays_bit_identical_trajectories(num_players, deck, mode):
    # The same seed and actions (some of them illegal): the default chance drawn inside the kernel, and a
    # copy of the default source (not recognised as the default) drawn by NumPy and passed in; every
    # returned array and every array of the engines, at every step.
    n = 48
    kwargs = {"num_players": num_players, "persian_deck": deck, "autoreset_mode": mode,
              "reward_shaping": 0.05}
    envs = [CoopVectorEnv(n, **kwargs),
            CoopVectorEnv(n, chance=lambda *args: splitmix_chance(*args), **kwargs)]
    first = [env.reset(seed=5 + num_players) for env in envs]
    np.testing.assert_array_equal(first[1][0], first[0][0])
    assert_same_infos(first[1][1], first[0][1], "reset")
    rng = np.random.default_rng(num_players)
    ended = 0
    for step in range(200):
        masks = envs[0].action_masks()
        actions = np.array([choose(m, rng) for m in masks])
        wild = rng.random(n) < 0.01
        actions[wild] = rng.integers(0, 72, wild.sum())
        out = [env.step(actions) for env in envs]
        for x, y in zip(out[1][:4], out[0][:4], strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y), step
        assert_same_infos(out[1][4], out[0][4], f"step {step}")
        assert_same_engines(envs[1].engine, envs[0].engine, f"step {step}")
        ended += int(out[0][2].sum())
        if step == 100:  # a partial reset in the middle
            mask = rng.random(n) < 0.3
            for env in envs:
                env.reset(options={"reset_mask": mask})
            assert_same_engines(envs[1].engine, envs[0].engine, "reset_mask")
    assert ended >= 150


def test_kernel_deals_the_rare_tied_shuffles_as_the_numpy_chance_source_does():
    # Seeds whose 27-bit sort keys tie (1 row in about 10**6): 323011 in the Persian deck, 1306515 in the
    # Spartan deck; the shuffle is redone with 64-bit keys, in the kernel as in splitmix_chance.
    seeds = [323011, 1306515, 7]
    keys = seed_keys(seeds)
    spartan, persian, _ = splitmix_chance(np.arange(3), keys, np.zeros(3, np.uint64))
    engine = CoopVectorEngine(3)
    engine.seed(seeds)
    engine.reset_games()
    np.testing.assert_array_equal(engine.spartan_order, spartan)
    np.testing.assert_array_equal(engine.persian_order, persian)


def test_parallel_chunks_give_the_results_of_one_thread():
    # More games than one chunk: all cores, then one thread; every array equal at every step, and a few
    # games equal to the same seeds played alone.
    numba = pytest.importorskip("numba")
    from thermopylae_env.coop.kernel import CHUNK

    n = 2 * CHUNK + 37
    engines = [CoopVectorEngine(n, num_players=2, persian_deck=MIXED_DECK) for _ in range(2)]
    alone = [CoopVectorEngine(1, num_players=2, persian_deck=MIXED_DECK) for _ in range(3)]
    probes = [0, CHUNK + 5, n - 1]
    for engine in engines:
        engine.seed(11)
        engine.reset_games()
    for engine, game in zip(alone, probes, strict=True):
        engine.seed(11 + game)
        engine.reset_games()
    rng = np.random.default_rng(3)
    threads = numba.get_num_threads()
    try:
        for step in range(40):
            actions = np.array([choose(m, rng) for m in engines[0].masks])
            done = []
            for engine, count in zip(engines, (threads, 1), strict=True):
                numba.set_num_threads(count)
                done.append(engine.transition(actions))
            numba.set_num_threads(threads)
            np.testing.assert_array_equal(done[0], done[1])
            assert_same_engines(engines[1], engines[0], f"step {step}")
            for engine, game in zip(alone, probes, strict=True):
                engine.transition(actions[game : game + 1])
                np.testing.assert_array_equal(engine.obs[0], engines[0].obs[game])
                np.testing.assert_array_equal(engine.masks[0], engines[0].masks[game])
                if done[0][game]:
                    engine.reset_games()
            ended = np.flatnonzero(done[0])
            for engine in engines:
                engine.reset_games(ended)
    finally:
        numba.set_num_threads(threads)


GOLDEN_RUN = """
import json, sys
sys.path.insert(0, "tests/data")
{prelude}
import coop_golden
case = json.loads(sys.argv[1])
got = coop_golden.vector_digest(case["num_players"], None, case["mode"], case["illegal_every"],
                                case["shaping"], case["deck"])
from thermopylae_env.coop.vector import CoopVectorEnv
print(json.dumps({{"sha256": got["sha256"], "ends": got["ends"], "backend": CoopVectorEnv(1).backend}}))
"""


def _golden_run_in_subprocess(prelude: str, env: dict[str, str]) -> tuple[dict, dict]:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    golden = json.loads((root / "tests" / "data" / "coop_golden.json").read_text())
    case = next(c for c in golden["vector"] if c["illegal_every"] and c["num_players"] == 2)
    out = subprocess.run([sys.executable, "-c", GOLDEN_RUN.format(prelude=prelude), json.dumps(case)],
                         cwd=root, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), case


def test_kernel_source_interpreted_under_numba_disable_jit_plays_the_recorded_games():
    pytest.importorskip("numba")
    got, case = _golden_run_in_subprocess("", {"NUMBA_DISABLE_JIT": "1"})
    assert (got["sha256"], got["ends"]) == (case["sha256"], case["ends"])


def test_without_numba_the_same_kernel_runs_as_plain_python_and_plays_the_recorded_games():
    got, case = _golden_run_in_subprocess("sys.modules['numba'] = None  # numba cannot be imported", {})
    assert got["backend"] == "python"
    assert (got["sha256"], got["ends"]) == (case["sha256"], case["ends"])


def test_backend_argument():
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'numba', got 'cuda'"):
        CoopVectorEnv(2, backend="cuda")
    with pytest.raises(ValueError, match="backend"):
        CoopVectorEngine(2, backend=None)
    with pytest.raises(ValueError, match="backend='numpy' is no longer available: the NumPy whole-array"):
        CoopVectorEnv(2, backend="numpy")
    expected = "numba" if HAVE_NUMBA else "python"
    assert CoopVectorEnv(2).backend == expected
    env = gym.make_vec("thermopylae/Coop-v0", num_envs=3, backend="auto")
    assert isinstance(env, CoopVectorEnv) and env.backend == expected


def test_kernel_refuses_what_would_index_out_of_its_arrays():
    # The compiled loop indexes raw memory, so it checks the shapes, the action range and legality
    # before any game moves.
    engine = CoopVectorEngine(3)
    engine.seed(0)
    engine.reset_games()
    before = engine_snapshot(engine)
    for actions, error in ((np.array([0, 0]), ValueError), (np.array([0, 0, 73]), IndexError),
                           (np.array([0, 0, -1]), IndexError), (np.array([0, 0, 60]), ValueError)):
        with pytest.raises(error):
            engine.transition(actions)
        assert_same_snapshot(engine_snapshot(engine), before)
    with pytest.raises(ValueError, match="restart"):
        engine.transition(np.zeros(3, np.intp), restart=np.zeros(2, bool))


# ---------------------------------------------------------------------------------------------- SB3


def test_sb3_adapter_follows_the_vecenv_api():
    pytest.importorskip("stable_baselines3")
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import VecEnv

    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    n = 6
    env = CoopSB3VecEnv(n, seed=3, persian_deck=MIXED_DECK)
    ref = CoopVectorEnv(n, persian_deck=MIXED_DECK, autoreset_mode=AutoresetMode.SAME_STEP)
    assert isinstance(env, VecEnv) and env.num_envs == n
    assert is_masking_supported(env)
    obs = env.reset()
    ref_obs, _ = ref.reset(seed=3)
    np.testing.assert_array_equal(obs, ref_obs)
    assert obs.shape == (n, 115) and obs.dtype == np.float32
    np.testing.assert_array_equal(get_action_masks(env), env.action_masks())
    assert env.get_attr("render_mode") == [None] * n and env.get_attr("num_players", indices=[1]) == [1]
    assert env.env_is_wrapped(gym.Wrapper) == [False] * n
    rng = np.random.default_rng(3)
    returns = np.zeros(n)
    lengths = np.zeros(n, int)
    ended = 0
    for _ in range(120):
        masks = env.action_masks()
        actions = np.array([choose(m, rng) for m in masks])
        obs, rewards, dones, infos = env.step(actions)
        ref_obs, ref_rewards, ref_terminated, _, ref_infos = ref.step(actions)
        assert rewards.dtype == np.float32 and dones.dtype == bool and len(infos) == n
        np.testing.assert_array_equal(obs, ref_obs)
        np.testing.assert_array_equal(rewards, ref_rewards.astype(np.float32))
        np.testing.assert_array_equal(dones, ref_terminated)
        np.testing.assert_array_equal(env.action_masks(), ref.action_masks())
        returns += rewards
        lengths += 1
        for i in range(n):
            if dones[i]:
                ended += 1
                np.testing.assert_array_equal(infos[i]["terminal_observation"], ref_infos["final_obs"][i])
                assert infos[i]["is_success"] == bool(ref_infos["final_info"]["is_success"][i])
                assert infos[i]["episode"]["r"] == pytest.approx(returns[i])
                assert infos[i]["episode"]["l"] == lengths[i]
                assert infos[i]["TimeLimit.truncated"] is False
                assert obs[i, 0] == 1.0 and obs[i, 63] == 1.0  # already the next game
                returns[i] = 0
                lengths[i] = 0
            else:
                assert "terminal_observation" not in infos[i] and "episode" not in infos[i]
    assert ended >= 10
    rows = env.env_method("action_masks", indices=[0, 2])
    assert len(rows) == 2 and rows[0].shape == (72,)
    env.set_attr("illegal_action_penalty", -3.0)
    _, rewards, dones, infos = env.step(np.full(n, 60))  # decline: illegal in every MAIN phase
    illegal = [i for i in range(n) if infos[i].get("illegal_action")]
    assert illegal and all(rewards[i] == -3.0 and dones[i] for i in illegal)
    with pytest.raises(AttributeError):
        env.get_attr("no_such_thing")
    env.close()


def test_maskable_ppo_learns_on_the_adapter():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    env = CoopSB3VecEnv(8, seed=0)
    model = MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    assert len(model.ep_info_buffer) > 0 and "r" in model.ep_info_buffer[0]
    action, _ = model.predict(env.reset(), action_masks=env.action_masks())
    assert action.shape == (8,)


# ---------------------------------------------------------------------------------------------- refusals


def test_reset_with_bad_options_or_seed_reseeds_nothing():
    env = CoopVectorEnv(4)
    env.reset(seed=3)
    env.step(np.array([choose(m, np.random.default_rng(0)) for m in env.action_masks()]))
    before = engine_snapshot(env.engine)
    bad = [
        ({"seed": 9, "options": {"reset_mask": np.ones(3, bool)}}, ValueError),  # wrong length
        ({"seed": 9, "options": {"reset_mask": [1, 0, 1, 0]}}, ValueError),  # not bool
        ({"seed": 9, "options": {"reset_masks": np.ones(4, bool)}}, ValueError),  # unknown key
        ({"seed": 9, "options": "reset_mask"}, TypeError),  # not a dict
        ({"seed": b"abc"}, TypeError),
        ({"seed": {"a": 1}}, TypeError),
        ({"seed": 1.5}, TypeError),
        ({"seed": True}, TypeError),
        ({"seed": -1}, ValueError),
        ({"seed": 2**64}, ValueError),
        ({"seed": 2**64 - 2}, ValueError),  # the last game's seed would pass 2**64 - 1
        ({"seed": [1, 2, 3]}, ValueError),
        ({"seed": [1, 2, 3, 2**64]}, ValueError),
        ({"seed": [1, 2, 3, 1.0]}, TypeError),
    ]
    for kwargs, error in bad:
        with pytest.raises(error):
            env.reset(**kwargs)
        assert_same_snapshot(engine_snapshot(env.engine), before, str(kwargs))


def test_numpy_integer_seeds_are_accepted_and_seed_plus_2_to_the_64_is_refused():
    a, b = CoopVectorEnv(2), CoopVectorEnv(2)
    a.reset(seed=np.uint64(5))
    b.reset(seed=[np.int64(5), 6])
    assert a.chance_tables(1) == b.chance_tables(1)
    with pytest.raises(ValueError, match="2\\*\\*64"):
        a.reset(seed=5 + 2**64)


def test_actions_true_and_masked_arrays_are_refused_and_change_nothing():
    env = CoopVectorEnv(3)
    env.reset(seed=4)
    before = engine_snapshot(env.engine)
    for actions in ([True, 0, 0], np.ma.masked_array([0, 0, 0], mask=[0, 1, 0]),
                    np.array([np.timedelta64(0)] * 3)):
        with pytest.raises(TypeError):
            env.step(actions)
        assert_same_snapshot(engine_snapshot(env.engine), before)


def _chance_with(change):  # noqa: ANN001, ANN202
    def chance(games, keys, episodes):
        spartan, persian, dice = (np.array(t, dtype=np.int64) for t in splitmix_chance(games, keys, episodes))
        change(spartan, persian, dice)
        return spartan, persian, dice

    return chance


@pytest.mark.parametrize(("change", "message"), [
    (lambda s, p, d: s.__setitem__((0, 0), s[0, 1]), "not a permutation"),  # a duplicated Spartan card
    (lambda s, p, d: p.__setitem__((0, 0), p[0, 1]), "not a permutation"),
    (lambda s, p, d: s.__setitem__((0, 0), 257), "outside 0..19"),  # no wrapping to card 1
    (lambda s, p, d: p.__setitem__((0, 0), -1), "outside 0..27"),
    (lambda s, p, d: d.__setitem__((0, 0), 100), "dice outside 1..6"),
    (lambda s, p, d: d.__setitem__((0, 0), 0), "dice outside 1..6"),
])
def test_chance_hook_refuses_tables_that_would_lose_or_duplicate_cards(change, message):
    env = CoopVectorEnv(2, chance=_chance_with(change))
    with pytest.raises(ValueError, match=message):
        env.reset(seed=0)
    assert not env.engine.episodes.any() and (env.engine.phase == coop_vector.OVER).all()


def test_chance_hook_refuses_float_tables():
    def chance(games, keys, episodes):
        spartan, persian, dice = splitmix_chance(games, keys, episodes)
        return spartan.astype(float), persian, dice

    with pytest.raises(ValueError, match="not integers"):
        CoopVectorEnv(2, chance=chance).reset(seed=0)


# ---------------------------------------------------------------------------------------------- masks, render


def test_a_cleanrl_masked_sampler_never_meets_an_empty_mask_row_over_many_autoresets():
    torch = pytest.importorskip("torch")
    n = 64
    env = CoopVectorEnv(n, persian_deck=MIXED_DECK, illegal_action_penalty=-1.0)
    obs, infos = env.reset(seed=0)
    torch.manual_seed(0)
    logits = torch.zeros(n, 72)
    ends = 0
    for step in range(400):
        mask = torch.as_tensor(env.action_masks())
        assert torch.equal(mask, torch.as_tensor(infos["action_mask"]).bool())
        masked = logits.masked_fill(~mask, float("-inf"))
        actions = torch.distributions.Categorical(logits=masked).sample()
        assert mask[torch.arange(n), actions].all()
        if step % 50 == 0:  # now and then an illegal action too: that game ends and waits as well
            actions[0] = int(np.flatnonzero(~env.action_masks()[0])[0])
        obs, rewards, terminated, _, infos = env.step(actions.numpy())
        ends += int(terminated.sum())
        waiting = np.flatnonzero(terminated)
        assert all(np.flatnonzero(env.action_masks()[i]).tolist() == [0] for i in waiting)
    assert ends >= 300


def test_sb3_adapter_mask_rows_always_have_a_legal_action():
    pytest.importorskip("stable_baselines3")
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    env = CoopSB3VecEnv(16, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(300):
        masks = env.action_masks()
        assert masks.any(axis=1).all()
        _, _, dones, _ = env.step(np.array([choose(m, rng) for m in masks]))
        ends += int(dones.sum())
    assert ends > 50


def test_vector_env_renders_game_zero():
    pytest.importorskip("PIL")
    from thermopylae_env.coop.render import render_coop_rgb
    from thermopylae_env.drawing import FRAME_SHAPE

    env = CoopVectorEnv(3, num_players=2, render_mode="rgb_array")
    assert env.metadata["render_modes"] == ["rgb_array"] and env.render_mode == "rgb_array"
    env.reset(seed=1)
    frame = env.render()
    assert frame.shape == FRAME_SHAPE and frame.dtype == np.uint8
    game = CoopGame(2)
    state = game.new_state(*env.chance_tables(0)[:2])
    np.testing.assert_array_equal(frame, render_coop_rgb(game, state))
    assert CoopVectorEnv(2).render() is None


def test_compilation_is_announced_at_most_once(caplog, monkeypatch):
    monkeypatch.setattr(vector_engine, "_announced", False)
    with caplog.at_level("WARNING", logger="thermopylae_env"):
        for _ in range(3):
            CoopVectorEnv(2).reset(seed=0)
    assert len([r for r in caplog.records if "compiling" in r.getMessage()]) <= 1
