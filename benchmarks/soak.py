"""Soak test: play every environment of the package for many steps and count every broken invariant.

Each environment is played with random legal actions, plus a fraction (``--illegal-rate``) of bad
actions: half of them outside the action space (wrong type, shape or range, NaN, None), which must raise
``TypeError``/``ValueError`` and change nothing, and half inside the space but masked out, which must take
the documented illegal path (the episode ends as a loss with the penalty, ``info["illegal_action"]``, the
game itself unchanged). At every step it checks:

* card conservation and the rules' invariants (the engines' ``check_invariants``; for the vector engine the
  same facts computed from its arrays), the ranges of every counter;
* a non-empty mask in every running game and, after the end, only action 0 (what the reset step ignores);
* rewards in {-1, 0, +1} (or the penalty after an illegal action), non-zero only at the end, no truncation;
* episode lengths within the proven bounds (co-op: ``92 - cards dealt`` decisions; duel: 816 decisions of
  one side, 1632 micro-actions of both; see ``tests/env/test_properties.py``);
* for the vector engine, that the masks and observations it keeps up to date in place equal the ones
  rebuilt from its state.

It prints one line per environment (steps, games finished, bad actions tried, violations, steps/s) and
exits with code 1 if any violation was found. Steps of a vector environment are game steps (one call
steps ``num_envs`` games).

Usage::

    python benchmarks/soak.py --quick                     # a few seconds, for CI
    python benchmarks/soak.py --steps 10000000 --workers 8 --json soak.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import thermopylae_env  # noqa: E402, F401  (registers the environments)
from thermopylae_env.coop.layout import (
    GRAVEYARD_WIN,
    LOSS_MARKER,
    NUM_ACTIONS,
    NUM_SUPPORT,
    SPARTAN_DECK_SIZE,
)
from thermopylae_env.duel import layout as duel_layout
from thermopylae_env.duel.layout import MAX_GAME_ACTIONS
from thermopylae_env.duel.rules import check_invariants
from thermopylae_env.errors import InvariantError  # noqa: E402
from thermopylae_env.threads import configure_environment  # noqa: E402

DEFAULT_STEPS = 10_000_000
QUICK_STEPS = 30_000
PENALTY = -5.0  # an illegal-action penalty no legal step can produce
MAX_COOP_TURNS = SPARTAN_DECK_SIZE + LOSS_MARKER - 1  # 20 fights + 6 retreats
MAX_DUEL_SIDE_ACTIONS = MAX_GAME_ACTIONS // 2  # 816
VECTOR_GAMES = 64


def coop_bound(num_players: int) -> int:
    """Most decisions in a co-op game: 26 turns, 46 draw offers, one discard per card the deck can give."""
    dealt = 4 if num_players == 1 else 3 * num_players
    offers = LOSS_MARKER - 1 + 2 * SPARTAN_DECK_SIZE
    return MAX_COOP_TURNS + offers + SPARTAN_DECK_SIZE - dealt


# Bad actions outside Discrete(n): each must raise TypeError/ValueError and change nothing.
OUT_OF_SPACE: tuple[Callable[[int], Any], ...] = (
    lambda n: -1,
    lambda n: n,
    lambda n: 10**12,
    lambda n: 1.5,
    lambda n: float("nan"),
    lambda n: None,
    lambda n: True,
    lambda n: "0",
    lambda n: [0],
    lambda n: np.array([0, 1]),
    lambda n: np.array(0.0),
)
OUT_OF_SPACE_BATCH: tuple[Callable[[int], Any], ...] = (
    lambda k: None,
    lambda k: np.zeros(k + 1, dtype=np.int64),
    lambda k: np.zeros(k, dtype=np.float64),
    lambda k: np.full(k, np.nan),
    lambda k: np.full(k, -1),
    lambda k: np.full(k, NUM_ACTIONS),
    lambda k: np.zeros(k, dtype=bool),
    lambda k: ["0"] * k,
)


@dataclasses.dataclass
class Report:
    env: str
    steps: int = 0
    games: int = 0
    bad_actions: int = 0
    violations: int = 0
    seconds: float = 0.0
    messages: list[str] = dataclasses.field(default_factory=list)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def fail(self, message: str) -> None:
        self.violations += 1
        if len(self.messages) < 20:
            self.messages.append(message)


def freeze(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def state_snapshot(state: object) -> tuple:
    return tuple(freeze(getattr(state, f.name)) for f in dataclasses.fields(state))


# ---------------------------------------------------------------------------------- single environments


def run_single(report: Report, make: Callable[[], gym.Env], steps: int, illegal_rate: float, seed: int,
               check_state: Callable[[Any], None], bound: int) -> None:
    env = make()
    raw = env.unwrapped
    n = env.action_space.n
    shape = env.observation_space.shape
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    length = 0

    def snapshot() -> tuple:
        return state_snapshot(raw.state), raw.np_random.bit_generator.state

    for _ in range(steps):
        report.steps += 1
        mask = info["action_mask"]
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            report.fail(f"empty mask in a running game (length {length})")
            obs, info = env.reset()
            length = 0
            continue
        if illegal_rate and rng.random() < illegal_rate:
            report.bad_actions += 1
            before = snapshot()
            if legal.size == n or rng.random() < 0.5:
                bad = OUT_OF_SPACE[rng.integers(len(OUT_OF_SPACE))](n)
                try:
                    env.step(bad)
                    report.fail(f"out-of-space action {bad!r} was accepted")
                except (TypeError, ValueError):
                    pass
                if snapshot() != before:
                    report.fail(f"out-of-space action {bad!r} changed the state")
                continue
            illegal = np.flatnonzero(mask == 0)
            action = int(illegal[rng.integers(illegal.size)])
            after_obs, reward, terminated, truncated, after_info = env.step(action)
            if not (terminated and not truncated and reward == PENALTY):
                report.fail(f"masked-out action {action}: terminated {terminated}, reward {reward}")
            if not (after_info.get("illegal_action") and after_info.get("illegal_reason")):
                report.fail(f"masked-out action {action}: no illegal_action/illegal_reason in info")
            if after_info["action_mask"].any() or not np.array_equal(after_obs, obs) or snapshot() != before:
                report.fail(f"masked-out action {action} changed the game or left a mask")
            try:
                env.step(int(legal[0]))
                report.fail("step after an illegal-action loss was accepted")
            except RuntimeError:
                pass
            obs, info = env.reset()
            length = 0
            continue
        action = int(legal[rng.integers(legal.size)])
        obs, reward, terminated, truncated, info = env.step(action)
        length += 1
        try:
            check_state(raw)
        except (AssertionError, ValueError, InvariantError) as err:
            report.fail(f"invariant: {err}")
        if obs.dtype != np.float32 or obs.shape != shape or not 0 <= obs.min() <= obs.max() <= 1:
            report.fail("observation outside its space")
        if truncated:
            report.fail("truncated (the games are finite, never truncated)")
        if length > bound:
            report.fail(f"episode longer than the bound {bound}")
        if terminated:
            if reward not in (1.0, -1.0) or info.get("is_success") != (reward == 1.0):
                report.fail(f"final reward {reward}, is_success {info.get('is_success')}")
            if info["action_mask"].any():
                report.fail("mask not empty after the end")
            report.games += 1
            obs, info = env.reset()
            length = 0
        elif reward != 0.0:
            report.fail(f"non-final reward {reward}")


def check_coop(raw: Any) -> None:
    raw.game.check_invariants(raw.state)


def check_duel(raw: Any) -> None:
    check_invariants(raw.state, raw.game)


# --------------------------------------------------------------------------------------------- PettingZoo


def run_aec(report: Report, steps: int, illegal_rate: float, seed: int) -> None:
    from pettingzoo.utils.env_logger import EnvLogger

    from thermopylae_env import duel_v1

    EnvLogger.suppress_output()  # the illegal moves tried on purpose would each print a warning
    env = duel_v1.env()
    raw = env.unwrapped
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    length = 0
    finals: dict[str, float] = {}
    while report.steps < steps:
        report.steps += 1
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            finals[agent] = env.last()[1]  # the reward accumulated for the agent, as PettingZoo reports it
            env.step(None)
            if not env.agents:
                winner = raw.possible_agents[raw.state.winner] if raw.state.winner >= 0 else None
                if winner is not None and finals.get(winner) != 1:
                    report.fail(f"final rewards {finals} (winner {winner})")
                if len(finals) != 2 or sorted(finals.values()) != [-1, 1]:
                    report.fail(f"final rewards {finals}")
                report.games += 1
                finals = {}
                env.reset()
                length = 0
            continue
        obs = env.observe(agent)
        mask = obs["action_mask"]
        other = raw.possible_agents[1 - raw.possible_agents.index(agent)]
        if env.observe(other)["action_mask"].any():
            report.fail("the agent not to act has a legal action")
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            report.fail("empty mask for the acting agent")
            env.reset()
            continue
        if illegal_rate and rng.random() < illegal_rate:
            report.bad_actions += 1
            before = state_snapshot(raw.state)
            if rng.random() < 0.5:
                bad = OUT_OF_SPACE[rng.integers(len(OUT_OF_SPACE))](duel_layout.NUM_ACTIONS)
                try:
                    env.step(bad)
                    report.fail(f"out-of-space action {bad!r} was accepted")
                except (TypeError, ValueError):
                    pass
                if state_snapshot(raw.state) != before or env.agent_selection != agent:
                    report.fail(f"out-of-space action {bad!r} changed the game")
                continue
            illegal = np.flatnonzero(mask == 0)
            env.step(int(illegal[rng.integers(illegal.size)]))  # TerminateIllegalWrapper: the mover loses
            if not all(env.terminations.values()) or env.rewards[agent] != -1:
                report.fail("a masked-out move did not end the game with -1 for the mover")
            if state_snapshot(raw.state) != before:
                report.fail("a masked-out move changed the game")
            while env.agents:
                env.step(None)
            env.reset()
            length = 0
            continue
        env.step(int(legal[rng.integers(legal.size)]))
        length += 1
        try:
            check_invariants(raw.state, raw.game)
        except (AssertionError, InvariantError) as err:
            report.fail(f"invariant: {err}")
        if length > MAX_GAME_ACTIONS:
            report.fail("game longer than 1632 micro-actions")
        if not raw.state.terminated and any(env.rewards.values()):
            report.fail(f"non-final rewards {env.rewards}")


# ------------------------------------------------------------------------------------ vector environments


def vector_problems(eng: Any) -> list[str]:
    """Conservation and ranges of every game of a CoopVectorEngine, computed from its arrays."""
    from thermopylae_env.coop.kernel import OVER

    problems = []
    n = eng.num_envs
    p = eng.num_players
    hands = eng.hands.astype(np.int16)
    if (hands < 0).any():
        problems.append("negative card count in a hand")
    if hands[:, p:].any():
        problems.append("cards in a seat beyond the player count")
    if not np.array_equal(eng.hand_total, hands.sum(axis=(1, 2))):
        problems.append("hand_total disagrees with the hands")
    values = eng.t.spartan_value[eng.spartan_order].astype(np.intp)  # (n, 20)
    drawn = (np.arange(SPARTAN_DECK_SIZE) < eng.spartan_pos[:, None]).astype(np.int16)
    per_value = np.zeros((n, 11), np.int16)
    np.add.at(per_value, (np.repeat(np.arange(n), SPARTAN_DECK_SIZE), values.reshape(-1)),
              drawn.reshape(-1))
    if (per_value - hands.sum(axis=1) < 0).any():
        problems.append("a hand holds a Spartan card that was never drawn")
    line = (eng.slot1 >= 0).astype(np.int16) + (eng.slot2 >= 0)
    if not np.array_equal(eng.graveyard.astype(np.int16) + eng.persian_discard + line, eng.persian_pos):
        problems.append("Persian cards lost or duplicated (graveyard + discard + line != drawn)")
    if ((eng.slot1 >= 0) & (eng.slot1 == eng.slot2)).any():
        problems.append("the same Persian card in both slots")
    for name, array, low, high in (("marker", eng.marker, 1, LOSS_MARKER),
                                   ("support", eng.support, 0, NUM_SUPPORT),
                                   ("graveyard", eng.graveyard, 0, GRAVEYARD_WIN),
                                   ("offers", eng.offers, 0, 1), ("turn", eng.turn, 0, MAX_COOP_TURNS),
                                   ("spartan_pos", eng.spartan_pos, 0, SPARTAN_DECK_SIZE),
                                   ("persian_pos", eng.persian_pos, 0, len(eng.persian))):
        if array.min() < low or array.max() > high:
            problems.append(f"{name} outside {low}..{high}")
    running = np.flatnonzero(eng.phase != OVER)
    if running.size:
        masks = eng.masks[running]
        if not masks.any(axis=1).all():
            problems.append("empty mask in a running game")
        if not np.array_equal(masks, eng.masks_of(running)):
            problems.append("the mask kept in place differs from the one rebuilt from the state")
        if not np.array_equal(eng.obs[running], eng.observe_rows(running)):
            problems.append("the observation kept in place differs from the one rebuilt from the state")
        if (eng.marker[running] >= LOSS_MARKER).any():
            problems.append("a running game with the marker on 7")
    return problems


def vector_snapshot(eng: Any) -> tuple:
    return tuple(a.tobytes() for a in (eng.phase, eng.hands, eng.marker, eng.support, eng.spartan_pos,
                                        eng.persian_pos, eng.slot1, eng.slot2, eng.turn, eng.obs, eng.masks,
                                        eng.dice_pos, eng.episodes))


def pick_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per game (0 for a game without one)."""
    scores = rng.random(masks.shape) * masks
    return np.argmax(scores, axis=1)


