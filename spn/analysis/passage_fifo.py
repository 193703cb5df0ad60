"""One job's execution time under fifo, from the decomposition's X(k): the time from its arrival to its
end, a passage time of an absorbing chain that follows the job tagged.

The job arrives while its N − 1 fellow users' jobs are in state s of the fifo chain
(:func:`~spn.analysis.chains.oldest_two`: n of them in the cluster, the oldest at stage j1) with probability
π(s) · (N − n(s)) / Σ: the chain's stationary law weighted by its arrival rate in s (its arrival-instant
law; in a product-form network the arrival theorem says the same: π of the chain with N − 1 users). It
enters behind them, at position p = n + 1. Under fifo the jobs behind a job never slow it, so the p oldest
jobs complete X(p) jobs/s whoever is behind them, and the job at position p progresses at what it adds,
X(p) − X(p − 1). The absorbing chain (:func:`fifo_passage_chain`) follows (p, j1, j):

- the oldest at stage j1 of r, at r · X(1) (as if alone); when it ends, the tagged job moves up, and the
  second becomes the oldest at the stage its progress there reached (:func:`landing`);
- the jobs between the oldest and the tagged one end at X(p − 1) − X(2) plus the rate the second ends
  at (memoryless), and the tagged job moves up;
- the tagged job's own work, r stages at r · (X(p) − X(p − 1)) (r · X(1) once oldest): a job alone's
  Erlang wherever X(k) = k X(1) (jobs side by side), and it waits still where X is flat (jobs in a row).

One server with exponential one-task jobs, or c servers (M/M/c//N), is the exact chain's law. Solved by
uniformisation (:func:`spn.solvers.passage.passage_time`).

>>> from spn.analysis.chains import oldest_two_stationary
>>> [(x, pi)] = oldest_two_stationary(1, 1.0, [0.0, 0.5], 3)      # one user: the job alone, Erlang(3, 1.5)
>>> d = fifo_passage(1, 1.0, [0.0, 0.5], 3, 3, pi)
>>> round(d.mean, 6), round(d.cdf(2.0), 6)      # P(Erlang(3, 1.5) <= 2) = 1 − e⁻³ (1 + 3 + 9/2)
(2.0, 0.57681)
"""

from __future__ import annotations

import numpy as np

__all__ = ["fifo_passage", "fifo_passage_chain", "landing", "wait_law", "OwnLaw", "shared_passage", "stages_law",
           "EmpiricalLaw", "flat_from", "likely_top", "PASSAGE_ATOL"]

#: P(still running) at which the uniformisation stops: far below the percentiles asked (up to p99.9)
PASSAGE_ATOL = 1e-8
#: the probability of more jobs in the cluster than the passage chain follows (:func:`likely_top`)
TAIL = 1e-10


def flat_from(rates) -> int:
    """The least k from which every row of ``rates`` (X(0..N)) is constant.

    >>> flat_from([0.0, 1.0, 1.5, 1.5]), flat_from([[0.0, 1.0, 1.0], [0.0, 1.0, 1.2]])
    (2, 2)
    """
    rates = np.atleast_2d(np.asarray(rates, dtype=float))
    k = rates.shape[1] - 1
    while k > 1 and np.all(rates[:, k - 1] == rates[:, k]):
        k -= 1
    return k


def likely_top(N: int, pis, r: int, r2: int, tail: float = TAIL) -> int:
    """The jobs in the cluster that the fifo chain (stationary laws ``pis``) passes with probability
    ``tail`` at most, in any of them: the passage chain need not follow more.

    >>> likely_top(2, [[0.2, 0.4, 0.4]], 1, 1), likely_top(2, [[0.5, 0.5, 0.0]], 1, 1)
    (2, 1)
    """
    top = 1
    for pi in np.atleast_2d(np.asarray(pis, dtype=float)):
        levels = np.concatenate([[pi[0], pi[1:1 + r].sum()], pi[1 + r:].reshape(N - 1, r * r2).sum(axis=1)])
        above = levels[::-1].cumsum()[::-1]               # P(at least n jobs)
        top = max(top, int(np.flatnonzero(above > tail).max()))
    return min(top, N)


