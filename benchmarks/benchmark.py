"""Environment throughput: steps per second of the co-op (and duel) environments, single and vectorized.

Usage::

    python benchmarks/benchmark.py                # full run (a few minutes): a table and
                                                  # benchmarks/results/engine_speed.json
    python benchmarks/benchmark.py --quick        # smoke run (well under a minute)
    python benchmarks/benchmark.py --json out.json --repeats 5
    python benchmarks/benchmark.py --markdown benchmarks/results/engine_speed.md   # also a Markdown table

Every row plays random *legal* actions: the action is drawn uniformly from the current mask. Only the
environment's own work is timed (``step``, plus ``reset`` when a single env's episode ends; the vector
envs reset inside ``step``): drawing the actions is outside the timer (the single envs and RLCard play
the games twice from the same seed: the first pass draws the actions, the second replays them under one
timer, so that no per-call timer cost is counted). Observations and masks are part of
the timed work (the vector env builds both on every step; the single env builds its info mask). Each row
is measured ``--repeats`` times and the median is reported, as wall-clock steps/s and as steps per CPU
second of this process (``time.process_time``): on a shared machine the second number is the steadier.

Rows:

* ``single raw``: ``thermopylae_env.coop.env.CoopEnv`` called directly.
* ``single make``: ``gymnasium.make("thermopylae/Coop-v0")`` (with Gymnasium's checker and order wrappers).
* ``sync N``: ``gymnasium.make_vec(..., vectorization_mode="sync")``, a ``SyncVectorEnv`` of N single envs.
* ``native N numba``: ``CoopVectorEnv`` (what ``gymnasium.make_vec`` builds), played by the compiled
  kernel on all cores numba uses (the kernel is compiled or loaded from its cache before the timer
  starts; the rows are skipped where numba is missing). The ``copy=False`` row returns the live
  observation buffer instead of a fresh array; ``native 8192 copies alone`` times only the copies of the
  observations and masks that a default step hands out (a ceiling for the default env: memory traffic,
  no game work).
* ``ppo adapter`` / ``ppo dummy``: ``learn()`` throughput (environment steps per second, updates included)
  of the default co-op training configuration, ``agents/thermopylae_agents/configs/coop.yaml``, built by the
  code path of ``thermopylae_agents.training`` (``build_model``: MaskablePPO with its features extractor,
  network, batch size and epochs; one torch thread, ``setup_torch``), on the SB3 adapter
  ``CoopSB3VecEnv(n_envs)`` (what training uses) vs ``DummyVecEnv`` of as many
  ``Monitor(CoopEnv(**env_kwargs))``, for a fixed number of whole rollouts. The two kinds run alternately
  (adapter, dummy, adapter, ...) so that the load of other jobs falls on both. Each PPO row also splits the
  time: ``collect_rollouts`` (env steps, policy forward, masks, buffer) as collection steps/s, and ``train``
  (the gradient epochs) as seconds per rollout; ``ppo adapter / dummy`` is the ratio of the two rows'
  medians.
* ``duel ...``: the duel environments through ``gymnasium.make``, if ``thermopylae_env/duel/env.py`` exists.
* ``peer rlcard leduc``: RLCard's Leduc hold'em (``rlcard.make("leduc-holdem")``), played the same way
  (random legal actions drawn outside the timer; its ``step`` builds the next observation and legal
  actions), as a yardstick for the single env; ``single make / rlcard leduc`` is the ratio of the medians
  (wall clock and CPU time).
  Skipped when rlcard is not installed (``pip install thermopylae-env[bench]``).
* ``duel engine N``: the native vector duel engine (``thermopylae_env.duel.vector.DuelSelfPlayVectorEnv``),
  random legal micro-actions of both sides, masks and observations included, with numba's serial and
  parallel loops over games; ``duel heuristic N`` / ``duel policy N``: ``gymnasium.make_vec`` of the
  Greek side with the built-in heuristic Persian inside ``step`` / with a batched policy opponent (a NumPy
  MLP of the shipped duel policies' shape, 56-128-128-21 tanh, random weights, masked argmax, one
  ``act_batch`` call per round): agent steps/s; ``duel sync 64``: ``SyncVectorEnv`` of 64 single Greek
  envs with the Python heuristic opponent. ``--duel-only`` runs just these rows and the peers.
* ``peer ...`` (where installed, the ``bench`` extra): PettingZoo's Leduc hold'em (``leduc_holdem_v4``,
  AEC, random legal actions), RLCard's Leduc hold'em (its own row under ``--duel-only``,
  else the one above), and Pgx's Leduc hold'em on JAX's CPU backend at
  batch 8192 (``jit(vmap(step))`` with auto-reset, random legal actions drawn outside the timer).
  The ratios printed after the table compare the duel rows with them (same run, same machine load).
* ``duel ppo ...`` (with ``--duel-ppo``): ``learn()`` throughput (collection plus updates) of MaskablePPO
  as training builds it (one torch thread) with ``configs/duel_greek.yaml`` and ``duel_persian.yaml``,
  each with its shipped recipe and with the previous one (16 envs x 256 steps, batch 1024, 4 epochs,
  MLPs [128, 128]) on ``DuelSB3VecEnv``, and the shipped Greek recipe on ``DummyVecEnv`` of single envs.

``--single-only`` runs only the single-env rows (``single raw``, ``single make``, the duel rows and the
RLCard peer): the quick comparison of two commits, run one after the other in the same session.

Memory: bytes per game of the native engine's own arrays (game state with its chance tables, the
observation and mask buffers) at N = 8192, and, with ``--memory`` (``--memory-envs N``, default 10**6),
what a user's process actually holds per game: the growth of the resident set of a fresh Python process
(after its imports) that builds ``CoopVectorEnv(N)`` or ``CoopSB3VecEnv(N)``, resets it and plays a few
random legal steps, divided by N; the peak resident set growth too.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# NumPy's matrix products (the batched policy opponent) on one OpenBLAS thread, as scripts/train.py runs
# them: OpenBLAS's own threads and numba's parallel loop over games otherwise fight over the same cores.
# Set before NumPy loads; an OPENBLAS_NUM_THREADS of the caller's wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

import thermopylae_env  # noqa: E402, F401  (registers the environments)
from thermopylae_env.coop.env import CoopEnv  # noqa: E402
from thermopylae_env.coop.vector import CoopVectorEnv  # noqa: E402
from thermopylae_env.threads import configure_environment  # noqa: E402

# The thread settings of the package's entry points (passive OpenMP waiting, one OpenBLAS thread), as the
# measurements were taken: before torch is imported or a parallel kernel runs, whose OpenMP runtime reads
# them once, when it loads.
configure_environment()

Timer = tuple[float, float]  # (wall seconds, CPU seconds)
PPO_ROLLOUTS = 4  # whole rollouts of the co-op config per PPO run (16384 steps each by default)
PPO_ROLLOUTS_QUICK = 1


def _clock() -> Timer:
    return time.perf_counter(), time.process_time()


class Meter:
    """Accumulates the time spent inside the environment."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def run(self, fn: Callable, *args, **kwargs):  # noqa: ANN202
        w0, c0 = _clock()
        out = fn(*args, **kwargs)
        w1, c1 = _clock()
        self.wall += w1 - w0
        self.cpu += c1 - c0
        return out


