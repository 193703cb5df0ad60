"""Idle time of a Spark application: gaps in which no job is active and no task runs.

An application's wall span is not its jobs' execution time when someone used it
interactively (spark-shell, a notebook) or spaced its jobs out: the driver then
waited for a person, not for work. :func:`idle_gaps` finds those gaps; the fit
leaves them out (:func:`~spn.logs.spark_runs.spark_run`) and reports them.

The rule (docs/design.md §8.3), with *jobs' time* = the seconds some job of the
application was active (the union of the jobs' spans, failed jobs included):

- a gap between jobs (or after the last one) is idle when it is longer than
  :data:`IDLE_FLOOR_S` and :data:`IDLE_FRACTION` of the jobs' time: the driver's
  own work between two jobs of a batch application (planning the next job,
  building a broadcast, collecting a result) takes a second or two (at most 2.0 s
  on the lundstrom logs, 0.03 s on the others), and a longer gap in a long
  application is kept, since its jobs may well need seconds of driver work;
- before the first job, a batch application's start-up (until the last
  executor present at its first job was added: the cluster granting containers)
  is work and is kept; only the rest of that gap is judged as above (the
  lundstrom logs spend 57-67 s there, executors included, all kept);
- an interactive session (a Scala REPL: ``spark.repl.class.uri`` set, or an
  application named ``Spark shell``/``PySparkShell``) starts and ends for its user,
  not for its jobs: its gaps before the first job and after the last are idle
  whatever their length.

>>> from spn.logs.spark import SparkApplication, SparkJob
>>> from spn.logs.task_table import TaskRows
>>> app = SparkApplication("a.json", "app-1", "Spark shell", None, 0, 400_000, None, None, None, None, {}, (),
...                        (SparkJob(0, (), 150_000, 153_000, "JobSucceeded"),), (), TaskRows().table(), ())
>>> found = idle_gaps(app)
>>> [(g.where, g.seconds) for g in found.gaps], found.jobs_time_s
([('before the first job', 150.0), ('after the last job', 247.0)], 3.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spn.logs.intervals import as_intervals, union
from spn.logs.spark import SparkApplication
from spn.logs.spark_stages import job_spans_ms

__all__ = ["IDLE_FLOOR_S", "IDLE_FRACTION", "IdleGap", "IdleTime", "idle_gaps", "idle_overlap_s", "interactive"]

#: a gap with no job active longer than this (s) and than IDLE_FRACTION of the jobs' time is idle
IDLE_FLOOR_S = 5.0

#: ... and longer than this fraction of the jobs' own time (a long application may need seconds of driver work)
IDLE_FRACTION = 0.10

#: application names of interactive sessions (spark-shell, pyspark)
_SHELL_NAMES = ("Spark shell", "PySparkShell")


@dataclass(frozen=True)
class IdleGap:
    """One idle gap: from ``start_ms`` to ``end_ms`` (epoch ms), ``where`` in the application."""

    start_ms: int
    end_ms: int
    where: str

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0


@dataclass(frozen=True)
class IdleTime:
    """The idle gaps of an application, its jobs' own time (s), the threshold used (s) and how many jobs ran."""

    gaps: tuple[IdleGap, ...]
    jobs_time_s: float
    threshold_s: float
    jobs: int
    interactive: bool

    @property
    def total_s(self) -> float:
        return sum(g.seconds for g in self.gaps)

    def summary(self) -> str:
        """One line: the gaps left out, their total and why (what ``spn fit`` prints)."""
        shown = ", ".join(f"{g.seconds:.4g} s {g.where}" for g in self.gaps[:6])
        more = f", and {len(self.gaps) - 6} more" if len(self.gaps) > 6 else ""
        session = "an interactive session's start and end; " if self.interactive else ""
        return (f"idle gaps left out of the execution time (no job active): {shown}{more}; {self.total_s:.4g} s "
                f"in all, beside {self.jobs} job(s) active for {self.jobs_time_s:.4g} s ({session}gaps over "
                f"{self.threshold_s:.3g} s = max({IDLE_FLOOR_S:g} s, {IDLE_FRACTION:.0%} of the jobs' time))")

    def reference(self) -> dict:
        """What the model's ``reference`` keeps of it."""
        return {"gaps_s": [round(g.seconds, 3) for g in self.gaps], "where": [g.where for g in self.gaps],
                "total_s": round(self.total_s, 3), "jobs": self.jobs, "jobs_time_s": round(self.jobs_time_s, 3),
                "threshold_s": round(self.threshold_s, 3), "interactive": self.interactive}


def interactive(app: SparkApplication) -> bool:
    """Whether the application is an interactive session (a REPL): its start and end wait for a person."""
    return "spark.repl.class.uri" in app.spark_properties or (app.name or "") in _SHELL_NAMES


def idle_gaps(app: SparkApplication, start_ms: int | None = None, end_ms: int | None = None) -> IdleTime:
    """The idle gaps of ``app`` between ``start_ms`` and ``end_ms`` (default: the application's start and end).

    Active: every job's span (failed ones too) and every task attempt's run, so
    a task outside a job's recorded span still counts. A job without an end is
    active until ``end_ms``.
    """
    spans = job_spans_ms(app)
    starts = [s for s, _ in spans.values() if s is not None]
    if not starts:
        return IdleTime((), 0.0, IDLE_FLOOR_S, 0, interactive(app))
    first_job = min(starts)
    start = start_ms if start_ms is not None else (app.start_ms if app.start_ms is not None else first_job)
    tasks = app.tasks
    last = max([e for _, e in spans.values() if e is not None] + [int(tasks.finish_ms.max(initial=0)), first_job])
    end = end_ms if end_ms is not None else (app.end_ms if app.end_ms is not None else last)
    jobs = as_intervals([(s, e if e is not None else end) for s, e in spans.values() if s is not None])
    active = np.concatenate((jobs, np.column_stack((tasks.launch_ms, tasks.finish_ms))))
    merged = union(active).tolist()
    jobs_time = sum(min(b, end) - max(a, start) for a, b in merged if min(b, end) > max(a, start)) / 1000.0
    threshold = max(IDLE_FLOOR_S, IDLE_FRACTION * jobs_time)
    repl = interactive(app)
    gaps = []
    cursor = start
    for k, (a, b) in enumerate(merged + [(end, end)]):
        if a > cursor:
            where = ("before the first job" if k == 0 else "after the last job" if k == len(merged)
                     else "between jobs")
            lo = cursor
            if k == 0 and not repl:
                # a batch application's start-up: the cluster granting the executors its first job ran on
                added = [x.added_ms for x in app.executors if x.added_ms is not None and start <= x.added_ms <= a]
                lo = max(added, default=cursor)
            whole = repl and where != "between jobs"
            if a > lo and (whole or (a - lo) / 1000.0 > threshold):
                gaps.append(IdleGap(lo, min(a, end), where))
        cursor = max(cursor, b)
    return IdleTime(tuple(gaps), jobs_time, threshold, len(starts), repl)


def idle_overlap_s(gaps, start_ms: int, end_ms: int) -> float:
    """Seconds of [start_ms, end_ms] that lie in the idle ``gaps``."""
    return sum(max(0, min(g.end_ms, end_ms) - max(g.start_ms, start_ms)) for g in gaps) / 1000.0
