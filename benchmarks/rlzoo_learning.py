"""Does RL Baselines3 Zoo learn the co-op game with the shipped hyperparameter file?

Trains plain PPO with ``python -m rl_zoo3.train`` and ``agents/thermopylae_agents/configs/rl_zoo/ppo.yml``
as it is (its ``illegal_action="replace"`` included), then plays the trained policy (deterministic), the
heuristic and the random player on the same deals of ``thermopylae/Coop-v0`` (solo, as in the file) and
writes their win rates, with 95% intervals, how often the policy chose an illegal action that the env
replaced, and the learning curve (the mean training return, shaped reward included, of each tenth of the
training episodes, from rl_zoo3's monitor files), to a JSON file.

    python benchmarks/rlzoo_learning.py                          # the file's budget (n_timesteps)
    python benchmarks/rlzoo_learning.py --timesteps 200000 --out /tmp/rlzoo_small.json

Needs the ``rlzoo`` extra. tests/training/test_rlzoo.py runs a small budget of the same function.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ZOO_FILE = ROOT / "agents" / "thermopylae_agents" / "configs" / "rl_zoo" / "ppo.yml"
ENV_ID = "thermopylae/Coop-v0"
DEFAULT_OUT = ROOT / "benchmarks" / "rlzoo_coop.json"


class ZooPolicy:
    """A trained rl_zoo3 PPO as an agent (``act(obs, mask)``) that counts its illegal choices."""

    name = "rl_zoo3 PPO"

    def __init__(self, path: Path) -> None:
        from stable_baselines3 import PPO

        self.model = PPO.load(path, device="cpu")
        self.choices = 0
        self.illegal = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        action = int(self.model.predict(observation, deterministic=True)[0])
        self.choices += 1
        self.illegal += not bool(action_mask[action])
        return action


def train(folder: Path, timesteps: int | None, seed: int, extra: list[str]) -> Path:
    """Run rl_zoo3's trainer on the shipped file; return the saved model."""
    command = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", ENV_ID,
               "--gym-packages", "thermopylae_env", "--conf-file", str(ZOO_FILE), "--eval-freq", "-1",
               "--seed", str(seed), "-f", str(folder), "--log-interval", "-1"]
    if timesteps is not None:
        command += ["-n", str(timesteps)]
    if extra:
        command += ["--hyperparams", *extra]
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    if done.returncode != 0:
        raise RuntimeError(f"rl_zoo3.train failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    name = ENV_ID.replace("/", "-")
    return folder / "ppo" / f"{name}_1" / f"{name}.zip"


def learning_curve(folder: Path, parts: int = 10) -> list[float]:
    """The mean return of each of ``parts`` equal runs of the training episodes, in the order they ended."""
    episodes: list[tuple[float, float]] = []
    for path in folder.glob("ppo/*/*.monitor.csv"):
        with path.open() as file:
            next(file)  # rl_zoo3's monitor files start with a JSON comment line
            episodes += [(float(row["t"]), float(row["r"])) for row in csv.DictReader(file)]
    episodes.sort()
    size = len(episodes) // parts
    if size == 0:
        return []
    return [round(float(np.mean([r for _, r in episodes[i * size:(i + 1) * size]])), 4) for i in range(parts)]


def measure(
    timesteps: int | None, games: int, seed: int = 0, extra: list[str] | None = None
) -> dict[str, Any]:
    """Train, then evaluate the policy, the heuristic and random on ``games`` deals (seeds 0..games-1)."""
    from thermopylae_agents.evaluation.games import evaluate

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        saved = train(Path(tmp), timesteps, seed, list(extra or []))
        train_seconds = time.perf_counter() - start
        curve = learning_curve(Path(tmp))
        policy = ZooPolicy(saved)
        trained_steps = int(policy.model.num_timesteps)
        results = evaluate(ENV_ID, [policy, "heuristic", "random"], games=games,
                           env_kwargs={"num_players": 1, "illegal_action": "replace"})
    rows = {r.agent: {"wins": r.wins, "games": r.games, "win_rate": r.win_rate, "ci95": list(r.ci95)}
            for r in results}
    return {
        "env_id": ENV_ID, "env_kwargs": {"num_players": 1, "illegal_action": "replace"},
        "conf_file": str(ZOO_FILE.relative_to(ROOT)), "timesteps": trained_steps, "seed": seed,
        "hyperparams_overridden": list(extra or []), "train_seconds": round(train_seconds, 1),
        "games": games, "agents": rows,
        "policy_illegal_choice_rate": policy.illegal / max(1, policy.choices),
        "training_return_by_tenth": curve,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=None, help="default: the file's n_timesteps")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    result = measure(args.timesteps, args.games, args.seed)
    from thermopylae_agents.policies.provenance import git_commit

    result["commit"] = git_commit(ROOT)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["agents"], indent=2))
    rate = result["policy_illegal_choice_rate"]
    print(f"policy's illegal choices (replaced): {rate:.2%}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
