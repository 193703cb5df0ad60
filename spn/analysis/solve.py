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
import os
import time
from dataclasses import dataclass

from spn.defaults import MAX_STATES, RTOL
from spn.description.model import require_single_class
from spn.exceptions import ConvergenceError, ModelError, StateSpaceLimitError
from spn.measures import (
    ImplausibleResultError, JobMeasures, check_distribution, expected_tokens, job_measures,
    throughput,
)
from spn.models.dag import ApplicationNet
from spn.models.jobs import application_net
from spn.solvers import SolverResult, steady_state
from spn.statespace import StateSpace, explore

#: task-time laws the CTMC can represent exactly
ANALYTIC_DISTRIBUTIONS = ("erlang", "exponential")

#: relative half-width of the 95 % interval of R when ``spn solve`` simulates
SIMULATION_PRECISION = 0.005
#: seconds a simulation chosen by ``spn solve`` may take (its interval is reported either way)
SIMULATION_SECONDS = 60.0
#: the widest relative error bound at which ``spn solve`` takes the job-alone method over a simulation
ALONE_MAX_ERROR = 0.01
#: tangible states past which ``spn solve`` simulates a net whose gates the compiled engine cannot
#: read (choice gates whose sums are not exact in a double: fair-queue weights of huge integer steps),
#: rather than explore on with the NumPy engine (5,000-100,000 states/s on such nets)
GATED_MAX_STATES = 200_000


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


