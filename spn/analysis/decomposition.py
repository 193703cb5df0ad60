"""Several users under ``fifo`` or ``fair`` at any scale: a flow-equivalent-server decomposition.

The cluster with k jobs always present (a job that ends is replaced at once) completes X(k)
jobs per second. The closed system of N users thinking Z seconds is then reduced to a small
chain over the number n of jobs in the cluster (docs/design.md §5.8):

- X(k) is measured on a grid of k and interpolated (:mod:`spn.analysis.throughput`);
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
a share (:data:`MODEL_ERROR_SHARE`, tuned on a grid of its own: validation/tune_decomposition.py) of
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

import time
from dataclasses import dataclass, replace

import numpy as np

from spn.analysis.chains import (MAX_STAGES, birth_death, fair_response, fair_stages, oldest_two, oldest_two_stationary,
                                 response, stage_counts)
from spn.analysis.throughput import (POLICIES, X_PRECISION, alone_in_series, job_work, pilot_curve, series_rates,
                                     throughput_at, with_users)
from spn.exceptions import ModelError, SpnError
from spn.threads import side_by_side

__all__ = ["Decomposition", "TooCoarse", "decompose", "not_applicable", "distribution_refused", "job_stages",
           "alone_times", "alone_law", "work_stages"]

#: the events the X(k) must still simulate (about 12 million a second) for the model's error to be checked
#: with the pilots' X(k) first (one more solve of the fifo chain, up to 0.2 s at 50 users)
CHECK_EVENTS = 2_000_000
#: where the model's error (from the pilots' X(k)) is wider than the X(k)'s precision, they are run to this
#: share of it instead: R's interval is then the model's error and about a quarter more, for a sixteenth of
#: the replications (the model's error does not narrow with them)
X_SHARE_OF_MODEL = 0.25
#: how far the model's error from the pilots' X(k) must pass the precision asked before the decomposition
#: gives up on it (their X(k) are within a few per cent; the gap moves less)
PILOT_MARGIN = 1.25
#: how little the X(k)'s interval must move R (relative) for a job's law at its ends to be the law at its
#: values scaled in time as R is, instead of two more chains solved (at the paper's scale, 20 s of 22)
SCALED_ENDS = 1e-3
#: the share of the gap between the fifo and birth-death chains stated as the mean's model error, on each
#: side: chosen on a tuning grid the validation never sees (validation/tune_decomposition.py,
#: docs/decomposition-tuning.md; the gap itself is a scale of how much the order of service matters, not a
#: bound: under fifo the cluster is mostly faster than both chains)
MODEL_ERROR_SHARE = {"fifo": 0.4, "fair": 0.75}
#: the share of a percentile's model-error scale (its gap to processor sharing's percentile, plus the gap
#: between a job alone's Erlang in the chain and its own law) stated on each side: chosen on the tuning grid
#: as the mean's share is (validation/tune_decomposition.py, docs/decomposition-tuning.md)
PERCENTILE_ERROR_SHARE = 0.5
#: jobs alone simulated for the coefficient of variation of a job's time (its stages)
ALONE_JOBS = 400


class TooCoarse(ModelError):
    """The decomposition's error estimate (or its model error alone) is wider than the precision asked."""

    @classmethod
    def of(cls, what: str, error: float, precision: float, how: str = "") -> TooCoarse:
        """``its error estimate of the mean +/- 6.1 % is wider than the precision asked (0.5 %, --rel-precision)``."""
        return cls(f"its {what}{how} +/- {100 * error:.2g} % is wider than the precision asked "
                   f"({100 * precision:g} %, --rel-precision)")


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
    #: how a job's own law alone moves the fifo laws' percentiles (:class:`~spn.analysis.passage_fifo.OwnLaw`)
    own_law: object | None = None

    def percentiles(self, qs) -> dict:
        """``{q: (t, low, high)}``: percentile q of a job's execution time (its passage time in the fifo chain,
        moved by its own law alone: :mod:`spn.analysis.passage_fifo`) and its interval, as the mean's: the
        X(k)'s ends, widened on each side by the model's error: the gap to processor sharing's percentile,
        plus the gap between the percentiles of a job alone in the chain (Erlang) and on the cluster."""
        out = {}
        for q in qs:
            t, low, high, scale = self.percentile_parts(q)
            gap = PERCENTILE_ERROR_SHARE * scale
            out[float(q)] = (t, max(low - gap, 0.0), high + gap)
        return out

    def percentile_parts(self, q: float) -> tuple[float, float, float, float]:
        """Percentile ``q`` (0-100), its ends from the X(k)'s intervals alone, and its model-error scale:
        the gap to processor sharing's percentile plus the gap between a job alone's two laws there."""
        u = float(q) / 100
        t, s, f = self.own_law.quantiles(self.passages[:3], u)
        ps, e, a = (float(d.quantile(u)) for d in self.passages[3:])
        return t, min(t, f), max(t, s), abs(t - ps) + abs(e - a)

    def probability(self, deadline: float) -> tuple[float, float, float]:
        """P(execution time <= ``deadline``) and its interval (the same ends; the model's error: the gap
        of the two chains' CDFs at the deadline, plus the largest between a job alone's two laws)."""
        p, s, f = self.own_law.cdfs(self.passages[:3], deadline)
        ps = float(self.passages[3].cdf(deadline))
        gap = PERCENTILE_ERROR_SHARE * (abs(p - ps) + alone_gap(*self.passages[4:]))
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
              distribution: bool = False, give_up_past: float | None = None, asked: tuple = (),
              probability: bool = False) -> Decomposition:
    """R, X and U of ``desc`` by the decomposition; raises :class:`ModelError` where it does not apply,
    :class:`SpnError` when X(k) could not be measured within ``max_seconds`` (None: no limit). ``seed``
    makes the simulations of X(k) repeatable (their length does not depend on the clock).
    ``distribution``: also a job's execution-time law (``passages``; fifo only, else :class:`ModelError`).
    ``give_up_past``: a relative half-width; where the model's error alone, from the pilots of X(k), is
    past it, :class:`TooCoarse` before the X(k) are run further (their precision could not narrow it),
    and where the mean's interval is, or (``asked``: the percentiles the caller will ask for; ``probability``:
    P(R <= d) too) a lower bound of theirs, before a job's law is solved in the fifo chain."""
    why = not_applicable(desc) or (distribution_refused(desc) if distribution else None)
    if why:
        raise ModelError(f"the decomposition does not apply: {why}")
    started = time.perf_counter()
    deadline = None if max_seconds is None else started + max_seconds
    N, Z, C = desc.workload.users, desc.workload.think_time, desc.cluster.containers
    work = job_work(desc)
    pilot = pilot_curve(desc, seed=seed, deadline=deadline)
    # one user's R is exact whatever the stages; its law is the Erlang of a job's
    several = N > 1 or distribution
    # jobs alone, simulated once for r and a job's law
    times = alone_times(desc, seed, deadline) if several else None
    job = job_stages(desc, times) if several else 1
    stages, second = stage_counts(job, N)
    if several and pilot.cost(precision) >= CHECK_EVENTS:     # else the check costs more than the simulations
        model = pilot_model_error(N, Z, throughput_at(pilot.points, N, "value", C / work), stages, second,
                                  MODEL_ERROR_SHARE[desc.scheduler.policy])
        if give_up_past is not None and model > PILOT_MARGIN * give_up_past:
            raise TooCoarse.of("model error of the mean", model, give_up_past, " (from short runs of X(k))")
        wider = X_SHARE_OF_MODEL * model
        if give_up_past is not None:        # not so wide that the answer's error passes the precision asked
            wider = min(wider, max(give_up_past - model, 0.0) / 2)
        precision = max(precision, wider)
    curve = pilot.refine(precision)
    policy = desc.scheduler.policy
    fair = policy == "fair"
    work_r = work_stages(desc) if N > 1 else 1

    # the policy's chain with X(k) at its values, low and high ends (lower throughputs, longer times):
    # one chain, three rates, one LU
    rates = np.array([throughput_at(curve, N, pick, C / work) for pick in ("value", "low", "high")])
    r_bd = response(N, Z, birth_death(N, Z, rates[0]))
    # a job's law needs the fifo chain's π; R alone, its throughput (not solved where the cluster is saturated)
    solved = oldest_two_stationary(N, Z, rates, stages, second) if distribution else None
    xs = [x for x, _ in solved] if distribution else oldest_two(N, Z, rates if not fair else rates[:1], stages, second)
    fifo = np.maximum(N / np.asarray(xs) - Z, 0.0)
    r_fifo = float(fifo[0])
    chosen, slow, fast = (float(v) for v in (fair_response(N, Z, rates, C, work_r)[0] if fair else fifo))
    # how much the order of service moves R (fair lies between processor sharing, the birth-death chain, and
    # service in order, the fifo chain): a share of it is the model's error
    gap = MODEL_ERROR_SHARE[policy] * abs(r_fifo - r_bd)
    low, high = min(fast, chosen) - gap, max(slow, chosen) + gap
    x = N / (chosen + Z)
    if give_up_past is not None and distribution:
        widest = max(chosen - max(low, 0.0), high - chosen) / max(chosen, 1e-300)
        if widest > give_up_past:       # the answer's error is the widest of the mean's and its percentiles'
            raise TooCoarse.of("error estimate of the mean", widest, give_up_past)
    passages = own_law = None
    if distribution:
        passages, own_law = _passages(desc, rates, solved, fifo, stages, second, times=times, deadline=deadline,
                             give_up_past=give_up_past, asked=asked, probability=probability)
    return Decomposition(mean=chosen, low=max(low, 0.0), high=high, throughput=x, utilization=min(x * work / C, 1.0),
                         model_error=gap, birth_death_mean=r_bd, oldest_two_mean=r_fifo,
                         fair_mean=chosen if fair else None, stages=stages, second_stages=second,
                         fair_stages=fair_stages(work_r, N, C) if fair else None, policy=policy, curve=curve,
                         seconds=time.perf_counter() - started, passages=passages, own_law=own_law)


