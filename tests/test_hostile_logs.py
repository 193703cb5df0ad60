"""Hostile logs: whatever is given to `spn fit` or `spn baseline` as a log, it fits or it is refused cleanly.

A refusal is exit 2 with one line, ``spn: error: ...``, naming the file and the line (or the
field) and what was expected; never a traceback, an exit 1, more than 1 GB of memory or a hang.
The first tests are the cases found by hand (devices, pipes, corrupt or fake gzip, compression
bombs, impossible numbers, clocks running backwards, a log given twice, deep nesting); the
hypothesis tests at the end feed random bytes, random events and random numbers into small
valid logs written here, so that they run without the real logs.
"""

import bz2
import gzip
import json
import lzma
import os
import random
import shutil
import tempfile
import warnings
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spn import limits
from spn.cli import main
from spn.description import load_description
from spn.exceptions import LogFormatError
from spn.logs import lines as log_lines_module
from spn.logs import load_runs, read_jhist, read_spark_log
from tests.hostile import assert_refused, memory_headroom, run_spn

# --------------------------------------------------------------------------
# Small valid logs, as event lists (numbers known by construction)
# --------------------------------------------------------------------------


def spark_events() -> list[dict]:
    """One job: stage 0 (two tasks on 2 cores) feeding stage 1 (one task); times in ms."""
    def info(stage_id, tasks, parents, **times):
        return {"Stage ID": stage_id, "Stage Attempt ID": 0, "Stage Name": f"stage {stage_id}",
                "Number of Tasks": tasks, "Parent IDs": parents, **times}

    def task(stage_id, index, launch, finish):
        return {"Event": "SparkListenerTaskEnd", "Stage ID": stage_id, "Stage Attempt ID": 0,
                "Task End Reason": {"Reason": "Success"},
                "Task Info": {"Task ID": 10 * stage_id + index, "Index": index, "Attempt": 0, "Launch Time": launch,
                              "Finish Time": finish, "Executor ID": "driver", "Host": "localhost",
                              "Failed": False, "Killed": False, "Speculative": False},
                "Task Metrics": {"Executor Run Time": finish - launch,
                                 "Input Metrics": {"Bytes Read": 1000 * (1 - stage_id), "Records Read": 1}}}

    return [
        {"Event": "SparkListenerLogStart", "Spark Version": "3.5.0"},
        {"Event": "SparkListenerApplicationStart", "App Name": "hostile", "App ID": "local-9", "Timestamp": 0,
         "User": "test"},
        {"Event": "SparkListenerEnvironmentUpdate", "Spark Properties": {"spark.master": "local[2]"}},
        {"Event": "SparkListenerExecutorAdded", "Timestamp": 0, "Executor ID": "driver",
         "Executor Info": {"Host": "localhost", "Total Cores": 2}},
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 50, "Stage IDs": [0, 1],
         "Stage Infos": [info(0, 2, []), info(1, 1, [0])], "Properties": {"spark.jobGroup.id": "g"}},
        {"Event": "SparkListenerStageSubmitted", "Stage Info": info(0, 2, [], **{"Submission Time": 100})},
        task(0, 0, 100, 1100),
        task(0, 1, 100, 1300),
        {"Event": "SparkListenerStageCompleted",
         "Stage Info": info(0, 2, [], **{"Submission Time": 100, "Completion Time": 1300})},
        {"Event": "SparkListenerStageSubmitted", "Stage Info": info(1, 1, [0], **{"Submission Time": 1350})},
        task(1, 0, 1350, 1850),
        {"Event": "SparkListenerStageCompleted",
         "Stage Info": info(1, 1, [0], **{"Submission Time": 1350, "Completion Time": 1850})},
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 1900, "Job Result": {"Result": "JobSucceeded"}},
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 2000},
    ]


