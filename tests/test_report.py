"""spn report: the facts of a run read from its log (exact on a log written here), the report's curves equal
to what the commands answer, the page showing the JSON's numbers, and files never written over."""

import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest

from spn.cli import main
from spn.defaults import SEED
from spn.pipeline import Budget, Question, evaluate
from spn.report.data import build_report, default_cores, default_executors, default_input_sizes
from spn.report.html import render_html
from spn.report.runs import read_application, run_summary, stage_table, timeline
from spn.studies.cost import parse_price
from spn.studies.targets import parse_target
from spn.studies.predict import predict
from whatif_logs import pilot_log

LUNDSTROM = Path(__file__).resolve().parents[2] / "shared" / "data" / "lundstrom"
Q52 = LUNDSTROM / "q52_e3_application_1481182872654_0046.json.gz"


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """2 executors x 2 cores from 100 ms to 7 s; stage 0: 4 tasks of 2 s from 1 s; stage 1: tasks of 1.1, 1.1,
    1.1 and 3.5 s from 3 s (executor 1 runs two of 1.1 s, executor 2 one of 1.1 s and the 3.5 s one)."""
    return pilot_log(tmp_path_factory.mktemp("report") / "pilot.json")


@pytest.fixture(scope="module")
def report(pilot):
    return build_report([pilot], executors=(2, 4), cores=(1, 2), input_sizes=(1e9, 2e9), users=(1, 2),
                        target=parse_target("p95<=8"), price=parse_price(["0.5"]))


# ---------------------------------------------------------------------------- the run, by hand
def test_a_runs_hours_by_hand(pilot):
    app, run = read_application(pilot)
    facts = run_summary(app, run)
    assert (facts["executors"], facts["cores"], facts["slots"]) == (2, 2, 4)
    assert facts["span_s"] == facts["seconds"] == 7.0
    assert facts["executor_hours"] == pytest.approx(2 * 6.9 / 3600)             # both held from 0.1 s to 7 s
    # executor 1 ran tasks over 1-4.1 s, executor 2 over 1-6.5 s: idle 3.8 s and 1.4 s
    assert facts["idle_executor_hours"] == pytest.approx((3.8 + 1.4) / 3600)
    assert facts["core_hours"] == pytest.approx(2 * 2 * 6.9 / 3600)
    assert facts["task_hours"] == pytest.approx((4 * 2.0 + 3 * 1.1 + 3.5) / 3600)
    assert facts["idle_core_hours"] == pytest.approx((27.6 - 14.8) / 3600)
    assert facts["driver_s"] == pytest.approx(1.5)            # no task ran before 1 s and after 6.5 s
    assert facts["critical_path_s"] == pytest.approx(1.5 + 2.0 + 3.5)            # the longest task of each stage
    assert facts["ideal_s"] == pytest.approx(1.5 + 14.8 / 4)


def test_a_runs_timeline_by_hand(pilot):
    app, _ = read_application(pilot)
    line = timeline(app, bins=7)                  # one-second slices
    assert [(s["stage"], s["start_s"], s["end_s"]) for s in line["stages"]] == [(0, 1.0, 3.0), (1, 3.0, 6.5)]
    assert line["executors_alive"] == pytest.approx([1.8, 2, 2, 2, 2, 2, 2])
    assert line["executors_busy"] == pytest.approx([0, 2, 2, 2, 1.1, 1, 0.5])
    assert line["tasks_running"] == pytest.approx([0, 4, 4, 4, 0.4 + 0.9, 1, 0.5])
    # the slices' averages add up to the task-hours
    assert sum(line["tasks_running"]) * line["slice_s"] == pytest.approx(14.8)


def test_a_runs_stages_by_hand(pilot):
    app, _ = read_application(pilot)
    rows = stage_table(app, slots=4, fitted={"stage-1": {"stage_ids": [1], "shape": 2, "ks_distance": 0.3,
                                                         "ks_p_value": 0.001, "bootstrap_replicates": 999,
                                                         "verdict": "rejected"}})
    first, second = rows
    assert (first["tasks"], first["duration_s"], first["skew"], first["tasks_per_slot"]) == (4, 2.0, 1.0, 1.0)
    assert (second["median_task_s"], second["max_task_s"], second["duration_s"]) == (1.1, 3.5, 3.5)
    assert second["skew"] == pytest.approx(3.5 / 1.1)
    assert first["law"] is None and second["law"] == "Erlang(2)"
    assert second["ks_p_at_most"] and second["verdict"] == "rejected"


