"""Read a Spark event log into plain, frozen data.

Spark writes one JSON object per line (an *event*, named by its ``Event`` key)
to ``spark.eventLog.dir``. This module reads such a log, written by Spark 1.x
to 4.x, and keeps what a performance model needs: the application, its jobs,
stages (with their parents), task attempts and executors.

Where the log can come from:

- one file, plain or compressed (``.gz`` always; ``.zst``/``.zstd`` when the
  ``zstandard`` package or Python 3.14's ``compression.zstd`` is importable;
  Spark's ``.lz4``, ``.lzf`` and ``.snappy`` use JVM-specific framing and are
  refused with a :class:`~spn.exceptions.LogFormatError` naming the codec);
  a trailing ``.inprogress`` is ignored;
- a rolling log directory ``eventlog_v2_<appId>/``: its ``events_<N>_<appId>``
  files are read in order of N as one log; ``appstatus_*`` markers are ignored.

What the reader tolerates: unknown events, missing optional fields, a missing
``SparkListenerLogStart`` (Spark 1.2), and a truncated last line (the
application was still running): that line is dropped with a ``warnings.warn``
naming the file and line. What it refuses, with a ``LogFormatError`` naming
the file and line: an empty file, bytes that are not UTF-8 text, a line that
is not a JSON object with an ``Event`` key (anywhere but the last line).

Times are kept as Spark wrote them: epoch **milliseconds** (fields ending in
``_ms``). The helpers that return durations return **seconds**.

Task durations are wall time, ``Finish Time - Launch Time``: the time a task
holds its executor core (deserialisation, GC, shuffle fetch and result
serialisation included). That is what a container in the Petri net models.
``Executor Run Time`` (``measure="executor_run"``) leaves that overhead out
and would make short tasks look cheaper than they are for the cluster.

>>> app = read_spark_log("application_1516285256255_0012.json")  # doctest: +SKIP
>>> len(app.stages), len(app.tasks), app.stages[1].parent_ids     # doctest: +SKIP
(2, 24, (0,))
>>> sorted(stage_dag(app).edges)                                   # doctest: +SKIP
[(0, 1)]
"""

from __future__ import annotations

import gzip
import io
import json
import re
import types
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from spn.exceptions import LogFormatError

