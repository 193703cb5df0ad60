"""Execution logs -> a runnable model description (what ``spn fit`` writes).

A Spark event log (or a MapReduce ``.jhist``) says which stages ran, how many
tasks each had, how long every task held its core, and when the driver
submitted what. This module turns that into a model description (DESIGN.md
section 4) that ``spn solve`` and ``spn simulate`` accept:

- **phases** are the stages that ran (``stage-<id>``); a MapReduce job has a
  ``map`` and a ``reduce`` phase. Task times are the wall times of the
  successful attempts, fitted with an Erlang law whose shape is capped
  (``max_shape``, default 10) so that the CTMC stays small enough to solve.
  With ``stage_groups=True`` the stages of one job that ran at the same time
  are merged into one phase (PERIDOT's *stage groups*: fewer phases, a
  smaller state space, but one task-time law for different stages).
- **edges** come from the stages' ``Parent IDs``. Spark 1.x logs have none:
  there a job's stages are grouped by overlapping run times, stages of one
  group run side by side and each group follows the previous one. Jobs are
  chained in submission order; a job submitted while an earlier one was still
  running runs beside it (it depends only on the jobs that had ended).
- **delay phases**: time in which none of a job's tasks ran (application
  start-up, driver work between jobs and stages, scheduling gaps, result
  collection, a failed job's time) does not depend on the tasks, and a model
  of the tasks alone would lose it. Each job's share becomes a phase
  ``driver-job<id>`` of **one task** whose time is the measured delay, with
  the largest Erlang shape allowed (nearly constant), placed before the job's
  first stages; the time after the last job until the application ended
  becomes ``driver-end``. Caveat of this choice: in the net such a phase holds
  one container while it runs, which the driver does not do; with one user
  nothing else of the job runs then, so only multi-user predictions are
  affected (by at most one container per user in a delay). ``delays=False``
  leaves them out.
- **containers** are the executor cores the log saw (most cores alive at
  once); else ``spark.executor.cores`` x ``spark.executor.instances``; else
  ``K`` of a ``local[K]`` master; else the most tasks that ran at once.

Three ways to use several runs:

- several logs of the same application (**repetitions**): samples pooled per
  stage; the logs must have the same jobs, stages, task counts and DAG;
- ``per_query=True``: one application that ran the same query many times (a
  benchmark loop, or N users each resubmitting it, told apart by their job
  groups, ``spark.jobGroup.id``): the repeating pattern of jobs is found, one
  query's DAG is modelled with samples pooled over the repetitions, and the
  think time is the mean gap between the end of a user's query and that
  user's next submission;
- ``input_size=...`` (PERIDOT's observation, paper "PERIDOT: quick
  predictions from two small reference runs"): logs of one application at
  different input sizes (a run's input size: the most bytes one of its stages
  read, from ``Input Metrics``, so a scan repeated by a second job counts once).
  A stage whose task count is the same in every log is **fixed**; one whose
  task count changes is **variable**, and its task count is extrapolated
  linearly in the input size (least squares through the references). A
  variable stage's mean task time follows PERIDOT's constant wave time, with
  one refinement: the constant is the mean of the tasks after the first wave
  (warm executors), and the first wave's excess (a fresh JVM's cold start) is
  paid once per run, not by every task at a larger size. A fixed stage keeps its
  pooled task time unless it clearly grows with the input (slope significant
  at 1 % and the change > 10 %): then its mean is extrapolated linearly in
  the input size. The shape of a scaled stage is fitted to the durations
  divided by their own log's mean. Delay phases are fixed: their mean over
  the logs.

>>> model = fit_logs(["app-1.json"], max_shape=10)   # doctest: +SKIP
>>> print(model.to_yaml())                            # doctest: +SKIP
"""

from __future__ import annotations

import gzip
import math
import os
import re
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.stats
import yaml

from spn.exceptions import LogFormatError, ModelError
from spn.fit import duration_floor, fit_delay, fit_phase, fit_pooled

__all__ = [
    "StageRecord",
    "JobRecord",
    "Run",
    "FittedModel",
    "parse_size",
    "format_size",
    "load_runs",
    "query_runs",
    "fit_logs",
    "write_model",
]

