"""A model description as data: frozen dataclasses, and the task-time laws a phase may use.

Nothing here reads or checks files (see :mod:`spn.description.load`); importing
this module costs no more than the standard library.

>>> job = Description("tiny", None, Workload(users=2, think_time=5.0), Cluster(containers=2),
...                   phases=(Phase("map", tasks=2, task_time=1.0),), edges=())
>>> job.phases[0].distribution, job.workload.users
('erlang', 2)
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Workload", "Cluster", "Scheduler", "Phase", "QueryClass", "Queue", "Description", "DISTRIBUTIONS",
           "LAW_PARAMETER", "PHASE_KINDS", "container_seconds", "POLICIES", "NET_POLICIES", "QUEUE_POLICIES", "require_net_policy", "job_classes",
           "queues_of", "require_single_class", "THINK_TIME_PLACEHOLDER", "ANALYTIC_DISTRIBUTIONS"]

#: the task-time laws a phase may name in ``distribution``
DISTRIBUTIONS = ("erlang", "exponential", "deterministic", "uniform", "lognormal", "empirical")

#: the task-time laws the CTMC can represent exactly (the exact solution, the job-alone method)
ANALYTIC_DISTRIBUTIONS = ("erlang", "exponential")

#: the optional phase key each law needs; every other law takes none of them
LAW_PARAMETER = {"uniform": "spread", "lognormal": "cv", "empirical": "samples"}

#: what a phase's tasks run on (``kind``): a container of the pool, or the driver, outside the pool
PHASE_KINDS = ("container", "driver")

#: the scheduling policies a description may name in ``scheduler.policy``
POLICIES = ("fifo", "fair", "gate")

#: the policies a queue may use for the jobs inside it (``queues[].policy``)
QUEUE_POLICIES = ("fifo", "fair")

#: the policies the net simulator models (``spn solve`` solves every policy: spn.models.jobs)
NET_POLICIES = ("gate",)

#: the ``reference`` key where ``spn fit`` records the think time it wrote as a placeholder (right for
#: one user only, where Z does not change R); ``--set workload.think_time=...`` removes it
#: (spn.description.overrides), and spn.pipeline.notices refuses it for several users
THINK_TIME_PLACEHOLDER = "think_time_placeholder"


@dataclass(frozen=True)
class Workload:
    """The closed population: ``users`` (N) each thinking ``think_time`` (Z) s on average."""

    users: int
    think_time: float


@dataclass(frozen=True)
class Cluster:
    """The ``containers`` (C) shared by every phase of every job."""

    containers: int


@dataclass(frozen=True)
class Scheduler:
    """How free containers are shared between the jobs in the system (docs/design.md §7.2).

    ``policy``: ``gate`` (the paper's start gate: a job starts only when the previous
    job's last phase holds containers for all its tasks), ``fifo`` (a free container goes
    to the oldest job with a waiting task: YARN FIFO ordering, Spark FIFO) or ``fair``
    (to the job with the fewest running tasks, ties to the oldest: Spark FAIR pools of one
    job each, YARN fair ordering). Measured against Spark's schedulers, ``fifo``/``fair`` are
    within 9 %/14 % where ``gate`` is up to 60 % off (docs/scheduling-spark.md), so a
    description that names no policy gets ``fifo``; the paper's case studies in ``models/``
    name ``gate`` (§4.1).

    >>> Scheduler().policy
    'fifo'
    """

    policy: str = "fifo"


def require_net_policy(desc) -> None:
    """Raise :class:`~spn.exceptions.ModelError` unless the net simulator models ``desc``'s policy.

    The net simulator runs the paper's net, which models the gate only; ``fifo`` and
    ``fair`` are solved exactly on the job-identity net and simulated by the cluster engine.
    """
    policy = desc.scheduler.policy
    if policy not in NET_POLICIES:
        from spn.exceptions import ModelError

        raise ModelError(f"scheduler.policy: the net simulator models policy gate, not {policy} "
                         f"(use spn simulate --engine cluster; spn solve solves {policy} exactly)")


@dataclass(frozen=True)
class Phase:
    """A phase (map/reduce phase, Tez vertex, Spark stage): ``tasks`` tasks of mean ``task_time`` s.

    ``distribution`` is the task-time law: ``erlang`` (with ``shape``),
    ``exponential``, ``deterministic``, ``uniform`` (with ``spread``, the
    half-width as a fraction of the mean), ``lognormal`` (with ``cv``) or
    ``empirical`` (with ``samples``, in seconds).

    ``kind`` is ``container`` (each task holds a container of the pool while it
    runs) or ``driver``: the tasks run outside the pool, as the Spark driver's
    work between stages does, so the phase is a delay of its job that neither
    waits for a container nor holds one (every job in it runs it at once).

    >>> Phase("map", tasks=4, task_time=2.0).shape
    1
    >>> Phase("driver-job0", tasks=1, task_time=0.5, kind="driver").holds_containers
    False
    """

    name: str
    tasks: int
    task_time: float
    shape: int = 1
    distribution: str = "erlang"
    spread: float | None = None
    cv: float | None = None
    samples: tuple[float, ...] | None = None
    priority: float = 0.0
    kind: str = "container"

    @property
    def holds_containers(self) -> bool:
        """Do its tasks take containers from the pool (a ``container`` phase)?"""
        return self.kind != "driver"


def container_seconds(phases) -> float:
    """W: the mean container-seconds one job holds, its driver phases aside.

    >>> container_seconds([Phase("a", 4, 2.0), Phase("d", 1, 5.0, kind="driver")])
    8.0
    """
    return float(sum(p.tasks * p.task_time for p in phases if p.holds_containers))


@dataclass(frozen=True)
class QueryClass:
    """One class of jobs: its own ``workload`` (users, think time), DAG and ``queue``.

    A description with ``classes`` has several populations of users, each submitting
    its own kind of job to a capacity-scheduler queue (docs/design.md §4.6).

    ``weight`` (> 0) is the class's share inside a ``fair`` queue: a free container goes to
    the job with the smallest running tasks / weight of its class, ties to the oldest
    (Spark FAIR pool weights, YARN fair-share weights; minShare is not modelled). The
    weights are compared exactly, each read as the shortest decimal that gives it back
    (0.3 is 3/10). In a ``fifo`` queue the weight has no effect.

    >>> dashboard = QueryClass("dashboard", Workload(4, 30.0), (Phase("scan", tasks=2, task_time=1.0),), ())
    >>> dashboard.queue, dashboard.weight
    ('default', 1.0)
    >>> dashboard.facts()
    {'users': 4, 'think_time': 30.0, 'queue': 'default', 'weight': 1.0}
    """

    name: str
    workload: Workload
    phases: tuple[Phase, ...]
    edges: tuple[tuple[str, str], ...]
    queue: str = "default"
    weight: float = 1.0

    def facts(self) -> dict:
        """What a report says of the class beside its measures (``spn solve/simulate --json``)."""
        return {"users": self.workload.users, "think_time": self.workload.think_time, "queue": self.queue,
                "weight": self.weight}


@dataclass(frozen=True)
class Queue:
    """A capacity-scheduler queue: a guaranteed share of the containers and a ceiling.

    ``capacity`` is the guaranteed fraction of the C containers; ``max_capacity`` the
    fraction it may hold at most, borrowing what idle queues do not use (YARN, no
    preemption); ``policy`` orders the jobs inside the queue (``fifo`` or ``fair``).

    >>> Queue("etl", capacity=0.7).max_capacity
    1.0
    """

    name: str
    capacity: float
    max_capacity: float = 1.0
    policy: str = "fifo"


@dataclass(frozen=True)
class Description:
    """A whole model description.

    ``edges`` always lists the dependencies explicitly (a chain in list order
    when the file gave none). ``scheduler`` is the scheduling policy (``gate`` when the
    file gives none). ``reference`` holds measured results, read-only,
    never used as input; ``source`` is the file it was read from. Equality
    compares the model only, not ``reference`` or ``source``.

    A description with query ``classes`` has no top-level job: ``workload`` is None and
    ``phases`` and ``edges`` are empty; each class carries its own, and ``queues`` (empty:
    one queue for all) says how the classes share the containers. Read it through
    :func:`job_classes` and :func:`queues_of`, which also answer for a one-class description.
    """

    name: str
    framework: str | None
    workload: Workload | None
    cluster: Cluster
    phases: tuple[Phase, ...]
    edges: tuple[tuple[str, str], ...]
    scheduler: Scheduler = field(default_factory=Scheduler)
    reference: Mapping = field(default_factory=lambda: types.MappingProxyType({}), compare=False)
    source: str | None = field(default=None, compare=False)
    classes: tuple[QueryClass, ...] = ()
    queues: tuple[Queue, ...] = ()


#: the queue of a description without ``queues``
DEFAULT_QUEUE = "default"


def job_classes(desc) -> tuple[QueryClass, ...]:
    """The query classes of ``desc``; a one-class description is one class named after the model.

    >>> desc = Description("tiny", None, Workload(2, 5.0), Cluster(2), (Phase("p", 1, 1.0),), ())
    >>> [(c.name, c.queue, c.workload.users) for c in job_classes(desc)]
    [('tiny', 'default', 2)]
    """
    if desc.classes:
        return desc.classes
    return (QueryClass(desc.name, desc.workload, desc.phases, desc.edges, DEFAULT_QUEUE),)


def queues_of(desc) -> tuple[Queue, ...]:
    """The queues of ``desc``; without ``queues``, one queue ``default`` holding every container.

    The default queue orders jobs by ``scheduler.policy`` (``fifo`` unless named; for a
    one-class description it may be ``gate``, which only the one-class simulators know).

    >>> desc = Description("tiny", None, Workload(2, 5.0), Cluster(2), (Phase("p", 1, 1.0),), ())
    >>> queues_of(desc)
    (Queue(name='default', capacity=1.0, max_capacity=1.0, policy='fifo'),)
    """
    if desc.queues:
        return desc.queues
    return (Queue(DEFAULT_QUEUE, 1.0, 1.0, desc.scheduler.policy),)


#: how close two queues' used/guaranteed ratios must be to count as a tie (then the first listed wins),
#: for the net's choice gates and the queue simulator alike
RATIO_TIE = 1e-12


def queue_limits(desc) -> tuple[int, ...]:
    """The most containers each queue of :func:`queues_of` may hold: ``floor(max_capacity · C)``.

    Raises :class:`~spn.exceptions.ModelError` when a queue that holds a class may hold less than
    one container (its jobs could never run). The 1e-9 keeps 0.3 · 10 = 2.9999999999999996 at 3.

    >>> desc = Description("tiny", None, Workload(2, 5.0), Cluster(10), (Phase("p", 1, 1.0),), ())
    >>> queue_limits(desc)
    (10,)
    >>> queue_limits(Description("bi", None, None, Cluster(3), (), (), queues=(Queue("q", 1.0, 0.2),),
    ...                          classes=(QueryClass("a", Workload(1, 1.0), (Phase("p", 1, 1.0),), (), "q"),)))
    Traceback (most recent call last):
    spn.exceptions.ModelError: queue q: max_capacity 0.2 of 3 containers is less than one container, so class a's jobs could never run
    """
    C = desc.cluster.containers
    queues = queues_of(desc)
    limits = tuple(math.floor(q.max_capacity * C + 1e-9) for q in queues)
    for job_class in job_classes(desc):
        k = next(k for k, q in enumerate(queues) if q.name == job_class.queue)
        if limits[k] < 1:
            from spn.exceptions import ModelError

            raise ModelError(f"queue {queues[k].name}: max_capacity {queues[k].max_capacity:g} of {C} containers "
                             f"is less than one container, so class {job_class.name}'s jobs could never run")
    return limits


def require_single_class(desc, what: str, instead: str = "spn simulate") -> None:
    """Raise :class:`~spn.exceptions.ModelError` if ``desc`` has query classes: ``what`` models one.

    Called at the entry of every path that reads ``desc.workload``, ``desc.phases`` or
    ``desc.edges`` directly (the net, the analytic solution, plan, sweep...).

    >>> two = Description("bi", None, None, Cluster(2), (), (),
    ...                   classes=(QueryClass("a", Workload(1, 1.0), (Phase("p", 1, 1.0),), ()),) * 2)
    >>> require_single_class(two, "spn solve")
    Traceback (most recent call last):
    spn.exceptions.ModelError: model bi has 2 query classes; spn solve models one class: use spn simulate
    """
    if desc.classes:
        from spn.exceptions import ModelError

        count = len(desc.classes)
        raise ModelError(f"model {desc.name} has {count} query class{'es' if count != 1 else ''}; "
                         f"{what} models one class: use {instead}")
