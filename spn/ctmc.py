"""The CTMC beneath a state space: generator, its validation and closed classes, rewards, throughputs.

>>> import numpy as np
>>> Q = generator_matrix(2, np.array([0, 1]), np.array([1, 0]), np.array([1.0, 2.0]))
>>> Q.toarray()
array([[-1.,  1.],
       [ 2., -2.]])
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components

from spn.exceptions import NotErgodicError

#: Rows of a generator must sum to 0 within this tolerance, relative to ``Lambda = max_i |q_ii|``.
ROWSUM_RTOL = 1e-8


def generator_matrix(n: int, src: np.ndarray, dst: np.ndarray, rate: np.ndarray) -> sp.csr_matrix:
    """The generator Q (CSR) of a CTMC with transitions src -> dst at the given rates.

    Duplicate transitions are summed, self loops must already be left out; the
    diagonal makes every row sum to zero.
    """
    off = sp.csr_matrix((rate, (src, dst)), shape=(n, n))
    off.sum_duplicates()
    out = np.asarray(off.sum(axis=1)).ravel()
    Q = (off - sp.diags(out, format="csr")).tocsr()
    Q.sort_indices()
    return Q


def expected_reward(pi: np.ndarray, reward: np.ndarray) -> float:
    """Steady-state expectation of a reward vector: sum_i pi_i r_i."""
    return float(np.dot(pi, reward))


def timed_throughputs(pi: np.ndarray, timed_rates: sp.spmatrix) -> np.ndarray:
    """Throughput of every timed activity: sum_i pi_i rate_a(i)."""
    return np.asarray(timed_rates.T @ pi).ravel()


def instant_throughputs(pi: np.ndarray, impulses: sp.spmatrix) -> np.ndarray:
    """Throughput of every instantaneous activity: expected firings per unit time."""
    return np.asarray(impulses.T @ pi).ravel()


class CheckedGenerator(NamedTuple):
    """A generator that passed :func:`check_generator`.

    ``Q``: canonical CSR float64, diagonal recomputed as ``-sum_{j != i} q_ij`` (rows sum to 0
    up to rounding), no explicit off-diagonal zeros; ``graph``: a sparse matrix whose pattern is
    the transition graph (self loops allowed: they change neither reachability nor classes);
    ``max_rate``: ``Lambda = max_i |q_ii|``.
    """

    Q: sp.csr_array
    graph: sp.csr_array
    max_rate: float


def check_generator(Q) -> CheckedGenerator:
    """Validate a CTMC generator (any dense or sparse square matrix); raise ValueError if it is not one.

    Off-diagonal entries must be finite and >= 0, and rows must sum to 0 within
    ``ROWSUM_RTOL * Lambda``. A canonical CSR float64 generator (as ``explore()`` builds it)
    is read without a copy.

    >>> g = check_generator(np.array([[-1.0, 1.0], [2.0, -2.0]]))
    >>> g.Q.toarray().tolist(), g.max_rate
    ([[-1.0, 1.0], [2.0, -2.0]], 2.0)
    """
    if not sp.issparse(Q):
        Q = np.asarray(Q)
        if Q.ndim != 2:
            raise ValueError(f"generator must be a 2-D matrix, got shape {Q.shape}")
    if Q.shape[0] != Q.shape[1]:
        raise ValueError(f"generator must be square, got shape {Q.shape}")
    n = Q.shape[0]
    if n == 0:
        raise ValueError("generator is empty (0 states)")
    canonical = (sp.issparse(Q) and Q.format == "csr" and Q.dtype == np.float64
                 and Q.has_canonical_format)
    if not canonical:       # (a canonical CSR generator, as explore() builds, is read as it is)
        try:
            Q = sp.csr_array(Q, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"generator must hold real numbers: {exc}") from None
        Q.sum_duplicates()
    data, indices = Q.data, Q.indices
    if not np.all(np.isfinite(data)):
        bad = np.flatnonzero(~np.isfinite(data))
        rows = np.searchsorted(Q.indptr, bad, side="right") - 1
        raise ValueError(
            f"generator has {bad.size} NaN/inf entries, "
            f"e.g. at ({rows[0]}, {indices[bad[0]]})"
        )
    rows = np.repeat(np.arange(n, dtype=indices.dtype), np.diff(Q.indptr))
    off = rows != indices
    neg = off & (data < 0)
    if neg.any():
        i = np.flatnonzero(neg)[0]
        raise ValueError(
            f"generator has {int(neg.sum())} negative off-diagonal entries, "
            f"e.g. q[{rows[i]}, {indices[i]}] = {data[i]:g}"
        )
    diag = Q.diagonal()
    keep = off & (data > 0)
    r, c, v = rows[keep], indices[keep], data[keep]
    out_rate = np.bincount(r, weights=v, minlength=n)
    scale = max(float(np.max(np.abs(diag))), float(out_rate.max()))
    rowsum = out_rate + diag
    bad = np.abs(rowsum) > ROWSUM_RTOL * scale
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"generator rows must sum to 0: {int(bad.sum())} rows do not, "
            f"e.g. row {i} sums to {rowsum[i]:g} (Lambda = {scale:g})"
        )
    if canonical and off.size - r.size == n:
        # every diagonal entry is stored and no off-diagonal one is zero (as explore() builds
        # it): G keeps Q's structure, and serves as the transition graph (self loops are harmless)
        g_data = data.copy()
        g_data[~off] = -out_rate
        G = sp.csr_array((g_data, indices, Q.indptr), shape=(n, n))
        G.has_canonical_format = True
        return CheckedGenerator(G, G, float(out_rate.max()))
    # rows stay sorted by column when entries are only removed
    offdiag = sp.csr_array((v, c, np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n))])),
                           shape=(n, n))
    G = _with_diagonal(offdiag, -out_rate)
    return CheckedGenerator(G, offdiag, float(out_rate.max()))


def _with_diagonal(A, diagonal):
    """A canonical CSR matrix without diagonal entries, with ``diagonal`` put in (canonical CSR).

    Each diagonal entry goes after the entries of its row that lie left of it, so
    rows stay sorted by column without a sort.
    """
    n = A.shape[0]
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    at = np.arange(n) + A.indptr[:-1] + np.bincount(rows[A.indices < rows], minlength=n)
    size = A.nnz + n
    data, indices = np.empty(size), np.empty(size, dtype=A.indices.dtype)
    is_diag = np.zeros(size, dtype=bool)
    is_diag[at] = True
    data[at], indices[at] = diagonal, np.arange(n)
    data[~is_diag], indices[~is_diag] = A.data, A.indices
    out = sp.csr_array((data, indices, A.indptr + np.arange(n + 1)), shape=A.shape)
    out.has_canonical_format = True
    return out


def _bottom_classes(offdiag):
    """Closed (bottom) strongly connected classes of the transition graph (self loops allowed)."""
    n = offdiag.shape[0]
    # the usual case first: every state reaches state 0 and is reached from it (irreducible)
    if (breadth_first_order(offdiag, 0, return_predecessors=False).size == n
            and breadth_first_order(offdiag.T.tocsr(), 0, return_predecessors=False).size == n):
        return [np.arange(n)]
    ncomp, labels = connected_components(offdiag, directed=True, connection="strong")
    src = np.repeat(np.arange(n), np.diff(offdiag.indptr))
    leaving = labels[src] != labels[offdiag.indices]
    is_open = np.zeros(ncomp, dtype=bool)
    is_open[labels[src[leaving]]] = True
    in_closed = ~is_open[labels]
    states = np.flatnonzero(in_closed)
    lab = labels[states]
    order = np.argsort(lab, kind="stable")
    states, lab = states[order], lab[order]
    cuts = np.flatnonzero(np.diff(lab)) + 1
    classes = np.split(states, cuts) if states.size else []
    classes.sort(key=lambda s: int(s[0]))
    return classes


def closed_classes(Q) -> list[np.ndarray]:
    """Closed (bottom) communicating classes of generator ``Q``, as index arrays.

    A class is closed when no transition leaves it. An ergodic chain has exactly one;
    states outside every closed class are transient. Classes are returned sorted by
    their smallest state. ``Q`` may also be a :class:`CheckedGenerator`.

    >>> Q = sp.csr_array([[-1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> [c.tolist() for c in closed_classes(Q)]
    [[1], [2]]
    """
    gen = Q if isinstance(Q, CheckedGenerator) else check_generator(Q)
    return _bottom_classes(gen.graph)


def ergodic_class(Q) -> np.ndarray:
    """The states of the single closed class of ``Q`` (the others are transient).

    Raises :class:`~spn.exceptions.NotErgodicError` when there is more than one.
    ``Q`` may also be a :class:`CheckedGenerator`.

    >>> ergodic_class(np.array([[-1.0, 1.0, 0.0], [0.0, -2.0, 2.0], [0.0, 3.0, -3.0]])).tolist()
    [1, 2]
    """
    gen = Q if isinstance(Q, CheckedGenerator) else check_generator(Q)
    classes = _bottom_classes(gen.graph)
    if len(classes) > 1:
        raise NotErgodicError(_not_ergodic_message(classes, gen.Q.shape[0]))
    return classes[0]


def _not_ergodic_message(classes, n):
    sizes = [int(c.size) for c in classes]
    shown = ", ".join(
        f"{{{', '.join(map(str, c[:3].tolist()))}{', ...' if c.size > 3 else ''}}}"
        for c in classes[:5]
    )
    more = f" and {len(classes) - 5} more" if len(classes) > 5 else ""
    transient = n - sum(sizes)
    return (
        f"CTMC is not ergodic: {len(classes)} closed classes (no transition leaves "
        f"them) of sizes {sizes[:20]}{'...' if len(sizes) > 20 else ''}, e.g. states "
        f"{shown}{more}; {transient} transient states. A unique steady state needs "
        f"exactly one closed class."
    )

