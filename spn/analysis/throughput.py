"""X(k): the jobs per second a cluster completes with k jobs always present (a job that ends is replaced
at once), the curve the decomposition (:mod:`spn.analysis.decomposition`) reduces the cluster to.

X(k) comes from the exact chain of the job-identity net with k users whose think time is negligible,
where that chain is small (:data:`EXACT_STATES`; X(1) in closed form where the phases run in series
with exponential tasks: :func:`alone_in_series`), else from replications of the compiled cluster
simulator (:mod:`spn.simulation.cluster_compiled`) with k users and no think time, each run as far as
R needs it, on a grid of k (1, 2, 3, 4, 6, 8, 12, ...) that stops where X(k) reaches the containers'
bound C / W (W the mean container-seconds of a job); between the grid's points it is interpolated
(monotone cubic: :func:`throughput_at`).

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 3, "think_time": 2.0},
...     "cluster": {"containers": 2}, "phases": [{"name": "p", "tasks": 1, "task_time": 1.0, "shape": 1}]})
>>> [(x.k, round(x.value, 9), x.source) for x in throughput_curve(desc)]     # an M/M/2 station: X(k) = min(k, 2)
[(1, 1.0, 'exact'), (2, 2.0, 'exact')]
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace

import numpy as np

from spn.analysis.chains import birth_death, response
from spn.analysis.replication_store import Kept, store_folder, store_for
from spn.exceptions import SpnError, StateSpaceLimitError
from spn.threads import side_by_side

__all__ = ["Throughput", "throughput_curve", "pilot_curve", "PilotCurve", "throughput_at", "job_work", "with_users",
           "alone_in_series", "series_rates", "GRID", "EXACT_STATES", "X_PRECISION"]

#: the policies whose exact chains give X(k) (the job-identity nets)
POLICIES = ("fifo", "fair")
#: the numbers of jobs at which X(k) is measured (then every k up to N is interpolated)
GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
#: tangible states up to which X(k) comes from the exact chain (explored and solved in well under a second)
EXACT_STATES = 5_000
#: the think time of the exact chains of k users, relative to a job's work per container (a job is resubmitted
#: at once; two such chains extrapolate to none)
INSTANT = 1e-6
#: R's precision from the simulated X(k): what each X(k) run to this relative half-width of its 95 %
#: interval would give; each is run as far as its weight in R asks (:func:`_precisions`)
X_PRECISION = 0.002
#: X(k) within this fraction of the containers' bound C / W: the curve is flat from there on
SATURATED = 0.998
#: replications of each simulated X(k): a short pilot, then what Stein's rule asks for its precision, at
#: most this many long ones
PILOT, MAX_REPLICATIONS = 3, 8
#: the jobs a long replication of X(k) measures, per job of its warm-up (k + 5): the warm-up is a fifth of
#: the run (it is up to 40 % of a pilot's, max(2k, 10) jobs measured: on g18's X(4) of
#: docs/decomposition.md, the variance times the events of a replication fell 4.6-fold, on four other
#: points 1.6-2.2-fold)
MEASURED_PER_WARMUP = 4


@dataclass(frozen=True)
class Throughput:
    """X(k): ``value`` jobs/s with ``k`` jobs always present, its 95 % interval (``low``, ``high``;
    equal when ``source`` is ``exact``), and the ``jobs`` simulated for it."""

    k: int
    value: float
    low: float
    high: float
    source: str
    jobs: int = 0


def job_work(desc) -> float:
    """W: the mean container-seconds of one job (its driver phases hold none)."""
    from spn.description.model import container_seconds

    return container_seconds(desc.phases)


def with_users(desc, k: int, think_time: float):
    return replace(desc, workload=replace(desc.workload, users=k, think_time=think_time))


def throughput_curve(desc, *, seed=0, deadline: float | None = None, precision: float = X_PRECISION) -> tuple:
    """X(k) on the grid (:data:`GRID` up to N, and N), exact where the chain of k users is small, else
    simulated; it stops where X(k) reaches :data:`SATURATED` of the containers' bound C / W: the pilot
    curve (:func:`pilot_curve`), refined to ``precision`` (:meth:`PilotCurve.refine`)."""
    return pilot_curve(desc, seed=seed, deadline=deadline).refine(precision)


@dataclass
class PilotCurve:
    """X(k) after the pilots (``points``: exact ones final, simulated ones from :data:`PILOT` short
    replications each, with their intervals), before each simulated X(k) is run as far as R needs it."""

    desc: object
    points: tuple
    runs: dict

    def refine(self, precision: float = X_PRECISION) -> tuple:
        """The curve, each simulated X(k) run to the precision its share of R's asks (:func:`_precisions`): an
        X(k) at a number of jobs the users seldom reach moves R little and keeps its pilot, so that R's
        interval from the X(k) is what ``precision`` at every point would give, at a fraction of the
        replications; the X(k) run side by side on the process's cores (:func:`_extend_all`)."""
        if not self.runs:
            return self.points
        extended = _extend_all(self.runs, self._wanted(precision))
        return tuple(extended.get(point.k, point) for point in self.points)

    def cost(self, precision: float = X_PRECISION) -> float:
        """About how many events :meth:`refine` to ``precision`` would simulate."""
        wanted = self._wanted(precision)
        return sum(run.cost(wanted[k]) for k, run in self.runs.items())

    def _wanted(self, precision: float) -> dict:
        return _precisions(self.desc, list(self.points), self.runs, precision)


