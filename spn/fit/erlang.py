"""Task-time distributions from measured task durations (seconds).

The analytic model times every task of a phase with an Erlang(k, mean) law
(k = 1 is exponential; a larger k is less variable: its squared coefficient
of variation is 1/k). This module picks k and the mean from measurements:

- :func:`fit_erlang_moments`: k = round(mean^2 / variance), the quick rule;
- :func:`fit_erlang_mle`: the k (1..max_shape) of highest likelihood, with the
  rate at its maximum-likelihood value k/mean for each k;
- :func:`fit_phase`: cleans a phase's durations, fits, and keeps the sorted
  sample for simulation (``distribution: empirical``).

Every fit reports its Kolmogorov-Smirnov statistic against the fitted Erlang,
so a poor fit (a phase with stragglers, say) is visible, not hidden; a
phase's fit also carries a :class:`FitQuality` (:func:`fit_quality`): the KS
distance, a p-value corrected for the fitted parameters (parametric
bootstrap, Lilliefors' idea) and a verdict at the 1 % level.

Which durations to give it (the rule used by ``spn``): **successful attempts
only**. A failed attempt's time is reported separately (see
``spn.logs.spark_stages.failed_attempt_seconds``), not fitted: it is lost work,
not a sample of a task's time; a killed speculative copy is not a task at all
(its task's time is the attempt that succeeded). The readers'
``stage_task_durations`` (Spark) and ``attempt_durations`` (MapReduce) already
return exactly these.

The fits are deterministic; the one stochastic function here,
:func:`erlang_samples`, takes ``seed`` (an int, a ``numpy.random.Generator``
or ``None``) and never touches global random state.

>>> fit = fit_erlang_mle(erlang_samples(3, 2.0, 2000, seed=1))
>>> fit.shape, round(fit.mean, 1)
(3, 2.0)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ErlangFit",
    "PhaseFit",
    "fit_erlang_moments",
    "fit_erlang_mle",
    "fit_phase",
    "erlang_loglik",
    "erlang_samples",
    "phase_description",
    "fit_pooled",
    "fit_delay",
    "FitQuality",
    "fit_quality",
    "REJECT_LEVEL",
    "MIN_TEST_SAMPLES",
    "misfit_effect",
]

#: ln Gamma over an array (math.lgamma, as :func:`erlang_loglik` uses; scipy is not needed to import this module)
_LOG_GAMMA = np.vectorize(math.lgamma, otypes=[float])

#: shapes searched to tell the shape the data asked for (reported) from the capped one (used)
_UNCAPPED_SHAPE = 1000

#: a fit whose corrected KS p-value is below this is rejected
REJECT_LEVEL = 0.01
#: fewer task samples than this get no verdict: a KS test on 4 points rejects almost nothing
MIN_TEST_SAMPLES = 5
#: bootstrap replicates: p resolves to 1/1000, ten times finer than the 1 % level
BOOTSTRAP_REPLICATES = 999
#: at most this many simulated durations per bootstrap (fewer replicates for a huge phase) and per block
_BOOTSTRAP_DRAWS = 5_000_000
_BLOCK_DRAWS = 500_000


@dataclass(frozen=True)
class ErlangFit:
    """An Erlang(``shape``, ``mean``) fitted to ``n`` durations.

    ``loglik`` is the log-likelihood of the sample under the fit; ``ks`` and
    ``ks_pvalue`` are the Kolmogorov-Smirnov statistic and p-value against the
    fitted law (``None`` for a single sample). The p-value is optimistic:
    the law was fitted to the same sample. ``method`` is ``"mle"`` or ``"moments"``.

    >>> ErlangFit(shape=4, mean=2.0, n=10, loglik=-9.0, ks=0.1, ks_pvalue=0.9, method="mle").scv
    0.25
    """

    shape: int
    mean: float
    n: int
    loglik: float
    ks: float | None
    ks_pvalue: float | None
    method: str

    @property
    def rate(self) -> float:
        """Rate of each of the ``shape`` exponential stages: shape / mean."""
        return self.shape / self.mean

    @property
    def scv(self) -> float:
        """Squared coefficient of variation of the fitted law: 1 / shape."""
        return 1.0 / self.shape


@dataclass(frozen=True)
class PhaseFit:
    """A phase's fitted task time plus the sample it came from.

    ``samples`` are the positive durations used, sorted (ready for an
    empirical task time); ``dropped`` counts the zero or negative durations
    left out. ``uncapped_shape`` is the shape the same method picks with no
    cap (up to 1000): when it is larger than ``fit.shape`` the cap decided.
    ``quality`` is the goodness of fit (:func:`fit_quality`; ``None`` for a delay, or a fit not tested).
    """

    fit: ErlangFit
    samples: tuple[float, ...]
    dropped: int
    uncapped_shape: int | None = None
    quality: "FitQuality | None" = None

    @property
    def capped(self) -> bool:
        """Whether ``max_shape`` lowered the shape the data asked for."""
        return self.uncapped_shape is not None and self.uncapped_shape > self.fit.shape


@dataclass(frozen=True)
class FitQuality:
    """How well a phase's fitted Erlang describes its task-time samples.

    ``ks_distance`` is the Kolmogorov-Smirnov distance D between the
    samples and the fitted law. ``ks_p_value_kstest`` is scipy's
    ``kstest`` p-value against that law: **optimistic**, since the law was
    fitted to the same samples (it lies closer to them than the true law
    would, so D looks small). ``ks_p_value`` corrects for it, as Lilliefors
    did for the normal law, by a parametric bootstrap: ``replicates``
    samples of the same size drawn from the fitted law (rounded to the
    log's clock tick, like the data), each refitted by the same method and
    cap, and p = (1 + #{D* >= D}) / (replicates + 1), so it is never below
    1/(replicates + 1). ``verdict`` is ``"ok"``, ``"rejected"`` (p < 1 %)
    or ``"too few samples"`` (under :data:`MIN_TEST_SAMPLES`: no p-value).

    >>> q = fit_phase(erlang_samples(3, 2.0, 300, seed=4)).quality
    >>> q.verdict, q.samples, q.ks_p_value > 0.01
    ('ok', 300, True)
    """

    samples: int
    ks_distance: float | None
    ks_p_value: float | None
    ks_p_value_kstest: float | None
    replicates: int
    verdict: str

    @property
    def rejected(self) -> bool:
        """Whether the fitted law is rejected at :data:`REJECT_LEVEL`."""
        return self.verdict == "rejected"

    def as_dict(self) -> dict:
        """The machine-readable keys a model's ``reference.phases.<name>`` keeps."""
        return {"samples": self.samples, "ks_distance": self.ks_distance, "ks_p_value": self.ks_p_value,
                "ks_p_value_kstest": self.ks_p_value_kstest, "bootstrap_replicates": self.replicates,
                "verdict": self.verdict}


def fit_quality(samples, fit: ErlangFit, *, max_shape: int, sizes=None, tick: float | None = None,
                replicates: int | None = None, seed=0) -> FitQuality:
    """The goodness of ``fit`` (fitted to ``samples`` with cap ``max_shape``): KS D, corrected p, verdict.

    ``sizes`` are the sizes of the groups that were each scaled to their
    own mean before fitting (:func:`fit_pooled`; default one group of all
    samples); ``tick`` is the clock resolution the samples were measured at
    (seconds; simulated samples are rounded to it, since ties add to D);
    ``replicates`` defaults to :data:`BOOTSTRAP_REPLICATES` (fewer for a
    phase over 5,000 samples). Deterministic for a given ``seed``.

    >>> x = np.concatenate([erlang_samples(20, 1.0, 100, seed=1), erlang_samples(20, 5.0, 100, seed=2)])
    >>> q = fit_quality(x, fit_erlang_mle(x, 1000), max_shape=1000)
    >>> q.verdict, q.ks_p_value
    ('rejected', 0.001)
    """
    x = _positive_samples(samples)
    n = int(x.size)
    if n < MIN_TEST_SAMPLES or fit.ks is None:
        return FitQuality(n, fit.ks, None, fit.ks_pvalue, 0, "too few samples")
    sizes = [n] if sizes is None else [int(v) for v in sizes]
    if sum(sizes) != n:
        raise ValueError(f"group sizes {sizes} do not add up to the {n} samples")
    if replicates is None:
        replicates = min(BOOTSTRAP_REPLICATES, max(99, _BOOTSTRAP_DRAWS // n))
    return _bootstrap(fit, max_shape, tuple(sizes), tick, int(replicates), int(seed))


#: goodness-of-fit tests kept: what-if models of one pilot at other executor counts mostly fit the same
#: (scaled) samples again, and the test draws from the fit alone
KEPT_TESTS = 32


@functools.lru_cache(maxsize=KEPT_TESTS)
def _bootstrap(fit: ErlangFit, max_shape: int, sizes: tuple, tick, replicates: int, seed: int) -> FitQuality:
    """:func:`fit_quality`'s parametric bootstrap: samples of ``sizes`` drawn from ``fit``, refitted, their KS
    distances against ``fit.ks``."""
    n = sum(sizes)
    rng = np.random.default_rng(seed)
    # a single raw group is simulated at its own scale, so that rounding to the tick bites as in the log
    scale = fit.mean / fit.shape if len(sizes) == 1 else 1.0 / fit.shape
    block = max(1, _BLOCK_DRAWS // n)
    exceed, done = 0, 0
    while done < replicates:
        rows = min(block, replicates - done)
        parts = []
        for size in sizes:
            draws = rng.gamma(fit.shape, scale, size=(rows, size))
            if tick:
                draws = np.maximum(np.round(draws / tick) * tick, tick / 2)  # 0 ticks count as half a tick
            parts.append(draws / draws.mean(axis=1, keepdims=True))
        exceed += int(np.count_nonzero(_ks_of_rows(np.hstack(parts), fit.method, max_shape) >= fit.ks - 1e-12))
        done += rows
    p_value = (1 + exceed) / (replicates + 1)
    verdict = "rejected" if p_value < REJECT_LEVEL else "ok"
    return FitQuality(n, fit.ks, p_value, fit.ks_pvalue, int(replicates), verdict)


def misfit_effect(phase_fit: "PhaseFit") -> str:
    """Where the measured tasks and the fitted Erlang differ most, and their 95th percentiles, in words.

    >>> x = np.concatenate([erlang_samples(50, 1.0, 100, seed=1), erlang_samples(50, 5.0, 100, seed=2)])
    >>> print(misfit_effect(fit_phase(x, max_shape=1000)))
    at 1.13 s 46 % of the tasks are shorter, the law says 17 %; p95 5.82 s measured, 7.12 s fitted
    """
    import scipy.stats

    fit = phase_fit.fit
    x = np.asarray(phase_fit.samples, dtype=float)
    law = scipy.stats.gamma(fit.shape, scale=fit.mean / fit.shape)
    cdf = law.cdf(x)
    n = x.size
    below = np.arange(1, n + 1) / n - cdf          # the sample's CDF just at x[i], over the law's
    above = cdf - np.arange(0, n) / n               # the law's CDF over the sample's just before x[i]
    i = int(np.argmax(np.maximum(below, above)))
    share = (i + 1) / n if below[i] >= above[i] else i / n
    measured_p95 = float(np.quantile(x, 0.95))
    return (f"at {x[i]:.3g} s {share:.0%} of the tasks are shorter, the law says {cdf[i]:.0%}; "
            f"p95 {measured_p95:.3g} s measured, {float(law.ppf(0.95)):.3g} s fitted").replace("%", " %")


def erlang_loglik(samples, shape: int, mean: float) -> float:
    """Log-likelihood of positive ``samples`` under Erlang(``shape``, ``mean``).

    Closed form of ``scipy.stats.gamma.logpdf(x, shape, scale=mean/shape).sum()``:
    n (k ln(k/m) - ln Gamma(k)) + (k - 1) sum ln x - (k/m) sum x.

    >>> round(erlang_loglik([1.0, 2.0], 1, 1.5), 6) == round(2 * math.log(1 / 1.5) - 3 / 1.5, 6)
    True
    """
    x = _positive_samples(samples)
    rate = shape / mean
    return float(
        x.size * (shape * math.log(rate) - math.lgamma(shape))
        + (shape - 1) * np.log(x).sum()
        - rate * x.sum()
    )


def fit_erlang_moments(samples, max_shape: int = 50) -> ErlangFit:
    """Erlang by moments: mean = sample mean, k = round(mean^2 / variance) clipped to [1, max_shape].

    The variance is the unbiased one (ddof=1); a sample with no spread (or of
    size 1) gets ``max_shape`` (nearly deterministic) or 1 (size 1).

    >>> fit_erlang_moments([1.0, 2.0, 3.0]).shape   # mean 2, variance 1
    4
    """
    x = _positive_samples(samples)
    _check_max_shape(max_shape)
    mean = float(x.mean())
    if x.size == 1:
        shape = 1
    else:
        variance = float(x.var(ddof=1))
        shape = max_shape if variance == 0.0 else int(round(mean * mean / variance))
        shape = min(max(shape, 1), max_shape)
    return _erlang_fit(x, shape, mean, "moments")


def fit_erlang_mle(samples, max_shape: int = 50) -> ErlangFit:
    """Erlang by maximum likelihood over the integer shapes 1..max_shape.

    For a given k the likelihood is highest at rate k/mean (mean = sample
    mean), so only k is searched: the k with the largest
    :func:`erlang_loglik` wins (the smaller k on a tie).

    >>> fit_erlang_mle([2.0]).shape, fit_erlang_mle([2.0]).ks is None
    (1, True)
    """
    x = _positive_samples(samples)
    _check_max_shape(max_shape)
    mean = float(x.mean())
    if x.size == 1:
        return _erlang_fit(x, 1, mean, "mle")
    shapes = np.arange(1, max_shape + 1, dtype=float)
    logliks = (
        x.size * (shapes * np.log(shapes / mean) - _LOG_GAMMA(shapes))
        + (shapes - 1.0) * np.log(x).sum()
        - shapes / mean * x.sum()
    )
    shape = int(shapes[int(np.argmax(logliks))])
    return _erlang_fit(x, shape, mean, "mle")


def fit_phase(durations, *, method: str = "mle", max_shape: int = 50, test: bool = True) -> PhaseFit:
    """Fit one phase's task durations (seconds): drop those <= 0, fit, keep the sorted sample.

    ``method`` is ``"mle"`` (default) or ``"moments"``; ``test=False`` leaves out the goodness of fit
    (:func:`fit_quality`, 0.1-1 s a phase: a model only evaluated needs none). Raises ``ValueError``
    when no positive duration is left or a duration is not finite.

    >>> pf = fit_phase([0.0, 2.0, 3.0, 4.0])
    >>> pf.dropped, pf.samples, pf.fit.n
    (1, (2.0, 3.0, 4.0), 3)
    """
    x = np.asarray(durations, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("no task durations to fit (empty sample)")
    if not np.all(np.isfinite(x)):
        raise ValueError("task durations must be finite numbers (found NaN or infinity)")
    kept = np.sort(x[x > 0])
    dropped = int(x.size - kept.size)
    if kept.size == 0:
        raise ValueError(f"no positive task durations to fit: all {x.size} are zero or negative")
    fitter = _fitter(method)
    fit = fitter(kept, max_shape)
    uncapped = fitter(kept, max(_UNCAPPED_SHAPE, max_shape)).shape if fit.shape == max_shape else fit.shape
    quality = fit_quality(kept, fit, max_shape=max_shape, tick=_clock_tick(kept)) if test else None
    return PhaseFit(fit=fit, samples=tuple(float(v) for v in kept), dropped=dropped, uncapped_shape=uncapped,
                    quality=quality)


def fit_pooled(groups, *, mean: float | None = None, method: str = "mle", max_shape: int = 50,
               test: bool = True) -> PhaseFit:
    """One task-time law from several samples of the same phase (one per run), each scaled to its own mean.

    The *shape* is fitted to the pooled sample of ``x / mean(x)`` of every
    group, so that runs whose means differ (a phase measured at two data
    sizes, say) do not widen the law; the *mean* is ``mean`` when given (a
    prediction), else the mean of all durations. ``samples`` are the pooled
    durations rescaled to that mean (for an empirical task time); the KS
    statistic is the one of the scaled sample against the fitted shape.
    Durations <= 0 are dropped per group, and ``test`` is, as in :func:`fit_phase`.

    >>> pf = fit_pooled([[1.0, 1.1, 0.9], [2.0, 2.2, 1.8]], mean=3.0)
    >>> pf.fit.mean, pf.fit.shape > 50 // 2, pf.fit.n
    (3.0, True, 6)
    """
    kept, dropped = [], 0
    for group in groups:
        x = np.asarray(group, dtype=float).ravel()
        if x.size and not np.all(np.isfinite(x)):
            raise ValueError("task durations must be finite numbers (found NaN or infinity)")
        positive = x[x > 0]
        dropped += int(x.size - positive.size)
        if positive.size:
            kept.append(positive)
    if not kept:
        raise ValueError("no positive task durations to fit")
    if len(kept) == 1 and mean is None:
        return fit_phase(kept[0], method=method, max_shape=max_shape, test=test)
    raw = np.concatenate(kept)
    target = float(raw.mean()) if mean is None else float(mean)
    if not (math.isfinite(target) and target > 0):
        raise ValueError(f"mean must be a finite number > 0, got {mean!r}")
    unit = np.sort(np.concatenate([x / x.mean() for x in kept]))
    fitter = _fitter(method)
    unit_fit = fitter(unit, max_shape)
    uncapped = (fitter(unit, max(_UNCAPPED_SHAPE, max_shape)).shape
                if unit_fit.shape == max_shape else unit_fit.shape)
    scaled = unit * target
    fit = _erlang_fit(scaled, unit_fit.shape, target, unit_fit.method)
    # each run was scaled to its own mean before the shape was fitted: the bootstrap does the same per run
    quality = fit_quality(scaled, fit, max_shape=max_shape, sizes=[x.size for x in kept]) if test else None
    return PhaseFit(fit=fit, samples=tuple(float(v) for v in scaled), dropped=dropped, uncapped_shape=uncapped,
                    quality=quality)


def fit_delay(durations, *, max_shape: int = 10) -> PhaseFit:
    """A fixed delay (driver work, scheduling gaps, start-up) as a nearly constant task time.

    A delay is one observed number per run, too few to fit a law: it gets
    the mean of the observations and the largest shape allowed
    (Erlang(``max_shape``): squared coefficient of variation 1/max_shape),
    the closest an Erlang comes to a constant under the cap.

    >>> d = fit_delay([2.0, 4.0], max_shape=10)
    >>> d.fit.mean, d.fit.shape
    (3.0, 10)
    """
    x = np.asarray(durations, dtype=float).ravel()
    x = x[np.isfinite(x) & (x > 0)]
    if x.size == 0:
        raise ValueError("no positive delay to fit")
    _check_max_shape(max_shape)
    mean = float(x.mean())
    fit = _erlang_fit(x, int(max_shape), mean, "delay")
    return PhaseFit(fit=fit, samples=tuple(float(v) for v in np.sort(x)), dropped=0,
                    uncapped_shape=int(max_shape))


def erlang_samples(shape: int, mean: float, size: int, *, seed=None) -> np.ndarray:
    """``size`` draws of Erlang(``shape``, ``mean``); ``seed``: int, ``numpy.random.Generator`` or None.

    >>> erlang_samples(2, 3.0, 4, seed=7).shape
    (4,)
    """
    rng = np.random.default_rng(seed)
    return rng.gamma(shape, mean / shape, size)


def phase_description(name: str, tasks: int, phase_fit: PhaseFit, *, empirical: bool = False,
                      digits: int | None = None, driver: bool = False) -> dict:
    """One ``phases`` entry of a model description (docs/design.md §4) from a fit.

    Erlang by default; ``empirical=True`` keeps the measured sample instead
    (simulation only), as ``distribution: deterministic`` when it holds one
    value. ``digits`` rounds the task time and the samples to that many
    significant digits (what a written model keeps). ``driver=True`` marks a
    phase of driver time (``kind: driver``), which holds no container.

    >>> phase_description("map", 4, fit_phase([2.0, 2.2, 1.8, 2.1]))["shape"]
    50
    >>> phase_description("driver", 1, fit_delay([0.1234567]), empirical=True, digits=3, driver=True)
    {'name': 'driver', 'tasks': 1, 'task_time': 0.123, 'distribution': 'deterministic', 'kind': 'driver'}
    """
    def kept(value: float) -> float:
        return float(value) if digits is None else float(f"{value:.{digits}g}")

    entry = {"name": name, "tasks": int(tasks), "task_time": kept(phase_fit.fit.mean)}
    if not empirical:
        entry["shape"] = int(phase_fit.fit.shape)
    elif len(set(samples := [kept(v) for v in phase_fit.samples])) == 1:
        entry["distribution"] = "deterministic"
    else:
        entry["distribution"] = "empirical"
        entry["samples"] = samples
    if driver:
        entry["kind"] = "driver"
    return entry


# --------------------------------------------------------------------------


def _fitter(method: str):
    if method == "mle":
        return fit_erlang_mle
    if method == "moments":
        return fit_erlang_moments
    raise ValueError(f"method must be 'mle' or 'moments', got {method!r}")


def _positive_samples(samples) -> np.ndarray:
    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("no task durations to fit (empty sample)")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(
            "task durations must be finite and > 0 (use fit_phase to drop zero or negative ones)"
        )
    return x


def _check_max_shape(max_shape: int) -> None:
    if int(max_shape) != max_shape or max_shape < 1:
        raise ValueError(f"max_shape must be an integer >= 1, got {max_shape!r}")


def _erlang_fit(x: np.ndarray, shape: int, mean: float, method: str) -> ErlangFit:
    """The :class:`ErlangFit` of ``x`` for a chosen shape and mean, with its goodness of fit."""
    if x.size > 1:
        import scipy.stats  # here, not at the top: importing spn.fit stays quick

        test = scipy.stats.kstest(x, "gamma", args=(shape, 0.0, mean / shape))
        ks, ks_pvalue = float(test.statistic), float(test.pvalue)
    else:
        ks = ks_pvalue = None
    return ErlangFit(
        shape=shape, mean=mean, n=int(x.size), loglik=erlang_loglik(x, shape, mean),
        ks=ks, ks_pvalue=ks_pvalue, method=method,
    )


def _clock_tick(x: np.ndarray) -> float | None:
    """0.001 when every duration is a whole number of half milliseconds (a log's clock), else None."""
    half_ms = x * 2000.0
    return 0.001 if np.all(np.abs(half_ms - np.round(half_ms)) < 1e-6 * np.maximum(1.0, half_ms)) else None


def _ks_of_rows(u: np.ndarray, method: str, max_shape: int) -> np.ndarray:
    """KS distance of every row of ``u`` (each of mean 1) to the Erlang refitted to that row, as :func:`fit_phase` does."""
    import scipy.special

    rows, n = u.shape
    if method == "mle":
        # at mean 1 the log-likelihood L(k) is concave in k, and L(k+1) - L(k) = n (g(k) - c) with
        # g(k) = (k+1) ln(1 + 1/k) - 1 decreasing and c = -mean(ln u): the best integer k is 1 + #{k < max_shape:
        # g(k) > c} (ties to the smaller k, as fit_erlang_mle), found by bisection instead of trying every k
        steps = np.arange(1, max_shape, dtype=float)
        gains = (steps + 1.0) * np.log1p(1.0 / steps) - 1.0
        c = -np.log(u).mean(axis=1)
        k = 1.0 + np.searchsorted(-gains, -c, side="left")
    else:
        variance = u.var(axis=1, ddof=1)
        with np.errstate(divide="ignore"):
            k = np.where(variance == 0.0, max_shape, np.clip(np.round(1.0 / variance), 1, max_shape))
    u = np.sort(u, axis=1)
    cdf = scipy.special.gammainc(k[:, None], k[:, None] * u)   # Erlang(k, mean 1): P(k, k u)
    steps = np.arange(1, n + 1) / n
    return np.maximum((steps - cdf).max(axis=1), (cdf - (steps - 1.0 / n)).max(axis=1))
