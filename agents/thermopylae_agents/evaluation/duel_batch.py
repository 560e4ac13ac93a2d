"""Duel players in batches on the native vector engine: many paired games of one Greek x Persian pairing at
once, for the cross-play matrix (``benchmarks/duel_crossplay.py``) and the exploitability table
(``thermopylae exploitability --table``).

A batched player answers ``actions(engine, rows, observations, masks)`` for the games ``rows`` of a
[`thermopylae_env.duel.vector_engine.DuelVectorEngine`][] where its side is to move:

* [`HeuristicPlayer`][thermopylae_agents.evaluation.duel_batch.HeuristicPlayer]: the engine's compiled
  heuristic (the twin of [`thermopylae_env.duel.opponents.HeuristicGreek`][] / ``HeuristicPersian``, checked
  move for move);
* [`RandomPlayer`][thermopylae_agents.evaluation.duel_batch.RandomPlayer]: uniform over the legal actions,
  from its own generator;
* [`PolicyPlayer`][thermopylae_agents.evaluation.duel_batch.PolicyPlayer]: any object with
  ``act_batch(observations, masks)`` (a
  [`FrozenPolicy`][thermopylae_agents.policies.frozen_policy.FrozenPolicy]) or batched
  ``logits(observations)`` (a pickle-free [`SafePolicy`][thermopylae_agents.policies.safe_policy.SafePolicy]),
  playing its most likely legal action.

[`batched_player`][thermopylae_agents.evaluation.duel_batch.batched_player] builds one from a spec
(``heuristic``, ``random`` or any registry spec of a policy: a shipped policy's name, its ``.json`` path,
``fast:MODEL.zip``). [`play_native`][thermopylae_agents.evaluation.duel_batch.play_native] plays game ``i`` of
a pairing from seed ``seed + i`` of the engine's chance (shuffles and discards), so every pairing sees the
same deals. [`ReplayChance`][thermopylae_agents.evaluation.duel_batch.ReplayChance] replays one such game on
the single environment (same shuffles, same discards), which is how the cross-play is checked against the
single-env path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from thermopylae_agents.policies.registry import make_agent
from thermopylae_env import GREEK_ID, PERSIAN_ID
from thermopylae_env.duel import kernel as K
from thermopylae_env.duel.layout import GREEK, PERSIAN
from thermopylae_env.duel.vector import DuelSelfPlayVectorEnv
from thermopylae_env.duel.vector_engine import DuelVectorEngine

__all__ = [
    "HeuristicPlayer",
    "NativeGames",
    "PolicyPlayer",
    "RandomPlayer",
    "ReplayChance",
    "batched_player",
    "play_native",
]

SIDE_IDS = {GREEK: GREEK_ID, PERSIAN: PERSIAN_ID}


class HeuristicPlayer:
    """The side's hand-written player, compiled inside the engine."""

    name = "heuristic"

    def actions(self, engine: DuelVectorEngine, rows: np.ndarray, observations: np.ndarray,
                masks: np.ndarray) -> np.ndarray:
        return engine.heuristic_actions(rows)


