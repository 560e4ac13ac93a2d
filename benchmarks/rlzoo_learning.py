"""Does RL Baselines3 Zoo learn the co-op game with the shipped hyperparameter file?

Trains plain PPO with ``python -m rl_zoo3.train`` and ``agents/thermopylae_agents/configs/rl_zoo/ppo.yml``
as it is (its ``illegal_action="replace"``, its behaviour-cloning warm start callback and its fight-odds
features included; the only addition is the callback's ``save_path``, which keeps the cloned policy before
PPO starts), then plays the cloned policy, the trained policy (both deterministic), the heuristic and the
random player on the same deals of ``thermopylae/Coop-v0`` (solo, as in the file) and writes their win
rates with 95% intervals, the paired comparisons (trained vs heuristic, trained vs clone), how often each
policy chose an illegal action that the env replaced, and the learning curve (the mean training return of
each tenth of the training episodes, from rl_zoo3's monitor files), to a JSON file.

    python benchmarks/rlzoo_learning.py                          # the file's budget (n_timesteps)
    python benchmarks/rlzoo_learning.py --timesteps 200000 --out /tmp/rlzoo_small.json

``--hyperparams`` passes more overrides to rl_zoo3 (its ``key:value`` syntax), for example smaller runs.
Needs the ``rlzoo`` extra. tests/agents/training/test_rlzoo.py runs a small budget of the same function.
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
import yaml

ROOT = Path(__file__).resolve().parents[1]
ZOO_FILE = ROOT / "agents" / "thermopylae_agents" / "configs" / "rl_zoo" / "ppo.yml"
ENV_ID = "thermopylae/Coop-v0"
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "rlzoo_coop.json"
CLONE = "rl_zoo3 PPO, warm start only"
TRAINED = "rl_zoo3 PPO"


class ZooPolicy:
    """A saved rl_zoo3 PPO as an agent (``act(obs, mask)``) that counts its illegal choices."""

    def __init__(self, path: Path, name: str) -> None:
        from stable_baselines3 import PPO

        self.name = name
        self.model = PPO.load(path, device="cpu")
        self.choices = 0
        self.illegal = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        action = int(self.model.predict(observation, deterministic=True)[0])
        self.choices += 1
        self.illegal += not bool(action_mask[action])
        return action

    @property
    def illegal_choice_rate(self) -> float:
        return self.illegal / max(1, self.choices)


def zoo_block() -> dict[str, Any]:
    """The shipped file's Coop-v0 block, as rl_zoo3 reads it."""
    return yaml.safe_load(ZOO_FILE.read_text())[ENV_ID]


def warm_start_override(save_path: Path, changes: dict[str, Any] | None = None) -> str:
    """rl_zoo3's ``--hyperparams`` value for the file's warm start callback, plus ``save_path`` (and
    ``changes`` to its arguments). Explicit ``episodes`` are played as given, not sized to the budget (as
    ``--bc-episodes`` wins over the sizing of ``scripts/train.py``)."""
    [entry] = zoo_block()["callback"]
    [(name, kwargs)] = entry.items()
    kwargs = {**kwargs, **(changes or {}), "save_path": str(save_path)}
    if "episodes" in (changes or {}):
        kwargs["n_timesteps"] = None
    return f"callback:[{{{name!r}: {kwargs!r}}}]"


def train(folder: Path, timesteps: int | None, seed: int, extra: list[str],
          warm_start: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """Run rl_zoo3's trainer on the shipped file; return the saved clone (before PPO) and trained model."""
    clone = folder / "warm_start.zip"
    command = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", ENV_ID,
               "--gym-packages", "thermopylae_env", "--conf-file", str(ZOO_FILE), "--eval-freq", "-1",
               "--seed", str(seed), "-f", str(folder), "--log-interval", "-1"]
    if timesteps is not None:
        command += ["-n", str(timesteps)]
    command += ["--hyperparams", warm_start_override(clone, warm_start), *extra]
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    if done.returncode != 0:
        raise RuntimeError(f"rl_zoo3.train failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    name = ENV_ID.replace("/", "-")
    return clone, folder / "ppo" / f"{name}_1" / f"{name}.zip"


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
    timesteps: int | None, games: int, seed: int = 0, extra: list[str] | None = None,
    warm_start: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train, then evaluate the clone, the trained policy, the heuristic and random on ``games`` deals
    (seeds 0..games-1). ``warm_start`` changes arguments of the file's warm start callback."""
    from thermopylae_agents.evaluation.games import evaluate, paired_comparisons

    env_kwargs = dict(zoo_block()["env_kwargs"])
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        clone_path, saved = train(Path(tmp), timesteps, seed, list(extra or []), warm_start)
        train_seconds = time.perf_counter() - start
        curve = learning_curve(Path(tmp))
        clone = ZooPolicy(clone_path, CLONE)
        policy = ZooPolicy(saved, TRAINED)
        trained_steps = int(policy.model.num_timesteps)
        results = evaluate(ENV_ID, [clone, policy, "heuristic", "random"], games=games, env_kwargs=env_kwargs)
    rows = {r.agent: {"wins": r.wins, "games": r.games, "win_rate": r.win_rate, "ci95": list(r.ci95)}
            for r in results}
    wanted = {frozenset((TRAINED, "heuristic")), frozenset((TRAINED, CLONE))}
    paired = [c.summary() for c in paired_comparisons(results) if frozenset((c.a, c.b)) in wanted]
    return {
        "env_id": ENV_ID, "env_kwargs": env_kwargs,
        "conf_file": str(ZOO_FILE.relative_to(ROOT)), "timesteps": trained_steps, "seed": seed,
        "hyperparams_overridden": list(extra or []), "warm_start_overridden": dict(warm_start or {}),
        "train_seconds": round(train_seconds, 1), "games": games, "agents": rows, "paired": paired,
        "illegal_choice_rate": {CLONE: clone.illegal_choice_rate, TRAINED: policy.illegal_choice_rate},
        "training_return_by_tenth": curve,
    }


def parse_changes(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict, each value read as YAML (numbers become numbers)."""
    changes = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--warm-start: expected KEY=VALUE, got {item!r}")
        changes[key] = yaml.safe_load(value)
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=None, help="default: the file's n_timesteps")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--hyperparams", nargs="*", default=[], help="more rl_zoo3 overrides (key:value)")
    parser.add_argument("--warm-start", nargs="*", default=[], metavar="KEY=VALUE",
                        help="change arguments of the file's warm start callback, e.g. episodes=500")
    args = parser.parse_args(argv)
    result = measure(args.timesteps, args.games, args.seed, args.hyperparams, parse_changes(args.warm_start))
    from thermopylae_agents.policies.provenance import git_commit

    result["commit"] = git_commit(ROOT)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["agents"], indent=2))
    for name, rate in result["illegal_choice_rate"].items():
        print(f"{name}: illegal choices (replaced) {rate:.2%}")
    print(f"{result['timesteps']:,} steps in {result['train_seconds']:.0f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
