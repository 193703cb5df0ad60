"""Weights between query classes in a ``fair`` queue (Spark FAIR pool weights, YARN fair-share weights).

Specification (docs/design.md §4.6):

- ``classes[].weight``: a number > 0, default 1. Inside a ``fair`` queue a free container
  goes to the job with the smallest running tasks / weight of its class, ties to the
  oldest job (Spark's FairSchedulingAlgorithm; minShare is not modelled). In a ``fifo``
  queue the weight has no effect (accepted, not warned about).
- The ratios are compared exactly, each weight read as the decimal it is written as: 3
  running tasks at weight 0.3 tie with 1 at weight 0.1 (in binary floating point 3/0.3 >
  1/0.1, which would hand the container to the younger job).
- The net (:func:`spn.models.jobs.build_classes`) and the queue simulator
  (:class:`spn.simulation.queues.QueueSimulator`) implement the rule apart; both are checked
  here against a chain written from the rule and solved by sympy, and against each other.

The exact case: one fair queue holding C = 3 containers, one user per class, a job of 4
exponential tasks of mean 1; class a thinks 2 s on average, class b 1 s. A state lists the jobs
in the system, oldest first, as (class, waiting, running).

| weights a:b | R_a | R_b |
|---|---|---|
| 2:1 | 74251311889/29595367211 ≈ 2.50888 | 190185433013/76698659609 ≈ 2.47964 |
| 1:1 (none) | 14901559819/5888268851 ≈ 2.53072 | 37918084823/15438110219 ≈ 2.45614 |
"""

import dataclasses
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sp = pytest.importorskip("sympy")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_classes_queues import exact_R  # noqa: E402

from spn.analysis.solve import solve_description  # noqa: E402
from spn.description import parse_description  # noqa: E402
from spn.exceptions import ModelError  # noqa: E402
from spn.simulation import QueueSimulator, simulate_description  # noqa: E402


def one_fair_queue(*, containers, a, b, weights=(None, None), policy="fair"):
    """Classes a and b (each ``dict(think_time, tasks, mean)``, plus ``users``/``shape``), one phase each,
    in one queue ``q`` holding every container; ``weights``: theirs (None: no weight key)."""
    classes = []
    for name, c, weight in (("a", a, weights[0]), ("b", b, weights[1])):
        phase = {"name": "p", "tasks": c["tasks"], "task_time": c["mean"]}
        phase.update({"shape": c["shape"]} if "shape" in c else {"distribution": "exponential"})
        classes.append({"name": name, "users": c.get("users", 1), "think_time": c["think_time"], "queue": "q",
                        "phases": [phase], **({} if weight is None else {"weight": weight})})
    return parse_description({"name": "weighted", "cluster": {"containers": containers}, "classes": classes,
                              "queues": [{"name": "q", "capacity": 1.0, "policy": policy}]})


def fair_chain(*, containers, think_times, tasks, means, weights):
    """Every transition from "both users thinking": one user per class, one fair queue.

    Written from the rule, apart from the net and the simulator: after each event, while a
    container is free, it goes to the job with a waiting task whose running / weight is
    smallest (exact fractions), the oldest on a tie. A state is a tuple of jobs in order of
    submission, each (class, waiting, running).
    """
    weights = [Fraction(w) for w in weights]

    def settle(jobs):
        jobs = [list(job) for job in jobs]
        while containers - sum(job[2] for job in jobs):
            candidates = [i for i, job in enumerate(jobs) if job[1]]
            if not candidates:
                break
            i = min(candidates, key=lambda i: (jobs[i][2] / weights[jobs[i][0]], i))
            jobs[i][1] -= 1
            jobs[i][2] += 1
        return tuple(tuple(job) for job in jobs)

    start = ()
    seen, todo, transitions = {start}, [start], []
    while todo:
        state = todo.pop()
        moves = []
        present = {job[0] for job in state}
        for c in range(2):
            if c not in present:                    # class c's user submits a job, the youngest
                moves.append((1 / sp.nsimplify(think_times[c]), state + ((c, tasks[c], 0),), None))
        for i, (c, waiting, running) in enumerate(state):
            if running:                             # one of its running tasks ends
                ends = waiting == 0 and running == 1
                rest = () if ends else ((c, waiting, running - 1),)
                moves.append((running / sp.nsimplify(means[c]), state[:i] + rest + state[i + 1:], c if ends else None))
        for rate, new, ends in moves:
            target = settle(new)
            transitions.append((state, target, rate, ends))
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return transitions


