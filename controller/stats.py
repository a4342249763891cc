"""The one interval type and the rate intervals every table uses.

`controller/` must not import `annotation/`, so the shared pieces live here and both
`controller.tournament.stats` (live tournament status, balance figures) and
`annotation.stats` (the paper's statistics) import them. Everything that reports a
95 % interval returns an `Interval`; a rate is always a Wilson score interval, so a
small arm never reads as certain (0 of 4 wins is [0, 0.49], not [0, 0]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054
"""The standard normal's 97.5 % quantile (a two-sided 95 % interval)."""


@dataclass(frozen=True)
class Interval:
    """A point estimate and its 95 % interval.

    `None` means "not defined" (no trials, a statistic that cannot be computed); tables
    show it as NaN. `degenerate` is the share of bootstrap resamples on which the
    statistic was undefined (e.g. no win or no loss in the resample): those resamples
    are left out of the percentiles, and this figure says how many were, so it is never
    done silently.
    """

    value: float | None
    """The estimate (a rate, a correlation, a pooled ratio)."""
    low: float | None
    high: float | None
    n: int = 0
    """The sample it rests on (trials, games)."""
    method: str = ""
    """How the interval was made: `wilson`, `bootstrap`, `fisher-z`, ..."""
    degenerate: float = 0.0
    """Share of bootstrap resamples on which the statistic was undefined."""

    @property
    def rate(self) -> float | None:
        """The estimate, read as a proportion (tournament status, balance)."""
        return self.value

    @property
    def n_games(self) -> int:
        """The sample size, read as a number of games (grounding metrics)."""
        return self.n

    def bounds(self) -> tuple[float, float]:
        """`(low, high)` as floats, NaN where undefined (for a table row)."""
        return (
            math.nan if self.low is None else self.low,
            math.nan if self.high is None else self.high,
        )


def wilson(successes: float, trials: float, z: float = Z95) -> Interval:
    """Wilson score interval of a binomial proportion (95 % by default).

    Chosen over the normal (Wald) interval because arms are small (tens of games) and
    rates near 0 or 1 are common; Wilson stays inside [0, 1], keeps its coverage there and
    never has zero width for a positive number of trials. `successes` and `trials` may be
    fractional: `rate_interval` passes an effective sample size for clustered games.
    """
    if trials <= 0:
        return Interval(None, None, None, 0, "wilson")
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p)) / trials + z * z / (4 * trials * trials)) / denom
    return Interval(
        p, max(0.0, centre - half), min(1.0, centre + half), int(round(trials)), "wilson"
    )


def design_effect(values: list[float], clusters: list[object]) -> float:
    """Kish's design effect of a mean of 0/1 values over clustered units (>= 1).

    The variance of the ratio estimator `sum(y) / n` with clusters as the sampled units,
    `C / (C - 1) * sum_c (y_c - p m_c)^2 / n^2`, over the variance under independent
    draws, `p (1 - p) / n`. Floored at 1: clustering is never read as making a rate more
    precise than independent games would. 1 when it cannot be estimated (one cluster,
    every cluster a single game, p of 0 or 1).
    """
    n = len(values)
    if n == 0:
        return 1.0
    totals: dict[object, list[float]] = {}
    for v, c in zip(values, clusters, strict=True):
        cell = totals.setdefault(c, [0.0, 0.0])
        cell[0] += v
        cell[1] += 1
    k = len(totals)
    p = sum(values) / n
    if k < 2 or k == n or p <= 0 or p >= 1:
        return 1.0
    ss = sum((y - p * m) ** 2 for y, m in totals.values())
    v_cluster = k / (k - 1) * ss / (n * n)
    return max(1.0, v_cluster / (p * (1 - p) / n))


def rate_interval(
    values: list[float], clusters: list[object] | None = None, z: float = Z95
) -> Interval:
    """A win rate over games and its Wilson interval, widened for clustered games.

    With `clusters` (e.g. games sharing a seed), the interval is Wilson's at the effective
    sample size `n / design_effect` (Kish), with the observed rate; without, plain Wilson.

    Args:
        values: One 0/1 outcome per game.
        clusters: One cluster key per game, or None (every game its own cluster).
        z: Normal quantile of the interval (95 % by default).
    """
    n = len(values)
    if n == 0:
        return Interval(None, None, None, 0, "wilson")
    p = sum(values) / n
    deff = 1.0 if clusters is None else design_effect(values, clusters)
    n_eff = n / deff
    w = wilson(p * n_eff, n_eff, z)
    method = "wilson" if deff == 1.0 else f"wilson (design effect {deff:.2f})"
    return Interval(p, w.low, w.high, n, method)
