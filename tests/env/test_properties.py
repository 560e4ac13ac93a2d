"""Property-based tests (hypothesis) over random legal play in every engine and environment.

Hypothesis draws the seeds, the Persian deck of the co-op game and every action choice, and shrinks a
failure to a short game. At every step of every game these properties must hold:

* every card is in exactly one place (checked here independently of the engines' own
  ``check_invariants``, which is run as well), and no count is ever negative;
* the marker, support cards, tokens, hand sizes, graveyard and turn counters stay in range, and what the
  rules say only moves one way (marker, support, decks, graveyard, tokens, turn) never moves back;
* every game ends within the bound proved below;
* the mask is exactly the set of actions the engine accepts: every masked-in action is accepted and every
  masked-out action takes the documented illegal path, ``"raise"`` (``IllegalActionError``) as well as the
  default ``"loss"`` (the episode ends with the penalty), both leaving the whole state as it was (engine
  state, generator state, observation and mask compared before and after).

Bounds
------
Co-op game (``MAX_COOP_DECISIONS``): a fight discards the Spartan card played and nothing is reshuffled,
so there are at most 20 fights; a retreat moves the marker one step from 1 and reaching 7 ends the game,
so at most 6 retreats. A retreat makes at most one draw offer and a fight at most two (one per beaten
bonus card); each offer is one decision (give or decline). A discard decision follows only a give into a
full hand, and a give draws a card from the Spartan deck, which holds ``20 - dealt`` cards after the deal.
So a game takes at most ``20 + 6`` turns (``state.turn <= 26``) and
``26 + (6 + 2 * 20) + (20 - dealt) = 92 - dealt`` decisions (88 solo, 80 with four players).

Duel (``duel.MAX_GAME_ACTIONS``): each turn starts with a Persian draw from the 48 cards left after the
deal, so turn 49 finds the deck empty and ends the game: at most 49 turns, 48 with decisions. A discard
phase takes at most 9 micro-actions (the hand holds at most 8 cards and every action but "done" removes
one), an attack or defence at most 8 (at most 7 cards to add, then commit or decline): 17 per side and
34 per turn, so at most 48 * 34 = 1632 micro-actions in a game and 48 * 17 = 816 for one side.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import thermopylae_env  # noqa: F401  (registers the environments)
from thermopylae_env import duel_v1
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.coop import state as coop_state
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.layout import (
    DECLINE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    NUM_ACTIONS,
    NUM_SUPPORT,
    RETREAT,
    SPARTAN_DECK_SIZE,
)
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import END_REASONS, HAND_LIMIT, CoopState
from thermopylae_env.duel import layout as duel_layout
from thermopylae_env.duel.env import DuelGreekEnv, DuelPersianEnv
from thermopylae_env.duel.layout import (
    DECK_SIZE,
    DISCARD_KIND,
    DONE_DISCARDING,
    GREEK,
    MAX_ACTIONS_PER_TURN,
    MAX_GAME_ACTIONS,
    MAX_HAND,
    MAX_TURNS,
    NUM_CARDS,
    NUM_FORCE_KINDS,
    PERSIAN,
    START_HAND,
    START_TOKENS,
)
from thermopylae_env.duel.rules import DuelGame, check_invariants
from thermopylae_env.duel.state import DuelState

MAX_FIGHTS = SPARTAN_DECK_SIZE  # each fight discards one of the 20 Spartan cards
MAX_RETREATS = LOSS_MARKER - 1  # marker 1 -> 7
MAX_COOP_TURNS = MAX_FIGHTS + MAX_RETREATS  # 26


def max_coop_decisions(num_players: int) -> int:
    dealt = 4 if num_players == 1 else 3 * num_players
    return MAX_COOP_TURNS + (MAX_RETREATS + 2 * MAX_FIGHTS) + (SPARTAN_DECK_SIZE - dealt)


MAX_DUEL_SIDE_ACTIONS = MAX_GAME_ACTIONS // 2  # 816



def examples(n: int) -> settings:
    """Hypothesis settings: ``n`` games per test keep the whole file well under a minute."""
    # No shrinking: one example is a whole game, so shrinking a failure would take minutes; the failing
    # example is printed with its seed and draws (and a reproduce_failure blob) all the same.
    return settings(deadline=None, max_examples=n, database=None, print_blob=True,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


seeds = st.integers(0, 2**32 - 1)
persian_card = st.tuples(st.integers(1, 40), st.integers(0, 25), st.integers(0, 1)).map(
    lambda t: (t[0], t[0] + t[1], t[2])
)
# The default (reconstructed) deck, or any valid deck: decks of low cards make the rare endings common
# (12th-graveyard and failed-refill wins, exhaustion losses).
persian_decks = st.one_of(st.none(), st.lists(persian_card, min_size=28, max_size=28))


def freeze(value: object) -> object:
    """A hashable, comparable copy of a state field (lists become tuples, recursively)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def state_snapshot(state: object) -> tuple:
    """Every field of an engine state (a dataclass), copied: equal snapshots mean equal states."""
    return tuple(freeze(getattr(state, f.name)) for f in dataclasses.fields(state))


