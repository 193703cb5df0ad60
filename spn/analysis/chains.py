"""The closed chains of the decomposition (:mod:`spn.analysis.decomposition`): N users thinking Z seconds
in front of a cluster that completes X(n) jobs per second with n jobs present, solved exactly.

- :func:`birth_death`: completions memoryless at X(n) (processor sharing, product-form);
- :func:`oldest_two` (``fifo``): the progress of the two oldest jobs in Erlang stages.

>>> round(birth_death(2, 1.0, [0.0, 1.0, 1.0]), 6), round(oldest_two(2, 1.0, [0.0, 1.0, 1.0], 1), 6)
(0.8, 0.8)
"""

from __future__ import annotations

import math

import numpy as np

from spn.exceptions import SpnError

__all__ = ["birth_death", "oldest_two", "stage_counts", "MAX_STAGES", "SECOND_STAGES", "MAX_FILL"]

#: Erlang stages of the oldest job's progress in the fifo chain, at most
MAX_STAGES = 40
#: ... and of the second oldest's, at most (on the validation grid 10 stages instead of 40 move R by
#: 0.4 % at most, and the chain is 16 times smaller)
SECOND_STAGES = 10
#: entries the LU of the fifo chain may fill, at most N · (r · r₂)² (the stages are lowered to fit: under 0.5 s)
MAX_FILL = 16_000_000


def birth_death(N: int, Z: float, rates) -> float:
    """The throughput of N users thinking Z s in front of a station completing ``rates[n]`` jobs/s with n
    jobs: the birth-death chain, solved exactly (in logarithms).

    >>> round(birth_death(2, 1.0, [0.0, 1.0, 1.0]), 6)     # M/M/1//2: p0 = 1/5, X = 1 - p0
    0.8
    """
    rates = np.asarray(rates, dtype=float)
    n = np.arange(1, N + 1)
    log_p = np.concatenate([[0.0], np.cumsum(np.log((N - n + 1) / Z) - np.log(rates[1:N + 1]))])
    p = np.exp(log_p - log_p.max())
    p /= p.sum()
    return float(p[1:] @ rates[1:N + 1])


def oldest_two(N: int, Z: float, rates, stages: int, second: int | None = None, *, rtol: float = 1e-10) -> float:
    """The throughput of N users thinking Z s in front of a fifo cluster completing ``rates[n]`` jobs/s
    with n jobs: the oldest job's progress in ``stages`` Erlang stages at ``stages · rates[1]``, the
    second's in ``second`` stages (default ``stages``) at ``second · (rates[n] − rates[1])`` (what the
    oldest leaves), the others waiting. A job ends after its last stage (the second may end first);
    when the oldest ends, the second becomes the oldest at the stage of its progress so far. The
    chain is solved by a sparse LU (its residual checked against ``rtol``).

    >>> round(oldest_two(2, 1.0, [0.0, 1.0, 1.0], 1), 6)    # one stage: the birth-death chain
    0.8
    >>> round(oldest_two(2, 1.0, [0.0, 1.0, 1.0], 40), 3)   # M/E40/1//2, near M/D/1//2's e / (e + 1/2) = 0.845
    0.843
    """
    from scipy.sparse import coo_matrix, diags
    from scipy.sparse.linalg import splu

    rates = np.asarray(rates, dtype=float)
    r = int(stages)
    r2 = r if second is None else int(second)
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
    promoted = (j2 * r) // r2                        # the second's progress, in the oldest's stages
    for n in range(2, N + 1):
        base = 1 + r + (n - 2) * level
        here = base + j1 * r2 + j2
        rate2 = max(rates[n] - rates[1], 0.0)
        if n < N:
            add(here, here + level, (N - n) / Z)     # a third or later job arrives, behind the two
        step1 = j1 < r - 1
        add(here[step1], here[step1] + r2, r * rates[1])
        below = 1 + promoted if n == 2 else 1 + r + (n - 3) * level + promoted * r2   # the second becomes the oldest
        add(here[~step1], below[~step1], r * rates[1], end=True)
        if rate2 > 0:
            step2 = j2 < r2 - 1
            add(here[step2], here[step2] + 1, r2 * rate2)
            gone = 1 + j1 if n == 2 else 1 + r + (n - 3) * level + j1 * r2   # the second ends first
            add(here[~step2], gone[~step2], r2 * rate2, end=True)
    rows, cols, vals = (np.concatenate(v) for v in (rows, cols, vals))
    Q = coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsr()
    Q = (Q - diags(np.asarray(Q.sum(axis=1)).ravel())).tocsc()
    # π_0 = 1, then the balance equations of the other states: a banded system in this (level-major) order,
    # whose LU fills at most N · (r · r2)² entries (MAX_FILL bounds it)
    rest = splu(Q[1:, 1:].T.tocsc(), permc_spec="NATURAL").solve(-Q[0, 1:].toarray().ravel())
    pi = np.concatenate([[1.0], rest])
    pi /= pi.sum()
    residual = float(np.abs(pi @ Q).sum())
    if not (np.all(pi > -1e-12) and residual <= rtol * float(np.abs(Q.diagonal()).max())):
        raise SpnError(f"the fifo chain was not solved (residual {residual:.2g})")
    return float(pi[np.concatenate(ends_from)] @ np.concatenate(ends_rate))


def stage_counts(stages: int, users: int) -> tuple[int, int]:
    """(r, r2): the oldest job's stages and the second's in the fifo chain of ``users``, lowered (the
    second's first) until its LU fits :data:`MAX_FILL`.

    >>> stage_counts(40, 60), stage_counts(40, 1_000), stage_counts(3, 60)
    ((40, 10), (40, 3), (3, 3))
    """
    width = max(1, int(math.isqrt(MAX_FILL // max(users, 1))))     # r · r2 at most
    r = max(1, min(int(stages), MAX_STAGES, width))
    return r, max(1, min(r, SECOND_STAGES, width // r))
