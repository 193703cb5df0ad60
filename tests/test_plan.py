"""Capacity planning: the smallest value meeting a target, checked by solving
at the answer and one below; monotonicity checked, not assumed."""

import json
from pathlib import Path

import pytest

from spn.cli import main
from spn.exceptions import ModelError
from spn.description import load_description
from spn.analysis.solve import solve_description
from spn.pipeline import Question, evaluate_description
from spn.pipeline.question import parse_percentiles
from spn.studies.plan import find_boundary, plan
from spn.studies.targets import parse_target, parse_vary

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = str(REPO / "models" / "mapreduce.yaml")


def mean_at(containers):
    return solve_description(load_description(EXAMPLE, [f"cluster.containers={containers}"])) \
        .measures.mean_execution_time


@pytest.mark.parametrize("bound", [30.0, 14.0, 12.0, 11.0])
def test_plan_mean_on_the_mapreduce_example(bound):
    result = plan(EXAMPLE, "cluster.containers=1..400", [f"mean<={bound}"])
    answer = result.answer
    assert result.monotone and result.method == "bisection" and result.neighbour == answer - 1
    # verified independently: the answer meets the target, one container fewer does not
    assert mean_at(answer) <= bound < mean_at(answer - 1)
    assert len(result.points) <= 20          # bisection, not a scan of 400 values


def test_plan_percentile_target():
    result = plan(EXAMPLE, "cluster.containers=1..400", ["p95<=25"])
    assert result.answer == 4 and result.neighbour == 3

    def p95(c):
        desc = load_description(EXAMPLE, [f"cluster.containers={c}"])
        return evaluate_description(desc, method="exact", question=Question(percentiles=(95,))).percentiles[95.0]
    assert p95(4) <= 25 < p95(3)
    both = plan(EXAMPLE, "cluster.containers=1..400", ["p95<=25", "mean<=12"])
    assert both.answer == 5                   # mean<=12 needs 5 (see above), p95<=25 needs 4


def test_percentiles_close_to_100_keep_their_own_keys(capsys):
    assert main(["solve", EXAMPLE, "--percentiles", "99.99999,99.999991", "--json"]) == 0
    percentiles = json.loads(capsys.readouterr().out)["percentiles"]
    assert list(percentiles) == ["99.99999", "99.999991"]
    assert percentiles["99.99999"] < percentiles["99.999991"]


def test_a_target_may_name_the_one_class_of_a_model():
    assert plan(EXAMPLE, "cluster.containers=1..16", ["mapreduce.mean<=14"]).answer == 4     # as mean<=14


def test_plan_largest_users_and_unreachable_targets():
    users = plan(EXAMPLE, "workload.users=1..30", ["mean<=20"], largest=True)
    assert users.neighbour == users.answer + 1
    r = lambda n: solve_description(load_description(EXAMPLE, [f"workload.users={n}"])).measures.mean_execution_time
    assert r(users.answer) <= 20 < r(users.answer + 1)
    none = plan(EXAMPLE, "cluster.containers=1..400", ["mean<=1"])
    assert none.answer is None and "no cluster.containers" in none.summary()
    first = plan(EXAMPLE, "cluster.containers=5..400", ["mean<=30"])
    assert first.answer == 5 and first.neighbour is None


def test_non_monotone_metrics_are_reported():
    bumpy = {v: 10.0 for v in range(1, 21)}
    bumpy.update({3: 1.0, 17: 1.0, 18: 1.0, 19: 1.0, 20: 1.0})     # met at 3, then only from 17
    calls = []

    def solve(v):
        calls.append(v)
        return {"mean": bumpy[v]}
    r = find_boundary(range(1, 21), solve, [parse_target("mean<=2")], probes=3)
    # no solved value hits the bump at 3: bisection answers 17, and cannot see the bump
    assert r.answer == 17 and r.neighbour == 16 and r.monotone and "monotone on all" in r.summary()
    # an exhaustive search finds it, and says the metric is not monotone
    full = find_boundary(range(1, 21), solve, [parse_target("mean<=2")], exhaustive=True)
    assert full.answer == 3 and full.method == "exhaustive" and not full.monotone
    assert len(set(calls)) == 20
    # a probe that lands on the bump is caught as evidence
    r2 = find_boundary(range(1, 21), lambda v: {"mean": 1.0 if v in (6, 7, 8, 17, 18, 19, 20) else 10.0},
                       [parse_target("mean<=2")], probes=3)
    assert not r2.monotone and "the targets are met at value=6 but missed at 11" in r2.evidence
    assert r2.answer == 6 and "NOT monotone" in r2.summary()


