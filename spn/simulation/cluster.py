"""An independent cluster simulator: jobs with identity, no net at all.

It states the modelling assumptions of docs/design.md §3.4 in a job's own terms, and is
written without :mod:`spn.net` so that it can check the net. The scheduling policy
(``scheduler.policy`` of the description, or ``policy=``) decides who gets a free
container; each policy has its own loop (docs/design.md §7.2):

- ``gate`` (the paper's model, what the net does): described below.
- ``fifo``: a job starts its source phases as soon as it is submitted; every free
  container goes to the *oldest* job (by submission) that has a waiting task in an
  enabled phase, no preemption (YARN FIFO ordering, Spark FIFO scheduling). A younger
  job's first phase thus overlaps an older job's later phases.
- ``fair``: as ``fifo``, but a free container goes to the job with the fewest running
  tasks, ties to the oldest (Spark FAIR with one job per pool, YARN fair ordering).
  Within the chosen job, the phase of the highest ``priority`` wins, ties broken with
  each of its waiting phases equally likely.

The ``gate`` policy:

- N users each think an exponential time of mean Z, then submit a job to a FIFO
  queue.
- Capacity scheduler: the job at the head of the queue starts only when the gate
  is free; a started job holds the gate until its *gate phase* (the last phase in
  topological order, ties broken by list order — the phase the net puts the gate
  on) has got containers for all its tasks.
- A job starts its source phases; a phase starts when all its predecessors (of the
  same job) ended, and then has ``tasks`` waiting tasks; it ends when all of them
  finished; the job ends when all its sink phases ended, and its user thinks again.
- C containers: a free container goes to a waiting task; among phases with waiting
  tasks the highest ``priority`` wins, ties are broken with each waiting *phase*
  (by name, as in the net, where one allocation activity serves a phase of every
  job) equally likely; within a phase the oldest job's task goes first. Control
  (phase ends and starts, job starts) settles before any container is handed out,
  and again after each one, as the net's control priority does.
- A driver phase (``kind: driver``) takes no container: all its tasks start with it and
  run side by side, whatever the other jobs hold; as the gate phase it frees the gate
  as it starts (none of its tasks waits). So under every policy.

Where it must differ from the net: the net mixes the tokens of consecutive jobs in
shared places. Finished tasks of two jobs in the same phase (possible when a job
reaches a phase while the previous job still runs it) count together towards
"all T tasks finished", so the net may end the older job with the younger one's
tasks. Here every job counts only its own tasks. So the net can report a lower
mean execution time (and, the population being closed, a higher throughput);
``pool_finished_tasks=True`` switches this simulator to the net's assumption, which
measures the size of the effect.

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 5.0},
...     "cluster": {"containers": 2},
...     "phases": [{"name": "p", "tasks": 2, "task_time": 1.5, "distribution": "deterministic"}]})
>>> rep = ClusterSimulator(desc).run(seed=1, warmup=2, length=10)
>>> round(rep.response_sum / rep.completions, 9)
1.5
"""

from __future__ import annotations

import heapq
import time
from bisect import insort
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from spn.description.model import POLICIES, job_classes, require_single_class
from spn.exceptions import ModelError, SpnError
from spn.simulation.distributions import CLOCK_EVERY, SimulationTimeout, law_stream, phase_distribution, stream


@dataclass(frozen=True)
class ClusterReplication:
    """What one run of :meth:`ClusterSimulator.run` observed in its measurement window.

    ``response_sum`` is the sum of the execution times (submission to end) of the
    ``completions`` jobs that ended in the window, ``busy_area`` the integral of
    busy containers, ``jobs_in_system_area`` the integral of submitted, unfinished
    jobs. ``events`` counts think ends and task ends of the whole run. ``job_times``: the
    execution times of those ``completions`` jobs in the order they ended, when the run was
    asked for them (``run(..., job_times=True)``), else None.
    """

    start: float
    duration: float
    completions: int
    response_sum: float
    busy_area: float
    jobs_in_system_area: float
    events: int
    seconds: float
    # keyword-only: QueueReplication adds fields without defaults after these
    job_times: np.ndarray | None = field(default=None, kw_only=True, compare=False, repr=False)


class _Job:
    __slots__ = ("submitted", "preds_left", "unfinished", "waiting", "sinks_left")

    def __init__(self, submitted, preds, sinks):
        self.submitted = submitted
        self.preds_left = list(preds)
        self.unfinished = [0] * len(preds)
        self.waiting = [0] * len(preds)
        self.sinks_left = sinks


