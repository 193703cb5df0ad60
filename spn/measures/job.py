"""Measures of an application under a closed workload: execution time, throughput, utilisation.

>>> import spn
>>> net = spn.mapreduce_net(users=1, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
...                         reduce_tasks=4, reduce_time=3.0)
>>> ss = spn.explore(net)
>>> m = job_measures(ss, spn.steady_state(ss.generator()).x, users=1, think_time=10.0,
...                  end_activity="IAFR", think_place="PJ", container_place="PC", containers=4)
>>> round(m.mean_execution_time, 6)
10.416667
"""

from __future__ import annotations

from dataclasses import dataclass

from spn.exceptions import ModelError
from spn.measures.net import expected_tokens, throughput


@dataclass(frozen=True)
class JobMeasures:
    """Measures of a closed workload of N users with think time Z.

    ``mean_execution_time`` R = N / X - Z (Little's law over the whole cycle),
    ``throughput`` X = job completions per second, ``utilization`` = busy containers / C.
    """

    mean_execution_time: float
    throughput: float
    utilization: float
    mean_jobs_thinking: float


def job_measures(ss, pi, *, users: int, think_time: float, end_activity: str, think_place: str,
                 container_place: str, containers: int) -> JobMeasures:
    """Mean execution time, throughput and utilisation of an application model.

    ``end_activity`` is the activity whose firing completes a job (IAFR in the
    MapReduce model), ``think_place`` holds the users who think, ``container_place``
    the free containers (an :class:`~spn.models.dag.ApplicationNet` names all three).
    Raises :class:`ModelError` if jobs never complete.
    """
    x = throughput(ss, pi, end_activity)
    if not x > 0:
        raise ModelError(f"no job ever completes (throughput of {end_activity!r} is {x})")
    busy = containers - expected_tokens(ss, pi, container_place)
    return JobMeasures(
        mean_execution_time=users / x - think_time,
        throughput=x,
        utilization=busy / containers,
        mean_jobs_thinking=expected_tokens(ss, pi, think_place),
    )
