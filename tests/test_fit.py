"""Fitting Erlang task times: known parameters are recovered, and a bad model shows in the KS statistic.

Synthetic samples are Erlang(k, mean) with n = 2000 and a fixed seed. With
n = 2000 the standard error of the sample mean is mean / sqrt(k n), at most
2.2 % (k = 1), so 5 % is a >2-standard-error tolerance; over 40 seeds x 15
cases the MLE shape was exact 599 times in 600 and never off by more than 1.
"""

import math
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from spn.fit.erlang import (
    ErlangFit,
    PhaseFit,
    erlang_loglik,
    erlang_samples,
    fit_erlang_mle,
    fit_erlang_moments,
    fit_phase,
    phase_description,
)

SHAPES = [1, 2, 3, 4, 5]
MEANS = [0.5, 3.0, 40.0]
N = 2000


@pytest.fixture(scope="module")
def synthetic():
    """{(k, mean): sample}, all drawn from one seeded generator."""
    rng = np.random.default_rng(20240601)
    return {(k, m): erlang_samples(k, m, N, seed=rng) for k in SHAPES for m in MEANS}


def test_mle_recovers_shape_and_mean(synthetic):
    fits = {key: fit_erlang_mle(x) for key, x in synthetic.items()}
    exact = sum(fit.shape == k for (k, _), fit in fits.items())
    assert exact >= len(fits) - 1, "MLE shape exact for (nearly) all 15 cases"
    for (k, mean), fit in fits.items():
        assert abs(fit.shape - k) <= 1
        assert fit.mean == pytest.approx(mean, rel=0.05)
        assert fit.n == N and fit.method == "mle"
        assert fit.ks < 0.05, f"KS {fit.ks:.3f} for the right model Erlang({k}, {mean})"


def test_moments_recover_shape_and_mean(synthetic):
    fits = {key: fit_erlang_moments(x) for key, x in synthetic.items()}
    exact = sum(fit.shape == k for (k, _), fit in fits.items())
    assert exact >= len(fits) - 2, "moments shape exact for all but at most 2 of 15 cases"
    for (k, mean), fit in fits.items():
        assert abs(fit.shape - k) <= 1
        assert fit.mean == pytest.approx(mean, rel=0.05)
        assert fit.method == "moments" and fit.ks < 0.06


def test_mle_loglik_is_the_best_over_shapes(synthetic):
    x = synthetic[(3, 3.0)]
    fit = fit_erlang_mle(x)
    for k in range(1, 51):
        assert erlang_loglik(x, k, x.mean()) <= fit.loglik + 1e-9


def test_closed_form_loglik_equals_scipy_gamma():
    x = erlang_samples(4, 2.5, 50, seed=3)
    for k in (1, 4, 9):
        expected = scipy.stats.gamma.logpdf(x, k, scale=2.5 / k).sum()
        assert erlang_loglik(x, k, 2.5) == pytest.approx(expected, rel=1e-12)


def test_ks_is_large_for_a_badly_wrong_model():
    # uniform on [5, 15]: squared coefficient of variation 1/12, so Erlang(12) is close, exponential is not
    low_variance = np.random.default_rng(5).uniform(5.0, 15.0, N)
    exponential = fit_erlang_mle(low_variance, max_shape=1)
    assert exponential.shape == 1
    assert exponential.ks > 0.3 and exponential.ks_pvalue < 1e-6
    best = fit_erlang_mle(low_variance)
    assert 9 <= best.shape <= 15 and best.ks < exponential.ks / 4


def test_max_shape_clips_both_fits():
    nearly_constant = np.full(100, 7.0) + np.linspace(-0.01, 0.01, 100)
    assert fit_erlang_mle(nearly_constant, max_shape=8).shape == 8
    assert fit_erlang_moments(nearly_constant, max_shape=8).shape == 8
    assert fit_erlang_moments(np.full(10, 7.0)).shape == 50  # no spread at all


def test_single_sample_is_exponential_without_ks():
    for fit in (fit_erlang_mle([4.2]), fit_erlang_moments([4.2]), fit_phase([4.2]).fit):
        assert (fit.shape, fit.mean, fit.n, fit.ks, fit.ks_pvalue) == (1, 4.2, 1, None, None)


