"""How good is a trained best response? On reduced duels, the exact best response against the heuristic Greek
next to what a short MaskablePPO best response reaches.

For each member (default ``small`` and ``medium``): the exact best-response Persian's win rate against
``HeuristicGreek`` (whole tree, ``thermopylae_agents.gametheory``), and MaskablePPO Persians trained
against it with the hyperparameters of ``thermopylae exploitability`` (``training/best_response.py``:
128-128 tanh, 3e-4, gamma 1, GAE 0.95, 4 epochs, entropy 0.003) on ``DuelPersianEnv(config=...)`` (the
reference engine; the vector engine plays the full game only), without the warm start (it needs the
vector engine), evaluated at ``--curve-points`` points on the same ``--eval-games`` deals (most likely
legal action), each with a 95% Wilson interval.

    .venv/bin/python benchmarks/trained_br_small_duels.py                       # writes the JSON
    .venv/bin/python benchmarks/trained_br_small_duels.py --members small --budget 20000 --out /tmp/br.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "agents"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from thermopylae_agents.evaluation.stats import wilson_interval  # noqa: E402
from thermopylae_agents.gametheory.cfr import Evaluator, best_response  # noqa: E402
from thermopylae_agents.gametheory.exact_exploitability import player_profile  # noqa: E402
from thermopylae_agents.gametheory.tree import build_tree  # noqa: E402
from thermopylae_agents.policies.provenance import Measurement  # noqa: E402
from thermopylae_env.duel.config import SMALL_DUELS, DuelConfig  # noqa: E402
from thermopylae_env.duel.env import DuelPersianEnv  # noqa: E402
from thermopylae_env.duel.layout import GREEK, PERSIAN  # noqa: E402
from thermopylae_env.threads import configure_environment  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "duel_small_trained_br.json"
EVAL_SEED = 1_000_000_007


def exact_persian_best_response(config: DuelConfig) -> dict:
    tree = build_tree(config)
    greek_value = best_response(Evaluator(tree), player_profile(tree, "heuristic", GREEK), PERSIAN)[1]
    return {"greek_return": greek_value, "persian_win_rate": (1.0 - greek_value) / 2.0}


def evaluate(model, config: DuelConfig, games: int) -> dict:
    env = DuelPersianEnv(config=config)
    wins = 0
    for g in range(games):
        obs, _ = env.reset(seed=EVAL_SEED + g)
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, reward, done, _, _ = env.step(int(action))
        wins += reward > 0
    low, high = wilson_interval(int(wins), games)
    return {"timesteps": int(model.num_timesteps), "win_rate": wins / games, "ci95": [low, high],
            "games": games}


def trained_best_response(config: DuelConfig, budget: int, seed: int, num_envs: int, points: int,
                          games: int) -> dict:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    started = time.perf_counter()
    env = DummyVecEnv([lambda: DuelPersianEnv(config=config) for _ in range(num_envs)])
    env.seed(seed)
    n_steps = max(8, min(256, budget // num_envs))
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=n_steps, batch_size=min(1024, n_steps * num_envs), n_epochs=4,
        learning_rate=3e-4, gamma=1.0, gae_lambda=0.95, ent_coef=0.003, seed=seed, verbose=0,
        policy_kwargs={"net_arch": [128, 128], "activation_fn": torch.nn.Tanh},
    )
    curve = [evaluate(model, config, games)]
    for k in range(points):
        model.learn(round(budget * (k + 1) / points) - model.num_timesteps, reset_num_timesteps=False)
        curve.append(evaluate(model, config, games))
    return {"seed": seed, "seconds": round(time.perf_counter() - started, 1), "curve": curve,
            "final": curve[-1]}


def run(argv: list[str] | None = None) -> int:
    # The thread settings of the package's entry points (passive OpenMP waiting, one OpenBLAS thread), as
    # the measurements were taken: before torch is imported or a parallel kernel runs, whose OpenMP
    # runtime reads them once, when it loads.
    configure_environment()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", nargs="*", default=["small", "medium"], choices=list(SMALL_DUELS))
    parser.add_argument("--budget", type=int, default=100_000, help="environment steps per best response")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--curve-points", type=int, default=4)
    parser.add_argument("--eval-games", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if min(args.budget, args.num_envs, args.curve_points, args.eval_games) < 1:
        parser.error("--budget, --num-envs, --curve-points and --eval-games must be at least 1")
    import torch

    torch.set_num_threads(1)
    measurement = Measurement()
    members = []
    for name in args.members:
        config = SMALL_DUELS[name]
        exact = exact_persian_best_response(config)
        runs = []
        for seed in args.seeds:
            runs.append(trained_best_response(config, args.budget, seed, args.num_envs, args.curve_points,
                                              args.eval_games))
            print(f"{name} seed {seed}: trained {runs[-1]['final']['win_rate']:.3f}, exact "
                  f"{exact['persian_win_rate']:.3f}", flush=True)
        members.append({"member": name, "config": config.to_dict(), "exact_best_response": exact,
                        "trained_best_responses": runs,
                        "gap_mean": float(exact["persian_win_rate"]
                                          - np.mean([r["final"]["win_rate"] for r in runs]))})
    doc = {
        "title": "Trained best responses against the heuristic Greek next to the exact one, on reduced duels",
        "method": ("exact: the Persian's best response to HeuristicGreek (member's hand limit) on the whole "
                   "tree, information sets respected; trained: MaskablePPO with the hyperparameters of "
                   "training/best_response.py, no warm start, DummyVecEnv of DuelPersianEnv(config), "
                   "most-likely-legal-action win rate on the same evaluation deals at each curve point"),
        "budget": args.budget, "num_envs": args.num_envs, "eval_games": args.eval_games,
        **measurement.header(__file__, argv),
        "members": members,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
