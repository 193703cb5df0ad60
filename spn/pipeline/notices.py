"""One-line notices about a description or its answer that the numbers alone do not say.

Pure functions of a :class:`~spn.description.model.Description` (and of a measure already
computed): they return the line to print, or None when there is nothing to say.

- :func:`think_time_problem`: a refusal, when several users would think for the placeholder
  time ``spn fit`` writes for one user (``reference.think_time_placeholder``).
- :func:`gate_notice`: under policy ``gate``, when the start gate, not the containers, holds the
  throughput down.

>>> from spn.description import parse_description
>>> fitted = {"name": "fitted", "workload": {"users": 1, "think_time": 1.0}, "cluster": {"containers": 4},
...           "phases": [{"name": "p", "tasks": 2, "task_time": 3.0}], "reference": {"think_time_placeholder": 1.0}}
>>> think_time_problem(parse_description(fitted)) is None     # one user: the think time does not change R
True
>>> think_time_problem(parse_description(fitted, ["workload.users=5"]))
"workload.think_time is the fit's placeholder (1 s, right for one user only): give --set workload.think_time=SECONDS for 5 users"
>>> think_time_problem(parse_description(fitted, ["workload.users=5", "workload.think_time=1.0"])) is None
True
"""

from __future__ import annotations

import dataclasses

from spn.description.model import THINK_TIME_PLACEHOLDER, container_seconds

__all__ = ["think_time_problem", "gate_notice", "GATE_BUSY_AT_MOST", "GATE_SHORTFALL"]

#: gate_notice: the containers are taken not to limit throughput while at most this fraction is busy
GATE_BUSY_AT_MOST = 0.5
#: gate_notice: ... and the gate to limit it when the utilisation is below this fraction of what the
#: users ask for (the throughput below half of N / (job alone + Z): jobs wait longer than a whole cycle)
GATE_SHORTFALL = 0.5


def think_time_problem(desc) -> str | None:
    """The refusal when ``desc`` has several users and its think time is still the fit's placeholder, else None.

    The placeholder is marked by ``reference.think_time_placeholder`` (the value written); a think
    time given with ``--set workload.think_time=...`` removes the mark, and any other value than
    the placeholder is taken as the user's own.
    """
    if desc.classes or desc.workload is None or desc.workload.users < 2:
        return None
    placeholder = desc.reference.get(THINK_TIME_PLACEHOLDER)
    # a hand-edited reference may hold anything: only a number equal to the think time is the mark
    if isinstance(placeholder, bool) or not isinstance(placeholder, (int, float)) \
            or desc.workload.think_time != placeholder:
        return None
    return (f"workload.think_time is the fit's placeholder ({placeholder:g} s, right for one user only): "
            f"give --set workload.think_time=SECONDS for {desc.workload.users} users")


def gate_notice(desc, utilization: float) -> str | None:
    """The notice when, under policy ``gate``, the start gate rather than the containers limits throughput.

    ``utilization`` is the fraction of containers busy (the solved or simulated measure). With
    W the mean container-seconds of a job (sum of tasks x task time), A its execution time alone
    (:func:`spn.analysis.alone.job_alone`, else the critical path of the DAG) and N users thinking Z,
    the users ask for ``U_asked = N W / (C (A + Z))`` of the containers (the utilisation law with
    the throughput N / (A + Z) of jobs that never wait). The notice fires when, with one class and
    N >= 2, ``utilization < GATE_BUSY_AT_MOST`` (the containers are mostly idle, so they are not the
    limit) and ``utilization < GATE_SHORTFALL * U_asked`` (the throughput is below half the users'
    asking: R + Z > 2 (A + Z), jobs wait longer than a whole cycle). Under the gate a started job
    holds it until its last phase has containers for all its tasks, so the jobs queue at the gate.

    >>> from spn.description import parse_description
    >>> data = {"name": "x", "workload": {"users": 6, "think_time": 1.0}, "cluster": {"containers": 20},
    ...         "scheduler": {"policy": "gate"}, "phases": [{"name": "long", "tasks": 1, "task_time": 10.0},
    ...                                                     {"name": "short", "tasks": 1, "task_time": 0.1}]}
    >>> gate_notice(parse_description(data), 0.05)[:52]
    'policy gate: the start gate, not the 20 containers ('
    >>> gate_notice(parse_description(data), 0.25) is None     # about what 6 users ask of 20 containers
    True
    """
    if desc.classes or desc.scheduler.policy != "gate" or desc.workload.users < 2:
        return None
    if not 0 < utilization < GATE_BUSY_AT_MOST:
        return None
    users, think, containers = desc.workload.users, desc.workload.think_time, desc.cluster.containers
    work = container_seconds(desc.phases)

    def asked(alone: float) -> float:
        return users * work / (containers * (alone + think))

    # the critical path is a lower bound of A, so its U_asked an upper bound: below it, no need of job_alone
    if utilization >= GATE_SHORTFALL * asked(_critical_path(desc)):
        return None
    alone = _alone(desc)
    wanted = asked(alone)
    if utilization >= GATE_SHORTFALL * wanted:
        return None
    return (f"policy gate: the start gate, not the {containers} containers ({100 * utilization:.3g} % busy), "
            f"limits throughput: the gate admits one job at a time until its last phase holds all its "
            f"containers, while {users} users thinking {think:g} s ask for {100 * min(wanted, 1.0):.3g} % of them "
            f"(a job alone takes {alone:.4g} s); policy fifo would let jobs overlap "
            f"(--set scheduler.policy=fifo)")


def _critical_path(desc) -> float:
    """A lower bound of the job-alone time: the longest path of the DAG, each phase taking at least
    its mean task time and its mean work over the C containers (a mean of a maximum >= the maximum of means)."""
    from graphlib import TopologicalSorter

    containers = desc.cluster.containers
    least = {p.name: max(p.task_time, p.tasks * p.task_time / containers if p.holds_containers else 0.0)
             for p in desc.phases}
    parents: dict[str, list[str]] = {p.name: [] for p in desc.phases}
    for before, after in desc.edges:
        parents[after].append(before)
    ends: dict[str, float] = {}
    for name in TopologicalSorter(parents).static_order():      # a description's DAG is acyclic (validated)
        ends[name] = least[name] + max((ends[q] for q in parents[name]), default=0.0)
    return max(ends.values())


#: past this many phases the notice takes the critical path rather than the job-alone law (seconds of convolutions)
ALONE_PHASES = 200


def _alone(desc) -> float:
    """The job-alone mean time (order statistics), or the critical path where that method does not apply
    or would take long (more than ``ALONE_PHASES`` phases)."""
    from spn.analysis.alone import job_alone
    from spn.description.model import Workload
    from spn.exceptions import SpnError

    if len(desc.phases) > ALONE_PHASES:
        return _critical_path(desc)
    try:
        return job_alone(dataclasses.replace(desc, workload=Workload(1, desc.workload.think_time))).mean
    except SpnError:        # a law other than Erlang, or phases that can run together contending
        return _critical_path(desc)
