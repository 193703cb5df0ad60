"""The size of a chain before exploring it: chains of fewer users counted exactly, their growth carried on."""

import pytest

import spn.analysis.state_count as state_count
from spn.analysis.state_count import estimate_states
from spn.description import load_description, parse_description
from spn.exceptions import StateSpaceLimitError
from spn.models.jobs import application_net
from spn.pipeline import Budget, evaluate_description
from spn.statespace import explore

MAPREDUCE = "models/mapreduce.yaml"
JOIN = {"name": "join", "workload": {"users": 5, "think_time": 4.0}, "cluster": {"containers": 2},
        "phases": [{"name": "a", "tasks": 2, "task_time": 1.0, "shape": 2},
                   {"name": "b", "tasks": 3, "task_time": 1.5},
                   {"name": "join", "tasks": 2, "task_time": 2.0, "shape": 2},
                   {"name": "final", "tasks": 1, "task_time": 1.0}],
        "edges": [["a", "join"], ["b", "join"], ["join", "final"]]}


def states(desc) -> int:
    return explore(application_net(desc).net).n_states


def with_users(desc, n):
    from dataclasses import replace

    return replace(desc, workload=replace(desc.workload, users=n))


def test_each_count_is_the_chain_of_fewer_users_and_a_lower_bound_on_the_chain():
    desc = load_description(MAPREDUCE, ["scheduler.policy=fair", "workload.users=6", "cluster.containers=3"])
    estimate = estimate_states(desc)
    assert list(estimate.counts) == [states(with_users(desc, n)) for n in range(1, len(estimate.counts) + 1)]
    assert list(estimate.counts) == sorted(estimate.counts) and estimate.at_least <= states(desc)


@pytest.mark.parametrize("policy", ["fifo", "fair", "gate"])
@pytest.mark.parametrize("model", ["mapreduce", "join"])
def test_past_the_containers_the_growth_is_linear_and_the_projection_exact(monkeypatch, model, policy):
    # sampled up to N - 1 users, past the containers: each added user then adds as many states as the last
    monkeypatch.setattr(state_count, "CHEAP", 0)
    if model == "join":
        desc = parse_description({**JOIN, "scheduler": {"policy": policy}})
    else:
        desc = load_description(MAPREDUCE, [f"scheduler.policy={policy}", "workload.users=7", "cluster.containers=3"])
    assert estimate_states(desc).states == pytest.approx(states(desc), rel=1e-12)


def test_before_the_containers_saturate_the_projection_is_rough_and_says_so():
    # fair, 3 users on 2 containers, from 1-2 users: the growth's fall is not yet seen (10 times over)
    desc = parse_description({**JOIN, "scheduler": {"policy": "fair"}, "workload": {"users": 3, "think_time": 4.0}})
    estimate = estimate_states(desc)
    assert estimate.states >= states(desc) and "rough projection" in estimate.describe()


def test_one_user_or_query_classes_are_not_estimated():
    assert estimate_states(load_description(MAPREDUCE, ["workload.users=1"])) is None
    assert estimate_states(load_description("models/two-queues.yaml")) is None


def test_a_chain_whose_sample_passes_its_limit_keeps_the_partial_count_as_a_lower_bound(monkeypatch):
    monkeypatch.setattr(state_count, "SAMPLE_STATES", 50)
    desc = load_description(MAPREDUCE, ["scheduler.policy=fifo", "workload.users=4"])    # 9, 86 at 1-2 users
    estimate = estimate_states(desc)
    assert estimate.counts == (9,) and estimate.at_least == 50
    assert "more than 50 at 2" in estimate.describe()


def test_the_limit_an_exploration_stopped_at_is_kept_as_a_lower_bound():
    with pytest.raises(StateSpaceLimitError) as stopped:
        explore(application_net(load_description(MAPREDUCE)).net, max_states=10)
    assert stopped.value.reached == 10


def test_solve_skips_a_chain_estimated_past_max_states_before_exploring_it():
    desc = load_description(MAPREDUCE, ["scheduler.policy=fifo", "workload.users=9"])      # 41,160 states
    answer = evaluate_description(desc, budget=Budget(max_states=20_000, seed=1, rel_precision=0.05))
    assert answer.method != "exact"
    assert "not exact: the chain would have about 4.12e+04 tangible states at 9 users" in answer.reason
    answer = evaluate_description(desc, budget=Budget(max_states=100_000, seed=1))
    assert answer.method == "exact" and answer.details["tangible_states"] == 41_160