def fifo_passage(N: int, Z: float, rates, r: int, r2: int, pi, *, flat: int | None = None,
                 top: int | None = None, atol: float = PASSAGE_ATOL, deadline: float | None = None):
    """The execution-time law of a job under fifo, the fifo chain (stages r, r2: :func:`~spn.analysis.chains.
    oldest_two`) in stationary law ``pi`` at its arrival: a :class:`~spn.solvers.passage.PassageTimeResult`
    (``mean``, ``cdf``, ``percentiles``...). ``flat``: X is constant from there on (default :func:`flat_from`
    ``(rates)``); ``top``: the most jobs in the cluster it follows (default N; arrivals past it are dropped);
    past ``deadline`` (a :func:`time.perf_counter` instant), :class:`~spn.exceptions.SpnError`.

    >>> from spn.analysis.chains import oldest_two_stationary
    >>> [(x, pi)] = oldest_two_stationary(2, 1.0, [0.0, 1.0, 1.0], 1)     # M/M/1//2
    >>> round(fifo_passage(2, 1.0, [0.0, 1.0, 1.0], 1, 1, pi).mean, 6), round(2 / x - 1, 6)
    (1.5, 1.5)
    """
    Q, alpha = fifo_passage_chain(N, Z, rates, r, r2, pi, flat=flat, top=top)
    return _solved(Q, alpha, atol, deadline)


def _solved(Q, alpha, atol: float, deadline: float | None):
    """Uniformisation, stopped (:class:`SpnError`) once past ``deadline``: it looks every 1,000 steps."""
    import time

    from spn.exceptions import SpnError
    from spn.solvers.passage import passage_time

    def watch(niter, x, residual):
        if deadline is not None and time.perf_counter() > deadline:
            raise SpnError(f"a job's execution-time law took longer than the time given ({niter:,} steps of "
                           f"{Q.shape[0]:,} states)")
    return passage_time(Q, alpha, atol=atol, method="uniformisation", callback=watch)


def landing(rates, r: int, r2: int) -> tuple[np.ndarray, float]:
    """(L, c): the law L over the oldest's r stages at which the second job starts as the oldest, and the rate
    c at which the second ends before the oldest, in the two oldest's chain of a crowded cluster: the oldest
    at r · X(1), the second in r2 stages at r2 · (X(2) − X(1)), a job behind always there to replace either.

    >>> L, c = landing([0.0, 1.0, 1.0], 4, 2)           # X flat: the second never progresses
    >>> L.tolist(), c
    ([1.0, 0.0, 0.0, 0.0], 0.0)
    """
    from scipy.sparse import coo_matrix, diags
    from scipy.sparse.linalg import spsolve

    from spn.analysis.chains import promotion

    rates = np.asarray(rates, dtype=float)
    x1, rate2 = rates[1], r2 * max(rates[min(2, rates.size - 1)] - rates[1], 0.0)
    j1, j2 = (a.ravel() for a in np.meshgrid(np.arange(r), np.arange(r2), indexing="ij"))
    here = j1 * r2 + j2
    step1, step2 = j1 < r - 1, j2 < r2 - 1
    promoted, beyond = promotion(j2, r, r2)
    ends = ~step1                       # the oldest ends: the second is the oldest, the next job second at 0
    rows = np.concatenate([here[step1], here[ends], here[ends], here[step2], here[~step2]])
    cols = np.concatenate([here[step1] + r2, promoted[ends] * r2, np.minimum(promoted[ends] + 1, r - 1) * r2,
                           here[step2] + 1, here[~step2] - j2[~step2]])
    vals = np.concatenate([np.full(step1.sum(), r * x1), r * x1 * (1 - beyond[ends]), r * x1 * beyond[ends],
                           np.full(step2.sum(), rate2), np.full((~step2).sum(), rate2)])
    size = r * r2
    Q = coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsr()
    A = (Q - diags(np.asarray(Q.sum(axis=1)).ravel())).T.tolil()
    A[0, :] = 1.0                                     # Σ π = 1 in place of one balance equation
    b = np.zeros(size)
    b[0] = 1.0
    pi = spsolve(A.tocsc(), b).reshape(r, r2)
    at_end = pi[r - 1] / pi[r - 1].sum()              # the second's stage as the oldest ends
    L = np.zeros(r)
    np.add.at(L, promoted[:r2], at_end * (1 - beyond[:r2]))
    np.add.at(L, np.minimum(promoted[:r2] + 1, r - 1), at_end * beyond[:r2])
    return L, float(pi[:, r2 - 1].sum() * rate2)


