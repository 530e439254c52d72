"""A unit of randomisation that is not the list (unit=: users, whose sessions are the lists). Each arm's lists are
summed per unit, and a measure's mean over lists is the ratio of two means over units, Σ values / Σ lists; its
variance is the delta method's (Deng, Knoblich and Lu, "Applying the Delta Method in Metric Analytics", KDD 2018),
which counts the lists of one unit as the correlated draws they are. With a pre-period value per unit (the same
measures on a log from before the experiment), CUPED (Deng, Xu, Kohavi and Walker, WSDM 2013) removes the part of
the variance the pre-period predicts. The formulas are tea-tasting's RatioOfMeans, its oracle in the tests.

Everything here works from sample moments over units (count, means, variances and covariances), the sufficient
statistics an engine can return."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class UnitMoments:
    """Sample moments over units of (y, l): a unit's sum of a measure over its lists and its number of lists; with a
    pre-period, (yp, lp) beside them. Variances and covariances have n - 1 in the denominator."""

    n: int
    mean: dict  # {variable: mean}
    cov: dict  # {(a, b) with a <= b: sample covariance}; (a, a) is a variance

    def c(self, a: str, b: str) -> float:
        return self.cov[(a, b) if a <= b else (b, a)]


def moments(units: list) -> UnitMoments:
    """UnitMoments of units given as dicts {variable: value} (y, l, and yp, lp with a pre-period)."""
    n = len(units)
    names = sorted(units[0]) if units else []
    mean = {v: math.fsum(u[v] for u in units) / n for v in names} if n else {}
    cov = {(a, b): (math.fsum((u[a] - mean[a]) * (u[b] - mean[b]) for u in units) / (n - 1) if n > 1 else math.nan)
           for i, a in enumerate(names) for b in names[i:]}
    return UnitMoments(n, mean, cov)


def combine(a: UnitMoments, b: UnitMoments) -> UnitMoments:
    """The moments of two samples taken as one (both arms' units: CUPED's θ), from theirs alone (Chan et al.'s
    pairwise update), so that they need not be at hand unit by unit."""
    n = a.n + b.n
    mean = {v: (a.n * a.mean[v] + b.n * b.mean[v]) / n for v in a.mean}

    def within(m: UnitMoments, x: str, y: str) -> float:  # Σ of products of deviations: 0 over one unit
        return (m.n - 1) * m.cov[x, y] if m.n > 1 else 0.0

    cov = {(x, y): (within(a, x, y) + within(b, x, y)
                    + a.n * b.n / n * (a.mean[x] - b.mean[x]) * (a.mean[y] - b.mean[y])) / (n - 1)
           for x, y in a.cov}
    return UnitMoments(n, mean, cov)


def from_sums(n: int, means: dict, squares: dict) -> UnitMoments:
    """UnitMoments from a count, the means and the sums of the products of deviations from them ({(a, b): Σ}),
    as an engine returns them."""
    return UnitMoments(n, dict(means), {k: v / (n - 1) if n > 1 else math.nan for k, v in squares.items()})


def ratio_var(m: UnitMoments, y: str, l: str) -> float:  # noqa: E741 - l is the lists, as in the papers
    """The variance of one unit's mean(y) / mean(l), by the delta method (multiply by 1/n for the estimate's)."""
    r = m.mean[y] / m.mean[l]
    return (m.c(y, y) - 2 * r * m.c(y, l) + r * r * m.c(l, l)) / (m.mean[l] ** 2)


def ratio_cov(m: UnitMoments, y: str, l: str, yp: str, lp: str) -> float:  # noqa: E741
    """The covariance of mean(y) / mean(l) and mean(yp) / mean(lp), by the delta method."""
    r, rp = m.mean[y] / m.mean[l], m.mean[yp] / m.mean[lp]
    return (m.c(y, yp) - rp * m.c(y, lp) - r * m.c(l, yp) + r * rp * m.c(l, lp)) / (m.mean[l] * m.mean[lp])


def ratio(m: UnitMoments) -> tuple:
    """(mean over lists = Σ y / Σ l, its per-unit variance by the delta method)."""
    return m.mean["y"] / m.mean["l"], ratio_var(m, "y", "l")


def cuped(x: UnitMoments, y: UnitMoments) -> tuple:
    """CUPED for two arms x and y whose units carry a pre-period (yp, lp): θ from the pooled units (both arms as
    one sample), then each arm's adjusted ratio and variance. ((mean x, var x), (mean y, var y), θ)."""
    pooled = combine(x, y)
    if not (x.mean["lp"] and y.mean["lp"]):  # an arm none of whose units has a pre-period list: nothing to adjust by
        return ratio(x), ratio(y), 0.0
    var_pre = ratio_var(pooled, "yp", "lp")
    theta = ratio_cov(pooled, "y", "l", "yp", "lp") / var_pre if var_pre > 0 else 0.0
    centre = pooled.mean["yp"] / pooled.mean["lp"]

    def adjusted(m: UnitMoments) -> tuple:
        mean = m.mean["y"] / m.mean["l"] - theta * (m.mean["yp"] / m.mean["lp"] - centre)
        var = (ratio_var(m, "y", "l") + theta * theta * ratio_var(m, "yp", "lp")
               - 2 * theta * ratio_cov(m, "y", "l", "yp", "lp"))
        return mean, var

    return adjusted(x), adjusted(y), theta
