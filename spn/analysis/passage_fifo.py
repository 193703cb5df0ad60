"""One job's execution time in the fifo chain of the decomposition (:func:`~spn.analysis.chains.oldest_two`):
the time from its arrival to its end, a passage time of that chain with the job tagged.

The job arrives while its N − 1 fellow users' jobs are in state s of the chain (n of them in the
cluster, the two oldest at stages j1, j2) with probability π(s) · (N − n(s)) / Σ: the chain's stationary
law weighted by its arrival rate in s (the arrival-instant law of this very chain, exact for it; in a
product-form network the arrival theorem says the same: π of the chain with N − 1 users). It enters
behind them, at position p = n + 1, and the absorbing chain (:func:`fifo_passage_chain`) follows

- p = 1, the oldest: its own stage only (it advances at r · X(1) whatever is behind it);
- p >= 2: the stages (j1, j2) of the two oldest (the tagged job itself is the second when p = 2), p,
  and b, the jobs that arrived behind it, which only set the second's rate X(p + b) − X(1): b is
  followed up to where X is flat (past it, b no longer matters).

Each move is one of the chain's own moves, so the passage's mean is the chain's R (Little): the
distribution adds nothing to the mean's assumptions but that the chain's view of who progresses
(the oldest as if alone, the second with what the oldest leaves, the others waiting) holds job by
job, not only for the count. It is solved by uniformisation (:func:`spn.solvers.passage.passage_time`).

>>> from spn.analysis.chains import oldest_two_stationary
>>> [(x, pi)] = oldest_two_stationary(1, 1.0, [0.0, 0.5], 3)      # one user: the job alone, Erlang(3, 1.5)
>>> d = fifo_passage(1, 1.0, [0.0, 0.5], 3, 3, pi)
>>> round(d.mean, 6), round(d.cdf(2.0), 6)      # P(Erlang(3, 1.5) <= 2) = 1 − e⁻³ (1 + 3 + 9/2)
(2.0, 0.57681)
"""

from __future__ import annotations

import numpy as np

__all__ = ["fifo_passage", "fifo_passage_chain", "shared_passage", "stages_law", "EmpiricalLaw", "flat_from",
           "likely_top", "likely_bottom", "PASSAGE_ATOL"]

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


def likely_bottom(N: int, Z: float, rates, pis, r: int, r2: int, tail: float = TAIL) -> int:
    """The fewest jobs in the cluster the passage chain follows while fewer than its ``flat`` − 2 are behind
    the tagged job: states with fewer (rare in a loaded cluster, and the fastest, as the users who think
    submit at (N − n) / Z) are dropped, and the tagged job enters them with probability ``tail`` at most.

    A job spends E[n 1{n < m}] / X <= (m − 1) P(n < m) / X seconds on average in the cluster while fewer
    than m jobs are in (Little), and each visit there lasts 1 / q or more on average (q bounds a state's
    rates), so it enters them (P(n < m) in the stationary laws ``pis``) with probability (m − 1) P(n < m)
    q / X at most; a job arriving there has probability Σ_{n < m − 1} π(n) (N − n) / Σ π(n) (N − n).

    >>> likely_bottom(2, 1.0, [0.0, 1.0, 1.0], [[0.2, 0.4, 0.4]], 1, 1)        # nothing to drop
    0
    """
    rates = np.atleast_2d(np.asarray(rates, dtype=float))
    q = N / Z + (r + r2) * float(rates.max())
    bottom = N
    for pi, x in zip(np.atleast_2d(np.asarray(pis, dtype=float)), rates):
        levels = np.concatenate([[pi[0], pi[1:1 + r].sum()], pi[1 + r:].reshape(N - 1, r * r2).sum(axis=1)])
        n = np.arange(N + 1)
        throughput = float(levels @ x[:N + 1])
        below = np.concatenate([[0.0], levels.cumsum()[:-1]])            # P(n < m), m = 0..N
        arrive = levels * (N - n)
        arriving = np.concatenate([[0.0, 0.0], arrive.cumsum()[:-2]]) / arrive.sum()   # Σ_{n < m − 1}
        bound = np.maximum(n - 1, 0) * below * q / max(throughput, 1e-300) + arriving
        bottom = min(bottom, int(np.flatnonzero(bound <= tail).max()))
    return bottom if bottom > 2 else 0


def fifo_passage(N: int, Z: float, rates, r: int, r2: int, pi, *, flat: int | None = None,
                 top: int | None = None, bottom: int = 0, atol: float = PASSAGE_ATOL,
                 deadline: float | None = None):
    """The execution-time law of a job in :func:`~spn.analysis.chains.oldest_two`'s chain (stages r, r2,
    stationary law ``pi``): a :class:`~spn.solvers.passage.PassageTimeResult` (``mean``, ``cdf``,
    ``percentiles``...). ``flat``: X is constant from there on (default :func:`flat_from` ``(rates)``);
    ``top``: the most jobs in the cluster it follows (default N; past it arrivals are dropped); ``bottom``:
    the fewest while fewer than ``flat`` − 2 are behind the tagged job (:func:`likely_bottom`); past
    ``deadline`` (a :func:`time.perf_counter` instant), :class:`~spn.exceptions.SpnError`.

    >>> from spn.analysis.chains import oldest_two_stationary
    >>> [(x, pi)] = oldest_two_stationary(2, 1.0, [0.0, 1.0, 1.0], 1)     # M/M/1//2
    >>> round(fifo_passage(2, 1.0, [0.0, 1.0, 1.0], 1, 1, pi).mean, 6), round(2 / x - 1, 6)
    (1.5, 1.5)
    """
    Q, alpha = fifo_passage_chain(N, Z, rates, r, r2, pi, flat=flat, top=top, bottom=bottom)
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