def _passages(desc, rates, solved, fifo, stages: int, second: int, *, times, deadline, give_up_past, asked,
              probability) -> tuple:
    """A job's execution-time laws (:attr:`Decomposition.passages`): the fifo chain's at the X(k)'s values and
    ends, processor sharing's, and a job alone's in the chain (Erlang) and on the cluster; and how its own law
    alone moves the first three (:attr:`Decomposition.own_law`). Where
    ``give_up_past`` is given and the percentiles ``asked`` (or P(R <= d), ``probability``) already have,
    from the cheap laws alone, a larger error than it, :class:`TooCoarse` before the fifo chain's are solved."""
    from spn.analysis.passage_fifo import (OwnLaw, fifo_passage, flat_from, likely_top, shared_passage, stages_law,
                                          wait_law)

    N, Z = desc.workload.users, desc.workload.think_time
    shared = shared_passage(N, Z, rates[0], stages, deadline=deadline)
    erlang, alone = stages_law(np.full(stages, stages * rates[0][1])), alone_law(desc, times)
    if give_up_past is not None:
        # a percentile's error is share · (|t − ps| + |e − a|) / t at least, smallest at t = ps
        for q in asked:
            ps = float(shared.quantile(q / 100))
            alone_part = abs(float(erlang.quantile(q / 100)) - float(alone.quantile(q / 100)))
            error = PERCENTILE_ERROR_SHARE * alone_part / max(ps, 1e-300)
            if error > give_up_past:
                raise TooCoarse.of(f"error estimate of the p{q:g}", error, give_up_past,
                                   " (at least, from a job alone's law)")
        if probability and (error := PERCENTILE_ERROR_SHARE * alone_gap(erlang, alone)) > give_up_past:
            raise TooCoarse.of("error estimate of P(R <= deadline)", error, give_up_past,
                               " (at least, from a job alone's law)")
    # one chain structure for the three rates; where the X(k)'s ends move R by less than SCALED_ENDS, a
    # job's law at them is its law at their values scaled in time as R is (one chain solved, not three)
    pis = [pi for _, pi in solved]
    flat, top = flat_from(rates), likely_top(N, pis, stages, second)
    ends = fifo[1:] / fifo[0] if fifo[0] > 0 else np.ones(2)
    scaled = bool(np.all(np.abs(ends - 1) < SCALED_ENDS))
    rows = {}       # exact X(k) have no interval: their three rows are one
    for row, (_, pi) in zip(rates[:1] if scaled else rates, solved):
        rows.setdefault(row.tobytes(), (row, pi))
    # the first on this thread, so that Ctrl-C stops it at once
    solved_laws = side_by_side([lambda row=row, pi=pi: fifo_passage(N, Z, row, stages, second, pi, flat=flat, top=top,
                                                                   deadline=deadline)
                                for row, pi in rows.values()])
    laws = dict(zip(rows, solved_laws))
    # each law scaled in time to the fifo chain's R at its rates: the tagged job's chain lumps the jobs
    # between it and the oldest, so its mean is R only nearly (within 2 % on the validation grid)
    if scaled:
        law = laws[rates[0].tobytes()]
        fifo_laws = (_scaled(law, fifo[0] / law.mean),
                     *(replace(_scaled(law, R / law.mean), seconds=0.0) for R in fifo[1:]))
    else:
        fifo_laws = tuple(_scaled(laws[row.tobytes()], R / laws[row.tobytes()].mean) for row, R in zip(rates, fifo))
    own_law = OwnLaw(*wait_law(N, Z, rates[0], stages, second, pis[0], deadline=deadline), erlang, alone)
    return (*fifo_laws, shared, erlang, alone), own_law


