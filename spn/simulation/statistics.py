"""Confidence intervals from independent replications (Student t).

Replications are independent and identically distributed, so a measure that is
a mean of per-replication values gets the classical interval
``mean ± t_{n-1, (1+confidence)/2} · s / sqrt(n)``. A measure that is a ratio of
totals (jobs completed / time, time in system / jobs completed) uses the ratio
estimator ``r = Σa_i / Σb_i`` with the delta-method interval
``r ± t_{n-1} · s_d / (sqrt(n) · mean(b))``, ``s_d`` the standard deviation of
``d_i = a_i - r b_i``; it has bias O(1/n) instead of the O(1/length) of a mean of
per-replication ratios.

>>> e = mean_estimate([1.0, 2.0, 3.0], confidence=0.95)
>>> e.value, round(e.half_width, 4)
(2.0, 2.4841)
>>> ratio_estimate([2.0, 4.0], [1.0, 2.0]).value
2.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval over ``n`` replications.

    >>> Estimate(10.0, 9.0, 11.0, 0.95, 5).rel_half_width
    0.1
    """

    value: float
    ci_low: float
    ci_high: float
    confidence: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2.0

    @property
    def rel_half_width(self) -> float:
        """Half-width over |value| (infinite when the value is 0 and the interval is not)."""
        if self.half_width == 0:
            return 0.0
        return self.half_width / abs(self.value) if self.value else math.inf

    def contains(self, x: float) -> bool:
        return self.ci_low <= x <= self.ci_high

    def as_dict(self) -> dict:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "half_width": self.half_width, "rel_half_width": self.rel_half_width}


def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student-t quantile for ``confidence`` with ``df`` degrees of freedom."""
    if df < 1:
        return math.inf
    return float(stdtrit(df, 0.5 + confidence / 2.0))


def mean_estimate(values, confidence: float = 0.95) -> Estimate:
    """Mean of i.i.d. values with a Student-t interval (infinite for fewer than 2 values)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    mean = float(x.mean()) if n else math.nan
    hw = t_quantile(confidence, n - 1) * float(x.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
    return Estimate(mean, mean - hw, mean + hw, confidence, n)


def ratio_estimate(numerators, denominators, confidence: float = 0.95) -> Estimate:
    """``Σa / Σb`` over replications, with a delta-method Student-t interval."""
    a = np.asarray(numerators, dtype=float)
    b = np.asarray(denominators, dtype=float)
    n = len(a)
    r = float(a.sum() / b.sum()) if n else math.nan
    if n > 1:
        d = a - r * b
        hw = t_quantile(confidence, n - 1) * float(d.std(ddof=1)) / (math.sqrt(n) * float(b.mean()))
    else:
        hw = math.inf
    return Estimate(r, r - hw, r + hw, confidence, n)