def fifo_passage_chain(N: int, Z: float, rates, r: int, r2: int, pi, *, flat: int | None = None,
                       top: int | None = None):
    """(Q, α): the sub-generator (CSR) of the tagged job's absorbing chain and its law at arrival.

    States: 0..r − 1 the tagged job oldest at that stage; then, for p = 2..``top``, one block of states
    (j1, j), the oldest's stage and the tagged job's, j < r up to ``flat`` and j = 0 past it (where X is
    flat the tagged job cannot have progressed: it arrived at stage 0 and only moves up).

    >>> Q, alpha = fifo_passage_chain(2, 1.0, [0.0, 1.0, 1.0], 1, 1, [0.2, 0.4, 0.4])
    >>> Q.toarray().tolist(), alpha.tolist()       # oldest; second (the oldest ahead ends at 1/s)
    ([[-1.0, 0.0], [1.0, -1.0]], [0.5, 0.5])
    """
    from scipy.sparse import coo_matrix, diags

    rates = np.asarray(rates, dtype=float)
    pi = np.asarray(pi, dtype=float)
    flat = flat_from(rates) if flat is None else int(flat)
    top = N if top is None else min(int(top), N)
    own = {p: r if p <= flat else 1 for p in range(2, top + 1)}     # the tagged job's stages followed at p
    start = {}
    size = r
    for p in range(2, top + 1):
        start[p], size = size, size + r * own[p]
    rows, cols, vals, out = [], [], [], np.zeros(size)

    def add(a, b, v):
        a, b, v = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(v, dtype=float))
        rows.append(a.ravel())
        cols.append(b.ravel())
        vals.append(v.ravel())

    x1 = rates[1]
    j = np.arange(r)
    add(j[:-1], j[1:], r * x1)                          # the tagged job, oldest, as if alone
    out[r - 1] += r * x1
    L, second_ends = landing(rates, r, r2) if top >= 3 else (None, 0.0)
    for p in range(2, top + 1):
        m = own[p]
        j1, jt = (a.ravel() for a in np.meshgrid(j, np.arange(m), indexing="ij"))
        here = start[p] + j1 * m + jt
        step1 = j1 < r - 1
        add(here[step1], here[step1] + m, r * x1)
        ends = ~step1                                    # the oldest ends
        if p == 2:                                       # the tagged job is the oldest, at its own stage
            add(here[ends], jt[ends], r * x1)
        else:                                            # it moves up; the second is the oldest, at L
            for k in np.flatnonzero(L):
                add(here[ends], start[p - 1] + k * own[p - 1] + jt[ends], r * x1 * L[k])
            # a job between ends: the second (at its rate) or one behind it (what it adds to X)
            add(here, start[p - 1] + j1 * own[p - 1] + jt, second_ends + max(rates[p - 1] - rates[2], 0.0))
        rate = r * max(rates[p] - rates[p - 1], 0.0)     # what the tagged job adds
        if rate > 0:
            step = jt < m - 1
            add(here[step], here[step] + 1, rate)
            out[here[~step]] += rate
    rows, cols, vals = (np.concatenate(v) for v in (rows, cols, vals))
    moves = vals > 0
    Q = coo_matrix((vals[moves], (rows[moves].astype(int), cols[moves].astype(int))), shape=(size, size)).tocsr()
    Q = (Q - diags(np.asarray(Q.sum(axis=1)).ravel() + out)).tocsr()
    return Q, _arrivals(top, N, pi, r, r2, start, own, size)


def _arrivals(top: int, N: int, pi: np.ndarray, r: int, r2: int, start: dict, own: dict, size: int) -> np.ndarray:
    """α: the tagged job's state at its arrival (its own stage 0), behind at most ``top`` − 1 others."""
    weights = _arriving(N, pi, r, r2)
    alpha = np.zeros(size)
    alpha[0] = weights[0, 0]                             # into the empty cluster
    for n in range(1, top):                              # behind n jobs, the oldest at stage j1
        alpha[start[n + 1] + np.arange(r) * own[n + 1]] = weights[n]
    return alpha / alpha.sum()


