"""Evaluation with the core package alone: McNemar's exact p without scipy, tables without rich."""

from __future__ import annotations

import sys

import pytest

from thermopylae_agents.evaluation.games import evaluate
from thermopylae_agents.evaluation.stats import mcnemar_exact
from thermopylae_agents.evaluation.tables import print_table

COUNTS = [(0, 1), (1, 1), (3, 10), (10, 3), (0, 20), (5, 5), (400, 523), (2000, 2100)]


@pytest.mark.parametrize(("only_a", "only_b"), COUNTS)
def test_mcnemar_without_scipy_is_scipys_exact_p(only_a, only_b, monkeypatch):
    pytest.importorskip("scipy.stats")
    with_scipy = mcnemar_exact(only_a, only_b)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    assert mcnemar_exact(only_a, only_b) == pytest.approx(with_scipy, rel=1e-12, abs=0)


def test_the_tables_print_as_plain_text_without_rich(monkeypatch, capsys):
    results = evaluate("thermopylae/Coop-v0", ["coop_maskable_ppo", "heuristic"], games=3)
    monkeypatch.setitem(sys.modules, "rich", None)
    monkeypatch.setitem(sys.modules, "rich.table", None)
    print_table(results, "three deals")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "three deals" and lines[1].split()[:3] == ["agent", "games", "wins"]
    rows = {line.split()[0]: line.split() for line in lines[3:5]}
    for result in results:
        assert rows[result.agent][1:3] == [str(result.games), str(result.wins)]
    assert lines[5].startswith("paired comparisons") and lines[8].split()[:2] == ["coop_maskable_ppo",
                                                                                 "heuristic"]
