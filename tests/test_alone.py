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
from spn.pipeline import Budget, evaluate_description
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


@pytest.mark.parametrize("k", [1, 3, 355, 1000])
@pytest.mark.parametrize("j, c", [(1, 1), (1, 4), (7, 2), (500, 1), (500, 7), (494, 6), (452, 48), (2000, 25),
                                  (6000, 3)])
def test_the_last_start_counts_only_the_window_that_carries_mass(j, c, k):
    # around the transition (c containers have done about j tasks) and far from it on both sides; the
    # shapes of fitted Spark stages (Q52's: 355 on 6 to 48 slots) included
    centre = j * k / c
    spread = 6 * np.sqrt(centre) + 5 * k
    means = np.concatenate([np.linspace(max(centre - spread, 1e-3), centre + spread, 40),
                            [centre / 4 + 1e-3, 3 * centre + 50]])
    assert _fewer_done(j, c, k, means) == pytest.approx(fewer_done_by_hand(j, c, k, means), abs=1e-13)


def test_grid_points_transformed_a_few_at_a_time_give_the_same_law(monkeypatch):
    import spn.analysis.alone as alone

    means = np.linspace(100 * 355 / 6 - 3000, 100 * 355 / 6 + 3000, 50)
    whole = _fewer_done(100, 6, 355, means)
    monkeypatch.setattr(alone, "CHUNK", 200)        # a few points per transform
    assert _fewer_done(100, 6, 355, means) == pytest.approx(whole, abs=1e-15)


def test_the_same_job_asked_again_is_not_computed_again():
    # the think time plays no part with one user: a report's one-user point is its pilot's what-if point
    first = job_alone(one_phase(40, 6, 355))
    again = job_alone(parse_description({"name": "y", "workload": {"users": 1, "think_time": 600.0},
                                         "cluster": {"containers": 6},
                                         "phases": [{"name": "p", "tasks": 40, "task_time": 1.0, "shape": 355}]}))
    assert again is first
    assert job_alone(one_phase(40, 7, 355)) is not first


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
    result = evaluate_description(desc, budget=Budget(max_states=10_000)).as_dict()
    assert result["method"] == "job-alone" and "tangible states" in result["reason"]
    assert result["low"] <= result["mean_execution_time"] <= result["high"]
    assert result["error_bound"] <= 0.01
    r = result["mean_execution_time"]
    # one user: a cycle is one think and one run; the containers are busy with every task's time
    assert result["throughput"] == pytest.approx(1 / (r + 10.0))
    assert result["utilization"] == pytest.approx((240 * 10.0 + 20 * 1.0) / (8 * (r + 10.0)))


def test_several_users_past_the_state_limit_are_answered_by_a_method_for_several_users():
    result = evaluate_description(big_one_user_model(users=2),
                                  budget=Budget(max_states=10_000, seed=1, max_seconds=30)).as_dict()
    assert result["method"] in ("decomposition", "simulation")      # not job-alone: the jobs meet


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


# --------------------------------------------------------------------------
# Percentiles and P(R <= deadline), with bounds: the law on the grid, not only its mean
# --------------------------------------------------------------------------

QS = (1, 10, 50, 90, 99, 99.9)


def dag(containers, phases, edges=()):
    """A one-user description from (name, tasks, mean task time, Erlang shape) tuples and edges."""
    return parse_description({"name": "d", "workload": {"users": 1, "think_time": 1.0},
                              "cluster": {"containers": containers},
                              "phases": [{"name": name, "tasks": n, "task_time": m, "shape": k}
                                         for name, n, m, k in phases],
                              "edges": [list(e) for e in edges]})


def mapreduce(k, maps=6, reduces=3, containers=2):
    # more maps than containers: the last map starts late (tau), then the reduces
    return dag(containers, [("map", maps, 1.0, k), ("reduce", reduces, 0.5, k)], [("map", "reduce")])