def test_fit_phase_drops_non_positive_durations_and_keeps_the_sorted_sample():
    result = fit_phase([3.0, 0.0, 1.0, -2.0, 2.0])
    assert isinstance(result, PhaseFit)
    assert result.dropped == 2
    assert result.samples == (1.0, 2.0, 3.0)
    assert result.fit.n == 3 and result.fit.mean == 2.0
    assert fit_phase([3.0, 1.0, 2.0], method="moments").fit.method == "moments"


@pytest.mark.parametrize("bad, message", [
    ([], "empty"),
    ([0.0, -1.0], "all 2 are zero or negative"),
    ([1.0, float("nan")], "finite"),
])
def test_fit_phase_refuses_what_cannot_be_fitted(bad, message):
    with pytest.raises(ValueError, match=message):
        fit_phase(bad)


def test_direct_fits_refuse_non_positive_samples_and_bad_options():
    with pytest.raises(ValueError, match="fit_phase"):
        fit_erlang_mle([1.0, 0.0])
    with pytest.raises(ValueError, match="empty"):
        fit_erlang_moments([])
    with pytest.raises(ValueError, match="max_shape"):
        fit_erlang_mle([1.0, 2.0], max_shape=0)
    with pytest.raises(ValueError, match="method"):
        fit_phase([1.0], method="bayes")


def test_erlang_samples_are_reproducible_and_use_no_global_state():
    np.random.seed(0)
    a = erlang_samples(2, 1.0, 5, seed=42)
    np.random.seed(99)
    b = erlang_samples(2, 1.0, 5, seed=42)
    assert np.array_equal(a, b)
    rng = np.random.default_rng(1)
    assert not np.array_equal(erlang_samples(2, 1.0, 5, seed=rng), erlang_samples(2, 1.0, 5, seed=rng))


def test_phase_description_matches_the_model_format():
    pf = fit_phase(erlang_samples(3, 2.0, 500, seed=8))
    entry = phase_description("map", 4, pf)
    assert entry == {"name": "map", "tasks": 4, "task_time": pf.fit.mean, "shape": pf.fit.shape}
    empirical = phase_description("map", 4, pf, empirical=True)
    assert empirical["distribution"] == "empirical" and empirical["samples"] == list(pf.samples)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(min_value=0.01, max_value=1e4), min_size=2, max_size=40),
    st.floats(min_value=0.01, max_value=100.0),
)
def test_fits_are_scale_equivariant(sample, scale):
    """Measuring in other units changes the mean by the same factor and never the shape."""
    x = np.array(sample)
    for fit_function in (fit_erlang_mle, fit_erlang_moments):
        a, b = fit_function(x), fit_function(x * scale)
        assert b.mean == pytest.approx(a.mean * scale, rel=1e-9)
        if a.shape != b.shape:  # allowed only on a near-tie of the log-likelihood / rounding boundary
            assert fit_function is fit_erlang_moments or math.isclose(
                erlang_loglik(x, a.shape, a.mean), erlang_loglik(x, b.shape, a.mean), rel_tol=1e-9)


# --------------------------------------------------------------------------
# On real logs: the fit runs on what the readers return
# --------------------------------------------------------------------------

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.mark.skipif(not (DATA / "spark-events").is_dir(), reason=f"real logs not found at {DATA} (set SPN_DATA)")
def test_fit_on_real_spark_stage_durations():
    from spn.logs.spark import read_spark_log
    from spn.logs.spark_stages import stage_task_durations

    app = read_spark_log(DATA / "spark-events" / "local-1430917381534.json")
    durations = stage_task_durations(app)[0]  # 100 tasks
    result = fit_phase(durations)
    assert isinstance(result.fit, ErlangFit)
    assert result.fit.n == 100 and result.dropped == 0
    assert result.fit.mean == pytest.approx(np.mean(durations))
    assert 1 <= result.fit.shape <= 50 and 0 <= result.fit.ks <= 1
