"""The browser app's server (``thermopylae web``): its API through Starlette's TestClient, bad input
answered with 400/404 and a one-line message, games isolated and freed, records downloaded and replayed."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from thermopylae_agents.web.app import STATIC_TYPES, create_app  # noqa: E402
from thermopylae_agents.web.sessions import SearchWarmup, Store  # noqa: E402
from thermopylae_agents.web.views import END_SENTENCES  # noqa: E402
from thermopylae_env.record_format import load_record  # noqa: E402
from thermopylae_env.records import replay_record  # noqa: E402

_JSON = {"Content-Type": "application/json"}


@pytest.fixture
def client():
    with TestClient(create_app(allowed_hosts=["testserver"])) as test_client:
        yield test_client


def _new(client: TestClient, **body) -> tuple[str, dict]:
    response = client.post("/api/games", json=body)
    assert response.status_code == 200, response.text
    return response.json()["id"], response.json()["view"]


def _act(client: TestClient, key: str, action: int) -> dict:
    response = client.post(f"/api/games/{key}/action", json={"action": action})
    assert response.status_code == 200, response.text
    return response.json()["view"]


def _play_first_legal(client: TestClient, key: str, view: dict, limit: int = 2000) -> dict:
    for _ in range(limit):
        if view["terminated"]:
            return view
        response = client.post(f"/api/games/{key}/action", json={"action": view["legal"][0]["action"]})
        assert response.status_code == 200, response.text
        view = response.json()["view"]
    raise AssertionError("the game did not end")


def test_the_page_and_its_assets_come_from_the_package_and_nothing_else(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # nothing fetched from another site
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name in ("index.html", "app.js", "style.css"):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200
        assert response.headers["content-type"] == STATIC_TYPES["." + name.rpartition(".")[2]]
        assert "https://" not in response.text and "http://" not in response.text
    for bad in ("/static/app.py", "/static/..%2Fapp.py", "/static/%2e%2e/sessions.py", "/nowhere"):
        response = client.get(bad)
        assert response.status_code == 404 and "error" in response.json()


def test_options_offer_built_in_players_and_shipped_policies_of_each_game(client):
    agents = client.get("/api/options").json()["agents"]
    assert {"heuristic", "random", "search", "coop_maskable_ppo"} <= set(agents["coop"])
    assert "duel_greek_maskable_ppo" in agents["greek"] and "duel_greek_maskable_ppo" not in agents["persian"]


def test_a_coop_game_played_by_a_person_ends_and_its_record_replays_to_the_same_game(client, tmp_path):
    key, view = _new(client, game="coop", seats=["human"], seed=7)
    assert view["to_move"] == "human" and view["line"][0]["white"] > 0 and view["legal"]
    labels = {entry["label"].split("  ")[0] for entry in view["legal"]}
    assert "retreat" in labels
    view = _play_first_legal(client, key, view)
    assert view["won"] is not None and view["legal"] == []
    record = client.get(f"/api/games/{key}/record")
    assert record.status_code == 200 and "attachment" in record.headers["content-disposition"]
    path = tmp_path / "game.jsonl"
    path.write_text(record.text)
    assert replay_record(path)["won"] == view["won"]


def test_an_unfinished_game_downloads_as_a_closed_unfinished_record(client, tmp_path):
    key, view = _new(client, game="coop", seats=["human", "human"], seed=3)
    client.post(f"/api/games/{key}/action", json={"action": view["legal"][0]["action"]})
    path = tmp_path / "part.jsonl"
    path.write_text(client.get(f"/api/games/{key}/record").text)
    record = load_record(path)
    assert len(record.steps) == 1 and record.result["finished"] is False
    assert replay_record(path)["steps"] == 1


def test_agent_seats_move_only_when_advanced_and_people_seats_only_by_action(client):
    key, view = _new(client, game="coop", seats=["heuristic", "human"], seed=11)
    assert view["to_move"] == "agent" and view["legal"] == [] and view["current"] == 0
    refused = client.post(f"/api/games/{key}/action", json={"action": 0})
    assert refused.status_code == 400 and "heuristic" in refused.json()["error"]
    for _ in range(200):
        if view["to_move"] != "agent":
            break
        view = client.post(f"/api/games/{key}/advance").json()["view"]
    assert view["terminated"] or (view["to_move"] == "human" and view["current"] == 1)
    if not view["terminated"]:
        refused = client.post(f"/api/games/{key}/advance")
        assert refused.status_code == 400 and "person" in refused.json()["error"]


def test_a_game_of_agents_only_is_watched_to_its_end(client):
    key, view = _new(client, game="coop", seats=["heuristic", "coop_2p_maskable_ppo"], seed=2)
    for _ in range(500):
        if view["terminated"]:
            break
        view = client.post(f"/api/games/{key}/advance").json()["view"]
    assert view["terminated"] and any(line.startswith("seat 1 ") for line in view["log"])
    assert view["ending"] == END_SENTENCES["coop", view["reason"]]


def test_fight_odds_are_exact_dice_odds_of_each_legal_fight(client):
    key, view = _new(client, game="coop", seats=["human"], seed=1)
    fights = {entry["action"]: entry for entry in view["odds"]}
    assert fights and set(fights) <= {entry["action"] for entry in view["legal"]}
    white, red = view["line"][0]["white"], view["line"][0]["red"]
    for entry in view["legal"]:
        words = entry["label"].split()
        if words[0] != "fight":
            continue
        value, support = int(words[1]), int(words[2].lstrip("+"))
        odds = fights[entry["action"]]
        dice = support + (1 if view["marker"] in view["die_markers"] else 0)
        totals = _dice_totals(dice)
        beat = sum(p for s, p in totals.items() if value + s >= white)
        kill = sum(p for s, p in totals.items() if value + s >= red)
        assert odds["beat1"] == pytest.approx(beat, abs=1e-6)
        assert odds["kill1"] == pytest.approx(kill, abs=1e-6)


def _dice_totals(dice: int) -> dict[int, float]:
    totals = {0: 1.0}
    for _ in range(dice):
        step: dict[int, float] = {}
        for total, p in totals.items():
            for face in range(1, 7):
                step[total + face] = step.get(total + face, 0.0) + p / 6
        totals = step
    return totals


def test_hints_give_a_policys_probabilities_or_a_players_choice_among_legal_moves(client):
    key, view = _new(client, game="coop", seats=["human"], seed=4)
    legal = {entry["action"] for entry in view["legal"]}
    policy = client.post(f"/api/games/{key}/hint", json={"agent": "coop_maskable_ppo"}).json()
    assert policy["choice"] in legal and {p["action"] for p in policy["probabilities"]} <= legal
    assert 0.0 < sum(p["p"] for p in policy["probabilities"]) <= 1.0 + 1e-6
    heuristic = client.post(f"/api/games/{key}/hint", json={"agent": "heuristic"}).json()
    assert heuristic["probabilities"] is None and heuristic["choice"] in legal
    assert client.get(f"/api/games/{key}").json()["view"]["turn"] == view["turn"]  # a hint plays nothing


def test_a_search_hint_gives_each_searched_actions_win_chance_and_the_actions_not_searched(client):
    key, view = _new(client, game="coop", seats=["human", "human"], seed=4)
    legal = {entry["action"] for entry in view["legal"]}
    for _ in range(30):  # to a position with more than one action worth searching
        hint = client.post(f"/api/games/{key}/hint", json={"agent": "search"})
        assert hint.status_code == 200, hint.text
        hint = hint.json()
        if len(hint["search"]["searched"]) > 1:
            break
        view = _act(client, key, hint["choice"])
        legal = {entry["action"] for entry in view["legal"]}
    search = hint["search"]
    assert hint["probabilities"] is None and hint["choice"] in legal and len(search["searched"]) > 1
    assert hint["choice"] in {e["action"] for e in search["searched"]}
    for entry in search["searched"]:
        assert 0.0 <= entry["low"] <= entry["win"] <= entry["high"] <= 1.0 and entry["rollouts"] > 0
    shown = [e["action"] for e in search["searched"]] + [e["action"] for e in search["not_searched"]]
    assert sorted(shown) == sorted(legal)
    assert {e["why"] for e in search["not_searched"]} <= {"dominated", "beyond max_candidates"}


def test_a_duel_turn_is_played_as_each_side_against_an_agent(client):
    for side, opponent in (("greek", "heuristic"), ("persian", "duel_greek_maskable_ppo")):
        key, view = _new(client, game="duel", side=side, opponent=opponent, seed=5)
        assert view["side"] == side and view["my_move"] and len(view["hand"]) >= 4
        turn = view["turn"]
        while view["turn"] == turn and not view["terminated"]:
            view = _act(client, key, view["legal"][-1]["action"])
        assert view["turn"] == turn + 1 or view["terminated"]
        hint = client.post(f"/api/games/{key}/hint", json={"agent": "heuristic"}).json()
        assert hint["choice"] in {entry["action"] for entry in view["legal"]}


@pytest.mark.parametrize("body, needle", [
    (b"", "game must be"),
    (b"[1, 2]", "JSON object"),
    (b"{", "not valid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b'{"game": "chess"}', "game must be"),
    (b'{"game": "coop", "seats": "human"}', "seats must be a list"),
    (b'{"game": "coop", "seats": ["human", "human", "human", "human", "human"]}', "1 to 4"),
    (b'{"game": "coop", "seats": ["/etc/passwd"]}', "seat 0 must be one of"),
    (b'{"game": "coop", "seats": ["model.zip"]}', "seat 0 must be one of"),
    (b'{"game": "coop", "seats": ["human"], "seed": -1}', "seed must be"),
    (b'{"game": "coop", "seats": ["human"], "seed": true}', "seed must be"),
    (b'{"game": "coop", "seats": ["human"], "seed": 1.5}', "seed must be"),
    (b'{"game": "coop", "seats": ["human"], "state": {}}', "unknown field"),
    (b'{"game": "coop", "seats": ["coop_2p_maskable_ppo"]}', "num_players=2"),
    (b'{"game": "duel", "side": "spartan", "opponent": "heuristic"}', "side must be"),
    (b'{"game": "duel", "side": "greek", "opponent": "duel_greek_maskable_ppo"}', "the opponent must be"),
    (b"[" * 100000 + b"]" * 100000, "JSON"),
])
def test_bad_new_game_requests_get_400_with_a_message(client, body, needle):
    response = client.post("/api/games", content=body, headers=_JSON)
    assert response.status_code == 400
    assert needle in response.json()["error"] and "\n" not in response.json()["error"]


@pytest.mark.parametrize("body, needle", [
    ({}, "must give the action"),
    ({"action": "0"}, "integer"),
    ({"action": True}, "integer"),
    ({"action": 10**30}, "not legal"),
    ({"action": -1}, "not legal"),
    ({"action": 71}, "not legal"),
    ({"action": 0, "state": 1}, "unknown field"),
])
def test_bad_actions_get_400_and_change_nothing(client, body, needle):
    key, view = _new(client, game="coop", seats=["human"], seed=9)
    response = client.post(f"/api/games/{key}/action", json=body)
    assert response.status_code == 400 and needle in response.json()["error"]
    assert client.get(f"/api/games/{key}").json()["view"] == view


def test_unknown_ids_get_404_and_games_of_different_ids_are_isolated(client):
    for path in ("/api/games/nope", "/api/games/nope/record", "/api/replays/nope"):
        assert client.get(path).status_code == 404
    assert client.post("/api/games/nope/action", json={"action": 0}).status_code == 404
    first, one = _new(client, game="coop", seats=["human"], seed=1)
    second, two = _new(client, game="coop", seats=["human"], seed=1)
    assert first != second and len(first) >= 20
    client.post(f"/api/games/{first}/action", json={"action": one["legal"][0]["action"]})
    assert client.get(f"/api/games/{second}").json()["view"] == two
    assert client.get(f"/api/replays/{first}").status_code == 404  # a game is not a replay
    assert client.delete(f"/api/games/{first}").status_code == 200
    assert client.get(f"/api/games/{first}").status_code == 404


def test_idle_games_are_freed_and_the_number_of_games_is_capped():
    with TestClient(create_app(allowed_hosts=["testserver"], idle_seconds=0.2, max_games=2)) as client:
        key, _ = _new(client, game="coop", seats=["human"])
        _new(client, game="coop", seats=["human"])
        full = client.post("/api/games", json={"game": "coop", "seats": ["human"]})
        assert full.status_code == 400 and "limit" in full.json()["error"]
        time.sleep(0.3)
        assert client.get(f"/api/games/{key}").status_code == 404
        _new(client, game="coop", seats=["human"])
        folder = client.app.state.folder
        assert len(list(folder.iterdir())) == 1  # the freed games' record files are gone


def test_a_replay_steps_forward_and_back_through_a_recorded_game(client):
    key, view = _new(client, game="duel", side="greek", opponent="random", seed=8)
    for _ in range(6):
        view = _act(client, key, view["legal"][0]["action"])
    text = client.get(f"/api/games/{key}/record").text
    response = client.post("/api/replays", json={"text": text, "name": "mine.jsonl"})
    assert response.status_code == 200, response.text
    replay, first = response.json()["id"], response.json()["view"]
    assert first["index"] == 0 and first["last"] == 6 and first["name"] == "mine.jsonl"
    forward = client.get(f"/api/replays/{replay}?step=6").json()["view"]
    assert forward["hand"] == view["hand"] and forward["action_name"]
    assert client.get(f"/api/replays/{replay}?step=0").json()["view"] == first
    for bad in ("-1", "7", "x", "1e3", ""):
        assert client.get(f"/api/replays/{replay}?step={bad}").status_code == 400


@pytest.mark.parametrize("text, needle", [
    ("", "empty"),
    ("not json\n", "not valid JSON"),
    ('{"type": "header"}\n', "not a thermopylae game record"),
])
def test_a_bad_upload_is_refused_with_the_readers_message_and_no_file_path(client, text, needle):
    response = client.post("/api/replays", json={"text": text, "name": "bad.jsonl"})
    assert response.status_code == 400 and needle in response.json()["error"]
    assert "thermopylae-web-" not in response.json()["error"]  # the server's own file names stay private


def test_a_record_that_does_not_replay_to_the_same_game_is_refused(client):
    key, view = _new(client, game="coop", seats=["human"], seed=12)
    client.post(f"/api/games/{key}/action", json={"action": view["legal"][0]["action"]})
    lines = client.get(f"/api/games/{key}/record").text.splitlines()
    step = json.loads(lines[1])
    step["reward"] = 5.0
    lines[1] = json.dumps(step)
    response = client.post("/api/replays", json={"text": "\n".join(lines) + "\n"})
    assert response.status_code == 400 and "does not replay" in response.json()["error"]


def test_replay_requests_name_only_listed_records_or_an_upload(client, tmp_path):
    for body, needle in (({}, "either"), ({"text": "x", "listed": 0}, "either"), ({"listed": 0}, "listed"),
                         ({"path": "/etc/passwd"}, "unknown field"), ({"text": 5}, "text must be")):
        response = client.post("/api/replays", json=body)
        assert response.status_code == 400 and needle in response.json()["error"]


def test_records_given_on_the_command_line_are_offered_by_name_and_opened_by_number(tmp_path):
    with TestClient(create_app(allowed_hosts=["testserver"])) as client:
        key, view = _new(client, game="coop", seats=["human"], seed=5)
        _play_first_legal(client, key, view)
        path = tmp_path / "listed.jsonl"
        path.write_text(client.get(f"/api/games/{key}/record").text)
    with TestClient(create_app(records=[str(path)], allowed_hosts=["testserver"])) as client:
        assert client.get("/api/options").json()["records"] == ["listed.jsonl"]
        response = client.post("/api/replays", json={"listed": 0})
        assert response.status_code == 200 and response.json()["view"]["last"] >= 1


def test_a_missing_record_on_the_command_line_is_one_line_error():
    with pytest.raises(ValueError, match="no such file"):
        create_app(records=["/nonexistent/record.jsonl"])


def test_requests_for_another_host_name_are_refused():
    with TestClient(create_app()) as client:  # the default: the loopback names only
        assert client.get("/", headers={"host": "attacker.example"}).status_code == 400
        assert client.get("/", headers={"host": "127.0.0.1:8000"}).status_code == 200


def test_the_web_command_names_the_extra_when_it_is_missing(monkeypatch, capsys):
    import sys

    from thermopylae_agents.cli.app import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn now raises ImportError
    assert main(["web", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "'web' extra" in err and err.count("\n") == 1


def test_the_web_command_refuses_a_bad_agent_spec_in_one_line(capsys):
    from thermopylae_agents.cli.app import main

    assert main(["web", "--agent", "search:x=1", "--port", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("case", ["missing", "folder", "not a zip", "not UTF-8 json"])
def test_the_web_command_refuses_an_agent_that_does_not_load_before_serving(case, tmp_path, monkeypatch,
                                                                           capsys):
    from thermopylae_agents.cli.app import main

    def serve(*args, **kwargs):
        raise AssertionError("the server started")

    monkeypatch.setattr("thermopylae_agents.cli.web._serve", serve)
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"\xff\xfe not a zip")
    json_file = tmp_path / "bad.json"
    json_file.write_bytes(b"\xff\xfe\x00")
    spec = {"missing": str(tmp_path / "missing.zip"), "folder": str(tmp_path) + "/",
            "not a zip": str(bad), "not UTF-8 json": str(json_file)}[case]
    assert main(["web", "--agent", spec, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("thermopylae web: error:"), err


_BAD_BODIES = [b"", b"null", b"0", b'"x"', b"[]", b"{", b"\x00\xff", b'{"action": null}', b'{"agent": 5}',
               b'{"agent": "../../etc/passwd"}', b'{"text": null}', b'{"listed": -1}', b'{"step": 1}',
               b'{"seats": [null], "game": "coop"}', b'{"game": "duel", "side": null, "opponent": []}',
               b'{"action": 1e400}', b'{"action": 1.0}', b'{"x": ' + b"1" * 5000 + b"}"]


def test_no_request_of_any_shape_gets_a_server_error(client):
    key, _ = _new(client, game="coop", seats=["human"], seed=1)  # a person's seat: advance is refused too
    paths = ["/api/games", f"/api/games/{key}/action", f"/api/games/{key}/advance", f"/api/games/{key}/hint",
             "/api/replays", "/api/games/nope/hint"]
    for path in paths:
        for body in _BAD_BODIES:
            response = client.post(path, content=body, headers=_JSON)
            assert 400 <= response.status_code < 500, (path, body, response.text)
            assert response.json()["error"]
        for method in ("PUT", "PATCH"):
            response = client.request(method, path)
            assert response.status_code == 405 and response.json()["error"]


def test_a_pickle_free_policy_file_given_on_the_command_line_is_offered_for_its_game_only():
    from thermopylae_agents.policies.safe_policy import description_path

    path = str(description_path("coop_maskable_ppo"))
    with TestClient(create_app(agents=[path], allowed_hosts=["testserver"])) as client:
        agents = client.get("/api/options").json()["agents"]
        assert path in agents["coop"] and path not in agents["greek"] + agents["persian"]
        key, view = _new(client, game="coop", seats=[path], seed=6)
        view = client.post(f"/api/games/{key}/advance").json()["view"]
        assert view["log"] and view["log"][0].startswith("seat 0 ")  # the policy's move, by the engine


def _watch(client: TestClient, key: str, view: dict, limit: int = 3000) -> dict:
    for _ in range(limit):
        if view["terminated"]:
            return view
        response = client.post(f"/api/games/{key}/advance")
        assert response.status_code == 200, response.text
        view = response.json()["view"]
    raise AssertionError("the game did not end")


def test_a_duel_of_two_agents_is_watched_to_its_end_with_both_hands_shown(client, tmp_path):
    key, view = _new(client, game="duel", greek="duel_greek_maskable_ppo", persian="heuristic", seed=4)
    assert view["players"] == {"greek": "duel_greek_maskable_ppo", "persian": "heuristic"}
    assert view["watched"] and view["to_move"] == "agent" and view["legal"] == []
    assert len(view["opponent_cards"]) == view["opponent_hand"]  # a watched game hides no hand
    refused = client.post(f"/api/games/{key}/action", json={"action": 0})
    assert refused.status_code == 400 and "advance" in refused.json()["error"]
    view = _watch(client, key, view)
    assert view["winner"] in ("greek", "persian") and view["won"] == (view["winner"] == "greek")
    assert view["to_move"] is None
    assert any(line.startswith("Greek ") for line in view["log"])  # the agent's moves, once each
    assert view["ending"] == END_SENTENCES["duel", view["reason"]]
    assert client.post(f"/api/games/{key}/advance").json()["error"] == "the game is over"
    path = tmp_path / "duel.jsonl"
    path.write_text(client.get(f"/api/games/{key}/record").text)
    assert replay_record(path)["won"] == view["won"]  # the agent's moves are recorded as a person's


def test_a_duel_of_two_policies_is_watched_to_its_end(client):
    key, view = _new(client, game="duel", greek="duel_greek_maskable_ppo",
                     persian="duel_persian_maskable_ppo", seed=9)
    assert _watch(client, key, view)["winner"] in ("greek", "persian")


def test_a_person_may_play_either_duel_side_named_by_side_and_the_agent_is_never_advanced(client):
    key, view = _new(client, game="duel", greek="random", persian="human", seed=6)
    assert view["side"] == "persian" and view["to_move"] == "human" and not view["watched"]
    assert view["opponent_cards"] is None  # the agent's hand stays hidden from the person
    refused = client.post(f"/api/games/{key}/advance")
    assert refused.status_code == 400 and "choose your action" in refused.json()["error"]
    view = _play_first_legal(client, key, view)
    assert view["winner"] in ("greek", "persian")


@pytest.mark.parametrize("body, needle", [
    ({"greek": "human", "persian": "human"}, "an agent on at least one side"),
    ({"greek": "alphazero", "persian": "heuristic"}, "greek must be one of"),
    ({"greek": "heuristic", "persian": "duel_greek_maskable_ppo"}, "persian must be one of"),
    ({"greek": "heuristic"}, "persian must be one of"),
    ({"greek": "heuristic", "persian": ["random"]}, "persian must be one of"),
    ({"greek": "/etc/passwd", "persian": "heuristic"}, "greek must be one of"),
    ({"greek": "heuristic", "persian": "random", "side": "greek"}, "unknown field"),
    ({"side": "greek", "opponent": "human"}, "the opponent must be one of"),
    ({"greek": "heuristic", "persian": "random", "seed": "1"}, "seed must be"),
])
def test_bad_duel_sides_get_400_with_a_one_line_message(client, body, needle):
    response = client.post("/api/games", json={"game": "duel", **body})
    assert response.status_code == 400, response.text
    assert needle in response.json()["error"] and "\n" not in response.json()["error"]
    assert len(client.app.state.store) == 0


def test_a_slow_agent_move_leaves_the_server_answering_other_requests(client):
    import threading

    key, _ = _new(client, game="coop", seats=["search", "human"], seed=3)
    other, view = _new(client, game="coop", seats=["human"], seed=3)
    game, _ = client.app.state.store.get(key, "coop")
    answered = threading.Event()
    search = game.agents[0]
    in_time = []

    def slow_search(obs, mask):  # the search seat thinks until another tab was answered
        in_time.append(answered.wait(timeout=10))
        return search(obs, mask)

    game.agents[0] = slow_search
    moving = threading.Thread(target=lambda: client.post(f"/api/games/{key}/advance"))
    moving.start()
    try:
        assert client.get(f"/api/games/{other}").json()["view"] == view
        assert _act(client, other, view["legal"][0]["action"])["turn"] >= view["turn"]
        answered.set()
    finally:
        answered.set()
        moving.join(timeout=60)
    assert in_time == [True]  # the other tab was answered while the agent thought, not after
    assert client.get(f"/api/games/{key}").json()["view"]["log"][0].startswith("seat 0 ")


_FOREIGN_ORIGINS = ["http://evil.example", "null", "http://127.0.0.1:9999", "https://testserver",
                    "http://testserver:8080", "http://testserver.evil.example", "not an origin"]


def _state_changing_requests(key: str) -> list[tuple[str, str, dict | None]]:
    """One request of each state-changing endpoint, each of which the page's own origin may send."""
    return [("POST", "/api/games", {"game": "coop", "seats": ["human"]}),
            ("POST", f"/api/games/{key}/action", {"action": 0}),
            ("POST", f"/api/games/{key}/advance", {}),
            ("POST", f"/api/games/{key}/hint", {"agent": "heuristic"}),
            ("POST", "/api/replays", {"text": "x"}),
            ("DELETE", f"/api/games/{key}", None),
            ("PUT", f"/api/games/{key}", {}),
            ("PATCH", f"/api/games/{key}", {})]


