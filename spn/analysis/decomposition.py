"""Several users under ``fifo`` or ``fair`` at any scale: a flow-equivalent-server decomposition.

The cluster with k jobs always present (a job that ends is replaced at once) completes X(k)
jobs per second. The closed system of N users thinking Z seconds is then reduced to a small
chain over the number n of jobs in the cluster (docs/design.md §5.8):

- X(k) comes from the exact chain of the job-identity net with k users whose think time is
  negligible, where that chain is small (:data:`EXACT_STATES`; X(1) in closed form where the phases
  run in series with exponential tasks), else from short runs of the compiled cluster simulator
  (:mod:`spn.simulation.cluster_compiled`) with k users and no think time, each run as far as R
  needs it, on a grid of k (1, 2, 3, 4, 6, 8, 12, ...) that stops where X(k) reaches the containers'
  bound C / W (W the mean container-seconds of a job), interpolated between (monotone cubic);
- ``fifo`` serves the jobs in order: the oldest job runs as if alone, and the job behind it
  takes what the older one leaves. The chain follows the progress of the two oldest jobs in
  Erlang stages (the oldest in r, from the squared coefficient of variation of a job's time
  alone; the second in fewer, as its progress matters less and each of its stages multiplies
  the chain): the oldest at the rate X(1), the second at X(n) − X(1), so that the n jobs
  together complete X(n) per second (:func:`~spn.analysis.chains.oldest_two`). Jobs complete as
  regularly as they do on the cluster, which the birth-death chain (arrivals (N − n)/Z,
  completions X(n) memoryless: :func:`~spn.analysis.chains.birth_death`) does not say;
- ``fair`` deals the containers round-robin, one more to each of the C mod n oldest jobs (and past
  C jobs one to each of the C oldest), so the older jobs, which are further on, get more: with
  regular jobs that is partly service in order, and fair is faster than processor sharing (the
  birth-death chain, up to 6 % too slow on a few containers). The chain follows the progress of
  every job in service in Erlang stages, ranked by progress, each advancing in proportion to its
  containers, together at X(n) (:func:`~spn.analysis.chains.fair_shares`), a job's work (its
  container-seconds) in stages from their squared coefficient of variation (:func:`work_stages`);
  the states multiply with the stages, so it is solved with as many as fit and its R extrapolated
  linearly in 1 / r (:func:`~spn.analysis.chains.fair_response`).

R = N / X − Z (Little), and the utilisation is X · W / C. Exact for one user (a job's cycle is
Z + 1 / X(1)) and where the cluster is product-form (one exponential task per job: an M/M/C
station, r = 1, every chain is the birth-death chain) when X(k) is exact. The error it reports
is the simulated X(k)'s 95 % intervals propagated through the chain plus, as the model's error,
the gap between the birth-death and fifo chains (processor sharing and service in order, the two
ends between which fair lies for jobs no more variable than exponential ones;
validation/run_decomposition.py measures both against long simulations: docs/decomposition.md).

Under fifo it also gives a job's execution-time law (``distribution=True``): its passage time through the
fifo chain (:mod:`spn.analysis.passage_fifo`), its percentiles' error stated as the mean's (the X(k)'s
intervals, the gap to processor sharing, the birth-death chain with the job tagged, and the gap between a
job alone's Erlang law in the chain and its own).

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 3, "think_time": 2.0},
...     "cluster": {"containers": 2}, "phases": [{"name": "p", "tasks": 1, "task_time": 1.0, "shape": 1}]})
>>> d = decompose(desc)     # X(k) = min(k, 2): an M/M/2 station; X(2) is the bound C / W, so the curve stops
>>> round(d.mean, 6), d.stages, d.low == d.high, [x.source for x in d.curve]
(1.055556, 1, True, ['exact', 'exact'])
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from spn.analysis.chains import (MAX_STAGES, birth_death, fair_response, fair_stages, oldest_two_stationary,
                                 stage_counts)
from spn.exceptions import ModelError, SpnError, StateSpaceLimitError

__all__ = ["Decomposition", "Throughput", "decompose", "not_applicable", "distribution_refused", "throughput_curve",
           "job_stages", "alone_law", "work_stages", "EXACT_STATES", "POLICIES"]

#: the policies it models (gate: see :func:`not_applicable`)
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
#: jobs alone simulated for the coefficient of variation of a job's time (its stages)
ALONE_JOBS = 400
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


@dataclass(frozen=True)
class Decomposition:
    """The answer: ``mean`` (R), its interval (``low``, ``high``: the X(k)'s intervals propagated, widened
    by ``model_error`` seconds on each side), ``throughput``, ``utilization``; the chains' R
    (``birth_death_mean``, ``oldest_two_mean``, and under fair ``fair_mean``), the ``stages`` of the fifo
    chain's oldest and second oldest jobs (r, r2), the stages the fair chain was solved with
    (``fair_stages``; its R extrapolated from there to the stages of a job's work), the ``curve`` of measured X(k),
    and the seconds it took."""

    mean: float
    low: float
    high: float
    throughput: float
    utilization: float
    model_error: float
    birth_death_mean: float
    oldest_two_mean: float
    fair_mean: float | None
    stages: int
    second_stages: int
    fair_stages: int | None
    policy: str
    curve: tuple
    seconds: float
    #: fifo, when asked for: a job's execution-time law in the fifo chain with X(k) at their values, low and
    #: high ends; in the birth-death chain (processor sharing), the other end of the model's error; the
    #: Erlang law of the chain's job alone, and a job's own law alone (exact or simulated)
    passages: tuple | None = None

    def percentiles(self, qs) -> dict:
        """``{q: (t, low, high)}``: percentile q of a job's execution time (the fifo chain's passage time,
        :mod:`spn.analysis.passage_fifo`) and its interval, as the mean's: the X(k)'s ends, widened on each
        side by the model's error: the gap to processor sharing's percentile, plus the gap between the
        percentiles of a job alone in the chain (Erlang) and on the cluster."""
        out = {}
        for q in qs:
            t, s, f, ps, e, a = (float(d.quantile(float(q) / 100)) for d in self.passages)
            gap = abs(t - ps) + abs(e - a)
            out[float(q)] = (t, max(min(t, f) - gap, 0.0), max(t, s) + gap)
        return out

    def probability(self, deadline: float) -> tuple[float, float, float]:
        """P(execution time <= ``deadline``) and its interval (the same ends; the model's error: the gap
        of the two chains' CDFs at the deadline, plus the largest between a job alone's two laws)."""
        p, s, f, ps = (float(d.cdf(deadline)) for d in self.passages[:4])
        erlang, alone = self.passages[4:]
        levels = np.linspace(0.01, 0.99, 99)
        gap = abs(p - ps) + max(abs(float(erlang.cdf(alone.quantile(u))) - u) for u in levels)
        return p, max(min(p, s) - gap, 0.0), min(max(p, f) + gap, 1.0)

    @property
    def error_bound(self) -> float:
        """The interval's half-width relative to the mean (the larger side)."""
        return max(self.mean - self.low, self.high - self.mean) / self.mean

    def as_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "error_bound": self.error_bound,
                "model_error_s": self.model_error, "birth_death_mean": self.birth_death_mean,
                "oldest_two_mean": self.oldest_two_mean, "fair_mean": self.fair_mean, "stages": self.stages,
                "second_stages": self.second_stages, "fair_stages": self.fair_stages,
                "throughput_curve": [{"k": x.k, "X": x.value, "low": x.low, "high": x.high, "source": x.source,
                                      "jobs": x.jobs} for x in self.curve]}


