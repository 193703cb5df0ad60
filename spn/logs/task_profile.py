"""Where a Spark task's wall time went, and what each stage's tasks cost per byte.

:func:`task_parts` splits one task attempt's wall time (``Finish Time -
Launch Time``) into parts that add up to it exactly, as the Spark UI's
timeline does:

- ``scheduler_delay``: what the executor metrics do not account for (the task and its result on
  the wire, queueing on the driver): the wall time minus the four below that are measured;
- ``deserialize`` (``Executor Deserialize Time``), ``result_serialize`` (``Result Serialization
  Time``), ``getting_result`` (the driver fetching a large result);
- the run (``Executor Run Time``), itself split into ``fetch_wait`` (waiting for shuffle blocks),
  ``shuffle_write`` (``Shuffle Write Time``, logged in ns) and ``compute``, the rest of the run.

Garbage collection (``gc``, inside the run) and the CPU time (``cpu``, ``None`` before Spark
2.1) are given beside the parts, with what the task read and wrote. The clock ticks in ms: when
the measured parts exceed the wall time by up to a tick the excess comes out of the run; by more
than that, too, with a note. A task without ``Task Metrics`` is all ``compute``, with a note.

:func:`stage_profiles` gives per stage the mean and coefficient of variation of each part, the
bytes and records per task, the share of shuffle bytes fetched from other executors and the
per-byte costs that a model scaling with data or executors needs. :func:`task_sizes` gives what each
task read, the size its compute is set against (``spn.fit.costs`` fits a fixed + per-byte cost to it).

>>> from spn.logs.spark import SparkTask
>>> from spn.logs.task_metrics import read_task_metrics
>>> metrics = read_task_metrics({"Getting Result Time": 0}, {
...     "Executor Deserialize Time": 100, "Executor Run Time": 1800, "Result Serialization Time": 2,
...     "JVM GC Time": 40, "Shuffle Read Metrics": {"Fetch Wait Time": 300, "Remote Bytes Read": 4000,
...     "Local Bytes Read": 2000}, "Shuffle Write Metrics": {"Shuffle Write Time": 25_000_000}})
>>> task = SparkTask(0, 0, 7, 3, 0, 1000, 3000, "1", "host-1", 1800, "Success", "success", False, metrics=metrics)
>>> parts = task_parts(task)
>>> [round(getattr(parts, name), 3) for name in PARTS]
[0.098, 0.1, 0.3, 0.025, 1.475, 0.002, 0.0]
>>> round(sum(getattr(parts, name) for name in PARTS), 9) == task.duration, parts.notes
(True, ())
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from spn.logs.spark import SparkApplication, SparkTask
from spn.logs.spark_stages import successful_tasks

__all__ = ["PARTS", "StageProfile", "TaskParts", "stage_profiles", "task_parts", "task_sizes"]

#: the parts of a task's wall time, in the order they happen; they add up to the wall time
PARTS = ("scheduler_delay", "deserialize", "fetch_wait", "shuffle_write", "compute", "result_serialize",
         "getting_result")

_TICK_NS = 1_000_000  # the logs' clock: 1 ms

NO_METRICS = "no Task Metrics: all of the wall time is taken as compute"
NO_RUN_TIME = "no Executor Run Time: all of the wall time is taken as compute"
OVERLAP = ("deserialize + run + result serialization + getting result exceed the wall time by more than "
           "the 1 ms tick: the excess is taken out of run")
SHUFFLE_OVER_RUN = "fetch wait + shuffle write exceed the run time by more than the 1 ms tick: cut to the run time"
#: a part's field that a log may lack -> what then stands in for it
_TAKEN_AS_0 = {
    "Executor Deserialize Time": "in the scheduler delay",
    "Result Serialization Time": "in the scheduler delay",
    "Getting Result Time": "in the scheduler delay",
    "Fetch Wait Time": "in compute",
    "Shuffle Write Time": "in compute",
}
#: a field used by the profiles that a log may lack -> what is then unknown (the parts' fields are in task notes)
_UNKNOWN = {
    "Executor CPU Time": "cpu unknown",
    "JVM GC Time": "gc unknown",
    "Bytes Read": "input bytes unknown",
    "Records Read": "input records unknown",
    "Remote Bytes Read": "remote shuffle bytes unknown",
    "Local Bytes Read": "local shuffle bytes and the remote fraction unknown",
    "Total Records Read": "shuffle read records unknown",
    "Shuffle Bytes Written": "shuffle write bytes unknown",
    "Shuffle Records Written": "shuffle write records unknown",
    "Bytes Written": "output bytes unknown",
    "Records Written": "output records unknown",
    "Memory Bytes Spilled": "memory spill unknown",
    "Disk Bytes Spilled": "disk spill unknown",
}


@dataclass(frozen=True)
class TaskParts:
    """One task attempt's wall time (s) in parts that add up to it (:data:`PARTS`), and what it moved.

    ``gc`` (inside the run) and ``cpu`` (the executor's CPU time, deserialization
    excluded) are seconds, not parts of the sum; sizes are bytes, records and
    blocks. Each is ``None`` when the log does not say. ``notes`` say where a
    part was not measured but stood in for (:data:`NO_METRICS`, ...).
    """

    wall: float
    scheduler_delay: float
    deserialize: float
    fetch_wait: float
    shuffle_write: float
    compute: float
    result_serialize: float
    getting_result: float
    gc: float | None = None
    cpu: float | None = None
    input_bytes: int | None = None
    input_records: int | None = None
    remote_bytes: int | None = None
    local_bytes: int | None = None
    remote_blocks: int | None = None
    local_blocks: int | None = None
    shuffle_read_records: int | None = None
    shuffle_write_bytes: int | None = None
    shuffle_write_records: int | None = None
    output_bytes: int | None = None
    output_records: int | None = None
    memory_spilled_bytes: int | None = None
    disk_spilled_bytes: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def measured(self) -> bool:
        """Whether the run was measured (not the all-compute fallback)."""
        return NO_METRICS not in self.notes and NO_RUN_TIME not in self.notes


def _ns(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1e9)


def task_parts(task: SparkTask) -> TaskParts:
    """The parts of ``task``'s wall time (see the module's docstring); they sum to ``task.duration``.

    Times are split in whole nanoseconds, so the float parts add up to the
    wall time to within rounding (far below 1e-9 s); no part is negative.
    """
    wall = (task.finish_ms - task.launch_ms) * _TICK_NS
    m = task.metrics
    if m is None or m.run_s is None:
        sizes = {} if m is None else _sizes(m)
        zero = dict.fromkeys(PARTS, 0.0)
        return TaskParts(wall=wall / 1e9, **{**zero, "compute": wall / 1e9}, **sizes,
                         notes=(NO_METRICS if m is None else NO_RUN_TIME,))
    notes = []

    def known(seconds: float | None, name: str) -> int:
        if seconds is None:
            notes.append(f"no {name}: taken as 0 ({_TAKEN_AS_0[name]})")
            return 0
        return _ns(seconds)

    deserialize = known(m.deserialize_s, "Executor Deserialize Time")
    run = _ns(m.run_s)
    serialize = known(m.result_serialize_s, "Result Serialization Time")
    getting = known(m.getting_result_s, "Getting Result Time")
    fetch_wait = known(m.fetch_wait_s, "Fetch Wait Time")
    shuffle_write = known(m.shuffle_write_s, "Shuffle Write Time")
    delay = wall - deserialize - run - serialize - getting
    if delay < 0:  # the measured parts overlap the wall time's ends: out of run first, then the others
        excess, delay = -delay, 0
        if excess > _TICK_NS:
            notes.append(OVERLAP)
        cut = [run, deserialize, serialize, getting]
        for i, value in enumerate(cut):
            taken = min(excess, value)
            cut[i], excess = value - taken, excess - taken
        run, deserialize, serialize, getting = cut
    if fetch_wait + shuffle_write > run:
        if fetch_wait + shuffle_write - run > _TICK_NS:
            notes.append(SHUFFLE_OVER_RUN)
        fetch_wait = min(fetch_wait, run)
        shuffle_write = min(shuffle_write, run - fetch_wait)
    compute = run - fetch_wait - shuffle_write
    return TaskParts(
        wall=wall / 1e9, scheduler_delay=delay / 1e9, deserialize=deserialize / 1e9, fetch_wait=fetch_wait / 1e9,
        shuffle_write=shuffle_write / 1e9, compute=compute / 1e9, result_serialize=serialize / 1e9,
        getting_result=getting / 1e9, **_sizes(m), notes=tuple(notes),
    )


def _sizes(m) -> dict:
    """The fields of a :class:`TaskParts` beside the parts, from a task's metrics."""
    return {"gc": m.gc_s, "cpu": m.cpu_s, "input_bytes": m.input_bytes, "input_records": m.input_records,
            "remote_bytes": m.remote_bytes, "local_bytes": m.local_bytes, "remote_blocks": m.remote_blocks,
            "local_blocks": m.local_blocks, "shuffle_read_records": m.shuffle_read_records,
            "shuffle_write_bytes": m.shuffle_write_bytes, "shuffle_write_records": m.shuffle_write_records,
            "output_bytes": m.output_bytes, "output_records": m.output_records,
            "memory_spilled_bytes": m.memory_spilled_bytes, "disk_spilled_bytes": m.disk_spilled_bytes}