__all__ = [
    "SparkTask",
    "SparkStage",
    "SparkJob",
    "SparkExecutor",
    "SparkApplication",
    "read_spark_log",
    "stage_task_durations",
    "failed_attempt_seconds",
    "stage_jobs",
    "stage_dag",
    "concurrent_stages",
    "job_span_ms",
    "executor_cores_over_time",
    "max_executor_cores",
    "max_concurrent_tasks",
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

    Spark 1.2 logs have no job times (``None``); :func:`job_span_ms` derives them.
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
            for parent in _parents_of(self, stage_id) or ():
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

_EVENTS_FILE = re.compile(r"^events_(\d+)_")
_REFUSED_CODECS = {".lz4": "lz4", ".lzf": "lzf", ".snappy": "snappy"}
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
    for source, lineno, event in _events(path):
        try:
            reader.take(event)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise LogFormatError(
                f"{source}: line {lineno}: malformed {event.get('Event')} event ({type(error).__name__}: {error})"
            ) from None
    return reader.application()


def _events(path: Path) -> Iterator[tuple[str, int, dict]]:
    """Every event of the log as ``(file, line number, event)``; see the module doc for errors."""
    if path.is_dir():
        files = _rolling_files(path)
    else:
        files = [path]
    seen_event = False
    bad_line = None  # (file, line, why): a line that failed; fine only if it is the very last one
    for file in files:
        for lineno, raw in _numbered_lines(file):
            if not raw.strip():
                continue
            if bad_line is not None:
                raise LogFormatError(f"{bad_line[0]}: line {bad_line[1]}: {bad_line[2]}")
            try:
                text = raw.decode("utf-8")
                event = json.loads(text)
            except (UnicodeDecodeError, ValueError) as error:
                why = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else f"not JSON ({error})"
                bad_line = (str(file), lineno, why + ": not a Spark event log")
                continue
            if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
                raise LogFormatError(
                    f"{file}: line {lineno}: a JSON line without an 'Event' key: not a Spark event log"
                )
            seen_event = True
            yield str(file), lineno, event
    if bad_line is not None:
        if not seen_event:
            raise LogFormatError(f"{bad_line[0]}: line {bad_line[1]}: {bad_line[2]}")
        warnings.warn(
            f"{bad_line[0]}: line {bad_line[1]}: last line is incomplete (application still running?); "
            "ignored it and kept the events before it",
            stacklevel=3,
        )
    elif not seen_event:
        raise LogFormatError(f"{files[-1]}: line 1: empty file: no events, not a Spark event log")


def _rolling_files(directory: Path) -> list[Path]:
    """The ``events_<N>_*`` files of a rolling log directory, in order of N."""
    numbered = []
    for file in directory.iterdir():
        match = _EVENTS_FILE.match(file.name)
        if match and file.is_file():
            numbered.append((int(match.group(1)), file))
    if not numbered:
        raise LogFormatError(
            f"{directory}: line 0: directory has no events_<N>_<appId> files: not a Spark rolling event log"
        )
    return [file for _, file in sorted(numbered)]


def _numbered_lines(file: Path) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of a file, decompressed; a cut-off gzip stream ends with a warning."""
    stream = _open_binary(file)
    lineno = 0
    with stream:
        try:
            for lineno, raw in enumerate(stream, start=1):
                yield lineno, raw
        except EOFError:
            warnings.warn(
                f"{file}: line {lineno + 1}: compressed stream ends early (application still running?); "
                "kept the events before it",
                stacklevel=4,
            )


def _open_binary(file: Path):
    """Open ``file`` for reading bytes, decompressing by suffix (gzip also by its magic bytes)."""
    suffix = file.suffix
    if suffix == ".inprogress":
        suffix = Path(file.stem).suffix
    if suffix in _REFUSED_CODECS:
        raise LogFormatError(
            f"{file}: line 0: codec '{_REFUSED_CODECS[suffix]}' is not supported (Spark writes it in a "
            "JVM-specific framing that no installed module reads); decompress it with Spark first, or "
            "log with spark.eventLog.compression.codec=zstd or spark.eventLog.compress=false"
        )
    if suffix in (".zst", ".zstd"):
        return _open_zstd(file)
    with open(file, "rb") as probe:
        magic = probe.read(2)
    if suffix == ".gz" or magic == b"\x1f\x8b":
        return gzip.open(file, "rb")
    return open(file, "rb")


def _open_zstd(file: Path):
    try:
        from compression import zstd  # Python 3.14+

        return zstd.open(file, "rb")
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise LogFormatError(
            f"{file}: line 0: codec 'zstd' is not supported here: install the 'zstandard' package "
            "(or use Python 3.14+), or decompress it first with `zstd -d`"
        ) from None
    return io.BufferedReader(zstandard.open(file, "rb"))


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


# --------------------------------------------------------------------------
# What a model needs from the log
# --------------------------------------------------------------------------


def stage_task_durations(app: SparkApplication, *, measure: str = "wall") -> dict[int, tuple[float, ...]]:
    """Durations (seconds) of the *successful* task attempts of each stage that ran, in log order.

    ``measure="wall"`` (default) is finish - launch, the time a core is held;
    ``measure="executor_run"`` is ``Executor Run Time`` (attempts without
    metrics are left out). All attempts of a stage are pooled: a task re-run
    by a retried stage attempt is real work and is one more sample. Failed and
    killed attempts (a killed speculative copy is not a task) are not here;
    see :func:`failed_attempt_seconds`.

    >>> stage_task_durations(app)[0]  # doctest: +SKIP
    (2.234, 2.647, 5.124, 63.773)
    """
    if measure not in ("wall", "executor_run"):
        raise ValueError(f"measure must be 'wall' or 'executor_run', got {measure!r}")
    durations = {stage_id: [] for stage_id in app.stage_ids()}
    for task in app.tasks:
        if not task.successful:
            continue
        if measure == "wall":
            seconds = task.duration
        elif task.executor_run_time_ms is not None:
            seconds = task.executor_run_time_ms / 1000.0
        else:
            continue
        durations.setdefault(task.stage_id, []).append(seconds)
    return {stage_id: tuple(values) for stage_id, values in sorted(durations.items())}


def failed_attempt_seconds(app: SparkApplication) -> dict[int, float]:
    """Wall seconds spent per stage by failed and killed attempts (reported, never fitted).

    >>> failed_attempt_seconds(app)  # doctest: +SKIP
    {0: 53.201}
    """
    wasted = {}
    for task in app.tasks:
        if not task.successful:
            wasted[task.stage_id] = wasted.get(task.stage_id, 0.0) + task.duration
    return dict(sorted(wasted.items()))


def stage_jobs(app: SparkApplication) -> dict[int, int | None]:
    """The job each stage that ran belongs to: the first job (by id) declaring it; ``None`` if none does.

    A shuffle stage reused by a later job is declared again there (as
    skipped); it ran in the first one.
    """
    owner = {}
    for job in app.jobs:
        for stage_id in job.stage_ids:
            owner.setdefault(stage_id, job.job_id)
    return {stage_id: owner.get(stage_id) for stage_id in app.stage_ids()}


def stage_dag(app: SparkApplication) -> nx.DiGraph:
    """The stages that ran, with an edge parent -> child from ``Parent IDs``.

    Edges to parents that never ran (skipped) are left out; ``validate()``
    reports them. Spark 1.x logs carry no ``Parent IDs``: then each stage's
    parent is *inferred* as the previous stage (by id) of the same job, so a
    job's stages form a chain. Such edges carry ``inferred=True`` and the
    graph has ``graph["inferred"] = True``. Nodes carry ``name``,
    ``num_tasks``, ``job_id`` and ``attempts``.

    >>> sorted(stage_dag(app).predecessors(2))  # doctest: +SKIP
    [0, 1]
    """
    dag = nx.DiGraph(inferred=False)
    jobs = stage_jobs(app)
    for stage in app.stages:  # a later attempt overwrites the name and task count of an earlier one
        attempts = dag.nodes[stage.stage_id]["attempts"] + 1 if stage.stage_id in dag else 1
        dag.add_node(stage.stage_id, name=stage.name, num_tasks=stage.num_tasks,
                     job_id=jobs[stage.stage_id], attempts=attempts)
    for stage_id in sorted(dag.nodes):
        parents = _parents_of(app, stage_id)
        if parents is not None:
            for parent in parents:
                if parent in dag:
                    dag.add_edge(parent, stage_id, inferred=False)
            continue
        same_job_before = [s for s in dag.nodes if jobs[s] == jobs[stage_id] and s < stage_id]
        if jobs[stage_id] is not None and same_job_before:
            dag.add_edge(max(same_job_before), stage_id, inferred=True)
        dag.graph["inferred"] = True
    return dag


def _parents_of(app: SparkApplication, stage_id: int) -> tuple[int, ...] | None:
    """Parent ids of a stage: from any of its attempts, else from its job's declaration; ``None`` if unknown."""
    for stage in app.stages:
        if stage.stage_id == stage_id and stage.parent_ids is not None:
            return stage.parent_ids
    return app.declared_parents.get(stage_id)


def concurrent_stages(app: SparkApplication, *, within_job: bool = True) -> list[tuple[int, int]]:
    """Pairs ``(a, b)``, a < b, of stages whose [submission, completion] intervals overlap.

    Each stage's interval runs from its first attempt's submission to its last
    attempt's completion; stages missing either time are left out. With
    ``within_job=True`` only stages of the same job are paired (independent
    branches of a DAG); ``False`` also pairs stages of concurrent jobs.

    >>> concurrent_stages(app)  # doctest: +SKIP
    [(0, 1)]
    """
    start, end = {}, {}
    for stage in app.stages:
        if stage.submission_ms is not None:
            start[stage.stage_id] = min(start.get(stage.stage_id, stage.submission_ms), stage.submission_ms)
        if stage.completion_ms is not None:
            end[stage.stage_id] = max(end.get(stage.stage_id, stage.completion_ms), stage.completion_ms)
    timed = sorted(set(start) & set(end))
    jobs = stage_jobs(app)
    pairs = []
    for i, a in enumerate(timed):
        for b in timed[i + 1:]:
            if within_job and jobs[a] != jobs[b]:
                continue
            if start[a] < end[b] and start[b] < end[a]:
                pairs.append((a, b))
    return pairs


def job_span_ms(app: SparkApplication, job_id: int) -> tuple[int | None, int | None]:
    """``(start, end)`` of a job in epoch ms: its own times, else derived from its stages' times.

    >>> job_span_ms(app, 1)  # doctest: +SKIP
    (1422981785829, 1422981786347)
    """
    job = next(j for j in app.jobs if j.job_id == job_id)
    jobs = stage_jobs(app)
    own = [s for s in app.stages if jobs.get(s.stage_id) == job_id]
    starts = [s.submission_ms for s in own if s.submission_ms is not None]
    ends = [s.completion_ms for s in own if s.completion_ms is not None]
    start = job.submission_ms if job.submission_ms is not None else min(starts, default=None)
    end = job.completion_ms if job.completion_ms is not None else max(ends, default=None)
    return start, end


def executor_cores_over_time(app: SparkApplication) -> list[tuple[int, int]]:
    """Total cores of the live executors as a step function: ``[(time_ms, cores), ...]``.

    Built from ``ExecutorAdded``/``ExecutorRemoved``; empty when the log has
    neither (Spark 1.x local mode). Executors without a known core count add 0.

    >>> executor_cores_over_time(app)[:2]  # doctest: +SKIP
    [(1628637966675, 1), (1628637968142, 2)]
    """
    changes = []
    for executor in app.executors:
        cores = executor.cores or 0
        if executor.added_ms is not None:
            changes.append((executor.added_ms, cores))
        if executor.removed_ms is not None:
            changes.append((executor.removed_ms, -cores))
    steps = []
    total = 0
    for time_ms, change in sorted(changes):
        total += change
        if steps and steps[-1][0] == time_ms:
            steps[-1] = (time_ms, total)
        else:
            steps.append((time_ms, total))
    return steps


def max_executor_cores(app: SparkApplication) -> int | None:
    """Most executor cores alive at once (the cluster size C the log saw); ``None`` if unknown.

    >>> max_executor_cores(app)  # doctest: +SKIP
    10
    """
    return max((cores for _, cores in executor_cores_over_time(app)), default=None)


def max_concurrent_tasks(app: SparkApplication) -> int:
    """Most task attempts running at once, from launch/finish times (observed parallelism).

    An estimate of the cores the application had, for logs where
    :func:`max_executor_cores` is ``None`` (Spark 1.x local mode). The times
    are taken on the driver, so a finish lands a few ms after the core was
    freed and the count can exceed the cores slightly.

    >>> max_concurrent_tasks(app)  # doctest: +SKIP
    8
    """
    # a finish at time t frees its core before a launch at the same t takes one
    changes = sorted([(t.launch_ms, 1) for t in app.tasks] + [(t.finish_ms, -1) for t in app.tasks])
    running = most = 0
    for _, change in changes:
        running += change
        most = max(most, running)
    return most