def _arriving(N: int, pi: np.ndarray, r: int, r2: int) -> np.ndarray:
    """(N, r): the weight π(s) · (N − n(s)) of a job arriving behind n = 0..N − 1 others with the oldest at
    stage j1, from the fifo chain's state s = (n, j1, j2), the second's stage j2 summed out (row 0: the
    empty cluster, in its first column)."""
    weights = np.zeros((N, r))
    weights[0, 0] = pi[0] * N
    if N >= 2:
        weights[1] = pi[1:1 + r] * (N - 1)
    level = r * r2
    for n in range(2, N):
        s = 1 + r + (n - 2) * level
        weights[n] = pi[s:s + level].reshape(r, r2).sum(axis=1) * (N - n)
    return weights


def wait_law(N: int, Z: float, rates, r: int, r2: int, pi, *, deadline: float | None = None):
    """(a, W): a job's wait for the jobs ahead until it adds half a job alone's speed or more to X
    (X(p) − X(p − 1) >= X(1) / 2 at its position p): P(no wait) ``a``, and the law of a wait, if any, in
    the moves of :func:`fifo_passage_chain` with the job's own stages left out (None: it never waits).

    >>> from spn.analysis.chains import oldest_two_stationary
    >>> [(x, pi)] = oldest_two_stationary(2, 1.0, [0.0, 1.0, 1.0], 1)     # M/M/1//2: waits behind one job
    >>> a, W = wait_law(2, 1.0, [0.0, 1.0, 1.0], 1, 1, pi)
    >>> round(a, 6), round(W.mean, 6)         # the other job is there half the time (one user's chain)
    (0.5, 1.0)
    """
    from scipy.sparse import coo_matrix, diags

    rates = np.asarray(rates, dtype=float)
    pi = np.asarray(pi, dtype=float)
    x1 = rates[1]
    waits = [p for p in range(2, N + 1) if rates[p] - rates[p - 1] < x1 / 2]
    start = {p: i * r for i, p in enumerate(waits)}
    size = r * len(waits)
    L, second_ends = landing(rates, r, r2) if N >= 3 else (None, 0.0)
    rows, cols, vals, out = [], [], [], np.zeros(size)
    j = np.arange(r)
    for p in waits:
        here = start[p] + j
        rows.append(here[:-1]), cols.append(here[1:]), vals.append(np.full(r - 1, r * x1))
        if p - 1 in start:                               # the oldest ends: it moves up, still waiting
            for k in np.flatnonzero(L):
                rows.append(here[-1:]), cols.append([start[p - 1] + k]), vals.append([r * x1 * L[k]])
        else:
            out[here[-1]] += r * x1
        between = second_ends + max(rates[p - 1] - rates[2], 0.0) if p >= 3 else 0.0
        if p - 1 in start:
            rows.append(here), cols.append(start[p - 1] + j), vals.append(np.full(r, between))
        else:
            out[here] += between
    weights = _arriving(N, pi, r, r2)                   # at its arrival, at position n + 1 behind n others
    alpha = np.zeros(size)
    for p in waits:
        alpha[start[p] + j] = weights[p - 1] / weights.sum()
    if alpha.sum() <= 0:
        return 1.0, None
    rows, cols, vals = (np.concatenate([np.asarray(v, dtype=float) for v in x]) for x in (rows, cols, vals))
    moves = vals > 0
    Q = coo_matrix((vals[moves], (rows[moves].astype(int), cols[moves].astype(int))), shape=(size, size)).tocsr()
    Q = (Q - diags(np.asarray(Q.sum(axis=1)).ravel() + out)).tocsr()
    waited = float(alpha.sum())
    return 1.0 - waited, _solved(Q, alpha / waited, PASSAGE_ATOL, deadline)