class RandomPlayer:
    """A uniformly random legal player drawing from its own generator (seeded: the same command gives the
    same games)."""

    name = "random"

    def __init__(self, seed: int | tuple[int, ...] = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def actions(self, engine: DuelVectorEngine, rows: np.ndarray, observations: np.ndarray,
                masks: np.ndarray) -> np.ndarray:
        return (self.rng.random(masks.shape) * masks).argmax(axis=1)


class PolicyPlayer:
    """A learned player: ``act_batch(observations, masks)`` if it has one, else the legal action with the
    highest of its batched ``logits(observations)``."""

    def __init__(self, policy: Any, name: str) -> None:
        if not (callable(getattr(policy, "act_batch", None)) or callable(getattr(policy, "logits", None))):
            raise ValueError(f"player {name!r} plays one game at a time (no act_batch or logits): it cannot "
                             "be batched; use a shipped policy name, its .json, or fast:MODEL.zip")
        self.policy = policy
        self.name = name

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The most likely legal action of each row (also the engine's
        [`BatchOpponent`][thermopylae_env.duel.vector.BatchOpponent] form)."""
        if callable(getattr(self.policy, "act_batch", None)):
            return np.asarray(self.policy.act_batch(observations, masks), np.int64)
        logits = np.asarray(self.policy.logits(observations), np.float64)
        return np.where(masks, logits, -np.inf).argmax(axis=1)

    def actions(self, engine: DuelVectorEngine, rows: np.ndarray, observations: np.ndarray,
                masks: np.ndarray) -> np.ndarray:
        return self.act_batch(observations, masks)


def batched_player(spec: str, side: int, seed: int = 0) -> HeuristicPlayer | RandomPlayer | PolicyPlayer:
    """The batched player of ``side`` (``GREEK``/``PERSIAN``) named by ``spec``: ``heuristic``, ``random``
    (its generator seeded from ``(seed, side)``) or a registry spec of a policy."""
    if side not in SIDE_IDS:
        raise ValueError(f"side must be {GREEK} (Greek) or {PERSIAN} (Persian), got {side!r}")
    if spec == "heuristic":
        return HeuristicPlayer()
    if spec == "random":
        return RandomPlayer((seed, side))
    policy, label = make_agent(spec, SIDE_IDS[side])
    return PolicyPlayer(policy, label)


@dataclass
class NativeGames:
    """Per-game results of one pairing: ``greek_won`` (bool), ``turns`` (the game turn at the end, as the
    single env's ``info["turn"]``) and ``steps`` (``(2, games)``: each side's decisions), for seeds
    ``seed + i``."""

    seed: int
    greek_won: np.ndarray
    turns: np.ndarray
    steps: np.ndarray
    chance_bases: np.ndarray  # each game's chance base: ReplayChance(base) replays it on the single env

    @property
    def games(self) -> int:
        return int(self.greek_won.size)


def play_native(greek: Any, persian: Any, games: int, seed: int = 0,
                parallel: bool | str = "auto") -> NativeGames:
    """Play ``games`` games of ``greek`` against ``persian`` (batched players) on the native engine, game
    ``i`` from seed ``seed + i``; each game is played once (a finished row's autoreset game is not
    counted and is moved by its first legal action until the slowest game ends)."""
    if games < 1:
        raise ValueError(f"games must be at least 1, got {games}")
    env = DuelSelfPlayVectorEnv(games, parallel=parallel)
    env.reset(seed=seed)
    engine = env.engine
    bases = np.array([engine.chance_base(i) for i in range(games)], np.int64)
    done = np.zeros(games, bool)
    won = np.zeros(games, bool)
    turns = np.zeros(games, np.int64)
    steps = np.zeros((2, games), np.int64)
    players = ((GREEK, greek), (PERSIAN, persian))
    while not done.all():
        masks = env.action_masks()
        to_move = env.to_move()
        actions = masks.argmax(axis=1)
        for side, player in players:
            rows = np.flatnonzero(~done & (to_move == side)).astype(np.int64)
            if rows.size:
                chosen = player.actions(engine, rows, engine.observe(side, rows), masks[rows])
                actions[rows] = chosen
                steps[side, rows] += 1
        _, _, ended, _, info = env.step(actions)
        new = ended & ~done
        if new.any():
            if info.get("illegal_action", np.zeros(games, bool))[new].any():
                g = int(np.flatnonzero(new & info["illegal_action"])[0])
                raise RuntimeError(f"game {g}: a player chose an illegal action: {info['illegal_reason'][g]}")
            won[new] = info["winner"][new] == GREEK
            turns[new] = info["turn"][new]
            done |= new
    env.close()
    return NativeGames(seed=seed, greek_won=won, turns=turns, steps=steps, chance_bases=bases)


class ReplayChance:
    """A chance source for the single duel env (``env.np_random = ReplayChance(base)`` before a ``reset()``
    without seed) that replays one game of the native engine: its two shuffles, then the cards hit by
    each discard card, from the game's chance base
    ([`NativeGames.chance_bases`][thermopylae_agents.evaluation.duel_batch.NativeGames.chance_bases]). A
    random opponent inside the env cannot draw from it."""

    def __init__(self, base: int) -> None:
        self.base = int(base)
        self.orders = list(K.chance_orders(self.base))
        self.plays = 0

    def permutation(self, n: int) -> np.ndarray:
        if not self.orders:
            raise RuntimeError("ReplayChance replays one deal: both decks are already shuffled")
        return np.array(self.orders.pop(0)) % n  # the Persian order comes as 52..103: the env adds 52

    def choice(self, n: int, size: int, replace: bool) -> np.ndarray:
        if size != 2 or replace:
            raise RuntimeError("ReplayChance replays the discard card's two cards only")
        pick = K.discard_pick(self.base, self.plays, n)
        self.plays += 1
        return np.array(pick)
