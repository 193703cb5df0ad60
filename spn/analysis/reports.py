"""What ``spn solve`` reports, and the measures it reports, for one class or several.

The exact path (:mod:`spn.analysis.solve`) ends here: :func:`solution_report` reads the
measures off a solved chain (:func:`~spn.measures.job_measures` for the net of one class,
:func:`~spn.measures.classes_measures` for the job-identity net of several) and makes the
report whose ``as_dict`` is the JSON of ``spn solve --json``: :class:`SolveReport` for one
class, :class:`ClassesSolveReport` for query classes. A simulation's report
(:class:`SimulatedSolveReport`) and the report of a plain net (:class:`NetReport`) are here too;
the job-alone method's answer is the pipeline's :class:`~spn.pipeline.Result` alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from spn.description.model import job_classes, queues_of
from spn.measures import ClassesMeasures, ImplausibleResultError, JobMeasures, classes_measures, job_measures
from spn.solvers import SolverResult

__all__ = ["SolveReport", "ClassesSolveReport", "NetReport", "SimulatedSolveReport",
           "solution_dict", "solution_report", "with_solver"]


@dataclass(frozen=True)
class SolveReport:
    """Everything ``spn solve`` prints, with the numbers it was computed from."""

    model: str
    users: int
    think_time: float
    containers: int
    measures: JobMeasures
    tangible_states: int
    transitions: int
    solver: SolverResult
    explore_s: float
    solve_s: float
    total_s: float
    policy: str = "gate"

    def as_dict(self) -> dict:
        """The JSON object of ``spn solve --json`` (docs/design.md §5)."""
        return {
            "model": self.model,
            "method": "exact",
            "policy": self.policy,
            "mean_execution_time": self.measures.mean_execution_time,
            "throughput": self.measures.throughput,
            "utilization": self.measures.utilization,
            **solution_dict(self),
            "users": self.users,
            "think_time": self.think_time,
            "containers": self.containers,
        }


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


def solution_dict(report) -> dict:
    """The keys every ``spn solve --json`` object has: state space, solver, timings."""
    return {
        "tangible_states": report.tangible_states,
        "transitions": report.transitions,
        "solver": {
            "method": report.solver.method,
            "iterations": int(report.solver.niter),
            "residual": float(report.solver.residual),
            "converged": bool(report.solver.converged),
        },
        "timings": {"explore_s": report.explore_s, "solve_s": report.solve_s, "total_s": report.total_s},
    }


def with_solver(error: ImplausibleResultError, result: SolverResult) -> ImplausibleResultError:
    """``error`` again, saying which solve gave the impossible numbers."""
    return ImplausibleResultError(
        f"{str(error).removeprefix('implausible steady state: ')} (from {result.method}: residual "
        f"{result.residual:.3g}, imbalance {result.imbalance:.3g})", result)


def solution_report(desc, app, ss, result: SolverResult, *, explore_s: float, solve_s: float,
                    started: float) -> SolveReport | ClassesSolveReport:
    """The measures of a solved chain and the report of them.

    ``app`` is the net :func:`spn.analysis.solve.build_application` built: an
    :class:`~spn.models.dag.ApplicationNet` for one class (one R, X and U), a
    :class:`~spn.models.jobs.ClassesNet` for query classes (R and X per class, U per queue).
    Measures of an unconverged solve (asked for with ``raise_on_nonconvergence=False``) are
    returned unchecked, beside ``result.converged = False``; those of a converged one never are.
    """
    try:
        if desc.classes:
            measures = classes_measures(ss, result.x, classes=app.classes, queues=app.queues, container_place="PC",
                                        containers=app.containers, check=result.converged)
        else:
            measures = job_measures(ss, result.x, users=app.users, think_time=app.think_time,
                                    end_activity=app.end_activity, think_place=app.think_place,
                                    container_place=app.container_place, containers=app.containers,
                                    check=result.converged)
    except ImplausibleResultError as error:
        raise with_solver(error, result) from None
    if desc.classes:
        return ClassesSolveReport(desc.name, app.containers, job_classes(desc), queues_of(desc), measures,
                                  ss.n_states, ss.n_transitions, result, explore_s, solve_s,
                                  time.perf_counter() - started, policy=desc.scheduler.policy)
    return SolveReport(
        model=desc.name, users=app.users, think_time=app.think_time, containers=app.containers,
        measures=measures, tangible_states=ss.n_states, transitions=ss.n_transitions, solver=result,
        explore_s=explore_s, solve_s=solve_s, total_s=time.perf_counter() - started,
        policy=desc.scheduler.policy,
    )


@dataclass(frozen=True)
class NetReport:
    """``spn solve`` of a plain net (e.g. a PNML file): mean tokens and throughputs."""

    model: str
    places: dict
    activities: dict
    tangible_states: int
    transitions: int
    solver: SolverResult
    explore_s: float
    solve_s: float
    total_s: float

    def as_dict(self) -> dict:
        """The JSON object of ``spn solve net.pnml --json``."""
        return {
            "model": self.model,
            **solution_dict(self),
            "places": self.places,
            "activities": self.activities,
        }


@dataclass(frozen=True)
class SimulatedSolveReport:
    """``spn solve`` answered by simulation: the estimates, their intervals and why not exact."""

    model: str
    users: int
    think_time: float
    containers: int
    simulation: object          # spn.simulation.SimulationReport
    reason: str
    total_s: float

    @property
    def mean_execution_time(self):
        """R with its interval (an :class:`~spn.simulation.statistics.Estimate`)."""
        return self.simulation.mean_execution_time

    def as_dict(self) -> dict:
        """The JSON object of ``spn solve --json`` when it simulated (docs/design.md §5.4)."""
        sim = self.simulation
        r = sim.mean_execution_time
        return {
            "model": self.model,
            "method": "simulation",
            "policy": sim.policy,
            "mean_execution_time": r.value,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "rel_half_width": r.rel_half_width,
            "confidence": sim.confidence,
            "replications": sim.replications,
            "precision_met": sim.precision_met,
            "rel_precision": sim.rel_precision,
            "throughput": sim.throughput.value,
            "utilization": sim.utilization.value,
            "engine": sim.engine,
            "pool_finished_tasks": sim.pool_finished_tasks,    # under gate: the net's model (docs/design.md §3.4)
            "jobs_per_replication": sim.jobs,
            "warmup_jobs": sim.warmup_jobs,
            "seed": sim.seed,
            "reason": self.reason,
            "timings": {"simulate_s": sim.seconds, "total_s": self.total_s},
            "users": self.users,
            "think_time": self.think_time,
            "containers": self.containers,
            **{key: value for key, value in sim.as_dict().items() if key in ("classes", "queues")},
        }
