"""Spark event logs -> SparkApplication: every real log in shared/data imports, and bad input says where.

The expected numbers are counted here independently, with plain ``json``
parsing of the log lines, never with the reader under test. The data folder
is ``<repo>/../shared/data`` (override with the SPN_DATA environment variable);
without it the tests that need real logs are skipped.
"""

import gzip
import json
import os
import random
import warnings
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from spn.exceptions import LogFormatError
from spn.logs.spark import SparkApplication, read_spark_log
from spn.logs.spark_stages import (
    concurrent_stages,
    executor_cores_over_time,
    failed_attempt_seconds,
    job_span_ms,
    max_concurrent_tasks,
    max_executor_cores,
    stage_dag,
    stage_jobs,
    stage_task_durations,
)

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
EVENTS = DATA / "spark-events"
needs_data = pytest.mark.skipif(
    not EVENTS.is_dir(), reason=f"real Spark event logs not found at {EVENTS} (set SPN_DATA to the data folder)"
)
ALL_LOGS = sorted(EVENTS.glob("*.json")) + sorted(EVENTS.glob("eventlog_v2_*")) if EVENTS.is_dir() else []


def log(name: str) -> Path:
    return EVENTS / name


def raw_events(path: Path) -> list[dict]:
    """The events of a log file or rolling directory, by plain json parsing (the test's own count)."""
    files = [path] if path.is_file() else sorted(path.glob("events_*"), key=lambda f: int(f.name.split("_")[1]))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def app_id_from_name(path: Path) -> str:
    return path.name.removeprefix("eventlog_v2_").removesuffix(".json")


# --------------------------------------------------------------------------
# Every real log imports, with the counts the log contains
# --------------------------------------------------------------------------


@needs_data
@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: p.name)
def test_every_log_imports_with_the_counts_it_contains(path):
    events = raw_events(path)
    kinds = Counter(e["Event"] for e in events)
    task_ends = [e for e in events if e["Event"] == "SparkListenerTaskEnd"]
    reasons = Counter(e["Task End Reason"]["Reason"] for e in task_ends)
    stage_attempts = {
        (e["Stage Info"]["Stage ID"], e["Stage Info"]["Stage Attempt ID"])
        for e in events
        if e["Event"] in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted")
    }

    app = read_spark_log(path)

    assert isinstance(app, SparkApplication)
    assert app.app_id == app_id_from_name(path)
    assert len(app.jobs) == kinds["SparkListenerJobStart"]
    assert len(app.stages) == len(stage_attempts) == kinds["SparkListenerStageCompleted"]
    assert len(app.tasks) == kinds["SparkListenerTaskEnd"]
    assert app.tasks.successful.sum() == reasons["Success"]
    assert app.tasks.failed.sum() == reasons["ExceptionFailure"]
    assert app.tasks.killed.sum() == reasons["TaskKilled"]
    assert len(app.executors) == len(
        {e["Executor ID"] for e in events if e["Event"] == "SparkListenerExecutorAdded"}
    )
    # each stage's successful durations: one per successful attempt, all positive, in seconds
    durations = stage_task_durations(app)
    assert set(durations) == {s for s, _ in stage_attempts}
    assert sum(len(d) for d in durations.values()) == reasons["Success"]
    assert all(0 < d < 100 for values in durations.values() for d in values)
    # the DAG has every stage that ran and no cycle
    dag = stage_dag(app)
    assert sorted(dag.nodes) == app.stage_ids()
    assert nx.is_directed_acyclic_graph(dag)


@needs_data
def test_join_dag_of_application_24630151():
    app = read_spark_log(log("application_1506645932520_24630151.json"))
    parents = {s.stage_id: s.parent_ids for s in app.stages}
    assert parents == {0: (), 1: (), 2: (0, 1)}
    dag = stage_dag(app)
    assert set(dag.predecessors(2)) == {0, 1}
    assert dag.graph["inferred"] is False
    assert dag.nodes[2]["num_tasks"] == 1 and dag.nodes[0]["num_tasks"] == 4
    # stages 0 and 1 are the two independent branches of the join: they overlap in time
    assert concurrent_stages(app) == [(0, 1)]
    assert [round(s.duration, 1) for s in app.stages] == [14.6, 22.1, 0.7]
    assert app.validate() == []


@needs_data
def test_chain_dag_and_retried_tasks_of_application_0012():
    app = read_spark_log(log("application_1516285256255_0012.json"))
    assert app.stages[1].parent_ids == (0,)
    assert list(stage_dag(app).edges) == [(0, 1)]
    assert [len(d) for d in stage_task_durations(app).values()] == [10, 10]
    retried = app.tasks.take(app.tasks.attempt > 0)
    assert len(retried) == 4 and retried.successful.all()
    assert app.tasks.failed.sum() == 4
    assert set(failed_attempt_seconds(app)) == {0}