#: small one-user models the exact chain solves, each a different way of composing phases
SMALL = {
    **{f"mapreduce k={k}": mapreduce(k) for k in (1, 2, 3)},
    "mapreduce 7 maps on 3": mapreduce(2, maps=7, reduces=4, containers=3),
    # two parallel phases joined (independent ends: the product is exact), then exponential tasks (exact too)
    "two parallel phases, then a join": dag(4, [("a", 2, 2.0, 3), ("b", 2, 1.0, 2), ("j", 5, 1.0, 1)],
                                            [("a", "j"), ("b", "j")]),
    # two parallel phases after a common one (their ends share it): series-parallel, composed exactly
    "fork then join": dag(4, [("s", 3, 1.0, 2), ("a", 2, 1.0, 2), ("b", 2, 1.0, 1), ("z", 1, 1.0, 2)],
                          [("s", "a"), ("s", "b"), ("a", "z"), ("b", "z")]),
    # not series-parallel: d waits for a and b, c for a only; the lower law takes the Frechet bound
    "N-shaped DAG": dag(4, [("a", 2, 1.0, 2), ("b", 2, 1.5, 3), ("c", 2, 1.0, 1), ("d", 2, 0.5, 2)],
                        [("a", "c"), ("a", "d"), ("b", "d")]),
    # siblings that need more than the containers: Graham's bound, W and p_max dependent
    "siblings sharing the containers": siblings((3, 2.0, 3), (2, 0.5, 2), 2),
    "siblings, many short tasks": siblings((6, 2.0, 8), (6, 0.1, 2), 3),
    # two groups of siblings, the second waiting for both phases of the first (merging them once failed)
    "crossed sibling groups": dag(2, [("b", 2, 1.0, 2), ("c", 2, 1.5, 1), ("d", 2, 1.0, 3), ("e", 1, 0.5, 2)],
                                  [("b", "d"), ("b", "e"), ("c", "d"), ("c", "e")]),
}


@pytest.fixture(scope="module")
def exact_laws():
    from spn.pipeline import Question, evaluate_description

    return {name: evaluate_description(desc, method="exact", question=Question(percentiles=(50, 90, 99)))
            for name, desc in SMALL.items()}


@pytest.mark.parametrize("name", SMALL)
def test_the_lower_laws_cdf_is_above_the_point_estimates_and_the_upper_laws_below(name):
    # the bounds are stochastic orders (R_low <=st R <=st R_high), not only bounds on the mean
    result = job_alone(SMALL[name])
    assert np.all(result.low_cdf >= result.cdf - 1e-12) and np.all(result.cdf >= result.high_cdf - 1e-12)
    assert result.cdf.size == result.low_cdf.size == result.high_cdf.size and result.cdf[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("name", SMALL)
def test_the_bounds_hold_the_exact_chains_percentiles_and_probabilities(name, exact_laws):
    result, truth = job_alone(SMALL[name]), exact_laws[name]
    for q, (value, low, high) in result.percentiles((50, 90, 99)).items():
        exact = truth.percentiles[q]
        assert low <= exact <= high, (q, low, exact, high)
        assert low <= value <= high
        # at the exact percentile P(R <= d) is q %: the probability's bounds hold it
        _, p_low, p_high = result.probability(exact)
        assert p_low - 1e-9 <= q / 100 <= p_high + 1e-9
    assert result.low <= truth.mean_execution_time * (1 + 1e-6) <= result.high * (1 + 1e-6)


@pytest.mark.parametrize("name", ["mapreduce k=1", "two parallel phases, then a join", "fork then join"])
def test_where_the_method_is_exact_its_percentiles_are_within_the_grid_step(name, exact_laws):
    # exponential tasks (stationary residuals are exact), phases of n <= C, and a fork then a join
    result, truth = job_alone(SMALL[name]), exact_laws[name]
    for q, (value, _, _) in result.percentiles((50, 90, 99)).items():
        assert value == pytest.approx(truth.percentiles[q], abs=result.step)
    assert result.mean == pytest.approx(truth.mean_execution_time, rel=1e-4)


def test_a_fork_then_a_join_is_not_taken_for_independent_branches(exact_laws):
    # the ends of a and b both carry s's time: multiplying their CDFs made R 3.5 % too long, with
    # zero-width "bounds" that missed the truth
    truth = exact_laws["fork then join"].mean_execution_time
    result = job_alone(SMALL["fork then join"])
    assert result.low <= truth <= result.high and result.high - result.low <= 2.001 * result.step  # the grid's


@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [1, 3, 4])
def test_a_phase_that_fits_has_the_closed_form_law_of_the_longest_task(n, k):
    # n <= C tasks all start at 0: P(T <= t) = G(t)^n, G the Erlang(k) CDF of mean 1.5
    from scipy.optimize import brentq

    result = job_alone(one_phase(n, 4, k, mean=1.5))

    def cdf(t):
        return stats.gamma.cdf(t, k, scale=1.5 / k) ** n

    for q, (value, low, high) in result.percentiles(QS).items():
        exact = brentq(lambda t: cdf(t) - q / 100, 0.0, 100.0, xtol=1e-13)
        assert low <= exact <= high and value == pytest.approx(exact, abs=result.step)
        assert high - low <= 2 * result.step  # an exact law: only the grid is left
    for d in (0.1, 0.9, 1.5, 2.7, 6.0):
        value, low, high = result.probability(d)
        assert low <= cdf(d) <= high and value == pytest.approx(cdf(d), abs=1e-6)