#: a delay shorter than this (seconds) is not worth a phase
MIN_DELAY_S = 0.001

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def parse_size(text) -> int:
    """An input size in bytes from ``"123"``, ``"64MB"``, ``"1.5 GiB"``, ``"10gb"``.

    KB/MB/GB/TB (and K/M/G/T) are powers of 1000; KiB/MiB/GiB/TiB powers of 1024.

    >>> parse_size("64MB"), parse_size("1 KiB"), parse_size(2048)
    (64000000, 1024, 2048)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
        if not match or match.group(2).lower() not in _UNITS:
            raise ModelError(
                f"input size {text!r}: expected a number of bytes, optionally with a unit "
                "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 10GB"
            )
        value, unit = float(match.group(1)), match.group(2).lower()
    size = value * _UNITS[unit]
    if not (math.isfinite(size) and size > 0):
        raise ModelError(f"input size {text!r}: expected a size > 0")
    return int(round(size))


def format_size(size: float) -> str:
    """Bytes as a short decimal string: ``format_size(64e6) == '64 MB'``.

    >>> format_size(64e6), format_size(1234)
    ('64 MB', '1.23 kB')
    """
    for unit, factor in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size:.0f} B"


# --------------------------------------------------------------------------
# What one run of the modelled unit looked like
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class StageRecord:
    """One stage (or merged stage group) of one job, as it ran once.

    ``parents`` are positions in the job's ``stages``; ``durations`` the wall
    times (s) of the successful attempts; ``stage_ids`` the Spark stage ids
    (several for a merged group; for MapReduce, 0 = map and 1 = reduce).
    Spark durations are in launch order, so the first wave comes first.
    """

    stage_ids: tuple[int, ...]
    name: str
    tasks: int
    durations: tuple[float, ...]
    parents: tuple[int, ...]
    input_bytes: int = 0
    phase: str | None = None  # the phase's name when not stage-<id> (MapReduce: map, reduce)


@dataclass(frozen=True)
class JobRecord:
    """One job as it ran: its stages, its delay (s) and the jobs of the run it waited for.

    ``delay`` is the driver's share: the wait before the job was submitted
    (after what it depends on ended; think time excluded) plus the time during
    the job when none of its stages had a task running. ``after`` are
    positions of earlier jobs in the run.
    """

    job_ids: tuple[int, ...]
    stages: tuple[StageRecord, ...]
    delay: float
    after: tuple[int, ...]
    inferred_dag: bool = False


@dataclass(frozen=True)
class Run:
    """One run of what is modelled: a whole application (or job history), or one query repetition."""

    source: str
    label: str
    framework: str
    jobs: tuple[JobRecord, ...]
    end_delay: float
    input_bytes: int
    containers: int | None
    containers_how: str
    span: float | None
    stream: str | None = None
    notes: tuple[str, ...] = ()

    def signature(self) -> tuple:
        """What must agree for runs to be pooled: jobs, their order, stages, task counts and DAG."""
        return tuple(
            (job.after, tuple((s.tasks, s.parents) for s in job.stages)) for job in self.jobs
        )


# --------------------------------------------------------------------------
# Reading logs
# --------------------------------------------------------------------------


def _log_kind(path: Path) -> str:
    """``"spark"`` or ``"jhist"`` from the first bytes (a .jhist starts with ``Avro-``)."""
    if not path.exists():
        raise LogFormatError(f"{path}: no such file or directory")
    if path.is_dir():
        return "spark"
    try:
        with open(path, "rb") as probe:
            head = probe.read(16)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as probe:
                head = probe.read(16)
    except (OSError, EOFError) as error:
        raise LogFormatError(f"{path}: cannot read: {error}") from None
    return "jhist" if head.startswith(b"Avro-") else "spark"


def _read(path: Path, kind: str):
    if kind == "jhist":
        from spn.io.jhist import read_jhist

        return read_jhist(path)
    from spn.io.sparklog import read_spark_log

    return read_spark_log(path)


def load_runs(path, *, allow_incomplete: bool = False, stage_groups: bool = False) -> Run:
    """The whole application of a Spark log (or the job of a ``.jhist``) as one :class:`Run`.

    Raises :class:`~spn.exceptions.LogFormatError` when the file is not a log,
    when the application did not finish (crashed, killed or still running;
    ``allow_incomplete=True`` keeps the jobs that did), when a stage's parent
    never ran and no job declares it, or when no job succeeded.
    """
    path = Path(path)
    kind = _log_kind(path)
    log = _read(path, kind)
    if kind == "jhist":
        return _jhist_run(log)
    jobs = _spark_jobs(log, allow_incomplete=allow_incomplete, stage_groups=stage_groups)
    return _spark_run(log, jobs)


@dataclass
class _SparkJob:
    """A modelled Spark job with its times (ms), before it becomes a JobRecord."""

    job_id: int
    submit: int
    complete: int
    stages: list
    covered: float  # seconds of the job's span with a task of it running
    inferred: bool
    group: str | None
    failed: bool = False


def _spark_jobs(app, *, allow_incomplete: bool, stage_groups: bool) -> list[_SparkJob]:
    """The jobs of a Spark application that can be modelled, with their stages; raises on a broken log."""
    from spn.io.sparklog import _parents_of, job_span_ms, stage_dag, stage_jobs

    where = f"{app.path}"
    ran = set(app.stage_ids())
    declared = set(app.declared_parents) | {s for job in app.jobs for s in job.stage_ids}
    for stage_id in sorted(ran):
        for parent in _parents_of(app, stage_id) or ():
            if parent not in ran and parent not in declared:
                raise LogFormatError(
                    f"{where}: stage {stage_id}: parent stage {parent} never ran and no job declares it "
                    "(the log is incomplete or inconsistent): cannot build the stage DAG"
                )
    incomplete = [f"job {job.job_id} has no JobEnd" for job in app.jobs if job.result is None]
    completed = {s.stage_id for s in app.stages if s.completion_ms is not None}
    incomplete += [f"stage {s} never completed" for s in sorted(ran - completed)]
    if incomplete and not allow_incomplete:
        shown = "; ".join(incomplete[:3]) + (f"; and {len(incomplete) - 3} more" if len(incomplete) > 3 else "")
        raise LogFormatError(
            f"{where}: the application did not finish (crashed, killed or still running): {shown}; "
            "fit the jobs that finished with --allow-incomplete"
        )
    owner = stage_jobs(app)
    dag = stage_dag(app)
    durations = _durations_by_launch(app)
    spans = _task_spans(app)
    input_bytes = Counter()
    for task in app.tasks:
        if task.successful:
            input_bytes[task.stage_id] += task.input_bytes
    num_tasks = defaultdict(int)
    names = {}
    first_submit, last_complete = {}, {}
    for stage in app.stages:
        num_tasks[stage.stage_id] = max(num_tasks[stage.stage_id], stage.num_tasks)
        names.setdefault(stage.stage_id, stage.name)
        if stage.submission_ms is not None:
            first_submit[stage.stage_id] = min(first_submit.get(stage.stage_id, stage.submission_ms),
                                               stage.submission_ms)
        if stage.completion_ms is not None:
            last_complete[stage.stage_id] = max(last_complete.get(stage.stage_id, stage.completion_ms),
                                                stage.completion_ms)
    jobs = []
    for job in app.jobs:
        if job.result is None:
            continue  # only with allow_incomplete
        own = sorted(s for s in ran if owner[s] == job.job_id)
        if any(s not in completed for s in own):
            continue
        start, end = job_span_ms(app, job.job_id)
        if not own or start is None or end is None:
            continue
        failed = job.result != "JobSucceeded"
        parents_known = all(_parents_of(app, s) is not None for s in own)
        position = {s: i for i, s in enumerate(own)}
        if parents_known:
            parents = {s: tuple(sorted(position[p] for p in dag.predecessors(s) if p in position)) for s in own}
        else:
            parents = _parents_from_times(own, first_submit, last_complete, position)
        stages = [
            StageRecord(
                stage_ids=(s,), name=names.get(s, ""), tasks=max(num_tasks[s], 1),
                durations=tuple(float(d) for d in duration_floor(durations.get(s, ()))) if durations.get(s) else (),
                parents=parents[s], input_bytes=int(input_bytes[s]),
            )
            for s in own
        ]
        covered = _covered_seconds([spans[s] for s in own if s in spans], start, end)
        if stage_groups:
            stages = _merge_groups(app, own, stages)
        jobs.append(_SparkJob(job.job_id, start, end, stages, covered, not parents_known, job.group, failed))
    return jobs


def _durations_by_launch(app) -> dict[int, tuple[float, ...]]:
    """Wall times (s) of each stage's successful task attempts, in launch order (the first wave first)."""
    tasks = {}
    for task in app.tasks:
        if task.successful:
            tasks.setdefault(task.stage_id, []).append(task)
    return {s: tuple(t.duration for t in sorted(ts, key=lambda t: (t.launch_ms, t.index)))
            for s, ts in tasks.items()}


