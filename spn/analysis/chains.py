"""The closed chains of the decomposition (:mod:`spn.analysis.decomposition`): N users thinking Z seconds
in front of a cluster that completes X(n) jobs per second with n jobs present, solved exactly.

- :func:`birth_death`: completions memoryless at X(n) (processor sharing, product-form);
- :func:`oldest_two` (``fifo``): the progress of the two oldest jobs in Erlang stages;
- :func:`fair_shares` (``fair``): the progress of every job in service in Erlang stages, the
  containers dealt round-robin to the most advanced first (:func:`deal`); :func:`fair_response`
  extrapolates its R to a job's stages when fewer fit.

>>> round(birth_death(2, 1.0, [0.0, 1.0, 1.0]), 6), round(oldest_two(2, 1.0, [0.0, 1.0, 1.0], 1), 6)
(0.8, 0.8)
"""

from __future__ import annotations

import functools
import math

import numpy as np

from spn.exceptions import SpnError

__all__ = ["response", "birth_death", "oldest_two", "oldest_two_stationary", "saturated", "promotion", "stage_counts",
           "fair_shares", "deal", "fair_stages", "fair_response", "MAX_STAGES", "SECOND_STAGES", "MAX_FILL",
           "FAIR_WORK"]

#: Erlang stages of the oldest job's progress in the fifo chain, at most
MAX_STAGES = 40
#: ... and of the second oldest's, at most (on the validation grid 10 stages instead of 40 move R by
#: 0.4 % at most, and the chain is 16 times smaller)
SECOND_STAGES = 10
#: entries the LU of the fifo chain may fill, at most N · (r · r₂)² (the stages are lowered to fit: under 0.5 s)
MAX_FILL = 16_000_000
#: the fair chain's LU work, at most Σ over n of (its states with n jobs)³ (its stages are lowered to fit:
#: about 0.05 s a chain)
FAIR_WORK = 100_000_000
#: refinements of a chain's solution by the LU of a chain near it, at most (then it is factorised)
REFINE_STEPS = 30
#: the fifo chain is solved on the levels (jobs present) whose birth-death probability is at least this
#: share of the likeliest's: the others hold too little to move any number it gives
NEGLIGIBLE_LEVEL = 1e-30
#: ... provided its solution holds at most this at the window's edges (else the whole chain is solved)
EDGE_MASS = 1e-18


def response(N: int, Z: float, x: float) -> float:
    """R of N users thinking Z s whose jobs complete at x per second (Little: N = X (R + Z)).

    >>> response(4, 2.0, 1.0)
    2.0
    """
    return max(N / x - Z, 0.0)


def birth_death(N: int, Z: float, rates) -> float:
    """The throughput of N users thinking Z s in front of a station completing ``rates[n]`` jobs/s with n
    jobs: the birth-death chain, solved exactly (in logarithms).

    >>> round(birth_death(2, 1.0, [0.0, 1.0, 1.0]), 6)     # M/M/1//2: p0 = 1/5, X = 1 - p0
    0.8
    """
    rates = np.asarray(rates, dtype=float)
    return float(_levels(N, Z, rates)[1:] @ rates[1:N + 1])


