"""The OpenSpiel games (thermopylae_agents.openspiel): OpenSpiel's own checks, the information they hide,
serialisation, and the same games as the rules engines from the same chance outcomes."""

from __future__ import annotations

import base64
import dataclasses
import json
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open_spiel is not installed (pip install -e '.[openspiel]'; CI installs it)"
)

import thermopylae_agents.openspiel  # noqa: E402,F401  (registers the games)
from thermopylae_agents.openspiel.coop import (  # noqa: E402
    DIE_OUTCOME,
    PERSIAN_OUTCOME,
    SPARTAN_OUTCOME,
)
from thermopylae_agents.openspiel.coop import chance_outcomes_of as coop_deal  # noqa: E402
from thermopylae_agents.openspiel.duel import chance_outcomes_of as duel_deal  # noqa: E402
from thermopylae_env.coop.layout import DECLINE as COOP_DECLINE  # noqa: E402
from thermopylae_env.coop.layout import NUM_ACTIONS as COOP_ACTIONS  # noqa: E402
from thermopylae_env.coop.rules import CoopGame  # noqa: E402
from thermopylae_env.duel.config import SMALL_DUELS  # noqa: E402
from thermopylae_env.duel.layout import (  # noqa: E402
    ADD_BASE,
    DECK_SIZE,
    DECLINE,
    GREEK,
    PERSIAN,
    PLAY_DISCARD_CARD,
)
from thermopylae_env.duel.layout import NUM_ACTIONS as DUEL_ACTIONS  # noqa: E402
from thermopylae_env.duel.rules import DuelGame  # noqa: E402
from thermopylae_env.duel.state import Phase  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
COOP = "python_thermopylae_coop"
DUEL = "python_thermopylae_duel"
# Every game the module offers: each co-op team size and each duel member.
VARIANTS = [(COOP, {"seats": seats}) for seats in (1, 2, 3, 4)] + \
    [(DUEL, {"member": member}) for member in ("full", *SMALL_DUELS)]
VARIANT_IDS = [f"{name.rsplit('_', 1)[1]}-{value}" for name, params in VARIANTS for value in params.values()]


def _play_chance(state, rng: np.random.Generator) -> None:
    outcomes, probs = zip(*state.chance_outcomes(), strict=True)
    state.apply_action(int(rng.choice(outcomes, p=probs)))


def _dealt(game, outcomes: list[int]):
    state = game.new_initial_state()
    for outcome in outcomes:
        state.apply_action(outcome)
    return state


# ----------------------------------------------------------------------------------------------------------
# Loading and OpenSpiel's own checks


def test_both_games_load_after_one_import_with_the_envs_action_spaces():
    coop = pyspiel.load_game(COOP)
    duel = pyspiel.load_game(DUEL)
    assert coop.num_players() == 1 and coop.num_distinct_actions() == COOP_ACTIONS
    assert duel.num_players() == 2 and duel.num_distinct_actions() == DUEL_ACTIONS
    assert duel.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    assert duel.get_type().information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert pyspiel.load_game(COOP, {"seats": 3}).engine.num_players == 3
    assert pyspiel.load_game(f"{COOP}(seats=4)").engine.num_players == 4


def test_coop_rejects_a_seat_count_outside_1_to_4():
    with pytest.raises(ValueError, match="seats must be 1..4"):
        pyspiel.load_game(COOP, {"seats": 5})


@pytest.mark.parametrize("seats", [1, 4])
def test_coop_passes_openspiels_random_simulation_checks(seats):
    pyspiel.random_sim_test(pyspiel.load_game(COOP, {"seats": seats}), num_sims=8, serialize=True,
                            verbose=False)


def test_duel_passes_openspiels_random_simulation_checks():
    pyspiel.random_sim_test(pyspiel.load_game(DUEL), num_sims=2, serialize=True, verbose=False)


