"""Choice gates: a scheduler's pick written as data, evaluated alike by both exploration engines.

- ``ChoiceGate`` holds for the chosen candidate when it is the first eligible one with the
  smallest key: ineligible candidates never win, ties go to the first, keys with a scale
  compare within the gate's tie tolerance, integer keys exactly however large.
- The fair and queue gates of the job-identity nets are choice gates, so those nets count
  as plain for the compiled engine (``is_plain(net, choices=True)``), while a gate with a
  Python predicate or a function still does not.
- The compiled engine builds the same chain as the NumPy engine on fair queues (weighted
  too) and on several queues, entry by entry.
"""

import numpy as np
import pytest

from spn.description import load_description, parse_description
from spn.models.jobs import build_classes, build_jobs
from spn.net import InputGate, InstantActivity, MarkingView, Net, Place, TimedActivity
from spn.net.choice import Candidate, ChoiceGate
from spn.statespace import explore
from spn.statespace.activity_table import is_plain
from test_activity_table import same_chain

pytestmark = pytest.mark.compiled      # run last: the kernels compiled beside the first tests are ready

PLACES = {"run1": 0, "wait1": 1, "run2": 2, "wait2": 3, "run3": 4, "wait3": 5}


def jobs(steps=(1, 1, 1)):
    """Three jobs: eligible with a waiting task; key: running tasks times the job's step."""
    return tuple(Candidate(key=((f"run{j}", s),), needs=((((f"wait{j}", 1),), 1),)) for j, s in zip((1, 2, 3), steps))


def picks(gate_candidates, rows, **kw):
    """Which candidate each marking picks (-1: none), read off the gates of every candidate."""
    view = MarkingView(np.array(rows), PLACES)
    held = np.array([ChoiceGate(gate_candidates, chosen=i, **kw)(view) for i in range(len(gate_candidates))])
    assert (held.sum(axis=0) <= 1).all()            # never two winners
    return np.where(held.any(axis=0), held.argmax(axis=0), -1).tolist()


def test_the_first_eligible_candidate_with_the_fewest_running_tasks_is_picked():
    rows = [[2, 1, 1, 1, 3, 1],     # job 2 runs fewest
            [2, 1, 1, 0, 3, 1],     # job 2 waits for nothing: job 1 of the others
            [1, 1, 1, 1, 1, 1],     # a three-way tie: the first (oldest)
            [0, 0, 5, 1, 0, 0],     # only job 2 is eligible, however many it runs
            [0, 0, 0, 0, 0, 0]]     # nobody waits: no pick
    assert picks(jobs(), rows) == [1, 0, 0, 1, -1]


def test_steps_weigh_the_running_tasks():
    # job 1 counts each task twice (weight 1/2): 2 running weigh 4 > 3
    assert picks(jobs(steps=(2, 1, 1)), [[2, 1, 3, 1, 9, 1]]) == [1]


def test_integer_keys_compare_exactly_however_large_the_steps():
    big = 10 ** 30                  # past int64: summed in Python integers
    gate = jobs(steps=(big, big + 1, 1))
    assert ChoiceGate(gate, chosen=0).largest_sum() > 1 << 62
    assert picks(gate, [[1, 1, 1, 1, 0, 0]]) == [0]     # 10^30 < 10^30 + 1


def test_scaled_keys_tie_within_the_tolerance_and_go_to_the_first():
    queues = tuple(Candidate(key=((f"run{j}", 1),), needs=((((f"wait{j}", 1),), 1),), scale=s)
                   for j, s in ((1, 0.3 * 10), (2, 0.1 * 10), (3, 0.6 * 10)))
    # 3 / 3.0 = 1.0 and 1 / 1.0 = 1.0 tie: the first; 3 / 6.0 = 0.5 is below both
    assert picks(queues, [[3, 1, 1, 1, 6, 0], [3, 1, 1, 1, 3, 1]], tie=1e-12) == [0, 2]


def test_a_chosen_index_outside_the_candidates_or_a_bad_scale_is_refused():
    with pytest.raises(ValueError, match="out of"):
        ChoiceGate(jobs(), chosen=3)
    with pytest.raises(ValueError, match="scale"):
        Candidate(key=(("run1", 1),), scale=0.0)
    with pytest.raises(ValueError, match="pairs"):      # a need written without its enclosing tuple
        Candidate(key=(("run1", 1),), needs=((("wait1", 1),), 1))


