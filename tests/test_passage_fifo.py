"""spn.analysis.passage_fifo: a job's execution-time law under fifo, from the decomposition's X(k).

One user's law is the Erlang of a job alone, and so is every user's where the jobs run side by side
(X(k) = k X(1)); c servers with exponential one-task jobs (M/M/c//N) give the exact chain's law; its mean
is near the fifo chain's R, and the decomposition scales it there; the registry gives it where its error
is within the precision asked, and refuses fair with the reason.
"""

import math

import numpy as np
import pytest

from spn.analysis.chains import oldest_two, oldest_two_stationary
from spn.analysis.decomposition import decompose, distribution_refused
from spn.analysis.passage_fifo import fifo_passage, fifo_passage_chain, flat_from, landing, likely_top, shared_passage
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


@pytest.mark.parametrize("c", [1, 2, 3])
def test_c_servers_and_exponential_one_task_jobs_give_the_exact_waiting_and_service(c):
    # M/M/c//N under fifo: behind n >= c others a job waits for n − c + 1 ends at c/s, then runs at 1/s
    N, Z = 6, 4.0
    rates = [0.0] + [float(min(k, c)) for k in range(1, N + 1)]
    [(x, pi)] = oldest_two_stationary(N, Z, rates, 1, 1)
    law = fifo_passage(N, Z, rates, 1, 1, pi)
    assert law.mean == pytest.approx(N / x - Z, rel=1e-9)
    from spn.analysis.chains import _levels

    seen = _levels(N - 1, Z, np.array(rates[:N]))          # the arrival theorem: the others' count
    for t in (0.5, 1.0, 3.0):
        waits = [1.0 - math.exp(-t)] * c + [0.0] * (N - c)
        for n in range(c, N):                                # Erlang(n − c + 1, c) then Exp(1), by quadrature
            u = np.linspace(0.0, t, 4001)
            density = c ** (n - c + 1) * u ** (n - c) * np.exp(-c * u) / math.factorial(n - c)
            waits[n] = float(np.trapezoid(density * (1.0 - np.exp(-(t - u))), u))
        assert law.cdf(t) == pytest.approx(float(np.dot(seen, waits)), abs=1e-6)


@pytest.mark.parametrize("N", [2, 5, 9])
def test_jobs_side_by_side_each_run_as_if_alone(N):
    # X(k) = k X(1): whatever is ahead, a job progresses at X(1), the Erlang of a job alone
    rates = [0.0] + [0.5 * k for k in range(1, N + 1)]
    [(x, pi)] = oldest_two_stationary(N, 3.0, rates, 8, 4)
    law = fifo_passage(N, 3.0, rates, 8, 4, pi)
    for t in (4.0, 2.0, 1.0):
        assert law.cdf(t) == pytest.approx(_erlang_cdf(8, 8 * 0.5, t), abs=1e-7)


@pytest.mark.parametrize("N, Z, rates, r, r2", CURVES)
def test_its_mean_is_near_the_fifo_chains_response_time(N, Z, rates, r, r2):
    # the jobs between the oldest and the tagged one are lumped, so near only (the decomposition scales it)
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    assert fifo_passage(N, Z, rates, r, r2, pi).mean == pytest.approx(N / x - Z, rel=0.05)


@pytest.mark.parametrize("N, Z, rates, r, r2", CURVES)
def test_jobs_it_does_not_follow_do_not_move_its_percentiles(N, Z, rates, r, r2):
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    every = fifo_passage(N, Z, rates, r, r2, pi, top=N)
    kept = fifo_passage(N, Z, rates, r, r2, pi, top=likely_top(N, [pi], r, r2))
    assert kept.n_states <= every.n_states
    for q in (50, 90, 99):
        assert kept.quantile(q / 100) == pytest.approx(every.quantile(q / 100), rel=1e-7)


def test_where_x_is_flat_the_job_behind_waits_at_its_first_stage():
    # flat from k = 3: at positions past 3 only the oldest's stage is followed, and the law is the same
    N, Z, rates, r, r2 = CURVES[1]
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    Q, _ = fifo_passage_chain(N, Z, rates, r, r2, pi)
    assert Q.shape[0] == r + 2 * r * r + (N - 3) * r
    followed = fifo_passage(N, Z, rates, r, r2, pi, flat=N)
    law = fifo_passage(N, Z, rates, r, r2, pi)
    for q in (50, 90, 99):
        assert law.quantile(q / 100) == pytest.approx(followed.quantile(q / 100), rel=1e-9)