@pytest.mark.parametrize("name", [COOP, DUEL])
def test_a_state_survives_serialisation_mid_game(name):
    game = pyspiel.load_game(name)
    state = game.new_initial_state()
    rng = np.random.default_rng(3)
    decisions = 0
    while decisions < 25 and not state.is_terminal():
        if state.is_chance_node():
            _play_chance(state, rng)
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
            decisions += 1
    text = pyspiel.serialize_game_and_state(game, state)
    game2, state2 = pyspiel.deserialize_game_and_state(text)
    assert state2.history() == state.history()
    assert str(state2) == str(state)
    for player in range(game.num_players()):
        assert state2.information_state_string(player) == state.information_state_string(player)
        assert state2.observation_tensor(player) == state.observation_tensor(player)
    assert state2.legal_actions() == state.legal_actions()


def test_chance_outcomes_are_uniform_over_what_is_left():
    coop = pyspiel.load_game(COOP).new_initial_state()
    first = coop.chance_outcomes()
    assert [o for o, _ in first] == list(range(SPARTAN_OUTCOME, PERSIAN_OUTCOME))
    assert sum(p for _, p in first) == pytest.approx(1.0)
    coop.apply_action(SPARTAN_OUTCOME + 7)
    assert SPARTAN_OUTCOME + 7 not in [o for o, _ in coop.chance_outcomes()]
    assert coop.chance_outcomes()[0][1] == pytest.approx(1 / 19)


# ----------------------------------------------------------------------------------------------------------
# What the information state hides


def _swap(order: list[int], i: int, j: int) -> list[int]:
    order = list(order)
    order[i], order[j] = order[j], order[i]
    return order


def test_coop_information_state_hides_the_deck_order_below_the_cards_drawn():
    game = pyspiel.load_game(COOP, {"seats": 2})
    spartan = [int(c) for c in np.random.default_rng(0).permutation(20)]
    persian = [int(r) for r in np.random.default_rng(1).permutation(28)]
    # Two deals that differ only in the order of the bottom two cards of each deck.
    one = _dealt(game, coop_deal(spartan, persian))
    two = _dealt(game, coop_deal(_swap(spartan, 18, 19), _swap(persian, 26, 27)))
    assert str(one) != str(two)
    rng = np.random.default_rng(2)
    compared = 0
    while not one.is_terminal():
        hidden = one.engine_state
        if hidden.spartan_pos > 18 or hidden.persian_pos > 26:
            break  # a swapped card has been drawn: the deals are told apart now
        if one.is_chance_node():
            action = int(rng.choice([o for o, _ in one.chance_outcomes()]))
        else:
            assert one.information_state_string(0) == two.information_state_string(0)
            assert one.information_state_tensor(0) == two.information_state_tensor(0)
            assert one.observation_string(0) == two.observation_string(0)
            assert one.legal_actions() == two.legal_actions()
            action = int(rng.choice(one.legal_actions()))
            compared += 1
        one.apply_action(action)
        two.apply_action(action)
    assert compared > 5


def test_coop_information_state_tensor_is_the_envs_observation():
    game = pyspiel.load_game(COOP)
    state = game.new_initial_state()
    rng = np.random.default_rng(5)
    while state.is_chance_node():
        _play_chance(state, rng)
    expected = game.engine.observe(state.engine_state)
    assert np.array_equal(np.asarray(state.information_state_tensor(0), np.float32), expected)
    assert np.array_equal(np.asarray(state.observation_tensor(0), np.float32), expected)


def _duel_at_a_persian_attack(seed: int):
    game = pyspiel.load_game(DUEL)
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            _play_chance(state, rng)
            continue
        hidden = state.engine_state
        if hidden.phase == Phase.ATTACK and len(state.legal_actions()) > 2:
            return state
        legal = state.legal_actions()
        state.apply_action(int(rng.choice([a for a in legal if a != DECLINE] or legal)))
    raise AssertionError("no attack with a card to add in this game")


def test_duel_greek_does_not_see_the_cards_a_persian_adds_then_takes_back():
    state = _duel_at_a_persian_attack(seed=4)
    declined = state.clone()
    declined.apply_action(DECLINE)
    added = state.clone()
    added.apply_action(next(a for a in added.legal_actions() if a >= ADD_BASE))
    added.apply_action(DECLINE)
    assert str(declined) == str(added)  # the same game goes on
    assert declined.information_state_string(GREEK) == added.information_state_string(GREEK)
    assert declined.information_state_tensor(GREEK) == added.information_state_tensor(GREEK)
    assert declined.information_state_string(PERSIAN) != added.information_state_string(PERSIAN)