def pilot_curve(desc, *, seed=0, deadline: float | None = None) -> PilotCurve:
    """X(k) on the grid, exact where the chain of k users is small, else from a pilot of short replications;
    up to where X(k) reaches :data:`SATURATED` of the containers' bound. Past ``deadline`` (a
    :func:`time.perf_counter` instant), :class:`SpnError`."""
    N, C = desc.workload.users, desc.cluster.containers
    bound = C / job_work(desc)
    ks = sorted({k for k in GRID if k < N} | {N})
    curve = []
    if desc.scheduler.policy in POLICIES and all(p.distribution in ("erlang", "exponential") for p in desc.phases):
        for k in ks:        # larger k have larger chains: the first that is not small ends the exact ones
            point = _exact_throughput(desc, k)
            if point is None:
                break
            curve.append(point)
            if point.low >= SATURATED * bound:
                return PilotCurve(desc, tuple(curve), {})
    runs = _pilots(desc, ks[len(curve):], np.random.SeedSequence(seed).entropy, deadline, SATURATED * bound)
    return PilotCurve(desc, tuple(curve) + tuple(run.throughput() for run in runs.values()), runs)


def _pilots(desc, ks: list, entropy, deadline, saturated: float) -> dict:
    """{k: the pilot of X(k)} for ``ks`` in order, up to the first whose interval reaches ``saturated``.
    The pilots kept from an earlier answer are read back first; the others run side by side on the
    process's cores (:func:`~spn.threads.side_by_side`), each core taking the next k as soon as
    it is free. Once a pilot is saturated, no larger k starts and those running stop at once; any larger
    one that ended first is dropped, so that the curve is the same on one core or several. The compiled
    simulator's first compilation on this installation is awaited first, once, until ``deadline``."""
    from spn.simulation.cluster_compiled import await_compiled_cluster

    if ks and not await_compiled_cluster(deadline):
        raise SpnError("the compiled cluster simulator is not compiled yet (python -m spn.kernels)")
    runs = {}
    for k in ks if store_folder() else ():      # those kept from an earlier answer first, in order: a
        try:                                    # cluster asked again simulates nothing
            runs[k] = _Replications(desc, k, entropy, deadline, kept_only=True)
        except LookupError:
            break
        if runs[k].throughput().low >= saturated:
            return runs
    ks = ks[len(runs):]
    shared, first_saturated = threading.Event(), math.inf
    cancels = {k: _Cancel(shared) for k in ks}
    lock = threading.Lock()

    def pilot(k: int):
        nonlocal first_saturated
        if k > first_saturated:
            return None
        try:
            run = _Replications(desc, k, entropy, deadline, cancels[k])
        except SpnError:
            if cancels[k].own.is_set():
                return None
            raise
        if run.throughput().low >= saturated:
            with lock:
                first_saturated = min(first_saturated, k)
                for later in ks:
                    if later > k:
                        cancels[later].own.set()
        return run

    started = side_by_side([lambda k=k: pilot(k) for k in ks], stop=shared)
    return runs | {run.k: run for run in started if run is not None and run.k <= first_saturated}