def fifo_passage_chain(N: int, Z: float, rates, r: int, r2: int, pi, *, flat: int | None = None,
                       top: int | None = None, bottom: int = 0):
    """(Q, α): the sub-generator (CSR) of the tagged job's absorbing chain and its law at arrival.

    States: 0..r − 1 the tagged job oldest at that stage; then one block of r · r2 states (j1, j2) for
    each (p, b), p = 2..top, b = 0..min(top − p, cap) (b = cap: cap or more, where X(p + b) no longer
    moves; jobs past ``top`` (:func:`likely_top`) are so unlikely that arrivals there are dropped). Blocks
    with b < cap and p + b < ``bottom`` (:func:`likely_bottom`) are left out: the mass that would enter
    them leaves the chain (at most its ``tail``), and so does the tagged job's arrival there.

    >>> Q, alpha = fifo_passage_chain(2, 1.0, [0.0, 1.0, 1.0], 1, 1, [0.2, 0.4, 0.4])
    >>> Q.toarray().tolist(), alpha.tolist()       # oldest; second (the oldest ahead ends at 1/s)
    ([[-1.0, 0.0], [1.0, -1.0]], [0.5, 0.5])
    """
    from scipy.sparse import coo_matrix, diags

    from spn.analysis.chains import promotion

    rates = np.asarray(rates, dtype=float)
    pi = np.asarray(pi, dtype=float)
    cap = max((flat_from(rates) if flat is None else int(flat)) - 2, 0)
    top = N if top is None else min(int(top), N)
    level = r * r2
    pairs = [(p, b) for p in range(2, top + 1) for b in range(min(top - p, cap) + 1)
             if p + b >= bottom or b == min(top - p, cap)]
    ps = np.array([p for p, _ in pairs], dtype=int)
    bs = np.array([b for _, b in pairs], dtype=int)
    start = r + level * np.arange(ps.size)             # the first state of each block
    block = {(int(p), int(b)): int(s) for p, b, s in zip(ps, bs, start)}
    size = r + level * ps.size
    rows, cols, vals, out, leak = [], [], [], np.zeros(size), np.zeros(size)

    def add(a, b, v):
        a, b, v = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(v, dtype=float))
        rows.append(a.ravel())
        cols.append(b.ravel())
        vals.append(v.ravel())

    x1 = rates[1]
    j = np.arange(r)
    add(j[:-1], j[1:], r * x1)                          # the tagged job, oldest, as if alone
    out[r - 1] += r * x1
    j1, j2 = (a.ravel() for a in np.meshgrid(j, np.arange(r2), indexing="ij"))
    promoted, beyond = promotion(j2, r, r2)                 # the second's progress, in the oldest's stages
    for (p, b), s in block.items():
        here = s + j1 * r2 + j2
        n = p + b
        if b < min(top - p, cap):                        # a job arrives behind the tagged one
            add(here, block[p, b + 1] + j1 * r2 + j2, (N - n) / Z)
        lost = np.zeros(here.size)                       # into the blocks left out (below ``bottom``)
        step1 = j1 < r - 1
        add(here[step1], here[step1] + r2, r * x1)
        # the oldest ends: the second becomes the oldest at its progress, the third (or the tagged job) second
        ends = ~step1
        if p == 2:
            add(here[ends], promoted[ends], r * x1 * (1 - beyond[ends]))
            add(here[ends], promoted[ends] + 1, r * x1 * beyond[ends])
        elif (p - 1, b) in block:
            add(here[ends], block[p - 1, b] + promoted[ends] * r2, r * x1 * (1 - beyond[ends]))
            add(here[ends], block[p - 1, b] + (promoted[ends] + 1) * r2, r * x1 * beyond[ends])
        else:
            lost[ends] += r * x1
        rate2 = r2 * max(rates[n] - x1, 0.0)
        step2 = j2 < r2 - 1
        add(here[step2], here[step2] + 1, rate2)
        if p == 2:                                       # the second is the tagged job: it ends
            out[here[~step2]] += rate2
        elif (p - 1, b) in block:                        # the second ends first: the next one is second
            add(here[~step2], block[p - 1, b] + j1[~step2] * r2, rate2)
        else:
            lost[~step2] += rate2
        leak[here] += lost
    rows, cols, vals = (np.concatenate(v) if v else np.zeros(0) for v in (rows, cols, vals))
    moves = vals > 0
    Q = coo_matrix((vals[moves], (rows[moves].astype(int), cols[moves].astype(int))), shape=(size, size)).tocsr()
    Q = (Q - diags(np.asarray(Q.sum(axis=1)).ravel() + out + leak)).tocsr()
    return Q, _arrivals(min(N, top), N, pi, r, r2, block, size)


def _arrivals(top: int, N: int, pi: np.ndarray, r: int, r2: int, block: dict, size: int) -> np.ndarray:
    """α: the tagged job's state at its arrival, from the others' state s, weighted π(s) · (N − n(s))."""
    alpha = np.zeros(size)
    alpha[0] = pi[0] * N                                 # into the empty cluster
    if top >= 2 and (2, 0) in block:
        alpha[block[2, 0] + np.arange(r) * r2] = pi[1:1 + r] * (N - 1)   # behind one job, second at stage 0
    level = r * r2
    for n in range(2, top):                              # behind n jobs: the two oldest as they are
        if (n + 1, 0) in block:                          # (else below the chain's bottom: left out)
            s = 1 + r + (n - 2) * level
            alpha[block[n + 1, 0]:block[n + 1, 0] + level] = pi[s:s + level] * (N - n)
    return alpha / alpha.sum()


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
