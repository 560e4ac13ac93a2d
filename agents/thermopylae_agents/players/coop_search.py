"""A determinized Monte-Carlo search player for the co-op game: the yardstick for learned policies.

[`CoopSearchExpert`][thermopylae_agents.players.coop_search.CoopSearchExpert] uses only public information. At
each decision it

1. lists the candidate actions: every legal action, less the obviously dominated ones (support that
   cannot change the fight's outcome, several hopeless fights when the lowest card does as well, the
   step onto 7), and at most ``max_candidates`` of the rest, ranked by the hand-written heuristic's own
   score; a single candidate is played at once;
2. plays rounds of samples: each sample is a full state consistent with the observation
   (``game.state_from_observation(obs, rng)``: the hidden orders of both decks shuffled), on which every
   candidate still in the race is played and the game finished by the heuristic policy (see *Engines*
   below). Candidates share the samples and their dice (common
   random numbers; the k-th fight of a rollout rolls the same dice whichever candidate was played), so
   their differences are measured with much less noise than their values;
3. after each round drops the candidates significantly worse than the leader (paired differences,
   ``z_drop`` standard errors), so the time goes to the close contenders and clear decisions end early;
4. plays the candidate with the best mean return, but keeps the heuristic's choice unless the best beats
   it by ``z_pick`` standard errors of the paired difference (noise alone never overrules the heuristic).

The rollout policy is [`CoopHeuristic`][thermopylae_agents.players.coop_heuristic.CoopHeuristic] run straight
on the engine state
([`choose_state`][thermopylae_agents.players.coop_heuristic.CoopHeuristic.choose_state]: the same decisions as
on the decoded observation, which the tests check, without encoding or decoding one). As an option
(``rollout_policy``) a trained policy's network plays the rollouts instead: after the candidate, every seat
plays the network's most likely legal action on the observation of the rollout's state. The compiled engine
plays the rollouts of a round in lockstep: per step one compiled call writes the observations and legal
masks of every running rollout (`thermopylae_agents.players._coop_search_observe`, held to
``CoopGame.observe`` and ``legal_action_mask`` by the tests), one batched call of the network's ``logits``
scores them all, and one compiled call plays the chosen actions; the Python engine plays one state at a
time through ``game.observe``. Both use the same samples and dice as with the heuristic, and the same
moves but where the network's scores of a batch and of a single row differ in their last bits. A network
call per step costs far more than the compiled heuristic: ``benchmarks/search_effort.py`` measures the
setting ``32x8+policy``.

Engines. ``engine="compiled"`` (the default) plays each round in one compiled call
(`thermopylae_agents.players._coop_search_kernel`, numba): a compact array form of the state, the
reference rules step for step, and a compiled twin of ``choose_state``. ``engine="python"`` plays every
rollout through the reference engine (``CoopState.copy()``, ``game.step``) and the Python heuristic; it
is the reference the compiled engine is tested against. Both engines draw everything from the player's
generator in the same order (the dice tables first, then per sample a permutation of the hidden Spartan
deck and one of the unseen Persian rows, the very calls ``state_from_observation`` makes), and the
compiled rules and heuristic make the Python ones' moves
(``tests/agents/players/test_coop_search_kernel.py``), so for the same seed both engines search the same
samples with the same dice and play the same moves; only the time differs (``benchmarks/search_speed.py``
measures both on the same positions, plays both on the same deals and counts the games whose moves
differed). The one exception: where two of the heuristic's scores are equal up to rounding, the compiled
heuristic's sums (exact, then rounded once) may break the tie the other way than NumPy's; such ties are
rare, and a rollout that meets one plays an action the heuristic values the same.

Strength and time: ``n_determinizations`` samples per round, at most ``rollouts`` rounds (so at most
their product rollouts per candidate), ``max_candidates``. With the defaults (32 x 8, 5 candidates) it
won 277 of 864 games of the default deck (32.1%, 95% Wilson interval [29.0%, 35.3%]; the heuristic
won 226 of the same 864 deals, 26.2%) at about 10 seconds per game on one core with the Python engine
(``scripts/evaluate.py search --seed 0 --games 96 --workers 16`` repeated for seeds 0..863); the
compiled engine plays the same games (``benchmarks/results/search_speed.json`` holds its time per move).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from thermopylae_agents.players._coop_search_kernel import (
    S_SIZE,
    S_TERM,
    S_WON,
    rollout_roots,
    step_rollouts,
)
from thermopylae_agents.players._coop_search_kernel import play_round as compiled_round
from thermopylae_agents.players._coop_search_observe import observe_batch, slot_codes
from thermopylae_agents.players._coop_search_tables import compact_state, engine_tables, heuristic_tables
from thermopylae_agents.players.coop_features import (
    PHASE_MAIN,
    TeamView,
    decode_observation,
    fight_of_action,
    fight_stats,
    location_dice,
)
from thermopylae_agents.players.coop_heuristic import CoopHeuristic
from thermopylae_env import COOP_ID
from thermopylae_env.cards import PERSIAN_DECK_SIZE
from thermopylae_env.coop.layout import (
    DECLINE,
    FIGHT_BASE,
    GIVE_BASE,
    LOSS_MARKER,
    NUM_ACTIONS,
    OBS_SIZE,
    RETREAT,
)
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import MAX_DICE

__all__ = ["ActionEstimate", "CoopSearchExpert", "SearchEstimate"]


@dataclass(frozen=True)
class ActionEstimate:
    """One searched action: its ``rollouts`` rollout returns (+1 a win, -1 a loss: the action played, then
    the heuristic, or the ``rollout_policy``, for every seat to the end) have the mean ``mean_return``;
    ``win_chance`` is their share of wins, ``(mean_return + 1) / 2``, and ``standard_error`` its standard
    error (nan with fewer than two rollouts). ``dropped``: the race dropped it before the last round (fewer
    rollouts than the leader)."""

    action: int
    mean_return: float
    win_chance: float
    standard_error: float
    rollouts: int
    dropped: bool

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """``win_chance`` plus and minus ``z`` standard errors, within [0, 1] (all of it without one)."""
        if math.isnan(self.standard_error):
            return 0.0, 1.0
        return max(0.0, self.win_chance - z * self.standard_error), \
            min(1.0, self.win_chance + z * self.standard_error)


@dataclass(frozen=True)
class SearchEstimate:
    """What one decision of the search measured
    ([`CoopSearchExpert.evaluate`][thermopylae_agents.players.coop_search.CoopSearchExpert.evaluate]):
    the chosen ``action``, the heuristic's choice ``default``, the ``candidates`` searched (the heuristic's
    first), their ``estimates`` in that order (none when a single candidate is played at once), and the
    legal actions not searched: ``dominated`` (never better than a candidate) and ``ranked_out`` (beyond
    ``max_candidates`` in the heuristic's ranking)."""

    action: int
    default: int
    candidates: tuple[int, ...]
    estimates: tuple[ActionEstimate, ...]
    dominated: tuple[int, ...]
    ranked_out: tuple[int, ...]


class CoopSearchExpert:
    """Determinized Monte-Carlo search with heuristic (or policy network) rollouts (see the module
    docstring).

    Parameters
    ----------
    n_determinizations:
        Hidden deck orders sampled per round; each gets one heuristic rollout (its own dice) for every
        candidate still in the race.
    rollouts:
        The most rounds; at most ``n_determinizations * rollouts`` rollouts per candidate.
    max_candidates:
        At most this many candidate actions are searched (the heuristic's best-ranked ones).
    min_rounds:
        The first round in which candidates may be dropped (see ``z_drop``).
    z_drop:
        From round ``min_rounds`` on, a candidate whose paired difference to the leader is below zero by
        more than ``z_drop`` standard errors is dropped; the search stops when one candidate is left.
    z_pick:
        Another action replaces the heuristic's choice only when it beats it by more than ``z_pick``
        standard errors of the paired difference (0: the best mean wins).
    num_players:
        The team size of the game being played (as for
        [`thermopylae_env.coop.CoopGame`][thermopylae_env.coop.rules.CoopGame]).
    persian_deck:
        Its Persian deck table (as for
        [`thermopylae_env.coop.CoopGame`][thermopylae_env.coop.rules.CoopGame]).
    heuristic_params:
        Parameters of the rollout policy
        ([`CoopHeuristic`][thermopylae_agents.players.coop_heuristic.CoopHeuristic]).
    rng:
        The player's own randomness (determinizations and rollout dice); it wins over ``seed``.
    seed:
        The seed of that randomness when no ``rng`` is given.
    engine:
        ``"compiled"`` (default): the rollouts run in compiled code; ``"python"``: through the reference
        engine and the Python heuristic. Both draw the same samples and dice from the player's
        generator and play the same moves (see the module docstring).
    rollout_policy:
        ``None`` (default): the heuristic plays the rollouts. Otherwise a policy network of the co-op game
        of this team size that plays them instead (its most likely legal action): an object with
        ``logits(observations)`` on a batch ``(B, OBS_SIZE)``, ``observation_size`` and ``num_actions``,
        such as a [`SafePolicy`][thermopylae_agents.policies.safe_policy.SafePolicy] (load one by name
        or path with [`load_safe_policy`][thermopylae_agents.policies.safe_policy.load_safe_policy]; the
        search spec ``search:rollout=NAME`` does).
    """

    def __init__(
        self,
        n_determinizations: int = 32,
        rollouts: int = 8,
        max_candidates: int = 5,
        min_rounds: int = 2,
        z_drop: float = 2.0,
        z_pick: float = 2.0,
        num_players: int = 1,
        persian_deck: object = None,
        heuristic_params: Mapping[str, float] | None = None,
        rng: np.random.Generator | None = None,
        seed: int | None = None,
        engine: str = "compiled",
        rollout_policy: object | None = None,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        if n_determinizations < 1 or rollouts < 1 or max_candidates < 1:
            raise ValueError("n_determinizations, rollouts and max_candidates must be at least 1")
        _check_rollout_policy(rollout_policy, num_players)
        self.n_determinizations = int(n_determinizations)
        self.rollouts = int(rollouts)
        self.max_candidates = int(max_candidates)
        self.min_rounds = max(1, int(min_rounds))
        self.z_drop = float(z_drop)
        self.z_pick = float(z_pick)
        self.game = CoopGame(num_players=num_players, persian_deck=persian_deck)
        self.heuristic = CoopHeuristic(heuristic_params, persian_deck=persian_deck)
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.last_values: dict[int, float] = {}
        self.engine = engine
        self.rollout_policy = rollout_policy
        if rollout_policy is not None and len(self.game.persian) > PERSIAN_DECK_SIZE:
            raise ValueError(f"rollout_policy: the observation holds at most {PERSIAN_DECK_SIZE} Persian "
                             f"rows, the deck has {len(self.game.persian)}")
        self._tables: tuple | None = None

    # ------------------------------------------------------------------------------------ interface
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """Choose a legal action by determinized Monte-Carlo search."""
        return self.evaluate(observation, action_mask).action

    def evaluate(self, observation: np.ndarray, action_mask: np.ndarray) -> SearchEstimate:
        """The search of [`act`][thermopylae_agents.players.coop_search.CoopSearchExpert.act] (the same
        path: the same draws from the player's generator and the same choice), with what it measured:
        each searched candidate's rollout returns summed up, the candidates the race dropped, and the
        legal actions it did not search."""
        mask = np.asarray(action_mask, dtype=bool)
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise ValueError("no legal action: the action mask is all zeros")
        view = decode_observation(observation)
        default = self.heuristic.choose(view, mask)
        candidates, ranked_out = self._candidates(view, mask, default)
        self.last_values = {}
        if len(candidates) == 1:
            return _estimate(candidates[0], default, candidates, {}, candidates, legal, ranked_out)
        rng = self.rng
        n_det = self.n_determinizations
        # Sample j plays its own determinization with the dice table dice[j], for every candidate alike
        # (common random numbers): the k-th fight of a rollout rolls the same dice whichever candidate
        # was played, so the paired differences carry little noise.
        dice = rng.integers(1, 7, size=(n_det * self.rollouts, _MAX_FIGHTS, MAX_DICE))
        play_round = self._compiled_rounds(observation, dice) if self.engine == "compiled" else \
            self._python_rounds(observation, dice.tolist())
        returns: dict[int, list[float]] = {a: [] for a in candidates}
        alive = list(candidates)
        for round_ in range(self.rollouts):
            play_round(round_ * n_det, alive, returns)
            if len(alive) > 1 and round_ + 1 >= self.min_rounds and round_ + 1 < self.rollouts:
                alive = self._eliminate(alive, returns, default)
            if len(alive) == 1:
                break
        self.last_values = {a: float(np.mean(r)) for a, r in returns.items() if r}
        chosen = int(self._pick(alive, returns, default))
        return _estimate(chosen, default, candidates, returns, alive, legal, ranked_out)

    def _eliminate(self, alive: list[int], returns: dict[int, list[float]], default: int) -> list[int]:
        """Drop the candidates significantly worse than the leader (paired differences), and those that
        played exactly like the leader on every sample so far (in effect the same action)."""
        data = {a: np.asarray(returns[a]) for a in alive}
        leader = max(alive, key=lambda a: (data[a].mean(), a == default))
        kept = [leader]
        n = len(data[leader])
        for action in alive:
            if action == leader:
                continue
            diff = data[action] - data[leader]
            if not diff.any():
                if action == default:
                    kept.append(action)
                continue
            se = diff.std(ddof=1) / math.sqrt(n)
            if diff.mean() + self.z_drop * se >= 0.0:
                kept.append(action)
        return kept

    def _pick(self, alive: list[int], returns: dict[int, list[float]], default: int) -> int:
        """The best mean; but the heuristic's choice unless the best beats it by ``z_pick`` standard
        errors of the paired difference."""
        best = max(alive, key=lambda a: (float(np.mean(returns[a])), a == default))
        if best == default or default not in alive or self.z_pick <= 0.0:
            return best
        diff = np.asarray(returns[best]) - np.asarray(returns[default])
        se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
        return best if diff.mean() > self.z_pick * se else default

    # ------------------------------------------------------------------------------------ candidates
    def candidates(self, view: TeamView, mask: np.ndarray, default: int) -> list[int]:
        """The legal actions worth searching: dominated ones removed, the heuristic's choice first."""
        return self._candidates(view, mask, default)[0]

    def _candidates(self, view: TeamView, mask: np.ndarray, default: int) -> tuple[list[int], list[int]]:
        """The candidates, and the undominated actions left out for ``max_candidates``."""
        legal = [int(a) for a in np.flatnonzero(mask)]
        if view.phase != PHASE_MAIN:
            # Draw offers: declining is searched only when every hand is full. Otherwise giving the card
            # to a seat with room is never worse: the card stays playable and no card is lost.
            offer = len(legal) > 1 and GIVE_BASE <= legal[0] <= DECLINE
            if offer and any(view.hand_size(a - GIVE_BASE) < 5 for a in legal if a < DECLINE):
                legal = [a for a in legal if a != DECLINE]
            return _default_first(legal, default), []
        dice_here = location_dice(view.marker)
        kept: list[int] = []
        hopeless_value = None
        for action in legal:
            if action == RETREAT:
                if view.marker + 1 >= LOSS_MARKER and len(legal) > 1:
                    continue  # stepping onto 7 loses at once; any fight is at least as good
                kept.append(action)
                continue
            value, support = fight_of_action(action)
            dice = min(support + dice_here, MAX_DICE)
            stats = fight_stats(value, dice, view.slot1, view.slot2)
            if stats.p_beat1 == 0.0:
                # A hopeless fight only throws a card away: the lowest card without support does that.
                if support == 0 and (hopeless_value is None or value < hopeless_value):
                    hopeless_value = value
                continue
            if support > 0:
                fewer = fight_stats(value, min(support - 1 + dice_here, MAX_DICE), view.slot1, view.slot2)
                if fewer.grave_dist[2] == 1.0 or _certain_best(fewer, view):
                    continue  # one support less already gets the best possible result for sure
            kept.append(action)
        if hopeless_value is not None:
            kept.append(FIGHT_BASE + (hopeless_value - 10) * 5)
        if not kept:
            kept = legal
        ranked_out: list[int] = []
        if len(kept) > self.max_candidates:
            ranked = self.heuristic.rank_main(view, mask, kept)
            kept, ranked_out = ranked[: self.max_candidates], ranked[self.max_candidates:]
        if default not in kept and mask[default]:
            kept.append(default)
        return _default_first(kept, default), [a for a in ranked_out if a not in kept]

    # ------------------------------------------------------------------------------------ rollouts
    def _python_rounds(self, observation: np.ndarray, dice: list[list[list[int]]]):
        """The reference rounds: each sample a [`CoopState`][thermopylae_env.coop.state.CoopState] from
        ``state_from_observation``, each rollout through the engine and the Python heuristic."""
        game = self.game
        rng = self.rng
        n_det = self.n_determinizations
        roots: list = []

        def play_round(start: int, alive: list[int], returns: dict[int, list[float]]) -> None:
            roots.extend(game.state_from_observation(observation, rng) for _ in range(n_det))
            for action in alive:
                out = returns[action]
                for j in range(start, start + n_det):
                    out.append(self._rollout(roots[j], action, dice[j]))

        return play_round

    def _compiled_rounds(self, observation: np.ndarray, dice: np.ndarray):
        """The compiled rounds: the same samples, drawn by the same calls of the player's generator as
        ``state_from_observation`` makes them (a permutation of the hidden Spartan deck, then one of the
        unseen Persian rows), applied to the root inside one compiled call per round that also plays
        every rollout (`play_round`)."""
        tables = self._kernel_tables()
        root = self.game.state_from_observation(observation, _UNSHUFFLED)
        base = compact_state(self.game, root)
        n_spartan = len(root.spartan_order) - root.spartan_pos
        n_persian = len(root.persian_order) - root.persian_pos
        rng = self.rng
        n_det = self.n_determinizations
        policy_round = None if self.rollout_policy is None else self._policy_round(base, dice)

        def play_round(start: int, alive: list[int], returns: dict[int, list[float]]) -> None:
            spartan = np.empty((n_det, n_spartan), dtype=np.int64)
            persian = np.empty((n_det, n_persian), dtype=np.int64)
            for j in range(n_det):
                spartan[j] = rng.permutation(n_spartan)
                persian[j] = rng.permutation(n_persian)
            if policy_round is not None:
                out = policy_round(spartan, persian, np.asarray(alive, dtype=np.int64), start)
            else:
                out = np.empty((len(alive), n_det))
                compiled_round(base, spartan, persian, np.asarray(alive, dtype=np.int64), dice, start,
                               tables[0], tables[1], out)
            for row, action in zip(out.tolist(), alive, strict=True):
                returns[action].extend(row)

        return play_round

    def _policy_round(self, base: np.ndarray, dice: np.ndarray):
        """The compiled rounds with the policy network playing the rollouts, in lockstep: the rollouts of a
        round set up as `play_round` plays them (`rollout_roots`), then per step the observations and masks
        of the running ones (`observe_batch`), one batched network call, and their moves (`step_rollouts`).
        Returns ``round(spartan, persian, candidates, start)``: the returns, one row per candidate."""
        et, ht = self._kernel_tables()
        fixed = ht[1]
        codes = slot_codes(self.game)
        n_det = self.n_determinizations
        buffers: list[np.ndarray] = []  # sized by the first round, which has the most candidates

        def play(spartan: np.ndarray, persian: np.ndarray, candidates: np.ndarray, start: int) -> np.ndarray:
            count = len(candidates) * n_det
            if not buffers or len(buffers[0]) < count:
                buffers[:] = [np.empty((count, S_SIZE), dtype=np.int32),
                              np.empty((count, OBS_SIZE), dtype=np.float32),
                              np.empty((count, NUM_ACTIONS), dtype=bool)]
            states, obs, mask = buffers
            rollouts = states[:count]
            rollout_roots(base, spartan, persian, candidates, dice, start, et, fixed, rollouts)
            rows = np.flatnonzero(rollouts[:, S_TERM] == 0)
            while rows.size:
                m = rows.size
                observe_batch(rollouts, rows, codes, obs[:m], mask[:m])
                actions = self._policy_actions(obs[:m], mask[:m])
                step_rollouts(rollouts, rows, actions, n_det, dice, start, et, fixed)
                rows = rows[rollouts[rows, S_TERM] == 0]
            return np.where(rollouts[:, S_WON] == 1, 1.0, -1.0).reshape(len(candidates), n_det)

        return play

    def _policy_actions(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The rollout policy's most likely legal action for each row of a batch."""
        logits = np.asarray(self.rollout_policy.logits(obs))  # type: ignore[attr-defined]
        actions = np.argmax(np.where(mask, logits, -np.inf), axis=1)
        if not mask[np.arange(len(actions)), actions].all():
            raise ValueError("rollout_policy: its logits chose no legal action (not finite?)")
        return actions

    def _kernel_tables(self) -> tuple:
        if self._tables is None:
            self._tables = (engine_tables(self.game), heuristic_tables(self.heuristic))
        return self._tables

    def _rollout(self, root, action: int, dice: list[list[int]]) -> float:
        game = self.game
        state = root.copy()
        rng = _DiceTable(dice, self.rng)
        game.step(state, action, rng)
        step = game.step
        if self.rollout_policy is not None:
            while not state.terminated:
                obs = game.observe(state)[None]
                step(state, int(self._policy_actions(obs, game.legal_action_mask(state)[None])[0]), rng)
            return 1.0 if state.won else -1.0
        policy = self.heuristic.choose_state
        while not state.terminated:
            step(state, policy(game, state), rng)
        return 1.0 if state.won else -1.0


_MAX_FIGHTS = 24  # a game has at most 20 fights (one per Spartan card)
ENGINES = ("compiled", "python")


class _Unshuffled:
    """A stand-in generator for ``state_from_observation`` whose shuffles keep the order: the compiled
    search builds the root once and applies each sample's permutations itself."""

    @staticmethod
    def permutation(n: int) -> np.ndarray:
        return np.arange(n)


_UNSHUFFLED = _Unshuffled()


class _DiceTable:
    """A stand-in for the engine's dice generator (the engine rolls only through
    ``rng.integers(1, 7, size=n)``, [`thermopylae_env.coop.roll_dice`][thermopylae_env.coop.state.roll_dice]):
    the k-th roll of a rollout takes the first ``n`` dice of row k of a pre-drawn table, so that rollouts of
    different candidates on the same sample see the same dice fight by fight. Anything else goes to a real
    generator."""

    __slots__ = ("rows", "k", "fallback")

    def __init__(self, rows: list[list[int]], fallback: np.random.Generator) -> None:
        self.rows = rows
        self.k = 0
        self.fallback = fallback

    def integers(self, low, high=None, size=None, *args, **kwargs):
        k = self.k
        if low == 1 and high == 7 and isinstance(size, (int, np.integer)) and k < len(self.rows):
            row = self.rows[k]
            if size <= len(row):
                self.k = k + 1
                return row[:size]
        return self.fallback.integers(low, high, size, *args, **kwargs)


def _check_rollout_policy(policy: object, num_players: int) -> None:
    """A one-line ``ValueError`` unless ``policy`` is ``None`` or a network of the co-op game's observation
    and actions, trained (where it records it) for a team of ``num_players``."""
    if policy is None:
        return
    name = getattr(policy, "name", type(policy).__name__)
    if not callable(getattr(policy, "logits", None)):
        raise ValueError(f"rollout_policy must have logits(observations) (a SafePolicy), got {name}")
    sizes = (getattr(policy, "observation_size", None), getattr(policy, "num_actions", None))
    if sizes != (OBS_SIZE, NUM_ACTIONS):
        raise ValueError(f"rollout_policy {name}: observations of {sizes[0]} values and {sizes[1]} actions, "
                         f"the co-op game has {OBS_SIZE} and {NUM_ACTIONS}")
    env_id = getattr(policy, "env_id", COOP_ID)
    if env_id != COOP_ID:
        raise ValueError(f"rollout_policy {name} plays {env_id}, not {COOP_ID}")
    options = getattr(policy, "env_options", None)
    trained = (options or {}).get("num_players", 1) if isinstance(options, Mapping) else num_players
    if trained != num_players:
        raise ValueError(f"rollout_policy {name} was trained for a team of {trained}, the search plays a "
                         f"team of {num_players}")



def _estimate(action: int, default: int, candidates: list[int], returns: Mapping[int, list[float]],
              alive: list[int], legal: np.ndarray, ranked_out: list[int]) -> SearchEstimate:
    estimates = []
    for candidate in candidates:
        values = np.asarray(returns.get(candidate, ()), dtype=float)
        if values.size == 0:
            continue
        mean = float(values.mean())
        se = float(values.std(ddof=1)) / math.sqrt(values.size) / 2.0 if values.size > 1 else math.nan
        estimates.append(ActionEstimate(int(candidate), mean, (mean + 1.0) / 2.0, se, int(values.size),
                                        candidate not in alive))
    searched = set(candidates) | set(ranked_out)
    return SearchEstimate(int(action), int(default), tuple(int(a) for a in candidates), tuple(estimates),
                          _ints(a for a in legal if int(a) not in searched), _ints(ranked_out))


def _ints(actions: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted(int(a) for a in actions))


def _certain_best(stats, view: TeamView) -> bool:
    """The fight surely beats everything it can and sends to the graveyard everything it can."""
    if view.slot2 is None:
        return stats.p_grave1 == 1.0
    return stats.p_grave1 == 1.0 and stats.p_grave2 == 1.0


def _default_first(actions: list[int], default: int) -> list[int]:
    ordered = sorted(set(actions))
    if default in ordered:
        ordered.remove(default)
        ordered.insert(0, default)
    return ordered
