"""`spn plan --vary queues.NAME.capacity=LO..HI`: the smallest share of a queue meeting a class's target.

Each share is simulated; a share meets a target only if the whole 95 % interval of the class's
mean execution time is within it, misses only if the whole interval is outside, and is reported
undecided otherwise (docs/design.md §5.7).
"""

import json

import pytest
import yaml

from spn.studies.plan import plan
from spn.studies.plan_queues import (
    MET,
    MISSED,
    UNDECIDED,
    Probe,
    contradictions,
    plan_queue_share,
    probe_queues,
    share_grid,
)
from spn.cli import main
from spn.description.model import QueryClass, Queue, Workload
from spn.simulation.statistics import Estimate


def write_model(tmp_path, containers=4, bi_tasks=(2, 10.0, "deterministic")):
    """C containers; queue etl (listed first, so it wins ties; at most floor(0.8 C) containers) is kept
    busy by short ETL tasks; queue bi runs one analyst's query: 2 tasks of exactly 10 s, so R = 10 s
    (plus the wait for an ETL task to end) on two containers, 20 s on one."""
    tasks, task_time, law = bi_tasks
    model = {
        "name": "share", "cluster": {"containers": containers},
        "queues": [{"name": "etl", "capacity": 0.75, "max_capacity": 0.8}, {"name": "bi", "capacity": 0.25}],
        "classes": [
            {"name": "etl", "queue": "etl", "users": 4, "think_time": 0.01,
             "phases": [{"name": "map", "tasks": 20, "task_time": 0.1, "distribution": "exponential"}]},
            {"name": "dashboard", "queue": "bi", "users": 1, "think_time": 5.0,
             "phases": [{"name": "scan", "tasks": tasks, "task_time": task_time, "distribution": law}]},
        ],
    }
    path = tmp_path / "share.yaml"
    path.write_text(yaml.safe_dump(model))
    return str(path)


@pytest.fixture(scope="module")
def two_queues(tmp_path_factory):
    return write_model(tmp_path_factory.mktemp("plan"))


@pytest.fixture(scope="module")
def obvious(two_queues):
    """The dashboard needs two containers for R <= 15 s: bi must be guaranteed 2 of the 4, share 0.5."""
    return plan_queue_share(two_queues, "queues.bi.capacity=0.1..0.9", ["dashboard.mean_execution_time<=15"])


def test_the_plan_picks_the_share_that_guarantees_two_containers(obvious):
    assert obvious.grid == (0.25, 0.5, 0.75)                   # shares k/C, k = 1..C-1
    assert obvious.answer == 0.5 and obvious.neighbour == 0.25 and not obvious.largest
    assert "smallest share of queue bi meeting dashboard.mean<=15: 0.5 (2 of 4 containers" in obvious.summary()
    one, two, three = (obvious.probe(s) for s in obvious.grid)
    # one container: the two 10 s tasks run one after the other; two or three: side by side
    assert one.verdict == MISSED and 20 <= one.classes["dashboard"].ci_low
    for probe in (two, three):
        r = probe.classes["dashboard"]
        assert probe.verdict == MET and 10 <= r.ci_low <= r.ci_high <= 11
    # every class's interval is reported, not only the target's
    assert all(set(p.classes) == {"etl", "dashboard"} for p in obvious.probes)
    assert not obvious.evidence                       # more share never hurt the dashboard here


def test_capacities_sum_to_one_and_maxima_follow_the_capacity(obvious):
    for probe in obvious.probes:
        assert sum(c for c, _ in probe.queues.values()) == pytest.approx(1.0, abs=1e-12)
        assert all(top >= c for c, top in probe.queues.values())
    # at share 0.25 queue etl needs 0.75, under its maximum 0.8; nothing to raise
    assert obvious.probe(0.25).queues == {"etl": (0.75, 0.8), "bi": (0.25, 1.0)} and not obvious.probe(0.25).notes


def test_the_other_queues_keep_their_proportions_and_a_low_maximum_is_raised():
    queues = (Queue("a", 0.5, 0.6), Queue("b", 0.3), Queue("c", 0.2))
    layout, notes = probe_queues(queues, "c", 0.1)     # a and b share 0.9 as 5 : 3
    assert layout["a"][0] == pytest.approx(0.5625) and layout["b"][0] == pytest.approx(0.3375)
    assert sum(c for c, _ in layout.values()) == pytest.approx(1.0)
    assert notes == []                                 # a: 0.5625 <= its maximum 0.6
    layout, notes = probe_queues(queues, "c", 0.02)    # a: 0.6125, above 0.6
    assert layout["a"] == (pytest.approx(0.6125), pytest.approx(0.6125)) and notes[0].startswith("a.max_capacity")
    layout, notes = probe_queues((Queue("etl", 0.6, 0.9), Queue("bi", 0.4)), "bi", 0.0625)
    assert layout == {"etl": (0.9375, 0.9375), "bi": (0.0625, 1.0)}
    assert notes == ["etl.max_capacity raised from 0.9 to 0.9375 (its capacity)"]
    assert share_grid(0.05, 0.95, 16)[0] == 1 / 16 and share_grid(0.51, 0.55, 16) == ()


