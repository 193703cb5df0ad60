"""Execution-time distribution of a tagged job: a first-passage time of the CTMC.

The mean execution time R = N/X - Z needs only the steady state; its distribution
follows one job through an absorbing chain built from the tangible state space
(:func:`tagged_job_chain`), solved by uniformisation (:func:`passage_time`), or for a stiff
chain by an implicit ODE method (:mod:`spn.solvers.passage_stiff`);
:func:`execution_time_distribution` does both (docs/percentiles.md).

>>> import numpy as np, scipy.sparse as sp
>>> res = passage_time(sp.csr_matrix([[-2.0]]), np.array([1.0]))   # Exp(rate 2)
>>> round(res.mean, 9), round(res.cdf(0.5), 9), round(res.quantile(0.5), 9)
(0.5, 0.632120559, 0.34657359)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from spn.exceptions import ConvergenceError, ModelError

__all__ = [
    "PassageChain", "PassageTimeResult", "tagged_job_chain", "passage_time",
    "execution_time_distribution", "DEFAULT_PERCENTILES",
]

#: percentiles reported when none are asked for
DEFAULT_PERCENTILES = (50.0, 90.0, 95.0, 99.0)

#: default cap on uniformisation steps
DEFAULT_MAXITER = 2_000_000
#: uniformisation steps after which ``method="auto"`` judges whether the chain is too stiff for it
PROBE_STEPS = 50_000

# Poisson weights beyond this many standard deviations from q t are below 1e-30
_WINDOW_SD = 12.0


# --------------------------------------------------------------------------- the absorbing chain
@dataclass(frozen=True)
class PassageChain:
    """The absorbing CTMC of a tagged job.

    ``Q``: sub-generator over the transient states (CSR; rows sum to minus the
    absorption rate); ``alpha``: entry distribution (sums to 1); ``state[i]``,
    ``ahead[i]``: the tangible marking and the number of completions still to come
    (1 = the tagged job completes next) of transient state i; ``arrival_rate`` and
    ``completion_rate``: the steady-state job arrival and completion rates (equal
    up to the accuracy of pi).
    """

    Q: sp.csr_matrix
    alpha: np.ndarray
    state: np.ndarray
    ahead: np.ndarray
    arrival_rate: float
    completion_rate: float

    @property
    def n_states(self) -> int:
        return self.Q.shape[0]


def tagged_job_chain(ss, pi, *, users: int, end_activity: str, think_place: str) -> PassageChain:
    """Build the absorbing chain of a tagged job from a state space and its steady state.

    ``users`` is N, ``end_activity`` the activity whose firing completes a job (it
    returns the user's token to ``think_place``, where users think). Raises
    :class:`ModelError` when the net does not move tokens of ``think_place`` as an
    application net does (one token out per arrival, one back per completion).

    The net cannot tell one job from the others: the N users are anonymous tokens,
    and tasks of consecutive jobs share places. So a job is tagged by the order in
    which jobs leave. Jobs leave in the order they came (FIFO): the capacity-scheduler
    gate starts them in arrival order, and a phase whose finished-task tokens of
    several jobs are pooled is read as ending its *oldest* job, as the cluster
    simulator's ``pool_finished_tasks=True`` mode does; by induction over the DAG
    every phase, join and so the whole job ends its jobs in arrival order. The tagged
    job arrives with a firing of the think activity (a token leaves the think place,
    which holds ``think(s)`` tokens in marking s) in steady state, so it sees the
    arrival-weighted distribution ``pi_s * rate(s -> s')`` over the tangible states
    ``s'`` it lands in. With ``k = N - think(s')`` jobs then in the system (itself
    included, all of them ahead of it or it), it completes at the k-th firing of the
    end activity from then on.

    The absorbing chain has states ``(s, k)``: tangible marking ``s``, and ``k`` the
    number of job completions still to come until the tagged job's own,
    ``1 <= k <= N - think(s)``. A transition ``s -> s'`` that returns a token to the
    think place moves ``(s, k)`` to ``(s', k - 1)``, or absorbs when k = 1; every other
    transition moves it to ``(s', k)``. The per-state rate of completions found this
    way is checked against the firings of ``end_activity``, so a net where this
    reading is wrong raises instead of answering. Since every arrival is matched with
    exactly one completion, the mean passage time is that of Little's law,
    E[T] = (N - E[think]) / X = N/X - Z, whatever the matching.

    >>> from spn.models.mapreduce import mapreduce_net
    >>> from spn.statespace import explore
    >>> from spn.solvers import steady_state
    >>> ss = explore(mapreduce_net(users=2, think_time=5.0, containers=2, map_tasks=2,
    ...                            map_time=1.0, reduce_tasks=1, reduce_time=1.0))
    >>> chain = tagged_job_chain(ss, steady_state(ss.generator()).x, users=2, end_activity="IAFR",
    ...                          think_place="PJ")
    >>> round(float(chain.alpha.sum()), 12), sorted(set(chain.ahead.tolist()))
    (1.0, [1, 2])
    """
    pi = np.asarray(pi, dtype=float)
    n = ss.n_states
    if pi.shape != (n,):
        raise ModelError(f"pi has shape {pi.shape}, the state space has {n} states")
    Q = ss.generator().tocoo()
    off = Q.row != Q.col
    row, col, rate = Q.row[off].astype(np.int64), Q.col[off].astype(np.int64), Q.data[off]
    diagonal = ss.generator().diagonal()
    thinking = ss.tokens(think_place).astype(np.int64)
    change = thinking[col] - thinking[row]
    if np.any(np.abs(change) > 1):
        raise ModelError(f"a transition moves more than one token of {think_place!r}: "
                         f"cannot tell job arrivals and completions apart")
    if thinking.max(initial=0) > users or thinking.min(initial=0) < 0:
        raise ModelError(f"{think_place!r} holds more than users={users} tokens")
    completes = change == 1
    arrives = change == -1
    _check_completions(ss, row[completes], rate[completes], end_activity)

    # transient states (s, k), 1 <= k <= N - think(s), numbered level by level
    room = users - thinking                       # jobs in the system in marking s
    levels = range(1, users + 1)
    members = [np.flatnonzero(room >= k) for k in levels]
    offsets = np.cumsum([0] + [m.size for m in members])
    total = int(offsets[-1])

    def position(k, states):                      # transient index of (states, k); k >= 1
        m = members[k - 1]
        where = np.searchsorted(m, states)
        bad = (where >= m.size) | (m[np.minimum(where, m.size - 1)] != states)
        if bad.any():
            raise ModelError("internal error: the tagged job's counter left its range")
        return offsets[k - 1] + where

    rows, cols, vals = [], [], []
    for k in levels:
        src_ok = room[row] >= k
        # transitions that do not complete the tagged job
        stay = src_ok & ~(completes & (k == 1))
        r, c, v = row[stay], col[stay], rate[stay]
        k_next = np.where(completes[stay], k - 1, k)
        rows.append(position(k, r))
        tgt = np.empty(r.size, dtype=np.int64)
        for k2 in np.unique(k_next):
            sel = k_next == k2
            tgt[sel] = position(int(k2), c[sel])
        cols.append(tgt)
        vals.append(v)
        # the diagonal: leaving s at all
        rows.append(offsets[k - 1] + np.arange(members[k - 1].size))
        cols.append(offsets[k - 1] + np.arange(members[k - 1].size))
        vals.append(diagonal[members[k - 1]])
    QT = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(total, total))
    QT.sum_duplicates()

    # entry: arrival-weighted landing states, k = N - think(s')
    weight = pi[row[arrives]] * rate[arrives]
    landing = col[arrives]
    arrival_rate = float(weight.sum())
    completion_rate = float(np.dot(pi[row[completes]], rate[completes]))
    if not arrival_rate > 0:
        raise ModelError("no job ever arrives in steady state (the arrival rate is 0)")
    alpha = np.zeros(total)
    np.add.at(alpha, _position_by_level(position, room[landing], landing), weight)
    alpha /= arrival_rate
    state = np.concatenate(members) if total else np.empty(0, dtype=np.int64)
    ahead = np.repeat(np.arange(1, users + 1), [m.size for m in members])
    return PassageChain(QT, alpha, state, ahead, arrival_rate, completion_rate)


def _position_by_level(position, ks, states):
    """Transient indices of (states[i], ks[i]) through ``position(k, states)``."""
    out = np.empty(len(states), dtype=np.int64)
    for k in np.unique(ks):
        sel = ks == k
        out[sel] = position(int(k), states[sel])
    return out


def _check_completions(ss, rows, rates, end_activity):
    """The completions read from the think place must be the firings of the end activity, state by state."""
    name = ss.net.activity(end_activity).name          # (an Erlang activity answers by its last stage)
    instant = [a.name for a in ss.net.instant]
    if name in instant:
        column = ss.impulses.tocsc()[:, [instant.index(name)]]
    else:
        column = ss.timed_rates.tocsc()[:, [[a.name for a in ss.net.timed].index(name)]]
    expected = np.asarray(column.todense()).ravel()
    found = np.bincount(rows, weights=rates, minlength=ss.n_states)
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-300)
    if np.abs(found - expected).max(initial=0.0) > 1e-9 * scale:
        raise ModelError(f"the firings of {end_activity!r} are not the transitions that return a token "
                         f"to the think place: cannot tag a job in this net")


def _poisson_pmf(k: np.ndarray, mu: float) -> np.ndarray:
    """P(Poisson(mu) = k), in logarithms (scipy.stats would add 1-2 s of imports to an answer).

    >>> _poisson_pmf(np.arange(3), 2.0).round(6).tolist()
    [0.135335, 0.270671, 0.270671]
    """
    from scipy.special import gammaln, xlogy

    return np.exp(xlogy(k, mu) - mu - gammaln(k + 1.0))


# --------------------------------------------------------------------------- the solution
@dataclass(frozen=True)
class PassageDistribution:
    """What every passage-time result has: ``mean``, ``std``; ``converged`` (``residual``, the
    probability ``P(T > t)`` where the computation stopped, is at most its ``atol``), ``status``,
    ``message``, ``niter`` (its steps), ``seconds``, ``n_states`` (transient states); and, from the
    ``sf(t)`` = ``P(T > t)`` of each method, the CDF, quantiles, percentiles and a grid."""

    mean: float
    std: float
    converged: bool
    status: int
    message: str
    niter: int
    residual: float
    seconds: float
    n_states: int

    def cdf(self, t):
        """P(T <= t)."""
        return 1.0 - self.sf(t) if np.ndim(t) == 0 else 1.0 - np.asarray(self.sf(t))

    def quantile(self, p: float) -> float:
        """The smallest t with P(T <= t) >= p, for 0 < p < 1 (to ~1e-10 relative)."""
        p = float(p)
        if not 0 < p < 1:
            raise ModelError(f"a quantile needs 0 < p < 1, got {p!r}")
        if 1 - p <= 10 * self.residual:
            raise ModelError(f"the {100 * p:g}th percentile is beyond the accuracy of the distribution "
                             f"(truncated at P(T > t) <= {self.residual:.2g}); lower atol")
        from scipy.optimize import brentq      # only here: 1-2 s of imports a mean need not pay

        target = 1.0 - p
        if self.sf(0.0) <= target:
            return 0.0
        hi = max(self.mean, 1e-12)
        while self.sf(hi) > target:
            hi *= 2.0
        lo = hi / 2.0 if self.sf(hi / 2.0) > target else 0.0
        return float(brentq(lambda t: self.sf(t) - target, lo, hi, xtol=1e-12 * hi, rtol=1e-12))

    def percentiles(self, qs: Iterable[float] = DEFAULT_PERCENTILES) -> dict[float, float]:
        """``{q: t}`` for percentiles q in (0, 100)."""
        return {float(q): self.quantile(float(q) / 100.0) for q in qs}

    def grid(self, points: int = 101, t_max: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(t, F(t))`` on ``points`` evenly spaced times from 0 to ``t_max`` (default: the 99.9th
        percentile, or as far as the accuracy allows)."""
        if t_max is None:
            t_max = self.quantile(0.999) if self.residual < 1e-4 else self.quantile(1 - 1e3 * self.residual)
        t = np.linspace(0.0, float(t_max), int(points))
        return t, self.cdf(t)


@dataclass(frozen=True)
class PassageTimeResult(PassageDistribution):
    """First-passage time distribution (shaped like SciPy's ``OptimizeResult``).

    ``x``: the survival sequence ``s_k = alpha P^k 1`` of the uniformised chain
    (``x[0] = 1``); ``rate``: the uniformisation rate q; ``mean``, ``std``: moments
    of the passage time (from ``x``, with the geometric tail after the last step
    added); ``converged``: ``residual = x[-1] <= atol``; ``niter``: steps (matrix-
    vector products); ``seconds``: wall time; ``n_states``: transient states.

    ``sf(t)``, ``cdf(t)``, ``pdf(t)`` evaluate the distribution at any times
    (error at most ``residual``), ``quantile(p)`` inverts the CDF,
    ``percentiles([50, 90])`` returns ``{50.0: t50, 90.0: t90}``, and ``grid(points)``
    returns times from 0 to the 99.9th percentile with their CDF values.
    """

    x: np.ndarray
    rate: float
    method: str = "uniformisation"

    # ---- evaluation
    def sf(self, t):
        """P(T > t), for a number or an array of times."""
        t = np.asarray(t, dtype=float)
        flat = np.atleast_1d(t).ravel()
        out = np.empty(flat.size)
        s = self.x
        K = s.size
        for i, ti in enumerate(flat):
            if ti <= 0:
                out[i] = 1.0
                continue
            mu = self.rate * ti
            lo = max(0, int(mu - _WINDOW_SD * math.sqrt(mu) - 30))
            hi = int(mu + _WINDOW_SD * math.sqrt(mu) + 30)
            if lo >= K:
                out[i] = 0.0
                continue
            k = np.arange(lo, min(hi, K - 1) + 1)
            out[i] = float(np.dot(_poisson_pmf(k, mu), s[k]))
        out = np.clip(out, 0.0, 1.0)
        return out.reshape(t.shape) if t.ndim else float(out[0])

    def pdf(self, t):
        """Density of T: q * sum_k Poisson(k; q t) (s_k - s_{k+1})."""
        t = np.asarray(t, dtype=float)
        drop = -np.diff(np.append(self.x, 0.0))
        flat = np.atleast_1d(t).ravel()
        out = np.array([float(self.rate * np.dot(_poisson_pmf(np.arange(drop.size), self.rate * ti), drop))
                        if ti >= 0 else 0.0 for ti in flat])
        return out.reshape(t.shape) if t.ndim else float(out[0])


def passage_time(Q, alpha, *, atol: float = 1e-12, maxiter: int | None = None,
                 callback: Callable | None = None, method: str = "auto"):
    """Time to absorption of a CTMC with transient sub-generator ``Q``, started in ``alpha``.

    Uniformisation with ``q = max_i |Q_ii|``: with the substochastic ``P = I + Q/q`` and
    ``s_k = alpha P^k 1`` (the probability of not being absorbed after k jumps of the
    uniformised chain), ::

        P(T > t) = sum_k Poisson(k; q t) s_k,      E[T] = (1/q) sum_k s_k.

    ``s_k`` does not depend on t, so one pass of matrix-vector products gives the whole
    distribution. Stopping rule (``s_k`` never increases, so the truncation error of
    P(T > t) is at most ``s_K`` for *every* t)::

        converged  <=>  s_K <= atol

    ``maxiter`` caps K (default 2,000,000); ``callback(niter, x, residual)`` is called
    every 1000 steps with the current row vector. Never raises on non-convergence:
    check ``converged``.

    ``method``: ``"uniformisation"``, ``"bdf"`` (:mod:`spn.solvers.passage_stiff`, for stiff
    chains: a :class:`~spn.solvers.passage_stiff.StiffPassageResult`), or ``"auto"``:
    uniformisation, unless after :data:`PROBE_STEPS` steps the decay of ``s_k`` so far says
    it would not reach ``atol`` within ``maxiter`` (then BDF takes over).

    >>> import numpy as np, scipy.sparse as sp
    >>> Q = sp.csr_matrix([[-1.0, 1.0], [0.0, -1.0]])        # Erlang(2, rate 1)
    >>> r = passage_time(Q, np.array([1.0, 0.0]))
    >>> round(r.mean, 9), round(r.std ** 2, 9), r.converged
    (2.0, 2.0, True)
    """
    started = time.perf_counter()
    Q = sp.csr_matrix(Q, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    n = Q.shape[0]
    if Q.shape != (n, n) or alpha.shape != (n,):
        raise ValueError(f"Q must be square and alpha match it, got {Q.shape} and {alpha.shape}")
    if method not in ("auto", "uniformisation", "bdf"):
        raise ValueError(f"unknown passage-time method {method!r}: auto, uniformisation or bdf")
    maxiter = DEFAULT_MAXITER if maxiter is None else int(maxiter)
    mass = float(alpha.sum())
    if method == "bdf" and n and mass > 0:
        from spn.solvers.passage_stiff import stiff_passage_time

        return stiff_passage_time(Q, alpha, atol=atol, callback=callback)
    if n == 0 or mass <= 0:
        return _result(np.array([1.0, 0.0]) if n == 0 else np.array([mass]), 1.0, 0, True, 0.0, n, started)
    q = float(np.abs(Q.diagonal()).max())
    if not q > 0:
        return _result(np.array([1.0]), 1.0, 0, False, 1.0, n, started,
                       message="the chain has no transition out of its transient states")
    PT = (sp.identity(n, format="csr") + Q / q).T.tocsr()
    v = alpha / mass
    s = [1.0]
    k = 0
    probe = PROBE_STEPS if method == "auto" else None
    while s[-1] > atol and k < maxiter:
        v = PT @ v
        k += 1
        s.append(float(v.sum()))
        if callback is not None and k % 1000 == 0:
            callback(k, v, s[-1])
        if k == probe and _steps_needed(s, atol) > maxiter:
            return passage_time(Q, alpha, atol=atol, callback=callback, method="bdf")
    seq = np.maximum(np.minimum.accumulate(np.array(s)), 0.0)   # rounding never lets s_k grow
    return _result(seq, q, k, bool(seq[-1] <= atol), float(seq[-1]), n, started)


def _steps_needed(s: list, atol: float) -> float:
    """Uniformisation steps to reach ``s_K <= atol``, if ``s_k`` went on decaying as over its last half."""
    k = len(s) - 1
    if s[-1] <= atol:
        return k
    ratio = s[-1] / s[k // 2] if s[k // 2] > 0 else 0.0
    if ratio >= 1.0:
        return math.inf
    return k + (k - k // 2) * math.log(atol / s[-1]) / math.log(ratio)


def _result(seq, q, niter, converged, residual, n, started, message=None):
    # moments of T = sum of K exponential(q) steps: E[T] = sum s_k / q,
    # E[T^2] = 2 sum (k+1) s_k / q^2; the geometric tail after the last step is added
    k = np.arange(seq.size, dtype=float)
    head1, head2 = seq.sum(), ((k + 1) * seq).sum()
    tail1 = tail2 = 0.0
    if seq.size >= 2 and seq[-1] > 0 and seq[-2] > 0:
        rho = min(seq[-1] / seq[-2], 1 - 1e-15)
        K = seq.size - 1
        tail1 = seq[-1] * rho / (1 - rho)
        tail2 = seq[-1] * (rho * (K + 2) / (1 - rho) + rho ** 2 / (1 - rho) ** 2)
    mean = (head1 + tail1) / q
    second = 2 * (head2 + tail2) / q ** 2
    std = math.sqrt(max(second - mean ** 2, 0.0))
    if message is None:
        message = ("converged" if converged else
                   f"maxiter reached with P(still running) = {residual:.3g} after {niter:,} steps, which cover "
                   f"{niter / q:.3g} s at the chain's fastest rate q = {q:.3g}/s: uniformisation takes about q t "
                   f"steps to reach time t, so a chain whose rates lie far apart (stiff) is beyond it: "
                   f"method 'bdf' integrates such chains, and the steady-state measures need neither")
    return PassageTimeResult(x=seq, rate=q, mean=float(mean), std=std, converged=converged,
                             status=0 if converged else 1, message=message, niter=int(niter),
                             residual=float(residual), seconds=time.perf_counter() - started, n_states=n)


# --------------------------------------------------------------------------- the high-level call
def execution_time_distribution(ss, pi, *, users: int, end_activity: str, think_place: str,
                                atol: float = 1e-12, maxiter: int | None = None,
                                raise_on_nonconvergence: bool = True, callback: Callable | None = None
                                ) -> PassageTimeResult:
    """Distribution of a tagged job's execution time (from its arrival to its completion) in steady state.

    The arguments of the chain are those of :func:`tagged_job_chain`.

    Raises :class:`ConvergenceError` when the uniformisation does not reach ``atol``
    within ``maxiter`` steps, unless told otherwise. ``callback`` as in :func:`passage_time`.

    >>> from spn.models.mapreduce import mapreduce_net
    >>> from spn.statespace import explore
    >>> from spn.solvers import steady_state
    >>> ss = explore(mapreduce_net(users=1, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
    ...                            reduce_tasks=4, reduce_time=3.0))
    >>> d = execution_time_distribution(ss, steady_state(ss.generator()).x, users=1, end_activity="IAFR",
    ...                                 think_place="PJ")
    >>> round(d.mean, 6), round(d.quantile(0.5), 3)
    (10.416667, 9.733)
    """
    chain = tagged_job_chain(ss, pi, users=users, end_activity=end_activity, think_place=think_place)
    result = passage_time(chain.Q, chain.alpha, atol=atol, maxiter=maxiter, callback=callback)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    return result
