"""Steady-state distribution of a CTMC given by a sparse generator ``Q``.

``steady_state(Q)`` finds ``pi`` with ``pi Q = 0``, ``sum(pi) = 1``, ``pi >= 0``.

Every method uses the same stopping rule.  With ``pi`` normalised to sum 1 and
``Lambda = max_i |q_ii|``::

    converged  <=>  ||pi Q||_1 <= atol + rtol * Lambda

and ``residual`` is always ``||pi Q||_1`` of the returned ``x`` (after clipping
tiny negatives to 0 and renormalising), so ``residual`` and ``converged`` can
be compared across methods.

>>> import scipy.sparse as sp
>>> Q = sp.csr_array([[-2.0, 2.0], [1.0, -1.0]])
>>> steady_state(Q).x.round(6).tolist()
[0.333333, 0.666667]
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from numba import njit
from scipy.sparse.csgraph import breadth_first_order, connected_components

from spn.exceptions import NotErgodicError

__all__ = ["SolverResult", "steady_state", "closed_classes", "METHODS"]

#: Methods accepted by :func:`steady_state` (besides ``"auto"``).
METHODS = ("direct", "gmres", "bicgstab", "power", "sor")

#: ``auto`` uses ``direct`` up to this many states (of the chain solved), else Gauss-Seidel.
#: Measured on SAN chains (benchmarks/run.py): Gauss-Seidel sweeps in the breadth-first state
#: order converge in 1 sweep on one-user DAG models and in ~30 on multi-user MapReduce chains,
#: where sparse LU fills badly (21,416 states: LU 4.5 s, GMRES+ILU 11 s, Gauss-Seidel 0.1 s).
AUTO_DIRECT_MAX_STATES = 2_000

#: Sweeps ``auto`` gives Gauss-Seidel before falling back to Krylov methods.
AUTO_SOR_SWEEPS = 1_000

#: Order in which ``auto`` falls back when a method does not converge.
_FALLBACK_CHAIN = ("direct", "gmres", "bicgstab", "power")
_ITERATIVE_CHAIN = ("sor", "gmres", "bicgstab", "power")

#: Default ``maxiter`` per method (see :func:`steady_state` for what counts as one).
DEFAULT_MAXITER = {"gmres": 3000, "bicgstab": 3000, "power": 100_000, "sor": 10_000}

#: Rows must sum to 0 within this tolerance, relative to ``Lambda``.
ROWSUM_RTOL = 1e-8

_GMRES_RESTART = 30
_ILU_DROP_TOL = 1e-5
_ILU_FILL_FACTOR = 10.0
_ILU_PROBE_MAX = 1e6
#: natural column order for LU/ILU when the envelope is at most this many times nnz
_NATURAL_ENVELOPE = 20
_REFINEMENT_STEPS = 2
_STAGNATION_CYCLES = 20
_MAX_REPINS = 3
_REPIN_RATIO = 1e-8
_REPIN_PROGRESS = 1e-3
_MAX_BICGSTAB_RESTARTS = 10

# status codes
_CONVERGED, _MAXITER, _BREAKDOWN, _SETUP_FAILED = 0, 1, 2, 3
_REPIN = -1  # internal: restart BiCGSTAB pinned at another state


@dataclass(frozen=True)
class SolverResult:
    """Outcome of :func:`steady_state` (shaped like SciPy's ``OptimizeResult``).

    ``x``: stationary distribution (float64, ``x >= 0``, ``sum(x) == 1``).
    ``converged``: ``residual <= atol + rtol * Lambda``.
    ``status``: 0 converged, 1 ``maxiter`` reached, 2 breakdown or stagnation
    (includes a direct solve whose residual stays above the tolerance),
    3 set-up failed (LU factorisation singular or out of memory).
    ``niter``: iterations (see :func:`steady_state`).
    ``residual``: ``||x Q||_1``.  ``seconds``: wall time of the whole call.
    ``method``: method that produced ``x``; ``fallback_from``: methods tried
    before it that did not converge (``auto`` only).

    >>> r = SolverResult(x=np.array([1.0]), converged=True, status=0,
    ...                  message="ok", niter=0, residual=0.0, seconds=0.0,
    ...                  method="direct")
    >>> r.fallback_from
    ()
    """

    x: np.ndarray
    converged: bool
    status: int
    message: str
    niter: int
    residual: float
    seconds: float
    method: str
    fallback_from: tuple = ()


# --------------------------------------------------------------------------- #
# input checks and graph analysis
# --------------------------------------------------------------------------- #


def _generator(Q):
    """Validate ``Q``; return ``(G, offdiag, Lambda)``.

    ``G`` is a canonical CSR float64 copy whose diagonal is recomputed as
    ``-sum_{j != i} q_ij`` (so rows sum to 0 exactly up to rounding) and whose
    explicit off-diagonal zeros are dropped; ``offdiag`` has the transition graph
    as its pattern (``G`` without its diagonal, or ``G`` itself: self loops do not
    change reachability or classes).
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
        return G, G, float(out_rate.max())
    # rows stay sorted by column when entries are only removed
    offdiag = sp.csr_array((v, c, np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n))])),
                           shape=(n, n))
    G = _with_diagonal(offdiag, -out_rate)
    return G, offdiag, float(out_rate.max())


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


