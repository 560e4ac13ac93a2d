"""The cross-play matrix on the native engine (scripts/duel_crossplay.py,
thermopylae_agents.evaluation.duel_batch):
the same deals for every pairing, game for game the single env's games, and the evaluation JSON form."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import load_script

from thermopylae_agents.evaluation.duel_batch import (
    HeuristicPlayer,
    PolicyPlayer,
    RandomPlayer,
    batched_player,
    play_native,
)
from thermopylae_env.duel import PERSIAN

POLICIES = Path(__file__).resolve().parents[1] / "agents" / "thermopylae_agents" / "policies"


@pytest.fixture(scope="module")
def crossplay():
    return load_script("duel_crossplay")


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


def test_cross_play_matches_the_single_env_and_writes_the_evaluation_json(crossplay, tmp_path: Path) -> None:
    for name in ("duel_greek_maskable_ppo", "duel_persian_maskable_ppo"):
        if not (POLICIES / f"{name}.json").is_file():
            pytest.skip(f"shipped duel policy {name} not present")
    out, md, png = tmp_path / "eval.json", tmp_path / "eval.md", tmp_path / "eval.png"
    greeks = ["random", "heuristic", "duel_greek_maskable_ppo"]
    persians = ["heuristic", "duel_persian_maskable_ppo"]
    assert crossplay.main(["--greek", *greeks, "--persian", *persians, "--games", "30", "--check-games", "8",
                           "--json", str(out), "--markdown", str(md), "--plot", str(png)]) == 0
    doc = json.loads(out.read_text())
    assert [(r["agent"], r["opponent"]) for r in doc["results"]] == [(g, p) for p in persians for g in greeks]
    for r in doc["results"]:
        assert r["games"] == 30 and r["win_rate"] == pytest.approx(r["wins"] / 30)
        assert r["ci95"][0] <= r["win_rate"] <= r["ci95"][1]
    checks = doc["single_env_check"]
    assert len(checks) == 6 and all(c["agree"] for c in checks)
    assert sum(c.get("identical_games", 0) for c in checks) == 4 * 8  # the pairings without a random player
    text = md.read_text()
    assert "| Greek \\ Persian | heuristic | duel_persian_maskable_ppo |" in text
    assert "Greek `duel_greek_maskable_ppo` against the heuristic Persian" in text
    assert "Persian `duel_persian_maskable_ppo` against the heuristic Greek" in text
    assert png.stat().st_size > 0

    from thermopylae_agents.cli.evaluate import main as evaluate_main

    assert evaluate_main(["--replot", str(out), "--plot", str(tmp_path / "again.png")]) == 0


def test_the_paired_persian_comparison_counts_the_same_deals(crossplay) -> None:
    played = {("heuristic", p): play_native(HeuristicPlayer(), batched_player(p, PERSIAN), 40, seed=0)
              for p in ("random", "heuristic")}
    (c,) = crossplay.persian_comparisons(played, ["heuristic"], ["random", "heuristic"])
    random_wins = ~played["heuristic", "random"].greek_won
    heuristic_wins = ~played["heuristic", "heuristic"].greek_won
    assert c["only_b"] == int((heuristic_wins & ~random_wins).sum()) and c["games"] == 40
    assert c["difference"] == pytest.approx(random_wins.mean() - heuristic_wins.mean())
