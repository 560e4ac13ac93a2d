"""Expert iteration of the co-op search (``thermopylae distill``): tiny runs that finish, labels that are the
search's own moves, a saved policy that is an agent spec, and data sets that a seed reproduces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

# Compiles its own kernels or trains: CI's slow step runs it (the default run stays short).
pytestmark = pytest.mark.slow

pytest.importorskip("sb3_contrib")

from thermopylae_agents.cli.app import main as thermopylae  # noqa: E402
from thermopylae_agents.players.coop_search import CoopSearchExpert  # noqa: E402
from thermopylae_agents.policies.frozen_policy import FrozenPolicy  # noqa: E402
from thermopylae_agents.policies.registry import make_agent  # noqa: E402
from thermopylae_agents.training.expert_iteration import (  # noqa: E402
    DistillData,
    ExpertIterationConfig,
    collect_round,
    label_rng,
    load_distill_config,
    run,
    setup,
)
from thermopylae_env import COOP_ID  # noqa: E402

# Small searches keep a labelled game well under a second; the pipeline does not depend on their size.
_SEARCH = {"n_determinizations": 8, "rollouts": 2}


def _tiny(num_players: int = 1, **changes) -> ExpertIterationConfig:
    settings = dict(num_players=num_players, rounds=1, games_per_round=2, epochs=1, eval_games=3,
                    search=dict(_SEARCH))
    settings.update(changes)
    return ExpertIterationConfig(**settings)


@pytest.fixture(scope="module")
def solo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("distill") / "solo"
    report = run(_tiny(rounds=2), out, progress=False, command="test")
    return out, report


def test_a_tiny_solo_run_finishes_with_every_file_and_a_report(solo_run):
    out, report = solo_run
    for name in ("policy.zip", "policy.json", "policy.safetensors", "dataset.npz", "config.yaml",
                 "report.json"):
        assert (out / name).is_file(), name
    assert [row["round"] for row in report["rounds"]] == [1, 2]
    assert json.loads((out / "report.json").read_text())["rounds"][1]["games"] == 2
    assert report["start_evaluation"]["games"] == 3
    assert yaml.safe_load((out / "config.yaml").read_text())["search"] == _SEARCH
    data = DistillData.load(out / "dataset.npz")
    assert len(data) == report["dataset_decisions"] > 0
    assert sorted(set(data.rounds.tolist())) == [0, 1]


def test_every_label_of_the_data_set_is_the_searchs_act_on_that_state(solo_run):
    out, _ = solo_run
    data = DistillData.load(out / "dataset.npz")
    for i in range(len(data)):
        rng = label_rng(0, data.game_seeds[i], data.steps[i])
        search = CoopSearchExpert(num_players=1, rng=rng, **_SEARCH)
        assert search.act(data.observations[i], data.masks[i]) == data.labels[i], i
        assert data.masks[i][data.labels[i]] and data.masks[i][data.played[i]]


@pytest.mark.parametrize("spec", ["policy.json", "policy.zip"])
def test_the_saved_policy_loads_as_an_agent_spec_and_plays_legal_moves(solo_run, spec):
    import gymnasium as gym

    import thermopylae_env  # noqa: F401 - registers the environments

    out, _ = solo_run
    agent, _ = make_agent(str(out / spec), COOP_ID, env_kwargs={"num_players": 1})
    env = gym.make(COOP_ID, num_players=1, illegal_action="raise")
    obs, info = env.reset(seed=5)
    done = False
    while not done:
        mask = info["action_mask"].astype(bool)
        action = agent.act(obs, mask)
        assert mask[action]
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated


def test_the_saved_policy_is_refused_for_another_team_size(solo_run):
    out, _ = solo_run
    with pytest.raises(ValueError, match="num_players"):
        make_agent(str(out / "policy.json"), COOP_ID, env_kwargs={"num_players": 2})


def test_a_tiny_two_player_run_finishes_and_its_policy_plays_a_team_of_two(tmp_path):
    report = run(_tiny(2, games_per_round=1, eval_games=2), tmp_path / "duo", progress=False, command="test")
    assert report["config"]["start"] == "coop_2p_maskable_ppo"
    data = DistillData.load(tmp_path / "duo" / "dataset.npz")
    row = len(data) // 2
    search = CoopSearchExpert(num_players=2, rng=label_rng(0, data.game_seeds[row], data.steps[row]),
                              **_SEARCH)
    assert search.act(data.observations[row], data.masks[row]) == data.labels[row]
    agent, _ = make_agent(str(tmp_path / "duo" / "policy.json"), COOP_ID, env_kwargs={"num_players": 2})
    assert data.masks[row][agent.act(data.observations[row], data.masks[row])]


def test_the_same_seed_gives_the_same_data_set_and_another_seed_other_deals(tmp_path):
    exp = setup(_tiny(eval_games=0), tmp_path / "a", progress=False)
    actor = FrozenPolicy(exp.model)
    first = collect_round(exp.cfg, actor, 0)
    again = collect_round(_tiny(eval_games=0), actor, 0)
    for name in DistillData.ARRAYS:
        assert np.array_equal(getattr(first, name), getattr(again, name)), name
    other = collect_round(_tiny(eval_games=0, seed=1), actor, 0)
    assert not set(other.game_seeds.tolist()) & set(first.game_seeds.tolist())


def test_beta_one_plays_the_search_and_beta_zero_plays_the_policy(tmp_path):
    exp = setup(_tiny(eval_games=0, beta_start=1.0), tmp_path / "b", progress=False)
    actor = FrozenPolicy(exp.model)
    search_only = collect_round(exp.cfg, actor, 0)
    assert np.array_equal(search_only.played, search_only.labels)
    policy_only = collect_round(_tiny(eval_games=0, beta_start=0.0), actor, 0)
    greedy = [actor.act(o, m) for o, m in zip(policy_only.observations, policy_only.masks, strict=True)]
    assert policy_only.played.tolist() == greedy


def test_the_training_deals_are_not_the_evaluation_deals():
    cfg = _tiny(games_per_round=99_999, rounds=3)
    assert cfg.round_seed(0) >= cfg.eval_seed + cfg.eval_games
    assert cfg.round_seed(1) >= cfg.round_seed(0) + cfg.games_per_round
    assert cfg.beta(0) == 0.5 and cfg.beta(2) == 0.125


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"num_players": 5}, "num_players"),
        ({"rounds": 0}, "rounds"),
        ({"beta_start": 1.5}, "beta_start"),
        ({"games_per_round": "many"}, "games_per_round"),
        ({"search": {"depth": 3}}, "depth"),
        ({"search": {"engine": "gpu"}}, "engine"),
        ({"start": " "}, "start"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(changes, named):
    with pytest.raises(ValueError, match=named):
        _tiny(**changes)


def test_the_shipped_config_loads_and_an_unknown_key_is_refused(tmp_path):
    cfg = load_distill_config()
    assert cfg.start == "coop_maskable_ppo" and cfg.num_players == 1
    path = tmp_path / "bad.yaml"
    path.write_text("rounds: 2\nroundz: 3\n")
    with pytest.raises(ValueError, match="roundz"):
        load_distill_config(path)


@pytest.mark.parametrize(
    "args",
    [
        ["--games", "0"],
        ["--players", "5"],
        ["--start", "coop_2p_maskable_ppo"],
        ["--start", "no_such_policy"],
        ["--config", "missing.yaml"],
        ["--beta", "nan"],
    ],
)
def test_the_command_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path, capsys, args):
    out = tmp_path / "run"
    try:
        status = thermopylae(["distill", *args, "--run-dir", str(out), "--eval-games", "0"])
    except SystemExit as stop:
        status = stop.code
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "Traceback" not in err[0], err
    assert not out.exists()


def test_the_command_has_help(capsys):
    with pytest.raises(SystemExit) as stop:
        thermopylae(["distill", "--help"])
    assert stop.value.code == 0
    assert "--games" in capsys.readouterr().out


def test_the_search_settings_of_the_config_reach_the_labelling_search(tmp_path: Path):
    cfg = _tiny(search={"n_determinizations": 4, "rollouts": 1, "max_candidates": 3})
    search = cfg.make_search(30_000_000, 2)
    assert (search.n_determinizations, search.rollouts, search.max_candidates) == (4, 1, 3)


def test_a_ppo_config_of_another_team_size_is_refused_before_anything_is_written(tmp_path):
    from thermopylae_agents.training.config import CONFIG_DIR

    cfg = _tiny(2, start="bc-heuristic", ppo_config=str(CONFIG_DIR / "coop.yaml"))
    with pytest.raises(ValueError, match="team of 2"):
        setup(cfg, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_heuristic_clone_start_with_a_ppo_fine_tune_finishes(tmp_path):
    cfg = _tiny(start="bc-heuristic", bc_episodes=5, games_per_round=1, eval_games=2, ppo_timesteps=1,
                value_coef=0.5)
    report = run(cfg, tmp_path / "run", progress=False, command="test")
    assert report["rounds"][0]["ppo_timesteps"] > 0
    agent, _ = make_agent(str(tmp_path / "run" / "policy.json"), COOP_ID, env_kwargs={"num_players": 1})
    data = DistillData.load(tmp_path / "run" / "dataset.npz")
    assert data.masks[0][agent.act(data.observations[0], data.masks[0])]
