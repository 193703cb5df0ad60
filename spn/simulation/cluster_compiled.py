"""The cluster simulator compiled (Numba): :class:`ClusterSimulator`'s semantics, many times faster.

:class:`CompiledClusterSimulator` takes what :class:`~spn.simulation.cluster.ClusterSimulator`
takes (a description, ``laws=``, ``policy=``) and its :meth:`~CompiledClusterSimulator.run`
returns the same :class:`~spn.simulation.cluster.ClusterReplication`: the same model
(docs/design.md §7.2, policies ``gate``, ``fifo`` and ``fair``), statistically equal
results, other random streams. ``pool_finished_tasks`` is refused (it lets a job end
while another job's tasks of it still run, which needs jobs that outlive their users'
slots; the Python engine has it). The loop itself is :mod:`spn.simulation.cluster_kernel`.

- Chunks: the kernel runs a budget of work (events and container allocations), then
  returns; between chunks :meth:`run` looks at the clock (``deadline``) and at
  ``max_events``. The budget adapts so that a chunk takes a few milliseconds.
- Memory: every array is sized from the users N, the phases P and the containers before
  the run starts (about 20·N·P bytes), and a size past half the available memory is a
  :class:`ModelError` (:func:`memory_needed`).
- Compilation: once per installation, cached by Numba on disk (:mod:`spn.kernels`,
  group ``cluster``). Until then :func:`compiled_cluster_ready` is False and
  :func:`cluster_simulator` hands out the Python engine and has the kernel compiled in
  a background process; the first compiled run in a process loads it from the cache.

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 5.0},
...     "cluster": {"containers": 2}, "scheduler": {"policy": "gate"},
...     "phases": [{"name": "p", "tasks": 2, "task_time": 1.5, "distribution": "deterministic"}]})
>>> sim = CompiledClusterSimulator(desc)             # loads no Numba until it runs
>>> sim.policy, memory_needed(users=1, phases=1, containers=2, tasks=2) < 1000
('gate', True)
>>> isinstance(compiled_cluster_ready(), bool)
True
"""

from __future__ import annotations

import math
import time

import numpy as np

from spn import kernels
from spn.exceptions import ModelError, SpnError
from spn.limits import available_memory
from spn.simulation.cluster import ClusterReplication, ClusterSimulator
from spn.simulation.distributions import SimulationTimeout

#: the codes of :mod:`spn.simulation.cluster_kernel` (which imports Numba: these tables are built without it)
_POLICY = {"gate": 0, "fifo": 1, "fair": 2}
_LAW = {"exponential": 0, "erlang": 1, "deterministic": 2, "uniform": 3, "lognormal": 4, "empirical": 5}
#: work (events and allocations) of the first chunk; then doubled or halved to last CHUNK_SECONDS
FIRST_BUDGET = 1 << 13
CHUNK_SECONDS = (0.002, 0.02)
MAX_BUDGET = 1 << 24


def compiled_cluster_ready() -> bool:
    """Has this installation compiled (and cached) the kernel? Until then, use the Python engine."""
    return kernels.ready("cluster")


def await_compiled_cluster(until: float | None = None) -> bool:
    """Is the compiled simulator ready, once its compilation is awaited until ``until`` (a
    :func:`time.perf_counter` instant; None: as long as it runs)? On an installation's first use it is
    compiled in the background (about 7 s): for an answer that would otherwise simulate a large model with
    the Python engine (30 s at the paper's scale), waiting is the shorter way."""
    if compiled_cluster_ready():
        return True
    kernels.warm_in_background("cluster")
    kernels.await_other("cluster", until=until, message="waiting for the compiled cluster simulator "
                        "(compiled once per installation, about 10 s)")
    return compiled_cluster_ready()


