"""Simulate a model description: independent replications, confidence intervals, stopping rule.

Each replication starts empty (every user thinking), deletes a warm-up of
``warmup_jobs`` job completions, then measures over the next ``jobs`` completions.
Estimates are ratio estimators over the replications (see
:mod:`spn.simulation.statistics`):

- throughput X = Σ completions / Σ window length;
- utilisation = Σ ∫ busy containers / (C · Σ window length);
- mean execution time R, measured directly:
  * engine ``net``: R = Σ (N·T_i − ∫ PJ dt) / Σ K_i, i.e. (N − time-average of tokens
    in PJ) / X — Little's law on the jobs that are not thinking. This is exact in
    the limit and has a smaller variance than N/X − Z, which does not use the
    observed think times;
  * engine ``cluster``: the mean of the execution times (submission to end) of the
    jobs that ended in the window, which the cluster simulator sees one by one.

Percentiles of R and P(R <= deadline): ``job_times=True`` keeps the execution time of each
job a replication measured (engines ``cluster`` and ``compiled``, which follow every job;
the net pools them), and :meth:`SimulationReport.percentiles` and
:meth:`SimulationReport.deadline_probability` estimate them with intervals
(:mod:`spn.simulation.quantiles`: order statistics for one user, whose jobs are i.i.d.;
sectioning over the independent replications for several).

A description with query classes (docs/design.md §4.6) is simulated by the cluster
engine only (:class:`~spn.simulation.queues.QueueSimulator`): the same estimators per
class (R_c, X_c, over the class's own jobs) and per queue (utilisation = ∫ containers
the queue held / (C · window length)), and the stopping rule asks its precision of the
*worst* class's R_c. The overall R, X and U are still reported, over every job.

Stopping rule (Stein's two-stage procedure, :mod:`spn.simulation.statistics`): the
first ``replications`` are the pilot; with ``rel_precision`` ε the variance of R's
estimator is taken from the pilot alone, and the run goes on to
``N = ceil(m · (h_m / ε)²)`` replications (h_m the pilot's relative half-width,
m = ``replications``), at most ``max_replications``; every interval (R, X, U) is then
``r_n ± t_{m-1} · s_m / (sqrt(n) · b̄_n)``, which covers at its nominal level where
re-estimating the variance until the interval is narrow enough does not
(benchmarks/coverage.py). Without ``rel_precision`` the intervals are the usual ones
over all replications. ``max_seconds`` bounds the whole
run, the replication in progress included: the engines look at the clock every
few thousand events, a replication cut by the deadline is dropped, and the
estimates come from the finished ones (at least two are needed for an interval;
with fewer, :class:`SimulationTimeout` says so).

The compiled engine releases the GIL: its replications run side by side on the process's cores
(:func:`spn.threads.side_by_side`), each on its own child of the seed, so the answer is the same on
one core or several (the other engines replicate one at a time).

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 5.0},
...     "cluster": {"containers": 2},
...     "phases": [{"name": "p", "tasks": 2, "task_time": 1.5, "distribution": "deterministic"}]})
>>> report = simulate_description(desc, seed=1, replications=3, jobs=50)
>>> report.mean_execution_time.value, report.replications    # one job at a time: exactly 1.5 s
(1.5, 3)
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from spn.description.model import NET_POLICIES, job_classes, queues_of, require_net_policy, require_single_class
from spn.exceptions import ModelError
from spn.simulation.cluster import ClusterSimulator
from spn.simulation.queues import QueueSimulator
from spn.simulation.distributions import SimulationTimeout, distributions_from_description
from spn.simulation.engine import NetSimulator
from spn.simulation.statistics import Estimate, ratio_estimate, stein_replications
from spn.threads import side_by_side

ENGINES = ("net", "cluster", "compiled")


def default_engine(desc) -> str:
    """``net`` where the net simulator models ``desc`` (one class under policy ``gate``, the paper's
    net), else ``cluster``: ``fifo`` (a description that names no policy), ``fair``, query classes.

    >>> from spn.description import parse_description
    >>> data = {"name": "x", "workload": {"users": 2, "think_time": 1.0}, "cluster": {"containers": 1},
    ...         "phases": [{"name": "p", "tasks": 1, "task_time": 1.0}]}
    >>> gate = {**data, "scheduler": {"policy": "gate"}}
    >>> default_engine(parse_description(data)), default_engine(parse_description(gate))
    ('cluster', 'net')
    """
    return "net" if desc.scheduler.policy in NET_POLICIES and not desc.classes else "cluster"


ESTIMATORS = {
    "net": "R = (N - time-average of tokens in PJ) / X, X = completions / time; "
           "ratio estimators over independent replications, Student t",
    "cluster": "R = mean execution time (submission to end) of the jobs ended in the window, "
               "X = completions / time; ratio estimators over independent replications, Student t",
}
ESTIMATORS["compiled"] = ESTIMATORS["cluster"]     # the cluster model, compiled: the same estimators


@dataclass(frozen=True)
class SimulationReport:
    """What ``spn simulate`` prints: three estimates and how they were obtained.

    With query classes, ``users`` is the users of every class, ``think_time`` is None, the
    three estimates are over every job, and ``classes`` / ``queues`` hold the estimates of
    each class (``mean_execution_time``, ``throughput``) and each queue (``utilization``).
    """

    model: str
    engine: str
    users: int
    think_time: float | None
    containers: int
    mean_execution_time: Estimate
    throughput: Estimate
    utilization: Estimate
    replications: int
    confidence: float
    rel_precision: float | None
    precision_met: bool
    jobs: int
    warmup_jobs: int
    events: int
    instant_firings: int
    seconds: float
    seed: int
    pool_finished_tasks: bool = False
    #: how free containers were shared between jobs (``scheduler.policy``)
    policy: str = "gate"
    #: the run was stopped by ``max_seconds`` before its stopping rule or ``replications`` was met
    time_limited: bool = False
    #: query classes: ``{name: {"mean_execution_time": Estimate, "throughput": Estimate, "facts":
    #: QueryClass.facts()}}`` (empty for a one-class description)
    classes: dict = field(default_factory=dict)
    #: queues: ``{name: {"utilization": Estimate, "capacity": ..., "max_capacity": ..., "policy": ...}}``
    queues: dict = field(default_factory=dict)
    #: ``job_times=True``: per replication, the execution times of the jobs it measured (NumPy
    #: arrays, in the order the jobs ended); None otherwise. Not in :meth:`as_dict`.
    job_times: tuple | None = field(default=None, compare=False, repr=False)

    def percentiles(self, qs, confidence: float | None = None) -> dict:
        """``{q: Estimate}``: the execution time's percentiles ``qs`` (in (0, 100)) with their intervals.

        One user: every job starts on an empty cluster, the jobs are i.i.d., and the interval is
        the distribution-free order-statistic one; else sectioning over the replications
        (:mod:`spn.simulation.quantiles`). Needs a run with ``job_times=True``.

        >>> from spn.description import parse_description
        >>> desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 5.0},
        ...     "cluster": {"containers": 1},
        ...     "phases": [{"name": "p", "tasks": 2, "task_time": 1.5, "distribution": "deterministic"}]})
        >>> report = simulate_description(desc, seed=1, replications=2, jobs=20, job_times=True)
        >>> report.percentiles([50, 99])[99].value, report.deadline_probability(2.9).value
        (3.0, 0.0)
        """
        from spn.simulation.quantiles import quantile_estimates

        return quantile_estimates(self._job_times(), qs, self.confidence if confidence is None else confidence,
                                  independent=self._independent_jobs())

    def deadline_probability(self, deadline: float, confidence: float | None = None) -> Estimate:
        """P(execution time <= ``deadline``) with its interval (Clopper–Pearson for one user, else over
        replications: :func:`spn.simulation.quantiles.probability_estimate`)."""
        from spn.simulation.quantiles import probability_estimate

        return probability_estimate(self._job_times(), deadline, self.confidence if confidence is None else confidence,
                                    independent=self._independent_jobs())

    def _job_times(self) -> tuple:
        if self.job_times is None:
            raise ModelError("this simulation kept no job execution times: run "
                             "simulate_description(..., job_times=True) for percentiles and deadlines")
        return self.job_times

    def _independent_jobs(self) -> bool:
        """One user, one class: each job starts on an empty cluster, so the jobs are i.i.d."""
        return self.users == 1 and not self.classes

    def as_dict(self) -> dict:
        """The JSON object of ``spn simulate --json`` (docs/design.md §5)."""
        result = self._totals_dict()
        if self.classes:
            result["classes"] = {
                name: {"mean_execution_time": c["mean_execution_time"].value,
                       "ci_low": c["mean_execution_time"].ci_low, "ci_high": c["mean_execution_time"].ci_high,
                       "rel_half_width": c["mean_execution_time"].rel_half_width,
                       "throughput": c["throughput"].value, "throughput_ci_low": c["throughput"].ci_low,
                       "throughput_ci_high": c["throughput"].ci_high, **c["facts"]}
                for name, c in self.classes.items()}
            result["queues"] = {
                name: {"utilization": q["utilization"].value, "utilization_ci_low": q["utilization"].ci_low,
                       "utilization_ci_high": q["utilization"].ci_high, "capacity": q["capacity"],
                       "max_capacity": q["max_capacity"], "policy": q["policy"]}
                for name, q in self.queues.items()}
        return result

    def _totals_dict(self) -> dict:
        r, x, u = self.mean_execution_time, self.throughput, self.utilization
        return {
            "model": self.model,
            "engine": self.engine,
            "policy": self.policy,
            "pool_finished_tasks": self.pool_finished_tasks,
            "mean_execution_time": r.value,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "rel_half_width": r.rel_half_width,
            "throughput": x.value,
            "throughput_ci_low": x.ci_low,
            "throughput_ci_high": x.ci_high,
            "utilization": u.value,
            "utilization_ci_low": u.ci_low,
            "utilization_ci_high": u.ci_high,
            "replications": self.replications,
            "confidence": self.confidence,
            "rel_precision": self.rel_precision,
            "precision_met": self.precision_met,
            "jobs_per_replication": self.jobs,
            "warmup_jobs": self.warmup_jobs,
            "events": self.events,
            "instant_firings": self.instant_firings,
            "events_per_second": self.events / self.seconds if self.seconds > 0 else None,
            "seconds": self.seconds,
            "seed": self.seed,
            "estimator": ESTIMATORS[self.engine],
            "users": self.users,
            "think_time": self.think_time,
            "containers": self.containers,
        }


def seed_sequence(seed) -> np.random.SeedSequence:
    """A SeedSequence from ``seed``: an int, a Generator, a SeedSequence or None (fresh entropy).

    >>> seed_sequence(7).entropy
    7
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(0, 2 ** 63)))
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ModelError(f"seed must be a non-negative integer, a numpy Generator or None, got {seed!r}")
    return np.random.SeedSequence(None if seed is None else int(seed))


