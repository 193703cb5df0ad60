r"""Read a Spark event log into plain, frozen data.

This module reads a log written by Spark 1.x to 4.x (a file, a compressed
file or a rolling directory: see :mod:`spn.logs.spark_files`) and keeps what
a performance model needs: the application, its jobs, stages (with their
parents), task attempts and executors. It tolerates unknown events, missing
optional fields and a missing ``SparkListenerLogStart`` (Spark 1.2); an event
that lacks a field it needs is a :class:`~spn.exceptions.LogFormatError`
naming the file and line. The task attempts, a log's bulk, are kept as columns
(:class:`~spn.logs.task_table.TaskTable`, about 100 bytes a task), filled as the
events stream past: the log itself is never held.

Times are kept as Spark wrote them: epoch **milliseconds** (fields ending in
``_ms``); durations are **seconds**. A task attempt's duration is wall time,
``Finish Time - Launch Time``: the time it holds its executor core. What a
model needs from the stages (task times, DAG, concurrency, cores) is in
:mod:`spn.logs.spark_stages`.

>>> import json, os, tempfile
>>> events = [{"Event": "SparkListenerApplicationStart", "App ID": "app-1", "Timestamp": 0},
...           {"Event": "SparkListenerStageSubmitted",
...            "Stage Info": {"Stage ID": 0, "Number of Tasks": 1, "Parent IDs": [], "Submission Time": 5}},
...           {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task End Reason": {"Reason": "Success"},
...            "Task Info": {"Index": 0, "Launch Time": 10, "Finish Time": 2010}}]
>>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
...     _ = file.write("\n".join(json.dumps(e) for e in events))
>>> app = read_spark_log(file.name)
>>> app.app_id, app.stages[0].parent_ids, app.tasks.duration.tolist()
('app-1', (), [2.0])
>>> os.unlink(file.name)
"""

from __future__ import annotations

import functools
import hashlib
import threading
import types
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from spn.exceptions import LogFormatError
from spn.limits import MAX_COUNT
from spn.logs.fields import (
    FieldError, count, event_at, id_list, ident, mapping, scalar_text, shown, text, time_ms,
)
from spn.logs.spark_files import read_events
from spn.logs.task_metrics import read_task_metrics
from spn.logs.task_table import TaskRows, TaskTable

__all__ = [
    "SparkStage",
    "SparkJob",
    "SparkExecutor",
    "SparkApplication",
    "read_spark_log",
]


# --------------------------------------------------------------------------
# The log, as data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkStage:
    """One stage *attempt* that ran (was submitted or completed in the log).

    ``parent_ids`` is ``None`` when the log does not say (Spark 1.x), ``()``
    for a stage without parents. ``failure_reason`` is set on failed stages.
    ``completion_ms`` is ``None`` when the stage never completed in the log.
    """

    stage_id: int
    attempt: int
    name: str
    num_tasks: int
    parent_ids: tuple[int, ...] | None
    submission_ms: int | None
    completion_ms: int | None
    failure_reason: str | None

    @property
    def failed(self) -> bool:
        return self.failure_reason is not None

    @property
    def duration(self) -> float | None:
        """Wall time of the stage attempt, seconds, when both ends are known."""
        if self.submission_ms is None or self.completion_ms is None:
            return None
        return (self.completion_ms - self.submission_ms) / 1000.0


@dataclass(frozen=True)
class SparkJob:
    """One job: the stages it declares (``stage_ids``, ran or skipped) and its times.

    Spark 1.2 logs have no job times (``None``); :func:`~spn.logs.spark_stages.job_span_ms` derives them.
    ``result`` is ``"JobSucceeded"``, ``"JobFailed"`` or ``None`` (no JobEnd).
    ``properties`` are the job's local properties from ``JobStart`` (Spark 1.4+):
    ``spark.jobGroup.id`` (set per thread by ``setJobGroup``), ``spark.job.description``,
    the scheduler pool, ... (empty when the log has none).
    """

    job_id: int
    stage_ids: tuple[int, ...]
    submission_ms: int | None
    completion_ms: int | None
    result: str | None
    properties: Mapping[str, str] = field(
        default_factory=lambda: types.MappingProxyType({}), compare=False, repr=False
    )

    @property
    def group(self) -> str | None:
        """The job group (``spark.jobGroup.id``), or ``None``."""
        return self.properties.get("spark.jobGroup.id")


@dataclass(frozen=True)
class SparkExecutor:
    """One executor: ``cores`` from ``Total Cores``; ``removed_ms`` is ``None`` if it lived on."""

    executor_id: str
    host: str | None
    cores: int | None
    added_ms: int | None
    removed_ms: int | None
    removed_reason: str | None