class ClusterSimulator:
    """Simulates the cluster of a model description job by job.

    ``laws`` optionally replaces phase task-time laws (``{phase name: Distribution}``);
    by default each phase uses its description's law.

    ``policy`` (``fifo``, ``fair`` or ``gate``) replaces the description's
    ``scheduler.policy``.

    ``pool_finished_tasks=True`` reproduces the net's assumption instead of the
    cluster's: the finished tasks of a phase are counted across jobs, and each time
    ``tasks`` of them have finished, the oldest job still running that phase ends it
    (as the net's "PF >= T" does with anonymous tokens). Comparing both settings
    measures what that assumption changes. It goes with the net's policy, ``gate``.

    ``response_times``: set it to a list to have every measured job's execution time
    appended to it (the distribution behind the mean: percentiles to check the exact ones);
    ``run(..., job_times=True)`` returns them with the replication instead.

    ``fifo`` and ``fair`` run :class:`~spn.simulation.queues.QueueSimulator`'s loop, the
    description being one class in one queue holding every container; a description with
    query classes and queues is that simulator's.
    """

    response_times: list | None = None

    def __init__(self, desc, laws=None, *, pool_finished_tasks: bool = False, policy: str | None = None):
        require_single_class(desc, "ClusterSimulator", instead="spn.simulation.queues.QueueSimulator")
        self.desc = desc
        self.pool_finished_tasks = bool(pool_finished_tasks)
        self.policy = desc.scheduler.policy if policy is None else policy
        if self.policy not in POLICIES:
            raise ModelError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if self.pool_finished_tasks and self.policy != "gate":
            raise ModelError(f"pool_finished_tasks reproduces the net, which models policy gate; "
                             f"policy {self.policy} keeps every job's tasks apart")
        phases = list(desc.phases)
        names = [p.name for p in phases]
        index = {name: k for k, name in enumerate(names)}
        laws = dict(laws or {})
        unknown = sorted(set(laws) - set(names))
        if unknown:
            raise ModelError(f"laws: unknown phases {unknown}")
        self.names = names
        self.tasks = [p.tasks for p in phases]
        self.driver = [not p.holds_containers for p in phases]
        self.priority = [float(p.priority) for p in phases]
        self.laws = [laws.get(p.name) or phase_distribution(p) for p in phases]
        self.succ = [[] for _ in phases]
        self.n_preds = [0] * len(phases)
        for a, b in desc.edges:
            self.succ[index[a]].append(index[b])
            self.n_preds[index[b]] += 1
        self.sources = [k for k in range(len(phases)) if self.n_preds[k] == 0]
        self.sinks = [k for k in range(len(phases)) if not self.succ[k]]
        self.gate = self._last_in_topological_order()
        self.users = desc.workload.users
        self.think_time = desc.workload.think_time
        self.containers = desc.cluster.containers
        if self.policy != "gate":
            # fifo and fair choose between jobs: the queue loop, one class in one queue
            from spn.simulation.queues import QueueSimulator

            self._by_job = QueueSimulator(desc, {job_classes(desc)[0].name: laws}, policy=self.policy)

    def _last_in_topological_order(self) -> int:
        """Kahn's algorithm, always taking the ready phase listed first; the last one taken."""
        left = list(self.n_preds)
        ready = [k for k in range(len(left)) if left[k] == 0]
        order = []
        while ready:
            ready.sort()
            k = ready.pop(0)
            order.append(k)
            for s in self.succ[k]:
                left[s] -= 1
                if left[s] == 0:
                    ready.append(s)
        if len(order) != len(left):
            raise ModelError("phases form a cycle")
        return order[-1]

    def run(self, seed=None, *, warmup: int, length: int, max_events: int | None = None,
            deadline: float | None = None, job_times: bool = False) -> ClusterReplication:
        """Simulate until ``warmup + length`` jobs ended; measure over the last ``length``.

        ``seed`` is an int, a :class:`numpy.random.Generator` or None; ``deadline``, a
        :func:`time.perf_counter` instant, stops the run when the clock passes it
        (:class:`SimulationTimeout`). ``job_times=True`` keeps each measured job's execution
        time (``ClusterReplication.job_times``).
        """
        if length < 1:
            raise ModelError("length must be at least one job")
        if self.policy != "gate":
            return self._run_by_job(seed, warmup, length, max_events, deadline, job_times)
        rng = np.random.default_rng(seed)
        expo = stream(rng.standard_exponential)
        unif = stream(rng.random)
        durations = [law_stream(law, rng) for law in self.laws]
        Z, C, N = self.think_time, self.containers, self.users
        tasks, priority, succ, sources, driver = self.tasks, self.priority, self.succ, self.sources, self.driver
        gate, n_preds, n_sinks = self.gate, self.n_preds, len(self.sinks)
        n_phases = len(tasks)
        heappush, heappop = heapq.heappush, heapq.heappop
        max_events = max_events if max_events is not None else 1 << 62
        deadline = deadline if deadline is not None else float("inf")
        uniform_priority = len(set(priority)) == 1
        pooled = self.pool_finished_tasks
        finished = [0] * n_phases                      # pooled mode: finished tasks per phase
        running = [deque() for _ in range(n_phases)]   # pooled mode: jobs running a phase, oldest first

        heap = []                     # (time, seq, job or None, phase)
        seq = 0
        for _ in range(N):
            heappush(heap, (next(expo) * Z, seq, None, -1))
            seq += 1
        queue = deque()               # submitted jobs not started
        waiting = [deque() for _ in range(n_phases)]   # jobs with waiting tasks, per phase
        active = []                   # the phases whose ``waiting`` is not empty, in phase order

        def start_phase(job, s):
            """Phase s of ``job`` starts: all its tasks wait for containers, or (a driver phase) run at once."""
            nonlocal seq, gate_free
            job.unfinished[s] = tasks[s]
            if pooled:
                running[s].append(job)
            if driver[s]:
                for _ in range(tasks[s]):
                    heappush(heap, (t + next(durations[s]), seq, job, s))
                    seq += 1
                gate_free = gate_free or s == gate     # none of its tasks will wait for a container
                return
            job.waiting[s] = tasks[s]
            if not waiting[s]:
                insort(active, s)
            waiting[s].append(job)

        gate_free = True
        free = C
        in_system = 0
        # statistics
        ended = 0
        stop = warmup + length
        window_start = 0.0 if warmup == 0 else -1.0
        response_sum = 0.0
        record = [] if job_times else self.response_times
        busy_area = 0.0
        jobs_area = 0.0
        last = 0.0
        events = 0
        t = 0.0
        started = time.perf_counter()

        while ended < stop:
            if not heap:
                raise SpnError("the cluster is dead: no event pending")
            t, _, job, ph = heappop(heap)
            events += 1
            if events > max_events:
                raise SpnError(f"simulation stopped after {events:,} events (max_events) without finishing")
            if not events % CLOCK_EVERY and time.perf_counter() > deadline:
                raise SimulationTimeout(f"the replication was stopped at its deadline after {events:,} events, "
                                        f"at simulated time {t:g}")
            dt = t - last
            busy_area += (C - free) * dt
            jobs_area += in_system * dt
            last = t
            if job is None:                          # a user ends thinking: a job is submitted
                queue.append(_Job(t, n_preds, n_sinks))
                in_system += 1
            else:                                    # a task ends
                if not driver[ph]:
                    free += 1
                if pooled:
                    finished[ph] += 1
                    if finished[ph] == tasks[ph]:    # T tasks of the phase, of any job, finished:
                        finished[ph] = 0             # the oldest job running it ends it
                        job = running[ph].popleft()
                    else:
                        job = None
                else:
                    job.unfinished[ph] -= 1
                    if job.unfinished[ph]:
                        job = None
                if job is not None:                  # the phase ends
                    for s in succ[ph]:
                        job.preds_left[s] -= 1
                        if job.preds_left[s] == 0:
                            start_phase(job, s)
                    if not succ[ph]:
                        job.sinks_left -= 1
                        if job.sinks_left == 0:      # the job ends; its user thinks again
                            in_system -= 1
                            ended += 1
                            if ended > warmup:
                                response_sum += t - job.submitted
                                if record is not None:
                                    record.append(t - job.submitted)
                            elif ended == warmup:
                                window_start = t
                                busy_area = jobs_area = 0.0
                            if ended >= stop:
                                break
                            heappush(heap, (t + next(expo) * Z, seq, None, -1))
                            seq += 1
            # settle: start jobs through the gate, then one container at a time
            while True:
                while gate_free and queue:
                    job = queue.popleft()
                    gate_free = False
                    for s in sources:
                        start_phase(job, s)
                if free == 0:
                    break
                if not active:
                    break
                cands = active
                if len(cands) > 1:
                    if not uniform_priority:
                        top = max(priority[k] for k in cands)
                        cands = [k for k in cands if priority[k] == top]
                    k = cands[int(next(unif) * len(cands))] if len(cands) > 1 else cands[0]
                else:
                    k = cands[0]
                job = waiting[k][0]
                job.waiting[k] -= 1
                if job.waiting[k] == 0:
                    waiting[k].popleft()
                    if not waiting[k]:
                        active.remove(k)
                    if k == gate:
                        gate_free = True
                free -= 1
                heappush(heap, (t + next(durations[k]), seq, job, k))
                seq += 1
        return ClusterReplication(
            start=window_start, duration=t - window_start, completions=ended - warmup,
            response_sum=response_sum, busy_area=busy_area, jobs_in_system_area=jobs_area,
            events=events, seconds=time.perf_counter() - started,
            job_times=self._kept(record) if job_times else None,
        )

    def _kept(self, record: list) -> np.ndarray:
        """The job times a ``job_times=True`` run recorded, also handed to ``response_times`` if set."""
        if self.response_times is not None:
            self.response_times.extend(record)
        return np.array(record, dtype=float)

    def _run_by_job(self, seed, warmup, length, max_events, deadline, job_times) -> ClusterReplication:
        """:meth:`run` for ``fifo`` and ``fair``: the queue simulator's loop, its replication as this one's."""
        keep = job_times or self.response_times is not None
        rep = self._by_job.run(seed, warmup=warmup, length=length, max_events=max_events,
                               deadline=deadline, job_times=keep)
        times = self._kept(list(rep.job_times)) if keep else None
        return ClusterReplication(
            start=rep.start, duration=rep.duration, completions=rep.completions,
            response_sum=rep.response_sum, busy_area=rep.busy_area,
            jobs_in_system_area=rep.jobs_in_system_area, events=rep.events, seconds=rep.seconds,
            job_times=times if job_times else None,
        )
