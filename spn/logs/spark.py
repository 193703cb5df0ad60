r"""Read a Spark event log into plain, frozen data.

This module reads a log written by Spark 1.x to 4.x (a file, a compressed
file or a rolling directory: see :mod:`spn.logs.spark_files`) and keeps what
a performance model needs: the application, its jobs, stages (with their
parents), task attempts and executors. It tolerates unknown events, missing
optional fields and a missing ``SparkListenerLogStart`` (Spark 1.2); an event
that lacks a field it needs is a :class:`~spn.exceptions.LogFormatError`
naming the file and line.

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
>>> app.app_id, app.stages[0].parent_ids, app.tasks[0].duration
('app-1', (), 2.0)
>>> os.unlink(file.name)
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from spn.exceptions import LogFormatError
from spn.logs.spark_files import read_events

__all__ = [
    "SparkTask",
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
class SparkTask:
    """One task *attempt* (one ``SparkListenerTaskEnd``).

    ``status`` is ``"success"``, ``"failed"`` or ``"killed"`` (``end_reason``
    keeps Spark's own word: ``Success``, ``ExceptionFailure``, ``TaskKilled``,
    ``FetchFailed``, ...). A retried or speculative attempt has the same
    ``index`` and a higher ``attempt``. ``executor_run_time_ms`` is ``None``
    when the event carries no ``Task Metrics``.

    >>> t = SparkTask(0, 0, 7, 3, 0, 1000, 3500, "1", "host-1", 2300, "Success", "success", False)
    >>> t.duration, t.successful
    (2.5, True)
    """

    stage_id: int
    stage_attempt: int
    task_id: int | None
    index: int
    attempt: int
    launch_ms: int
    finish_ms: int
    executor_id: str | None
    host: str | None
    executor_run_time_ms: int | None
    end_reason: str
    status: str
    speculative: bool
    input_bytes: int = 0
    shuffle_read_bytes: int = 0
    shuffle_write_bytes: int = 0

    @property
    def duration(self) -> float:
        """Wall time of the attempt, seconds (finish - launch)."""
        return (self.finish_ms - self.launch_ms) / 1000.0

    @property
    def successful(self) -> bool:
        return self.status == "success"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def killed(self) -> bool:
        return self.status == "killed"


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
    attempt that ran. ``declared_parents`` holds the ``Parent IDs`` of every
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
    tasks: tuple[SparkTask, ...]
    executors: tuple[SparkExecutor, ...]
    declared_parents: Mapping[int, tuple[int, ...]] = field(
        default_factory=lambda: types.MappingProxyType({}), repr=False
    )

    def stage_ids(self) -> list[int]:
        """Ids of the stages that ran, ascending (each once, whatever its attempts)."""
        return sorted({stage.stage_id for stage in self.stages})

    def parents_of(self, stage_id: int) -> tuple[int, ...] | None:
        """Parent ids of a stage: from any of its attempts, else from its job's declaration; ``None`` if unknown.

        Spark 1.x logs carry no ``Parent IDs``: there every stage's parents are unknown.
        """
        for stage in self.stages:
            if stage.stage_id == stage_id and stage.parent_ids is not None:
                return stage.parent_ids
        return self.declared_parents.get(stage_id)

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
        for stage_id in sorted({task.stage_id for task in self.tasks} - ran):
            problems.append(f"tasks of stage {stage_id} ended, but the stage was never submitted")
        for job in self.jobs:
            if job.result is None:
                problems.append(f"job {job.job_id} has no SparkListenerJobEnd")
        return problems


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------

_REDACTED = "*********(redacted)"


def read_spark_log(path) -> SparkApplication:
    """Read a Spark event log (file, compressed file or rolling ``eventlog_v2_*`` directory).

    Raises :class:`~spn.exceptions.LogFormatError` naming the file and line
    when the input is not an event log; ``FileNotFoundError`` when it is missing.

    >>> app = read_spark_log("spark-events/local-1422981780767.json")  # doctest: +SKIP
    >>> app.spark_version, [s.stage_id for s in app.stages if s.failed]  # doctest: +SKIP
    (None, [2])
    """
    path = Path(path)
    reader = _LogReader(str(path))
    for source, lineno, event in read_events(path):
        try:
            reader.take(event)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise LogFormatError(
                f"{source}: line {lineno}: malformed {event.get('Event')} event ({type(error).__name__}: {error})"
            ) from None
    return reader.application()


class _LogReader:
    """Collects events one at a time; :meth:`application` freezes what it saw."""

    def __init__(self, path: str):
        self.path = path
        self.app = {"app_id": None, "name": None, "user": None, "start_ms": None, "end_ms": None}
        self.spark_version = None
        self.properties = {}
        self.jobs = {}  # job id -> dict
        self.stages = {}  # (stage id, attempt) -> dict, in first-seen order
        self.declared_parents = {}  # stage id -> parent ids, from JobStart's Stage Infos
        self.tasks = []
        self.executors = {}  # executor id -> dict

    def take(self, event: dict) -> None:
        kind = event["Event"]
        if kind == "SparkListenerLogStart":
            self.spark_version = event.get("Spark Version")
        elif kind == "SparkListenerApplicationStart":
            self.app.update(
                app_id=event.get("App ID"),
                name=event.get("App Name"),
                user=event.get("User"),
                start_ms=event.get("Timestamp"),
            )
        elif kind == "SparkListenerApplicationEnd":
            self.app["end_ms"] = event.get("Timestamp")
        elif kind == "SparkListenerEnvironmentUpdate":
            properties = event.get("Spark Properties") or {}
            if isinstance(properties, list):  # very old logs: [[key, value], ...]
                properties = dict(properties)
            self.properties.update({str(k): str(v) for k, v in properties.items()})
        elif kind == "SparkListenerJobStart":
            self._job_start(event)
        elif kind == "SparkListenerJobEnd":
            job = self._job(event["Job ID"])
            job["completion_ms"] = event.get("Completion Time")
            job["result"] = (event.get("Job Result") or {}).get("Result", "unknown")
        elif kind in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
            self._stage_info(event["Stage Info"], completed=kind.endswith("Completed"))
        elif kind == "SparkListenerTaskEnd":
            self.tasks.append(_task(event))
        elif kind == "SparkListenerExecutorAdded":
            info = event.get("Executor Info") or {}
            executor = self._executor(event["Executor ID"])
            executor.update(host=info.get("Host"), cores=info.get("Total Cores"), added_ms=event.get("Timestamp"))
        elif kind == "SparkListenerExecutorRemoved":
            executor = self._executor(event["Executor ID"])
            executor.update(removed_ms=event.get("Timestamp"), removed_reason=event.get("Removed Reason"))
        # every other event (block managers, SQL, metrics, blacklisting, ...) is not needed

    def _job_start(self, event: dict) -> None:
        job = self._job(event["Job ID"])
        infos = event.get("Stage Infos") or []
        stage_ids = event.get("Stage IDs")
        if stage_ids is None:
            stage_ids = [info["Stage ID"] for info in infos]
        job["stage_ids"] = tuple(int(s) for s in stage_ids)
        job["submission_ms"] = event.get("Submission Time")
        properties = event.get("Properties") or {}
        if isinstance(properties, Mapping):
            job["properties"] = types.MappingProxyType(
                {str(k): str(v) for k, v in properties.items() if v is not None})
        for info in infos:
            if info.get("Parent IDs") is not None:
                self.declared_parents[int(info["Stage ID"])] = tuple(int(p) for p in info["Parent IDs"])

    def _job(self, job_id: int) -> dict:
        return self.jobs.setdefault(
            int(job_id),
            {"job_id": int(job_id), "stage_ids": (), "submission_ms": None, "completion_ms": None, "result": None,
             "properties": types.MappingProxyType({})},
        )

    def _stage_info(self, info: dict, completed: bool) -> None:
        key = (int(info["Stage ID"]), int(info.get("Stage Attempt ID", info.get("Attempt ID", 0))))
        stage = self.stages.setdefault(
            key,
            {"stage_id": key[0], "attempt": key[1], "name": "", "num_tasks": 0, "parent_ids": None,
             "submission_ms": None, "completion_ms": None, "failure_reason": None},
        )
        stage["name"] = info.get("Stage Name", stage["name"])
        stage["num_tasks"] = int(info.get("Number of Tasks", stage["num_tasks"]))
        if info.get("Parent IDs") is not None:
            stage["parent_ids"] = tuple(int(p) for p in info["Parent IDs"])
        if info.get("Submission Time") is not None:
            stage["submission_ms"] = info["Submission Time"]
        if completed:
            stage["completion_ms"] = info.get("Completion Time")
            stage["failure_reason"] = info.get("Failure Reason")

    def _executor(self, executor_id) -> dict:
        return self.executors.setdefault(
            str(executor_id),
            {"executor_id": str(executor_id), "host": None, "cores": None, "added_ms": None,
             "removed_ms": None, "removed_reason": None},
        )

    def application(self) -> SparkApplication:
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
            tasks=tuple(self.tasks),
            executors=tuple(SparkExecutor(**executor) for executor in self.executors.values()),
            declared_parents=types.MappingProxyType(dict(self.declared_parents)),
        )


def _task(event: dict) -> SparkTask:
    """One ``SparkListenerTaskEnd`` as a :class:`SparkTask`."""
    info = event["Task Info"]
    reason = (event.get("Task End Reason") or {}).get("Reason", "Unknown")
    if reason == "Success" and not info.get("Failed", False):
        status = "success"
    elif reason == "TaskKilled" or info.get("Killed", False):
        status = "killed"
    else:
        status = "failed"
    metrics = event.get("Task Metrics") or {}
    shuffle_read = metrics.get("Shuffle Read Metrics") or {}
    return SparkTask(
        stage_id=int(event["Stage ID"]),
        stage_attempt=int(event.get("Stage Attempt ID", 0)),
        task_id=info.get("Task ID"),
        index=int(info["Index"]),
        attempt=int(info.get("Attempt", 0)),
        launch_ms=int(info["Launch Time"]),
        finish_ms=int(info["Finish Time"]),
        executor_id=info.get("Executor ID"),
        host=info.get("Host"),
        executor_run_time_ms=metrics.get("Executor Run Time"),
        end_reason=reason,
        status=status,
        speculative=bool(info.get("Speculative", False)),
        input_bytes=_metric(metrics.get("Input Metrics"), "Bytes Read"),
        shuffle_read_bytes=_metric(shuffle_read, "Remote Bytes Read") + _metric(shuffle_read, "Local Bytes Read"),
        shuffle_write_bytes=_metric(metrics.get("Shuffle Write Metrics"), "Shuffle Bytes Written"),
    )


def _metric(group, key: str) -> int:
    """An integer metric of a ``Task Metrics`` group; 0 when the group or the key is absent."""
    if not isinstance(group, Mapping):
        return 0
    value = group.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _unless_redacted(value: str | None) -> str | None:
    return None if value == _REDACTED else value


def _as_int(value: str | None) -> int | None:
    """A property value as an integer; ``None`` when absent, redacted or not a number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