@dataclass(frozen=True)
class SparkApplication:
    """Everything read from one event log.

    ``master``, ``executor_cores`` and ``executor_instances`` come from the
    environment update (``spark.master``, ``spark.executor.cores``,
    ``spark.executor.instances``); each is ``None`` when absent or redacted
    (``redacted_properties`` names the redacted keys). ``spark_version`` is
    ``None`` for logs older than ``SparkListenerLogStart`` (Spark 1.2).
    Stages and tasks are in log order; ``stages`` has one entry per stage
    attempt that ran, ``tasks`` a row per task *attempt* (one ``SparkListenerTaskEnd``:
    a retried or speculative attempt has the same ``index`` and a higher ``attempt``). ``declared_parents`` holds the ``Parent IDs`` of every
    stage a job declared in its ``JobStart`` (ran or skipped).
    """

    path: str
    app_id: str | None
    name: str | None
    user: str | None
    start_ms: int | None
    end_ms: int | None
    spark_version: str | None
    master: str | None
    executor_cores: int | None
    executor_instances: int | None
    spark_properties: Mapping[str, str]
    redacted_properties: tuple[str, ...]
    jobs: tuple[SparkJob, ...]
    stages: tuple[SparkStage, ...]
    tasks: TaskTable
    executors: tuple[SparkExecutor, ...]
    declared_parents: Mapping[int, tuple[int, ...]] = field(
        default_factory=lambda: types.MappingProxyType({}), repr=False
    )
    digest: str | None = field(default=None, compare=False, repr=False)

    def stage_ids(self) -> list[int]:
        """Ids of the stages that ran, ascending (each once, whatever its attempts)."""
        return sorted({stage.stage_id for stage in self.stages})

    def parents_of(self, stage_id: int) -> tuple[int, ...] | None:
        """Parent ids of a stage: from any of its attempts, else from its job's declaration; ``None`` if unknown.

        Spark 1.x logs carry no ``Parent IDs``: there every stage's parents are unknown.
        """
        known = self._parent_ids
        return known[stage_id] if stage_id in known else self.declared_parents.get(stage_id)

    @functools.cached_property
    def _parent_ids(self) -> dict[int, tuple[int, ...]]:
        """Stage id -> the ``Parent IDs`` of its first attempt that has them (one pass, for logs of many stages)."""
        known = {}
        for stage in self.stages:
            if stage.parent_ids is not None:
                known.setdefault(stage.stage_id, stage.parent_ids)
        return known

    def validate(self) -> list[str]:
        """Every problem found that matters to a model built from this log ([] when none).

        Reported: no ``ApplicationStart``; a stage whose parent never ran
        (skipped because its output was reused, or missing from the log); a
        stage that never completed or failed; tasks of a stage never
        submitted; a job without ``JobEnd``. The log is kept as read either way.
        """
        problems = []
        if self.app_id is None:
            problems.append("no SparkListenerApplicationStart: application id unknown")
        ran = set(self.stage_ids())
        for stage_id in sorted(ran):
            for parent in self.parents_of(stage_id) or ():
                if parent not in ran:
                    problems.append(
                        f"stage {stage_id}: parent stage {parent} never ran "
                        "(skipped, its output reused, or missing from the log)"
                    )
        for stage in self.stages:
            label = f"stage {stage.stage_id} (attempt {stage.attempt})"
            if stage.completion_ms is None:
                problems.append(f"{label} was submitted but never completed")
            if stage.failed:
                reason = stage.failure_reason.strip().splitlines() or [""]
                problems.append(f"{label} failed: {reason[0]}")
        for stage_id in sorted(set(np.unique(self.tasks.stage_id).tolist()) - ran):
            problems.append(f"tasks of stage {stage_id} ended, but the stage was never submitted")
        for job in self.jobs:
            if job.result is None:
                problems.append(f"job {job.job_id} has no SparkListenerJobEnd")
        return problems


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------

_REDACTED = "*********(redacted)"
#: the properties read as numbers; a number outside [0, MAX_COUNT] there is refused
_COUNT_PROPERTIES = ("spark.executor.cores", "spark.executor.instances")


#: tasks of the logs kept once read, in all (about 100 bytes each as columns): a report asks its logs a
#: dozen questions, and reading a log of 200,000 tasks takes 10-20 s; a log of more tasks is read again
#: each time, so that memory stays that of the log in use
KEEP_TASKS = 1_000_000
_kept: dict = {}    # a log's identity (_identity) -> its application and the warnings its reading gave
_keeping = threading.Lock()     # a sweep's points may read logs in threads of one Dask worker


