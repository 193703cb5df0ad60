"""Sparklens' estimator: the run's own tasks replayed on another number of task slots.

After Qubole's Sparklens (its *completion estimator*: "estimated completion
time with different numbers of executors", from a single run). One Spark
event log gives everything:

1. **driver time** ``D``: the part of the application's span (ApplicationStart
   to ApplicationEnd) when no task of the application ran: start-up, driver
   work between jobs, scheduling gaps. It does not depend on the executors and
   is kept as measured;
2. the **jobs** in the order the log shows. Jobs whose [submission, completion]
   intervals overlap ran together and are replayed together, on shared slots;
   inside such a set, a job waits for the jobs of the set that had ended when it
   was submitted. Sets follow each other;
3. each **stage** of a set is replayed from its recorded task durations (wall
   time, finish - launch, of every attempt: each held a slot) on
   ``executors x cores`` slots: a stage starts once its parent stages have
   ended (Spark 1.x logs give no parents: there the stages of a job run one
   after another in id order); its tasks, in launch order, each go to the slot
   that frees first.

The estimate is ``T' = D + sum over job sets of the replayed makespan``. For
the run's own slot count it is close to the measured span (the replay packs
tasks as tightly as a greedy scheduler can; the run may have left slots idle).

>>> greedy_makespan([4.0, 3.0, 2.0, 2.0, 1.0], slots=2)   # slot 1: 4, 2; slot 2: 3, 2, 1
6.0
>>> profile = SparklensProfile(span_seconds=16.0, driver_seconds=10.0, slots=1, jobs=(
...     ReplayJobs((0,), (ReplayStage(0, (4.0, 3.0, 2.0, 2.0, 1.0), ()),), measured_seconds=6.0),))
>>> replay(profile, slots=2).seconds                     # 10 s of driver time + 6 s of replay
16.0
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spn.exceptions import ModelError
from spn.logs.intervals import covered_seconds

__all__ = ["ReplayStage", "ReplayJobs", "SparklensProfile", "ReplayedJobs", "SparklensEstimate",
           "greedy_makespan", "sparklens_profile", "replay", "sparklens_estimate", "sparklens_replay"]


@dataclass(frozen=True)
class ReplayStage:
    """A stage as the replay sees it: its task durations (s, launch order) and the stages it waits for."""

    stage_id: int
    durations: tuple[float, ...]
    parents: tuple[int, ...]


@dataclass(frozen=True)
class ReplayJobs:
    """Jobs that ran together (one job when none overlapped it), replayed on shared slots.

    ``measured_seconds`` is the time some task of these jobs ran in the log.
    """

    job_ids: tuple[int, ...]
    stages: tuple[ReplayStage, ...]
    measured_seconds: float


@dataclass(frozen=True)
class SparklensProfile:
    """What the replay needs from one run: its span, driver time (s), slots and job sets in order."""

    span_seconds: float
    driver_seconds: float
    slots: int | None
    jobs: tuple[ReplayJobs, ...]
    source: str = ""


@dataclass(frozen=True)
class ReplayedJobs:
    """One job set's measured and replayed time (s)."""

    job_ids: tuple[int, ...]
    measured_seconds: float
    replayed_seconds: float


@dataclass(frozen=True)
class SparklensEstimate:
    """The parts of an estimate: driver time (kept) and each job set's replayed time, on ``slots`` slots."""

    slots: int
    driver_seconds: float
    jobs: tuple[ReplayedJobs, ...]

    @property
    def seconds(self) -> float:
        """The estimated application span: ``D + sum of the replayed job sets``."""
        return self.driver_seconds + sum(job.replayed_seconds for job in self.jobs)


# --------------------------------------------------------------------------
# The replay
# --------------------------------------------------------------------------


def greedy_makespan(durations: Sequence[float], slots: int) -> float:
    """Time (s) to run ``durations`` in this order on ``slots`` slots, each task on the slot that frees first."""
    return _makespan((ReplayStage(0, tuple(durations), ()),), slots)


def replay(profile: SparklensProfile, slots: int) -> SparklensEstimate:
    """The run of ``profile`` replayed on ``slots`` task slots (executors x cores per executor)."""
    if slots < 1:
        raise ModelError(f"the replay needs at least 1 task slot, got {slots}")
    jobs = tuple(ReplayedJobs(j.job_ids, j.measured_seconds, _makespan(j.stages, slots)) for j in profile.jobs)
    return SparklensEstimate(slots, profile.driver_seconds, jobs)


