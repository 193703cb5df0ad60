"""What every steady-state method shares: the result object, the stopping rule, normalisation.

A method solves ``pi Q = 0``, ``sum(pi) = 1`` for the transposed generator ``QT``
of an irreducible chain. With ``pi`` normalised to sum 1 and ``Lambda = max_i |q_ii|``,
every method stops by one rule::

    converged  <=>  ||pi Q||_1 <= atol + rtol * Lambda

and reports ``residual = ||x Q||_1`` of the ``x`` it returns (negatives clipped to
0, then scaled to sum 1), so residuals compare across methods.

>>> import numpy as np, scipy.sparse as sp
>>> QT = sp.csr_array([[-2.0, 1.0], [2.0, -1.0]])
>>> residual_bound(max_rate(QT), rtol=1e-3, atol=0.5)
0.502
>>> residual(QT, np.array([1 / 3, 2 / 3])) < 1e-15
True
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

__all__ = [
    "SolverResult", "CONVERGED", "MAXITER", "BREAKDOWN", "SETUP_FAILED", "STATUS_TEXT",
    "DEFAULT_MAXITER", "max_rate", "residual_bound", "residual", "normalise", "normalise_in_place",
    "start", "begin", "first_pin", "pinned_system", "column_ordering", "finish",
]

#: ``SolverResult.status`` codes
CONVERGED, MAXITER, BREAKDOWN, SETUP_FAILED = 0, 1, 2, 3

STATUS_TEXT = {
    CONVERGED: "converged",
    MAXITER: "maxiter reached",
    BREAKDOWN: "breakdown or stagnation",
    SETUP_FAILED: "set-up failed",
}

#: ``maxiter`` of each iterative method when none is given (what one iteration is: see ``steady_state``)
DEFAULT_MAXITER = {"gmres": 3000, "bicgstab": 3000, "power": 100_000, "sor": 10_000}

#: natural column order for LU/ILU when the envelope is at most this many times nnz
_NATURAL_ENVELOPE = 20


@dataclass(frozen=True)
class SolverResult:
    """Outcome of a steady-state solve (shaped like SciPy's ``OptimizeResult``).

    ``x``: stationary distribution (float64, ``x >= 0``, ``sum(x) == 1``).
    ``converged``: ``residual <= atol + rtol * Lambda``.
    ``status``: 0 converged, 1 ``maxiter`` reached, 2 breakdown or stagnation
    (includes a direct solve whose residual stays above the tolerance),
    3 set-up failed (LU factorisation singular or out of memory).
    ``niter``: iterations (see ``steady_state``).
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


def max_rate(QT) -> float:
    """``Lambda = max_i |q_ii|`` of a (transposed) generator."""
    return float(np.abs(QT.diagonal()).max(initial=0.0))


def residual_bound(lam: float, rtol: float, atol: float) -> float:
    """The right-hand side of the stopping rule, ``atol + rtol * Lambda``."""
    if not (rtol >= 0 and atol >= 0):
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    return atol + rtol * lam


def residual(QT, x) -> float:
    """``||x Q||_1``."""
    return float(np.abs(QT @ x).sum())


def normalise(y):
    """Clip negatives to 0 and scale to sum 1 (a new vector); None if impossible."""
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


def normalise_in_place(y):
    """:func:`normalise` without new vectors (``y`` is overwritten); None if impossible."""
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


def start(x0, n):
    """A fresh normalised first iterate: ``x0``, or the uniform distribution."""
    x = normalise(np.full(n, 1.0 / n) if x0 is None else np.asarray(x0, dtype=np.float64))
    if x is None or x.shape != (n,):
        raise ValueError("x0 must be a finite non-negative vector of length n with positive sum")
    return x


def begin(QT, method, rtol, atol, maxiter, x0):
    """What an iterative method starts from: ``(started, bound, maxiter, x)``.

    The clock, the bound ``atol + rtol * Lambda`` of the stopping rule, ``maxiter``
    (the method's default when None) and a fresh normalised first iterate.
    """
    started = time.perf_counter()
    bound = residual_bound(max_rate(QT), rtol, atol)
    maxiter = DEFAULT_MAXITER[method] if maxiter is None else int(maxiter)
    return started, bound, maxiter, start(x0, QT.shape[0])


def first_pin(x0) -> int:
    """The state to pin first: the likeliest one of ``x0``."""
    return 0 if x0 is None else int(np.argmax(x0))


def pinned_system(QT, k):
    """Non-singular ``A y = b`` equivalent to ``Q^T pi = 0`` plus normalisation.

    Equation ``k`` of ``Q^T pi = 0`` (redundant: the equations sum to 0) is
    replaced by ``c * y_k = c`` with ``c = |q_kk|``; then ``y = pi / pi_k`` and
    ``pi = y / sum(y)``.  Unlike the textbook row of ones (``sum(pi) = 1``)
    this keeps ``A`` as sparse as ``Q``, and ``A`` stays column diagonally
    dominant, so LU needs no pivoting: sparse LU is 5-15 times faster.  But
    ``A`` is as ill-conditioned as ``max(pi) / pi_k``: callers start at a guess
    for ``k`` and re-pin at ``argmax(pi)`` (Krylov) or switch to the textbook
    system (direct).
    """
    A = QT.copy()
    lo, hi = A.indptr[k], A.indptr[k + 1]
    c = float(-QT.diagonal()[k])
    A.data[lo:hi] = np.where(A.indices[lo:hi] == k, c, 0.0)
    A.eliminate_zeros()
    b = np.zeros(QT.shape[0])
    b[k] = c
    return A, b


def column_ordering(A, otherwise: str) -> str:
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


def finish(x, res, status, message, niter, *, bound, method, started) -> SolverResult:
    """The :class:`SolverResult` of a method: ``converged`` and ``status`` follow the stopping rule."""
    converged = bool(res <= bound)
    status = CONVERGED if converged else (status or BREAKDOWN)
    return SolverResult(
        x=x, converged=converged, status=status, message=f"{STATUS_TEXT[status]}: {message}",
        niter=int(niter), residual=float(res), seconds=time.perf_counter() - started, method=method,
    )