class OwnLaw:
    """How a job's own law alone moves the percentiles of its law in the chain, whose own work is the
    Erlang E of its stages: ``c(q) = Q_{W+S}(q) / E[W + S] − Q_{W+E}(q) / E[W + E]``, W its wait
    (:func:`wait_law`, independent of S), S its law alone. A law's percentile t(q) becomes
    t(q) + mean · c(q), its mean unchanged (E c = 0). Where a job waits, then runs at its speed alone
    (X(k) = k X(1) up to some k, flat past it), the chain's law is W + E and the corrected one W + S.

    >>> own = OwnLaw(1.0, None, stages_law([2.0, 2.0]), stages_law([2.0, 2.0]))   # S = E: nothing moves
    >>> round(own(0.9), 12)
    0.0
    """

    def __init__(self, no_wait: float, wait, erlang, alone):
        self.no_wait = no_wait
        if wait is None:
            self.grid, self.waited = np.array([0.0, 1.0]), np.array([1.0, 1.0])
        else:
            self.grid = np.linspace(0.0, float(wait.quantile(1 - 1e-6)), 801)
            self.waited = np.asarray(wait.cdf(self.grid))
        wait_mean = 0.0 if wait is None else (1 - no_wait) * wait.mean
        self.sums = [(samples, float(samples.mean()) + wait_mean) for samples in map(_samples, (alone, erlang))]

    def __call__(self, q):
        """c(q), for one q or an array of them (0 < q < 1)."""
        (s, m), (e, me) = self.sums
        return self._quantiles(s, q) / m - self._quantiles(e, q) / me

    def _quantiles(self, samples, q):
        """Percentiles ``q`` of W + (a time of ``samples``): bisection on its CDF, every q at once."""
        q = np.asarray(q, dtype=float)
        low = np.full(q.shape, float(samples.min()))
        high = np.full(q.shape, float(samples.max()) + float(self.grid[-1]))
        for _ in range(60):
            mid = (low + high) / 2
            left = mid[..., None] - samples
            waited = self.no_wait + (1 - self.no_wait) * np.interp(left, self.grid, self.waited, right=1.0)
            below = np.mean(np.where(left >= 0, waited, 0.0), axis=-1) < q
            low, high = np.where(below, mid, low), np.where(below, high, mid)
        return high if high.ndim else float(high)

    def quantile(self, law, q: float) -> float:
        """Percentile ``q`` (0 < q < 1) of ``law`` corrected."""
        return self.quantiles([law], q)[0]

    def quantiles(self, laws, q: float) -> list:
        """Percentile ``q`` of each of ``laws`` corrected (c(q) found once for them all)."""
        c = self(q)
        return [float(law.quantile(q)) + law.mean * c for law in laws]

    def cdf(self, law, t: float) -> float:
        """P(T <= t) of ``law`` corrected: the q whose corrected percentile is t."""
        return self.cdfs([law], t)[0]

    def cdfs(self, laws, t: float) -> list:
        """P(T <= t) of each of ``laws`` corrected, by bisection on q, every law's step at once (one c for
        them all)."""
        def moved(qs):
            return np.array([float(law.quantile(q)) + law.mean * c for law, q, c in zip(laws, qs, self(qs))])

        low, high = np.full(len(laws), 1e-6), np.full(len(laws), 1 - 1e-6)   # within the laws' accuracy
        below, above = moved(low) > t, moved(high) <= t
        for _ in range(40):
            mid = (low + high) / 2
            under = moved(mid) <= t
            low, high = np.where(under, mid, low), np.where(under, high, mid)
        return [0.0 if b else 1.0 if a else float(q) for b, a, q in zip(below, above, low)]

    def std(self, law, points: int = 100) -> float:
        """The standard deviation of ``law`` corrected (its mean is the law's): the law's own, changed by what
        the move changes in the variance of its percentiles at (i + 1/2) / ``points`` (so that what those
        points leave out of the tails cancels)."""
        u = (np.arange(points) + 0.5) / points
        t = _percentiles_at(law, u)
        moved = t + law.mean * self(u)
        change = np.mean((moved - law.mean) ** 2) - np.mean((t - law.mean) ** 2)
        return float(np.sqrt(max(law.std ** 2 + change, 0.0)))


def _samples(law, n: int = 400) -> np.ndarray:
    """n equally likely times of ``law``: a sample's own, else its percentiles at (i + 1/2) / n."""
    if hasattr(law, "times"):
        return np.asarray(law.times, dtype=float)
    return _percentiles_at(law, (np.arange(n) + 0.5) / n)


