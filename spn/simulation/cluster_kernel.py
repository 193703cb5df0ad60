"""The compiled event loop of :class:`~spn.simulation.cluster_compiled.CompiledClusterSimulator` (Numba).

It is :meth:`spn.simulation.cluster.ClusterSimulator.run` (policies ``gate``, ``fifo``,
``fair``, and ``pool_finished_tasks`` under ``gate``) rewritten on arrays, so that Numba compiles it:

- a job is its user's index ``u`` (a closed population: each user has at most one job in
  the system), and its per-phase counts are row ``u`` of ``(N, P)`` arrays;
- the pending events (think ends, task ends) are a binary heap ordered by (time, push
  number), as the Python engine's ``heapq`` of tuples;
- ``gate``: the queue at the gate and each phase's jobs with waiting tasks (in the order
  they started the phase) are ring buffers of N slots (``queues``), and the phases that have
  such jobs a sorted list (``active``: a net of thousands of phases has few); pooling finished tasks,
  so are each phase's jobs running it, and a count of its finished tasks;
- ``fifo``/``fair``: the jobs with waiting tasks are an indexed binary heap keyed by
  (running tasks if ``fair`` else 0, submission number); a job's key is moved in place
  when it changes, which picks the same job as the Python engine's heap of versioned
  entries (the least key among jobs with waiting tasks), in bounded memory (``ready_heap``);
  a job's waiting phases are an unordered list (each is equally likely: order is moot).

Random numbers come from the NumPy ``Generator`` passed in (Numba calls its bit
generator directly), so a run continues one stream across calls and repeats with the
same seed. The laws are drawn as :meth:`Distribution.sample` draws them.

:func:`advance` runs until the run ends or ``budget`` units of work (events and container
allocations) are done, and returns; all state lives in the arrays, so the caller can look
at the clock and call again. The settling of control and containers after an event is
resumable: a budget that runs out in the middle of it leaves ``SETTLE`` set.

Compiled once per installation (``cache=True``; :mod:`spn.kernels`, group ``cluster``).
Importing this module loads Numba: import it only to run or warm the kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: policies
GATE, FIFO, FAIR = 0, 1, 2
#: laws (``Distribution.kind``; Erlang of shape 1 is EXPONENTIAL)
EXPONENTIAL, ERLANG, DETERMINISTIC, UNIFORM, LOGNORMAL, EMPIRICAL = range(6)
#: answers of :func:`advance`
MORE, DONE, EVENT_LIMIT, DEAD = range(4)
#: slots of the integer state
EVENTS, ENDED, SEQ, FREE, IN_SYSTEM, GATE_FREE, SUBMITTED, HEAP_LEN, READY_LEN, QUEUE_HEAD, QUEUE_LEN, SETTLE, \
    ACTIVE_LEN = range(13)
N_INT_STATE = 13
#: slots of the float state
T, LAST, WINDOW_START, RESPONSE_SUM, BUSY_AREA, JOBS_AREA = range(6)
N_FLOAT_STATE = 6
#: slots of the configuration
USERS, CONTAINERS, PHASES, GATE_PHASE, SINKS, POLICY, UNIFORM_PRIORITY, POOLED, WARMUP, STOP = range(10)
N_CONFIG = 10


def _compiled(function):
    """Compiled on first use, and cached on disk for later processes."""
    return njit(cache=True, nogil=True)(function)


def _inlined(function):
    """Compiled into its callers (a call passing arrays costs reference counting per array)."""
    return njit(cache=True, nogil=True, inline="always")(function)


# --------------------------------------------------------------------------- task times
@_inlined
def draw(rng, law, a, b, lo, n, emp):
    """One duration of a law: ``a``, ``b`` its parameters, ``emp[lo:lo + n]`` its samples (see
    :func:`spn.simulation.cluster_compiled.law_table`)."""
    if law == EXPONENTIAL:
        return rng.standard_exponential() * a
    if law == ERLANG:
        return rng.standard_gamma(a) * b
    if law == DETERMINISTIC:
        return a
    if law == UNIFORM:
        return a * (1.0 + b * (2.0 * rng.random() - 1.0))
    if law == LOGNORMAL:
        return np.exp(a + b * rng.standard_normal())
    return emp[lo + min(int(rng.random() * n), n - 1)]


@_inlined
def pick(rng, cands, n, priority, uniform_priority):
    """One of ``cands[:n]``: the highest priority, ties equally likely (no draw for one)."""
    if n > 1 and not uniform_priority:
        top = priority[cands[0]]
        for i in range(1, n):
            top = max(top, priority[cands[i]])
        m = 0
        for i in range(n):
            if priority[cands[i]] == top:
                cands[m] = cands[i]
                m += 1
        n = m
    if n == 1:
        return cands[0]
    return cands[min(int(rng.random() * n), n - 1)]


@_inlined
def active_insert(active, n, s):
    """Put phase ``s`` into the sorted ``active[:n]``."""
    i = n
    while i > 0 and active[i - 1] > s:
        active[i] = active[i - 1]
        i -= 1
    active[i] = s


@_inlined
def active_remove(active, n, k):
    """Take phase ``k`` out of the sorted ``active[:n]``."""
    i = 0
    while active[i] != k:
        i += 1
    for j in range(i, n - 1):
        active[j] = active[j + 1]


@_inlined
def start_driver(rng, ev_t, ev_seq, ev_u, ev_ph, si, t, u, s, n, law, a, b, lo, m, emp):
    """A driver phase ``s`` of job ``u`` starts: its ``n`` tasks all run at once, holding no container."""
    for _ in range(n):
        d = draw(rng, law, a, b, lo, m, emp)
        push_event(ev_t, ev_seq, ev_u, ev_ph, si[HEAP_LEN], t + d, si[SEQ], u, s)
        si[HEAP_LEN] += 1
        si[SEQ] += 1


# --------------------------------------------------------------------------- the event heap
@_inlined
def push_event(ev_t, ev_seq, ev_u, ev_ph, n, t, seq, u, ph):
    """Adds (t, seq, u, ph) to the heap of ``n`` events (sift up); the caller counts it."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if ev_t[p] < t or (ev_t[p] == t and ev_seq[p] < seq):
            break
        ev_t[i], ev_seq[i], ev_u[i], ev_ph[i] = ev_t[p], ev_seq[p], ev_u[p], ev_ph[p]
        i = p
    ev_t[i], ev_seq[i], ev_u[i], ev_ph[i] = t, seq, u, ph