def _closed_classes(offdiag):
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


def closed_classes(Q):
    """Closed (bottom) communicating classes of generator ``Q``, as index arrays.

    A class is closed when no transition leaves it.  An ergodic chain has
    exactly one; states outside every closed class are transient.  Classes are
    returned sorted by their smallest state.

    >>> import scipy.sparse as sp
    >>> Q = sp.csr_array([[-1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> [c.tolist() for c in closed_classes(Q)]
    [[1], [2]]
    """
    _, offdiag, _ = _generator(Q)
    return _closed_classes(offdiag)


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


# --------------------------------------------------------------------------- #
# helpers shared by the methods
# --------------------------------------------------------------------------- #


class _Out:
    """What a method returns: the normalised iterate and how it ended."""

    __slots__ = ("x", "residual", "status", "message", "niter")

    def __init__(self, x, residual, status, message, niter):
        self.x, self.residual, self.status = x, residual, status
        self.message, self.niter = message, niter


class _Stop(Exception):
    """Raised from a SciPy callback to end the iteration early."""

    def __init__(self, status):
        self.status = status


def _normalise(y):
    """Clip negatives to 0 and scale to sum 1; None if impossible."""
    if not np.all(np.isfinite(y)):
        return None
    if y.sum() < 0:  # a Krylov iterate may come out with the opposite sign
        y = -y
    x = np.maximum(y, 0.0)
    s = x.sum()
    if not (s > 0 and math.isfinite(s)):
        return None
    x /= s
    return x


def _normalise_in_place(y):
    """:func:`_normalise` without new vectors (``y`` is overwritten); None if impossible."""
    total = float(y.sum())
    if not math.isfinite(total):        # a NaN or infinite entry makes the sum so
        return None
    if total < 0:
        y *= -1.0
    np.maximum(y, 0.0, out=y)
    s = float(y.sum())
    if not (s > 0 and math.isfinite(s)):
        return None
    y /= s
    return y


def _residual(QT, x):
    return float(np.abs(QT @ x).sum())


def _pinned_system(QT, k):
    """Non-singular ``A y = b`` equivalent to ``Q^T pi = 0`` plus normalisation.

    Equation ``k`` of ``Q^T pi = 0`` (redundant: the equations sum to 0) is
    replaced by ``c * y_k = c`` with ``c = |q_kk|``; then ``y = pi / pi_k`` and
    ``pi = y / sum(y)``.  Unlike the textbook row of ones (``sum(pi) = 1``,
    see :func:`_normalised_system`) this keeps ``A`` as sparse as ``Q``, and
    ``A`` stays column diagonally dominant, so LU needs no pivoting: sparse LU
    is 5-15 times faster.  But ``A`` is as ill-conditioned as
    ``max(pi) / pi_k``: callers start at a guess for ``k`` and re-pin at
    ``argmax(pi)`` (Krylov) or switch to the textbook system (direct).
    """
    A = QT.copy()
    lo, hi = A.indptr[k], A.indptr[k + 1]
    c = float(-QT.diagonal()[k])
    A.data[lo:hi] = np.where(A.indices[lo:hi] == k, c, 0.0)
    A.eliminate_zeros()
    b = np.zeros(QT.shape[0])
    b[k] = c
    return A, b


