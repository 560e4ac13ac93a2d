"""The RL Baselines3 Zoo warm start: behaviour cloning of an expert, run by rl_zoo3 as a ``callback:``.

rl_zoo3 trains plain PPO only (no MaskablePPO, no warm start of its own), and a plain PPO policy from
scratch picks an illegal action nearly every move and almost never wins the co-op game, so PPO has next
to nothing to learn from. The shipped hyperparameter file
(``agents/thermopylae_agents/configs/rl_zoo/ppo.yml``) therefore names
[`BehaviourCloningWarmStart`][thermopylae_agents.training.rlzoo.BehaviourCloningWarmStart] as its callback;
rl_zoo3 builds it from the file's keyword arguments and SB3 calls it once before the first rollout. It runs
the project's own warm start ([`warm_start`][thermopylae_agents.training.imitation.warm_start]): the
expert's games on the training env (same id, same keyword arguments, so the same observation and reward),
then behaviour cloning of the policy and its critic. For plain PPO the cross-entropy runs over all actions,
so the clone also learns to put its mass on the legal ones.

The file's counts are for its own budget (the callback's ``n_timesteps``, the block's ``n_timesteps``). A
shorter run (``python -m rl_zoo3.train -n N``: rl_zoo3 passes ``N`` to ``learn``) plays expert games in
proportion, never fewer than ``scripts/train.py``'s floor of 500, as
[`size_to_budget`][thermopylae_agents.training.config.size_to_budget] sizes the project's own warm start,
so that a tiny run reaches PPO's first rollout quickly; the file's own budget keeps its recipe exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from thermopylae_agents.training.config import BUDGET_SIZED, Config, sized_count
from thermopylae_agents.training.imitation import warm_start
from thermopylae_agents.training.progress import log

__all__ = ["BehaviourCloningWarmStart"]

EXPERTS = ("heuristic", "search")


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"BehaviourCloningWarmStart: {name} must be a positive integer, not {value!r}")
    return value


def _budget(value: Any) -> int:
    """``n_timesteps`` as a whole number of steps (YAML's ``!!float 5e6`` included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value < 2**63 \
            or value != int(value):
        raise ValueError("BehaviourCloningWarmStart: n_timesteps must be a positive whole number of steps "
                         f"(the budget the episodes are for), not {value!r}")
    return int(value)


class BehaviourCloningWarmStart(BaseCallback):
    """Clone ``expert`` into the model's policy (actor and critic) when training starts.

    The arguments are those of the project's ``bc:`` block (``agents/thermopylae_agents/configs/coop.yaml``):
    ``episodes`` expert games played in ``workers`` processes, ``epochs`` of cloning with Adam at
    ``learning_rate`` on minibatches of ``batch_size``, the critic fitted to the games' returns with weight
    ``value_coef`` (0 leaves it alone). ``save_path`` saves the cloned model there before PPO changes it
    (``benchmarks/rlzoo_learning.py`` measures it). The expert's games are seeded from the model's seed,
    far from the training envs' seeds.

    ``n_timesteps`` is the budget ``episodes`` is meant for: a ``learn`` call of fewer steps plays
    [`sized_episodes`][thermopylae_agents.training.rlzoo.BehaviourCloningWarmStart.sized_episodes] games
    instead (``None``: ``episodes`` whatever the budget). ``sized`` then records ``{"episodes": {"full":
    ..., "sized": ...}}`` when the count changed.
    """

    def __init__(
        self,
        expert: str = "heuristic",
        episodes: int = 5000,
        epochs: int = 8,
        batch_size: int = 1024,
        learning_rate: float = 3e-3,
        value_coef: float = 0.5,
        workers: int = 1,
        save_path: str | None = None,
        n_timesteps: float | None = None,
        verbose: int = 0,
    ) -> None:
        if expert not in EXPERTS:
            raise ValueError(f"BehaviourCloningWarmStart: expert must be one of {EXPERTS}, not {expert!r}")
        for name, value in (("episodes", episodes), ("epochs", epochs), ("batch_size", batch_size),
                            ("workers", workers)):
            _positive(name, value)
        if not learning_rate > 0 or value_coef < 0:
            raise ValueError(
                "BehaviourCloningWarmStart: learning_rate must be > 0 and value_coef >= 0, "
                f"not {learning_rate!r} and {value_coef!r}"
            )
        super().__init__(verbose)
        self.bc = {
            "expert": expert, "episodes": episodes, "epochs": epochs, "batch_size": batch_size,
            "learning_rate": float(learning_rate), "value_coef": float(value_coef), "workers": workers,
        }
        self.save_path = None if save_path is None else Path(save_path)
        self.n_timesteps = None if n_timesteps is None else _budget(n_timesteps)
        self.sized: dict[str, dict[str, int]] = {}
        self.result: dict[str, Any] | None = None

    def sized_episodes(self, timesteps: int) -> int:
        """The expert games of a ``learn`` call of ``timesteps`` steps: ``episodes`` in proportion to
        ``timesteps / n_timesteps``, never below the floor of ``scripts/train.py``'s warm start
        (``bc.episodes`` of ``BUDGET_SIZED``) nor above ``episodes``."""
        full = self.bc["episodes"]
        if self.n_timesteps is None or timesteps >= self.n_timesteps:
            return full
        return sized_count(full, BUDGET_SIZED[("bc", "episodes")], timesteps / self.n_timesteps)

    def _on_training_start(self) -> None:
        spec = self.training_env.get_attr("spec", indices=[0])[0]
        if spec is None:
            raise ValueError("BehaviourCloningWarmStart needs a registered env (gym.make): it has no spec")
        # learn() has added the steps already done (a continued run) to its total: this call's budget is
        # what is left.
        total = int(self.locals.get("total_timesteps", self.model._total_timesteps))
        budget = max(1, total - int(self.model.num_timesteps))
        bc = dict(self.bc)
        bc["episodes"] = self.sized_episodes(budget)
        self.sized = {}
        if bc["episodes"] != self.bc["episodes"]:
            self.sized = {"episodes": {"full": self.bc["episodes"], "sized": bc["episodes"]}}
            log(f"BC warm start sized to the budget: {bc['episodes']:,} expert games instead of "
                f"{self.bc['episodes']:,} for a run of {budget:,} steps (the file's are for "
                f"{self.n_timesteps:,})")
        seed = int(self.model.seed or 0)
        self.result = warm_start(self.model, spec.id, dict(spec.kwargs), Config(bc, "callback"), seed,
                                 bar=False)
        if self.save_path is not None:
            self.model.save(self.save_path)

    def _on_step(self) -> bool:
        return True
