"""The method choice of ``spn solve``: whether the exact CTMC is worth trying, from the description alone.

:func:`choose_method` says why not (then ``spn solve`` takes the next method): the chain's
:func:`state_space_lower_bound` past ``max_states``, or a job-identity net too large to build
(:func:`job_net_too_large`); :func:`exploration_stopped` says why, when exploring stopped on the way.
"""

from __future__ import annotations

import math

import numpy as np

from spn.defaults import MAX_STATES
from spn.description.model import job_classes, queues_of
from spn.exceptions import StateSpaceLimitError

__all__ = ["state_space_lower_bound", "choose_method", "job_net_too_large", "JOB_NET_MAX_PLACES",
           "exploration_stopped"]


def exploration_stopped(error: StateSpaceLimitError, max_states: int, limit: int) -> str:
    """Why ``spn solve`` simulates after exploring stopped at ``limit`` states (``max_states`` asked for)."""
    if error.option == "max_seconds":
        return f"exploring the chain took too long ({error})"
    if error.option != "max_states":
        return f"the chain does not fit in memory ({error})"
    if limit < max_states:
        return (f"the chain has more than {limit:,} tangible states, the limit for a net whose gates only the "
                f"NumPy engine reads (fair-queue weights whose steps are too large for exact comparison in a double)")
    return f"the chain has more than {max_states:,} tangible states (max_states)"



def _comb(n, k):
    """C(n, k) as floats, elementwise (0 where k < 0 or k > n, inf past the float range), from the log-gamma of
    each distinct value (importing scipy.special for its ``comb`` takes a third of a second of every answer).

    >>> _comb(np.array([4.0, 5.0, 2.0]), 2.0).tolist(), float(_comb(2000.0, 1000.0))
    ([6.0, 10.0, 1.0], inf)
    """
    n, k = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(k, dtype=float))
    values, where = np.unique(np.stack([n, k, n - k]), return_inverse=True)
    log_factorial = np.array([math.lgamma(v + 1.0) if v >= 0 else 0.0 for v in values])[where.reshape(3, *n.shape)]
    with np.errstate(over="ignore"):
        c = np.exp(log_factorial[0] - log_factorial[1] - log_factorial[2])
    c = np.where(c < 2.0 ** 53, np.round(c), c)       # a whole number: the log-gamma's last bits rounded away
    return np.where((k >= 0) & (k <= n), c, 0.0)