def default_run_length(desc) -> tuple[int, int]:
    """(warm-up jobs, measured jobs) per replication: 2N + 10 and max(200, 20N), N the users of every class."""
    n = sum(job_class.workload.users for job_class in job_classes(desc))
    return 2 * n + 10, max(200, 20 * n)


def _net_runner(desc, job_times=None):
    from spn.models.dag import build

    if job_times is not None:
        raise ModelError("job_times: the net engine has no per-job execution times: its tokens pool the "
                         "jobs of a phase (policy gate, docs/design.md §3.4), so one job's finished tasks "
                         "can end another; use engine 'cluster' or 'compiled', which follow every job",
                         option="job_times")

    require_single_class(desc, "the net engine", instead="spn simulate --engine cluster")
    require_net_policy(desc)
    app = build(desc)
    sim = NetSimulator(app.net, distributions_from_description(desc))
    N, C = desc.workload.users, desc.cluster.containers

    def run(seed, warmup, jobs, deadline):
        rep = sim.run(seed, warmup=warmup, length=jobs, count=app.end_activity, observe=("PJ", "PC"),
                      deadline=deadline)
        T = rep.duration
        return (T, rep.count(app.end_activity), N * T - rep.integral("PJ"), C * T - rep.integral("PC"),
                rep.timed_events, rep.events - rep.timed_events)
    return run