class _Cancel:
    """A pilot's stop: the whole answer's (``shared``: one piece failed, or Ctrl-C) or its own (a smaller
    k saturated the cluster: this k is not needed)."""

    def __init__(self, shared: threading.Event):
        self.shared, self.own = shared, threading.Event()

    def is_set(self) -> bool:
        return self.shared.is_set() or self.own.is_set()


def _extend_all(runs: dict, wanted: dict) -> dict:
    """{k: X(k)} after each simulated X(k) has the long replications its precision in ``wanted`` asks: every
    replication of every k side by side (:func:`~spn.threads.side_by_side`), the costliest first.
    Each replication has its own random stream, so the answer is the same on one core or several; where one
    fails (past the deadline) or Ctrl-C comes, the others stop at their next look at the clock."""
    stop = threading.Event()
    todo = [(k, i) for k, run in runs.items() for i in run.next_long(wanted[k])]
    todo.sort(key=lambda unit: -runs[unit[0]].events_per_long)
    done = side_by_side([lambda k=k, i=i: runs[k].long_replication(i, stop) for k, i in todo], stop=stop)
    for (k, _), replication in zip(todo, done):     # in the order of i within each k
        runs[k].add(replication)
    return {k: run.throughput() for k, run in runs.items()}


def _precisions(desc, curve: list, runs: dict, precision: float) -> dict:
    """The relative half-width each simulated X(k) is run to: R's, propagated from them to first order,
    as if every one were at ``precision``, for the fewest replications.

    w_k, the elasticity of R to X(k) (the birth-death chain, X(k) of the pilots), weighs each; X(k) at
    precision p_k costs about h_k² c_k / p_k² (h_k its pilot's relative half-width, c_k the events of a
    replication), so the cheapest p_k with Σ w_k p_k = precision · Σ w_k (Lagrange) are proportional to
    (h_k² c_k / w_k)^(1/3). An X(k) that does not move R (w_k ≈ 0) keeps its pilot."""
    N, Z = desc.workload.users, desc.workload.think_time
    simulated = [x.k for x in curve if x.k in runs]
    if Z <= 0 or N == 1:
        return {k: precision for k in simulated}
    bound = desc.cluster.containers / job_work(desc)

    def r_of(points) -> float:
        return response(N, Z, birth_death(N, Z, throughput_at(tuple(points), N, "value", bound)))

    base, h = r_of(curve), 1e-4
    if base <= 0:
        return {k: precision for k in simulated}
    weight = {}
    for i, x in enumerate(curve):
        if x.k in runs:
            moved = curve[:i] + [replace(x, value=x.value * (1 + h))] + curve[i + 1:]
            weight[x.k] = abs(r_of(moved) - base) / (base * h)
    budget = precision * sum(weight.values())
    cost = {k: max(runs[k].relative_half_width(), 1e-12) ** 2 * runs[k].events_per_run / max(weight[k], 1e-300)
            for k in simulated}
    share = {k: cost[k] ** (1 / 3) for k in simulated}
    scale = budget / max(sum(weight[k] * share[k] for k in simulated), 1e-300)
    return {k: scale * share[k] if weight[k] > 1e-9 * sum(weight.values()) else math.inf for k in simulated}