def not_applicable(desc) -> str | None:
    """Why the decomposition does not model ``desc`` (None: it does).

    >>> from spn.description import load_description
    >>> print(not_applicable(load_description("models/mapreduce.yaml")))
    under gate spn solves the paper's net, whose finished tasks pool across jobs; the simulator that measures X(k) keeps jobs apart
    """
    if desc.classes:
        return "query classes share the cluster through queues; the flow-equivalent server is for one class"
    if desc.scheduler.policy not in POLICIES:
        return ("under gate spn solves the paper's net, whose finished tasks pool across jobs; "
                "the simulator that measures X(k) keeps jobs apart")
    return None


def distribution_refused(desc) -> str | None:
    """Why the decomposition gives no execution-time law for ``desc`` (None: it does).

    >>> from spn.description import load_description
    >>> print(distribution_refused(load_description("models/mapreduce.yaml", ["scheduler.policy=fair"])))
    under fair a job's time depends on every job in service; its chain follows them anonymously (the mean only)
    """
    if desc.scheduler.policy != "fifo":
        return ("under fair a job's time depends on every job in service; its chain follows them anonymously "
                "(the mean only)")
    return None


def decompose(desc, *, seed=0, max_seconds: float | None = None, precision: float = X_PRECISION,
              distribution: bool = False) -> Decomposition:
    """R, X and U of ``desc`` by the decomposition; raises :class:`ModelError` where it does not apply,
    :class:`SpnError` when X(k) could not be measured within ``max_seconds`` (None: no limit). ``seed``
    makes the simulations of X(k) repeatable (their length does not depend on the clock).
    ``distribution``: also a job's execution-time law (``passages``; fifo only, else :class:`ModelError`)."""
    why = not_applicable(desc) or (distribution_refused(desc) if distribution else None)
    if why:
        raise ModelError(f"the decomposition does not apply: {why}")
    started = time.perf_counter()
    deadline = None if max_seconds is None else started + max_seconds
    N, Z, C = desc.workload.users, desc.workload.think_time, desc.cluster.containers
    work = _work(desc)
    curve = throughput_curve(desc, seed=seed, deadline=deadline, precision=precision)
    # one user's R is exact whatever the stages; its law is the Erlang of a job's
    job = job_stages(desc, seed=seed) if N > 1 or distribution else 1
    stages, second = stage_counts(job, N)
    policy = desc.scheduler.policy
    fair = policy == "fair"
    work_r = work_stages(desc) if N > 1 else 1

    # the policy's chain with X(k) at its values, low and high ends (lower throughputs, longer times):
    # one chain, three rates, one LU
    rates = np.array([_rates(curve, N, pick, C / work) for pick in ("value", "low", "high")])
    r_bd = _response(N, Z, birth_death(N, Z, rates[0]))
    solved = oldest_two_stationary(N, Z, rates if not fair else rates[:1], stages, second)
    fifo = np.maximum(N / np.array([x for x, _ in solved]) - Z, 0.0)
    r_fifo = float(fifo[0])
    chosen, slow, fast = (float(v) for v in (fair_response(N, Z, rates, C, work_r)[0] if fair else fifo))
    # fair lies between processor sharing (birth-death) and service in order (fifo): the gap is the model's error
    gap = abs(r_fifo - r_bd)
    low, high = min(fast, chosen) - gap, max(slow, chosen) + gap
    x = N / (chosen + Z)
    passages = None
    if distribution:
        from spn.analysis.passage_fifo import fifo_passage, flat_from, likely_top, shared_passage, stages_law

        # one chain structure for the three rates
        flat, top = flat_from(rates), likely_top(N, [pi for _, pi in solved], stages, second)
        laws = {}       # exact X(k) have no interval: their three rows are one
        for row, (_, pi) in zip(rates, solved):
            key = row.tobytes()
            laws[key] = laws.get(key) or fifo_passage(N, Z, row, stages, second, pi, flat=flat, top=top,
                                                      deadline=deadline)
        passages = tuple(laws[row.tobytes()] for row in rates)
        passages += (shared_passage(N, Z, rates[0], stages, deadline=deadline),
                     stages_law(np.full(stages, stages * rates[0][1])), alone_law(desc, seed=seed))
    return Decomposition(mean=chosen, low=max(low, 0.0), high=high, throughput=x, utilization=min(x * work / C, 1.0),
                         model_error=gap, birth_death_mean=r_bd, oldest_two_mean=r_fifo,
                         fair_mean=chosen if fair else None, stages=stages, second_stages=second,
                         fair_stages=fair_stages(work_r, N, C) if fair else None, policy=policy, curve=curve,
                         seconds=time.perf_counter() - started, passages=passages)