def _cluster_runner(desc, pool_finished_tasks=False, compiled=False, job_times=None):
    """One replication's row: (T, K, Σ R, ∫ busy, events, 0) and, with classes, (K_c, Σ R_c) per class
    and ∫ containers held per queue. ``compiled``: the Numba engine (one class). ``job_times`` (not
    None): the row and its jobs' execution times (one class)."""
    if compiled:
        if desc.classes:
            raise ModelError("the compiled engine simulates one class of jobs; use --engine cluster")
        from spn.simulation.cluster_compiled import CompiledClusterSimulator

        sim = CompiledClusterSimulator(desc, pool_finished_tasks=pool_finished_tasks)
    elif desc.classes:
        if job_times is not None:
            raise ModelError("job_times: execution-time percentiles are kept for one class of jobs; with "
                             "query classes each class has its own law, which pooled times would mix",
                             option="job_times")
        if pool_finished_tasks:
            raise ModelError("pool_finished_tasks reproduces the net, which models one class under policy gate")
        sim = QueueSimulator(desc)

        def run_classes(seed, warmup, jobs, deadline):
            rep = sim.run(seed, warmup=warmup, length=jobs, deadline=deadline)
            per_class = [x for pair in zip(rep.class_completions, rep.class_response_sums) for x in pair]
            return (rep.duration, rep.completions, rep.response_sum, rep.busy_area, rep.events, 0,
                    *per_class, *rep.queue_busy_areas)
        return run_classes
    else:
        sim = ClusterSimulator(desc, pool_finished_tasks=pool_finished_tasks)

    def run(seed, warmup, jobs, deadline):
        rep = sim.run(seed, warmup=warmup, length=jobs, deadline=deadline)
        return rep.duration, rep.completions, rep.response_sum, rep.busy_area, rep.events, 0

    def run_keeping_times(seed, warmup, jobs, deadline):
        rep = sim.run(seed, warmup=warmup, length=jobs, deadline=deadline, job_times=True)
        return (rep.duration, rep.completions, rep.response_sum, rep.busy_area, rep.events, 0), rep.job_times
    # a separate closure: the default path is the one it always was
    return run if job_times is None else run_keeping_times


