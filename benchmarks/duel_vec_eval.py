"""Paired evaluation on the native vector duel engine: every player of one side against the other side's
built-in heuristic on the same 10,000 game keys (seeds 0..9999, first game of each key), greedy players.

``python benchmarks/duel_vec_eval.py [GAMES]`` (default 10,000) with the previous shipped files copied to
``runs/old_policies/`` and the new runs in ``runs/``; writes ``runs/duel_vec_eval.json``. The built-in
heuristic of the engine is the compiled twin of the Python heuristics, checked move for move; the game
streams are the engine's, not those of ``scripts/evaluate.py``'s single envs.
"""

import json
import sys
import time

from thermopylae_env.threads import configure_environment

# The thread settings of the package's entry points (passive OpenMP waiting, one OpenBLAS thread), as the
# measurements were taken: before torch is imported or a parallel kernel runs, whose OpenMP runtime reads
# them once, when it loads.
configure_environment()

import numpy as np  # noqa: E402
from sb3_contrib import MaskablePPO  # noqa: E402

from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval  # noqa: E402
from thermopylae_agents.policies.frozen_policy import FrozenPolicy  # noqa: E402
from thermopylae_env.duel.vector import DuelGreekVectorEnv, DuelPersianVectorEnv  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
OLD, RUNS = "runs/old_policies", "runs"
PLAYERS = {
    "greek": {"heuristic": None,
              "PPO Greek (previous)": f"{OLD}/duel_greek_maskable_ppo.zip",
              "PPO Greek (new)": f"{RUNS}/duel-greek_fast_s0/final_policy.zip",
              "self-play Greek (previous)": f"{OLD}/selfplay_greek_maskable_ppo.zip",
              "self-play Greek (new)": f"{RUNS}/selfplay_fast_s0/final_greek_policy.zip"},
    "persian": {"heuristic": None,
                "PPO Persian (previous)": f"{OLD}/duel_persian_maskable_ppo.zip",
                "PPO Persian (new)": f"{RUNS}/duel-persian_fast_s0/final_policy.zip",
                "self-play Persian (previous)": f"{OLD}/selfplay_persian_maskable_ppo.zip",
                "self-play Persian (new)": f"{RUNS}/selfplay_fast_s0/final_persian_policy.zip"},
}


def play(side, path):
    env = (DuelGreekVectorEnv if side == "greek" else DuelPersianVectorEnv)(N, opponent="heuristic")
    player = None if path is None else FrozenPolicy(MaskablePPO.load(path, device="cpu"))
    obs, info = env.reset(seed=0)
    won = np.zeros(N, bool)
    finished = np.zeros(N, bool)
    while not finished.all():
        mask = info["action_mask"]
        live = np.flatnonzero(mask.any(axis=1))
        acts = np.zeros(N, np.int64)
        if player is None:
            acts[live] = env.engine.heuristic_actions(live)
        else:
            acts[live] = player.act_batch(obs[live], mask[live])
        obs, rew, term, trunc, info = env.step(acts)
        new = term & ~finished
        won[new] = rew[new] > 0
        finished |= term
    return won


out = {}
for side, players in PLAYERS.items():
    t = time.time()
    wins = {name: play(side, path) for name, path in players.items()}
    print(f"{side}: {N} games per player vs the other side's heuristic ({time.time() - t:.0f} s)")
    for name, w in wins.items():
        lo, hi = wilson_interval(int(w.sum()), N)
        print(f"  {name:30s} {w.mean():.2%} [{lo:.2%}, {hi:.2%}]")
    names = list(wins)
    pairs = []
    for a, b in [(n, "heuristic") for n in names[1:]] + [(names[2], names[1]), (names[4], names[3])]:
        c = paired_comparison(a, wins[a].tolist(), b, wins[b].tolist())
        print(f"  {a} - {b}: {c.difference:+.2%} [{c.ci95[0]:+.2%}, {c.ci95[1]:+.2%}], "
              f"only A {c.only_a}, only B {c.only_b}, McNemar p = {c.p_value:.3g}")
        pairs.append(c.summary())
    out[side] = {"games": N, "seeds": [0, N - 1],
                 "players": {n: {"path": players[n], "wins": int(w.sum()), "win_rate": float(w.mean())}
                             for n, w in wins.items()}, "paired": pairs}
with open("runs/duel_vec_eval.json", "w", encoding="utf-8") as handle:
    json.dump(out, handle, indent=1)