def _task_spans(app) -> dict[int, tuple[int, int]]:
    """``stage -> (first launch, last finish)`` in ms over all its task attempts."""
    spans = {}
    for task in app.tasks:
        low, high = spans.get(task.stage_id, (task.launch_ms, task.finish_ms))
        spans[task.stage_id] = (min(low, task.launch_ms), max(high, task.finish_ms))
    return spans


def _covered_seconds(intervals, start: int, end: int) -> float:
    """Seconds of [start, end] covered by the union of ``intervals`` (ms)."""
    clipped = sorted((max(a, start), min(b, end)) for a, b in intervals if min(b, end) > max(a, start))
    total, current = 0, None
    for a, b in clipped:
        if current is None or a > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [a, b]
        else:
            current[1] = max(current[1], b)
    if current is not None:
        total += current[1] - current[0]
    return total / 1000.0


def _parents_from_times(own, first_submit, last_complete, position) -> dict[int, tuple[int, ...]]:
    """Spark 1.x (no Parent IDs): stages grouped by overlapping run times; each group after the previous."""
    order = sorted(own, key=lambda s: (first_submit.get(s, 0), s))
    groups, group_end = [], None
    for s in order:
        start, end = first_submit.get(s, 0), last_complete.get(s, first_submit.get(s, 0))
        if groups and group_end is not None and start < group_end:
            groups[-1].append(s)
            group_end = max(group_end, end)
        else:
            groups.append([s])
            group_end = end
    parents = {}
    for g, members in enumerate(groups):
        before = tuple(sorted(position[p] for p in groups[g - 1])) if g else ()
        for s in members:
            parents[s] = before
    return parents


def _merge_groups(app, own, stages) -> list[StageRecord]:
    """Stages of one job that ran at the same time, merged into one record each (PERIDOT's stage groups)."""
    from spn.io.sparklog import concurrent_stages

    position = {s: i for i, s in enumerate(own)}
    graph = nx.Graph()
    graph.add_nodes_from(range(len(own)))
    graph.add_edges_from((position[a], position[b]) for a, b in concurrent_stages(app)
                         if a in position and b in position)
    groups = sorted((sorted(c) for c in nx.connected_components(graph)), key=lambda c: c[0])
    group_of = {i: g for g, members in enumerate(groups) for i in members}
    merged = []
    for members in groups:
        parts = [stages[i] for i in members]
        parents = sorted({group_of[p] for part in parts for p in part.parents} - {group_of[members[0]]})
        merged.append(StageRecord(
            stage_ids=tuple(s for part in parts for s in part.stage_ids),
            name=" + ".join(part.name for part in parts) if len(parts) > 1 else parts[0].name,
            tasks=sum(part.tasks for part in parts),
            durations=tuple(d for part in parts for d in part.durations),
            parents=tuple(parents),
            input_bytes=sum(part.input_bytes for part in parts),
        ))
    check = nx.DiGraph()
    check.add_nodes_from(range(len(merged)))
    check.add_edges_from((p, i) for i, record in enumerate(merged) for p in record.parents)
    if not nx.is_directed_acyclic_graph(check):
        raise LogFormatError(f"{app.path}: merging concurrent stages into groups made a cycle; fit without "
                             "--stage-groups")
    return merged