def _levels(N: int, Z: float, rates: np.ndarray) -> np.ndarray:
    """P(n jobs in the cluster), n = 0..N, in the birth-death chain."""
    n = np.arange(1, N + 1)
    log_p = np.concatenate([[0.0], np.cumsum(np.log((N - n + 1) / Z) - np.log(rates[1:N + 1]))])
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def _stationary(Qs, pin: int, what: str, rtol: float) -> list[np.ndarray]:
    """π of each generator of ``Qs`` (CSC, one chain with different rates): π_pin = 1, then the balance
    equations of the other states, by a sparse LU in the states' (level-major, banded) order reversed,
    normalised and checked against ``rtol``.

    The first is factorised; the others, whose rates differ a little (an X(k)'s interval), are solved by
    refining with that LU (x += LU⁻¹ (b − A x)), a few triangular solves instead of a factorisation,
    until π passes the check (else, after :data:`REFINE_STEPS`, they are factorised after all).

    ``pin`` is a state of the likeliest level: pinning the empty cluster instead leaves, in heavy load,
    a solution spanning 10²⁰ and more, whose last pivot rounds to zero."""
    from scipy.sparse.linalg import splu

    # the states but ``pin`` from the last level down: the LU fills 18 % less than from the empty cluster
    # up, and takes 40 % less time (the fifo chain of 50 users, 40 and 10 stages)
    keep = np.flatnonzero(np.arange(Qs[0].shape[0]) != pin)[::-1]
    lu, out = None, []
    for Q in Qs:
        A = Q[keep][:, keep].T.tocsc()
        b = -Q[pin, keep].toarray().ravel()
        pi = None
        if lu is not None:
            rest = lu.solve(b)
            for _ in range(REFINE_STEPS):
                pi = _normalised(rest, pin, keep, Q, rtol)
                if pi is not None:
                    break
                rest = rest + lu.solve(b - A @ rest)
        if pi is None:
            factor = splu(A, permc_spec="NATURAL")
            lu = lu or factor
            rest = factor.solve(b)
            pi = _normalised(rest, pin, keep, Q, rtol)
        if pi is None:
            residual = float(np.abs(_assemble(rest, pin, keep) @ Q).sum())
            raise SpnError(f"the {what} chain was not solved (residual {residual:.2g})")
        out.append(pi)
    return out


def _assemble(rest: np.ndarray, pin: int, keep: np.ndarray) -> np.ndarray:
    pi = np.zeros(keep.size + 1)
    pi[pin], pi[keep] = 1.0, rest
    return pi / pi.sum()


def _normalised(rest: np.ndarray, pin: int, keep: np.ndarray, Q, rtol: float) -> np.ndarray | None:
    """π from the solution for the states but ``pin``, or None when it is not a distribution solving πQ = 0."""
    pi = _assemble(rest, pin, keep)
    residual = float(np.abs(pi @ Q).sum())
    return pi if np.all(pi > -1e-12) and residual <= rtol * float(np.abs(Q.diagonal()).max()) else None


def oldest_two(N: int, Z: float, rates, stages: int, second: int | None = None, *, rtol: float = 1e-10):
    """The throughput of N users thinking Z s in front of a fifo cluster completing ``rates[n]`` jobs/s
    with n jobs: the oldest job's progress in ``stages`` Erlang stages at ``stages · rates[1]``, the
    second's in ``second`` stages (default ``stages``) at ``second · (rates[n] − rates[1])`` (what the
    oldest leaves), the others waiting. A job ends after its last stage (the second may end first);
    when the oldest ends, the second becomes the oldest at the stage of its progress so far. The
    chain is solved by a sparse LU (its residual checked against ``rtol``). ``rates`` of several rows
    (the same chain with other rates): one throughput each, solved with one LU (:func:`_stationary`).

    >>> round(oldest_two(2, 1.0, [0.0, 1.0, 1.0], 1), 6)    # one stage: the birth-death chain
    0.8
    >>> round(oldest_two(2, 1.0, [0.0, 1.0, 1.0], 40), 3)   # M/E40/1//2, near M/D/1//2's e / (e + 1/2) = 0.845
    0.843
    """
    rates = np.asarray(rates, dtype=float)
    out = saturated(N, Z, rates)
    if out is None:
        out = np.array([x for x, _ in oldest_two_stationary(N, Z, rates, stages, second, rtol=rtol)])
    return out if rates.ndim == 2 else float(out[0])