#: replications of the compiled engine handed to the cores at a time (the cores wait for the chunk's last)
SIDE_BY_SIDE_CHUNK = 64
#: where the per-class columns of a replication's row start (after T, K, Σ R, ∫ busy, events, firings)
_CLASS_COLUMNS = 6


def _precision_estimates(desc, data, confidence, pilot) -> list:
    """The estimates the stopping rule looks at: R, or every class's R_c."""
    if not desc.classes:
        return [ratio_estimate(data[:, 2], data[:, 1], confidence, pilot=pilot)]
    return [_class_estimate(data[:, _CLASS_COLUMNS + 2 * c + 1], data[:, _CLASS_COLUMNS + 2 * c],
                            data[:, _CLASS_COLUMNS + 2 * c], confidence, pilot) for c in range(len(desc.classes))]


def _class_estimate(numerators, denominators, done, confidence, pilot) -> Estimate:
    """A class's ratio estimate (R_c or X_c); an infinite interval unless the class ended jobs in at
    least two of the pilot's replications.

    A class whose jobs are long beside the others' may end none in a short window: its
    pilot then says nothing of its variance (the stopping rule doubles the pilot, and the
    report refuses a class that never ended a job: :func:`_class_and_queue_estimates`).
    """
    m = len(done) if pilot is None else min(int(pilot), len(done))
    if np.count_nonzero(done[:m]) >= 2:
        return ratio_estimate(numerators, denominators, confidence, pilot=pilot)
    value = float(numerators.sum() / denominators.sum()) if denominators.sum() > 0 else math.nan
    return Estimate(value, -math.inf, math.inf, confidence, len(done))


