"""Reliability of the vector envs and their SB3 adapters: seeds that do not wrap, masked arrays refused
everywhere, refused calls that change nothing, a partial reset after a failed step, and enough chance."""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.duel.env import DuelGreekEnv, DuelPersianEnv
from thermopylae_env.duel.vector import DuelGreekVectorEnv, DuelPersianVectorEnv, DuelSelfPlayVectorEnv


def _state(env: object) -> tuple:
    eng = env.engine
    return eng.states.copy(), eng.masks.copy(), eng.obs.copy(), env._ended.copy()


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


# --- D3: seeds do not wrap at 2**64 -------------------------------------------------------------------


@pytest.mark.parametrize("cls", [DuelGreekVectorEnv, DuelPersianVectorEnv, DuelSelfPlayVectorEnv,
                                 CoopVectorEnv])
def test_a_seed_whose_last_game_passes_2_64_is_refused_like_the_coop_env(cls: type) -> None:
    env = cls(3)
    env.reset(seed=4)
    before = env.action_masks()
    with pytest.raises(ValueError, match=r"not below 2\*\*64"):
        env.reset(seed=2**64 - 1)
    assert np.array_equal(env.action_masks(), before)
    env.reset(seed=2**64 - 3)  # the last game gets 2**64 - 1: allowed


# --- D4: masked arrays are refused everywhere, with one error -----------------------------------------


def _hidden(value: object) -> np.ma.MaskedArray:
    return np.ma.masked_array(value, mask=np.ones(np.shape(value), bool))


@pytest.mark.parametrize("cls", [DuelGreekEnv, DuelPersianEnv, CoopEnv])
def test_single_envs_refuse_a_masked_action(cls: type) -> None:
    env = cls()
    _, info = env.reset(seed=0)
    legal = int(np.flatnonzero(info["action_mask"])[0])
    for action in (_hidden(np.array(legal)), np.ma.masked_array(legal, mask=False)):
        with pytest.raises(TypeError, match="masked array"):
            env.step(action)
    env.step(legal)  # the game was left as it was


def test_the_pettingzoo_view_refuses_a_masked_action_with_the_same_error() -> None:
    from thermopylae_env.duel_v1 import env as duel_aec

    aec = duel_aec()
    aec.reset(seed=0)
    mask = aec.observe(aec.agent_selection)["action_mask"]
    with pytest.raises(TypeError, match="masked array"):
        aec.step(_hidden(np.array(int(np.flatnonzero(mask)[0]))))


@pytest.mark.parametrize("cls", [DuelGreekVectorEnv, DuelSelfPlayVectorEnv, CoopVectorEnv])
def test_vector_envs_refuse_masked_actions_seeds_and_reset_masks(cls: type) -> None:
    env = cls(3)
    env.reset(seed=1)
    if hasattr(env, "engine") and hasattr(env.engine, "states"):
        before = _state(env)
    masks = env.action_masks()
    with pytest.raises(TypeError, match="masked array"):
        env.step(np.ma.masked_array(masks.argmax(axis=1), mask=[0, 1, 0]))
    with pytest.raises(TypeError, match="masked array"):
        env.reset(options={"reset_mask": np.ma.masked_array([True, True, False], mask=[0, 0, 1])})
    with pytest.raises(TypeError, match="masked array"):
        env.reset(seed=_hidden(np.array(7)))
    with pytest.raises(TypeError, match="masked array"):
        env.reset(seed=np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]))
    if hasattr(env, "engine") and hasattr(env.engine, "states"):
        assert _same(before, _state(env))
    assert np.array_equal(masks, env.action_masks())


# --- D17: the SB3 adapters -----------------------------------------------------------------------------


def _adapters() -> dict[str, object]:
    pytest.importorskip("stable_baselines3")
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv
    from thermopylae_env.duel.sb3 import DuelSB3VecEnv, DuelSelfPlaySB3VecEnv

    return {"duel": DuelSB3VecEnv, "selfplay": DuelSelfPlaySB3VecEnv, "coop": CoopSB3VecEnv}


@pytest.mark.parametrize("name", ["duel", "selfplay", "coop"])
def test_a_step_refused_before_reset_queues_nothing(name: str) -> None:
    env = _adapters()[name](4)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.zeros(4, np.int64))
    env.reset()
    with pytest.raises(RuntimeError, match="without step_async"):
        env.step_wait()


@pytest.mark.parametrize("name", ["duel", "selfplay", "coop"])
def test_adapters_check_seeds_when_given(name: str) -> None:
    cls = _adapters()[name]
    with pytest.raises(TypeError, match="seed must be None or a non-negative integer"):
        cls(4, seed="x")
    env = cls(4)
    for bad, err in (("x", TypeError), (1.5, TypeError), (-1, ValueError), (2**64 - 2, ValueError),
                     (_hidden(np.array(3)), TypeError)):
        with pytest.raises(err):
            env.seed(bad)
    obs = env.reset()  # the refused seeds left no seed behind
    env.seed(2**64 - 4)
    assert env.reset().shape == obs.shape