# --------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------

#: the sizes a profile gives as means per task (TaskParts field -> StageProfile field)
_MEANS = {name: f"mean_{name}" for name in (
    "input_bytes", "input_records", "remote_bytes", "local_bytes", "shuffle_read_records", "shuffle_write_bytes",
    "shuffle_write_records", "output_bytes", "output_records", "memory_spilled_bytes", "disk_spilled_bytes")}


@dataclass(frozen=True)
class StageProfile:
    """The successful task attempts of one stage (all its attempts), summed up.

    ``mean`` and ``cv`` (coefficient of variation: standard deviation over
    mean, 0 for a part always 0) are keyed by ``"wall"``, each of
    :data:`PARTS`, ``"gc"`` and ``"cpu"``, in seconds; ``None`` when no task
    has the value (``cpu`` before Spark 2.1). The ``mean_*`` sizes are per
    task. ``remote_fraction`` is the share of shuffle-read bytes fetched from
    another executor (Spark counts an executor on the same host as remote).
    The costs are ratios of sums over the measured tasks: ``compute_per_byte``
    is compute seconds per byte read (input plus shuffle),
    ``compute_per_record`` per record read, ``fetch_wait_per_remote_byte`` and
    ``shuffle_write_per_byte`` likewise; each is ``None`` when its denominator
    is 0 or unknown. ``notes``: one line per stand-in or unknown.
    """

    stage_id: int
    name: str
    tasks: int
    mean: Mapping[str, float | None]
    cv: Mapping[str, float | None]
    mean_input_bytes: float | None
    mean_input_records: float | None
    mean_remote_bytes: float | None
    mean_local_bytes: float | None
    mean_shuffle_read_records: float | None
    mean_shuffle_write_bytes: float | None
    mean_shuffle_write_records: float | None
    mean_output_bytes: float | None
    mean_output_records: float | None
    mean_memory_spilled_bytes: float | None
    mean_disk_spilled_bytes: float | None
    remote_fraction: float | None
    compute_per_byte: float | None
    compute_per_record: float | None
    fetch_wait_per_remote_byte: float | None
    shuffle_write_per_byte: float | None
    executors: tuple[str, ...]
    hosts: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())


