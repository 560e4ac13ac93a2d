"""The compiled team kernel (2 to 4 seats) of the deck-clairvoyant solver against the pure-Python solver."""

from __future__ import annotations

import numpy as np
import pytest
from test_coop_bound import late_state  # this folder is on the path (pytest prepend imports)

from thermopylae_agents.evaluation.coop_bound import DeckClairvoyantSolver, deal_orders
from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.rules import CoopGame

# Compiles its own kernels or trains: CI's slow step runs it (the default run stays short).
pytestmark = pytest.mark.slow

pytest.importorskip("numba")


def _both_backends(game: CoopGame, state, mode: str) -> tuple[float, float]:
    reference = DeckClairvoyantSolver(game, mode, backend="python").value(state)
    return reference, DeckClairvoyantSolver(game, mode, backend="numba").value(state)


# Mid-game states with 9 Spartan cards left in the deck and hands, up to 3 support cards, every seat to
# act somewhere among them; the Python solver takes under a second on each.
@pytest.mark.parametrize("num_players,seed", [
    (2, 602), (2, 608), (2, 611), (3, 601), (3, 603), (3, 605), (4, 602), (4, 603), (4, 608), (4, 609),
])
def test_team_kernel_equals_the_python_solver_on_mid_game_states(num_players, seed):
    game = CoopGame(num_players)
    state = late_state(game, seed, cards_left=9, support=3)
    for mode in ("expect", "lucky"):
        reference, got = _both_backends(game, state, mode)
        assert got == pytest.approx(reference, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("num_players,seed", [(2, 601), (2, 603), (3, 610)])
def test_team_kernel_equals_the_python_solver_on_bigger_states(num_players, seed):
    """Hundreds of thousands of states each: about 20 to 50 s of the Python solver."""
    game = CoopGame(num_players)
    state = late_state(game, seed, cards_left=9, support=3)
    reference, got = _both_backends(game, state, "expect")
    assert got == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_team_offer_answers_are_the_python_solvers(num_players):
    """Every (deck position, hands) after one or two offers: decline, or give to any seat (a full hand then
    discards any value); the kernel lists each once, the same set as the Python solver."""
    from thermopylae_agents.evaluation import _coop_bound_kernel as kernel
    from thermopylae_agents.evaluation import _coop_bound_team_kernel as team

    game = CoopGame(num_players)
    solver = DeckClairvoyantSolver(game, backend="python")
    sizes = kernel.hand_info()
    rng = np.random.default_rng(num_players)
    for trial in range(6):
        state = late_state(game, 40 + trial, cards_left=int(rng.integers(6, 14)), support=4)
        solver._load(state.spartan_order, state.persian_order)
        hands = tuple(tuple(sorted(game.spartan[c] for c in hand)) for hand in state.hands)
        codes = [sum(int(kernel.POW3[v - 10]) for v in hand) for hand in hands]
        codes += [0] * (team.MAX_SEATS - num_players)
        for count in (1, 2):
            out_sp, out_hands, tmp_sp, tmp_hands = (a[0] for a in team.new_scratch()[:4])
            n = team._offer_results(state.spartan_pos, *codes, count, num_players,
                                    np.asarray(solver._sv, dtype=np.int64), sizes, out_sp, out_hands, tmp_sp,
                                    tmp_hands)
            got = [(int(out_sp[i]), tuple(_values(int(out_hands[i, j])) for j in range(num_players)))
                   for i in range(n)]
            assert len(got) == len(set(got))
            assert set(got) == solver._offer_results(state.spartan_pos, hands, count)


def _values(code: int) -> tuple[int, ...]:
    values = []
    for digit in range(11):
        values += [10 + digit] * (code % 3)
        code //= 3
    return tuple(values)


def test_team_kernel_value_does_not_depend_on_which_seat_numbers_the_hands_carry():
    """The rules treat the seats alike: rotating the hands and the acting seat together keeps the value."""
    game = CoopGame(3)
    state = late_state(game, 605, cards_left=9, support=3)
    value = DeckClairvoyantSolver(game).value(state)
    rotated = state.copy()
    rotated.hands = state.hands[1:] + state.hands[:1]
    rotated.current_player = (state.current_player - 1) % 3
    assert DeckClairvoyantSolver(game).value(rotated) == pytest.approx(value, abs=1e-12)


def test_team_solver_records_its_states_and_lookups():
    game = CoopGame(2)
    solver = DeckClairvoyantSolver(game)
    assert solver.backend == "numba"
    solver.value(late_state(game, 608, cards_left=9, support=3))
    assert solver.stats.states > 0 and solver.stats.lookups > 0


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_team_deals_are_the_deals_the_evaluation_plays(num_players):
    game = CoopGame(num_players)
    for seed in (0, 7):
        env = CoopEnv(num_players=num_players)
        obs, _ = env.reset(seed=seed)
        state = game.new_state(*deal_orders(seed, num_players))
        assert np.array_equal(game.observe(state), obs)
        assert state.key() == env.state.key()


def test_command_line_stops_at_a_full_memo_naming_the_deal_and_keeping_the_deals_before(tmp_path, capsys):
    from thermopylae_agents.cli.bound import main as bound_main

    out = tmp_path / "bound.json"
    with pytest.raises(SystemExit) as stopped:
        bound_main(["--players", "3", "--deals", "2", "--no-heuristic", "--max-states", "10",
                    "--out", str(out)])
    assert stopped.value.code == 1
    error = capsys.readouterr().err
    assert "deal 0:" in error and "memo" in error and "--resume" in error
    assert not out.exists() and not out.with_suffix(".jsonl").exists()