def test_a_cross_site_simple_post_is_refused_and_creates_nothing(client):
    # what any web page can send without asking: a form-like POST of text/plain from another origin
    response = client.post("/api/games", content=b'{"game": "coop", "seats": ["human"]}',
                           headers={"Content-Type": "text/plain", "Origin": "http://evil.example"})
    assert response.status_code == 403
    assert "origin" in response.json()["error"] and "\n" not in response.json()["error"]
    assert len(client.app.state.store) == 0


@pytest.mark.parametrize("origin", _FOREIGN_ORIGINS)
def test_every_state_changing_request_from_a_foreign_origin_gets_403_and_changes_nothing(client, origin):
    key, view = _new(client, game="coop", seats=["heuristic"], seed=6)
    for method, path, body in _state_changing_requests(key):
        response = client.request(method, path, json=body, headers={"Origin": origin})
        assert response.status_code == 403, (method, path, response.text)
        assert response.json()["error"]
    assert len(client.app.state.store) == 1
    assert client.get(f"/api/games/{key}").json()["view"] == view


def test_a_cross_site_fetch_without_origin_gets_403_and_same_site_fetches_are_answered(client):
    key, view = _new(client, game="coop", seats=["human"], seed=6)
    for method, path, body in _state_changing_requests(key):
        response = client.request(method, path, json=body, headers={"Sec-Fetch-Site": "cross-site"})
        assert response.status_code == 403, (method, path, response.text)
    assert client.get(f"/api/games/{key}").json()["view"] == view
    for site in ("same-origin", "same-site", "none"):
        response = client.post("/api/games", json={"game": "coop", "seats": ["human"]},
                               headers={"Sec-Fetch-Site": site})
        assert response.status_code == 200, (site, response.text)


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonl",
                                          "application/json-seq"])
