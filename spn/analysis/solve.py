"""The whole analytic path for a model description: build → explore → solve → measures.

One path for every description: a one-class description is one class among
:func:`~spn.description.model.job_classes`. :func:`build_application` builds its net (the
paper's net or the job-identity net of :func:`spn.models.jobs.application_net` for one class,
:func:`spn.models.jobs.build_classes` for query classes and queues), the chain is explored and
solved, and :func:`spn.analysis.reports.solution_report` reads the measures off it (R, X and U
for one class; R and X per class and U per queue for several).

:func:`solve_application` keeps every intermediate result (the net, its state space, the
steady state); :func:`solve_description` reports it as ``spn solve`` prints it, by the method
named (the choice of a method within a budget is :mod:`spn.pipeline`'s).

>>> from spn.description import load_description
>>> report = solve_description(load_description("models/mapreduce.yaml"))
>>> round(report.measures.mean_execution_time, 3)
13.336
>>> desc = load_description("models/two-queues.yaml", ["cluster.containers=2", "classes.etl.users=1",
...                                                     "classes.dashboard.users=1"])
>>> report = solve_description(desc)
>>> sorted(report.as_dict()["classes"]), report.as_dict()["method"]
(['dashboard', 'etl'], 'exact')
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

from spn.analysis.choice import (
    JOB_NET_MAX_PLACES, choose_method, exploration_stopped, job_net_too_large, state_space_lower_bound,
)
from spn.analysis.reports import (
    ClassesSolveReport, NetReport, SimulatedSolveReport, SolveReport, solution_dict,
    solution_report, with_solver,
)
from spn.defaults import MAX_STATES, RTOL
from spn.description.model import ANALYTIC_DISTRIBUTIONS, NET_POLICIES, job_classes
from spn.exceptions import ConvergenceError, ModelError
from spn.measures import ImplausibleResultError, check_distribution, expected_tokens, throughput
from spn.models.jobs import application_net, build_classes
from spn.solvers import SolverResult, steady_state
from spn.statespace import StateSpace, explore

__all__ = ["solve_description", "solve_application", "build_application", "require_analytic", "Solution",
           "solve_net", "simulate_for_solve", "ANALYTIC_DISTRIBUTIONS", "SIMULATION_PRECISION",
           "SIMULATION_SECONDS", "ALONE_MAX_ERROR",
           # the method choice (spn.analysis.choice) and the reports (spn.analysis.reports), read from here too
           "choose_method", "state_space_lower_bound", "job_net_too_large", "JOB_NET_MAX_PLACES",
           "exploration_stopped", "SolveReport", "ClassesSolveReport", "NetReport", "SimulatedSolveReport",
           "solution_dict", "solution_report"]

#: relative half-width of the 95 % interval of R when ``spn solve`` simulates
SIMULATION_PRECISION = 0.005
#: seconds a simulation chosen by ``spn solve`` may take (its interval is reported either way)
SIMULATION_SECONDS = 60.0
#: the widest relative error bound at which ``spn solve`` takes the job-alone method over a simulation
ALONE_MAX_ERROR = 0.01


def _explore_and_solve(net, *, method, rtol, max_states, progress, raise_on_nonconvergence, explore_seconds=None):
    """State space and steady state of a net, with the time each step took."""
    started = time.perf_counter()
    ss = explore(net, max_states=max_states, progress=progress, max_seconds=explore_seconds)
    explored = time.perf_counter()
    result = steady_state(ss.generator(), method=method, rtol=rtol)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    return ss, result, explored - started, time.perf_counter() - explored


def require_analytic(desc) -> None:
    """Raise :class:`ModelError` unless every task-time law of every class is Erlang or exponential
    (the others have no exact CTMC: they point to simulation)."""
    prefix = (lambda c: f"classes.{c.name}.") if desc.classes else (lambda c: "")
    problems = [
        f"{prefix(c)}phases.{phase.name}.distribution: {phase.distribution!r} has no exact CTMC; "
        f"the analytic solver takes erlang or exponential task times (use `spn simulate`)"
        for c in job_classes(desc) for phase in c.phases if phase.distribution not in ANALYTIC_DISTRIBUTIONS
    ]
    if problems:
        raise ModelError(problems)


def build_application(desc):
    """The composed net of a description, refusing task-time laws a CTMC cannot carry exactly.

    One class: the :class:`~spn.models.dag.ApplicationNet` of its scheduling policy
    (:func:`spn.models.jobs.application_net`); query classes: the job-identity net of every
    class and queue (:class:`~spn.models.jobs.ClassesNet`, :func:`spn.models.jobs.build_classes`).
    Task-time laws other than Erlang/exponential are reported here, pointing to simulation.
    """
    require_analytic(desc)
    return build_classes(desc) if desc.classes else application_net(desc)


@dataclass(frozen=True)
class Solution:
    """Every intermediate result of the analytic path, and the report made of them."""

    app: object                 # ApplicationNet (one class) or ClassesNet (query classes)
    state_space: StateSpace
    result: SolverResult
    report: SolveReport | ClassesSolveReport


def _solve_built(desc, app, started: float, *, method, rtol, max_states, progress, raise_on_nonconvergence,
                 explore_seconds) -> Solution:
    ss, result, explore_s, solve_s = _explore_and_solve(
        app.net, method=method, rtol=rtol, max_states=max_states, progress=progress,
        raise_on_nonconvergence=raise_on_nonconvergence, explore_seconds=explore_seconds)
    report = solution_report(desc, app, ss, result, explore_s=explore_s, solve_s=solve_s, started=started)
    return Solution(app, ss, result, report)


def solve_application(desc, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
                      progress: bool = False, raise_on_nonconvergence: bool = True,
                      explore_seconds: float | None = None) -> Solution:
    """Build, explore and solve a description; keep the net, the state space and π.

    ``explore_seconds`` bounds the exploration (None: no limit; past it
    :class:`StateSpaceLimitError` with ``option="max_seconds"``)."""
    started = time.perf_counter()
    return _solve_built(desc, build_application(desc), started, method=method, rtol=rtol, max_states=max_states,
                        progress=progress, raise_on_nonconvergence=raise_on_nonconvergence,
                        explore_seconds=explore_seconds)


def solve_description(desc, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
                      progress: bool = False, raise_on_nonconvergence: bool = True,
                      rel_precision: float = SIMULATION_PRECISION, max_seconds: float | None = SIMULATION_SECONDS,
                      seed=None, explore_seconds: float | None = None):
    """Solve a model description (one class or query classes) by the method named; raise ConvergenceError
    unless told otherwise.

    ``method``: a steady-state solver (``auto``, ``direct``, ...: the exact CTMC, or an error),
    ``exact`` (the same as ``auto``), or ``simulation`` (a 95 % interval of relative half-width
    ``rel_precision``, bounded by ``max_seconds``: :func:`simulate_for_solve`). ``explore_seconds``
    bounds exploring the state space (None: no limit): past it :class:`StateSpaceLimitError`
    (``option="max_seconds"``). ``desc`` may be a description file's path. Choosing the method
    within a budget is the pipeline's: :func:`spn.evaluate`, which every command runs.
    """
    if isinstance(desc, (str, os.PathLike)):
        from spn.description import load_description

        desc = load_description(desc)
    started = time.perf_counter()
    simulation = dict(rel_precision=rel_precision, max_seconds=max_seconds, seed=seed, progress=progress,
                      started=started)
    if method == "simulation":
        return simulate_for_solve(desc, "asked for (method simulation)", **simulation)
    options = dict(rtol=rtol, progress=progress, raise_on_nonconvergence=raise_on_nonconvergence,
                   explore_seconds=explore_seconds)
    return solve_application(desc, method="auto" if method == "exact" else method, max_states=max_states,
                             **options).report


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
            raise with_solver(error, result) from None
    return NetReport(net.name, places, activities, ss.n_states, ss.n_transitions, result,
                     explore_s, solve_s, time.perf_counter() - started)


def simulate_for_solve(desc, reason: str, *, rel_precision: float = SIMULATION_PRECISION,
                       max_seconds: float | None = SIMULATION_SECONDS, seed=None, progress: bool = False,
                       started: float | None = None, job_times: bool = False) -> SimulatedSolveReport:
    """The simulation ``spn solve`` runs when it does not solve exactly.

    Engine: the job-level cluster engine, run compiled (``compiled``) once this installation
    has compiled it. Under ``gate`` with several users it pools finished tasks across jobs
    (``pool_finished_tasks``): that is the net's model (the model the CTMC would solve) at the
    cost of a job's events, where the net simulator re-checks activities per firing and slows
    down with the size of the net. One user: jobs never
    meet, so pooling changes nothing. Query classes: the queue simulator.
    One user: each job starts on an empty cluster, so no warm-up is needed and replications
    of 10 jobs suffice; several users: the run length of ``spn simulate``. A pilot of 20
    replications, then Stein's rule to the 95 % interval of relative half-width
    ``rel_precision`` (:mod:`spn.simulation.statistics`), up to 100,000 replications or
    ``max_seconds``. ``job_times``: keep every measured job's execution time (for percentiles).
    """
    from spn.simulation.runner import simulate_description

    started = time.perf_counter() if started is None else started
    one_user = not desc.classes and desc.workload.users == 1
    engine = "cluster"
    pooled = not one_user and not desc.classes and desc.scheduler.policy in NET_POLICIES
    if not desc.classes:      # compiled once this installation has it (built in the background)
        from spn.simulation.cluster_compiled import compiled_cluster_ready

        if compiled_cluster_ready():
            engine = "compiled"
        else:
            from spn import kernels

            kernels.warm_in_background("cluster")
    run_length = {"warmup_jobs": 0, "jobs": 10} if one_user else {}
    sim = simulate_description(desc, engine=engine, seed=seed, replications=20, confidence=0.95,
                               rel_precision=rel_precision, max_replications=100_000, max_seconds=max_seconds,
                               progress=progress, **run_length,
                               pool_finished_tasks=pooled, **({"job_times": True} if job_times else {}))
    return SimulatedSolveReport(model=desc.name, users=sum(c.workload.users for c in job_classes(desc)),
                                think_time=None if desc.classes else desc.workload.think_time,
                                containers=desc.cluster.containers, simulation=sim, reason=reason,
                                total_s=time.perf_counter() - started)
