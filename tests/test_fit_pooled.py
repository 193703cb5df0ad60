"""Pooled fits over several runs, fixed delays, the duration floor and the reported uncapped shape."""

import numpy as np
import pytest

from spn.fit.erlang import erlang_samples, fit_delay, fit_phase, fit_pooled
from spn.logs.records import DURATION_FLOOR_S, duration_floor


def test_pooling_runs_with_different_means_keeps_the_shape():
    """Two runs of Erlang(6) at means 1 and 3: pooled raw, the spread of the means would fake a low shape."""
    rng = np.random.default_rng(3)
    a, b = erlang_samples(6, 1.0, 1500, seed=rng), erlang_samples(6, 3.0, 1500, seed=rng)
    raw = fit_phase(np.concatenate([a, b]))
    pooled = fit_pooled([a, b])
    assert raw.fit.shape <= 3
    assert abs(pooled.fit.shape - 6) <= 1
    assert pooled.fit.mean == pytest.approx(np.concatenate([a, b]).mean())
    assert pooled.fit.n == 3000 and pooled.fit.ks < 0.05


def test_pooled_fit_at_a_predicted_mean_rescales_the_samples():
    groups = [erlang_samples(4, 2.0, 500, seed=1), erlang_samples(4, 2.2, 500, seed=2)]
    pf = fit_pooled(groups, mean=5.0)
    assert pf.fit.mean == 5.0
    assert np.mean(pf.samples) == pytest.approx(5.0)
    assert list(pf.samples) == sorted(pf.samples)


def test_pooled_fit_of_one_group_is_fit_phase():
    x = erlang_samples(3, 1.5, 300, seed=4)
    assert fit_pooled([x]).fit == fit_phase(x).fit


def test_pooled_fit_refuses_nothing_to_fit():
    with pytest.raises(ValueError, match="no positive"):
        fit_pooled([[0.0], []])
    with pytest.raises(ValueError, match="finite"):
        fit_pooled([[1.0, float("inf")]])


def test_uncapped_shape_is_reported():
    nearly_constant = 5.0 + np.linspace(-0.05, 0.05, 200)
    pf = fit_phase(nearly_constant, max_shape=10)
    assert pf.fit.shape == 10 and pf.capped and pf.uncapped_shape > 100
    free = fit_phase(erlang_samples(2, 1.0, 2000, seed=5), max_shape=10)
    assert not free.capped and free.uncapped_shape == free.fit.shape


def test_fixed_delay_gets_the_largest_shape():
    d = fit_delay([2.0, 4.0, 3.0], max_shape=7)
    assert (d.fit.shape, d.fit.mean, d.fit.method, d.samples) == (7, 3.0, "delay", (2.0, 3.0, 4.0))
    with pytest.raises(ValueError):
        fit_delay([0.0])


def test_duration_floor_counts_zero_ms_tasks_as_half_a_tick():
    assert duration_floor([0.0, -0.001, 0.25]).tolist() == [DURATION_FLOOR_S, DURATION_FLOOR_S, 0.25]
