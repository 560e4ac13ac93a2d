"""The built-in players of the package's environments, part of the environments' definition.

* [`RandomAgent`][thermopylae_env.duel.opponents.RandomAgent]: a uniformly random legal player for every
  environment (co-op, both duel sides, the PettingZoo view); the duel's ``opponent="random"`` draws from the
  env's own generator through it.
* [`HeuristicGreek`][thermopylae_env.duel.opponents.HeuristicGreek],
  [`HeuristicPersian`][thermopylae_env.duel.opponents.HeuristicPersian]: the hand-written duel players behind
  ``opponent="heuristic"`` (they read offsets from [`thermopylae_env.duel.layout`][]).

The duel heuristics read only their own side's observation and the mask, and
are deterministic. A decision that takes several micro-actions (building an attack or a defence) is
planned afresh from the observation at each micro-action: the plan depends only on the whole hand (cards
already added included) and on public numbers that do not change while building, so it stays the same
and the player adds its cards one by one, then commits.

[`HeuristicPersian`][thermopylae_env.duel.opponents.HeuristicPersian] is patient. It keeps one Attack card,
one card of each strategy type and its strongest troops, and attacks only when the whole attack (one Attack
card, every troop card, one card of each strategy type held) reaches ``attack_threshold``, when the Greek
holds no card, or when its deck is nearly spent. It keeps Xerxes Commands for the turn of an attack (the Greek
then defends with two cards fewer) unless its hand is over the limit.

[`HeuristicGreek`][thermopylae_env.duel.opponents.HeuristicGreek] plays Leonidas Strategy at once, keeps one
card of each strategy type and its strongest troops when it must cut down to 7 cards, and meets each attack
with the defence that minimises (tokens lost x token value + the cards spent): small attacks are parried with
a few low cards, big ones with multipliers, and a defence that leaves the Greeks without tokens is never
chosen when another exists.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from thermopylae_env.duel.layout import (
    ADD_BASE,
    ATTACK_KIND,
    COMMIT,
    COUNT_SCALE,
    DECK_SCALE,
    DECLINE,
    DISCARD_BASE,
    DISCARD_KIND,
    DONE_DISCARDING,
    HAND_LIMIT,
    KIND_FORCE,
    NUM_FORCE_KINDS,
    OBS_BUILD,
    OBS_HAND,
    OBS_OPP_HAND_SIZE,
    OBS_OWN_DECK,
    OBS_PHASE,
    OBS_TABLE_TOTAL,
    OBS_TOKENS,
    PLAY_DISCARD_CARD,
    START_TOKENS,
    STRATEGY_KINDS,
    TOTAL_SCALE,
)
from thermopylae_env.duel.state import Phase

__all__ = ["HeuristicGreek", "HeuristicPersian", "RandomAgent", "keep_value"]

_PHASES = range(OBS_PHASE.start, OBS_PHASE.stop)
_BUILD = OBS_BUILD.start
_CACHE_LIMIT = 50_000


def _as_list(observation: np.ndarray | Mapping[str, np.ndarray]) -> list[float]:
    if isinstance(observation, Mapping):  # PettingZoo's {"observation", "action_mask"}
        observation = observation["observation"]
    return observation.tolist() if isinstance(observation, np.ndarray) else list(observation)


def _phase(o: list[float]) -> int:
    for i in _PHASES:
        if o[i] > 0.5:
            return i - OBS_PHASE.start
    return -1


def _hand(o: list[float]) -> tuple[int, ...]:
    return tuple(int(x * COUNT_SCALE + 0.5) for x in o[OBS_HAND])


def keep_value(hand: tuple[int, ...], persian: bool) -> list[float]:
    """How much each kind's *least useful* copy in ``hand`` is worth keeping (lower is dropped first)."""
    values = []
    for k, n in enumerate(hand):
        if n == 0:
            values.append(float("inf"))
        elif k == DISCARD_KIND:
            values.append(1000.0)  # played at once anyway
        elif k in STRATEGY_KINDS:
            values.append(500.0 if n == 1 else 5.0)  # a second copy of a type cannot join the same combat
        elif persian and k == ATTACK_KIND:
            values.append(900.0 if n == 1 else 15.0)  # one Attack card is needed, more add little
        else:
            values.append(float(KIND_FORCE[k]))
    return values