def test_a_json_body_sent_as_another_content_type_gets_415_and_changes_nothing(client, content_type):
    key, view = _new(client, game="coop", seats=["human"], seed=6)
    headers = {} if content_type is None else {"Content-Type": content_type}
    for path, body in (("/api/games", {"game": "coop", "seats": ["human"]}),
                       (f"/api/games/{key}/action", {"action": view["legal"][0]["action"]}),
                       (f"/api/games/{key}/hint", {"agent": "heuristic"}),
                       ("/api/replays", {"listed": 0})):
        response = client.post(path, content=json.dumps(body).encode(), headers=headers)
        assert response.status_code == 415, (path, response.text)
        assert "application/json" in response.json()["error"] and "\n" not in response.json()["error"]
    assert len(client.app.state.store) == 1
    assert client.get(f"/api/games/{key}").json()["view"] == view


def test_the_pages_own_requests_from_its_origin_are_answered():
    # what the page's fetch sends: its own origin, same-origin, and JSON bodies as application/json
    with TestClient(create_app(), base_url="http://127.0.0.1:8000") as client:
        own = {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}
        new_game = {"game": "coop", "seats": ["heuristic", "human"], "seed": 11}
        response = client.post("/api/games", json=new_game, headers=own)
        assert response.status_code == 200, response.text
        key, view = response.json()["id"], response.json()["view"]
        while view["to_move"] == "agent":  # seed 11: the agent's turn ends with the person to move
            response = client.post(f"/api/games/{key}/advance", json={}, headers=own)
            assert response.status_code == 200, response.text
            view = response.json()["view"]
        response = client.post(f"/api/games/{key}/action", json={"action": view["legal"][0]["action"]},
                               headers=own)
        assert response.status_code == 200, response.text
        hint = client.post(f"/api/games/{key}/hint", json={"agent": "heuristic"}, headers=own)
        assert hint.status_code == 200, hint.text
        upload = {"text": client.get(f"/api/games/{key}/record").text, "name": "mine.jsonl"}
        upload = client.post("/api/replays", content=json.dumps(upload).encode(),
                             headers={**own, "Content-Type": "application/json; charset=utf-8"})
        assert upload.status_code == 200, upload.text
        assert client.delete(f"/api/games/{key}", headers=own).status_code == 200
    with TestClient(create_app(), base_url="http://[::1]:8123") as client:
        response = client.post("/api/games", json={"game": "coop", "seats": ["human"]},
                               headers={"Origin": "http://[::1]:8123"})
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("seats, method, path, body", [
    (["human"], "POST", "action", {"action": None}),
    (["heuristic"], "POST", "advance", {}),
    (["human"], "POST", "hint", {"agent": "heuristic"}),
    (["human"], "GET", "", None),
    (["human"], "GET", "record", None),
])
def test_a_request_whose_game_is_deleted_after_it_was_looked_up_gets_409(client, monkeypatch, seats, method,
                                                                          path, body):
    key, view = _new(client, game="coop", seats=seats, seed=2)
    if body == {"action": None}:
        body = {"action": view["legal"][0]["action"]}
    store = client.app.state.store
    looked_up = store.get

    def get_then_deleted(key: str, kind: str):
        found = looked_up(key, kind)
        store.remove(key)  # another tab's DELETE lands between this request's lookup and its turn
        return found

    monkeypatch.setattr(store, "get", get_then_deleted)
    response = client.request(method, f"/api/games/{key}/{path}".rstrip("/"), json=body)
    assert response.status_code == 409, response.text
    assert "deleted" in response.json()["error"] and "\n" not in response.json()["error"]
    assert len(store) == 0 and list(client.app.state.folder.iterdir()) == []


