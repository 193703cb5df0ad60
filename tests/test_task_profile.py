"""A Spark task's wall time in parts, and per-stage profiles: what the parts and costs must be.

The parts (scheduler delay, deserialize, fetch wait, shuffle write, compute,
result serialization, getting result) add up to every task's wall time in
every real log, whatever its Spark version; logs built here with known costs
give those costs back exactly; what a log lacks is said, never taken as 0 in
silence; a metric that cannot be what it says is refused with the file and
line. Real logs are read from ``<repo>/../shared/data`` (or ``SPN_DATA``),
never copied here; without them those tests are skipped.
"""

import gzip
import json
import os
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from spn.cli import main
from spn.exceptions import LogFormatError
from spn.logs import PARTS, read_spark_log, stage_profiles, task_parts
from spn.logs.task_profile import NO_METRICS, NO_RUN_TIME, OVERLAP, SHUFFLE_OVER_RUN

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
EVENTS, LUNDSTROM = DATA / "spark-events", DATA / "lundstrom"
SPARK_LOGS = (sorted(EVENTS.glob("*.json")) + sorted(EVENTS.glob("eventlog_v2_*")) if EVENTS.is_dir() else [])
LUNDSTROM_LOGS = sorted(LUNDSTROM.glob("*.json.gz")) if LUNDSTROM.is_dir() else []
needs_events = pytest.mark.skipif(not EVENTS.is_dir(), reason=f"no Spark event logs at {EVENTS}")
needs_lundstrom = pytest.mark.skipif(not LUNDSTROM.is_dir(), reason=f"no lundstrom logs at {LUNDSTROM}")


def part(tasks, k):
    """Task ``k``'s parts as Python numbers (``None``: unknown), with its notes as a tuple."""
    parts = task_parts(tasks.take([k]))
    values = {f.name: getattr(parts, f.name)[0] for f in fields(parts) if f.name not in ("measured", "notes")}
    return SimpleNamespace(**{name: None if np.isnan(v) else float(v) for name, v in values.items()},
                           notes=tuple(parts.notes))


def raw_task_ends(path: Path) -> list[dict]:
    """The ``SparkListenerTaskEnd`` events of a log, by plain json parsing (the test's own reading)."""
    if path.is_dir():
        files = sorted(path.glob("events_*"), key=lambda f: int(f.name.split("_")[1]))
        lines = [line for f in files for line in f.read_text().splitlines()]
    else:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as file:
            lines = file.read().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    return [e for e in events if e["Event"] == "SparkListenerTaskEnd"]


# --------------------------------------------------------------------------
# Every real log: the parts add up, none is negative
# --------------------------------------------------------------------------


@pytest.mark.parametrize("path", SPARK_LOGS + LUNDSTROM_LOGS, ids=lambda p: p.name)
def test_every_successful_task_of_every_real_log_is_its_parts(path):
    app = read_spark_log(path)
    successful = app.tasks.take(app.tasks.successful)
    assert len(successful)
    parts = task_parts(successful)
    values = np.array([getattr(parts, name) for name in PARTS])
    assert values.min() >= 0
    assert np.abs(values.sum(axis=0) - successful.duration).max() <= 1e-9
    assert np.array_equal(parts.wall, successful.duration)
    assert parts.notes == {}  # every real log has the metrics the parts need, and no overlap past a tick
    profiles = stage_profiles(app)
    assert sum(p.tasks for p in profiles) == len(successful)
    for profile in profiles:
        assert sum(profile.mean[name] for name in PARTS) == pytest.approx(profile.mean["wall"], abs=1e-9)