def _job_order(jobs) -> list[tuple[int, ...]]:
    """For each job, the earlier jobs it waited for: those that had ended when it was submitted (reduced)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(jobs)))
    for j, job in enumerate(jobs):
        for i in range(j):
            if jobs[i].complete <= job.submit:
                graph.add_edge(i, j)
    reduced = nx.transitive_reduction(graph)
    return [tuple(sorted(reduced.predecessors(j))) for j in range(len(jobs))]


def _spark_containers(app) -> tuple[int | None, str]:
    from spn.io.sparklog import max_concurrent_tasks, max_executor_cores

    cores = max_executor_cores(app)
    if cores:
        return cores, "most executor cores alive at once (ExecutorAdded/Removed)"
    if app.executor_cores and app.executor_instances:
        return (app.executor_cores * app.executor_instances,
                "spark.executor.cores x spark.executor.instances")
    match = re.fullmatch(r"local\[(\d+)(?:,\s*\d+)?\]", app.master or "")
    if match:
        return int(match.group(1)), f"master {app.master}"
    if app.master == "local":
        return 1, "master local"
    concurrent = max_concurrent_tasks(app)
    if concurrent:
        return concurrent, "most tasks running at once (no executor cores in the log)"
    return None, "unknown"


def _app_label(app) -> str:
    return (f"Spark application {app.app_id or '?'}" + (f" ({app.name})" if app.name else "")
            + (f", Spark {app.spark_version}" if app.spark_version else ""))


def _spark_run(app, jobs: list[_SparkJob]) -> Run:
    modelled = [job for job in jobs if not job.failed]
    failed = [job for job in jobs if job.failed]
    if not modelled:
        raise LogFormatError(f"{app.path}: no job of the application succeeded: nothing to model")
    modelled.sort(key=lambda job: (job.submit, job.job_id))
    after = _job_order(modelled)
    app_start = app.start_ms if app.start_ms is not None else min(job.submit for job in modelled)
    records = []
    for j, job in enumerate(modelled):
        ready = max((modelled[i].complete for i in after[j]), default=app_start)
        gap = max(job.submit - ready, 0) / 1000.0
        idle = max((job.complete - job.submit) / 1000.0 - job.covered, 0.0)
        records.append(JobRecord((job.job_id,), tuple(job.stages), gap + idle, after[j], job.inferred))
    last = max(job.complete for job in modelled)
    end_delay = max(app.end_ms - last, 0) / 1000.0 if app.end_ms is not None else 0.0
    span = (app.end_ms - app_start) / 1000.0 if app.end_ms is not None else (last - app_start) / 1000.0
    containers, how = _spark_containers(app)
    notes = [f"job {job.job_id} failed: not modelled as stages; its time is part of the next job's delay"
             for job in failed]
    if app.end_ms is None:
        notes.append("no ApplicationEnd in the log: the model ends with the last job")
    return Run(
        source=app.path, label=_app_label(app),
        framework="spark", jobs=tuple(records), end_delay=end_delay, input_bytes=_input_size(records),
        containers=containers, containers_how=how, span=span, notes=tuple(notes),
    )


def _input_size(records) -> int:
    """The input size of a run: the most bytes one stage read (Input Metrics).

    Not the sum over stages: an application that scans its input twice read
    it once as far as its size is concerned. With several inputs, the
    largest one stands for all (they are assumed to grow together).
    """
    return max((s.input_bytes for r in records for s in r.stages), default=0)


def _jhist_run(job) -> Run:
    """A MapReduce job history as a run: map phase, then reduce phase (when it has reduces)."""
    if job.status != "SUCCEEDED":
        if job.finish_ms is None:
            raise LogFormatError(f"{job.path}: the job did not finish (crashed, killed or still running): "
                                 f"last status {job.status or 'unknown'}")
        raise LogFormatError(f"{job.path}: the job ended {job.status}: nothing to model")
    maps = [a for a in job.map_attempts if a.duration is not None]
    reduces = [a for a in job.reduce_attempts if a.duration is not None]
    good_maps = [a for a in maps if a.status == "SUCCEEDED"]
    if not good_maps:
        raise LogFormatError(f"{job.path}: no successful map attempt: nothing to model")
    last_map = max(a.finish_ms for a in good_maps)
    stages = [StageRecord((0,), "map", max(job.total_maps or 0, 1),
                          tuple(duration_floor([a.duration for a in good_maps])), (),
                          sum(a.bytes_read for a in good_maps), phase="map")]
    notes = []
    good_reduces = [a for a in reduces if a.status == "SUCCEEDED"]
    if (job.total_reduces or 0) > 0 and good_reduces:
        # reduces start early (slow start) and wait for maps: only their time after the last map counts
        effective = [(a.finish_ms - max(a.start_ms, last_map)) / 1000.0 for a in good_reduces]
        stages.append(StageRecord((1,), "reduce", job.total_reduces, tuple(duration_floor(effective)), (0,),
                                  phase="reduce"))
        if any(a.start_ms < last_map for a in good_reduces):
            notes.append("reduce attempts that started before the last map ended are timed from that end "
                         "(their earlier part only waited for map output)")
    spans = [(min(a.start_ms for a in good_maps), last_map)]
    if len(stages) > 1:
        spans.append((last_map, max(a.finish_ms for a in good_reduces)))
    start = job.submit_ms if job.submit_ms is not None else spans[0][0]
    end = job.finish_ms
    delay = max((end - start) / 1000.0 - _covered_seconds(spans, start, end), 0.0)
    concurrent = _most_at_once([(a.start_ms, a.finish_ms) for a in maps + reduces])
    return Run(
        source=job.path, label=f"MapReduce job {job.job_id or '?'}" + (f" ({job.name})" if job.name else ""),
        framework="mapreduce", jobs=(JobRecord((0,), tuple(stages), delay, ()),), end_delay=0.0,
        input_bytes=stages[0].input_bytes, containers=concurrent or None,
        containers_how="most task attempts running at once (a .jhist does not say the queue's size)",
        span=(end - start) / 1000.0, notes=tuple(notes),
    )


def _most_at_once(intervals) -> int:
    changes = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    running = most = 0
    for _, change in changes:
        running += change
        most = max(most, running)
    return most


# --------------------------------------------------------------------------
# Repeated queries inside one application
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryRuns:
    """The repetitions of one query found in a log, and what they say about the users."""

    runs: tuple[Run, ...]
    think_gaps: tuple[float, ...]
    streams: int
    skipped_jobs: int
    jobs_per_query: int
    overlapping: bool


def query_runs(path, *, allow_incomplete: bool = False, stage_groups: bool = False,
               warmup_runs: int = 0) -> QueryRuns:
    """The repetitions of the query a Spark application ran many times.

    Users are told apart by job group (``spark.jobGroup.id``, set per thread
    by ``setJobGroup``); without groups all jobs are one user. The query is
    the shortest pattern of jobs (same stage names, task counts and DAG) that
    repeats most often; jobs outside it (set-up) are left out, and so are the
    first ``warmup_runs`` runs of the query in time order (a cold JVM). Think
    gaps: from the end of a user's query to that user's next submission.
    """
    path = Path(path)
    kind = _log_kind(path)
    if kind != "spark":
        raise LogFormatError(f"{path}: --per-query needs a Spark event log; a .jhist holds one job "
                             "(give the .jhist files of the repetitions together instead)")
    app = _read(path, kind)
    jobs = [job for job in _spark_jobs(app, allow_incomplete=allow_incomplete, stage_groups=stage_groups)
            if not job.failed]
    if not jobs:
        raise LogFormatError(f"{path}: no job of the application succeeded: nothing to model")
    jobs.sort(key=lambda job: (job.submit, job.job_id))
    streams = defaultdict(list)
    for job in jobs:
        streams[job.group].append(job)

    def signature(job):
        return tuple((s.name, s.tasks, s.parents) for s in job.stages)

    best = None  # (repetitions, -length, pattern)
    for stream in streams.values():
        sigs = [signature(job) for job in stream]
        for length in range(1, len(sigs) // 2 + 1):
            counts = Counter(tuple(sigs[i:i + length]) for i in range(len(sigs) - length + 1))
            pattern, _ = counts.most_common(1)[0]
            repetitions = _count_runs(sigs, pattern)
            candidate = (repetitions, -length, pattern)
            if repetitions >= 2 and (best is None or candidate[:2] > best[:2]):
                best = candidate
    if best is None:
        raise LogFormatError(
            f"{path}: --per-query found no query that ran twice or more (jobs grouped by "
            "spark.jobGroup.id when set): nothing repeats"
        )
    pattern = best[2]
    length = len(pattern)
    containers, how = _spark_containers(app)
    chunks, gaps, skipped = [], [], 0  # gaps: (chunk before, chunk after, seconds)
    overlapping = False
    users = set()
    for group, stream in streams.items():
        sigs = [signature(job) for job in stream]
        for a, b in zip(stream, stream[1:]):
            overlapping |= b.submit < a.complete
        i, previous = 0, None  # previous: (chunk index, position after it)
        while i < len(stream):
            if tuple(sigs[i:i + length]) != pattern:
                skipped += 1
                i += 1
                continue
            chunk = stream[i:i + length]
            if previous is not None and previous[1] == i:
                before = chunks[previous[0]][1]
                gaps.append((previous[0], len(chunks),
                             max(chunk[0].submit - max(job.complete for job in before), 0) / 1000.0))
            previous = (len(chunks), i + length)
            chunks.append((group, chunk))
            users.add(group)
            i += length
    order = sorted(range(len(chunks)), key=lambda c: (chunks[c][1][0].submit, c))
    dropped = set(order[:warmup_runs])
    if len(order) - len(dropped) < 1:
        raise LogFormatError(f"{path}: {len(order)} runs of the query, all left out as warm-up (--warmup-runs)")
    runs = tuple(_query_run(app, chunks[c][1], rank, chunks[c][0], containers, how)
                 for rank, c in enumerate(order) if c not in dropped)
    kept_gaps = tuple(g for a, b, g in gaps if a not in dropped and b not in dropped)
    users = {chunks[c][0] for c in order if c not in dropped}
    return QueryRuns(runs, kept_gaps, len(users), skipped + sum(len(chunks[c][1]) for c in dropped),
                     length, overlapping)


def _count_runs(sigs, pattern) -> int:
    i = count = 0
    while i <= len(sigs) - len(pattern):
        if tuple(sigs[i:i + len(pattern)]) == pattern:
            count += 1
            i += len(pattern)
        else:
            i += 1
    return count


def _query_run(app, chunk, index, group, containers, how) -> Run:
    after = _job_order(chunk)
    records = []
    for j, job in enumerate(chunk):
        gap = 0.0
        if after[j]:
            gap = max(job.submit - max(chunk[i].complete for i in after[j]), 0) / 1000.0
        idle = max((job.complete - job.submit) / 1000.0 - job.covered, 0.0)
        records.append(JobRecord((job.job_id,), tuple(job.stages), gap + idle, after[j], job.inferred))
    start = min(job.submit for job in chunk)
    end = max(job.complete for job in chunk)
    return Run(
        source=app.path, label=f"{_app_label(app)}, query run {index + 1}", framework="spark", jobs=tuple(records),
        end_delay=0.0, input_bytes=_input_size(records),
        containers=containers, containers_how=how, span=(end - start) / 1000.0, stream=group,
    )


# --------------------------------------------------------------------------
# Runs -> description
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FittedModel:
    """A fitted description (``description``, a plain mapping) with its provenance comments.

    ``header`` are comment lines for the top of the file; ``phase_notes``
    maps a phase name to the comment printed above it.
    """

    description: dict
    header: tuple[str, ...]
    phase_notes: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_yaml(self) -> str:
        """The description as YAML, with the provenance as comments."""
        return _to_yaml(self)


def fit_logs(paths, *, per_query: bool = False, input_size=None, max_shape: int = 10, method: str = "mle",
             empirical: bool = False, think_time: float | None = None, users: int | None = None,
             containers: int | None = None, stage_groups: bool = False, delays: bool = True,
             allow_incomplete: bool = False, name: str | None = None, warmup_runs: int = 0) -> FittedModel:
    """Fit a model description to one or more logs (see the module doc for the three modes).

    ``max_shape`` caps every Erlang shape (delays get exactly ``max_shape``);
    ``empirical=True`` writes the measured samples (``distribution:
    empirical``) for ``spn simulate`` instead of Erlang laws; ``think_time``
    overrides the estimate (required when none can be made and more than one
    user is asked for); ``users`` defaults to the users seen (per query) or 1;
    ``containers`` overrides the cores read from the log; ``warmup_runs``
    (per query) leaves out the first runs of the query in each log.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ModelError("give at least one log")
    if int(max_shape) != max_shape or max_shape < 1:
        raise ModelError(f"--max-shape must be an integer >= 1, got {max_shape!r}")
    if warmup_runs and not per_query:
        raise ModelError("--warmup-runs applies to --per-query only")
    if per_query and input_size is not None:
        raise ModelError("--per-query and --input-size cannot be combined: fit one question at a time")
    notes = []
    if per_query:
        found = [query_runs(p, allow_incomplete=allow_incomplete, stage_groups=stage_groups,
                            warmup_runs=warmup_runs) for p in paths]
        runs = [run for f in found for run in f.runs]
        gaps = [g for f in found for g in f.think_gaps]
        seen_users = max(f.streams for f in found)
        for p, f in zip(paths, found):
            notes.append(f"{p.name}: {len(f.runs)} runs of a {f.jobs_per_query}-job query by {f.streams} "
                         f"user(s) (job groups); {f.skipped_jobs} other job(s) left out")
        if think_time is None:
            if not gaps or any(f.overlapping and f.streams == 1 for f in found):
                raise ModelError(
                    "cannot estimate the think time from the log (the queries of one user never follow one "
                    "another, or jobs of several users overlap without job groups): give --think-time"
                )
            think_time = float(np.mean(gaps))
            think_how = f"mean of {len(gaps)} gaps between a user's query end and next submission"
        else:
            think_how = "given (--think-time)"
        users = users or seen_users
    else:
        runs = [load_runs(p, allow_incomplete=allow_incomplete, stage_groups=stage_groups) for p in paths]
        kinds = {run.framework for run in runs}
        if len(kinds) > 1:
            raise LogFormatError("the logs mix Spark event logs and MapReduce job histories: fit them apart")
        think_how = "given (--think-time)" if think_time is not None else (
            "placeholder: with 1 user the think time does not change the mean execution time; "
            "set it for several users")
        think_time = 1.0 if think_time is None else think_time
        users = users or 1
    for run in runs:
        for note in run.notes:
            notes.append(f"{Path(run.source).name}: {note}")
    if input_size is not None:
        template = _scaled_template(runs, parse_size(input_size), method=method, max_shape=max_shape)
    else:
        template = _pooled_template(runs, method=method, max_shape=max_shape)
    return _describe(runs, template, paths=paths, per_query=per_query, think_time=think_time,
                     think_how=think_how, users=users, containers=containers, max_shape=max_shape,
                     empirical=empirical, delays=delays, method=method, name=name, notes=notes,
                     input_size=None if input_size is None else parse_size(input_size))