def _scaled(law, e: float):
    """``law`` with its times multiplied by ``e``."""
    return law if e == 1.0 or not e > 0 else replace(law, rate=law.rate / e, mean=law.mean * e, std=law.std * e)


def alone_gap(erlang, alone) -> float:
    """The largest gap between a job alone's two laws' CDFs (the chain's Erlang, its own) over its 1st to 99th
    percentiles: P(R <= d)'s share of the model's error from them."""
    return max(abs(float(erlang.cdf(alone.quantile(u))) - u) for u in np.linspace(0.01, 0.99, 99))


def pilot_model_error(N: int, Z: float, rates: np.ndarray, stages: int, second: int, share: float) -> float:
    """The model's error relative to R (``share`` of the gap between the fifo and birth-death chains,
    :data:`MODEL_ERROR_SHARE`, which the final interval has on each side), with the X(k) of the pilots:
    within a few per cent of the final one, as their X(k) are.

    >>> round(pilot_model_error(1, 5.0, np.array([0.0, 0.5]), 4, 4, 0.4), 12)    # one user: no order of service
    0.0
    """
    r_bd = response(N, Z, birth_death(N, Z, rates))
    r_fifo = response(N, Z, oldest_two(N, Z, rates, stages, second))
    # under fair R lies between the two: the larger one is the smallest relative gap it can have
    return share * abs(r_fifo - r_bd) / max(r_fifo, r_bd, 1e-300)


