"""`spn plan --vary queues.NAME.capacity=LO..HI`: the smallest share of a queue meeting a class's target.

Each share is simulated; a share meets a target only if the whole 95 % interval of the class's
mean execution time is within it, misses only if the whole interval is outside, and is reported
undecided otherwise (docs/design.md §5.7). The answer is a plan like any other (a PlanResult):
its values are the shares, and every point carries every class's R_c with its interval.
"""

import json

import pytest
import yaml

from spn.studies.plan import plan
from spn.studies.targets import parse_target
from spn.studies.plan_result import MET, MISSED, UNDECIDED, PlanPoint, monotonicity_evidence
from spn.cli import main


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
    return plan(two_queues, "queues.bi.capacity=0.1..0.9", ["dashboard.mean_execution_time<=15"], probes=0,
                rel_precision=0.01)


def test_the_plan_picks_the_share_that_guarantees_two_containers(obvious):
    assert obvious.queue.grid == obvious.values == (0.25, 0.5, 0.75)      # shares k/C, k = 1..C-1
    assert obvious.path == "queues.bi.capacity" and obvious.queue.containers == 4
    assert obvious.answer == 0.5 and obvious.neighbour == 0.25 and not obvious.largest
    assert obvious.summary().startswith("smallest queues.bi.capacity meeting dashboard.mean<=15: 0.5 "
                                        "(2 of 4 containers guaranteed; 0.25 does not meet it)")
    one, two, three = (obvious.point(s) for s in obvious.values)
    # one container: the two 10 s tasks run one after the other; two or three: side by side
    assert one.verdict == MISSED and 20 <= one.metrics["dashboard.mean_ci_low"]
    for point in (two, three):
        m = point.metrics
        assert point.verdict == MET and 10 <= m["dashboard.mean_ci_low"] <= m["dashboard.mean_ci_high"] <= 11
    assert [p.details["guaranteed_containers"] for p in obvious.points] == [1, 2, 3]
    # every class's interval is reported, not only the target's
    assert all({"etl.mean", "etl.mean_ci_low", "etl.mean_ci_high", "dashboard.mean"} <= set(p.metrics)
               for p in obvious.points)
    assert obvious.monotone and not obvious.evidence      # more share never hurt the dashboard here


def test_capacities_sum_to_one_and_maxima_follow_the_capacity(obvious):
    for point in obvious.points:
        capacities, maxima = point.details["capacities"], point.details["max_capacities"]
        assert sum(capacities.values()) == pytest.approx(1.0, abs=1e-12)
        assert all(maxima[q] >= c for q, c in capacities.items())
    # at share 0.25 queue etl needs 0.75, under its maximum 0.8; nothing to raise
    quarter = obvious.point(0.25).details
    assert quarter["capacities"] == {"etl": 0.75, "bi": 0.25} and quarter["max_capacities"] == {"etl": 0.8, "bi": 1.0}
    assert not quarter["notes"]


def test_a_straddling_share_is_refined_then_reported_undecided_not_guessed(tmp_path):
    from spn.description import load_description
    from spn.simulation.runner import simulate_description

    # C = 2: one share, 0.5. The bound is the dashboard's estimate at the finest precision
    # the plan will try, with the plan's seed: that interval must straddle it.
    model = write_model(tmp_path, containers=2, bi_tasks=(2, 2.0, "exponential"))
    desc = load_description(model, ["queues.etl.capacity=0.5", "queues.bi.capacity=0.5"])
    finest = simulate_description(desc, engine="cluster", seed=1, rel_precision=0.02,
                                  max_replications=100_000).classes["dashboard"]["mean_execution_time"].value
    result = plan(model, "queues.bi.capacity=0.5..0.5", [f"dashboard.mean<={finest!r}"], method="simulation",
                  rel_precision=0.05, refine_to=0.02)     # (auto would solve this small chain exactly)
    (point,) = result.points
    assert point.verdict == UNDECIDED and not point.met
    assert point.metrics["dashboard.mean_ci_low"] < finest < point.metrics["dashboard.mean_ci_high"]
    assert point.details["refinements"] >= 1 and point.details["rel_precision"] == 0.02   # more replications first
    assert result.answer is None
    assert "is shown to meet" in result.summary() and "Undecided: 0.5 (an interval straddles" in result.summary()


