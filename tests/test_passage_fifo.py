"""spn.analysis.passage_fifo: a job's execution-time law in the decomposition's fifo chain.

Its mean is the chain's R (Little), one user's law is the Erlang of a job alone, one server with exponential
one-task jobs (M/M/1//N) is the exact chain's law; the registry gives it where its error is within the
precision asked, and refuses fair with the reason.
"""

import math

import numpy as np
import pytest

from spn.analysis.chains import oldest_two, oldest_two_stationary
from spn.analysis.decomposition import decompose, distribution_refused
from spn.analysis.passage_fifo import fifo_passage, flat_from, likely_bottom, likely_top, shared_passage
from spn.description import parse_description
from spn.pipeline import Budget, Question, evaluate_description
from spn.pipeline.methods import Decomposition


def _desc(users, think, containers, tasks, shape, policy="fifo"):
    return parse_description({"name": "p", "workload": {"users": users, "think_time": think},
                              "cluster": {"containers": containers}, "scheduler": {"policy": policy},
                              "phases": [{"name": "a", "tasks": tasks, "task_time": 1.0, "shape": shape}]})


def _erlang_cdf(k, rate, t):
    return 1.0 - math.exp(-rate * t) * sum((rate * t) ** i / math.factorial(i) for i in range(k))


CURVES = [
    (5, 3.0, [0.0, 1.0, 1.6, 1.9, 2.0, 2.0], 6, 3),                      # a few jobs share the cluster
    (8, 10.0, [0.0, 1.0, 1.5] + [1.8] * 6, 20, 5),                         # flat from k = 3
    (12, 40.0, [0.0] + [0.4 * min(k, 5) for k in range(1, 13)], 10, 4),    # several in parallel
]


@pytest.mark.parametrize("N, Z, rates, r, r2", CURVES)
def test_its_mean_is_the_chains_response_time_by_littles_law(N, Z, rates, r, r2):
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    assert x == pytest.approx(oldest_two(N, Z, rates, r, r2), rel=1e-12)
    assert fifo_passage(N, Z, rates, r, r2, pi).mean == pytest.approx(N / x - Z, rel=1e-8)


@pytest.mark.parametrize("N, Z, rates, r, r2", CURVES)
def test_jobs_it_does_not_follow_do_not_move_its_percentiles(N, Z, rates, r, r2):
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    every = fifo_passage(N, Z, rates, r, r2, pi, flat=N + 1, top=N)         # every job behind, to N
    kept = fifo_passage(N, Z, rates, r, r2, pi, top=likely_top(N, [pi], r, r2))
    assert kept.n_states <= every.n_states
    for q in (50, 90, 99):
        assert kept.quantile(q / 100) == pytest.approx(every.quantile(q / 100), rel=1e-7)


def test_in_a_loaded_cluster_the_few_jobs_states_it_leaves_out_do_not_move_its_law():
    # 30 users thinking 2 s in front of a cluster that completes 2 jobs/s: rarely fewer than 11 in;
    # those states, with the fastest arrivals, go, and the law moves by less than the tail they carry
    N, Z, rates = 30, 2.0, [0.0, 1.0, 1.5, 1.8] + [2.0] * 27
    [(x, pi)] = oldest_two_stationary(N, Z, rates, 6, 3)
    bottom = likely_bottom(N, Z, rates, [pi], 6, 3)
    every, kept = fifo_passage(N, Z, rates, 6, 3, pi), fifo_passage(N, Z, rates, 6, 3, pi, bottom=bottom)
    assert bottom > 2 and kept.n_states < every.n_states and kept.niter < every.niter
    assert max(abs(kept.cdf(t) - every.cdf(t)) for t in np.linspace(0, every.quantile(0.9999), 300)) < 1e-9
    assert kept.mean == pytest.approx(N / x - Z, rel=1e-9)


@pytest.mark.parametrize("N, Z, rates, r, r2", CURVES)
def test_where_few_jobs_are_likely_nothing_is_left_out(N, Z, rates, r, r2):
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    assert likely_bottom(N, Z, rates, [pi], r, r2) == 0


def test_one_user_is_the_erlang_of_a_job_alone():
    [(x, pi)] = oldest_two_stationary(1, 5.0, [0.0, 0.25], 7)
    law = fifo_passage(1, 5.0, [0.0, 0.25], 7, 7, pi)
    for t in (1.0, 4.0, 9.0):
        assert law.cdf(t) == pytest.approx(_erlang_cdf(7, 7 * 0.25, t), abs=1e-9)


def test_x_is_flat_from_where_no_rate_moves():
    assert flat_from([0.0, 1.0, 2.0, 2.0, 2.0]) == 2 and flat_from([0.0, 1.0, 2.0, 3.0]) == 3


