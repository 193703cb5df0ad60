"""One job alone (one user): the order-statistics method against the exact CTMC and the simulator.

A phase of n tasks on c containers takes tau + M: tau, when the last task starts, has an exact law;
M, the longest remaining time of the c tasks then running, is bounded by the last task's time X
(below) and the longest of c fresh tasks (above, for NBU laws such as Erlang); the point estimate
takes the running tasks' remaining times as stationary, which is exact for exponential tasks.
"""

import numpy as np
import pytest
from scipy import stats

from spn.analysis.alone import _fewer_done, job_alone
from spn.analysis.solve import solve_description
from spn.description import parse_description
from spn.exceptions import ModelError
from spn.simulation.runner import simulate_description


def one_phase(n, c, k, mean=1.0, users=1, distribution="erlang"):
    return parse_description({"name": "x", "workload": {"users": users, "think_time": 1.0},
                              "cluster": {"containers": c},
                              "phases": [{"name": "p", "tasks": n, "task_time": mean, "distribution": distribution,
                                          **({"shape": k} if distribution == "erlang" else {})}]})


def exact(desc) -> float:
    return solve_description(desc).as_dict()["mean_execution_time"]


@pytest.mark.parametrize("n, c", [(3, 2), (5, 2), (7, 3), (9, 2)])
def test_exponential_tasks_are_exact(n, c):
    # memoryless tasks: the running tasks' remaining times are exactly stationary and independent
    result = job_alone(one_phase(n, c, 1))
    assert result.mean == pytest.approx(exact(one_phase(n, c, 1)), rel=1e-5)


@pytest.mark.parametrize("k", [1, 2, 5, 10, 20])
def test_a_phase_that_fits_the_containers_is_the_longest_of_its_tasks(k):
    # n <= C: all start at 0, T = max of n tasks: exact, and the bounds close on it
    desc = one_phase(4, 4, k)
    result = job_alone(desc)
    assert result.mean == pytest.approx(exact(desc), rel=1e-6)
    assert result.low == pytest.approx(result.mean, rel=1e-9) and result.high == pytest.approx(result.mean, rel=1e-9)


def fewer_done_by_hand(j, c, k, phases_mean):
    """P(sum of c floor(P_i / k) < j): every count 0..j-1 of a container, convolved c times."""
    out = []
    for lam in phases_mean:
        per = np.diff(stats.poisson.cdf(np.arange(j + 1) * k - 1, lam))
        total = per
        for _ in range(c - 1):
            total = np.convolve(total, per)[:j]
        out.append(total.sum())
    return np.array(out)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("j, c", [(1, 1), (1, 4), (7, 2), (500, 1), (500, 7), (2000, 25), (6000, 3)])
def test_the_last_start_counts_only_the_window_that_carries_mass(j, c, k):
    # around the transition (c containers have done about j tasks) and far from it on both sides
    centre = j * k / c
    means = np.concatenate([np.linspace(max(centre - 6 * np.sqrt(centre) - 5, 1e-3), centre + 6 * np.sqrt(centre) + 5,
                                        40), [centre / 4 + 1e-3, 3 * centre + 50]])
    assert _fewer_done(j, c, k, means) == pytest.approx(fewer_done_by_hand(j, c, k, means), abs=1e-12)


def test_a_phase_of_a_million_tasks_is_within_its_bounds():
    # only the counts' window is convolved (a window of the whole count took minutes at this size)
    result = job_alone(one_phase(1_000_000, 100, 4, mean=10.0))
    assert result.low <= result.mean <= result.high
    # tau is about n/c task times (9999 waves), then the longest of the last 100 running
    assert 1_000_000 * 10.0 / 100 < result.mean < 1_000_000 * 10.0 / 100 + 40


@pytest.mark.parametrize("k", [2, 5, 10, 20])
@pytest.mark.parametrize("n, c", [(3, 2), (5, 2), (7, 3), (9, 2), (12, 3)])
def test_the_bounds_hold_the_exact_value_and_the_estimate_is_close(n, c, k):
    desc = one_phase(n, c, k)
    truth = exact(desc)
    result = job_alone(desc)
    assert result.low <= truth * (1 + 1e-6) and truth <= result.high * (1 + 1e-6)
    # the stationary residuals are worst when the last task starts in the first waves (n < 3c)
    assert result.mean == pytest.approx(truth, rel=0.025 if n < 3 * c else 0.01)
    assert result.error_bound >= abs(result.mean - truth) / result.mean - 1e-6


def test_a_dag_composes_phases_in_series_and_in_parallel():
    desc = parse_description({"name": "fork", "workload": {"users": 1, "think_time": 1.0},
                              "cluster": {"containers": 4},
                              "phases": [{"name": "a", "tasks": 2, "task_time": 2.0, "shape": 3},
                                         {"name": "b", "tasks": 2, "task_time": 1.0, "shape": 2},
                                         {"name": "j", "tasks": 9, "task_time": 1.0, "shape": 4}],
                              "edges": [["a", "j"], ["b", "j"]]})
    truth = exact(desc)
    result = job_alone(desc)
    assert result.low <= truth <= result.high
    assert result.mean == pytest.approx(truth, rel=0.01)


