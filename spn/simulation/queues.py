"""Query classes sharing a cluster through capacity-scheduler queues, simulated job by job.

A description with ``classes`` has several closed populations: class c has N_c users
who think (exponential, mean Z_c) and submit jobs of the class's own DAG to the class's
queue. The queues share the C containers as YARN's CapacityScheduler does, without
preemption (docs/design.md §4.6, §7.2):

- queue q is guaranteed ``capacity`` · C containers and may hold at most
  floor(``max_capacity`` · C) of them, borrowing those other queues leave idle;
- a free container goes, among the queues that have a job with a waiting task and hold
  fewer containers than their maximum, to the queue with the smallest
  used / (capacity · C), ties to the queue listed first;
- inside the queue, to a job by the queue's ``policy``: ``fifo`` the oldest job of the
  queue, ``fair`` the job with the smallest running tasks / ``weight`` of its class (ties
  to the oldest), compared exactly: each weight is read as the decimal it prints as, and
  the key is the integer running · (P / W_c), W_c the weights scaled to integers and P
  their least common multiple (written apart from the net's :func:`spn.models.jobs.fair_steps`);
- inside the job, to its waiting phase of the highest ``priority``, ties equally likely;
- a driver phase (``kind: driver``) takes no container: its tasks all start with it, and
  count neither in a queue's used containers nor in a job's running tasks.

Everything else is :class:`~spn.simulation.cluster.ClusterSimulator`'s ``fifo``/``fair``
loop: jobs keep their identity, a phase starts when all its predecessors of the same job
ended, control settles before any container is handed out. A one-class description is
one class in one queue holding every container: this is the loop
:class:`~spn.simulation.cluster.ClusterSimulator` runs for ``fifo`` and ``fair``.

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "cluster": {"containers": 2},
...     "classes": [{"name": "a", "users": 1, "think_time": 5.0, "queue": "qa",
...                  "phases": [{"name": "p", "tasks": 2, "task_time": 1.5, "distribution": "deterministic"}]},
...                 {"name": "b", "users": 1, "think_time": 5.0, "queue": "qb",
...                  "phases": [{"name": "p", "tasks": 2, "task_time": 1.0, "distribution": "deterministic"}]}],
...     "queues": [{"name": "qa", "capacity": 0.5, "max_capacity": 0.5}, {"name": "qb", "capacity": 0.5}]})
>>> rep = QueueSimulator(desc).run(seed=1, warmup=2, length=50)
>>> rep.queue_peaks          # qa never holds more than floor(0.5 · 2) = 1 container; qb borrows qa's
(1, 2)
>>> rep.class_response_sums[0] / rep.class_completions[0] >= 3.0     # so class a's two tasks run one by one
True
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, replace
from decimal import Decimal

import numpy as np

from spn.description.model import QUEUE_POLICIES, RATIO_TIE, job_classes, queue_limits, queues_of
from spn.exceptions import ModelError, SpnError
from spn.simulation.cluster import ClusterReplication, _Job
from spn.simulation.distributions import CLOCK_EVERY, SimulationTimeout, law_stream, phase_distribution, stream

@dataclass(frozen=True)
class QueueReplication(ClusterReplication):
    """:class:`ClusterReplication` (totals over every class) and what each class and queue saw.

    ``class_completions[c]`` and ``class_response_sums[c]`` are class c's jobs ended in the
    window and the sum of their execution times; ``queue_busy_areas[q]`` the integral of the
    containers queue q held over the window; ``queue_peaks[q]`` the most containers it held
    at once during the whole run (never more than its maximum).
    """

    class_completions: tuple[int, ...]
    class_response_sums: tuple[float, ...]
    queue_busy_areas: tuple[float, ...]
    queue_peaks: tuple[int, ...]


class _ClassJob(_Job):
    """A job of the ``fifo`` and ``fair`` queues, which choose between jobs.

    ``seq`` orders jobs by submission; ``phases`` lists its phases with waiting tasks;
    ``running`` counts its tasks holding containers; ``version`` tells the current entry
    of a ``fair`` heap from stale ones; ``cls`` is the index of its class.
    """

    __slots__ = ("seq", "phases", "running", "version", "cls")

    def __init__(self, submitted, preds, sinks, seq, cls):
        super().__init__(submitted, preds, sinks)
        self.seq = seq
        self.phases = []
        self.running = 0
        self.version = 0
        self.cls = cls


class _JobClass:
    """The tables of one class's DAG, indexed by the class's own phase numbers."""

    def __init__(self, job_class, queue: int, laws):
        phases = list(job_class.phases)
        index = {p.name: k for k, p in enumerate(phases)}
        self.name = job_class.name
        self.queue = queue
        self.users = job_class.workload.users
        self.think_time = job_class.workload.think_time
        self.tasks = [p.tasks for p in phases]
        self.driver = [not p.holds_containers for p in phases]
        self.priority = [float(p.priority) for p in phases]
        self.uniform_priority = len(set(self.priority)) == 1
        self.weight = Decimal(repr(float(job_class.weight)))    # the weight as written (0.3, not 0.29999...)
        self.fair_step = 1          # what one running task adds to a job's key in a fair queue (set per queue)
        self.laws = [laws.get(p.name) or phase_distribution(p) for p in phases]
        self.succ = [[] for _ in phases]
        self.n_preds = [0] * len(phases)
        for a, b in job_class.edges:
            self.succ[index[a]].append(index[b])
            self.n_preds[index[b]] += 1
        self.sources = [k for k in range(len(phases)) if self.n_preds[k] == 0]
        self.n_sinks = sum(1 for k in range(len(phases)) if not self.succ[k])


def _set_fair_steps(members) -> None:
    """Give the classes of one queue integer ``fair_step`` ∝ 1 / weight: running · step orders as running / weight.

    Every weight times 10^e is an integer W_c (e: the most decimal places); the step is
    lcm(W) / W_c, so equal ratios tie exactly and equal weights step 1.
    """
    if not members:
        return
    decimals = [jc.weight.as_tuple() for jc in members]            # (sign, digits, exponent), exact
    places = max(-min(d.exponent, 0) for d in decimals)
    scaled = [int("".join(map(str, d.digits))) * 10 ** (d.exponent + places) for d in decimals]
    common = math.lcm(*scaled)
    for jc, w in zip(members, scaled):
        jc.fair_step = common // w


class QueueSimulator:
    """Simulates the query classes and queues of a description (see the module docstring).

    ``laws`` optionally replaces task-time laws, ``{class name: {phase name: Distribution}}``.
    A one-class description is one class in one queue holding every container, under
    ``scheduler.policy`` or ``policy`` (``fifo`` or ``fair``; the gate is :class:`ClusterSimulator`'s).
    ``run(..., job_times=True)`` keeps the measured jobs' execution times.
    """

    def __init__(self, desc, laws=None, *, policy: str | None = None):
        self.desc = desc
        queues = queues_of(desc)
        if policy is not None:          # a one-class description run under another scheduler.policy
            queues = tuple(replace(q, policy=policy) for q in queues)
        C = desc.cluster.containers
        self.containers = C
        self.queue_names = [q.name for q in queues]
        for q in queues:
            if q.policy not in QUEUE_POLICIES:
                raise ModelError(f"queue {q.name}: policy {q.policy} is not a queue policy (fifo, fair): "
                                 f"the gate is the one-class model of ClusterSimulator")
        self.fair = [q.policy == "fair" for q in queues]
        self.limit = list(queue_limits(desc))
        self.inverse_share = [1.0 / (q.capacity * C) for q in queues]
        position = {name: k for k, name in enumerate(self.queue_names)}
        laws = dict(laws or {})
        unknown = sorted(set(laws) - {c.name for c in job_classes(desc)})
        if unknown:
            raise ModelError(f"laws: unknown classes {unknown}")
        self.classes = []
        for job_class in job_classes(desc):
            q = position[job_class.queue]
            self.classes.append(_JobClass(job_class, q, laws.get(job_class.name, {})))
        self.class_names = [c.name for c in self.classes]
        for q in range(len(queues)):
            _set_fair_steps([jc for jc in self.classes if jc.queue == q])

    def run(self, seed=None, *, warmup: int, length: int, max_events: int | None = None,
            deadline: float | None = None, job_times: bool = False) -> QueueReplication:
        """Simulate until ``warmup + length`` jobs (of any class) ended; measure over the last ``length``.

        ``seed``, ``max_events``, ``deadline`` and ``job_times`` as in :meth:`ClusterSimulator.run`.
        """
        if length < 1:
            raise ModelError("length must be at least one job")
        rng = np.random.default_rng(seed)
        # the streams are drawn in the order ClusterSimulator draws them, so that one class
        # in one queue repeats its numbers exactly
        expo = stream(rng.standard_exponential)
        unif = stream(rng.random)
        classes = self.classes
        durations = [[law_stream(law, rng) for law in jc.laws] for jc in classes]
        C = self.containers
        fair, limit, inverse_share = self.fair, self.limit, self.inverse_share
        n_queues = len(limit)
        heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
        max_events = max_events if max_events is not None else 1 << 62
        deadline = deadline if deadline is not None else float("inf")

        heap = []                     # (time, seq, job, phase) for a task end; (time, seq, None, class) for a think end
        seq = 0
        for c, jc in enumerate(classes):
            for _ in range(jc.users):
                heappush(heap, (next(expo) * jc.think_time, seq, None, c))
                seq += 1
        # per queue, the jobs with waiting tasks: fifo (seq, job); fair (running · fair_step, seq, version, job),
        # stale entries (version not the job's) dropped as they surface (as in ClusterSimulator._run_by_job)
        ready = [[] for _ in range(n_queues)]
        used = [0] * n_queues         # containers each queue holds
        peaks = [0] * n_queues
        submitted = 0

        def start_phase(job, jc, s):
            """Phase s of ``job`` starts: all its tasks wait for containers, or (a driver phase) run at once."""
            nonlocal seq
            job.unfinished[s] = jc.tasks[s]
            if jc.driver[s]:
                for _ in range(jc.tasks[s]):
                    heappush(heap, (t + next(durations[job.cls][s]), seq, job, s))
                    seq += 1
                return
            job.waiting[s] = jc.tasks[s]
            if not job.phases and not fair[jc.queue]:   # fifo: the job now has waiting tasks
                heappush(ready[jc.queue], (job.seq, job))
            job.phases.append(s)

        free = C
        in_system = 0
        # statistics
        ended = 0
        stop = warmup + length
        window_start = 0.0 if warmup == 0 else -1.0
        response_sum = busy_area = jobs_area = 0.0
        record = [] if job_times else None
        class_completions = [0] * len(classes)
        class_responses = [0.0] * len(classes)
        queue_areas = [0.0] * n_queues
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
            for q in range(n_queues):
                queue_areas[q] += used[q] * dt
            last = t
            if job is None:                          # a user of class ph submits a job, which starts
                jc = classes[ph]
                job = _ClassJob(t, jc.n_preds, jc.n_sinks, submitted, ph)
                submitted += 1
                in_system += 1
                for s in jc.sources:
                    start_phase(job, jc, s)
            else:                                    # a task ends
                jc = classes[job.cls]
                if not jc.driver[ph]:
                    free += 1
                    used[jc.queue] -= 1
                    job.running -= 1
                job.unfinished[ph] -= 1
                if not job.unfinished[ph]:           # the phase ends
                    for s in jc.succ[ph]:
                        job.preds_left[s] -= 1
                        if job.preds_left[s] == 0:
                            start_phase(job, jc, s)
                    if not jc.succ[ph]:
                        job.sinks_left -= 1
                        if job.sinks_left == 0:      # the job ends; its user thinks again
                            in_system -= 1
                            ended += 1
                            if ended > warmup:
                                response_sum += t - job.submitted
                                class_completions[job.cls] += 1
                                class_responses[job.cls] += t - job.submitted
                                if record is not None:
                                    record.append(t - job.submitted)
                            elif ended == warmup:
                                window_start = t
                                busy_area = jobs_area = 0.0
                                queue_areas = [0.0] * n_queues
                            if ended >= stop:
                                break
                            heappush(heap, (t + next(expo) * jc.think_time, seq, None, job.cls))
                            seq += 1
            q = jc.queue
            if fair[q] and job.phases:               # the job's key changed (or it has tasks waiting anew)
                job.version += 1
                heappush(ready[q], (job.running * jc.fair_step, job.seq, job.version, job))
                if len(ready[q]) > 4 * in_system + 64:   # drop stale entries
                    ready[q] = [entry for entry in ready[q] if entry[2] == entry[3].version]
                    heapq.heapify(ready[q])
            # settle: one container at a time, to the queue furthest below its guarantee
            while free:
                best, best_key = -1, 0.0
                for q in range(n_queues):
                    waiting_jobs = ready[q]
                    if fair[q]:
                        while waiting_jobs and waiting_jobs[0][2] != waiting_jobs[0][3].version:
                            heappop(waiting_jobs)
                    if waiting_jobs and used[q] < limit[q]:
                        key = used[q] * inverse_share[q]
                        if best < 0 or key < best_key - RATIO_TIE:
                            best, best_key = q, key
                if best < 0:
                    break
                waiting_jobs = ready[best]
                job = waiting_jobs[0][-1]
                jc = classes[job.cls]
                cands = job.phases
                if len(cands) > 1:
                    if not jc.uniform_priority:
                        top = max(jc.priority[k] for k in cands)
                        cands = [k for k in cands if jc.priority[k] == top]
                    k = cands[int(next(unif) * len(cands))] if len(cands) > 1 else cands[0]
                else:
                    k = cands[0]
                job.waiting[k] -= 1
                if not job.waiting[k]:
                    job.phases.remove(k)
                job.running += 1
                free -= 1
                used[best] += 1
                if used[best] > peaks[best]:
                    peaks[best] = used[best]
                heappush(heap, (t + next(durations[job.cls][k]), seq, job, k))
                seq += 1
                if not job.phases:
                    heappop(waiting_jobs)
                elif fair[best]:
                    job.version += 1
                    heapreplace(waiting_jobs, (job.running * jc.fair_step, job.seq, job.version, job))
        return QueueReplication(
            start=window_start, duration=t - window_start, completions=ended - warmup,
            response_sum=response_sum, busy_area=busy_area, jobs_in_system_area=jobs_area,
            events=events, seconds=time.perf_counter() - started,
            class_completions=tuple(class_completions), class_response_sums=tuple(class_responses),
            queue_busy_areas=tuple(queue_areas), queue_peaks=tuple(peaks),
            job_times=np.array(record, dtype=float) if job_times else None,
        )
