"""Golden trajectories: the duel engine, both single-agent duel envs, the PettingZoo view and the co-op env
play exactly as they did when the trajectories were recorded (commit 85ea8a4, before the layout module,
the shared env base and the move of the built-in opponents).

Each episode is reduced to one sha256 digest over everything an agent could see at every step: the
observation, the mask (both the info mask and ``action_masks()``), the reward, the termination and
truncation flags, the illegal-action reason and, where asked, the engine's events. The recorded digests
live in ``tests/data/duel_*.json`` and ``tests/data/coop_env_golden.json``; regenerate them only for a
deliberate change of behaviour (``python tests/env/duel/test_duel_golden.py --record``), which is a
new env version.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401 - registers the environments
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.duel.layout import GREEK
from thermopylae_env.duel.rules import DuelGame

DATA = Path(__file__).resolve().parents[2] / "data"
EPISODES = 30


class _Digest:
    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.steps = 0

    def array(self, a: object, dtype: str) -> None:
        self.h.update(np.ascontiguousarray(np.asarray(a, dtype=dtype)).tobytes())

    def value(self, v: object) -> None:
        self.h.update(json.dumps(v, sort_keys=True, default=_plain).encode())

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def _plain(v: object) -> object:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(type(v).__name__)


def _pick(rng: np.random.Generator, mask: np.ndarray) -> int:
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(legal.size)])


def _heuristics() -> tuple:
    from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian

    return HeuristicGreek(), HeuristicPersian()


# --- the engine --------------------------------------------------------------------------------------------


def engine_episode(seed: int, players: str) -> tuple[str, int]:
    """One game of DuelGame; ``players`` is "random" (both sides random legal) or "heuristic" (both
    heuristic) or "mixed" (Greek heuristic, Persian random)."""
    game = DuelGame()
    rng = np.random.default_rng(seed)
    agent_rng = np.random.default_rng(seed + 10_000)
    greek, persian = _heuristics()
    events: list = []
    state = game.init(rng, events)
    d = _Digest()
    while True:
        for p in (0, 1):
            d.array(game.observe(state, p), "float32")
        mask = game.legal_action_mask(state)
        d.array(mask, "bool")
        d.array(game.legal_actions(state), "int64")
        d.array(game.returns(state), "float32")
        d.value([bool(state.terminated), int(state.winner), int(state.turn), int(state.phase)])
        if state.terminated:
            break
        p = state.current_player
        obs = game.observe(state, p)
        if players == "random" or (players == "mixed" and p != GREEK):
            action = _pick(agent_rng, mask)
        else:
            action = (greek if p == GREEK else persian).act(obs, mask.astype(np.int8))
        game.step(state, action, rng, events)
        d.steps += 1
    d.value(events)
    return d.hexdigest(), d.steps


# --- the single-agent envs ----------------------------------------------------------------------------------


def env_episode(env_id: str, seed: int, agent: str, **kwargs: object) -> tuple[str, int]:
    """One episode of ``env_id``; the agent is "random" (legal), "unmasked" (any action: illegal moves
    end the game), "probe" (tries an illegal action first at each step, in ``illegal_action="raise"``
    mode: the refusal must change nothing) or "heuristic" (duel only)."""
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed + 20_000)
    d = _Digest()
    obs, info = env.reset(seed=seed)
    player = None
    if agent == "heuristic":
        greek, persian = _heuristics()
        player = greek if env.unwrapped.side == GREEK else persian
    n = env.action_space.n
    while True:
        d.array(obs, "float32")
        d.array(info["action_mask"], "int8")
        d.array(env.unwrapped.action_masks(), "bool")
        d.value({k: v for k, v in info.items() if k != "action_mask"})
        if agent == "probe":
            illegal = np.flatnonzero(info["action_mask"] == 0)
            if illegal.size and rng.random() < 0.3:
                try:
                    env.step(int(illegal[rng.integers(illegal.size)]))
                except IllegalActionError as err:
                    d.value(str(err))
            d.array(env.unwrapped.action_masks(), "bool")
        if agent in ("random", "probe"):
            action = _pick(rng, info["action_mask"])
        elif agent == "unmasked":
            action = int(rng.integers(n)) if rng.random() < 0.05 else _pick(rng, info["action_mask"])
        else:
            action = player.act(obs, info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        d.steps += 1
        d.value([float(reward), bool(terminated), bool(truncated)])
        if terminated or truncated:
            d.array(obs, "float32")
            d.array(info["action_mask"], "int8")
            d.value({k: v for k, v in info.items() if k != "action_mask"})
            break
    env.close()
    return d.hexdigest(), d.steps


def _random_opponent_fn(seed: int) -> Callable:
    rng = np.random.default_rng(seed)
    return lambda obs, mask: _pick(rng, mask)


# --- the PettingZoo view ------------------------------------------------------------------------------------


def pettingzoo_episode(seed: int, wrapped: bool) -> tuple[str, int]:
    from thermopylae_env import duel_v1

    env = duel_v1.env() if wrapped else duel_v1.raw_env()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed + 30_000)
    d = _Digest()
    for agent in env.agent_iter(max_iter=5000):
        obs, reward, termination, truncation, info = env.last()
        d.value([agent, float(reward), bool(termination), bool(truncation), info])
        d.array(obs["observation"], "float32")
        d.array(obs["action_mask"], "int8")
        if termination or truncation:
            env.step(None)
        else:
            env.step(_pick(rng, obs["action_mask"]))
        d.steps += 1
    d.value(sorted(env.unwrapped._cumulative_rewards.items()) if env.agents else [])
    env.close()
    return d.hexdigest(), d.steps


# --- the recorded cases -------------------------------------------------------------------------------------


def _cases() -> dict[str, dict[str, Callable[[int], tuple[str, int]]]]:
    return {
        "duel_engine_golden.json": {
            "engine_random": lambda s: engine_episode(s, "random"),
            "engine_heuristic": lambda s: engine_episode(s, "heuristic"),
            "engine_mixed": lambda s: engine_episode(s, "mixed"),
        },
        "duel_env_golden.json": {
            "greek_vs_heuristic_random_agent": lambda s: env_episode(
                "thermopylae/DuelGreek-v0", s, "random", record_events=True),
            "persian_vs_heuristic_random_agent": lambda s: env_episode(
                "thermopylae/DuelPersian-v0", s, "random", record_events=True),
            "greek_vs_random_heuristic_agent": lambda s: env_episode(
                "thermopylae/DuelGreek-v0", s, "heuristic", opponent="random"),
            "persian_vs_random_heuristic_agent": lambda s: env_episode(
                "thermopylae/DuelPersian-v0", s, "heuristic", opponent="random"),
            "greek_vs_callable_unmasked_agent": lambda s: env_episode(
                "thermopylae/DuelGreek-v0", s, "unmasked", opponent=_random_opponent_fn(s)),
            "persian_vs_heuristic_unmasked_agent": lambda s: env_episode(
                "thermopylae/DuelPersian-v0", s, "unmasked"),
            "greek_raise_mode_probe": lambda s: env_episode(
                "thermopylae/DuelGreek-v0", s, "probe", illegal_action="raise"),
            "persian_raise_mode_probe": lambda s: env_episode(
                "thermopylae/DuelPersian-v0", s, "probe", illegal_action="raise", opponent="random"),
        },
        "duel_pettingzoo_golden.json": {
            "aec_wrapped": lambda s: pettingzoo_episode(s, True),
            "aec_raw": lambda s: pettingzoo_episode(s, False),
        },
        "coop_env_golden.json": {
            "coop1_random": lambda s: env_episode("thermopylae/Coop-v0", s, "random", record_events=True),
            "coop3_random": lambda s: env_episode("thermopylae/Coop-v0", s, "random", num_players=3),
            "coop2_unmasked_shaped": lambda s: env_episode(
                "thermopylae/Coop-v0", s, "unmasked", num_players=2, reward_shaping=0.1),
            "coop4_raise_mode_probe": lambda s: env_episode(
                "thermopylae/Coop-v0", s, "probe", num_players=4, illegal_action="raise"),
        },
    }


def _seeds() -> list[int]:
    return [7 * i + 3 for i in range(EPISODES)]


def record() -> None:
    DATA.mkdir(exist_ok=True)
    for filename, cases in _cases().items():
        out = {}
        for name, run in cases.items():
            out[name] = [dict(zip(("sha256", "steps"), run(s), strict=True), seed=s) for s in _seeds()]
        (DATA / filename).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print("wrote", DATA / filename)


_PARAMS = [(f, name) for f, cases in _cases().items() for name in cases]


@pytest.mark.parametrize(("filename", "case"), _PARAMS)
def test_trajectories_match_the_recorded_golden_digests(filename: str, case: str) -> None:
    if filename == "duel_pettingzoo_golden.json":
        pytest.importorskip("pettingzoo")
    recorded = json.loads((DATA / filename).read_text())[case]
    run = _cases()[filename][case]
    for entry in recorded:
        digest, steps = run(entry["seed"])
        assert (steps, digest) == (entry["steps"], entry["sha256"]), f"{case}, seed {entry['seed']}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/env/duel/test_duel_golden.py --record")
    record()