def jhist_records() -> list[dict]:
    """A MapReduce job: two maps, then one reduce that started early (slow start)."""
    def event(kind, record, **body):
        return {"type": kind, "event": {f"org.apache.hadoop.mapreduce.jobhistory.{record}": body}}

    records = [event("JOB_SUBMITTED", "JobSubmitted", jobid="job_1_0001", jobName="hostile", userName="u",
                     submitTime=1000, jobQueueName="default"),
               event("JOB_INITED", "JobInited", jobid="job_1_0001", launchTime=1100, totalMaps=2, totalReduces=1,
                     jobStatus="INITED", uberized=False)]
    for i, (start, finish) in enumerate([(1200, 3200), (1250, 3400)]):
        attempt = f"attempt_1_0001_m_00000{i}_0"
        records += [event("MAP_ATTEMPT_STARTED", "TaskAttemptStarted", attemptId=attempt,
                          taskid=f"task_1_0001_m_00000{i}", taskType="MAP", startTime=start,
                          trackerName="host", avataar="VIRGIN"),
                    event("MAP_ATTEMPT_FINISHED", "MapAttemptFinished", attemptId=attempt,
                          taskid=f"task_1_0001_m_00000{i}", taskType="MAP", taskStatus="SUCCEEDED",
                          mapFinishTime=finish, finishTime=finish, hostname="host",
                          counters={"name": "COUNTERS", "groups": [
                              {"name": "org.apache.hadoop.mapreduce.FileSystemCounter",
                               "counts": [{"name": "HDFS_BYTES_READ", "value": 5000}]}]})]
    records += [event("REDUCE_ATTEMPT_STARTED", "TaskAttemptStarted", attemptId="attempt_1_0001_r_000000_0",
                      taskid="task_1_0001_r_000000", taskType="REDUCE", startTime=3000, trackerName="host"),
                event("REDUCE_ATTEMPT_FINISHED", "ReduceAttemptFinished", attemptId="attempt_1_0001_r_000000_0",
                      taskid="task_1_0001_r_000000", taskType="REDUCE", taskStatus="SUCCEEDED",
                      shuffleFinishTime=3500, sortFinishTime=3600, finishTime=4400, hostname="host"),
                event("JOB_FINISHED", "JobFinished", jobid="job_1_0001", finishTime=4500, finishedMaps=2,
                      finishedReduces=1, failedMaps=0, failedReduces=0)]
    return records


def write_spark(path: Path, events) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def write_jhist(path: Path, records) -> Path:
    schema = {"type": "record", "name": "Event", "namespace": "org.apache.hadoop.mapreduce.jobhistory"}
    path.write_text("Avro-Json\n" + json.dumps(schema) + "\n" + "".join(json.dumps(r) + "\n" for r in records))
    return path


def fit(*args) -> int:
    """``spn fit ARGS`` in this process: its exit status (its stderr is left to ``capsys``)."""
    return main(["fit", *map(str, args)])


def refused_in_process(capsys, status: int, *words: str) -> str:
    """What :func:`tests.hostile.assert_refused` checks, for a call of :func:`spn.cli.main` in this process."""
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("spn: error:")]
    assert status == 2, f"exit {status}: {err[-2000:]}"
    assert "Traceback" not in err and len(errors) == 1, err[-2000:]
    for word in words:
        assert word in errors[0], f"{word!r} not in {errors[0]!r}"
    return errors[0]


def test_the_small_logs_are_valid(tmp_path):
    app = read_spark_log(write_spark(tmp_path / "app.json", spark_events()))
    assert app.tasks.duration.tolist() == [1.0, 1.2, 0.5]
    job = read_jhist(write_jhist(tmp_path / "job.jhist", jhist_records()))
    assert job.total_maps == 2 and len(job.attempts) == 3
    assert [s.durations for s in load_runs(tmp_path / "job.jhist").jobs[0].stages] == [(2.0, 2.15), (1.0,)]


# --------------------------------------------------------------------------
# What is not a regular file, and compressed data that is not what it says
# --------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_not_read_until_killed(device):
    assert_refused(run_spn("fit", device, timeout=30), device, "not a regular file")


def test_a_named_pipe_is_refused_not_waited_on(tmp_path):
    pipe = tmp_path / "events.json"
    os.mkfifo(pipe)
    assert_refused(run_spn("baseline", pipe, timeout=30), "events.json", "not a regular file")


def test_what_is_not_a_file_in_a_rolling_log_or_a_link_loop_is_refused(tmp_path, capsys):
    rolling = tmp_path / "eventlog_v2_local-1"
    (rolling / "events_2_local-1").mkdir(parents=True)
    write_spark(rolling / "events_1_local-1", spark_events()[:6])
    refused_in_process(capsys, fit(rolling), "events_2_local-1: is a directory")
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    refused_in_process(capsys, fit(loop), "loop.json")


