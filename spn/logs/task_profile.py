"""Where a Spark task's wall time went, and what each stage's tasks cost per byte.

:func:`task_parts` splits each task attempt's wall time (``Finish Time -
Launch Time``) into parts that add up to it exactly, as the Spark UI's
timeline does (for a whole table of attempts at once: an array per part):

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

>>> from spn.logs.task_metrics import METRICS, read_task_metrics
>>> from spn.logs.task_table import TaskRows
>>> values, missing = read_task_metrics({"Getting Result Time": 0}, {
...     "Executor Deserialize Time": 100, "Executor Run Time": 1800, "Result Serialization Time": 2,
...     "JVM GC Time": 40, "Shuffle Read Metrics": {"Fetch Wait Time": 300, "Remote Bytes Read": 4000,
...     "Local Bytes Read": 2000}, "Shuffle Write Metrics": {"Shuffle Write Time": 25_000_000}})
>>> rows = TaskRows()
>>> rows.add(0, 3, 1000, 3000, metrics=values, missing=missing)
>>> parts = task_parts(rows.table())
>>> [round(float(getattr(parts, name)[0]), 3) for name in PARTS]
[0.098, 0.1, 0.3, 0.025, 1.475, 0.002, 0.0]
>>> round(float(sum(getattr(parts, name)[0] for name in PARTS)), 9), dict(parts.notes)
(2.0, {})
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np

from spn.logs.spark import SparkApplication
from spn.logs.spark_stages import successful_tasks, sum_in_order
from spn.logs.task_table import TaskTable

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


#: the fields of :class:`TaskParts` beside the parts: seconds (``gc``, ``cpu``), then sizes, as the metric of
#: :data:`~spn.logs.task_metrics.METRICS` each is
SIZES = {"gc": "gc_s", "cpu": "cpu_s", **{name: name for name in (
    "input_bytes", "input_records", "remote_bytes", "local_bytes", "remote_blocks", "local_blocks",
    "shuffle_read_records", "shuffle_write_bytes", "shuffle_write_records", "output_bytes", "output_records",
    "memory_spilled_bytes", "disk_spilled_bytes")}}


@dataclass(frozen=True, eq=False)
class TaskParts:
    """Task attempts' wall times (s) in parts that add up to each (:data:`PARTS`), and what each moved: an
    array per field, a value per attempt.

    ``gc`` (inside the run) and ``cpu`` (the executor's CPU time, deserialization
    excluded) are seconds, not parts of the sum; sizes are bytes, records and
    blocks. Each is ``nan`` where the log does not say. ``measured`` says which
    runs were measured (not the all-compute fallback); ``notes`` counts the
    attempts by what stood in for a part not measured (:data:`NO_METRICS`, ...),
    in the order the attempts first needed it. A part or size not given is 0 or
    ``nan`` (for tests and examples).
    """

    wall: np.ndarray
    scheduler_delay: np.ndarray = None
    deserialize: np.ndarray = None
    fetch_wait: np.ndarray = None
    shuffle_write: np.ndarray = None
    compute: np.ndarray = None
    result_serialize: np.ndarray = None
    getting_result: np.ndarray = None
    gc: np.ndarray = None
    cpu: np.ndarray = None
    input_bytes: np.ndarray = None
    input_records: np.ndarray = None
    remote_bytes: np.ndarray = None
    local_bytes: np.ndarray = None
    remote_blocks: np.ndarray = None
    local_blocks: np.ndarray = None
    shuffle_read_records: np.ndarray = None
    shuffle_write_bytes: np.ndarray = None
    shuffle_write_records: np.ndarray = None
    output_bytes: np.ndarray = None
    output_records: np.ndarray = None
    memory_spilled_bytes: np.ndarray = None
    disk_spilled_bytes: np.ndarray = None
    measured: np.ndarray = None
    notes: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        wall = np.asarray(self.wall, dtype=np.float64)
        object.__setattr__(self, "wall", wall)
        for f in fields(self)[1:-2]:
            value = getattr(self, f.name)
            default = 0.0 if f.name in PARTS else np.nan
            object.__setattr__(self, f.name, np.full(wall.shape, default) if value is None
                               else np.asarray(value, dtype=np.float64))
        object.__setattr__(self, "measured", np.ones(wall.shape, dtype=bool) if self.measured is None
                           else np.asarray(self.measured, dtype=bool))

    def __len__(self) -> int:
        return len(self.wall)


def task_parts(tasks: TaskTable) -> TaskParts:
    """The parts of each attempt's wall time in ``tasks`` (see the module's docstring); they sum to its duration.

    Times are split in whole nanoseconds, so the parts add up to the wall time
    to within rounding (far below 1e-9 s); no part is negative. (The nanoseconds
    are float64, whole numbers and exact up to 104 days a task.)
    """
    wall = (tasks.finish_ms - tasks.launch_ms) * float(_TICK_NS)
    sizes = {name: tasks.metric(metric) for name, metric in SIZES.items()}
    run = _ns(tasks.metric("run_s"))
    measured = ~np.isnan(run)
    notes = {NO_METRICS: ~tasks.has_metrics, NO_RUN_TIME: tasks.has_metrics & ~measured}
    # a part the log lacks is taken as 0, with a note (on measured runs only: the others are all compute)
    known = {}
    for part, (metric, name) in _PART_METRICS.items():
        value = _ns(tasks.metric(metric))
        notes[f"no {name}: taken as 0 ({_TAKEN_AS_0[name]})"] = measured & np.isnan(value)
        known[part] = np.where(np.isnan(value), 0.0, value)
    deserialize, serialize, getting = known["deserialize"], known["result_serialize"], known["getting_result"]
    fetch_wait, shuffle_write = known["fetch_wait"], known["shuffle_write"]
    run = np.where(measured, run, 0.0)
    delay = wall - deserialize - run - serialize - getting
    # the measured parts overlap the wall time's ends: the excess comes out of run first, then the others
    excess = np.maximum(-delay, 0.0)
    notes[OVERLAP] = measured & (excess > _TICK_NS)
    delay = np.maximum(delay, 0.0)
    cut = []
    for value in (run, deserialize, serialize, getting):
        taken = np.minimum(excess, value)
        cut.append(value - taken)
        excess = excess - taken
    run, deserialize, serialize, getting = cut
    over = fetch_wait + shuffle_write - run
    notes[SHUFFLE_OVER_RUN] = measured & (over > _TICK_NS)
    fetch_wait = np.where(over > 0, np.minimum(fetch_wait, run), fetch_wait)
    shuffle_write = np.where(over > 0, np.minimum(shuffle_write, run - fetch_wait), shuffle_write)
    compute = run - fetch_wait - shuffle_write
    parts = {"scheduler_delay": delay, "deserialize": deserialize, "fetch_wait": fetch_wait,
             "shuffle_write": shuffle_write, "compute": compute, "result_serialize": serialize,
             "getting_result": getting}
    # a run not measured: the whole wall time is compute
    parts = {name: np.where(measured, value, wall if name == "compute" else 0.0) / 1e9 for name, value in parts.items()}
    return TaskParts(wall=wall / 1e9, **parts, **sizes, measured=measured, notes=_first_seen(notes))


#: a part of the wall time the executor measures -> (its metric, Spark's name of the field)
_PART_METRICS = {"deserialize": ("deserialize_s", "Executor Deserialize Time"),
                 "result_serialize": ("result_serialize_s", "Result Serialization Time"),
                 "getting_result": ("getting_result_s", "Getting Result Time"),
                 "fetch_wait": ("fetch_wait_s", "Fetch Wait Time"),
                 "shuffle_write": ("shuffle_write_s", "Shuffle Write Time")}


def _ns(seconds: np.ndarray) -> np.ndarray:
    """Seconds as whole nanoseconds (float64; ``nan`` stays)."""
    return np.round(seconds * 1e9)


def _first_seen(masks: dict[str, np.ndarray]) -> dict[str, int]:
    """``note -> attempts`` for the notes some attempt has, in the order a pass over the attempts meets them
    (an attempt's own notes in the order of ``masks``)."""
    seen = [(int(np.argmax(mask)), k, note, int(mask.sum())) for k, (note, mask) in enumerate(masks.items())
            if mask.any()]
    return {note: count for _, _, note, count in sorted(seen)}


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


def _profile(stage_id: int, name: str, tasks: TaskTable, who: str) -> StageProfile:
    parts = task_parts(tasks)
    n = len(parts)
    notes = [f"{k} of {n} tasks: {note}" for note, k in parts.notes.items()]
    for key, count in _missing_counts(tasks).items():
        if key in _UNKNOWN:
            whose = who if count == n else f"{count} of {n} tasks have"
            notes.append(f"{whose} no {key}: {_UNKNOWN[key]}")
    mean, cv = {}, {}
    for key in ("wall", *PARTS, "gc", "cpu"):
        mean[key], cv[key] = _mean_cv(getattr(parts, key))
    sizes = {target: _mean_cv(getattr(parts, source))[0] for source, target in _MEANS.items()}
    measured = parts.measured
    return StageProfile(
        stage_id=stage_id, name=name, tasks=n,
        mean=types.MappingProxyType(mean), cv=types.MappingProxyType(cv), **sizes,
        remote_fraction=_ratio(parts, measured, "remote_bytes", ("remote_bytes", "local_bytes")),
        compute_per_byte=_ratio(parts, measured, "compute", ("input_bytes", "remote_bytes", "local_bytes")),
        compute_per_record=_ratio(parts, measured, "compute", ("input_records", "shuffle_read_records")),
        fetch_wait_per_remote_byte=_ratio(parts, measured, "fetch_wait", ("remote_bytes",)),
        shuffle_write_per_byte=_ratio(parts, measured, "shuffle_write", ("shuffle_write_bytes",)),
        executors=_sorted_ids(tasks.executor, tasks.executor_ids), hosts=_sorted_ids(tasks.host, tasks.hosts),
        notes=tuple(notes),
    )


def _missing_counts(tasks: TaskTable) -> Counter:
    """``field -> attempts`` whose ``Task Metrics`` lack it, in the order a pass over the attempts meets them."""
    codes, first, counts = np.unique(tasks.missing, return_index=True, return_counts=True)
    missing = Counter()
    for k in np.argsort(first, kind="stable"):
        if codes[k] >= 0:
            for key in tasks.missing_names[codes[k]]:
                missing[key] += int(counts[k])
    return missing


def _mean_cv(values: np.ndarray) -> tuple[float | None, float | None]:
    """Mean and coefficient of variation of the known values (``None``, ``None`` when none is known)."""
    known = values[~np.isnan(values)]
    if known.size == 0:
        return None, None
    mean = float(known.mean())
    return mean, (float(known.std() / mean) if mean > 0 else 0.0)


def _ratio(parts: TaskParts, use: np.ndarray, numerator: str, denominator: tuple[str, ...]) -> float | None:
    """Sum of ``numerator`` over sum of the ``denominator`` fields, over the tasks ``use`` selects that have them all.

    The sums run task after task (NumPy's pairwise ``sum`` would round the seconds differently); sizes are whole
    numbers, added exactly while a stage's total stays under 2**53.
    """
    top = getattr(parts, numerator)
    down = [getattr(parts, k) for k in denominator]
    use = use & ~np.isnan(top) & ~np.any(np.isnan(down), axis=0)
    bottom = sum_in_order(sum(down)[use])
    return float(sum_in_order(top[use]) / bottom) if bottom > 0 else None


#: what a task read, by the unit :func:`task_sizes` counts it in (the denominators of the per-byte/record costs)
_SIZE_FIELDS = {"byte": ("input_bytes", "remote_bytes", "local_bytes"),
                "record": ("input_records", "shuffle_read_records")}


def task_sizes(parts: TaskParts) -> tuple[np.ndarray, str | None]:
    """What each task read, and its unit: ``(sizes, "byte" | "record" | None)``.

    The size is the task's input bytes plus its shuffle-read bytes (remote and local): an input
    stage's tasks read input, a shuffle stage's read shuffle blocks (the denominators of
    ``compute_per_byte``). When no task read a byte that the log counts, records read (input and
    shuffle) stand in; when none read a record either, the unit is ``None``. A task whose log has
    none of the unit's fields is ``nan``; a field that one task lacks counts as 0 beside the others.

    >>> parts = TaskParts(wall=[1.0, 1.0, 1.0], input_bytes=[300, None, None], remote_bytes=[None, 100, None],
    ...                   local_bytes=[None, 50, None])
    >>> sizes, unit = task_sizes(parts)
    >>> sizes.tolist(), unit
    ([300.0, 150.0, nan], 'byte')
    """
    for unit, names in _SIZE_FIELDS.items():
        columns = [getattr(parts, k) for k in names]
        sizes = sum(np.nan_to_num(c, nan=0.0) for c in columns)
        sizes = np.where(np.all(np.isnan(columns), axis=0), np.nan, sizes)
        if np.nansum(sizes) > 0:
            return sizes, unit
    return np.full(len(parts), np.nan), None


def _sorted_ids(codes: np.ndarray, names: tuple[str, ...]) -> tuple[str, ...]:
    """The executor ids or hosts ``codes`` name, numbers in numeric order first."""
    ids = {names[k] for k in np.unique(codes).tolist() if k >= 0}
    return tuple(sorted(ids, key=lambda i: (not i.isdigit(), len(i), i)))
