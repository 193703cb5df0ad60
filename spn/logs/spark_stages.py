"""What a model needs from the stages of a :class:`~spn.logs.spark.SparkApplication`.

Views of an application read by :func:`~spn.logs.spark.read_spark_log`: the
task times of each stage, the job each stage ran in, the stage DAG, which
stages ran at the same time, the span of a job, and the cores the
application had. Durations are **seconds**; times are epoch **milliseconds**.

Task durations are wall time, ``Finish Time - Launch Time``: the time a task
holds its executor core (deserialisation, GC, shuffle fetch and result
serialisation included). That is what a container in the Petri net models.
``Executor Run Time`` (``measure="executor_run"``) leaves that overhead out
and would make short tasks look cheaper than they are for the cluster.

>>> from spn.logs.spark import SparkApplication, SparkStage
>>> from spn.logs.task_table import TaskRows
>>> stages = (SparkStage(0, 0, "scan", 2, (), 0, 3000, None), SparkStage(1, 0, "sum", 1, (0,), 3000, 4000, None))
>>> rows = TaskRows()
>>> for stage, index, launch, finish in [(0, 1, 0, 3000), (0, 0, 0, 2000), (1, 0, 3000, 4000)]:
...     rows.add(stage, index, launch, finish, executor="1", host="host")
>>> app = SparkApplication("app.json", "app-1", None, None, 0, 4000, "3.5.0", None, None, None, {}, (),
...                        (), stages, rows.table(), ())
>>> stage_task_durations(app)
{0: (2.0, 3.0), 1: (1.0,)}
>>> sorted(stage_dag(app).edges), max_concurrent_tasks(app)
([(0, 1)], 2)
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from spn.exceptions import LogFormatError
from spn.limits import MAX_COUNT
from spn.logs.intervals import most_at_once
from spn.logs.spark import SparkApplication
from spn.logs.task_table import TaskTable

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "successful_tasks",
    "rows_by_stage",
    "exact_sum",
    "sum_in_order",
    "stage_task_durations",
    "failed_attempt_seconds",
    "stage_task_spans",
    "stage_input_bytes",
    "stage_times",
    "stage_jobs",
    "stage_dag",
    "concurrent_stages",
    "job_span_ms",
    "job_spans_ms",
    "executor_cores_over_time",
    "max_executor_cores",
    "max_concurrent_tasks",
    "application_cores",
]


def successful_tasks(app: SparkApplication) -> dict[int, TaskTable]:
    """The *successful* task attempts of each stage that has one (by stage id), in launch order (ties by task
    index, then log order).

    Launch order puts a stage's first wave first, which is what tells a cold start from the steady
    task time. All attempts of a stage are pooled (a task re-run by a retried stage is real work).
    """
    tasks = app.tasks.take(app.tasks.successful)
    order = np.lexsort((tasks.index, tasks.launch_ms, tasks.stage_id))     # a stable sort: ties keep log order
    return {int(sid): tasks.take(rows) for sid, rows in rows_by_stage(tasks.stage_id, order)}


def rows_by_stage(stage_ids: np.ndarray, order: np.ndarray | None = None):
    """``(stage id, its rows)`` for each stage id, ascending: the rows in ``order`` (an ordering of all rows by
    stage id first; default: log order within a stage).

    >>> [(int(sid), rows.tolist()) for sid, rows in rows_by_stage(np.array([3, 1, 3, 1, 2]))]
    [(1, [1, 3]), (2, [4]), (3, [0, 2])]
    """
    if order is None:
        order = np.argsort(stage_ids, kind="stable")
    ids = stage_ids[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if ids.size else np.zeros(0, dtype=int)
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else ids.size
        yield ids[start], order[start:end]


def stage_task_durations(app: SparkApplication, *, measure: str = "wall") -> dict[int, tuple[float, ...]]:
    """Durations (seconds) of the *successful* task attempts of each stage that ran, in launch order.

    Launch order (ties by task index) puts a stage's first wave first, which
    is what tells a cold start from the steady task time.
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
    durations = {stage_id: () for stage_id in app.stage_ids()}
    for stage_id, tasks in successful_tasks(app).items():
        if measure == "wall":
            seconds = tasks.duration
        else:
            seconds = tasks.metric("run_s")
            seconds = seconds[~np.isnan(seconds)]
        if seconds.size:
            durations[stage_id] = tuple(seconds.tolist())
    return dict(sorted(durations.items()))