def _pilot_missing_a_class(desc, data, pilot) -> bool:
    """Some class ended jobs in fewer than two of the pilot replications (so no variance to take)."""
    return bool(desc.classes) and any(
        np.count_nonzero(data[:pilot, _CLASS_COLUMNS + 2 * c]) < 2 for c in range(len(desc.classes)))


def _worst(estimates):
    """The estimate of largest relative half-width (NaN, a class that never ended a job, counts as worst)."""
    return max(estimates, key=lambda e: e.rel_half_width if not math.isnan(e.rel_half_width) else math.inf)


def simulate_description(desc, *, engine: str | None = None, seed=None, replications: int = 10,
                         confidence: float = 0.95, rel_precision: float | None = 0.01,
                         max_replications: int = 2000, max_seconds: float | None = None,
                         jobs: int | None = None, warmup_jobs: int | None = None,
                         pool_finished_tasks: bool = False, progress: bool = False,
                         job_times: bool = False) -> SimulationReport:
    """Estimate mean execution time, throughput and utilisation of a description by simulation.

    ``engine`` is ``"net"`` (the application net, with each phase's task-time law),
    ``"cluster"`` (the job-level simulator) or ``"compiled"`` (the same model compiled with
    Numba, one class of jobs: :mod:`spn.simulation.cluster_compiled`; other random streams,
    so a seed repeats a run within one engine); None: :func:`default_engine` (``net`` under
    the paper's ``gate``, else ``cluster``). ``replications`` is the number run
    first (at least 2); with ``rel_precision`` (e.g. 0.01) they are the pilot of Stein's
    two-stage rule, and as many more are run as the pilot's variance says the interval
    of R needs for that relative half-width, up to ``max_replications``;
    ``rel_precision=None`` (or 0) runs exactly ``replications``. ``max_seconds``
    bounds the whole run (see the module docstring).
    ``seed``: int, Generator, SeedSequence or None; replication i uses the i-th
    child of its SeedSequence, so a run repeats exactly with the same seed.
    ``pool_finished_tasks=True`` (cluster engine only) counts finished tasks of a
    phase across jobs, as the net does (see :class:`ClusterSimulator`).
    ``progress=True`` writes a progress line on stderr if it is a terminal.
    ``job_times=True`` keeps every measured job's execution time (``SimulationReport.job_times``,
    8 bytes a job), for :meth:`SimulationReport.percentiles` and
    :meth:`~SimulationReport.deadline_probability`; engines ``cluster`` and ``compiled``, one class
    (the net pools jobs: a :class:`ModelError` says so; with ``engine=None`` it is ``cluster``).
    With ``pool_finished_tasks`` a phase's end goes to the oldest job running it, as the net's
    completion order does, and that job's time is the one kept. The stopping rule looks at R only.
    """
    if engine is None:     # the net keeps no job's own time: job times come from the job-level engine
        engine = "cluster" if job_times else default_engine(desc)
    if engine not in ENGINES:
        raise ModelError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "net":
        require_single_class(desc, "the net engine", instead="spn simulate --engine cluster")
    problems = []
    if not (isinstance(replications, (int, np.integer)) and replications >= 2):
        problems.append(f"replications must be an integer >= 2, got {replications!r}")
    if max_seconds is not None and not (max_seconds > 0 and math.isfinite(max_seconds)):
        problems.append(f"max_seconds must be a positive number of seconds, got {max_seconds!r}")
    if not (0 < confidence < 1):
        problems.append(f"confidence must be in (0, 1), got {confidence!r}")
    if rel_precision is not None and not (rel_precision >= 0 and math.isfinite(rel_precision)):
        problems.append(f"rel_precision must be >= 0, got {rel_precision!r}")
    default_warmup, default_jobs = default_run_length(desc)
    warmup_jobs = default_warmup if warmup_jobs is None else warmup_jobs
    jobs = default_jobs if jobs is None else jobs
    if not (isinstance(jobs, (int, np.integer)) and jobs >= 1):
        problems.append(f"jobs must be an integer >= 1, got {jobs!r}")
    if not (isinstance(warmup_jobs, (int, np.integer)) and warmup_jobs >= 0):
        problems.append(f"warmup_jobs must be an integer >= 0, got {warmup_jobs!r}")
    if problems:
        raise ModelError(problems)
    max_replications = max(int(max_replications), int(replications))

    ss = seed_sequence(seed)
    if pool_finished_tasks and engine == "net":
        raise ModelError("pool_finished_tasks applies to the job-level engines (cluster, compiled): "
                         "the net pools finished tasks already")
    started = time.perf_counter()
    deadline = None if max_seconds is None else started + max_seconds
    times = [] if job_times else None
    run = (_net_runner(desc, times) if engine == "net"
           else _cluster_runner(desc, pool_finished_tasks, engine == "compiled", times))
    show = progress and sys.stderr.isatty()
    rows = []
    target = int(replications)
    pilot = int(replications) if rel_precision else None
    met = timed_out = False
    last_shown = 0.0
    together = engine == "compiled"
    while not timed_out:
        while len(rows) < target:
            if deadline is not None and time.perf_counter() > deadline:
                timed_out = True
                break
            if together:        # in chunks: the children spawned are those about to run
                chunk = ss.spawn(min(target - len(rows), SIDE_BY_SIDE_CHUNK))
                batch, timed_out = _side_by_side(run, chunk, warmup_jobs, jobs, deadline)
                _keep(batch, rows, times)
                if show:
                    _show_progress(engine, rows, confidence, time.perf_counter() - started, pilot)
                if timed_out:
                    break
                continue
            # one child at a time: the i-th child is the same as from one big spawn, and a million
            # replications asked for cost nothing until they run
            child = ss.spawn(1)[0]
            try:
                _keep([run(np.random.default_rng(child), int(warmup_jobs), int(jobs), deadline)], rows, times)
            except SimulationTimeout:
                timed_out = True
                break
            now = time.perf_counter()
            if show and now - last_shown > 0.25:
                last_shown = now
                _show_progress(engine, rows, confidence, now - started, pilot)
        if len(rows) < 2:
            break
        data = np.array(rows, dtype=float)
        n = len(rows)
        if (pilot is not None and not timed_out and n < max_replications
                and _pilot_missing_a_class(desc, data, pilot)):
            # no variance to take from a class that (almost) ended no job: a pilot twice as long
            pilot = target = min(2 * n, max_replications)
            continue
        estimates = _precision_estimates(desc, data, confidence, pilot)
        r = _worst(estimates)
        if timed_out:
            met = bool(rel_precision) and r.rel_half_width <= rel_precision
            break
        if not rel_precision or r.rel_half_width <= rel_precision:
            met = True
            break
        if n >= max_replications or (deadline is not None and time.perf_counter() > deadline):
            timed_out = n < max_replications
            break
        # Stein: the first time, N from the pilot's variance; afterwards (r_n or the mean window
        # moved the relative half-width above ε) a few more with the same variance; with classes,
        # as many as the class that needs most
        target = max(stein_replications(e, rel_precision, max_replications) for e in estimates)
    if show:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if len(rows) < 2:
        raise SimulationTimeout(
            f"{engine} simulation: the time limit of {max_seconds:.3g} s ran out with {len(rows)} replication(s) "
            f"finished, and a confidence interval needs 2: allow more time, or measure fewer jobs per "
            f"replication ({int(jobs):,} now)")
    seconds = time.perf_counter() - started
    data = np.array(rows, dtype=float)
    C = desc.cluster.containers
    classes, queues = _class_and_queue_estimates(desc, data, confidence, pilot)
    return SimulationReport(
        model=desc.name, engine=engine, users=sum(c.workload.users for c in job_classes(desc)),
        think_time=None if desc.classes else desc.workload.think_time, containers=C,
        classes=classes, queues=queues,
        mean_execution_time=ratio_estimate(data[:, 2], data[:, 1], confidence, pilot=pilot),
        throughput=ratio_estimate(data[:, 1], data[:, 0], confidence, pilot=pilot),
        utilization=ratio_estimate(data[:, 3], C * data[:, 0], confidence, pilot=pilot),
        replications=len(rows), confidence=confidence,
        rel_precision=rel_precision or None, precision_met=met, jobs=int(jobs), warmup_jobs=int(warmup_jobs),
        events=int(data[:, 4].sum()), instant_firings=int(data[:, 5].sum()), seconds=seconds,
        seed=int(ss.entropy), pool_finished_tasks=bool(pool_finished_tasks), time_limited=timed_out,
        policy=desc.scheduler.policy, job_times=None if times is None else tuple(times[:len(rows)]),
    )


