"""Small statistics shared by every script that reports a win rate: the Wilson interval of one rate,
the paired comparison (McNemar's exact test, Newcombe's interval of the difference) of two agents
played on the same deals, and the aggregate of a multi-seed table (the interquartile mean of the seeds'
scores with a stratified bootstrap interval, as recommended by Agarwal et al. 2021, "Deep RL at the Edge
of the Statistical Precipice").

The tests and intervals come from SciPy (`scipy.stats.binomtest` and its `proportion_ci`,
`scipy.stats.bootstrap`, `scipy.stats.trim_mean`; the train extra). Without SciPy the Wilson interval
falls back to its closed form (the same numbers); the seed aggregates need SciPy. The `rliable` package
computes the same aggregates, but its dependency `arch` fails to import beside the pinned pandas and
NumPy here, so the bootstrap is SciPy's: each task's runs are resampled on their own (SciPy resamples
each of several unpaired samples independently), which is rliable's stratified bootstrap."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "PairedComparison",
    "SeedAggregate",
    "iqm",
    "seed_aggregate",
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
    try:  # scipy comes with the train extra; the core package evaluates without it (the closed form)
        from scipy.stats import binomtest, norm  # extra: train
    except ImportError:
        low, high = _wilson_closed_form(successes, trials, z)
    else:
        interval = binomtest(successes, trials).proportion_ci(1.0 - 2.0 * norm.sf(z), method="wilson")
        low, high = float(interval.low), float(interval.high)
    # At 0 or n successes the bound on that side is exactly 0 or 1; rounding would leave 1e-17 off it.
    low = 0.0 if successes == 0 else max(0.0, low)
    high = 1.0 if successes == trials else min(1.0, high)
    return low, high


def _wilson_closed_form(successes: int, trials: int, z: float) -> tuple[float, float]:
    """Wilson's score interval written out (what ``scipy.stats.binomtest(...).proportion_ci(method=
    "wilson")`` computes; the tests hold the two together)."""
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return centre - half, centre + half


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
        from scipy.stats import binomtest  # extra: train
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


def iqm(scores: Sequence[float] | np.ndarray) -> float:
    """The interquartile mean: the mean of the middle half of the scores (25% trimmed from each end,
    ``scipy.stats.trim_mean``), robust to one outlying seed yet less noisy than the median."""
    from scipy.stats import trim_mean  # extra: train

    values = np.asarray(scores, dtype=float).ravel()
    if values.size == 0:
        raise ValueError("the IQM of no scores is undefined")
    return float(trim_mean(values, 0.25))


@dataclass(frozen=True)
class SeedAggregate:
    """The aggregate of one row of a multi-seed table: the scores' ``iqm`` and ``mean`` with 95%
    stratified-bootstrap intervals (percentile method, ``resamples`` resamples from ``bootstrap_seed``);
    the intervals are ``None`` with fewer than two runs (a single run has no spread to resample)."""

    runs: int
    iqm: float
    iqm_ci95: tuple[float, float] | None
    mean: float
    mean_ci95: tuple[float, float] | None
    resamples: int
    bootstrap_seed: int

    def summary(self) -> dict:
        data = asdict(self)
        for key in ("iqm_ci95", "mean_ci95"):
            data[key] = None if data[key] is None else list(data[key])
        return data


def _stratified_interval(tasks: list[np.ndarray], statistic: str, resamples: int, seed: int,
                         confidence: float) -> tuple[float, float]:
    from scipy.stats import bootstrap, trim_mean  # extra: train

    def pooled(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        values = np.concatenate(samples, axis=axis)
        return trim_mean(values, 0.25, axis=axis) if statistic == "iqm" else values.mean(axis=axis)

    if all(np.all(task == task[0]) for task in tasks):
        value = float(pooled(*tasks))  # no spread: SciPy's bootstrap would warn and give NaN
        return value, value
    result = bootstrap(tuple(tasks), pooled, n_resamples=resamples, confidence_level=confidence,
                       method="percentile", vectorized=True, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def seed_aggregate(scores: Sequence[float] | np.ndarray, resamples: int = 10_000, seed: int = 0,
                   confidence: float = 0.95) -> SeedAggregate:
    """IQM and mean of a multi-seed table with stratified bootstrap intervals.

    ``scores``: one score per run (seed), shape ``(runs,)``, or ``(runs, tasks)`` for several tasks
    (opponents, sides), each task's runs resampled separately (the stratified bootstrap of rliable's
    ``get_interval_estimates``); the IQM is taken over all runs and tasks together.
    """
    values = np.asarray(scores, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"scores must be (runs,) or (runs, tasks) and not empty, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("scores must be finite numbers")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples >= 1 and 0 < confidence < 1, got {resamples} and {confidence}")
    tasks = [values[:, k] for k in range(values.shape[1])]
    runs = values.shape[0]
    intervals = {name: (_stratified_interval(tasks, name, resamples, seed, confidence) if runs >= 2 else None)
                 for name in ("iqm", "mean")}
    return SeedAggregate(runs=runs, iqm=iqm(values), iqm_ci95=intervals["iqm"], mean=float(values.mean()),
                         mean_ci95=intervals["mean"], resamples=resamples, bootstrap_seed=seed)