def _response(N: int, Z: float, x: float) -> float:
    return max(N / x - Z, 0.0)


def _work(desc) -> float:
    """W: the mean container-seconds of one job (its driver phases hold none)."""
    from spn.description.model import container_seconds

    return container_seconds(desc.phases)


def _with_users(desc, k: int, think_time: float):
    return replace(desc, workload=replace(desc.workload, users=k, think_time=think_time))


def throughput_curve(desc, *, seed=0, deadline: float | None = None, precision: float = X_PRECISION) -> tuple:
    """X(k) on the grid (:data:`GRID` up to N, and N), exact where the chain of k users is small, else
    simulated; it stops where X(k) reaches :data:`SATURATED` of the containers' bound C / W.

    A simulated X(k) first has a pilot of :data:`PILOT` replications at every grid point; then each is
    run to the precision its share of R's asks (:func:`_precisions`): an X(k) at a number of jobs the
    users seldom reach moves R little and keeps its pilot, so that R's interval from the X(k) is what
    ``precision`` at every point would give, at a fraction of the replications."""
    N, C = desc.workload.users, desc.cluster.containers
    bound = C / _work(desc)
    ks = sorted({k for k in GRID if k < N} | {N})
    exact = desc.scheduler.policy in POLICIES and all(p.distribution in ("erlang", "exponential") for p in desc.phases)
    rng = np.random.default_rng(seed)
    curve, runs = [], {}
    for k in ks:
        point = _exact_throughput(desc, k) if exact else None
        if point is None:
            exact = False       # larger k have larger chains
            runs[k] = _Replications(desc, k, rng, deadline)
            point = runs[k].throughput()
        curve.append(point)
        if point.low >= SATURATED * bound:
            break
    if runs:
        wanted = _precisions(desc, curve, runs, precision)
        for i, point in enumerate(curve):
            if point.k in runs:
                curve[i] = runs[point.k].extend(wanted[point.k])
    return tuple(curve)


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
    bound = desc.cluster.containers / _work(desc)

    def response(points) -> float:
        return _response(N, Z, birth_death(N, Z, _rates(tuple(points), N, "value", bound)))

    base, h = response(curve), 1e-4
    if base <= 0:
        return {k: precision for k in simulated}
    weight = {}
    for i, x in enumerate(curve):
        if x.k in runs:
            moved = curve[:i] + [replace(x, value=x.value * (1 + h))] + curve[i + 1:]
            weight[x.k] = abs(response(moved) - base) / (base * h)
    budget = precision * sum(weight.values())
    cost = {k: max(runs[k].relative_half_width(), 1e-12) ** 2 * runs[k].events_per_run / max(weight[k], 1e-300)
            for k in simulated}
    share = {k: cost[k] ** (1 / 3) for k in simulated}
    scale = budget / max(sum(weight[k] * share[k] for k in simulated), 1e-300)
    return {k: scale * share[k] if weight[k] > 1e-9 * sum(weight.values()) else math.inf for k in simulated}