class _Closable:
    kind = "coop"

    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_an_idle_game_is_not_freed_under_a_request_that_holds_it(tmp_path):
    store = Store(tmp_path, idle_seconds=1.0)
    item = _Closable()
    store.add("key", item)
    _, guard = store.get("key", "coop")
    later = time.monotonic() + 10.0
    with guard:  # a move in progress, longer than the idle time
        store.purge(now=later)
        assert item.closed == 0 and len(store) == 1
    store.purge(now=later)
    assert item.closed == 1 and len(store) == 0


@contextlib.contextmanager
def _served(app):
    """The app served by uvicorn on a free loopback port, in this process (its log reaches caplog)."""
    uvicorn = pytest.importorskip("uvicorn")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30.0
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30.0)
        sock.close()


def _race(http, key: str, path: str, body: dict) -> tuple:
    """A move and the deletion of its game, sent at the same moment from two threads."""
    start = threading.Barrier(2)
    answers: dict[str, object] = {}

    def send(name: str, method: str, url: str, body: dict | None) -> None:
        start.wait()
        answers[name] = http.request(method, url, json=body)

    threads = [threading.Thread(target=send, args=("move", "POST", f"/api/games/{key}/{path}", body)),
               threading.Thread(target=send, args=("delete", "DELETE", f"/api/games/{key}", None))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60.0)
    return answers["move"], answers["delete"]


