"""Read a Hadoop MapReduce job history file (``.jhist``) into plain, frozen data.

The MapReduce application master writes one ``.jhist`` per job. In its JSON
form (``mapreduce.jobhistory.jhist.format=json``, the default before Hadoop 3)
line 1 is ``Avro-Json``, line 2 the Avro schema, then one event per line
(blank lines between events are allowed)::

    {"type": "MAP_ATTEMPT_FINISHED",
     "event": {"org.apache.hadoop.mapreduce.jobhistory.MapAttemptFinished": {...}}}

Avro unions are wrapped (``"locality": {"string": "OFF_SWITCH"}``); the reader
unwraps them. A binary history (line 1 ``Avro-Binary``) is refused with a
:class:`~spn.exceptions.LogFormatError` saying it needs converting. A
truncated last line (job still running) is dropped with a warning.

Kept: the job (id, name, user, queue, submit/launch/finish times, status,
map and reduce counts) and every map and reduce *attempt* (start, finish,
status, host, speculative or not, and ``bytes_read``: the bytes its file
systems other than the local one read, e.g. ``HDFS_BYTES_READ``, from the
attempt's counters). Setup and cleanup attempts are left out.
Times are epoch **milliseconds** (``_ms``); durations are **seconds**:
attempt duration = ``finishTime`` (``*_ATTEMPT_FINISHED/FAILED/KILLED``) -
``startTime`` (``*_ATTEMPT_STARTED``).

>>> job = read_jhist("job_1416424547277_0002-...-TeraGen-...jhist")  # doctest: +SKIP
>>> job.total_maps, attempt_durations(job, "MAP")                      # doctest: +SKIP
(2, (2.981, 2.975))
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from spn.exceptions import LogFormatError
from spn.logs.fields import FieldError, byte_count, count, event_at, mapping, shown, text, time_ms
from spn.logs.lines import json_line, log_lines

__all__ = ["TaskAttempt", "MapReduceJob", "read_jhist", "attempt_durations"]


# --------------------------------------------------------------------------
# The job, as data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskAttempt:
    """One map or reduce attempt.

    ``status`` is ``"SUCCEEDED"``, ``"FAILED"``, ``"KILLED"`` or ``None``
    (never finished in the file). ``speculative`` comes from ``avataar``
    (``SPECULATIVE``; the field exists from Hadoop 2.6). Maps have
    ``map_finish_ms``; reduces ``shuffle_finish_ms`` and ``sort_finish_ms``.

    >>> TaskAttempt("attempt_1_0001_m_000000_0", "task_1_0001_m_000000", "MAP", 1000, 4600,
    ...             "SUCCEEDED", "host", False).duration
    3.6
    """

    attempt_id: str
    task_id: str
    task_type: str
    start_ms: int | None
    finish_ms: int | None
    status: str | None
    host: str | None
    speculative: bool
    map_finish_ms: int | None = None
    shuffle_finish_ms: int | None = None
    sort_finish_ms: int | None = None
    error: str | None = None
    bytes_read: int = 0

    @property
    def duration(self) -> float | None:
        """Seconds from start to finish; ``None`` when either is missing."""
        if self.start_ms is None or self.finish_ms is None:
            return None
        return (self.finish_ms - self.start_ms) / 1000.0


@dataclass(frozen=True)
class MapReduceJob:
    """Everything read from one ``.jhist``.

    ``status`` is ``SUCCEEDED`` (``JOB_FINISHED``), ``FAILED``/``KILLED``
    (``JOB_FAILED``/``JOB_KILLED``), or the last status seen for an
    unfinished job. ``attempts`` are in order of first appearance. ``digest`` is
    the SHA-256 of the file's decompressed bytes: two files with the same one are one log.
    """

    path: str
    job_id: str | None
    name: str | None
    user: str | None
    queue: str | None
    submit_ms: int | None
    launch_ms: int | None
    finish_ms: int | None
    status: str | None
    total_maps: int | None
    total_reduces: int | None
    finished_maps: int | None
    finished_reduces: int | None
    failed_maps: int | None
    failed_reduces: int | None
    uberized: bool | None
    attempts: tuple[TaskAttempt, ...]
    digest: str | None = field(default=None, compare=False, repr=False)

    @property
    def map_attempts(self) -> tuple[TaskAttempt, ...]:
        return tuple(a for a in self.attempts if a.task_type == "MAP")

    @property
    def reduce_attempts(self) -> tuple[TaskAttempt, ...]:
        return tuple(a for a in self.attempts if a.task_type == "REDUCE")

    @property
    def duration(self) -> float | None:
        """Seconds from submission to finish (queueing for the AM included)."""
        if self.submit_ms is None or self.finish_ms is None:
            return None
        return (self.finish_ms - self.submit_ms) / 1000.0


def attempt_durations(job: MapReduceJob, task_type: str, *, status: str = "SUCCEEDED") -> tuple[float, ...]:
    """Durations (seconds) of the ``task_type`` (``"MAP"``/``"REDUCE"``) attempts with ``status``.

    Only successful attempts by default: the time of failed and killed ones
    (a killed speculative copy is not a task) is not a task time.

    >>> attempt_durations(job, "REDUCE")  # doctest: +SKIP
    (3.605,)
    """
    return tuple(
        a.duration
        for a in job.attempts
        if a.task_type == task_type and a.status == status and a.duration is not None
    )


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------

_AVRO_TYPES = {"string", "int", "long", "boolean", "float", "double", "bytes", "null", "array", "map"}
_ATTEMPT_STARTED = {"MAP_ATTEMPT_STARTED", "REDUCE_ATTEMPT_STARTED"}
_ATTEMPT_ENDED = {
    "MAP_ATTEMPT_FINISHED", "MAP_ATTEMPT_FAILED", "MAP_ATTEMPT_KILLED",
    "REDUCE_ATTEMPT_FINISHED", "REDUCE_ATTEMPT_FAILED", "REDUCE_ATTEMPT_KILLED",
}


def read_jhist(path) -> MapReduceJob:
    """Read a JSON (``Avro-Json``) MapReduce job history file, plain or ``.gz``.

    Raises :class:`~spn.exceptions.LogFormatError` naming the file and line
    when the file is binary, empty or not a job history, or holds a field that
    cannot be what it says (a time that is not a whole number of ms, an attempt
    or a job that finishes before it starts, ...).

    >>> read_jhist("job_1329348432655_0001-...-Sleep+job-...jhist").total_maps  # doctest: +SKIP
    10
    """
    path = Path(path)
    job = {
        "job_id": None, "name": None, "user": None, "queue": None, "submit_ms": None,
        "launch_ms": None, "finish_ms": None, "status": None, "total_maps": None,
        "total_reduces": None, "finished_maps": None, "finished_reduces": None,
        "failed_maps": None, "failed_reduces": None, "uberized": None,
    }
    attempts = {}  # attempt id -> dict
    bad_line = None  # (line, why): a line that failed; fine only if it is the last one
    schema_seen = False
    digest = hashlib.sha256()
    lineno = 0
    header_seen = False
    for lineno, raw in log_lines(path, what="MapReduce job history", digest=digest):
        if not header_seen:
            _check_header(path, raw if lineno == 1 else b"")
            header_seen = True
            continue
        if bad_line is not None:
            raise LogFormatError(f"{path}: line {bad_line[0]}: {bad_line[1]}")
        try:
            record = json_line(raw, f"{path}: line {lineno}")
        except ValueError as error:
            bad_line = (lineno, f"{error}: not a MapReduce job history")
            continue
        if not schema_seen:
            _check_schema(path, lineno, record)
            schema_seen = True
            continue
        kind, body = _event(path, lineno, record)
        with event_at(f"{path}: line {lineno}", kind):
            _take(kind, body, job, attempts)
    if lineno == 0:
        raise LogFormatError(f"{path}: line 1: empty file: not a MapReduce job history")
    if bad_line is not None:
        if not schema_seen:
            raise LogFormatError(f"{path}: line {bad_line[0]}: {bad_line[1]}")
        warnings.warn(
            f"{path}: line {bad_line[0]}: last line is incomplete (job still running?); "
            "ignored it and kept the events before it",
            stacklevel=2,
        )
    elif not schema_seen:
        raise LogFormatError(f"{path}: line 2: no Avro schema line: not a MapReduce job history")
    return MapReduceJob(
        path=str(path),
        **job,
        attempts=tuple(TaskAttempt(**attempt) for attempt in attempts.values()),
        digest=digest.hexdigest(),
    )


def _check_header(path: Path, raw: bytes) -> None:
    """Line 1 (``raw``; empty when it is blank) must say ``Avro-Json``."""
    header = raw.strip()
    if header == b"Avro-Json":
        return
    if header.startswith(b"Avro-Binary"):
        raise LogFormatError(
            f"{path}: line 1: binary job history (Avro-Binary) is not supported: it needs converting to "
            "Avro-Json first (e.g. read it with Hadoop's JobHistoryParser), or have jobs write JSON "
            "with mapreduce.jobhistory.jhist.format=json"
        )
    shown = header[:40].decode("utf-8", errors="replace")
    raise LogFormatError(
        f"{path}: line 1: expected the header 'Avro-Json', found {shown!r}: not a MapReduce job history"
    )


def _check_schema(path: Path, lineno: int, schema) -> None:
    if not (isinstance(schema, dict) and schema.get("name") == "Event"):
        raise LogFormatError(
            f"{path}: line {lineno}: expected the Avro schema of 'Event': not a MapReduce job history"
        )


def _event(path: Path, lineno: int, record) -> tuple[str, dict]:
    """``(type, body)`` of one event line: ``{"type": T, "event": {"<record class>": body}}``."""
    if (
        isinstance(record, dict)
        and isinstance(record.get("type"), str)
        and isinstance(record.get("event"), dict)
        and len(record["event"]) == 1
    ):
        (body,) = record["event"].values()
        if isinstance(body, dict):
            return record["type"], body
    raise LogFormatError(f"{path}: line {lineno}: expected {{'type': ..., 'event': {{record: ...}}}}")


def _plain(value):
    """An Avro union value without its wrapper: ``{"string": "x"}`` -> ``"x"``."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, inner), = value.items()
        if kind in _AVRO_TYPES:
            return inner
    return value