def cluster_simulator(desc, laws=None, *, policy: str | None = None):
    """The compiled simulator if it is ready, else :class:`ClusterSimulator` (and the kernel is
    compiled in the background for the next run). Both have the same ``run``."""
    if compiled_cluster_ready():
        return CompiledClusterSimulator(desc, laws, policy=policy)
    kernels.warm_in_background("cluster")
    return ClusterSimulator(desc, laws, policy=policy)


def law_table(laws):
    """The laws as arrays: kind codes, two parameters each, and the empirical samples end to end.

    erlang: (shape, mean/shape), exponential and deterministic: (mean, 0), uniform: (mean,
    spread), lognormal: (μ, σ) of the logarithm (mean exp(μ + σ²/2)), empirical: samples
    ``emp[ptr[k]:ptr[k + 1]]``.

    >>> from spn.simulation.distributions import Distribution
    >>> kind, a, b, ptr, emp = law_table([Distribution.erlang(4, 2.0), Distribution.empirical([1, 3])])
    >>> kind.tolist(), a.tolist(), b.tolist(), ptr.tolist(), emp.tolist()
    ([1, 5], [4.0, 0.0], [0.5, 0.0], [0, 0, 2], [1.0, 3.0])
    """
    P = len(laws)
    kind = np.zeros(P, np.int64)
    a, b = np.zeros(P), np.zeros(P)
    ptr = np.zeros(P + 1, np.int64)
    samples = []
    for k, law in enumerate(laws):
        name = "exponential" if law.is_exponential else law.kind
        kind[k] = _LAW[name]
        if name == "erlang":
            a[k], b[k] = law.shape, law.mean / law.shape
        elif name in ("exponential", "deterministic"):
            a[k] = law.mean
        elif name == "uniform":
            a[k], b[k] = law.mean, law.spread
        elif name == "lognormal":
            sigma2 = math.log1p(law.cv ** 2)
            a[k], b[k] = math.log(law.mean) - sigma2 / 2.0, math.sqrt(sigma2)
        else:
            samples.extend(law.samples)
        ptr[k + 1] = len(samples)
    return kind, a, b, ptr, np.array(samples, dtype=float)


def memory_needed(*, users: int, phases: int, containers: int, tasks: int, samples: int = 0,
                  driver_tasks: int = 0) -> int:
    """Bytes the arrays of one run take: per job and phase three counts and a queue slot
    (int32), per pending event 32 bytes (thinking users and running tasks, at most
    N + min(C, N · tasks of a job) + N · driver tasks of a job), per job about 60 bytes."""
    events = pending_events(users, containers, tasks, driver_tasks)
    return 16 * users * phases + 32 * events + 60 * users + 64 * phases + 8 * samples


def pending_events(users: int, containers: int, tasks: int, driver_tasks: int = 0) -> int:
    """The most events pending at once: a think end per user, a task end per busy container, and
    every task of every job's driver phases (which hold no container, so the pool does not bound them).

    >>> pending_events(3, 2, 5), pending_events(3, 2, 5, driver_tasks=2)
    (5, 11)
    """
    return users + min(containers, users * tasks) + users * driver_tasks