def _normalised_system(QT, k):
    """Textbook system: equation ``k`` of ``Q^T pi = 0`` replaced by ``c sum(pi) = c``."""
    n = QT.shape[0]
    c = float(-QT.diagonal()[k])
    coo = QT.tocoo()
    keep = coo.row != k
    A = sp.csc_array(
        (
            np.concatenate([coo.data[keep], np.full(n, c)]),
            (np.concatenate([coo.row[keep], np.full(n, k)]), np.concatenate([coo.col[keep], np.arange(n)])),
        ),
        shape=(n, n),
    )
    b = np.zeros(n)
    b[k] = c
    return A, b


def _start_vector(x0, n):
    if x0 is None:
        return np.full(n, 1.0 / n)
    return x0


def _first_pin(x0):
    return 0 if x0 is None else int(np.argmax(x0))


def _ordering(A, otherwise: str) -> str:
    """Column ordering for SuperLU: the natural one when the matrix hugs its diagonal.

    Fill of an LU factorisation without reordering stays inside the envelope of
    the matrix (for each row, from its first non-zero to the diagonal; likewise for
    columns). States explored breadth-first from the initial marking often give a
    narrow envelope (a job moving forward through its phases), and then the natural
    order fills far less than any minimum-degree heuristic; otherwise ``otherwise``
    (measured: COLAMD for complete LU, minimum degree on A+A^T for ILU).
    """
    n = A.shape[0]
    rows, cols = A.tocsr(), A.tocsc()
    first_in_row = np.minimum.reduceat(rows.indices, rows.indptr[:-1]) if rows.nnz else np.zeros(n)
    first_in_col = np.minimum.reduceat(cols.indices, cols.indptr[:-1]) if cols.nnz else np.zeros(n)
    empty_r, empty_c = np.diff(rows.indptr) == 0, np.diff(cols.indptr) == 0
    index = np.arange(n)
    envelope = (np.maximum(index - first_in_row, 0)[~empty_r].sum()
                + np.maximum(index - first_in_col, 0)[~empty_c].sum())
    return "NATURAL" if envelope <= _NATURAL_ENVELOPE * A.nnz else otherwise


def _ilu_or_jacobi(A, b, ordering="COLAMD"):
    """Preconditioner for ``A``: ILU if it works, else Jacobi. Returns (M, note)."""
    n = A.shape[0]
    try:
        ilu = sla.spilu(
            A.tocsc(),
            drop_tol=_ILU_DROP_TOL,
            fill_factor=_ILU_FILL_FACTOR,
            permc_spec=ordering,
        )
        # probe: ILU alone should roughly solve A y = b; an exploding one does not
        z = ilu.solve(b)
        err = np.linalg.norm(A @ z - b) / np.linalg.norm(b) if np.all(np.isfinite(z)) else np.inf
        if err < _ILU_PROBE_MAX:
            return sla.LinearOperator((n, n), matvec=ilu.solve, dtype=np.float64), ""
        note = f"ILU unstable (probe residual {err:.2g})"
    except (RuntimeError, MemoryError, ValueError) as exc:
        note = f"ILU failed ({exc})"
    return _jacobi(A), note + "; using Jacobi preconditioner"


def _jacobi(A):
    n = A.shape[0]
    d = A.diagonal()
    inv = 1.0 / np.where(d != 0, d, 1.0)
    return sla.LinearOperator((n, n), matvec=lambda v: inv * v.ravel(), dtype=np.float64)