def failed_attempt_seconds(app: SparkApplication) -> dict[int, float]:
    """Wall seconds spent per stage by failed and killed attempts (reported, never fitted).

    >>> failed_attempt_seconds(app)  # doctest: +SKIP
    {0: 53.201}
    """
    tasks = app.tasks.take(~app.tasks.successful)
    seconds = tasks.duration
    # summed in log order, one attempt after another, as the figure was always added up
    return {int(sid): sum_in_order(seconds[rows]) for sid, rows in rows_by_stage(tasks.stage_id)}


def stage_task_spans(app: SparkApplication) -> dict[int, tuple[int, int]]:
    """``stage -> (first launch, last finish)`` in ms over all its task attempts (failed ones too)."""
    tasks = app.tasks
    return {int(sid): (int(tasks.launch_ms[rows].min()), int(tasks.finish_ms[rows].max()))
            for sid, rows in rows_by_stage(tasks.stage_id)}


def stage_input_bytes(app: SparkApplication) -> Counter:
    """``stage -> bytes read`` (``Input Metrics``) by its successful task attempts; 0 for the others."""
    tasks = app.tasks.take(app.tasks.successful)
    read = np.maximum(tasks.metrics["input_bytes"], 0)      # unknown (-1) or no metrics: 0
    return Counter({int(sid): exact_sum(read[rows]) for sid, rows in rows_by_stage(tasks.stage_id)})


def sum_in_order(values: np.ndarray) -> float:
    """``0 + values[0] + values[1] + ...``, left to right: the sum a Python loop gives (NumPy's ``sum`` adds
    pairwise, which rounds differently; the figures were always added up one task after another).

    >>> sum_in_order(np.array([0.1, 0.2, 0.3]))
    0.6000000000000001
    """
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def exact_sum(values: np.ndarray) -> int:
    """The sum of integers (bytes, ms) as a Python int: NumPy's int64 sum where it cannot overflow, else Python's."""
    if values.size == 0:
        return 0
    if int(np.abs(values).max()) <= np.iinfo(np.int64).max // values.size:
        return int(values.sum(dtype=np.int64))
    return sum(values.tolist())


def stage_times(app: SparkApplication) -> tuple[dict[int, int], dict[int, int]]:
    """``(submitted, completed)``: each stage's first submission and last completion (ms), over its attempts.

    A stage missing from a mapping has no such time in the log.
    """
    start, end = {}, {}
    for stage in app.stages:
        if stage.submission_ms is not None:
            start[stage.stage_id] = min(start.get(stage.stage_id, stage.submission_ms), stage.submission_ms)
        if stage.completion_ms is not None:
            end[stage.stage_id] = max(end.get(stage.stage_id, stage.completion_ms), stage.completion_ms)
    return start, end


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
    import networkx as nx  # only here: reading a log does not need it

    dag = nx.DiGraph(inferred=False)
    jobs = stage_jobs(app)
    for stage in app.stages:  # a later attempt overwrites the name and task count of an earlier one
        attempts = dag.nodes[stage.stage_id]["attempts"] + 1 if stage.stage_id in dag else 1
        dag.add_node(stage.stage_id, name=stage.name, num_tasks=stage.num_tasks,
                     job_id=jobs[stage.stage_id], attempts=attempts)
    previous = {}  # job -> its stage of the largest id so far (stages are visited in id order)
    for stage_id in sorted(dag.nodes):
        parents = app.parents_of(stage_id)
        job = jobs[stage_id]
        before, previous[job] = previous.get(job), stage_id
        if parents is not None:
            for parent in parents:
                if parent in dag:
                    dag.add_edge(parent, stage_id, inferred=False)
            continue
        if job is not None and before is not None:
            dag.add_edge(before, stage_id, inferred=True)
        dag.graph["inferred"] = True
    return dag