def state_space_lower_bound(desc) -> float:
    """A lower bound on the tangible states of ``desc``'s chain, from the description alone.

    Three families of states of the first job (every other user thinking) are always
    reachable; distinct ones are distinct markings, so their count bounds the chain from
    below (docs/design.md §5.6):

    - a phase p that runs alone (every other phase is before or after it) holds
      ``r = min(C, T - f)`` containers with f of its T tasks finished, its r running tasks
      in any of the ``binom(r + k - 1, k - 1)`` Erlang stage compositions:
      ``Σ_{f=0}^{T-1} binom(min(C, T-f) + k - 1, k - 1)``;
    - the source phases of the highest priority that hold containers start together and may
      share the C containers in any way while each still has a waiting task (ties are random):
      ``Σ_{r_1+...+r_m = C, r_p <= T_p - 1} Π_p (T_p - r_p) · binom(r_p + k_p - 1, k_p - 1)``
      (``T_p - r_p`` finished counts leave a task waiting);
    - when the tasks of all source phases fit in the C containers together (a driver phase
      takes none), they all run at once, each phase's in any stage composition:
      ``Π_p binom(T_p + k_p - 1, k_p - 1)``
      (three one-task driver phases of Erlang shape 1,000 side by side: 10⁹ states);
    - under ``fifo`` and ``fair`` (jobs keep their identity), two jobs at once: the older one
      finishing its last phase, or its first (every other phase waits for it), the younger in its
      first (:func:`_two_jobs`; 5.2·10⁶ states for the paper's 50 users, 300 containers and 500 + 500
      tasks, 1.2·10⁷ with 1,000 + 4; not when either is a driver phase, which leaves the younger job
      all the containers);
    - under ``fifo`` and ``fair``, every user's job in the same source driver phase at once (it
      holds no container, so nothing stops them), each in any stage composition:
      ``binom(T + k - 1, k - 1)^N`` (a spark-shell fit's one-task driver phase of shape 1,000 and
      two users: 10⁶ states);
    - any phase, alone or beside others, can hold ``r = min(C, T)`` running tasks at once (the
      phases beside it finish first, and it wins the containers they free) in any stage
      composition: ``binom(r + k - 1, k - 1)`` (4 tasks of shape 161 beside another stage:
      2.9·10⁷ states, which an Erlang fit of a real log asks for).

    The largest is returned (0 when neither applies).

    >>> from spn.description import load_description
    >>> state_space_lower_bound(load_description("models/mapreduce.yaml"))      # the chain has 49
    4.0
    """
    C = int(desc.cluster.containers)
    phases = list(desc.phases)
    names = [p.name for p in phases]
    index = {name: k for k, name in enumerate(names)}
    shape = [int(p.shape) if p.distribution == "erlang" else 1 for p in phases]
    bound = 0.0
    # phases alone: ancestors and descendants as bit sets, in list order of a topological sort
    ancestors = [0] * len(phases)
    children = [[] for _ in phases]
    parents = [[] for _ in phases]
    for a, b in desc.edges:
        children[index[a]].append(index[b])
        parents[index[b]].append(index[a])
    order, left = [], [len(ps) for ps in parents]
    ready = [k for k, n in enumerate(left) if n == 0]
    while ready:
        k = ready.pop()
        order.append(k)
        for c in children[k]:
            left[c] -= 1
            if left[c] == 0:
                ready.append(c)
    if len(order) != len(phases):
        return 0.0
    for k in order:
        for a in parents[k]:
            ancestors[k] |= ancestors[a] | (1 << a)
    descendants = [0] * len(phases)
    for k in reversed(order):
        for c in children[k]:
            descendants[k] |= descendants[c] | (1 << c)
    for k, phase in enumerate(phases):
        if (ancestors[k] | descendants[k]).bit_count() == len(phases) - 1 and phase.tasks <= 10_000_000:
            running = np.minimum(C, phase.tasks - np.arange(phase.tasks, dtype=float))
            bound = max(bound, float(np.sum(_comb(running + shape[k] - 1, shape[k] - 1))))
        bound = max(bound, float(_comb(float(min(C, phase.tasks)) + shape[k] - 1, shape[k] - 1)))
    # source phases of the top priority sharing the containers
    sources = [k for k in range(len(phases)) if not parents[k]]
    sharing = [k for k in sources if phases[k].holds_containers]
    top = max((phases[k].priority for k in sharing), default=0.0)
    group = [k for k in sharing if phases[k].priority == top]
    if len(group) > 1 and C <= 5_000 and len(group) * C * C <= 50_000_000:
        total = np.zeros(C + 1)
        total[0] = 1.0
        for k in group:
            r = np.arange(min(C, phases[k].tasks - 1) + 1, dtype=float)
            weights = np.minimum((phases[k].tasks - r) * _comb(r + shape[k] - 1, shape[k] - 1), 1e100)
            total = np.minimum(np.convolve(total, weights)[:C + 1], 1e100)
        bound = max(bound, float(total[C]))
    # source phases whose tasks all fit in the containers together: every task runs at once
    if sum(phases[k].tasks for k in sharing) <= C:
        together = 1.0
        for k in sources:
            together = min(together * float(_comb(phases[k].tasks + shape[k] - 1, shape[k] - 1)), 1e300)
        bound = max(bound, together)
    # every job of a job-identity net (fifo, fair) in one source driver phase
    if desc.scheduler.policy in ("fifo", "fair"):
        for k in sources:
            if not phases[k].holds_containers:
                one = float(_comb(float(phases[k].tasks) + shape[k] - 1, shape[k] - 1))
                bound = max(bound, min(np.exp(min(desc.workload.users * np.log(one), 690.0)), 1e300))
    # two jobs of a job-identity net (fifo, fair): the first in its last phase, the second in its first
    sinks = [k for k in range(len(phases)) if not children[k]]
    everything = (1 << len(phases)) - 1
    if (desc.scheduler.policy in ("fifo", "fair") and desc.workload.users >= 2 and len(sources) == 1
            and len(sinks) == 1 and (descendants[sources[0]] | 1 << sources[0]) == everything
            and (ancestors[sinks[0]] | 1 << sinks[0]) == everything
            and phases[sources[0]].holds_containers and phases[sinks[0]].holds_containers):
        for older in {sinks[0], sources[0]}:    # the older job in its last phase, or its first (the rest waits)
            bound = max(bound, _two_jobs(phases[older].tasks, shape[older], phases[sources[0]].tasks,
                                         shape[sources[0]], C, desc.workload.users))
    return bound