def pick(data: st.DataObject, mask: np.ndarray, label: str = "action") -> int:
    """A masked-in action chosen by hypothesis."""
    legal = np.flatnonzero(mask)
    assert legal.size, "no legal action in a running game"
    return int(legal[data.draw(st.integers(0, legal.size - 1), label=label)])


# ------------------------------------------------------------------------------------------------ co-op


def check_coop_state(game: CoopGame, state: CoopState) -> None:
    """Conservation and ranges of a co-op state, checked independently of the engine, then the engine's
    own ``check_invariants``."""
    spartan = (list(state.spartan_order[state.spartan_pos :]) + [c for hand in state.hands for c in hand]
               + list(state.spartan_discard))
    assert sorted(spartan) == list(range(SPARTAN_DECK_SIZE)), "Spartan cards lost or duplicated"
    line = [card for card in (state.slot1, state.slot2) if card >= 0]
    persian = (list(state.persian_order[state.persian_pos :]) + line + list(state.persian_discard)
               + list(state.graveyard))
    assert sorted(persian) == list(range(len(game.persian))), "Persian cards lost or duplicated"
    assert 0 <= state.spartan_pos <= SPARTAN_DECK_SIZE
    assert 0 <= state.persian_pos <= len(game.persian)
    assert 1 <= state.marker <= LOSS_MARKER
    assert 0 <= state.support <= NUM_SUPPORT
    assert 0 <= len(state.graveyard) <= GRAVEYARD_WIN
    assert 0 <= state.offers <= 1
    assert 0 <= state.turn <= MAX_COOP_TURNS
    assert 0 <= state.current_player < game.num_players
    for seat, hand in enumerate(state.hands):
        full = state.phase == coop_state.Phase.DISCARD and seat == state.recipient
        assert len(hand) <= HAND_LIMIT + int(full)
    game.check_invariants(state)
    game.card_locations(state)


def coop_monotone(before: CoopState, after: CoopState) -> None:
    """Nothing is reshuffled and nothing comes back."""
    assert after.marker >= before.marker
    assert after.support <= before.support
    assert after.spartan_pos >= before.spartan_pos and after.persian_pos >= before.persian_pos
    assert set(before.graveyard) <= set(after.graveyard)
    assert set(before.spartan_discard) <= set(after.spartan_discard)
    assert set(before.persian_discard) <= set(after.persian_discard)
    assert after.turn >= before.turn


def check_coop_mask_is_what_the_engine_accepts(game: CoopGame, state: CoopState) -> None:
    """Every one of the 72 actions, on a copy of the state: masked-in accepted, masked-out refused with
    ``IllegalActionError`` and the copy unchanged."""
    mask = game.legal_action_mask(state)
    snapshot = state_snapshot(state)
    rng = np.random.default_rng(0)
    for action in range(NUM_ACTIONS):
        trial = state.copy()
        assert game.is_legal(trial, action) == bool(mask[action])
        if mask[action]:
            game.step(trial, action, rng)
            check_coop_state(game, trial)
        else:
            with pytest.raises(IllegalActionError):
                game.step(trial, action, rng)
            assert state_snapshot(trial) == snapshot
    assert state_snapshot(state) == snapshot


class CoopCounter:
    """Counts the decisions of a co-op game by kind, to check each part of the length bound."""

    def __init__(self) -> None:
        self.fights = self.retreats = self.offers = self.gives = self.discards = 0

    def count(self, phase: int, action: int) -> None:
        if phase == coop_state.Phase.MAIN:
            if action == RETREAT:
                self.retreats += 1
            else:
                self.fights += 1
        elif phase == coop_state.Phase.DRAW_OFFER:
            self.offers += 1
            self.gives += action != DECLINE
        else:
            self.discards += 1

    def check(self, num_players: int) -> None:
        assert self.fights <= MAX_FIGHTS and self.retreats <= MAX_RETREATS
        assert self.offers <= self.retreats + 2 * self.fights
        dealt = 4 if num_players == 1 else 3 * num_players
        assert self.discards <= self.gives <= SPARTAN_DECK_SIZE - dealt
        total = self.fights + self.retreats + self.offers + self.discards
        assert total <= max_coop_decisions(num_players)


