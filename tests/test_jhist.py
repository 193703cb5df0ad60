"""MapReduce .jhist -> MapReduceJob: both real histories in shared/data import; bad input says where.

Expected counts are taken from the files with plain ``json`` parsing, not with
the reader under test. The data folder is ``<repo>/../shared/data`` (override
with SPN_DATA); without it the tests that need real files are skipped.
"""

import gzip
import json
import os
import random
from pathlib import Path

import pytest

from spn.exceptions import LogFormatError
from spn.logs.jhist import MapReduceJob, attempt_durations, read_jhist

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
HISTORY = DATA / "mapreduce-history"
needs_data = pytest.mark.skipif(
    not HISTORY.is_dir(), reason=f"real .jhist files not found at {HISTORY} (set SPN_DATA to the data folder)"
)
SLEEP = HISTORY / "job_1329348432655_0001-1329348443227-user-Sleep+job-1329348468601-10-1-SUCCEEDED-default.jhist"
TERAGEN = HISTORY / (
    "job_1416424547277_0002-1416424775281-root-TeraGen-1416424785433-2-0-SUCCEEDED-default-1416424779349.jhist"
)


def raw_events(path: Path) -> list[dict]:
    """Events of a .jhist by plain json parsing: skip the header and schema lines and blank lines."""
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines[2:] if line.strip()]


@needs_data
@pytest.mark.parametrize("path", [SLEEP, TERAGEN], ids=["sleep", "teragen"])
def test_attempt_counts_match_the_events_in_the_file(path):
    events = raw_events(path)
    kinds = [e["type"] for e in events]
    job = read_jhist(path)
    assert isinstance(job, MapReduceJob)
    assert len(job.map_attempts) == kinds.count("MAP_ATTEMPT_STARTED") == kinds.count("MAP_ATTEMPT_FINISHED")
    assert len(job.reduce_attempts) == kinds.count("REDUCE_ATTEMPT_STARTED")
    assert all(a.status == "SUCCEEDED" and not a.speculative for a in job.attempts)
    assert job.status == "SUCCEEDED" and job.queue == "default"
    assert job.submit_ms < job.launch_ms < job.finish_ms
    assert job.job_id in path.name


@needs_data
def test_sleep_job_10_maps_1_reduce():
    job = read_jhist(SLEEP)
    assert (job.name, job.user, job.job_id) == ("Sleep job", "user", "job_1329348432655_0001")
    assert (job.total_maps, job.total_reduces) == (10, 1)
    assert (job.finished_maps, job.finished_reduces, job.failed_maps) == (10, 1, 0)
    maps = attempt_durations(job, "MAP")
    assert len(maps) == 10
    assert round(min(maps), 1) == 3.6 and round(max(maps), 1) == 12.1
    assert [round(d, 1) for d in attempt_durations(job, "REDUCE")] == [3.6]
    (reduce,) = job.reduce_attempts
    assert reduce.start_ms < reduce.shuffle_finish_ms <= reduce.sort_finish_ms <= reduce.finish_ms
    # two waves of maps: at most 7 ran at once
    changes = sorted([(a.start_ms, 1) for a in job.map_attempts] + [(a.finish_ms, -1) for a in job.map_attempts])
    running = [sum(c for _, c in changes[: i + 1]) for i in range(len(changes))]
    assert max(running) == 7
    assert (job.submit_ms, job.launch_ms, job.finish_ms) == (1329348443227, 1329348448308, 1329348468601)


@needs_data
def test_teragen_2_maps_with_blank_lines_and_wrapped_unions():
    job = read_jhist(TERAGEN)
    assert (job.name, job.user, job.total_maps, job.total_reduces) == ("TeraGen", "root", 2, 0)
    assert sorted(round(d * 1000) for d in attempt_durations(job, "MAP")) == [2975, 2981]
    assert attempt_durations(job, "REDUCE") == ()
    assert job.map_attempts[0].host == "mfs137.qa.lab"


@needs_data
def test_gzip_copy_reads_the_same(tmp_path):
    packed = tmp_path / (TERAGEN.name + ".gz")
    packed.write_bytes(gzip.compress(TERAGEN.read_bytes()))
    assert read_jhist(packed).attempts == read_jhist(TERAGEN).attempts