def _exact_throughput(desc, k: int) -> Throughput | None:
    """X(k) from the exact chains of k users whose think time ε is negligible, or None when they are not small
    (X(1) from :func:`alone_in_series` where it applies).

    R(ε) = R(0) + O(ε): two chains, at ε and 2ε, give R(0) = 2 R(ε) − R(2ε) + O(ε²) (ε = :data:`INSTANT`
    of a job's work per container, so that the chains stay well conditioned and the bias is ~1e-12)."""
    if k == 1 and (alone := alone_in_series(desc)) is not None:
        x = 1.0 / alone[0]
        return Throughput(k, x, x, x, "exact")
    from spn.analysis.choice import state_space_lower_bound

    epsilon = INSTANT * job_work(desc) / desc.cluster.containers
    if state_space_lower_bound(with_users(desc, k, epsilon)) > EXACT_STATES:
        return None
    from spn.analysis.solve import solve_application     # the nets and solvers: only for a small chain

    times = []
    # one job alone takes the same time whatever the think time: one chain is exact
    for think in (epsilon,) if k == 1 else (epsilon, 2 * epsilon):
        try:        # bounded by its size alone, so that the answer does not depend on the machine's load
            solution = solve_application(with_users(desc, k, think), method="direct", max_states=EXACT_STATES)
        except StateSpaceLimitError:
            return None
        times.append(solution.report.measures.mean_execution_time)   # E[jobs not thinking] / X
    x = k / (2 * times[0] - times[1] if k > 1 else times[0])
    return Throughput(k, x, x, x, "exact")