@examples(40)
@given(num_players=st.integers(1, 4), deck=persian_decks, seed=seeds, data=st.data())
def test_coop_engine_random_legal_play(num_players, deck, seed, data):
    game = CoopGame(num_players, deck)
    rng = np.random.default_rng(seed)
    state = game.init(rng)
    counter = CoopCounter()
    while not state.terminated:
        check_coop_state(game, state)
        check_coop_mask_is_what_the_engine_accepts(game, state)
        mask = game.legal_action_mask(state)
        assert mask.any()
        if state.phase == coop_state.Phase.MAIN and not state.hands[state.current_player]:
            assert np.flatnonzero(mask).tolist() == [RETREAT]  # an empty hand must retreat
        action = pick(data, mask)
        before = state.copy()
        counter.count(state.phase, action)
        game.step(state, action, rng)
        coop_monotone(before, state)
        counter.check(num_players)
    check_coop_state(game, state)
    assert not game.legal_action_mask(state).any()
    assert game.returns(state) in (1.0, -1.0) and state.reason in END_REASONS
    assert state.won == (state.reason in ("graveyard", "refill"))


def coop_env_snapshot(env: CoopEnv) -> tuple:
    return (state_snapshot(env.state), env.np_random.bit_generator.state,
            env.action_masks().tobytes(), env.game.observe(env.state).tobytes())


def check_env_loss_path(env, action: int, obs_before: np.ndarray, snapshot_fn) -> None:
    """On a copy of ``env`` switched to the default ``"loss"`` policy: the masked-out ``action`` ends the
    episode with the penalty, changes nothing in the game, and the next step raises."""
    twin = copy.deepcopy(env)
    twin.illegal_action = "loss"
    twin.illegal_action_penalty = -3.0
    before = snapshot_fn(twin)
    obs, reward, terminated, truncated, info = twin.step(action)
    assert terminated and not truncated and reward == -3.0
    assert info["illegal_action"] is True
    assert isinstance(info["illegal_reason"], str) and info["illegal_reason"]
    assert info["is_success"] is False and not info["action_mask"].any() and not twin.action_masks().any()
    assert np.array_equal(obs, obs_before)
    after = snapshot_fn(twin)
    assert after[:2] == before[:2] and after[3:] == before[3:]  # the mask (index 2) is now all false
    with pytest.raises(RuntimeError, match="ended"):
        twin.step(action)


@examples(30)
@given(num_players=st.integers(1, 4), deck=persian_decks, seed=seeds, data=st.data())
def test_coop_env_mask_matches_what_step_accepts_in_both_illegal_modes(num_players, deck, seed, data):
    env = CoopEnv(num_players=num_players, persian_deck=deck, illegal_action="raise")
    obs, info = env.reset(seed=seed)
    steps = 0
    while True:
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.any()
        assert np.array_equal(mask.astype(bool), env.action_masks())
        assert np.array_equal(mask.astype(bool), env.game.legal_action_mask(env.state))
        assert obs in env.observation_space
        check_coop_state(env.game, env.state)
        before = coop_env_snapshot(env)
        for action in np.flatnonzero(mask == 0):  # "raise": refused, nothing changes
            with pytest.raises(IllegalActionError):
                env.step(int(action))
            assert coop_env_snapshot(env) == before
        illegal = np.flatnonzero(mask == 0)
        if illegal.size:  # "loss" (the default policy): one masked-out action drawn by hypothesis
            chosen = int(illegal[data.draw(st.integers(0, illegal.size - 1), label="illegal")])
            check_env_loss_path(env, chosen, obs, coop_env_snapshot)
        other = pick(data, mask, "another legal action")  # accepted as well
        result = copy.deepcopy(env).step(other)
        assert "illegal_action" not in result[4]
        obs, reward, terminated, truncated, info = env.step(pick(data, mask))
        steps += 1
        assert not truncated and steps <= max_coop_decisions(num_players)
        if terminated:
            assert reward in (1.0, -1.0) and info["is_success"] == (reward == 1.0)
            assert not info["action_mask"].any()
            check_coop_state(env.game, env.state)
            with pytest.raises(RuntimeError, match="ended"):
                env.step(RETREAT)
            return
        assert reward == 0.0 and "is_success" not in info


