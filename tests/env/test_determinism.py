"""Determinism: a seed fixes the whole trajectory, in any process; copies continue identically; the only
source of randomness is the environment's own generator.

A trajectory is summarised by a SHA-256 over everything an agent sees and does: the observations, the
actions, the rewards, the end flags and the masks in the infos, over two episodes (the second one after a
``reset()`` without a seed, which continues the seeded generator). Actions are chosen among the legal
ones by a generator seeded from the same seed, so the hash depends on the seed alone.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401  (registers the environments)
from thermopylae_env import duel_v1

ROOT = Path(__file__).resolve().parents[2]
STEPS_VECTOR = 120  # steps of the vector environments (4 games each: several whole games)


class Hasher:
    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def add(self, *values: object) -> None:
        for value in values:
            if isinstance(value, dict):  # PettingZoo observations
                for key in sorted(value):
                    self.h.update(key.encode())
                    self.add(value[key])
            elif isinstance(value, (tuple, list)):
                self.h.update(f"[{len(value)}".encode())
                self.add(*value)
            elif isinstance(value, np.ndarray):
                self.h.update(f"{value.dtype}{value.shape}".encode())
                self.h.update(np.ascontiguousarray(value).tobytes())
            else:
                self.h.update(repr(value).encode())

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def choose(mask: np.ndarray, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(legal.size)])


def continue_single(env: gym.Env, obs: np.ndarray, info: dict, rng: np.random.Generator, hasher: Hasher,
                    episodes: int) -> None:
    """Play ``episodes`` episodes from the current position (the first one already reset)."""
    for episode in range(episodes):
        if episode:
            obs, info = env.reset()  # no seed: the generator goes on
            hasher.add("reset", obs, info["action_mask"])
        while True:
            action = choose(info["action_mask"], rng)
            obs, reward, terminated, truncated, info = env.step(action)
            hasher.add(action, obs, float(reward), terminated, truncated, info["action_mask"])
            if terminated or truncated:
                break


def single_hash(env_id: str, seed: int, **kwargs: object) -> str:
    env = gym.make(env_id, **kwargs)
    hasher = Hasher()
    obs, info = env.reset(seed=seed)
    hasher.add(obs, info["action_mask"])
    continue_single(env, obs, info, np.random.default_rng(seed + 1), hasher, episodes=2)
    return hasher.hexdigest()


def continue_aec(env, rng: np.random.Generator, hasher: Hasher) -> None:
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _ = env.last()
        hasher.add(agent, obs, float(reward), termination, truncation)
        action = None if termination or truncation else choose(obs["action_mask"], rng)
        hasher.add(action)
        env.step(action)


def aec_hash(seed: int) -> str:
    hasher = Hasher()
    rng = np.random.default_rng(seed + 1)
    env = duel_v1.env()
    for episode in range(2):
        env.reset(seed=seed if episode == 0 else None)
        continue_aec(env, rng, hasher)
    return hasher.hexdigest()


def vector_hash(seed: int) -> str:
    envs = gym.make_vec("thermopylae/Coop-v0", num_envs=4, num_players=2)
    hasher = Hasher()
    rng = np.random.default_rng(seed + 1)
    obs, infos = envs.reset(seed=seed)
    hasher.add(obs, infos["action_mask"])
    for _ in range(STEPS_VECTOR):
        masks = envs.action_masks()
        actions = np.array([choose(m, rng) if m.any() else 0 for m in masks])
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        hasher.add(actions, obs, rewards, terminated, truncated, infos["action_mask"])
    return hasher.hexdigest()


def sb3_vector_hash(seed: int) -> str:
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    envs = CoopSB3VecEnv(num_envs=4, num_players=3, seed=seed)
    hasher = Hasher()
    rng = np.random.default_rng(seed + 1)
    hasher.add(envs.reset())
    for _ in range(STEPS_VECTOR):
        masks = envs.action_masks()
        actions = np.array([choose(m, rng) if m.any() else 0 for m in masks])
        obs, rewards, dones, infos = envs.step(actions)
        hasher.add(actions, obs, rewards, dones, envs.action_masks())
        for info in infos:
            if "terminal_observation" in info:
                hasher.add(info["terminal_observation"], info["is_success"])
    return hasher.hexdigest()


def all_hashes(seed: int) -> dict[str, str]:
    """The trajectory hash of every environment for ``seed``."""
    hashes = {f"coop {p} players": single_hash("thermopylae/Coop-v0", seed, num_players=p)
              for p in (1, 2, 3, 4)}
    for side in ("Greek", "Persian"):
        for opponent in ("random", "heuristic"):
            hashes[f"duel {side} vs {opponent}"] = single_hash(f"thermopylae/Duel{side}-v0", seed,
                                                                 opponent=opponent)
    hashes["pettingzoo duel"] = aec_hash(seed)
    hashes["coop vector"] = vector_hash(seed)
    hashes["coop sb3 vector"] = sb3_vector_hash(seed)
    return hashes


def hashes_in_subprocess(seeds: list[int], hash_seed: str) -> dict[str, dict[str, str]]:
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import test_determinism as t; "
            "print(json.dumps({s: t.all_hashes(int(s)) for s in sys.argv[2:]}))")
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    here = str(Path(__file__).resolve().parent)
    run = subprocess.run([sys.executable, "-c", code, here, *map(str, seeds)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_same_seed_gives_the_same_trajectory_in_separate_processes_and_other_seeds_differ():
    # Different hash seeds for str/bytes hashing: any dependence on set or dict-of-str order would show.
    first = hashes_in_subprocess([7, 8], hash_seed="0")
    second = hashes_in_subprocess([7], hash_seed="12345")
    assert first["7"] == second["7"]
    assert len(first["7"]) == 11
    for name, digest in first["7"].items():
        assert digest != first["8"][name], f"{name}: seeds 7 and 8 gave the same trajectory"


def test_global_random_state_does_not_change_any_trajectory():
    hashes = []
    for global_seed in (1, 2):
        np.random.seed(global_seed)  # noqa: NPY002 - the legacy global generator is the point
        random.seed(global_seed)
        hashes.append(all_hashes(21))
    assert hashes[0] == hashes[1]


@pytest.mark.parametrize("env_id", ["thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"])
def test_the_random_opponent_draws_only_from_the_env_generator(env_id):
    def play(seed: int) -> str:
        hasher = Hasher()
        env = gym.make(env_id, opponent="random")
        obs, info = env.reset(seed=seed)
        hasher.add(obs)
        # The agent always plays its first legal action: every difference comes from the opponent.
        while True:
            action = int(np.flatnonzero(info["action_mask"])[0])
            np.random.seed(action)  # noqa: NPY002 - stir the global generators as we go
            random.random()
            obs, reward, terminated, _, info = env.step(action)
            hasher.add(action, obs, reward)
            if terminated:
                return hasher.hexdigest()

    assert play(3) == play(3)  # re-seeding replays the opponent's choices
    assert play(3) != play(4)  # and the opponent's choices do depend on the seed


# ------------------------------------------------------------------------------------ copies mid-game


def fork_single(make: Callable[[], gym.Env], seed: int, steps_before: int) -> list[str]:
    """Play ``steps_before`` steps, then continue the env, its deepcopy and its pickle the same way."""
    env = make()
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps_before):
        obs, _, terminated, _, info = env.step(choose(info["action_mask"], rng))
        assert not terminated
    copies = [env, copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    digests = []
    for clone in copies:
        hasher = Hasher()
        continue_single(clone, obs, info, np.random.default_rng(seed + 1), hasher, episodes=2)
        digests.append(hasher.hexdigest())
    return digests


SINGLE_FACTORIES = {
    "coop solo": lambda: gym.make("thermopylae/Coop-v0"),
    "coop 4 players, raise": lambda: gym.make("thermopylae/Coop-v0", num_players=4, illegal_action="raise"),
    "greek vs random": lambda: gym.make("thermopylae/DuelGreek-v0", opponent="random"),
    "persian vs random": lambda: gym.make("thermopylae/DuelPersian-v0", opponent="random"),
    "greek vs heuristic": lambda: gym.make("thermopylae/DuelGreek-v0"),
    "persian vs heuristic": lambda: gym.make("thermopylae/DuelPersian-v0", opponent="heuristic"),
}


@pytest.mark.parametrize("name", sorted(SINGLE_FACTORIES))
def test_deepcopy_and_pickle_of_an_env_mid_game_continue_identically(name):
    digests = fork_single(SINGLE_FACTORIES[name], seed=13, steps_before=3)
    assert digests[0] == digests[1] == digests[2]


@pytest.mark.parametrize("wrapped", [True, False])
def test_deepcopy_and_pickle_of_the_pettingzoo_env_mid_game_continue_identically(wrapped):
    env = duel_v1.env() if wrapped else duel_v1.raw_env()
    env.reset(seed=13)
    rng = np.random.default_rng(0)
    for _ in range(5):
        env.step(choose(env.observe(env.agent_selection)["action_mask"], rng))
    digests = []
    for clone in (env, copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        hasher = Hasher()
        continue_aec(clone, np.random.default_rng(1), hasher)
        clone.reset()  # the generator goes on into a second game
        continue_aec(clone, np.random.default_rng(2), hasher)
        digests.append(hasher.hexdigest())
    assert digests[0] == digests[1] == digests[2]


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_of_the_vector_env_mid_game_continue_identically(how):
    from thermopylae_env.coop.vector import CoopVectorEnv

    env = CoopVectorEnv(num_envs=4, num_players=2)
    env.reset(seed=13)
    rng = np.random.default_rng(0)
    for _ in range(3):
        env.step(np.array([choose(m, rng) for m in env.action_masks()]))
    clone = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    digests = []
    for e in (env, clone):
        hasher = Hasher()
        rng = np.random.default_rng(1)
        for _ in range(STEPS_VECTOR):
            masks = e.action_masks()
            actions = np.array([choose(m, rng) if m.any() else 0 for m in masks])
            hasher.add(e.step(actions)[:3], masks)
            # the live mask follows the games (a copy whose mask buffer came loose would fail here)
            np.testing.assert_array_equal(e.engine.masks, e.engine.masks_of())
        digests.append(hasher.hexdigest())
    assert digests[0] == digests[1]


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_of_the_sb3_adapter_mid_game_continue_identically(how):
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    env = CoopSB3VecEnv(num_envs=4, num_players=3, seed=13)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(3):
        env.step(np.array([choose(m, rng) for m in env.action_masks()]))
    clone = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert clone.engine is clone._stepper.engine  # one engine, shared as in the original
    digests = []
    for e in (env, clone):
        hasher = Hasher()
        rng = np.random.default_rng(1)
        for _ in range(STEPS_VECTOR):
            masks = e.action_masks()
            actions = np.array([choose(m, rng) if m.any() else 0 for m in masks])
            obs, rewards, dones, infos = e.step(actions)
            hasher.add(obs, rewards, dones, masks)
            np.testing.assert_array_equal(e.engine.masks, e.engine.masks_of())
            np.testing.assert_array_equal(obs, e.engine.observe_rows(np.arange(e.num_envs)))
            for info in infos:
                if "terminal_observation" in info:
                    hasher.add(info["terminal_observation"], info["is_success"], info["episode"]["r"],
                               info["episode"]["l"])
        digests.append(hasher.hexdigest())
    assert digests[0] == digests[1]
    env.step(np.zeros(4, dtype=np.int64))  # the original and the copy share no buffer
    np.testing.assert_array_equal(clone.engine.obs, clone.engine.observe_rows(np.arange(4)))