class _Replications:
    """X(k) from replications of the compiled cluster simulator with k users and no think time.

    Estimated as busy container-seconds / (W · time) (every job brings W container-seconds on average,
    so this is X by the utilisation law): jobs that end together, as under fair, make the count of
    completions in a window jumpy, and the busy time is not. A ratio estimator over the replications
    (independent, of two lengths: its delta-method variance holds for unequal ones), with a Student t
    interval. When made, a pilot of :data:`PILOT` short replications (max(2k, 10) jobs measured after
    k + 5 of warm-up: an X(k) that keeps its pilot costs little); then (:meth:`next_long`,
    :meth:`long_replication`) as many long ones (:data:`MEASURED_PER_WARMUP`) as Stein's rule asks for a
    precision, in jobs measured (at most :data:`MAX_REPLICATIONS`), so that one seed gives one answer
    whatever the machine's load. The pilot's random stream is the seed's spawned with (k,), long
    replication i's with (k, i): each can run on any thread. Past ``deadline`` (a :func:`time.perf_counter`
    instant), or once ``stop`` (a :class:`threading.Event`) is set, :class:`SpnError`; ``kept_only``: the
    pilot only as kept from an earlier answer (:mod:`~spn.analysis.replication_store`), else :class:`LookupError`."""

    def __init__(self, desc, k: int, entropy, deadline: float | None, stop=None, *, kept_only: bool = False):
        from spn.simulation.cluster_compiled import CompiledClusterSimulator  # ready: _pilots awaited it

        self.k, self.entropy, self.deadline = k, entropy, deadline
        self.sim = CompiledClusterSimulator(with_users(desc, k, 0.0))
        self.work = job_work(desc)
        tasks = sum(p.tasks for p in desc.phases)
        self.short = max(2 * k, 10, int(math.ceil(2_000 / tasks)))      # a few thousand task ends at least
        self.long = max(MEASURED_PER_WARMUP * (k + 5), self.short)
        self.busy, self.durations, self.jobs, self.events, self.longs = [], [], 0, 0, 0
        self.store = store_for(self.sim, entropy, k)
        name = f"pilot:{k + 5}:{self.short}"
        pilot = self.store.get(name) if self.store else None
        if pilot is None and kept_only:
            raise LookupError(f"the pilot of X({k}) was not kept")
        if pilot is None:
            rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(k,)))
            pilot = [self._replicate(rng, self.short, stop) for _ in range(PILOT)]
            self._keep(name, pilot)
        for rep in pilot:
            self.add(rep)
        self.events_per_long = self.long * self.events / self.jobs

    def _replicate(self, rng, length: int, stop) -> Kept:
        from spn.simulation.distributions import SimulationTimeout

        try:
            rep = self.sim.run(rng, warmup=self.k + 5, length=length, deadline=self.deadline, stop=stop)
        except SimulationTimeout:
            raise SpnError(f"simulating X({self.k}) took longer than the time given") from None
        return Kept(rep.busy_area, rep.duration, rep.completions, rep.events)

    def _keep(self, name: str, replications: list) -> None:
        if self.store:
            self.store.put(name, replications)

    def long_replication(self, i: int, stop=None) -> Kept:
        """Long replication ``i`` (its own stream; read back if kept), to :meth:`add`; ends early once
        ``stop`` is set."""
        name = f"long:{i}:{self.k + 5}:{self.long}"
        kept = self.store.get(name) if self.store else None
        if kept is not None:
            return kept[0]
        rng = np.random.default_rng(np.random.SeedSequence(self.entropy, spawn_key=(self.k, i)))
        rep = self._replicate(rng, self.long, stop)
        self._keep(name, [rep])
        return rep

    def add(self, rep) -> None:
        self.busy.append(rep.busy_area / self.work)
        self.durations.append(rep.duration)
        self.jobs += rep.completions
        self.events += rep.events
        self.longs += len(self.busy) > PILOT

    @property
    def events_per_run(self) -> float:
        return self.events / len(self.busy)

    def relative_half_width(self) -> float:
        return self.estimate().rel_half_width

    def estimate(self):
        """Σ busy / Σ durations over the replications, with its 95 % Student t interval (delta method)."""
        from spn.simulation.statistics import ratio_estimate

        return ratio_estimate(self.busy, self.durations)

    def replications_for(self, precision: float) -> int:
        """The long replications Stein's rule asks (from those run) for ``precision``: the jobs measured
        grow as the square of the half-width's ratio to it."""
        if not math.isfinite(precision):
            return 0
        wanted = self.jobs * (self.relative_half_width() / precision) ** 2
        return min(MAX_REPLICATIONS - self.longs, max(0, math.ceil((wanted - self.jobs) / self.long)))

    def next_long(self, precision: float) -> range:
        """The numbers of the long replications still to run for ``precision``."""
        return range(self.longs + 1, self.longs + 1 + self.replications_for(precision))

    def cost(self, precision: float) -> float:
        """About how many events the long replications for ``precision`` simulate."""
        return self.replications_for(precision) * self.events_per_long

    def throughput(self) -> Throughput:
        x = self.estimate()
        return Throughput(self.k, x.value, max(x.ci_low, 1e-300), x.ci_high, "simulation", self.jobs)


def throughput_at(curve: tuple, N: int, pick: str, bound: float) -> np.ndarray:
    """X(0..N): 0, then the curve's ``pick`` (value, low, high) at every k, interpolated between the grid
    points by a monotone cubic; past the last one (saturated) flat, and ``high`` the containers' bound."""
    ks = np.array([x.k for x in curve], dtype=float)
    xs = np.array([getattr(x, pick) for x in curve])
    out = np.zeros(N + 1)
    k = np.arange(1, N + 1, dtype=float)
    if len(ks) == 1:
        out[1:] = xs[0]
    else:
        out[1:] = _pchip(ks, xs, np.minimum(k, ks[-1]))
    past = k > ks[-1]
    out[1:][past] = max(bound, xs[-1]) if pick == "high" else xs[-1]
    return out


