"""A short run (``--timesteps`` far below the config's) mostly trains: its periodic evaluation, final report
and search games are sized to the budget, while the config's own budget keeps every shipped setting."""

from __future__ import annotations

import json
import math

import pytest
import yaml

pytest.importorskip("sb3_contrib")

from thermopylae_agents.training.config import (  # noqa: E402
    ENV_IDS,
    EVALUATIONS_PER_ROLLOUT,
    TARGETS,
    env_ids_of,
    load_config,
    resolve_config,
)
from thermopylae_agents.training.ppo import format_time_split, time_split  # noqa: E402
from thermopylae_env import COOP_ID, GREEK_ID

SHORT = 20_000


def evaluations(hp: dict) -> int:
    """How many periodic evaluations a run of ``hp`` makes: SB3 evaluates every ``freq // n_envs``
    steps of the vector env, over the whole rollouts the run trains."""
    rollout = hp["n_envs"] * hp["n_steps"]
    vector_steps = math.ceil(hp["n_timesteps"] / rollout) * hp["n_steps"]
    return vector_steps // max(hp["eval"]["freq"] // hp["n_envs"], 1)


@pytest.mark.parametrize("target", TARGETS)
def test_the_config_budget_keeps_every_shipped_evaluation_and_report_setting(target):
    shipped = load_config(target)
    full = resolve_config(target, timesteps=shipped[env_ids_of(target)[0]]["n_timesteps"])
    default = resolve_config(target)
    assert full["run"]["sized_to_budget"] == {}
    for env_id in env_ids_of(target):
        for section in ("eval", "report", "bc"):
            assert full[env_id].get(section) == shipped[env_id].get(section), (env_id, section)
            assert default[env_id].get(section) == shipped[env_id].get(section), (env_id, section)


@pytest.mark.parametrize("target", ["coop", "duel-greek", "duel-persian"])
def test_a_short_run_evaluates_at_least_five_times(target):
    hp = resolve_config(target, timesteps=SHORT)[ENV_IDS[target]]
    full = load_config(target)[ENV_IDS[target]]
    assert 5 <= evaluations(hp) <= EVALUATIONS_PER_ROLLOUT * math.ceil(SHORT / (hp["n_envs"] * hp["n_steps"]))
    assert hp["eval"]["episodes"] < full["eval"]["episodes"]