def test_gzip_that_is_not(tmp_path, capsys):
    fake = tmp_path / "fake.json.gz"
    fake.write_text("hello, not gzip\n")  # read by its bytes, not its name: and it is no log
    refused_in_process(capsys, fit(fake), "fake.json.gz", "line 1", "not a Spark event log")
    noise = tmp_path / "noise.gz"
    noise.write_bytes(b"\x1f\x8b\x08\x00" + random.Random(1).randbytes(3000))
    refused_in_process(capsys, fit(noise), "noise.gz", "line 1", "corrupt compressed data")
    trailing = tmp_path / "trailing.json.gz"
    trailing.write_bytes(gzip.compress(b"".join(json.dumps(e).encode() + b"\n" for e in spark_events()))
                         + b"junk after the end")
    refused_in_process(capsys, fit(trailing), "trailing.json.gz", "corrupt compressed data")


@pytest.mark.parametrize("pack", [bz2.compress, lzma.compress], ids=["bzip2", "xz"])
def test_archived_logs_read_as_the_plain_log_and_a_cut_one_warns(tmp_path, capsys, pack):
    plain = write_spark(tmp_path / "app.json", spark_events())
    packed = tmp_path / "packed.json"           # told by its bytes, whatever its name
    packed.write_bytes(pack(plain.read_bytes()))
    assert read_spark_log(packed).tasks == read_spark_log(plain).tasks
    cut = tmp_path / "cut.json"
    cut.write_bytes(packed.read_bytes()[:-20])
    with pytest.warns(UserWarning, match="cut.json: line .*: compressed stream ends early"):
        try:
            read_spark_log(cut)
        except LogFormatError as error:
            assert "cut.json: line" in str(error)
    noise = tmp_path / "noise.json"
    noise.write_bytes(packed.read_bytes()[:6] + random.Random(1).randbytes(3000))
    refused_in_process(capsys, fit(noise), "noise.json", "line 1", "corrupt compressed data")


def test_a_plain_log_named_gz_reads(tmp_path, capsys):
    path = write_spark(tmp_path / "app.json.gz", spark_events())
    assert fit(path, "-o", tmp_path / "m.yaml") == 0


@pytest.mark.parametrize("cut", [3, 10, 0.3, 0.6, 0.95, -1])
def test_gzip_cut_anywhere_warns_and_fits_or_is_refused_cleanly(tmp_path, capsys, cut):
    packed = gzip.compress(b"".join(json.dumps(e).encode() + b"\n" for e in spark_events()))
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: cut if isinstance(cut, int) else int(len(packed) * cut)])
    check_clean(capsys, fit(path, "-o", tmp_path / "m.yaml"))
    with pytest.warns(UserWarning, match="cut.json.gz: line .*: compressed stream ends early"):
        try:
            read_spark_log(path)
        except LogFormatError as error:
            assert "cut.json.gz: line" in str(error)


def test_baseline_reports_reading_warnings_as_spn_warning_lines(tmp_path, capsys):
    packed = gzip.compress(b"".join(json.dumps(e).encode() + b"\n" for e in spark_events()))
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: int(len(packed) * 0.95)])
    status = main(["baseline", str(path), "--no-san"])
    err = capsys.readouterr().err
    assert status in (0, 2) and "Traceback" not in err
    assert "spn: warning: " in err and "compressed stream ends early" in err
    assert all(line.startswith("spn: ") for line in err.splitlines() if line.strip())


def test_a_compression_bomb_is_refused_by_its_line_size(tmp_path):
    bomb = tmp_path / "bomb.json.gz"
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
    with open(bomb, "wb") as out:
        out.write(squeeze.compress(b'{"Event": "SparkListenerLogStart", "x": "'))
        for _ in range(80):
            out.write(squeeze.compress(b"0" * (1 << 20)))
        out.write(squeeze.flush())
    assert bomb.stat().st_size < 200_000
    assert_refused(run_spn("fit", bomb), "bomb.json.gz", "line 1", f"longer than {limits.LOG_LINE_BYTES:,} bytes")


def test_long_lines_and_runs_of_blank_lines_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(limits, "LOG_LINE_BYTES", 4096)
    events = spark_events()
    events[2]["Spark Properties"]["padding"] = "x" * 5000
    refused_in_process(capsys, fit(write_spark(tmp_path / "long.json", events)), "long.json", "line 3",
                       "longer than 4,096 bytes")
    blank = tmp_path / "blank.json.gz"
    blank.write_bytes(gzip.compress(b"\n" * (log_lines_module.MAX_BLANK_LINES + 5)))
    refused_in_process(capsys, fit(blank), "blank.json.gz", "blank lines in a row")