def _take(kind: str, body: dict, job: dict, attempts: dict) -> None:
    """Fold one event into ``job`` and ``attempts``; unknown events are ignored.

    Every field used is checked as it is read (:mod:`spn.logs.fields`), and so
    is the order of the ends of a job and of an attempt: one that finishes
    before it starts is refused, not turned into a 0 s sample.
    """
    plain = {key: _plain(value) for key, value in body.items()}
    if kind == "JOB_SUBMITTED":
        if job["job_id"] is not None or job["submit_ms"] is not None:
            raise FieldError(f"a second job ({text(plain, 'jobid') or 'no id'} after {job['job_id'] or 'no id'}): "
                             "a .jhist holds the history of one job")
        job.update(job_id=text(plain, "jobid"), name=text(plain, "jobName"), user=text(plain, "userName"),
                   submit_ms=_job_time(plain, "submitTime"), queue=text(plain, "jobQueueName"))
    elif kind == "JOB_QUEUE_CHANGED":
        job["queue"] = text(plain, "jobQueueName")
    elif kind == "JOB_INITED":
        uberized = plain.get("uberized")
        job.update(launch_ms=_job_time(plain, "launchTime"), total_maps=count(plain, "totalMaps"),
                   total_reduces=count(plain, "totalReduces"), status=text(plain, "jobStatus"),
                   uberized=None if uberized is None else bool(uberized))
    elif kind == "JOB_INFO_CHANGED":
        job.update(submit_ms=_job_time(plain, "submitTime"), launch_ms=_job_time(plain, "launchTime"))
    elif kind == "JOB_STATUS_CHANGED":
        job["status"] = text(plain, "jobStatus")
    elif kind == "JOB_FINISHED":
        job.update(finish_ms=time_ms(plain, "finishTime", required=True), status="SUCCEEDED",
                   finished_maps=count(plain, "finishedMaps"), finished_reduces=count(plain, "finishedReduces"),
                   failed_maps=count(plain, "failedMaps"), failed_reduces=count(plain, "failedReduces"))
    elif kind in ("JOB_FAILED", "JOB_KILLED", "JOB_ERROR"):
        job.update(finish_ms=_job_time(plain, "finishTime"), status=text(plain, "jobStatus") or kind[4:],
                   finished_maps=count(plain, "finishedMaps"), finished_reduces=count(plain, "finishedReduces"))
    elif kind in _ATTEMPT_STARTED:
        attempt = _attempt(attempts, plain, kind.split("_")[0])
        attempt.update(start_ms=time_ms(plain, "startTime"), speculative=plain.get("avataar") == "SPECULATIVE")
        attempt["host"] = attempt["host"] or text(plain, "trackerName")
        _in_order(attempt, "startTime", "finishTime")
    elif kind in _ATTEMPT_ENDED:
        attempt = _attempt(attempts, plain, kind.split("_")[0])
        attempt.update(finish_ms=time_ms(plain, "finishTime"), host=text(plain, "hostname") or attempt["host"])
        if kind.endswith("FINISHED"):
            attempt.update(status=text(plain, "taskStatus") or "SUCCEEDED", map_finish_ms=time_ms(plain, "mapFinishTime"),
                           shuffle_finish_ms=time_ms(plain, "shuffleFinishTime"),
                           sort_finish_ms=time_ms(plain, "sortFinishTime"), bytes_read=_bytes_read(plain.get("counters")))
        else:
            attempt.update(status=text(plain, "status") or kind.rsplit("_", 1)[1], error=text(plain, "error") or None)
        _in_order(attempt, "startTime", "finishTime")
    if kind in ("JOB_FINISHED", "JOB_FAILED", "JOB_KILLED", "JOB_ERROR", "JOB_SUBMITTED", "JOB_INFO_CHANGED"):
        if None not in (job["submit_ms"], job["finish_ms"]) and job["finish_ms"] < job["submit_ms"]:
            raise FieldError(f"the job: finishTime {job['finish_ms']} is before submitTime {job['submit_ms']}: the "
                             "job history is corrupt (its clock ran backwards), and no time in it can be trusted")
    # TASK_*, AM_STARTED, setup/cleanup attempts, ...: not needed


