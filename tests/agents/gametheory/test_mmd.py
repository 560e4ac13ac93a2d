"""Tabular magnetic mirror descent (``thermopylae_agents.gametheory.mmd``) on the solved small duels: the
exact exploitability of its last iterate falls toward 0."""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_agents.gametheory.cfr import Evaluator, nash_conv, solve, uniform_profile
from thermopylae_agents.gametheory.mmd import mmd
from thermopylae_agents.gametheory.tree import build_tree
from thermopylae_env.duel.config import SMALL_DUELS

# Compiles its own kernels or trains: CI's slow step runs it (the default run stays short).
pytestmark = pytest.mark.slow

# NashConv bounds after a fixed number of iterations, with the default alpha, eta and magnet period.
BOUNDS = {"tiny": (12, 1e-3), "small": (24, 1e-3)}


@pytest.fixture(scope="module", params=sorted(BOUNDS))
def member(request):
    tree = build_tree(SMALL_DUELS[request.param])
    return request.param, tree, Evaluator(tree)


def test_mmd_exploitability_falls_below_the_bound_and_decreases(member):
    name, tree, ev = member
    iterations, bound = BOUNDS[name]
    start = nash_conv(ev, uniform_profile(tree)).nash_conv
    result = mmd(tree, tolerance=0.0, max_iterations=iterations, check_every=4, evaluator=ev)
    curve = [start] + [conv for _, conv in result.history]
    assert result.check.nash_conv <= bound
    assert all(later < earlier for earlier, later in zip(curve[:-1], curve[1:], strict=True))
    assert nash_conv(ev, result.profile).nash_conv == pytest.approx(result.check.nash_conv)


@pytest.mark.parametrize("name", ["tiny", pytest.param("small", marks=pytest.mark.slow)])
def test_mmd_plays_a_behaviour_strategy_with_the_cfr_game_value(name):
    tree = build_tree(SMALL_DUELS[name])
    ev = Evaluator(tree)
    result = mmd(tree, tolerance=1e-4, max_iterations=200, check_every=4, evaluator=ev)
    assert np.allclose(np.add.reduceat(result.profile, tree.info_start), 1.0)
    cfr = solve(tree, tolerance=1e-3, evaluator=ev).check
    assert cfr.persian_br - 1e-4 <= result.check.value <= cfr.greek_br + 1e-4


def test_mmd_refuses_a_non_positive_temperature():
    tree = build_tree(SMALL_DUELS["tiny"])
    with pytest.raises(ValueError, match="alpha and eta must be positive"):
        mmd(tree, alpha=0.0)
