"""A model description as data: frozen dataclasses, and the task-time laws a phase may use.

Nothing here reads or checks files (see :mod:`spn.description.load`); importing
this module costs no more than the standard library.

>>> job = Description("tiny", None, Workload(users=2, think_time=5.0), Cluster(containers=2),
...                   phases=(Phase("map", tasks=2, task_time=1.0),), edges=())
>>> job.phases[0].distribution, job.workload.users
('erlang', 2)
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Workload", "Cluster", "Scheduler", "Phase", "Description", "DISTRIBUTIONS", "LAW_PARAMETER",
           "POLICIES", "NET_POLICIES", "require_net_policy"]

#: the task-time laws a phase may name in ``distribution``
DISTRIBUTIONS = ("erlang", "exponential", "deterministic", "uniform", "lognormal", "empirical")

#: the optional phase key each law needs; every other law takes none of them
LAW_PARAMETER = {"uniform": "spread", "lognormal": "cv", "empirical": "samples"}

#: the scheduling policies a description may name in ``scheduler.policy``
POLICIES = ("fifo", "fair", "gate")

#: the policies the application net (``spn solve``, the net simulator) models
NET_POLICIES = ("gate",)


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
    job each, YARN fair ordering). The default stays ``gate`` until measurements against
    real runs choose one.

    Hook for later: ``fair`` will take per-class ``weights`` once a description has query
    classes; a job's share is then its running tasks divided by its class's weight (the
    cluster simulator already orders jobs by ``running / weight``, every weight 1 today).

    >>> Scheduler().policy
    'gate'
    """

    policy: str = "gate"


def require_net_policy(desc) -> None:
    """Raise :class:`~spn.exceptions.ModelError` unless the application net models ``desc``'s policy.

    The net (``spn solve``, the net simulator) has no job identity yet, so it models the
    gate only.
    """
    policy = desc.scheduler.policy
    if policy not in NET_POLICIES:
        from spn.exceptions import ModelError

        raise ModelError(f"scheduler.policy: policy {policy} is simulated by the cluster engine only for now; "
                         f"the net models gate (use spn simulate --engine cluster)")


@dataclass(frozen=True)
class Phase:
    """A phase (map/reduce phase, Tez vertex, Spark stage): ``tasks`` tasks of mean ``task_time`` s.

    ``distribution`` is the task-time law: ``erlang`` (with ``shape``),
    ``exponential``, ``deterministic``, ``uniform`` (with ``spread``, the
    half-width as a fraction of the mean), ``lognormal`` (with ``cv``) or
    ``empirical`` (with ``samples``, in seconds).

    >>> Phase("map", tasks=4, task_time=2.0).shape
    1
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


@dataclass(frozen=True)
class Description:
    """A whole model description.

    ``edges`` always lists the dependencies explicitly (a chain in list order
    when the file gave none). ``scheduler`` is the scheduling policy (``gate`` when the
    file gives none). ``reference`` holds measured results, read-only,
    never used as input; ``source`` is the file it was read from. Equality
    compares the model only, not ``reference`` or ``source``.
    """

    name: str
    framework: str | None
    workload: Workload
    cluster: Cluster
    phases: tuple[Phase, ...]
    edges: tuple[tuple[str, str], ...]
    scheduler: Scheduler = field(default_factory=Scheduler)
    reference: Mapping = field(default_factory=lambda: types.MappingProxyType({}), compare=False)
    source: str | None = field(default=None, compare=False)