def _discard_phase(
    o: list[float], mask: np.ndarray, hand: tuple[int, ...], persian: bool, hand_limit: int = HAND_LIMIT
) -> int:
    if mask[PLAY_DISCARD_CARD] and o[OBS_OPP_HAND_SIZE] > 0:
        return PLAY_DISCARD_CARD
    if sum(hand) > hand_limit:
        values = keep_value(hand, persian)
        return DISCARD_BASE + min(range(len(values)), key=values.__getitem__)
    return DONE_DISCARDING


def _next_add(o: list[float], plan: tuple[int, ...] | None) -> int:
    """The next micro-action that carries out ``plan`` (counts per kind 0..7; None = do not play)."""
    if plan is None:
        return DECLINE
    for k in range(len(plan)):
        if int(o[_BUILD + k] * COUNT_SCALE + 0.5) < plan[k]:
            return ADD_BASE + k
    return COMMIT


class HeuristicPersian:
    """A patient Persian: it saves up for multiplied attacks.

    Parameters
    ----------
    attack_threshold
        Attack once the whole attack totals at least this.
    endgame_deck
        With at most this many cards left in its deck, attack with whatever it has.
    hold_xerxes
        Keep Xerxes Commands until the turn of an attack (else play it at once).
    hand_limit
        The game's hand limit (a reduced duel's, ``thermopylae_env.duel.config``).
    """

    def __init__(
        self, attack_threshold: int = 300, endgame_deck: int = 1, hold_xerxes: bool = True,
        hand_limit: int = HAND_LIMIT,
    ) -> None:
        self.attack_threshold = attack_threshold
        self.endgame_deck = endgame_deck
        self.hold_xerxes = hold_xerxes
        self.hand_limit = hand_limit

    def plan_attack(self, hand: tuple[int, ...], greek_hand: int, deck: int) -> tuple[int, ...] | None:
        """Cards (count per kind 0..7) of the attack to make with ``hand``, or None to decline."""
        if hand[ATTACK_KIND] == 0:
            return None
        endgame = deck <= self.endgame_deck
        attacks = hand[ATTACK_KIND] if endgame else 1
        plan = (attacks, *hand[1:NUM_FORCE_KINDS], *(min(hand[k], 1) for k in STRATEGY_KINDS))
        strategies = plan[5] + plan[6] + plan[7]
        total = (10 * attacks + sum(KIND_FORCE[k] * hand[k] for k in range(1, NUM_FORCE_KINDS))) * (
            strategies + 1
        )
        if total >= self.attack_threshold or greek_hand == 0 or endgame:
            return plan
        return None

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        o = _as_list(observation)
        phase = _phase(o)
        hand = _hand(o)
        greek_hand = int(o[OBS_OPP_HAND_SIZE] * COUNT_SCALE + 0.5)
        deck = int(o[OBS_OWN_DECK] * DECK_SCALE + 0.5)
        if phase == Phase.PERSIAN_DISCARD:
            if (
                self.hold_xerxes
                and action_mask[PLAY_DISCARD_CARD]
                and sum(hand) <= self.hand_limit
                and self.plan_attack(hand, greek_hand, deck) is None
            ):
                hold = np.array(action_mask, dtype=bool)
                hold[PLAY_DISCARD_CARD] = False
                return _discard_phase(o, hold, hand, True, self.hand_limit)
            return _discard_phase(o, action_mask, hand, True, self.hand_limit)
        if phase == Phase.ATTACK:
            return _next_add(o, self.plan_attack(hand, greek_hand, deck))
        raise ValueError("HeuristicPersian asked to act outside the Persian's decisions")