def R(report):
    return {name: m.mean_execution_time for name, m in report.measures.classes.items()}


# --------------------------------------------------------------------------
# (a) exact: the weights change the answer, and the net follows them
# --------------------------------------------------------------------------

EXACT = dict(containers=3, think_times=[2, 1], tasks=[4, 4], means=[1, 1])
A, B = dict(think_time=2, tasks=4, mean=1.0), dict(think_time=1, tasks=4, mean=1.0)
WEIGHTED = {0: sp.Rational(74251311889, 29595367211), 1: sp.Rational(190185433013, 76698659609)}
UNWEIGHTED = {0: sp.Rational(14901559819, 5888268851), 1: sp.Rational(37918084823, 15438110219)}


def test_weights_2_to_1_in_a_fair_queue_give_the_exact_means_of_the_hand_chain():
    weighted = exact_R(fair_chain(**EXACT, weights=[2, 1]), users=[1, 1], think_times=[2, 1])
    unweighted = exact_R(fair_chain(**EXACT, weights=[1, 1]), users=[1, 1], think_times=[2, 1])
    assert weighted == WEIGHTED and unweighted == UNWEIGHTED
    assert weighted[0] < unweighted[0] and weighted[1] > unweighted[1]      # a's weight helps a, costs b

    net = R(solve_description(one_fair_queue(containers=3, a=A, b=B, weights=(2, 1))))
    assert net["a"] == pytest.approx(float(WEIGHTED[0]), rel=1e-12)
    assert net["b"] == pytest.approx(float(WEIGHTED[1]), rel=1e-12)
    plain = R(solve_description(one_fair_queue(containers=3, a=A, b=B)))
    assert plain["a"] == pytest.approx(float(UNWEIGHTED[0]), rel=1e-12)
    assert plain["b"] == pytest.approx(float(UNWEIGHTED[1]), rel=1e-12)


def test_equal_ratios_tie_exactly_and_the_oldest_job_gets_the_container():
    # C = 5, a job of 7 tasks (class a, weight 0.3) is in before one of 3 (b, weight 0.1): at
    # a 3 running, b 1 running, both waiting, 3/0.3 = 1/0.1 and a, the older, gets the container.
    # In binary floating point 3/0.3 > 1/0.1 and b would get it (R_a 2.82912 instead of 2.81627).
    case = dict(containers=5, think_times=[1, 1], tasks=[7, 3], means=[1, 1])
    exact = exact_R(fair_chain(**case, weights=[Fraction(3, 10), Fraction(1, 10)]), users=[1, 1], think_times=[1, 1])
    binary = exact_R(fair_chain(**case, weights=[Fraction(0.3), Fraction(0.1)]), users=[1, 1], think_times=[1, 1])
    assert exact != binary
    a, b = dict(think_time=1, tasks=7, mean=1.0), dict(think_time=1, tasks=3, mean=1.0)
    tenths = R(solve_description(one_fair_queue(containers=5, a=a, b=b, weights=(0.3, 0.1))))
    assert tenths == R(solve_description(one_fair_queue(containers=5, a=a, b=b, weights=(3, 1))))
    assert tenths["a"] == pytest.approx(float(exact[0]), rel=1e-12)
    assert tenths["b"] == pytest.approx(float(exact[1]), rel=1e-12)

    # the simulator too: the same decisions, so the same numbers from the same seed
    def run(weights):
        rep = QueueSimulator(one_fair_queue(containers=5, a=a, b=b, weights=weights)).run(seed=4, warmup=10,
                                                                                          length=3000)
        return dataclasses.replace(rep, seconds=0.0)
    assert run((0.3, 0.1)) == run((3, 1)) != run((0.3, 0.1000001))


# --------------------------------------------------------------------------
# (b) equal weights are the unweighted rule; a fifo queue ignores weights
# --------------------------------------------------------------------------


@pytest.mark.parametrize("weights", [(1, 1), (2.5, 2.5), (1e-3, 0.001)])
def test_equal_weights_give_exactly_the_unweighted_net(weights):
    plain = solve_description(one_fair_queue(containers=3, a=A, b=B))
    same = solve_description(one_fair_queue(containers=3, a=A, b=B, weights=weights))
    assert R(same) == R(plain)
    assert (same.tangible_states, same.transitions) == (plain.tangible_states, plain.transitions)


