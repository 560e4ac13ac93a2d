"""The native vector duel engine against the reference engine ``DuelGame`` (same shuffles, same discards),
its compiled heuristic against the Python heuristic, and the vector envs' API."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import thermopylae_env  # noqa: F401
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.duel import kernel as K
from thermopylae_env.duel import opponents as heuristics  # noqa: E402  (the Python heuristics the kernel twins)
from thermopylae_env.duel.env import DuelGreekEnv, DuelPersianEnv
from thermopylae_env.duel.layout import GREEK, NUM_ACTIONS, PERSIAN
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.duel.vector import DuelGreekVectorEnv, DuelPersianVectorEnv, DuelSelfPlayVectorEnv
from thermopylae_env.duel.vector_engine import DuelVectorEngine


class ReplayRng:
    """A chance source for ``DuelGame`` that replays one game of the vector engine: its two shuffles, then
    the cards hit by each discard card, from the game's chance base."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.orders = list(K.chance_orders(base))
        self.plays = 0

    def permutation(self, n: int) -> np.ndarray:
        order = np.array(self.orders.pop(0))
        return order % n  # the Persian order comes back as 0..51: shuffle_decks adds 52

    def choice(self, n: int, size: int, replace: bool) -> np.ndarray:
        assert size == 2 and not replace
        pick = K.discard_pick(self.base, self.plays, n)
        self.plays += 1
        return np.array(pick)


def _random_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    scores = rng.random(masks.shape) * masks
    return scores.argmax(axis=1)


class _Reference:
    """One ``DuelGame`` per row of a vector env, restarted from the row's chance base."""

    def __init__(self, engine: DuelVectorEngine) -> None:
        self.engine = engine
        self.game = DuelGame()
        self.states = [None] * engine.num_envs
        self.rngs = [None] * engine.num_envs

    def restart(self, i: int) -> None:
        rng = ReplayRng(self.engine.chance_base(i))
        self.rngs[i] = rng
        self.states[i] = self.game.init(rng)


def _play_selfplay(num_envs: int, steps: int, seed: int, chooser: str) -> int:
    """Both sides random (or heuristic) in the self-play env and in DuelGame; compare everything."""
    env = DuelSelfPlayVectorEnv(num_envs, parallel=False)
    obs, info = env.reset(seed=seed)
    ref = _Reference(env.engine)
    for i in range(num_envs):
        ref.restart(i)
    game = ref.game
    rng = np.random.default_rng(seed)
    hg, hp = heuristics.HeuristicGreek(), heuristics.HeuristicPersian()
    finished = 0
    restarting = np.zeros(num_envs, bool)
    for _ in range(steps):
        masks = env.action_masks()
        to_move = info["to_move"]
        for i in range(num_envs):
            if restarting[i]:
                continue
            st = ref.states[i]
            p = st.current_player
            assert to_move[i] == p
            assert np.array_equal(obs[i], game.observe(st, p))
            assert np.array_equal(masks[i], game.legal_action_mask(st))
        if chooser == "random":
            actions = _random_legal(rng, masks)
        else:
            actions = np.zeros(num_envs, np.int64)
            compiled = env.engine.heuristic_actions(np.flatnonzero(~restarting))
            for j, i in enumerate(np.flatnonzero(~restarting)):
                st = ref.states[i]
                player = hg if st.current_player == GREEK else hp
                actions[i] = player.act(game.observe(st, st.current_player), masks[i].astype(np.int8))
                assert actions[i] == compiled[j]
        obs, rewards, term, trunc, info = env.step(actions)
        assert not trunc.any()
        greek_view, persian_view = env.observe(GREEK), env.observe(PERSIAN)
        for i in range(num_envs):
            if restarting[i]:
                ref.restart(i)
                assert not term[i] and not rewards[i].any()
                continue
            st = ref.states[i]
            game.step(st, int(actions[i]), ref.rngs[i])
            assert np.array_equal(greek_view[i], game.observe(st, GREEK))
            assert np.array_equal(persian_view[i], game.observe(st, PERSIAN))
            assert term[i] == st.terminated
            assert np.array_equal(rewards[i], game.returns(st))
            if st.terminated:
                assert info["winner"][i] == st.winner
                assert np.flatnonzero(env.action_masks()[i]).tolist() == [0]  # the ignored action only
                finished += 1
        restarting = term.copy()
    return finished


def test_random_play_matches_the_reference_engine_observation_for_observation() -> None:
    assert _play_selfplay(num_envs=32, steps=6000, seed=3, chooser="random") >= 300


