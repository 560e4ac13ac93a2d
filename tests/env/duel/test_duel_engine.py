"""The duel rules engine (Game B of RULES.md): one test per rule, plus conservation, bounds and no-leak."""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_env.actions import IllegalActionError
from thermopylae_env.duel.layout import (
    ADD_BASE,
    COMMIT,
    DECK_SIZE,
    DECLINE,
    DONE_DISCARDING,
    GREEK,
    HAND_LIMIT,
    MAX_ACTIONS_PER_TURN,
    MAX_GAME_ACTIONS,
    MAX_TURNS,
    NUM_ACTIONS,
    NUM_CARDS,
    OBS_BUILD,
    OBS_HAND,
    OBS_OPP_DISCARDS,
    OBS_OPP_HAND_SIZE,
    OBS_OWN_DISCARDS,
    OBS_SIZE,
    OBS_TABLE,
    OBS_TABLE_TOTAL,
    OBS_TOKENS,
    PERSIAN,
    PLAY_DISCARD_CARD,
    add_action,
    card_kind,
    card_name,
    decode_action,
    discard_action,
    duel_kinds,
    encode_action,
)
from thermopylae_env.duel.rules import DuelGame, check_invariants, combat_total
from thermopylae_env.duel.state import DuelState, Phase

GAME = DuelGame()

# Kinds (the same numbers on both sides).
ATTACK = F10 = 0
F20, F30, F40, F50 = 1, 2, 3, 4
S1, S2, S3 = 5, 6, 7
DISC = 8


def ids_of_kind(side: int, kind: int) -> list[int]:
    return [c for c in range(side * DECK_SIZE, (side + 1) * DECK_SIZE) if card_kind(c) == kind]


def order(side: int, top_kinds: list[int]) -> list[int]:
    """A deck order of ``side`` whose top cards have ``top_kinds``; the rest in id order."""
    pools = {k: ids_of_kind(side, k) for k in range(9)}
    top = [pools[k].pop(0) for k in top_kinds]
    return top + [c for c in range(side * DECK_SIZE, (side + 1) * DECK_SIZE) if c not in top]


def start(persian: list[int], greek: list[int]) -> DuelState:
    """Turn 1, Persian discard phase; each hand holds the first five cards of its list (4 dealt + 1 drawn)."""
    state = GAME.new_state(order(GREEK, greek), order(PERSIAN, persian))
    check_invariants(state, GAME)
    return state


def kinds_in_hand(state: DuelState, player: int) -> list[int]:
    return sorted(card_kind(c) for c in state.hands[player])


def play(state: DuelState, *actions: int, seed: int = 0, events: list | None = None) -> DuelState:
    rng = np.random.default_rng(seed)
    for a in actions:
        GAME.step(state, a, rng, events)
        check_invariants(state, GAME)
    return state


def to_attack(state: DuelState) -> DuelState:
    """Both discard phases ended without discarding."""
    return play(state, DONE_DISCARDING, DONE_DISCARDING)


def assert_same(a: DuelState, b: DuelState) -> None:
    for field in DuelState.__dataclass_fields__:
        assert getattr(a, field) == getattr(b, field), field


# --- cards and layout --------------------------------------------------------------------------------


def test_deck_kinds_match_the_contract():
    greek, persian = duel_kinds()
    assert [k.count for k in greek] == [8, 8, 8, 8, 8, 3, 3, 3, 3]
    assert [k.count for k in persian] == [8, 8, 8, 8, 8, 3, 3, 3, 3]
    assert [k.force for k in persian] == [10, 20, 30, 40, 50, 0, 0, 0, 0]
    assert persian[0].kind == "attack" and persian[0].names == ("Attack",)
    assert persian[4].names == ("Immortals",) and greek[4].names == ("Phalanx",)
    assert persian[2].names == ("Bactrian Spearmen", "Indian Heavy Chariots", "Scythed Chariots",
                                "Assyrian Light Chariots")
    assert {k.names[0] for k in persian[5:8]} == {"Greek Traitor", "Outflanking March", "Mountain Path"}
    assert greek[8].names == ("Leonidas Strategy",) and persian[8].names == ("Xerxes Commands",)
    assert card_name(0) == "Greek Allies" and card_name(DECK_SIZE) == "Attack"
    assert sum(1 for c in range(NUM_CARDS) if card_name(c) == "Mede Cavalry") == 2


