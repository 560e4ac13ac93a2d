"""Golden trajectories of the co-op engines, recorded from the code at commit 85ea8a4 (before the layout
module and the single compiled kernel): ``python tests/data/coop_golden.py`` rewrites
``tests/data/coop_golden.json``; ``tests/env/coop/test_coop_golden.py`` replays the same seeds and
policies and checks every digest.

Each digest is a sha256 over the bytes of every step of a run: observations (float32), masks (bool),
rewards (float64), terminated flags (bool) and the actions played. A finished game's mask row while it
waits for its NEXT_STEP reset is hashed as all false whatever the engine writes there (what the caller may
sample from in that row is the one thing allowed to change), and the policy plays action 0 in such rows.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "coop_golden.json"
SINGLE_SEEDS = range(16)
VECTOR_STEPS = 120
VECTOR_GAMES = 6
# A weaker Persian deck, so that random play also wins (by the graveyard and by the refill).
EASY_DECK = [(6 + j % 7, 12 + j % 11, int(j % 3 == 0)) for j in range(28)]


def _deck(name: str | None) -> list | None:
    return EASY_DECK if name == "easy" else None


def _choose(mask: np.ndarray, rng: np.random.Generator) -> int:
    """Random legal play that seldom retreats (so games reach every ending, not only the marker's)."""
    legal = np.flatnonzero(mask)
    if not len(legal):
        return 0
    fights = legal[(legal > 0) & (legal < 56)]
    if len(fights) and rng.random() < 0.6:
        return int(fights.max())  # the strongest fight: card value and support both raise the index
    bold = legal[legal != 0]
    if len(bold) and rng.random() < 0.9:
        return int(rng.choice(bold))
    return int(rng.choice(legal))


def single_digest(num_players: int, seed: int, deck: str | None = None) -> dict:
    """One game of ``CoopGame`` under random legal play (deck orders and dice from ``default_rng(seed)``,
    the policy from ``default_rng(seed + 1000)``)."""
    from thermopylae_env.coop.rules import CoopGame

    game = CoopGame(num_players, _deck(deck))
    rng = np.random.default_rng(seed)
    policy = np.random.default_rng(seed + 1000)
    state = game.init(rng)
    h = hashlib.sha256()
    steps = 0
    while True:
        obs = game.observe(state)
        mask = game.legal_action_mask(state)
        h.update(obs.tobytes())
        h.update(mask.tobytes())
        if state.terminated:
            break
        action = _choose(mask, policy)
        h.update(np.int64(action).tobytes())
        game.step(state, action, rng)
        h.update(np.float64(game.returns(state)).tobytes())
        steps += 1
    return {"num_players": num_players, "seed": seed, "deck": deck, "steps": steps, "won": bool(state.won),
            "reason": state.reason, "sha256": h.hexdigest()}


def _masks_for_digest(masks: np.ndarray, waiting: np.ndarray) -> np.ndarray:
    out = np.array(masks, dtype=bool, copy=True)
    out[waiting] = False
    return out


def vector_digest(num_players: int, backend: str | None, mode: str, illegal_every: int = 0,
                  shaping: float = 0.0, deck: str | None = None) -> dict:
    """``CoopVectorEnv(VECTOR_GAMES)`` reset with seed 7 then stepped VECTOR_STEPS times by random legal
    play (every ``illegal_every``-th step game 0 plays a random action of the whole space instead)."""
    from thermopylae_env.coop.vector import CoopVectorEnv

    kwargs = {} if backend is None else {"backend": backend}
    env = CoopVectorEnv(VECTOR_GAMES, num_players=num_players, autoreset_mode=mode, reward_shaping=shaping,
                        persian_deck=_deck(deck), **kwargs)
    policy = np.random.default_rng(99 + num_players)
    obs, _ = env.reset(seed=7)
    h = hashlib.sha256()
    waiting = np.zeros(VECTOR_GAMES, bool)
    h.update(obs.tobytes())
    h.update(_masks_for_digest(env.action_masks(), waiting).tobytes())
    ends = 0
    for t in range(VECTOR_STEPS):
        masks = _masks_for_digest(env.action_masks(), waiting)
        actions = np.array([_choose(m, policy) for m in masks], dtype=np.int64)
        if illegal_every and t % illegal_every == illegal_every - 1 and not waiting[0]:
            actions[0] = int(policy.integers(0, 72))
        obs, rewards, terminated, truncated, _ = env.step(actions)
        waiting = terminated.copy() if mode == "NextStep" else np.zeros(VECTOR_GAMES, bool)
        for part in (actions, obs, _masks_for_digest(env.action_masks(), waiting),
                     np.asarray(rewards, np.float64), terminated, truncated):
            h.update(np.ascontiguousarray(part).tobytes())
        ends += int(terminated.sum())
    return {"num_players": num_players, "backend": backend, "mode": mode, "illegal_every": illegal_every,
            "shaping": shaping, "deck": deck, "ends": ends, "sha256": h.hexdigest()}


def sb3_digest(num_players: int) -> dict:
    """``CoopSB3VecEnv(VECTOR_GAMES, seed=3)`` under random legal play (SB3's same-step autoreset)."""
    from thermopylae_env.coop.sb3 import CoopSB3VecEnv

    env = CoopSB3VecEnv(VECTOR_GAMES, num_players=num_players, seed=3)
    policy = np.random.default_rng(5 + num_players)
    obs = env.reset()
    h = hashlib.sha256()
    h.update(obs.tobytes())
    for _ in range(VECTOR_STEPS):
        actions = np.array([_choose(m, policy) for m in env.action_masks()], dtype=np.int64)
        obs, rewards, dones, infos = env.step(actions)
        h.update(actions.tobytes())
        h.update(obs.tobytes())
        h.update(env.action_masks().tobytes())
        h.update(np.asarray(rewards, np.float32).tobytes())
        h.update(dones.tobytes())
        for i in np.flatnonzero(dones):
            h.update(np.asarray(infos[i]["terminal_observation"], np.float32).tobytes())
    return {"num_players": num_players, "sha256": h.hexdigest()}


def full_trajectory(num_players: int, seed: int, deck: str | None = None) -> dict:
    """Every observation (as float32 bit patterns), mask and action of one short single-engine game."""
    from thermopylae_env.coop.rules import CoopGame

    game = CoopGame(num_players, _deck(deck))
    rng = np.random.default_rng(seed)
    policy = np.random.default_rng(seed + 1000)
    state = game.init(rng)
    steps = []
    while True:
        obs = game.observe(state)
        mask = game.legal_action_mask(state)
        entry = {"obs_bits": obs.view(np.uint32).tolist(), "legal": np.flatnonzero(mask).tolist()}
        steps.append(entry)
        if state.terminated:
            break
        action = _choose(mask, policy)
        entry["action"] = action
        game.step(state, action, rng)
    return {"num_players": num_players, "seed": seed, "deck": deck, "reason": state.reason, "steps": steps}


def vector_cases(backends: tuple) -> list[dict]:
    cases = []
    for backend in backends:
        for p in (1, 2, 3, 4):
            cases.append(vector_digest(p, backend, "NextStep"))
        cases.append(vector_digest(1, backend, "SameStep"))
        cases.append(vector_digest(2, backend, "NextStep", illegal_every=7, shaping=0.1))
        cases.append(vector_digest(3, backend, "SameStep", illegal_every=5))
        cases.append(vector_digest(1, backend, "NextStep", deck="easy"))
        cases.append(vector_digest(4, backend, "SameStep", deck="easy"))
    return cases


def record() -> dict:
    return {
        "single": [single_digest(p, s, deck) for deck in (None, "easy") for p in (1, 2, 3, 4)
                   for s in SINGLE_SEEDS],
        "vector": vector_cases(("numpy", "numba")),
        "sb3": [sb3_digest(p) for p in (1, 3)],
        "full": [full_trajectory(1, 0), full_trajectory(3, 1), full_trajectory(2, 0, "easy")],
    }


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    GOLDEN.write_text(json.dumps(record(), separators=(",", ":")) + "\n")
    print(f"wrote {GOLDEN}")