@pytest.mark.parametrize("path", SPARK_LOGS + LUNDSTROM_LOGS[:2], ids=lambda p: p.name)
def test_the_metrics_are_the_logs_numbers_in_si_units(path):
    ends = raw_task_ends(path)
    tasks = read_spark_log(path).tasks
    assert len(tasks) == len(ends)
    columns = {name: tasks.metric(name) for name in tasks.metrics}
    for k, end in enumerate(ends):
        raw = end.get("Task Metrics")
        if raw is None:
            assert not tasks.has_metrics[k] and all(np.isnan(c[k]) for c in columns.values())
            continue
        m = Metrics(tasks, columns, k)
        assert m.run_s * 1000 == pytest.approx(raw["Executor Run Time"])
        assert m.deserialize_s * 1000 == pytest.approx(raw["Executor Deserialize Time"])
        assert m.gc_s * 1000 == pytest.approx(raw["JVM GC Time"])
        read, write = raw.get("Shuffle Read Metrics") or {}, raw.get("Shuffle Write Metrics") or {}
        assert m.fetch_wait_s * 1000 == pytest.approx(read.get("Fetch Wait Time", 0))
        assert m.remote_bytes == read.get("Remote Bytes Read", 0)
        assert m.shuffle_write_s * 1e9 == pytest.approx(write.get("Shuffle Write Time", 0))  # ns in the log
        assert m.shuffle_write_bytes == write.get("Shuffle Bytes Written", 0)
        assert m.input_bytes == (raw.get("Input Metrics") or {}).get("Bytes Read", 0)
        if "Executor CPU Time" in raw:
            assert m.cpu_s * 1e9 == pytest.approx(raw["Executor CPU Time"])
        else:
            assert m.cpu_s is None and "Executor CPU Time" in m.missing


class Metrics:
    """Task ``k``'s metrics in SI units, ``None`` where unknown, and the names of those its log lacks."""

    def __init__(self, tasks, columns, k):
        self.__dict__.update({name: None if np.isnan(c[k]) else float(c[k]) for name, c in columns.items()})
        self.missing = tasks.missing_names[tasks.missing[k]] if tasks.missing[k] >= 0 else ()


def each_metrics(tasks):
    """:class:`Metrics` of every task of ``tasks``."""
    columns = {name: tasks.metric(name) for name in tasks.metrics}
    return [Metrics(tasks, columns, k) for k in range(len(tasks))]


# --------------------------------------------------------------------------
# What each Spark version lacks
# --------------------------------------------------------------------------


@needs_events
def test_spark_1_2_has_no_cpu_no_records_no_local_bytes_and_says_so():
    app = read_spark_log(EVENTS / "local-1422981780767.json")
    assert app.spark_version is None
    every = each_metrics(app.tasks)
    shuffled = [m for m in every if m.remote_blocks or m.local_blocks]
    assert shuffled and all(m.local_bytes is None and m.shuffle_read_records is None for m in shuffled)
    assert all(m.cpu_s is None for m in every)
    profiles = {p.stage_id: p for p in stage_profiles(app)}
    notes = [note for p in profiles.values() for note in p.notes]
    assert "this log has no Executor CPU Time: cpu unknown" in notes
    assert any("no Local Bytes Read: local shuffle bytes and the remote fraction unknown" in n for n in notes)
    assert all(p.mean["cpu"] is None for p in profiles.values())
    read_stages = [p for p in profiles.values() if p.mean_remote_bytes is not None and p.mean_local_bytes is None]
    assert read_stages and all(p.remote_fraction is None for p in read_stages)


@needs_lundstrom
def test_spark_1_6_leaves_out_the_groups_a_task_did_not_use_which_is_zero_not_unknown():
    path = next(LUNDSTROM.glob("q26_e3_*.json.gz"))
    ends = raw_task_ends(path)
    app = read_spark_log(path)
    assert app.spark_version == "1.6.2"
    every = each_metrics(app.tasks)
    no_read = [m for m, e in zip(every, ends) if "Shuffle Read Metrics" not in e["Task Metrics"]]
    assert no_read
    for m in no_read:
        assert (m.remote_bytes, m.local_bytes, m.fetch_wait_s) == (0, 0, 0.0)
        assert "Remote Bytes Read" not in m.missing
    assert all(m.cpu_s is None for m in every)
    assert all("Spark 1.6.2 logs have no Executor CPU Time: cpu unknown" in p.notes for p in stage_profiles(app))


@needs_events
def test_spark_2_1_and_later_have_cpu_time():
    for name in ("app-20161116163331-0000.json", "application_1628109047826_1317105.json"):
        app = read_spark_log(EVENTS / name)
        assert all(m.cpu_s is not None and "Executor CPU Time" not in m.missing for m in each_metrics(app.tasks))
        assert all(p.mean["cpu"] is not None for p in stage_profiles(app))