@dataclass
class _Phase:
    """A phase of the template: the fitted law and where it came from."""

    name: str
    kind: str  # "stage" | "delay"
    tasks: int
    fit: object  # PhaseFit
    stage_ids: tuple = ()
    stage_name: str = ""
    samples_from: int = 0
    scaling: str | None = None
    notes: tuple = ()


def _check_same_structure(runs, *, tasks_may_differ: bool) -> None:
    first = runs[0]
    for run in runs[1:]:
        problem = None
        if len(run.jobs) != len(first.jobs):
            problem = f"{len(run.jobs)} jobs vs {len(first.jobs)}"
        else:
            for j, (a, b) in enumerate(zip(first.jobs, run.jobs)):
                if len(a.stages) != len(b.stages):
                    problem = f"job #{j + 1}: {len(b.stages)} stages vs {len(a.stages)}"
                elif a.after != b.after:
                    problem = f"job #{j + 1} waits for other jobs ({b.after} vs {a.after})"
                else:
                    for k, (s, t) in enumerate(zip(a.stages, b.stages)):
                        if s.parents != t.parents:
                            problem = f"job #{j + 1}, stage #{k + 1}: parents differ"
                        elif not tasks_may_differ and s.tasks != t.tasks:
                            problem = (f"job #{j + 1}, stage #{k + 1}: {t.tasks} tasks vs {s.tasks} (to predict "
                                       "another input size from logs at different sizes, give --input-size)")
                        if problem:
                            break
                if problem:
                    break
        if problem:
            raise LogFormatError(
                f"{run.source} ({run.label}) and {first.source} ({first.label}) are not runs of the same "
                f"application: {problem}"
            )