def test_deep_nesting_is_refused(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{"Event": "SparkListenerLogStart"}\n{"Event": "X", "a": ' + "[" * 50_000 + "]" * 50_000 + "}\n"
                    + json.dumps(spark_events()[1]) + "\n")
    refused_in_process(capsys, fit(path), "deep.json", "line 2", "nested too deeply")


def test_a_line_too_dense_to_parse_is_refused_within_memory(tmp_path):
    path = tmp_path / "dense.json"
    path.write_bytes(b'{"Event": "SparkListenerLogStart", "x": [' + b"[]," * 10_000_000 + b"[]]}\n")
    assert_refused(run_spn("fit", path), "dense.json", "line 1", "JSON values")


def test_dense_line_estimate(monkeypatch):
    monkeypatch.setattr(log_lines_module, "_DENSE_LINE_BYTES", 100)
    monkeypatch.setattr(log_lines_module, "PARSE_BUDGET", 10_000)
    assert log_lines_module.json_line(b'{"a": "' + b"x" * 2000 + b'"}', "a: line 1")["a"] == "x" * 2000
    with pytest.raises(LogFormatError, match="a: line 2: 1,001 bytes holding about 668 JSON values"):
        log_lines_module.json_line(b"[" + b"{}," * 333 + b"]", "a: line 2")


def test_names_that_yaml_cannot_hold_are_written_so_that_the_model_reads_back(tmp_path, capsys):
    odd = "a\x01b\ud800c\nphases: []\u2028d"
    events = spark_events()
    events[1]["App Name"] = odd
    events[5]["Stage Info"]["Stage Name"] = odd
    path = tmp_path / "odd.json"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))  # json escapes the lone surrogate
    assert fit(path, "-o", tmp_path / "m.yaml") == 0
    assert {"stage-0", "stage-1"} <= {p.name for p in load_description(tmp_path / "m.yaml").phases}
    assert "a\ufffdb\ufffdc" in (tmp_path / "m.yaml").read_text()


# --------------------------------------------------------------------------
# Numbers that cannot be what they say
# --------------------------------------------------------------------------


def spark_with(tmp_path, where: tuple, value, name="odd.json") -> Path:
    """The small Spark log with ``events[where[0]][where[1]]...`` set to ``value``."""
    events = spark_events()
    target = events[where[0]]
    for key in where[1:-1]:
        target = target[key]
    target[where[-1]] = value
    return write_spark(tmp_path / name, events)


@pytest.mark.parametrize("where, value, words", [
    ((6, "Task Info", "Launch Time"), float("inf"), ["line 7", "'Launch Time' is inf", "epoch milliseconds"]),
    ((6, "Task Info", "Launch Time"), float("nan"), ["line 7", "'Launch Time' is nan"]),
    ((6, "Task Info", "Finish Time"), "NaN", ["line 7", "'Finish Time' is 'NaN'"]),
    ((6, "Task Info", "Finish Time"), "abc", ["line 7", "'Finish Time' is 'abc'"]),
    ((6, "Task Info", "Finish Time"), -5, ["line 7", "'Finish Time' is -5"]),
    ((6, "Task Info", "Index"), 1.5, ["line 7", "'Index' is 1.5", "an id"]),
    ((6, "Stage ID"), "0", ["line 7", "'Stage ID' is '0'"]),
    ((4, "Job ID"), 10 ** 400, ["line 5", "'Job ID' is an integer of 401 digits"]),
    ((5, "Stage Info", "Number of Tasks"), 10 ** 9, ["line 6", "'Number of Tasks' is 1000000000", "a count"]),
    ((3, "Executor Info", "Total Cores"), True, ["line 4", "'Total Cores' is true"]),
    ((6, "Task Metrics", "Input Metrics", "Bytes Read"), -1, ["line 7", "'Bytes Read' is -1"]),
    ((13, "Timestamp"), 1e400, ["line 14", "'Timestamp' is inf"]),
    ((2, "Spark Properties", "spark.executor.cores"), "-3", ["line 3", "'spark.executor.cores' is '-3'"]),
    ((4, "Properties", "spark.jobGroup.id"), {"nested": [1]}, ["line 5", "expected text"]),
])
def test_impossible_numbers_in_a_spark_log_are_refused(tmp_path, capsys, where, value, words):
    path = spark_with(tmp_path, where, value)
    refused_in_process(capsys, fit(path), "odd.json", *words)


def test_a_task_that_finishes_before_it_launches_is_refused(tmp_path, capsys):
    path = spark_with(tmp_path, (7, "Task Info", "Finish Time"), 99)  # launched at 100
    refused_in_process(capsys, fit(path), "odd.json", "line 8", "task 1 (attempt 0) of stage 0",
                       "Finish Time 99 is before Launch Time 100", "corrupt")
    refused_in_process(capsys, main(["baseline", str(path), "--no-san"]), "line 8", "task 1 (attempt 0) of stage 0")


