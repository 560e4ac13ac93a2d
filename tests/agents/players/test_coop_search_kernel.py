"""The compiled co-op search: its heuristic plays CoopHeuristic's moves, its rules are the reference engine's,
and CoopSearchExpert plays the same moves with either engine."""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_agents.players import _coop_search_kernel as kernel
from thermopylae_agents.players._coop_search_tables import compact_state, engine_tables, heuristic_tables
from thermopylae_agents.players.coop_features import view_from_state
from thermopylae_agents.players.coop_heuristic import CoopHeuristic, heuristic_positions
from thermopylae_agents.players.coop_search import _MAX_FIGHTS, CoopSearchExpert, _DiceTable
from thermopylae_env.coop.layout import RETREAT
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import MAX_DICE

TEAM_SIZES = (1, 2, 3, 4)
TIE = 1e-12  # scores this close are equal up to rounding (they are sums of a few dozen terms below 100)


@pytest.fixture(scope="module")
def heuristic() -> CoopHeuristic:
    return CoopHeuristic()


@pytest.fixture(scope="module")
def tables(heuristic: CoopHeuristic) -> tuple:
    return heuristic_tables(heuristic)


def _assert_same_or_tied(heuristic: CoopHeuristic, game: CoopGame, state, expected: int, got: int) -> bool:
    """``got`` is ``expected``, or both are MAIN decisions that the Python heuristic's own scores tie to
    within rounding (the compiled sums round differently in the last bits). Returns whether they were
    the same."""
    if got == expected:
        return True
    assert state.phase == 0, (expected, got, state.key())
    scores = heuristic.fight_scores(view_from_state(game, state), None)
    best = max(scores.values())
    p = heuristic.params
    if RETREAT in (expected, got):  # the best fight's score ties a retreat threshold
        thresholds = (p["early_keep"], p["stay3_adv"], p["walk_adv"], 0.0, p["win"] * 0.5)
        assert min(abs(best - t) for t in thresholds) <= TIE, (expected, got, best)
    else:
        assert abs(scores[expected] - scores[got]) <= TIE * max(1.0, abs(best)), (expected, got, scores)
    return False


def _heuristic_decisions(num_players: int, games: int, seed: int, heuristic: CoopHeuristic,
                         tables: tuple, ties: bool = False) -> int:
    """Walk ``games`` games (half the moves random, to reach states the heuristic avoids) and compare the
    compiled heuristic's choice with ``choose_state`` at every decision (with ``ties``, a choice between
    scores tied to within rounding may differ); returns the decisions compared."""
    game = CoopGame(num_players=num_players)
    rng = np.random.default_rng(seed)
    decisions = 0
    for _ in range(games):
        state = game.init(rng)
        while not state.terminated:
            expected = heuristic.choose_state(game, state)
            got = kernel.choose_from_scratch(compact_state(game, state), tables)
            if ties:
                _assert_same_or_tied(heuristic, game, state, expected, got)
            else:
                assert got == expected, state.key()
            decisions += 1
            action = expected
            if rng.random() < 0.5:
                action = int(rng.choice(np.flatnonzero(game.legal_action_mask(state))))
            game.step(state, action, rng)
    return decisions


@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_heuristic_chooses_the_python_heuristics_move(num_players, heuristic, tables):
    assert _heuristic_decisions(num_players, 50, 100 + num_players, heuristic, tables) > 1000


@pytest.mark.slow
@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_heuristic_chooses_the_python_heuristics_move_in_many_games(num_players, heuristic, tables):
    for seed in range(10):
        decisions = _heuristic_decisions(num_players, 200, 1000 * num_players + seed, heuristic, tables, True)
        assert decisions > 4000


def _reference_state(game, state, dice_table) -> np.ndarray:
    expected = compact_state(game, state)
    expected[kernel.S_DICE] = dice_table.k
    return expected


@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_rules_step_like_the_reference_engine(num_players, tables):
    """Random legal actions (declines and discards too) with the same deck orders and dice: every state."""
    game = CoopGame(num_players=num_players)
    rules = engine_tables(game)
    rng = np.random.default_rng(200 + num_players)
    steps = 0
    for _ in range(30):
        state = game.init(rng)
        dice = rng.integers(1, 7, size=(_MAX_FIGHTS, MAX_DICE))
        dice_table = _DiceTable(dice.tolist(), rng)
        compact = compact_state(game, state)
        while not state.terminated:
            action = int(rng.choice(np.flatnonzero(game.legal_action_mask(state))))
            game.step(state, action, dice_table)
            kernel.step_state(compact, action, dice, rules, tables)
            np.testing.assert_array_equal(compact, _reference_state(game, state, dice_table))
            steps += 1
    assert steps > 500