# --------------------------------------------------------------------------
# The lundstrom Q26 runs: remote shuffle fraction grows with the executors
# --------------------------------------------------------------------------


@needs_lundstrom
@pytest.mark.parametrize("executors, fraction", [(3, 2 / 3), (24, 23 / 24)])
def test_q26_shuffle_stage_fetches_all_but_one_executor_share_remotely(executors, fraction):
    # blocks are spread evenly over the executors; Spark 1.6 counts another executor on the same host as remote
    paths = sorted(LUNDSTROM.glob(f"q26_e{executors}_*.json.gz"))
    assert paths
    for path in paths:
        stage = {p.stage_id: p for p in stage_profiles(read_spark_log(path))}[5]
        assert stage.tasks == 200
        assert len(stage.executors) == executors
        assert stage.remote_fraction == pytest.approx(fraction, abs=0.02)
        assert stage.fetch_wait_per_remote_byte > 0 and stage.compute_per_byte > 0


# --------------------------------------------------------------------------
# Logs with known costs
# --------------------------------------------------------------------------


def write_log(path: Path, tasks: list[dict], version: str | None = "3.5.0") -> Path:
    events = ([{"Event": "SparkListenerLogStart", "Spark Version": version}] if version else []) + [
        {"Event": "SparkListenerApplicationStart", "App ID": "app-t", "App Name": "t", "Timestamp": 0},
        {"Event": "SparkListenerStageSubmitted",
         "Stage Info": {"Stage ID": 1, "Stage Attempt ID": 0, "Stage Name": "reduce", "Number of Tasks": len(tasks),
                        "Parent IDs": [], "Submission Time": 0}},
        *tasks]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def task_end(index, launch, finish, metrics, getting=0, reason="Success", executor=None):
    """A ``SparkListenerTaskEnd`` of stage 1 with ``metrics`` (``None``: no ``Task Metrics``)."""
    event = {"Event": "SparkListenerTaskEnd", "Stage ID": 1, "Stage Attempt ID": 0, "Task End Reason": {"Reason": reason},
             "Task Info": {"Task ID": index, "Index": index, "Attempt": 0, "Launch Time": launch, "Finish Time": finish,
                           "Executor ID": executor or str(index), "Host": f"host-{index % 2}",
                           "Getting Result Time": getting, "Failed": reason != "Success", "Killed": False}}
    if metrics is not None:
        event["Task Metrics"] = metrics
    return event


