"""Evaluation: paired seeded games, Wilson intervals, duel cross-play, output files, learning curves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from thermopylae_agents.evaluation import (
    COOP_ID,
    GREEK_ID,
    evaluate,
    evaluate_duel_matrix,
    load_learning_curve,
    main,
    make_agent,
    play_games,
    resolve_env_id,
)
from thermopylae_agents.stats import wilson_interval

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
POLICIES = Path(__file__).resolve().parents[1] / "agents" / "thermopylae_agents" / "policies"


# --------------------------------------------------------------------------------------------- Wilson
def test_wilson_interval_known_values():
    z2 = 1.959963984540054**2
    # Closed forms at the edges: 0 of n -> [0, z^2 / (n + z^2)], n of n -> [n / (n + z^2), 1].
    assert wilson_interval(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert wilson_interval(10, 10) == pytest.approx((10 / (10 + z2), 1.0))
    assert wilson_interval(0, 10)[1] == pytest.approx(0.27753, abs=1e-5)
    assert wilson_interval(0, 20_000)[0] == 0.0 and wilson_interval(20_000, 20_000)[1] == 1.0  # exact edges
    # Textbook values (Newcombe 1998, method 3): 5/10 and 81/263.
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(2500, 10_000)
    normal_width = 2 * 1.96 * np.sqrt(0.25 * 0.75 / 10_000)  # the normal approximation, fine at n = 10^4
    assert low < 0.25 < high and high - low == pytest.approx(normal_width, rel=1e-2)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


# ----------------------------------------------------------------------------------- paired, seeded
def test_same_seed_gives_identical_numbers():
    first = evaluate(COOP_ID, ["random", "heuristic"], games=40, base_seed=7)
    second = evaluate(COOP_ID, ["random", "heuristic"], games=40, base_seed=7)
    for a, b in zip(first, second, strict=True):
        assert a.records == b.records
        assert (a.wins, a.win_rate, a.ci95, a.mean_turns, a.mean_steps) == (
            b.wins, b.win_rate, b.ci95, b.mean_turns, b.mean_steps)
    other = evaluate(COOP_ID, ["random"], games=40, base_seed=8)[0]
    assert [r.seed for r in other.records] == list(range(8, 48))
    assert other.records != first[0].records


def test_games_are_paired_and_independent_of_the_worker_split():
    one = play_games(COOP_ID, "random", 24, base_seed=100, workers=1)
    two = play_games(COOP_ID, "random", 24, base_seed=100, workers=2)
    assert one == two
    assert [r.seed for r in one] == list(range(100, 124))
    # Split over runs: games 100..111 and 112..123 are the games of the whole run.
    assert play_games(COOP_ID, "random", 12, base_seed=100) + play_games(COOP_ID, "random", 12, 112) == one
    # Every agent gets the same deal for game i: the observation after reset depends on the seed only.
    import gymnasium as gym

    env = gym.make(COOP_ID)
    first, _ = env.reset(seed=100)
    again, _ = env.reset(seed=100)
    assert np.array_equal(first, again)


def test_the_agents_own_randomness_is_seeded_separately():
    base = play_games(COOP_ID, "random", 20, base_seed=0, agent_seed=1)
    assert base == play_games(COOP_ID, "random", 20, base_seed=0, agent_seed=1)
    assert base != play_games(COOP_ID, "random", 20, base_seed=0, agent_seed=2)
    assert [r.seed for r in base] == list(range(20))


def test_heuristic_search_and_model_specs(tmp_path):
    agent, label = make_agent("search:3,2", COOP_ID, seed=0)
    assert (agent.n_determinizations, agent.rollouts, label) == (3, 2, "search:3,2")
    agent, _ = make_agent("search:n_determinizations=2,rollouts=1,max_candidates=3", "coop")
    assert (agent.n_determinizations, agent.rollouts, agent.max_candidates) == (2, 1, 3)
    with pytest.raises(ValueError, match="co-op"):
        make_agent("search", "duel")
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("nonsense", "coop")
    with pytest.raises(ValueError, match="not found"):
        make_agent(str(tmp_path / "missing.zip"), "coop")
    with pytest.raises(ValueError, match="unknown environment"):
        resolve_env_id("chess")
    result = evaluate(COOP_ID, ["search:2,1"], games=2, base_seed=3)[0]
    assert result.games == 2 and result.agent == "search:2,1"
    # The co-op players learn the game (players, deck) from the env's settings.
    agent, _ = make_agent("search:2,1", COOP_ID, env_kwargs={"num_players": 3})
    assert agent.game.num_players == 3
    three = evaluate(COOP_ID, ["heuristic", "search:2,1"], games=2, env_kwargs={"num_players": 3})
    assert [r.games for r in three] == [2, 2]


def test_duel_cross_play_matrix():
    results = evaluate_duel_matrix(["heuristic", "random"], ["heuristic", "random"], games=6, base_seed=1)
    assert [(r.agent, r.opponent) for r in results] == [
        ("heuristic", "heuristic"), ("random", "heuristic"), ("heuristic", "random"), ("random", "random"),
    ]
    assert all(r.env_id == GREEK_ID and r.games == 6 and r.mean_turns > 0 for r in results)
    again = evaluate_duel_matrix(["heuristic", "random"], ["heuristic", "random"], games=6, base_seed=1)
    assert [r.records for r in results] == [r.records for r in again]


def test_fast_spec_plays_the_same_games_as_the_model_itself():
    pytest.importorskip("sb3_contrib")
    greek = str(POLICIES / "duel_greek_maskable_ppo.zip")
    persian = str(POLICIES / "duel_persian_maskable_ppo.zip")
    slow = evaluate_duel_matrix([greek], [persian, "heuristic"], games=12, base_seed=5)
    fast = evaluate_duel_matrix([f"fast:{greek}"], [f"fast:{persian}", "heuristic"], games=12, base_seed=5)
    assert [r.records for r in fast] == [r.records for r in slow]
    coop = str(POLICIES / "coop_maskable_ppo.zip")
    fast_coop, slow_coop = evaluate(COOP_ID, [f"fast:{coop}", coop], games=8)
    assert fast_coop.records == slow_coop.records
    with pytest.raises(ValueError, match="fast: needs the path"):
        make_agent("fast:heuristic", "coop")


# ----------------------------------------------------------------------------------- command line
def test_command_line_writes_table_json_and_plot(tmp_path, capsys):
    out_json = tmp_path / "result.json"
    out_png = tmp_path / "result.png"
    assert main(["random", "heuristic", "--games", "20", "--seed", "3", "--json", str(out_json),
                 "--plot", str(out_png), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "heuristic" in printed and "95% interval" in printed
    data = json.loads(out_json.read_text())
    assert [r["agent"] for r in data["results"]] == ["random", "heuristic"]
    for r in data["results"]:
        assert r["games"] == 20 and r["base_seed"] == 3
        assert r["ci95"] == pytest.approx(list(wilson_interval(r["wins"], 20)))
    assert out_png.read_bytes()[:8] == PNG_MAGIC
    # The same command again gives the same numbers.
    out_again = tmp_path / "again.json"
    main(["random", "heuristic", "--games", "20", "--seed", "3", "--json", str(out_again), "--no-progress"])
    strip = [{k: v for k, v in r.items() if not k.startswith("seconds")} for r in data["results"]]
    again = [{k: v for k, v in r.items() if not k.startswith("seconds")}
             for r in json.loads(out_again.read_text())["results"]]
    assert strip == again


def test_command_line_duel(tmp_path, capsys):
    out_json = tmp_path / "duel.json"
    main(["--env", "duel", "--greek", "heuristic", "random", "--persian", "heuristic", "--games", "4",
          "--json", str(out_json), "--no-progress"])
    data = json.loads(out_json.read_text())
    assert [(r["agent"], r["opponent"]) for r in data["results"]] == [
        ("heuristic", "heuristic"), ("random", "heuristic")]
    assert "Persian" in capsys.readouterr().out


# --------------------------------------------------------------------------------- learning curves
def test_learning_curve_from_evaluations_npz(tmp_path):
    timesteps = np.array([1000, 2000, 3000])
    successes = np.array([[0, 0, 1, 0], [1, 0, 1, 0], [1, 1, 1, 0]], dtype=float)
    results = np.where(successes > 0, 1.0, -1.0)
    np.savez(tmp_path / "evaluations.npz", timesteps=timesteps, results=results,
             ep_lengths=np.full((3, 4), 20), successes=successes)
    curve = load_learning_curve(tmp_path)
    assert curve["timesteps"].tolist() == [1000, 2000, 3000]
    assert curve["success_rate"].tolist() == [0.25, 0.5, 0.75]
    assert curve["mean_reward"].tolist() == [-0.5, 0.0, 0.5]
    assert curve["ci_low"][2] == pytest.approx(wilson_interval(3, 4)[0])
    out = tmp_path / "curve.png"
    assert main(["--curve", str(tmp_path), "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    # Also found under eval/, as the training script writes it.
    (tmp_path / "run" / "eval").mkdir(parents=True)
    (tmp_path / "evaluations.npz").rename(tmp_path / "run" / "eval" / "evaluations.npz")
    assert load_learning_curve(tmp_path / "run")["success_rate"].tolist() == [0.25, 0.5, 0.75]


def test_learning_curve_from_progress_csv_and_missing_logs(tmp_path):
    (tmp_path / "progress.csv").write_text(
        "time/total_timesteps,eval/mean_reward,eval/success_rate,train/loss\n"
        "100,,,0.5\n200,-0.5,0.25,0.4\n300,0.0,0.5,0.3\n"
    )
    curve = load_learning_curve(tmp_path)
    assert curve["timesteps"].tolist() == [200, 300]
    assert curve["success_rate"].tolist() == [0.25, 0.5]
    with pytest.raises(ValueError, match="no evaluations.npz"):
        load_learning_curve(tmp_path / "empty")
