"""How exploitable is a duel player, measured by training: train a best response against it and report how
often it wins (the measurement behind ``thermopylae exploitability`` on the full game; the exact
exploitability of a reduced duel is [`thermopylae_agents.gametheory.exact_exploitability`][]).

Usage:

    thermopylae exploitability heuristic --side persian             # best-response Greek vs it
    thermopylae exploitability duel_persian_maskable_ppo --side persian --budget 2000000
    thermopylae exploitability path/to/model.zip --side greek --seeds 0 1 2 --out out.json
    thermopylae exploitability --table --out benchmarks/results/exploitability.json \
        --markdown benchmarks/results/exploitability.md                           # every shipped duel player

``POLICY`` is the frozen player: ``heuristic``, ``random``, a shipped policy by name (its pickle-free
``.json``/``.safetensors`` weights, through [`thermopylae_agents.policies.registry`][]), the path of such a
``.json``, or
the path of a saved (Maskable)PPO model (a pickle: played through ``fast:``, its NumPy actor copy);
``--side`` is the side it plays. For each seed a best response of the other side (MaskablePPO, 128-128
tanh, the hyperparameters of the shipped duel configs, on the native vector duel engine:
``thermopylae_env.duel.sb3.DuelSB3VecEnv`` with the frozen player inside ``step``, one batched call
per round) starts from a clone of its own side's heuristic (``--warm-start heuristic``, the default:
behaviour cloning on ``--bc-games`` games of that heuristic against the frozen player, as the shipped duel
policies were started; without it a fresh policy almost never wins against a good player and learns
nothing) and is trained for a fixed ``--budget`` of environment steps. After the warm start and at
``--curve-points`` evenly spaced points (the last at the end of the budget) it plays ``--eval-games``
fresh games against the frozen player (its most likely legal action; the same evaluation deals for every
seed and point) and its win rate is recorded with a 95% Wilson interval. The report: the learning curve
of each seed, the final win rate of each seed, all seeds' final games pooled, and the reference: how often
the best response's side's heuristic beats the frozen player on the same evaluation deals. A player that
a best response beats more often is more exploitable.

``--table`` runs this for every shipped duel player and both heuristics, with random as a sanity row
(``--policies`` to choose), and writes the JSON and a Markdown table.

A model ``.zip`` is a pickle: load only files you trust. Nothing here retrains a shipped policy.
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from thermopylae_agents.evaluation.duel_batch import HeuristicPlayer, PolicyPlayer, batched_player
from thermopylae_agents.evaluation.stats import seed_aggregate, wilson_interval
from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.policies.provenance import git_commit
from thermopylae_env.duel.layout import GREEK, PERSIAN
from thermopylae_env.duel.vector import DuelVectorEnv
from thermopylae_env.threads import configure_torch

SIDES = {"greek": GREEK, "persian": PERSIAN}
SIDE_NAMES = ("greek", "persian")
EVAL_SEED = 1_000_000_007  # evaluation deals, apart from every training seed
BC_SEED = 2_000_000_011  # warm-start deals: BC_SEED + 100,000 x seed + i
TABLE_PLAYERS = (
    ("random", "greek"), ("heuristic", "greek"),
    ("duel_greek_maskable_ppo", "greek"), ("selfplay_greek_maskable_ppo", "greek"),
    ("random", "persian"), ("heuristic", "persian"),
    ("duel_persian_maskable_ppo", "persian"), ("selfplay_persian_maskable_ppo", "persian"),
)


def frozen_player(spec: str, side: int = PERSIAN) -> Any:
    """``heuristic`` / ``random`` as they are (compiled inside the engine), else a batched policy player
    ([`thermopylae_agents.evaluation.duel_batch.PolicyPlayer`][]) loaded through the registry; a ``.zip``
    model
    path is played through its NumPy actor copy (``fast:``)."""
    if spec in ("heuristic", "random"):
        return spec
    if spec.endswith(".zip") and not spec.startswith("fast:"):
        spec = "fast:" + spec
    player = batched_player(spec, side)
    return player


def play_against(player: Any, side: int, opponent: Any, games: int, seed: int,
                 record: bool = False) -> tuple[np.ndarray, Any]:
    """``player`` (a batched player of ``side``) against ``opponent`` (the env's opponent: ``heuristic``,
    ``random`` or an ``act_batch`` object), game ``i`` from seed ``seed + i``, each game once. Returns each
    game's win (bool) and, with ``record``, the player's decisions as
    [`thermopylae_agents.training.imitation.ExpertData`][] (returns: the game's final reward, gamma 1)."""
    env = DuelVectorEnv(games, opponent=opponent, side=side)
    obs, _ = env.reset(seed=seed)
    wins = np.zeros(games, bool)
    done = np.zeros(games, bool)
    reward = np.zeros(games, np.float32)
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    while not done.all():
        masks = env.action_masks()
        actions = masks.argmax(axis=1)  # finished rows: their autoreset games are not counted
        rows = np.flatnonzero(~done).astype(np.int64)
        chosen = np.asarray(player.actions(env.engine, rows, obs[rows], masks[rows]), np.int64)
        actions[rows] = chosen
        if record:
            seen.append((rows, obs[rows].copy(), masks[rows], chosen))
        obs, rewards, term, _, info = env.step(actions)
        newly = term & ~done
        if "illegal_action" in info and (newly & info["illegal_action"]).any():
            g = int(np.flatnonzero(newly & info["illegal_action"])[0])
            raise RuntimeError(f"game {g}: {player.name} chose an illegal action: "
                               f"{info['illegal_reason'][g]}")
        wins |= newly & (rewards > 0)
        reward[newly] = rewards[newly]
        done |= term
    env.close()
    if not record:
        return wins, None
    from thermopylae_agents.training.imitation import ExpertData  # extra: train

    rows = np.concatenate([r for r, _, _, _ in seen])
    return wins, ExpertData(
        observations=np.concatenate([o for _, o, _, _ in seen]).astype(np.float32),
        masks=np.concatenate([m for _, _, m, _ in seen]).astype(bool),
        actions=np.concatenate([a for _, _, _, a in seen]).astype(np.int64),
        returns=reward[rows].astype(np.float32), episodes=games, wins=int(wins.sum()))


def _point(wins: np.ndarray, timesteps: int) -> dict:
    n, k = int(wins.size), int(wins.sum())
    low, high = wilson_interval(k, n)
    return {"timesteps": int(timesteps), "wins": k, "games": n, "win_rate": k / n, "ci95": [low, high]}


def clone_heuristic(model: Any, side: int, opponent: Any, games: int, epochs: int, seed: int) -> dict:
    """Behaviour cloning of ``side``'s heuristic (its games against ``opponent`` on the vector engine) into
    ``model``: the best response's warm start (the config-driven warm start of the training pipeline is
    [`thermopylae_agents.training.imitation.warm_start`][])."""
    from thermopylae_agents.training.imitation import agreement, behaviour_cloning  # extra: train

    _, data = play_against(HeuristicPlayer(), side, opponent, games, BC_SEED + 100_000 * seed, record=True)
    history = behaviour_cloning(model.policy, data, epochs=epochs, batch_size=1024, learning_rate=1e-3,
                                value_coef=0.5, seed=seed)
    return {"games": games, "decisions": len(data), "epochs": epochs, "heuristic_wins": data.wins,
            "final_epoch": history[-1] if history else None, "agreement": agreement(model.policy, data)}


def best_response(opponent: Any, side: int, budget: int, seed: int, num_envs: int, points: int,
                  eval_games: int, warm: str = "heuristic", bc_games: int = 4000,
                  bc_epochs: int = 10, keep_model: bool = False) -> dict:
    """Train one best response of ``side`` against ``opponent``; its learning curve (and, with
    ``keep_model``, the trained model under ``"model"``, for callers that freeze it as an opponent)."""
    import torch  # extra: train
    from sb3_contrib import MaskablePPO  # extra: train
    from stable_baselines3.common.callbacks import BaseCallback  # extra: train

    from thermopylae_env.duel.sb3 import DuelSB3VecEnv  # extra: train

    configure_torch(1)  # small networks on a shared machine: one thread is as fast and leaves a core
    start = time.perf_counter()
    env = DuelSB3VecEnv(num_envs, side=side, opponent=opponent, seed=seed)
    n_steps = max(8, min(256, budget // num_envs))
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=n_steps, batch_size=min(1024, n_steps * num_envs), n_epochs=4,
        learning_rate=3e-4, gamma=1.0, gae_lambda=0.95, ent_coef=0.003, seed=seed, verbose=0,
        policy_kwargs={"net_arch": [128, 128], "activation_fn": torch.nn.Tanh},
    )
    bc = clone_heuristic(model, side, opponent, bc_games, bc_epochs, seed) if warm == "heuristic" else None
    marks = [round(budget * (k + 1) / points) for k in range(points)]
    curve: list[dict] = []

    def evaluate() -> None:
        player = PolicyPlayer(FrozenPolicy(model, name="best-response"), "best-response")
        wins, _ = play_against(player, side, opponent, eval_games, EVAL_SEED)
        curve.append(_point(wins, model.num_timesteps))

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            while len(curve) < len(marks) and self.num_timesteps >= marks[len(curve) - 1]:
                evaluate()
            return True

    evaluate()  # after the warm start, before PPO
    model.learn(budget, callback=Curve())
    evaluate()
    result = {"seed": seed, "seconds": time.perf_counter() - start, "warm_start": bc, "curve": curve,
              "final": curve[-1]}
    if keep_model:
        result["model"] = model
    return result


def reference(opponent: Any, side: int, eval_games: int) -> dict:
    """How often ``side``'s heuristic beats ``opponent`` on the evaluation deals."""
    wins, _ = play_against(HeuristicPlayer(), side, opponent, eval_games, EVAL_SEED)
    return _point(wins, 0) | {"player": "heuristic", "side": SIDE_NAMES[side]}


def run(policy: str, side: str, budget: int, seeds: list[int], num_envs: int, points: int,
        eval_games: int, warm: str = "heuristic", bc_games: int = 4000, bc_epochs: int = 10) -> dict:
    """The whole measurement (see the module docstring), as a JSON-ready dict."""
    if side not in SIDES:
        raise ValueError(f"--side must be greek or persian, got {side!r}")
    if len(seeds) < 1 or budget < 1 or points < 1 or eval_games < 1 or bc_games < 1 or bc_epochs < 1:
        raise ValueError("need at least one seed, a positive budget, curve points, evaluation games and "
                         "warm-start games and epochs")
    if warm not in ("heuristic", "none"):
        raise ValueError(f"--warm-start must be heuristic or none, got {warm!r}")
    opponent = frozen_player(policy, SIDES[side])
    br_side = 1 - SIDES[side]
    runs = [best_response(opponent, br_side, budget, s, num_envs, points, eval_games, warm, bc_games,
                          bc_epochs) for s in seeds]
    wins = sum(r["final"]["wins"] for r in runs)
    games = sum(r["final"]["games"] for r in runs)
    low, high = wilson_interval(wins, games)
    return {
        "frozen_player": policy, "frozen_side": side, "best_response_side": SIDE_NAMES[br_side],
        "budget_timesteps": budget, "seeds": seeds, "num_envs": num_envs, "eval_games": eval_games,
        "eval_seed": EVAL_SEED, "warm_start": warm, "bc_games": bc_games, "bc_epochs": bc_epochs,
        "runs": runs, "pooled_final": {"wins": wins, "games": games, "win_rate": wins / games,
                                       "ci95": [low, high]},
        # The spread between seeds, which the pooled games' interval does not show.
        "across_seeds": seed_aggregate([r["final"]["win_rate"] for r in runs]).summary(),
        "reference": reference(opponent, br_side, eval_games),
    }


# --------------------------------------------------------------------------------------------- the table
def run_table(players: list[tuple[str, str]], budget: int, seeds: list[int], num_envs: int, points: int,
              eval_games: int, warm: str = "heuristic", bc_games: int = 4000, bc_epochs: int = 10,
              log: Any = print) -> dict:
    """[`run`][thermopylae_agents.training.best_response.run] for every ``(player, side)``, with the
    configuration and the machine's load."""
    start = time.perf_counter()
    commit = git_commit()  # the code and policy files the run starts from
    rows = []
    for policy, side in players:
        row = run(policy, side, budget, seeds, num_envs, points, eval_games, warm, bc_games, bc_epochs)
        rows.append(row)
        log(summary_line(row))
    return {
        "title": "duel exploitability: best-response win rate against each frozen player",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit, "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "config": {"budget_timesteps": budget, "seeds": seeds, "num_envs": num_envs, "curve_points": points,
                   "eval_games": eval_games, "eval_seed": EVAL_SEED, "warm_start": warm, "bc_games": bc_games,
                   "bc_epochs": bc_epochs},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None},
        "seconds": time.perf_counter() - start, "rows": rows,
    }