def bench_single(env: gym.Env, steps: int, seed: int) -> tuple[float, float]:
    """Random legal play on one env for ``steps`` steps; returns (wall steps/s, CPU steps/s).

    Two passes over the same games: the first draws the actions from the masks (untimed), the second
    plays the recorded actions again from the same seed under one timer (the env is deterministic given
    its seed, so it sees the same states; checked at the end). Timing the whole second pass, instead of
    each call, keeps the timer's own cost (a ``process_time`` call costs about as much as a small step)
    out of the figure."""
    rng = np.random.default_rng(seed)
    actions: list[int] = []
    _, info = env.reset(seed=seed)
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        actions.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            obs, info = env.reset()
    expected = obs
    step, reset = env.step, env.reset
    reset(seed=seed)
    w0, c0 = _clock()
    for action in actions:
        obs, _, terminated, truncated, _ = step(action)
        if terminated or truncated:
            obs, _ = reset()
    w1, c1 = _clock()
    if not np.array_equal(obs, expected):
        raise RuntimeError("the replayed games differ from the recorded ones")
    return steps / (w1 - w0), steps / (c1 - c0)


def bench_rlcard_leduc(steps: int, seed: int) -> tuple[float, float]:
    """Random legal play on RLCard's Leduc hold'em, timed like :func:`bench_single` (record, then replay
    from the same seed under one timer)."""
    import rlcard

    rng = np.random.default_rng(seed)
    env = rlcard.make("leduc-holdem", config={"seed": seed})
    actions: list[int] = []
    state, _ = env.reset()
    for _ in range(steps):
        legal = list(state["legal_actions"])
        action = legal[int(rng.integers(len(legal)))]
        actions.append(action)
        state, _ = env.step(action)
        if env.is_over():
            state, _ = env.reset()
    expected = state["obs"]
    env = rlcard.make("leduc-holdem", config={"seed": seed})
    step, reset, is_over = env.step, env.reset, env.is_over
    w0, c0 = _clock()
    state, _ = reset()
    for action in actions:
        state, _ = step(action)
        if is_over():
            state, _ = reset()
    w1, c1 = _clock()
    if not np.array_equal(state["obs"], expected):
        raise RuntimeError("the replayed RLCard games differ from the recorded ones")
    return steps / (w1 - w0), steps / (c1 - c0)


