"""Direct steady-state solution: sparse LU with iterative refinement.

The system pinned at one state (:func:`~spn.solvers.steady.common.pinned_system`)
is factorised first and refined while it misses the stopping rule (the normwise
residual and the balance of every state and group, :class:`~spn.solvers.steady.rule.Rule`).
The pinned equation is the one balance LU does not enforce, so a pinned state
that turns out unlikely is re-pinned at the state of the largest flow; if that
still fails, the textbook system with a normalisation row is factorised instead. Small
probabilities that still do not balance are re-solved as a block
(:func:`~spn.solvers.steady.common.repair`).

>>> import scipy.sparse as sp
>>> r = direct(sp.csr_array([[-2.0, 1.0], [2.0, -1.0]]))   # Q^T of rates 2 (0 -> 1), 1 (1 -> 0)
>>> r.converged, r.x.round(6).tolist(), r.niter
(True, [0.333333, 0.666667], 1)
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from spn.defaults import RTOL
from spn.solvers.steady.common import (
    BREAKDOWN, SETUP_FAILED, Balance, Rule, SolverResult, column_ordering, finish, first_pin,
    normalise, pinned_system, repair, start,
)

__all__ = ["direct"]

# Fixed-precision refinement makes an LU solution component-wise backward stable in one
# step or two when the factorisation is not too inaccurate (Skeel 1980); more do not help.
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


def _lu_attempt(A, b, rule):
    """Sparse LU solve of ``A y = b`` plus refinement: (x, balance, solves, refinement steps)."""
    lu = sla.splu(A.tocsc(), permc_spec=column_ordering(A, "COLAMD"))
    y = lu.solve(b)
    x = normalise(y)
    if x is None:
        return None, Balance(np.inf), 1, 0
    bal = rule.check(x, full=True)
    refined = 0
    while not rule.met(bal) and refined < _REFINEMENT_STEPS:
        y2 = y + lu.solve(b - A @ y)
        x2 = normalise(y2)
        refined += 1
        if x2 is None:
            break
        bal2 = rule.check(x2, full=True)
        if rule.excess(bal2) >= rule.excess(bal):
            break
        y, x, bal = y2, x2, bal2
    return x, bal, 1 + refined, refined


def direct(QT, *, rtol=RTOL, atol=0.0, ctol=None, rule=None, maxiter=None, x0=None,
           callback=None) -> SolverResult:
    """Sparse LU solution of ``pi Q = 0`` for the transposed generator ``QT`` (CSR, irreducible).

    ``maxiter`` and ``callback`` are accepted for a uniform signature and ignored;
    ``x0`` only chooses the state pinned first (its likeliest). ``niter`` counts LU
    solves: 1, plus refinement steps and further factorisations if needed.
    """
    started = time.perf_counter()
    rule = rule or Rule(QT, rtol=rtol, atol=atol, ctol=ctol)
    k = first_pin(x0)
    attempts = [(pinned_system, k)]
    x, bal, niter, refined, notes, errors = None, Balance(np.inf), 0, 0, [], []
    while attempts:
        system, k = attempts.pop(0)
        try:
            x1, bal1, n1, r1 = _lu_attempt(*system(QT, k), rule)
        except MemoryError:
            errors.append("out of memory")
            break  # any other system only adds fill
        except RuntimeError as exc:
            errors.append(str(exc))
            x1, bal1, n1, r1 = None, Balance(np.inf), 0, 0
        niter += n1
        if x1 is not None and (x is None or rule.excess(bal1) < rule.excess(bal)):
            x, bal, refined = x1, bal1, r1
        if x is not None and (rule.met(bal) or not rule.verifiable(bal)):
            break      # converged, or no other system can be verified either
        if system is not pinned_system:
            break
        heaviest = int(np.argmax(x * -QT.diagonal())) if x is not None else k
        if heaviest != k and len(notes) == 0:
            # the pinned equation is the one balance LU does not enforce: pin where it matters
            # least, at the state of the largest flow
            notes.append(f"re-pinned at state {heaviest}")
            attempts.append((pinned_system, heaviest))
        else:
            # the pinned state is much less likely than others: A is ill-conditioned;
            # use the textbook normalisation row (more fill, but pivoting copes)
            why = "singular" if errors else "inaccurate"
            notes.append(f"pinned system {why}, re-solved with the normalisation row")
            attempts.append((_normalised_system, heaviest))
    if x is None:
        x = start(x0, QT.shape[0])
        status = SETUP_FAILED if errors else BREAKDOWN
        why = "; ".join(errors) if errors else "NaN/inf"
        return finish(x, status, f"sparse LU failed: {why}", niter, rule=rule, method="direct",
                      started=started)
    if bal.residual <= rule.bound and not rule.met(bal) and rule.verifiable(bal):
        # probabilities far below the others come out of LU with little relative accuracy
        x2, solved = repair(QT, x, rule)
        bal2 = rule.check(x2, full=True) if solved else bal
        if solved and rule.excess(bal2) < rule.excess(bal):
            x, bal = x2, bal2
            notes.append(f"{solved} states re-solved by sparse LU of their block")
    msg = "sparse LU solve" + (f" + {refined} refinement steps" if refined else "")
    msg += "".join(f"; {note}" for note in notes)
    if not rule.met(bal):
        msg += " (rounding limit)"
    return finish(x, BREAKDOWN, msg, niter, rule=rule, method="direct", started=started)