def test_one_exponential_task_has_percentiles_minus_m_log_1_minus_q():
    result = job_alone(one_phase(1, 3, 1, mean=2.0, distribution="exponential"))
    for q, (value, low, high) in result.percentiles(QS).items():
        exact = -2.0 * np.log(1 - q / 100)
        assert low <= exact <= high and value == pytest.approx(exact, abs=result.step)
    assert result.probability(2.0)[0] == pytest.approx(1 - np.exp(-1), abs=1e-6)


@pytest.mark.parametrize("name", ["mapreduce k=3", "siblings sharing the containers", "N-shaped DAG"])
def test_probability_and_percentile_are_inverse_of_each_other(name):
    result = job_alone(SMALL[name])
    for q in QS:
        value = result.percentile(q)[0]
        assert result.probability(value)[0] == pytest.approx(q / 100, abs=1e-9)
    for d in np.linspace(result.percentile(1)[0], result.percentile(99.9)[0], 13):  # where the CDF rises
        p = result.probability(d)[0]
        assert result.percentile(100 * p)[0] == pytest.approx(d, abs=result.step)


def test_the_probability_bounds_are_the_grid_points_around_the_deadline():
    result = job_alone(mapreduce(2))
    j = int(result.percentile(50)[0] / result.step)
    value, low, high = result.probability((j + 0.5) * result.step)
    assert (low, high) == (result.high_cdf[j], result.low_cdf[j + 1]) and low < value < high
    assert result.probability(j * result.step)[1:] == (result.high_cdf[j], result.low_cdf[j])
    assert result.probability(-1.0) == (0.0, 0.0, 0.0)
    # past the stored grid every law has ended
    assert result.probability(1e6) == pytest.approx((1.0, 1.0, 1.0), abs=1e-12)


def test_the_percentile_error_bound_is_the_widest_relative_half_width():
    result = job_alone(SMALL["siblings sharing the containers"])
    widths = [max(v - lo, hi - v) / v for v, lo, hi in result.percentiles((50, 99)).values()]
    assert result.percentile_error_bound((50, 99)) == pytest.approx(max(widths))
    # an exact law: only the grid step is left, against Graham's bound for the siblings
    assert job_alone(one_phase(4, 4, 3)).percentile_error_bound() < 1e-3 < result.percentile_error_bound()


@pytest.mark.parametrize("q", [0, 100, -5, 150])
def test_a_percentile_outside_0_100_is_refused(q):
    with pytest.raises(ModelError, match=r"\(0, 100\)"):
        job_alone(mapreduce(1)).percentile(q)
