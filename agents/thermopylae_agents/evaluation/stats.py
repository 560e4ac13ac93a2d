"""Small statistics shared by every script that reports a win rate: the Wilson interval of one rate,
and the paired comparison (McNemar's exact test, Newcombe's interval of the difference) of two agents
played on the same deals."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction

__all__ = [
    "PairedComparison",
    "mcnemar_exact",
    "paired_comparison",
    "paired_difference_interval",
    "wilson_interval",
]


def wilson_interval(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (95% by default).

    Unlike the normal approximation it stays inside [0, 1] and is honest near 0 and 1, where the co-op
    win rates of weak players live. Returns ``(low, high)``; ``(0.0, 1.0)`` when ``trials == 0``.
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # At 0 or n successes the bound on that side is exactly 0 or 1; rounding would leave 1e-17 off it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class PairedComparison:
    """Two agents played on the same deals: the 2x2 table of outcomes and the paired tests.

    ``both`` / ``neither``: deals both / neither won; ``only_a`` / ``only_b``: the discordant deals won by
    one agent alone. ``difference`` is ``rate(a) - rate(b)`` with ``ci95`` its 95% interval (Newcombe's
    hybrid score interval for paired proportions, method 10 of Newcombe 1998); ``p_value`` is McNemar's
    exact test: two-sided binomial test of ``only_a`` among the ``only_a + only_b`` discordant deals at 1/2
    (``1.0`` when there are none).
    """

    a: str
    b: str
    games: int
    both: int
    only_a: int
    only_b: int
    neither: int
    difference: float
    ci95: tuple[float, float]
    p_value: float
    opponent: str | None = None  # the duel: the Persian agent both Greek agents faced

    def summary(self) -> dict:
        data = asdict(self)
        data["ci95"] = list(self.ci95)
        return data


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """McNemar's exact two-sided p-value from the discordant counts (``scipy.stats.binomtest``; the same
    exact sum in integers where scipy is not installed)."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got {only_a}, {only_b}")
    if only_a + only_b == 0:
        return 1.0
    try:
        from scipy.stats import binomtest
    except ImportError:  # scipy comes with the train extra; the exact sum needs nothing
        return _two_sided_half_binomial(min(only_a, only_b), only_a + only_b)
    return float(binomtest(only_a, only_a + only_b, 0.5, alternative="two-sided").pvalue)


def _two_sided_half_binomial(k: int, n: int) -> float:
    """The two-sided p-value of ``k`` successes in ``n`` fair coin flips (``k <= n / 2``), in exact
    integers: twice the lower tail, at most 1 (the distribution is symmetric)."""
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def paired_difference_interval(both: int, only_a: int, only_b: int, neither: int,
                               z: float = 1.959963984540054) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for ``rate(a) - rate(b)`` on paired outcomes.

    Built from the Wilson intervals of the two rates and the correlation ``phi`` of the outcomes, so it
    stays inside [-1, 1] and behaves at rates near 0 or 1, unlike the Wald interval.
    """
    n = both + only_a + only_b + neither
    if n == 0:
        return -1.0, 1.0
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson_interval(both + only_a, n, z)
    l2, u2 = wilson_interval(both + only_b, n, z)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = 0.0 if margins == 0 else (both * neither - only_a * only_b) / math.sqrt(margins)
    d = p1 - p2
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, d - delta), min(1.0, d + epsilon)


def paired_comparison(a: str, wins_a: Sequence[bool], b: str, wins_b: Sequence[bool]) -> PairedComparison:
    """Compare two agents' per-deal outcomes (same deals, same order): see
    [`PairedComparison`][thermopylae_agents.evaluation.stats.PairedComparison]."""
    if len(wins_a) != len(wins_b):
        raise ValueError(f"paired outcomes need the same deals: {len(wins_a)} against {len(wins_b)} games")
    pairs = [(bool(x), bool(y)) for x, y in zip(wins_a, wins_b, strict=True)]
    both = sum(x and y for x, y in pairs)
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    neither = len(pairs) - both - only_a - only_b
    n = len(pairs)
    return PairedComparison(
        a=a, b=b, games=n, both=both, only_a=only_a, only_b=only_b, neither=neither,
        difference=(only_a - only_b) / n if n else 0.0,
        ci95=paired_difference_interval(both, only_a, only_b, neither),
        p_value=mcnemar_exact(only_a, only_b),
    )