@_inlined
def pop_event(ev_t, ev_seq, ev_u, ev_ph, n):
    """Removes the first event of the heap of ``n`` (read it at index 0 before)."""
    n -= 1
    t, seq, u, ph = ev_t[n], ev_seq[n], ev_u[n], ev_ph[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (ev_t[c + 1] < ev_t[c] or (ev_t[c + 1] == ev_t[c] and ev_seq[c + 1] < ev_seq[c])):
            c += 1
        if t < ev_t[c] or (t == ev_t[c] and seq < ev_seq[c]):
            break
        ev_t[i], ev_seq[i], ev_u[i], ev_ph[i] = ev_t[c], ev_seq[c], ev_u[c], ev_ph[c]
        i = c
    ev_t[i], ev_seq[i], ev_u[i], ev_ph[i] = t, seq, u, ph


# --------------------------------------------------------------------------- the ready jobs (fifo, fair)
@_inlined
def _before(a, b, running, jseq, fair):
    if fair and running[a] != running[b]:
        return running[a] < running[b]
    return jseq[a] < jseq[b]


@_compiled
def ready_fix(ready, pos, n, i, running, jseq, fair):
    """Moves the job at index ``i`` of the ready heap of ``n`` jobs up or down to its place."""
    j = ready[i]
    while i > 0:
        p = (i - 1) >> 1
        if not _before(j, ready[p], running, jseq, fair):
            break
        ready[i] = ready[p]
        pos[ready[i]] = i
        i = p
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _before(ready[c + 1], ready[c], running, jseq, fair):
            c += 1
        if not _before(ready[c], j, running, jseq, fair):
            break
        ready[i] = ready[c]
        pos[ready[i]] = i
        i = c
    ready[i] = j
    pos[j] = i


# --------------------------------------------------------------------------- the loop
@_compiled
def advance(rng, cfg, think_time, tables, si, sf, heap, jobs, queues, ready_heap, cands, times, budget,
            max_events):
    """Runs the simulation on until it ends (DONE), ``budget`` units of work are done (MORE),
    ``max_events`` events were taken (EVENT_LIMIT) or no event is pending (DEAD). ``times``
    (empty, or one slot per measured job) receives the measured jobs' execution times."""
    # the tuples are unpacked once: unpacking in the loop would count references at every event
    tasks, n_preds, succ_ptr, succ, sources, priority, kind, law_a, law_b, emp_ptr, emp, driver = tables
    submitted, jseq, preds_left, unfinished, waiting, sinks_left, running, phases, n_phases = jobs
    queue, wq, wq_head, wq_len, active, finished, rq, rq_head, rq_len = queues
    ready, pos = ready_heap
    ev_t, ev_seq, ev_u, ev_ph = heap
    N, C, P, gate, policy = cfg[USERS], cfg[CONTAINERS], cfg[PHASES], cfg[GATE_PHASE], cfg[POLICY]
    uniform_priority, warmup, stop = cfg[UNIFORM_PRIORITY] != 0, cfg[WARMUP], cfg[STOP]
    pooled = cfg[POOLED] != 0
    fair = policy == FAIR
    work = 0
    while True:
        if si[SETTLE]:                                  # control, then containers one at a time
            t = sf[T]
            while True:
                if policy == GATE:
                    while si[GATE_FREE] and si[QUEUE_LEN]:      # the job at the head of the queue starts
                        u = queue[si[QUEUE_HEAD]]
                        si[QUEUE_HEAD] = (si[QUEUE_HEAD] + 1) % N
                        si[QUEUE_LEN] -= 1
                        si[GATE_FREE] = 0
                        for s in sources:
                            if pooled:
                                rq[s, (rq_head[s] + rq_len[s]) % N] = u
                                rq_len[s] += 1
                            if driver[s]:
                                unfinished[u, s] = tasks[s]
                                start_driver(rng, ev_t, ev_seq, ev_u, ev_ph, si, t, u, s, tasks[s], kind[s],
                                             law_a[s], law_b[s], emp_ptr[s], emp_ptr[s + 1] - emp_ptr[s], emp)
                                if s == gate:           # none of its tasks waits: the gate is free again
                                    si[GATE_FREE] = 1
                                continue
                            unfinished[u, s] = waiting[u, s] = tasks[s]
                            if wq_len[s] == 0:
                                active_insert(active, si[ACTIVE_LEN], s)
                                si[ACTIVE_LEN] += 1
                            wq[s, (wq_head[s] + wq_len[s]) % N] = u
                            wq_len[s] += 1
                    if si[FREE] == 0:
                        break
                    n = si[ACTIVE_LEN]
                    if n == 0:
                        break
                    for i in range(n):
                        cands[i] = active[i]
                    if work >= budget:                  # resumed here by the next call
                        return MORE
                    k = pick(rng, cands, n, priority, uniform_priority)
                    u = wq[k, wq_head[k]]               # the oldest job of the phase
                    if waiting[u, k] == 1:
                        wq_head[k] = (wq_head[k] + 1) % N
                        wq_len[k] -= 1
                        if wq_len[k] == 0:
                            active_remove(active, si[ACTIVE_LEN], k)
                            si[ACTIVE_LEN] -= 1
                        if k == gate:
                            si[GATE_FREE] = 1
                else:
                    if si[FREE] == 0 or si[READY_LEN] == 0:
                        break
                    if work >= budget:
                        return MORE
                    u = ready[0]                        # the oldest job, or (fair) the least served
                    n = n_phases[u]
                    for i in range(n):
                        cands[i] = phases[u, i]
                    k = pick(rng, cands, n, priority, uniform_priority)
                    if waiting[u, k] == 1:              # the phase has no task waiting: off the list
                        for i in range(n):
                            if phases[u, i] == k:
                                phases[u, i] = phases[u, n - 1]
                                break
                        n_phases[u] -= 1
                work += 1
                waiting[u, k] -= 1
                running[u] += 1
                si[FREE] -= 1
                d = draw(rng, kind[k], law_a[k], law_b[k], emp_ptr[k], emp_ptr[k + 1] - emp_ptr[k], emp)
                push_event(ev_t, ev_seq, ev_u, ev_ph, si[HEAP_LEN], t + d, si[SEQ], u, k)
                si[HEAP_LEN] += 1
                si[SEQ] += 1
                if policy != GATE:
                    if n_phases[u] == 0:                # off the ready heap
                        si[READY_LEN] -= 1
                        i, last = pos[u], ready[si[READY_LEN]]
                        pos[u] = -1
                        if i < si[READY_LEN]:
                            ready[i] = last
                            pos[last] = i
                            ready_fix(ready, pos, si[READY_LEN], i, running, jseq, fair)
                    elif fair:                          # one more running task: its key grew
                        ready_fix(ready, pos, si[READY_LEN], pos[u], running, jseq, fair)
            si[SETTLE] = 0
        if si[EVENTS] >= max_events:
            return EVENT_LIMIT
        if work >= budget:
            return MORE
        if si[HEAP_LEN] == 0:
            return DEAD
        t, u, ph = ev_t[0], ev_u[0], ev_ph[0]
        pop_event(ev_t, ev_seq, ev_u, ev_ph, si[HEAP_LEN])
        si[HEAP_LEN] -= 1
        si[EVENTS] += 1
        work += 1
        dt = t - sf[LAST]
        sf[BUSY_AREA] += (C - si[FREE]) * dt
        sf[JOBS_AREA] += si[IN_SYSTEM] * dt
        sf[LAST] = t
        sf[T] = t
        si[SETTLE] = 1
        if ph < 0:                                      # user u ends thinking: a job is submitted
            submitted[u] = t
            jseq[u] = si[SUBMITTED]
            si[SUBMITTED] += 1
            for s in range(P):
                preds_left[u, s] = n_preds[s]
            sinks_left[u] = cfg[SINKS]
            running[u] = 0
            si[IN_SYSTEM] += 1
            if policy == GATE:                          # to the queue at the gate
                queue[(si[QUEUE_HEAD] + si[QUEUE_LEN]) % N] = u
                si[QUEUE_LEN] += 1
                continue
            lo, hi = 0, sources.size                    # fifo, fair: it starts at once
        else:                                           # a task of job u ends
            if not driver[ph]:
                si[FREE] += 1
                running[u] -= 1
            if pooled:                                  # T finished tasks of the phase, of any job:
                finished[ph] += 1                       # the oldest job running it ends it
                ends = finished[ph] == tasks[ph]
                if ends:
                    finished[ph] = 0
                    u = rq[ph, rq_head[ph]]
                    rq_head[ph] = (rq_head[ph] + 1) % N
                    rq_len[ph] -= 1
            else:
                unfinished[u, ph] -= 1
                ends = unfinished[u, ph] == 0
            lo = hi = 0
            if ends:                                    # the phase ends
                lo, hi = succ_ptr[ph], succ_ptr[ph + 1]
                if lo == hi:
                    sinks_left[u] -= 1
                    if sinks_left[u] == 0:              # the job ends; its user thinks again
                        si[IN_SYSTEM] -= 1
                        si[ENDED] += 1
                        if si[ENDED] > warmup:
                            sf[RESPONSE_SUM] += t - submitted[u]
                            if times.size:              # asked for: one slot per measured job
                                times[si[ENDED] - warmup - 1] = t - submitted[u]
                        elif si[ENDED] == warmup:
                            sf[WINDOW_START] = t
                            sf[BUSY_AREA] = 0.0
                            sf[JOBS_AREA] = 0.0
                        if si[ENDED] >= stop:
                            si[SETTLE] = 0
                            return DONE
                        push_event(ev_t, ev_seq, ev_u, ev_ph, si[HEAP_LEN],
                                   t + rng.standard_exponential() * think_time, si[SEQ], u, -1)
                        si[HEAP_LEN] += 1
                        si[SEQ] += 1
        for i in range(lo, hi):                         # phases that start: all their tasks wait
            if ph < 0:
                s = sources[i]
            else:
                s = succ[i]
                preds_left[u, s] -= 1
                if preds_left[u, s]:
                    continue
            if pooled:
                rq[s, (rq_head[s] + rq_len[s]) % N] = u
                rq_len[s] += 1
            if driver[s]:
                unfinished[u, s] = tasks[s]
                start_driver(rng, ev_t, ev_seq, ev_u, ev_ph, si, t, u, s, tasks[s], kind[s], law_a[s], law_b[s],
                             emp_ptr[s], emp_ptr[s + 1] - emp_ptr[s], emp)
                if policy == GATE and s == gate:
                    si[GATE_FREE] = 1
                continue
            unfinished[u, s] = waiting[u, s] = tasks[s]
            if policy == GATE:
                if wq_len[s] == 0:
                    active_insert(active, si[ACTIVE_LEN], s)
                    si[ACTIVE_LEN] += 1
                wq[s, (wq_head[s] + wq_len[s]) % N] = u
                wq_len[s] += 1
            else:
                phases[u, n_phases[u]] = s
                n_phases[u] += 1
        if policy != GATE and n_phases[u] > 0:          # job u has waiting tasks: place it by its key
            if pos[u] < 0:
                ready[si[READY_LEN]] = u
                pos[u] = si[READY_LEN]
                si[READY_LEN] += 1
            ready_fix(ready, pos, si[READY_LEN], pos[u], running, jseq, fair)