def test_a_mid_budget_run_keeps_the_configs_number_of_evaluations_and_some_search_games():
    full = load_config("coop")[COOP_ID]
    hp = resolve_config("coop", timesteps=full["n_timesteps"] // 5)[COOP_ID]
    assert evaluations(hp) == evaluations(full) == full["n_timesteps"] // full["eval"]["freq"]
    assert hp["eval"]["episodes"] == full["eval"]["episodes"] // 5
    assert hp["report"]["search_episodes"] == full["report"]["search_episodes"] // 5
    assert hp["report"]["episodes"] == full["report"]["episodes"] // 5


def test_a_short_run_skips_the_search_experts_games_and_plays_fewer_report_games():
    data = resolve_config("coop", timesteps=SHORT)
    hp, full = data[COOP_ID], load_config("coop")[COOP_ID]
    assert hp["report"]["search_episodes"] == 0
    assert hp["report"]["episodes"] < full["report"]["episodes"] // 10
    sized = data["run"]["sized_to_budget"]
    search = full["report"]["search_episodes"]
    assert sized[f"{COOP_ID}.report.search_episodes"] == {"full": search, "sized": 0}
    assert sized[f"{COOP_ID}.eval.freq"] == {"full": full["eval"]["freq"], "sized": hp["eval"]["freq"]}


def test_self_play_keeps_its_evaluation_frequency_at_a_short_budget():
    data = resolve_config("selfplay", timesteps=SHORT)
    shipped = load_config("selfplay")
    for env_id in env_ids_of("selfplay"):
        assert data[env_id]["eval"]["freq"] == shipped[env_id]["eval"]["freq"]


def test_explicit_evaluation_options_win_over_the_sizing():
    hp = resolve_config("coop", timesteps=SHORT, eval_freq=8192, eval_episodes=30)[COOP_ID]
    assert hp["eval"] == {**hp["eval"], "freq": 8192, "episodes": 30}


def test_periodic_evaluations_of_no_games_are_a_one_line_error():
    with pytest.raises(ValueError, match=r"eval.freq .* 0 games") as error:
        resolve_config("coop", timesteps=SHORT, eval_episodes=0)
    assert "\n" not in str(error.value)
    assert resolve_config("coop", eval_freq=0, eval_episodes=0)[COOP_ID]["eval"]["episodes"] == 0


def test_more_search_games_than_report_games_is_a_one_line_error(tmp_path):
    data = load_config("coop")
    data[COOP_ID]["report"].update(episodes=10, search_episodes=11)
    path = tmp_path / "coop.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="search_episodes .* must not exceed report.episodes") as error:
        resolve_config("coop", path)
    assert "\n" not in str(error.value)


def test_the_command_refuses_evaluations_of_no_games_before_writing_anything(tmp_path, capsys):
    from thermopylae_agents.cli.train import main

    out = tmp_path / "run"
    assert main(["coop", "--timesteps", str(SHORT), "--eval-episodes", "0", "--run-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "eval.episodes" in err
    assert not out.exists()


def test_the_time_split_counts_the_clones_games_as_evaluation():
    throughput = {"learn_seconds": 10.0, "excluded_eval_checkpoint_seconds": 4.0, "evaluation_seconds": 3.0,
                  "checkpoint_seconds": 1.0}
    split = time_split(20.0, {"evaluate_seconds": 2.0}, throughput, report_seconds=5.0)
    assert split["warm_start_seconds"] == 18.0 and split["ppo_seconds"] == 6.0
    assert split["training_seconds"] == 24.0
    assert split["evaluation_seconds"] == 2.0 + 3.0 + 5.0
    assert split["checkpoint_seconds"] == 1.0
    assert split["training_share"] == round(24 / 34, 3)
    assert "71% training" in format_time_split(split)
    resumed = time_split(0.0, None, throughput, report_seconds=0.0)
    assert resumed["training_seconds"] == 6.0 and resumed["evaluation_seconds"] == 3.0


@pytest.mark.slow
def test_a_short_coop_run_draws_a_curve_and_records_its_time_split(tmp_path):
    from thermopylae_agents.cli.evaluate import main as evaluate
    from thermopylae_agents.cli.train import main as train
    from thermopylae_agents.evaluation.tables import load_learning_curve

    out = tmp_path / "coop"
    assert train(["coop", "--timesteps", str(SHORT), "--no-progress", "--run-dir", str(out)]) == 0
    curve = load_learning_curve(out)
    assert len(curve["timesteps"]) >= 5
    assert evaluate(["--curve", str(out), "--plot", str(tmp_path / "curve.png")]) == 0
    report = json.loads((out / "report.json").read_text())
    hp = yaml.safe_load((out / "config.yaml").read_text())[COOP_ID]
    assert (curve["episodes"] == hp["eval"]["episodes"]).all()
    assert [row["agent"] for row in report["evaluation"]["rows"]] == ["ppo", "random", "heuristic"]
    assert all(row["games"] == hp["report"]["episodes"] for row in report["evaluation"]["rows"])
    split = report["time_split"]
    assert split["ppo_seconds"] > 0 and split["periodic_evaluation_seconds"] > 0
    assert split["training_seconds"] + split["evaluation_seconds"] <= report["wall_seconds"]


def test_the_duel_report_of_a_short_run_plays_the_sized_games():
    hp = resolve_config("duel-greek", timesteps=SHORT)[GREEK_ID]
    full = load_config("duel-greek")[GREEK_ID]
    assert hp["report"]["episodes"] < full["report"]["episodes"] // 10
    assert hp["bc"]["episodes"] < full["bc"]["episodes"]


def test_resuming_a_short_run_to_the_full_budget_restores_the_evaluation_settings(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(resolve_config("coop", timesteps=SHORT)))
    full = load_config("coop")[COOP_ID]
    longer = resolve_config("coop", path, timesteps=full["n_timesteps"])[COOP_ID]
    assert longer["eval"] == full["eval"] and longer["report"] == full["report"]