class _PinnedKrylov:
    """Pinned system, its preconditioner, and the bookkeeping around them."""

    def __init__(self, QT, k):
        self.QT = QT
        self.jacobi = False  # current preconditioner
        self.no_ilu = False  # ILU blew up during an iteration: do not retry
        self.notes = []
        self.repins = 0
        self.orderings = None     # ILU column orderings still to try, best guess first
        self.pin(k)

    def pin(self, k):
        self.k = k
        self.res_start = None
        self.A, self.b = _pinned_system(self.QT, k)
        if self.orderings is None:
            # narrow envelope: natural order; otherwise COLAMD, which suits SAN chains,
            # then minimum degree, which suits grid-like chains (tried on stagnation)
            self.orderings = [_ordering(self.A, "COLAMD"), "MMD_AT_PLUS_A"]
        if self.no_ilu:
            self.M, self.jacobi = _jacobi(self.A), True
        else:
            self.M, note = _ilu_or_jacobi(self.A, self.b, self.orderings[0])
            self.jacobi = bool(note)
            if note:
                self.notes.append(f"state {k} pinned: {note}")

    def next_ordering(self) -> bool:
        """Rebuild ILU with the next column ordering; False when none is left."""
        if self.jacobi or len(self.orderings) < 2:
            return False
        tried = self.orderings.pop(0)
        self.notes.append(f"ILU ({tried}) stagnated; rebuilt with {self.orderings[0]}")
        self.pin(self.k)
        return True

    def to_jacobi(self, why):
        self.jacobi = self.no_ilu = True
        self.M = _jacobi(self.A)
        self.notes.append(f"{why}; switched to Jacobi preconditioner")

    def y_of(self, x):
        """Iterate ``y`` (with ``y_k = 1``) for a distribution ``x``."""
        if not x[self.k] > 0:  # clipped to 0: cannot scale, pin elsewhere
            self.repins += 1
            self.pin(int(np.argmax(x)))
        return x / x[self.k]

    def should_repin(self, x, res):
        """Re-pin at ``argmax(x)`` when ``x_k`` is tiny (``y`` badly scaled).

        Only once the iterate means something: its residual is below
        ``_REPIN_PROGRESS`` times that of the first iterate of this pin.
        """
        if self.res_start is None:
            self.res_start = res
            return False
        j = int(np.argmax(x))
        if (
            self.repins < _MAX_REPINS
            and x[self.k] < _REPIN_RATIO * x[j]
            and res < _REPIN_PROGRESS * self.res_start
        ):
            self.repins += 1
            self.pin(j)
            return True
        return False

    def describe(self, what):
        msg = f"{what} with {'Jacobi' if self.jacobi else 'ILU'} preconditioner"
        if self.repins:
            msg += f"; pinned state re-chosen {self.repins} times"
        if self.notes:
            msg += "; " + "; ".join(self.notes)
        return msg


# --------------------------------------------------------------------------- #
# methods: each takes the (irreducible) generator and returns an _Out
# --------------------------------------------------------------------------- #


def _lu_attempt(A, b, QT, tol):
    """Sparse LU solve of ``A y = b`` plus refinement: (x, res, nsolves, refined)."""
    lu = sla.splu(A.tocsc(), permc_spec=_ordering(A, "COLAMD"))
    y = lu.solve(b)
    x = _normalise(y)
    if x is None:
        return None, math.inf, 1, 0
    res = _residual(QT, x)
    refined = 0
    # iterative refinement on A y = b while the stopping rule is not met
    while res > tol and refined < _REFINEMENT_STEPS:
        y2 = y + lu.solve(b - A @ y)
        x2 = _normalise(y2)
        refined += 1
        if x2 is None:
            break
        res2 = _residual(QT, x2)
        if res2 >= res:
            break
        y, x, res = y2, x2, res2
    return x, res, 1 + refined, refined


def _solve_direct(G, QT, tol, maxiter, x0, callback, omega):
    n = G.shape[0]
    k = _first_pin(x0)
    x, res, niter, refined, note, errors = None, math.inf, 0, 0, "", []
    for system in (_pinned_system, _normalised_system):
        if system is _normalised_system:
            # pinned state much less likely than others: A is ill-conditioned;
            # use the textbook normalisation row (more fill, but pivoting copes)
            why = "singular" if errors else "inaccurate"
            note = f"; pinned system {why}, re-solved with the normalisation row"
        try:
            x1, res1, n1, refined = _lu_attempt(*system(QT, k), QT, tol)
        except MemoryError:
            errors.append("out of memory")
            break  # the normalisation row only adds fill
        except RuntimeError as exc:
            errors.append(str(exc))
            continue
        niter += n1
        if res1 < res:
            x, res = x1, res1
        if res <= tol:
            break
    if x is None:
        x = _normalise(_start_vector(x0, n))
        status = _SETUP_FAILED if errors else _BREAKDOWN
        why = "; ".join(errors) if errors else "NaN/inf"
        return _Out(x, _residual(QT, x), status, f"sparse LU failed: {why}", niter)
    msg = "sparse LU solve" + (f" + {refined} refinement steps" if refined else "") + note
    if res <= tol:
        return _Out(x, res, _CONVERGED, msg, niter)
    return _Out(x, res, _BREAKDOWN, f"{msg}: residual above tolerance (rounding limit)", niter)