def test_action_names_round_trip_and_examples():
    assert NUM_ACTIONS == 21
    assert decode_action(add_action(F50), PERSIAN) == "add Immortals (50) to attack"
    assert decode_action(add_action(F50), GREEK) == "add Phalanx (50) to defence"
    assert decode_action(COMMIT, PERSIAN) == "commit attack"
    assert decode_action(DECLINE, GREEK) == "no defence"
    assert decode_action(PLAY_DISCARD_CARD, PERSIAN) == "play Xerxes Commands"
    assert decode_action(discard_action(S1), GREEK) == "discard Heroic Last Stand"
    for a in range(NUM_ACTIONS):
        for player in (None, GREEK, PERSIAN):
            assert encode_action(decode_action(a, player)) == a
    assert encode_action("  Done Discarding ") == DONE_DISCARDING
    with pytest.raises(ValueError):
        encode_action("charge")
    with pytest.raises(ValueError):
        decode_action(NUM_ACTIONS)


def test_setup_deals_four_then_turn_one_draws_one_each():
    state = GAME.init(np.random.default_rng(0))
    assert state.turn == 1 and state.tokens == 10
    assert state.phase == Phase.PERSIAN_DISCARD and state.current_player == PERSIAN
    assert len(state.hands[GREEK]) == len(state.hands[PERSIAN]) == 5
    assert state.deck_size(GREEK) == state.deck_size(PERSIAN) == 47
    check_invariants(state, GAME)


def test_persian_draws_before_the_greek():
    events: list = []
    GAME.new_state(order(GREEK, []), order(PERSIAN, []), events)
    draws = [e["player"] for e in events if e["type"] == "draw"]
    assert draws == [PERSIAN, GREEK]


# --- combat arithmetic -------------------------------------------------------------------------------


def test_multiplier_arithmetic():
    assert combat_total([1, 0, 0, 0, 0, 0, 0, 0]) == 10
    assert combat_total([1, 0, 0, 1, 1, 1, 0, 1]) == (10 + 40 + 50) * 3
    assert combat_total([0, 0, 0, 0, 4, 1, 1, 1]) == 800
    assert combat_total([0, 2, 1, 0, 0, 0, 0, 0]) == 70


def test_attack_total_is_forces_times_strategy_cards_plus_one():
    state = to_attack(start([ATTACK, F50, F40, S1, S3], [F10, F10, F10, F10, F10]))
    events: list = []
    play(state, *(add_action(k) for k in (ATTACK, F50, F40, S1, S3)), COMMIT, events=events)
    assert events[-1] == {"type": "attack", "player": PERSIAN, "cards": events[-1]["cards"], "total": 300}
    assert state.attack_total == 300 and state.phase == Phase.DEFENCE
    # Extra Attack cards count as force 10.
    state = to_attack(start([ATTACK, ATTACK, F20], [F10] * 5))
    play(state, add_action(ATTACK), add_action(ATTACK), add_action(F20), COMMIT)
    assert state.attack_total == 40


def test_defence_total_uses_the_same_formula_and_difference_over_ten_is_lost():
    state = to_attack(start([ATTACK, F50, F50, S1, S2], [F10, F20, S1, F50, S3]))
    play(state, *(add_action(k) for k in (ATTACK, F50, F50, S1, S2)), COMMIT)  # 110 x 3 = 330
    events: list = []
    play(state, add_action(F10), add_action(F20), add_action(S1), add_action(S3), COMMIT, events=events)
    defence = next(e for e in events if e["type"] == "defence")
    combat = next(e for e in events if e["type"] == "combat")
    assert defence["total"] == (10 + 20) * 3 == 90
    assert combat["tokens_lost"] == (330 - 90) // 10 == 24
    assert state.terminated and state.winner == PERSIAN and state.tokens == 0


