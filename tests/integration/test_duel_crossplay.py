"""The cross-play matrix on the native engine (benchmarks/duel_crossplay.py,
thermopylae_agents.evaluation.duel_batch):
the same deals for every pairing, game for game the single env's games, and the evaluation JSON form."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from thermopylae_agents.evaluation.duel_batch import (
    HeuristicPlayer,
    PolicyPlayer,
    RandomPlayer,
    batched_player,
    play_native,
)

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "agents" / "thermopylae_agents" / "policies"
SCRIPT = ROOT / "benchmarks" / "duel_crossplay.py"


def crossplay(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_game_i_depends_only_on_its_seed() -> None:
    whole = play_native(HeuristicPlayer(), HeuristicPlayer(), 40, seed=0)
    part = play_native(HeuristicPlayer(), HeuristicPlayer(), 12, seed=20)
    assert (part.greek_won == whole.greek_won[20:32]).all() and (part.turns == whole.turns[20:32]).all()
    assert (part.chance_bases == whole.chance_bases[20:32]).all()


def test_every_game_is_counted_once_with_both_sides_moves() -> None:
    games = play_native(RandomPlayer(1), HeuristicPlayer(), 50, seed=3)
    assert games.games == 50 and (games.steps > 0).all() and (games.turns >= 1).all()
    assert not games.greek_won.any()  # a random Greek never beats the heuristic Persian in 50 games


def test_a_player_that_cannot_be_batched_is_refused_by_name() -> None:
    class OneAtATime:
        def act(self, observation: np.ndarray, mask: np.ndarray) -> int:
            return int(np.argmax(mask))

    with pytest.raises(ValueError, match="cannot be batched"):
        PolicyPlayer(OneAtATime(), "one-at-a-time")
    with pytest.raises(ValueError, match="side"):
        batched_player("heuristic", 2)


def test_an_illegal_batched_move_is_an_error_naming_the_game() -> None:
    class Illegal:
        def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
            return (~masks).argmax(axis=1)

    with pytest.raises(RuntimeError, match="illegal"):
        play_native(PolicyPlayer(Illegal(), "illegal"), HeuristicPlayer(), 8, seed=0)


@pytest.mark.slow
def test_cross_play_matches_the_single_env_and_writes_the_evaluation_json(tmp_path: Path) -> None:
    for name in ("duel_greek_maskable_ppo", "duel_persian_maskable_ppo"):
        if not (POLICIES / f"{name}.json").is_file():
            pytest.skip(f"shipped duel policy {name} not present")
    out, md, png = tmp_path / "eval.json", tmp_path / "eval.md", tmp_path / "eval.png"
    greeks = ["random", "heuristic", "duel_greek_maskable_ppo"]
    persians = ["heuristic", "duel_persian_maskable_ppo"]
    run = crossplay("--greek", *greeks, "--persian", *persians, "--games", "30", "--check-games", "8",
                    "--json", str(out), "--markdown", str(md), "--plot", str(png), cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert [(r["agent"], r["opponent"]) for r in doc["results"]] == [(g, p) for p in persians for g in greeks]
    for r in doc["results"]:
        assert r["games"] == 30 and r["win_rate"] == pytest.approx(r["wins"] / 30)
        assert r["ci95"][0] <= r["win_rate"] <= r["ci95"][1]
    checks = doc["single_env_check"]
    assert len(checks) == 6 and all(c["agree"] for c in checks)
    assert sum(c.get("identical_games", 0) for c in checks) == 4 * 8  # the pairings without a random player
    text = md.read_text()
    assert text in run.stdout
    assert "| Greek \\ Persian | heuristic | duel_persian_maskable_ppo |" in text
    assert "Greek `duel_greek_maskable_ppo` against the heuristic Persian" in text
    assert "Persian `duel_persian_maskable_ppo` against the heuristic Greek" in text
    assert png.stat().st_size > 0

    # Every paired comparison counts the same 30 deals as the matrix: for the Greeks, wins against one
    # Persian; for the Persians, wins against one Greek.
    greek_wins = {(r["agent"], r["opponent"]): r["wins"] for r in doc["results"]}
    persian_pairs = [c for c in doc["paired"] if c["rates_of"] == "persian"]
    assert {(c["a"], c["b"], c["opponent"]) for c in persian_pairs} == {
        ("heuristic", "duel_persian_maskable_ppo", g) for g in greeks}
    for c in doc["paired"]:
        if c["rates_of"] == "greek":
            wins_a, wins_b = greek_wins[c["a"], c["opponent"]], greek_wins[c["b"], c["opponent"]]
        else:
            wins_a, wins_b = (30 - greek_wins[c["opponent"], c["a"]], 30 - greek_wins[c["opponent"], c["b"]])
        assert c["games"] == 30 and (c["both"] + c["only_a"], c["both"] + c["only_b"]) == (wins_a, wins_b), c
        assert c["difference"] == pytest.approx((wins_a - wins_b) / 30)

    from thermopylae_agents.cli.evaluate import main as evaluate_main

    assert evaluate_main(["--replot", str(out), "--plot", str(tmp_path / "again.png")]) == 0


def test_cross_play_refuses_bad_counts_with_one_line(tmp_path: Path) -> None:
    for args in (["--games", "0"], ["--check-games", "-1"]):
        run = crossplay(*args, cwd=tmp_path)
        assert run.returncode == 2 and "--games must be at least 1" in run.stderr.splitlines()[-1], args
