"""What every steady-state method shares: the result object, the stopping rule, normalisation.

A method solves ``pi Q = 0``, ``sum(pi) = 1`` for the transposed generator ``QT``
of an irreducible chain. Every method stops by one rule
(:class:`~spn.solvers.steady.rule.Rule`: the normwise residual, and the balance of
every state and of every group of states), and reports ``residual = ||x Q||_1`` and
``imbalance`` of the ``x`` it returns (negatives clipped to 0, then scaled to sum 1),
so they compare across methods.

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
import scipy.sparse.linalg as sla

from spn.solvers.steady.rule import UNIT_ROUNDOFF, Balance, Rule, max_rate, residual_bound

__all__ = [
    "BREAKDOWN", "CONVERGED", "DEFAULT_MAXITER", "MAXITER", "SETUP_FAILED", "STATUS_TEXT",
    "Balance", "Rule", "SolverResult", "begin", "column_ordering", "finish", "first_pin",
    "max_rate", "normalise", "normalise_in_place", "pinned_system", "repair", "residual",
    "residual_bound", "start",
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
    ``converged``: ``x`` meets the stopping rule (:class:`~spn.solvers.steady.rule.Rule`).
    ``status``: 0 converged, 1 ``maxiter`` reached, 2 breakdown or stagnation
    (includes a direct solve whose residual stays above the tolerance),
    3 set-up failed (LU factorisation singular or out of memory).
    ``niter``: iterations (see ``steady_state``).
    ``residual``: ``||x Q||_1``; ``imbalance``: how far the worst state, or group of
    states, is from balance (:class:`~spn.solvers.steady.rule.Rule`).
    ``seconds``: wall time of the whole call.
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
    imbalance: float = math.nan


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


def begin(QT, method, rtol, atol, ctol, maxiter, x0, rule=None):
    """What an iterative method starts from: ``(started, rule, maxiter, x)``.

    The clock, the stopping :class:`Rule` (``rule``, or one for ``rtol, atol, ctol``),
    ``maxiter`` (the method's default when None) and a fresh normalised first iterate.
    """
    started = time.perf_counter()
    rule = rule or Rule(QT, rtol=rtol, atol=atol, ctol=ctol)
    maxiter = DEFAULT_MAXITER[method] if maxiter is None else int(maxiter)
    return started, rule, maxiter, start(x0, QT.shape[0])


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


#: ``repair`` solves for at most this many states at once (a sparse LU of their block)
REPAIR_MAX_STATES = 500_000


def repair(QT, x, rule, *, rounds=3):
    """Re-solve the states that do not balance, the others held fixed: ``(x, states re-solved)``.

    A Krylov iterate is accurate in norm but carries an absolute noise on every entry, about
    its residual over the rates, or a roundoff of the largest probability; it leaves the
    probabilities within ``4 / ctol`` of that noise with too little relative accuracy (or
    clipped to 0). Those states, and the others that do not balance, ``B``, solve
    ``x_B Q_BB = -x_R Q_RB`` given the rest ``R`` (one block Gauss-Seidel step, by sparse LU
    of ``Q_BB``); a few rounds catch the neighbours whose inflow it changed. Returns ``x``
    unchanged when that fails or ``B`` is too large.
    """
    solved = 0
    for round_ in range(rounds):
        B = rule.unbalanced(x)
        if round_ == 0:         # later rounds: only what the first one left unbalanced
            noise = max(residual(QT, x) / max(max_rate(QT), 1e-300), UNIT_ROUNDOFF * float(x.max()))
            B = np.union1d(B, np.flatnonzero(x < 4.0 * noise / max(rule.ctol, 1e-300)))
        if B.size == 0 or B.size > REPAIR_MAX_STATES or B.size == x.size:
            break
        rest = np.ones(x.size, dtype=bool)
        rest[B] = False
        rows = QT[B]
        A = rows[:, B].tocsc()
        try:
            y = sla.splu(A, permc_spec=column_ordering(A, "COLAMD")).solve(-(rows[:, rest] @ x[rest]))
        except (RuntimeError, MemoryError):
            break
        z = x.copy()
        z[B] = y
        z = normalise(z)
        if z is None:
            break
        x, solved = z, solved + B.size
    return x, solved


def finish(x, status, message, niter, *, rule, method, started, entrywise=False) -> SolverResult:
    """The :class:`SolverResult` of a method: ``converged`` and ``status`` follow the stopping rule,
    checked here on ``x`` itself (``entrywise``: see ``Rule.met``); a failed check is named in
    the message."""
    bal = rule.check(x, full=True)
    valid = bool(np.all(np.isfinite(x)) and np.all(x >= 0) and abs(x.sum() - 1.0) <= 1e-9)
    converged = valid and rule.met(bal, entrywise=entrywise)
    status = CONVERGED if converged else (status or BREAKDOWN)
    why = "" if converged else (rule.verdict(bal) if valid else "not a probability vector")
    return SolverResult(
        x=x, converged=converged, status=status,
        message=f"{STATUS_TEXT[status]}: {message}" + (f"; {why}" if why else ""),
        niter=int(niter), residual=bal.residual, seconds=time.perf_counter() - started, method=method,
        imbalance=bal.imbalance,
    )