def test_weights_have_no_effect_in_a_fifo_queue():
    plain = R(solve_description(one_fair_queue(containers=3, a=A, b=B, policy="fifo")))
    assert R(solve_description(one_fair_queue(containers=3, a=A, b=B, weights=(5, 0.5), policy="fifo"))) == plain
    runs = [QueueSimulator(one_fair_queue(containers=3, a=A, b=B, weights=w, policy="fifo")).run(
        seed=2, warmup=10, length=500) for w in ((None, None), (5, 0.5))]
    assert dataclasses.replace(runs[0], seconds=0.0) == dataclasses.replace(runs[1], seconds=0.0)


# --------------------------------------------------------------------------
# (c) the queue simulator agrees with the net on Erlang tasks
# --------------------------------------------------------------------------


def test_the_queue_simulator_covers_the_weighted_net_on_erlang_tasks():
    a = dict(users=1, think_time=2.0, tasks=4, mean=1.0, shape=2)
    b = dict(users=2, think_time=3.0, tasks=3, mean=0.5, shape=2)
    weighted, plain = (one_fair_queue(containers=3, a=a, b=b, weights=w) for w in ((1, 3), (None, None)))
    exact, unweighted = R(solve_description(weighted)), R(solve_description(plain))
    assert exact["a"] > 1.01 * unweighted["a"] and exact["b"] < 0.99 * unweighted["b"]   # ≈ 2.1603 vs 2.1169 ...
    report = simulate_description(weighted, engine="cluster", seed=2, confidence=0.99, rel_precision=0.005)
    for name in ("a", "b"):
        estimate = report.classes[name]["mean_execution_time"]
        assert estimate.contains(exact[name]), (name, estimate, exact[name])
        assert not estimate.contains(unweighted[name]), (name, estimate)      # the simulator does weigh


# --------------------------------------------------------------------------
# (d) the description
# --------------------------------------------------------------------------


def test_weight_defaults_to_1_and_set_changes_it():
    desc = one_fair_queue(containers=3, a=A, b=B)
    assert [c.weight for c in desc.classes] == [1.0, 1.0]
    data = {"name": "x", "cluster": {"containers": 2},
            "classes": [{"name": "etl", "users": 1, "think_time": 1, "weight": 3,
                         "phases": [{"name": "p", "tasks": 1, "task_time": 1}]}]}
    assert parse_description(data).classes[0].weight == 3.0
    assert parse_description(data, ["classes.etl.weight=0.25"]).classes[0].weight == 0.25
    assert parse_description(data, ["classes.0.weight=2"]).classes[0].weight == 2.0


def test_both_reports_name_each_class_weight_in_their_json():
    desc = one_fair_queue(containers=3, a=A, b=B, weights=(2, 0.5))
    exact = solve_description(desc).as_dict()["classes"]
    simulated = simulate_description(desc, engine="cluster", seed=1, replications=2).as_dict()["classes"]
    assert {name: c["weight"] for name, c in exact.items()} == {"a": 2.0, "b": 0.5}
    assert {name: c["weight"] for name, c in simulated.items()} == {"a": 2.0, "b": 0.5}


@pytest.mark.parametrize("value, message", [
    (0, "classes[0] (etl).weight: expected a number > 0, got 0"),
    (-2.5, "classes[0] (etl).weight: expected a number > 0, got -2.5"),
    (float("nan"), "classes[0] (etl).weight: expected a finite number, got nan"),
    (float("inf"), "classes[0] (etl).weight: expected a finite number, got inf"),
    ("heavy", 'classes[0] (etl).weight: expected a number > 0, got "heavy"'),
    (True, "classes[0] (etl).weight: expected a number > 0, got true"),
    (None, "classes[0] (etl).weight: expected a number > 0, got null"),
])
def test_a_bad_weight_is_one_line_naming_it(value, message):
    data = {"name": "x", "cluster": {"containers": 2},
            "classes": [{"name": "etl", "users": 1, "think_time": 1, "weight": value,
                         "phases": [{"name": "p", "tasks": 1, "task_time": 1}]}]}
    with pytest.raises(ModelError) as error:
        parse_description(data)
    assert str(error.value) == message


def test_a_bad_weight_from_set_is_one_line_naming_it():
    data = {"name": "x", "cluster": {"containers": 2},
            "classes": [{"name": "etl", "users": 1, "think_time": 1, "phases": [{"name": "p", "tasks": 1,
                                                                                  "task_time": 1}]}]}
    with pytest.raises(ModelError) as error:
        parse_description(data, ["classes.etl.weight=-1"])
    assert str(error.value) == "classes[0] (etl).weight: expected a number > 0, got -1"