def test_duel_players_see_their_own_hands_and_not_the_other():
    game = pyspiel.load_game(DUEL)
    greek = [int(c) for c in np.random.default_rng(6).permutation(52)]
    persian = [52 + int(c) for c in np.random.default_rng(7).permutation(52)]
    one = _dealt(game, duel_deal(greek, persian))
    # The same Greek deck; the Persian's first five cards (hand and first draw) replaced by deep ones.
    other = persian[40:45] + persian[5:40] + persian[:5] + persian[45:]
    two = _dealt(game, duel_deal(greek, other))
    kinds = game.engine.card_kinds
    assert sorted(kinds[c] for c in one.engine_state.hands[PERSIAN]) != \
        sorted(kinds[c] for c in two.engine_state.hands[PERSIAN])
    assert one.information_state_string(GREEK) == two.information_state_string(GREEK)
    assert one.observation_tensor(GREEK) == two.observation_tensor(GREEK)
    assert one.information_state_string(PERSIAN) != two.information_state_string(PERSIAN)


def _deal_variant(name: str, seed: int) -> list[int]:
    """Deals that differ only in what a player does not see at first: the co-op decks below their
    top cards; the duel's Persian deck (the Greek deck stays)."""
    fixed = np.random.default_rng(0)
    rng = np.random.default_rng(seed)
    if name == COOP:
        spartan, persian = fixed.permutation(20).tolist(), fixed.permutation(28).tolist()
        spartan = spartan[:8] + rng.permutation(spartan[8:]).tolist()
        persian = persian[:6] + rng.permutation(persian[6:]).tolist()
        return coop_deal(spartan, persian)
    return duel_deal(fixed.permutation(52).tolist(), (52 + rng.permutation(52)).tolist())


@pytest.mark.parametrize("name", [COOP, DUEL])
def test_an_information_state_fixes_the_legal_actions_and_the_tensors(name):
    """OpenSpiel's contract for an information state: the states a player cannot tell apart (here the
    same play from deals that differ in what is hidden) have the same legal actions and the same
    information-state tensor."""
    game = pyspiel.load_game(name)
    seen: dict[tuple[int, str], tuple] = {}
    histories: dict[tuple[int, str], set] = {}
    for seed in range(30):
        state, rng = _dealt(game, _deal_variant(name, seed)), np.random.default_rng(0)
        for _ in range(80):
            if state.is_terminal():
                break
            if state.is_chance_node():
                _play_chance(state, rng)
                continue
            player = state.current_player()
            key = (player, state.information_state_string(player))
            value = (tuple(state.legal_actions()), tuple(state.information_state_tensor(player)))
            assert seen.setdefault(key, value) == value
            histories.setdefault(key, set()).add(tuple(state.history()))
            state.apply_action(int(rng.choice(state.legal_actions())))
    assert sum(len(h) > 1 for h in histories.values()) > 5  # states told apart by nothing seen


# ----------------------------------------------------------------------------------------------------------
# The same games as the engines, from the same chance outcomes


def _coop_engine_game(engine: CoopGame, seed: int) -> tuple[list[int], object]:
    """A random game on the engine: the OpenSpiel history of its chance outcomes and actions, and its
    final state."""
    rng = np.random.default_rng(seed)
    state = engine.init(rng)
    history = coop_deal(list(state.spartan_order), list(state.persian_order))
    while not state.terminated:
        action = int(rng.choice(np.flatnonzero(engine.legal_action_mask(state))))
        events: list = []
        engine.step(state, action, rng, events)
        history.append(action)
        for event in events:
            if event["type"] == "fight":
                history += [DIE_OUTCOME + die - 1 for die in event["dice"]]
    return history, state


@pytest.mark.parametrize("seats", [1, 2, 3, 4])
def test_coop_replays_the_engines_games_from_their_chance_outcomes(seats):
    game = pyspiel.load_game(COOP, {"seats": seats})
    for seed in range(40):
        history, final = _coop_engine_game(CoopGame(seats), 100 * seats + seed)
        state = game.new_initial_state()
        decisions = 0
        for action in history:
            if not state.is_chance_node():
                decisions += 1
                assert action in state.legal_actions()
            state.apply_action(action)
        assert state.is_terminal()
        assert state.returns() == [1.0 if final.won else -1.0]
        assert state.engine_state.key() == final.key()
        assert decisions <= game.max_game_length()


