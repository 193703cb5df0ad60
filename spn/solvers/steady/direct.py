"""Direct steady-state solution: sparse LU with iterative refinement.

The system pinned at one state (:func:`~spn.solvers.steady.common.pinned_system`)
is factorised first; when its residual misses the stopping rule
``||pi Q||_1 <= atol + rtol * Lambda`` even after refinement, the textbook system
with a normalisation row is factorised instead.

>>> import scipy.sparse as sp
>>> r = direct(sp.csr_array([[-2.0, 1.0], [2.0, -1.0]]))   # Q^T of rates 2 (0 -> 1), 1 (1 -> 0)
>>> r.converged, r.x.round(6).tolist(), r.niter
(True, [0.333333, 0.666667], 1)
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from spn.defaults import RTOL
from spn.solvers.steady.common import (
    BREAKDOWN, SETUP_FAILED, SolverResult, column_ordering, finish, first_pin, max_rate,
    normalise, pinned_system, residual, residual_bound, start,
)

__all__ = ["direct"]

_REFINEMENT_STEPS = 2


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


def _lu_attempt(A, b, QT, bound):
    """Sparse LU solve of ``A y = b`` plus refinement: (x, residual, solves, refinement steps)."""
    lu = sla.splu(A.tocsc(), permc_spec=column_ordering(A, "COLAMD"))
    y = lu.solve(b)
    x = normalise(y)
    if x is None:
        return None, math.inf, 1, 0
    res = residual(QT, x)
    refined = 0
    # iterative refinement on A y = b while the stopping rule is not met
    while res > bound and refined < _REFINEMENT_STEPS:
        y2 = y + lu.solve(b - A @ y)
        x2 = normalise(y2)
        refined += 1
        if x2 is None:
            break
        res2 = residual(QT, x2)
        if res2 >= res:
            break
        y, x, res = y2, x2, res2
    return x, res, 1 + refined, refined


def direct(QT, *, rtol=RTOL, atol=0.0, maxiter=None, x0=None, callback=None) -> SolverResult:
    """Sparse LU solution of ``pi Q = 0`` for the transposed generator ``QT`` (CSR, irreducible).

    ``maxiter`` and ``callback`` are accepted for a uniform signature and ignored;
    ``x0`` only chooses the state pinned first (its likeliest). ``niter`` counts LU
    solves: 1, plus refinement steps and a second factorisation if needed.
    """
    started = time.perf_counter()
    bound = residual_bound(max_rate(QT), rtol, atol)
    k = first_pin(x0)
    x, res, niter, refined, note, errors = None, math.inf, 0, 0, "", []
    for system in (pinned_system, _normalised_system):
        if system is _normalised_system:
            # pinned state much less likely than others: A is ill-conditioned;
            # use the textbook normalisation row (more fill, but pivoting copes)
            why = "singular" if errors else "inaccurate"
            note = f"; pinned system {why}, re-solved with the normalisation row"
        try:
            x1, res1, n1, refined = _lu_attempt(*system(QT, k), QT, bound)
        except MemoryError:
            errors.append("out of memory")
            break  # the normalisation row only adds fill
        except RuntimeError as exc:
            errors.append(str(exc))
            continue
        niter += n1
        if res1 < res:
            x, res = x1, res1
        if res <= bound:
            break
    if x is None:
        x = start(x0, QT.shape[0])
        status = SETUP_FAILED if errors else BREAKDOWN
        why = "; ".join(errors) if errors else "NaN/inf"
        return finish(x, residual(QT, x), status, f"sparse LU failed: {why}", niter,
                      bound=bound, method="direct", started=started)
    msg = "sparse LU solve" + (f" + {refined} refinement steps" if refined else "") + note
    if res > bound:
        msg += ": residual above tolerance (rounding limit)"
    return finish(x, res, BREAKDOWN, msg, niter, bound=bound, method="direct", started=started)