def test_moves_racing_the_deletion_of_their_game_get_200_404_or_409_and_log_no_error(caplog):
    httpx = pytest.importorskip("httpx")
    caplog.set_level(logging.INFO)
    app = create_app()
    moves, deletions = [], []
    with _served(app) as url, httpx.Client(base_url=url, timeout=60.0) as http:
        for seed in range(24):
            seats = ["human"] if seed % 2 else ["heuristic"]
            created = http.post("/api/games", json={"game": "coop", "seats": seats, "seed": seed})
            assert created.status_code == 200, created.text
            key, view = created.json()["id"], created.json()["view"]
            path, body = ("action", {"action": view["legal"][0]["action"]}) if seed % 2 else ("advance", {})
            move, deletion = _race(http, key, path, body)
            moves.append(move)
            deletions.append(deletion)
        assert len(app.state.store) == 0 and list(Path(app.state.folder).iterdir()) == []
    assert {move.status_code for move in moves} <= {200, 404, 409}, [move.text for move in moves]
    assert all(deletion.status_code == 200 for deletion in deletions), [d.text for d in deletions]
    for move in moves:
        assert move.status_code == 200 or "\n" not in move.json()["error"]
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]
    assert errors == [], [record.getMessage() for record in errors]


# --- the log: one line per thing that happened, oldest first ---------------------------------------------

