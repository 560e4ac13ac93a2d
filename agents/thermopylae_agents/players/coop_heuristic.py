"""A hand-written player for the co-op game (``thermopylae/Coop-v0``).

[`CoopHeuristic`][thermopylae_agents.players.coop_heuristic.CoopHeuristic] reads only the observation and the
legal-action mask (plus the printed Persian deck table, which is part of the rules, not of the hidden state).
Its ideas:

* **Which fight.** The exact dice-sum distribution gives, for card ``v`` with ``s`` support dice (plus the
  location die on markers 3 and 6), the expected number of beaten cards, graveyard cards and bonus draws
  against the line, and how much easier the line gets: the line is a queue that must be beaten in
  order, so removing a hard slot-1 card is worth more than its count (the line's *quality* is the
  average gain of a typical Spartan card against it, before and after). A fight is scored by its
  *advantage*: that gain minus what the card would gain on average later (against a random pair of the
  Persian cards not yet seen, with the usual location die), minus the support spent. So low cards go to
  easy lines, high cards and support to hard ones, and a fight that turns a likely loss into a likely
  win earns the support it costs. A fight that wins at once
  (12th graveyard card, or a refill the Persian deck cannot supply) scores its win probability.
* **When to retreat.** Markers 3 and 6 give every fight a free die; 7 loses. The team walks 1 -> 2 -> 3
  early (two draws on the way), fights on 3 while the hand lasts, then retreats 3 -> 4 -> 5 -> 6 in one
  burst when the hand runs low (three draws) and fights on 6 to the end. A retreat also happens when no
  fight is worth its card.
* **Draws.** Always draw (into a full hand too: the worst of the six cards then goes) and give the card
  to the seat with the fewest cards, nearest in turn order.
* **Discard.** The lowest card of the recipient's hand.

The weights in [`DEFAULT_PARAMS`][thermopylae_agents.players.coop_heuristic.DEFAULT_PARAMS] were tuned by
coordinate search on 2,000 paired games of the default deck per trial (seeds disjoint from the evaluation
seeds); it wins about 25.7% of the games (10,000 games, ``scripts/evaluate.py heuristic``).
[`CoopHeuristic.choose_state`][thermopylae_agents.players.coop_heuristic.CoopHeuristic.choose_state] plays the
very same policy straight on engine states, for the search player's rollouts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from thermopylae_agents.players.coop_features import (
    PHASE_DISCARD,
    PHASE_DRAW_OFFER,
    PHASE_MAIN,
    VALUES,
    TeamView,
    decode_observation,
    dice_sum_pmf,
    fight_stats,
    fight_win_prob,
    location_dice,
)
from thermopylae_env.cards import load_persian_deck, load_spartan_deck
from thermopylae_env.coop.layout import (
    DECLINE,
    FIGHT_BASE,
    GIVE_BASE,
    GRAVEYARD_WIN,
    MAX_PLAYERS,
    NUM_SUPPORT,
    RETREAT,
    discard_action,
)
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import HAND_LIMIT, MAX_DICE

__all__ = ["CoopHeuristic", "DEFAULT_PARAMS", "heuristic_positions"]

DEFAULT_PARAMS: dict[str, float] = {
    # What a fight gains.
    "grave": 0.125,  # each card sent to the graveyard (on top of "beaten")
    "beaten": 0.5,  # each card beaten
    "bonus": 0.4,  # each bonus draw earned while the Spartan deck still holds cards
    "win": 50.0,  # an immediate win
    "line": 2.0,  # times the change of the line's quality (how well a typical card does against it)
    # What a fight costs.
    "card_scale": 1.0,  # times the card's average future gain
    "future_dice": 1.0,  # dice assumed for that future fight
    "full_hand_discount": 0.4,  # a card played from a full hand costs less (draws would be wasted)
    "support": 1.0,  # each support card spent, at the start of the game
    "support_exp": 0.5,  # support gets cheaper as (cards left / 20) ** support_exp
    # When to retreat (advantage thresholds, hand sizes).
    "early_keep": 0.3,  # on 1 and 2, fight instead of retreating only above this advantage
    "stay3_hand": 2.0,  # on 3, retreat when the hand holds at most this many cards
    "stay3_adv": -0.9,  # on 3, retreat when the best fight's advantage is below this
    "walk_hand": 4.0,  # on 4 and 5, retreat when the hand holds at most this many cards
    "walk_adv": 0.0,  # on 4 and 5, retreat when the best fight's advantage is below this
}


class CoopHeuristic:
    """Hand-written co-op player: scores every legal action with a small value model (see module doc).

    Parameters
    ----------
    params:
        Overrides for [`DEFAULT_PARAMS`][thermopylae_agents.players.coop_heuristic.DEFAULT_PARAMS] (used by
        tuning experiments).
    persian_deck:
        The Persian deck table the game is played with (a path, rows, or ``None`` for the default), as
        accepted by [`thermopylae_env.cards.load_persian_deck`][]; the observation only says which
        table rows are still unseen.
    rng:
        Accepted for the common agent interface; the policy itself is deterministic.
    seed:
        Accepted for the same reason, and ignored.
    """

    def __init__(
        self,
        params: Mapping[str, float] | None = None,
        persian_deck: object = None,
        rng: np.random.Generator | None = None,
        seed: int | None = None,
    ) -> None:
        unknown = set(params or {}) - set(DEFAULT_PARAMS)
        if unknown:
            raise ValueError(f"unknown heuristic parameter(s): {sorted(unknown)}")
        self.params = {**DEFAULT_PARAMS, **(params or {})}

        deck = load_persian_deck(persian_deck)
        rows = tuple((min(c.white, 30), min(c.red, 30), bool(c.bonus)) for c in deck)
        self._tables = _pair_tables(rows)
        self._rows = rows
        self._row_of = {row: i for i, row in enumerate(rows)}
        # Keyed by (unseen rows as the bytes of a mask, or as a frozenset of rows; bonus on).
        self._future_cache: dict[tuple, tuple[list[float], list[float], float]] = {}
        self._quality_cache: dict[tuple[int, int, bool], float] = {}
        self._outcome_cache: dict[tuple, tuple[float, float, float, float]] = {}
        # Line quality: the average gain of a card drawn from the Spartan deck against the pair (i, j).

        weights = np.bincount(np.asarray(load_spartan_deck()) - 10, minlength=len(VALUES)).astype(float)
        self._spartan_weights = weights / weights.sum()

    # ------------------------------------------------------------------------------------ interface
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """Choose a legal action from the observation and the mask."""
        return self.choose(decode_observation(observation), np.asarray(action_mask, dtype=bool))

    def choose(self, view: TeamView, mask: np.ndarray) -> int:
        """Choose a legal action from a decoded view (the search player calls this on engine states)."""
        if view.phase == PHASE_MAIN:
            action = self._main(view, mask)
        elif view.phase == PHASE_DRAW_OFFER:
            action = self._draw_offer(view, mask)
        elif view.phase == PHASE_DISCARD:
            action = self._discard(view, mask)
        else:
            action = -1
        if action < 0 or not mask[action]:
            # Never return an illegal action, even on a view the model does not expect.
            legal = np.flatnonzero(mask)
            if legal.size == 0:
                raise ValueError("no legal action: the game is over")
            action = int(legal[0])
        return action

    # ------------------------------------------------------------------------------------ decisions
    def _draw_offer(self, view: TeamView, mask: np.ndarray) -> int:
        best, best_key = DECLINE, None
        for seat in range(MAX_PLAYERS):
            if not mask[GIVE_BASE + seat]:
                continue
            # Fewest cards first, then the seat that acts soonest from the acting seat.
            key = (view.hand_size(seat), (seat - view.acting) % MAX_PLAYERS)
            if best_key is None or key < best_key:
                best, best_key = GIVE_BASE + seat, key
        return best

    def _discard(self, view: TeamView, mask: np.ndarray) -> int:
        seat = view.recipient if view.recipient >= 0 else view.acting
        for value in view.hand_of(seat):
            action = discard_action(value)
            if mask[action]:
                return action
        return -1

    def future_gain(self, view: TeamView) -> tuple[np.ndarray, np.ndarray, float]:
        """Averages over the unseen Persian cards: the gain of each card value 10..20 against a random
        pair, the line quality with row ``i`` in slot 1 and a random slot 2 (per row), and the line
        quality of a random pair."""
        bonus_on = view.spartan_deck > 0
        key = (view.unseen_persian.tobytes(), bonus_on)
        cached = self._future_cache.get(key)
        if cached is None:
            cached = self._future_of(view.unseen_persian.astype(np.float64), bonus_on, key)
        return cached

    def _future_of(self, u: np.ndarray, bonus_on: bool, key: tuple) -> tuple[np.ndarray, list[float], float]:
        p = self.params
        if u.sum() < 2:
            u = np.ones_like(u)
        n = u.sum()
        k = int(round(p["future_dice"]))
        grave, beaten, bonus = self._tables
        combined = p["beaten"] * beaten[:, k] + p["grave"] * grave[:, k]
        if bonus_on:
            combined = combined + p["bonus"] * bonus[:, k]
        total = np.einsum("i,vij,j->v", u, combined, u)
        diagonal = np.einsum("vii,i->v", combined, u)
        card_gain = (total - diagonal) / (n * (n - 1))
        quality = np.einsum("v,vij->ij", self._spartan_weights, combined)
        row_quality = (quality @ u - np.diagonal(quality) * u) / np.maximum(n - u, 1.0)
        pair_quality = float(self._spartan_weights @ card_gain)
        # Plain floats: the per-decision arithmetic is scalar.
        result = (card_gain.tolist(), row_quality.tolist(), pair_quality)
        if len(self._future_cache) > 4096:
            self._future_cache.clear()
        self._future_cache[key] = result
        return result

    def _main(self, view: TeamView, mask: np.ndarray) -> int:
        hand_size = view.hand_size(view.acting)
        if hand_size == 0:
            return RETREAT
        scores = self.fight_scores(view, mask)
        return self._decide_main(scores, view.marker, view.spartan_deck, hand_size, bool(mask[RETREAT]))

    def _decide_main(
        self, scores: dict[int, float], marker: int, spartan_deck: int, hand_size: int, can_retreat: bool
    ) -> int:
        best_action, best_adv = -1, -np.inf
        for action, adv in scores.items():
            if adv > best_adv:
                best_action, best_adv = action, adv
        if can_retreat and self._should_retreat(marker, spartan_deck, hand_size, best_adv):
            return RETREAT
        return best_action if best_action >= 0 else RETREAT

    def rank_main(self, view: TeamView, mask: np.ndarray, actions: list[int]) -> list[int]:
        """``actions`` (of a MAIN decision) best first: the retreat, then fights by advantage."""
        scores = self.fight_scores(view, mask)
        return sorted(actions, key=lambda a: (a != RETREAT, -scores.get(a, -np.inf), a))

    def fight_scores(self, view: TeamView, mask: np.ndarray | None) -> dict[int, float]:
        """The advantage of every legal fight (see the module docstring), by action index."""
        return self._scores(
            view.hand_of(view.acting), view.marker, view.support, view.spartan_deck, int(view.hands.sum()),
            view.slot1, view.slot2, view.graveyard, view.persian_deck, self.future_gain(view), mask,
        )

    def _scores(
        self,
        hand: list[int],
        marker: int,
        support_left: int,
        spartan_deck: int,
        cards_in_hands: int,
        slot1: tuple[int, int, bool] | None,
        slot2: tuple[int, int, bool] | None,
        graveyard: int,
        persian_deck: int,
        future: tuple[list[float], list[float], float],
        mask: np.ndarray | None,
    ) -> dict[int, float]:
        p = self.params
        hand_size = len(hand)
        dice_here = location_dice(marker)
        cards_left = spartan_deck + cards_in_hands
        support_cost = p["support"] * (min(cards_left, 20) / 20.0) ** p["support_exp"]
        if support_left >= cards_left:
            support_cost = 0.0
        card_gain, row_quality, pair_quality = future
        bonus_on = spartan_deck > 0
        line_weight = p["line"]
        i1 = self._row_of.get(slot1) if slot1 is not None else None
        i2 = self._row_of.get(slot2) if slot2 is not None else None
        if i1 is None or i2 is None:
            line_weight = 0.0
        else:
            q_now = self._line_quality(i1, i2, bonus_on)
            q_one = row_quality[i2]
        discount = p["full_hand_discount"] if hand_size >= HAND_LIMIT else 0.0
        need_grave = GRAVEYARD_WIN - graveyard
        bonus_value = p["bonus"] if bonus_on else 0.0

        scores: dict[int, float] = {}
        w_win = p["win"]
        card_scale = p["card_scale"]
        if line_weight:
            to_one = line_weight * (q_one - q_now)
            to_pair = line_weight * (pair_quality - q_now)
        else:
            to_one = to_pair = 0.0
        outcome = self._outcome
        may_win = need_grave <= 2 or persian_deck <= 1  # otherwise no fight can win at once
        top = min(support_left, NUM_SUPPORT)
        for value in sorted(set(hand)):
            card_cost = card_scale * card_gain[value - 10] - discount
            base = FIGHT_BASE + (value - 10) * (NUM_SUPPORT + 1)
            for support in range(top + 1):
                action = base + support
                if mask is not None and not mask[action]:
                    continue
                dice = min(support + dice_here, MAX_DICE)
                base_gain, bonus_draws, p_one, p_both = outcome(value, dice, slot1, slot2)
                gain = base_gain + bonus_value * bonus_draws + p_one * to_one + p_both * to_pair
                # After a win nothing is left to pay for: the costs count only when the game goes on.
                rest = gain - card_cost - support_cost * support
                if may_win:
                    p_win = fight_win_prob(value, dice, slot1, slot2, need_grave, persian_deck)
                    scores[action] = p_win * w_win + (1.0 - p_win) * rest
                else:
                    scores[action] = rest
        return scores

    def _outcome(
        self, value: int, dice: int, slot1: tuple[int, int, bool] | None, slot2: tuple[int, int, bool] | None
    ) -> tuple[float, float, float, float]:
        """``(beaten and graveyard gain, expected bonus draws, P(slot 1 only), P(both))`` of a fight."""
        key = (value, dice, slot1, slot2)
        found = self._outcome_cache.get(key)
        if found is None:
            p = self.params
            stats = fight_stats(value, dice, slot1, slot2)
            found = (
                p["beaten"] * stats.e_beaten + p["grave"] * stats.e_grave,
                stats.e_bonus,
                stats.p_beat1 - stats.p_both,
                stats.p_both,
            )
            if len(self._outcome_cache) > 200_000:
                self._outcome_cache.clear()
            self._outcome_cache[key] = found
        return found

    def _line_quality(self, i: int, j: int, bonus_on: bool) -> float:
        key = (i, j, bonus_on)
        value = self._quality_cache.get(key)
        if value is None:
            p = self.params
            k = int(round(p["future_dice"]))
            grave, beaten, bonus = self._tables
            combined = p["beaten"] * beaten[:, k, i, j] + p["grave"] * grave[:, k, i, j]
            if bonus_on:
                combined = combined + p["bonus"] * bonus[:, k, i, j]
            value = float(self._spartan_weights @ combined)
            self._quality_cache[key] = value
        return value

    # ------------------------------------------------------------------------------ engine states
    def choose_state(self, game, state) -> int:
        """The action [`choose`][thermopylae_agents.players.coop_heuristic.CoopHeuristic.choose] would take on
        ``view_from_state(game, state)``, read straight from an engine state
        ([`thermopylae_env.coop.CoopState`][thermopylae_env.coop.state.CoopState]) without building the view:
        the search player's rollouts call this at every step. Only public parts of the state are read."""
        spartan = game.spartan
        phase = state.phase
        seat = state.current_player
        if phase == PHASE_MAIN:
            hand = sorted(spartan[card] for card in state.hands[seat])
            if not hand:
                return RETREAT
            rows = self._rows
            spartan_deck = len(state.spartan_order) - state.spartan_pos
            bonus_on = spartan_deck > 0
            unseen = state.persian_order[state.persian_pos :]
            key = (frozenset(unseen), bonus_on)  # a set: every deck order of the same cards shares it
            future = self._future_cache.get(key)
            if future is None:
                u = np.zeros(len(rows))
                u[list(unseen)] = 1.0
                future = self._future_of(u, bonus_on, key)
            scores = self._scores(
                hand, state.marker, state.support, spartan_deck, sum(len(h) for h in state.hands),
                rows[state.slot1] if state.slot1 >= 0 else None,
                rows[state.slot2] if state.slot2 >= 0 else None,
                len(state.graveyard), len(state.persian_order) - state.persian_pos, future, None,
            )
            return self._decide_main(scores, state.marker, spartan_deck, len(hand), True)
        if phase == PHASE_DRAW_OFFER:
            best, best_key = DECLINE, None
            for other in range(game.num_players):
                key = (len(state.hands[other]), (other - seat) % MAX_PLAYERS)
                if best_key is None or key < best_key:
                    best, best_key = GIVE_BASE + other, key
            return best
        # DISCARD: the lowest card of the recipient.
        return discard_action(min(spartan[card] for card in state.hands[state.recipient]))

    def _should_retreat(self, marker: int, spartan_deck: int, hand_size: int, best_adv: float) -> bool:
        p = self.params
        if marker >= 6:
            return False  # the next step is 7: lost at once
        if best_adv >= p["win"] * 0.5:
            return False  # a likely immediate win
        can_draw = spartan_deck > 0
        if marker <= 2:
            return best_adv < p["early_keep"] or not can_draw and best_adv < 0
        if not can_draw:
            return False
        if marker == 3:
            return hand_size <= p["stay3_hand"] or best_adv < p["stay3_adv"]
        return hand_size <= p["walk_hand"] or best_adv < p["walk_adv"]


