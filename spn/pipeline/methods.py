"""The methods that answer a question, as a registry: each says whether it applies, whether its
predicted cost fits the budget, and what error it gives; :func:`spn.pipeline.evaluate` takes the
most exact one that fits.

======================  =====================================  ===========================================
method                  applies to                             error
======================  =====================================  ===========================================
``exact``               Erlang/exponential laws, a chain that  none (the steady-state solver's tolerance)
                        fits ``max_states`` (estimated first:
                        :mod:`spn.analysis.state_count`) and
                        the time
``job-alone``           one user, one class, Erlang laws,      rigorous bounds (order statistics)
                        phases that never wait for each other
``decomposition``       one class under fifo or fair: the      X(k)'s intervals propagated + the model's
                        mean; under fifo also percentiles and  error (a share of the gap between its fifo
                        P(R <= d) (a job's passage time in     and processor-sharing chains, tuned;
                        the fifo chain)                        percentiles: the whole gap + a job alone's
                                                               Erlang fit's gap)
``simulation``          every model                            a 95 % confidence interval
======================  =====================================  ===========================================

A method that starts and finds it cannot finish in time (an exploration projected past the budget,
bounds wider than asked) raises :class:`Skipped`, and the next method answers.

>>> [m.name for m in METHODS]
['exact', 'job-alone', 'decomposition', 'simulation']
"""

from __future__ import annotations

import sys
import time

from spn.description.model import container_seconds
from spn.exceptions import ModelError, StateSpaceLimitError
from spn.pipeline.result import Result

__all__ = ["METHODS", "Skipped", "Exact", "JobAlone", "Decomposition", "Simulation", "method_named"]

#: the share of the time left that exploring an exact chain may take (the rest: solving it, or a fallback)
EXPLORE_SHARE = 0.5
#: the share of the exploring time that estimating the chain's size may take
ESTIMATE_SHARE = 0.2
#: how far past ``max_states`` an estimated chain must be before it is not explored (the estimates of
#: benchmarks/state_estimate.py land within 1.35 times the truth once the chains sampled saturate)
ESTIMATE_MARGIN = 1.5
#: the widest relative error bound at which the job-alone method answers (else a simulation does)
ALONE_MAX_ERROR = 0.01


class Skipped(Exception):
    """A method found, while running, that it cannot answer within the budget; the message says why."""


class Exact:
    """The CTMC of the application net, solved exactly (``spn.analysis.solve``)."""

    name = "exact"

    def __init__(self, solver: str = "auto", *, estimate: bool = True):
        self.solver = solver
        self.estimate = estimate      # skip a chain estimated past max_states (when choosing, not when asked)

    def applies(self, desc, question) -> str | None:
        # not from spn.analysis.solve, whose import (the nets, the solvers) a refused chain need not pay
        from spn.description.model import ANALYTIC_DISTRIBUTIONS

        laws = sorted({p.distribution for c in _classes(desc) for p in c.phases} - set(ANALYTIC_DISTRIBUTIONS))
        if laws:
            return f"task-time laws {', '.join(laws)} have no exact CTMC"
        if desc.classes and question.needs_distribution:
            return "the execution-time distribution of several query classes has no exact method yet"
        return None

    def fits(self, desc, budget) -> str | None:
        from spn.analysis.choice import choose_method

        return choose_method(desc, budget.max_states)

    def run(self, desc, question, budget, clock, reason) -> Result:
        from spn.analysis.solve import exploration_stopped, solve_application

        left = clock.left()
        explore_seconds = None if left is None else EXPLORE_SHARE * left
        if self.estimate:
            _refuse_by_estimate(desc, budget, None if explore_seconds is None else ESTIMATE_SHARE * explore_seconds)
        options = dict(method=self.solver, rtol=budget.rtol, max_states=budget.max_states, progress=budget.progress,
                       explore_seconds=explore_seconds)
        try:        # one class or query classes: one path
            solution = solve_application(desc, **options)
        except StateSpaceLimitError as error:
            raise Skipped(exploration_stopped(error, budget.max_states, budget.max_states)) from error
        report = solution.report
        details = report.as_dict()
        extra = {}
        if question.needs_distribution:
            extra = _exact_distribution(desc, solution, question, budget, details)
        how = "exact (CTMC of the job-identity net)" if desc.classes else "exact (CTMC)"
        return _from_dict(details, "exact", how, reason, report, **extra)


def _refuse_by_estimate(desc, budget, seconds) -> None:
    """Raise :class:`Skipped` when the chain's estimated size (:mod:`spn.analysis.state_count`) is past
    ``max_states``, before any time goes to exploring it."""
    from spn.analysis.state_count import estimate_states

    shown = budget.progress and sys.stderr.isatty()
    if shown and desc.workload is not None and desc.workload.users > 1:
        print("\r\033[Kspn: estimating the chain's size from the chains of fewer users", end="", file=sys.stderr,
              flush=True)
    estimate = estimate_states(desc, max_states=budget.max_states, max_seconds=seconds)
    if estimate is None:
        return
    if shown:
        print(f"\r\033[Kspn: the chain has {estimate.describe()}", file=sys.stderr, flush=True)
    if estimate.states > ESTIMATE_MARGIN * budget.max_states:
        raise Skipped(f"the chain would have {estimate.describe()}, past max_states {budget.max_states:,}")