def concurrent_stages(app: SparkApplication, *, within_job: bool = True) -> list[tuple[int, int]]:
    """Pairs ``(a, b)``, a < b, of stages whose [submission, completion] intervals overlap.

    Each stage's interval runs from its first attempt's submission to its last
    attempt's completion (:func:`stage_times`); stages missing either time are
    left out. With ``within_job=True`` only stages of the same job are paired
    (independent branches of a DAG); ``False`` also pairs stages of concurrent jobs.

    >>> concurrent_stages(app)  # doctest: +SKIP
    [(0, 1)]
    """
    start, end = stage_times(app)
    timed = sorted(set(start) & set(end))
    jobs = stage_jobs(app)
    groups = {}
    for stage_id in timed:  # within a job only, pairs of one job's stages: not every pair of the log
        groups.setdefault(jobs[stage_id] if within_job else None, []).append(stage_id)
    pairs = []
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if start[a] < end[b] and start[b] < end[a]:
                    pairs.append((a, b))
    return sorted(pairs)


def job_span_ms(app: SparkApplication, job_id: int) -> tuple[int | None, int | None]:
    """``(start, end)`` of a job in epoch ms: its own times, else derived from its stages' times.

    >>> job_span_ms(app, 1)  # doctest: +SKIP
    (1422981785829, 1422981786347)
    """
    return job_spans_ms(app)[job_id]


def job_spans_ms(app: SparkApplication) -> dict[int, tuple[int | None, int | None]]:
    """:func:`job_span_ms` of every job, in one pass over the stages (a log may hold thousands of jobs).

    >>> from spn.logs.spark import SparkApplication, SparkJob, SparkStage
    >>> from spn.logs.task_table import TaskRows
    >>> stages = (SparkStage(0, 0, "scan", 2, (), 0, 3000, None), SparkStage(1, 0, "sum", 1, (0,), 3000, 4000, None))
    >>> app = SparkApplication("app.json", "app-1", None, None, 0, 4000, None, None, None, None, {}, (),
    ...                        (SparkJob(0, (0, 1), None, None, "JobSucceeded"),), stages, TaskRows().table(), ())
    >>> job_spans_ms(app)  # a Spark 1.2 log has no job times: they come from the job's stages
    {0: (0, 4000)}
    """
    jobs = stage_jobs(app)
    starts, ends = {}, {}
    for stage in app.stages:
        owner = jobs.get(stage.stage_id)
        if stage.submission_ms is not None:
            starts.setdefault(owner, []).append(stage.submission_ms)
        if stage.completion_ms is not None:
            ends.setdefault(owner, []).append(stage.completion_ms)
    spans = {}
    for job in app.jobs:
        start = job.submission_ms if job.submission_ms is not None else min(starts.get(job.job_id, ()), default=None)
        end = job.completion_ms if job.completion_ms is not None else max(ends.get(job.job_id, ()), default=None)
        spans[job.job_id] = (start, end)
    return spans


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
    """
    return most_at_once(np.column_stack((app.tasks.launch_ms, app.tasks.finish_ms)))


def application_cores(app: SparkApplication) -> tuple[int | None, str]:
    """The cores the application had, and how the log tells: ``(cores, how)``; ``(None, "unknown")``.

    In order: the most executor cores alive at once; ``spark.executor.cores``
    x ``spark.executor.instances``; ``K`` of a ``local[K]`` master (1 for
    ``local``); the most tasks that ran at once.
    """
    cores = max_executor_cores(app)
    if cores:
        return _at_most_max_count(app, cores, "executor cores alive at once"), \
            "most executor cores alive at once (ExecutorAdded/Removed)"
    if app.executor_cores and app.executor_instances:
        return (_at_most_max_count(app, app.executor_cores * app.executor_instances,
                                   "spark.executor.cores x spark.executor.instances"),
                "spark.executor.cores x spark.executor.instances")
    match = re.fullmatch(r"local\[(\d+)(?:,\s*\d+)?\]", app.master or "")
    if match:
        digits = match.group(1)  # int() of thousands of digits is refused by Python itself
        cores = int(digits) if len(digits) <= 18 else MAX_COUNT + 1
        return _at_most_max_count(app, cores, f"master {app.master[:40]}"), f"master {app.master}"
    if app.master == "local":
        return 1, "master local"
    concurrent = max_concurrent_tasks(app)
    if concurrent:
        return concurrent, "most tasks running at once (no executor cores in the log)"
    return None, "unknown"


def _at_most_max_count(app: SparkApplication, cores: int, how: str) -> int:
    """``cores``, unless more than a model can have: then the log cannot be what it says."""
    if cores > MAX_COUNT:
        raise LogFormatError(f"{app.path}: {how}: more than {MAX_COUNT:,} cores: not a real cluster (give the "
                             "number of containers to model)", option="containers")
    return cores