class CompiledClusterSimulator:
    """:class:`ClusterSimulator` for one class of jobs, run by a compiled loop.

    ``laws`` (``{phase name: Distribution}``), ``policy`` and ``pool_finished_tasks`` as for
    :class:`ClusterSimulator`, which checks them.
    """

    def __init__(self, desc, laws=None, *, policy: str | None = None, pool_finished_tasks: bool = False):
        plain = ClusterSimulator(desc, laws, policy=policy, pool_finished_tasks=pool_finished_tasks)  # checks
        self.desc = desc
        self.policy = plain.policy
        self.pool_finished_tasks = plain.pool_finished_tasks
        self.users, self.containers, self.think_time = plain.users, plain.containers, plain.think_time
        P = len(plain.tasks)
        kind, a, b, ptr, emp = law_table(plain.laws)
        held = sum(n for n, driver in zip(plain.tasks, plain.driver) if not driver)
        driver_tasks = sum(plain.tasks) - held
        needed = memory_needed(users=self.users, phases=P, containers=self.containers,
                               tasks=held, samples=len(emp), driver_tasks=driver_tasks)
        if needed > available_memory() // 2:
            raise ModelError(f"the compiled cluster simulator needs {needed / 2**30:.3g} GiB for "
                             f"{self.users:,} users and {P:,} phases, more than half the memory available")
        succ_ptr = np.zeros(P + 1, np.int64)
        succ_ptr[1:] = np.cumsum([len(s) for s in plain.succ])
        self._tables = (
            np.array(plain.tasks, np.int32), np.array(plain.n_preds, np.int32), succ_ptr,
            np.array([s for row in plain.succ for s in row], np.int64), np.array(plain.sources, np.int64),
            np.array(plain.priority, float), kind, a, b, ptr, emp, np.array(plain.driver, np.bool_))
        self._config = [self.users, self.containers, P, plain.gate, len(plain.sinks), _POLICY[self.policy],
                        int(len(set(plain.priority)) == 1), int(self.pool_finished_tasks)]
        self._pending = pending_events(self.users, self.containers, held, driver_tasks)

    def run(self, seed=None, *, warmup: int, length: int, max_events: int | None = None,
            deadline: float | None = None, stop=None, job_times: bool = False) -> ClusterReplication:
        """Simulate until ``warmup + length`` jobs ended; measure over the last ``length``.

        As :meth:`ClusterSimulator.run`: ``seed`` is an int, a :class:`numpy.random.Generator`
        (its stream goes on) or None; past ``max_events`` events, :class:`SpnError`; past
        ``deadline`` (a :func:`time.perf_counter` instant), or once ``stop`` (a :class:`threading.Event`)
        is set, :class:`SimulationTimeout`; ``job_times=True`` keeps each measured job's execution time (8 bytes a job).
        """
        if length < 1:
            raise ModelError("length must be at least one job")
        if not _marked and not compiled_cluster_ready():
            kernels.await_other("cluster", until=deadline)
        from spn.simulation import (
            cluster_kernel as kernel,  # loads Numba, and the kernel from its cache
        )

        started = time.perf_counter()
        rng = np.random.default_rng(seed)
        state = self._start(kernel, rng, int(warmup), int(length), bool(job_times))
        si, sf = state[3], state[4]
        limit = (1 << 62) if max_events is None else int(max_events)
        budget = FIRST_BUDGET
        while True:
            chunk = time.perf_counter()
            answer = kernel.advance(rng, *state, budget, limit)
            if answer == kernel.DONE:
                break
            if answer == kernel.DEAD:
                raise SpnError("the cluster is dead: no event pending")
            if answer == kernel.EVENT_LIMIT:
                raise SpnError(f"simulation stopped after {limit + 1:,} events (max_events) without finishing")
            now = time.perf_counter()
            if deadline is not None and now > deadline:
                raise SimulationTimeout(f"the replication was stopped at its deadline after {si[kernel.EVENTS]:,} "
                                        f"events, at simulated time {sf[kernel.T]:g}")
            if stop is not None and stop.is_set():
                raise SimulationTimeout("the replication was stopped (another piece of the answer failed)")
            if now - chunk < CHUNK_SECONDS[0]:
                budget = min(2 * budget, MAX_BUDGET)
            elif now - chunk > CHUNK_SECONDS[1]:
                budget = max(budget // 2, 16)
        _mark_ready()
        t, window_start = sf[kernel.T], sf[kernel.WINDOW_START]
        return ClusterReplication(
            start=float(window_start), duration=float(t - window_start),
            completions=int(si[kernel.ENDED]) - int(warmup), response_sum=float(sf[kernel.RESPONSE_SUM]),
            busy_area=float(sf[kernel.BUSY_AREA]), jobs_in_system_area=float(sf[kernel.JOBS_AREA]),
            events=int(si[kernel.EVENTS]), seconds=time.perf_counter() - started,
            job_times=state[-1] if job_times else None)

    def _start(self, kernel, rng, warmup, length, job_times=False):
        """The arguments of ``kernel.advance`` after ``rng``: every user thinking, every container free."""
        N, P = self.users, len(self._tables[0])
        gate = self.policy == "gate"
        config = np.array(self._config + [warmup, warmup + length], np.int64)
        assert config.size == kernel.N_CONFIG
        si = np.zeros(kernel.N_INT_STATE, np.int64)
        si[kernel.SEQ], si[kernel.FREE], si[kernel.GATE_FREE], si[kernel.HEAP_LEN] = N, self.containers, 1, N
        sf = np.zeros(kernel.N_FLOAT_STATE)
        sf[kernel.WINDOW_START] = 0.0 if warmup == 0 else -1.0
        # the first think ends, as a heap: sorted by (time, push number) is a heap
        think = rng.standard_exponential(N) * self.think_time
        order = np.argsort(think, kind="stable")
        heap = (np.zeros(self._pending), np.zeros(self._pending, np.int64), np.zeros(self._pending, np.int64),
                np.full(self._pending, -1, np.int64))
        heap[0][:N], heap[1][:N], heap[2][:N] = think[order], order, order
        # per job: submission time and number, per-phase counts, sinks left, running tasks, and
        # (fifo, fair) its phases with waiting tasks; the arrays a policy does not use are empty
        n_job = 0 if gate else N
        jobs = (np.zeros(N), np.zeros(N, np.int64), np.zeros((N, P), np.int32), np.zeros((N, P), np.int32),
                np.zeros((N, P), np.int32), np.zeros(N, np.int32), np.zeros(N, np.int64),
                np.zeros((n_job, P), np.int32), np.zeros(n_job, np.int32))
        # gate: the queue at the gate, per phase a ring of the jobs with waiting tasks, the phases with
        # such jobs; pooling
        # finished tasks, per phase their count and a ring of the jobs running it
        n_gate, p_gate = (N, P) if gate else (0, 0)
        n_pool, p_pool = (N, P) if self.pool_finished_tasks else (0, 0)
        queues = (np.zeros(n_gate, np.int64), np.zeros((p_gate, n_gate), np.int64), np.zeros(p_gate, np.int64),
                  np.zeros(p_gate, np.int64), np.zeros(p_gate, np.int64), np.zeros(p_pool, np.int64), np.zeros((p_pool, n_pool), np.int64),
                  np.zeros(p_pool, np.int64), np.zeros(p_pool, np.int64))
        # fifo, fair: the heap of jobs with waiting tasks, and each job's place in it (-1: none)
        ready = (np.zeros(n_job, np.int64), np.full(n_job, -1, np.int64))
        cands = np.zeros(P, np.int64)
        times = np.zeros(length if job_times else 0)    # empty: the kernel records nothing
        return config, float(self.think_time), self._tables, si, sf, heap, jobs, queues, ready, cands, times


_marked = False


def _mark_ready():
    """A compiled run happened: the kernel is in Numba's cache (recorded once per process)."""
    global _marked
    if not _marked:
        kernels.mark_ready("cluster")
        _marked = True


def warm() -> None:
    """Compile the kernel (or load it from the cache): one short run of each policy."""
    from spn.description import parse_description

    for policy in ("gate", "fifo", "fair"):
        desc = parse_description({"name": "warm", "workload": {"users": 2, "think_time": 1.0},
                                  "cluster": {"containers": 2}, "scheduler": {"policy": policy},
                                  "phases": [{"name": "a", "tasks": 2, "task_time": 1.0},
                                             {"name": "b", "tasks": 1, "task_time": 1.0, "priority": 1}]})
        CompiledClusterSimulator(desc).run(0, warmup=0, length=5)
        if policy == "gate":
            CompiledClusterSimulator(desc, pool_finished_tasks=True).run(0, warmup=0, length=5)