def fair_net(users=3, containers=3, weights=None):
    if weights is None:
        return build_jobs(load_description("models/mapreduce.yaml", [
            "scheduler.policy=fair", f"workload.users={users}", f"cluster.containers={containers}"])).net
    classes = [{"name": name, "users": users, "think_time": 4.0, "queue": "q", "weight": w,
                "phases": [{"name": "scan", "tasks": 3, "task_time": 1.0, "shape": 2},
                           {"name": "agg", "tasks": 2, "task_time": 0.5}]} for name, w in zip("ab", weights)]
    return build_classes(parse_description({
        "name": "weighted", "cluster": {"containers": containers}, "classes": classes,
        "queues": [{"name": "q", "capacity": 1.0, "policy": "fair"}]})).net


def two_queues():
    return build_classes(load_description("models/two-queues.yaml", [
        "cluster.containers=4", "classes.etl.users=1", "classes.dashboard.users=2", "classes.etl.phases.map.tasks=3",
        "classes.etl.phases.reduce.tasks=2", "classes.dashboard.phases.scan.tasks=3"])).net


def test_scheduler_gates_are_choice_gates_and_the_nets_count_as_plain_for_the_compiled_engine():
    for net in (fair_net(), two_queues()):
        gated = [a for a in net.activities if a.input_gates]
        assert gated and all(isinstance(g.predicate, ChoiceGate) for a in gated for g in a.input_gates)
        assert is_plain(net, choices=True) and not is_plain(net)


def test_a_python_predicate_or_a_gate_function_keeps_a_net_off_the_compiled_engine():
    def net(gate):
        return Net([Place("idle", 2), Place("ready"), Place("busy")], [
            TimedActivity("arrive", inputs={"idle": 1}, outputs={"ready": 1}, rate=1.0),
            InstantActivity("start", inputs={"ready": 1}, outputs={"busy": 1}, input_gates=[gate]),
            TimedActivity("stop", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0)])
    choice = ChoiceGate((Candidate(key=(("busy", 1),)),), chosen=0)
    assert is_plain(net(InputGate(choice)), choices=True)
    assert not is_plain(net(InputGate(lambda m: m["busy"] < 1)), choices=True)
    assert not is_plain(net(InputGate(choice, function=lambda m: None)), choices=True)
    huge = ChoiceGate((Candidate(key=(("busy", 1 << 40),)),), chosen=0)     # sums past 2^53: not exact in a double
    assert not is_plain(net(InputGate(huge)), choices=True)
    with pytest.raises(ValueError, match="plain net"):
        explore(net(InputGate(huge)), engine="compiled")


@pytest.mark.parametrize("make", [lambda: fair_net(3, 3), lambda: fair_net(4, 2), lambda: fair_net(2, 4, weights=(0.3, 0.1)),
                                  lambda: fair_net(2, 3, weights=(2.0, 1.0)), two_queues],
                         ids=["fair N3 C3", "fair N4 C2", "weights 0.3:0.1", "weights 2:1", "two queues"])
def test_the_compiled_engine_builds_the_numpy_engines_chain_on_scheduler_gates(make):
    net = make()
    same_chain(explore(net, engine="compiled"), explore(net, engine="numpy"))


def weighted(weights, containers=2):
    classes = [{"name": name, "users": 1, "think_time": 4.0, "queue": "q", "weight": w,
                "phases": [{"name": "scan", "tasks": 2, "task_time": 1.0}, {"name": "agg", "tasks": 1, "task_time": 0.5}]}
               for name, w in zip("ab", weights)]
    return parse_description({"name": "weighted", "cluster": {"containers": containers}, "classes": classes,
                              "queues": [{"name": "q", "capacity": 1.0, "policy": "fair"}]})


def test_weights_whose_steps_are_not_exact_in_a_double_leave_the_net_to_the_numpy_engine():
    net = build_classes(weighted((0.123456789, 1.0))).net      # steps 1,000,000,000 and 123,456,789
    assert not is_plain(net, choices=True)
    with pytest.raises(ValueError, match="plain net"):
        explore(net, engine="compiled")
    assert explore(net).n_states == explore(build_classes(weighted((0.125, 1.0))).net).n_states


def test_spn_solve_answers_a_net_with_choice_gates_exactly_where_its_chain_fits_else_by_the_next_method():
    from spn.pipeline import Budget, evaluate_description

    exact = evaluate_description(weighted((0.3, 0.1)))
    assert exact.method == "exact" and exact.details["tangible_states"] > 10
    simulated = evaluate_description(weighted((0.123456789, 1.0)), budget=Budget(max_states=10, max_seconds=5))
    assert simulated.method != "exact" and "10 tangible states" in simulated.details["reason"]
