"""Percentiles of the execution time and P(R <= deadline) from simulated jobs, with confidence intervals.

The input is the execution times of the jobs each replication measured, one array per
replication (``SimulationReport.job_times``). Point estimates pool every job: the q-th
percentile is :func:`numpy.quantile` of all of them (linear interpolation), P(R <= d) the
fraction of them that took at most d. The interval depends on whether the jobs are
independent:

- ``independent=True`` (one user: every job starts on an empty cluster, so the execution
  times are i.i.d.), distribution-free and exact. Percentile q (p = q/100): the order
  statistics ``[x_(l), x_(u)]`` of the M pooled jobs, with l the (α/2)-quantile of
  Bin(M, p) and u one past its (1 − α/2)-quantile, so that P(l <= B < u) >= 1 − α for any
  law, B the jobs below the true percentile. An order statistic past M (or before the
  first) is an infinite bound. Probability: the Clopper–Pearson interval of K of M.
- ``independent=False`` (several users: the jobs of one replication are correlated, the
  replications independent): sectioning (Asmussen & Glynn, *Stochastic Simulation*, 2007,
  §III.5a), ``θ ± t_{R-1} · S / √R`` with ``S² = Σ_r (θ_r − θ)² / (R − 1)``, θ the pooled
  estimate and θ_r replication r's own (its percentile; for a probability the fraction of
  its jobs <= d, whose interval is the ratio estimator's of :mod:`spn.simulation.statistics`).

Resolution (``independent=False``). A replication's percentile p is trusted when each
replication has at least ``MIN_TAIL_JOBS`` = 10 jobs expected beyond it, n·min(p, 1 − p) >= 10,
n the fewest jobs a replication measured: measured on i.i.d. exponential and lognormal
(σ = 1.5) samples, R = 5 to 30, 3,000 runs per row, the 95 % interval covers 0.94-0.955 of
the time from 10 jobs on, 0.92-0.94 at 3-4 jobs, 0.86-0.90 at 0.5-1. Past that, the unresolved side
of the interval is infinite, and the other side is the bound of the most extreme level
resolved (percentiles grow with p). A probability needs no replication's own percentile,
only the mean of R independent fractions: its t-interval covers 0.93-0.95 of the time once
10 jobs in all are on its rarer side (binomial counts, R = 10 to 100), 0.80 at 3. With fewer,
it widens to Korn & Graubard's Clopper–Pearson interval with effective sample size R (an
average of correlated jobs varies at most as much as one job, so the R·n jobs are worth at
least R independent ones): no zero-width interval from zero exceedances.

>>> import math
>>> import numpy as np
>>> rng = np.random.default_rng(1)
>>> reps = [rng.standard_exponential(400) for _ in range(10)]    # true median ln 2 = 0.693
>>> median = quantile_estimates(reps, [50])[50]
>>> median.contains(math.log(2)), quantile_estimates(reps, [99.9])[99.9].ci_high
(True, inf)
>>> p = probability_estimate(reps, 1.0, independent=True)    # true 1 - 1/e = 0.632
>>> p.contains(1 - math.exp(-1)), round(p.value, 3)
(True, 0.628)
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta, binom

from spn.exceptions import ModelError
from spn.simulation.statistics import Estimate, ratio_estimate, t_quantile

#: jobs a replication must have beyond a percentile (expected) for its own percentile to be trusted,
#: and jobs in all on the rarer side of a deadline for the t-interval of its probability
MIN_TAIL_JOBS = 10


def _replications(samples_per_replication) -> list[np.ndarray]:
    reps = [np.asarray(x, dtype=float).ravel() for x in samples_per_replication]
    if not reps or not sum(x.size for x in reps):
        raise ModelError("no job execution times: run simulate_description(..., job_times=True)")
    if any(np.isnan(x).any() for x in reps):
        raise ModelError("job execution times contain NaN")
    return reps


def _levels(qs) -> list[float]:
    levels = [float(q) for q in qs]
    bad = [q for q in levels if not 0 < q < 100]
    if bad:
        raise ModelError(f"percentiles must be in (0, 100), got {bad}")
    return levels


def _check_confidence(confidence):
    if not 0 < confidence < 1:
        raise ModelError(f"confidence must be in (0, 1), got {confidence!r}")


def quantile_estimates(samples_per_replication, qs, confidence: float = 0.95, *,
                       independent: bool = False) -> dict[float, Estimate]:
    """Percentiles ``qs`` (in (0, 100)) of the pooled samples, each with its interval (module docstring).

    ``independent=True``: order statistics of the pooled jobs (i.i.d. jobs: one user);
    else sectioning over the replications, with infinite bounds where a percentile is too
    extreme for the jobs each replication measured. ``Estimate.n`` is the replications.

    >>> est = quantile_estimates([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]], [50], independent=True)[50]
    >>> est.value, est.ci_low, est.ci_high
    (2.5, 1.0, 4.0)
    """
    _check_confidence(confidence)
    reps, levels = _replications(samples_per_replication), _levels(qs)
    pooled = np.sort(np.concatenate(reps))
    values = np.quantile(pooled, [q / 100 for q in levels]) if levels else []
    if independent:
        bounds = [_order_statistic_interval(pooled, q / 100, confidence) for q in levels]
    else:
        bounds = _sectioning_intervals(reps, pooled, [q / 100 for q in levels], confidence)
    # the point estimate interpolates between order statistics: keep it inside its interval
    return {q: Estimate(float(v), min(lo, float(v)), max(hi, float(v)), confidence, len(reps))
            for q, v, (lo, hi) in zip(levels, values, bounds)}


def _order_statistic_interval(pooled, p, confidence) -> tuple[float, float]:
    """``[x_(l), x_(u)]`` with P(l <= Bin(M, p) < u) >= confidence; infinite past the sample."""
    M, alpha = pooled.size, 1.0 - confidence
    low = int(binom.ppf(alpha / 2, M, p))              # F(low - 1) < α/2: x_(low) <= ξ_p w.p. >= 1 - α/2
    high = int(binom.ppf(1 - alpha / 2, M, p)) + 1     # F(high - 1) >= 1 - α/2: x_(high) >= ξ_p likewise
    return (float(pooled[low - 1]) if low >= 1 else -math.inf,
            float(pooled[high - 1]) if high <= M else math.inf)


def _sectioning_intervals(reps, pooled, ps, confidence) -> list[tuple[float, float]]:
    """Pooled percentile ± t_{R-1} · S / √R, S the spread of the replications' own percentiles
    about the pooled one; an unresolved level gets an infinite bound (module docstring)."""
    R, n = len(reps), min(x.size for x in reps)
    if R < 2 or n < 2 * MIN_TAIL_JOBS:
        return [(-math.inf, math.inf)] * len(ps)
    edge_low, edge_high = MIN_TAIL_JOBS / n, 1.0 - MIN_TAIL_JOBS / n     # the levels resolved
    grid = sorted({min(max(p, edge_low), edge_high) for p in ps})
    centre = np.quantile(pooled, grid)
    own = np.array([np.quantile(x, grid) for x in reps])               # (R, levels)
    spread = np.sqrt(((own - centre) ** 2).sum(axis=0) / (R - 1))
    half = t_quantile(confidence, R - 1) * spread / math.sqrt(R)
    at = {p: (float(c - h), float(c + h)) for p, c, h in zip(grid, centre, half)}
    out = []
    for p in ps:
        lo, hi = at[min(max(p, edge_low), edge_high)]
        # past a resolved edge, that edge bounds one side (percentiles grow with p); the other is open
        out.append((lo, math.inf) if p > edge_high else (-math.inf, hi) if p < edge_low else (lo, hi))
    return out


def probability_estimate(samples_per_replication, deadline: float, confidence: float = 0.95, *,
                         independent: bool = False) -> Estimate:
    """P(execution time <= ``deadline``): the fraction of pooled jobs, with its interval.

    ``independent=True``: Clopper–Pearson on the pooled jobs; else the ratio estimator over
    replications, widened to Korn & Graubard's interval (effective sample size R) when the
    rarer side has fewer than ``MIN_TAIL_JOBS`` jobs in all. Always within [0, 1].

    >>> e = probability_estimate([[1.0, 2.0], [1.5, 2.5]], 3.0, independent=True)
    >>> e.value, round(e.ci_low, 3), e.ci_high      # 4 of 4 jobs: not a zero-width interval
    (1.0, 0.398, 1.0)
    """
    _check_confidence(confidence)
    reps = _replications(samples_per_replication)
    deadline = float(deadline)
    if math.isnan(deadline):
        raise ModelError("deadline must be a number of seconds, got NaN")
    counts = np.array([np.count_nonzero(x <= deadline) for x in reps], dtype=float)
    sizes = np.array([x.size for x in reps], dtype=float)
    K, M, R = counts.sum(), sizes.sum(), len(reps)
    if independent:
        lo, hi = _clopper_pearson(K, M, confidence)
        return Estimate(float(K / M), lo, hi, confidence, R)
    ratio = ratio_estimate(counts, sizes, confidence)
    lo, hi = max(ratio.ci_low, 0.0), min(ratio.ci_high, 1.0)
    if min(K, M - K) < MIN_TAIL_JOBS:
        kg_lo, kg_hi = _clopper_pearson(K / M * R, R, confidence)
        lo, hi = min(lo, kg_lo), max(hi, kg_hi)
    return Estimate(float(K / M), lo, hi, confidence, R)


def _clopper_pearson(k: float, n: float, confidence: float) -> tuple[float, float]:
    """The Clopper–Pearson interval of k successes in n trials (k need not be whole: Korn & Graubard)."""
    alpha = 1.0 - confidence
    lo = float(beta.ppf(alpha / 2, k, n - k + 1)) if k > 0 else 0.0
    hi = float(beta.ppf(1 - alpha / 2, k + 1, n - k)) if k < n else 1.0
    return lo, hi
