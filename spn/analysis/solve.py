"""The whole analytic path for a model description: build → explore → solve → measures.

:func:`solve_application` keeps every intermediate result (the application net,
its state space, the steady state); :func:`solve_description` reports what
``spn solve`` prints.

>>> from spn.description import load_description
>>> report = solve_description(load_description("models/mapreduce.yaml"))
>>> round(report.measures.mean_execution_time, 3)
13.336
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from spn.defaults import MAX_STATES, RTOL
from spn.exceptions import ConvergenceError, ModelError
from spn.measures import (
    ImplausibleResultError, JobMeasures, check_distribution, expected_tokens, job_measures,
    throughput,
)
from spn.models.dag import ApplicationNet, build
from spn.solvers import SolverResult, steady_state
from spn.statespace import StateSpace, explore

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
        """The JSON object of ``spn solve --json`` (docs/design.md §5)."""
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


def _explore_and_solve(net, *, method, rtol, max_states, progress, raise_on_nonconvergence):
    """State space and steady state of a net, with the time each step took."""
    started = time.perf_counter()
    ss = explore(net, max_states=max_states, progress=progress)
    explored = time.perf_counter()
    result = steady_state(ss.generator(), method=method, rtol=rtol)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    return ss, result, explored - started, time.perf_counter() - explored


def _with_solver(error: ImplausibleResultError, result: SolverResult) -> ImplausibleResultError:
    """``error`` again, saying which solve gave the impossible numbers."""
    return ImplausibleResultError(
        f"{str(error).removeprefix('implausible steady state: ')} (from {result.method}: residual "
        f"{result.residual:.3g}, imbalance {result.imbalance:.3g})", result)


def build_application(desc) -> ApplicationNet:
    """The composed net of a description, refusing task-time laws a CTMC cannot carry exactly.

    Task-time laws other than Erlang/exponential are reported here, pointing to simulation.
    """
    problems = [
        f"phases.{phase.name}.distribution: {phase.distribution!r} has no exact CTMC; "
        f"the analytic solver takes erlang or exponential task times (use `spn simulate`)"
        for phase in desc.phases if phase.distribution not in ANALYTIC_DISTRIBUTIONS
    ]
    if problems:
        raise ModelError(problems)
    return build(desc)


@dataclass(frozen=True)
class Solution:
    """Every intermediate result of the analytic path, and the report made of them."""

    app: ApplicationNet
    state_space: StateSpace
    result: SolverResult
    report: SolveReport


def solve_application(desc, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
                      progress: bool = False, raise_on_nonconvergence: bool = True) -> Solution:
    """Build, explore and solve a description; keep the net, the state space and π."""
    started = time.perf_counter()
    app = build_application(desc)
    ss, result, explore_s, solve_s = _explore_and_solve(
        app.net, method=method, rtol=rtol, max_states=max_states, progress=progress,
        raise_on_nonconvergence=raise_on_nonconvergence)
    # measures of an unconverged solve (asked for with raise_on_nonconvergence=False) are
    # returned unchecked, beside result.converged = False; those of a converged one never are
    try:
        measures = job_measures(ss, result.x, users=app.users, think_time=app.think_time,
                                end_activity=app.end_activity, think_place=app.think_place,
                                container_place=app.container_place, containers=app.containers,
                                check=result.converged)
    except ImplausibleResultError as error:
        raise _with_solver(error, result) from None
    report = SolveReport(
        model=desc.name, users=app.users, think_time=app.think_time, containers=app.containers,
        measures=measures, tangible_states=ss.n_states, transitions=ss.n_transitions, solver=result,
        explore_s=explore_s, solve_s=solve_s, total_s=time.perf_counter() - started,
    )
    return Solution(app, ss, result, report)


def solve_description(desc, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
                      progress: bool = False, raise_on_nonconvergence: bool = True) -> SolveReport:
    """Solve a model description analytically; raise ConvergenceError unless told otherwise."""
    return solve_application(desc, method=method, rtol=rtol, max_states=max_states, progress=progress,
                             raise_on_nonconvergence=raise_on_nonconvergence).report


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


def solve_net(net, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
              progress: bool = False, raise_on_nonconvergence: bool = True) -> NetReport:
    """Solve any net: mean tokens of every place and throughput of every activity."""
    started = time.perf_counter()
    ss, result, explore_s, solve_s = _explore_and_solve(
        net, method=method, rtol=rtol, max_states=max_states, progress=progress,
        raise_on_nonconvergence=raise_on_nonconvergence)
    pi = result.x
    places = {p.name: expected_tokens(ss, pi, p.name) for p in net.places}
    activities = {a.name: throughput(ss, pi, a.name) for a in net.activities}
    if result.converged:
        try:
            check_distribution(pi)
            bad = [f"{kind} {name} = {value:.6g}" for kind, values in
                   (("mean tokens of", places), ("throughput of", activities))
                   for name, value in values.items() if not (math.isfinite(value) and value >= 0)]
            if bad:
                raise ImplausibleResultError("; ".join(bad))
        except ImplausibleResultError as error:
            raise _with_solver(error, result) from None
    return NetReport(net.name, places, activities, ss.n_states, ss.n_transitions, result,
                     explore_s, solve_s, time.perf_counter() - started)