@needs_data
def test_oldest_format_spark_1_2_without_logstart_or_parents():
    app = read_spark_log(log("local-1422981780767.json"))
    assert app.spark_version is None  # no SparkListenerLogStart in 1.2
    assert app.master == "local[*]"
    assert [s.parent_ids for s in app.stages] == [None] * 4
    assert [j.stage_ids for j in app.jobs] == [(0,), (1, 2), (3,)]
    assert all(j.submission_ms is None and j.completion_ms is None for j in app.jobs)
    assert job_span_ms(app, 1) == (app.stages[1].submission_ms, app.stages[2].completion_ms)
    failed = [s for s in app.stages if s.failed]
    assert [s.stage_id for s in failed] == [2]
    assert "failed" in failed[0].failure_reason
    # no Parent IDs: stages of one job are chained in id order, and the graph says so
    dag = stage_dag(app)
    assert dag.graph["inferred"] is True
    assert list(dag.edges(data="inferred")) == [(1, 2, True)]
    assert stage_jobs(app) == {0: 0, 1: 1, 2: 1, 3: 2}
    assert any("stage 2" in p and "failed" in p for p in app.validate())
    assert max_executor_cores(app) is None  # no ExecutorAdded in local mode
    assert max_concurrent_tasks(app) == 8


@needs_data
def test_spark_1_4_log_chains_its_two_stages():
    app = read_spark_log(log("local-1430917381534.json"))
    assert app.spark_version == "1.4.0-SNAPSHOT"
    assert [s.num_tasks for s in app.stages] == [100, 10]
    assert list(stage_dag(app).edges) == [(0, 1)]


@needs_data
def test_newest_format_rolling_directory_spark_4_2():
    app = read_spark_log(log("eventlog_v2_local-1766844910796"))
    assert app.spark_version == "4.2.0-SNAPSHOT"
    assert app.name == app.user == "<script>alert('XSS')</script>"  # kept verbatim; escape when rendering
    assert [e.executor_id for e in app.executors] == ["driver"]
    assert max_executor_cores(app) == 10
    assert len(app.tasks) == 2 and round(app.stages[0].duration, 2) == 0.33


@needs_data
def test_speculative_and_killed_attempt_of_application_1317105():
    app = read_spark_log(log("application_1628109047826_1317105.json"))
    speculative = app.tasks.take(app.tasks.speculative)
    assert len(speculative) == 1
    assert speculative.killed[0] and speculative.reason_names() == ["TaskKilled"]
    # a killed speculative copy is not a task: 4 tasks, the straggler included
    durations = stage_task_durations(app)[0]
    assert len(durations) == 4
    assert round(min(durations), 1) == 2.2 and round(max(durations), 1) == 63.8
    assert failed_attempt_seconds(app) == {0: speculative.duration[0]}
    # dynamic allocation: 10 executors added, 6 removed, one core each
    assert len(app.executors) == 10
    assert sum(e.removed_ms is not None for e in app.executors) == 6
    assert max_executor_cores(app) == 10
    assert executor_cores_over_time(app)[-1][1] == 4
    assert app.executor_cores == 1 and app.executor_instances == 10


@needs_data
def test_three_jobs_of_application_0018_overlap_but_not_within_a_job():
    app = read_spark_log(log("application_1553914137147_0018.json"))
    assert app.spark_version == "3.0.0-SNAPSHOT" and app.name == "LargeBlocks"
    assert concurrent_stages(app) == []
    assert concurrent_stages(app, within_job=False) == [(1, 2)]
    wall = [d for values in stage_task_durations(app).values() for d in values]
    assert round(min(wall), 1) == 14.2 and round(max(wall), 1) == 30.3
    run = stage_task_durations(app, measure="executor_run")
    assert all(r <= w for r_values, w_values in zip(run.values(), stage_task_durations(app).values())
               for r, w in zip(r_values, w_values))


@needs_data
def test_environment_and_redacted_values():
    app = read_spark_log(log("application_1506645932520_24630151.json"))
    assert (app.master, app.executor_cores, app.executor_instances) == ("yarn", 1, 4)
    assert app.redacted_properties == ("spark.user.priority.jars",)


# --------------------------------------------------------------------------
# Compressed and rolling logs
# --------------------------------------------------------------------------