def _duel_engine_game_with_hand_sizes(engine: DuelGame, seed: int) -> tuple[list[int], object]:
    """As the engine plays it, noting for each discard card how many cards its victim held, since the
    engine draws the hits at random only from a hand of more than 2 cards."""
    rng = np.random.default_rng(seed)
    state = engine.init(rng)
    greek, persian = state.decks
    history = duel_deal(list(greek), list(persian))
    while not state.terminated:
        action = int(rng.choice(engine.legal_actions(state)))
        victim_cards = len(state.hands[1 - state.current_player])
        events: list = []
        engine.step(state, action, rng, events)
        history.append(action)
        for event in events:
            if event["type"] == "play_discard_card" and victim_cards > 2:
                history += event["discarded"]
    return history, state


def test_duel_replays_the_engines_games_from_their_chance_outcomes():
    game = pyspiel.load_game(DUEL)
    engine = DuelGame()
    hits = 0
    for seed in range(25):
        history, final = _duel_engine_game_with_hand_sizes(engine, seed)
        state = game.new_initial_state()
        decisions = 0
        for action in history:
            if state.is_chance_node():
                hits += state.engine_state is not None
            else:
                decisions += 1
                assert action in state.legal_actions()
            state.apply_action(action)
        assert state.is_terminal()
        assert state.returns() == [float(r) for r in engine.returns(final)]
        assert dataclasses.astuple(state.engine_state) == dataclasses.astuple(final)
        assert decisions <= game.max_game_length()
    assert hits > 0  # some discard cards hit cards at random


def test_coop_decline_is_the_envs_action_id():
    state = pyspiel.load_game(COOP).new_initial_state()
    assert state.action_to_string(0, COOP_DECLINE) == "decline draw"


# ----------------------------------------------------------------------------------------------------------
# A node refuses what it does not list, and the refusal changes nothing


def _inside(state) -> tuple:
    """Everything a state holds: OpenSpiel's history, the text, the serialisation and every Python attribute
    but the shared engine, written out by ``repr`` (which shows every field of the engine state)."""
    python_side = repr(sorted((key, value) for key, value in vars(state).items() if key != "_engine"))
    return (tuple(state.history()), str(state), state.serialize(), python_side)