def _exact_throughput(desc, k: int) -> Throughput | None:
    """X(k) from the exact chains of k users whose think time ε is negligible, or None when they are not small
    (X(1) from :func:`_alone_in_series` where it applies).

    R(ε) = R(0) + O(ε): two chains, at ε and 2ε, give R(0) = 2 R(ε) − R(2ε) + O(ε²) (ε = :data:`INSTANT`
    of a job's work per container, so that the chains stay well conditioned and the bias is ~1e-12)."""
    if k == 1 and (alone := _alone_in_series(desc)) is not None:
        x = 1.0 / alone[0]
        return Throughput(k, x, x, x, "exact")
    from spn.analysis.choice import state_space_lower_bound

    epsilon = INSTANT * _work(desc) / desc.cluster.containers
    if state_space_lower_bound(_with_users(desc, k, epsilon)) > EXACT_STATES:
        return None
    from spn.analysis.solve import solve_application     # the nets and solvers: only for a small chain

    times = []
    # one job alone takes the same time whatever the think time: one chain is exact
    for think in (epsilon,) if k == 1 else (epsilon, 2 * epsilon):
        try:        # bounded by its size alone, so that the answer does not depend on the machine's load
            solution = solve_application(_with_users(desc, k, think), method="direct", max_states=EXACT_STATES)
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
    k + 5 of warm-up: an X(k) that keeps its pilot costs little); then (:meth:`extend`) as many long
    ones (:data:`MEASURED_PER_WARMUP`) as Stein's rule asks for a precision, in jobs measured (at most
    :data:`MAX_REPLICATIONS`), so that one seed gives one answer whatever the machine's load. Past
    ``deadline`` (a :func:`time.perf_counter` instant), :class:`SpnError`."""

    def __init__(self, desc, k: int, rng, deadline: float | None):
        from spn.simulation.cluster_compiled import CompiledClusterSimulator, compiled_cluster_ready

        if not compiled_cluster_ready():
            raise SpnError("the compiled cluster simulator is not compiled yet (python -m spn.kernels)")
        self.k, self.rng, self.deadline = k, rng, deadline
        self.sim = CompiledClusterSimulator(_with_users(desc, k, 0.0))
        self.work = _work(desc)
        tasks = sum(p.tasks for p in desc.phases)
        short = max(2 * k, 10, int(math.ceil(2_000 / tasks)))      # a few thousand task ends at least
        self.long = max(MEASURED_PER_WARMUP * (k + 5), short)
        self.busy, self.durations, self.jobs, self.events = [], [], 0, 0
        self._run(PILOT, short)

    def _run(self, replications: int, length: int) -> None:
        from spn.simulation.distributions import SimulationTimeout

        for _ in range(replications):
            try:
                rep = self.sim.run(self.rng, warmup=self.k + 5, length=length, deadline=self.deadline)
            except SimulationTimeout:
                raise SpnError(f"simulating X({self.k}) took longer than the time given") from None
            self.busy.append(rep.busy_area / self.work)
            self.durations.append(rep.duration)
            self.jobs += rep.completions
            self.events += rep.events

    @property
    def events_per_run(self) -> float:
        return self.events / len(self.busy)

    def relative_half_width(self) -> float:
        return self.estimate().rel_half_width

    def estimate(self):
        """Σ busy / Σ durations over the replications, with its 95 % Student t interval (delta method)."""
        from spn.simulation.statistics import ratio_estimate

        return ratio_estimate(self.busy, self.durations)

    def extend(self, precision: float) -> Throughput:
        """X(k) after as many long replications as Stein's rule asks (from the pilot) for ``precision``:
        the jobs measured grow as the square of the half-width's ratio to it."""
        if math.isfinite(precision):
            wanted = self.jobs * (self.relative_half_width() / precision) ** 2
            self._run(min(MAX_REPLICATIONS, max(0, math.ceil((wanted - self.jobs) / self.long))), self.long)
        return self.throughput()

    def throughput(self) -> Throughput:
        x = self.estimate()
        return Throughput(self.k, x.value, max(x.ci_low, 1e-300), x.ci_high, "simulation", self.jobs)