_COOP_MOVES = ("retreats", "fights", "draws", "declined", "discards")


def _move_lines(lines: list[str]) -> list[str]:
    """The lines that name a seat's own move (a retreat, a fight, a draw given, declined or discarded)."""
    return [line for line in lines if any(word in line.split(":")[0] for word in _COOP_MOVES)]


def test_an_agents_move_is_logged_once_as_the_engine_describes_it(client):
    key, view = _new(client, game="coop", seats=["heuristic", "random"], seed=2)
    log = list(view["log"])
    for _ in range(40):
        if view["terminated"]:
            break
        view = client.post(f"/api/games/{key}/advance").json()["view"]
        assert len(_move_lines(view["events"])) == 1, view["events"]  # the move, said once
        assert not any(line.endswith(" played") for line in view["events"])
        log += view["events"]
    assert view["log"] == log[-len(view["log"]):]  # the log is the engine's events and nothing else


def test_a_watched_duel_logs_each_agent_move_once():
    with TestClient(create_app(allowed_hosts=["testserver"])) as client:
        key, view = _new(client, game="duel", greek="heuristic", persian="random", seed=3)
        own = []
        for _ in range(12):
            view = client.post(f"/api/games/{key}/advance").json()["view"]
            assert view["events"] and view["log"][-len(view["events"]):] == view["events"]
            assert not any(line.startswith("greek (") for line in view["events"])  # no echo of the move
            own += [line for line in view["events"] if line.startswith("Greek ") and " draws " not in line]
        assert len(own) >= 12  # each Greek move is in the log, as the engine tells it


