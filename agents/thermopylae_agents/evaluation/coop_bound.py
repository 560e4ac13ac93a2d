"""Upper bounds on the co-op win probability of any player: exact expectimax over the dice.

A *deck-clairvoyant* player knows the order of both decks but not the dice. Its best win probability on a
deal is ``V(start)`` of the expectimax recursion

    V(s) = max over legal actions a of  E_dice[ V(next(s, a, dice)) ]     (1 for a win, 0 for a loss)

where the only chance left is the dice. Every real player knows less (the deck orders are hidden), so on
every deal its win probability is at most that value; see ``docs/coop_bound.md`` for the argument.

Three solvers live here:

* [`DeckClairvoyantSolver`][thermopylae_agents.evaluation.coop_bound.DeckClairvoyantSolver]: the fast one. A
  compact re-implementation of the rules on a small state (positions in both decks, the hands as multisets of
  values, graveyard count, marker, support, seat), memoized per deal. Between actions the line is always the
  last two Persian cards drawn, so it is given by the Persian deck position; discard piles never influence the
  rules. With ``mode="lucky"`` the expectation over the dice is replaced by the best dice outcome: the value
  is then 1 exactly when some dice sequence and some play win (the bound of a player who also knows the dice
  is below it).
* [`engine_value`][thermopylae_agents.evaluation.coop_bound.engine_value]: the reference. Plain recursion over
  [`thermopylae_env.coop.CoopState`][thermopylae_env.coop.state.CoopState] stepping
  [`CoopGame.step`][thermopylae_env.coop.rules.CoopGame.step] itself, with every sum of the dice fed to the
  engine through a stand-in generator; optional memo. Used by the tests to hold the fast solver to the engine.
* [`policy_value`][thermopylae_agents.evaluation.coop_bound.policy_value]: the same recursion for a fixed
  policy (for instance the heuristic's ``choose_state``): the exact win probability of that policy on a deal,
  memoized over the state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from thermopylae_env.coop.env import CoopEnv
from thermopylae_env.coop.layout import (
    FIGHT_BASE,
    GRAVEYARD_WIN,
    LOSS_MARKER,
    NUM_SUPPORT,
    RETREAT,
    SPARTAN_DECK_SIZE,
)
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import HAND_LIMIT, CoopState
from thermopylae_env.jit import HAVE_NUMBA

if HAVE_NUMBA:  # the compiled solvers are numba code itself (llvmlite intrinsics): no plain-Python stand-in
    from thermopylae_agents.evaluation import _coop_bound_kernel as _kernel
    from thermopylae_agents.evaluation import _coop_bound_team_kernel as _team

__all__ = [
    "DeckClairvoyantSolver",
    "dice_sum_distribution",
    "deal_orders",
    "engine_value",
    "policy_value",
    "FixedDice",
]

LOCATION_DIE_MARKERS = (3, 6)
MODES = ("expect", "lucky")
BACKENDS = ("auto", "numba", "python")


def dice_sum_distribution(n: int) -> dict[int, float]:
    """``{sum: probability}`` of the sum of ``n`` six-sided dice, exact (``n = 0``: ``{0: 1}``)."""
    if n < 0:
        raise ValueError(f"the number of dice must be >= 0, got {n}")
    counts = {0: 1}
    for _ in range(n):
        nxt: dict[int, int] = {}
        for total, c in counts.items():
            for face in range(1, 7):
                nxt[total + face] = nxt.get(total + face, 0) + c
        counts = nxt
    scale = 6**n
    return {total: c / scale for total, c in sorted(counts.items())}


def dice_with_sum(n: int, total: int) -> list[int]:
    """``n`` die faces (1..6) that add up to ``total`` (any such tuple: the engine only uses the sum)."""
    if not n <= total <= 6 * n:
        raise ValueError(f"{n} dice cannot sum to {total}")
    dice = [1] * n
    rest = total - n
    for i in range(n):
        add = min(5, rest)
        dice[i] += add
        rest -= add
    return dice


class FixedDice:
    """A stand-in for the generator given to [`CoopGame.step`][thermopylae_env.coop.rules.CoopGame.step]: its
    next roll returns the given faces.

    The engine draws dice in exactly one place (``roll_dice(rng, n)`` calls ``rng.integers(1, 7, size=n)``);
    a call that asks for another number of dice, or a second call, is an error, so a test notices if the
    engine ever rolls in another way.
    """

    def __init__(self, dice: list[int]) -> None:
        self._dice = list(dice)
        self.used = False

    def integers(self, low: int, high: int, size: int) -> np.ndarray:
        if self.used or (low, high, size) != (1, 7, len(self._dice)):
            raise AssertionError(f"unexpected dice draw integers({low}, {high}, size={size})")
        self.used = True
        return np.asarray(self._dice, dtype=np.int64)


def deal_orders(seed: int, num_players: int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The deck orders ``(spartan_order, persian_order)`` of evaluation deal ``seed``: exactly what
    ``thermopylae/Coop-v0``'s ``reset(seed=seed)`` deals (the evaluation plays game ``i`` with seed
    ``base_seed + i``)."""
    env = CoopEnv(num_players=num_players)
    env.reset(seed=int(seed))
    state = env.state
    assert state is not None
    return state.spartan_order, state.persian_order