def _pchip(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The monotone cubic through (x, y) at ``at`` (within x): scipy's PchipInterpolator (Fritsch-Butland
    slopes, its end conditions), without importing scipy.interpolate (0.3 s of a CLI answer).

    >>> _pchip(np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 2.5]), np.array([1.0, 1.5, 3.0, 4.0])).round(6).tolist()
    [1.0, 1.602679, 2.357143, 2.5]
    """
    h, m = np.diff(x), np.diff(y) / np.diff(x)
    d = np.zeros_like(y)
    if len(x) == 2:
        d[:] = m[0]
    else:
        w1, w2 = 2 * h[1:] + h[:-1], h[1:] + 2 * h[:-1]
        same = (np.sign(m[1:]) * np.sign(m[:-1]) > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            inner = (w1 + w2) / (w1 / m[:-1] + w2 / m[1:])
        d[1:-1] = np.where(same, inner, 0.0)
        d[0], d[-1] = _pchip_end(h[0], h[1], m[0], m[1]), _pchip_end(h[-1], h[-2], m[-1], m[-2])
    i = np.clip(np.searchsorted(x, at, side="right") - 1, 0, len(x) - 2)
    t = (at - x[i]) / h[i]
    return (y[i] * (1 + 2 * t) * (1 - t) ** 2 + y[i + 1] * t ** 2 * (3 - 2 * t)
            + h[i] * (d[i] * t * (1 - t) ** 2 - d[i + 1] * t ** 2 * (1 - t)))


def _pchip_end(h0: float, h1: float, m0: float, m1: float) -> float:
    """The end slope of :func:`_pchip` (a three-point estimate kept monotone), as scipy takes it."""
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    if np.sign(d) != np.sign(m0):
        return 0.0
    if np.sign(m0) != np.sign(m1) and abs(d) > abs(3 * m0):
        return 3 * m0
    return d


def alone_in_series(desc) -> tuple[float, float] | None:
    """The mean and variance of a job's time alone, exactly, when its phases run one after another (the
    edges a single path) and every task time is exponential; else None.

    A phase of n tasks on c = min(n, C) containers (a driver phase: c = n) starts them c at once: its
    n − c later starts each wait for one of c running tasks to end, Exp(c μ), then the last c end one by
    one at rates c μ, (c − 1) μ, ..., μ (memoryless). The job's time is a sum of independent
    exponential times.

    >>> from spn.description import parse_description
    >>> [round(v, 6) for v in alone_in_series(parse_description({"name": "x", "workload": {"users": 1,
    ...     "think_time": 1.0}, "cluster": {"containers": 2}, "phases": [{"name": "p", "tasks": 3,
    ...     "task_time": 1.0}]}))]      # Exp(2), then Exp(2) and Exp(1): 0.5 + 1.5; 0.25 + 0.25 + 1
    [2.0, 1.5]
    """
    rates = series_rates(desc)
    if rates is None:
        return None
    return float(np.sum(1.0 / rates)), float(np.sum(1.0 / rates ** 2))


def series_rates(desc) -> np.ndarray | None:
    """The rates of the independent exponential times that make a job's time alone, in
    :func:`alone_in_series`'s case (else None)."""
    phases = desc.phases
    if any(not (p.distribution == "exponential" or (p.distribution == "erlang" and p.shape == 1)) for p in phases):
        return None
    follows = dict(desc.edges)
    if (len(desc.edges) != len(phases) - 1 or len(follows) != len(desc.edges)
            or len(set(follows.values())) != len(desc.edges)):
        return None     # a phase with two parents or two children: not one path
    out = []
    for p in phases:
        c = min(p.tasks, desc.cluster.containers) if p.holds_containers else p.tasks
        out += [np.full(p.tasks - c, c / p.task_time), np.arange(c, 0, -1) / p.task_time]
    return np.concatenate(out)