class HeuristicGreek:
    """A Greek that meets big attacks with multipliers and keeps its strategy cards.

    Parameters
    ----------
    token_value
        Cost of one lost token, in force points of cards spent.
    strategy_cost
        Cost of spending one strategy card.
    hand_limit
        The game's hand limit (a reduced duel's, ``thermopylae_env.duel.config``).
    """

    def __init__(
        self, token_value: float = 25.0, strategy_cost: float = 80.0, hand_limit: int = HAND_LIMIT
    ) -> None:
        self.token_value = token_value
        self.strategy_cost = strategy_cost
        self.hand_limit = hand_limit
        self._cache: dict[tuple, tuple[int, ...] | None] = {}

    def plan_defence(self, hand: tuple[int, ...], attack: int, tokens: int) -> tuple[int, ...] | None:
        """Cards (count per kind 0..7) of the best defence against ``attack``, or None for no defence."""
        key = (hand, attack, tokens)
        if key in self._cache:
            return self._cache[key]
        held = [k for k in STRATEGY_KINDS if hand[k]]
        best_cost = float("inf")
        best: tuple[int, ...] | None = None
        ranges = [range(hand[k] + 1) for k in range(NUM_FORCE_KINDS)]
        # Stakes rise as tokens run out: the last tokens are worth more than the first.
        token_value = self.token_value * (1.0 + 2.0 / tokens)
        for counts in itertools.product(*ranges):
            force = 10 * counts[0] + 20 * counts[1] + 30 * counts[2] + 40 * counts[3] + 50 * counts[4]
            card_cost = float(force)
            for n_strat in range(len(held) + 1 if force else 1):
                defence = force * (n_strat + 1)
                lost = (attack - defence) // 10 if attack > defence else 0
                cost = card_cost + n_strat * self.strategy_cost
                cost += 1e9 - defence if lost >= tokens else lost * token_value
                if cost < best_cost:
                    best_cost = cost
                    best = (*counts, *(1 if k in held[:n_strat] else 0 for k in STRATEGY_KINDS))
        plan = None if best is None or not any(best[:NUM_FORCE_KINDS]) else best
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = plan
        return plan

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        o = _as_list(observation)
        phase = _phase(o)
        hand = _hand(o)
        if phase == Phase.GREEK_DISCARD:
            return _discard_phase(o, action_mask, hand, False, self.hand_limit)
        if phase == Phase.DEFENCE:
            attack = int(o[OBS_TABLE_TOTAL] * TOTAL_SCALE + 0.5)
            tokens = int(o[OBS_TOKENS] * START_TOKENS + 0.5)
            return _next_add(o, self.plan_defence(hand, attack, tokens))
        raise ValueError("HeuristicGreek asked to act outside the Greek's decisions")


class RandomAgent:
    """Plays a legal action chosen uniformly at random.

    It needs nothing but the legal-action mask, so one class serves the co-op game, both sides of the
    duel and the PettingZoo view (pass the dict observation and ``action_mask=None`` there).

    Parameters
    ----------
    seed
        Seed of the agent's own generator, used when ``act`` is called without ``rng``.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(
        self,
        observation: np.ndarray | Mapping[str, np.ndarray] | None,
        action_mask: np.ndarray | None = None,
        rng: np.random.Generator | None = None,
    ) -> int:
        """A random index among the true entries of ``action_mask``.

        ``rng`` (e.g. an environment's ``np_random``) replaces the agent's own generator for this call.
        With ``action_mask=None`` the mask is read from ``observation["action_mask"]``. Raises
        ``ValueError`` when no action is legal.
        """
        if action_mask is None:
            if isinstance(observation, Mapping) and "action_mask" in observation:
                action_mask = observation["action_mask"]
            else:
                raise ValueError("RandomAgent needs an action mask (or a dict observation holding one)")
        legal = np.flatnonzero(action_mask)
        if legal.size == 0:
            raise ValueError("no legal action: the action mask is all zeros")
        generator = self.rng if rng is None else rng
        return int(legal[generator.integers(legal.size)])