@pytest.mark.parametrize("where, value, words", [
    ((12, "Completion Time"), 10, ["line 13", "job 0: Completion Time 10 is before Submission Time 50"]),
    ((8, "Stage Info", "Completion Time"), 90, ["line 9", "stage 0 (attempt 0): Completion Time 90"]),
    ((1, "Timestamp"), 2500, ["line 14", "the application: ApplicationEnd Timestamp 2000 is before"]),
])
def test_other_ends_before_their_starts_are_refused(tmp_path, capsys, where, value, words):
    refused_in_process(capsys, fit(spark_with(tmp_path, where, value)), "odd.json", *words)


def jhist_with(tmp_path, index: int, key: str, value, name="odd.jhist") -> Path:
    records = jhist_records()
    (body,) = records[index]["event"].values()
    body[key] = value
    return write_jhist(tmp_path / name, records)


@pytest.mark.parametrize("index, key, value, words", [
    (2, "startTime", 1e400, ["line 5", "'startTime' is inf"]),      # was a ~0 s sample, halving the mean
    (2, "startTime", "1200", ["line 5", "'startTime' is '1200'"]),
    (3, "finishTime", 1100, ["line 6", "attempt_1_0001_m_000000_0: finishTime 1100 is before startTime 1200"]),
    (1, "totalMaps", 2.5, ["line 4", "'totalMaps' is 2.5", "a count"]),
    (8, "finishTime", 900, ["line 11", "finishTime 900 is before submitTime 1000"]),
    (7, "finishTime", 3300, ["reduce attempt attempt_1_0001_r_000000_0 finished", "before the last map"]),
    (3, "attemptId", ["x"], ["line 6", "'attemptId' is a list"]),
])
def test_impossible_numbers_in_a_jhist_are_refused(tmp_path, capsys, index, key, value, words):
    refused_in_process(capsys, fit(jhist_with(tmp_path, index, key, value)), "odd.jhist", *words)


def test_an_infinite_time_as_json_text_is_refused(tmp_path):
    path = write_spark(tmp_path / "inf.json", spark_events())
    path.write_text(path.read_text().replace('"Launch Time": 100', '"Launch Time": 1e400', 1))
    assert_refused(run_spn("fit", path), "inf.json", "line 7", "'Launch Time' is inf")


# --------------------------------------------------------------------------
# Many jobs: work that grows with the log, not with its square or cube
# --------------------------------------------------------------------------


def many_jobs(path: Path, jobs: int) -> Path:
    """``jobs`` one-task jobs one after another (a long loop of small queries)."""
    events = [{"Event": "SparkListenerApplicationStart", "App ID": "local-many", "Timestamp": 0},
              {"Event": "SparkListenerExecutorAdded", "Timestamp": 0, "Executor ID": "driver",
               "Executor Info": {"Host": "h", "Total Cores": 2}}]
    for j in range(jobs):
        t = 10 + 20 * j
        info = {"Stage ID": j, "Stage Attempt ID": 0, "Stage Name": "s", "Number of Tasks": 1, "Parent IDs": []}
        events += [
            {"Event": "SparkListenerJobStart", "Job ID": j, "Submission Time": t, "Stage IDs": [j], "Stage Infos": [info]},
            {"Event": "SparkListenerStageSubmitted", "Stage Info": {**info, "Submission Time": t + 1}},
            {"Event": "SparkListenerTaskEnd", "Stage ID": j, "Task End Reason": {"Reason": "Success"},
             "Task Info": {"Index": 0, "Launch Time": t + 2, "Finish Time": t + 12}},
            {"Event": "SparkListenerStageCompleted",
             "Stage Info": {**info, "Submission Time": t + 1, "Completion Time": t + 13}},
            {"Event": "SparkListenerJobEnd", "Job ID": j, "Completion Time": t + 14,
             "Job Result": {"Result": "JobSucceeded"}}]
    events.append({"Event": "SparkListenerApplicationEnd", "Timestamp": 20 * jobs + 100})
    return write_spark(path, events)


@pytest.mark.slow     # fits a log of thousands of jobs: 20 s
def test_a_log_of_thousands_of_jobs_fits_in_time(tmp_path):
    path = many_jobs(tmp_path / "many.json", 2400)  # 4,801 phases with the delays: under the limit
    for mode in ([], ["--per-query"], ["--stage-groups", "--no-delays"]):
        result = run_spn("fit", path, *mode, "-o", tmp_path / "m.yaml", "--force", timeout=60)
        assert result.returncode == 0, result.stderr[-2000:]