def _solve_gmres(G, QT, tol, maxiter, x0, callback, omega):
    n = G.shape[0]
    x = _normalise(_start_vector(x0, n).copy())
    sys_ = _PinnedKrylov(QT, _first_pin(x0))
    restart = min(_GMRES_RESTART, n)
    res = _residual(QT, x)
    best, since_best = res, 0
    niter = 0
    shrink = 1.0
    while True:
        if res <= tol:
            status = _CONVERGED
            break
        if niter >= maxiter:
            status = _MAXITER
            break
        if since_best >= _STAGNATION_CYCLES or shrink < 1e-12:
            if sys_.next_ordering():
                since_best, shrink = 0, 1.0
                continue
            status = _BREAKDOWN
            sys_.notes.append("stagnated")
            break
        m = min(restart, maxiter - niter)
        y = sys_.y_of(x)
        # SciPy's gmres ends a cycle early on the 2-norm of b - A y; ask for a
        # bit less than our rule needs and check our rule after every cycle.
        inner_atol = 0.5 * tol * shrink * float(y.sum())
        count = [0]

        def cb(_pr, count=count):
            count[0] += 1

        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            y, _info = sla.gmres(
                sys_.A, sys_.b, x0=y, rtol=0.0, atol=inner_atol, restart=m, maxiter=1,
                M=sys_.M, callback=cb, callback_type="pr_norm",
            )
        niter += count[0]
        x_new = _normalise(y)
        if x_new is None:
            if sys_.jacobi:
                sys_.notes.append("breakdown (NaN/inf)")
                status = _BREAKDOWN
                break
            sys_.to_jacobi("ILU-preconditioned GMRES produced NaN/inf")
            continue
        x = x_new
        res = _residual(QT, x)
        if callback is not None:
            callback(niter, x.copy(), res)
        if res < best * 0.99:
            best, since_best = res, 0
        else:
            since_best += 1
        if res > tol and sys_.should_repin(x, res):
            shrink, since_best = 1.0, 0
        elif count[0] < m and res > tol:
            shrink *= 1e-2  # inner tolerance met but our rule not yet: tighten
    return _Out(x, res, status, sys_.describe(f"GMRES({restart})"), niter)