def _heuristic_games(num_players: int, games: int, seed: int, heuristic: CoopHeuristic, tables: tuple) -> int:
    """Whole heuristic games on the reference engine and compiled, same deck orders and dice: the same final
    state (outcome, turns, line, counters, dice used). Returns the games won."""
    game = CoopGame(num_players=num_players)
    rules = engine_tables(game)
    rng = np.random.default_rng(seed)
    wins = 0
    for _ in range(games):
        state = game.init(rng)
        dice = rng.integers(1, 7, size=(_MAX_FIGHTS, MAX_DICE))
        dice_table = _DiceTable(dice.tolist(), rng)
        compact = compact_state(game, state)
        while not state.terminated:
            game.step(state, heuristic.choose_state(game, state), dice_table)
        kernel.play_game(compact, dice, rules, tables)
        np.testing.assert_array_equal(compact, _reference_state(game, state, dice_table))
        wins += state.won
    return wins


@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_rollouts_end_like_the_reference_engine(num_players, heuristic, tables):
    _heuristic_games(num_players, 40, 300 + num_players, heuristic, tables)


@pytest.mark.slow
@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_rollouts_follow_the_reference_engine_over_many_games(num_players, heuristic, tables):
    """Heuristic games in lockstep, same deck orders and dice: the compiled heuristic (with the sums a
    rollout updates) makes the Python heuristic's choice or one it scores tied, and after each of the
    Python heuristic's moves both engines hold the same state."""
    game = CoopGame(num_players=num_players)
    rules = engine_tables(game)
    rng = np.random.default_rng(3000 + num_players)
    decisions = tied = 0
    for _ in range(1000):
        state = game.init(rng)
        dice = rng.integers(1, 7, size=(_MAX_FIGHTS, MAX_DICE))
        dice_table = _DiceTable(dice.tolist(), rng)
        compact = compact_state(game, state)
        sums = np.zeros(kernel.F_SIZE, dtype=np.int64)
        kernel.future_init(compact, tables, sums)
        gain = np.zeros(11)
        while not state.terminated:
            action = heuristic.choose_state(game, state)
            got = kernel.choose(compact, tables, sums, gain)
            tied += not _assert_same_or_tied(heuristic, game, state, action, got)
            decisions += 1
            game.step(state, action, dice_table)
            kernel.step(compact, action, dice, rules, tables[1], sums)
        np.testing.assert_array_equal(compact, _reference_state(game, state, dice_table))
    assert tied < decisions / 10_000


@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_search_plays_the_python_searchs_moves_and_values(num_players):
    """Same seed, same positions: the same action and the same mean return of every candidate."""
    compiled = CoopSearchExpert(n_determinizations=6, rollouts=3, num_players=num_players, seed=5)
    python = CoopSearchExpert(n_determinizations=6, rollouts=3, num_players=num_players, seed=5,
                              engine="python")
    searched = 0
    for obs, mask in heuristic_positions(num_players, 400 + num_players, 0.3, count=24):
        action = compiled.act(obs, mask)
        assert mask[action]
        assert action == python.act(obs, mask)
        assert compiled.last_values == python.last_values
        searched += len(compiled.last_values) > 1
    assert searched > 3


def test_compiled_search_is_deterministic_for_a_seed():
    positions = heuristic_positions(2, 7, 0.3, count=25)
    first = CoopSearchExpert(n_determinizations=8, rollouts=2, num_players=2, seed=11)
    second = CoopSearchExpert(n_determinizations=8, rollouts=2, num_players=2, seed=11)
    for obs, mask in positions:
        assert first.act(obs, mask) == second.act(obs, mask)
        assert first.last_values == second.last_values


@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_short_compiled_search_game_finishes_with_legal_moves(num_players):
    game = CoopGame(num_players=num_players)
    search = CoopSearchExpert(n_determinizations=8, rollouts=2, num_players=num_players, seed=num_players)
    rng = np.random.default_rng(num_players)
    state = game.init(rng)
    while not state.terminated:
        mask = game.legal_action_mask(state)
        action = search.act(game.observe(state), mask)
        assert mask[action]
        game.step(state, action, rng)
    assert state.reason is not None


def test_unknown_search_engine_is_refused():
    with pytest.raises(ValueError, match="engine"):
        CoopSearchExpert(engine="fortran")