def run_vector(report: Report, steps: int, illegal_rate: float, seed: int, num_players: int,
               mode: str) -> None:
    from thermopylae_env.coop.vector import CoopVectorEnv

    k = VECTOR_GAMES
    env = CoopVectorEnv(num_envs=k, num_players=num_players, autoreset_mode=mode,
                        illegal_action_penalty=PENALTY)
    eng = env.engine
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    bound = coop_bound(num_players)
    length = np.zeros(k, np.int64)
    pending = np.zeros(k, bool)
    same_step = mode == "SameStep"
    for _ in range(max(1, steps // k)):
        report.steps += k
        masks = env.action_masks()
        actions = pick_actions(masks, rng)
        if illegal_rate and rng.random() < illegal_rate:  # a whole batch outside the space
            report.bad_actions += 1
            before = vector_snapshot(eng)
            bad = OUT_OF_SPACE_BATCH[rng.integers(len(OUT_OF_SPACE_BATCH))](k)
            try:
                env.step(bad)
                report.fail("an out-of-space action batch was accepted")
            except (TypeError, ValueError):
                pass
            if vector_snapshot(eng) != before:
                report.fail("an out-of-space action batch changed the games")
        # (not in a game waiting for its NEXT_STEP reset: that step ignores any action)
        illegal = (rng.random(k) < illegal_rate / 2) & masks.any(axis=1) & ~masks.all(axis=1) & ~pending
        for g in np.flatnonzero(illegal):
            bad_actions = np.flatnonzero(~masks[g])
            actions[g] = bad_actions[rng.integers(bad_actions.size)]
        report.bad_actions += int(illegal.sum())
        obs_before = obs.copy()
        obs, rewards, terminated, truncated, infos = env.step(actions)
        length = np.where(pending, 0, length) + ~pending
        if truncated.any():
            report.fail("a game was truncated")
        if (length > bound).any():
            report.fail(f"a game longer than the bound {bound}")
        final = infos.get("final_info", {}) if same_step else infos
        if illegal.any():
            if not (terminated[illegal].all() and (rewards[illegal] == PENALTY).all()):
                report.fail("a masked-out action did not end its game with the penalty")
            if not np.asarray(final.get("illegal_action", np.zeros(k, bool)))[illegal].all():
                report.fail("a masked-out action without infos['illegal_action']")
            last = np.stack(list(infos["final_obs"][illegal])) if same_step else obs[illegal]
            if not np.array_equal(last, obs_before[illegal]):
                report.fail("a masked-out action changed its game's observation")
        legal_end = terminated & ~illegal
        if not np.isin(rewards[legal_end], (1.0, -1.0)).all():
            report.fail("a final reward outside {-1, +1}")
        if (rewards[~terminated] != 0).any():
            report.fail("a non-final reward")
        if not same_step and (masks[pending] != (np.arange(masks.shape[1]) == 0)).any():
            report.fail("a finished game waiting for its reset allows more than action 0, the ignored one")
        for problem in vector_problems(eng):
            report.fail(problem)
        report.games += int(legal_end.sum())
        if same_step:
            length[terminated] = 0
        else:
            pending = terminated.copy()


def run_sb3_vector(report: Report, steps: int, illegal_rate: float, seed: int) -> None:
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    k = VECTOR_GAMES
    num_players = 2
    env = CoopSB3VecEnv(num_envs=k, num_players=num_players, illegal_action_penalty=PENALTY, seed=seed)
    rng = np.random.default_rng(seed)
    obs = env.reset()
    bound = coop_bound(num_players)
    for _ in range(max(1, steps // k)):
        report.steps += k
        masks = env.action_masks()
        if not masks.any(axis=1).all():
            report.fail("empty mask (the adapter resets finished games at once)")
        actions = pick_actions(masks, rng)
        if illegal_rate and rng.random() < illegal_rate:
            report.bad_actions += 1
            before = vector_snapshot(env.engine)
            try:
                env.step(OUT_OF_SPACE_BATCH[1 + rng.integers(len(OUT_OF_SPACE_BATCH) - 1)](k))
                report.fail("an out-of-space action batch was accepted")
            except (TypeError, ValueError):
                pass
            if vector_snapshot(env.engine) != before:
                report.fail("an out-of-space action batch changed the games")
        illegal = (rng.random(k) < illegal_rate / 2) & ~masks.all(axis=1)
        for g in np.flatnonzero(illegal):
            bad_actions = np.flatnonzero(~masks[g])
            actions[g] = bad_actions[rng.integers(bad_actions.size)]
        report.bad_actions += int(illegal.sum())
        obs_before = obs
        obs, rewards, dones, infos = env.step(actions)
        for g in np.flatnonzero(dones):
            info = infos[g]
            if info["episode"]["l"] > bound:
                report.fail(f"a game longer than the bound {bound}")
            if "terminal_observation" not in info or info.get("TimeLimit.truncated"):
                report.fail("a finished game without terminal_observation (or truncated)")
            if illegal[g]:
                if rewards[g] != PENALTY or not info.get("illegal_action"):
                    report.fail("a masked-out action did not end its game with the penalty")
                if not np.array_equal(info["terminal_observation"], obs_before[g]):
                    report.fail("a masked-out action changed its game's observation")
            else:
                if rewards[g] not in (1.0, -1.0) or info["is_success"] != (rewards[g] == 1.0):
                    report.fail(f"final reward {rewards[g]}, is_success {info['is_success']}")
                report.games += 1
        if illegal.any() and not dones[illegal].all():
            report.fail("a masked-out action did not end its game")
        if (rewards[~dones] != 0).any():
            report.fail("a non-final reward")
        for problem in vector_problems(env.engine):
            report.fail(problem)


# ------------------------------------------------------------------------------------------------ driver


def _coop(players: int) -> Callable[[], gym.Env]:
    return lambda: gym.make("thermopylae/Coop-v0", num_players=players, illegal_action_penalty=PENALTY)


def _duel(side: str, opponent: str) -> Callable[[], gym.Env]:
    return lambda: gym.make(f"thermopylae/Duel{side}-v0", opponent=opponent, illegal_action_penalty=PENALTY)


def _soak_coop(players: int) -> Callable[[Report, int, float, int], None]:
    def run(report: Report, steps: int, illegal_rate: float, seed: int) -> None:
        run_single(report, _coop(players), steps, illegal_rate, seed, check_coop, coop_bound(players))

    return run


def _soak_duel(side: str, opponent: str) -> Callable[[Report, int, float, int], None]:
    def run(report: Report, steps: int, illegal_rate: float, seed: int) -> None:
        run_single(report, _duel(side, opponent), steps, illegal_rate, seed, check_duel,
                   MAX_DUEL_SIDE_ACTIONS)

    return run


def _soak_vector(players: int, mode: str) -> Callable[[Report, int, float, int], None]:
    def run(report: Report, steps: int, illegal_rate: float, seed: int) -> None:
        run_vector(report, steps, illegal_rate, seed, players, mode)

    return run


ENVIRONMENTS: dict[str, Callable[[Report, int, float, int], None]] = {
    **{f"coop-{p}p": _soak_coop(p) for p in (1, 2, 3, 4)},
    **{f"duel-{side.lower()}-vs-{opponent}": _soak_duel(side, opponent)
       for side in ("Greek", "Persian") for opponent in ("random", "heuristic")},
    "pettingzoo-duel": run_aec,
    "coop-vector-1p": _soak_vector(1, "NextStep"),
    "coop-vector-4p-samestep": _soak_vector(4, "SameStep"),
    "coop-sb3-vector-2p": run_sb3_vector,
}


def soak_one(name: str, steps: int, illegal_rate: float, seed: int) -> Report:
    report = Report(name)
    if "sb3" in name:
        import thermopylae_env.coop.sb3  # noqa: F401 - imports torch: not part of the measured time
    import thermopylae_env.duel.opponents  # noqa: F401 - likewise
    start = time.perf_counter()
    try:
        ENVIRONMENTS[name](report, steps, illegal_rate, seed)
    except Exception as err:  # noqa: BLE001 - a crash is a violation, reported with its traceback
        report.fail(f"crash after {report.steps} steps: {type(err).__name__}: {err}\n"
                    + traceback.format_exc())
    report.seconds = time.perf_counter() - start
    return report


class _Serial:
    """Runs the jobs in this process, one after the other (``--workers 1``), with the pool's interface."""

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, function: Callable[..., Report], *iterables: Any) -> Any:
        return map(function, *iterables)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=None,
                        help=f"total steps over all environments (default {DEFAULT_STEPS:,})")
    parser.add_argument("--quick", action="store_true", help=f"a short run for CI ({QUICK_STEPS:,} steps)")
    parser.add_argument("--illegal-rate", type=float, default=0.02,
                        help="fraction of steps that try a bad action (default 0.02)")
    parser.add_argument("--seed", type=int, default=0, help="base seed (environment i uses seed + i)")
    parser.add_argument("--envs", nargs="+", default=None, choices=sorted(ENVIRONMENTS), metavar="ENV",
                        help="environments to soak (default all): " + ", ".join(ENVIRONMENTS))
    parser.add_argument("--workers", type=int, default=1, help="processes (one environment each at a time)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the reports as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    # The thread settings of the package's entry points (passive OpenMP waiting, one OpenBLAS thread), as
    # the measurements were taken: before torch is imported or a parallel kernel runs, whose OpenMP
    # runtime reads them once, when it loads.
    configure_environment()
    args = build_parser().parse_args(argv)
    if args.quick and args.steps is not None:
        raise SystemExit("soak.py: give --quick or --steps, not both")
    total = QUICK_STEPS if args.quick else (DEFAULT_STEPS if args.steps is None else args.steps)
    if total < 1:
        raise SystemExit("soak.py: --steps must be at least 1")
    if not 0.0 <= args.illegal_rate <= 1.0 or math.isnan(args.illegal_rate):
        raise SystemExit("soak.py: --illegal-rate must be in [0, 1]")
    if args.workers < 1:
        raise SystemExit("soak.py: --workers must be at least 1")
    names = args.envs or list(ENVIRONMENTS)
    # Import every module up front: the whole run then uses one version of the code, even if the files
    # change while it runs (gym.make would otherwise import the duel modules only when their turn comes).
    import thermopylae_env.coop.env  # noqa: F401
    import thermopylae_env.coop.vector  # noqa: F401
    import thermopylae_env.duel.env  # noqa: F401
    import thermopylae_env.duel_v1  # noqa: F401

    if any("sb3" in name for name in names):
        import thermopylae_env.coop.sb3  # noqa: F401
    per_env = max(1, total // len(names))
    jobs = [(name, per_env, args.illegal_rate, args.seed + index) for index, name in enumerate(names)]
    print(f"soak: {len(names)} environments, {per_env:,} steps each, illegal rate {args.illegal_rate}, "
          f"seed {args.seed}", flush=True)
    start = time.perf_counter()
    width = max(len(name) for name in names)
    reports = []
    with ProcessPoolExecutor(max_workers=args.workers) if args.workers > 1 else _Serial() as pool:
        for r in pool.map(soak_one, *zip(*jobs, strict=True)):  # each line as soon as its env is done
            reports.append(r)
            print(f"{r.env:<{width}}  steps {r.steps:>11,}  games {r.games:>9,}  "
                  f"bad actions {r.bad_actions:>8,}  violations {r.violations}  "
                  f"steps/s {r.steps_per_second:>10,.0f}", flush=True)
            for message in r.messages[:5]:
                print(f"    ! {message}", flush=True)
    elapsed = time.perf_counter() - start
    violations = sum(r.violations for r in reports)
    steps = sum(r.steps for r in reports)
    print(f"total: {steps:,} steps, {sum(r.games for r in reports):,} games, {violations} violations, "
          f"{elapsed:.1f} s")
    if args.json:
        rows = [{**dataclasses.asdict(r), "steps_per_second": r.steps_per_second} for r in reports]
        summary = {"command": " ".join(sys.argv), "total_steps": steps, "violations": violations,
                   "seconds": elapsed, "reports": rows}
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