def metrics(deserialize=40, run=1000, serialize=3, gc=20, cpu_ns=800_000_000, fetch_wait=100, write_ns=5_000_000,
            remote=200_000, local=100_000, input_bytes=1_000_000, written=50_000, records=1000):
    return {"Executor Deserialize Time": deserialize, "Executor Deserialize CPU Time": 1_000_000,
            "Executor Run Time": run, "Executor CPU Time": cpu_ns, "Result Size": 2000, "JVM GC Time": gc,
            "Result Serialization Time": serialize, "Memory Bytes Spilled": 0, "Disk Bytes Spilled": 0,
            "Peak Execution Memory": 0,
            "Shuffle Read Metrics": {"Remote Blocks Fetched": 2, "Local Blocks Fetched": 1, "Fetch Wait Time": fetch_wait,
                                     "Remote Bytes Read": remote, "Remote Bytes Read To Disk": 0,
                                     "Local Bytes Read": local, "Total Records Read": records},
            "Shuffle Write Metrics": {"Shuffle Bytes Written": written, "Shuffle Write Time": write_ns,
                                      "Shuffle Records Written": records // 10},
            "Input Metrics": {"Bytes Read": input_bytes, "Records Read": records},
            "Output Metrics": {"Bytes Written": 0, "Records Written": 0}}


def known_costs_log(path: Path) -> Path:
    """Three tasks; task k (1, 2, 3) runs k s: fetch wait 0.1k s, shuffle write 5k ms, 7 ms of scheduler delay.

    Task k reads 1e6 k input bytes, 2e5 k remote and 1e5 k local shuffle bytes, 1000 k records of each
    kind, and writes 5e4 k shuffle bytes. The third task's result is fetched by the driver for its last 20 ms.
    """
    tasks = []
    for k in (1, 2, 3):
        launch = 10_000 * k
        getting_ms = 20 if k == 3 else 0
        wall = 40 + 1000 * k + 3 + getting_ms + 7
        tasks.append(task_end(k - 1, launch, launch + wall,
                              metrics(run=1000 * k, cpu_ns=800_000_000 * k, fetch_wait=100 * k, write_ns=5_000_000 * k,
                                      remote=200_000 * k, local=100_000 * k, input_bytes=1_000_000 * k,
                                      written=50_000 * k, records=1000 * k),
                              getting=launch + wall - getting_ms if getting_ms else 0))
    tasks.append(task_end(9, 0, 99_000, metrics(), reason="ExceptionFailure"))  # failed: in no profile
    return write_log(path, tasks)


def test_known_costs_give_known_parts(tmp_path):
    app = read_spark_log(known_costs_log(tmp_path / "known.json"))
    parts = [part(app.tasks, k) for k in range(3)]
    for k, p in enumerate(parts, start=1):
        assert p.scheduler_delay == pytest.approx(0.007)
        assert p.deserialize == pytest.approx(0.040)
        assert p.fetch_wait == pytest.approx(0.1 * k)
        assert p.shuffle_write == pytest.approx(0.005 * k)
        assert p.compute == pytest.approx(0.895 * k)
        assert p.result_serialize == pytest.approx(0.003)
        assert p.getting_result == pytest.approx(0.020 if k == 3 else 0.0)
        assert (p.gc, p.cpu, p.remote_bytes, p.local_bytes) == (0.02, pytest.approx(0.8 * k), 200_000 * k, 100_000 * k)
        assert p.notes == ()


def test_known_costs_give_known_stage_profile(tmp_path):
    (stage,) = stage_profiles(read_spark_log(known_costs_log(tmp_path / "known.json")))
    assert (stage.stage_id, stage.name, stage.tasks) == (1, "reduce", 3)
    assert stage.mean["compute"] == pytest.approx(0.895 * 2)
    assert stage.mean["fetch_wait"] == pytest.approx(0.2)
    assert stage.mean["getting_result"] == pytest.approx(0.020 / 3)
    assert stage.mean["cpu"] == pytest.approx(1.6)
    assert stage.cv["scheduler_delay"] == pytest.approx(0.0, abs=1e-9)
    assert stage.cv["compute"] == pytest.approx((2 / 3) ** 0.5 / 2)  # k = 1, 2, 3: sd sqrt(2/3), mean 2
    assert stage.mean_input_bytes == 2_000_000 and stage.mean_remote_bytes == 400_000
    assert stage.mean_local_bytes == 200_000 and stage.mean_shuffle_write_bytes == 100_000
    assert stage.mean_input_records == stage.mean_shuffle_read_records == 2000
    assert stage.mean_output_bytes == 0
    assert stage.remote_fraction == pytest.approx(2 / 3)
    assert stage.compute_per_byte == pytest.approx(0.895 / 1_300_000)
    assert stage.compute_per_record == pytest.approx(0.895 / 2000)
    assert stage.fetch_wait_per_remote_byte == pytest.approx(0.1 / 200_000)
    assert stage.shuffle_write_per_byte == pytest.approx(0.005 / 50_000)
    assert stage.executors == ("0", "1", "2") and stage.hosts == ("host-0", "host-1")
    assert stage.notes == ()


def test_a_cost_with_a_zero_denominator_is_none(tmp_path):
    path = write_log(tmp_path / "map.json", [task_end(0, 0, 2000, metrics(remote=0, local=0, written=0, write_ns=0,
                                                                          fetch_wait=0))])
    (stage,) = stage_profiles(read_spark_log(path))
    assert stage.remote_fraction is None and stage.fetch_wait_per_remote_byte is None
    assert stage.shuffle_write_per_byte is None
    assert stage.compute_per_byte == pytest.approx(stage.mean["compute"] / 1_000_000)


# --------------------------------------------------------------------------
# Fallbacks: said, never a crash
# --------------------------------------------------------------------------


def test_a_task_without_task_metrics_is_all_compute_with_a_note(tmp_path):
    path = write_log(tmp_path / "bare.json", [task_end(0, 0, 1500, None), task_end(1, 0, 1100, metrics())])
    app = read_spark_log(path)
    assert not app.tasks.has_metrics[0]
    bare = part(app.tasks, 0)
    assert (bare.compute, bare.scheduler_delay, bare.fetch_wait, bare.cpu, bare.input_bytes) == (1.5, 0, 0, None, None)
    assert bare.notes == (NO_METRICS,)
    (stage,) = stage_profiles(app)
    assert f"1 of 2 tasks: {NO_METRICS}" in stage.notes
    assert stage.mean_input_bytes == 1_000_000  # over the task that says
    assert stage.compute_per_byte == pytest.approx(part(app.tasks, 1).compute / 1_300_000)  # measured only


def test_task_metrics_without_run_time_or_deserialize_time(tmp_path):
    no_run, no_deserialize = metrics(), metrics()
    del no_run["Executor Run Time"], no_deserialize["Executor Deserialize Time"]
    app = read_spark_log(write_log(tmp_path / "partial.json",
                                   [task_end(0, 0, 1200, no_run), task_end(1, 0, 1200, no_deserialize)]))
    first, second = (part(app.tasks, k) for k in range(2))
    assert first.compute == 1.2 and first.notes == (NO_RUN_TIME,) and first.remote_bytes == 200_000
    assert second.deserialize == 0 and second.scheduler_delay == pytest.approx(1.2 - 1.0 - 0.003)
    assert second.notes == ("no Executor Deserialize Time: taken as 0 (in the scheduler delay)",)
    assert app.tasks.missing_names[app.tasks.missing[1]] == ("Executor Deserialize Time",)


def test_a_log_without_cpu_time_says_cpu_unknown(tmp_path):
    old = metrics()
    del old["Executor CPU Time"], old["Executor Deserialize CPU Time"]
    (stage,) = stage_profiles(read_spark_log(write_log(tmp_path / "old.json", [task_end(0, 0, 1100, old)], "2.0.2")))
    assert stage.mean["cpu"] is None and stage.cv["cpu"] is None
    assert stage.notes == ("Spark 2.0.2 logs have no Executor CPU Time: cpu unknown",)


def test_a_spark_1_2_style_log_reads_with_notes(tmp_path):
    # no LogStart, "Host Name" in the metrics, no records, no Local Bytes Read, groups only when used
    old = {"Host Name": "localhost", "Executor Deserialize Time": 11, "Executor Run Time": 543, "Result Size": 1268,
           "JVM GC Time": 25, "Result Serialization Time": 0, "Memory Bytes Spilled": 0, "Disk Bytes Spilled": 0,
           "Shuffle Read Metrics": {"Shuffle Finish Time": -1, "Remote Blocks Fetched": 1, "Local Blocks Fetched": 1,
                                    "Fetch Wait Time": 4, "Remote Bytes Read": 800},
           "Shuffle Write Metrics": {"Shuffle Bytes Written": 300, "Shuffle Write Time": 2_000_000}}
    mapper = {k: v for k, v in old.items() if k != "Shuffle Read Metrics"}
    mapper["Input Metrics"] = {"Data Read Method": "Hadoop", "Bytes Read": 5000}
    app = read_spark_log(write_log(tmp_path / "old.json", [task_end(0, 0, 600, old), task_end(1, 0, 560, mapper)],
                                   version=None))
    reduce, map_ = (part(app.tasks, k) for k in range(2))
    assert (reduce.fetch_wait, reduce.shuffle_write, reduce.compute) == (0.004, 0.002, pytest.approx(0.537))
    assert reduce.local_bytes is None and reduce.input_bytes == 0 and reduce.output_bytes == 0
    assert map_.local_bytes == 0 and map_.input_bytes == 5000 and map_.input_records is None
    (stage,) = stage_profiles(app)
    assert "this log has no Executor CPU Time: cpu unknown" in stage.notes
    assert "1 of 2 tasks have no Local Bytes Read: local shuffle bytes and the remote fraction unknown" in stage.notes
    assert stage.remote_fraction is None and stage.compute_per_record is None


@pytest.mark.parametrize("excess_ms, noted", [(1, False), (5, True), (1043, True)])
def test_executor_times_past_the_wall_time_come_out_of_run(tmp_path, excess_ms, noted):
    # deserialize 40 + run 1000 + serialize 3 = 1043 ms, in a task whose wall time is shorter
    wall = 1043 - excess_ms
    app = read_spark_log(write_log(tmp_path / "overlap.json", [task_end(0, 0, wall, metrics())]))
    parts = part(app.tasks, 0)
    values = [getattr(parts, name) for name in PARTS]
    assert min(values) >= 0 and abs(sum(values) - wall / 1000) <= 1e-9
    assert parts.scheduler_delay == 0
    assert (OVERLAP in parts.notes) == noted
    if excess_ms < 1000:
        assert parts.deserialize == 0.04 and parts.fetch_wait == 0.1
        assert parts.fetch_wait + parts.shuffle_write + parts.compute == pytest.approx(1 - excess_ms / 1000)


def test_fetch_wait_longer_than_the_run_is_cut_to_it(tmp_path):
    app = read_spark_log(write_log(tmp_path / "wait.json",
                                   [task_end(0, 0, 1100, metrics(run=500, fetch_wait=800, write_ns=10**8))]))
    parts = part(app.tasks, 0)
    assert (parts.fetch_wait, parts.shuffle_write, parts.compute) == (0.5, 0, 0)
    assert parts.notes == (SHUFFLE_OVER_RUN,)
    assert sum(getattr(parts, name) for name in PARTS) == pytest.approx(1.1, abs=1e-9)


# --------------------------------------------------------------------------
# Hostile values: one line naming the field and the line
# --------------------------------------------------------------------------


@pytest.mark.parametrize("where, value, words", [
    (("Executor Run Time",), -5, ["'Executor Run Time' is -5", "a duration in ms"]),
    (("Executor CPU Time",), "abc", ["'Executor CPU Time' is 'abc'", "a duration in ns"]),
    (("Shuffle Read Metrics", "Fetch Wait Time"), 10 ** 30, ["'Fetch Wait Time' is an integer of 31 digits"]),
    (("Shuffle Read Metrics", "Local Bytes Read"), -1, ["'Local Bytes Read' is -1", "a number of bytes"]),
    (("Shuffle Write Metrics", "Shuffle Write Time"), 2 ** 64, ["'Shuffle Write Time' is an integer of 20 digits"]),
    (("Shuffle Write Metrics", "Shuffle Records Written"), 1.5, ["'Shuffle Records Written' is 1.5", "a count"]),
    (("Input Metrics", "Records Read"), True, ["'Records Read' is true"]),
    (("Output Metrics", "Bytes Written"), float("inf"), ["'Bytes Written' is inf"]),
    (("JVM GC Time",), "NaN", ["'JVM GC Time' is 'NaN'"]),
    (("Shuffle Read Metrics",), [1, 2], ["'Shuffle Read Metrics' is a list: expected an object"]),
])
def test_a_hostile_metric_is_refused_naming_field_and_line(tmp_path, capsys, where, value, words):
    events = [task_end(0, 0, 1100, metrics()), task_end(1, 0, 1100, metrics())]
    target = events[1]["Task Metrics"]
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path = write_log(tmp_path / "odd.json", events)
    with pytest.raises(LogFormatError) as error:
        read_spark_log(path)
    message = str(error.value)
    assert "\n" not in message and "odd.json: line 5: malformed SparkListenerTaskEnd event" in message
    assert all(word in message for word in words), message
    capsys.readouterr()
    assert main(["fit", str(path), "-o", str(tmp_path / "m.yaml")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("spn: error:")]
    assert len(errors) == 1 and "line 5" in errors[0] and words[0] in errors[0]


def test_a_result_fetched_outside_the_task_is_refused(tmp_path):
    path = write_log(tmp_path / "late.json", [task_end(0, 100, 1100, metrics(), getting=1200)])
    with pytest.raises(LogFormatError, match=r"late\.json: line 4: .*'Getting Result Time' 1200 is not between "
                                             r"Launch Time 100 and Finish Time 1100"):
        read_spark_log(path)