# --- D2: a refused self-play SB3 call changes nothing ------------------------------------------------


def _parts_state(env: object) -> list[tuple]:
    return [(*_state(p.env), p.ret.copy(), p.length.copy()) for p in env.parts]


def test_a_self_play_sb3_call_the_persian_half_refuses_changes_nothing_and_names_the_row() -> None:
    pytest.importorskip("stable_baselines3")
    from thermopylae_env.actions import IllegalActionError
    from thermopylae_env.duel.sb3 import DuelSelfPlaySB3VecEnv

    env, twin = (DuelSelfPlaySB3VecEnv(4, illegal_action="raise", seed=9) for _ in range(2))
    env.reset()
    twin.reset()
    masks = env.action_masks()
    legal = masks.argmax(axis=1)
    bad = legal.copy()
    bad[2] = int(np.flatnonzero(~masks[2])[0])
    before = _parts_state(env)
    for _ in range(3):  # each retry would have stepped the Greek half again
        with pytest.raises(IllegalActionError, match="game 2:"):
            env.step(bad)
        assert all(_same(a, b) for a, b in zip(before, _parts_state(env), strict=True))
    got, want = env.step(legal), twin.step(legal)
    for a, b in zip(got[:3], want[:3], strict=True):
        assert np.array_equal(a, b)


def test_a_self_play_sb3_call_refused_with_reset_needed_leaves_the_greek_half_alone() -> None:
    pytest.importorskip("stable_baselines3")
    from thermopylae_env.core import ResetNeeded
    from thermopylae_env.duel.sb3 import DuelSelfPlaySB3VecEnv

    class Fails:
        def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
            raise RuntimeError("the opponent failed")

    env = DuelSelfPlaySB3VecEnv(4, seed=4)
    env.reset()
    env.set_opponents(greek_opponent=Fails())  # the Persian half's opponent
    rng = np.random.default_rng(0)
    with pytest.raises(RuntimeError, match="the opponent failed"):
        for _ in range(50):
            masks = env.action_masks()
            env.step((rng.random(masks.shape) * masks).argmax(axis=1))
    before = _parts_state(env)
    for _ in range(3):
        masks = env.action_masks()
        with pytest.raises(ResetNeeded):
            env.step(masks.argmax(axis=1))
        assert all(_same(a, b) for a, b in zip(before, _parts_state(env), strict=True))


# --- D1: a partial reset after the batched opponent failed inside step() ------------------------------


class _Flaky:
    """A batched opponent that plays the first legal action and fails on about one call in a hundred."""

    name = "flaky"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.rng.random() < 0.01:
            raise RuntimeError("the opponent failed")
        return masks.argmax(axis=1)


def _check_rows(env: DuelGreekVectorEnv, info: dict) -> np.ndarray:
    """Every row is a running game waiting on the agent, or an ended one whose row allows only the
    ignored action 0; returns which rows are over."""
    from thermopylae_env.duel import kernel as K

    masks = env.action_masks()
    assert np.array_equal(masks, info["action_mask"].astype(bool))
    over = env.engine.states[:, K.PHASE] == K.OVER
    assert (masks[over].sum(axis=1) == 1).all() and masks[over, 0].all()
    running = ~over
    assert np.array_equal(masks[running], env.engine.masks[running])
    assert masks[running].any(axis=1).all()
    assert (env.engine.states[running, K.PLAYER] == env.side).all()
    return over


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("cls", [DuelGreekVectorEnv, DuelPersianVectorEnv])
def test_a_partial_reset_after_a_failed_opponent_leaves_every_row_consistent(cls: type, mode: str) -> None:
    from thermopylae_env.duel import kernel as K

    env = cls(24, opponent=_Flaky(3), autoreset_mode=mode)
    rng = np.random.default_rng(3)
    while True:
        try:
            _, info = env.reset(seed=11)
            break
        except RuntimeError:
            pass
    failures = scored = 0
    for _ in range(600):
        over = _check_rows(env, info)
        episodes = env.engine.states[:, K.EPISODE].copy()
        masks = env.action_masks()
        actions = (rng.random(masks.shape) * masks).argmax(axis=1)
        try:
            _, rewards, term, _, info = env.step(actions)
        except RuntimeError:
            failures += 1
            st = env.engine.states
            while True:  # restart the games left ended or waiting on the opponent, as a user would
                unsettled = (st[:, K.PHASE] == K.OVER) | (st[:, K.PLAYER] != env.side)
                assert not unsettled.all()
                try:
                    _, info = env.reset(options={"reset_mask": unsettled})
                    break
                except RuntimeError:
                    pass
            continue
        assert "illegal_action" not in info and "illegal_action" not in info.get("final_info", {})
        new = env.engine.states[:, K.EPISODE] - episodes
        assert (new[over] == 1).all() and not term[over].any() and not rewards[over].any()
        restarted_now = term & ~over if mode == "SameStep" else np.zeros_like(term)
        assert (new[~over] == restarted_now[~over]).all()
        scored += int(term.sum())
    assert failures > 10 and scored > 20


