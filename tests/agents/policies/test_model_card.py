"""Model cards in the Hugging Face format and the folder written for the Hub: the front matter parses, holds
the committed measurements in the form the Hub's reinforcement-learning pages read (``mean_reward`` first,
one result per opponent), and the folder loads back torch-free, plays the same actions, and is uploaded
through ``huggingface_hub`` (a recording stand-in here: no network)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from thermopylae_agents.policies import model_card
from thermopylae_agents.policies.model_card import (
    default_card,
    front_matter,
    front_matter_yaml,
    game_results,
    game_setting,
    hub_results,
    return_stats,
    split_card,
    to_yaml,
    write_hf_folder,
)
from thermopylae_agents.policies.safe_policy import (
    POLICY_DIR,
    SHIPPED_ENV_IDS,
    load_safe_policy,
    shipped_policy_names,
)

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "benchmarks" / "results"
REQUIRED = {"library_name", "license", "tags", "model-index"}
HUB_TAGS = {"reinforcement-learning", "deep-reinforcement-learning", "stable-baselines3"}


def _front(name: str) -> dict:
    front, _ = split_card((POLICY_DIR / f"{name}.md").read_text(encoding="utf-8"))
    assert front is not None, f"{name}.md has no YAML front matter"
    return yaml.safe_load(front)


def _results(front: dict) -> list[dict]:
    (entry,) = front["model-index"]
    return entry["results"]


def _metric(result: dict, kind: str) -> dict:
    (metric,) = [m for m in result["metrics"] if m["type"] == kind]
    return metric


def _mean_std(metric: dict) -> tuple[float, float]:
    mean, std = metric["value"].split("+/-")  # the form the Deep RL leaderboard parses
    return float(mean), float(std)


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_every_shipped_card_has_front_matter_with_the_required_keys_and_sections(name):
    front = _front(name)
    assert set(front) >= REQUIRED
    assert front["license"] == "mit" and front["library_name"] == "stable-baselines3"
    assert HUB_TAGS | {"gymnasium", "thermopylae", SHIPPED_ENV_IDS[name]} <= set(front["tags"])
    assert front["model-index"][0]["name"] == name
    for result in _results(front):
        # the leaderboard reads the first metric of the first result as "mean +/- std"
        assert result["metrics"][0]["type"] == "mean_reward"
        assert result["dataset"]["type"] == SHIPPED_ENV_IDS[name]
    _, body = split_card((POLICY_DIR / f"{name}.md").read_text(encoding="utf-8"))
    for section in ("## Intended use", "## Limitations", "## Training"):
        assert section in body, section
    assert "training commit: `unknown`" in body


@pytest.mark.parametrize("players", [1, 2, 3, 4])
def test_coop_card_win_rates_and_deals_are_those_of_the_committed_evaluation(players):
    name = "coop_maskable_ppo" if players == 1 else f"coop_{players}p_maskable_ppo"
    results = json.loads((RESULTS / f"coop_{'solo' if players == 1 else f'{players}p'}_eval.json")
                         .read_text())
    (row,) = [r for r in results["results"] if r["agent"] == name]
    (result,) = _results(_front(name))
    metric = _metric(result, "win_rate")
    assert metric["value"] == row["win_rate"] and metric["args"]["deals"] == row["games"]
    assert metric["args"]["wins"] == row["wins"]
    assert result["dataset"]["config"] == f"num_players={players}"
    # every game ends +1 or -1: the mean return is 2p - 1, its standard deviation 2 sqrt(p(1 - p))
    mean, std = _mean_std(_metric(result, "mean_reward"))
    p = row["win_rate"]
    assert mean == pytest.approx(2 * p - 1, abs=0.005) and std == pytest.approx(2 * (p * (1 - p)) ** 0.5,
                                                                               abs=0.005)


@pytest.mark.parametrize("name", [n for n in sorted(SHIPPED_ENV_IDS) if "coop" not in n])
def test_duel_card_win_rates_and_deals_are_those_of_the_committed_cross_play(name):
    rows = json.loads((POLICY_DIR / "duel_eval.json").read_text())["results"]
    greek = SHIPPED_ENV_IDS[name].endswith("DuelGreek-v0")
    mine = {(r["opponent"] if greek else r["agent"]): r for r in rows
            if (r["agent"] if greek else r["opponent"]) == name}
    results = _results(_front(name))
    assert len(results) == len(mine) == 4
    opponents = [result["dataset"]["config"].removeprefix("opponent=") for result in results]
    assert opponents[0] == "heuristic" and set(opponents) == set(mine)  # the env's own opponent first
    assert len({result["dataset"]["name"] for result in results}) == 4
    for opponent, result in zip(opponents, results, strict=True):
        row = mine[opponent]
        wins = row["wins"] if greek else row["games"] - row["wins"]  # the duel has no draws
        metric = _metric(result, "win_rate")
        assert metric["args"]["deals"] == row["games"] and metric["args"]["wins"] == wins
        assert metric["args"]["opponent"] == opponent
        assert metric["value"] == pytest.approx(wins / row["games"], abs=0)
        mean, std = _mean_std(_metric(result, "mean_reward"))
        assert (mean, std) == tuple(round(x, 2) for x in return_stats(wins, row["games"]))


def test_the_cards_are_up_to_date_with_the_result_files():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "policy_files.py"), "cards", "--check"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]


def test_yaml_of_any_text_reads_back_as_the_same_values():
    value = {"a": ["x: y", "- z", "#c", "'q'", '"d"', "yes", "1.5", "", "é\n\\t"], "b": {"c": 1, "d": 0.25},
             "e": None, "f": True, "g": [], "h": {}, "key with: colon": [{"i": [1, 2]}, {"j": "k"}]}
    assert yaml.safe_load(to_yaml(value)) == value


def test_a_policy_without_a_card_gets_one_from_its_description(tmp_path):
    policy = load_safe_policy("duel_greek_maskable_ppo")
    card = default_card("mine", policy.description)
    front, body = split_card(card)
    assert {"library_name", "license", "tags"} <= set(yaml.safe_load(front))
    assert "## Intended use" in body and "## Limitations" in body and "## Training" in body
    assert "`n_envs=256`" in body  # the training settings the description records


def _duel_results() -> list[dict]:
    results = []
    for opponent, wins in (("heuristic", 23), ("random", 100)):
        results += game_results("thermopylae/DuelGreek-v0", game_setting("thermopylae/DuelGreek-v0",
                                                                          opponent=opponent),
                                100, wins, win_rate_name=f"win rate against {opponent}",
                                dataset_args={"results_file": "r.json"}, win_rate_args={"ci95": [0.1, 0.3]})
    return results


def test_the_front_matter_reads_the_same_written_by_huggingface_hub_or_by_the_fallback():
    pytest.importorskip("huggingface_hub")
    description = load_safe_policy("duel_greek_maskable_ppo").description
    results = _duel_results()
    hub = yaml.safe_load(front_matter_yaml(description, "mine", results, use_hub=True))
    fallback = yaml.safe_load(front_matter_yaml(description, "mine", results, use_hub=False))
    assert hub == fallback == front_matter(description, "mine", results)
    # one result per opponent (distinct dataset configs), each with mean_reward first
    (entry,) = hub["model-index"]
    assert [r["dataset"]["config"] for r in entry["results"]] == ["opponent=heuristic", "opponent=random"]
    assert [m["type"] for m in entry["results"][0]["metrics"]] == ["mean_reward", "win_rate"]
    assert entry["results"][0]["metrics"][0]["value"] == "-0.54 +/- 0.84"


def test_a_card_without_results_has_no_model_index_with_either_writer():
    pytest.importorskip("huggingface_hub")
    description = load_safe_policy("coop_maskable_ppo").description
    for use_hub in (True, False):
        front = yaml.safe_load(front_matter_yaml(description, use_hub=use_hub))
        assert "model-index" not in front and front["library_name"] == "stable-baselines3"


@pytest.mark.parametrize(("wins", "games"), [(0, 5), (5, 5), (3046, 10000), (1, 3)])
def test_return_stats_are_the_mean_and_standard_deviation_of_plus_and_minus_one_returns(wins, games):
    returns = np.array([1.0] * wins + [-1.0] * (games - wins))
    mean, std = return_stats(wins, games)
    assert mean == pytest.approx(returns.mean(), abs=1e-12) and std == pytest.approx(returns.std(), abs=1e-12)


@pytest.mark.parametrize(("wins", "games"), [(-1, 5), (6, 5), (0, 0), (1.0, 2)])
def test_return_stats_refuse_impossible_counts(wins, games):
    with pytest.raises(ValueError, match="need 0 <= wins <= games"):
        return_stats(wins, games)


@pytest.mark.parametrize("name", ["coop_2p_maskable_ppo", "duel_persian_maskable_ppo"])
def test_hub_results_are_the_returns_of_the_games_thermopylae_evaluate_plays(name):
    from thermopylae_agents.evaluation.games import evaluate

    policy = load_safe_policy(name)
    results = hub_results(policy, episodes=12, seed=40)
    (same,) = evaluate(policy.env_id, [name], games=12, base_seed=40, env_kwargs=policy.env_options)
    assert results["wins"] == same.wins and results["win_rate"] == same.win_rate
    # the returns summed over the games are +1 and -1, so the counts give their mean and deviation
    assert (results["mean_reward"], results["std_reward"]) == pytest.approx(return_stats(same.wins, 12))
    assert results["n_eval_episodes"] == 12 and results["is_deterministic"] is True
    assert results["seeds"] == "40..51" and results["env_id"] == policy.env_id


@pytest.mark.parametrize("name", ["coop_2p_maskable_ppo", "duel_persian_maskable_ppo"])
def test_the_hugging_face_folder_loads_back_and_plays_the_same_actions(tmp_path, name):
    from thermopylae_agents.policies.registry import make_agent

    out = write_hf_folder(name, tmp_path / "hub", episodes=4, replay=False)
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors",
                                                       "results.json"]
    assert (out / "README.md").read_text() == (POLICY_DIR / f"{name}.md").read_text()
    assert (out / "model.safetensors").read_bytes() == (POLICY_DIR / f"{name}.safetensors").read_bytes()
    shipped, folder = load_safe_policy(name), load_safe_policy(out)
    assert folder.description["provenance"] == shipped.description["provenance"]
    rng = np.random.default_rng(3)
    for _ in range(200):
        obs = rng.random(shipped.observation_size, dtype=np.float32)
        mask = rng.random(shipped.num_actions) < 0.3
        mask[rng.integers(shipped.num_actions)] = True
        assert folder.act(obs, mask) == shipped.act(obs, mask)
    players = shipped.env_options.get("num_players")
    game = {"num_players": players} if players else {}
    agent, _ = make_agent(str(out), SHIPPED_ENV_IDS[name], env_kwargs=game)
    assert agent.description["arrays_sha256"] == shipped.description["arrays_sha256"]


def test_the_folder_config_holds_the_training_settings_and_results_json_the_push_to_hub_keys(tmp_path):
    out = write_hf_folder("duel_greek_maskable_ppo", tmp_path / "hub", episodes=3, replay=False)
    config = json.loads((out / "config.json").read_text())
    settings = config["provenance"]["hyperparameters"]
    assert (settings["algo"], settings["n_envs"], settings["n_steps"]) == ("MaskablePPO", 256, 64)
    results = json.loads((out / "results.json").read_text())
    # what SB3's and RL Zoo's push_to_hub write, then the win rate
    sb3_keys = {"mean_reward", "std_reward", "is_deterministic", "n_eval_episodes", "eval_datetime"}
    assert sb3_keys <= set(results)
    assert results["n_eval_episodes"] == 3 and results["wins"] == round(3 * results["win_rate"])
    assert results["mean_reward"] == pytest.approx(2 * results["win_rate"] - 1)
    assert results["opponent"] == "heuristic"


def test_the_folder_has_a_replay_video_of_one_greedy_game(tmp_path):
    if not model_card.video_available():
        pytest.skip("the video extra is not installed")
    from moviepy.video.io.VideoFileClip import VideoFileClip

    out = write_hf_folder("duel_greek_maskable_ppo", tmp_path / "hub", episodes=1, seed=5)
    video = out / "replay.mp4"
    assert video.read_bytes()[4:8] == b"ftyp"  # an MP4 container
    frames = model_card._replay_frames(load_safe_policy("duel_greek_maskable_ppo"), 5)
    clip = VideoFileClip(str(video))
    try:
        assert tuple(clip.size) == (frames[0].shape[1], frames[0].shape[0])
        assert clip.duration == pytest.approx(len(frames) / model_card.REPLAY_FPS, abs=0.6)
    finally:
        clip.close()


def test_a_failed_video_leaves_no_folder_behind(tmp_path, monkeypatch):
    def broken(frames, path, fps):
        path.write_bytes(b"half a video")
        raise OSError("ffmpeg: no such codec")

    monkeypatch.setattr(model_card, "video_available", lambda: True)
    monkeypatch.setattr(model_card, "_replay_frames", lambda policy, seed: [np.zeros((4, 4, 3), np.uint8)])
    monkeypatch.setattr(model_card, "_write_video", broken)
    with pytest.raises(OSError, match="no such codec"):
        write_hf_folder("duel_greek_maskable_ppo", tmp_path / "hub", episodes=1)
    assert not (tmp_path / "hub").exists()


def test_export_hf_folder_command_writes_the_folder_and_refuses_a_used_one(tmp_path, capsys, monkeypatch):
    from thermopylae_agents.cli.export import main

    monkeypatch.setattr(model_card, "video_available", lambda: False)
    out = tmp_path / "hub"
    assert main(["--policy", "coop_maskable_ppo", "--out-dir", str(out), "--eval-games", "3"]) == 0
    captured = capsys.readouterr()
    assert "nothing uploaded" in captured.out
    # without the video extra the replay is left out, in one line that names the extra
    assert captured.err.count("\n") == 1 and "replay.mp4 left out" in captured.err and "video" in captured.err
    assert load_safe_policy(out).name == "hub"
    assert json.loads((out / "results.json").read_text())["n_eval_episodes"] == 3
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(SystemExit) as done:
        main(["--policy", "coop_maskable_ppo", "--out-dir", str(out)])
    assert done.value.code == 2 and "new or empty folder" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    with pytest.raises(SystemExit):
        main(["--policy", "coop_maskable_ppo", "--eval-games", "3"])
    assert "--policy needs --out-dir DIR" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hub"]


class _RecordingHub:
    """A stand-in for ``huggingface_hub.HfApi`` that records the calls and uploads nothing."""

    calls: list[tuple[str, dict]] = []

    def create_repo(self, **kwargs):
        self.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", {**kwargs, "files": sorted(p.name for p in
                                                                       Path(kwargs["folder_path"]).iterdir())}))
        return type("CommitInfo", (), {"commit_url": f"https://hub.test/{kwargs['repo_id']}/commit/1"})()


def test_export_push_uploads_the_written_folder_with_huggingface_hub(tmp_path, capsys, monkeypatch):
    hub = pytest.importorskip("huggingface_hub")
    from thermopylae_agents.cli.export import main

    monkeypatch.setattr(hub, "HfApi", _RecordingHub)
    monkeypatch.setattr(_RecordingHub, "calls", [])
    out = tmp_path / "hub"
    assert main(["--policy", "duel_greek_maskable_ppo", "--out-dir", str(out), "--eval-games", "2",
                 "--push", "someone/thermopylae-greek"]) == 0
    (create, created), (upload, uploaded) = _RecordingHub.calls
    assert (create, created) == ("create_repo", {"repo_id": "someone/thermopylae-greek", "repo_type": "model",
                                                 "exist_ok": True})
    assert upload == "upload_folder" and uploaded["repo_id"] == "someone/thermopylae-greek"
    assert Path(uploaded["folder_path"]) == out.resolve() and uploaded["repo_type"] == "model"
    assert {"README.md", "config.json", "model.safetensors", "results.json"} <= set(uploaded["files"])
    assert "pushed to someone/thermopylae-greek: https://hub.test/" in capsys.readouterr().out


def test_export_push_refuses_a_bad_repository_id_before_writing_anything(tmp_path, capsys, monkeypatch):
    hub = pytest.importorskip("huggingface_hub")
    from thermopylae_agents.cli.export import main

    monkeypatch.setattr(hub, "HfApi", _RecordingHub)
    monkeypatch.setattr(_RecordingHub, "calls", [])
    with pytest.raises(SystemExit) as done:
        main(["--policy", "duel_greek_maskable_ppo", "--out-dir", str(tmp_path / "hub"),
              "--push", "not a repo/x/y"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and "--push" in err
    assert not (tmp_path / "hub").exists() and _RecordingHub.calls == []


def test_a_failed_push_says_so_in_one_line_and_keeps_the_folder(tmp_path, capsys, monkeypatch):
    hub = pytest.importorskip("huggingface_hub")
    from thermopylae_agents.cli.export import main

    class Offline(_RecordingHub):
        def create_repo(self, **kwargs):
            raise OSError("cannot reach huggingface.co\nretry later")

    monkeypatch.setattr(hub, "HfApi", Offline)
    out = tmp_path / "hub"
    assert main(["--policy", "duel_greek_maskable_ppo", "--out-dir", str(out), "--eval-games", "1",
                 "--push", "someone/greek"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "pushing" in err and "cannot reach huggingface.co" in err and "the folder stays" in err
    assert load_safe_policy(out).env_id == "thermopylae/DuelGreek-v0"


@pytest.mark.parametrize(("args", "problem"), [
    (["--eval-games", "0"], "--eval-games: '0' is not a whole number in 1..1000000"),
    (["--eval-games", "x"], "--eval-games: 'x' is not an integer"),
    (["--eval-games", "\u0663"], "--eval-games: '\u0663' is not an integer"),
    (["--eval-seed", "-1"], "--eval-seed: '-1' is not a whole number in 0..1000000"),
])
def test_export_hf_folder_refuses_bad_game_counts_before_writing(tmp_path, capsys, args, problem):
    from thermopylae_agents.cli.export import main

    with pytest.raises(SystemExit) as done:
        main(["--policy", "coop_maskable_ppo", "--out-dir", str(tmp_path / "hub"), *args])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and problem in err
    assert not (tmp_path / "hub").exists()


def test_an_exported_folder_has_a_card_made_from_its_description_and_its_results(tmp_path):
    json_path = tmp_path / "mine.json"
    json_path.write_bytes((POLICY_DIR / "duel_greek_maskable_ppo.json").read_bytes())
    arrays = (POLICY_DIR / "duel_greek_maskable_ppo.safetensors").read_bytes()
    (tmp_path / "mine.safetensors").write_bytes(arrays)
    out = write_hf_folder(json_path, tmp_path / "hub", episodes=4, replay=False)
    front, body = split_card((out / "README.md").read_text())
    data = yaml.safe_load(front)
    assert data["license"] == "mit" and body.startswith("# mine")
    assert load_safe_policy(out).env_id == "thermopylae/DuelGreek-v0"
    results = json.loads((out / "results.json").read_text())
    (entry,) = data["model-index"]
    (result,) = entry["results"]
    assert result["dataset"]["config"] == "opponent=heuristic"
    assert _mean_std(_metric(result, "mean_reward")) == (round(results["mean_reward"], 2),
                                                         round(results["std_reward"], 2))
    assert _metric(result, "win_rate")["value"] == results["win_rate"]
    again = write_hf_folder(out, tmp_path / "again", episodes=1, replay=False)  # a folder keeps its card
    assert (again / "README.md").read_text() == (out / "README.md").read_text()


def test_only_the_shipped_policies_are_listed_as_shipped():
    assert shipped_policy_names() == sorted(SHIPPED_ENV_IDS)


def _measured(name: str) -> str:
    _, body = split_card((POLICY_DIR / f"{name}.md").read_text(encoding="utf-8"))
    assert body.count("<!-- measured -->") == 1, f"{name}.md has no generated measured section"
    return body.split("<!-- measured -->", 1)[1].split("<!-- end measured -->", 1)[0]


def _pct(rate: float) -> str:
    return f"{100 * rate:.2f}%"


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_every_table_of_a_card_is_generated_from_the_result_files(name):
    _, body = split_card((POLICY_DIR / f"{name}.md").read_text(encoding="utf-8"))
    outside = body.split("<!-- measured -->", 1)[0] + body.split("<!-- end measured -->", 1)[1]
    hand_typed = [line for line in outside.splitlines() if line.startswith("|")]
    assert hand_typed == [], hand_typed


@pytest.mark.parametrize("players", [1, 2, 3, 4])
def test_coop_card_tables_show_the_committed_win_rates(players):
    name = "coop_maskable_ppo" if players == 1 else f"coop_{players}p_maskable_ppo"
    results = json.loads((RESULTS / f"coop_{'solo' if players == 1 else f'{players}p'}_eval.json")
                         .read_text())
    (row,) = [r for r in results["results"] if r["agent"] == name]
    low, high = row["ci95"]
    line = f"| **this policy** | {row['games']:,} | {_pct(row['win_rate'])} | [{_pct(low)}, {_pct(high)}] |"
    assert line in _measured(name).splitlines()


@pytest.mark.parametrize("name", [n for n in sorted(SHIPPED_ENV_IDS) if "coop" not in n])
def test_duel_card_tables_show_the_committed_strength_and_exploitability(name):
    text = _measured(name)
    side = "greek" if SHIPPED_ENV_IDS[name].endswith("DuelGreek-v0") else "persian"
    block = json.loads((POLICY_DIR / "duel_vec_eval.json").read_text())[side]
    (row,) = [line for line in text.splitlines() if line.endswith("%] |") and "(this file)**" in line]
    label = row.split("**")[1].removesuffix(" (this file)")
    mine = block["players"][label]
    assert row.startswith(f"| **{label} (this file)** | {mine['wins']:,} | {_pct(mine['win_rate'])} |")
    kind = "self-play" if name.startswith("selfplay") else "PPO"
    assert label.startswith(kind) and "(new)" in label
    rows = {(r["frozen_player"], r["frozen_side"]): r
            for r in json.loads((RESULTS / "exploitability.json").read_text())["rows"]}
    for player in (name, "heuristic"):
        pooled = rows[player, side]["pooled_final"]
        low, high = pooled["ci95"]
        assert f"{_pct(pooled['win_rate'])} [{_pct(low)}, {_pct(high)}]" in text


def test_the_policies_readme_has_no_table_outside_its_generated_ones():
    text = (POLICY_DIR / "README.md").read_text(encoding="utf-8")
    outside = "".join(part.split("<!-- end generated -->")[-1] for part in text.split("<!-- generated: "))
    hand_typed = [line for line in outside.splitlines() if line.startswith("|")]
    assert hand_typed == [], hand_typed
