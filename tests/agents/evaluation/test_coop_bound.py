"""The deck-clairvoyant upper bound: the solver against brute force over the engine itself. The default run
holds the Python solver to the engine; the slow run holds the compiled kernels (numba: the one-seat kernel
here, the team kernel in test_coop_bound_team.py) to the same references and to the Python solver, since
compiling them costs more than every other check of this file."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from thermopylae_agents.cli.bound import main as bound_main
from thermopylae_agents.cli.bound import mean_interval, merge_rows, paired_gaps
from thermopylae_agents.evaluation.coop_bound import (
    DeckClairvoyantSolver,
    FixedDice,
    deal_orders,
    dice_sum_distribution,
    dice_with_sum,
    engine_value,
    policy_value,
)
from thermopylae_agents.evaluation.games import EvalResult, GameResult, results_json
from thermopylae_agents.players.coop_heuristic import CoopHeuristic
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.layout import SPARTAN_DECK_SIZE
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import CoopState


def _cards_left(state: CoopState) -> int:
    return SPARTAN_DECK_SIZE - state.spartan_pos + sum(len(hand) for hand in state.hands)


def late_state(game: CoopGame, seed: int, cards_left: int, support: int) -> CoopState:
    """A MAIN-phase state of deal ``seed`` reached by the heuristic with some random moves, with at most
    ``cards_left`` Spartan cards in the deck and hands and at most ``support`` support cards (the rest set
    aside)."""
    rng = np.random.default_rng(seed)
    heuristic = CoopHeuristic()
    for attempt in range(200):
        state = game.new_state(*deal_orders(seed + 1000 * attempt, game.num_players))
        while not state.terminated:
            if state.phase == 0 and _cards_left(state) <= cards_left:
                state.support = min(state.support, support)
                game.check_invariants(state)
                return state
            if rng.random() < 0.8:
                action = heuristic.choose_state(game, state)
            else:
                action = int(rng.choice(np.flatnonzero(game.legal_action_mask(state))))
            game.step(state, action, rng)
    raise AssertionError("no such late state found")


def _recorded_bound(deal: int) -> dict:
    """The row of ``deal`` (mode "expect") in ``benchmarks/results/coop_bound.jsonl``, from the first
    kernel."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "coop_bound.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return next(r for r in rows if r["deal"] == deal and r["config"]["mode"] == "expect")


# ---------------------------------------------------------------------------------------- dice


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_dice_sum_distribution_equals_enumerating_every_roll(n):
    counts: dict[int, int] = {}
    for roll in itertools.product(range(1, 7), repeat=n):
        counts[sum(roll)] = counts.get(sum(roll), 0) + 1
    expected = {s: c / 6**n for s, c in counts.items()}
    got = dice_sum_distribution(n)
    assert got.keys() == expected.keys()
    for s in expected:
        assert got[s] == pytest.approx(expected[s], abs=1e-15)
    assert sum(got.values()) == pytest.approx(1.0, abs=1e-12)


def test_dice_with_sum_gives_legal_faces_of_that_sum():
    for n in range(6):
        for total in dice_sum_distribution(n):
            dice = dice_with_sum(n, total)
            assert len(dice) == n and sum(dice) == total and all(1 <= d <= 6 for d in dice)
    with pytest.raises(ValueError, match="cannot sum"):
        dice_with_sum(2, 13)


def test_fixed_dice_refuses_a_second_or_different_draw():
    dice = FixedDice([3, 4])
    assert list(dice.integers(1, 7, size=2)) == [3, 4]
    with pytest.raises(AssertionError, match="unexpected dice draw"):
        dice.integers(1, 7, size=2)
    with pytest.raises(AssertionError, match="unexpected dice draw"):
        FixedDice([3]).integers(1, 7, size=2)


# ---------------------------------------------------------------------------------------- deals


def test_deal_orders_are_the_deals_the_evaluation_plays():
    game = CoopGame()
    for seed in (0, 1, 17):
        env = CoopEnv()
        obs, _ = env.reset(seed=seed)
        state = game.new_state(*deal_orders(seed))
        assert np.array_equal(game.observe(state), obs)
        assert state.key() == env.state.key()


# ---------------------------------------------------------------------------------------- against the engine


