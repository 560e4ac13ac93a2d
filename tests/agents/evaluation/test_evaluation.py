"""Evaluation: paired seeded games, Wilson intervals, duel cross-play, output files, learning curves."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from thermopylae_agents.cli.evaluate import main
from thermopylae_agents.evaluation.games import evaluate, evaluate_duel_matrix, play_games
from thermopylae_agents.evaluation.stats import wilson_interval
from thermopylae_agents.evaluation.tables import load_learning_curve
from thermopylae_agents.policies.registry import make_agent, resolve_env_id
from thermopylae_env import COOP_ID, GREEK_ID

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
POLICIES = Path(__file__).resolve().parents[3] / "agents" / "thermopylae_agents" / "policies"


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



def test_scipy_wilson_interval_equals_the_closed_form_on_many_inputs(monkeypatch):
    pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    cases = [(k, n) for n in range(1, 60) for k in range(n + 1)]
    cases += [(int(rng.integers(0, n + 1)), int(n)) for n in rng.integers(60, 1_000_000, 300)]
    zs = (1.959963984540054, 1.0, 2.5758293035489)
    with_scipy = {(k, n, z): wilson_interval(k, n, z) for z in zs for k, n in cases}
    monkeypatch.setitem(sys.modules, "scipy.stats", None)  # the closed form of the core install
    for (k, n, z), interval in with_scipy.items():
        assert wilson_interval(k, n, z) == pytest.approx(interval, abs=1e-12), (k, n, z)


def test_mcnemar_equals_the_binomial_tail_summed_by_hand_on_many_inputs():
    from math import comb

    from thermopylae_agents.evaluation.stats import mcnemar_exact

    for only_a in range(0, 30):
        for only_b in range(0, 30):
            n, low = only_a + only_b, min(only_a, only_b)
            tail = sum(comb(n, i) for i in range(low + 1)) / 2**n if n else 0.5
            assert mcnemar_exact(only_a, only_b) == pytest.approx(min(1.0, 2 * tail), abs=1e-12)


# ------------------------------------------------------------------------------- multi-seed aggregates
def test_iqm_is_the_mean_of_the_middle_half():
    from thermopylae_agents.evaluation.stats import iqm

    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == pytest.approx(4.5)  # 3, 4, 5, 6
    assert iqm([0.0, 0.5, 0.5, 100.0]) == pytest.approx(0.5)  # one wild seed does not move it
    with pytest.raises(ValueError):
        iqm([])


def test_seed_aggregate_bootstrap_interval_holds_the_estimate_and_is_reproducible():
    from thermopylae_agents.evaluation.stats import seed_aggregate

    scores = [0.41, 0.44, 0.39, 0.47, 0.43]
    agg = seed_aggregate(scores, resamples=2000, seed=3)
    assert agg.runs == 5 and agg.mean == pytest.approx(np.mean(scores))
    assert agg.iqm_ci95[0] <= agg.iqm <= agg.iqm_ci95[1]
    assert agg.mean_ci95[0] <= agg.mean <= agg.mean_ci95[1]
    assert min(scores) <= agg.iqm_ci95[0] and agg.iqm_ci95[1] <= max(scores)
    assert seed_aggregate(scores, resamples=2000, seed=3) == agg  # same bootstrap seed, same interval
    assert seed_aggregate([0.5]).iqm_ci95 is None  # one run: nothing to resample
    assert seed_aggregate([0.5, 0.5, 0.5]).iqm_ci95 == (0.5, 0.5)
    assert agg.summary()["iqm_ci95"] == list(agg.iqm_ci95)


def test_seed_aggregate_resamples_each_task_on_its_own():
    from thermopylae_agents.evaluation.stats import seed_aggregate

    # Two tasks far apart, each tight: a stratified resample always holds six runs of each, so its IQM
    # stays near the pooled 0.5; resampling all twelve runs together would often draw eight of one task
    # and move the IQM to that task's level.
    scores = np.column_stack([np.full(6, 0.2), np.linspace(0.79, 0.81, 6)])
    agg = seed_aggregate(scores, resamples=500)
    assert agg.iqm == pytest.approx(0.5, abs=0.01)
    assert 0.49 < agg.iqm_ci95[0] <= agg.iqm <= agg.iqm_ci95[1] < 0.51
    with pytest.raises(ValueError, match="shape"):
        seed_aggregate(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="finite"):
        seed_aggregate([0.1, float("nan")])

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
    assert main(["random", "heuristic", "--games", "20", "--seed", "3", "--out", str(out_json),
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
    main(["random", "heuristic", "--games", "20", "--seed", "3", "--out", str(out_again), "--no-progress"])
    strip = [{k: v for k, v in r.items() if not k.startswith("seconds")} for r in data["results"]]
    again = [{k: v for k, v in r.items() if not k.startswith("seconds")}
             for r in json.loads(out_again.read_text())["results"]]
    assert strip == again


def test_command_line_duel(tmp_path, capsys):
    out_json = tmp_path / "duel.json"
    main(["--game", "duel", "--greek", "heuristic", "random", "--persian", "heuristic", "--games", "4",
          "--out", str(out_json), "--no-progress"])
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


# ------------------------------------------------------------------------------ paired statistics (#15)
def test_mcnemar_exact_matches_a_worked_example():
    from thermopylae_agents.evaluation.stats import mcnemar_exact

    # 2 of the 10 discordant deals won by A alone: two-sided binomial tail at 1/2,
    # 2 * (C(10,0) + C(10,1) + C(10,2)) / 2**10 = 2 * 56 / 1024.
    assert mcnemar_exact(2, 8) == pytest.approx(112 / 1024, abs=1e-12)
    assert mcnemar_exact(8, 2) == pytest.approx(112 / 1024, abs=1e-12)
    # 0 of 5: 2 * 1 / 32; no discordant deal: nothing to tell the agents apart.
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32, abs=1e-12)
    assert mcnemar_exact(0, 0) == 1.0


def test_paired_difference_interval_matches_a_worked_example():
    from thermopylae_agents.evaluation.stats import paired_difference_interval

    # 20 deals: both won 3, only A 5, only B 1, neither 11. A won 8/20 = 0.4, B 4/20 = 0.2.
    # Worked with a calculator from Newcombe's method 10 (z = 1.95996):
    # Wilson 95%: 8/20 -> [0.218807, 0.613418]; 4/20 -> [0.080658, 0.416017].
    # phi = (3*11 - 5*1) / sqrt(8 * 12 * 4 * 16) = 28 / sqrt(6144) = 0.357217.
    # delta = sqrt(0.181193^2 - 2*0.357217*0.181193*0.216017 + 0.216017^2) = 0.227004 -> low = -0.027004
    # eps = sqrt(0.213418^2 - 2*0.357217*0.213418*0.119342 + 0.119342^2) = 0.203945 -> high = 0.403945
    low, high = paired_difference_interval(3, 5, 1, 11)
    assert low == pytest.approx(-0.027004, abs=2e-6)
    assert high == pytest.approx(0.403945, abs=2e-6)


def test_paired_comparison_counts_the_discordant_deals():
    from thermopylae_agents.evaluation.stats import paired_comparison

    a = [1, 1, 1, 0, 0, 1, 0, 0]
    b = [1, 0, 0, 0, 1, 1, 0, 0]
    c = paired_comparison("a", a, "b", b)
    assert (c.both, c.only_a, c.only_b, c.neither) == (2, 2, 1, 3)
    assert c.difference == pytest.approx(1 / 8)
    assert c.p_value == pytest.approx(1.0)  # 2 against 1: two-sided tail is 1
    assert c.ci95[0] < c.difference < c.ci95[1]
    with pytest.raises(ValueError, match="same deals"):
        paired_comparison("a", a, "b", b[:-1])


def test_command_line_duel_agents_play_the_side_named(tmp_path):
    out_json = tmp_path / "persian.json"
    assert main(["--game", "duel", "--side", "persian", "random", "--games", "4", "--out", str(out_json),
                 "--no-progress"]) == 0
    data = json.loads(out_json.read_text())
    assert [(r["agent"], r["opponent"]) for r in data["results"]] == [("heuristic", "random")]


def test_the_json_keeps_per_game_outcomes_and_the_paired_comparisons(tmp_path):
    out = tmp_path / "eval.json"
    assert main(["random", "h=heuristic", "--games", "12", "--seed", "3", "--out", str(out),
                 "--no-progress"]) == 0
    document = json.loads(out.read_text())
    heuristic = document["results"][1]
    assert heuristic["agent"] == "h"
    assert heuristic["per_game"]["seed"] == list(range(3, 15))
    assert sum(heuristic["per_game"]["won"]) == heuristic["wins"]
    [pair] = document["paired"]
    assert (pair["a"], pair["b"], pair["games"]) == ("random", "h", 12)
    assert pair["only_b"] - pair["only_a"] == heuristic["wins"] - document["results"][0]["wins"]
    assert 0.0 <= pair["p_value"] <= 1.0


def test_duel_pairs_compare_greek_agents_facing_the_same_persian():
    from thermopylae_agents.evaluation.games import paired_comparisons

    results = evaluate_duel_matrix(["heuristic", "random"], ["heuristic", "random"], games=6)
    pairs = paired_comparisons(results)
    assert sorted((p.a, p.b, p.opponent) for p in pairs) == [("heuristic", "random", "heuristic"),
                                                           ("heuristic", "random", "random")]


# -------------------------------------------------------------------- progress, plots, command line (#15)
def test_progress_off_a_terminal_is_one_line_when_a_stage_starts_and_one_when_it_ends():
    import io

    from thermopylae_agents.evaluation.games import progress_bar

    stream = io.StringIO()
    with progress_bar(True, 100, "evaluating heuristic", stream=stream) as advance:
        for _ in range(10):
            advance(10)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "evaluating heuristic: 100 games..."
    assert lines[1].startswith("evaluating heuristic: done in ") and len(lines) == 2
    with progress_bar(False, 100, "silent", stream=stream) as advance:
        assert advance is None


def test_evaluation_stages_name_the_agent_and_the_pairing(capsys):
    evaluate_duel_matrix(["heuristic"], ["random"], games=2, progress=True)
    err = capsys.readouterr().err
    assert "evaluating cross-play pairings 1-1 of 1: heuristic vs random: 2 games..." in err


@pytest.mark.parametrize(("label", "short"), [
    ("fast:agents/thermopylae_agents/policies/duel_greek_maskable_ppo.zip", "fast:duel_greek_maskable_ppo"),
    ("runs/a/final_policy.zip", "final_policy"), ("heuristic", "heuristic"), ("search:16,8", "search:16,8"),
])
def test_plots_show_short_labels(label, short):
    from thermopylae_agents.evaluation.tables import short_label

    assert short_label(label) == short


def test_the_duel_plot_is_a_heatmap_with_the_values_in_the_cells(tmp_path, monkeypatch):
    from thermopylae_agents.evaluation import tables

    texts = []
    results = evaluate_duel_matrix(["heuristic", "random"], ["heuristic", "random"], games=4)
    import matplotlib.axes

    original = matplotlib.axes.Axes.text
    monkeypatch.setattr(matplotlib.axes.Axes, "text",
                        lambda self, x, y, s, *a, **k: texts.append(s) or original(self, x, y, s, *a, **k))
    out = tmp_path / "matrix.png"
    tables.plot_results(results, out)
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert len(texts) == 4
    for r, text in zip(results, texts, strict=True):
        assert f"{r.win_rate:.1%}" in text and f"[{r.ci95[0]:.1%}, {r.ci95[1]:.1%}]" in text


def test_replot_reads_an_earlier_json_without_playing(tmp_path, capsys):
    out = tmp_path / "m.png"
    assert main(["--replot", str(POLICIES / "duel_eval.json"), "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert "duel cross-play" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["search:abc"], "search option n_determinizations must be a decimal number"),
    (["--seed", "-1"], "--seed: '-1' is not an integer"),
    (["--seed", "1.5"], "--seed: '1.5' is not an integer"),
    (["--games", "0"], "--games: '0' is not a whole number in 1.."),
    (["--games", "-5"], "--games"),
    (["--workers", "x"], "--workers"),
    (["nonsense"], "unknown agent 'nonsense'"),
    (["--out", "/"], "--out /: cannot write there"),
    (["--side", "greek", "--greek", "random"], "--side, --greek: for --game duel only"),
    (["--game", "duel", "--players", "2"], "--players: for --game coop only"),
    (["--game", "greek"], "invalid choice: 'greek'"),
    (["--replot", "/nonexistent.json"], "not a file"),
])
def test_bad_arguments_are_one_line_errors_naming_the_program(tmp_path, argv, message):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    games = [] if "--games" in argv else ["--games", "1"]
    done = subprocess.run([sys.executable, str(root / "scripts" / "evaluate.py"), *argv, *games],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith("evaluate.py: error: ")
    assert message in errors[0]


def test_the_evaluate_subcommand_names_itself_thermopylae_evaluate(capsys):
    from thermopylae_agents.cli.app import main as thermopylae

    with pytest.raises(SystemExit):
        thermopylae(["evaluate", "--help"])
    assert capsys.readouterr().out.startswith("usage: thermopylae evaluate ")


# ----------------------------------------------------------------------------------- the agent registry
@pytest.mark.parametrize(("spec", "message"), [
    ("search:abc", "must be a decimal number"), ("search:1e3", "must be a decimal number"),
    ("search:\u0661", "must be a decimal number"), ("search:0,2", "must be a whole number >= 1"),
    ("search:1,2,3", "at most N,K positionally"), ("search:colour=3", "unknown search option 'colour'"),
    ("search:4,", "empty search option"), ("random:3", "random takes no options"),
    ("fast:", "fast: needs the path"), ("fast:heuristic", "fast: needs the path"), ("", "empty agent spec"),
    ("bogus", "unknown agent 'bogus'"), ("x\x1b[2J", "not printable"),
])
def test_a_malformed_spec_is_a_one_line_error_before_anything_is_loaded(spec, message):
    from thermopylae_agents.policies.registry import AgentSpecError, parse_spec

    with pytest.raises(AgentSpecError, match=message) as error:
        parse_spec(spec)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("spec", "message"), [
    ("search:100000000,1",
     "n_determinizations must be a whole number >= 1 and at most 4096, got '100000000'"),
    ("search:1,100000000", "rollouts must be a whole number >= 1 and at most 1024"),
    ("search:4096,1024", "n_determinizations x rollouts = 4194304 rollouts per candidate, more than 65536"),
    ("search:16384", "n_determinizations must be a whole number >= 1 and at most 4096"),
    ("search:max_candidates=1.5", "max_candidates must be a whole number >= 1 and at most 72, got '1.5'"),
    ("search:max_candidates=1000", "max_candidates must be a whole number >= 1 and at most 72"),
    ("search:min_rounds=0.5", "min_rounds must be a whole number >= 1 and at most 1024, got '0.5'"),
    ("search:min_rounds=0", "min_rounds must be a whole number >= 1"),
    ("search:min_rounds=99999", "min_rounds must be a whole number >= 1 and at most 1024"),
    ("search:z_drop=1000", "z_drop must be a decimal number in 0..100, got '1000'"),
    ("search:z_pick=-1", "z_pick must be a decimal number in 0..100"),
    ("search:1,1,rollouts=2", "rollouts is given twice"),
    ("search:z_drop=1,z_drop=2", "z_drop is given twice"),
    ("search:4,2,n_determinizations=4", "n_determinizations is given twice"),
    ("search:rollout=coop_maskable_ppo,rollout=coop_maskable_ppo", "rollout is given twice"),
])
def test_a_search_spec_out_of_bounds_fractional_or_conflicting_is_one_line(spec, message):
    from thermopylae_agents.policies.registry import AgentSpecError, parse_spec

    with pytest.raises(AgentSpecError, match=re.escape(message)) as error:
        parse_spec(spec)
    assert "\n" not in str(error.value)


def test_the_search_spec_bounds_cover_every_option_and_take_the_measured_settings():
    from thermopylae_agents.policies.registry import SEARCH_BOUNDS, _search_keywords, parse_spec

    assert set(_search_keywords()) == {*SEARCH_BOUNDS, "rollout"}
    for spec in ("search:128,16", "search:64,16,max_candidates=5,min_rounds=2,z_drop=2.5,z_pick=0",
                 "search:4096,16", "search:min_rounds=1024,z_drop=100"):
        parse_spec(spec)
    options = parse_spec("search:3,2,max_candidates=4,min_rounds=3,z_drop=1.5").options
    assert options == {"n_determinizations": 3, "rollouts": 2, "max_candidates": 4, "min_rounds": 3,
                       "z_drop": 1.5}
    assert all(type(options[key]) is int for key in ("n_determinizations", "rollouts", "max_candidates",
                                                     "min_rounds"))


def test_name_equals_spec_gives_a_short_label():
    from thermopylae_agents.policies.registry import parse_spec

    parsed = parse_spec("ppo=fast:runs/a/final_policy.zip")
    assert (parsed.kind, parsed.argument, parsed.label) == ("fast", "runs/a/final_policy.zip", "ppo")
    # an '=' inside search options or a path is not a label
    spec = "search:n_determinizations=2,rollouts=1"
    assert parse_spec(spec).label == spec
    assert parse_spec("runs/a=b/model.zip").kind == "model"


def test_the_shipped_policies_are_found_by_name_through_the_installed_package():
    from thermopylae_agents.policies.registry import shipped_policies, shipped_policy_path

    names = shipped_policies()
    assert {"coop_maskable_ppo", "duel_greek_maskable_ppo", "duel_persian_maskable_ppo"} <= set(names)
    assert shipped_policy_path("coop_maskable_ppo").is_file()
    pytest.importorskip("sb3_contrib")
    agent, label = make_agent("fast:coop_maskable_ppo", "coop")
    assert label == "fast:coop_maskable_ppo" and hasattr(agent, "act")


def test_a_new_spec_kind_plugs_into_the_registry(monkeypatch):
    from thermopylae_agents.policies import registry

    built = []

    class Constant:
        def act(self, obs, mask):
            return int(np.flatnonzero(mask)[0])

    monkeypatch.setattr(registry, "_KINDS", {})
    registry.register_kind("safe", lambda argument, context: built.append((argument, context.env_id))
                           or Constant())
    agent, label = make_agent("mine=safe:weights.npz", "coop")
    assert label == "mine" and built == [("weights.npz", COOP_ID)]
    [result] = evaluate(COOP_ID, [agent], games=3)
    assert result.games == 3
    with pytest.raises(ValueError, match="cannot register"):
        registry.register_kind("search", lambda a, c: None)


def test_progress_on_a_terminal_is_a_bar_with_the_time_left():
    import io

    from thermopylae_agents.evaluation.games import progress_bar

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    with progress_bar(True, 50, "evaluating heuristic", stream=stream) as advance:
        for _ in range(5):
            advance(10)
    # a transient rich bar: drawn while running (description, count, time left), erased at the end
    assert "evaluating heuristic" in stream.getvalue()
    assert "left" in stream.getvalue()