def test_tokens_lost_is_difference_over_ten():
    state = to_attack(start([ATTACK, F50, F20, F20, F20], [F20, F30, F30, F30, F30]))
    play(state, add_action(ATTACK), add_action(F50), COMMIT)  # 60
    play(state, add_action(F20), COMMIT)  # 20
    assert state.tokens == 10 - 4 and not state.terminated


def test_defence_at_least_the_attack_costs_nothing():
    for defence_kind, expected in ((F50, 10), (F30, 10)):
        state = to_attack(start([ATTACK, F20, F10, F20, F20], [defence_kind] * 5))
        play(state, add_action(ATTACK), add_action(F20), COMMIT)  # 30
        play(state, add_action(defence_kind), COMMIT)
        assert state.tokens == expected


def test_tokens_going_to_zero_give_the_persian_the_win():
    state = to_attack(start([ATTACK, F50, F20, F20, F20], [F30] * 5))
    state.tokens = 6
    play(state, add_action(ATTACK), add_action(F50), COMMIT, DECLINE)  # 60 undefended: exactly 6 tokens
    assert state.terminated and state.winner == PERSIAN and state.tokens == 0
    assert state.reason == "no_tokens"
    assert list(GAME.returns(state)) == [-1.0, 1.0]
    # More damage than tokens left: the count stops at 0.
    state = to_attack(start([ATTACK, F50, F20, F20, F20], [F30] * 5))
    state.tokens = 2
    play(state, add_action(ATTACK), add_action(F50), COMMIT, DECLINE)
    assert state.terminated and state.tokens == 0 and state.winner == PERSIAN


def test_all_cards_played_go_to_the_discard_piles():
    state = to_attack(start([ATTACK, F50, S2, F20, F20], [F40, S1, F10, F10, F10]))
    persian_before = list(state.hands[PERSIAN])
    play(state, add_action(ATTACK), add_action(F50), add_action(S2), COMMIT)
    play(state, add_action(F40), add_action(S1), COMMIT)
    assert sorted(card_kind(c) for c in state.discards[PERSIAN]) == [ATTACK, F50, S2]
    assert sorted(card_kind(c) for c in state.discards[GREEK]) == [F40, S1]
    assert all(c in persian_before for c in state.discards[PERSIAN])
    assert state.table == [] and state.attack_total == 0


# --- legality of attacks and defences ------------------------------------------------------------------


def test_strategy_types_must_be_distinct():
    state = to_attack(start([ATTACK, S1, S1, S2, F50], [F10] * 5))
    play(state, add_action(S1))
    assert not GAME.legal_action_mask(state)[add_action(S1)]
    before = state.copy()
    with pytest.raises(IllegalActionError, match="distinct"):
        GAME.step(state, add_action(S1), np.random.default_rng(0))
    assert_same(state, before)
    play(state, add_action(S2), add_action(ATTACK), COMMIT)
    assert state.attack_total == 10 * 3


def test_strategy_cards_never_play_alone():
    # Attack: strategy cards added, but no Attack card yet -> cannot commit.
    state = to_attack(start([ATTACK, S1, S2, F20, F20], [S1, S2, S3, F10, DISC]))
    play(state, add_action(S1), add_action(S2), add_action(F20))
    assert not GAME.legal_action_mask(state)[COMMIT]
    with pytest.raises(IllegalActionError, match="Attack card"):
        GAME.step(state, COMMIT, np.random.default_rng(0))
    play(state, add_action(ATTACK), COMMIT)
    assert state.attack_total == (10 + 20) * 3
    # Defence: strategy cards alone cannot be committed either.
    play(state, add_action(S1), add_action(S2), add_action(S3))
    assert not GAME.legal_action_mask(state)[COMMIT]
    with pytest.raises(IllegalActionError, match="force > 0"):
        GAME.step(state, COMMIT, np.random.default_rng(0))
    play(state, add_action(F10), COMMIT)
    assert state.tokens == 10 - (90 - 10 * 4) // 10