def _makespan(stages: Sequence[ReplayStage], slots: int) -> float:
    """List scheduling of a stage DAG: a stage's tasks queue (in order) once its parents end; FIFO onto free slots.

    Parents outside ``stages`` have ended before (an earlier job set). Raises
    :class:`ModelError` when some stages can never start (a cycle).
    """
    by_id = {s.stage_id: s for s in stages}
    waiting = {s.stage_id: {p for p in s.parents if p in by_id and p != s.stage_id} for s in stages}
    children = defaultdict(list)
    for sid, parents in waiting.items():
        for parent in parents:
            children[parent].append(sid)
    left = {sid: len(by_id[sid].durations) for sid in by_id}
    queue: deque = deque()
    running: list = []  # heap of (finish, order, stage)
    done: set[int] = set()
    clock, free, order = 0.0, slots, 0

    def ready(ids) -> None:
        """Queue the tasks of stages whose parents all ended; a stage without tasks ends at once."""
        pending = sorted(ids)
        while pending:
            sid = pending.pop(0)
            if left[sid]:
                queue.extend((d, sid) for d in by_id[sid].durations)
            else:
                pending = sorted(pending + finish(sid))

    def finish(sid) -> list[int]:
        """Mark ``sid`` ended; the children it was the last parent of."""
        done.add(sid)
        now_ready = []
        for child in children[sid]:
            waiting[child].discard(sid)
            if not waiting[child]:
                now_ready.append(child)
        return now_ready

    ready([sid for sid, parents in waiting.items() if not parents])
    while True:
        while free and queue:
            duration, sid = queue.popleft()
            heapq.heappush(running, (clock + max(float(duration), 0.0), order, sid))
            order, free = order + 1, free - 1
        if not running:
            break
        clock = running[0][0]
        ended = []
        while running and running[0][0] == clock:
            _, _, sid = heapq.heappop(running)
            free += 1
            left[sid] -= 1
            if not left[sid]:
                ended.append(sid)
        ready([child for sid in sorted(ended) for child in finish(sid)])
    stuck = sorted(set(by_id) - done)
    if stuck:
        raise ModelError(f"stages {stuck} wait for each other (a cycle in their parents): cannot replay them")
    return clock


# --------------------------------------------------------------------------
# From a Spark event log
# --------------------------------------------------------------------------


def sparklens_profile(app) -> SparklensProfile:
    """What the replay needs from a :class:`~spn.logs.spark.SparkApplication`.

    Raises :class:`ModelError` when the log gives no application span or no task.
    """
    if app.start_ms is None or app.end_ms is None or app.end_ms <= app.start_ms:
        raise ModelError(f"{app.path}: Sparklens needs the application's span (ApplicationStart and "
                         "ApplicationEnd)")
    if not len(app.tasks):
        raise ModelError(f"{app.path}: Sparklens replays tasks, and the log has none")
    tasks = _stage_tasks(app.tasks)
    owner = _stage_owners(app, tasks)
    jobs = _job_windows(app, tasks, owner)
    sets = _overlapping(jobs)
    span = (app.start_ms, app.end_ms)
    result = []
    for members in sets:
        stage_ids = sorted(s for j in members for s in jobs[j][2])
        intervals = np.concatenate([tasks[s] for s in stage_ids])
        parents = _parents(app, members, jobs, stage_ids)
        stages = tuple(ReplayStage(s, tuple(((tasks[s][:, 1] - tasks[s][:, 0]) / 1000.0).tolist()), parents[s])
                       for s in stage_ids)
        job_ids = tuple(sorted(j for j in members if j >= 0))
        result.append(ReplayJobs(job_ids, stages, covered_seconds(intervals, *span)))
    busy = covered_seconds(np.column_stack((app.tasks.launch_ms, app.tasks.finish_ms)), *span)
    span_seconds = (app.end_ms - app.start_ms) / 1000.0
    return SparklensProfile(span_seconds, span_seconds - busy, _slots(app), tuple(result), str(app.path))


def sparklens_replay(app, *, executors: int, cores: int) -> SparklensEstimate:
    """The parts of Sparklens' estimate for ``executors`` executors of ``cores`` cores each."""
    if executors < 1 or cores < 1:
        raise ModelError(f"executors and cores must be >= 1, got {executors} and {cores}")
    return replay(sparklens_profile(app), executors * cores)