def read_spark_log(path) -> SparkApplication:
    """Read a Spark event log (file, compressed file or rolling ``eventlog_v2_*`` directory).

    Raises :class:`~spn.exceptions.LogFormatError` naming the file and line
    when the input is not an event log, or holds a field that cannot be what
    it says (a time that is not a whole number of ms, a task that finishes
    before it launches, ...); ``FileNotFoundError`` when it is missing. A log
    read before and unchanged since is not read again (its warnings are given
    again): see :data:`KEEP_TASKS`.

    >>> app = read_spark_log("spark-events/local-1422981780767.json")  # doctest: +SKIP
    >>> app.spark_version, [s.stage_id for s in app.stages if s.failed]  # doctest: +SKIP
    (None, [2])
    """
    path = Path(path)
    key = _identity(path)
    kept = _kept.get(key)
    if kept is not None:
        app, cuts = kept
        for message in cuts:
            warnings.warn(message, stacklevel=2)
        return app
    reader = _LogReader(str(path))
    digest = hashlib.sha256()
    cuts = []
    for source, lineno, event in read_events(path, digest=digest, cuts=cuts):
        with event_at(f"{source}: line {lineno}", event["Event"]):
            reader.take(event)
    app = reader.application(digest.hexdigest())
    if key is not None and len(app.tasks) <= KEEP_TASKS:
        with _keeping:
            _kept[key] = (app, tuple(cuts))
            while sum(len(kept.tasks) for kept, _ in _kept.values()) > KEEP_TASKS:
                del _kept[next(iter(_kept))]    # the one read first
    return app