def heuristic_positions(num_players: int, seed: int, random_share: float, count: int | None = None,
                        games: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Observations and legal-action masks of the heuristic's games on the reference engine, every phase
    included: the first ``count`` decisions, or every decision of ``games`` whole games (exactly one of the
    two). A share ``random_share`` of the moves is a random legal action instead, to reach positions the
    heuristic avoids; one generator seeded with ``seed`` draws the deals, those moves and the dice, so the
    same arguments give the same positions."""
    if (count is None) == (games is None):
        raise ValueError("heuristic_positions needs exactly one of count and games")
    game = CoopGame(num_players=num_players)
    heuristic = CoopHeuristic()
    rng = np.random.default_rng(seed)
    positions: list[tuple[np.ndarray, np.ndarray]] = []
    played = 0
    while (len(positions) < count) if count is not None else (played < games):
        state = game.init(rng)
        played += 1
        while not state.terminated and (count is None or len(positions) < count):
            mask = game.legal_action_mask(state)
            positions.append((game.observe(state), mask))
            action = heuristic.choose_state(game, state)
            if rng.random() < random_share:
                action = int(rng.choice(np.flatnonzero(mask)))
            game.step(state, action, rng)
    return positions


_TABLE_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _pair_tables(deck: Sequence[tuple[int, int, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expected graveyard cards, beaten cards and bonus draws of card ``v`` with ``k`` dice against every
    ordered pair of deck rows ``(slot 1 = i, slot 2 = j)``: three arrays of shape (11, MAX_DICE + 1, n, n).
    """
    key = tuple(deck)
    if key in _TABLE_CACHE:
        return _TABLE_CACHE[key]
    white = np.array([c[0] for c in deck])
    red = np.array([c[1] for c in deck])
    bonus = np.array([c[2] for c in deck], dtype=np.float64)
    n = len(deck)
    grave = np.zeros((len(VALUES), MAX_DICE + 1, n, n))
    beaten = np.zeros_like(grave)
    draws = np.zeros_like(grave)
    for k in range(MAX_DICE + 1):
        pmf = dice_sum_pmf(k)
        support = np.flatnonzero(pmf)
        for vi, v in enumerate(VALUES):
            totals = v + support  # (T,)
            probs = pmf[support]
            beat1 = (totals[:, None] >= white[None, :]).astype(np.float64)  # (T, n)
            grave1 = (totals[:, None] >= red[None, :]).astype(np.float64)
            beat2 = beat1[:, :, None] * beat1[:, None, :]  # (T, i, j)
            grave2 = beat1[:, :, None] * grave1[:, None, :]
            grave[vi, k] = (
                np.einsum("t,ti->i", probs, grave1)[:, None] + np.einsum("t,tij->ij", probs, grave2)
            )
            beaten[vi, k] = np.einsum("t,ti->i", probs, beat1)[:, None] + np.einsum("t,tij->ij", probs, beat2)
            draws[vi, k] = (np.einsum("t,ti->i", probs, beat1) * bonus)[:, None] + np.einsum(
                "t,tij->ij", probs, beat2
            ) * bonus[None, :]
    _TABLE_CACHE[key] = (grave, beaten, draws)
    return grave, beaten, draws