def _equals_plain_engine_brute_force(num_players: int, seed: int, backend: str) -> None:
    game = CoopGame(num_players)
    state = late_state(game, seed, cards_left=3, support=1)
    for mode in ("expect", "lucky"):
        exact = engine_value(game, state, mode)  # no memo: every action and dice sum, recursively
        got = DeckClairvoyantSolver(game, mode, backend=backend).value(state)
        assert got == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize("num_players", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_solver_equals_plain_engine_brute_force_on_late_states(num_players, seed):
    _equals_plain_engine_brute_force(num_players, seed, "python")


@pytest.mark.slow
@pytest.mark.parametrize("num_players", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_compiled_solver_equals_plain_engine_brute_force_on_late_states(num_players, seed):
    pytest.importorskip("numba")
    _equals_plain_engine_brute_force(num_players, seed, "numba")


def _equals_memoized_engine_recursion(num_players: int, seed: int, backend: str) -> None:
    game = CoopGame(num_players)
    state = late_state(game, 100 + seed, cards_left=6, support=2)
    exact = engine_value(game, state, "expect", memo={})
    assert DeckClairvoyantSolver(game, backend=backend).value(state) == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize("num_players", [1, 3])
@pytest.mark.parametrize("seed", range(3))
def test_solver_equals_memoized_engine_recursion_on_bigger_states(num_players, seed):
    _equals_memoized_engine_recursion(num_players, seed, "python")


@pytest.mark.slow
@pytest.mark.parametrize("num_players", [1, 3])
@pytest.mark.parametrize("seed", range(3))
def test_compiled_solver_equals_memoized_engine_recursion_on_bigger_states(num_players, seed):
    pytest.importorskip("numba")
    _equals_memoized_engine_recursion(num_players, seed, "numba")


@pytest.mark.slow
@pytest.mark.parametrize("seed,cards_left",
                         [(700, 13), (701, 13), (702, 13), (703, 11), (704, 13), (705, 13)])
def test_numba_kernel_equals_the_python_solver_on_mid_game_states(seed, cards_left):
    pytest.importorskip("numba")
    game = CoopGame()
    state = late_state(game, seed, cards_left=cards_left, support=4)
    for mode in ("expect", "lucky"):
        reference = DeckClairvoyantSolver(game, mode, backend="python").value(state)
        got = DeckClairvoyantSolver(game, mode, backend="numba").value(state)
        assert got == pytest.approx(reference, abs=1e-12)


@pytest.mark.slow
def test_numba_kernel_reproduces_the_recorded_bound_of_a_whole_deal():
    """Deal 1 of ``benchmarks/results/coop_bound.jsonl`` was computed by the first kernel (without
    pruning)."""
    pytest.importorskip("numba")
    recorded = _recorded_bound(1)
    solver = DeckClairvoyantSolver(CoopGame(), backend="numba")
    assert solver.solve(*deal_orders(1)) == pytest.approx(recorded["bound"], abs=1e-9)
    assert 0 < solver.stats.states <= recorded["bound_states"]


@pytest.mark.slow
def test_fight_tables_hold_the_distinct_outcomes_of_every_fight():
    pytest.importorskip("numba")
    from thermopylae_agents.evaluation import _coop_bound_kernel as kernel

    solver = DeckClairvoyantSolver(CoopGame(), backend="python")
    solver._load(*deal_orders(3))
    pmf = np.zeros((6, 31))
    for n in range(6):
        for total, p in dice_sum_distribution(n).items():
            pmf[n, total] = p
    counts, codes, probs = kernel.fight_tables(np.asarray(solver._white), np.asarray(solver._red),
                                               np.asarray(solver._bonus, dtype=np.int64), pmf)
    for pp in range(2, 29):
        for value in range(10, 21):
            for n_dice in range(6):
                expected = {b * 9 + g * 3 + o: p for p, b, g, o in solver._outcomes(pp, value, n_dice)}
                n = abs(counts[pp, value - 10, n_dice])
                got = dict(zip(codes[pp, value - 10, n_dice, :n].tolist(), probs[pp, value - 10, n_dice, :n],
                               strict=True))
                assert got.keys() == expected.keys()
                assert all(got[c] == pytest.approx(expected[c], abs=1e-15) for c in got)
                assert list(probs[pp, value - 10, n_dice, :n]) == sorted(got.values(), reverse=True)
                fewer = {b * 9 + g * 3 + o: p for p, b, g, o in solver._outcomes(pp, value, n_dice - 1)} \
                    if n_dice else None
                same = fewer is not None and fewer.keys() == expected.keys() and all(
                    abs(fewer[c] - expected[c]) < 1e-9 for c in fewer)
                assert (counts[pp, value - 10, n_dice] < 0) == same


def test_solver_does_not_change_the_state_it_is_given():
    game = CoopGame()
    state = late_state(game, 7, cards_left=5, support=2)
    before = state.key()
    DeckClairvoyantSolver(game, backend="python").value(state)
    assert state.key() == before


def test_lucky_value_is_at_least_the_expected_value_and_is_zero_or_one():
    game = CoopGame()
    for seed in range(4):
        state = late_state(game, 200 + seed, cards_left=6, support=2)
        expect = DeckClairvoyantSolver(game, backend="python").value(state)
        lucky = DeckClairvoyantSolver(game, "lucky", backend="python").value(state)
        assert lucky in (0.0, 1.0)
        assert lucky >= expect - 1e-12
        assert (expect > 0) == (lucky == 1.0)


# ---------------------------------------------------------------------------------------- policies


def _heuristic_policy():
    heuristic = CoopHeuristic()
    return heuristic.choose_state


@pytest.mark.parametrize("seed", range(4))
def test_heuristic_exact_value_is_at_most_the_bound_on_late_states(seed):
    game = CoopGame()
    state = late_state(game, 300 + seed, cards_left=6, support=3)
    heuristic = policy_value(game, state, _heuristic_policy(), memo={})
    assert heuristic <= DeckClairvoyantSolver(game, backend="python").value(state) + 1e-12


def test_policy_value_memo_does_not_change_the_value():
    game = CoopGame()
    state = late_state(game, 400, cards_left=5, support=2)
    policy = _heuristic_policy()
    plain = policy_value(game, state, policy)
    assert policy_value(game, state, policy, memo={}) == pytest.approx(plain, abs=1e-12)


def test_policy_value_agrees_with_playing_the_heuristic_with_real_dice():
    game = CoopGame()
    state = late_state(game, 500, cards_left=8, support=4)
    policy = _heuristic_policy()
    exact = policy_value(game, state, policy, memo={})
    rng = np.random.default_rng(0)
    games = 3000
    wins = 0
    for _ in range(games):
        play = state.copy()
        while not play.terminated:
            game.step(play, policy(game, play), rng)
        wins += play.won
    sigma = max(np.sqrt(exact * (1 - exact) / games), 1e-3)
    assert abs(wins / games - exact) < 5 * sigma


@pytest.mark.slow
def test_heuristic_exact_value_is_at_most_the_bound_on_whole_deals():
    game = CoopGame()
    solver = DeckClairvoyantSolver(game)
    policy = _heuristic_policy()
    for seed in (1,):  # a whole deal costs seconds to a minute; deal 1 is one of the cheap ones
        orders = deal_orders(seed)
        bound = solver.solve(*orders)
        heuristic = policy_value(game, game.new_state(*orders), policy, memo={})
        assert 0.0 <= heuristic <= bound + 1e-12 <= 1.0 + 1e-12


def test_policy_value_rejects_an_illegal_choice():
    game = CoopGame()
    state = game.new_state(*deal_orders(0))
    with pytest.raises(ValueError, match="illegal action"):
        policy_value(game, state, lambda g, s: 60)


# ---------------------------------------------------------------------------------------- input checks


def test_solver_rejects_an_unknown_mode_and_a_state_inside_an_action():
    game = CoopGame()
    with pytest.raises(ValueError, match="mode"):
        DeckClairvoyantSolver(game, "optimistic")
    with pytest.raises(ValueError, match="mode"):
        engine_value(game, game.new_state(*deal_orders(0)), "optimistic")
    state = game.new_state(*deal_orders(0))
    state.phase = 1
    with pytest.raises(ValueError, match="MAIN phase"):
        DeckClairvoyantSolver(game).value(state)


@pytest.mark.parametrize(("backend", "num_players"), [
    ("python", 1), ("python", 3), *(pytest.param("numba", n, marks=pytest.mark.slow) for n in (1, 3))])
def test_solver_memo_limit_raises_memory_error(backend, num_players):
    if backend == "numba":
        pytest.importorskip("numba")
    game = CoopGame(num_players)
    with pytest.raises(MemoryError, match="memo"):
        DeckClairvoyantSolver(game, max_states=10, backend=backend).solve(*deal_orders(0, num_players))


def test_finished_game_has_value_one_for_a_win_and_zero_for_a_loss():
    game = CoopGame()
    state = game.new_state(*deal_orders(0))
    state.terminated, state.won, state.reason = True, True, "graveyard"
    assert DeckClairvoyantSolver(game).value(state) == 1.0
    state.won, state.reason = False, "marker"
    assert DeckClairvoyantSolver(game).value(state) == 0.0


# ---------------------------------------------------------------------------------------- the command line


def _progress_line(deal: int, bound: float, heuristic: float | None = None, mode: str = "expect") -> str:
    row = {"deal": deal, "bound": bound, "bound_states": 10, "bound_seconds": 1.0,
           "config": {"players": 1, "mode": mode, "heuristic": heuristic is not None}}
    if heuristic is not None:
        row["heuristic"] = heuristic
    return json.dumps(row)


def _evaluation(agent: str, wins: dict[int, bool], env_id: str = "thermopylae/Coop-v0") -> EvalResult:
    records = [GameResult(seed=s, won=w, turns=1, steps=1) for s, w in sorted(wins.items())]
    n_won = sum(wins.values())
    return EvalResult(env_id, agent, len(records), n_won, n_won / len(records), (0.0, 1.0), 1.0, 1.0, 0.0,
                      0.0, 0, 0, records=records)


def test_merge_rows_joins_progress_files_and_keeps_the_heuristic_row(tmp_path):
    first = tmp_path / "a.jsonl"
    second = tmp_path / "b.jsonl"
    first.write_text("\n".join([_progress_line(0, 0.5, 0.2), _progress_line(1, 0.25),
                                _progress_line(1, 1.0, mode="lucky")]) + "\n")
    second.write_text("\n".join([_progress_line(0, 0.5), _progress_line(2, 0.75)]) + "\n")
    merged = merge_rows([first, second], players=1, mode="expect")
    assert sorted(merged) == [0, 1, 2]
    assert merged[0]["heuristic"] == 0.2 and merged[1]["bound"] == 0.25
    second.write_text(_progress_line(1, 0.3) + "\n")
    with pytest.raises(ValueError, match="two different bounds"):
        merge_rows([first, second], players=1, mode="expect")
    second.write_text("not json\n")
    with pytest.raises(ValueError, match="b.jsonl:1"):
        merge_rows([second], players=1, mode="expect")


def test_paired_gaps_pair_each_game_with_the_bound_of_its_deal():
    bounds = {0: 0.5, 1: 0.25, 2: 1.0}
    document = results_json([_evaluation("heuristic", {0: True, 1: False, 2: True, 3: True})], "t")
    (gap,) = paired_gaps(bounds, document)
    assert gap["agent"] == "heuristic" and gap["deals"] == 3  # game 3 has no bound
    assert gap["gap"] == mean_interval([0.5 - 1, 0.25 - 0, 1.0 - 1])
    assert gap["win_rate"]["mean"] == pytest.approx(2 / 3)
    assert gap["bound"]["mean"] == pytest.approx(1.75 / 3)
    with pytest.raises(ValueError, match="no game"):
        paired_gaps({9: 0.5}, document)
    with pytest.raises(ValueError, match="not the co-op"):
        paired_gaps(bounds, results_json([_evaluation("x", {0: True}, "thermopylae/Duel-v0")], "t"))


def test_paired_gaps_pool_an_agents_games_of_several_evaluations_by_deal():
    bounds = {0: 0.5, 1: 0.25, 2: 1.0}
    first = results_json([_evaluation("search", {0: True, 1: False})], "t")
    second = results_json([_evaluation("search", {1: False, 2: False})], "t")
    (gap,) = paired_gaps(bounds, [first, second])
    assert gap["deals"] == 3 and gap["gap"] == mean_interval([0.5 - 1, 0.25 - 0, 1.0 - 0])
    clash = results_json([_evaluation("search", {1: True})], "t")
    with pytest.raises(ValueError, match="deal 1 was played twice with different outcomes"):
        paired_gaps(bounds, [first, clash])


def test_command_line_merges_and_reports_the_gaps_without_solving(tmp_path, capsys):
    progress = tmp_path / "a.jsonl"
    progress.write_text("\n".join([_progress_line(0, 0.5, 0.25), _progress_line(1, 0.25)]) + "\n")
    evaluation = tmp_path / "eval.json"
    evaluation.write_text(json.dumps(results_json([_evaluation("ppo", {0: True, 1: False})], "t")))
    out = tmp_path / "bound.json"
    assert bound_main(["--merge", str(progress), "--gaps", str(evaluation), "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["deals_done"] == 2 and summary["bound"]["mean"] == pytest.approx(0.375)
    assert summary["heuristic_deals"] == [0] and summary["heuristic"]["mean"] == 0.25
    assert summary["gaps"][0]["gap"]["mean"] == pytest.approx(((0.5 - 1) + 0.25) / 2)
    assert "gap bound - ppo (paired)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bound_main(["--merge", str(tmp_path / "missing.jsonl"), "--out", str(out)])


def test_add_heuristic_computes_the_missing_exact_values_of_merged_deals(tmp_path):
    game = CoopGame()
    bound = _recorded_bound(1)["bound"]  # the slow run holds the kernel to it
    progress = tmp_path / "a.jsonl"
    progress.write_text(_progress_line(1, bound) + "\n")
    added = tmp_path / "h.jsonl"
    out = tmp_path / "bound.json"
    assert bound_main(["--merge", str(progress), "--add-heuristic", str(added), "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in added.read_text().splitlines()]
    expected = policy_value(game, game.new_state(*deal_orders(1)), _heuristic_policy(), memo={})
    assert row["deal"] == 1 and row["heuristic"] == pytest.approx(expected, abs=1e-12)
    assert json.loads(out.read_text())["heuristic"]["mean"] == pytest.approx(expected, abs=1e-12)
    merged = merge_rows([progress, added], players=1, mode="expect")
    assert merged[1]["heuristic"] == row["heuristic"]
    with pytest.raises(SystemExit):
        bound_main(["--add-heuristic", str(added), "--out", str(out)])
