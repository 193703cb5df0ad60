"""``spn solve`` for query classes and queues: the job-identity net's CTMC, or a simulation.

A description with ``classes`` (docs/design.md §4.6) is solved on the net of
:func:`spn.models.jobs.build_classes`: one closed population per class, one set of
ordered job slots per queue, the capacity scheduler in the allocation gates. Each
class gets its own R and X, each queue its utilisation. When the chain is past
``max_states`` (or ``method="simulation"``), the queue simulator answers with intervals,
as :func:`spn.analysis.solve.simulate_for_solve` does for one class.

>>> from spn.description import load_description
>>> desc = load_description("models/two-queues.yaml", ["cluster.containers=2", "classes.etl.users=1",
...                                                     "classes.dashboard.users=1"])
>>> report = solve_classes(desc)
>>> sorted(report.as_dict()["classes"]), report.as_dict()["method"]
(['dashboard', 'etl'], 'exact')
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from spn.defaults import MAX_STATES, RTOL
from spn.description.model import job_classes, queues_of
from spn.exceptions import ConvergenceError, ModelError, StateSpaceLimitError
from spn.measures import ClassesMeasures, classes_measures
from spn.solvers import SolverResult, steady_state
from spn.statespace import explore
from spn.statespace.activity_table import is_plain


@dataclass(frozen=True)
class ClassesSolveReport:
    """The exact answer for several classes: R and X per class, utilisation per queue."""

    model: str
    containers: int
    classes: tuple            # the description's QueryClass objects
    queues: tuple             # the description's Queue objects
    measures: ClassesMeasures
    tangible_states: int
    transitions: int
    solver: SolverResult
    explore_s: float
    solve_s: float
    total_s: float
    policy: str = "fifo"        # the description's scheduler.policy, as the simulated report names it

    def as_dict(self) -> dict:
        """The JSON object of ``spn solve --json`` for classes (the keys of ``spn simulate``'s, without intervals).

        The top-level ``mean_execution_time`` is the mean over every job, Σ X_c R_c / Σ X_c.
        """
        from spn.analysis.solve import solution_dict

        per_class = self.measures.classes
        x = sum(m.throughput for m in per_class.values())
        return {
            "model": self.model,
            "method": "exact",
            "mean_execution_time": sum(m.throughput * m.mean_execution_time for m in per_class.values()) / x,
            "throughput": x,
            "utilization": self.measures.utilization,
            **solution_dict(self),
            "users": sum(c.workload.users for c in self.classes),
            "think_time": None,         # each class has its own (below), as in the simulated report
            "policy": self.policy,
            "containers": self.containers,
            "classes": {c.name: {"mean_execution_time": per_class[c.name].mean_execution_time,
                                 "throughput": per_class[c.name].throughput, **c.facts()}
                        for c in self.classes},
            "queues": {q.name: {"utilization": self.measures.queue_utilization[q.name], "capacity": q.capacity,
                                "max_capacity": q.max_capacity, "policy": q.policy} for q in self.queues},
        }


def solve_classes(desc, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
                  progress: bool = False, raise_on_nonconvergence: bool = True, fallback: bool = False,
                  rel_precision: float | None = None, max_seconds: float | None = None, seed=None,
                  explore_seconds: float | None = None):
    """Solve a description with query classes: exact, or (``fallback`` past ``max_states`` or
    ``explore_seconds``, or ``method="simulation"``) simulated with the queue simulator."""
    from spn.analysis.solve import (
        ANALYTIC_DISTRIBUTIONS, GATED_MAX_STATES, SIMULATION_PRECISION, SIMULATION_SECONDS, exploration_stopped,
        job_net_too_large, simulate_for_solve,
    )

    started = time.perf_counter()
    simulation = dict(rel_precision=SIMULATION_PRECISION if rel_precision is None else rel_precision,
                      max_seconds=SIMULATION_SECONDS if max_seconds is None else max_seconds, seed=seed,
                      progress=progress, started=started)
    if method == "simulation":
        return simulate_for_solve(desc, "asked for (method simulation)", **simulation)
    problems = [f"classes.{c.name}.phases.{p.name}.distribution: {p.distribution!r} has no exact CTMC; "
                f"the analytic solver takes erlang or exponential task times (use `spn simulate`)"
                for c in job_classes(desc) for p in c.phases if p.distribution not in ANALYTIC_DISTRIBUTIONS]
    if problems:
        raise ModelError(problems)
    from spn.models.jobs import build_classes

    chooses = fallback and method == "auto"
    too_large = job_net_too_large(desc) if chooses else None
    if too_large:
        return simulate_for_solve(desc, too_large, **simulation)
    model = build_classes(desc)
    limit = min(max_states, GATED_MAX_STATES) if chooses and not is_plain(model.net, choices=True) else max_states
    try:
        ss = explore(model.net, max_states=limit, progress=progress, max_seconds=explore_seconds)
    except StateSpaceLimitError as error:
        if not chooses:
            raise
        return simulate_for_solve(desc, exploration_stopped(error, max_states, limit), **simulation)
    explored = time.perf_counter()
    result = steady_state(ss.generator(), method="auto" if method == "exact" else method, rtol=rtol)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    measures = classes_measures(ss, result.x, classes=model.classes, queues=model.queues, container_place="PC",
                                containers=model.containers, check=result.converged)
    return ClassesSolveReport(desc.name, model.containers, job_classes(desc), queues_of(desc), measures,
                              ss.n_states, ss.n_transitions, result, explored - started,
                              time.perf_counter() - explored, time.perf_counter() - started,
                              policy=desc.scheduler.policy)
