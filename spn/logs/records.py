"""What one run of an application looked like, whatever log it came from.

A :class:`Run` is a whole application (a Spark event log, a MapReduce
``.jhist``) or one repetition of a query inside one; its jobs
(:class:`JobRecord`) hold their stages (:class:`StageRecord`) with the task
counts and the measured task durations. These are what :mod:`spn.fit` models.

>>> stage = StageRecord((0,), "map", tasks=2, durations=(1.5, 2.0), parents=(), input_bytes=10**6)
>>> job = JobRecord((0,), (stage,), delay=0.4, after=())
>>> run = Run("job.jhist", "MapReduce job 1", "mapreduce", (job,), end_delay=0.0, input_bytes=largest_input([job]),
...           containers=2, containers_how="given", span=4.2)
>>> run.input_bytes, [s.tasks for s in run.jobs[0].stages]
(1000000, [2])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["StageRecord", "JobRecord", "Run", "largest_input", "DURATION_FLOOR_S", "duration_floor"]

#: the clock of Spark and Hadoop logs ticks in milliseconds: a task logged as taking 0 ms took
#: less than 1 ms; :func:`duration_floor` counts it as half a tick instead of dropping it
DURATION_FLOOR_S = 0.0005


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
    """One run of what is modelled: a whole application (or job history), or one query repetition.

    ``span`` is the wall span measured; ``idle`` (:class:`spn.logs.idle.IdleTime`, ``None``: none) the gaps with
    no job active that are not execution time (left out of the delays); :attr:`execution_time` what remains.
    """

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
    digest: str | None = None  # of the log's bytes: the same digest twice is the same log given twice
    idle: object | None = None  # spn.logs.idle.IdleTime: the idle gaps left out of the delays

    @property
    def execution_time(self) -> float | None:
        """The seconds of ``span`` that are execution time: the wall span without its idle gaps."""
        if self.span is None or self.idle is None:
            return self.span
        return self.span - self.idle.total_s


def largest_input(jobs: Iterable[JobRecord]) -> int:
    """The input size of a run: the most bytes one stage read.

    Not the sum over stages: an application that scans its input twice read
    it once as far as its size is concerned. With several inputs, the
    largest one stands for all (they are assumed to grow together).
    """
    return max((s.input_bytes for job in jobs for s in job.stages), default=0)


def duration_floor(durations) -> np.ndarray:
    """Durations in seconds with each value below :data:`DURATION_FLOOR_S` raised to it.

    Logs tick in ms, so a 0 ms task was shorter than 1 ms, not absent:
    dropping it would bias the mean up, keeping 0 would break the fit.

    >>> duration_floor([0.0, 0.002]).tolist()
    [0.0005, 0.002]
    """
    x = np.asarray(durations, dtype=float).ravel()
    return np.maximum(x, DURATION_FLOOR_S)