def test_the_log_reads_oldest_first_and_numbers_its_lines_from_the_first_one_kept(client):
    key, view = _new(client, game="coop", seats=["heuristic"], seed=5)
    assert view["log_start"] == 1
    everything = list(view["log"])
    while not view["terminated"]:
        view = client.post(f"/api/games/{key}/advance").json()["view"]
        everything += view["events"]
    assert len(everything) > len(view["log"])  # long enough that the oldest lines were dropped
    assert view["log"] == everything[-len(view["log"]):] and view["log"][-1].startswith("game over")
    assert view["log_start"] == len(everything) - len(view["log"]) + 1


# --- the end of a game in plain words --------------------------------------------------------------------

def _reason_codes(module) -> set[str]:
    """Every reason an engine's ``_end`` is called with, read from its source (the one place it ends)."""
    import ast
    import inspect

    codes = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "_end":
            codes |= {arg.value for arg in node.args
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
    return codes


def test_every_end_reason_the_engines_can_produce_has_a_plain_sentence():
    import thermopylae_env.coop.rules as coop_rules
    import thermopylae_env.duel.rules as duel_rules
    from thermopylae_env.coop.state import END_REASONS

    coop = _reason_codes(coop_rules)
    assert coop == set(END_REASONS)
    duel = _reason_codes(duel_rules)
    assert duel  # the duel has no list of its reasons: its source is read
    assert set(END_SENTENCES) == {("coop", r) for r in coop} | {("duel", r) for r in duel}
    for (_, code), sentence in END_SENTENCES.items():
        assert f"({code})" not in sentence and "_" not in sentence and sentence.endswith(".")
        assert sentence.startswith(("The Spartans won", "The Spartans lost", "The Greeks won",
                                    "The Persians won"))


def test_a_finished_game_says_why_in_a_sentence_and_a_running_one_says_nothing(client):
    key, view = _new(client, game="coop", seats=["human"], seed=7)
    assert view["ending"] is None
    view = _play_first_legal(client, key, view)
    assert view["ending"] == END_SENTENCES["coop", view["reason"]]
    key, view = _new(client, game="duel", greek="human", persian="random", seed=7)
    view = _play_first_legal(client, key, view)
    assert view["ending"] == END_SENTENCES["duel", view["reason"]]
    text = client.get(f"/api/games/{key}/record").text
    created = client.post("/api/replays", json={"text": text}).json()
    last = client.get(f"/api/replays/{created['id']}?step={created['view']['last']}").json()["view"]
    assert last["ending"] == view["ending"] and created["view"]["ending"] is None


# --- cards to click ---------------------------------------------------------------------------------------

def test_each_coop_card_carries_the_actions_that_play_it_or_why_it_cannot_be_played(client):
    key, view = _new(client, game="coop", seats=["human", "human"], seed=11)
    legal = {entry["action"]: entry for entry in view["legal"]}
    acting = view["current"]
    for seat, hand in enumerate(view["hands"]):
        for value, play in zip(hand, view["hand_play"][seat], strict=True):
            if seat == acting:  # every legal fight with this card, and nothing else
                fights = [a for a, e in legal.items() if e["card"] == value and e["seat"] == seat]
                assert play["actions"] == sorted(fights) and play["why"] is None
                assert all(legal[a]["label"].startswith(f"fight {value} ") for a in play["actions"])
            else:
                assert play["actions"] == [] and f"seat {acting}'s turn" in play["why"]
    assert [e["short"] for e in view["legal"] if e["card"] is None] == ["Retreat"]
    view = _act(client, key, 0)  # a retreat: a draw is offered, no card is played now
    assert view["phase"] == "draw_offer"
    assert all(not p["actions"] and "on offer" in p["why"] for hand in view["hand_play"] for p in hand)
    gives = {e["to"]: e["action"] for e in view["legal"] if e.get("to") is not None}
    assert sorted(gives) == [0, 1] and all(e["card"] is None for e in view["legal"])


def test_a_coop_discard_is_one_click_on_a_card_of_the_seat_that_must_discard(client):
    key, view = _new(client, game="coop", seats=["human"], seed=3)
    for _ in range(200):  # give every draw to the one seat until it holds too many cards
        if view["phase"] == "discard" or view["terminated"]:
            break
        gives = [e["action"] for e in view["legal"] if e.get("to") == 0]
        view = _act(client, key, gives[0] if gives else 0)
    assert view["phase"] == "discard", "no discard phase reached"
    for value, play in zip(view["hands"][0], view["hand_play"][0], strict=True):
        assert len(play["actions"]) == 1
        entry = next(e for e in view["legal"] if e["action"] == play["actions"][0])
        assert entry["card"] == value and entry["short"] == f"Discard {value}"


def test_each_duel_card_carries_its_action_and_an_added_card_says_why_it_cannot_be_added_again(client):
    key, view = _new(client, game="duel", side="persian", opponent="random", seed=3)
    assert view["phase"] == "Persian discard phase"
    for card, play in zip(view["hand"], view["hand_play"], strict=True):
        shorts = {e["short"] for e in view["legal"] if e["action"] in play["actions"]}
        assert "Discard it" in shorts and play["why"] is None and not card["added"]
    done = next(e["action"] for e in view["legal"] if e["card"] is None and e["short"].startswith("Done"))
    view = _act(client, key, done)
    for _ in range(20):  # to the Persian's attack
        if view["phase"] == "Persian attack" or view["terminated"]:
            break
        view = _act(client, key, view["legal"][-1]["action"])
    assert view["phase"] == "Persian attack"
    attack = next(k for k, play in enumerate(view["hand_play"]) if play["actions"])
    view = _act(client, key, view["hand_play"][attack]["actions"][0])
    added = [k for k, card in enumerate(view["hand"]) if card["added"]]
    assert len(added) == 1 and sum(b["count"] for b in view["build"]) == 1
    assert view["hand_play"][added[0]] == {"actions": [], "why": "this card is already in your attack"}
    assert any(e["short"].startswith("Commit the attack") for e in view["legal"])


def test_only_a_person_to_move_gets_cards_to_click(client):
    key, view = _new(client, game="coop", seats=["heuristic", "human"], seed=11)
    assert view["to_move"] == "agent" and view["hand_play"] is None
    key, view = _new(client, game="duel", greek="heuristic", persian="random", seed=1)
    assert view["hand_play"] is None


# --- the page's files: Starlette's StaticFiles on the package's folder -----------------------------------

def test_the_favicon_is_served_from_the_package_and_named_by_the_page(client):
    for path in ("/favicon.ico", "/static/favicon.svg"):
        response = client.get(path)
        assert response.status_code == 200 and response.headers["content-type"] == "image/svg+xml"
        assert response.text.lstrip().startswith("<svg") and "script" not in response.text
        assert response.headers["x-content-type-options"] == "nosniff"
    assert 'rel="icon" href="/static/favicon.svg"' in client.get("/").text


def test_every_static_file_has_its_declared_type_and_the_security_headers(client):
    folder = Path(client.app.state.files.folder)
    names = sorted(path.name for path in folder.iterdir())
    assert names == ["app.js", "favicon.svg", "index.html", "style.css"]
    for name in names:
        response = client.get(f"/static/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-type"] == STATIC_TYPES[Path(name).suffix]
        assert "default-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["cache-control"] == "no-store"
        assert response.content == (folder / name).read_bytes()


def test_a_static_file_of_a_kind_not_listed_is_not_served(client, tmp_path):
    (tmp_path / "secret.py").write_text("TOKEN = 1\n")
    (tmp_path / "page.css").write_text("body {}\n")
    client.app.state.files.all_directories = [str(tmp_path)]
    assert client.get("/static/page.css").status_code == 200
    response = client.get("/static/secret.py")
    assert response.status_code == 404 and "TOKEN" not in response.text


_TRAVERSALS = ["/static/../app.py", "/static/..%2fapp.py", "/static/..%2Fapp.py", "/static/%2e%2e/app.py",
               "/static/%2e%2e%2fapp.py", "/static/.%2e/sessions.py", "/static/..%5capp.py",
               "/static/%2e%2e%2f%2e%2e%2fcli%2fweb.py", "/static/../../cli/web.py", "/static//etc/passwd",
               "/static/%2fetc%2fpasswd", "/static/..%252fapp.py", "/static/app.js%00.py", "/static/",
               "/static/../__init__.py", "/static/%2e%2e/%2e%2e/%2e%2e/pyproject.toml"]


def _raw_get(url: str, path: str) -> tuple[int, bytes]:
    """``GET path`` sent byte for byte (an HTTP client would normalise the dots away)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_paths_that_leave_the_static_folder_get_404_and_no_file(caplog):
    with _served(create_app()) as url:
        for path in _TRAVERSALS:
            status, body = _raw_get(url, path)
            assert status in (400, 404), (path, status)
            for secret in (b"create_app", b"def ", b"root:", b"[project]"):
                assert secret not in body, (path, body[:200])
        assert _raw_get(url, "/static/app.js")[0] == 200
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == [], [record.getMessage() for record in errors]


def test_static_files_get_the_host_and_origin_checks_of_every_request():
    with TestClient(create_app(), base_url="http://127.0.0.1:8000") as client:
        assert client.get("/static/app.js", headers={"host": "attacker.example"}).status_code == 400
        assert client.get("/favicon.ico", headers={"host": "attacker.example"}).status_code == 400
        refused = client.post("/static/app.js", headers={"Origin": "http://evil.example"})
        assert refused.status_code == 403 and "origin" in refused.json()["error"]
        assert client.post("/static/app.js").status_code == 405
        assert client.get("/static/app.js").status_code == 200


# --- the search's one-time compile, warmed in the background ---------------------------------------------

def test_the_search_is_not_warmed_unless_asked_and_a_search_hint_makes_it_ready(client):
    assert client.get("/api/status").json() == {"search": "cold"}
    key, _ = _new(client, game="coop", seats=["human"], seed=4)
    assert client.post(f"/api/games/{key}/hint", json={"agent": "search"}).status_code == 200
    assert client.get("/api/status").json() == {"search": "ready"}


def test_the_search_warm_up_runs_in_a_background_thread_while_requests_are_answered():
    release = threading.Event()
    warmup = SearchWarmup(warm=lambda: release.wait(timeout=30))
    with TestClient(create_app(allowed_hosts=["testserver"], warm_search=True, warmup=warmup)) as client:
        assert client.get("/api/status").json() == {"search": "warming"}
        assert client.get("/").status_code == 200  # the server answers while the search compiles
        key, view = _new(client, game="coop", seats=["human"], seed=1)
        assert _act(client, key, view["legal"][0]["action"])["turn"] >= view["turn"]
        assert warmup.thread.daemon and warmup.thread.is_alive()
        release.set()
        warmup.thread.join(timeout=30)
        assert client.get("/api/status").json() == {"search": "ready"}


def test_a_failed_warm_up_is_reported_and_leaves_the_server_working(caplog):
    def broken() -> None:
        raise RuntimeError("no compiler")

    warmup = SearchWarmup(warm=broken)
    with TestClient(create_app(allowed_hosts=["testserver"], warm_search=True, warmup=warmup)) as client:
        warmup.thread.join(timeout=30)
        assert client.get("/api/status").json() == {"search": "failed"}
        assert client.get("/api/options").status_code == 200
    assert any("no compiler" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("argv, warm", [([], True), (["--no-warm"], False)])
def test_the_web_command_warms_the_search_unless_told_not_to(monkeypatch, argv, warm):
    import thermopylae_agents.cli.web as web_cli
    import thermopylae_agents.web.app as web_app

    made = {}
    monkeypatch.setattr(web_app, "create_app", lambda **kwargs: made.update(kwargs) or "app")
    monkeypatch.setattr(web_cli, "_serve", lambda app, sock: sock.close() or 0)
    assert web_cli.main(["--port", "0", *argv]) == 0
    assert made["warm_search"] is warm
