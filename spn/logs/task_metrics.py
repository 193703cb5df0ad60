"""What a ``SparkListenerTaskEnd`` says a task attempt spent and moved, checked as it is read.

Spark writes a task's metrics in the event's ``Task Metrics`` object
(times in ms, except the CPU times and ``Shuffle Write Time``, in ns) and the
moment the driver began fetching its result in ``Task Info``. This module
reads them as whole numbers in the units :data:`METRICS` gives (the log's own,
so that a task table keeps them in a few bytes each); a
:class:`~spn.logs.task_table.TaskTable` gives them in seconds, bytes and records.

Which fields a log has depends on the Spark version that wrote it:

- ``Executor Deserialize CPU Time`` and ``Executor CPU Time``: Spark 2.1 and later;
- ``Records Read``, ``Records Written``, ``Local Bytes Read``, ``Total Records Read`` and
  ``Shuffle Records Written``: Spark 1.3 and later (a Spark 1.2 log has bytes, not records);
- ``Remote Bytes Read To Disk``: Spark 2.3 and later; ``Peak Execution Memory``: Spark 3.0 and later;
- Spark 1.x writes the groups ``Input Metrics``, ``Output Metrics``, ``Shuffle Read Metrics`` and
  ``Shuffle Write Metrics`` only when the task read or wrote that way: an absent group is 0
  (what Spark itself shows), not unknown. Spark 2.0 and later always write the four.

A field missing from ``Task Metrics`` or from a group that is there is
unknown, not 0: its value is ``-1`` and its name, as Spark spells it, is in
``missing``. A field that holds anything but a whole number in range (``-1``,
``"abc"``, ``1e400``, ``2 ** 64``) is a :class:`~spn.logs.fields.FieldError`
naming it; the log reader adds the file and the line.

>>> info = {"Launch Time": 1000, "Finish Time": 3000, "Getting Result Time": 0}
>>> metrics = {"Executor Deserialize Time": 100, "Executor Run Time": 1800, "Result Serialization Time": 2,
...            "JVM GC Time": 40, "Result Size": 1500, "Memory Bytes Spilled": 0, "Disk Bytes Spilled": 0,
...            "Shuffle Read Metrics": {"Remote Blocks Fetched": 4, "Local Blocks Fetched": 2,
...                                     "Fetch Wait Time": 300, "Remote Bytes Read": 4000,
...                                     "Local Bytes Read": 2000, "Total Records Read": 60},
...            "Shuffle Write Metrics": {"Shuffle Bytes Written": 500, "Shuffle Write Time": 25_000_000,
...                                      "Shuffle Records Written": 5}}
>>> values, missing = read_task_metrics(info, metrics)
>>> m = dict(zip(METRICS, values))
>>> m["run_s"], m["fetch_wait_s"], m["shuffle_write_s"], m["remote_bytes"], m["input_bytes"], m["cpu_s"]
(1800, 300, 25000000, 4000, 0, -1)
>>> missing
('Executor Deserialize CPU Time', 'Executor CPU Time', 'Peak Execution Memory', 'Remote Bytes Read To Disk')
>>> read_task_metrics(info, {"Executor Run Time": -5})
Traceback (most recent call last):
...
spn.logs.fields.FieldError: 'Executor Run Time' is -5: expected a duration in ms (an integer >= 0)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from spn.logs.fields import MAX_ID, MAX_TIME_MS, FieldError, integer, mapping, time_ms

__all__ = ["INPUT", "OUTPUT", "SHUFFLE_READ", "SHUFFLE_WRITE", "METRICS", "read_task_metrics"]

#: the groups of ``Task Metrics``, as Spark names them
INPUT, OUTPUT = "Input Metrics", "Output Metrics"
SHUFFLE_READ, SHUFFLE_WRITE = "Shuffle Read Metrics", "Shuffle Write Metrics"

_MS = "a duration in ms (an integer >= 0)"
_NS = "a duration in ns (an integer >= 0)"
_BYTES = "a number of bytes (an integer >= 0)"
_COUNT = "a count (an integer >= 0)"
#: unit -> (the largest value, the divisor to seconds: None for bytes and counts)
_UNITS = {_MS: (MAX_TIME_MS, 1e3), _NS: (MAX_ID, 1e9), _BYTES: (MAX_ID, None), _COUNT: (MAX_ID, None)}

# (attribute, group or None for Task Metrics itself, Spark's field name, unit)
_FIELDS = (
    ("deserialize_s", None, "Executor Deserialize Time", _MS),
    ("deserialize_cpu_s", None, "Executor Deserialize CPU Time", _NS),
    ("run_s", None, "Executor Run Time", _MS),
    ("cpu_s", None, "Executor CPU Time", _NS),
    ("gc_s", None, "JVM GC Time", _MS),
    ("result_serialize_s", None, "Result Serialization Time", _MS),
    ("result_bytes", None, "Result Size", _BYTES),
    ("memory_spilled_bytes", None, "Memory Bytes Spilled", _BYTES),
    ("disk_spilled_bytes", None, "Disk Bytes Spilled", _BYTES),
    ("peak_execution_memory_bytes", None, "Peak Execution Memory", _BYTES),
    ("input_bytes", INPUT, "Bytes Read", _BYTES),
    ("input_records", INPUT, "Records Read", _COUNT),
    ("output_bytes", OUTPUT, "Bytes Written", _BYTES),
    ("output_records", OUTPUT, "Records Written", _COUNT),
    ("remote_blocks", SHUFFLE_READ, "Remote Blocks Fetched", _COUNT),
    ("local_blocks", SHUFFLE_READ, "Local Blocks Fetched", _COUNT),
    ("fetch_wait_s", SHUFFLE_READ, "Fetch Wait Time", _MS),
    ("remote_bytes", SHUFFLE_READ, "Remote Bytes Read", _BYTES),
    ("remote_bytes_to_disk", SHUFFLE_READ, "Remote Bytes Read To Disk", _BYTES),
    ("local_bytes", SHUFFLE_READ, "Local Bytes Read", _BYTES),
    ("shuffle_read_records", SHUFFLE_READ, "Total Records Read", _COUNT),
    ("shuffle_write_bytes", SHUFFLE_WRITE, "Shuffle Bytes Written", _BYTES),
    ("shuffle_write_s", SHUFFLE_WRITE, "Shuffle Write Time", _NS),
    ("shuffle_write_records", SHUFFLE_WRITE, "Shuffle Records Written", _COUNT),
)

#: every metric read, by its name, -> what divides its logged value into seconds (None: bytes or a count).
#: A name ending in ``_s`` is a time, logged in ms (divisor 1e3) or ns (1e9). The run time includes the
#: shuffle fetch wait (``fetch_wait_s``), the shuffle write (``shuffle_write_s``) and the GC time
#: (``gc_s``); the CPU times (``cpu_s``, ``deserialize_cpu_s``) are the executor thread's CPU time during the
#: run and the deserialization; ``getting_result_s`` is the time the driver spent fetching a result too
#: large to come with the status update (``Finish Time - Getting Result Time``; 0 when it came inline);
#: ``remote_bytes_to_disk`` is the part of ``remote_bytes`` fetched to disk.
METRICS = {**{attribute: _UNITS[unit][1] for attribute, _, _, unit in _FIELDS}, "getting_result_s": 1e3}
#: what reading a field needs: (group, Spark's name, unit, the largest value)
_READ = tuple((group, key, unit, _UNITS[unit][0]) for _, group, key, unit in _FIELDS)


def read_task_metrics(info: Mapping, metrics: Mapping) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """A ``SparkListenerTaskEnd``'s ``Task Info`` and ``Task Metrics``: ``(values, missing)``.

    ``values`` are the metrics in the order of :data:`METRICS`, as logged (``-1``: unknown);
    ``missing`` the Spark names of the fields the log lacks. ``None`` when the event has no (or an
    empty) ``Task Metrics``: a failed attempt often has none. Raises
    :class:`~spn.logs.fields.FieldError` for a field that cannot be what it says, and for a
    ``Getting Result Time`` outside the task's launch and finish (the driver stamps all three on one
    clock: only a corrupt log has that).
    """
    if metrics is None or (isinstance(metrics, Mapping) and not metrics):
        return None
    metrics = mapping(metrics, "Task Metrics")
    groups = {None: metrics}
    for group in (INPUT, OUTPUT, SHUFFLE_READ, SHUFFLE_WRITE):
        value = metrics.get(group)
        groups[group] = None if value is None else mapping(value, group)
    values, missing = [], []
    for group, key, unit, high in _READ:     # once per task of a log: kept to plain steps
        source = groups[group]
        if source is None:  # a group Spark 1.x leaves out when the task did not read or write that way
            values.append(0)
            continue
        value = source.get(key)
        if value is None:
            values.append(-1)
            missing.append(key)
        elif type(value) is int and 0 <= value <= high:  # the common case, checked as integer() does, faster
            values.append(value)
        else:
            values.append(integer(value, key, low=0, high=high, what=unit))
    values.append(_getting_result(info, missing))
    return tuple(values), _shared(tuple(missing))


def _getting_result(info: Mapping, missing: list) -> int:
    """Ms the driver spent fetching the result: ``Finish Time - Getting Result Time`` (0: not fetched; -1: unknown)."""
    info = mapping(info, "Task Info")
    if info.get("Getting Result Time") is None:
        missing.append("Getting Result Time")
        return -1
    getting = time_ms(info, "Getting Result Time")
    if getting == 0:
        return 0
    launch, finish = time_ms(info, "Launch Time", required=True), time_ms(info, "Finish Time", required=True)
    if not launch <= getting <= finish:
        raise FieldError(f"'Getting Result Time' {getting} is not between Launch Time {launch} and Finish Time "
                         f"{finish}: the log is corrupt (its clock ran backwards), and no time in it can be trusted")
    return finish - getting


@functools.lru_cache(maxsize=512)
def _shared(names: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple for every task that misses the same fields (a log's tasks mostly do)."""
    return names