def sparklens_estimate(app, *, executors: int, cores: int) -> float:
    """Sparklens' estimated span (s) of the application of ``app`` on ``executors`` x ``cores`` task slots.

    >>> sparklens_estimate(read_spark_log("q52_e3.json.gz"), executors=6, cores=2)  # doctest: +SKIP
    1098.4
    """
    return sparklens_replay(app, executors=executors, cores=cores).seconds


def _stage_tasks(tasks) -> dict[int, np.ndarray]:
    """``stage -> its attempts' (launch, finish)`` (ms, an ``(n, 2)`` array), in launch order: ties by finish,
    task id, index and attempt, as Sparklens sorts them."""
    from spn.logs.spark_stages import rows_by_stage

    order = np.lexsort((tasks.attempt, tasks.index, tasks.task_id, tasks.finish_ms, tasks.launch_ms, tasks.stage_id))
    spans = np.column_stack((tasks.launch_ms, tasks.finish_ms))
    return {int(sid): spans[rows] for sid, rows in rows_by_stage(tasks.stage_id, order)}


def _stage_owners(app, tasks) -> dict[int, int]:
    """The job each stage with tasks belongs to: the first job (by id) declaring it; else a stage of its own (< 0)."""
    owner = {}
    for job in sorted(app.jobs, key=lambda j: j.job_id):
        for sid in job.stage_ids:
            if sid in tasks:
                owner.setdefault(sid, job.job_id)
    for sid in sorted(tasks):
        owner.setdefault(sid, -1 - sid)  # tasks of a stage no job declares: replayed on their own
    return owner


def _job_windows(app, tasks, owner) -> dict[int, tuple[int, int, list[int]]]:
    """``job -> (start, end, its stages)`` (ms): the job's own times, else its tasks' span (jobs with tasks only)."""
    own = defaultdict(list)
    for sid, job_id in owner.items():
        own[job_id].append(sid)
    declared = {job.job_id: job for job in app.jobs}
    windows = {}
    for job_id, stage_ids in own.items():
        first = min(int(tasks[s][0, 0]) for s in stage_ids)
        last = max(int(tasks[s][:, 1].max()) for s in stage_ids)
        job = declared.get(job_id)
        start = job.submission_ms if job is not None and job.submission_ms is not None else first
        end = job.completion_ms if job is not None and job.completion_ms is not None else last
        windows[job_id] = (min(start, first), max(end, last), sorted(stage_ids))
    return windows


def _overlapping(jobs) -> list[list[int]]:
    """Jobs in order of start, cut into sets wherever a job starts after every earlier one has ended."""
    sets, end = [], None
    for job_id in sorted(jobs, key=lambda j: (jobs[j][0], j)):
        start, stop, _ = jobs[job_id]
        if sets and start < end:
            sets[-1].append(job_id)
            end = max(end, stop)
        else:
            sets.append([job_id])
            end = stop
    return sets


def _parents(app, members, jobs, stage_ids) -> dict[int, tuple[int, ...]]:
    """Each stage's parents in the replay: its ``Parent IDs`` (else the previous stage of its job, by id), and
    for the first stages of a job, every stage of the jobs of its set that had ended when it was submitted."""
    ran = set(stage_ids)
    parents = {}
    for job_id in members:
        own = jobs[job_id][2]
        known = all(app.parents_of(s) is not None for s in own)
        for k, sid in enumerate(own):
            if known:
                parents[sid] = {p for p in app.parents_of(sid) if p in ran}
            else:  # Spark 1.x: one after another, in id order
                parents[sid] = {own[k - 1]} if k else set()
    for job_id in members:
        start = jobs[job_id][0]
        before = {s for other in members if other != job_id and jobs[other][1] <= start for s in jobs[other][2]}
        for sid in jobs[job_id][2]:
            if not parents[sid] & set(jobs[job_id][2]):
                parents[sid] |= before
    return {sid: tuple(sorted(parents[sid])) for sid in stage_ids}


def _slots(app) -> int | None:
    """The task slots of the run, as ``spn fit`` and the other baselines count them (``None`` if unknown)."""
    from spn.logs.spark_stages import application_cores

    return application_cores(app)[0]