def _solve_bicgstab(G, QT, tol, maxiter, x0, callback, omega):
    n = G.shape[0]
    x = _normalise(_start_vector(x0, n).copy())
    sys_ = _PinnedKrylov(QT, _first_pin(x0))
    state = {"x": x, "res": _residual(QT, x), "niter": 0}
    restarts = 0

    def accept(yk, count):
        """Record iterate ``yk``; return a status if the iteration must end."""
        if count:
            state["niter"] += 1
        xk = _normalise(yk)
        if xk is None:
            return _BREAKDOWN
        rk = _residual(QT, xk)
        state["x"], state["res"] = xk, rk
        if callback is not None and count:
            callback(state["niter"], xk.copy(), rk)
        if rk <= tol:
            return _CONVERGED
        if sys_.should_repin(xk, rk):
            return _REPIN
        return None

    def cb(yk):
        stop = accept(yk, count=True)
        if stop is not None:
            raise _Stop(stop)

    status = _CONVERGED if state["res"] <= tol else _MAXITER
    while status != _CONVERGED and state["niter"] < maxiter:
        before = state["res"]
        try:
            # atol = tiny: SciPy returns only on an exact 0 residual (or a
            # breakdown, or maxiter); our rule is applied in the callback
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                y, info = sla.bicgstab(
                    sys_.A, sys_.b, x0=sys_.y_of(state["x"]), rtol=0.0,
                    atol=np.finfo(float).tiny, maxiter=maxiter - state["niter"],
                    M=sys_.M, callback=cb,
                )
            stop = accept(y, count=False)
        except _Stop as exc:
            stop, info = exc.status, None
        if stop == _REPIN:
            continue
        if stop == _BREAKDOWN and not sys_.jacobi:
            sys_.to_jacobi("ILU-preconditioned BiCGSTAB produced NaN/inf")
            continue
        if stop in (_CONVERGED, _BREAKDOWN):
            status = stop
            if status == _BREAKDOWN:
                sys_.notes.append("breakdown (NaN/inf)")
            break
        if info is not None and info > 0:
            status = _MAXITER
            break
        # info < 0: BiCGSTAB breakdown (rho or omega ~ 0), or an exact solve
        # of the pinned system that still misses our rule: restart from the
        # current iterate while restarts make progress
        if state["res"] < before and restarts < _MAX_BICGSTAB_RESTARTS:
            restarts += 1
            continue
        status = _BREAKDOWN
        sys_.notes.append(f"BiCGSTAB breakdown (info {info})")
        break
    msg = sys_.describe("BiCGSTAB")
    if restarts:
        msg += f"; restarted {restarts} times after breakdown"
    return _Out(state["x"], state["res"], status, msg, state["niter"])


def _solve_power(G, QT, tol, maxiter, x0, callback, omega):
    n = G.shape[0]
    lam_u = 1.02 * float(-G.diagonal().min())
    inv = 1.0 / lam_u
    x = _normalise(_start_vector(x0, n).copy())
    r = QT @ x
    res = float(np.abs(r).sum())
    niter = 0
    status = _MAXITER
    while True:
        if res <= tol:
            status = _CONVERGED
            break
        if niter >= maxiter:
            break
        # x P = x + (x Q) / Lambda_u, with x Q = r already computed
        x += inv * r
        np.maximum(x, 0.0, out=x)
        s = x.sum()
        if not (s > 0 and math.isfinite(s)):
            status = _BREAKDOWN
            break
        x /= s
        niter += 1
        r = QT @ x
        res = float(np.abs(r).sum())
        if callback is not None:
            callback(niter, x.copy(), res)
    msg = f"power iteration on P = I + Q/{lam_u:.6g}"
    if status == _BREAKDOWN:
        x = _normalise(_start_vector(x0, n))
        res = _residual(QT, x)
        msg += "; breakdown (NaN/inf)"
    return _Out(x, res, status, msg, niter)


@njit(cache=True, nogil=True)
def _sor_sweep(indptr, indices, data, diagonal, x, omega):
    """One SOR sweep on ``Q^T x = 0`` in place (``Q^T`` as CSR arrays): entries before i
    are already new when row i is reached, as Gauss-Seidel wants."""
    for i in range(len(diagonal)):
        sigma = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if j != i:
                sigma += data[p] * x[j]
        x[i] = (1.0 - omega) * x[i] - omega * sigma / diagonal[i]


@njit(cache=True, nogil=True)
def _residual_norm(indptr, indices, data, x):
    """``||Q^T x||_1`` without a new vector."""
    total = 0.0
    for i in range(len(indptr) - 1):
        row = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            row += data[p] * x[indices[p]]
        total += abs(row)
    return total