def test_an_attack_needs_an_attack_card():
    events: list = []
    state = start([F50, F50, S1, S2, F40], [F10] * 5)
    play(state, DONE_DISCARDING, DONE_DISCARDING, events=events)
    # Without an Attack card the Persian has no choice: the engine records "no attack" and turn 2 begins.
    assert {"type": "no_attack", "player": PERSIAN, "auto": True} in events
    assert state.turn == 2 and state.phase == Phase.PERSIAN_DISCARD


def test_discard_cards_never_join_a_combat():
    state = to_attack(start([ATTACK, DISC, F50, F20, F20], [DISC, F10, F10, F10, F10]))
    assert ADD_BASE + DISC == COMMIT  # there is no "add discard card" action
    legal = GAME.legal_actions(state)
    assert PLAY_DISCARD_CARD not in legal and discard_action(DISC) not in legal
    with pytest.raises(IllegalActionError):
        GAME.step(state, PLAY_DISCARD_CARD, np.random.default_rng(0))


def test_declined_attack_ends_the_turn_and_returns_the_cards():
    state = to_attack(start([ATTACK, F50, S1, F20, F20], [F10] * 5))
    hand = sorted(state.hands[PERSIAN])
    play(state, add_action(ATTACK), add_action(F50), DECLINE)
    assert state.turn == 2 and state.tokens == 10 and state.phase == Phase.PERSIAN_DISCARD
    assert all(c in state.hands[PERSIAN] for c in hand) and state.discards[PERSIAN] == []
    assert state.build == [0] * 9


def test_declined_defence_takes_the_full_attack():
    state = to_attack(start([ATTACK, F40, F20, F20, F20], [F50, F50, S1, F10, F10]))
    play(state, add_action(ATTACK), add_action(F40), COMMIT)  # 50
    greek_hand = sorted(state.hands[GREEK])
    play(state, add_action(F50), DECLINE)  # started, then changed its mind
    assert state.tokens == 5 and state.discards[GREEK] == []
    assert state.turn == 2 and sorted(state.hands[GREEK][:-1]) == greek_hand  # plus the card of turn 2


def test_greek_without_force_cards_cannot_defend():
    events: list = []
    state = to_attack(start([ATTACK, F40, F20, F20, F20], [S1, S2, S3, DISC, S1]))
    play(state, add_action(ATTACK), add_action(F40), COMMIT, events=events)
    assert {"type": "no_defence", "player": GREEK, "auto": True} in events
    assert state.tokens == 5 and state.turn == 2


# --- discard phase -----------------------------------------------------------------------------------


def test_discard_card_makes_the_opponent_discard_two_random_cards():
    state = start([DISC, F20, F20, F20, F20], [F10, F20, F30, F40, F50])
    greek_before = list(state.hands[GREEK])
    events: list = []
    play(state, PLAY_DISCARD_CARD, events=events)
    assert len(state.hands[GREEK]) == 3 and len(state.discards[GREEK]) == 2
    assert set(state.discards[GREEK]) <= set(greek_before)
    assert [card_kind(c) for c in state.discards[PERSIAN]] == [DISC]
    assert events[-1]["discarded"] == state.discards[GREEK] and events[-1]["victim"] == GREEK
    # Which cards go is random (from the rng passed in): every card is hit about 2/5 of the time.
    hits = np.zeros(5)
    for seed in range(400):
        s = start([DISC, F20, F20, F20, F20], [F10, F20, F30, F40, F50])
        play(s, PLAY_DISCARD_CARD, seed=seed)
        for c in s.discards[GREEK]:
            hits[greek_before.index(c)] += 1
    assert hits.sum() == 800
    assert np.all(np.abs(hits / 400 - 0.4) < 0.1), hits


def test_discard_card_with_fewer_than_two_cards_takes_all_of_them():
    # The Persian keeps one card; the Greek's Leonidas Strategy then takes it.
    state = start([F50, F20, F20, F20, F20], [DISC, DISC, F10, F10, F10])
    play(state, *(discard_action(F20),) * 4, DONE_DISCARDING, PLAY_DISCARD_CARD)
    assert state.hands[PERSIAN] == [] and len(state.discards[PERSIAN]) == 5
    # Against an empty hand the card is spent and nothing else happens.
    play(state, PLAY_DISCARD_CARD)
    assert [card_kind(c) for c in state.discards[GREEK]] == [DISC, DISC]
    assert state.hands[PERSIAN] == []