def test_a_straddling_share_is_refined_then_reported_undecided_not_guessed(tmp_path):
    from spn.description import load_description
    from spn.simulation.runner import simulate_description

    # C = 2: one share, 0.5. The bound is the dashboard's estimate at the finest precision
    # the plan will try, with the plan's seed: that interval must straddle it.
    model = write_model(tmp_path, containers=2, bi_tasks=(2, 2.0, "exponential"))
    desc = load_description(model, ["queues.etl.capacity=0.5", "queues.bi.capacity=0.5"])
    finest = simulate_description(desc, engine="cluster", seed=1, rel_precision=0.02,
                                  max_replications=100_000).classes["dashboard"]["mean_execution_time"].value
    result = plan_queue_share(model, "queues.bi.capacity=0.5..0.5", [f"dashboard.mean<={finest!r}"],
                              rel_precision=0.05, refine_to=0.02)
    (probe,) = result.probes
    r = probe.classes["dashboard"]
    assert probe.verdict == UNDECIDED and r.ci_low < finest < r.ci_high
    assert probe.refinements >= 1 and probe.rel_precision == 0.02      # more replications were tried first
    assert result.answer is None
    assert "is shown to meet" in result.summary() and "Undecided: 0.5 (reported, not guessed)" in result.summary()


def test_json_shape(two_queues, capsys):
    code = main(["plan", two_queues, "--vary", "queues.bi.capacity=0.1..0.9", "--target", "dashboard.mean<=15",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"model", "path", "queue", "range", "containers", "grid", "targets", "want", "answer",
            "answer_containers", "neighbour", "monotone", "evidence", "method", "probes", "summary",
            "seconds"} <= set(out)
    assert (out["answer"], out["answer_containers"], out["want"], out["path"]) == (0.5, 2, "smallest",
                                                                                   "queues.bi.capacity")
    assert out["method"]["name"] == "simulation" and out["method"]["seed"] == 1
    probe = out["probes"][0]
    assert {"share", "guaranteed_containers", "capacities", "max_capacities", "notes", "verdict", "targets",
            "classes", "replications", "rel_precision", "refinements", "seconds"} <= set(probe)
    assert set(probe["classes"]["dashboard"]) == {"mean_execution_time", "ci_low", "ci_high", "rel_half_width"}
    assert probe["targets"] == {"dashboard.mean<=15": probe["verdict"]}


def test_the_same_seed_repeats_the_plan(two_queues, obvious):
    again = plan_queue_share(two_queues, "queues.bi.capacity=0.4..0.6", ["dashboard.mean<=15"])
    assert again.probes[0].classes == obvious.probe(0.5).classes      # common random numbers


def test_probes_that_contradict_the_monotone_assumption_are_reported():
    classes = {"dashboard": QueryClass("dashboard", Workload(1, 1.0), (), (), queue="bi")}

    def probe(share, low, high, verdict):
        return Probe(share, 0, {}, (), {"dashboard": Estimate((low + high) / 2, low, high, 0.95, 10)},
                     {}, verdict, 10, 0.01, 0, 0.0)
    probes = (probe(0.25, 9.0, 9.5, MET), probe(0.5, 12.0, 12.5, MISSED), probe(0.75, 9.2, 9.6, MET))
    evidence = contradictions(probes, classes, "bi", largest=False)
    assert any("R_dashboard rises from [9, 9.5] s at share 0.25 to [12, 12.5] s at 0.5" in e for e in evidence)
    assert any("met at share 0.25 but missed at 0.5" in e for e in evidence)


@pytest.mark.parametrize("vary,target,message", [
    ("queues.nope.capacity=0.1..0.9", "dashboard.mean<=15", "unknown queue 'nope'"),
    ("queues.bi.capacity=0..0.5", "dashboard.mean<=15", "must lie in (0, 1)"),
    ("queues.bi.capacity=0.5..1", "dashboard.mean<=15", "must lie in (0, 1)"),
    ("queues.bi.capacity=0.2..1.5", "dashboard.mean<=15", "got 1.5"),
    ("queues.bi.capacity=0.3..0.4", "dashboard.mean<=15", "no share k/4"),
    ("queues.bi.capacity=0.1..0.9", "reports.mean<=15", "unknown class 'reports'"),
    ("queues.bi.capacity=0.1..0.9", "mean<=15", "name the class"),
    ("queues.bi.capacity=0.1..0.9", "dashboard.p95<=15", "mean execution times only"),
    ("cluster.containers=1..4", "dashboard.mean<=15", "use spn plan --vary queues.NAME.capacity"),
])
def test_hostile_inputs_are_one_line_errors_with_exit_2(two_queues, capsys, vary, target, message):
    assert main(["plan", two_queues, "--vary", vary, "--target", target]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spn: error:") and message in err and len(err.strip().splitlines()) == 1


def test_a_one_class_plan_estimates_values_whose_chain_is_too_large():
    """Past --max-states a value is answered as spn solve answers it; where the chain fits, exactly as before."""
    exact = plan("models/mapreduce.yaml", "cluster.containers=1..12", ["mean<=12"], probes=1)
    mixed = plan("models/mapreduce.yaml", "cluster.containers=1..12", ["mean<=12"], probes=1, max_states=30,
                 rel_precision=0.05, max_seconds=10)
    methods = {p.value: p.method for p in mixed.points}
    assert methods[1] == "exact" and "simulation" in methods.values()
    for p in mixed.points:
        if p.method == "exact":
            assert p.metrics == exact.point(p.value).metrics
        else:       # met only if the whole interval is
            assert p.met == (p.metrics["mean_ci_high"] <= 12)
            assert p.metrics["mean_ci_low"] <= p.metrics["mean"] <= p.metrics["mean_ci_high"]
    assert "estimated" in mixed.summary()
