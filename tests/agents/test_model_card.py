"""Model cards in the Hugging Face format and the folder written for the Hub: the front matter parses and
holds the committed measurements, and the folder loads back torch-free and plays the same actions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from thermopylae_agents.policies.model_card import default_card, split_card, to_yaml, write_hf_folder
from thermopylae_agents.policies.safe_policy import (
    POLICY_DIR,
    SHIPPED_ENV_IDS,
    load_safe_policy,
    shipped_policy_names,
)

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {"library_name", "license", "tags", "model-index"}


def _front(name: str) -> dict:
    front, _ = split_card((POLICY_DIR / f"{name}.md").read_text(encoding="utf-8"))
    assert front is not None, f"{name}.md has no YAML front matter"
    return yaml.safe_load(front)


def _metrics(front: dict) -> list[dict]:
    (entry,) = front["model-index"]
    return [metric for result in entry["results"] for metric in result["metrics"]]


@pytest.mark.parametrize("name", sorted(SHIPPED_ENV_IDS))
def test_every_shipped_card_has_front_matter_with_the_required_keys_and_sections(name):
    front = _front(name)
    assert set(front) >= REQUIRED
    assert front["license"] == "mit" and front["library_name"] == "thermopylae-env"
    assert {"reinforcement-learning", "gymnasium", "thermopylae"} <= set(front["tags"])
    assert front["model-index"][0]["name"] == name
    _, body = split_card((POLICY_DIR / f"{name}.md").read_text(encoding="utf-8"))
    for section in ("## Intended use", "## Limitations", "## Training"):
        assert section in body, section
    assert "training commit: `unknown`" in body


@pytest.mark.parametrize("players", [1, 2, 3, 4])
def test_coop_card_win_rates_and_deals_are_those_of_the_committed_evaluation(players):
    name = "coop_maskable_ppo" if players == 1 else f"coop_{players}p_maskable_ppo"
    results = json.loads((ROOT / "benchmarks" / f"coop_{'solo' if players == 1 else f'{players}p'}_eval.json")
                         .read_text())
    (row,) = [r for r in results["results"] if r["agent"] == name]
    (metric,) = _metrics(_front(name))
    assert metric["value"] == row["win_rate"] and metric["args"]["deals"] == row["games"]
    assert metric["args"]["wins"] == row["wins"]


@pytest.mark.parametrize("name", [n for n in sorted(SHIPPED_ENV_IDS) if "coop" not in n])
def test_duel_card_win_rates_and_deals_are_those_of_the_committed_cross_play(name):
    rows = json.loads((POLICY_DIR / "duel_eval.json").read_text())["results"]
    greek = SHIPPED_ENV_IDS[name].endswith("DuelGreek-v0")
    mine = [r for r in rows if (r["agent"] if greek else r["opponent"]) == name]
    metrics = _metrics(_front(name))
    assert len(metrics) == len(mine) == 4
    for row, metric in zip(mine, metrics, strict=True):
        wins = row["wins"] if greek else row["games"] - row["wins"]  # the duel has no draws
        assert metric["args"]["deals"] == row["games"] and metric["args"]["wins"] == wins
        assert metric["value"] == pytest.approx(wins / row["games"], abs=0)


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


@pytest.mark.parametrize("name", ["coop_2p_maskable_ppo", "duel_persian_maskable_ppo"])
def test_the_hugging_face_folder_loads_back_and_plays_the_same_actions(tmp_path, name):
    from thermopylae_agents.policies.registry import make_agent

    out = write_hf_folder(name, tmp_path / "hub")
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors"]
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


def test_export_hf_folder_command_writes_the_folder_and_refuses_a_used_one(tmp_path, capsys):
    from thermopylae_agents.cli.export import main

    out = tmp_path / "hub"
    assert main(["--hf-folder", str(out), "--policy", "coop_maskable_ppo"]) == 0
    assert "nothing uploaded" in capsys.readouterr().out
    assert load_safe_policy(out).name == "hub"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(SystemExit) as done:
        main(["--hf-folder", str(out), "--policy", "coop_maskable_ppo"])
    assert done.value.code == 2 and "new or empty folder" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    with pytest.raises(SystemExit):
        main(["--hf-folder", str(tmp_path / "other")])
    assert "needs --policy" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_an_exported_folder_has_a_card_made_from_its_description(tmp_path):
    json_path = tmp_path / "mine.json"
    json_path.write_bytes((POLICY_DIR / "duel_greek_maskable_ppo.json").read_bytes())
    arrays = (POLICY_DIR / "duel_greek_maskable_ppo.safetensors").read_bytes()
    (tmp_path / "mine.safetensors").write_bytes(arrays)
    out = write_hf_folder(json_path, tmp_path / "hub")
    front, body = split_card((out / "README.md").read_text())
    assert yaml.safe_load(front)["license"] == "mit" and body.startswith("# mine")
    assert load_safe_policy(out).env_id == "thermopylae/DuelGreek-v0"


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
    results = json.loads((ROOT / "benchmarks" / f"coop_{'solo' if players == 1 else f'{players}p'}_eval.json")
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
            for r in json.loads((ROOT / "benchmarks" / "exploitability.json").read_text())["rows"]}
    for player in (name, "heuristic"):
        pooled = rows[player, side]["pooled_final"]
        low, high = pooled["ci95"]
        assert f"{_pct(pooled['win_rate'])} [{_pct(low)}, {_pct(high)}]" in text


def test_the_policies_readme_has_no_table_outside_its_generated_ones():
    text = (POLICY_DIR / "README.md").read_text(encoding="utf-8")
    outside = "".join(part.split("<!-- end generated -->")[-1] for part in text.split("<!-- generated: "))
    hand_typed = [line for line in outside.splitlines() if line.startswith("|")]
    assert hand_typed == [], hand_typed