def _stage_name(stage: StageRecord) -> str:
    if stage.phase:
        return stage.phase
    return "stage-" + "-".join(str(s) for s in stage.stage_ids) if len(stage.stage_ids) <= 3 else (
        f"stages-{stage.stage_ids[0]}-to-{stage.stage_ids[-1]}")


def _pooled_template(runs, *, method, max_shape):
    """Phases for runs of one structure: samples pooled per stage position."""
    _check_same_structure(runs, tasks_may_differ=False)
    first = runs[0]
    jobs = []
    for j, job in enumerate(first.jobs):
        stages = []
        for k, stage in enumerate(job.stages):
            groups = [run.jobs[j].stages[k].durations for run in runs]
            groups = [g for g in groups if g]
            if not groups:
                raise LogFormatError(f"{first.source}: {_stage_name(stage)} has no successful task attempt to fit")
            # repetitions of one configuration: one law, so the raw durations are pooled as they are
            phase_fit = fit_phase(np.concatenate([np.asarray(g, dtype=float) for g in groups]), method=method,
                                  max_shape=max_shape)
            stages.append(_Phase(_stage_name(stage), "stage", stage.tasks, phase_fit, stage.stage_ids, stage.name,
                                 len(groups)))
        delays = [run.jobs[j].delay for run in runs]
        jobs.append((job, stages, delays))
    end_delays = [run.end_delay for run in runs]
    return jobs, end_delays


def _scaled_template(runs, target: int, *, method, max_shape):
    """Phases for a target input size from runs at different input sizes (fixed and variable stages)."""
    if len(runs) < 2:
        raise ModelError("--input-size needs two or more logs of the same application at different input sizes")
    _check_same_structure(runs, tasks_may_differ=True)
    sizes = np.array([run.input_bytes for run in runs], dtype=float)
    for run, size in zip(runs, sizes):
        if size <= 0:
            raise LogFormatError(f"{run.source}: the log reports no input bytes read (Input Metrics): its input "
                                 "size is unknown, so it cannot anchor a prediction for --input-size")
    if np.ptp(sizes) <= 0.01 * sizes.mean():
        raise LogFormatError("the logs read the same input size "
                             f"({', '.join(format_size(s) for s in sizes)}): --input-size needs different sizes")
    first = runs[0]
    jobs = []
    for j, job in enumerate(first.jobs):
        stages = []
        for k, stage in enumerate(job.stages):
            records = [run.jobs[j].stages[k] for run in runs]
            counts = np.array([r.tasks for r in records], dtype=float)
            groups = [r.durations for r in records]
            if any(not g for g in groups):
                raise LogFormatError(f"{first.source}: {_stage_name(stage)} has no successful task attempt in "
                                     "every log")
            means = np.array([np.mean(g) for g in groups])
            if np.all(counts == counts[0]):
                kind, tasks = "fixed", int(counts[0])
                mean, how = _fixed_stage_mean(groups, sizes, target)
            else:
                kind = "variable"
                slope, intercept = np.polyfit(sizes, counts, 1)
                tasks = max(1, int(round(intercept + slope * target)))
                mean, rule = _variable_stage_mean(groups, [run.containers or 1 for run in runs], tasks)
                how = (f"tasks {', '.join(str(int(c)) for c in counts)} at "
                       f"{', '.join(format_size(s) for s in sizes)} -> {tasks} at {format_size(target)} "
                       f"(linear in input size); {rule}")
            phase_fit = fit_pooled(groups, mean=mean, method=method, max_shape=max_shape)
            note = f"{kind}: {how}; mean task time per log {', '.join(f'{m:.4g}' for m in means)} s"
            stages.append(_Phase(_stage_name(stage), "stage", tasks, phase_fit, stage.stage_ids, stage.name,
                                 len(groups), kind, (note,)))
        delays = [run.jobs[j].delay for run in runs]
        jobs.append((job, stages, delays))
    end_delays = [run.end_delay for run in runs]
    return jobs, end_delays


def _variable_stage_mean(groups, cores, tasks: int) -> tuple[float, str]:
    """Mean task time of a variable stage with ``tasks`` tasks, from its durations (launch order) per log.

    A task's cost is taken as constant (PERIDOT's constant wave time) once
    the executors are warm: ``b``, the mean of the tasks launched after the
    first wave (the first ``cores`` tasks) of every log. The first wave of a
    fresh JVM is slower (class loading, interpreted code); its excess over
    ``b`` is paid once per run, ``a`` (mean over the logs, >= 0), so the mean
    at ``tasks`` tasks is ``b + a / tasks``. When no log has a task after its
    first wave, the pooled mean is used.
    """
    warm = [np.asarray(g[c:], dtype=float) for g, c in zip(groups, cores)]
    pooled = float(np.concatenate([np.asarray(g, dtype=float) for g in groups]).mean())
    if sum(w.size for w in warm) == 0:
        return pooled, "task time pooled over the logs (constant per task; no log has a second wave)"
    b = float(np.concatenate(warm).mean())
    excess = [float(np.sum(g[:c]) - min(c, len(g)) * b) for g, c in zip(groups, cores)]
    a = max(float(np.mean(excess)), 0.0)
    mean = b + a / tasks
    return mean, (f"task time: {b:.4g} s per warm task (after the first wave) + {a:.4g} s once for the cold "
                  f"first wave -> mean {mean:.4g} s")