def _pct(p: dict) -> str:
    return f"{p['win_rate']:.2%} [{p['ci95'][0]:.2%}, {p['ci95'][1]:.2%}]"


def summary_line(row: dict) -> str:
    seeds = ", ".join(f"{r['final']['win_rate']:.2%}" for r in row["runs"])
    return (f"{row['frozen_player']} ({row['frozen_side']}): best response {_pct(row['pooled_final'])} "
            f"(seeds {seeds}); {row['best_response_side']} heuristic {_pct(row['reference'])}")


def compare(a: dict, b: dict) -> str:
    """``lower`` / ``higher`` when ``a``'s interval lies wholly below / above ``b``'s, else ``level``."""
    if a["ci95"][1] < b["ci95"][0]:
        return "lower"
    if a["ci95"][0] > b["ci95"][1]:
        return "higher"
    return "level"


def _across_seeds(row: dict) -> str:
    """IQM of the seeds' final win rates with its stratified bootstrap interval (computed here when an
    older document lacks ``across_seeds``)."""
    agg = row.get("across_seeds") or seed_aggregate([r["final"]["win_rate"] for r in row["runs"]]).summary()
    if agg["iqm_ci95"] is None:
        return f"{agg['iqm']:.2%} (one seed)"
    return f"{agg['iqm']:.2%} [{agg['iqm_ci95'][0]:.2%}, {agg['iqm_ci95'][1]:.2%}]"