def test_one_server_with_exponential_one_task_jobs_is_the_exact_chains_law():
    # M/M/1//N under fifo: the chain is exact, job by job
    desc = _desc(4, 3.0, 1, 1, 1)
    exact = evaluate_description(desc, method="exact", question=Question(percentiles=(50, 90, 95), deadline=2.0))
    d = decompose(desc, distribution=True)
    for q, (t, low, high) in d.percentiles((50, 90, 95)).items():
        assert t == pytest.approx(exact.percentiles[q], rel=1e-6)
    assert d.probability(2.0)[0] == pytest.approx(exact.deadline_probability, abs=1e-7)


def test_several_servers_stay_within_the_stated_error_of_the_exact_law():
    # M/M/2//4: the chain lumps the second server's jobs into one; processor sharing, the other end, says how far
    desc = _desc(4, 2.0, 2, 1, 1)
    exact = evaluate_description(desc, method="exact", question=Question(percentiles=(50, 90, 95)))
    d = decompose(desc, distribution=True)
    for q, (t, low, high) in d.percentiles((50, 90, 95)).items():
        assert low <= exact.percentiles[q] <= high


def test_processor_sharing_of_exponential_jobs_has_the_mean_of_the_birth_death_chain():
    rates = [0.0, 1.0, 1.5, 1.8, 1.8]
    from spn.analysis.chains import birth_death

    assert shared_passage(4, 2.0, rates, 1).mean == pytest.approx(4 / birth_death(4, 2.0, rates) - 2.0, rel=1e-8)


def test_the_registry_gives_fifo_percentiles_within_the_precision_asked_and_refuses_fair():
    fifo, fair = _desc(3, 20.0, 2, 6, 4), _desc(3, 20.0, 2, 6, 4, policy="fair")
    question = Question(percentiles=(50, 95), deadline=12.0)
    assert Decomposition().applies(fifo, question) is None
    assert "fair" in Decomposition().applies(fair, question) and distribution_refused(fifo) is None
    loose = evaluate_description(fifo, method="decomposition", question=question, budget=Budget(rel_precision=0.9))
    assert loose.method == "decomposition" and set(loose.percentiles) == {50.0, 95.0}
    for q, t in loose.percentiles.items():
        low, high = loose.percentile_intervals[q]
        assert low <= t <= high
    assert loose.deadline_interval[0] <= loose.deadline_probability <= loose.deadline_interval[1]
    law = loose.as_dict()["execution_time_distribution"]
    assert law["mean"] == pytest.approx(loose.mean_execution_time, rel=1e-7) and law["converged"]
    tight = evaluate_description(fifo, question=question, budget=Budget(rel_precision=0.05, max_states=10,
                                                                      max_seconds=20))
    assert tight.method == "simulation" and "not decomposition: its error estimate of the" in tight.reason


def test_a_job_alone_whose_law_is_not_erlang_is_within_the_stated_error():
    # one user, 6 exponential tasks on 2 containers: a sum of exponential times, not the Erlang of its SCV
    desc = _desc(1, 5.0, 2, 6, 1)
    exact = evaluate_description(desc, method="exact", question=Question(percentiles=(50, 90, 95), deadline=4.0))
    d = decompose(desc, distribution=True)
    for q, (t, low, high) in d.percentiles((50, 90, 95)).items():
        assert low <= exact.percentiles[q] <= high and t != pytest.approx(exact.percentiles[q], rel=1e-3)
    p, low, high = d.probability(4.0)
    assert low <= exact.deadline_probability <= high


def test_a_law_that_takes_longer_than_the_time_given_is_given_up():
    from spn.exceptions import SpnError

    N, Z, rates, r, r2 = CURVES[2]
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    with pytest.raises(SpnError, match="longer than the time given"):
        fifo_passage(N, Z, rates, r, r2, pi, atol=1e-300, deadline=0.0)


def test_where_the_chain_is_product_form_a_job_arrives_to_the_chain_of_one_user_fewer():
    # one stage: the birth-death chain; the arrival theorem: an arriving job sees pi of N - 1 users
    from spn.analysis.chains import _levels
    from spn.analysis.passage_fifo import fifo_passage_chain

    N, Z, rates = 6, 4.0, np.array([0.0, 1.0, 1.7, 2.1, 2.3, 2.3, 2.3])
    [(x, pi)] = oldest_two_stationary(N, Z, rates, 1, 1)
    Q, alpha = fifo_passage_chain(N, Z, rates, 1, 1, pi, flat=N + 1)
    # states: the tagged job oldest (one of the others present: none), then one per position p = 2..N and b
    seen = [alpha[0]] + [sum(alpha[1 + i] for i, (p, b) in enumerate(
        (p, b) for p in range(2, N + 1) for b in range(N - p + 1)) if p == n + 1 and b == 0) for n in range(1, N)]
    assert np.allclose(seen, _levels(N - 1, Z, rates[:N]), rtol=1e-9)