def _fixed_stage_mean(groups, sizes, target) -> tuple[float, str]:
    """Mean task time of a fixed stage at ``target``: pooled, unless it clearly grows with the input size."""
    x = np.concatenate([np.full(len(g), s) for g, s in zip(groups, sizes)])
    y = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    pooled = float(y.mean())
    means = [float(np.mean(g)) for g in groups]
    if len(y) >= 3 and np.ptp(x) > 0:
        fit = scipy.stats.linregress(x, y)
        change = fit.slope * np.ptp(sizes) / pooled
        if fit.pvalue < 0.01 and fit.slope > 0 and change > 0.10:
            predicted = max(float(fit.intercept + fit.slope * target), min(means) * 0.5)
            return predicted, (f"task count unchanged; task time grows with input size "
                               f"(slope p={fit.pvalue:.2g}): extrapolated linearly to {predicted:.4g} s")
    return pooled, "task count unchanged: task time pooled over the logs"


def _describe(runs, template, *, paths, per_query, think_time, think_how, users, containers, max_shape,
              empirical, delays, method, name, notes, input_size) -> FittedModel:
    jobs, end_delays = template
    first = runs[0]
    phases, edges, phase_notes = [], [], {}
    warnings_out = list(notes)
    job_entries, job_exits = [], []
    used_names = set()

    def unique(base):
        candidate, n = base, 2
        while candidate in used_names:
            candidate, n = f"{base}-{n}", n + 1
        used_names.add(candidate)
        return candidate

    for j, (job, stages, job_delays) in enumerate(jobs):
        names = [unique(stage.name) for stage in stages]
        for stage, phase_name in zip(stages, names):
            stage.name = phase_name
            phases.append(stage)
        for k, record in enumerate(job.stages):
            for p in record.parents:
                edges.append((names[p], names[k]))
        sources = [names[k] for k, record in enumerate(job.stages) if not record.parents]
        children = {p for record in job.stages for p in record.parents}
        sinks = [names[k] for k in range(len(job.stages)) if k not in children]
        entry = sources
        positive = [d for d in job_delays if d > 0]
        if delays and positive and np.mean(job_delays) >= MIN_DELAY_S:
            delay_name = unique(f"driver-job{job.job_ids[0]}")
            phases.append(_Phase(delay_name, "delay", 1, fit_delay(job_delays, max_shape=max_shape),
                                 samples_from=len(job_delays)))
            edges += [(delay_name, s) for s in sources]
            entry = [delay_name]
        job_entries.append(entry)
        job_exits.append(sinks)
        for i in job.after:
            edges += [(a, b) for a in job_exits[i] for b in entry]
    if delays and np.mean(end_delays) >= MIN_DELAY_S and any(d > 0 for d in end_delays):
        later = {i for job, _, _ in jobs for i in job.after}
        last_exits = [s for j, exits in enumerate(job_exits) if j not in later for s in exits]
        end_name = unique("driver-end")
        phases.append(_Phase(end_name, "delay", 1, fit_delay(end_delays, max_shape=max_shape),
                             samples_from=len(end_delays)))
        edges += [(s, end_name) for s in last_exits]

    cores = [run.containers for run in runs if run.containers]
    if containers is None:
        if not cores:
            raise LogFormatError(f"{first.source}: the log does not say how many cores the application had: "
                                 "give --containers")
        containers = cores[0]
        containers_how = first.containers_how
        if len(set(cores)) > 1:
            warnings_out.append(f"the logs ran with different core counts {sorted(set(cores))}: the model uses "
                                f"{containers} (the first log's); --containers sets another")
    else:
        containers_how = "given (--containers)"

    description = {
        "name": name or _model_name(first, per_query),
        "framework": first.framework,
        "workload": {"users": int(users), "think_time": float(_round(think_time))},
        "cluster": {"containers": int(containers)},
        "phases": [],
        "edges": [list(e) for e in dict.fromkeys(edges)],
    }
    provenance = {}
    for phase in phases:
        entry = _phase_entry(phase, empirical=empirical)
        description["phases"].append(entry)
        phase_notes[phase.name] = _phase_comment(phase, max_shape=max_shape)
        provenance[phase.name] = _phase_provenance(phase)
    if not description["edges"]:
        del description["edges"]
    description["reference"] = _reference(runs, paths=paths, per_query=per_query, input_size=input_size,
                                          think_time=think_time, provenance=provenance)
    header = _header(runs, paths=paths, per_query=per_query, input_size=input_size, max_shape=max_shape,
                     method=method, empirical=empirical, delays=delays, containers_how=containers_how,
                     think_how=think_how, phases=phases)
    from spn.io.description import parse_description

    parse_description(description)  # what we write must be a valid description
    return FittedModel(description, tuple(header), phase_notes, tuple(warnings_out))


def _model_name(run: Run, per_query: bool) -> str:
    stem = Path(run.source).name
    for suffix in (".gz", ".json", ".jhist", ".inprogress"):
        stem = stem.removesuffix(suffix)
    stem = stem.removeprefix("eventlog_v2_")
    return stem + ("-query" if per_query else "")


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def _phase_entry(phase: _Phase, *, empirical: bool) -> dict:
    fit = phase.fit.fit
    entry = {"name": phase.name, "tasks": int(phase.tasks), "task_time": _round(fit.mean)}
    if empirical:
        samples = [_round(s) for s in phase.fit.samples]
        if len(set(samples)) == 1 and phase.kind == "delay":
            entry["distribution"] = "deterministic"
        else:
            entry["distribution"] = "empirical"
            entry["samples"] = samples
    else:
        entry["shape"] = int(fit.shape)
    return entry