def test_voluntary_discards_of_any_card():
    state = start([S1, DISC, F50, ATTACK, F20], [F10] * 5)
    play(state, discard_action(S1), discard_action(DISC), discard_action(ATTACK))
    assert sorted(card_kind(c) for c in state.discards[PERSIAN]) == [ATTACK, S1, DISC]
    assert not GAME.legal_action_mask(state)[discard_action(S2)]  # none held
    with pytest.raises(IllegalActionError):
        GAME.step(state, discard_action(S2), np.random.default_rng(0))


def test_seven_card_limit_at_the_end_of_the_discard_phase():
    # Neither side draws an Attack card or discards: hands grow by one card a turn (5, 6, 7, 8).
    state = start([F20] * 5 + [F30] * 3, [F10] * 8)
    for turn in (1, 2, 3):
        assert state.turn == turn
        play(state, DONE_DISCARDING, DONE_DISCARDING)
    assert state.turn == 4 and len(state.hands[PERSIAN]) == 8
    assert not GAME.legal_action_mask(state)[DONE_DISCARDING]
    with pytest.raises(IllegalActionError, match="discard down to 7"):
        GAME.step(state, DONE_DISCARDING, np.random.default_rng(0))
    play(state, discard_action(card_kind(state.hands[PERSIAN][0])))
    assert len(state.hands[PERSIAN]) == HAND_LIMIT and GAME.legal_action_mask(state)[DONE_DISCARDING]
    play(state, DONE_DISCARDING)
    assert len(state.hands[GREEK]) == 8 and not GAME.legal_action_mask(state)[DONE_DISCARDING]


def test_greek_with_an_empty_hand_skips_his_discard_phase():
    # Three Xerxes Commands take 2 + 2 + 1 of the Greek's five cards.
    state = start([DISC, DISC, DISC, F20, F20], [F10, F20, F30, F40, F50])
    events: list = []
    play(state, PLAY_DISCARD_CARD, PLAY_DISCARD_CARD, PLAY_DISCARD_CARD, DONE_DISCARDING, events=events)
    assert events[2]["discarded"] == state.discards[GREEK][4:] and len(events[2]["discarded"]) == 1
    assert {"type": "done_discarding", "player": GREEK, "auto": True} in events
    assert {"type": "no_attack", "player": PERSIAN, "auto": True} in events  # no Attack card either
    assert state.turn == 2 and state.phase == Phase.PERSIAN_DISCARD


# --- game end ----------------------------------------------------------------------------------------


def test_persian_deck_out_wins_for_the_greeks():
    state = start([F20] * 5, [F10] * 5)
    while not state.terminated:
        p = state.current_player
        if state.phase in (Phase.PERSIAN_DISCARD, Phase.GREEK_DISCARD):
            action = DONE_DISCARDING if len(state.hands[p]) <= HAND_LIMIT else discard_action(
                card_kind(state.hands[p][0]))
        else:
            action = DECLINE
        play(state, action)
    assert state.winner == GREEK and state.reason == "persian_deck_empty"
    assert state.turn == MAX_TURNS == 49 and state.tokens == 10 and state.deck_size(PERSIAN) == 0
    assert list(GAME.returns(state)) == [1.0, -1.0]
    with pytest.raises(IllegalActionError, match="over"):
        GAME.step(state, DONE_DISCARDING, np.random.default_rng(0))
    assert not GAME.legal_action_mask(state).any()


# --- engine contract ---------------------------------------------------------------------------------