def _two_jobs(last_tasks: int, last_shape: int, first_tasks: int, first_shape: int, C: int, users: int) -> float:
    """States of two jobs under ``fifo`` or ``fair`` (the DAG has one source and one sink, every phase
    between them): the older job has started every task of its last phase (or of its first, which
    every other phase waits for), u <= C - 1 of them running in any stage composition; the younger,
    in its first phase with f of its tasks finished, holds the r = min(C - u, T - f) containers left,
    in any composition; while it still has a waiting task, the other users' jobs submitted meanwhile
    wait behind it (0 to N - 2 of them: each count a marking).

    Every such state is reachable: the older job holds u running tasks for any u up to
    min(C, tasks) once that phase has started them all (no other phase of it can run then); the
    younger is submitted then (a think time ends at any instant) and takes every container freed, as
    both policies give it one.

    >>> _two_jobs(last_tasks=2, last_shape=1, first_tasks=2, first_shape=1, C=2, users=2)   # u = 1; f = 0, 1
    2.0
    """
    if C < 2:
        return 0.0
    # for each u, the younger job's f = T − m, m = 1..T tasks left: r = min(C − u, m) running, and its
    # compositions summed over m <= C − u are C(min(C − u, T) + k, k) − 1 (the hockey stick); each m past
    # C − u has r = C − u and a waiting task
    u = np.arange(1, min(C - 1, last_tasks) + 1, dtype=float)
    free = C - u
    younger = (_comb(np.minimum(free, first_tasks) + first_shape, first_shape) - 1
               + np.maximum(first_tasks - free, 0) * _comb(free + first_shape - 1, first_shape - 1) * (users - 1))
    older = _comb(u + last_shape - 1, last_shape - 1)
    return float(min(np.sum(older * younger), 1e300))


def choose_method(desc, max_states: int = MAX_STATES) -> str | None:
    """None when the exact CTMC should be tried, else why not (then ``spn solve`` simulates).

    Not tried: a chain that :func:`state_space_lower_bound` already puts past ``max_states``,
    so that no time is spent exploring a chain that cannot fit. (Task-time laws other than
    Erlang/exponential and policies the net does not model stay errors that point to
    ``spn simulate``: the user asked for a model the CTMC cannot be.) With query classes only
    the size of the net is looked at: the lower bound is that of one class's chain.
    """
    bound = 0.0 if desc.classes else state_space_lower_bound(desc)
    if bound > max_states:
        return f"the chain has at least {bound:,.3g} tangible states, past max_states {max_states:,}"
    return job_net_too_large(desc)


#: places past which ``spn solve`` does not build a job-identity net (fifo, fair, classes) but simulates:
#: it has one slot of places per job in the system, so thousands of users make a net whose building
#: alone takes minutes and gigabytes (300 users: a minute), for a chain that is almost always past
#: any state budget; the simulators take such workloads in seconds
JOB_NET_MAX_PLACES = 200


def job_net_too_large(desc) -> str | None:
    """Why the job-identity net of ``desc`` is too large to build (then simulate), or None.

    A slot holds the places of a job of each class of its queue: at least two per phase (a low
    estimate of the places of :mod:`spn.models.jobs`, which also has one per Erlang stage; those
    are left out, so that one user's application fitted at high shapes stays exact where the
    lower bound lets it).

    >>> from spn.description import load_description
    >>> job_net_too_large(load_description("models/mapreduce.yaml", ["scheduler.policy=fifo"])) is None
    True
    """
    if desc.scheduler.policy == "gate" and not desc.classes:
        return None         # the paper's net: one set of places for all jobs
    classes = job_classes(desc)
    places = 0
    for queue in queues_of(desc):
        members = [c for c in classes if c.queue == queue.name]
        slots = sum(c.workload.users for c in members)
        places += slots * sum(2 * len(c.phases) for c in members)
    if places > JOB_NET_MAX_PLACES:
        return (f"its job-identity net would have at least {places:,} places (a slot per job in the system), "
                f"past {JOB_NET_MAX_PLACES:,}: its chain is far too large to build")
    return None