# ---------------------------------------------------------------------------- the report asks the commands' questions
def test_default_executor_counts():
    assert default_executors([3, 3, 6]) == [3, 6, 12, 24]
    assert default_executors([10]) == [10, 20, 40, 80]
    assert default_executors([5, 7]) == [5, 7, 10, 20, 40]


def test_default_cores_and_input_sizes():
    assert default_cores(2) == [1, 2, 4, 8] and default_cores(3) == [1, 2, 3, 4, 8]
    assert default_input_sizes(10**9) == [5 * 10**8, 10**9, 2 * 10**9, 4 * 10**9]


def test_the_what_if_curve_is_spn_predicts(pilot, report):
    rows = predict([pilot], ("spark.executor.instances", [2, 4]), seed=SEED, rel_precision=0.01, level=0.9)
    assert [r["executors"] for r in report["what_if"]["rows"]] == [2, 4]
    for mine, theirs in zip(report["what_if"]["rows"], rows):
        assert mine["mean_execution_time"] == theirs.mean_s
        assert mine["prediction_interval"] == theirs.prediction.as_dict()
    assert "spn predict pilot.json --vary spark.executor.instances=2,4" in report["what_if"]["command"]


@pytest.mark.parametrize("curve, key, values", [("what_if_cores", "spark.executor.cores", [1, 2]),
                                                 ("what_if_input", "input-size", [10**9, 2 * 10**9])])
def test_the_curves_over_cores_and_input_are_spn_predicts_at_the_pilots_other_settings(pilot, report, curve, key,
                                                                                        values):
    # the pilot's log is its only log: the pilot's executors (2), cores (2) and input (1 GB) are every log's
    rows = predict([pilot], (key, values), seed=SEED, rel_precision=0.01, level=0.9)
    assert [r["value"] for r in report[curve]["rows"]] == values
    for mine, theirs in zip(report[curve]["rows"], rows):
        assert mine["mean_execution_time"] == theirs.mean_s
        assert mine["prediction_interval"] == theirs.prediction.as_dict()
        assert mine["rules"] == list(theirs.rules)
    assert f"spn predict pilot.json --vary {key}={','.join(map(str, values))} --seed {SEED}" in report[curve]["command"]
    assert report[curve]["measured"] == [{"log": "pilot.json", "value": values[0] if key == "input-size" else 2,
                                          "seconds": 7.0}]


def test_the_pilots_configuration_on_every_curve_is_one_answer(report):
    at_pilot = [next(r for r in report[curve]["rows"] if (r["executors"], r["cores"], r["input_bytes"]) ==
                     (2, 2, 10**9)) for curve in ("what_if", "what_if_cores", "what_if_input")]
    assert len({json.dumps({k: r[k] for k in ("mean_execution_time", "prediction_interval", "method")})
                for r in at_pilot}) == 1


def test_beside_each_point_sparklens_and_ideal_scaling_on_its_slots_and_input(pilot, report):
    from spn.baselines.sparklens import sparklens_estimate

    app, _ = read_application(pilot)
    cores = {r["value"]: r for r in report["what_if_cores"]["rows"]}
    assert cores[1]["sparklens_s"] == sparklens_estimate(app, executors=2, cores=1)
    assert cores[1]["ideal_scaling_s"] == pytest.approx(7.0 * 4 / 2)         # 4 slots' time on 2
    inputs = {r["value"]: r for r in report["what_if_input"]["rows"]}
    assert inputs[2 * 10**9]["sparklens_s"] is None                         # a replay of the pilot's tasks
    assert inputs[2 * 10**9]["ideal_scaling_s"] == pytest.approx(7.0 * 2)