# ------------------------------------------------------------------------------------------------ duel


def check_duel_state(game: DuelGame, state: DuelState) -> None:
    """Conservation and ranges of a duel state, checked independently of the engine, then the engine's
    own ``check_invariants``."""
    places = []
    for p in (GREEK, PERSIAN):
        assert START_HAND <= state.deck_pos[p] <= DECK_SIZE
        places += list(state.decks[p][state.deck_pos[p] :]) + list(state.hands[p]) + list(state.discards[p])
        assert all(n >= 0 for n in state.hand_counts[p]) and all(n >= 0 for n in state.discard_counts[p])
        assert len(state.hands[p]) <= MAX_HAND
    places += list(state.table)
    assert sorted(places) == list(range(NUM_CARDS)), "duel cards lost or duplicated"
    assert 0 <= state.tokens <= START_TOKENS
    assert 1 <= state.turn <= MAX_TURNS
    assert 0 <= state.actions_taken <= MAX_GAME_ACTIONS
    assert all(0 <= n <= 1 for n in state.build[NUM_FORCE_KINDS : DISCARD_KIND])
    check_invariants(state, game)


def duel_monotone(before: DuelState, after: DuelState) -> None:
    assert after.tokens <= before.tokens and after.turn >= before.turn
    assert all(a >= b for a, b in zip(after.deck_pos, before.deck_pos, strict=True))
    for p in (GREEK, PERSIAN):
        assert set(before.discards[p]) <= set(after.discards[p])


def check_duel_mask_is_what_the_engine_accepts(game: DuelGame, state: DuelState) -> None:
    mask = game.legal_action_mask(state)
    assert sorted(game.legal_actions(state)) == np.flatnonzero(mask).tolist()
    snapshot = state_snapshot(state)
    rng = np.random.default_rng(0)
    for action in range(duel_layout.NUM_ACTIONS):
        trial = state.copy()
        assert game.is_legal(trial, action) == bool(mask[action])
        if mask[action]:
            game.step(trial, action, rng)  # accepted (the state it leads to is checked when played)
        else:
            with pytest.raises(IllegalActionError):
                game.step(trial, action, rng)
            assert state_snapshot(trial) == snapshot
    assert state_snapshot(state) == snapshot


class TurnCounter:
    """Micro-actions per turn, for the per-turn bound of 34."""

    def __init__(self, state: DuelState) -> None:
        self.turn = state.turn
        self.start = state.actions_taken

    def check(self, state: DuelState) -> None:
        if state.turn != self.turn:
            self.turn, self.start = state.turn, state.actions_taken - 1
        assert state.actions_taken - self.start <= MAX_ACTIONS_PER_TURN


@examples(15)
@given(seed=seeds, data=st.data())
def test_duel_engine_random_legal_play(seed, data):
    game = DuelGame()
    rng = np.random.default_rng(seed)
    state = game.init(rng)
    turns = TurnCounter(state)
    while not state.terminated:
        check_duel_state(game, state)
        check_duel_mask_is_what_the_engine_accepts(game, state)
        before = state.copy()
        game.step(state, pick(data, game.legal_action_mask(state)), rng)
        duel_monotone(before, state)
        turns.check(state)
        assert state.actions_taken <= MAX_GAME_ACTIONS
    check_duel_state(game, state)
    assert not game.legal_action_mask(state).any()
    assert sorted(game.returns(state).tolist()) == [-1.0, 1.0]
    assert state.reason in ("persian_deck_empty", "no_tokens")


def duel_env_snapshot(env) -> tuple:
    return (state_snapshot(env.state), env.np_random.bit_generator.state,
            env.action_masks().tobytes(), env.game.observe(env.state, env.side).tobytes())


@examples(20)
@given(cls=st.sampled_from([DuelGreekEnv, DuelPersianEnv]), opponent=st.sampled_from(["random", "heuristic"]),
       seed=seeds, data=st.data())
