"""A faster masked categorical distribution for MaskablePPO (same numbers as sb3-contrib's)."""

from __future__ import annotations

from typing import Any

import torch as th
from sb3_contrib.common.maskable.distributions import MaskableCategorical, MaskableCategoricalDistribution
from torch.distributions import Categorical

__all__ = ["OnePassMaskableCategorical", "OnePassMaskableCategoricalDistribution", "speed_up_policy"]


class OnePassMaskableCategorical(MaskableCategorical):
    """sb3-contrib's ``MaskableCategorical`` that normalizes the logits once per masking.

    The original builds the distribution three times for one masked evaluation (construction, its own
    ``apply_masking(None)``, then the policy's ``apply_masking(masks)``): three log-sum-exps over the
    (batch, 72) logits, all three in the autograd graph, plus argument checks. Here the masked raw logits
    are normalized once, without argument validation: the same distribution (log-probabilities equal to
    float rounding) for less time per PPO update. Sampling (rollout collection) draws from the cumulative
    probabilities instead of calling ``torch.multinomial``.
    """

    def __init__(self, logits: th.Tensor) -> None:
        self.masks = None
        self._raw_logits = logits
        Categorical.__init__(self, logits=logits, validate_args=False)
        self._original_logits = self.logits

    def apply_masking(self, masks: Any) -> None:
        if masks is None:
            self.masks = None
            logits = self._raw_logits
        else:
            raw = self._raw_logits
            self.masks = th.as_tensor(masks, dtype=th.bool, device=raw.device).reshape(raw.shape)
            logits = th.where(self.masks, raw, -1e8)  # -1e8: sb3-contrib's stand-in for -inf
        self.__dict__.pop("probs", None)  # lazily computed from the previous logits
        Categorical.__init__(self, logits=logits, validate_args=False)

    def sample(self, sample_shape: th.Size = th.Size()) -> th.Tensor:  # noqa: B008
        """One action per row by inverse transform sampling: a uniform draw against the cumulative
        probabilities (far cheaper per row than ``torch.multinomial``). An action of probability 0, a
        masked one, is never drawn."""
        probs = self.probs
        if len(sample_shape) or probs.dim() != 2:
            return super().sample(sample_shape)
        cdf = probs.cumsum(-1)
        total = cdf[:, -1:]
        # u * total < total, so some entry of the cdf exceeds it: the first one has a positive probability.
        draw = th.minimum(th.rand_like(total) * total, th.nextafter(total, th.zeros_like(total)))
        return th.searchsorted(cdf, draw, right=True).squeeze(-1)


class OnePassMaskableCategoricalDistribution(MaskableCategoricalDistribution):
    """``MaskableCategoricalDistribution`` over
    [`OnePassMaskableCategorical`][thermopylae_agents.training.distribution.OnePassMaskableCategorical]."""

    def proba_distribution(self, action_logits: th.Tensor) -> OnePassMaskableCategoricalDistribution:
        self.distribution = OnePassMaskableCategorical(action_logits.view(-1, self.action_dim))
        return self


def speed_up_policy(model: Any) -> Any:
    """Give a maskable model's policy the one-pass masked distribution
    ([`OnePassMaskableCategorical`][thermopylae_agents.training.distribution.OnePassMaskableCategorical]).

    Only the live policy object changes: saved files keep sb3-contrib's classes (the distribution holds no
    parameters), so call this again after ``load`` to train on at the same speed. Other models are
    returned as they are.
    """
    policy = getattr(model, "policy", None)
    dist = getattr(policy, "action_dist", None)
    if type(dist) is MaskableCategoricalDistribution:
        policy.action_dist = OnePassMaskableCategoricalDistribution(dist.action_dim)
    return model