def test_more_phases_than_a_description_may_have_says_what_to_do(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("spn.fit.logs.MAX_PHASES", 10)
    path = many_jobs(tmp_path / "many.json", 6)
    refused_in_process(capsys, fit(path), "many.json: 13 phases (6 stages, 7 delays)", "--no-delays")
    assert fit(path, "--no-delays", "-o", tmp_path / "m.yaml") == 0


def test_baseline_of_a_log_that_claims_ten_million_cores_stays_within_memory(tmp_path):
    logs = []
    for cores, end in ((1, 2000), (2, 3000), (4, 4000), (limits.MAX_COUNT, 5000)):
        events = spark_events()
        events[3]["Executor Info"]["Total Cores"] = cores
        events[-1]["Timestamp"] = end
        logs.append(write_spark(tmp_path / f"k{cores}.json", events))
    result = run_spn("baseline", *logs, "--no-san", "--json", timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    fits = json.loads(result.stdout)["executor_fits"]
    assert [f["cores_range"] for f in fits if "error" not in f][0] == [1, 4 * limits.MAX_COUNT]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 15)), max_size=12))
def test_job_order_is_the_transitive_reduction(times):
    from spn.logs.spark_runs import TimedJob, _job_order, _job_order_graph

    jobs = sorted((TimedJob(j, s, s + d, [], 0.0, False, None) for j, (s, d) in enumerate(times)),
                  key=lambda job: (job.submit, job.job_id))
    assert _job_order(jobs) == _job_order_graph(jobs)
    shuffled = [TimedJob(j, s, s + d - 8, [], 0.0, False, None) for j, (s, d) in enumerate(times)]
    assert _job_order(shuffled) == _job_order_graph(shuffled)  # other input: the graph way


# --------------------------------------------------------------------------
# One log given twice
# --------------------------------------------------------------------------


def test_a_repeated_task_a_second_application_or_a_task_outside_the_application_is_refused(tmp_path, capsys):
    # each would be fitted without a word otherwise: a task counted twice, two applications merged
    # under the second one's id, a 4 s task in a 2 s application
    events = spark_events()
    repeated = events[:8] + [events[7]] + events[8:]
    refused_in_process(capsys, fit(write_spark(tmp_path / "repeated.json", repeated)), "line 9",
                       "task ID 1 ends a second time", "repeated event")
    second = [dict(e, **{"App ID": "local-10"}) if e["Event"] == "SparkListenerApplicationStart" else e
              for e in events]
    refused_in_process(capsys, fit(write_spark(tmp_path / "two.json", events[:-1] + second)), "line 15",
                       "a second SparkListenerApplicationStart (local-10 after local-9)")
    late = json.loads(json.dumps(events))
    late[10]["Task Info"].update({"Launch Time": 5000, "Finish Time": 9000})
    refused_in_process(capsys, fit(write_spark(tmp_path / "late.json", late)), "late.json",
                       "task 0 (attempt 0) of stage 1 runs from 5000 to 9000 ms, outside the application (0 to 2000 ms)")


def test_a_jhist_of_two_jobs_is_refused_as_such(tmp_path, capsys):
    records = jhist_records()
    again = json.loads(json.dumps(records).replace("job_1_0001", "job_1_0002"))
    path = write_jhist(tmp_path / "two.jhist", records + again)
    refused_in_process(capsys, fit(path), f"line {len(records) + 3}",
                       "a second job (job_1_0002 after job_1_0001): a .jhist holds the history of one job")


def test_a_stage_declaring_more_tasks_than_the_log_shows_is_said(tmp_path, capsys):
    # a driver drops events when its listener queue is full: the declared count is kept, but not silently
    events = json.loads(json.dumps(spark_events()))
    for e in events[5], events[8]:
        e["Stage Info"]["Number of Tasks"] = 1000
    assert fit(write_spark(tmp_path / "claims.json", events), "-o", tmp_path / "m.yaml") == 0
    err = capsys.readouterr().err
    assert "spn: note: claims.json: stage 0 declares 1,000 tasks but 2 ended successfully" in err
    assert "tasks: 1000" in (tmp_path / "m.yaml").read_text()