def test_the_second_lands_where_its_progress_behind_the_oldest_took_it():
    L, ends = landing([0.0, 1.0, 1.0], 4, 2)                 # X flat: it never progressed, nor ends
    assert L.tolist() == [1.0, 0.0, 0.0, 0.0] and ends == 0.0
    L, ends = landing([0.0, 1.0, 2.0], 4, 4)                 # as fast as the oldest: anywhere, on average half way
    assert L.sum() == pytest.approx(1.0) and 0.0 < ends < 1.0 and 0.5 < float(L @ np.arange(4)) < 2.5


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


@pytest.mark.parametrize("servers", [2, 3])
def test_several_servers_with_exponential_one_task_jobs_are_the_exact_chains_law(servers):
    desc = _desc(5, 2.0, servers, 1, 1)
    exact = evaluate_description(desc, method="exact", question=Question(percentiles=(50, 90, 95)))
    d = decompose(desc, distribution=True)
    for q, (t, low, high) in d.percentiles((50, 90, 95)).items():
        assert t == pytest.approx(exact.percentiles[q], rel=1e-6) and low <= exact.percentiles[q] <= high


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


def test_a_job_alone_whose_law_is_not_erlang_is_its_own_law_not_the_chains_erlang():
    # one user, 6 exponential tasks on 2 containers: a sum of exponential times, not the Erlang of its SCV;
    # the chain's Erlang is moved to the job's own law (its percentiles to 400 points)
    desc = _desc(1, 5.0, 2, 6, 1)
    exact = evaluate_description(desc, method="exact", question=Question(percentiles=(50, 90, 95), deadline=4.0))
    d = decompose(desc, distribution=True)
    for q, (t, low, high) in d.percentiles((50, 90, 95)).items():
        assert low <= exact.percentiles[q] <= high and t == pytest.approx(exact.percentiles[q], rel=2e-3)
    assert d.passages[0].quantile(0.95) != pytest.approx(exact.percentiles[95], rel=1e-2)     # the Erlang's is not
    p, low, high = d.probability(4.0)
    assert low <= exact.deadline_probability <= high and p == pytest.approx(exact.deadline_probability, abs=2e-3)
    # the law it reports is the moved one: its std is the job's own, not the Erlang's
    std = evaluate_description(desc, method="decomposition", question=Question(percentiles=(50,)),
                               budget=Budget(rel_precision=1.0)).details["execution_time_distribution"]["std"]
    assert std == pytest.approx(exact.details["execution_time_distribution"]["std"], rel=5e-3)


def test_a_law_that_takes_longer_than_the_time_given_is_given_up():
    from spn.exceptions import SpnError

    N, Z, rates, r, r2 = CURVES[2]
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    with pytest.raises(SpnError, match="longer than the time given"):
        fifo_passage(N, Z, rates, r, r2, pi, atol=1e-300, deadline=0.0)


def test_where_the_chain_is_product_form_a_job_arrives_to_the_chain_of_one_user_fewer():
    # one stage: the birth-death chain; the arrival theorem: an arriving job sees pi of N - 1 users
    from spn.analysis.chains import _levels

    N, Z, rates = 6, 4.0, np.array([0.0, 1.0, 1.7, 2.1, 2.3, 2.3, 2.3])
    [(x, pi)] = oldest_two_stationary(N, Z, rates, 1, 1)
    Q, alpha = fifo_passage_chain(N, Z, rates, 1, 1, pi, flat=N)
    # states: the tagged job oldest, then one per position p = 2..N (one stage each)
    assert np.allclose(alpha, _levels(N - 1, Z, rates[:N]), rtol=1e-9)


def test_a_jobs_own_law_moves_its_percentiles_but_not_its_mean():
    # waiting behind others, then a job alone whose law is tighter than the chain's Erlang of it
    from spn.analysis.passage_fifo import EmpiricalLaw, OwnLaw, stages_law, wait_law

    N, Z, rates, r, r2 = CURVES[1]
    [(x, pi)] = oldest_two_stationary(N, Z, rates, r, r2)
    no_wait, wait = wait_law(N, Z, rates, r, r2, pi)
    assert 0 < no_wait < 1 and wait.mean > 0
    erlang = stages_law(np.full(r, r * rates[1]))
    tight = EmpiricalLaw(np.random.default_rng(1).normal(erlang.mean, 0.01 * erlang.mean, 400))
    own = OwnLaw(no_wait, wait, erlang, tight)
    moves = [own((i + 0.5) / 200) for i in range(200)]
    assert abs(np.mean(moves)) < 5e-3 and max(moves) > 0.02 and min(moves) < -0.02
    law = fifo_passage(N, Z, rates, r, r2, pi)
    assert own.cdf(law, own.quantile(law, 0.9)) == pytest.approx(0.9, abs=1e-6)