def _solve_sor(G, QT, tol, maxiter, x0, callback, omega):
    # Q^T = D + L + U (diagonal, strictly lower, strictly upper). One sweep solves
    # (D + omega L) x_new = -(omega U + (omega - 1) D) x_old row by row, in place
    # (compiled: no triangular factor and no new vector per sweep; on chains of
    # millions of states fresh vectors cost page faults that outweigh the arithmetic)
    n = G.shape[0]
    A = sp.csr_array(QT)                     # (duplicate entries, if any, are summed by the sweep)
    d = A.diagonal()
    x = _normalise(_start_vector(x0, n).copy())
    previous = np.empty(n)
    res = _residual_norm(A.indptr, A.indices, A.data, x)
    niter = damped = 0
    status = _MAXITER
    while True:
        if res <= tol:
            status = _CONVERGED
            break
        if niter >= maxiter:
            break
        previous[:] = x
        _sor_sweep(A.indptr, A.indices, A.data, d, x, omega)
        niter += 1
        if _normalise_in_place(x) is None:
            x[:] = previous
            status = _BREAKDOWN
            break
        res_new = _residual_norm(A.indptr, A.indices, A.data, x)
        if res_new >= res:
            # Gauss-Seidel can cycle (iteration matrix with eigenvalues of
            # modulus 1 besides 1, e.g. on cyclic chains): averaging with the
            # previous iterate keeps pi fixed and damps those modes
            x += previous
            x *= 0.5
            _normalise_in_place(x)
            res_new = _residual_norm(A.indptr, A.indices, A.data, x)
            damped += 1
        res = res_new
        if callback is not None:
            callback(niter, x.copy(), res)
    msg = "Gauss-Seidel" if omega == 1.0 else f"SOR (omega={omega:g})"
    msg += " sweeps on Q^T"
    if damped:
        msg += f"; {damped} sweeps damped (residual did not decrease)"
    if status == _BREAKDOWN:
        msg += "; breakdown (NaN/inf)"
    return _Out(x, res, status, msg, niter)


_SOLVERS = {
    "direct": _solve_direct,
    "gmres": _solve_gmres,
    "bicgstab": _solve_bicgstab,
    "power": _solve_power,
    "sor": _solve_sor,
}

_STATUS_TEXT = {
    _CONVERGED: "converged",
    _MAXITER: "maxiter reached",
    _BREAKDOWN: "breakdown or stagnation",
    _SETUP_FAILED: "set-up failed",
}


# --------------------------------------------------------------------------- #
# public entry point
# --------------------------------------------------------------------------- #