def _keep(ended: list, rows: list, times: list | None) -> None:
    """The replications that ended, in their order: their rows, and where job times are kept (``times``
    not None: each ended one is (row, its jobs' times)) their times."""
    for out in ended:
        if times is None:
            rows.append(out)
        else:
            rows.append(out[0])
            times.append(out[1])


def _side_by_side(run, children, warmup_jobs, jobs, deadline) -> tuple[list, bool]:
    """The rows of the replications of ``children`` (seed sequences), run side by side, in their order;
    past ``deadline`` those that ended, and True (no further one starts once one is cut)."""
    cut = threading.Event()

    def replicate(child):
        try:
            return run(np.random.default_rng(child), int(warmup_jobs), int(jobs), deadline)
        except SimulationTimeout:
            cut.set()
            return None
    rows = side_by_side([lambda child=child: replicate(child) for child in children], stop=cut)
    ended = [row for row in rows if row is not None]
    return ended, len(ended) < len(children)


def _class_and_queue_estimates(desc, data, confidence, pilot) -> tuple[dict, dict]:
    """``SimulationReport.classes`` and ``.queues`` from the replications' rows (empty for one class)."""
    if not desc.classes:
        return {}, {}
    T = data[:, 0]
    classes = {}
    for c, job_class in enumerate(desc.classes):
        done, responses = data[:, _CLASS_COLUMNS + 2 * c], data[:, _CLASS_COLUMNS + 2 * c + 1]
        if not done.sum():
            raise ModelError(f"class {job_class.name}: none of its jobs ended in the measured windows "
                             f"({len(done)} replications of {int(data[:, 1].mean()):,} jobs of every class): "
                             f"measure more jobs per replication (--jobs) or run more replications")
        classes[job_class.name] = {
            "mean_execution_time": _class_estimate(responses, done, done, confidence, pilot),
            "throughput": _class_estimate(done, T, done, confidence, pilot), "facts": job_class.facts()}
    first_queue = _CLASS_COLUMNS + 2 * len(desc.classes)
    queues = {
        queue.name: {"utilization": ratio_estimate(data[:, first_queue + q], desc.cluster.containers * T, confidence,
                                                   pilot=pilot),
                     "capacity": queue.capacity, "max_capacity": queue.max_capacity, "policy": queue.policy}
        for q, queue in enumerate(queues_of(desc))}
    return classes, queues


def _show_progress(engine, rows, confidence, elapsed, pilot=None):
    data = np.array(rows, dtype=float)
    events = data[:, 4].sum() + data[:, 5].sum()
    line = f"simulating ({engine}): {len(rows)} replications"
    if len(rows) > 1:
        r = ratio_estimate(data[:, 2], data[:, 1], confidence, pilot=pilot)
        line += f", R = {r.value:.5g} s +/- {100 * r.rel_half_width:.2f} %"
    line += f", {events / max(elapsed, 1e-9):,.0f} events/s"
    print("\r\033[K" + line, end="", file=sys.stderr, flush=True)