@needs_data
def test_gzip_copy_reads_the_same_as_the_plain_log(tmp_path):
    plain = log("application_1516285256255_0012.json")
    packed = tmp_path / (plain.name + ".gz")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = read_spark_log(plain), read_spark_log(packed)
    assert (a.jobs, a.stages, a.tasks, a.executors) == (b.jobs, b.stages, b.tasks, b.executors)
    assert b.path == str(packed)


@needs_data
def test_rolling_directory_reads_files_in_numeric_order(tmp_path):
    plain = log("application_1516285256255_0012.json")
    lines = plain.read_text().splitlines(keepends=True)
    rolled = tmp_path / "eventlog_v2_application_1516285256255_0012"
    rolled.mkdir()
    # three parts numbered 2, 9, 10: a name sort would put 10 before 2 and 9
    cut1, cut2 = len(lines) // 3, 2 * len(lines) // 3
    for n, part in zip((2, 9, 10), (lines[:cut1], lines[cut1:cut2], lines[cut2:])):
        (rolled / f"events_{n}_application_1516285256255_0012").write_text("".join(part))
    (rolled / "appstatus_application_1516285256255_0012").write_text("")
    a, b = read_spark_log(plain), read_spark_log(rolled)
    assert (a.jobs, a.stages, a.tasks) == (b.jobs, b.stages, b.tasks)


def test_directory_without_events_files_is_refused(tmp_path):
    with pytest.raises(LogFormatError, match="events_"):
        read_spark_log(tmp_path)


# --------------------------------------------------------------------------
# Bad input: a LogFormatError naming the file and the line
# --------------------------------------------------------------------------


