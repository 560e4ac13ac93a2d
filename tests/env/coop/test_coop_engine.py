"""Rules of the co-op game (RULES.md, Game A), each checked on a hand-made state with chosen dice."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import scripted_dice

from thermopylae_env.actions import IllegalActionError
from thermopylae_env.cards import DeckError
from thermopylae_env.coop import rules as coop_rules
from thermopylae_env.coop.layout import (
    DECLINE,
    NUM_ACTIONS,
    OBS_SIZE,
    RETREAT,
    decode_action,
    discard_action,
    encode_action,
    fight_action,
    give_action,
)
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import CoopState, Phase

FILLER = (30, 40, 0)  # a Persian card no test card beats: keeps the deck's remaining rows out of the way


Dice = scripted_dice  # the engine tests only script dice


NO_DICE = Dice()


def persian_rows(*front: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """A 28-card Persian table: the given (white, red, bonus) rows first, fillers after."""
    return list(front) + [FILLER] * (28 - len(front))


def make(
    hands_spec: list[int] | list[list[int]],
    front: list[tuple[int, int, int]],
    num_players: int = 1,
    deck_values: list[int] = (),
) -> tuple[CoopGame, CoopState]:
    """A game with a custom Persian table whose rows 0, 1 are slots 1, 2 and rows 2.. the deck top,
    and Spartan hands (one list per seat) followed by ``deck_values`` on top of the Spartan deck.

    With more than one player each hand is dealt 3 cards; a hand given shorter is completed by moving
    dealt cards to the discard pile, so every card stays in exactly one place.
    """
    game = CoopGame(num_players, persian_rows(*front))
    hands = hands_spec if hands_spec and isinstance(hands_spec[0], list) else [hands_spec]
    per_seat = game.hand_size_at_start
    dealt: list[int] = []
    for hand in hands:
        assert len(hand) <= per_seat
        dealt += list(hand) + [None] * (per_seat - len(hand))
    # Fill the holes with the lowest cards not asked for anywhere.
    wanted = [v for v in dealt if v is not None] + list(deck_values)
    spare = list(game.spartan)
    for v in wanted:
        spare.remove(v)
    holes = iter(spare)
    values = [v if v is not None else next(holes) for v in dealt] + list(deck_values)
    state = game.new_state(game.spartan_order_from_values(values), range(28))
    for seat, hand in enumerate(hands):  # hands are dealt in order: the fillers are the last cards
        for card in state.hands[seat][len(hand):]:
            state.spartan_discard.append(card)
        del state.hands[seat][len(hand):]
        assert hand_values(game, state, seat) == sorted(hand)
    game.check_invariants(state)
    return game, state


def keep_spartan_deck(state: CoopState, n: int) -> None:
    """Discard cards from the top of the Spartan deck until ``n`` remain."""
    while state.spartan_deck_size > n:
        state.spartan_discard.append(state.spartan_order[state.spartan_pos])
        state.spartan_pos += 1


def keep_persian_deck(state: CoopState, n: int, to_graveyard: int = 0) -> None:
    """Move cards from the top of the Persian deck (the first ``to_graveyard`` to the graveyard, the
    others to the discard pile) until ``n`` remain."""
    while state.persian_deck_size > n:
        card = state.persian_order[state.persian_pos]
        state.persian_pos += 1
        if to_graveyard > 0:
            state.graveyard.append(card)
            to_graveyard -= 1
        else:
            state.persian_discard.append(card)
    assert to_graveyard == 0


def hand_values(game: CoopGame, state: CoopState, seat: int = 0) -> list[int]:
    return sorted(game.spartan[c] for c in state.hands[seat])


def legal(game: CoopGame, state: CoopState) -> set[str]:
    return {decode_action(a) for a in np.flatnonzero(game.legal_action_mask(state))}


# ---------------------------------------------------------------- setup and turns


def test_solo_setup_deals_four_spartan_cards_two_persian_slots_marker_one_four_support():
    game = CoopGame()
    state = game.init(np.random.default_rng(0))
    assert game.num_players == 1
    assert len(state.hands) == 1 and len(state.hands[0]) == 4
    assert state.spartan_deck_size == 16
    assert state.slot1 >= 0 and state.slot2 >= 0 and state.persian_deck_size == 26
    assert (state.marker, state.support, state.phase, state.current_player) == (1, 4, Phase.MAIN, 0)
    assert not state.terminated and game.returns(state) == 0.0
    game.check_invariants(state)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_multiplayer_setup_deals_three_cards_to_each_seat(players):
    game = CoopGame(players)
    state = game.init(np.random.default_rng(players))
    assert [len(hand) for hand in state.hands] == [3] * players
    assert state.spartan_deck_size == 20 - 3 * players
    game.check_invariants(state)


def test_new_state_deals_seat_by_seat_from_the_top():
    game = CoopGame(2)
    state = game.new_state(game.spartan_order_from_values([20, 19, 18, 10, 11, 12, 13]), range(28))
    assert hand_values(game, state, 0) == [18, 19, 20]
    assert hand_values(game, state, 1) == [10, 11, 12]
    assert game.spartan[state.spartan_deck[0]] == 13
    assert (state.slot1, state.slot2, state.persian_deck[0]) == (0, 1, 2)


def test_spartan_deck_has_the_contract_values_summing_to_300():
    game = CoopGame()
    assert sorted(game.spartan) == [10] + [v for v in range(11, 20) for _ in range(2)] + [20]
    assert sum(game.spartan) == 300


def test_turn_rotates_through_the_seats_after_each_completed_action():
    game, state = make([[15], [15], [14]], [(40, 50, 0), (40, 50, 0)], num_players=3)
    keep_spartan_deck(state, 0)  # no draw offers: each retreat completes at once
    seats = []
    for _ in range(4):
        seats.append(state.current_player)
        game.step(state, RETREAT, NO_DICE)
    assert seats == [0, 1, 2, 0]
    assert state.current_player == 1 and state.turn == 4


def test_turn_passes_only_after_the_draw_offer_is_resolved():
    game, state = make([[15], [16]], [(40, 50, 0), (40, 50, 0)], num_players=2)
    game.step(state, RETREAT, NO_DICE)
    assert state.phase == Phase.DRAW_OFFER and state.current_player == 0 and state.turn == 0
    game.step(state, give_action(1), NO_DICE)
    assert state.phase == Phase.MAIN and state.current_player == 1 and state.turn == 1


@pytest.mark.parametrize("players", [0, 5, -1])
def test_player_count_outside_one_to_four_is_refused(players):
    with pytest.raises(ValueError, match="num_players"):
        CoopGame(players)


# ---------------------------------------------------------------- fight resolution


def test_fight_total_equal_to_white_beats_the_card_to_the_discard_pile():
    game, state = make([15], [(15, 20, 0), (40, 50, 0)])
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.persian_discard == [0] and state.graveyard == []
    assert state.slot1 == 1  # the survivor of slot 2 moved up


def test_fight_total_one_below_white_leaves_the_card():
    game, state = make([14], [(15, 20, 0), (5, 6, 0)])
    game.step(state, fight_action(14, 0), NO_DICE)
    assert (state.slot1, state.slot2) == (0, 1)
    assert state.persian_discard == [] and state.graveyard == []


def test_fight_total_equal_to_red_sends_the_card_to_the_graveyard():
    game, state = make([12], [(10, 15, 0), (40, 50, 0)])
    game.step(state, fight_action(12, 1), Dice(3))
    assert state.graveyard == [0] and state.persian_discard == []


def test_fight_total_one_below_red_sends_the_card_to_the_discard_pile():
    game, state = make([12], [(10, 15, 0), (40, 50, 0)])
    game.step(state, fight_action(12, 1), Dice(2))
    assert state.persian_discard == [0] and state.graveyard == []


def test_slot_two_is_not_fought_when_slot_one_survives():
    game, state = make([15], [(16, 20, 0), (5, 6, 1)])
    events: list = []
    game.step(state, fight_action(15, 0), NO_DICE, events)
    assert (state.slot1, state.slot2) == (0, 1)
    fight = next(e for e in events if e["type"] == "fight")
    assert [r["slot"] for r in fight["results"]] == [1]
    assert fight["results"][0]["outcome"] == "stays"


def test_slot_one_is_fought_first_and_the_survivor_moves_to_slot_one():
    game, state = make([15], [(15, 16, 0), (16, 17, 0), (7, 8, 0)])
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.persian_discard == [0]
    assert state.slot1 == 1  # slot 2 survived and moved up
    assert state.slot2 == 2  # refilled from the top of the Persian deck


def test_both_slots_fought_with_the_same_total_and_refilled_slot_one_first():
    game, state = make([16], [(12, 16, 0), (14, 17, 0), (7, 8, 0), (9, 10, 0)])
    events: list = []
    game.step(state, fight_action(16, 0), NO_DICE, events)
    assert state.graveyard == [0] and state.persian_discard == [1]
    assert (state.slot1, state.slot2) == (2, 3)
    fight = next(e for e in events if e["type"] == "fight")
    assert [r["outcome"] for r in fight["results"]] == ["graveyard", "discard"]
    assert [e["slot"] for e in events if e["type"] == "refill"] == [1, 2]


def test_the_spartan_card_played_is_discarded_whatever_the_outcome():
    for white in (5, 40):
        game, state = make([15, 18], [(white, 50, 0), (40, 50, 0)])
        card = next(c for c in state.hands[0] if game.spartan[c] == 15)
        game.step(state, fight_action(15, 0), NO_DICE)
        assert hand_values(game, state) == [18]
        assert card in state.spartan_discard
        game.check_invariants(state)


def test_twelfth_graveyard_card_wins_at_once_and_slot_two_is_not_fought():
    game, state = make([15], [(10, 15, 0), (5, 6, 1)])
    keep_persian_deck(state, 15, to_graveyard=11)
    events: list = []
    game.step(state, fight_action(15, 0), NO_DICE, events)
    assert state.terminated and state.won and state.reason == "graveyard"
    assert len(state.graveyard) == 12 and state.graveyard[-1] == 0
    assert state.slot2 == 1  # never fought: not beaten, still in the line
    assert 1 not in state.persian_discard
    assert state.phase == Phase.MAIN and not game.legal_action_mask(state).any()
    assert game.returns(state) == 1.0
    assert events[-1] == {"type": "end", "won": True, "reason": "graveyard"}
    game.check_invariants(state)


def test_twelfth_graveyard_card_from_slot_two_wins_before_bonus_offers():
    game, state = make([15], [(10, 12, 1), (10, 15, 1)])
    keep_persian_deck(state, 15, to_graveyard=10)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.terminated and state.won and state.reason == "graveyard"
    assert len(state.graveyard) == 12 and state.phase == Phase.MAIN


def test_eleven_graveyard_cards_do_not_win():
    game, state = make([15], [(10, 12, 0), (40, 50, 0)])
    keep_persian_deck(state, 16, to_graveyard=10)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert len(state.graveyard) == 11 and not state.terminated


def test_failed_refill_wins_when_the_persian_deck_is_empty():
    game, state = make([15], [(10, 20, 0), (40, 50, 0)])
    keep_persian_deck(state, 0)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.terminated and state.won and state.reason == "refill"
    assert (state.slot1, state.slot2) == (1, -1)  # the survivor moved up; nothing to refill with


def test_failed_refill_wins_when_the_deck_holds_fewer_cards_than_needed():
    game, state = make([15], [(10, 20, 0), (10, 20, 0)])
    keep_persian_deck(state, 1)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.terminated and state.won and state.reason == "refill"


def test_refill_that_the_deck_can_supply_does_not_win():
    game, state = make([15], [(10, 20, 0), (10, 20, 0)])
    keep_persian_deck(state, 2)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert not state.terminated and state.persian_deck_size == 0
    assert state.slot1 >= 0 and state.slot2 >= 0


def test_empty_persian_deck_does_not_win_when_nothing_is_beaten():
    game, state = make([15], [(40, 50, 0), (40, 50, 0)])
    keep_persian_deck(state, 0)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert not state.terminated


def test_failed_refill_win_comes_before_the_bonus_draw_offers():
    game, state = make([15], [(10, 20, 1), (40, 50, 0)])
    keep_persian_deck(state, 0)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.terminated and state.won and state.reason == "refill"
    assert state.phase == Phase.MAIN and state.spartan_deck_size == 16


def test_win_with_the_last_card_is_a_win_not_an_exhaustion_loss():
    game, state = make([15], [(10, 20, 0), (40, 50, 0)])
    keep_spartan_deck(state, 0)
    keep_persian_deck(state, 0)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.terminated and state.won


# ---------------------------------------------------------------- dice and support


@pytest.mark.parametrize("marker", [1, 2, 3, 4, 5, 6])
def test_location_die_is_rolled_only_when_the_marker_is_on_3_or_6(marker, monkeypatch):
    rolled: list[int] = []

    def fake_roll(rng, n):
        rolled.append(n)
        return np.full(n, 6)

    monkeypatch.setattr(coop_rules, "roll_dice", fake_roll)
    game, state = make([15], [(16, 30, 0), (40, 50, 0)])
    state.marker = marker
    game.step(state, fight_action(15, 1), None)
    expected = 2 if marker in (3, 6) else 1
    assert rolled == [expected]
    assert state.persian_discard == [0]  # 15 + 6 (+ 6) beats 16 either way


def test_no_dice_are_rolled_without_support_or_location_die():
    game, state = make([15], [(16, 30, 0), (40, 50, 0)])
    rng = Dice()
    game.step(state, fight_action(15, 0), rng)
    assert rng.rolled == [] and state.persian_discard == []


def test_support_dice_and_location_die_add_to_the_card_value():
    game, state = make([12], [(20, 21, 0), (40, 50, 0)])
    state.marker = 3
    rng = Dice(2, 3, 4)
    events: list = []
    game.step(state, fight_action(12, 2), rng, events)
    fight = events[0]
    assert rng.rolled == [3]
    assert fight["dice"] == [2, 3, 4] and fight["total"] == 21 and fight["location_die"]
    assert state.graveyard == [0]


def test_support_cards_spent_are_gone_for_good_even_when_the_fight_fails():
    game, state = make([12, 13], [(40, 50, 0), (40, 50, 0)])
    game.step(state, fight_action(12, 3), Dice(1, 1, 1))
    assert state.support == 1
    assert state.slot1 == 0
    mask = game.legal_action_mask(state)
    assert mask[fight_action(13, 1)] and not mask[fight_action(13, 2)]


def test_support_beyond_what_is_left_is_illegal():
    game, state = make([12], [(40, 50, 0), (40, 50, 0)])
    state.support = 1
    assert game.is_legal(state, fight_action(12, 1))
    assert not game.is_legal(state, fight_action(12, 2))
    before = state.key()
    with pytest.raises(IllegalActionError, match="support"):
        game.step(state, fight_action(12, 2), Dice(1, 1))
    assert state.key() == before


def test_fighting_with_a_card_not_in_hand_is_illegal_and_changes_nothing():
    game, state = make([12], [(40, 50, 0), (40, 50, 0)])
    before = state.key()
    with pytest.raises(IllegalActionError, match="no card of value 17"):
        game.step(state, fight_action(17, 0), NO_DICE)
    assert state.key() == before


# ---------------------------------------------------------------- retreat and the end


def test_retreat_moves_the_marker_and_offers_one_draw():
    game, state = make([12], [(40, 50, 0), (40, 50, 0)], deck_values=[19])
    game.step(state, RETREAT, NO_DICE)
    assert state.marker == 2 and state.phase == Phase.DRAW_OFFER and state.offers == 0
    game.step(state, give_action(0), NO_DICE)
    assert hand_values(game, state) == [12, 19] and state.phase == Phase.MAIN and state.turn == 1


def test_retreat_from_six_to_seven_loses_at_once_without_a_draw():
    game, state = make([12], [(40, 50, 0), (40, 50, 0)])
    state.marker = 6
    game.step(state, RETREAT, NO_DICE)
    assert state.marker == 7 and state.terminated and not state.won and state.reason == "marker"
    assert state.spartan_deck_size == 16 and game.returns(state) == -1.0
    assert not game.legal_action_mask(state).any()


def test_retreat_to_six_does_not_lose():
    game, state = make([12], [(40, 50, 0), (40, 50, 0)])
    state.marker = 5
    game.step(state, RETREAT, NO_DICE)
    assert state.marker == 6 and not state.terminated


def test_empty_hand_must_retreat():
    game, state = make([[], [15]], [(40, 50, 0), (40, 50, 0)], num_players=2)
    assert legal(game, state) == {"retreat"}
    with pytest.raises(IllegalActionError):
        game.step(state, fight_action(15, 0), NO_DICE)


def test_retreat_is_always_legal_in_the_main_phase():
    game, state = make([15, 16], [(40, 50, 0), (40, 50, 0)])
    assert game.is_legal(state, RETREAT)
    assert legal(game, state) == {"retreat"} | {f"fight {v} +{s} support" for v in (15, 16) for s in range(5)}


def test_empty_hands_and_empty_spartan_deck_lose_after_the_action():
    game, state = make([15], [(40, 50, 0), (40, 50, 0)])
    keep_spartan_deck(state, 0)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.terminated and not state.won and state.reason == "exhausted"


def test_empty_spartan_deck_with_a_card_in_some_hand_does_not_lose():
    game, state = make([[15], [16]], [(40, 50, 0), (40, 50, 0)], num_players=2)
    keep_spartan_deck(state, 0)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert not state.terminated and state.current_player == 1


def test_empty_hands_with_cards_left_in_the_spartan_deck_do_not_lose():
    game, state = make([15], [(40, 50, 0), (40, 50, 0)])
    keep_spartan_deck(state, 1)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert not state.terminated and legal(game, state) == {"retreat"}


def test_exhaustion_is_checked_only_after_the_draw_offers_of_the_action():
    game, state = make([15], [(10, 30, 1), (40, 50, 0)])
    keep_spartan_deck(state, 1)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert not state.terminated and state.phase == Phase.DRAW_OFFER
    game.step(state, give_action(0), NO_DICE)
    assert not state.terminated and state.spartan_deck_size == 0 and len(state.hands[0]) == 1


def test_declining_the_last_offer_with_empty_hands_does_not_lose_while_the_deck_holds_cards():
    game, state = make([15], [(10, 30, 1), (40, 50, 0)])
    keep_spartan_deck(state, 1)
    game.step(state, fight_action(15, 0), NO_DICE)
    game.step(state, DECLINE, NO_DICE)
    assert not state.terminated and state.spartan_deck_size == 1


# ---------------------------------------------------------------- draws and the hand limit


def test_one_draw_offer_per_beaten_bonus_card():
    for bonuses, offers in (((0, 0), 0), ((1, 0), 1), ((0, 1), 1), ((1, 1), 2)):
        game, state = make([15], [(10, 30, bonuses[0]), (10, 30, bonuses[1])])
        game.step(state, fight_action(15, 0), NO_DICE)
        made = 0
        while state.phase == Phase.DRAW_OFFER:
            made += 1
            game.step(state, give_action(0), NO_DICE)
        assert made == offers, bonuses
        assert len(state.hands[0]) == offers


def test_a_bonus_card_that_survives_gives_no_draw():
    game, state = make([15], [(10, 30, 0), (20, 30, 1)])
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.phase == Phase.MAIN and state.turn == 1


def test_bonus_draw_offers_come_before_the_refill():
    game, state = make([15], [(10, 30, 1), (10, 30, 1), (40, 50, 0)])
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.phase == Phase.DRAW_OFFER and state.offers == 1
    assert (state.slot1, state.slot2) == (-1, -1) and state.persian_deck_size == 26
    game.step(state, DECLINE, NO_DICE)
    assert state.phase == Phase.DRAW_OFFER and state.offers == 0
    game.step(state, DECLINE, NO_DICE)
    assert state.phase == Phase.MAIN and (state.slot1, state.slot2) == (2, 3)


def test_team_chooses_the_recipient_of_a_bonus_draw_in_multiplayer():
    game, state = make([[15], [16], [17]], [(10, 30, 1), (40, 50, 0)], num_players=3, deck_values=[19])
    game.step(state, fight_action(15, 0), NO_DICE)
    assert legal(game, state) == {"give draw to seat 0", "give draw to seat 1", "give draw to seat 2",
                                  "decline draw"}
    game.step(state, give_action(2), NO_DICE)
    assert hand_values(game, state, 2) == [17, 19]
    assert hand_values(game, state, 0) == [] and state.current_player == 1


def test_give_to_a_seat_beyond_the_player_count_is_illegal():
    game, state = make([[15], [16]], [(10, 30, 1), (40, 50, 0)], num_players=2)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert not game.is_legal(state, give_action(2))
    with pytest.raises(IllegalActionError, match="seat"):
        game.step(state, give_action(3), NO_DICE)


def test_no_draw_is_offered_from_an_empty_spartan_deck():
    game, state = make([15, 16], [(10, 30, 1), (40, 50, 0)])
    keep_spartan_deck(state, 0)
    game.step(state, RETREAT, NO_DICE)
    assert state.phase == Phase.MAIN and state.turn == 1
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.phase == Phase.MAIN and state.turn == 2 and hand_values(game, state) == [16]


def test_remaining_draw_offers_lapse_when_the_spartan_deck_runs_out():
    game, state = make([15], [(10, 30, 1), (10, 30, 1)])
    keep_spartan_deck(state, 1)
    game.step(state, fight_action(15, 0), NO_DICE)
    assert state.phase == Phase.DRAW_OFFER and state.offers == 1
    game.step(state, give_action(0), NO_DICE)
    assert state.phase == Phase.MAIN and state.offers == 0 and state.turn == 1


def test_draw_into_a_full_hand_can_be_declined():
    game, state = make([11, 12, 13, 14], [(40, 50, 0), (40, 50, 0)], deck_values=[20])
    state.hands[0].append(state.spartan_order[state.spartan_pos])  # a fifth card (value 20)
    state.spartan_pos += 1
    keep_spartan_deck(state, 15)
    top = state.spartan_deck[0]
    game.step(state, RETREAT, NO_DICE)
    assert state.phase == Phase.DRAW_OFFER
    game.step(state, DECLINE, NO_DICE)
    assert len(state.hands[0]) == 5 and state.spartan_deck[0] == top and state.phase == Phase.MAIN


def _full_hand_then_draw(drawn: int) -> tuple[CoopGame, CoopState]:
    game, state = make([11, 12, 13, 14], [(40, 50, 0), (40, 50, 0)], deck_values=[16, drawn])
    state.hands[0].append(state.spartan_order[state.spartan_pos])  # the fifth card: 16
    state.spartan_pos += 1
    game.step(state, RETREAT, NO_DICE)
    game.step(state, give_action(0), NO_DICE)
    return game, state


def test_draw_into_a_full_hand_then_discard_another_card():
    game, state = _full_hand_then_draw(19)
    assert state.phase == Phase.DISCARD and state.recipient == 0 and len(state.hands[0]) == 6
    assert legal(game, state) == {f"discard {v}" for v in (11, 12, 13, 14, 16, 19)}
    game.step(state, discard_action(11), NO_DICE)
    assert hand_values(game, state) == [12, 13, 14, 16, 19]
    assert state.phase == Phase.MAIN and state.turn == 1 and state.recipient == -1
    game.check_invariants(state)


def test_draw_into_a_full_hand_then_discard_the_drawn_card():
    game, state = _full_hand_then_draw(19)
    drawn = state.hands[0][-1]
    game.step(state, discard_action(19), NO_DICE)
    assert hand_values(game, state) == [11, 12, 13, 14, 16]
    assert drawn in state.spartan_discard


def test_discard_of_a_value_the_recipient_does_not_hold_is_illegal():
    game, state = _full_hand_then_draw(19)
    assert not game.is_legal(state, discard_action(20))
    assert not game.is_legal(state, RETREAT)
    assert not game.is_legal(state, DECLINE)


def test_hand_limit_discard_belongs_to_the_recipient_not_the_acting_seat():
    game, state = make([[11, 12, 13], [14]], [(40, 50, 0), (40, 50, 0)], num_players=2,
                       deck_values=[15, 16, 17])
    for _ in range(2):  # seat 0 gets a fourth and a fifth card
        state.hands[0].append(state.spartan_order[state.spartan_pos])
        state.spartan_pos += 1
    game.step(state, RETREAT, NO_DICE)  # seat 0 acts... and gives to itself
    game.step(state, give_action(0), NO_DICE)
    game.step(state, discard_action(11), NO_DICE)
    assert state.current_player == 1
    game.step(state, RETREAT, NO_DICE)  # seat 1 acts, the draw goes to seat 0 again
    game.step(state, give_action(0), NO_DICE)
    assert state.phase == Phase.DISCARD and state.recipient == 0 and state.current_player == 1
    obs = game.observe(state)
    assert obs[7 + 0] == 1.0 and obs[3 + 1] == 1.0


# ---------------------------------------------------------------- actions, observation, copies


def test_action_layout_matches_the_spec():
    assert NUM_ACTIONS == 72 and OBS_SIZE == 115
    assert fight_action(10, 0) == 1 and fight_action(20, 4) == 55 and fight_action(17, 2) == 1 + 35 + 2
    assert [give_action(p) for p in range(4)] == [56, 57, 58, 59] and DECLINE == 60
    assert discard_action(10) == 61 and discard_action(20) == 71


def test_encode_action_inverts_decode_action_for_every_action():
    names = [decode_action(a) for a in range(NUM_ACTIONS)]
    assert len(set(names)) == NUM_ACTIONS
    assert [encode_action(name) for name in names] == list(range(NUM_ACTIONS))
    assert decode_action(fight_action(17, 2)) == "fight 17 +2 support"
    assert names[RETREAT] == "retreat" and names[DECLINE] == "decline draw"
    assert decode_action(give_action(2)) == "give draw to seat 2" and decode_action(63) == "discard 12"
    assert encode_action("  Fight 17 ") == fight_action(17, 0)
    with pytest.raises(ValueError):
        encode_action("charge")
    with pytest.raises(ValueError):
        decode_action(72)


def test_observation_layout_of_a_fresh_game():
    game, state = make([12, 15, 15, 20], [(21, 28, 1), (13, 20, 0)])
    obs = game.observe(state)
    assert obs.dtype == np.float32 and obs.shape == (115,)
    assert list(obs[0:3]) == [1, 0, 0] and list(obs[3:7]) == [1, 0, 0, 0] and not obs[7:11].any()
    assert obs[11 + 2] == 0.5 and obs[11 + 5] == 1.0 and obs[11 + 10] == 0.5
    assert np.allclose(obs[55:59], [1, 21 / 30, 28 / 30, 1])
    assert np.allclose(obs[59:63], [1, 13 / 30, 20 / 30, 0])
    assert list(obs[63:70]) == [1, 0, 0, 0, 0, 0, 0]
    assert obs[70] == 1.0 and obs[71] == np.float32(16 / 20) and obs[72] == np.float32(26 / 28)
    assert obs[73] == 0 and obs[74] == 0 and obs[75] == 0
    assert obs[76 + 5] == 0.0 and obs[76 + 4] == 1.0  # both 15s are in hand; both 14s in the deck
    assert not obs[87:89].any() and obs[89:115].all()
    out = np.zeros(115, dtype=np.float32)
    assert game.observe(state, out) is out and np.array_equal(out, obs)


def test_observation_after_the_game_is_over_has_no_pending_decision():
    game, state = make([12], [(40, 50, 0), (40, 50, 0)])
    state.marker = 6
    game.step(state, RETREAT, NO_DICE)
    obs = game.observe(state)
    assert not obs[0:3].any() and obs[63 + 6] == 1.0


def test_copy_is_independent_of_the_original():
    game = CoopGame(2)
    state = game.init(np.random.default_rng(5))
    clone = state.copy()
    assert clone.key() == state.key()
    game.step(clone, fight_action(game.spartan[clone.hands[0][0]], 1), np.random.default_rng(0))
    assert clone.key() != state.key()
    assert len(state.hands[0]) == 3 and state.support == 4 and state.turn == 0
    game.check_invariants(state)


def test_init_with_the_same_seed_gives_the_same_game():
    game = CoopGame(3)
    a = game.init(np.random.default_rng(42))
    b = game.init(np.random.default_rng(42))
    c = game.init(np.random.default_rng(43))
    assert a.key() == b.key() and a.key() != c.key()


def test_new_state_refuses_orders_that_are_not_permutations():
    game = CoopGame()
    with pytest.raises(ValueError, match="spartan_order"):
        game.new_state([0] * 20, range(28))
    with pytest.raises(ValueError, match="persian_order"):
        game.new_state(range(20), range(27))


def test_fight_event_records_dice_total_and_outcomes():
    game, state = make([17], [(20, 25, 0), (30, 40, 0)])
    events: list = []
    game.step(state, fight_action(17, 2), Dice(3, 5), events)
    assert events[0] == {
        "type": "fight", "seat": 0, "card": 17, "support": 2, "location_die": False, "dice": [3, 5],
        "total": 25, "results": [
            {"slot": 1, "white": 20, "red": 25, "bonus": False, "outcome": "graveyard"},
            {"slot": 2, "white": 30, "red": 40, "bonus": False, "outcome": "stays"},
        ],
    }
    assert events[1]["type"] == "refill" and events[1]["slot"] == 2


def test_game_and_state_survive_pickling():
    import pickle

    game = CoopGame(3, persian_rows((12, 13, 1)))
    state = game.init(np.random.default_rng(0))
    game2, state2 = pickle.loads(pickle.dumps((game, state)))
    assert game2.num_players == 3 and game2.persian == game.persian
    assert state2.key() == state.key()
    assert np.array_equal(game2.observe(state2), game.observe(state))


def test_game_is_frozen():
    game = CoopGame()
    with pytest.raises(AttributeError):
        game.num_players = 2


# ---------------------------------------------------------------- decks


def test_persian_deck_with_red_below_white_is_refused_naming_the_row():
    rows = persian_rows()
    rows[4] = (20, 19, 0)
    with pytest.raises(DeckError, match="row 5"):
        CoopGame(persian_deck=rows)


def test_persian_deck_csv_with_a_bad_bonus_is_refused_naming_the_row(tmp_path):
    path = tmp_path / "deck.csv"
    lines = ["white,red,bonus"] + ["20,25,0"] * 28
    lines[3] = "20,25,maybe"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DeckError, match=r"row 3 \(line 4\)"):
        CoopGame(persian_deck=path)


def test_persian_deck_of_the_wrong_size_is_refused():
    with pytest.raises(DeckError, match="28"):
        CoopGame(persian_deck=[FILLER] * 27)


def test_default_persian_deck_has_the_contract_white_values():
    game = CoopGame()
    whites = sorted((card.white for card in game.persian), reverse=True)
    counts = {22: 1, 21: 4, 20: 4, 19: 4, 18: 4, 17: 4, 16: 2, 15: 2, 14: 1, 13: 1, 12: 1}
    expected = [white for white, n in counts.items() for _ in range(n)]
    assert whites == expected
    assert all(card.red >= card.white for card in game.persian)


def test_custom_persian_deck_from_a_csv_path(tmp_path):
    path = tmp_path / "deck.csv"
    path.write_text("white,red,bonus\n" + "12,13,1\n" * 28)
    game = CoopGame(persian_deck=path)
    assert game.persian[0].white == 12 and game.persian[27].bonus


# ---------------------------------------------------------------- random play


def _random_play(game: CoopGame, rng: np.random.Generator, check_roundtrip: bool) -> CoopState:
    state = game.init(rng)
    game.check_invariants(state)
    while not state.terminated:
        legal_actions = np.flatnonzero(game.legal_action_mask(state))
        assert legal_actions.size > 0
        game.step(state, int(rng.choice(legal_actions)), rng)
        game.check_invariants(state)
        if check_roundtrip:
            obs = game.observe(state)
            assert obs.min() >= 0.0 and obs.max() <= 1.0
            rebuilt = game.state_from_observation(obs, rng)
            game.check_invariants(rebuilt)
            assert np.array_equal(game.observe(rebuilt), obs)
            assert np.array_equal(game.legal_action_mask(rebuilt), game.legal_action_mask(state))
            assert game.returns(rebuilt) == game.returns(state)
    return state


@pytest.mark.slow  # a long run; the default suite keeps the shorter checks of the same code
def test_random_masked_games_keep_every_card_in_exactly_one_place():
    rng = np.random.default_rng(2024)
    ends = set()
    for players in (1, 2, 3, 4):
        game = CoopGame(players)
        for _ in range(550):
            state = _random_play(game, rng, check_roundtrip=False)
            spartan, persian = game.card_locations(state)
            assert len(spartan) == 20 and len(persian) == 28
            ends.add(state.reason)
    assert {"marker", "exhausted"} <= ends


def test_state_from_observation_round_trips_on_random_games():
    rng = np.random.default_rng(7)
    for players in (1, 2, 3, 4):
        game = CoopGame(players)
        for _ in range(25):
            _random_play(game, rng, check_roundtrip=True)


def test_state_from_observation_keeps_public_facts_and_shuffles_hidden_orders():
    game = CoopGame(2)
    rng = np.random.default_rng(3)
    state = game.init(rng)
    game.step(state, RETREAT, rng)
    obs = game.observe(state)
    rebuilt = [game.state_from_observation(obs, np.random.default_rng(seed)) for seed in range(5)]
    for other in rebuilt:
        assert other.phase == Phase.DRAW_OFFER and other.marker == 2 and other.support == 4
        assert sorted(game.spartan[c] for c in other.spartan_deck) == sorted(
            game.spartan[c] for c in state.spartan_deck)
        assert sorted(other.persian_deck) == sorted(state.persian_deck)
        assert (other.slot1, other.slot2) == (state.slot1, state.slot2)
    assert len({other.spartan_deck for other in rebuilt}) > 1


def test_state_from_observation_of_a_won_game_is_a_won_game():
    game, state = make([15], [(10, 20, 0), (40, 50, 0)])
    keep_persian_deck(state, 0)
    game.step(state, fight_action(15, 0), NO_DICE)
    rebuilt = game.state_from_observation(game.observe(state), np.random.default_rng(0))
    assert rebuilt.terminated and rebuilt.won and rebuilt.reason == "refill"


def test_state_from_observation_refuses_a_wrong_shape():
    with pytest.raises(ValueError, match="115"):
        CoopGame().state_from_observation(np.zeros(10, dtype=np.float32), np.random.default_rng(0))


def test_card_locations_detects_a_duplicated_card():
    game = CoopGame()
    state = game.init(np.random.default_rng(0))
    state.spartan_discard.append(state.hands[0][0])
    with pytest.raises(ValueError, match="both in"):
        game.card_locations(state)


def _a_mid_game_observation() -> tuple[CoopGame, np.ndarray]:
    game = CoopGame(2)
    rng = np.random.default_rng(3)
    state = game.init(rng)
    for _ in range(4):
        game.step(state, int(np.flatnonzero(game.legal_action_mask(state))[-1]), rng)
    return game, game.observe(state)


@pytest.mark.parametrize(("piece", "value", "message"), [
    ("support", 2.0, "outside"),  # support 8
    ("support", -1.0, "outside"),  # support -4
    ("support", np.inf, "not finite"),
    ("support", np.nan, "not finite"),
    ("support", 0.3, "counts"),  # 1.2 support cards
    ("hands", 0.25, "counts"),  # half a card
    ("marker", 0.5, "one-hot"),
    ("seat", 1.0, "one-hot"),  # two acting seats
    ("unseen_persian", 0.5, "counts"),
])
def test_state_from_observation_refuses_entries_no_game_can_show(piece, value, message):
    from thermopylae_env.coop.layout import OBS

    game, obs = _a_mid_game_observation()
    bad = obs.copy()
    index = OBS[piece].offset + (1 if piece == "seat" and obs[OBS["seat"].offset] == 1 else 0)
    bad[index] = value
    with pytest.raises(ValueError, match=message):
        game.state_from_observation(bad, np.random.default_rng(0))


def test_state_from_observation_refuses_a_count_that_breaks_the_rules():
    from thermopylae_env.coop.layout import OBS

    game, obs = _a_mid_game_observation()
    bad = obs.copy()
    bad[OBS["hands"].offset : OBS["hands"].offset + 1] = 3.0 / 2  # ... not refused by range alone
    with pytest.raises(ValueError):
        game.state_from_observation(bad, np.random.default_rng(0))
    bad = obs.copy()
    bad[OBS["graveyard"].offset] = 1.0  # 12 graveyard cards that the Persian rows do not account for
    with pytest.raises(ValueError):
        game.state_from_observation(bad, np.random.default_rng(0))


def test_check_invariants_raises_invariant_error_not_assertion():
    from thermopylae_env.errors import InvariantError

    game = CoopGame()
    state = game.init(np.random.default_rng(0))
    state.spartan_discard.append(state.hands[0][0])
    with pytest.raises(InvariantError, match="both in"):
        game.check_invariants(state)
    state = game.init(np.random.default_rng(0))
    state.marker = 9
    with pytest.raises(InvariantError, match="marker 9"):
        game.check_invariants(state)
    state = game.init(np.random.default_rng(0))
    state.terminated, state.reason = True, None
    with pytest.raises(InvariantError, match="terminated and reason disagree"):
        game.check_invariants(state)