def test_json_shape_is_a_plans_with_the_queue_and_every_class(two_queues, capsys):
    code = main(["plan", two_queues, "--vary", "queues.bi.capacity=0.1..0.9", "--target", "dashboard.mean<=15",
                 "--probes", "0", "--rel-precision", "0.01", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    # a one-parameter plan's keys, and the queue
    one = plan("models/mapreduce.yaml", "cluster.containers=1..4", ["mean<=14"]).as_dict()
    assert set(out) == set(one) | {"queue"}
    assert (out["answer"], out["neighbour"], out["want"], out["path"], out["range"], out["method"]) == (
        0.5, 0.25, "smallest", "queues.bi.capacity", [0.25, 0.75], "bisection")
    assert out["model"] == "share" and out["monotone"] is True and out["evidence"] == []
    assert out["queue"] == {"name": "bi", "containers": 4, "grid": [0.25, 0.5, 0.75], "answer_containers": 2}
    assert out["simulation"] == {"confidence": 0.95, "rel_precision": 0.01, "refine_to": 0.0025, "seed": 1,
                                 "common_random_numbers": True}
    point = out["points"][0]
    assert set(point) == {"value", "met", "verdict", "method", "seconds", "guaranteed_containers", "capacities",
                          "max_capacities", "notes", "replications", "rel_precision", "refinements",
                          *(f"{c}.mean{end}" for c in ("etl", "dashboard") for end in ("", "_ci_low", "_ci_high"))}
    assert (point["value"], point["verdict"], point["met"], point["method"]) == (0.25, "missed", False, "simulation")


def test_the_same_seed_repeats_the_plan(two_queues, obvious):
    again = plan(two_queues, "queues.bi.capacity=0.4..0.6", ["dashboard.mean<=15"], rel_precision=0.01)
    assert again.points[0].metrics == obvious.point(0.5).metrics      # common random numbers


def point(share, low, high, verdict):
    """A share whose dashboard R lies in [low, high]."""
    return PlanPoint(share, {"dashboard.mean": (low + high) / 2, "dashboard.mean_ci_low": low,
                             "dashboard.mean_ci_high": high}, verdict, method="simulation")


def test_probes_that_contradict_the_monotone_assumption_are_reported():
    points = (point(0.25, 9.0, 9.5, MET), point(0.5, 12.0, 12.5, MISSED), point(0.75, 9.2, 9.6, MET))
    evidence = monotonicity_evidence(points, [parse_target("dashboard.mean<=10")], largest=False,
                                     path="queues.bi.capacity")
    assert evidence == [
        "dashboard.mean rises from [9, 9.5] s at queues.bi.capacity=0.25 to [12, 12.5] s at 0.5, "
        "though it should never rise as queues.bi.capacity grows",
        "the targets are met at queues.bi.capacity=0.25 but missed at 0.5"]


def test_only_moves_beyond_the_noise_are_evidence():
    """Intervals that overlap are noise; a slow drift that no two neighbours show is still found."""
    target = [parse_target("dashboard.mean<=20")]
    wobble = (point(0.25, 9.0, 10.0, MET), point(0.5, 9.5, 10.5, MET), point(0.75, 9.0, 10.0, MET))
    assert monotonicity_evidence(wobble, target, largest=False) == []
    drift = (point(0.25, 9.0, 10.0, MET), point(0.5, 9.8, 10.8, MET), point(0.75, 10.6, 11.6, MET))
    (evidence,) = monotonicity_evidence(drift, target, largest=False)
    assert evidence.startswith("dashboard.mean rises from [9, 10] s at value=0.25 to [10.6, 11.6] s at 0.75")
    # a class of another queue must not gain from the varied queue's share: its R may rise, never fall
    assert monotonicity_evidence(drift, target, largest=False, directions={"dashboard.mean": 1}) == []


@pytest.mark.parametrize("vary,target,message", [
    ("queues.nope.capacity=0.1..0.9", "dashboard.mean<=15", "unknown queue 'nope'"),
    ("queues.bi.capacity=0..0.5", "dashboard.mean<=15", "must lie in (0, 1)"),
    ("queues.bi.capacity=0.5..1", "dashboard.mean<=15", "must lie in (0, 1)"),
    ("queues.bi.capacity=0.2..1.5", "dashboard.mean<=15", "got 1.5"),
    ("queues.bi.capacity=0.3..0.4", "dashboard.mean<=15", "no share k/4"),
    ("queues.bi.capacity=0.1..0.9", "reports.mean<=15", "unknown class 'reports'"),
    ("queues.bi.capacity=0.1..0.9", "mean<=15", "name the class"),
    ("queues.bi.capacity=0.1..0.9", "dashboard.p95<=15", "mean execution time only"),
    ("queues.bi.capacity=0.1..0.9", "dashboard.mean<=15 --largest", "takes the direction from the targets"),
    ("queues.bi.capacity=0.1..0.9", "dashboard.mean<=15 --target etl.mean<=9", "plan them apart"),
    ("workload.users=1..4", "dashboard.mean<=15", "workload: not used with classes"),
])
def test_hostile_inputs_are_one_line_errors_with_exit_2(two_queues, capsys, vary, target, message):
    assert main(["plan", two_queues, "--vary", vary, "--target", *target.split()]) == 2
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


def test_any_parameter_of_a_model_with_classes_is_planned_against_a_class_target(two_queues):
    """Not only a share: containers too, each configuration solved as spn solve solves it."""
    result = plan(two_queues, "cluster.containers=2..8", ["dashboard.mean<=15"], probes=1, rel_precision=0.02)
    assert result.queue is None and result.answer is not None
    assert result.point(result.answer).met and all(not p.met for p in result.points if p.value < result.answer)
    assert all({"etl.mean", "dashboard.mean"} <= set(p.metrics) for p in result.points)


def test_once_a_shares_chain_is_not_solved_exactly_the_others_are_not_explored_again(two_queues, obvious):
    """Shares change only the queues' gates: the method that answered the first share answers the others,
    with the numbers that method gives when named (here the dashboard's deterministic tasks rule out
    the exact chain)."""
    assert obvious.point(0.25).method == "simulation" and not obvious.point(0.25).details["notes"]
    for share in (0.5, 0.75):
        assert obvious.point(share).details["notes"] == [
            "not explored: the chain at queues.bi.capacity=0.25 was not solved exactly"]
    from spn.cli.format import format_plan

    printed = format_plan(obvious).splitlines()        # said once, of both shares
    assert "queues.bi.capacity=0.5, 0.75: not explored: the chain at queues.bi.capacity=0.25 was not solved " \
           "exactly" in printed
    named = plan(two_queues, "queues.bi.capacity=0.1..0.9", ["dashboard.mean_execution_time<=15"], probes=0,
                 rel_precision=0.01, method="simulation")
    assert [p.metrics for p in named.points] == [p.metrics for p in obvious.points]


def test_a_share_of_a_model_fitted_from_logs_is_refused_before_reading_them(tmp_path):
    from spn.exceptions import ModelError

    with pytest.raises(ModelError, match="fitted from logs has one class and no queues"):
        plan([str(tmp_path / "pilot.eventlog")], "queues.bi.capacity=0.1..0.9", ["dashboard.mean<=15"])