def _phase_comment(phase: _Phase, *, max_shape: int) -> list[str]:
    fit = phase.fit.fit
    if phase.kind == "delay":
        values = ", ".join(f"{s:.4g}" for s in phase.fit.samples[:6])
        more = ", ..." if len(phase.fit.samples) > 6 else ""
        return [f"delay (no task of the job running: driver, scheduling, start-up): {values}{more} s "
                f"in {phase.samples_from} run(s); 1 task, Erlang shape {fit.shape} (= --max-shape, nearly constant)"]
    samples = np.asarray(phase.fit.samples)
    cv = float(samples.std(ddof=1) / samples.mean()) if samples.size > 1 else float("nan")
    ks = "n/a" if fit.ks is None else f"{fit.ks:.3f}"
    uncapped = phase.fit.uncapped_shape or 0
    capped = (f", capped; the data ask for {uncapped}" + ("+ (nearly constant)" if uncapped >= 1000 else "")
              if phase.fit.capped else "")
    label = phase.stage_name[:70] + ("..." if len(phase.stage_name) > 70 else "")
    lines = [f"stage id(s) {', '.join(map(str, phase.stage_ids))} \"{label}\": {fit.n} task samples"
             + (f" from {phase.samples_from} runs" if phase.samples_from > 1 else "")
             + f", mean {fit.mean:.4g} s, cv {cv:.3g}; Erlang shape {fit.shape} ({fit.method}{capped}), KS {ks}"]
    lines += list(phase.notes)
    return lines


def _phase_provenance(phase: _Phase) -> dict:
    fit = phase.fit.fit
    entry = {"kind": phase.kind, "samples": int(fit.n), "mean_s": _round(fit.mean), "shape": int(fit.shape)}
    if phase.kind == "stage":
        entry["stage_ids"] = [int(s) for s in phase.stage_ids]
        entry["shape_uncapped"] = int(phase.fit.uncapped_shape or fit.shape)
        entry["ks"] = None if fit.ks is None else _round(fit.ks)
        if phase.scaling:
            entry["scaling"] = phase.scaling
    return entry


def _reference(runs, *, paths, per_query, input_size, think_time, provenance) -> dict:
    reference = {"fitted_by": "spn fit", "logs": [str(p) for p in paths]}
    spans = [run.span for run in runs if run.span is not None]
    if per_query:
        reference["query_runs"] = len(runs)
        reference["measured_mean_query_time_s"] = _round(float(np.mean(spans)))
        reference["measured_think_time_s"] = _round(think_time)
    elif input_size is not None:
        reference["reference_runs"] = [
            {"log": run.source, "input_bytes": int(run.input_bytes),
             "measured_execution_time_s": None if run.span is None else _round(run.span)} for run in runs]
        reference["target_input_bytes"] = int(input_size)
    else:
        reference["measured_execution_time_s"] = [None if run.span is None else _round(run.span) for run in runs]
        reference["input_bytes"] = [int(run.input_bytes) for run in runs]
    reference["phases"] = provenance
    return reference


def _header(runs, *, paths, per_query, input_size, max_shape, method, empirical, delays, containers_how,
            think_how, phases) -> list[str]:
    first = runs[0]
    lines = [f"Fitted by `spn fit` from {', '.join(str(p) for p in paths)}",
             first.label.split(", query run ")[0]]
    if per_query:
        lines.append(f"Mode: one query, task times pooled over {len(runs)} repetitions; "
                     "`spn solve MODEL --set workload.users=N` predicts N users")
    elif input_size is not None:
        sizes = ", ".join(format_size(run.input_bytes) for run in runs)
        lines.append(f"Mode: prediction for input size {format_size(input_size)} from logs at {sizes} "
                     "(input size = the most bytes one stage read); fixed stages keep their task count, "
                     "variable ones scale with the input")
    elif len(runs) > 1:
        lines.append(f"Mode: {len(runs)} runs of one application, task times pooled per stage")
    else:
        lines.append("Mode: the whole application, its jobs chained in submission order")
    if any(job.inferred_dag for run in runs for job in run.jobs):
        lines.append("No Parent IDs in this (Spark 1.x) log: stage DAG inferred from stage times")
    lines.append(f"Task time: wall time (finish - launch) of successful attempts, Erlang by {method}; shapes "
                 f"capped at --max-shape {max_shape} so that `spn solve` stays tractable")
    if empirical:
        lines.append("Task times are the measured samples (distribution: empirical): use `spn simulate`; "
                     "`spn solve` takes Erlang laws only (refit without --empirical)")
    if delays:
        if any(p.kind == "delay" for p in phases):
            lines.append("driver-* phases: time when none of a job's tasks ran (start-up, driver work, "
                         "scheduling gaps), as 1 task of the measured mean with Erlang shape --max-shape; "
                         "in the net it holds a container while it runs")
    else:
        lines.append("Delays left out (--no-delays): the model covers task time only")
    lines.append(f"containers: {containers_how}")
    lines.append(f"think time: {think_how}")
    return lines


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


def _flow(value) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=float("inf")).strip()
    return text.removesuffix("...").strip()  # a lone scalar gets YAML's end-of-document marker


def _comment(text: str, indent: str = "") -> list[str]:
    return [f"{indent}# {line}".rstrip() for line in text.splitlines() or [""]]


def _to_yaml(model: FittedModel) -> str:
    d = model.description
    out = []
    for line in model.header:
        out += _comment(line)
    out.append(f"name: {_flow(d['name'])}")
    out.append(f"framework: {d['framework']}")
    out.append(f"workload: {_flow(d['workload'])}")
    out.append(f"cluster: {_flow(d['cluster'])}")
    out.append("phases:")
    for phase in d["phases"]:
        for note in model.phase_notes.get(phase["name"], ()):
            out += _comment(note, "  ")
        out.append(f"  - {_flow(phase)}")
    if "edges" in d:
        out.append("edges:")
        out += [f"  - {_flow(edge)}" for edge in d["edges"]]
    out.append("reference:")
    body = yaml.safe_dump(d["reference"], default_flow_style=None, sort_keys=False, width=100)
    out += ["  " + line for line in body.splitlines()]
    return "\n".join(out) + "\n"


def write_model(model: FittedModel, out, *, force: bool = False) -> Path:
    """Write ``model`` to ``out`` (``.yaml``/``.yml`` with comments, or ``.json``), atomically.

    Refuses (ModelError) to replace an existing file unless ``force``.
    """
    import json

    out = Path(out)
    if out.exists() and not force:
        raise ModelError(f"{out}: already exists; give --force to overwrite it")
    if out.is_dir():
        raise ModelError(f"{out}: is a directory")
    suffix = out.suffix.lower()
    if suffix in (".yaml", ".yml"):
        text = model.to_yaml()
    elif suffix == ".json":
        text = json.dumps(model.description, indent=2) + "\n"
    else:
        raise ModelError(f"{out}: unknown file type {suffix or '(none)'!r}, expected .yaml, .yml or .json")
    directory = out.parent if str(out.parent) else Path(".")
    if not directory.is_dir():
        raise ModelError(f"{out}: folder {directory} does not exist")
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, out)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return out
