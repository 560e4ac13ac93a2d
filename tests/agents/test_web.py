"""The browser app's server (``thermopylae web``): its API through Starlette's TestClient, bad input
answered with 400/404 and a one-line message, games isolated and freed, records downloaded and replayed."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from thermopylae_agents.web.app import STATIC_FILES, create_app  # noqa: E402
from thermopylae_env.record_format import load_record  # noqa: E402
from thermopylae_env.records import replay_record  # noqa: E402


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
    for name, media in STATIC_FILES.items():
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and response.headers["content-type"] == media
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
    assert view["terminated"] and any("seat 1 (coop_2p_maskable_ppo) played" in line for line in view["log"])


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
    response = client.post("/api/games", content=body)
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
            response = client.post(path, content=body)
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
        assert view["log"][0] == f"seat 0 ({path}) played"


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
    assert any(line.startswith("greek (duel_greek_maskable_ppo): ") for line in view["log"])
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
    assert client.get(f"/api/games/{key}").json()["view"]["log"][0] == "seat 0 (search) played"