def _random_play(game, seed: int, prefer: tuple[int, ...] = ()):
    """The live state at every node of a random game of legal moves (an action of ``prefer`` whenever one
    is legal) and listed outcomes, the terminal state last; the caller may try anything on it before the
    game goes on."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    while True:
        yield state
        if state.is_terminal():
            return
        if state.is_chance_node():
            _play_chance(state, rng)
        else:
            legal = state.legal_actions()
            state.apply_action(int(rng.choice([a for a in legal if a in prefer] or legal)))


def _refuses(state, action: int, before: tuple) -> None:
    """``action`` is refused in one line naming it (OpenSpiel itself refuses -1, its ``kInvalidAction``,
    before the game sees it) and the state is still ``before``."""
    with pytest.raises((ValueError, pyspiel.SpielError)) as error:
        state.apply_action(action)
    if action != -1:
        assert error.type is ValueError, (action, error.value)
        assert "\n" not in str(error.value) and str(action) in str(error.value), str(error.value)
    assert _inside(state) == before, f"{action} was refused but changed the state"


def _chance_node_kind(state) -> str:
    coop = state.get_game().get_type().short_name == COOP
    if state.engine_state is not None:
        return "die" if coop else "random discard"
    second_deck = PERSIAN_OUTCOME if coop else DECK_SIZE
    return "second deal" if state.chance_outcomes()[0][0] >= second_deck else "first deal"


def _games(name: str, params: dict) -> int:
    """How many random games a check plays: a full duel is long, a reduced one a few moves."""
    return 8 if name == COOP else 4 if params["member"] == "full" else 25


def _games_in_the_default_run(name: str, params: dict) -> int:
    """How many of those games the node-by-node refusal checks play in the default run (the first ones);
    the slow run plays the rest, so that the two together play every game."""
    return 2 if name == COOP else 1 if params["member"] == "full" else _games(name, params)


def _split_games() -> list:
    """Each variant's refusal check with its first games (``[coop-1]``; the default run) and, where it plays
    more, with the rest (``[coop-1-more-games]``; the slow run)."""
    cases = []
    for (name, params), case in zip(VARIANTS, VARIANT_IDS, strict=True):
        first, total = _games_in_the_default_run(name, params), _games(name, params)
        cases.append(pytest.param(name, params, range(first), id=case))
        if first < total:
            cases.append(pytest.param(name, params, range(first, total), id=f"{case}-more-games",
                                      marks=pytest.mark.slow))
    return cases


@pytest.mark.parametrize(("name", "params", "games"), _split_games())
def test_a_chance_node_refuses_every_outcome_it_does_not_list_and_changes_nothing(name, params, games):
    game = pyspiel.load_game(name, params)
    outside = [-47, -2, -1, game.max_chance_outcomes(), game.max_chance_outcomes() + 12, 10**6]
    kinds: set[str] = set()
    for seed in games:
        # The duel plays its discard card whenever it can, so that its random discards come up.
        for state in _random_play(game, seed, prefer=(PLAY_DISCARD_CARD,) if name == DUEL else ()):
            if not state.is_chance_node():
                continue
            kinds.add(_chance_node_kind(state))
            listed = [o for o, _ in state.chance_outcomes()]
            before = _inside(state)
            for outcome in [*outside, *(o for o in range(game.max_chance_outcomes()) if o not in listed)]:
                _refuses(state, outcome, before)
            for outcome in listed[:: max(1, len(listed) // 4)]:  # listed outcomes still play
                assert state.child(outcome).history() == [*state.history(), outcome]
    assert {"first deal", "second deal"} <= kinds
    if name == COOP or params["member"] == "full":
        assert {"die", "random discard"} & kinds


def _first_node(game, kind: str, seed: int = 0):
    prefer = (PLAY_DISCARD_CARD,) if game.get_type().short_name == DUEL else ()
    return next(state for state in _random_play(game, seed, prefer)
                if state.is_chance_node() and _chance_node_kind(state) == kind)


def test_an_unlisted_outcome_is_refused_naming_the_node_and_what_it_lists():
    coop = pyspiel.load_game(COOP)
    state = _dealt(coop, [SPARTAN_OUTCOME])
    with pytest.raises(ValueError, match=r"^chance outcome 0 is not an outcome of the Spartan deck's deal "
                                         r"\(its outcomes: 1\.\.19\)$"):
        state.apply_action(SPARTAN_OUTCOME)  # the card dealt already
    with pytest.raises(ValueError, match="chance outcome 20 is not an outcome of the Spartan deck's deal"):
        state.apply_action(PERSIAN_OUTCOME)  # a Persian card before the Spartan deck is dealt
    die = _first_node(coop, "die")
    for face in (12, 0, -47):
        outcome = DIE_OUTCOME + face - 1
        with pytest.raises(ValueError, match=rf"^chance outcome {outcome} is not an outcome of a die "
                                             rf"\(its outcomes: 48\.\.53\)$"):
            die.apply_action(outcome)
    duel = pyspiel.load_game(DUEL)
    state = _dealt(duel, [0])
    with pytest.raises(ValueError, match=r"^chance outcome 0 is not an outcome of the Greek deck's deal "
                                         r"\(its outcomes: 1\.\.51\)$"):
        state.apply_action(0)
    pick = _first_node(duel, "random discard")
    victim = "Greek" if pick.engine_state.current_player == PERSIAN else "Persian"
    hit = pick.chance_outcomes()[0][0]
    pick.apply_action(hit)
    assert pick.is_chance_node()  # the second of the two random discards
    for card in (hit, next(c for c in range(2 * DECK_SIZE) if c not in pick.engine_state.hands[1 - GREEK]
                           and c not in pick.engine_state.hands[GREEK])):
        with pytest.raises(ValueError, match=rf"^chance outcome {card} is not an outcome of a random discard "
                                             rf"from the {victim} hand"):
            pick.apply_action(card)


@pytest.mark.parametrize(("name", "params", "games"), _split_games())
def test_a_decision_or_terminal_node_refuses_every_action_not_legal_and_changes_nothing(name, params, games):
    game = pyspiel.load_game(name, params)
    actions = [*range(-3, game.num_distinct_actions() + 3), 10**6]
    terminals = 0
    for seed in games:
        for state in _random_play(game, 100 + seed):
            if state.is_chance_node():
                continue
            legal = state.legal_actions()
            terminals += state.is_terminal()
            before = _inside(state)
            for action in actions:
                if action not in legal:
                    _refuses(state, action, before)
    assert terminals == len(games)


# ----------------------------------------------------------------------------------------------------------
# State text is data: the history from the initial state, replayed and checked; never a pickle


def _view(state) -> tuple:
    """What a state shows and holds: `_inside`, what each player sees, and what can be played next."""
    players = range(state.get_game().num_players())
    return (_inside(state), state.current_player(), state.is_terminal(), state.returns(),
            [state.information_state_string(p) for p in players],
            [state.observation_string(p) for p in players],
            [state.observation_tensor(p) for p in players],
            state.chance_outcomes() if state.is_chance_node() else state.legal_actions())


def _wrapped(game, state_text: str) -> str:
    """A whole game-and-state text as OpenSpiel lays it out, around the given state text."""
    return f"[Meta]\nVersion: 1\n\n[Game]\n{game.serialize()}\n[State]\n{state_text}\n"


def _both_readers(game) -> tuple:
    """The two ways to read a state text: the game's method and OpenSpiel's function (wrapped)."""
    return game.deserialize_state, lambda text: pyspiel.deserialize_game_and_state(_wrapped(game, text))


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=VARIANT_IDS)
def test_every_state_round_trips_through_its_text_chance_nodes_and_the_end_included(name, params):
    game = pyspiel.load_game(name, params)
    kinds: set[str] = set()
    for seed in range(max(2, _games(name, params) // 4)):
        for state in _random_play(game, 200 + seed, (PLAY_DISCARD_CARD,) if name == DUEL else ()):
            kinds.add("terminal" if state.is_terminal() else
                      _chance_node_kind(state) if state.is_chance_node() else "decision")
            text = state.serialize()
            assert json.loads(text) == {"version": 1, "game": str(game), "history": state.history()}
            assert _view(game.deserialize_state(text)) == _view(state)
            game2, state2 = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))
            assert str(game2) == str(game) and _view(state2) == _view(state)
    assert {"first deal", "second deal", "decision", "terminal"} <= kinds
    if name == COOP or params["member"] == "full":
        assert {"die", "random discard"} & kinds


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=VARIANT_IDS)
def test_no_game_is_longer_than_the_history_its_game_declares(name, params):
    """The declared bound (decisions plus chance nodes) is what a state text may hold: a game longer
    than it would write a text its own game refuses."""
    game = pyspiel.load_game(name, params)
    for seed in range(_games(name, params)):
        final = list(_random_play(game, 300 + seed, (PLAY_DISCARD_CARD,) if name == DUEL else ()))[-1]
        chance = sum(item.player == pyspiel.PlayerId.CHANCE for item in final.full_history())
        assert chance <= game.max_chance_nodes_in_history()
        assert len(final.history()) <= game.max_history_length()


class _WritesAFile:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def _payload(path: Path) -> bytes:
    """State attributes as OpenSpiel pickles them, with one that creates ``path`` when unpickled."""
    return pickle.dumps({"_moves": _WritesAFile(path)})


def _pickled_state_text(path: Path) -> str:
    """OpenSpiel's own form of a Python game's state (the history, the move number and the state's
    attributes pickled), here with the pickle of `_payload`."""
    return f"history=\nmove_number=0\n__dict__={base64.b64encode(_payload(path)).decode()}"


@pytest.mark.parametrize("name", [COOP, DUEL])
def test_a_pickle_in_a_state_text_is_refused_and_runs_nothing(name, tmp_path):
    game = pyspiel.load_game(name)
    ran = tmp_path / "ran"
    first_card = game.new_initial_state().chance_outcomes()[0][0]
    # OpenSpiel's own text of a real state (its C++ serialisation, a pickle too) is refused the same way.
    genuine = pyspiel.State.serialize(_dealt(game, [first_card]))
    assert "__dict__=" in genuine
    for text in (_pickled_state_text(ran), genuine):
        for read in _both_readers(game):
            with pytest.raises(ValueError, match=r"^state text (is not JSON|has \d+ characters)") as error:
                read(text)
            assert "\n" not in str(error.value)
    assert not ran.exists()
    live = tmp_path / "live"  # the payload is live: unpickled, it creates its file
    pickle.loads(_payload(live))["_moves"].close()  # noqa: S301
    assert live.exists()


def _text(game_string: str, history: list, **changes) -> str:
    """A state text as the games write it, with ``changes`` to its keys."""
    return json.dumps({"version": 1, "game": game_string, "history": history, **changes})


def _finished_coop_history() -> list[int]:
    return list(_random_play(pyspiel.load_game(COOP), 0))[-1].history()


_COOP1 = f"{COOP}(seats=1)"
_NOT_ID = "not an action or outcome id 0..71"
_REFUSED_STATE_TEXTS = {
    "empty": ("", r"^state text is not JSON \(Expecting value"),
    "not JSON": ("history=1,2", r"^state text is not JSON"),
    "a list": ("[48, 3]", r"^state text must be a JSON object with the keys game, history, version, "
               r"not a list$"),
    "a key missing": (json.dumps({"version": 1, "game": _COOP1}), r"^state text must have exactly the keys "
                      r"game, history, version, got \['game', 'version'\]$"),
    "a key too many": (_text(_COOP1, [], extra=1), r"^state text must have exactly the keys"),
    "another version": (_text(_COOP1, [], version=2), r"^state text version must be 1, got 2$"),
    "version true": (_text(_COOP1, [], version=True), r"^state text version must be 1, got True$"),
    "another team size": (_text(f"{COOP}(seats=2)", []), r"^state text is a state of 'python_thermopylae_coop"
                          r"\(seats=2\)', not of python_thermopylae_coop\(seats=1\)$"),
    "the duel": (_text(f"{DUEL}(member=full)", []), r"^state text is a state of 'python_thermopylae_duel"),
    "a game that is not text": (_text(_COOP1, [], game=["x"]),
                                r"^state text is a state of \['x'\], not of"),
    "history not a list": (_text(_COOP1, "0,1"),
                           r"^state text history must be a list of action ids, got str$"),
    "a boolean": (_text(_COOP1, [0, True]), rf"^state text history entry 1 is True, {_NOT_ID}$"),
    "a float": (_text(_COOP1, [0.0]), rf"^state text history entry 0 is 0\.0, {_NOT_ID}$"),
    "a negative id": (_text(_COOP1, [-1]), rf"^state text history entry 0 is -1, {_NOT_ID}$"),
    "an id too large": (_text(_COOP1, [72]), rf"^state text history entry 0 is 72, {_NOT_ID}$"),
    "a card dealt twice": (_text(_COOP1, [0, 0]), r"^state text history entry 1 \(0\): chance outcome 0 is "
                           r"not an outcome of the Spartan deck's deal \(its outcomes: 1\.\.19\)$"),
    "a Persian card first": (_text(_COOP1, [20]),
                             r"^state text history entry 0 \(20\): chance outcome 20 is not an outcome"),
    "an illegal move": (_text(_COOP1, [*coop_deal(list(range(20)), list(range(28))), 71]),
                        r"^state text history entry 48 \(71\): illegal action 71: "),
    "a move after the end": (_text(_COOP1, [*_finished_coop_history(), 0]),
                             r": illegal action 0: the game is over$"),
    "too long a history": (_text(_COOP1, [0] * 200), r"^state text history has 200 entries, more than the "
                           r"166 of any game of python_thermopylae_coop\(seats=1\)$"),
    "oversized": (" " * 10**6 + _text(_COOP1, []), r"^state text has 10000\d\d characters, more than the "
                  r"\d+ a state of python_thermopylae_coop\(seats=1\) can take$"),
}


@pytest.mark.parametrize("case", list(_REFUSED_STATE_TEXTS))
def test_a_state_text_that_is_not_a_state_of_this_game_is_refused_in_one_line(case):
    text, message = _REFUSED_STATE_TEXTS[case]
    for read in _both_readers(pyspiel.load_game(COOP)):
        with pytest.raises(ValueError, match=message) as error:
            read(text)
        assert "\n" not in str(error.value)


def test_a_duel_state_text_is_refused_by_another_member_when_nested_deep_and_with_a_card_hit_twice():
    tiny, full = pyspiel.load_game(DUEL, {"member": "tiny"}), pyspiel.load_game(DUEL)
    with pytest.raises(ValueError, match=r"^state text is a state of 'python_thermopylae_duel"
                                         r"\(member=tiny\)', not of python_thermopylae_duel\(member=full\)$"):
        full.deserialize_state(tiny.new_initial_state().serialize())
    with pytest.raises(ValueError, match=r"^state text is not JSON \(nested too deeply\)$"):
        full.deserialize_state("[" * 4000 + "]" * 4000)  # within the full duel's size limit
    pick = _first_node(full, "random discard")
    hit, at = pick.chance_outcomes()[0][0], len(pick.history()) + 1
    with pytest.raises(ValueError, match=rf"^state text history entry {at} \({hit}\): chance outcome {hit} "
                                         rf"is not an outcome of a random discard"):
        full.deserialize_state(_text(str(full), [*pick.history(), hit, hit]))


def test_a_state_text_must_be_a_str():
    with pytest.raises(TypeError, match=r"^state text must be a str, got bytes$"):
        pyspiel.load_game(COOP).deserialize_state(b"{}")


def test_other_games_serialise_through_openspiel_as_before():
    game = pyspiel.load_game("kuhn_poker")
    state = game.new_initial_state().child(0).child(1).child(0)
    game2, state2 = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))
    assert str(game2) == str(game) and state2.history() == state.history()
    assert game.deserialize_state(state.serialize()).history() == state.history()


# ----------------------------------------------------------------------------------------------------------
# The documentation's example


def test_the_docs_example_runs():
    page = (ROOT / "docs" / "openspiel.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert blocks, "docs/openspiel.md has no python example"
    namespace: dict = {}
    exec(compile("\n".join(blocks), "docs/openspiel.md", "exec"), namespace)  # noqa: S102
    assert namespace["returns"] in ([1.0], [-1.0])
    assert namespace["policy"]


def test_without_open_spiel_the_import_names_the_extra(monkeypatch):
    for name in [n for n in sys.modules if n.startswith("thermopylae_agents.openspiel")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspiel", None)
    with pytest.raises(ImportError, match=r"needs the 'openspiel' extra") as error:
        __import__("thermopylae_agents.openspiel")
    assert "\n" not in str(error.value)


# ----------------------------------------------------------------------------------------------------------
# Reduced duels (the game parameter "member")


def test_a_reduced_duel_member_deals_only_its_cards_and_passes_openspiels_checks():
    from thermopylae_env.duel.config import SMALL_DUELS

    game = pyspiel.load_game(DUEL, {"member": "tiny"})
    assert str(game) == f"{DUEL}(member=tiny)"
    decks = DuelGame(SMALL_DUELS["tiny"]).deck_ids
    state = game.new_initial_state()
    assert [c for c, _ in state.chance_outcomes()] == list(decks[GREEK])
    pyspiel.random_sim_test(game, num_sims=4, serialize=True, verbose=False)


def test_an_unknown_member_is_refused_in_one_line():
    with pytest.raises(ValueError, match="member must be one of full, tiny, small, medium, got 'huge'"):
        pyspiel.load_game(DUEL, {"member": "huge"})


@pytest.mark.manual  # OpenSpiel enumerates the tiny duel's states in Python: minutes, beyond CI's budget
def test_open_spiels_nash_conv_of_uniform_play_on_tiny_agrees_with_the_tree_solver():
    from open_spiel.python import policy
    from open_spiel.python.algorithms import exploitability

    from thermopylae_agents.gametheory.cfr import Evaluator, nash_conv, uniform_profile
    from thermopylae_agents.gametheory.tree import build_tree
    from thermopylae_env.duel.config import SMALL_DUELS

    game = pyspiel.load_game(DUEL, {"member": "tiny"})
    theirs = exploitability.nash_conv(game, policy.TabularPolicy(game))
    tree = build_tree(SMALL_DUELS["tiny"])
    ours = nash_conv(Evaluator(tree), uniform_profile(tree)).nash_conv
    assert theirs == pytest.approx(ours, abs=1e-9)
