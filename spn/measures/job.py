"""Measures of an application under a closed workload: execution time, throughput, utilisation.

>>> import spn
>>> net = spn.mapreduce_net(users=1, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
...                         reduce_tasks=4, reduce_time=3.0)
>>> ss = spn.explore(net)
>>> m = job_measures(ss, spn.steady_state(ss.generator()).x, users=1, think_time=10.0,
...                  end_activity="IAFR", think_place="PJ", container_place="PC", containers=4)
>>> round(m.mean_execution_time, 6)
10.416667

Every measure is checked before it is returned (:func:`check_distribution`,
:func:`check_measures`): an impossible one raises :class:`ImplausibleResultError`.

>>> import numpy as np
>>> check_distribution(np.array([0.5, 0.6]))
Traceback (most recent call last):
...
spn.exceptions.ImplausibleResultError: implausible steady state: probabilities sum to 1.1, not 1
"""

from __future__ import annotations

import dataclasses

import math
from dataclasses import dataclass

import numpy as np

from spn.exceptions import ImplausibleResultError, ModelError
from spn.measures.net import expected_tokens, throughput

__all__ = ["ClassesMeasures", "ImplausibleResultError", "JobMeasures", "check_distribution", "check_measures",
           "classes_measures", "job_measures"]

# how far rounding may take a sum of probabilities from 1, or a fraction outside [0, 1]
_SLACK = 1e-9


@dataclass(frozen=True)
class JobMeasures:
    """Measures of a closed workload of N users with think time Z.

    ``mean_execution_time`` R = E[jobs not thinking] / X (Little's law on the jobs in the
    system; = N / X - Z), ``throughput`` X = job completions per second,
    ``utilization`` = busy containers / C, ``mean_jobs_thinking`` = E[users thinking].
    """

    mean_execution_time: float
    throughput: float
    utilization: float
    mean_jobs_thinking: float


def check_distribution(pi) -> None:
    """Raise :class:`ImplausibleResultError` unless ``pi`` is a probability vector."""
    pi = np.asarray(pi)
    if not np.all(np.isfinite(pi)):
        raise ImplausibleResultError(f"{int(np.sum(~np.isfinite(pi)))} probabilities are NaN or inf")
    if pi.size and (pi.min() < 0 or pi.max() > 1 + _SLACK):
        raise ImplausibleResultError(f"a probability is {pi.min() if pi.min() < 0 else pi.max():.6g}")
    if abs(float(pi.sum()) - 1.0) > _SLACK:
        raise ImplausibleResultError(f"probabilities sum to {float(pi.sum()):.6g}, not 1")


def check_measures(m: JobMeasures, *, users: int) -> None:
    """Raise :class:`ImplausibleResultError` unless every measure of ``m`` is possible.

    >>> check_measures(JobMeasures(-1.5, 0.3, 0.2, 2.5), users=3)
    Traceback (most recent call last):
    ...
    spn.exceptions.ImplausibleResultError: implausible steady state: mean execution time R = -1.5 s < 0
    """
    problems = []
    if not (math.isfinite(m.throughput) and m.throughput > 0):
        problems.append(f"throughput X = {m.throughput:.6g} jobs/s is not positive and finite")
    if not (math.isfinite(m.mean_execution_time) and m.mean_execution_time >= 0):
        problems.append(f"mean execution time R = {m.mean_execution_time:.6g} s < 0"
                        if m.mean_execution_time < 0 else
                        f"mean execution time R = {m.mean_execution_time:.6g} s is not finite")
    if not -_SLACK <= m.utilization <= 1 + _SLACK:
        problems.append(f"utilisation {m.utilization:.6g} is outside [0, 1]")
    if not -_SLACK <= m.mean_jobs_thinking <= users * (1 + _SLACK):
        problems.append(f"{m.mean_jobs_thinking:.6g} users thinking on average, of {users}")
    if problems:
        raise ImplausibleResultError("; ".join(problems))


def job_measures(ss, pi, *, users: int, think_time: float, end_activity: str, think_place: str,
                 container_place: str, containers: int, check: bool = True) -> JobMeasures:
    """Mean execution time, throughput and utilisation of an application model.

    ``end_activity`` is the activity whose firing completes a job (IAFR in the
    MapReduce model), ``think_place`` holds the users who think, ``container_place``
    the free containers (an :class:`~spn.models.dag.ApplicationNet` names all three).

    R is E[users not thinking] / X, the reward ``N - m(think_place)`` summed state by
    state: ``N / X - Z`` would subtract two numbers close to Z when Z >> R, and lose R's
    digits (Z = 10,000 s, R = 6.25 s: a relative error of 1e-5 in X moves N / X - Z by 1.6 %).

    Raises :class:`ModelError` if jobs never complete, and (``check``, the default)
    :class:`ImplausibleResultError` if ``pi`` or a measure is impossible.
    """
    if check:
        check_distribution(pi)
    x = throughput(ss, pi, end_activity)
    if x == 0:
        raise ModelError(f"no job ever completes (throughput of {end_activity!r} is {x})")
    in_system = float(np.dot(pi, users - ss.tokens(think_place)))
    busy = float(np.dot(pi, containers - ss.tokens(container_place)))
    measures = JobMeasures(
        mean_execution_time=in_system / x,
        throughput=x,
        utilization=busy / containers,
        mean_jobs_thinking=expected_tokens(ss, pi, think_place),
    )
    if check:
        check_measures(measures, users=users)
    # a busy fraction of 1 + 2e-16 is rounding (the check above caught anything larger): print it as 1
    return dataclasses.replace(measures, utilization=_unit(measures.utilization))


@dataclass(frozen=True)
class ClassesMeasures:
    """Measures of several query classes sharing the containers through queues.

    ``classes`` maps a class to its :class:`JobMeasures` (its own R and X; utilisation
    is the cluster's), ``queue_utilization`` a queue to E[containers it holds] / C.
    """

    classes: dict
    queue_utilization: dict
    utilization: float


def classes_measures(ss, pi, *, classes, queues, container_place: str, containers: int,
                     check: bool = True) -> ClassesMeasures:
    """:func:`job_measures` for every class of a job-identity net, and each queue's share of the containers.

    ``classes``: objects with ``name``, ``users``, ``think_time``, ``think_place`` and
    ``end_activity``; ``queues``: objects with ``name`` and ``running`` (the places whose
    tokens are the queue's running tasks), as :class:`~spn.models.jobs.ClassesNet` has them.
    """
    per_class = {c.name: job_measures(ss, pi, users=c.users, think_time=c.think_time, end_activity=c.end_activity,
                                      think_place=c.think_place, container_place=container_place,
                                      containers=containers, check=check) for c in classes}
    per_queue = {q.name: sum(expected_tokens(ss, pi, p) for p in q.running) / containers for q in queues}
    busy = float(np.dot(pi, containers - ss.tokens(container_place))) / containers
    if check and abs(sum(per_queue.values()) - busy) > 1e-6:
        raise ImplausibleResultError(f"the queues hold {sum(per_queue.values()):.6g} of the containers "
                                     f"on average, the cluster {busy:.6g}")
    return ClassesMeasures(per_class, {name: _unit(u) for name, u in per_queue.items()}, _unit(busy))


def _unit(fraction: float) -> float:
    """A fraction of the containers, rounding outside [0, 1] taken back."""
    return min(max(fraction, 0.0), 1.0)