def stage_profiles(app: SparkApplication) -> list[StageProfile]:
    """One :class:`StageProfile` per stage id with a successful task, by stage id.

    >>> import json, os, tempfile
    >>> from spn.logs.spark import read_spark_log
    >>> def task(index, fetch_wait_ms, remote, local):
    ...     return {"Event": "SparkListenerTaskEnd", "Stage ID": 1, "Task End Reason": {"Reason": "Success"},
    ...             "Task Info": {"Index": index, "Launch Time": 0, "Finish Time": 1000, "Executor ID": str(index),
    ...                           "Host": "h", "Getting Result Time": 0},
    ...             "Task Metrics": {"Executor Deserialize Time": 50, "Executor Run Time": 900,
    ...                              "Result Serialization Time": 0, "JVM GC Time": 10,
    ...                              "Shuffle Read Metrics": {"Fetch Wait Time": fetch_wait_ms,
    ...                                  "Remote Bytes Read": remote, "Local Bytes Read": local}}}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
    ...     _ = file.write("\\n".join(json.dumps(e) for e in [task(0, 100, 3000, 1000), task(1, 300, 3000, 1000)]))
    >>> (profile,) = stage_profiles(read_spark_log(file.name))
    >>> profile.tasks, profile.mean["fetch_wait"], profile.mean["compute"], profile.remote_fraction
    (2, 0.2, 0.7, 0.75)
    >>> profile.fetch_wait_per_remote_byte, profile.executors, profile.notes[0]
    (6.666666666666667e-05, ('0', '1'), 'this log has no Executor CPU Time: cpu unknown')
    >>> os.unlink(file.name)
    """
    names = {}
    for stage in app.stages:
        names.setdefault(stage.stage_id, stage.name)
    by_stage = successful_tasks(app)
    who = f"Spark {app.spark_version} logs have" if app.spark_version else "this log has"
    return [_profile(stage_id, names.get(stage_id, ""), tasks, who) for stage_id, tasks in sorted(by_stage.items())]