def test_baseline_refuses_logs_that_are_not_runs_of_one_application(tmp_path, capsys):
    # ideal scaling and Ernest were fitted across them as if they were (1.956e+05 s for a 10 s run)
    one = write_spark(tmp_path / "one.json", spark_events())
    events = json.loads(json.dumps(spark_events()))
    for e in events[9], events[11]:                             # stage 1 no longer waits for stage 0
        e["Stage Info"]["Parent IDs"] = []
    other = write_spark(tmp_path / "other.json", events)
    job = write_jhist(tmp_path / "job.jhist", jhist_records())
    for logs in ((one, other), (one, job)):
        refused_in_process(capsys, main(["baseline", *map(str, logs), "--no-san"]), "are not runs of the same application")


def test_the_model_is_never_written_over_a_log_it_is_read_from(tmp_path, capsys):
    path = write_spark(tmp_path / "app.json", spark_events())
    before = path.read_bytes()
    refused_in_process(capsys, fit(path, "-o", path, "--force"), "app.json: is one of the logs read")
    assert path.read_bytes() == before


def test_an_input_size_or_scale_of_less_than_a_byte_is_refused(tmp_path, capsys):
    path = write_spark(tmp_path / "app.json", spark_events())
    refused_in_process(capsys, fit(path, "--input-size", "0.0001B"), "expected at least 1 byte")
    refused_in_process(capsys, main(["baseline", str(path), "--predict", "scale=1e-300", "--no-san"]),
                       "less than a byte")


def test_the_same_log_twice_is_refused(tmp_path, capsys):
    path = write_spark(tmp_path / "app.json", spark_events())
    refused_in_process(capsys, fit(path, path), "app.json: given twice")
    copy = tmp_path / "copy" / "app.json.gz"
    copy.parent.mkdir()
    copy.write_bytes(gzip.compress(path.read_bytes()))
    refused_in_process(capsys, fit(path, copy), "copy/app.json.gz: the same log as", "(same content)")
    link = tmp_path / "link.json"
    link.symlink_to(path)
    refused_in_process(capsys, fit(path, link), "(same file)")
    refused_in_process(capsys, main(["baseline", str(path), str(copy), "--no-san"]), "same content")
    job = write_jhist(tmp_path / "job.jhist", jhist_records())
    shutil.copy(job, tmp_path / "again.jhist")
    refused_in_process(capsys, fit(job, tmp_path / "again.jhist"), "again.jhist: the same log as")
    events = spark_events()
    events[6]["Task Info"]["Finish Time"] = 1200  # another run of the same application id: kept
    assert fit(path, write_spark(tmp_path / "other.json", events), "-o", tmp_path / "m.yaml") == 0


# --------------------------------------------------------------------------
# Random input: it fits, or it is refused cleanly
# --------------------------------------------------------------------------

#: few enough examples that the module stays under a minute on a shared 2-core machine
#: (SPN_HOSTILE_EXAMPLES=2000 for a longer search by hand)
FEW = settings(max_examples=int(os.environ.get("SPN_HOSTILE_EXAMPLES", 60)), deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])

json_scalars = (st.none() | st.booleans() | st.text(max_size=12)
                | st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | st.floats(allow_nan=True, allow_infinity=True)
                | st.sampled_from([10 ** 400, -1, 0, 2 ** 53 + 1, 2 ** 63, 1e400, "NaN", "1e400", "", "0"]))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
#: numbers a field may hold: mostly plausible ones (so that the log is read and fitted), some impossible
numbers = (st.integers(min_value=0, max_value=3000) | st.integers(min_value=0, max_value=3000)
           | st.integers(min_value=-(2 ** 66), max_value=2 ** 66) | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from([0, 1, -1, 2 ** 53, 2 ** 63 - 1, 10 ** 7, 10 ** 30, 0.5, 1e400]))


def paths_to_leaves(value, prefix=()):
    """Every path (tuple of keys and indexes) to a leaf of a JSON value."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in paths_to_leaves(v, prefix + (k,))] or [prefix]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in paths_to_leaves(v, prefix + (i,))] or [prefix]
    return [prefix]


def drawn_leaves(choices, bodies):
    """One to three ``(body, path to one of its leaves)``, drawn from ``choices``."""
    for _ in range(choices.draw(st.integers(1, 3))):
        body = bodies[choices.draw(st.integers(0, len(bodies) - 1))]
        yield body, choices.draw(st.sampled_from(paths_to_leaves(body)))


def set_path(value, path, new):
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def check_clean(capsys, status: int) -> None:
    """Exit 0, or exit 2 with one ``spn: error:`` line: never exit 1, never a traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err[-3000:]
    assert status in (0, 2), f"exit {status}: {err[-3000:]}"
    if status == 2:
        assert sum(line.startswith("spn: error:") for line in err.splitlines()) == 1, err[-3000:]