def saturated(N: int, Z: float, rates) -> np.ndarray | None:
    """X(N) of each row of ``rates``, where in every row X(n) = X(N) >= X(1) from a level n on and the
    birth-death chain holds under :data:`NEGLIGIBLE_LEVEL` below it; else None. There the cluster
    completes work at X(N) in every state that counts, so a chain sharing X(n) among its jobs (fifo's two
    oldest, fair's dealt containers) completes X(N) jobs/s whatever their stages (work is conserved), and
    is not solved for its throughput.

    >>> saturated(20, 0.01, [0.0] + [3.0] * 20), saturated(5, 1.0, [0.0] + [3.0] * 5)   # the second: empty at times
    (array([3.]), None)
    """
    rows = np.atleast_2d(np.asarray(rates, dtype=float))
    for x in rows:
        flat = N
        while flat > 1 and x[flat - 1] == x[N]:
            flat -= 1
        if x[1] > x[N] or _levels(N, Z, x)[:flat].sum() > NEGLIGIBLE_LEVEL:
            return None
    return rows[:, N].copy()


def oldest_two_stationary(N: int, Z: float, rates, stages: int, second: int | None = None, *,
                          rtol: float = 1e-10) -> list[tuple[float, np.ndarray]]:
    """(throughput, π) of :func:`oldest_two`'s chain for each row of ``rates`` (one LU), π over its states:
    0 the empty cluster, 1 + j1 one job at stage j1, 1 + r + (n − 2) r r2 + j1 r2 + j2 n >= 2 jobs, the
    two oldest at stages j1 and j2 (what :mod:`spn.analysis.passage_fifo` follows a job through).

    >>> [(round(x, 6), pi.round(6).tolist()) for x, pi in oldest_two_stationary(2, 1.0, [0.0, 1.0, 1.0], 1)]
    [(0.8, [0.2, 0.4, 0.4])]
    """
    rates = np.asarray(rates, dtype=float)
    r = int(stages)
    r2 = r if second is None else int(second)
    chains = [_oldest_two_chain(N, Z, x, r, r2) for x in np.atleast_2d(rates)]
    # a banded system in this (level-major) order, whose LU fills at most N · (r · r2)² entries (MAX_FILL)
    levels = _levels(N, Z, np.atleast_2d(rates)[0])
    likeliest = int(np.argmax(levels))
    first = np.concatenate([[0, 1], 1 + r + np.arange(N) * r * r2])       # level n's first state
    kept = np.flatnonzero(levels >= NEGLIGIBLE_LEVEL * levels[likeliest])
    a, b, size = int(first[kept[0]]), int(first[kept[-1] + 1]), int(first[-1])
    pis = None
    if b - a < size:        # the levels between alone: the others' moves dropped
        window = [_window(Q, a, b) for Q, _, _ in chains]
        pis = [np.concatenate([np.zeros(a), pi, np.zeros(size - b)])
               for pi in _stationary(window, int(first[likeliest]) - a, "fifo", rtol)]
        edges = [slice(a, int(first[kept[0] + 1]))] * (a > 0) + [slice(int(first[kept[-1]]), b)] * (b < size)
        if any(pi[edge].sum() > EDGE_MASS for pi in pis for edge in edges):
            pis = None
    if pis is None:
        pis = _stationary([Q for Q, _, _ in chains], int(first[likeliest]), "fifo", rtol)
    return [(float(pi[ends] @ rate), pi) for pi, (_, ends, rate) in zip(pis, chains)]


def _window(Q, a: int, b: int):
    """The generator of states ``a`` to ``b`` of ``Q`` (CSC) alone: their moves to the others dropped."""
    from scipy.sparse import diags

    inner = Q[a:b, a:b]
    return (inner - diags(np.asarray(inner.sum(axis=1)).ravel())).tocsc()


