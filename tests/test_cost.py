"""Cost of a configuration (spn.studies.cost) and `spn plan --minimize cost`: the cheapest configuration
meeting a target, beside the smallest, from the same pipeline answers."""

import json

import pytest

import spn
from spn.cli import main
from spn.exceptions import ModelError
from spn.studies.cost import cheapest, executor_hours, parse_price, run_cost
from spn.studies.plan import plan

#: four near-deterministic 10 s tasks: 3 containers run them in two waves (about 18 s), 4 in one (about 12 s),
#: so 4 containers cost less than 3 (4 x 12 < 3 x 18) although 3 already meet mean <= 20
WAVES = """\
name: waves
workload: {users: 1, think_time: 1.0}
cluster: {containers: 1}
phases:
  - {name: only, tasks: 4, task_time: 10.0, shape: 20}
"""


@pytest.fixture
def waves(tmp_path):
    path = tmp_path / "waves.yaml"
    path.write_text(WAVES)
    return path


def test_executor_hours_are_executors_times_seconds_over_3600():
    assert executor_hours(24, 450.0) == 3.0
    assert executor_hours(0, 100.0) == 0.0
    cost = run_cost(12, 900.0, parse_price(["0.25"]))
    assert (cost.executor_hours, cost.money) == (3.0, 0.75)
    assert run_cost(12, 900.0).money is None
    with pytest.raises(ModelError, match="executor-hours"):
        executor_hours(3, -1.0)


def test_the_cheapest_is_by_money_then_by_fewer_executors():
    costs = [run_cost(6, 600.0), run_cost(3, 1200.0), run_cost(12, 400.0)]
    assert cheapest(costs).executors == 3          # 6 x 600 = 3 x 1200 = 1 h; 12 x 400 = 1.33 h
    assert cheapest([]) is None


def test_a_price_per_instance_hour_is_shared_by_the_executors_of_an_instance():
    assert parse_price([]) is None
    assert parse_price(["0.2"]).per_executor_hour == 0.2
    assert parse_price(["0.2"], executors_per_instance=4).per_executor_hour == 0.05
    listed = parse_price(["m5.xlarge=0.192", "m5.2xlarge=0.384"], instance_type="m5.2xlarge",
                         executors_per_instance=2, currency="EUR")
    assert listed.per_executor_hour == 0.192
    assert listed.how == ("m5.2xlarge at 0.384 EUR per instance-hour, 2 executors per instance: 0.192 EUR per "
                          "executor-hour")
    assert parse_price(["m5.xlarge=0.192"]).per_executor_hour == 0.192       # one type: no need to pick it


@pytest.mark.parametrize("items, kwargs, message", [
    (["cheap"], {}, "expected a price per hour"),
    (["-1"], {}, "expected a price per hour"),
    (["nan"], {}, "expected a price per hour"),
    (["0.1", "0.2"], {}, "2 prices per executor-hour"),
    (["a=0.1", "b=0.2"], {}, "pick one with --instance-type"),
    (["a=0.1", "0.2"], {}, "mix of a bare price and a price list"),
    (["a=0.1", "a=0.2"], {}, "priced twice"),
    (["=0.1"], {}, "expected TYPE=PER_HOUR"),
    (["a=0.1"], {"instance_type": "b"}, "not in the price list"),
    (["0.1"], {"instance_type": "b"}, "picks from a price list"),
    ([], {"instance_type": "b"}, "give its price"),
])
def test_bad_prices_say_what_to_give(items, kwargs, message):
    with pytest.raises(ModelError, match=message):
        parse_price(items, **kwargs)


def test_plan_gives_the_cheapest_beside_the_smallest(waves):
    result = plan(waves, "cluster.containers=1..5", ["mean<=20"], minimize="cost", price=parse_price(["2"]))
    assert (result.answer, result.cheapest) == (3, 4)
    # every value from the answer up was solved, each as spn solve answers it
    assert [p.value for p in result.points if p.value >= 3] == [3, 4, 5]
    for point in result.points:
        assert point.metrics["mean"] == spn.evaluate(waves, [f"cluster.containers={point.value}"]).mean_execution_time
    cost = result.as_dict()["cost"]
    assert cost["unit"] == "container-hours"
    by_value = {row["value"]: row for row in cost["points"]}
    for value, row in by_value.items():
        assert row["container_hours"] == value * row["mean_execution_time"] / 3600
        assert row["money"] == 2 * row["container_hours"]
    assert min(by_value, key=lambda v: by_value[v]["money"]) == 4
    assert cost["smallest"] == by_value[3] and cost["cheapest"] == by_value[4]


def test_plan_without_a_met_value_has_nothing_to_cost(waves):
    result = plan(waves, "cluster.containers=1..2", ["mean<=5"], minimize="cost")
    assert result.answer is None and result.cheapest is None
    assert result.as_dict()["cost"]["cheapest"] is None


def test_plan_minimize_cost_command(waves, capsys):
    assert main(["plan", str(waves), "--vary", "cluster.containers=1..5", "--target", "mean<=20",
                 "--minimize", "cost", "--price", "m5.xlarge=0.192", "--executors-per-instance", "2"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()[1:2] and line.split()[1].isdigit()}
    smallest, cheapest_line = rows["smallest"], rows["cheapest"]
    assert smallest.split()[1] == "3" and cheapest_line.split()[1] == "4"
    hours = 4 * spn.evaluate(waves, ["cluster.containers=4"]).mean_execution_time / 3600
    assert cheapest_line.split()[3] == f"{hours:.4g}" and cheapest_line.split()[4] == f"{hours * 0.096:.4g}"
    assert "0.096 USD per container-hour" in out
    assert main(["plan", str(waves), "--vary", "cluster.containers=1..5", "--target", "mean<=20",
                 "--minimize", "cost", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"]["cheapest"]["value"] == 4


@pytest.mark.parametrize("extra, message", [
    (["--vary", "workload.users=1..3", "--minimize", "cost"], "a cost counts the hours of what is varied"),
    (["--vary", "cluster.containers=1..3", "--price", "0.1"], "--price prices the cheapest configuration"),
    (["--vary", "cluster.containers=1..3", "--minimize", "cost", "--largest"], "cannot be combined with the largest"),
    (["--vary", "cluster.containers=1..3", "--minimize", "cost", "--price", "a=1", "--price", "b=2"],
     "pick one with --instance-type"),
    (["--vary", "cluster.containers=1..1000", "--minimize", "cost"], "give the values to compare as a list"),
])
def test_plan_cost_bad_input_is_one_line_exit_2(waves, capsys, extra, message):
    assert main(["plan", str(waves), "--target", "mean<=1000", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spn: error: ") and message in err and len(err.strip().splitlines()) == 1