def _profile(stage_id: int, name: str, tasks: list[SparkTask], who: str) -> StageProfile:
    parts = [task_parts(task) for task in tasks]
    n = len(parts)
    notes = [f"{k} of {n} tasks: {note}" for note, k in Counter(x for p in parts for x in p.notes).items()]
    with_metrics = [t.metrics for t in tasks if t.metrics is not None]
    for key, count in Counter(key for m in with_metrics for key in m.missing).items():
        if key in _UNKNOWN:
            whose = who if count == n else f"{count} of {n} tasks have"
            notes.append(f"{whose} no {key}: {_UNKNOWN[key]}")
    mean, cv = {}, {}
    for key in ("wall", *PARTS, "gc", "cpu"):
        mean[key], cv[key] = _mean_cv([getattr(p, key) for p in parts])
    sizes = {target: _mean_cv([getattr(p, source) for p in parts])[0] for source, target in _MEANS.items()}
    measured = [p for p in parts if p.measured]
    return StageProfile(
        stage_id=stage_id, name=name, tasks=n,
        mean=types.MappingProxyType(mean), cv=types.MappingProxyType(cv), **sizes,
        remote_fraction=_ratio(measured, ("remote_bytes",), ("remote_bytes", "local_bytes")),
        compute_per_byte=_ratio(measured, ("compute",), ("input_bytes", "remote_bytes", "local_bytes")),
        compute_per_record=_ratio(measured, ("compute",), ("input_records", "shuffle_read_records")),
        fetch_wait_per_remote_byte=_ratio(measured, ("fetch_wait",), ("remote_bytes",)),
        shuffle_write_per_byte=_ratio(measured, ("shuffle_write",), ("shuffle_write_bytes",)),
        executors=_sorted_ids({t.executor_id for t in tasks}), hosts=_sorted_ids({t.host for t in tasks}),
        notes=tuple(notes),
    )


def _mean_cv(values: list) -> tuple[float | None, float | None]:
    """Mean and coefficient of variation of the known values (``None``, ``None`` when none is known)."""
    known = np.array([v for v in values if v is not None], dtype=float)
    if known.size == 0:
        return None, None
    mean = float(known.mean())
    return mean, (float(known.std() / mean) if mean > 0 else 0.0)


def _ratio(parts: list[TaskParts], numerator: tuple[str, ...], denominator: tuple[str, ...]) -> float | None:
    """Sum of ``numerator`` fields over sum of ``denominator`` fields, over the tasks that have them all."""
    top = bottom = 0
    for p in parts:
        up, down = [getattr(p, k) for k in numerator], [getattr(p, k) for k in denominator]
        if None not in up and None not in down:
            top += sum(up)
            bottom += sum(down)
    return float(top / bottom) if bottom > 0 else None


#: what a task read, by the unit :func:`task_sizes` counts it in (the denominators of the per-byte/record costs)
_SIZE_FIELDS = {"byte": ("input_bytes", "remote_bytes", "local_bytes"),
                "record": ("input_records", "shuffle_read_records")}


def task_sizes(parts: list[TaskParts]) -> tuple[np.ndarray, str | None]:
    """What each task read, and its unit: ``(sizes, "byte" | "record" | None)``.

    The size is the task's input bytes plus its shuffle-read bytes (remote and local): an input
    stage's tasks read input, a shuffle stage's read shuffle blocks (the denominators of
    ``compute_per_byte``). When no task read a byte that the log counts, records read (input and
    shuffle) stand in; when none read a record either, the unit is ``None``. A task whose log has
    none of the unit's fields is ``nan``; a field that one task lacks counts as 0 beside the others.

    >>> from spn.logs.task_profile import TaskParts
    >>> zero = dict.fromkeys(PARTS, 0.0)
    >>> sizes, unit = task_sizes([TaskParts(wall=1.0, **zero, input_bytes=300), TaskParts(wall=1.0, **zero,
    ...                           remote_bytes=100, local_bytes=50), TaskParts(wall=1.0, **zero)])
    >>> sizes.tolist(), unit
    ([300.0, 150.0, nan], 'byte')
    """
    for unit, fields in _SIZE_FIELDS.items():
        sizes = np.array([np.nan if all(getattr(p, k) is None for k in fields)
                          else float(sum(getattr(p, k) or 0 for k in fields)) for p in parts], dtype=float)
        if np.nansum(sizes) > 0:
            return sizes, unit
    return np.full(len(parts), np.nan), None


def _sorted_ids(ids: set) -> tuple[str, ...]:
    """Executor ids or hosts, numbers in numeric order first."""
    return tuple(sorted((i for i in ids if i is not None), key=lambda i: (not i.isdigit(), len(i), i)))