def _oldest_two_chain(N: int, Z: float, rates: np.ndarray, r: int, r2: int):
    """The generator of :func:`oldest_two`'s chain (CSC), and its completions: from which states, at what rates."""
    from scipy.sparse import coo_matrix, diags

    # states: 0 (empty); n = 1: j1 (r states); n >= 2: (j1, j2) (r · r2 states each)
    level = r * r2
    size = 1 + r + (N - 1) * level
    rows, cols, vals = [], [], []
    ends_from, ends_rate = [], []

    def add(a, b, v, end=False):
        a, b, v = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(v, dtype=float))
        rows.append(a.ravel())
        cols.append(b.ravel())
        vals.append(v.ravel())
        if end:
            ends_from.append(a.ravel())
            ends_rate.append(v.ravel())

    j = np.arange(r)
    one = 1 + j                                      # n = 1, stage j1
    add(0, 1, N / Z)                                 # an arrival to the empty cluster
    if N >= 2:
        add(one, 1 + r + j * r2, (N - 1) / Z)        # a second job arrives, at stage 0
    add(one[:-1], one[1:], r * rates[1])
    add(one[-1], 0, r * rates[1], end=True)
    j1, j2 = np.meshgrid(j, np.arange(r2), indexing="ij")
    j1, j2 = j1.ravel(), j2.ravel()
    promoted, beyond = promotion(j2, r, r2)
    # every level n >= 2 at once (one row each)
    n = np.arange(2, N + 1)[:, None]
    here = 1 + r + (n - 2) * level + j1 * r2 + j2
    add(here[:-1], here[:-1] + level, (N - n[:-1]) / Z)    # a third or later job arrives, behind the two
    step1 = j1 < r - 1
    add(here[:, step1], here[:, step1] + r2, r * rates[1])
    below = np.where(n == 2, 1 + promoted, 1 + r + (n - 3) * level + promoted * r2)   # the second becomes the oldest
    next_stage = np.where(n == 2, 1, r2)
    add(here[:, ~step1], below[:, ~step1], r * rates[1] * (1 - beyond[~step1]), end=True)
    add(here[:, ~step1], below[:, ~step1] + next_stage, r * rates[1] * beyond[~step1], end=True)
    rate2 = np.maximum(rates[n] - rates[1], 0.0)     # none: the second waits (those moves are dropped below)
    step2 = j2 < r2 - 1
    add(here[:, step2], here[:, step2] + 1, r2 * rate2)
    gone = np.where(n == 2, 1 + j1, 1 + r + (n - 3) * level + j1 * r2)   # the second ends first
    add(here[:, ~step2], gone[:, ~step2], r2 * rate2, end=True)
    rows, cols, vals = (np.concatenate(v) for v in (rows, cols, vals))
    moves = vals > 0
    Q = coo_matrix((vals[moves], (rows[moves], cols[moves])), shape=(size, size)).tocsr()
    Q = (Q - diags(np.asarray(Q.sum(axis=1)).ravel())).tocsc()
    return Q, np.concatenate(ends_from), np.concatenate(ends_rate)


def promotion(j2: np.ndarray, r: int, r2: int) -> tuple[np.ndarray, np.ndarray]:
    """Where the second job, at stage ``j2`` of ``r2``, lands among the oldest's ``r`` stages when it becomes
    the oldest: its progress j2 r / r2 lies between stage ``below`` and the next, and it goes to the next
    with probability ``above``, so that its mean progress is kept (rounding down would lose work at every
    promotion: 0.8 % of the throughput of a saturated cluster at r = 28, r2 = 10).

    >>> below, above = promotion(np.arange(3), 7, 3)
    >>> below.tolist(), above.round(3).tolist()
    ([0, 2, 4], [0.0, 0.333, 0.667])
    """
    below, ahead = np.divmod(np.asarray(j2) * r, r2)
    return below, ahead / r2


