"""The engine's and the fast learner's steps per second on a GPU, beside the same on this machine's CPU.

    python benchmarks/device_speed.py                     # on a machine with CUDA: about two minutes
    python benchmarks/device_speed.py --device cpu --rollouts 2      # the same script on the CPU alone

A developer script for a lent accelerator, not a test and nothing CI needs. It prints one table and writes
``benchmarks/results/device_speed.json`` (``--json``). Rows:

* ``engine``: the co-op vector engine (numba, on the CPU cores) stepping ``--games`` games with random
  legal actions, for the CPU threads the machine has: what any learner's collection is bounded by;
* ``fast <device> <games>x<steps>``: ``learn()`` of the fast learner (the co-op config's fast recipe,
  with the rollout shapes of ``--shapes``) with its network on ``<device>`` (the engine stays on the CPU;
  observations go to the device each step), after one warm-up rollout.

What to expect (the shape of the output, not its numbers): a table with one ``engine`` row and one row
per device and shape, each with env steps per second, seconds per rollout and, for the learner, the share
of its time spent collecting; on a GPU the update's share falls as the games per step grow, until
collection on the CPU (the engine and the per-step transfers) is what remains.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def engine_speed(games: int, steps: int, seed: int = 0) -> dict[str, Any]:
    """Steps per second of the co-op vector engine with random legal actions (step time only)."""
    import numpy as np

    from thermopylae_env.coop.vector import CoopVectorEnv

    env = CoopVectorEnv(num_envs=games, autoreset_mode="SameStep")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    env.step((rng.random((games, 72)) * env.action_masks()).argmax(1))  # the compiled kernel loads
    spent = 0.0
    for _ in range(steps):
        actions = (rng.random((games, 72)) * env.action_masks()).argmax(1)
        start = time.perf_counter()
        env.step(actions)
        spent += time.perf_counter() - start
    env.close()
    return {"row": f"engine cpu {games}", "steps_per_s": games * steps / spent}


def learner_speed(device: str, games: int, steps: int, rollouts: int, seed: int = 0) -> dict[str, Any]:
    """``learn()`` of the fast learner with its network on ``device``."""
    from thermopylae_agents.training import config as cfg
    from thermopylae_agents.training.envs import build_vec_env
    from thermopylae_agents.training.ppo import build_model
    from thermopylae_agents.training.runs import setup_torch

    data = cfg.resolve_config("coop", learner="fast", n_envs=games, device=device)
    hp = cfg.Config(data[cfg.COOP_ID])
    setup_torch(seed)
    import os

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    env = build_vec_env(cfg.COOP_ID, hp.plain("env_kwargs", {}), games, seed, "native")
    # The recipe's network, batch and epochs; the games and steps of the row.
    model = build_model("maskable_ppo", env, cfg.Config(hp.to_dict() | {"n_steps": steps}), seed, None,
                        device)
    spent = {"collect": 0.0}
    original = model.collect_rollouts

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent["collect"] += time.perf_counter() - start

    model.learn(games * steps)  # warm-up: kernels, allocator, the device's libraries
    model.collect_rollouts = timed
    before = model.num_timesteps
    start = time.perf_counter()
    model.learn(rollouts * games * steps, reset_num_timesteps=False)
    wall = time.perf_counter() - start
    env.close()
    done = model.num_timesteps - before
    return {"row": f"fast {device} {games}x{steps}", "steps_per_s": done / wall,
            "seconds_per_rollout": wall / rollouts, "collect_share": spent["collect"] / wall,
            "precision": getattr(model, "precision", "float32")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cuda (default where there is one) or cpu")
    parser.add_argument("--games", type=int, default=8192, help="games of the engine row")
    parser.add_argument("--shapes", nargs="+", default=["1024x16", "4096x16", "16384x4"],
                        help="games x steps of the learner rows")
    parser.add_argument("--rollouts", type=int, default=5, help="timed rollouts per learner row")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "device_speed.json")
    args = parser.parse_args(argv)
    from thermopylae_agents.training.kernels import pin_kernels

    pin_kernels()
    from thermopylae_env.threads import configure_environment

    configure_environment()  # passive OpenMP waiting: before torch loads its OpenMP runtime
    import torch

    from thermopylae_agents.policies.provenance import Measurement
    from thermopylae_agents.training.fast_ppo import reuse_freed_memory

    reuse_freed_memory()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    clock = Measurement()
    rows = [engine_speed(args.games, 50)]
    for shape in args.shapes:
        games, steps = (int(x) for x in shape.split("x"))
        for where in dict.fromkeys([device, "cpu"]):
            rows.append(learner_speed(where, games, steps, args.rollouts))
            print(f"{rows[-1]['row']}: {rows[-1]['steps_per_s']:,.0f} steps/s", flush=True)
    print(f"{'row':<28} {'steps/s':>12} {'s/rollout':>10} {'collecting':>11}")
    for row in rows:
        share = f"{row['collect_share']:.0%}" if "collect_share" in row else ""
        per = f"{row['seconds_per_rollout']:.3f}" if "seconds_per_rollout" in row else ""
        print(f"{row['row']:<28} {row['steps_per_s']:>12,.0f} {per:>10} {share:>11}")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    doc = {"title": "Engine and fast learner steps per second on an accelerator and on the CPU",
           **clock.header(__file__, argv), "device": device, "gpu": gpu, "torch": torch.__version__,
           "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
