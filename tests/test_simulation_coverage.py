"""The simulation's 95 % intervals cover the exact answer about 95 % of the time.

Fixed seeds on a tiny one-user model whose mean execution time the CTMC gives exactly;
benchmarks/coverage.py measures the same on more models and seeds (docs/design.md §7.3).
"""

import math

import numpy as np
import pytest

from spn.analysis.solve import solve_description
from spn.description import parse_description
from spn.simulation import simulate_description
from spn.simulation.statistics import Estimate, ratio_estimate, stein_replications, t_quantile

TINY = parse_description({   # gate: the net engine models the paper's gate only (the default is fifo)
    "name": "tiny", "workload": {"users": 1, "think_time": 2.0}, "cluster": {"containers": 2},
    "scheduler": {"policy": "gate"}, "phases": [{"name": "p", "tasks": 3, "task_time": 1.0, "shape": 2}]})


@pytest.fixture(scope="module")
def exact():
    return solve_description(TINY).measures.mean_execution_time


@pytest.mark.parametrize("engine", ["cluster", "net"])
def test_the_stopping_rule_covers_at_its_level(exact, engine):
    seeds = 100
    covered, replications = 0, []
    for seed in range(seeds):
        report = simulate_description(TINY, engine=engine, seed=seed, replications=10, rel_precision=0.03,
                                      jobs=20, warmup_jobs=0)
        covered += report.mean_execution_time.contains(exact)
        replications.append(report.replications)
        assert report.precision_met and report.mean_execution_time.rel_half_width <= 0.03
    # binomial: a correct 95 % interval covers at least 90 times in 100 with probability 0.98
    assert covered >= 90, f"{covered}/{seeds} intervals contain the exact value"
    assert max(replications) > 10          # the rule did add replications


def test_the_pilot_interval_keeps_the_pilot_variance():
    rng = np.random.default_rng(4)
    b = rng.uniform(9, 11, size=40)
    a = 2.0 * b + rng.normal(0, 0.5, size=40)
    est = ratio_estimate(a, b, 0.95, pilot=10)
    r10 = a[:10].sum() / b[:10].sum()
    s10 = np.std(a[:10] - r10 * b[:10], ddof=1)
    assert est.value == pytest.approx(a.sum() / b.sum())
    assert est.half_width == pytest.approx(t_quantile(0.95, 9) * s10 / (math.sqrt(40) * b.mean()))
    assert est.n == 40
    # without a pilot (or a pilot of every replication): the usual interval
    assert ratio_estimate(a, b, 0.95) == ratio_estimate(a, b, 0.95, pilot=40)


def test_stein_asks_for_the_replications_the_pilot_variance_needs():
    pilot = Estimate(10.0, 9.8, 10.2, 0.95, 10)            # 2 % after 10
    assert stein_replications(pilot, 0.01, 10_000) == 40   # 10 · (2 / 1)²
    assert stein_replications(pilot, 0.01, 25) == 25       # at most the limit
    assert stein_replications(pilot, 0.05, 10_000) == 10   # already there
    assert stein_replications(Estimate(10.0, 9.9, 10.1001, 0.95, 40), 0.01, 10_000) == 41   # at least one more
    assert stein_replications(Estimate(0.0, -1.0, 1.0, 0.95, 10), 0.01, 10_000) == 20       # infinite: double
    # a precision so fine that (h / eps)^2 does not fit a float: the limit, not an OverflowError
    assert stein_replications(pilot, 4.07529042200205e-307, 10_000) == 10_000
    assert stein_replications(pilot, 5e-324, 10_000) == 10_000


def test_without_a_precision_the_interval_is_the_usual_one(exact):
    report = simulate_description(TINY, engine="cluster", seed=3, replications=12, rel_precision=None, jobs=20)
    assert report.replications == 12
    assert report.rel_precision is None and report.precision_met
