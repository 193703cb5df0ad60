"""Execution-time percentiles under fifo and fair follow the tagged job by its slot, not by completion order.

Under fifo and fair a younger job can end before an older one, so the tagged job of a passage
time must be followed by its slot in the job-identity net. The checks: the mean equals Little's
R; with one user every policy gives the paper's distribution; a long simulation of the cluster,
job by job, puts each exact percentile at its level; the completion-order reading is measurably
wrong on the same chain.
"""

import numpy as np
import pytest

from spn.pipeline import Question, evaluate_description


def solve_with_distribution(desc, percentiles=(), deadline=None):
    """The exact chain's answer with the tagged job's distribution (the pipeline's exact method)."""
    return evaluate_description(desc, method="exact", question=Question(percentiles=percentiles, deadline=deadline))
from spn.analysis.passage_slots import slot_execution_time_distribution
from spn.description import load_description
from spn.models.jobs import build_jobs
from spn.simulation.cluster import ClusterSimulator
from spn.solvers import steady_state
from spn.solvers.passage import execution_time_distribution
from spn.statespace import explore

MODEL = "models/mapreduce.yaml"


def described(policy, *sets):
    return load_description(MODEL, [f"scheduler.policy={policy}", *sets])


def solved(desc):
    ss = explore(build_jobs(desc).net)
    return ss, steady_state(ss.generator()).x


@pytest.mark.parametrize("policy", ["fifo", "fair"])
def test_the_tagged_jobs_mean_is_littles_r(policy):
    evaluation = solve_with_distribution(described(policy), percentiles=(50, 99))
    assert evaluation.distribution.mean == pytest.approx(evaluation.mean_execution_time, rel=1e-9)
    assert evaluation.distribution.converged


@pytest.mark.parametrize("policy", ["fifo", "fair"])
def test_with_one_user_every_policy_gives_the_papers_distribution(policy):
    paper = solve_with_distribution(described("gate", "workload.users=1"), percentiles=(10, 50, 90, 99))
    identity = solve_with_distribution(described(policy, "workload.users=1"), percentiles=(10, 50, 90, 99))
    for q, seconds in paper.percentiles.items():
        assert identity.percentiles[q] == pytest.approx(seconds, rel=1e-8)


def test_the_tagged_net_without_a_tag_is_the_untagged_net():
    desc = described("fifo")
    assert explore(build_jobs(desc, tagged=True).net).n_states == explore(build_jobs(desc).net).n_states


@pytest.mark.parametrize("policy", ["fifo", "fair"])
def test_a_long_simulation_puts_each_exact_percentile_at_its_level(policy):
    desc = described(policy)
    ss, pi = solved(desc)
    exact = slot_execution_time_distribution(desc, ss, pi)
    sim = ClusterSimulator(desc)
    sim.response_times = []
    sim.run(7, warmup=500, length=60_000)
    times = np.array(sim.response_times).reshape(20, -1)        # 20 batches of consecutive jobs
    for level in (0.5, 0.9, 0.99):
        below = (times <= exact.quantile(level)).mean(axis=1)
        half_width = 3.88 * below.std(ddof=1) / np.sqrt(len(below))     # Student t, 19 df, 99.9 %
        assert abs(below.mean() - level) <= half_width, (policy, level, below.mean(), half_width)


def test_reading_jobs_in_completion_order_would_misplace_the_tail():
    desc = described("fifo")
    ss, pi = solved(desc)
    by_slot = slot_execution_time_distribution(desc, ss, pi)
    by_order = execution_time_distribution(ss, pi, users=3, end_activity="finish", think_place="PJ")
    assert by_order.mean == pytest.approx(by_slot.mean, rel=1e-9)           # any matching keeps the mean
    assert by_slot.quantile(0.99) > 1.05 * by_order.quantile(0.99)           # 26.28 s against 24.05 s