# ---------------------------------------------------------------------------------------- fast solver


@dataclass
class SolveStats:
    """What one solve cost: states memoized (MAIN decisions), fight outcome tables built (Python solver),
    memo lookups and actions abandoned by the pruning (numba kernel)."""

    states: int = 0
    tables: int = 0
    lookups: int = 0
    abandoned: int = 0


class DeckClairvoyantSolver:
    """Exact best win probability of a player who knows both deck orders but not the dice.

    ``solve(spartan_order, persian_order)`` evaluates a new game; ``value(state)`` any engine state in
    the MAIN phase (between actions). ``mode="expect"`` (default) takes the expectation over the dice,
    ``mode="lucky"`` their best outcome. The memo holds one deal at a time (cleared by every call) and
    ``max_states`` bounds it: going past it raises ``MemoryError``.
    """

    def __init__(
        self, game: CoopGame, mode: str = "expect", max_states: int = 20_000_000, backend: str = "auto"
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "auto":
            backend = "numba" if HAVE_NUMBA else "python"
        self.backend = backend
        self.game = game
        self.mode = mode
        self.max_states = int(max_states)
        self.stats = SolveStats()
        self._pmfs = [sorted(dice_sum_distribution(n).items()) for n in range(NUM_SUPPORT + 2)]
        self._memo: dict[tuple, float] = {}
        self._kernel_tables: tuple | None = None
        self._tables: dict[tuple[int, int, int], list[tuple[float, int, int, int]]] = {}

    # -------------------------------------------------------------------------------- entry points
    def solve(self, spartan_order, persian_order) -> float:
        """The value of the game dealt from these deck orders (top first), as ``CoopGame.new_state``."""
        return self.value(self.game.new_state(spartan_order, persian_order))

    def value(self, state: CoopState) -> float:
        """The value of an engine state between actions (MAIN phase, or a finished game)."""
        if state.terminated:
            return 1.0 if state.won else 0.0
        if state.phase != 0:
            raise ValueError("value() takes a state between actions (MAIN phase)")
        self._load(state.spartan_order, state.persian_order)
        spartan = self.game.spartan
        hands = tuple(tuple(sorted(spartan[c] for c in hand)) for hand in state.hands)
        if state.slot1 != state.persian_order[state.persian_pos - 2] or (
            state.slot2 != state.persian_order[state.persian_pos - 1]
        ):
            raise ValueError("the line is not the last two Persian cards drawn (not a state of a game)")
        if self.backend == "numba":
            return self._numba_main(state, hands)
        return self._main(
            state.spartan_pos, hands, state.persian_pos, len(state.graveyard), state.marker, state.support,
            state.current_player,
        )

    # -------------------------------------------------------------------------------- internals
    def _numba_main(self, state: CoopState, hands: tuple[tuple[int, ...], ...]) -> float:
        if self._kernel_tables is None:
            pmf = np.zeros((NUM_SUPPORT + 2, 6 * (NUM_SUPPORT + 1) + 1))
            for n, items in enumerate(self._pmfs):
                for total, prob in items:
                    pmf[n, total] = prob
            self._kernel_tables = (pmf, _kernel.hand_info(), self._new_scratch())
        pmf, sizes, scratch = self._kernel_tables
        fights = _kernel.fight_tables(np.asarray(self._white, dtype=np.int64),
                                     np.asarray(self._red, dtype=np.int64),
                                     np.asarray(self._bonus, dtype=np.int64), pmf)
        codes = [sum(int(_kernel.POW3[v - 10]) for v in hand) for hand in hands]
        sv = np.asarray(self._sv, dtype=np.int64)
        counters = (state.persian_pos, len(state.graveyard), state.marker, state.support)
        if self._np == 1:
            table, fill = _kernel.new_table(self.max_states)
            value = _kernel.solve_main(state.spartan_pos, codes[0], *counters, 0, sv, self._n_persian,
                                      *fights, sizes, table, fill, *scratch, self.mode == "lucky")
        else:
            table, fill = _team.new_table(self.max_states)
            h0, h1, h2, h3 = codes + [0] * (_team.MAX_SEATS - len(codes))
            value = _team.solve_team(state.spartan_pos, h0, h1, h2, h3, *counters, state.current_player,
                                    self._np, 0, sv, self._n_persian, *fights, sizes, table, fill, *scratch,
                                    self.mode == "lucky")
        self.stats.states = int(fill[0])
        self.stats.lookups = int(fill[2])
        self.stats.abandoned = int(fill[3])
        return float(value)

    def _new_scratch(self) -> tuple[np.ndarray, ...]:
        if self._np == 1:
            return _kernel.new_scratch()
        return _team.new_scratch()

    def _load(self, spartan_order, persian_order) -> None:
        game = self.game
        self._memo = {}
        self._tables = {}
        self.stats = SolveStats()
        self._sv = tuple(game.spartan[c] for c in spartan_order)  # values, top of the deck first
        self._white = tuple(game.persian[r].white for r in persian_order)
        self._red = tuple(game.persian[r].red for r in persian_order)
        self._bonus = tuple(bool(game.persian[r].bonus) for r in persian_order)
        self._np = game.num_players
        self._n_persian = len(persian_order)

    def _outcomes(self, pp: int, value: int, n_dice: int) -> list[tuple[float, int, int, int]]:
        """Fight of ``value`` with ``n_dice`` dice against the line of Persian position ``pp``: the
        distinct results ``(probability, beaten, graveyard cards, bonus cards beaten)``."""
        key = (pp, value, n_dice)
        found = self._tables.get(key)
        if found is not None:
            return found
        w1, r1, b1 = self._white[pp - 2], self._red[pp - 2], self._bonus[pp - 2]
        w2, r2, b2 = self._white[pp - 1], self._red[pp - 1], self._bonus[pp - 1]
        merged: dict[tuple[int, int, int], float] = {}
        for dice_sum, prob in self._pmfs[n_dice]:
            total = value + dice_sum
            beaten = grave = bonus = 0
            if total >= w1:
                beaten, grave, bonus = 1, int(total >= r1), int(b1)
                if total >= w2:  # slot 2 is fought only after slot 1 is beaten
                    beaten, grave, bonus = 2, grave + int(total >= r2), bonus + int(b2)
            k = (beaten, grave, bonus)
            merged[k] = merged.get(k, 0.0) + prob
        found = [(p, b, g, o) for (b, g, o), p in merged.items()]
        self._tables[key] = found
        self.stats.tables += 1
        return found

    def _main(self, sp: int, hands: tuple, pp: int, grave: int, marker: int, support: int,
              seat: int) -> float:
        key = (sp, hands, pp, grave, marker, support, seat)
        memo = self._memo
        found = memo.get(key)
        if found is not None:
            return found
        if len(memo) >= self.max_states:
            raise MemoryError(f"the memo of one deal is full ({self.max_states} states)")
        lucky = self.mode == "lucky"
        best = 0.0
        # Retreat: the marker moves; 7 loses at once; otherwise one draw offer, no refill needed.
        if marker + 1 < LOSS_MARKER:
            best = self._offers(sp, hands, 1, pp, grave, marker + 1, support, seat)
        hand = hands[seat]
        extra = 1 if marker in LOCATION_DIE_MARKERS else 0
        previous = -1
        for index, value in enumerate(hand):
            if best >= 1.0:
                break
            if value == previous:
                continue
            previous = value
            rest = hands[:seat] + (hand[:index] + hand[index + 1 :],) + hands[seat + 1 :]
            for spent in range(support + 1):
                total = 0.0
                for prob, beaten, won_grave, bonus in self._outcomes(pp, value, spent + extra):
                    if grave + won_grave >= GRAVEYARD_WIN or self._n_persian - pp < beaten:
                        result = 1.0  # the 12th graveyard card, or a refill the deck cannot supply
                    elif bonus:
                        result = self._offers(sp, rest, bonus, pp + beaten, grave + won_grave, marker,
                                              support - spent, seat)
                    else:
                        result = self._complete(sp, rest, pp + beaten, grave + won_grave, marker,
                                                support - spent, seat)
                    if lucky:
                        total = max(total, result)
                    else:
                        total += prob * result
                if total > best:
                    best = total
                    if best >= 1.0:
                        break
        memo[key] = best
        self.stats.states += 1
        return best

    def _offers(self, sp: int, hands: tuple, count: int, pp: int, grave: int, marker: int, support: int,
                seat: int) -> float:
        """Best value over every way of answering ``count`` draw offers, then the end of the action."""
        best = 0.0
        for new_sp, new_hands in self._offer_results(sp, hands, count):
            value = self._complete(new_sp, new_hands, pp, grave, marker, support, seat)
            if value > best:
                best = value
                if best >= 1.0:
                    break
        return best

    def _offer_results(self, sp: int, hands: tuple, count: int) -> set[tuple[int, tuple]]:
        """Every ``(Spartan position, hands)`` reachable by answering the offers: decline, or give the top
        card to any seat (a seat then holding 6 cards discards any one of them)."""
        if count == 0 or sp >= SPARTAN_DECK_SIZE:
            return {(sp, hands)}
        results = set(self._offer_results(sp, hands, count - 1))  # decline this offer
        card = self._sv[sp]
        for seat in range(self._np):
            hand = tuple(sorted(hands[seat] + (card,)))
            if len(hand) > HAND_LIMIT:
                options = {hand[:i] + hand[i + 1 :] for i in range(len(hand))}
            else:
                options = {hand}
            for option in options:
                given = hands[:seat] + (option,) + hands[seat + 1 :]
                results |= self._offer_results(sp + 1, given, count - 1)
        return results

    def _complete(self, sp: int, hands: tuple, pp: int, grave: int, marker: int, support: int,
                  seat: int) -> float:
        """End of an action: (the line is refilled: implicit in ``pp``) the exhaustion loss, next seat."""
        if sp >= SPARTAN_DECK_SIZE and not any(hands):
            return 0.0
        return self._main(sp, hands, pp, grave, marker, support, (seat + 1) % self._np)


# ---------------------------------------------------------------------------------------- engine recursion


def _fight_sums(game: CoopGame, state: CoopState, action: int) -> list[tuple[float, list[int]]]:
    """For a fight action: ``(probability, dice faces)`` per possible sum of its dice."""
    support = (action - FIGHT_BASE) % (NUM_SUPPORT + 1)
    n_dice = support + (1 if state.marker in LOCATION_DIE_MARKERS else 0)
    return [(p, dice_with_sum(n_dice, s)) for s, p in dice_sum_distribution(n_dice).items()]


def _children(game: CoopGame, state: CoopState, action: int) -> list[tuple[float, CoopState]]:
    """``(probability, next state)`` of ``action``, stepping the engine itself once per dice sum."""
    if state.phase == 0 and action != RETREAT:
        children = []
        for prob, dice in _fight_sums(game, state, action):
            child = state.copy()
            rng = FixedDice(dice)
            game.step(child, action, rng)  # type: ignore[arg-type]
            if dice and not rng.used:
                raise AssertionError("the engine did not roll the dice of a fight")
            children.append((prob, child))
        return children
    child = state.copy()
    game.step(child, action, FixedDice([]))  # type: ignore[arg-type]
    return [(1.0, child)]


def rules_key(state: CoopState, game: CoopGame) -> tuple:
    """Everything of an engine state that the rules' future depends on: the key of a memo.

    Card identities of equal value and the split of beaten cards between the discard pile and the
    graveyard (beyond the graveyard's size) never change what can happen next; the turn counter neither.
    """
    spartan = game.spartan
    return (
        state.spartan_order[state.spartan_pos :],
        state.persian_order[state.persian_pos :],
        tuple(tuple(sorted(spartan[c] for c in hand)) for hand in state.hands),
        state.slot1, state.slot2, len(state.graveyard), state.marker, state.support,
        state.current_player, state.phase, state.recipient, state.offers, state.terminated, state.won,
    )


def engine_value(
    game: CoopGame, state: CoopState, mode: str = "expect", memo: dict | None = None
) -> float:
    """The deck-clairvoyant value of ``state`` by recursion over the engine itself: max over the legal
    actions (``legal_action_mask``), expectation (or, ``mode="lucky"``, the best) over the dice sums.
    Without ``memo`` it is plain brute force (only for states near the end of a game)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if state.terminated:
        return 1.0 if state.won else 0.0
    key = None
    if memo is not None:
        key = rules_key(state, game)
        if key in memo:
            return memo[key]
    best = 0.0
    for action in np.flatnonzero(game.legal_action_mask(state)):
        children = _children(game, state, int(action))
        outcomes = [(p, engine_value(game, child, mode, memo)) for p, child in children]
        value = max(v for _, v in outcomes) if mode == "lucky" else sum(p * v for p, v in outcomes)
        best = max(best, value)
    if memo is not None:
        memo[key] = best
    return best


def policy_value(
    game: CoopGame,
    state: CoopState,
    policy: Callable[[CoopGame, CoopState], int],
    memo: dict | None = None,
) -> float:
    """The exact win probability of a deterministic ``policy(game, state) -> action`` from ``state``,
    expectation over the dice, by the same engine recursion (memoized when ``memo`` is a dict).

    The memo is keyed by [`rules_key`][thermopylae_agents.evaluation.coop_bound.rules_key], so the policy must
    depend only on what that key holds (the heuristic's ``choose_state`` reads hands, line, counts, marker,
    support, seat and the unseen cards)."""
    if state.terminated:
        return 1.0 if state.won else 0.0
    key = None
    if memo is not None:
        key = rules_key(state, game)
        if key in memo:
            return memo[key]
    action = int(policy(game, state))
    if not game.is_legal(state, action):
        reason = game.illegal_reason(state, action)
        raise ValueError(f"the policy chose an illegal action {action} ({reason})")
    value = sum(p * policy_value(game, child, policy, memo) for p, child in _children(game, state, action))
    if memo is not None:
        memo[key] = value
    return value