def _exact_distribution(desc, solution, question, budget, details) -> dict:
    """Percentiles and P(R <= d) of the tagged job on the solved chain (docs/percentiles.md)."""
    from spn.analysis.passage_slots import tagged_job_distribution

    started = time.perf_counter()
    shown = []

    def show(niter, x, residual):
        shown.append(niter)
        print(f"\rdistribution: {niter:,} steps, P(still running) = {residual:.2g}", end="", file=sys.stderr,
              flush=True)
    dist = tagged_job_distribution(desc, solution.app, solution.state_space, solution.result.x, atol=1e-12,
                                   callback=show if budget.progress and sys.stderr.isatty() else None)
    if shown:
        print(file=sys.stderr)
    seconds = time.perf_counter() - started
    details["execution_time_distribution"] = {
        "mean": dist.mean, "std": dist.std, "method": dist.method, "transient_states": dist.n_states,
        "iterations": dist.niter, "residual": dist.residual, "converged": dist.converged, "seconds": seconds}
    details["timings"] = dict(details["timings"], distribution_s=seconds)
    out = {"distribution": dist}
    if question.percentiles:
        out["percentiles"] = dist.percentiles(question.percentiles)
    if question.deadline is not None:
        out["deadline_probability"] = float(dist.cdf(question.deadline))
    return out


class JobAlone:
    """One job alone on the cluster (one user): its execution-time law from order statistics, with
    rigorous bounds (:mod:`spn.analysis.alone`)."""

    name = "job-alone"

    def applies(self, desc, question) -> str | None:
        if desc.classes:
            return "it models one class of jobs"
        if desc.workload.users != 1:
            return "it needs one user (the jobs of several users meet)"
        return None

    def fits(self, desc, budget) -> str | None:
        return None

    def run(self, desc, question, budget, clock, reason) -> Result:
        from spn.analysis.alone import job_alone

        try:
            alone = job_alone(desc)
        except ModelError as error:
            raise Skipped(f"it does not apply ({error})") from None
        if alone.error_bound > ALONE_MAX_ERROR:
            raise Skipped(f"its bounds allow {100 * alone.error_bound:.2g} %, more than {100 * ALONE_MAX_ERROR:g} %")
        extra = {}
        if question.percentiles:
            table = alone.percentiles(question.percentiles)
            extra["percentiles"] = {q: v for q, (v, lo, hi) in table.items()}
            extra["percentile_intervals"] = {q: (lo, hi) for q, (v, lo, hi) in table.items()}
        if question.deadline is not None:
            value, low, high = alone.probability(question.deadline)
            extra.update(deadline_probability=value, deadline_interval=(low, high))
        r = alone.mean
        cycle = r + desc.workload.think_time    # one user: think, then run
        busy = container_seconds(desc.phases)
        details = {"low": alone.low, "high": alone.high, "error_bound": alone.error_bound, "grid_step_s": alone.step,
                   "users": 1, "think_time": desc.workload.think_time, "containers": desc.cluster.containers,
                   "policy": desc.scheduler.policy}
        return Result(model=desc.name, method="job-alone", how="job alone: order statistics, with rigorous bounds",
                      reason=reason, mean_execution_time=r,
                      interval=(alone.low, alone.high), throughput=1.0 / cycle,
                      utilization=busy / (desc.cluster.containers * cycle), details=details, report=alone, **extra)