def test_empty_file(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("")
    with pytest.raises(LogFormatError, match=r"empty\.json: line 1: empty file"):
        read_spark_log(path)


def test_binary_file(tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(bytes([0x80]) + random.Random(3).randbytes(4096))
    with pytest.raises(LogFormatError, match=r"random\.bin: line 1: not UTF-8"):
        read_spark_log(path)


def test_text_that_is_not_a_log(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Shopping list\neggs\nmilk\n")
    with pytest.raises(LogFormatError, match=r"notes\.txt: line 1: not JSON"):
        read_spark_log(path)


def test_json_lines_without_an_event_key(tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text('{"Event": "SparkListenerLogStart", "Spark Version": "3.5.0"}\n{"level": "INFO"}\n')
    with pytest.raises(LogFormatError, match=r"other\.jsonl: line 2: .*'Event'"):
        read_spark_log(path)


@needs_data
def test_garbage_in_the_middle_is_an_error_not_a_warning(tmp_path):
    lines = log("application_1516285256255_0012.json").read_text().splitlines(keepends=True)
    lines.insert(10, "{oops\n")
    path = tmp_path / "broken.json"
    path.write_text("".join(lines))
    with pytest.raises(LogFormatError, match=r"broken\.json: line 11: not JSON"):
        read_spark_log(path)


@needs_data
def test_truncated_last_line_warns_and_keeps_the_complete_events(tmp_path):
    text = log("application_1516285256255_0012.json").read_text()
    lines = text.splitlines(keepends=True)
    last_task_end = max(i for i, line in enumerate(lines) if '"SparkListenerTaskEnd"' in line)
    cut = "".join(lines[:last_task_end]) + lines[last_task_end][: len(lines[last_task_end]) // 2]
    path = tmp_path / "running.json.inprogress"
    path.write_text(cut)
    with pytest.warns(UserWarning, match=rf"running\.json\.inprogress: line {last_task_end + 1}: last line"):
        app = read_spark_log(path)
    complete = [json.loads(line) for line in lines[:last_task_end]]
    assert len(app.tasks) == sum(e["Event"] == "SparkListenerTaskEnd" for e in complete) == 23
    assert app.stages[-1].completion_ms is None
    assert any("never completed" in p for p in app.validate())


@needs_data
def test_gzip_cut_short_warns(tmp_path):
    packed = gzip.compress(log("application_1516285256255_0012.json").read_bytes())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = read_spark_log(path)
    assert any("cut.json.gz" in str(w.message) for w in caught)
    assert 0 < len(app.stages) <= 2


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_spark_log(tmp_path / "nope.json")


# --------------------------------------------------------------------------
# A log asked for again is read once, while it is unchanged
# --------------------------------------------------------------------------


def counting_reads(monkeypatch) -> list:
    import spn.logs.spark as spark

    reads = []
    original = spark.read_events
    monkeypatch.setattr(spark, "read_events", lambda path, **kw: reads.append(path) or original(path, **kw))
    return reads


@needs_data
def test_a_log_asked_for_again_is_not_read_again_until_it_changes(tmp_path, monkeypatch):
    reads = counting_reads(monkeypatch)
    path = tmp_path / "app.json"
    path.write_bytes(log("application_1516285256255_0012.json").read_bytes())
    first = read_spark_log(path)
    assert read_spark_log(path) is first and len(reads) == 1
    path.write_text(path.read_text().replace('"App Name":"', '"App Name":"changed ', 1))
    assert read_spark_log(path).name.startswith("changed ") and len(reads) == 2


@needs_data
def test_a_cut_off_log_asked_for_again_warns_again(tmp_path):
    text = log("application_1516285256255_0012.json").read_text()
    path = tmp_path / "running.json.inprogress"
    path.write_text(text[: len(text) - 50])
    for _ in range(2):
        with pytest.warns(UserWarning, match="last line is incomplete"):
            read_spark_log(path)


@needs_data
def test_logs_past_the_tasks_kept_are_read_each_time(tmp_path, monkeypatch):
    import spn.logs.spark as spark

    reads = counting_reads(monkeypatch)
    monkeypatch.setattr(spark, "_kept", {})
    monkeypatch.setattr(spark, "KEEP_TASKS", 30)       # the log has 24 tasks: one is kept, not two
    one, other = tmp_path / "one.json", tmp_path / "other.json"
    for path in (one, other):
        path.write_bytes(log("application_1516285256255_0012.json").read_bytes())
    read_spark_log(one), read_spark_log(other), read_spark_log(other), read_spark_log(one)
    assert [Path(p).name for p in reads] == ["one.json", "other.json", "one.json"]
    monkeypatch.setattr(spark, "KEEP_TASKS", 10)      # none kept
    read_spark_log(other), read_spark_log(other)
    assert len(reads) == 5


# --------------------------------------------------------------------------
# validate(): a stage whose parent never ran
# --------------------------------------------------------------------------


def write_log(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def stage_info(stage_id, parents, **times):
    info = {"Stage ID": stage_id, "Stage Attempt ID": 0, "Stage Name": f"s{stage_id}",
            "Number of Tasks": 1, "Parent IDs": parents}
    info.update({{"submitted": "Submission Time", "completed": "Completion Time"}[k]: v for k, v in times.items()})
    return info


def test_stage_whose_parent_never_ran_is_kept_and_reported(tmp_path):
    # job 0 declares stages 0 and 1 (1 reads 0's shuffle), but stage 0 was skipped: only 1 ran
    path = write_log(tmp_path / "skipped.json", [
        {"Event": "SparkListenerApplicationStart", "App ID": "app-1", "App Name": "a", "Timestamp": 0, "User": "u"},
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 10, "Stage IDs": [0, 1],
         "Stage Infos": [stage_info(0, []), stage_info(1, [0])]},
        {"Event": "SparkListenerStageSubmitted", "Stage Info": stage_info(1, [0], submitted=11)},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 1, "Stage Attempt ID": 0,
         "Task End Reason": {"Reason": "Success"},
         "Task Info": {"Task ID": 0, "Index": 0, "Attempt": 0, "Launch Time": 12, "Finish Time": 2012}},
        {"Event": "SparkListenerStageCompleted", "Stage Info": stage_info(1, [0], submitted=11, completed=2013)},
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 2014, "Job Result": {"Result": "JobSucceeded"}},
        {"Event": "SomeFutureEvent", "whatever": [1, 2, 3]},
    ])
    app = read_spark_log(path)
    assert app.stage_ids() == [1]
    assert app.stages[0].parent_ids == (0,)
    assert stage_task_durations(app) == {1: (2.0,)}
    assert list(stage_dag(app).nodes) == [1] and not stage_dag(app).edges
    assert app.validate() == [
        "stage 1: parent stage 0 never ran (skipped, its output reused, or missing from the log)"
    ]


def test_redacted_master_and_cores_become_none(tmp_path):
    redacted = "*********(redacted)"
    path = write_log(tmp_path / "redacted.json", [
        {"Event": "SparkListenerEnvironmentUpdate",
         "Spark Properties": {"spark.master": redacted, "spark.executor.cores": redacted,
                              "spark.executor.instances": "3"}},
    ])
    app = read_spark_log(path)
    assert (app.master, app.executor_cores, app.executor_instances) == (None, None, 3)
    assert app.redacted_properties == ("spark.executor.cores", "spark.master")
    assert "no SparkListenerApplicationStart" in app.validate()[0]


def test_malformed_known_event_names_file_and_line(tmp_path):
    path = write_log(tmp_path / "bad_task.json", [
        {"Event": "SparkListenerLogStart", "Spark Version": "3.5.0"},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task Info": {"Index": 0}},
    ])
    with pytest.raises(LogFormatError, match=r"bad_task\.json: line 2: malformed SparkListenerTaskEnd"):
        read_spark_log(path)