def _explore_and_solve(net, *, method, rtol, max_states, progress, raise_on_nonconvergence, explore_seconds=None):
    """State space and steady state of a net, with the time each step took."""
    started = time.perf_counter()
    ss = explore(net, max_states=max_states, progress=progress, max_seconds=explore_seconds)
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
    The net follows the description's scheduling policy (:func:`spn.models.jobs.application_net`).
    """
    require_single_class(desc, "spn solve")
    problems = [
        f"phases.{phase.name}.distribution: {phase.distribution!r} has no exact CTMC; "
        f"the analytic solver takes erlang or exponential task times (use `spn simulate`)"
        for phase in desc.phases if phase.distribution not in ANALYTIC_DISTRIBUTIONS
    ]
    if problems:
        raise ModelError(problems)
    return application_net(desc)


@dataclass(frozen=True)
class Solution:
    """Every intermediate result of the analytic path, and the report made of them."""

    app: ApplicationNet
    state_space: StateSpace
    result: SolverResult
    report: SolveReport


def solve_application(desc, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
                      progress: bool = False, raise_on_nonconvergence: bool = True,
                      explore_seconds: float | None = None) -> Solution:
    """Build, explore and solve a description; keep the net, the state space and π.

    ``explore_seconds`` bounds the exploration (None: no limit; past it
    :class:`StateSpaceLimitError` with ``option="max_seconds"``)."""
    started = time.perf_counter()
    app = build_application(desc)
    ss, result, explore_s, solve_s = _explore_and_solve(
        app.net, method=method, rtol=rtol, max_states=max_states, progress=progress,
        raise_on_nonconvergence=raise_on_nonconvergence, explore_seconds=explore_seconds)
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
        policy=desc.scheduler.policy,
    )
    return Solution(app, ss, result, report)


def solve_description(desc, *, method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
                      progress: bool = False, raise_on_nonconvergence: bool = True, fallback: bool = False,
                      rel_precision: float = SIMULATION_PRECISION, max_seconds: float | None = SIMULATION_SECONDS,
                      seed=None, explore_seconds: float | None = None):
    """Solve a model description; raise ConvergenceError unless told otherwise.

    ``method``: a steady-state solver (``auto``, ``direct``, ...: the exact CTMC, or an
    error), ``exact`` (the same as ``auto`` without fallback), or ``simulation``. With
    ``fallback=True`` and ``method="auto"`` (what ``spn solve`` does) the method is chosen
    (:func:`choose_method`): the exact CTMC when it can be built within ``max_states``,
    else a simulation to a 95 % interval of relative half-width ``rel_precision``, bounded
    by ``max_seconds`` (:func:`simulate_for_solve`); a :class:`SimulatedSolveReport` says so.
    ``explore_seconds`` bounds exploring the state space (None: no limit): past it the exact
    path raises :class:`StateSpaceLimitError` (``option="max_seconds"``), the fallback simulates.
    ``desc`` may be a description file's path. (:func:`spn.evaluate` is the pipeline every command runs.)
    """
    if isinstance(desc, (str, os.PathLike)):
        from spn.description import load_description

        desc = load_description(desc)
    if desc.classes:
        from spn.analysis.solve_classes import solve_classes

        return solve_classes(desc, method=method, rtol=rtol, max_states=max_states, progress=progress,
                             raise_on_nonconvergence=raise_on_nonconvergence, fallback=fallback,
                             rel_precision=rel_precision, max_seconds=max_seconds, seed=seed,
                             explore_seconds=explore_seconds)
    started = time.perf_counter()
    if method == "simulation":
        return simulate_for_solve(desc, "asked for (method simulation)", rel_precision=rel_precision,
                                  max_seconds=max_seconds, seed=seed, progress=progress, started=started)
    if method == "exact" or not fallback:
        return solve_application(desc, method="auto" if method == "exact" else method, rtol=rtol,
                                 max_states=max_states, progress=progress,
                                 raise_on_nonconvergence=raise_on_nonconvergence,
                                 explore_seconds=explore_seconds).report
    reason = choose_method(desc, max_states)
    if reason is None:
        try:        # (one class: a fair queue's steps are all 1, and the compiled engine reads its gates)
            return solve_application(desc, method=method, rtol=rtol, max_states=max_states, progress=progress,
                                     raise_on_nonconvergence=raise_on_nonconvergence,
                                     explore_seconds=explore_seconds).report
        except StateSpaceLimitError as error:
            reason = exploration_stopped(error, max_states, max_states)
    alone = alone_for_solve(desc, reason, started=started)
    if isinstance(alone, AloneSolveReport):
        return alone
    reason = f"{reason}; {alone}" if alone else reason
    return simulate_for_solve(desc, reason, rel_precision=rel_precision, max_seconds=max_seconds, seed=seed,
                              progress=progress, started=started)


def exploration_stopped(error: StateSpaceLimitError, max_states: int, limit: int) -> str:
    """Why ``spn solve`` simulates after exploring stopped at ``limit`` states (``max_states`` asked for)."""
    if error.option == "max_seconds":
        return f"exploring the chain took too long ({error})"
    if error.option != "max_states":
        return f"the chain does not fit in memory ({error})"
    if limit < max_states:
        return (f"the chain has more than {limit:,} tangible states, the limit for a net whose gates only the "
                f"NumPy engine reads (fair-queue weights whose steps are too large for exact comparison in a double)")
    return f"the chain has more than {max_states:,} tangible states (max_states)"


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


# --------------------------------------------------------------------------
# The method choice of ``spn solve``: exact where the chain fits, else simulation
# --------------------------------------------------------------------------


def _comb(n, k):
    """C(n, k) as floats, elementwise (inf past the float range)."""
    from scipy.special import comb

    return comb(n, k)


def state_space_lower_bound(desc) -> float:
    """A lower bound on the tangible states of ``desc``'s chain, from the description alone.

    Three families of states of the first job (every other user thinking) are always
    reachable; distinct ones are distinct markings, so their count bounds the chain from
    below (docs/design.md §5.6):

    - a phase p that runs alone (every other phase is before or after it) holds
      ``r = min(C, T - f)`` containers with f of its T tasks finished, its r running tasks
      in any of the ``binom(r + k - 1, k - 1)`` Erlang stage compositions:
      ``Σ_{f=0}^{T-1} binom(min(C, T-f) + k - 1, k - 1)``;
    - the source phases of the highest priority start together and may share the C
      containers in any way while each still has a waiting task (ties are random):
      ``Σ_{r_1+...+r_m = C, r_p <= T_p - 1} Π_p (T_p - r_p) · binom(r_p + k_p - 1, k_p - 1)``
      (``T_p - r_p`` finished counts leave a task waiting);
    - when the tasks of all source phases fit in the C containers together, they all run at
      once, each phase's in any stage composition: ``Π_p binom(T_p + k_p - 1, k_p - 1)``
      (three one-task driver phases of Erlang shape 1,000 side by side: 10⁹ states);
    - any phase, alone or beside others, can hold ``r = min(C, T)`` running tasks at once (the
      phases beside it finish first, and it wins the containers they free) in any stage
      composition: ``binom(r + k - 1, k - 1)`` (4 tasks of shape 161 beside another stage:
      2.9·10⁷ states, which an Erlang fit of a real log asks for).

    The largest is returned (0 when neither applies).

    >>> from spn.description import load_description
    >>> state_space_lower_bound(load_description("models/mapreduce.yaml"))      # the chain has 49
    4.0
    """
    import numpy as np

    C = int(desc.cluster.containers)
    phases = list(desc.phases)
    names = [p.name for p in phases]
    index = {name: k for k, name in enumerate(names)}
    shape = [int(p.shape) if p.distribution == "erlang" else 1 for p in phases]
    bound = 0.0
    # phases alone: ancestors and descendants as bit sets, in list order of a topological sort
    ancestors = [0] * len(phases)
    children = [[] for _ in phases]
    parents = [[] for _ in phases]
    for a, b in desc.edges:
        children[index[a]].append(index[b])
        parents[index[b]].append(index[a])
    order, left = [], [len(ps) for ps in parents]
    ready = [k for k, n in enumerate(left) if n == 0]
    while ready:
        k = ready.pop()
        order.append(k)
        for c in children[k]:
            left[c] -= 1
            if left[c] == 0:
                ready.append(c)
    if len(order) != len(phases):
        return 0.0
    for k in order:
        for a in parents[k]:
            ancestors[k] |= ancestors[a] | (1 << a)
    descendants = [0] * len(phases)
    for k in reversed(order):
        for c in children[k]:
            descendants[k] |= descendants[c] | (1 << c)
    for k, phase in enumerate(phases):
        if (ancestors[k] | descendants[k]).bit_count() == len(phases) - 1 and phase.tasks <= 10_000_000:
            running = np.minimum(C, phase.tasks - np.arange(phase.tasks, dtype=float))
            bound = max(bound, float(np.sum(_comb(running + shape[k] - 1, shape[k] - 1))))
        bound = max(bound, float(_comb(float(min(C, phase.tasks)) + shape[k] - 1, shape[k] - 1)))
    # source phases of the top priority sharing the containers
    sources = [k for k in range(len(phases)) if not parents[k]]
    top = max(phases[k].priority for k in sources)
    group = [k for k in sources if phases[k].priority == top]
    if len(group) > 1 and C <= 5_000 and len(group) * C * C <= 50_000_000:
        total = np.zeros(C + 1)
        total[0] = 1.0
        for k in group:
            r = np.arange(min(C, phases[k].tasks - 1) + 1, dtype=float)
            weights = np.minimum((phases[k].tasks - r) * _comb(r + shape[k] - 1, shape[k] - 1), 1e100)
            total = np.minimum(np.convolve(total, weights)[:C + 1], 1e100)
        bound = max(bound, float(total[C]))
    # source phases whose tasks all fit in the containers together: every task runs at once
    if sum(phases[k].tasks for k in sources) <= C:
        together = 1.0
        for k in sources:
            together = min(together * float(_comb(phases[k].tasks + shape[k] - 1, shape[k] - 1)), 1e300)
        bound = max(bound, together)
    return bound


def choose_method(desc, max_states: int = MAX_STATES) -> str | None:
    """None when the exact CTMC should be tried, else why not (then ``spn solve`` simulates).

    Not tried: a chain that :func:`state_space_lower_bound` already puts past ``max_states``,
    so that no time is spent exploring a chain that cannot fit. (Task-time laws other than
    Erlang/exponential and policies the net does not model stay errors that point to
    ``spn simulate``: the user asked for a model the CTMC cannot be.) With query classes only
    the size of the net is looked at: the lower bound is that of one class's chain.
    """
    bound = 0.0 if desc.classes else state_space_lower_bound(desc)
    if bound > max_states:
        return f"the chain has at least {bound:,.3g} tangible states, past max_states {max_states:,}"
    return job_net_too_large(desc)


#: places past which ``spn solve`` does not build a job-identity net (fifo, fair, classes) but simulates:
#: it has one slot of places per job in the system, so thousands of users make a net whose building
#: alone takes minutes and gigabytes (300 users: a minute), for a chain that is almost always past
#: any state budget; the simulators take such workloads in seconds
JOB_NET_MAX_PLACES = 200


def job_net_too_large(desc) -> str | None:
    """Why the job-identity net of ``desc`` is too large to build (then simulate), or None.

    A slot holds the places of a job of each class of its queue: at least two per phase (a low
    estimate of the places of :mod:`spn.models.jobs`, which also has one per Erlang stage; those
    are left out, so that one user's application fitted at high shapes stays exact where the
    lower bound lets it).

    >>> from spn.description import load_description
    >>> job_net_too_large(load_description("models/mapreduce.yaml", ["scheduler.policy=fifo"])) is None
    True
    """
    from spn.description.model import job_classes, queues_of

    if desc.scheduler.policy == "gate" and not desc.classes:
        return None         # the paper's net: one set of places for all jobs
    classes = job_classes(desc)
    places = 0
    for queue in queues_of(desc):
        members = [c for c in classes if c.queue == queue.name]
        slots = sum(c.workload.users for c in members)
        places += slots * sum(2 * len(c.phases) for c in members)
    if places > JOB_NET_MAX_PLACES:
        return (f"its job-identity net would have at least {places:,} places (a slot per job in the system), "
                f"past {JOB_NET_MAX_PLACES:,}: its chain is far too large to build")
    return None


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


def simulate_for_solve(desc, reason: str, *, rel_precision: float = SIMULATION_PRECISION,
                       max_seconds: float | None = SIMULATION_SECONDS, seed=None, progress: bool = False,
                       started: float | None = None, job_times: bool = False) -> SimulatedSolveReport:
    """The simulation ``spn solve`` runs when it does not solve exactly.

    Engine: ``cluster`` for one user (its jobs never meet, so both engines simulate the same
    model and the cluster engine is faster) or a policy other than ``gate`` (the cluster
    engine is the job-identity net's model), else ``net`` (the model the CTMC would solve);
    the cluster model runs compiled (``compiled``) once this installation has compiled it.
    Query classes: the queue simulator (the cluster engine; the compiled one has one class).
    One user: each job starts on an empty cluster, so no warm-up is needed and replications
    of 10 jobs suffice; several users: the run length of ``spn simulate``. A pilot of 20
    replications, then Stein's rule to the 95 % interval of relative half-width
    ``rel_precision`` (:mod:`spn.simulation.statistics`), up to 100,000 replications or
    ``max_seconds``. ``job_times``: keep every measured job's execution time (for percentiles); the
    job-level engine then simulates, the net pooling jobs under ``gate``.
    """
    from spn.description.model import NET_POLICIES, job_classes
    from spn.simulation.runner import simulate_description

    started = time.perf_counter() if started is None else started
    one_user = not desc.classes and desc.workload.users == 1
    engine = "cluster" if one_user or job_times or desc.scheduler.policy not in NET_POLICIES else "net"
    # the net pools finished tasks across jobs under gate: the job-level engine that keeps each job's
    # times does the same (pool_finished_tasks), so that its jobs are the net's
    pooled = job_times and not one_user and not desc.classes and desc.scheduler.policy in NET_POLICIES
    if engine == "cluster" and not desc.classes and not pooled:   # compiled once this installation has it (built in the background)
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
                               **({"job_times": True, "pool_finished_tasks": pooled} if job_times else {}))
    return SimulatedSolveReport(model=desc.name, users=sum(c.workload.users for c in job_classes(desc)),
                                think_time=None if desc.classes else desc.workload.think_time,
                                containers=desc.cluster.containers, simulation=sim, reason=reason,
                                total_s=time.perf_counter() - started)


@dataclass(frozen=True)
class AloneSolveReport:
    """``spn solve`` answered by the job-alone method (one user): R with rigorous bounds, X and U from it."""

    model: str
    think_time: float
    containers: int
    alone: object               # spn.analysis.alone.AloneResult
    busy_container_seconds: float
    reason: str
    total_s: float

    @property
    def mean_execution_time(self) -> float:
        """R, the point estimate between the bounds ``alone.low`` and ``alone.high``."""
        return self.alone.mean

    def as_dict(self) -> dict:
        """The JSON object of ``spn solve --json`` when the job-alone method answered (docs/design.md §5.4)."""
        r = self.alone.mean
        cycle = r + self.think_time  # one user: think, then run
        return {
            "model": self.model,
            "method": "job-alone",
            "mean_execution_time": r,
            "low": self.alone.low,
            "high": self.alone.high,
            "error_bound": self.alone.error_bound,
            "throughput": 1.0 / cycle,
            "utilization": self.busy_container_seconds / (self.containers * cycle),
            "grid_step_s": self.alone.step,
            "reason": self.reason,
            "how": self.alone.method,
            "timings": {"total_s": self.total_s},
            "users": 1,
            "think_time": self.think_time,
            "containers": self.containers,
        }


def alone_for_solve(desc, reason: str, *, started: float | None = None) -> AloneSolveReport | str | None:
    """The job-alone answer (one user), or why it is not used (``None``: several users)."""
    from spn.analysis.alone import job_alone

    if desc.workload.users != 1:
        return None
    started = time.perf_counter() if started is None else started
    try:
        alone = job_alone(desc)
    except ModelError as error:
        return f"the job-alone method does not apply ({error})"
    if alone.error_bound > ALONE_MAX_ERROR:
        return (f"the job-alone bounds allow {100 * alone.error_bound:.2g} %, more than "
                f"{100 * ALONE_MAX_ERROR:g} %")
    busy = sum(p.tasks * p.task_time for p in desc.phases)
    return AloneSolveReport(model=desc.name, think_time=desc.workload.think_time,
                            containers=desc.cluster.containers, alone=alone, busy_container_seconds=busy,
                            reason=reason, total_s=time.perf_counter() - started)