def _curve(row: dict) -> str:
    """The mean learning curve over the seeds: ``k steps: rate`` at each evaluation point."""
    points = zip(*(r["curve"] for r in row["runs"]), strict=True)
    return " → ".join(f"{round(np.mean([p['timesteps'] for p in group]), -3) / 1000:.0f}k: "
                      f"{100 * np.mean([p['win_rate'] for p in group]):.1f}" for group in points)


def table_markdown(doc: dict) -> str:
    """The Markdown table of [`run_table`][thermopylae_agents.training.best_response.run_table]'s document,
    with a verdict per learned player."""
    cfg = doc["config"]
    seeds = cfg["seeds"]
    lines = [
        f"Best response: MaskablePPO, warm start `{cfg['warm_start']}` ({cfg['bc_games']} games, "
        f"{cfg['bc_epochs']} epochs), {cfg['budget_timesteps']:,} steps, {cfg['num_envs']} envs, seeds "
        f"{', '.join(map(str, seeds))}; {cfg['eval_games']} evaluation games per seed (deals "
        f"{cfg['eval_seed']} + i, the same for every row). {doc['date']}, commit {doc['commit']}, "
        f"{doc['seconds'] / 60:.0f} min.",
        "",
        "| frozen player | side | " + " | ".join(f"BR seed {s}" for s in seeds)
        + " | BR pooled [95%] | BR IQM of seeds [95% bootstrap] | other side's heuristic vs it [95%] "
        "| BR curve, mean of seeds (%) |",
        "| --- | --- | " + " | ".join("---:" for _ in seeds) + " | --- | --- | --- | --- |",
    ]
    for row in doc["rows"]:
        per_seed = " | ".join(f"{r['final']['win_rate']:.2%}" for r in row["runs"])
        lines.append(f"| {row['frozen_player']} | {row['frozen_side']} | {per_seed} | "
                     f"{_pct(row['pooled_final'])} | {_across_seeds(row)} | {_pct(row['reference'])} | "
                     f"{_curve(row)} |")
    verdicts = []
    heuristic = {row["frozen_side"]: row for row in doc["rows"] if row["frozen_player"] == "heuristic"}
    for row in doc["rows"]:
        if row["frozen_player"] in ("heuristic", "random") or row["frozen_side"] not in heuristic:
            continue
        word = compare(row["pooled_final"], heuristic[row["frozen_side"]]["pooled_final"])
        text = {"lower": "less exploitable than", "higher": "more exploitable than",
                "level": "level with (intervals overlap)"}[word]
        verdicts.append(f"- `{row['frozen_player']}` is {text} the {row['frozen_side']} heuristic: best "
                        f"response {_pct(row['pooled_final'])} against "
                        f"{_pct(heuristic[row['frozen_side']]['pooled_final'])}.")
    if verdicts:
        lines += ["", *verdicts]
    return "\n".join(lines) + "\n"