def _identity(path: Path):
    """The log at ``path`` as it is now (the path as given, and each file's size, time and inode), or None
    when it cannot be told (it is read, and says why)."""
    try:
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        return str(path), tuple((str(f), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
                                for f in files for st in [f.stat()])
    except OSError:
        return None


class _LogReader:
    """Collects events one at a time; :meth:`application` freezes what it saw.

    Every field used is checked as it is read (:mod:`spn.logs.fields`), and so
    is the order of the two ends of what has both (a task, a stage, a job, an
    executor, the application): a log whose clock runs backwards is refused
    where it does, as no number fitted from it could be trusted.
    """

    def __init__(self, path: str):
        self.path = path
        self.app = {"app_id": None, "name": None, "user": None, "start_ms": None, "end_ms": None}
        self.spark_version = None
        self.properties = {}
        self.jobs = {}  # job id -> dict
        self.stages = {}  # (stage id, attempt) -> dict, in first-seen order
        self.declared_parents = {}  # stage id -> parent ids, from JobStart's Stage Infos
        self.tasks = TaskRows()
        self.task_ids = set()   # Spark numbers the task attempts of an application once each
        self.started = False
        self.executors = {}  # executor id -> dict

    def take(self, event: dict) -> None:
        kind = event["Event"]
        if kind == "SparkListenerLogStart":
            self.spark_version = text(event, "Spark Version")
        elif kind == "SparkListenerApplicationStart":
            if self.started:
                raise FieldError(f"a second SparkListenerApplicationStart ({text(event, 'App ID')} after "
                                 f"{self.app['app_id']}): a log holds one application")
            self.started = True
            self.app.update(app_id=text(event, "App ID"), name=text(event, "App Name"), user=text(event, "User"),
                            start_ms=time_ms(event, "Timestamp"))
            _in_order(self.app["start_ms"], self.app["end_ms"], "the application", _APP_TIMES)
        elif kind == "SparkListenerApplicationEnd":
            self.app["end_ms"] = time_ms(event, "Timestamp")
            _in_order(self.app["start_ms"], self.app["end_ms"], "the application", _APP_TIMES)
        elif kind == "SparkListenerEnvironmentUpdate":
            self._environment(event)
        elif kind == "SparkListenerJobStart":
            self._job_start(event)
        elif kind == "SparkListenerJobEnd":
            job = self._job(ident(event, "Job ID"))
            job["completion_ms"] = time_ms(event, "Completion Time")
            job["result"] = text(mapping(event.get("Job Result"), "Job Result", required=False), "Result") or "unknown"
            _in_order(job["submission_ms"], job["completion_ms"], f"job {job['job_id']}", _JOB_TIMES)
        elif kind in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
            self._stage_info(mapping(event.get("Stage Info"), "Stage Info"), completed=kind.endswith("Completed"))
        elif kind == "SparkListenerTaskEnd":
            self._task(event)
        elif kind == "SparkListenerExecutorAdded":
            info = mapping(event.get("Executor Info"), "Executor Info", required=False)
            executor = self._executor(event.get("Executor ID"))
            executor.update(host=text(info, "Host"), cores=count(info, "Total Cores"),
                            added_ms=time_ms(event, "Timestamp"))
            _in_order(executor["added_ms"], executor["removed_ms"], f"executor {executor['executor_id']}",
                      _EXECUTOR_TIMES)
        elif kind == "SparkListenerExecutorRemoved":
            executor = self._executor(event.get("Executor ID"))
            executor.update(removed_ms=time_ms(event, "Timestamp"), removed_reason=text(event, "Removed Reason"))
            _in_order(executor["added_ms"], executor["removed_ms"], f"executor {executor['executor_id']}",
                      _EXECUTOR_TIMES)
        # every other event (block managers, SQL, metrics, blacklisting, ...) is not needed

    def _environment(self, event: dict) -> None:
        properties = event.get("Spark Properties") or {}
        if isinstance(properties, list):  # very old logs: [[key, value], ...]
            if not all(isinstance(pair, list) and len(pair) == 2 for pair in properties):
                raise FieldError("'Spark Properties' is a list, but not of [key, value] pairs")
        else:
            properties = mapping(properties, "Spark Properties").items()
        for key, value in properties:
            key = scalar_text(key, "Spark Properties")
            self.properties[key] = "None" if value is None else scalar_text(value, f"Spark Properties.{key}")
        for key in _COUNT_PROPERTIES:
            value = _as_int(self.properties.get(key))
            if value is not None and not 0 <= value <= MAX_COUNT:
                raise FieldError(f"{key!r} is {shown(self.properties[key])}: expected a count (an integer "
                                 f"from 0 to {MAX_COUNT:,})")

    def _job_start(self, event: dict) -> None:
        job = self._job(ident(event, "Job ID"))
        infos = event.get("Stage Infos") or []
        if not isinstance(infos, list):
            raise FieldError(f"'Stage Infos' is {shown(infos)}: expected a list")
        infos = [mapping(info, "Stage Infos") for info in infos]
        stage_ids = event.get("Stage IDs")
        if stage_ids is None:
            job["stage_ids"] = tuple(ident(info, "Stage ID") for info in infos)
        else:
            job["stage_ids"] = id_list(stage_ids, "Stage IDs")
        job["submission_ms"] = time_ms(event, "Submission Time")
        _in_order(job["submission_ms"], job["completion_ms"], f"job {job['job_id']}", _JOB_TIMES)
        properties = event.get("Properties") or {}
        if isinstance(properties, Mapping):
            job["properties"] = types.MappingProxyType(
                {scalar_text(k, "Properties"): scalar_text(v, f"Properties.{k}")
                 for k, v in properties.items() if v is not None})
        for info in infos:
            if info.get("Parent IDs") is not None:
                self.declared_parents[ident(info, "Stage ID")] = id_list(info["Parent IDs"], "Parent IDs")

    def _job(self, job_id: int) -> dict:
        return self.jobs.setdefault(
            job_id,
            {"job_id": job_id, "stage_ids": (), "submission_ms": None, "completion_ms": None, "result": None,
             "properties": types.MappingProxyType({})},
        )

    def _stage_info(self, info: Mapping, completed: bool) -> None:
        attempt_key = "Stage Attempt ID" if "Stage Attempt ID" in info else "Attempt ID"
        key = (ident(info, "Stage ID"), ident(info, attempt_key, required=False, default=0))
        stage = self.stages.setdefault(
            key,
            {"stage_id": key[0], "attempt": key[1], "name": "", "num_tasks": 0, "parent_ids": None,
             "submission_ms": None, "completion_ms": None, "failure_reason": None},
        )
        stage["name"] = text(info, "Stage Name") or stage["name"]
        stage["num_tasks"] = count(info, "Number of Tasks", default=stage["num_tasks"])
        if info.get("Parent IDs") is not None:
            stage["parent_ids"] = id_list(info["Parent IDs"], "Parent IDs")
        if info.get("Submission Time") is not None:
            stage["submission_ms"] = time_ms(info, "Submission Time")
        if completed:
            stage["completion_ms"] = time_ms(info, "Completion Time")
            stage["failure_reason"] = text(info, "Failure Reason")
        _in_order(stage["submission_ms"], stage["completion_ms"], f"stage {key[0]} (attempt {key[1]})", _JOB_TIMES)

    def _task(self, event: dict) -> None:
        """One ``SparkListenerTaskEnd``, a row of :attr:`tasks`."""
        info = mapping(event.get("Task Info"), "Task Info")
        reason = text(mapping(event.get("Task End Reason"), "Task End Reason", required=False), "Reason") or "Unknown"
        if reason == "Success" and not info.get("Failed", False):
            status = "success"
        elif reason == "TaskKilled" or info.get("Killed", False):
            status = "killed"
        else:
            status = "failed"
        stage_id, index = ident(event, "Stage ID"), ident(info, "Index")
        attempt = ident(info, "Attempt", required=False, default=0)
        launch, finish = time_ms(info, "Launch Time", required=True), time_ms(info, "Finish Time", required=True)
        _in_order(launch, finish, f"task {index} (attempt {attempt}) of stage {stage_id}",
                  ("Launch Time", "Finish Time"))
        task_id = ident(info, "Task ID", required=False)
        if task_id is not None:
            if task_id in self.task_ids:
                raise FieldError(f"task ID {task_id} ends a second time (task {index} of stage {stage_id}): a "
                                 "repeated event, or two logs in one file")
            self.task_ids.add(task_id)
        metrics = read_task_metrics(info, mapping(event.get("Task Metrics"), "Task Metrics", required=False))
        values, missing = metrics if metrics is not None else (None, ())
        self.tasks.add(stage_id, index, launch, finish,
                       stage_attempt=ident(event, "Stage Attempt ID", required=False, default=0), task_id=task_id,
                       attempt=attempt, executor=text(info, "Executor ID"), host=text(info, "Host"), reason=reason,
                       status=status, speculative=bool(info.get("Speculative", False)), metrics=values,
                       missing=missing)

    def _executor(self, executor_id) -> dict:
        if executor_id is None:
            raise FieldError("'Executor ID' is missing")
        executor_id = scalar_text(executor_id, "Executor ID")
        return self.executors.setdefault(
            executor_id,
            {"executor_id": executor_id, "host": None, "cores": None, "added_ms": None,
             "removed_ms": None, "removed_reason": None},
        )

    def application(self, digest: str | None = None) -> SparkApplication:
        start, end = self.app["start_ms"], self.app["end_ms"]
        tasks = self.tasks.table()
        outside = np.zeros(len(tasks), dtype=bool)    # the driver stamps tasks and the application on one clock
        if start is not None:
            outside |= tasks.launch_ms < start
        if end is not None:
            outside |= tasks.finish_ms > end
        if outside.any():
            k = int(np.argmax(outside))     # the first in the log
            raise LogFormatError(
                f"{self.path}: task {tasks.index[k]} (attempt {tasks.attempt[k]}) of stage {tasks.stage_id[k]} runs "
                f"from {tasks.launch_ms[k]} to {tasks.finish_ms[k]} ms, outside the application ({start} to {end} "
                "ms): the log is corrupt, and no time in it can be trusted")
        properties = self.properties
        redacted = tuple(sorted(k for k, v in properties.items() if v == _REDACTED))
        return SparkApplication(
            path=self.path,
            **self.app,
            spark_version=self.spark_version,
            master=_unless_redacted(properties.get("spark.master")),
            executor_cores=_as_int(properties.get("spark.executor.cores")),
            executor_instances=_as_int(properties.get("spark.executor.instances")),
            spark_properties=types.MappingProxyType(dict(properties)),
            redacted_properties=redacted,
            jobs=tuple(SparkJob(**job) for _, job in sorted(self.jobs.items())),
            stages=tuple(SparkStage(**stage) for stage in self.stages.values()),
            tasks=tasks,
            executors=tuple(SparkExecutor(**executor) for executor in self.executors.values()),
            declared_parents=types.MappingProxyType(dict(self.declared_parents)),
            digest=digest,
        )


_APP_TIMES = ("ApplicationStart Timestamp", "ApplicationEnd Timestamp")
_JOB_TIMES = ("Submission Time", "Completion Time")
_EXECUTOR_TIMES = ("ExecutorAdded Timestamp", "ExecutorRemoved Timestamp")


def _in_order(start: int | None, end: int | None, what: str, names: tuple[str, str]) -> None:
    """Refuse an end before its start: the driver stamps both on one clock, so only a corrupt log has one.

    Dropping such a task instead would bias its stage toward the others; it is
    the log, not the task, that is wrong, so none of its times are used.
    """
    if start is not None and end is not None and end < start:
        raise FieldError(f"{what}: {names[1]} {end} is before {names[0]} {start}: the log is corrupt "
                         "(its clock ran backwards), and no time in it can be trusted")


def _unless_redacted(value: str | None) -> str | None:
    return None if value == _REDACTED else value


def _as_int(value: str | None) -> int | None:
    """A property value as an integer; ``None`` when absent, redacted or not a number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