def test_illegal_and_out_of_space_actions_leave_the_state_unchanged():
    state = start([ATTACK, F50, S1, F20, F20], [F10] * 5)
    before = state.copy()
    rng = np.random.default_rng(0)
    for bad in (COMMIT, add_action(F50), PLAY_DISCARD_CARD):
        with pytest.raises(IllegalActionError):
            GAME.step(state, bad, rng)
    for bad, err in ((NUM_ACTIONS, ValueError), (-1, ValueError), (1.5, TypeError), (None, TypeError)):
        with pytest.raises(err):
            GAME.step(state, bad, rng)
    assert_same(state, before)
    GAME.step(state, np.int64(DONE_DISCARDING), rng)  # numpy integers are accepted
    assert state.phase == Phase.GREEK_DISCARD


def test_copy_is_independent():
    state = start([ATTACK, F50, S1, F20, F20], [F10] * 5)
    clone = state.copy()
    play(clone, discard_action(F50), DONE_DISCARDING, DONE_DISCARDING, add_action(ATTACK))
    assert len(state.hands[PERSIAN]) == 5 and state.discards[PERSIAN] == [] and state.build == [0] * 9
    assert state.phase == Phase.PERSIAN_DISCARD


def test_seeded_replay_gives_the_same_game():
    def run(seed: int) -> list:
        rng = np.random.default_rng(seed)
        events: list = []
        state = GAME.init(rng, events)
        while not state.terminated:
            legal = GAME.legal_actions(state)
            GAME.step(state, legal[rng.integers(len(legal))], rng, events)
        return events

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_card_conservation_and_length_bounds_over_random_games():
    rng = np.random.default_rng(2024)
    max_turn_actions = 0
    for _ in range(1000):
        state = GAME.init(rng)
        per_turn: dict[int, int] = {}
        steps = 0
        while not state.terminated:
            mask = GAME.legal_action_mask(state)
            legal = np.flatnonzero(mask)
            assert legal.size > 0
            per_turn[state.turn] = per_turn.get(state.turn, 0) + 1
            GAME.step(state, int(legal[rng.integers(legal.size)]), rng)
            steps += 1
            if steps % 37 == 0:
                check_invariants(state, GAME)
        check_invariants(state, GAME)
        assert state.turn <= MAX_TURNS and steps <= MAX_GAME_ACTIONS
        max_turn_actions = max(max_turn_actions, *per_turn.values())
    assert max_turn_actions <= MAX_ACTIONS_PER_TURN


def test_micro_action_bound_holds_for_a_slow_player():
    # Slow play: play discard cards, discard one card at a time down to 3, add every card, then commit.
    rng = np.random.default_rng(5)
    worst = 0
    for _ in range(50):
        state = GAME.init(rng)
        counts: dict[int, int] = {}
        while not state.terminated:
            legal = GAME.legal_actions(state)
            if state.phase <= Phase.GREEK_DISCARD:
                many = len(state.hands[state.current_player]) > 3
                action = legal[0] if (many or legal[0] == PLAY_DISCARD_CARD) else DONE_DISCARDING
            else:
                adds = [a for a in legal if a < COMMIT]
                action = adds[0] if adds else (COMMIT if COMMIT in legal else DECLINE)
            counts[state.turn] = counts.get(state.turn, 0) + 1
            GAME.step(state, action, rng)
        worst = max(worst, *counts.values())
    assert worst <= MAX_ACTIONS_PER_TURN


# --- observations ------------------------------------------------------------------------------------


def scramble_hidden(state: DuelState, viewer: int, rng: np.random.Generator) -> DuelState:
    """The same public situation with other hidden cards: the opponent's hand and deck are re-dealt from
    their union, and both decks' remaining orders are shuffled."""
    s = state.copy()
    opp = 1 - viewer
    decks = list(s.decks)
    pool = s.hands[opp] + list(decks[opp][s.deck_pos[opp]:])
    pool = [pool[i] for i in rng.permutation(len(pool))]
    n = len(s.hands[opp])
    s.hands[opp] = pool[:n]
    s.hand_counts[opp] = [sum(card_kind(c) == k for c in pool[:n]) for k in range(9)]
    rest = tuple(pool[n:])
    dealt = tuple(sorted(set(decks[opp]) - set(rest)))  # the cards already out of the deck, in any order
    decks[opp] = dealt + rest
    own_rest = list(decks[viewer][s.deck_pos[viewer]:])
    own_rest = [own_rest[i] for i in rng.permutation(len(own_rest))]
    decks[viewer] = decks[viewer][: s.deck_pos[viewer]] + tuple(own_rest)
    s.decks = (decks[0], decks[1])
    return s


