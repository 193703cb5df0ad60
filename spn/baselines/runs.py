"""What the baselines read from a log: one :class:`ReferenceRun` per run.

The baselines of the literature need very little of a run: its end-to-end
execution time ``T``, its input size ``D``, the cores ``E`` it had, and (for
PERIDOT) its *stage groups* with their task counts and times. This module
gets them from a Spark event log (or a MapReduce ``.jhist``, which has no
stage groups) with the same readers as ``spn fit``, so that ``T``, ``D`` and
``E`` mean exactly what they mean to the SAN model:

- ``seconds``: the application's span (ApplicationStart to ApplicationEnd);
- ``input_bytes``: the most bytes one stage read (``Input Metrics``);
- ``cores``: the executor cores the log saw (``local[K]``: K).

>>> run = ReferenceRun("pilot.json", seconds=20.0, input_bytes=10**8, cores=2,
...                    groups=(StageGroup((0,), partitions=8, seconds=12.0),))
>>> run.groups[0].partitions
8
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spn.exceptions import LogFormatError

__all__ = ["StageGroup", "ReferenceRun", "reference_run", "stage_groups"]


@dataclass(frozen=True)
class StageGroup:
    """Stages that were scheduled together (PERIDOT's *stage group*).

    ``partitions`` is the number of tasks of its stages together (P);
    ``seconds`` the time from its first task's launch to its last task's end (S).
    """

    stage_ids: tuple[int, ...]
    partitions: int
    seconds: float


@dataclass(frozen=True)
class ReferenceRun:
    """One measured run: where it came from, ``T`` (s), ``D`` (bytes), ``E`` (cores) and its stage groups."""

    source: str
    seconds: float
    input_bytes: int
    cores: int
    groups: tuple[StageGroup, ...] = ()
    digest: str | None = None  # of the log's bytes (spn.logs.runs.check_distinct): one log, one run
    #: the :class:`~spn.logs.records.Run` read from the log (its jobs and stages), when read from one
    run: object = field(default=None, compare=False, repr=False)


def reference_run(path) -> ReferenceRun:
    """Read one log (Spark event log or MapReduce ``.jhist``) into a :class:`ReferenceRun`.

    Raises :class:`~spn.exceptions.LogFormatError` when the log is not one,
    the application did not finish, or its cores are unknown.

    >>> reference_run("app-20161116163331-0000.json").cores   # doctest: +SKIP
    16
    """
    from spn.logs.runs import load_runs, log_kind

    path = Path(path)
    run = load_runs(path)
    if run.span is None or run.span <= 0:
        raise LogFormatError(f"{path}: the log gives no execution time (application span)")
    if not run.containers:
        raise LogFormatError(f"{path}: the log does not say how many cores the application had")
    groups = ()
    if log_kind(path) == "spark":
        from spn.logs.spark import read_spark_log

        groups = stage_groups(read_spark_log(path))
    return ReferenceRun(str(path), float(run.span), int(run.input_bytes), int(run.containers), groups,
                        digest=run.digest, run=run)


def stage_groups(app) -> tuple[StageGroup, ...]:
    """The stage groups of a :class:`~spn.logs.spark.SparkApplication`, in scheduling order.

    A stage joins the current group when it was submitted before any stage
    of the group had completed: Spark submits a stage only once its parents
    are done, so such stages were scheduled together and compete for the
    cores. Stages are ordered by submission time (their first task's launch
    when the log has no submission time); their attempts count as one stage.
    """
    from spn.logs.spark_stages import stage_task_spans

    spans = stage_task_spans(app)
    launched = {sid: first for sid, (first, _) in spans.items()}
    finished = {sid: last for sid, (_, last) in spans.items()}
    partitions, submitted, completed = {}, {}, {}
    for stage in app.stages:
        sid = stage.stage_id
        if sid not in launched:  # a stage without a task attempt did no work
            continue
        partitions[sid] = max(partitions.get(sid, 0), stage.num_tasks)
        start = stage.submission_ms if stage.submission_ms is not None else launched[sid]
        submitted[sid] = min(submitted.get(sid, start), start)
        end = stage.completion_ms if stage.completion_ms is not None else finished[sid]
        completed[sid] = max(completed.get(sid, end), end)
    groups, current = [], []
    for sid in sorted(submitted, key=lambda s: (submitted[s], s)):
        if current and submitted[sid] >= min(completed[s] for s in current):
            groups.append(current)
            current = []
        current.append(sid)
    if current:
        groups.append(current)
    return tuple(
        StageGroup(tuple(ids), sum(partitions[s] for s in ids),
                   (max(finished[s] for s in ids) - min(launched[s] for s in ids)) / 1000.0)
        for ids in groups
    )