def test_heuristic_play_matches_the_reference_and_the_compiled_heuristic_moves_as_the_python_one() -> None:
    assert _play_selfplay(num_envs=16, steps=4000, seed=5, chooser="heuristic") >= 100


@pytest.mark.slow
def test_many_random_and_heuristic_games_match_the_reference() -> None:
    assert _play_selfplay(num_envs=64, steps=60000, seed=11, chooser="random") >= 5000
    assert _play_selfplay(num_envs=64, steps=40000, seed=12, chooser="heuristic") >= 2000


def _single_env_with_replay(cls: type, opponent: object, base: int) -> gym.Env:
    env = cls(opponent=opponent)
    env._np_random = ReplayRng(base)  # the env's draws: the shuffles and the discards
    return env


@pytest.mark.parametrize("side", [GREEK, PERSIAN])
def test_vector_env_with_the_built_in_heuristic_plays_the_single_envs_games(side: int) -> None:
    n = 16
    vec = (DuelGreekVectorEnv if side == GREEK else DuelPersianVectorEnv)(n, parallel=False)
    single_cls = DuelGreekEnv if side == GREEK else DuelPersianEnv
    obs, info = vec.reset(seed=21)
    rng = np.random.default_rng(21)
    singles = [None] * n

    def restart(i: int) -> np.ndarray:
        singles[i] = _single_env_with_replay(single_cls, "heuristic", vec.engine.chance_base(i))
        o, inf = singles[i].reset()
        return o, inf

    for i in range(n):
        o, inf = restart(i)
        assert np.array_equal(o, obs[i]) and np.array_equal(inf["action_mask"], info["action_mask"][i])
    restarting = np.zeros(n, bool)
    episodes = 0
    for _ in range(2500):
        actions = _random_legal(rng, vec.action_masks())
        obs, rewards, term, _, info = vec.step(actions)
        for i in range(n):
            if restarting[i]:
                o, inf = restart(i)
            else:
                o, r, t, _, inf = singles[i].step(int(actions[i]))
                assert r == rewards[i] and t == term[i]
                if t:
                    assert inf["is_success"] == info["is_success"][i]
                    episodes += 1
            assert np.array_equal(o, obs[i])
            expected = inf["action_mask"].copy()
            expected[0] |= term[i]  # a finished row allows the action its reset step ignores
            assert np.array_equal(expected, info["action_mask"][i])
        restarting = term.copy()
    assert episodes >= 100


class _FirstLegal:
    """A batched opponent: the lowest legal action of each row (and it counts its calls)."""

    name = "first-legal"

    def __init__(self) -> None:
        self.calls = 0

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        assert observations.shape == (len(masks), 56) and masks.any(axis=1).all()
        self.calls += 1
        return masks.argmax(axis=1)

    def act(self, observation: np.ndarray, mask: np.ndarray) -> int:
        return int(np.argmax(mask))


def test_batched_policy_opponent_plays_the_single_envs_games_with_one_call_per_round() -> None:
    n = 8
    opponent = _FirstLegal()
    vec = DuelPersianVectorEnv(n, opponent=opponent, parallel=False)
    obs, _ = vec.reset(seed=4)
    singles = []
    for i in range(n):
        env = _single_env_with_replay(DuelPersianEnv, _FirstLegal().act, vec.engine.chance_base(i))
        o, _ = env.reset()
        assert np.array_equal(o, obs[i])
        singles.append(env)
    rng = np.random.default_rng(4)
    for _ in range(40):
        calls = opponent.calls
        actions = _random_legal(rng, vec.action_masks())
        obs, rewards, term, _, _ = vec.step(actions)
        assert opponent.calls - calls <= 1 + 17 * 3  # rounds, not games
        for i in range(n):
            if term[i]:
                continue
            o, r, t, _, _ = singles[i].step(int(actions[i]))
            assert np.array_equal(o, obs[i]) and r == rewards[i] and t == term[i]
        if term.any():
            break


def test_serial_and_parallel_loops_write_the_same_games() -> None:
    results = []
    for parallel in (False, True):
        env = DuelSelfPlayVectorEnv(600, parallel=parallel)
        obs, _ = env.reset(seed=9)
        rng = np.random.default_rng(9)
        trace = [obs]
        for _ in range(300):
            obs, rewards, term, _, _ = env.step(_random_legal(rng, env.action_masks()))
            trace += [obs, rewards, term, env.action_masks()]
        trace.append(env.engine.states.copy())
        results.append(trace)
    for a, b in zip(*results, strict=True):
        assert np.array_equal(a, b)