def test_a_pilot_that_counts_no_input_has_no_input_curve_and_says_why(pilot, tmp_path):
    events = [json.loads(line) for line in pilot.read_text().splitlines()]
    for event in events:
        event.get("Task Metrics", {}).pop("Input Metrics", None)
    blind = tmp_path / "blind.json"
    blind.write_text("".join(json.dumps(e) + "\n" for e in events))
    data = build_report([blind], executors=(2,), cores=(2,), users=(1,))
    assert data["what_if_input"]["rows"] == [] and "counts no input bytes" in data["what_if_input"]["note"]
    assert "No curve: the pilot&#x27;s log counts no input bytes" in render_html(data)


def test_the_multi_user_curve_is_the_pipelines(pilot, report):
    think = report["users"]["think_time"]
    assert think == report["runs"][0]["seconds"]          # by default: the pilot's execution time
    for row in report["users"]["rows"]:
        result = evaluate([pilot], [f"workload.users={row['users']}", f"workload.think_time={think!r}"],
                          question=Question(percentiles=(95.0,)), budget=Budget(seed=SEED, rel_precision=0.01))
        assert row["mean_execution_time"] == result.mean_execution_time
        assert row["p95"] == result.percentiles[95.0]


def test_cost_of_each_configuration_and_the_cheapest_meeting_the_target(report):
    cost = report["cost"]
    for row, predicted in zip(cost["configurations"], report["what_if"]["rows"]):
        assert row["executor_hours"] == row["executors"] * predicted["mean_execution_time"] / 3600
        assert row["money"] == 0.5 * row["executor_hours"]
        assert row["target_metric"] == predicted["spread"][1]               # p95 at level 0.9
        assert row["meets"] == (row["target_metric"] <= 8)
    met = [row for row in cost["configurations"] if row["meets"]]
    assert met, "the synthetic run meets p95<=8 at some executor count"
    assert cost["smallest"] == min(met, key=lambda r: r["executors"])
    assert cost["cheapest"] == min(met, key=lambda r: (r["money"], r["executors"]))
    measured = cost["measured"][0]
    assert measured["held_executor_hours"] == report["runs"][0]["executor_hours"]
    assert measured["executor_hours"] == 2 * 7.0 / 3600


def test_a_report_within_a_spent_budget_leaves_the_points_out_and_says_so(pilot):
    data = build_report([pilot], executors=(2, 4), cores=(4,), input_sizes=(), users=(1, 2), max_seconds=1e-9)
    assert data["what_if"]["rows"] == data["what_if_cores"]["rows"] == data["users"]["rows"] == []
    assert any("executors: 2 executors, 4 executors left out" in note for note in data["budget"]["notes"])
    assert any("cores per executor: 4 cores left out" in note for note in data["budget"]["notes"])
    assert "left out" in render_html(data)


def test_a_target_the_report_cannot_judge_is_refused(pilot):
    with pytest.raises(Exception, match="give --level 0.98 for p99"):
        build_report([pilot], target=parse_target("p99<=10"))


# ---------------------------------------------------------------------------- the page shows the JSON
class _Numbers(HTMLParser):
    def __init__(self):
        super().__init__()
        self.numbers, self.tags, self.urls = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "data-key" in attrs:
            self.numbers.append((attrs["data-key"], json.loads(attrs["data-value"])))
        self.urls += [v for k, v in attrs.items() if k in ("src", "href") and v]


def _at(data, key):
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def test_every_number_on_the_page_is_the_jsons(report):
    page = _Numbers()
    page.feed(render_html(json.loads(json.dumps(report))))
    assert len(page.numbers) > 50
    for key, value in page.numbers:
        assert _at(report, key) == value, key
    shown = {key for key, _ in page.numbers}
    for must in ("runs.0.critical_path_s", "runs.0.ideal_s", "runs.0.idle_executor_hours",
                 "what_if.rows.1.prediction_interval.high", "users.rows.1.p95", "cost.configurations.0.money",
                 "what_if_cores.rows.0.mean_execution_time", "what_if_input.rows.1.value",
                 "detail.stages.1.skew", "detail.stages.1.tasks_per_slot"):
        assert must in shown
    assert page.tags.count("svg") == 5 and "script" not in page.tags and "link" not in page.tags
    assert page.urls == []                       # nothing to fetch: the page stands alone