def test_duel_env_mask_matches_what_step_accepts_in_both_illegal_modes(cls, opponent, seed, data):
    env = cls(opponent=opponent, illegal_action="raise")
    obs, info = env.reset(seed=seed)
    steps = 0
    while True:
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.any()
        assert env.state.current_player == env.side and not env.state.terminated
        assert np.array_equal(mask.astype(bool), env.action_masks())
        assert np.array_equal(mask.astype(bool), env.game.legal_action_mask(env.state))
        assert obs in env.observation_space
        check_duel_state(env.game, env.state)
        before = duel_env_snapshot(env)
        illegal = np.flatnonzero(mask == 0)
        for action in illegal:
            with pytest.raises(IllegalActionError):
                env.step(int(action))
            assert duel_env_snapshot(env) == before
        if illegal.size and data.draw(st.integers(0, 3), label="probe loss") == 0:
            check_env_loss_path(env, int(illegal[data.draw(st.integers(0, illegal.size - 1))]), obs,
                                duel_env_snapshot)
        obs, reward, terminated, truncated, info = env.step(pick(data, mask))
        steps += 1
        assert not truncated and steps <= MAX_DUEL_SIDE_ACTIONS
        if terminated:
            assert reward in (1.0, -1.0) and info["is_success"] == (reward == 1.0)
            assert (env.state.winner == env.side) == (reward == 1.0)
            assert not info["action_mask"].any()
            check_duel_state(env.game, env.state)
            with pytest.raises(RuntimeError, match="ended"):
                env.step(DONE_DISCARDING)
            return
        assert reward == 0.0


def aec_snapshot(raw) -> tuple:
    return (state_snapshot(raw.state), raw._np_random.bit_generator.state, raw.agent_selection,
            dict(raw.rewards), dict(raw._cumulative_rewards), dict(raw.terminations), list(raw.agents))


@examples(8)
@given(seed=seeds, data=st.data())
def test_pettingzoo_view_random_legal_play(seed, data):
    env = duel_v1.env()
    env.reset(seed=seed)
    raw = env.unwrapped
    steps = 0
    finals = {}
    for agent in env.agent_iter(max_iter=MAX_GAME_ACTIONS + 2):
        obs, reward, termination, truncation, _ = env.last()
        assert not truncation
        if termination:
            finals[agent] = reward
            env.step(None)
            continue
        player = raw.possible_agents.index(agent)
        assert raw.state.current_player == player
        other = raw.possible_agents[1 - player]
        assert not env.observe(other)["action_mask"].any()  # only the acting agent has a legal action
        mask = obs["action_mask"]
        assert np.array_equal(mask.astype(bool), raw.game.legal_action_mask(raw.state))
        check_duel_state(raw.game, raw.state)
        before = aec_snapshot(raw)
        illegal = np.flatnonzero(mask == 0)
        for action in illegal:  # the raw env raises and changes nothing
            with pytest.raises(IllegalActionError):
                raw.step(int(action))
            assert aec_snapshot(raw) == before
        if illegal.size and data.draw(st.integers(0, 3), label="probe wrapper") == 0:
            twin = copy.deepcopy(env)  # the wrapped env ends the game, -1 for the mover
            twin.step(int(illegal[data.draw(st.integers(0, illegal.size - 1))]))
            assert all(twin.terminations.values()) and twin.rewards[agent] == -1
            assert aec_snapshot(twin.unwrapped)[0] == before[0]
        env.step(pick(data, mask))
        steps += 1
        assert steps <= MAX_GAME_ACTIONS
    assert raw.state.terminated and not env.agents
    check_duel_state(raw.game, raw.state)
    winner = raw.possible_agents[raw.state.winner]
    assert finals == {winner: 1, raw.possible_agents[1 - raw.state.winner]: -1}


# ----------------------------------------------------------------------------------------- vector co-op