def test_every_mask_row_the_agent_is_asked_to_act_on_has_a_legal_action() -> None:
    for cls, opponent in ((DuelGreekVectorEnv, "random"), (DuelPersianVectorEnv, "heuristic")):
        env = cls(64, opponent=opponent)
        env.reset(seed=1)
        rng = np.random.default_rng(1)
        for _ in range(400):
            masks = env.action_masks()
            obs, _, term, _, info = env.step(_random_legal(rng, masks))
            running = ~term
            assert env.action_masks()[running].any(axis=1).all()
            assert (np.flatnonzero(env.action_masks()[term].any(axis=0)) == 0).all()  # the ignored action
            assert (info["to_move"][running] == env.side).all()


def test_make_vec_builds_the_native_envs_and_seeds_each_game() -> None:
    a = gym.make_vec("thermopylae/DuelGreek-v0", num_envs=4)
    b = gym.make_vec("thermopylae/DuelPersian-v0", num_envs=4, opponent="random")
    assert isinstance(a, DuelGreekVectorEnv) and isinstance(b, DuelPersianVectorEnv)
    obs1, _ = a.reset(seed=[7, 8, 9, 10])
    obs2, _ = a.reset(seed=7)  # game i gets 7 + i
    assert np.array_equal(obs1, obs2)
    obs3, _ = a.reset(seed=[7, None, None, None])
    assert np.array_equal(obs3[0], obs1[0])
    a.reset(seed=3)
    bases = [a.engine.chance_base(i) for i in range(4)]
    c = DuelGreekVectorEnv(2)
    c.reset(seed=[4, 3])
    assert c.engine.chance_base(1) == bases[0]  # a game's chance depends on its own seed only


def test_same_step_autoreset_returns_the_new_game_and_the_final_observation() -> None:
    env = DuelGreekVectorEnv(16, opponent="heuristic", autoreset_mode=AutoresetMode.SAME_STEP)
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    seen = 0
    for _ in range(400):
        obs, _, term, _, info = env.step(_random_legal(rng, env.action_masks()))
        assert env.action_masks().any(axis=1).all()
        if term.any():
            seen += int(term.sum())
            assert info["_final_obs"].tolist() == term.tolist()
            assert "is_success" in info["final_info"]
            for i in np.flatnonzero(term):
                assert info["final_obs"][i].shape == (56,)
    assert seen > 0


def test_illegal_actions_lose_or_raise_before_any_game_moves() -> None:
    env = DuelGreekVectorEnv(4, illegal_action="raise")
    env.reset(seed=0)
    before = env.engine.states.copy()
    bad = np.array([int(np.flatnonzero(~m)[0]) for m in env.action_masks()])
    with pytest.raises(IllegalActionError, match="game 0"):
        env.step(bad)
    assert np.array_equal(before, env.engine.states)
    for wrong in (np.zeros(3, np.int64), np.full(4, 21), np.zeros(4, float), [True] * 4, None):
        with pytest.raises((TypeError, ValueError)):
            env.step(wrong)
    assert np.array_equal(before, env.engine.states)
    env = DuelGreekVectorEnv(4, illegal_action_penalty=-2.0)
    obs, _ = env.reset(seed=0)
    masks = env.action_masks()
    actions = masks.argmax(axis=1)
    actions[1] = int(np.flatnonzero(~masks[1])[0])
    obs2, rewards, term, _, info = env.step(actions)
    assert term[1] and rewards[1] == -2.0 and info["illegal_action"][1] and info["illegal_reason"][1]
    assert np.array_equal(obs2[1], obs[1]) and np.flatnonzero(env.action_masks()[1]).tolist() == [0]
    assert not info["is_success"][1]


def test_bad_arguments_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="opponent"):
        DuelGreekVectorEnv(2, opponent="model.zip")
    with pytest.raises(ValueError, match="num_envs"):
        DuelGreekVectorEnv(0)
    with pytest.raises(ValueError, match="render_mode"):
        DuelGreekVectorEnv(2, render_mode="ansi")
    env = DuelGreekVectorEnv(2)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"bogus": 1})
    with pytest.raises(TypeError):
        env.reset(seed=1.5)
    with pytest.raises(RuntimeError):
        env.step(np.zeros(2, np.int64))


def test_batched_opponent_answering_illegally_is_named() -> None:
    class Bad:
        def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
            return np.array([int(np.flatnonzero(~m)[0]) for m in masks])

    env = DuelGreekVectorEnv(2, opponent=Bad())
    with pytest.raises(IllegalActionError, match="persian opponent"):
        env.reset(seed=0)