# ---------------------------------------------------------------------------- the command
def test_report_command_writes_the_page_and_its_json(pilot, tmp_path, capsys):
    out, data = tmp_path / "r.html", tmp_path / "r.json"
    args = ["report", str(pilot), "-o", str(out), "--json", str(data), "--executors", "2", "--cores", "2,4",
            "--input-sizes", "1GB,2GB", "--users", "1", "--max-seconds", "120"]
    assert main(args) == 0
    assert "wrote" in capsys.readouterr().out
    content = json.loads(data.read_text())
    assert content["spn_report"] == 1 and content["what_if"]["values"] == [2]
    assert content["what_if_cores"]["values"] == [2, 4] and content["what_if_input"]["values"] == [10**9, 2 * 10**9]
    assert "<svg" in out.read_text()
    assert main(args) == 2                                   # its own report: replaced only with --force
    assert "replaced only with --force" in capsys.readouterr().err
    assert main(args + ["--force"]) == 0


@pytest.mark.parametrize("make, extra, message", [
    (lambda d: (d / "notes.html").write_text("<p>mine</p>"), ["-o", "{d}/notes.html", "--force"],
     "is not a report spn wrote"),
    (lambda d: None, ["-o", "{log}", "--force"], "is one of the logs read"),
    (lambda d: None, ["-o", "{d}/a.html", "--json", "{d}/a.html"], "must be two files"),
    (lambda d: None, ["-o", "{d}/missing/a.html"], "does not exist"),
    (lambda d: None, ["-o", "{d}/a.html", "--target", "p99<=10"], "give --level 0.98"),
    (lambda d: None, ["-o", "{d}/a.html", "--target", "fast"], "--target: expected"),
    (lambda d: None, ["-o", "{d}/a.html", "--price", "a=1", "--price", "b=2"], "pick one with --instance-type"),
    (lambda d: None, ["-o", "{d}/a.html", "--users", "0"], "expected whole numbers"),
    (lambda d: None, ["-o", "{d}/a.html", "--input-sizes", "1GB,lots"], "--input-sizes: input size 'lots'"),
])
def test_report_bad_input_is_one_line_exit_2(pilot, tmp_path, capsys, make, extra, message):
    make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    args = [a.format(d=tmp_path, log=pilot) for a in extra]
    assert main(["report", str(pilot), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spn: error: ") and message in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before     # nothing written, nothing replaced


def test_report_of_a_missing_or_foreign_log_is_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.json"), "-o", str(tmp_path / "r.html")]) == 2
    assert "nope.json" in capsys.readouterr().err
    jhist = Path(__file__).resolve().parents[2] / "shared" / "data" / "mapreduce-history"
    histories = sorted(jhist.glob("*.jhist")) if jhist.is_dir() else []
    if histories:
        assert main(["report", str(histories[0]), "-o", str(tmp_path / "r.html")]) == 2
        assert "spn report reads Spark event logs" in capsys.readouterr().err


# ---------------------------------------------------------------------------- a real run
@pytest.mark.slow
@pytest.mark.skipif(not Q52.exists(), reason="the lundstrom logs are not on this machine")
def test_a_real_runs_report_keeps_its_invariants():
    data = build_report([Q52], users=(1, 2), max_seconds=300)
    run = data["runs"][0]
    assert (run["executors"], run["cores"], run["tasks"]) == (3, 2, 704)
    # what no schedule beats: the critical path and the ideal time are below the measured time
    assert run["critical_path_s"] <= run["seconds"] and run["ideal_s"] <= run["seconds"]
    assert 0 <= run["idle_executor_hours"] <= run["executor_hours"]
    assert run["task_hours"] <= run["core_hours"] * 1.001
    assert sum(s["tasks"] for s in data["detail"]["stages"]) == 704
    rows = {r["executors"]: r for r in data["what_if"]["rows"]}
    assert set(rows) == {3, 6, 12, 24}
    assert [r["value"] for r in data["what_if_cores"]["rows"]] == [1, 2, 4, 8]
    assert [r["value"] for r in data["what_if_input"]["rows"]] == default_input_sizes(run["input_bytes"])
    assert rows[3]["prediction_interval"]["low"] <= run["seconds"] <= rows[3]["prediction_interval"]["high"]
    assert all(math.isfinite(r["mean_execution_time"]) for r in data["users"]["rows"])
