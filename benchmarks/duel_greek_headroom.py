#!/usr/bin/env python
"""How much better than the hand-written Greek can a Greek play against the hand-written Persian?

The duel's Greek quality bar asks a trained Greek to beat ``HeuristicPersian`` more often than
``HeuristicGreek`` does, with non-overlapping 95% intervals. This script measures how much room there is,
four ways, each on the same seeded deals (game ``i`` is dealt with seed ``--seed + i``):

1. **fatal attacks**: in ``HeuristicGreek`` vs ``HeuristicPersian`` games, each Persian attack is
   classed by what the Greek's hand could do against it at that moment: fully blockable, survivable
   with a token loss, or fatal whatever the defence (the best defence of the hand, every force card and
   one strategy card of each type, still loses every remaining token).
2. **parameter sweep** of ``HeuristicGreek(token_value, strategy_cost)``.
3. **oracle Leonidas timing**: the heuristic Greek, except that it holds Leonidas Strategy unless the
   Persian's *hidden* hand would attack this turn (it peeks: an upper bound on what timing that card
   can gain, not a legal player).
4. **inferred Leonidas timing**: the same rule without peeking: it samples Persian hands of the right size
   from the Persian cards not yet seen and holds the card unless at least a share ``theta`` of them would
   attack this turn (theta 0.2, 0.4, 0.6).
5. **determinized search** (``--search-games``, slow: about 1.5 s a game): a Monte-Carlo Greek that, at
   each choice the heuristic makes (play Leonidas now or not, which card to drop above 7, which defence),
   samples the hidden cards consistently with what the Greek has seen, plays every candidate out with
   both heuristics (common random numbers) and keeps the heuristic's choice unless another did better.

    .venv/bin/python benchmarks/duel_greek_headroom.py --games 4000 --search-games 300 --json headroom.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from thermopylae_agents.evaluation.stats import wilson_interval
from thermopylae_env.duel.layout import (
    ADD_BASE,
    COMMIT,
    DECK_SIZE,
    DECLINE,
    DISCARD_BASE,
    GREEK,
    HAND_LIMIT,
    KIND_FORCE,
    NUM_FORCE_KINDS,
    PERSIAN,
    PLAY_DISCARD_CARD,
    STRATEGY_KINDS,
)
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian
from thermopylae_env.duel.rules import DuelGame
from thermopylae_env.duel.state import DuelState, Phase

GAME = DuelGame()


def best_defence(counts: list[int]) -> int:
    """The largest defence total a Greek hand can make: every force card, one strategy card per type."""
    force = sum(KIND_FORCE[k] * counts[k] for k in range(NUM_FORCE_KINDS))
    return force * (1 + sum(1 for k in STRATEGY_KINDS if counts[k]))


def play(greek, persian, seed: int) -> bool:  # noqa: ANN001 - callables state -> action
    """One game on the engine; ``greek``/``persian`` map a state to an action. True if the Greeks win."""
    rng = np.random.default_rng(seed)
    state = GAME.init(rng)
    while not state.terminated:
        player = greek if state.current_player == GREEK else persian
        GAME.step(state, player(state), rng)
    return state.winner == GREEK


def heuristic_player(agent, side: int):  # noqa: ANN001, ANN201
    return lambda s: agent.act(GAME.observe(s, side), GAME.legal_action_mask(s))


def rate(wins: int, games: int) -> dict:
    low, high = wilson_interval(wins, games)
    return {"wins": wins, "games": games, "win_rate": wins / games, "ci95": [low, high]}


# ------------------------------------------------------------------------------------------ fatal attacks
def fatal_attacks(games: int, seed: int) -> dict:
    greek, persian = HeuristicGreek(), HeuristicPersian()
    counts = {"fully_blockable": 0, "survivable_with_loss": 0, "fatal_whatever_the_defence": 0}
    losses = fatal_losses = 0
    for i in range(games):
        rng = np.random.default_rng(seed + i)
        s = GAME.init(rng)
        fatal = False
        while not s.terminated:
            p = s.current_player
            if s.phase == Phase.DEFENCE and not any(s.build):
                most = best_defence(s.hand_counts[GREEK])
                if s.attack_total - most >= 10 * s.tokens:
                    counts["fatal_whatever_the_defence"] += 1
                    fatal = True
                elif most < s.attack_total:
                    counts["survivable_with_loss"] += 1
                else:
                    counts["fully_blockable"] += 1
            agent = greek if p == GREEK else persian
            GAME.step(s, agent.act(GAME.observe(s, p), GAME.legal_action_mask(s)), rng)
        if s.winner == PERSIAN:
            losses += 1
            fatal_losses += fatal
    return {"attacks": counts, "greek_losses": losses, "losses_to_a_fatal_attack": fatal_losses,
            "greek": rate(games - losses, games)}


# ---------------------------------------------------------------------------------------- parameter sweep
def sweep(games: int, seed: int) -> list[dict]:
    persian = heuristic_player(HeuristicPersian(), PERSIAN)
    rows = []
    for token_value, strategy_cost in itertools.product((10, 25, 60, 200), (20, 80, 200)):
        greek = heuristic_player(HeuristicGreek(token_value, strategy_cost), GREEK)
        wins = sum(play(greek, persian, seed + i) for i in range(games))
        rows.append({"token_value": token_value, "strategy_cost": strategy_cost, **rate(wins, games)})
    return rows


# ---------------------------------------------------------------------------------- oracle Leonidas timing
def oracle_leonidas(games: int, seed: int) -> dict:
    greek, hp = HeuristicGreek(), HeuristicPersian()

    def oracle(s: DuelState) -> int:
        mask = GAME.legal_action_mask(s)
        if s.phase == Phase.GREEK_DISCARD and mask[PLAY_DISCARD_CARD] and len(s.hands[GREEK]) <= HAND_LIMIT:
            attacks = hp.plan_attack(tuple(s.hand_counts[PERSIAN]), len(s.hands[GREEK]), s.deck_size(PERSIAN))
            if attacks is None:  # peeking: the Persian would not attack this turn, so keep the card
                mask = mask.copy()
                mask[PLAY_DISCARD_CARD] = False
        return greek.act(GAME.observe(s, GREEK), mask)

    persian = heuristic_player(hp, PERSIAN)
    wins = sum(play(oracle, persian, seed + i) for i in range(games))
    return rate(wins, games)


def inferred_leonidas(games: int, seed: int, theta: float, samples: int = 64) -> dict:
    greek, hp = HeuristicGreek(), HeuristicPersian()
    rng = np.random.default_rng(seed + 777)

    def attack_share(s: DuelState) -> float:
        seen = set(s.discards[PERSIAN]) | set(s.table)
        pool = np.array([GAME.card_kinds[c] for c in range(DECK_SIZE, 2 * DECK_SIZE) if c not in seen])
        size, attacks = len(s.hands[PERSIAN]), 0
        for _ in range(samples):
            drawn = rng.choice(pool, size=size, replace=False)
            hand = tuple(int(n) for n in np.bincount(drawn, minlength=len(GAME.kinds[PERSIAN])))
            attacks += hp.plan_attack(hand, len(s.hands[GREEK]), s.deck_size(PERSIAN)) is not None
        return attacks / samples

    def inferred(s: DuelState) -> int:
        mask = GAME.legal_action_mask(s)
        if (s.phase == Phase.GREEK_DISCARD and mask[PLAY_DISCARD_CARD] and s.hands[PERSIAN]
                and len(s.hands[GREEK]) <= HAND_LIMIT and attack_share(s) < theta):
            mask = mask.copy()
            mask[PLAY_DISCARD_CARD] = False
        return greek.act(GAME.observe(s, GREEK), mask)

    persian = heuristic_player(hp, PERSIAN)
    return {"theta": theta, **rate(sum(play(inferred, persian, seed + i) for i in range(games)), games)}


# ------------------------------------------------------------------------------------ determinized search
def _deck_order(rest: list[int], first_id: int) -> tuple[int, ...]:
    """A full deck order (a permutation of the side's 52 ids) whose undrawn part is ``rest``: the drawn
    positions hold the side's other cards, which the engine never reads again."""
    remaining = set(rest)
    drawn = [c for c in range(first_id, first_id + DECK_SIZE) if c not in remaining]
    return tuple(drawn) + tuple(rest)


class SearchGreek:
    """Determinized Monte-Carlo Greek over the heuristic's choices (see the module docstring)."""

    def __init__(self, determinizations: int, seed: int, candidates: int = 6) -> None:
        self.determinizations = determinizations
        self.candidates = candidates
        self.rng = np.random.default_rng(seed)
        self.greek = HeuristicGreek()
        self.persian = HeuristicPersian()
        self.plan: tuple[int, ...] | None = None

    def determinize(self, s: DuelState) -> DuelState:
        """A copy of ``s`` whose hidden cards (Persian hand, both deck orders) are redrawn from the unseen."""
        d = s.copy()
        seen = set(s.discards[PERSIAN]) | set(s.table)
        unseen = [c for c in range(DECK_SIZE, 2 * DECK_SIZE) if c not in seen]
        self.rng.shuffle(unseen)
        size = len(s.hands[PERSIAN])
        d.hands[PERSIAN] = unseen[:size]
        d.hand_counts[PERSIAN] = [0] * len(d.hand_counts[PERSIAN])
        for c in d.hands[PERSIAN]:
            d.hand_counts[PERSIAN][GAME.card_kinds[c]] += 1
        own = set(s.discards[GREEK]) | set(s.hands[GREEK])
        deck = [c for c in range(DECK_SIZE) if c not in own]
        self.rng.shuffle(deck)
        d.decks = (_deck_order(deck, 0), _deck_order(unseen[size:], DECK_SIZE))
        return d

    def rollout(self, d: DuelState, rng: np.random.Generator) -> float:
        while not d.terminated:
            p = d.current_player
            agent = self.greek if p == GREEK else self.persian
            GAME.step(d, agent.act(GAME.observe(d, p), GAME.legal_action_mask(d)), rng)
        return float(d.winner == GREEK)

    def best(self, s: DuelState, options: list, apply, default) -> object:  # noqa: ANN001
        """The option with the most rollout wins; the heuristic's ``default`` wins ties."""
        scores = np.zeros(len(options))
        for _ in range(self.determinizations):
            d0 = self.determinize(s)
            rollout_seed = int(self.rng.integers(1 << 62))
            for i, option in enumerate(options):
                d, rng = d0.copy(), np.random.default_rng(rollout_seed)
                apply(d, option, rng)
                scores[i] += self.rollout(d, rng)
        return default if scores[options.index(default)] >= scores.max() else options[int(np.argmax(scores))]

    def defences(self, s: DuelState) -> list:
        """The heuristic's defence and the next cheapest by its own cost, plus no defence if that survives."""
        hand, attack, tokens = tuple(s.hand_counts[GREEK]), s.attack_total, s.tokens
        held = [k for k in STRATEGY_KINDS if hand[k]]
        token_value = self.greek.token_value * (1 + 2 / tokens)
        costed = []
        for counts in itertools.product(*(range(hand[k] + 1) for k in range(NUM_FORCE_KINDS))):
            force = sum(KIND_FORCE[k] * counts[k] for k in range(NUM_FORCE_KINDS))
            for n_strategies in range(len(held) + 1 if force else 0):
                lost = max(0, attack - force * (n_strategies + 1)) // 10
                if lost < tokens:
                    plan = (*counts, *(int(k in held[:n_strategies]) for k in STRATEGY_KINDS))
                    cost = force + n_strategies * self.greek.strategy_cost + lost * token_value
                    costed.append((cost, plan))
        options = [self.greek.plan_defence(hand, attack, tokens)]
        if tokens > attack // 10 and None not in options:
            options.append(None)
        for _, plan in sorted(costed):
            if len(options) >= self.candidates:
                break
            if plan not in options:
                options.append(plan)
        return options

    @staticmethod
    def carry_out(d: DuelState, plan: tuple[int, ...] | None, rng: np.random.Generator) -> None:
        if plan is None:
            GAME.step(d, DECLINE, rng)
            return
        for k, n in enumerate(plan):
            for _ in range(n):
                GAME.step(d, ADD_BASE + k, rng)
        GAME.step(d, COMMIT, rng)

    def __call__(self, s: DuelState) -> int:
        mask = GAME.legal_action_mask(s)
        observation = GAME.observe(s, GREEK)
        if s.phase == Phase.GREEK_DISCARD:
            if mask[PLAY_DISCARD_CARD] and s.hands[PERSIAN]:
                held = mask.copy()
                held[PLAY_DISCARD_CARD] = False

                def leonidas(d: DuelState, play_now: bool, rng: np.random.Generator) -> None:
                    if play_now:
                        GAME.step(d, PLAY_DISCARD_CARD, rng)
                        return
                    while d.phase == Phase.GREEK_DISCARD and not d.terminated:
                        m = GAME.legal_action_mask(d)
                        m[PLAY_DISCARD_CARD] = False
                        GAME.step(d, self.greek.act(GAME.observe(d, GREEK), m), rng)

                if self.best(s, [True, False], leonidas, True):
                    return PLAY_DISCARD_CARD
                return self.greek.act(observation, held)
            default = self.greek.act(observation, mask)
            kinds = [DISCARD_BASE + k for k, n in enumerate(s.hand_counts[GREEK]) if n]
            if len(s.hands[GREEK]) > HAND_LIMIT and len(kinds) > 1:
                return self.best(s, kinds, lambda d, a, rng: GAME.step(d, a, rng), default)
            return default
        if not any(s.build):
            options = self.defences(s)
            self.plan = options[0] if len(options) == 1 else self.best(s, options, self.carry_out, options[0])
        if self.plan is None:
            return DECLINE
        for k, n in enumerate(self.plan):
            if s.build[k] < n:
                return ADD_BASE + k
        return COMMIT


def search_vs_heuristic(games: int, seed: int, determinizations: int) -> dict:
    persian = heuristic_player(HeuristicPersian(), PERSIAN)
    heuristic = heuristic_player(HeuristicGreek(), GREEK)
    start = time.perf_counter()
    search = [play(SearchGreek(determinizations, seed=seed + i + 12345), persian, seed + i)
              for i in range(games)]
    seconds = time.perf_counter() - start
    plain = [play(heuristic, persian, seed + i) for i in range(games)]
    return {"determinizations": determinizations, "search": rate(sum(search), games),
            "heuristic_same_deals": rate(sum(plain), games), "seconds_per_search_game": seconds / games,
            "deals_won_by_search_only": sum(a and not b for a, b in zip(search, plain, strict=True)),
            "deals_won_by_heuristic_only": sum(b and not a for a, b in zip(search, plain, strict=True))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=4000, help="games per measurement (default 4000)")
    parser.add_argument("--search-games", type=int, default=0, help="games for the search Greek (0: skip)")
    parser.add_argument("--determinizations", type=int, default=24, help="search: samples per decision")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    if args.games < 1 or args.search_games < 0 or args.determinizations < 1:
        parser.error("--games and --determinizations must be >= 1, --search-games >= 0")
    console = Console()
    pct = "{:.2%}".format

    def interval(r: dict) -> str:
        return f"{pct(r['win_rate'])} [{pct(r['ci95'][0])}, {pct(r['ci95'][1])}]"

    results: dict = {"games": args.games, "seed": args.seed}
    results["fatal_attacks"] = fatal = fatal_attacks(args.games, args.seed)
    console.print(f"heuristic Greek vs heuristic Persian: {interval(fatal['greek'])}")
    console.print(f"Persian attacks by what the Greek hand could do: {fatal['attacks']}")
    console.print(f"Greek losses: {fatal['greek_losses']}, of which to an attack no defence could survive: "
                  f"{fatal['losses_to_a_fatal_attack']}")
    results["sweep"] = rows = sweep(args.games, args.seed)
    table = Table(title="HeuristicGreek(token_value, strategy_cost) vs HeuristicPersian, same deals")
    for column in ("token_value", "strategy_cost", "Greek wins"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(str(row["token_value"]), str(row["strategy_cost"]), interval(row))
    console.print(table)
    results["oracle_leonidas"] = oracle = oracle_leonidas(args.games, args.seed)
    console.print(f"oracle Leonidas timing (peeks at the Persian's hand): {interval(oracle)}")
    inferred = [inferred_leonidas(args.games, args.seed, theta) for theta in (0.2, 0.4, 0.6)]
    results["inferred_leonidas"] = inferred
    for row in inferred:
        console.print(f"inferred Leonidas timing, theta {row['theta']}: {interval(row)}")
    if args.search_games:
        results["search"] = s = search_vs_heuristic(args.search_games, args.seed, args.determinizations)
        console.print(f"search Greek ({args.determinizations} determinizations): {interval(s['search'])}; "
                      f"heuristic on the same deals: {interval(s['heuristic_same_deals'])}; "
                      f"{s['seconds_per_search_game']:.2f} s per search game")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
