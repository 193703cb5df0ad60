"""Query classes and capacity-scheduler queues in the net: exact per-class answers (spn.models.jobs.build_classes).

Specification:

- Exact: on the cases whose chains tests/test_classes_queues.py generates and solves with
  sympy (one container shared by two classes; a ceiling that binds; guarantees that decide
  who gets a container, and their tie), the net gives each class's R to rounding.
- The net and the queue simulator (written apart) agree where no hand chain exists:
  Erlang tasks, two phases, a fair queue beside a fifo one.
- Measures: per class R and X, per queue utilisation; the queues' utilisations add up to
  the cluster's.
- ``spn solve`` answers a model with classes: exactly with a table per class and queue
  (and in ``--json``), and by the queue simulator past the state limit, saying why.
- ``spn export`` writes the net of several classes.
- ``spn compare`` sets every class's and queue's exact value beside the queue simulator's interval.
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_classes_queues import R_LARGE_SHARE, R_SMALL_SHARE, two_classes  # noqa: E402

from spn.studies.compare import compare_description  # noqa: E402
from spn.analysis.solve import solve_description  # noqa: E402
from spn.cli import main  # noqa: E402
from spn.description import parse_description  # noqa: E402
from spn.simulation import simulate_description  # noqa: E402

ONE_TASK = dict(a=dict(think_time=1, tasks=1, mean=1.0), b=dict(think_time=2, tasks=1, mean=0.5))
TWO_TASKS = dict(a=dict(think_time=1, tasks=2, mean=1.0), b=dict(think_time=1, tasks=2, mean=1.0))
FOUR_TASKS = dict(a=dict(think_time=1, tasks=4, mean=1.0), b=dict(think_time=1, tasks=4, mean=1.0))

# (description, exact R of class a, of class b) from the sympy chains of tests/test_classes_queues.py
HAND_SOLVED = {
    "one container": (two_classes(containers=1, **ONE_TASK), 47 / 42, 29 / 30),
    "ceiling binds": (two_classes(containers=2, queues=({"capacity": 0.5, "max_capacity": 0.5}, {"capacity": 0.5}),
                                  **TWO_TASKS), 19 / 9, 53 / 31),
    "no ceiling": (two_classes(containers=2, **TWO_TASKS), 23 / 13, 23 / 13),
    "guarantees 1/3, 2/3": (two_classes(containers=3, queues=({"capacity": 1 / 3}, {"capacity": 2 / 3}),
                                        **FOUR_TASKS), float(R_SMALL_SHARE), float(R_LARGE_SHARE)),
    "equal guarantees tie": (two_classes(containers=3, **FOUR_TASKS), float(R_LARGE_SHARE), float(R_SMALL_SHARE)),
}


@pytest.mark.parametrize("case", list(HAND_SOLVED))
def test_each_class_gets_the_exact_mean_of_the_hand_written_chain(case):
    desc, R_a, R_b = HAND_SOLVED[case]
    report = solve_description(desc)
    assert report.measures.classes["a"].mean_execution_time == pytest.approx(R_a, rel=1e-12)
    assert report.measures.classes["b"].mean_execution_time == pytest.approx(R_b, rel=1e-12)


def mixed():
    """Two queues (fifo 0.25 / fair 0.75, the small one capped at half the cluster), Erlang tasks, two phases."""
    return parse_description({
        "name": "mixed", "cluster": {"containers": 4},
        "classes": [
            {"name": "etl", "users": 1, "think_time": 6.0, "queue": "etl",
             "phases": [{"name": "map", "tasks": 3, "task_time": 1.0, "shape": 2},
                        {"name": "reduce", "tasks": 1, "task_time": 2.0}]},
            {"name": "bi", "users": 2, "think_time": 3.0, "queue": "bi",
             "phases": [{"name": "scan", "tasks": 2, "task_time": 0.5, "shape": 2}]}],
        "queues": [{"name": "etl", "capacity": 0.25, "max_capacity": 0.5, "policy": "fifo"},
                   {"name": "bi", "capacity": 0.75, "policy": "fair"}]})


@pytest.mark.slow     # two simulators run long enough to agree: 10-20 s
def test_the_net_and_the_queue_simulator_agree_on_erlang_tasks_and_mixed_queue_policies():
    exact = solve_description(mixed())
    simulated = simulate_description(mixed(), engine="cluster", seed=5, confidence=0.99, rel_precision=0.004)
    for name in ("etl", "bi"):
        estimate = simulated.classes[name]["mean_execution_time"]
        assert estimate.contains(exact.measures.classes[name].mean_execution_time), (name, estimate)
    for name in ("etl", "bi"):
        assert simulated.queues[name]["utilization"].contains(exact.measures.queue_utilization[name]), name


def test_queue_utilisations_add_up_to_the_clusters_and_respect_the_ceiling():
    exact = solve_description(mixed()).measures
    assert sum(exact.queue_utilization.values()) == pytest.approx(exact.utilization, rel=1e-9)
    assert exact.queue_utilization["etl"] <= 0.5


def test_spn_solve_prints_a_table_per_class_and_queue(capsys, tmp_path):
    model = json.dumps({"name": "tiny", "cluster": {"containers": 2},
                        "classes": [{"name": "a", "users": 1, "think_time": 1, "queue": "qa",
                                     "phases": [{"name": "p", "tasks": 2, "task_time": 1.0,
                                                 "distribution": "exponential"}]},
                                    {"name": "b", "users": 1, "think_time": 1, "queue": "qb",
                                     "phases": [{"name": "p", "tasks": 2, "task_time": 1.0,
                                                 "distribution": "exponential"}]}],
                        "queues": [{"name": "qa", "capacity": 0.5, "max_capacity": 0.5}, {"name": "qb", "capacity": 0.5}]})
    path = tmp_path / "tiny-classes.json"
    path.write_text(model)
    assert main(["solve", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "exact" and list(result["classes"]) == ["a", "b"]
    assert result["classes"]["a"]["mean_execution_time"] == pytest.approx(19 / 9, rel=1e-9)
    assert result["queues"]["qa"]["max_capacity"] == 0.5
    assert main(["solve", str(path)]) == 0
    text = capsys.readouterr().out
    assert "exact (CTMC of the job-identity net)" in text and "2.11111" in text
    # past the state limit: the queue simulator, with intervals per class
    assert main(["solve", str(path), "--max-states", "3", "--seed", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["method"], result["engine"]) == ("simulation", "cluster")
    assert "max_states" in result["reason"]
    low, high = result["classes"]["a"]["ci_low"], result["classes"]["a"]["ci_high"]
    assert low < 19 / 9 < high
    assert main(["export", str(path)]) == 0
    assert "qa/job1/a/p.PW" in capsys.readouterr().out
    # the queue choice is an input gate (code), which PNML cannot carry: said in one line
    assert main(["export", str(path), "--format", "pnml"]) == 2
    assert "has gates, which are code" in capsys.readouterr().err


def test_spn_compare_checks_every_class_and_queue_against_the_queue_simulator():
    comparison = compare_description(mixed(), seed=3, rel_precision=0.01)
    assert list(comparison.simulations) == ["cluster"]
    assert "classes.etl.mean_execution_time" in comparison.measures
    assert "queues.bi.utilization" in comparison.measures
    assert comparison.flags == []
    result = comparison.as_dict()
    row = result["measures"]["classes.bi.mean_execution_time"]
    assert row["analytic"] == pytest.approx(solve_description(mixed()).measures.classes["bi"].mean_execution_time)
    assert row["cluster"]["contains_analytic"] is True
