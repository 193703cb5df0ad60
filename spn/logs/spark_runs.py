"""A Spark application as the jobs a model needs: :class:`TimedJob`, then a :class:`~spn.logs.records.Run`.

Which jobs are modelled: those whose stages all completed (a failed job's
time is left to the next job's delay). A stage's parents come from its
``Parent IDs``; Spark 1.x logs have none: there a job's stages are grouped by
overlapping run times, the stages of one group run side by side and each
group follows the previous one. With ``stage_groups=True`` the stages of one
job that ran at the same time are merged into one record (PERIDOT's *stage
groups*). A job waits for the earlier jobs that had ended when it was
submitted; its delay is the wait after them plus the time none of its tasks ran.

>>> from spn.logs.spark import read_spark_log
>>> app = read_spark_log("application_1516285256255_0012.json")  # doctest: +SKIP
>>> run = spark_run(app, timed_jobs(app))                        # doctest: +SKIP
>>> [len(job.stages) for job in run.jobs], run.containers         # doctest: +SKIP
([2], 5)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from spn.exceptions import LogFormatError
from spn.logs.idle import idle_gaps, idle_overlap_s
from spn.logs.intervals import covered_seconds
from spn.logs.records import JobRecord, Run, StageRecord, duration_floor, largest_input
from spn.logs.spark import SparkApplication
from spn.logs.spark_stages import (
    application_cores,
    concurrent_stages,
    failed_attempt_seconds,
    job_spans_ms,
    stage_dag,
    stage_input_bytes,
    stage_jobs,
    stage_task_durations,
    stage_task_spans,
    stage_times,
)

__all__ = ["TimedJob", "timed_jobs", "job_records", "spark_run", "app_label"]


@dataclass
class TimedJob:
    """A modelled Spark job with its times (epoch ms), before it becomes a :class:`~spn.logs.records.JobRecord`.

    ``covered`` is the seconds of the job's span with a task of it running;
    ``inferred`` says its stage DAG was inferred from stage times (Spark 1.x);
    ``group`` is its job group (``spark.jobGroup.id``).
    """

    job_id: int
    submit: int
    complete: int
    stages: list
    covered: float
    inferred: bool
    group: str | None
    failed: bool = False


def timed_jobs(app: SparkApplication, *, allow_incomplete: bool = False,
               stage_groups: bool = False) -> list[TimedJob]:
    """The jobs of a Spark application that can be modelled, with their stages, in job-id order.

    Raises :class:`~spn.exceptions.LogFormatError` when a stage's parent never
    ran and no job declares it, or when the application did not finish
    (unless ``allow_incomplete``: then the jobs that finished are kept).
    """
    where = f"{app.path}"
    ran = set(app.stage_ids())
    declared = set(app.declared_parents) | {s for job in app.jobs for s in job.stage_ids}
    for stage_id in sorted(ran):
        for parent in app.parents_of(stage_id) or ():
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
            f"{where}: the application did not finish (crashed, killed or still running): {shown} "
            "(the jobs that finished can be fitted when incomplete logs are allowed)",
            option="allow_incomplete")
    owner = stage_jobs(app)
    own_stages = defaultdict(list)
    for s in sorted(ran):
        own_stages[owner[s]].append(s)
    spans_ms = job_spans_ms(app)
    together = defaultdict(list)  # job -> pairs of its stages that ran at the same time
    for a, b in concurrent_stages(app) if stage_groups else ():
        together[owner[a]].append((a, b))
    dag = stage_dag(app)
    durations = stage_task_durations(app)
    spans = stage_task_spans(app)
    input_bytes = stage_input_bytes(app)
    first_submit, last_complete = stage_times(app)
    num_tasks = defaultdict(int)
    names = {}
    for stage in app.stages:
        num_tasks[stage.stage_id] = max(num_tasks[stage.stage_id], stage.num_tasks)
        names.setdefault(stage.stage_id, stage.name)
    jobs = []
    for job in app.jobs:
        if job.result is None:
            continue  # only with allow_incomplete
        own = own_stages.get(job.job_id, [])
        if any(s not in completed for s in own):
            continue
        start, end = spans_ms[job.job_id]
        if not own or start is None or end is None:
            continue
        if end < start:  # each end was checked against its own start when read; these may come from stages
            raise LogFormatError(f"{app.path}: job {job.job_id} ends ({end}) before it starts ({start}) by the "
                                 "times of the job and its stages: the log is inconsistent")
        failed = job.result != "JobSucceeded"
        parents_known = all(app.parents_of(s) is not None for s in own)
        position = {s: i for i, s in enumerate(own)}
        if parents_known:
            parents = {s: tuple(sorted(position[p] for p in dag.predecessors(s) if p in position)) for s in own}
        else:
            parents = _parents_from_times(own, first_submit, last_complete, position)
        stages = [
            StageRecord(
                stage_ids=(s,), name=names.get(s, ""), tasks=max(num_tasks[s], 1),
                durations=tuple(float(d) for d in duration_floor(durations[s])) if durations.get(s) else (),
                parents=parents[s], input_bytes=int(input_bytes[s]),
            )
            for s in own
        ]
        covered = covered_seconds([spans[s] for s in own if s in spans], start, end)
        if stage_groups:
            stages = _merge_groups(app, own, stages, together.get(job.job_id, ()))
        jobs.append(TimedJob(job.job_id, start, end, stages, covered, not parents_known, job.group, failed))
    return jobs


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


def _merge_groups(app, own, stages, together) -> list[StageRecord]:
    """Stages of one job that ran at the same time (``together``: pairs of stage ids), merged into one record
    each (PERIDOT's stage groups)."""
    import networkx as nx

    position = {s: i for i, s in enumerate(own)}
    graph = nx.Graph()
    graph.add_nodes_from(range(len(own)))
    graph.add_edges_from((position[a], position[b]) for a, b in together if a in position and b in position)
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
        raise LogFormatError(f"{app.path}: merging concurrent stages into groups made a cycle: fit its stages "
                             "without grouping them", option="stage_groups")
    return merged


def _job_order(jobs: list[TimedJob]) -> list[tuple[int, ...]]:
    """For each job, the earlier jobs it waited for: those that had ended when it was submitted (reduced).

    Job ``i`` precedes a later job ``j`` when ``i`` ended by the time ``j`` was
    submitted; each job keeps the predecessors no other predecessor lies after
    (the transitive reduction). For jobs in submission order, each ending no
    earlier than it started (what the readers make sure of), these relations
    are an interval order, and the reduction is, for each ``j``, its latest
    predecessor ``m`` and those that ended after ``m`` was submitted: linear
    work per job instead of a graph of every pair (a log of 10,000 short jobs
    would need 50 million edges). Other input takes the general graph way.

    >>> jobs = [TimedJob(j, submit, end, [], 0.0, False, None)
    ...         for j, (submit, end) in enumerate([(0, 10), (5, 20), (30, 40), (45, 50)])]
    >>> _job_order(jobs)  # jobs 0 and 1 ran side by side; 2 waited for both, 3 for 2 only
    [(), (), (0, 1), (2,)]
    """
    submit = np.array([job.submit for job in jobs], dtype=np.int64)
    complete = np.array([job.complete for job in jobs], dtype=np.int64)
    if len(jobs) and not (np.all(np.diff(submit) >= 0) and np.all(complete >= submit)):
        return _job_order_graph(jobs)
    order = []
    for j in range(len(jobs)):
        before = np.flatnonzero(complete[:j] <= submit[j])
        if before.size == 0:
            order.append(())
            continue
        latest = before[-1]  # submissions are in order: the predecessor submitted last
        kept = before[complete[before] > submit[latest]]
        order.append(tuple(int(i) for i in np.union1d(kept, [latest])))
    return order


def _job_order_graph(jobs: list[TimedJob]) -> list[tuple[int, ...]]:
    """:func:`_job_order` for any times, by the transitive reduction of the graph of every pair."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(jobs)))
    for j, job in enumerate(jobs):
        for i in range(j):
            if jobs[i].complete <= job.submit:
                graph.add_edge(i, j)
    reduced = nx.transitive_reduction(graph)
    return [tuple(sorted(reduced.predecessors(j))) for j in range(len(jobs))]


def job_records(jobs: list[TimedJob], start_ms: int | None, idle=()) -> tuple[JobRecord, ...]:
    """The jobs (in submission order) as :class:`~spn.logs.records.JobRecord`, each after the jobs it waited for.

    A job's delay is its wait for what it depends on (the earlier jobs that
    had ended when it was submitted; ``start_ms`` for a job that waits for
    none, no wait when ``None``), less the ``idle`` gaps in that wait
    (:mod:`spn.logs.idle`), plus the time during the job when none of its tasks ran.
    """
    after = _job_order(jobs)
    records = []
    for j, job in enumerate(jobs):
        ready = max((jobs[i].complete for i in after[j]), default=start_ms)
        gap = 0.0 if ready is None else max(job.submit - ready, 0) / 1000.0
        if ready is not None and idle:
            gap = max(gap - idle_overlap_s(idle, ready, job.submit), 0.0)
        untasked = max((job.complete - job.submit) / 1000.0 - job.covered, 0.0)
        records.append(JobRecord((job.job_id,), tuple(job.stages), gap + untasked, after[j], job.inferred))
    return tuple(records)


def app_label(app: SparkApplication) -> str:
    """``Spark application <id> (<name>), Spark <version>``, with what the log has of them."""
    return (f"Spark application {app.app_id or '?'}" + (f" ({app.name})" if app.name else "")
            + (f", Spark {app.spark_version}" if app.spark_version else ""))


def spark_run(app: SparkApplication, jobs: list[TimedJob]) -> Run:
    """The whole application as one :class:`~spn.logs.records.Run` of its succeeded ``jobs``.

    The time from the last job's end to the application's end is the run's
    ``end_delay``. Idle gaps (:mod:`spn.logs.idle`) are left out of the jobs'
    delays and of ``end_delay``, and kept in ``idle`` (``span`` is the wall span).
    Raises :class:`~spn.exceptions.LogFormatError` when no job succeeded.
    """
    modelled = [job for job in jobs if not job.failed]
    failed = [job for job in jobs if job.failed]
    if not modelled:
        raise LogFormatError(f"{app.path}: no job of the application succeeded: nothing to model")
    modelled.sort(key=lambda job: (job.submit, job.job_id))
    first = min(job.submit for job in modelled)
    if app.start_ms is not None and app.start_ms > first:
        raise LogFormatError(f"{app.path}: the application started (ApplicationStart Timestamp {app.start_ms}) after "
                             f"its first job was submitted ({first}): the log is inconsistent, and its execution "
                             "time cannot be measured")
    app_start = app.start_ms if app.start_ms is not None else first
    last = max(job.complete for job in modelled)
    if app.end_ms is not None and app.end_ms < last:
        raise LogFormatError(f"{app.path}: the application ended (ApplicationEnd Timestamp {app.end_ms}) before "
                             f"its last job did ({last}): the log is inconsistent, and its execution time cannot "
                             "be measured")
    app_end = app.end_ms if app.end_ms is not None else last
    idle = idle_gaps(app, app_start, app_end)
    records = job_records(modelled, app_start, idle.gaps)
    end_delay = max(max(app_end - last, 0) / 1000.0 - idle_overlap_s(idle.gaps, last, app_end), 0.0)
    span = (app_end - app_start) / 1000.0
    containers, how = application_cores(app)
    notes = [f"job {job.job_id} failed: not modelled as stages; its time is part of the next job's delay"
             for job in failed]
    wasted = failed_attempt_seconds(app)
    if wasted:
        notes.append(f"failed or killed task attempts held cores for {sum(wasted.values()):.4g} s (stage(s) "
                     f"{', '.join(map(str, wasted))}): lost work, not fitted as task time")
    if app.end_ms is None:
        notes.append("no ApplicationEnd in the log: the model ends with the last job")
    notes += _unseen_tasks(app)
    if idle.gaps:
        notes.append(idle.summary())
    return Run(
        source=app.path, label=app_label(app),
        framework="spark", jobs=records, end_delay=end_delay, input_bytes=largest_input(records),
        containers=containers, containers_how=how, span=span, notes=tuple(notes), digest=app.digest,
        idle=idle if idle.gaps else None,
    )


def _unseen_tasks(app) -> list[str]:
    """A note per completed stage with fewer successful tasks in the log than it declares: the driver
    drops events when its listener queue is full (or the log was cut), so the declared count is kept
    as the stage's tasks and the times seen are a sample; but the user must know."""
    declared, completed = defaultdict(int), set()
    for stage in app.stages:
        declared[stage.stage_id] = max(declared[stage.stage_id], stage.num_tasks)
        if stage.completion_ms is not None and not stage.failed:
            completed.add(stage.stage_id)
    done = app.tasks.take(app.tasks.successful)
    order = np.lexsort((done.index, done.stage_id))
    stage_ids, index = done.stage_id[order], done.index[order]
    # a task index counts once per stage, however many of its attempts succeeded
    first = np.r_[True, (stage_ids[1:] != stage_ids[:-1]) | (index[1:] != index[:-1])] if len(order) else order > 0
    ids, counts = np.unique(stage_ids[first], return_counts=True)
    ended = dict(zip(ids.tolist(), counts.tolist()))
    return [f"stage {s} declares {declared[s]:,} tasks but {ended.get(s, 0):,} ended successfully in the log "
            "(events dropped by the driver, or a cut log): it is modelled with the declared count, its task "
            "times a sample of those seen" for s in sorted(completed) if ended.get(s, 0) < declared[s]]