def stage_counts(stages: int, users: int) -> tuple[int, int]:
    """(r, r2): the oldest job's stages and the second's in the fifo chain of ``users``, lowered (the
    second's first) until its LU fits :data:`MAX_FILL`.

    >>> stage_counts(40, 60), stage_counts(40, 1_000), stage_counts(3, 60)
    ((40, 10), (40, 3), (3, 3))
    """
    width = max(1, int(math.isqrt(MAX_FILL // max(users, 1))))     # r · r2 at most
    r = max(1, min(int(stages), MAX_STAGES, width))
    return r, max(1, min(r, SECOND_STAGES, width // r))


def deal(n: int, containers: int) -> np.ndarray:
    """The containers each of ``n`` jobs holds under fair, the most advanced first: ``containers`` dealt
    round-robin (C // n each, one more to the C mod n first; past C jobs, one each to the first C).

    >>> deal(3, 8).tolist(), deal(6, 4).tolist()
    ([3, 3, 2], [1, 1, 1, 1])
    """
    m = min(n, containers)
    return containers // n + (np.arange(m) < containers % n).astype(int)


def fair_shares(N: int, Z: float, rates, containers: int, stages: int, *, rtol: float = 1e-10):
    """The throughput of N users thinking Z s in front of a fair cluster of ``containers`` completing
    ``rates[n]`` jobs/s with n jobs: every job in service advances through ``stages`` Erlang stages, the
    jobs ranked by their progress (the most advanced first) and the containers dealt to them as
    :func:`deal` says, a job holding c of them advancing at ``stages · rates[n] · c / C``; past C jobs
    the others wait. One stage: the birth-death chain. The chain is solved by a sparse LU; ``rates`` of
    several rows: one throughput each, with one LU (:func:`_stationary`).

    >>> round(fair_shares(2, 1.0, [0.0, 1.0, 1.0], 1, 1), 6)             # one stage: M/M/1//2
    0.8
    >>> round(fair_shares(2, 1.0, [0.0, 1.0, 1.0], 1, 40), 3)            # one container: fifo, M/E40/1//2
    0.843
    """
    rates = np.asarray(rates, dtype=float)
    out = saturated(N, Z, rates)
    if out is not None:
        return out if rates.ndim == 2 else float(out[0])
    chains = [_fair_chain(N, Z, x, int(containers), int(stages)) for x in np.atleast_2d(rates)]
    base = chains[0][3]
    pis = _stationary([Q for Q, _, _, _ in chains], int(base[np.argmax(_levels(N, Z, np.atleast_2d(rates)[0]))]),
                      "fair", rtol)
    out = np.array([pi[rows] @ ends for pi, (_, rows, ends, _) in zip(pis, chains)])
    return out if rates.ndim == 2 else float(out[0])


def _fair_chain(N: int, Z: float, rates: np.ndarray, C: int, r: int):
    """The generator of :func:`fair_shares`'s chain (CSC), the states each of its moves leaves and the
    rate of completions of each move (0 for others), and the first state of each level."""
    from scipy.sparse import coo_matrix, diags

    moves = [_moves(m, r, C) for m in range(min(N, C) + 1)]
    sizes = [len(moves[min(n, C)]["counts"]) for n in range(N + 1)]
    base = np.concatenate([[0], np.cumsum(sizes)])
    rows, cols, vals, ends = [], [], [], []

    def add(a, b, v, end=False):
        rows.append(a)
        cols.append(b)
        vals.append(v)
        ends.append(v if end else np.zeros_like(v))

    for n in range(N + 1):
        mv = moves[min(n, C)]
        here = base[n] + np.arange(sizes[n])
        if n < N:       # an arrival: into service at stage 0, or waiting past C jobs
            add(here, base[n + 1] + (mv["arrive"] if n < C else np.arange(sizes[n])), np.full(sizes[n], (N - n) / Z))
        if n == 0:
            continue
        # the jobs at stage s hold the ranks above[s] + 1 .. above[s] + k[s], and their containers
        held = np.concatenate([[0], np.cumsum(deal(n, C))]) * (r * rates[n] / C)
        k, above = mv["counts"], mv["above"]
        rate = held[above + k] - held[above]
        for s in range(r - 1):
            on = k[:, s] > 0
            add(here[on], base[n] + mv["advance"][s][on], rate[on, s])
        on = k[:, r - 1] > 0       # a job ends; past C jobs, a waiting one starts
        add(here[on], base[n - 1] + (mv["end"] if n <= C else mv["end_and_start"])[on], rate[on, r - 1], end=True)
    rows, cols, vals, ends = (np.concatenate(v) for v in (rows, cols, vals, ends))
    size = int(base[-1])
    Q = coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsr()
    Q = (Q - diags(np.asarray(Q.sum(axis=1)).ravel())).tocsc()
    return Q, rows, ends, base


@functools.lru_cache(maxsize=256)
def _multisets(m: int, r: int) -> np.ndarray:
    """Every way to put m alike jobs in r stages: one row per way, the jobs at each stage."""
    if r == 1:
        return np.array([[m]])
    return np.vstack([np.hstack([np.full((len(rest), 1), first), rest])
                      for first in range(m, -1, -1) for rest in [_multisets(m - first, r - 1)]])


@functools.lru_cache(maxsize=256)
def _moves(m: int, r: int, C: int) -> dict:
    """For the states of m jobs in service: their ``counts`` per stage, the jobs ``above`` each stage
    (further on), and where each move leads (as row numbers among the states of its level)."""
    counts = _multisets(m, r)
    above = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1] - counts
    unit = np.eye(r, dtype=int)

    def find(level_m, wanted):        # -1 where the move is impossible (no job at that stage): never used
        index = {row.tobytes(): i for i, row in enumerate(_multisets(level_m, r))}
        return np.array([index.get(row.tobytes(), -1) for row in wanted], dtype=np.int64)

    out = {"counts": counts, "above": above,
           "advance": [find(m, counts - unit[s] + unit[s + 1]) for s in range(r - 1)]}
    if m < C:
        out["arrive"] = find(m + 1, counts + unit[0])
    if m > 0:
        out["end"] = find(m - 1, counts - unit[r - 1])
        out["end_and_start"] = find(m, counts - unit[r - 1] + unit[0])
    return out


def fair_stages(stages: int, users: int, containers: int) -> int:
    """The stages of the fair chain of ``users`` on ``containers``: ``stages``, lowered until the work of
    its LU, Σ over n of (its states with n jobs)³, fits :data:`FAIR_WORK`.

    >>> fair_stages(40, 2, 8), fair_stages(40, 88, 8), fair_stages(40, 75, 6), fair_stages(40, 50, 300)
    (29, 3, 4, 2)
    """
    def work(r):
        return sum(math.comb(min(n, containers) + r - 1, r - 1) ** 3 for n in range(users + 1))

    r = max(1, min(int(stages), MAX_STAGES))
    while r > 1 and work(r) > FAIR_WORK:
        r -= 1
    return r


def fair_response(N: int, Z: float, rates, containers: int, stages: int) -> tuple:
    """R of the fair chain for jobs of ``stages`` Erlang stages, and the R of the chain actually solved
    (``rates`` of several rows: arrays of them, one each).

    The chain is solved with r = :func:`fair_stages` stages; when that is fewer than ``stages``, R is
    extrapolated from r − 1 and r stages linearly in 1 / r (the squared coefficient of variation of a
    job: the Pollaczek-Khinchine mean is linear in it, and so, within 0.2 % from three stages on, is
    this chain's R for regular jobs on a few containers).

    >>> fair_stages(40, 4, 2)       # 4 users on 2 containers: solved with 24 stages, extrapolated to 40
    24
    >>> [round(x, 4) for x in fair_response(4, 10.0, [0.0, 0.25, 0.5, 0.5, 0.5], 2, 40)]
    [4.3287, 4.3322]
    """
    r = fair_stages(stages, N, containers)
    solved = np.maximum(N / fair_shares(N, Z, rates, containers, r) - Z, 0.0)
    if r in (1, stages):
        extrapolated = solved
    else:
        # one stage is the birth-death chain (whatever the containers' deal): solved as such
        fewer = np.maximum(N / (fair_shares(N, Z, rates, containers, r - 1) if r > 2 else
                                np.array([birth_death(N, Z, x) for x in np.atleast_2d(rates)]).reshape(
                                    np.shape(rates)[:-1])) - Z, 0.0)
        extrapolated = solved - (fewer - solved) * (r - 1) * (1 - r / stages)
    if np.ndim(solved):
        return extrapolated, solved
    return float(extrapolated), float(solved)