def job_stages(desc, times=None) -> int:
    """The Erlang stages of a job's progress: 1 / the squared coefficient of variation of a job's time
    alone (exact where :func:`alone_in_series` applies, else from ``times``, the jobs alone of
    :func:`alone_times`), rounded, at most :data:`MAX_STAGES`."""
    alone = alone_in_series(desc)
    if alone is not None:
        scv = alone[1] / alone[0] ** 2
    else:
        scv = float(np.var(times) / np.mean(times) ** 2)
    return max(1, min(int(round(1.0 / max(scv, 1e-9))), MAX_STAGES))


def alone_times(desc, seed, deadline: float | None = None) -> np.ndarray | None:
    """The times of jobs alone (at most :data:`ALONE_JOBS`), simulated; None where :func:`alone_in_series`
    applies (a job's law alone is known exactly there). ``deadline``: how long the compiled simulator's
    first compilation may be awaited (:func:`~spn.simulation.cluster_compiled.await_compiled_cluster`)."""
    if series_rates(desc) is not None:
        return None
    from spn.simulation.cluster_compiled import CompiledClusterSimulator, await_compiled_cluster

    if not await_compiled_cluster(deadline):
        raise SpnError("the compiled cluster simulator is not compiled yet (python -m spn.kernels)")
    sim = CompiledClusterSimulator(with_users(desc, 1, 0.0))
    tasks = sum(p.tasks for p in desc.phases)
    jobs = max(40, min(ALONE_JOBS, 200_000 // tasks))
    return np.asarray(sim.run(np.random.default_rng(seed), warmup=0, length=jobs, job_times=True).job_times)


def alone_law(desc, times=None):
    """A job's execution-time law alone (``quantile``, ``cdf``): exact where :func:`alone_in_series`
    applies (its exponential times in a row), else the law of ``times``, the jobs alone of
    :func:`alone_times` (the jobs :func:`job_stages` took r from)."""
    from spn.analysis.passage_fifo import EmpiricalLaw, stages_law

    rates = series_rates(desc)
    return stages_law(rates) if rates is not None else EmpiricalLaw(times)


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