def _rates(curve: tuple, N: int, pick: str, bound: float) -> np.ndarray:
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


def job_stages(desc, *, seed=0) -> int:
    """The Erlang stages of a job's progress: 1 / the squared coefficient of variation of a job's time
    alone (exact where :func:`_alone_in_series` applies, else simulated), rounded, at most :data:`MAX_STAGES`."""
    alone = _alone_in_series(desc)
    if alone is not None:
        scv = alone[1] / alone[0] ** 2
    else:
        times = _alone_times(desc, seed)
        scv = float(np.var(times) / np.mean(times) ** 2)
    return max(1, min(int(round(1.0 / max(scv, 1e-9))), MAX_STAGES))


def _alone_times(desc, seed) -> np.ndarray:
    """The times of jobs alone (at most :data:`ALONE_JOBS`), simulated."""
    from spn.simulation.cluster_compiled import CompiledClusterSimulator, compiled_cluster_ready

    if not compiled_cluster_ready():
        raise SpnError("the compiled cluster simulator is not compiled yet (python -m spn.kernels)")
    sim = CompiledClusterSimulator(_with_users(desc, 1, 0.0))
    tasks = sum(p.tasks for p in desc.phases)
    jobs = max(40, min(ALONE_JOBS, 200_000 // tasks))
    return np.asarray(sim.run(np.random.default_rng(seed), warmup=0, length=jobs, job_times=True).job_times)


def alone_law(desc, *, seed=0):
    """A job's execution-time law alone (``quantile``, ``cdf``): exact where :func:`_alone_in_series`
    applies (its exponential times in a row), else the times of jobs alone simulated as for
    :func:`job_stages` (the same seed, the same jobs)."""
    from spn.analysis.passage_fifo import EmpiricalLaw, stages_law

    rates = _series_rates(desc)
    return stages_law(rates) if rates is not None else EmpiricalLaw(_alone_times(desc, seed))


def _alone_in_series(desc) -> tuple[float, float] | None:
    """The mean and variance of a job's time alone, exactly, when its phases run one after another (the
    edges a single path) and every task time is exponential; else None.

    A phase of n tasks on c = min(n, C) containers (a driver phase: c = n) starts them c at once: its
    n − c later starts each wait for one of c running tasks to end, Exp(c μ), then the last c end one by
    one at rates c μ, (c − 1) μ, ..., μ (memoryless). The job's time is a sum of independent
    exponential times.

    >>> from spn.description import parse_description
    >>> [round(v, 6) for v in _alone_in_series(parse_description({"name": "x", "workload": {"users": 1,
    ...     "think_time": 1.0}, "cluster": {"containers": 2}, "phases": [{"name": "p", "tasks": 3,
    ...     "task_time": 1.0}]}))]      # Exp(2), then Exp(2) and Exp(1): 0.5 + 1.5; 0.25 + 0.25 + 1
    [2.0, 1.5]
    """
    rates = _series_rates(desc)
    if rates is None:
        return None
    return float(np.sum(1.0 / rates)), float(np.sum(1.0 / rates ** 2))


def _series_rates(desc) -> np.ndarray | None:
    """The rates of the independent exponential times that make a job's time alone, in
    :func:`_alone_in_series`'s case (else None)."""
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


def work_stages(desc) -> int:
    """The Erlang stages of a job's work, its container-seconds (what the fair chain's jobs advance
    through): 1 / their squared coefficient of variation, a sum of independent task times, rounded,
    at most :data:`MAX_STAGES`.

    >>> from spn.description import parse_description
    >>> work_stages(parse_description({"name": "x", "workload": {"users": 2, "think_time": 1.0},
    ...     "cluster": {"containers": 2}, "phases": [{"name": "p", "tasks": 3, "task_time": 1.0, "shape": 2}]}))
    6
    """
    from spn.simulation.distributions import phase_distribution

    laws = [(p.tasks, phase_distribution(p)) for p in desc.phases if p.holds_containers]
    scv = sum(n * law.variance for n, law in laws) / sum(n * law.mean for n, law in laws) ** 2
    return max(1, min(int(round(1.0 / max(scv, 1e-9))), MAX_STAGES))