class FailsOnCall:
    """A batched heuristic-like opponent (the first legal move) that fails on its ``n``-th call: it raises,
    or answers with an illegal move, or with something that is not an action batch."""

    def __init__(self, n: int, how: str) -> None:
        self.calls, self.n, self.how = 0, n, how

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.calls == self.n:
            if self.how == "raises":
                raise ZeroDivisionError("boom")
            if self.how == "illegal":
                return (~masks).argmax(axis=1)
            return np.zeros(len(masks) + 1, np.int64)
        return masks.argmax(axis=1)


@pytest.mark.parametrize(("how", "error"), [("raises", ZeroDivisionError), ("illegal", IllegalActionError),
                                            ("bad batch", IllegalActionError)])
def test_a_batched_opponent_failing_mid_game_leaves_the_env_refusing_steps_until_reset(how, error) -> None:
    opponent = FailsOnCall(12, how)
    env = DuelGreekVectorEnv(4, opponent=opponent)
    _, info = env.reset(seed=0)
    with pytest.raises(error):
        for _ in range(100):
            _, _, _, _, info = env.step(info["action_mask"].argmax(axis=1))
    stuck = env.engine.states.copy()
    for _ in range(2):  # the games waiting on the opponent must not take the agent's actions
        with pytest.raises(RuntimeError, match="step\\(\\) refused: the persian opponent .*call reset"):
            env.step(info["action_mask"].argmax(axis=1))
    assert np.array_equal(stuck, env.engine.states)
    _, info = env.reset(seed=1)
    for _ in range(20):
        _, _, _, _, info = env.step(info["action_mask"].argmax(axis=1))
    assert opponent.calls > 12


def test_a_partial_reset_after_a_failed_opponent_must_restart_every_game_left_waiting_on_it() -> None:
    env = DuelGreekVectorEnv(4, opponent=FailsOnCall(12, "raises"))
    _, info = env.reset(seed=0)
    with pytest.raises(ZeroDivisionError):
        for _ in range(100):
            _, _, _, _, info = env.step(info["action_mask"].argmax(axis=1))
    st = env.engine.states
    waiting = (st[:, K.PHASE] != K.OVER) & (st[:, K.PLAYER] == env.opponent_side)
    assert waiting.any()
    before = st.copy()
    # its move in a game left out could end that game inside reset(), where no result can be returned
    with pytest.raises(ValueError, match=f"leaves out game {int(np.flatnonzero(waiting)[0])}"):
        env.reset(options={"reset_mask": ~waiting})
    assert np.array_equal(before, env.engine.states)
    _, info = env.reset(options={"reset_mask": waiting | (st[:, K.PHASE] == K.OVER)})
    assert not ((st[:, K.PHASE] != K.OVER) & (st[:, K.PLAYER] == env.opponent_side)).any()
    env.step(info["action_mask"].argmax(axis=1))


def test_the_kernel_source_runs_without_numba_and_plays_the_same_games() -> None:
    code = (
        "import numpy as np\n"
        "from thermopylae_env.duel.vector import DuelSelfPlayVectorEnv\n"
        "env = DuelSelfPlayVectorEnv(3, parallel=False)\n"
        "obs, _ = env.reset(seed=5)\n"
        "rng = np.random.default_rng(5)\n"
        "for _ in range(150):\n"
        "    m = env.action_masks()\n"
        "    obs, r, t, _, _ = env.step((rng.random(m.shape) * m).argmax(axis=1))\n"
        "print(env.engine.states.sum(), float(obs.sum()))\n"
    )
    outputs = []
    for disable in ("1", "0"):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                             env={**os.environ, "NUMBA_DISABLE_JIT": disable})
        assert run.returncode == 0, run.stderr[-2000:]
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]


def test_chance_is_spread_over_every_deck_position() -> None:
    counts = np.zeros((52, 52), int)
    for base in range(2000):
        greek, _ = K.chance_orders(K.chance_base(base, 0, 0))
        counts[np.arange(52), greek] += 1
    assert counts.min() > 10 and counts.max() < 90  # about 38 each
    assert sorted(K.chance_orders(123)[1]) == list(range(52, 104))


def test_action_space_matches_the_single_env() -> None:
    env = DuelPersianVectorEnv(3)
    assert env.single_action_space == gym.spaces.Discrete(NUM_ACTIONS)
    assert env.single_observation_space == DuelPersianEnv().observation_space