def test_monotone_search_never_solves_everything():
    calls = []
    r = find_boundary(range(1, 1001), lambda v: calls.append(v) or {"mean": 1000.0 / v},
                      [parse_target("mean<=3")])
    assert r.answer == 334 and r.neighbour == 333 and r.monotone and len(calls) < 20


def test_parsers():
    assert parse_target("mean<=120") == parse_target(" mean <= 120 s")
    assert str(parse_target("p99.9<200")) == "p99.9<200"
    assert parse_target("p95<=1e2").bound == 100.0
    for bad in ("median<=3", "p100<=3", "mean>=3", "mean<=-1", "p95<="):
        with pytest.raises(ModelError):
            parse_target(bad)
    assert parse_vary("cluster.containers=1..3") == ("cluster.containers", [1, 2, 3])
    assert parse_vary("cluster.containers=8,2,4") == ("cluster.containers", [2, 4, 8])
    for bad in ("cluster.containers", "x=5..1", "x=a..b", "=1..3"):
        with pytest.raises(ModelError):
            parse_vary(bad)
    assert parse_percentiles("50,90,50") == (50.0, 90.0)


def test_plan_command(capsys):
    code = main(["plan", EXAMPLE, "--vary", "cluster.containers=1..400", "--target", "mean<=14", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["answer"] == 4 and out["neighbour"] == 3 and out["monotone"] is True
    assert {p["value"]: p["met"] for p in out["points"]}[3] is False
    assert main(["plan", EXAMPLE, "--vary", "cluster.containers=1..40", "--target", "p90<=25"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("smallest cluster.containers meeting p90<=25: ") and "<- answer" in text


def test_a_plan_of_estimated_values_says_what_their_intervals_are(capsys):
    assert main(["plan", EXAMPLE, "--vary", "cluster.containers=1..40", "--target", "mean<=14",
                 "--max-states", "5"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "intervals (simulation): numerical: 95 % confidence intervals of the simulation (not the " \
                   "spread of real runs)"


@pytest.mark.parametrize("args,message", [
    (["--vary", "cluster.containers=1..4", "--target", "mean=>3"], "--target"),
    (["--vary", "cluster.containers=0..4", "--target", "mean<=30"], "cluster.containers=0"),
    (["--vary", "cluster.nodes=1..4", "--target", "mean<=30"], "cluster.nodes"),
    (["--vary", "cluster.containers=4..1", "--target", "mean<=30"], "empty range"),
])
def test_plan_bad_input_is_one_line_exit_2(capsys, args, message):
    assert main(["plan", EXAMPLE, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spn: error:") and message in err and len(err.strip().splitlines()) == 1


def _precisions_asked(monkeypatch):
    """The rel_precision of every evaluation a plan's value asks for, in order."""
    import spn.pipeline

    asked, evaluate = [], spn.pipeline.evaluate_description

    def recording(desc, *, budget, **kwargs):
        asked.append(budget.rel_precision)
        return evaluate(desc, budget=budget, **kwargs)
    monkeypatch.setattr(spn.pipeline, "evaluate_description", recording)
    return asked


def test_a_value_the_decomposition_decides_is_not_asked_again(monkeypatch):
    from spn.pipeline import Budget
    from spn.studies.plan import solve_point

    desc = load_description(EXAMPLE, ["scheduler.policy=fifo", "workload.users=5"])
    budget = Budget(max_states=10)              # past the exact chain: the decomposition, then a simulation
    asked = _precisions_asked(monkeypatch)
    far = solve_point(desc, [parse_target("mean<=1000")], budget=budget)
    assert far["method"] == "decomposition" and asked == [1.0]
    # a bound inside its interval: solved again as spn solve would, to the plan's precision
    asked.clear()
    straddled = solve_point(desc, [parse_target(f"mean<={far['mean']}")], budget=budget)
    assert asked[:2] == [1.0, budget.rel_precision] and straddled["method"] == "simulation"


def test_where_the_decomposition_does_not_apply_a_value_is_solved_once(monkeypatch):
    from spn.pipeline import Budget
    from spn.studies.plan import solve_point

    asked = _precisions_asked(monkeypatch)
    point = solve_point(load_description(EXAMPLE), [parse_target("mean<=1000")], budget=Budget())   # gate
    assert point["method"] == "exact" and asked == [Budget().rel_precision]