class Decomposition:
    """Several users under fifo or fair: the cluster's throughput X(k) with k jobs, then the closed chain of
    the users (:mod:`spn.analysis.decomposition`). It answers when its error is within the precision asked."""

    name = "decomposition"

    def applies(self, desc, question) -> str | None:
        from spn.analysis.decomposition import distribution_refused, not_applicable

        return not_applicable(desc) or (distribution_refused(desc) if question.needs_distribution else None)

    def fits(self, desc, budget) -> str | None:
        return None

    def run(self, desc, question, budget, clock, reason) -> Result:
        from spn.analysis.decomposition import TooCoarse, decompose
        from spn.exceptions import SpnError

        try:
            d = decompose(desc, seed=budget.seed, max_seconds=clock.left(), distribution=question.needs_distribution,
                          give_up_past=budget.rel_precision, asked=tuple(question.percentiles or ()),
                          probability=question.deadline is not None)
        except TooCoarse as error:
            raise Skipped(str(error)) from error
        except SpnError as error:
            raise Skipped(f"it could not answer ({error})") from error
        extra, widest = {}, ("mean", d.error_bound)
        if question.percentiles:
            table = d.percentiles(question.percentiles)
            extra["percentiles"] = {q: v for q, (v, lo, hi) in table.items()}
            extra["percentile_intervals"] = {q: (lo, hi) for q, (v, lo, hi) in table.items()}
            # a percentile's error, relative to it, as the mean's: the larger side
            widest = max([widest] + [(f"p{q:g}", max(v - lo, hi - v) / v if v > 0 else 0.0)
                                     for q, (v, lo, hi) in table.items()], key=lambda w: w[1])
        if question.deadline is not None:
            p, low, high = d.probability(question.deadline)
            extra.update(deadline_probability=p, deadline_interval=(low, high))
            # a probability's error is absolute (a relative one would vanish as P(R <= d) nears 1)
            widest = max(widest, ("P(R <= deadline)", max(p - low, high - p)), key=lambda w: w[1])
        if widest[1] > budget.rel_precision:
            raise Skipped(str(TooCoarse.of(f"error estimate of the {widest[0]}", widest[1], budget.rel_precision)))
        ks = [x.k for x in d.curve]
        how = (f"decomposition: X(k) at k = {', '.join(map(str, ks))} "
               f"({', '.join(sorted({x.source for x in d.curve}))}), then the closed chain of the users"
               + (f" (fifo: the two oldest jobs in {d.stages} and {d.second_stages} stages)" if d.policy == "fifo" else
                  f" (fair: every job in service in {d.fair_stages} stages, extrapolated to a job's work's)"))
        details = dict(d.as_dict(), users=desc.workload.users, think_time=desc.workload.think_time,
                       containers=desc.cluster.containers, policy=d.policy, timings={"decomposition_s": d.seconds})
        if d.passages is not None:
            law = d.passages[0]     # scaled to R: shown, it says the law and the mean agree
            solved = {id(p): p for p in d.passages[:4]}.values()       # exact X(k): one law for three rows
            details["execution_time_distribution"] = {
                "mean": law.mean, "std": d.own_law.std(law),
                "method": "uniformisation (the fifo chain, one job tagged; its percentiles moved by its own law)",
                "transient_states": law.n_states, "iterations": law.niter, "residual": law.residual,
                "converged": law.converged, "seconds": sum(p.seconds for p in solved)}
        return Result(model=desc.name, method="decomposition", how=how, reason=reason, mean_execution_time=d.mean,
                      interval=(d.low, d.high), throughput=d.throughput, utilization=d.utilization,
                      details=details, report=d, **extra)


class Simulation:
    """A simulation to a 95 % interval of relative half-width ``rel_precision``, within the time left
    (:func:`spn.analysis.solve.simulate_for_solve` chooses the engine)."""

    name = "simulation"

    def applies(self, desc, question) -> str | None:
        return None

    def fits(self, desc, budget) -> str | None:
        return None

    def run(self, desc, question, budget, clock, reason) -> Result:
        from spn.analysis.solve import simulate_for_solve

        reason = reason or "asked for (method simulation)"
        report = simulate_for_solve(desc, reason,
                                    rel_precision=budget.rel_precision, max_seconds=clock.left(), seed=budget.seed,
                                    progress=budget.progress, job_times=question.needs_distribution)
        details = report.as_dict()
        sim = report.simulation
        extra = {}
        if question.percentiles:
            table = sim.percentiles(question.percentiles)
            extra["percentiles"] = {q: e.value for q, e in table.items()}
            extra["percentile_intervals"] = {q: (e.ci_low, e.ci_high) for q, e in table.items()}
        if question.deadline is not None:
            e = sim.deadline_probability(question.deadline)
            extra.update(deadline_probability=e.value, deadline_interval=(e.ci_low, e.ci_high))
        how = (f"simulation ({sim.engine} engine, {sim.replications} replications x {sim.jobs} jobs, 95 % interval"
               f"{'' if sim.precision_met else ', precision not reached'})")
        return _from_dict(details, "simulation", how, reason, report, interval=(details["ci_low"], details["ci_high"]),
                          **extra)


#: the methods, most exact first
METHODS = (Exact(), JobAlone(), Decomposition(), Simulation())


def method_named(name: str):
    """The methods ``--method NAME`` allows: ``auto`` all of them, ``exact``/``job-alone``/``decomposition``/
    ``simulation`` one, a steady-state solver's name (``direct``, ``gmres``...) the exact method with that solver."""
    if name == "auto":
        return METHODS
    if name == "exact":
        return (Exact(estimate=False),)     # asked for: explored until a limit stops it, not skipped on a projection
    for method in METHODS:
        if method.name == name:
            return (method,)
    return (Exact(solver=name, estimate=False),)


def _classes(desc):
    from spn.description.model import job_classes

    return job_classes(desc)


def _from_dict(details: dict, method: str, how: str, reason, report, *, interval=None, **extra) -> Result:
    r = details["mean_execution_time"]
    return Result(model=details["model"], method=method, how=how, reason=reason, mean_execution_time=r,
                  interval=interval or (r, r), throughput=details["throughput"], utilization=details["utilization"],
                  details=details, report=report, **extra)
