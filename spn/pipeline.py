"""The whole analytic path for a model description: build → explore → solve → measures.

>>> from spn.io.description import load_description
>>> report = solve_description(load_description("models/mapreduce.yaml"))  # doctest: +SKIP
>>> round(report.measures.mean_execution_time, 3)                          # doctest: +SKIP
13.336
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from spn.exceptions import ConvergenceError, ModelError
from spn.measures import JobMeasures, expected_tokens, job_measures, throughput
from spn.models.dag import build
from spn.solvers import SolverResult, steady_state
from spn.statespace import explore

#: task-time laws the CTMC can represent exactly
ANALYTIC_DISTRIBUTIONS = ("erlang", "exponential")


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

    def as_dict(self) -> dict:
        """The JSON object of ``spn solve --json`` (DESIGN §5)."""
        return {
            "model": self.model,
            "mean_execution_time": self.measures.mean_execution_time,
            "throughput": self.measures.throughput,
            "utilization": self.measures.utilization,
            **_solution_dict(self),
            "users": self.users,
            "think_time": self.think_time,
            "containers": self.containers,
        }


def _solution_dict(report) -> dict:
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


def _explore_and_solve(net, *, method, tol, max_states, progress, raise_on_nonconvergence):
    """State space and steady state of a net, with the time each step took."""
    started = time.perf_counter()
    ss = explore(net, max_states=max_states, progress=progress)
    explored = time.perf_counter()
    result = steady_state(ss.generator(), method=method, rtol=tol)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    return ss, result, explored - started, time.perf_counter() - explored


def build_net(desc):
    """The composed net of a description and the name of the activity that completes a job.

    Task-time laws other than Erlang/exponential have no exact CTMC: they are
    reported here, pointing to simulation.
    """
    problems = [
        f"phases.{phase.name}.distribution: {phase.distribution!r} has no exact CTMC; "
        f"the analytic solver takes erlang or exponential task times (use `spn simulate`)"
        for phase in desc.phases if phase.distribution not in ANALYTIC_DISTRIBUTIONS
    ]
    if problems:
        raise ModelError(problems)
    app = build(desc)
    return app.net, app.end_activity


def solve_description(desc, *, method: str = "auto", tol: float = 1e-10,
                      max_states: int = 2_000_000, progress: bool = False,
                      raise_on_nonconvergence: bool = True) -> SolveReport:
    """Solve a model description analytically; raise ConvergenceError unless told otherwise."""
    started = time.perf_counter()
    net, end_activity = build_net(desc)
    ss, result, explore_s, solve_s = _explore_and_solve(
        net, method=method, tol=tol, max_states=max_states, progress=progress,
        raise_on_nonconvergence=raise_on_nonconvergence)
    measures = job_measures(ss, result.x, users=desc.workload.users,
                            think_time=desc.workload.think_time, end_activity=end_activity,
                            containers=desc.cluster.containers)
    return SolveReport(
        model=desc.name, users=desc.workload.users, think_time=desc.workload.think_time,
        containers=desc.cluster.containers, measures=measures,
        tangible_states=ss.n_states, transitions=ss.n_transitions, solver=result,
        explore_s=explore_s, solve_s=solve_s, total_s=time.perf_counter() - started,
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
            **_solution_dict(self),
            "places": self.places,
            "activities": self.activities,
        }


def solve_net(net, *, method: str = "auto", tol: float = 1e-10, max_states: int = 2_000_000,
              progress: bool = False, raise_on_nonconvergence: bool = True) -> NetReport:
    """Solve any net: mean tokens of every place and throughput of every activity."""
    started = time.perf_counter()
    ss, result, explore_s, solve_s = _explore_and_solve(
        net, method=method, tol=tol, max_states=max_states, progress=progress,
        raise_on_nonconvergence=raise_on_nonconvergence)
    pi = result.x
    places = {p.name: expected_tokens(ss, pi, p.name) for p in net.places}
    activities = {a.name: throughput(ss, pi, a.name) for a in net.activities}
    return NetReport(net.name, places, activities, ss.n_states, ss.n_transitions, result,
                     explore_s, solve_s, time.perf_counter() - started)