def test_observation_does_not_leak_hidden_cards():
    rng = np.random.default_rng(11)
    checked = changed_hands = 0
    for _ in range(60):
        state = GAME.init(rng)
        while not state.terminated:
            viewer = state.current_player
            other = scramble_hidden(state, viewer, rng)
            check_invariants(other, GAME)
            changed_hands += other.hands[1 - viewer] != state.hands[1 - viewer]
            for player in (GREEK, PERSIAN):
                if player == viewer or state.phase < Phase.ATTACK:  # the opponent is not building
                    mine = scramble_hidden(state, player, rng)
                    assert np.array_equal(GAME.observe(state, player), GAME.observe(mine, player))
            assert np.array_equal(GAME.observe(state, viewer), GAME.observe(other, viewer))
            checked += 1
            legal = GAME.legal_actions(state)
            GAME.step(state, legal[rng.integers(len(legal))], rng)
    assert checked > 1000 and changed_hands > 500
    # The check has teeth: the viewer's own hand does show.
    state = start([ATTACK, F50, S1, F20, F20], [F10] * 5)
    other = start([ATTACK, F50, S2, F20, F20], [F10] * 5)
    assert not np.array_equal(GAME.observe(state, PERSIAN), GAME.observe(other, PERSIAN))
    assert np.array_equal(GAME.observe(state, GREEK), GAME.observe(other, GREEK))


def test_observation_layout_and_range():
    state = to_attack(start([ATTACK, F50, S1, F20, F20], [F10, F10, F30, S2, DISC]))
    play(state, add_action(ATTACK), add_action(F50))
    obs_p = GAME.observe(state, PERSIAN)
    assert obs_p.dtype == np.float32 and obs_p.shape == (OBS_SIZE,)
    assert list(obs_p[:6]) == [0, 0, 1, 0, 1, 1]
    assert np.allclose(obs_p[OBS_HAND] * 8, [1, 2, 0, 0, 1, 1, 0, 0, 0])
    assert np.allclose(obs_p[OBS_BUILD] * 8, [1, 0, 0, 0, 1, 0, 0, 0])
    assert obs_p[-1] * 800 == pytest.approx(60)
    obs_g = GAME.observe(state, GREEK)
    assert list(obs_g[:6]) == [0, 0, 1, 0, 0, 0]
    assert not obs_g[OBS_BUILD].any() and obs_g[-1] == 0  # the Persian's build is private
    assert obs_g[OBS_OPP_HAND_SIZE] * 8 == pytest.approx(5)
    play(state, add_action(S1), COMMIT)
    obs_g = GAME.observe(state, GREEK)
    assert np.allclose(obs_g[OBS_TABLE] * 8, [1, 0, 0, 0, 1, 1, 0, 0])
    assert obs_g[OBS_TABLE_TOTAL] * 800 == pytest.approx(120)
    assert obs_g[OBS_OPP_HAND_SIZE] * 8 == pytest.approx(2)
    play(state, add_action(F30), COMMIT)  # 120 - 30 = 90 -> 9 tokens
    obs_p = GAME.observe(state, PERSIAN)
    assert obs_p[OBS_TOKENS] * 10 == pytest.approx(1)
    assert np.allclose(obs_p[OBS_OWN_DISCARDS] * 8, [1, 0, 0, 0, 1, 1, 0, 0, 0])
    assert np.allclose(obs_p[OBS_OPP_DISCARDS] * 8, [0, 0, 1, 0, 0, 0, 0, 0, 0])
    rng = np.random.default_rng(3)
    for _ in range(30):
        s = GAME.init(rng)
        while not s.terminated:
            for p in (GREEK, PERSIAN):
                o = GAME.observe(s, p)
                assert o.min() >= 0.0 and o.max() <= 1.0
            legal = GAME.legal_actions(s)
            GAME.step(s, legal[rng.integers(len(legal))], rng)