def _job_time(plain: dict, key: str) -> int | None:
    """A job's time; Hadoop writes -1 or 0 for one it does not know (a job killed before it launched)."""
    return None if plain.get(key) in (-1, 0) else time_ms(plain, key)


def _in_order(attempt: dict, start: str, finish: str) -> None:
    """Refuse an attempt that finishes before it starts (both stamped by the application master)."""
    if None not in (attempt["start_ms"], attempt["finish_ms"]) and attempt["finish_ms"] < attempt["start_ms"]:
        raise FieldError(f"attempt {attempt['attempt_id']}: {finish} {attempt['finish_ms']} is before {start} "
                         f"{attempt['start_ms']}: the job history is corrupt (its clock ran backwards), and no time "
                         "in it can be trusted")


def _bytes_read(counters) -> int:
    """Bytes read from non-local file systems (``HDFS_BYTES_READ``, ``S3A_BYTES_READ``, ...); 0 if unknown."""
    total = 0
    groups = counters.get("groups") if isinstance(counters, dict) else None
    if groups is not None and not isinstance(groups, list):
        raise FieldError(f"'counters.groups' is {shown(groups)}: expected a list")
    for group in groups or ():
        if not (isinstance(group, dict) and str(text(group, "name") or "").endswith("FileSystemCounter")):
            continue
        counts = group.get("counts") or ()
        if not isinstance(counts, list):
            raise FieldError(f"'counters.groups.counts' is {shown(counts)}: expected a list")
        for item in counts:
            name = text(mapping(item, "counters.groups.counts"), "name") or ""
            if name.endswith("_BYTES_READ") and name != "FILE_BYTES_READ":
                total += byte_count(item, "value")
    return total


def _attempt(attempts: dict, plain: dict, task_type: str) -> dict:
    attempt_id = text(plain, "attemptId")
    if attempt_id is None:
        raise FieldError("'attemptId' is missing: an attempt event names its attempt")
    return attempts.setdefault(
        attempt_id,
        {"attempt_id": attempt_id, "task_id": text(plain, "taskid"), "task_type": task_type, "start_ms": None,
         "finish_ms": None, "status": None, "host": None, "speculative": False},
    )