#: ways to fit: alone, or beside the unchanged log (pooled, or as another input size), in every mode
fit_modes = st.sampled_from([(), ("--stage-groups",), ("--per-query",), ("--allow-incomplete", "--empirical"),
                             ("--no-delays", "--method", "moments"), ("+original",),
                             ("+original", "--input-size", "3kB")])


def run_both(capsys, path: Path, out: Path, mode=(), original: Path | None = None) -> None:
    """``spn fit`` (in ``mode``) and ``spn baseline`` (without the SAN model: no solving) on ``path``, each clean."""
    logs = [str(path)]
    if mode and mode[0] == "+original":
        logs.append(str(original))
        mode = mode[1:]
    capsys.readouterr()
    with memory_headroom(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spn baseline leaves warnings to Python: they are not what is tested
        status = main(["fit", *logs, *mode, "-o", str(out), "--force"])
        check_clean(capsys, status)
        if status == 0:
            load_description(out)  # what was written reads back
        check_clean(capsys, main(["baseline", *logs, "--no-san"]))


@FEW
@given(data=st.binary(max_size=3000), wrap=st.sampled_from(["plain", "gzip", "gzip header", "bzip2 header",
                                                              "xz header", "jhist header"]))
def test_random_bytes(capsys, data, wrap):
    data = {"plain": data, "gzip": gzip.compress(data), "gzip header": b"\x1f\x8b\x08\x00" + data,
            "bzip2 header": b"BZh9" + data, "xz header": b"\xfd7zXZ\x00" + data,
            "jhist header": b"Avro-Json\n" + data}[wrap]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "random.json"
        path.write_bytes(data)
        run_both(capsys, path, Path(tmp) / "m.yaml")


@FEW
@given(choices=st.data())
def test_random_values_in_spark_events(capsys, choices):
    events = spark_events()
    for event, where in drawn_leaves(choices, events):
        if where != ("Event",):
            set_path(event, where, choices.draw(json_values))
    if choices.draw(st.booleans()):  # an event of a known kind with random fields
        kind = choices.draw(st.sampled_from(sorted({e["Event"] for e in events})))
        extra = choices.draw(st.dictionaries(st.sampled_from(["Job ID", "Stage ID", "Stage Info", "Task Info",
                                                              "Timestamp", "Executor ID", "Spark Properties",
                                                              "Stage IDs", "Submission Time"]), json_values))
        events.insert(choices.draw(st.integers(0, len(events))), {**extra, "Event": kind})
    run_spark_events(capsys, choices, events)


@FEW
@given(choices=st.data())
def test_random_numbers_in_spark_logs(capsys, choices):
    events = spark_events()
    numeric = [(i, p) for i, e in enumerate(events) for p in paths_to_leaves(e)
               if p and isinstance(_get(e, p), (int, float)) and not isinstance(_get(e, p), bool)]
    for _ in range(choices.draw(st.integers(1, 3))):
        i, where = choices.draw(st.sampled_from(numeric))
        set_path(events[i], where, choices.draw(numbers))
    run_spark_events(capsys, choices, events)


def run_spark_events(capsys, choices, events) -> None:
    """:func:`run_both` on a log of ``events``, in a mode drawn from ``choices``."""
    with tempfile.TemporaryDirectory() as tmp:
        run_both(capsys, write_spark(Path(tmp) / "app.json", events), Path(tmp) / "m.yaml",
                 choices.draw(fit_modes), write_spark(Path(tmp) / "original.json", spark_events()))


@FEW
@given(choices=st.data())
def test_random_values_and_numbers_in_a_jhist(capsys, choices):
    records = jhist_records()
    for body, where in drawn_leaves(choices, [next(iter(r["event"].values())) for r in records]):
        if where:
            number = isinstance(_get(body, where), (int, float)) and choices.draw(st.booleans())
            set_path(body, where, choices.draw(numbers if number else json_values))
    if choices.draw(st.booleans()):
        records.insert(choices.draw(st.integers(0, len(records))), choices.draw(json_values))
    with tempfile.TemporaryDirectory() as tmp:
        run_both(capsys, write_jhist(Path(tmp) / "job.jhist", records), Path(tmp) / "m.yaml",
                 choices.draw(fit_modes), write_jhist(Path(tmp) / "original.jhist", jhist_records()))


def _get(value, path):
    for key in path:
        value = value[key]
    return value