def test_a_large_phase_agrees_with_a_long_simulation():
    # 400 near-constant tasks (Erlang 200) on 16 containers, then 50 short ones: far past the exact engine
    desc = parse_description({"name": "big", "workload": {"users": 1, "think_time": 1.0},
                              "cluster": {"containers": 16},
                              "phases": [{"name": "scan", "tasks": 400, "task_time": 20.0, "shape": 200},
                                         {"name": "agg", "tasks": 50, "task_time": 1.0, "shape": 3}]})
    result = job_alone(desc)
    sim = simulate_description(desc, engine="cluster", seed=3, replications=20, rel_precision=None, jobs=50,
                               warmup_jobs=0).mean_execution_time
    assert result.low <= sim.ci_high and sim.ci_low <= result.high
    assert result.mean == pytest.approx(sim.value, rel=0.002)


@pytest.mark.parametrize("desc, words", [
    (one_phase(5, 2, 3, users=2), "one user"),
    (one_phase(5, 2, 3, distribution="deterministic"), "Erlang and exponential"),
    (parse_description({"name": "x", "workload": {"users": 1, "think_time": 1.0}, "cluster": {"containers": 4},
                        "phases": [{"name": "a", "tasks": 1, "task_time": 1.0},
                                   {"name": "b", "tasks": 3, "task_time": 1.0},
                                   {"name": "c", "tasks": 3, "task_time": 1.0},
                                   {"name": "d", "tasks": 1, "task_time": 1.0}],
                        "edges": [["a", "b"], ["a", "c"], ["b", "d"]]}),
     "can run together"),
])
def test_where_the_method_does_not_apply_it_says_why(desc, words):
    with pytest.raises(ModelError, match=words):
        job_alone(desc)


def big_one_user_model(users=1):
    return parse_description({"name": "big", "workload": {"users": users, "think_time": 10.0},
                              "cluster": {"containers": 8},
                              "phases": [{"name": "scan", "tasks": 240, "task_time": 10.0, "shape": 60},
                                         {"name": "agg", "tasks": 20, "task_time": 1.0, "shape": 3}]})


def test_spn_solve_answers_one_user_past_the_state_limit_with_the_job_alone_method():
    desc = big_one_user_model()
    result = solve_description(desc, fallback=True, max_states=10_000).as_dict()
    assert result["method"] == "job-alone" and "tangible states" in result["reason"]
    assert result["low"] <= result["mean_execution_time"] <= result["high"]
    assert result["error_bound"] <= 0.01
    r = result["mean_execution_time"]
    # one user: a cycle is one think and one run; the containers are busy with every task's time
    assert result["throughput"] == pytest.approx(1 / (r + 10.0))
    assert result["utilization"] == pytest.approx((240 * 10.0 + 20 * 1.0) / (8 * (r + 10.0)))


def test_several_users_past_the_state_limit_are_simulated():
    result = solve_description(big_one_user_model(users=2), fallback=True, max_states=10_000, seed=1,
                               max_seconds=30).as_dict()
    assert result["method"] == "simulation"


def test_the_job_alone_table_shows_the_method_and_the_bounds(capsys):
    from spn.cli import main

    assert main(["solve", "models/mapreduce.yaml", "--set", "workload.users=1", "--set", "phases.map.shape=40",
                 "--set", "phases.map.tasks=200", "--max-states", "1000"]) == 0
    out = capsys.readouterr().out
    assert "job alone (one user, order statistics)" in out and "bounds [" in out


def siblings(a, b, containers):
    """A source, then two sibling phases a and b (same parent, same child) sharing the containers, then a sink."""
    (na, ma, ka), (nb, mb, kb) = a, b
    return parse_description({"name": "sib", "workload": {"users": 1, "think_time": 1.0},
                              "cluster": {"containers": containers},
                              "phases": [{"name": "s", "tasks": 1, "task_time": 0.5, "shape": 2},
                                         {"name": "a", "tasks": na, "task_time": ma, "shape": ka},
                                         {"name": "b", "tasks": nb, "task_time": mb, "shape": kb},
                                         {"name": "z", "tasks": 2, "task_time": 1.0, "shape": 2}],
                              "edges": [["s", "a"], ["s", "b"], ["a", "z"], ["b", "z"]]})


@pytest.mark.parametrize("a, b, containers", [
    ((3, 2.0, 3), (2, 0.5, 2), 2), ((4, 1.0, 4), (4, 0.2, 2), 2), ((5, 1.0, 5), (3, 1.0, 3), 3),
    ((6, 2.0, 8), (6, 0.1, 2), 3)])
def test_siblings_sharing_the_containers_are_one_group_within_list_scheduling_bounds(a, b, containers):
    # W/c <= T <= W/c + (1 - 1/c) p_max for any order the tasks take the containers in (Graham)
    desc = siblings(a, b, containers)
    truth = exact(desc)
    result = job_alone(desc)
    assert result.low <= truth <= result.high
    assert result.mean == pytest.approx(truth, rel=0.02)


def test_a_large_sibling_group_agrees_with_a_long_simulation():
    # a scan of 300 long tasks beside one of 300 short ones on 8 containers (as Q26's stages 3 and 4)
    desc = siblings((300, 20.0, 150), (300, 0.2, 3), 8)
    result = job_alone(desc)
    sim = simulate_description(desc, engine="cluster", seed=5, replications=20, rel_precision=None, jobs=40,
                               warmup_jobs=0).mean_execution_time
    assert result.low <= sim.ci_high and sim.ci_low <= result.high
    assert result.mean == pytest.approx(sim.value, rel=0.002)