def steady_state(
    Q,
    *,
    method="auto",
    rtol=1e-10,
    atol=0.0,
    maxiter=None,
    x0=None,
    callback=None,
    omega=1.0,
) -> SolverResult:
    r"""Stationary distribution ``pi`` of the CTMC with generator ``Q``.

    Solves ``pi Q = 0``, ``sum(pi) = 1``.  Stopping rule, the same for every
    method (``Lambda = max_i |q_ii|``, ``pi`` normalised to sum 1)::

        converged  <=>  ||pi Q||_1 <= atol + rtol * Lambda

    Never raises on non-convergence: check ``result.converged``.

    Parameters
    ----------
    Q : sparse (n, n) generator: off-diagonals >= 0, rows sum to 0 (within
        ``1e-8 * Lambda``; the diagonal is then recomputed as minus the
        off-diagonal row sum, and the residual refers to that generator).
    method : ``"auto"`` (``direct`` up to 2,000 states of the solved chain,
        else up to 1,000 Gauss-Seidel sweeps; falls back to
        ``gmres -> bicgstab -> power`` while a method does not converge), ``"direct"`` (sparse LU),
        ``"gmres"``, ``"bicgstab"`` (ILU-preconditioned, Jacobi if ILU fails),
        ``"power"`` (on ``P = I + Q / (1.02 Lambda)``), ``"sor"``
        (Gauss-Seidel/SOR sweeps).
    rtol, atol : tolerances of the stopping rule above.
    maxiter : iteration cap (default 3000 for Krylov methods, 100,000 for
        power, 10,000 for SOR).  One iteration is: an inner Krylov step for
        gmres, a BiCGSTAB step (2 products) for bicgstab, one product
        ``x P`` for power, one forward sweep for sor.  ``direct`` ignores
        ``maxiter`` and reports its LU solves: 1, plus iterative-refinement
        steps and a second factorisation if it needed them.
    x0 : initial distribution (length n) for iterative methods.
    callback : ``callback(niter, x, residual)`` with a copy of the normalised
        iterate ``x`` and its residual; called after every iteration by
        bicgstab, power and sor, and after every restart cycle by gmres.
    omega : relaxation factor for ``sor`` (1.0 = Gauss-Seidel).

    Returns
    -------
    SolverResult

    Raises
    ------
    ValueError : not square, NaN/inf, negative off-diagonal, rows not
        summing to 0, unknown method.
    NotErgodicError : more than one closed class.  With exactly one closed
        class and transient states, the chain is solved on the closed class
        and ``x`` is 0 on transient states.

    Examples
    --------
    Two states, rate a from 0 to 1 and b back: ``pi = [b, a] / (a + b)``.

    >>> import scipy.sparse as sp
    >>> a, b = 2.0, 3.0
    >>> Q = sp.csr_array([[-a, a], [b, -b]])
    >>> res = steady_state(Q, method="gmres", rtol=1e-12)
    >>> res.converged, res.x.round(6).tolist()
    (True, [0.6, 0.4])
    """
    t0 = time.perf_counter()
    if method != "auto" and method not in _SOLVERS:
        raise ValueError(f"unknown method {method!r}; choose 'auto' or one of {METHODS}")
    if not (rtol >= 0 and atol >= 0):
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if not 0.0 < omega < 2.0:
        raise ValueError(f"omega must be in (0, 2), got {omega}")
    if maxiter is not None and maxiter < 0:
        raise ValueError(f"maxiter must be >= 0, got {maxiter}")
    G, offdiag, lam = _generator(Q)
    n = G.shape[0]
    if x0 is not None:
        x0 = np.array(x0, dtype=np.float64).ravel()
        if x0.shape != (n,) or not np.all(np.isfinite(x0)) or (x0 < 0).any() or x0.sum() <= 0:
            raise ValueError("x0 must be a finite non-negative vector of length n with positive sum")
    tol = atol + rtol * lam

    classes = _closed_classes(offdiag)
    if len(classes) > 1:
        raise NotErgodicError(_not_ergodic_message(classes, n))
    states = classes[0]
    m = states.size
    transient_note = f"; {n - m} transient states have probability 0" if m < n else ""

    def finish(x_sub, out, used, fallback=()):
        x = x_sub
        if m < n:
            x = np.zeros(n)
            x[states] = x_sub
        converged = bool(out.residual <= tol)
        status = _CONVERGED if converged else (out.status or _BREAKDOWN)
        return SolverResult(
            x=x, converged=converged, status=status,
            message=f"{_STATUS_TEXT[status]}: {out.message}{transient_note}",
            niter=int(out.niter), residual=float(out.residual),
            seconds=time.perf_counter() - t0, method=used, fallback_from=tuple(fallback),
        )

    if m == 1:  # a single state, or one absorbing state reached from all others
        used = "direct" if method == "auto" else method
        out = _Out(np.ones(1), 0.0, _CONVERGED, "single closed state", 0)
        return finish(np.ones(1), out, used)

    if m < n:
        G = G[states][:, states]
        if x0 is not None:
            x0 = x0[states]
            x0 = x0 / x0.sum() if x0.sum() > 0 else None
    elif x0 is not None:
        x0 = x0 / x0.sum()
    QT = G.T.tocsr()
    if callback is not None and m < n:
        user_callback = callback

        def callback(niter, x_sub, residual):
            x = np.zeros(n)
            x[states] = x_sub
            user_callback(niter, x, residual)

    if method != "auto":
        chain = (method,)
    else:
        chain = _FALLBACK_CHAIN if m <= AUTO_DIRECT_MAX_STATES else _ITERATIVE_CHAIN

    tried, failures = [], []
    best_x, best_res = x0, (_residual(QT, x0) if x0 is not None else math.inf)
    for used in chain:
        it = DEFAULT_MAXITER.get(used, 0) if maxiter is None else int(maxiter)
        if method == "auto" and used == "sor" and maxiter is None:
            it = AUTO_SOR_SWEEPS
        out = _SOLVERS[used](G, QT, tol, it, best_x, callback, omega)
        if out.residual <= tol or used == chain[-1]:
            break
        tried.append(used)
        failures.append(f"{used}: {_STATUS_TEXT[out.status]}, residual {out.residual:.3g}")
        if out.residual < best_res:
            best_x, best_res = out.x, out.residual
    if failures:
        out.message += "; after " + "; ".join(failures)
    return finish(out.x, out, used, tried)