def _legal_random(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row (0 for a row without any: a game waiting for reset)."""
    return (rng.random(masks.shape, dtype=np.float32) * masks).argmax(axis=1)


def bench_vector(env: gym.vector.VectorEnv, steps: int, seed: int, masks_of: Callable) -> tuple[float, float]:
    """Random legal play on a vector env for ``steps`` vector steps; returns env steps/s (wall, CPU)."""
    rng = np.random.default_rng(seed)
    meter = Meter()
    _, infos = meter.run(lambda: env.reset(seed=seed))
    n = env.num_envs
    for _ in range(steps):
        actions = _legal_random(masks_of(env, infos), rng)
        _, _, _, _, infos = meter.run(env.step, actions)
    return steps * n / meter.wall, steps * n / meter.cpu


def bench_copies_alone(n: int, steps: int, seed: int) -> tuple[float, float]:
    """The fresh arrays a default (``copy=True``) ``CoopVectorEnv`` step hands out, copied and nothing
    else: the (n, OBS_SIZE) float32 observations and the (n, 72) int8 masks. An upper bound on the
    default env's steps/s that no engine work can pass."""
    env = CoopVectorEnv(n, copy=False)
    obs, infos = env.reset(seed=seed)
    masks = infos["action_mask"]
    meter = Meter()
    for _ in range(steps):
        meter.run(lambda: (obs.copy(), masks.copy()))
    return steps * n / meter.wall, steps * n / meter.cpu


def _native_masks(env: CoopVectorEnv, infos: dict) -> np.ndarray:
    return env.engine.masks  # read only; the same array infos["action_mask"] copies


def _sync_masks(env: gym.vector.VectorEnv, infos: dict) -> np.ndarray:
    return infos["action_mask"]


def coop_training_config() -> tuple:
    """``(algo, hyperparameter block, env kwargs, n_envs)`` of the default co-op config, read the way
    ``thermopylae train`` reads it (``resolve_config`` + ``Config``)."""
    from thermopylae_agents.training.config import Config, resolve_config
    from thermopylae_env import COOP_ID

    data = resolve_config("coop")
    hp = Config(data)[COOP_ID]
    return data["run"]["algo"], hp, hp.plain("env_kwargs", {}), int(hp["n_envs"])


def ppo_config_summary() -> dict:
    """The settings of the default co-op config that decide PPO's speed (for the table and the JSON)."""
    algo, hp, env_kwargs, n = coop_training_config()
    kwargs = hp.plain("policy_kwargs", {})
    return {
        "config": "agents/thermopylae_agents/configs/coop.yaml",
        "algo": algo,
        "n_envs": n,
        "n_steps": int(hp["n_steps"]),
        "rollout_steps": n * int(hp["n_steps"]),
        "batch_size": int(hp["batch_size"]),
        "n_epochs": int(hp["n_epochs"]),
        "net_arch": kwargs.get("net_arch"),
        "activation_fn": kwargs.get("activation_fn"),
        "features_extractor": kwargs.get("features_extractor", "flatten"),
        "env_kwargs": env_kwargs,
        "vec": hp.get("vec"),
    }


def bench_ppo(kind: str, rollouts: int, seed: int) -> dict:
    """``learn()`` of the default co-op config for ``rollouts`` whole rollouts on ``kind`` (``adapter``:
    the env training builds, ``CoopSB3VecEnv``; ``dummy``: ``DummyVecEnv`` of ``Monitor(CoopEnv())``).

    Returns wall and CPU steps/s of the whole ``learn`` and the time inside ``collect_rollouts`` and
    ``train`` (wall and CPU)."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from thermopylae_agents.training.envs import build_vec_env
    from thermopylae_agents.training.ppo import build_model
    from thermopylae_agents.training.runs import setup_torch
    from thermopylae_env import COOP_ID

    algo, hp, env_kwargs, n = coop_training_config()
    setup_torch(seed)  # one torch thread, seeds: what a training run does first
    if kind == "adapter":
        vec = str(hp.get("vec", "native"))
        if vec != "native":
            raise ValueError(f"the co-op config trains on vec={vec!r}, not on the native adapter")
        env = build_vec_env(COOP_ID, env_kwargs, n, seed, vec)
    else:
        env = DummyVecEnv([lambda: Monitor(CoopEnv(**env_kwargs)) for _ in range(n)])
        env.seed(seed)
    # Warm-up outside the timer: a reset and one step (the numba engine loads its compiled kernels on
    # first use), then the seeds again for learn()'s own reset.
    from sb3_contrib.common.maskable.utils import get_action_masks

    env.reset()
    env.step(get_action_masks(env).argmax(1))
    env.seed(seed)
    model = build_model(algo, env, hp, seed, None, "cpu")
    spent = {"collect": [0.0, 0.0], "train": [0.0, 0.0]}

    def timed(name: str, fn: Callable) -> Callable:
        def inner(*args, **kwargs):  # noqa: ANN202
            w0, c0 = _clock()
            try:
                return fn(*args, **kwargs)
            finally:
                w1, c1 = _clock()
                spent[name][0] += w1 - w0
                spent[name][1] += c1 - c0

        return inner

    model.collect_rollouts = timed("collect", model.collect_rollouts)
    model.train = timed("train", model.train)
    steps = rollouts * n * int(hp["n_steps"])
    learn_kwargs = {"use_masking": True} if algo == "maskable_ppo" else {}
    w0, c0 = _clock()
    model.learn(total_timesteps=steps, **learn_kwargs)
    w1, c1 = _clock()
    env.close()
    done = model.num_timesteps
    backend = getattr(getattr(env, "engine", None), "backend", None)
    return {
        "backend": backend,
        "steps": done,
        "steps_per_s": done / (w1 - w0),
        "cpu_steps_per_s": done / (c1 - c0),
        "collect_steps_per_s": done / spent["collect"][0],
        "collect_cpu_steps_per_s": done / spent["collect"][1],
        "train_s_per_rollout": spent["train"][0] / rollouts,
        "train_cpu_s_per_rollout": spent["train"][1] / rollouts,
        "train_share": spent["train"][0] / (w1 - w0),
    }


def bench_ppo_rows(rollouts: int, repeats: int, seed: int) -> tuple[list[dict], dict]:
    """The ``ppo adapter`` and ``ppo dummy`` rows (medians of ``repeats``, the kinds alternating) and
    their ratios."""
    kinds = {"adapter": "default co-op config, CoopSB3VecEnv", "dummy": "default co-op config, "
             "DummyVecEnv of Monitor(CoopEnv())"}
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
    for r in range(repeats):
        for kind in kinds:
            runs[kind].append(bench_ppo(kind, rollouts, seed + r))
    n = ppo_config_summary()["n_envs"]
    rows = []
    for kind, what in kinds.items():
        numbers = [key for key in runs[kind][0] if key != "backend"]
        row = {key: statistics.median(run[key] for run in runs[kind]) for key in numbers}
        backend = runs[kind][0]["backend"]
        if backend:
            what = f"{what} ({backend} engine)"
        row.update({"name": f"ppo {kind}", "what": what, "num_envs": n, "engine_backend": backend,
                    "runs_steps_per_s": [run["steps_per_s"] for run in runs[kind]],
                    "runs_cpu_steps_per_s": [run["cpu_steps_per_s"] for run in runs[kind]]})
        rows.append(row)
    adapter, dummy = rows
    ratio = {
        "wall": adapter["steps_per_s"] / dummy["steps_per_s"],
        "cpu": adapter["cpu_steps_per_s"] / dummy["cpu_steps_per_s"],
        "collect_wall": adapter["collect_steps_per_s"] / dummy["collect_steps_per_s"],
    }
    return rows, ratio


def _ppo_config_line(config: dict) -> str:
    c = config
    return (f"{c['algo']} {c['n_envs']} envs x {c['n_steps']} steps, batch {c['batch_size']}, "
            f"{c['n_epochs']} epochs, net {c['net_arch']} {c['activation_fn']}, "
            f"features {c['features_extractor']}")


def median_of(repeats: int, fn: Callable[[int], tuple[float, float]]) -> dict:
    runs = [fn(r) for r in range(repeats)]
    wall = [r[0] for r in runs]
    cpu = [r[1] for r in runs]
    return {
        "steps_per_s": statistics.median(wall),
        "cpu_steps_per_s": statistics.median(cpu),
        "runs_steps_per_s": wall,
        "runs_cpu_steps_per_s": cpu,
    }


# --------------------------------------------------------------------------------------- duel vector rows


class NumpyMLPOpponent:
    """A batched policy opponent of the shipped duel policies' shape (56-128-128-21, tanh), random
    weights: masked argmax of the logits, one matrix product per layer for all waiting games."""

    name = "numpy-mlp"

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        sizes = (56, 128, 128, 21)
        self.layers = [(rng.normal(0, 1 / np.sqrt(a), (a, b)).astype(np.float32), np.zeros(b, np.float32))
                       for a, b in zip(sizes[:-1], sizes[1:], strict=True)]

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        x = observations
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < len(self.layers) - 1:
                x = np.tanh(x)
        return np.where(masks, x, -np.inf).argmax(axis=1)


def _duel_masks(env: gym.vector.VectorEnv, infos: dict) -> np.ndarray:
    return env.engine.masks  # read only


def add_duel_vector_rows(add: Callable, scale: float, seed: int) -> None:
    """The native vector duel engine's rows (compiled outside the timer) and the SyncVectorEnv row."""
    from thermopylae_env.duel.vector import DuelGreekVectorEnv, DuelSelfPlayVectorEnv

    for parallel in (False, True):  # compile or load both loops before any timer
        DuelSelfPlayVectorEnv(4, parallel=parallel).reset(seed=0)
        DuelGreekVectorEnv(4, parallel=parallel).reset(seed=0)
    steps = max(10, int(200 * scale))
    for n in (1024, 8192):
        for parallel in (False, True):
            label = "parallel" if parallel else "serial"
            add(f"duel engine {n} {label}", f"DuelSelfPlayVectorEnv({n}, parallel={parallel}), both sides", n,
                lambda r, n=n, p=parallel: bench_vector(DuelSelfPlayVectorEnv(n, parallel=p), steps, seed + r,
                                                        _duel_masks))
    add("duel engine 8192 copy=False", "DuelSelfPlayVectorEnv(8192, copy=False), parallel", 8192,
        lambda r: bench_vector(DuelSelfPlayVectorEnv(8192, copy=False), steps, seed + r, _duel_masks))
    for parallel in (False, True):
        label = "parallel" if parallel else "serial"
        add(f"duel heuristic 8192 {label}",
            f'make_vec("thermopylae/DuelGreek-v0", 8192, parallel={parallel}): agent steps', 8192,
            lambda r, p=parallel: bench_vector(
                gym.make_vec("thermopylae/DuelGreek-v0", num_envs=8192, parallel=p), steps, seed + r,
                _duel_masks))
    add("duel policy 8192", 'make_vec("thermopylae/DuelGreek-v0", 8192, opponent=NumpyMLPOpponent())', 8192,
        lambda r: bench_vector(gym.make_vec("thermopylae/DuelGreek-v0", num_envs=8192,
                                            opponent=NumpyMLPOpponent(seed)), max(5, steps // 4), seed + r,
                               _duel_masks))
    add("duel sync 64", 'make_vec("thermopylae/DuelGreek-v0", 64, vectorization_mode="sync")', 64,
        lambda r: bench_vector(gym.make_vec("thermopylae/DuelGreek-v0", num_envs=64,
                                            vectorization_mode="sync"),
                               max(3, int(100 * scale)), seed + r, _sync_masks))


def bench_pettingzoo_leduc(steps: int, seed: int) -> tuple[float, float]:
    """PettingZoo's Leduc hold'em (AEC API, random legal actions); agent steps per second."""
    from pettingzoo.classic import leduc_holdem_v4

    env = leduc_holdem_v4.env()
    rng = np.random.default_rng(seed)
    meter = Meter()
    meter.run(env.reset, seed=seed)
    done = 0
    while done < steps:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            action = None
        else:
            action = int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"])))
            done += 1
        meter.run(env.step, action)
        if not env.agents:
            meter.run(env.reset)
    return steps / meter.wall, steps / meter.cpu


@functools.cache
def _pgx_leduc_functions() -> tuple:
    """Pgx's Leduc hold'em: jitted ``init``, ``step`` with auto-reset and a random legal sampler (compiled
    once per process)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    import pgx

    env = pgx.make("leduc_holdem")

    def step_or_reset(state, action, key):  # noqa: ANN001, ANN202
        state = env.step(state, action)
        return jax.lax.cond(state.terminated | state.truncated, lambda: env.init(key), lambda: state)

    def sample(key, mask):  # noqa: ANN001, ANN202
        return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf), axis=-1)

    return jax, jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(step_or_reset)), jax.jit(sample)


def bench_pgx_leduc(batch: int, steps: int, seed: int) -> tuple[float, float]:
    """Pgx's Leduc hold'em on JAX's CPU backend: ``jit(vmap(step))`` with auto-reset at ``batch``; the
    random legal actions and the reset keys are made by separate jitted calls outside the timer."""
    jax, init, step, sample = _pgx_leduc_functions()
    key = jax.random.PRNGKey(seed)
    key, sub = jax.random.split(key)
    state = init(jax.random.split(sub, batch))
    key, k1, k2 = jax.random.split(key, 3)
    step(state, sample(k1, state.legal_action_mask), jax.random.split(k2, batch)).current_player \
        .block_until_ready()  # compile outside the timer
    meter = Meter()
    for _ in range(steps):
        key, k1, k2 = jax.random.split(key, 3)
        action = sample(k1, state.legal_action_mask).block_until_ready()
        keys = jax.random.split(k2, batch).block_until_ready()
        state = meter.run(lambda s=state, a=action, k=keys: jax.block_until_ready(step(s, a, k)))
    return steps * batch / meter.wall, steps * batch / meter.cpu


def add_peer_rows(add: Callable, scale: float, seed: int, rlcard: bool) -> None:
    """Peers in the same run, where installed (``pip install 'thermopylae-env[bench]'``); the RLCard row
    only if ``rlcard`` (a full run has it already, next to the single envs)."""
    if importlib.util.find_spec("pettingzoo") is not None and importlib.util.find_spec("rlcard") is not None:
        add("peer pettingzoo leduc", "pettingzoo.classic.leduc_holdem_v4.env() (AEC)", 1,
            lambda r: bench_pettingzoo_leduc(int(20000 * scale), seed + r))
    else:
        print("  (pettingzoo / rlcard not installed: PettingZoo Leduc row skipped)")
    if rlcard and importlib.util.find_spec("rlcard") is not None:
        add("peer rlcard leduc", 'rlcard.make("leduc-holdem")', 1,
            lambda r: bench_rlcard_leduc(int(20000 * scale), seed + r))
    if importlib.util.find_spec("pgx") is not None and importlib.util.find_spec("jax") is not None:
        add("peer pgx leduc 8192", 'pgx.make("leduc_holdem"), jit(vmap(step)), JAX CPU', 8192,
            lambda r: bench_pgx_leduc(8192, max(10, int(200 * scale)), seed + r))
    else:
        print("  (pgx / jax not installed: Pgx Leduc row skipped)")


# The duel recipe before the co-op one replaced it (configs/duel_*.yaml up to then): its rows time both
# recipes in the same run.
PREVIOUS_DUEL_RECIPE = {"n_envs": 16, "n_steps": 256, "batch_size": 1024, "n_epochs": 4,
                        "net_arch": [128, 128]}


def duel_ppo_hp(side: str, recipe: str):
    """The hyperparameter block of ``configs/duel_<side>.yaml`` as training reads it (``resolve_config``
    + ``Config``), with ``recipe="previous"`` its speed settings replaced by :data:`PREVIOUS_DUEL_RECIPE`."""
    from thermopylae_agents.training.config import Config, resolve_config
    from thermopylae_env import GREEK_ID, PERSIAN_ID

    data = resolve_config(f"duel-{side}")
    env_id = GREEK_ID if side == "greek" else PERSIAN_ID
    if recipe == "previous":
        block = data[env_id]
        for key in ("n_envs", "n_steps", "batch_size", "n_epochs"):
            block[key] = PREVIOUS_DUEL_RECIPE[key]
        block["policy_kwargs"] = dict(block["policy_kwargs"], net_arch=PREVIOUS_DUEL_RECIPE["net_arch"])
    return data["run"]["algo"], Config(data)[env_id], env_id


def bench_duel_ppo(side: str, recipe: str, kind: str, rollouts: int, seed: int) -> Timer:
    """``learn()`` (collection plus updates, :func:`thermopylae_agents.training.build_model`: the
    shipped run's model, faster masked distribution included) of ``configs/duel_<side>.yaml`` with
    ``recipe`` (``shipped`` or ``previous``) for ``rollouts`` whole rollouts, on ``kind``: ``native``
    (``DuelSB3VecEnv``, the other side's heuristic inside the engine) or ``dummy`` (``DummyVecEnv`` of
    ``Monitor`` of single envs)."""
    from thermopylae_agents.training.envs import build_vec_env
    from thermopylae_agents.training.ppo import build_model
    from thermopylae_agents.training.runs import setup_torch

    algo, hp, env_id = duel_ppo_hp(side, recipe)
    n = int(hp["n_envs"])
    setup_torch(seed)
    env = build_vec_env(env_id, hp.plain("env_kwargs", {}), n, seed, kind)
    model = build_model(algo, env, hp, seed, None, "cpu")
    steps = rollouts * n * int(hp["n_steps"])
    w0, c0 = _clock()
    model.learn(total_timesteps=steps, use_masking=True)
    w1, c1 = _clock()
    env.close()
    return model.num_timesteps / (w1 - w0), model.num_timesteps / (c1 - c0)


def add_duel_ppo_rows(add: Callable, quick: bool, seed: int) -> None:
    """Duel training throughput: both sides' shipped configs and the previous recipe on the native
    adapter, the shipped Greek config on DummyVecEnv; each about the same number of steps."""
    if importlib.util.find_spec("sb3_contrib") is None:
        print("  (sb3-contrib not installed: duel PPO rows skipped)")
        return
    steps = 16384 * (2 if quick else 4)
    for side in ("greek", "persian"):
        for recipe in ("shipped", "previous"):
            _, hp, _ = duel_ppo_hp(side, recipe)
            n, per = int(hp["n_envs"]), int(hp["n_envs"]) * int(hp["n_steps"])
            what = (f"MaskablePPO, duel_{side}.yaml ({recipe} recipe: {n} x {hp['n_steps']}, batch "
                    f"{hp['batch_size']}, {hp['n_epochs']} epochs), DuelSB3VecEnv({n})")
            rollouts = max(1, steps // per)
            add(f"duel ppo {side} {recipe} {n}", what, n,
                lambda r, side=side, recipe=recipe, k=rollouts: bench_duel_ppo(
                    side, recipe, "native", k, seed + r))
    _, hp, _ = duel_ppo_hp("greek", "shipped")
    n = int(hp["n_envs"])
    add(f"duel ppo greek shipped dummy {n}", f"MaskablePPO, duel_greek.yaml, DummyVecEnv of {n} "
        "Monitor(DuelGreekEnv())", n, lambda r: bench_duel_ppo("greek", "shipped", "dummy", 1, seed + r))


def paired_ratio(repeats: int, fn_a: Callable[[int], Timer], fn_b: Callable[[int], Timer]) -> dict:
    """``fn_a`` and ``fn_b`` run alternately ``repeats`` times (so both meet the same machine load);
    the median over the pairs of the ratio a / b of their steps/s, wall and CPU."""
    wall, cpu = [], []
    for r in range(repeats):
        a, b = fn_a(r), fn_b(r)
        wall.append(a[0] / b[0])
        cpu.append(a[1] / b[1])
    return {"wall": statistics.median(wall), "cpu": statistics.median(cpu), "runs_wall": wall}


def duel_paired_ratios(repeats: int, scale: float, seed: int) -> dict[str, dict]:
    """The duel targets as ratios of alternating runs: the engine against Pgx's Leduc, the built-in
    heuristic env against the SyncVectorEnv of single envs."""
    from thermopylae_env.duel.vector import DuelSelfPlayVectorEnv

    steps = max(10, int(200 * scale))
    out: dict[str, dict] = {}

    def engine(r: int) -> Timer:
        return bench_vector(DuelSelfPlayVectorEnv(8192), steps, seed + r, _duel_masks)

    def heuristic(r: int) -> Timer:
        return bench_vector(gym.make_vec("thermopylae/DuelGreek-v0", num_envs=8192), steps, seed + r,
                            _duel_masks)

    def sync(r: int) -> Timer:
        env = gym.make_vec("thermopylae/DuelGreek-v0", num_envs=64, vectorization_mode="sync")
        return bench_vector(env, max(3, int(100 * scale)), seed + r, _sync_masks)

    if importlib.util.find_spec("pgx") is not None and importlib.util.find_spec("jax") is not None:
        out["duel engine 8192 / pgx leduc 8192"] = paired_ratio(
            repeats, engine, lambda r: bench_pgx_leduc(8192, steps, seed + r))
    out["duel heuristic 8192 / duel sync 64"] = paired_ratio(repeats, heuristic, sync)
    for key, value in out.items():
        print(f"  paired {key}: {value['wall']:.2f}x wall, {value['cpu']:.2f}x cpu", flush=True)
    return out


def duel_ratios(rows: list[dict]) -> dict[str, float]:
    """Ratios between rows of this run (the targets of the duel vector engine)."""
    by = {r["name"]: r["steps_per_s"] for r in rows}
    engine = max((by[k] for k in by if k.startswith("duel engine 8192")), default=None)
    heuristic = max((by[k] for k in by if k.startswith("duel heuristic 8192")), default=None)
    out = {}
    if engine and "peer pgx leduc 8192" in by:
        out["duel engine 8192 (best) / pgx leduc 8192"] = engine / by["peer pgx leduc 8192"]
    if heuristic and "duel sync 64" in by:
        out["duel heuristic 8192 (best) / duel sync 64"] = heuristic / by["duel sync 64"]
    if engine and "peer rlcard leduc" in by:
        out["duel engine 8192 (best) / rlcard leduc"] = engine / by["peer rlcard leduc"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--repeats", type=int, default=None, help="runs per row (default 5, quick 2)")
    default_json = str(ROOT / "benchmarks" / "results" / "engine_speed.json")
    parser.add_argument("--json", default=default_json, help="where to write the JSON results")
    parser.add_argument("--markdown", default=None, help="also write the table as Markdown to this path")
    parser.add_argument("--skip-ppo", action="store_true", help="leave out the PPO rows")
    parser.add_argument("--ppo-only", action="store_true", help="only the PPO rows")
    parser.add_argument("--ppo-repeats", type=int, default=None, help="runs per PPO row (default 3, quick 1)")
    parser.add_argument("--single-only", action="store_true",
                        help="only the single-env rows (co-op, duel, the RLCard peer)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory", action="store_true",
                        help="also measure the resident memory per game of fresh processes")
    parser.add_argument("--memory-envs", type=int, default=10**6, help="games for --memory (default 10**6)")
    parser.add_argument("--memory-only", action="store_true", help="only the resident-memory rows")
    parser.add_argument("--duel-only", action="store_true", help="only the duel vector and peer rows")
    parser.add_argument("--duel-ppo", action="store_true", help="also the duel PPO learn() rows")
    args = parser.parse_args(argv)
    if args.memory_only:
        args.memory = True
    if args.single_only:
        args.skip_ppo = True
        if args.json == default_json:  # the full run's results stay where they are
            args.json = str(ROOT / "benchmarks" / "results" / "engine_speed_single.json")
    if args.duel_only:
        args.skip_ppo = True
    quick = args.quick
    repeats = args.repeats or (2 if quick else 5)
    scale = 0.1 if quick else 1.0

    rows: list[dict] = []
    load_start = _load()

    def add(name: str, what: str, n: int, fn: Callable[[int], tuple[float, float]]) -> None:
        result = median_of(repeats, fn)
        result.update({"name": name, "what": what, "num_envs": n})
        rows.append(result)
        print(f"  {name:<22} {result['steps_per_s']:>14,.0f} steps/s  "
              f"(cpu {result['cpu_steps_per_s']:,.0f})", flush=True)

    print(f"thermopylae-env benchmark ({'quick' if quick else 'full'}, median of {repeats})", flush=True)
    native_steps = {1: 3000, 64: 2000, 1024: 600, 8192: 150}
    if not (args.ppo_only or args.memory_only or args.duel_only):
        single_steps = int(20000 * scale)
        add("single raw", "CoopEnv called directly", 1,
            lambda r: bench_single(CoopEnv(), single_steps, args.seed + r))
        add("single make", 'gymnasium.make("thermopylae/Coop-v0")', 1,
            lambda r: bench_single(gym.make("thermopylae/Coop-v0"), single_steps, args.seed + r))
        if importlib.util.find_spec("rlcard") is not None:
            add("peer rlcard leduc", 'rlcard.make("leduc-holdem")', 1,
                lambda r: bench_rlcard_leduc(single_steps, args.seed + r))
            make, peer = rows[-2], rows[-1]
            print(f"  single make / rlcard leduc: {make['steps_per_s'] / peer['steps_per_s']:.2f}x wall, "
                  f"{make['cpu_steps_per_s'] / peer['cpu_steps_per_s']:.2f}x cpu", flush=True)
        else:
            print("  (rlcard not installed: the peer row is skipped; pip install thermopylae-env[bench])")
    if not (args.ppo_only or args.single_only or args.duel_only):
        add("sync 64", "SyncVectorEnv of 64 CoopEnv", 64,
            lambda r: bench_vector(gym.make_vec("thermopylae/Coop-v0", num_envs=64,
                                                vectorization_mode="sync"),
                                   max(3, int(300 * scale)), args.seed + r, _sync_masks))
        backends = []
        if importlib.util.find_spec("numba") is not None:
            backends.append("numba")
            CoopVectorEnv(2, backend="numba").reset(seed=0)  # compile or load the kernel outside the timer
        for backend in backends:
            for n, steps in native_steps.items():
                add(f"native {n} {backend}", f'CoopVectorEnv(num_envs={n}, backend="{backend}")', n,
                    lambda r, n=n, steps=steps, b=backend: bench_vector(
                        CoopVectorEnv(n, backend=b), max(10, int(steps * scale)), args.seed + r,
                        _native_masks))
            add(f"native 8192 {backend} copy=False",
                f'CoopVectorEnv(num_envs=8192, backend="{backend}", copy=False)', 8192,
                lambda r, b=backend: bench_vector(CoopVectorEnv(8192, backend=b, copy=False),
                                                  max(10, int(150 * scale)), args.seed + r, _native_masks))
        add("native 8192 copies alone", "obs.copy() and masks.copy() of 8192 games, nothing else", 8192,
            lambda r: bench_copies_alone(8192, max(10, int(150 * scale)), args.seed + r))

    ppo = None
    if not (args.skip_ppo or args.memory_only) and importlib.util.find_spec("sb3_contrib") is not None:
        rollouts = PPO_ROLLOUTS_QUICK if quick else PPO_ROLLOUTS
        ppo_repeats = args.ppo_repeats or (1 if quick else 3)
        config = ppo_config_summary()
        print(f"  PPO: {_ppo_config_line(config)}; {rollouts} rollouts per run", flush=True)
        ppo_rows, ratio = bench_ppo_rows(rollouts, ppo_repeats, args.seed)
        for row in ppo_rows:
            rows.append(row)
            print(f"  {row['name']:<22} {row['steps_per_s']:>14,.0f} steps/s  "
                  f"(cpu {row['cpu_steps_per_s']:,.0f}); collection {row['collect_steps_per_s']:,.0f} "
                  f"steps/s, train {row['train_s_per_rollout']:.2f} s per rollout "
                  f"({row['train_share']:.0%} of learn)",
                  flush=True)
        ppo = {"config": config, "rollouts_per_run": rollouts, "repeats": ppo_repeats,
               "adapter_over_dummy": ratio}
        print(f"  ppo adapter / dummy: {ratio['wall']:.2f}x (cpu {ratio['cpu']:.2f}x; collection alone "
              f"{ratio['collect_wall']:.2f}x)", flush=True)

    if args.ppo_only or args.memory_only:
        print("  (--ppo-only / --memory-only: environment and duel rows skipped)")
    elif (ROOT / "thermopylae_env" / "duel" / "env.py").exists():
        for env_id in ("thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"):
            add(f"duel {env_id.split('/')[1].replace('-v0', '')}", f'gymnasium.make("{env_id}")', 1,
                lambda r, env_id=env_id: bench_single(gym.make(env_id), int(5000 * scale), args.seed + r))
    else:
        print("  (thermopylae_env/duel/env.py not found: duel rows skipped)")
    if not (args.ppo_only or args.single_only or args.memory_only):
        add_duel_vector_rows(add, scale, args.seed)
        add_peer_rows(add, scale, args.seed, rlcard=args.duel_only)
        paired = duel_paired_ratios(repeats, scale, args.seed)
        if args.duel_ppo:
            add_duel_ppo_rows(add, quick, args.seed)
    else:
        paired = {}

    n_mem = max(native_steps)
    per_game: dict[str, float] = {}
    if not args.single_only:
        memory = CoopVectorEnv(n_mem).engine.memory()
        per_game = {key: value / n_mem for key, value in memory.items()}
        per_game["total"] = sum(per_game.values())
    resident = None
    if args.memory:
        resident = resident_memory_rows(args.memory_envs)

    print()
    _print_table(rows, per_game, n_mem)
    ratios = duel_ratios(rows)
    for key, value in ratios.items():
        print(f"  {key}: {value:.2f}x")
    if resident:
        _print_resident(resident)
    import datetime

    from thermopylae_agents.policies.provenance import git_commit

    result = {
        "benchmark": "thermopylae-env environment throughput",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(Path(__file__)),
        "mode": "quick" if quick else "full",
        "repeats": repeats,
        "timed": "env rows: env step (and single-env reset) only, random legal action sampling excluded; "
        "ppo rows: the whole learn() of the default co-op config",
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "gymnasium": gym.__version__,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_start": load_start,
            "load_average_end": _load(),
        },
        "ppo_only": args.ppo_only,
        "single_only": args.single_only,
        "rows": rows,
        "ppo": ppo,
        "native_memory_bytes_per_game": per_game,
        "native_memory_num_envs": n_mem,
        "duel_ratios": ratios,
        "duel_paired_ratios": paired,
        "resident_memory": resident,
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")
    if args.markdown:
        md = Path(args.markdown)
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(markdown_table(result), encoding="utf-8")
        print(f"wrote {md}")
    return 0


def markdown_table(result: dict) -> str:
    """The results of one run as a Markdown table (for the README's speed section)."""
    rows = result["rows"]
    single = next((r["steps_per_s"] for r in rows if r["name"] == "single raw"), None)
    machine = result["machine"]
    start, end = machine.get("load_average_start"), machine.get("load_average_end")
    load = ""
    if start and end:
        load = f", 1-minute load average {start[0]:.1f} at the start and {end[0]:.1f} at the end"
    what = "PPO rows only" if result.get("ppo_only") else f"Median of {result['repeats']} runs"
    lines = [
        f"{what} ({result['mode']} mode); numpy {machine['numpy']}, {machine['cpus']} CPUs{load}.",
        "",
        "| row | what | envs | steps/s (wall) | steps/s (CPU) | vs single raw |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        ratio = f"{r['steps_per_s'] / single:.1f}x" if single else ""
        lines.append(f"| {r['name']} | {r['what']} | {r['num_envs']} | {r['steps_per_s']:,.0f} | "
                     f"{r['cpu_steps_per_s']:,.0f} | {ratio} |")
    paired = result.get("duel_paired_ratios") or {}
    if paired:
        lines += ["", "Paired duel ratios (the two rows run alternately, median over the pairs):", ""]
        lines += [f"* {key}: {v['wall']:.2f}x wall-clock, {v['cpu']:.2f}x CPU time"
                  for key, v in paired.items()]
    ppo = result.get("ppo")
    if ppo:
        ratio = ppo["adapter_over_dummy"]
        lines += ["", "PPO rows: `agents/thermopylae_agents/configs/coop.yaml` "
                  f"({_ppo_config_line(ppo['config'])}), "
                  f"{ppo['rollouts_per_run']} rollouts per run, median of {ppo['repeats']}, "
                  "one torch thread.",
                  "",
                  "| row | learn steps/s (wall) | (CPU) | collection steps/s | train s per rollout "
                  "| train share |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in rows:
            if r["name"].startswith("ppo "):
                lines.append(f"| {r['name']} | {r['steps_per_s']:,.0f} | {r['cpu_steps_per_s']:,.0f} | "
                             f"{r['collect_steps_per_s']:,.0f} | {r['train_s_per_rollout']:.2f} | "
                             f"{r['train_share']:.0%} |")
        lines += ["", f"Adapter / DummyVecEnv: {ratio['wall']:.2f}x wall, {ratio['cpu']:.2f}x CPU "
                  f"(collection alone {ratio['collect_wall']:.2f}x)."]
    mem = result["native_memory_bytes_per_game"]
    if mem:
        lines += ["", f"Co-op native engine arrays per game (N = {result['native_memory_num_envs']}): "
                  + ", ".join(f"{key} {value:.0f} B" for key, value in mem.items()) + "."]
    resident = result.get("resident_memory")
    if resident:
        lines += ["", "Resident memory a user's process holds per game (fresh process, after reset and "
                  f"{resident[0]['steps']} steps):", "",
                  "| env | games | resident growth per game | peak growth per game |",
                  "| --- | ---: | ---: | ---: |"]
        for r in resident:
            lines.append(f"| {r['env']} | {r['num_envs']:,} | {r['rss_bytes_per_game']:,.0f} B | "
                         f"{r['peak_rss_bytes_per_game']:,.0f} B |")
    return "\n".join(lines) + "\n"


_RESIDENT_PROBE = """
import json, resource, sys
import numpy as np
sys.path.insert(0, {root!r})
import gymnasium
import thermopylae_env
from thermopylae_env.coop.vector import CoopVectorEnv
{extra_import}
CoopVectorEnv(2).reset(seed=0)  # the kernel compiled or loaded, before the first reading


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


n = {n}
base, base_peak = rss(), peak()
env = {make}
{reset}
rng = np.random.default_rng(0)
for _ in range({steps}):
    masks = env.action_masks()
    actions = (rng.random(masks.shape, dtype=np.float32) * masks).argmax(axis=1)
    env.step(actions)
print(json.dumps({{"rss": rss() - base, "peak": peak() - base_peak}}))
"""


def resident_memory_rows(n: int, steps: int = 5) -> list[dict]:
    """Resident-set growth per game of a fresh process holding each vector env of ``n`` games (Linux)."""
    import subprocess

    kinds = [("CoopVectorEnv", "", "CoopVectorEnv(n)", "env.reset(seed=0)")]
    if importlib.util.find_spec("stable_baselines3") is not None:
        kinds.append(("CoopSB3VecEnv", "from thermopylae_env.coop.sb3 import CoopSB3VecEnv",
                      "CoopSB3VecEnv(n, seed=0)", "env.reset()"))
    rows = []
    for name, extra, make, reset in kinds:
        code = _RESIDENT_PROBE.format(root=str(ROOT), extra_import=extra, n=n, make=make, reset=reset,
                                      steps=steps)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"env": name, "num_envs": n, "steps": steps, "rss_bytes_per_game": got["rss"] / n,
                     "peak_rss_bytes_per_game": got["peak"] / n})
        print(f"  resident {name:<16} N={n:,}: {got['rss'] / n:,.0f} B per game "
              f"(peak growth {got['peak'] / n:,.0f} B)", flush=True)
    return rows


def _print_resident(resident: list[dict]) -> None:
    for r in resident:
        print(f"resident memory per game, {r['env']} at N={r['num_envs']:,}: "
              f"{r['rss_bytes_per_game']:,.0f} B (peak growth {r['peak_rss_bytes_per_game']:,.0f} B)")


def _load() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (other processes share the CPUs), where the OS tells."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _print_table(rows: list[dict], per_game: dict, n_mem: int) -> None:
    single = next((r["steps_per_s"] for r in rows if r["name"] == "single raw"), None)
    header = ("row", "num_envs", "steps/s (wall)", "steps/s (cpu)", "vs single raw")
    lines = []
    for r in rows:
        ratio = f"{r['steps_per_s'] / single:.1f}x" if single else ""
        wall, cpu = f"{r['steps_per_s']:,.0f}", f"{r['cpu_steps_per_s']:,.0f}"
        lines.append((r["name"], str(r["num_envs"]), wall, cpu, ratio))
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="environment steps per second (median)")
        for i, name in enumerate(header):
            table.add_column(name, justify="left" if i == 0 else "right")
        for line in lines:
            table.add_row(*line)
        Console().print(table)
    except ImportError:
        widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
        print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
        for line in lines:
            print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))
    if per_game:
        parts = ", ".join(f"{key} {value:.0f} B" for key, value in per_game.items())
        print(f"native engine memory per game at N={n_mem}: {parts}")


if __name__ == "__main__":
    raise SystemExit(main())