def check_vector_engine(eng) -> None:
    """Conservation and ranges of every game of a :class:`CoopVectorEngine`, from its arrays."""
    from thermopylae_env.coop.kernel import OVER

    value_of = eng.t.spartan_value
    rows = len(eng.persian)
    p = eng.num_players
    assert not eng.hands[:, p:].any(), "cards in the hand of a seat beyond the player count"
    assert (eng.hands >= 0).all()
    assert np.array_equal(eng.hand_total, eng.hands.sum(axis=(1, 2)))
    for seat in range(p):
        bits = ((eng.hands[:, seat] > 0) * (1 << np.arange(11))).sum(axis=1)
        assert np.array_equal(eng.hand_bits[seat], bits)
    for g in range(eng.num_envs):
        order = eng.spartan_order[g]
        assert sorted(order.tolist()) == list(range(SPARTAN_DECK_SIZE))
        assert sorted(eng.persian_order[g].tolist()) == list(range(rows))
        pos = int(eng.spartan_pos[g])
        assert 0 <= pos <= SPARTAN_DECK_SIZE
        drawn = np.bincount(value_of[order[:pos]], minlength=11)
        in_hands = eng.hands[g].sum(axis=0)
        assert (drawn - in_hands >= 0).all(), "a hand holds a card that was never drawn"
        ppos = int(eng.persian_pos[g])
        line = [int(s) for s in (eng.slot1[g], eng.slot2[g]) if s >= 0]
        seen = set(eng.persian_order[g, :ppos].tolist())
        assert set(line) <= seen and len(set(line)) == len(line)
        assert int(eng.graveyard[g]) + int(eng.persian_discard[g]) + len(line) == ppos
        assert 1 <= eng.marker[g] <= LOSS_MARKER and 0 <= eng.support[g] <= NUM_SUPPORT
        assert 0 <= eng.graveyard[g] <= GRAVEYARD_WIN and 0 <= eng.offers[g] <= 1
        assert 0 <= eng.turn[g] <= MAX_COOP_TURNS
        if eng.phase[g] != OVER:
            assert eng.marker[g] < LOSS_MARKER
            if eng.phase[g] == 0:  # between actions the line is full
                assert len(line) == 2
            assert 0 <= eng.current[g] < p
            limit = np.full(p, HAND_LIMIT)
            if eng.phase[g] == 2:
                limit[eng.recipient[g]] += 1
                assert eng.hands[g, eng.recipient[g]].sum() == HAND_LIMIT + 1
            assert (eng.hands[g, :p].sum(axis=1) <= limit).all()


@examples(25)
@given(num_players=st.integers(1, 4), deck=persian_decks, num_envs=st.integers(1, 6),
       mode=st.sampled_from(["NextStep", "SameStep"]), seed=seeds, data=st.data())
def test_coop_vector_env_random_play_with_illegal_actions(num_players, deck, num_envs, mode, seed, data):
    from thermopylae_env.coop.kernel import OVER
    from thermopylae_env.coop.vector import CoopVectorEnv

    env = CoopVectorEnv(num_envs=num_envs, num_players=num_players, persian_deck=deck, autoreset_mode=mode,
                        illegal_action_penalty=-2.0)
    obs, info = env.reset(seed=seed)
    eng = env.engine
    rng = np.random.default_rng(data.draw(seeds, label="choice seed"))
    length = np.zeros(num_envs, int)
    bound = max_coop_decisions(num_players)
    finished = 0
    pending = np.zeros(num_envs, bool)  # NEXT_STEP: games that ended and restart on this step
    while finished < 2 * num_envs:
        masks = env.action_masks()
        assert np.array_equal(masks, info["action_mask"].astype(bool))
        running = eng.phase != OVER
        if running.any():  # the masks and observations kept up to date in place = rebuilt from the state
            games = np.flatnonzero(running)
            assert np.array_equal(masks[running], eng.masks_of(games))
            assert np.array_equal(obs[running], eng.observe_rows(games))
        assert (masks[running].any(axis=1)).all()
        # a finished game waiting for its NEXT_STEP reset offers only action 0, the action that step ignores
        assert (masks[~running] == (np.arange(masks.shape[1]) == 0)).all()
        assert ((obs >= 0) & (obs <= 1)).all()
        check_vector_engine(eng)
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        illegal = np.zeros(num_envs, bool)
        if data.draw(st.integers(0, 7), label="illegal step") == 0:  # one game plays a masked-out action
            g = data.draw(st.integers(0, num_envs - 1), label="game")
            if running[g]:
                bad = np.flatnonzero(~masks[g])
                actions[g] = bad[rng.integers(bad.size)]
                illegal[g] = True
        obs_before = obs.copy()
        obs, rewards, terminated, truncated, info = env.step(actions)
        assert not truncated.any()
        length = np.where(pending, 0, length)
        length += ~pending
        assert (length <= bound).all()
        for g in range(num_envs):
            if illegal[g]:
                assert terminated[g] and rewards[g] == -2.0
                final = info["final_info"] if mode == "SameStep" else info
                assert final["illegal_action"][g] and final["illegal_reason"][g]
                last = info["final_obs"][g] if mode == "SameStep" else obs[g]
                assert np.array_equal(last, obs_before[g])
            elif pending[g]:
                assert rewards[g] == 0.0 and not terminated[g]
            elif terminated[g]:
                assert rewards[g] in (1.0, -1.0)
            else:
                assert rewards[g] == 0.0
        finished += int(terminated.sum())
        if mode == "SameStep":
            length[terminated] = 0
        else:
            pending = terminated.copy()