def test_failed_killed_and_speculative_attempts(tmp_path):
    record = "org.apache.hadoop.mapreduce.jobhistory."
    events = [
        ("JOB_SUBMITTED", "JobSubmitted", {"jobid": "job_1_0001", "jobName": "j", "userName": "u",
                                           "submitTime": 100, "jobQueueName": "q"}),
        ("MAP_ATTEMPT_STARTED", "TaskAttemptStarted", {"taskid": "t_m_0", "attemptId": "a_m_0_0",
                                                       "taskType": "MAP", "startTime": 1000}),
        ("MAP_ATTEMPT_FAILED", "TaskAttemptUnsuccessfulCompletion", {
            "taskid": "t_m_0", "attemptId": "a_m_0_0", "taskType": "MAP", "finishTime": 1500,
            "status": "FAILED", "error": "boom"}),
        ("MAP_ATTEMPT_STARTED", "TaskAttemptStarted", {"taskid": "t_m_0", "attemptId": "a_m_0_1",
                                                       "taskType": "MAP", "startTime": 2000,
                                                       "avataar": {"string": "VIRGIN"}}),
        ("MAP_ATTEMPT_STARTED", "TaskAttemptStarted", {"taskid": "t_m_0", "attemptId": "a_m_0_2",
                                                       "taskType": "MAP", "startTime": 2500,
                                                       "avataar": {"string": "SPECULATIVE"}}),
        ("MAP_ATTEMPT_FINISHED", "MapAttemptFinished", {"taskid": "t_m_0", "attemptId": "a_m_0_1",
                                                        "taskType": "MAP", "taskStatus": "SUCCEEDED",
                                                        "finishTime": 5000, "hostname": "h"}),
        ("MAP_ATTEMPT_KILLED", "TaskAttemptUnsuccessfulCompletion", {
            "taskid": "t_m_0", "attemptId": "a_m_0_2", "taskType": "MAP", "finishTime": 5100,
            "status": "KILLED", "error": ""}),
        ("JOB_FAILED", "JobUnsuccessfulCompletion", {"jobid": "job_1_0001", "finishTime": 6000,
                                                     "jobStatus": "FAILED", "diagnostics": None}),
    ]
    path = tmp_path / "made.jhist"
    path.write_text("Avro-Json\n" + json.dumps({"type": "record", "name": "Event"}) + "\n" + "".join(
        json.dumps({"type": kind, "event": {record + name: body}}) + "\n\n" for kind, name, body in events
    ))
    job = read_jhist(path)
    assert job.status == "FAILED" and job.queue == "q"
    assert [(a.status, a.speculative) for a in job.attempts] == [
        ("FAILED", False), ("SUCCEEDED", False), ("KILLED", True)]
    assert job.attempts[0].error == "boom"
    assert attempt_durations(job, "MAP") == (3.0,)
    assert attempt_durations(job, "MAP", status="FAILED") == (0.5,)


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------


def test_binary_history_needs_converting(tmp_path):
    path = tmp_path / "job.jhist"
    path.write_bytes(b"Avro-Binary\n" + random.Random(1).randbytes(256))
    with pytest.raises(LogFormatError, match=r"job\.jhist: line 1: binary .*converting"):
        read_jhist(path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jhist"
    path.write_text("")
    with pytest.raises(LogFormatError, match=r"empty\.jhist: line 1: empty file"):
        read_jhist(path)


def test_random_bytes(tmp_path):
    path = tmp_path / "random.jhist"
    path.write_bytes(random.Random(2).randbytes(1024))
    with pytest.raises(LogFormatError, match=r"random\.jhist: line 1: expected the header 'Avro-Json'"):
        read_jhist(path)


def test_text_that_is_not_a_history(tmp_path):
    path = tmp_path / "notes.jhist"
    path.write_text("Avro-Json\nthis is not a schema\n{}\n")
    with pytest.raises(LogFormatError, match=r"notes\.jhist: line 2: not JSON"):
        read_jhist(path)


def test_header_without_schema(tmp_path):
    path = tmp_path / "short.jhist"
    path.write_text("Avro-Json\n")
    with pytest.raises(LogFormatError, match=r"short\.jhist: line 2: no Avro schema"):
        read_jhist(path)


@needs_data
def test_event_line_of_the_wrong_shape(tmp_path):
    lines = SLEEP.read_text().splitlines(keepends=True)
    lines.insert(5, '{"type": "JOB_INITED"}\n')
    path = tmp_path / "odd.jhist"
    path.write_text("".join(lines))
    with pytest.raises(LogFormatError, match=r"odd\.jhist: line 6: expected"):
        read_jhist(path)


@needs_data
def test_truncated_last_line_warns_and_keeps_the_rest(tmp_path):
    lines = SLEEP.read_text().splitlines(keepends=True)
    last = len(lines) - 1  # JOB_FINISHED
    path = tmp_path / "running.jhist"
    path.write_text("".join(lines[:last]) + lines[last][:40])
    with pytest.warns(UserWarning, match=rf"running\.jhist: line {last + 1}: last line"):
        job = read_jhist(path)
    assert job.finish_ms is None and job.status != "SUCCEEDED"
    assert len(attempt_durations(job, "MAP")) == 10