def _percentiles_at(law, u: np.ndarray) -> np.ndarray:
    """``law``'s percentiles at the probabilities ``u``, its CDF inverted on 801 points of its 1e-6 to
    1 − 1e-6 range (one CDF evaluation for them all, where a quantile each would bisect)."""
    grid = np.linspace(float(law.quantile(1e-6)), float(law.quantile(1 - 1e-6)), 801)
    return np.interp(u, np.asarray(law.cdf(grid)), grid)


def shared_passage(N: int, Z: float, rates, r: int, *, atol: float = PASSAGE_ATOL, deadline: float | None = None):
    """A job's execution-time law under processor sharing, the other end of the model's error: the
    birth-death chain (:func:`~spn.analysis.chains.birth_death`) with one job tagged, its work in ``r``
    Erlang stages at r · X(m) / m with m jobs, the others ending at X(m) (m − 1) / m (memoryless, as
    there). It arrives as in :func:`fifo_passage`, to the chain's law weighted by N − n; ``deadline``
    as there.

    >>> d = shared_passage(2, 1.0, [0.0, 1.0, 1.0], 1)       # M/M/1//2: processor sharing has fifo's mean
    >>> round(d.mean, 6)
    1.5
    """
    from scipy.sparse import coo_matrix, diags

    from spn.analysis.chains import _levels

    rates = np.asarray(rates, dtype=float)
    m = np.repeat(np.arange(1, N + 1), r)               # state (m − 1) r + j: m jobs, the tagged one at stage j
    j = np.tile(np.arange(r), N)
    here = np.arange(N * r)
    share = rates[m] / m
    rows, cols, vals = [], [], []
    for on, to, rate in (((m < N), here + r, (N - m) / Z),                 # an arrival
                         ((m > 1), here - r, share * (m - 1)),             # another job ends
                         ((j < r - 1), here + 1, r * share)):              # the tagged job advances
        rows.append(here[on])
        cols.append(to[on])
        vals.append(np.broadcast_to(rate, here.shape)[on])
    rows, cols, vals = (np.concatenate(v) for v in (rows, cols, vals))
    Q = coo_matrix((vals, (rows, cols)), shape=(N * r, N * r)).tocsr()
    out = np.where(j == r - 1, r * share, 0.0)
    Q = (Q - diags(np.asarray(Q.sum(axis=1)).ravel() + out)).tocsr()
    levels = _levels(N, Z, rates)[:N] * (N - np.arange(N))     # the others' count at an arrival
    alpha = np.zeros(N * r)
    alpha[np.arange(N) * r] = levels / levels.sum()
    return _solved(Q, alpha, atol, deadline)


def stages_law(rates, *, atol: float = PASSAGE_ATOL):
    """The law of a sum of independent exponential times of ``rates`` (one after another): the Erlang
    of the chain's oldest job (r times r · X(1)), or a job alone where that is exact.

    >>> round(stages_law([2.0, 2.0, 1.0]).mean, 9)
    2.0
    """
    from scipy.sparse import diags

    from spn.solvers.passage import passage_time

    rates = np.asarray(rates, dtype=float)
    Q = diags([-rates, rates[:-1]], [0, 1], format="csr")
    alpha = np.zeros(rates.size)
    alpha[0] = 1.0
    return passage_time(Q, alpha, atol=atol, method="uniformisation")


class EmpiricalLaw:
    """The law of a sample of times: ``mean``, ``std``, ``cdf(t)``, ``quantile(p)`` (interpolated).

    >>> law = EmpiricalLaw([1.0, 2.0, 3.0, 4.0])
    >>> law.mean, law.cdf(2.0), law.quantile(0.5)
    (2.5, 0.5, 2.5)
    """

    def __init__(self, times):
        self.times = np.sort(np.asarray(times, dtype=float))
        self.mean, self.std = float(self.times.mean()), float(self.times.std())

    def cdf(self, t) -> float:
        return float(np.searchsorted(self.times, t, side="right") / self.times.size)

    def quantile(self, p: float) -> float:
        return float(np.quantile(self.times, p))