# --- 7: at least 64 bits of chance per game ----------------------------------------------------------


def _chance_states(num_envs: int, resets: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The chance base of every game started by ``resets`` resets of ``num_envs`` games, and the full deck
    orders of the first ten resets' games."""
    from thermopylae_env.duel import kernel as K

    env = DuelSelfPlayVectorEnv(num_envs, parallel=False)
    bases, decks = [], []
    env.reset(seed=seed)
    for r in range(resets):
        if r:
            env.reset()  # every game's next start from its own stream
        bases.extend(env.engine.chance_base(i) for i in range(num_envs))
        if r < 10:
            decks.append(env.engine.states[:, K.DECK:K.DECK + K.NUM_CARDS].copy())
    return np.array(bases, dtype=object), np.concatenate(decks)


def test_four_hundred_thousand_game_starts_have_no_repeated_chance_state_or_deal() -> None:
    bases, decks = _chance_states(4000, 100, seed=0)
    assert len(set(bases.tolist())) == bases.size == 400_000  # 32 bits of chance repeat ~19 pairs here
    assert np.unique(decks, axis=0).shape[0] == decks.shape[0] == 40_000
    assert max(abs(int(b)) for b in bases) >= 1 << 40  # the base holds more than 32 bits


def test_the_same_seed_plays_the_same_games_in_another_process() -> None:
    import os
    import subprocess
    import sys

    code = ("from thermopylae_env.duel.vector import DuelSelfPlayVectorEnv\n"
            "env = DuelSelfPlayVectorEnv(5, parallel=False)\n"
            "env.reset(seed=[2**64 - 1, 0, 7, 123456789, 2**63])\n"
            "env.reset()\n"
            "print([env.engine.chance_base(i) for i in range(5)], env.engine.states.sum())\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ})
    assert run.returncode == 0, run.stderr[-2000:]
    env = DuelSelfPlayVectorEnv(5, parallel=False)
    env.reset(seed=[2**64 - 1, 0, 7, 123456789, 2**63])
    env.reset()
    assert run.stdout.strip() == f"{[env.engine.chance_base(i) for i in range(5)]} {env.engine.states.sum()}"


class _FailsAfterAWin:
    """A batched opponent that plays the first legal action, and raises on the first call that comes after
    the agent's move has won a game in the same step (``watch`` names the env and the rows running at the
    step's start)."""

    name = "fails-after-a-win"

    def __init__(self) -> None:
        self.env: DuelGreekVectorEnv | None = None
        self.running = np.zeros(0, bool)
        self.failed = False

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        from thermopylae_env.duel import kernel as K

        st = self.env.engine.states
        won = self.running & (st[:, K.PHASE] == K.OVER) & (st[:, K.WINNER] == self.env.side)
        if not self.failed and won.any():
            self.failed = True
            raise RuntimeError("the opponent failed")
        return masks.argmax(axis=1)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("cls", [DuelGreekVectorEnv, DuelPersianVectorEnv])
def test_a_game_won_in_a_failed_step_cannot_be_restarted_unreported_by_a_partial_reset(
        cls: type, mode: str) -> None:
    from thermopylae_env.core import ResetNeeded
    from thermopylae_env.duel import kernel as K

    opponent = _FailsAfterAWin()
    env = cls(16, opponent=opponent, autoreset_mode=mode, parallel=False)
    opponent.env = env
    opponent.running = np.zeros(16, bool)
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(2000):
        st = env.engine.states
        opponent.running = (st[:, K.PHASE] != K.OVER).copy()
        masks = env.action_masks()
        try:
            env.step((rng.random(masks.shape) * masks).argmax(axis=1))
        except RuntimeError:
            break
    assert opponent.failed
    st = env.engine.states
    won = opponent.running & (st[:, K.PHASE] == K.OVER) & (st[:, K.WINNER] == env.side)
    stuck = (st[:, K.PHASE] != K.OVER) & (st[:, K.PLAYER] != env.side)
    assert won.any() and stuck.any()
    before = _state(env)
    # restarting only the games left waiting on the opponent would drop the won game unreported
    with pytest.raises(ValueError, match=f"game {int(np.flatnonzero(won)[0])}") as err:
        env.reset(options={"reset_mask": stuck})
    assert "\n" not in str(err.value)
    assert _same(before, _state(env))
    with pytest.raises(ResetNeeded):
        env.step(env.action_masks().argmax(axis=1))
    assert _same(before, _state(env))
    episodes = st[:, K.EPISODE].copy()
    _, info = env.reset(options={"reset_mask": stuck | (st[:, K.PHASE] == K.OVER)})
    assert (env.engine.states[won, K.EPISODE] == episodes[won] + 1).all()
    over = _check_rows(env, info)
    assert not over.any()
    masks = env.action_masks()
    _, rewards, term, _, _ = env.step((rng.random(masks.shape) * masks).argmax(axis=1))
    assert rewards.shape == (16,)
