"""Steady-state distribution of a CTMC given by a sparse generator ``Q``.

``steady_state(Q)`` finds ``pi`` with ``pi Q = 0``, ``sum(pi) = 1``, ``pi >= 0``.
It validates ``Q`` (:mod:`spn.ctmc`), solves the chain on its closed class and
hands it to one method per family: ``direct`` (sparse LU), ``krylov`` (GMRES,
BiCGSTAB), ``stationary`` (power, Gauss-Seidel/SOR; loaded, with Numba, only when
one of them runs).

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

import dataclasses
import math
import time

import numpy as np

from spn.ctmc import check_generator, ergodic_class
from spn.defaults import RTOL
from spn.solvers.steady import direct, krylov
from spn.solvers.steady.common import (
    CONVERGED, DEFAULT_MAXITER, STATUS_TEXT, SolverResult, finish, residual, residual_bound,
)

__all__ = ["SolverResult", "steady_state", "METHODS", "SOLVERS", "DEFAULT_MAXITER"]

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


def _stationary(name):
    """``spn.solvers.steady.stationary.<name>``, imported when it first runs: it loads Numba."""

    def run(QT, **options):
        from spn.solvers.steady import stationary

        return getattr(stationary, name)(QT, **options)

    run.__name__ = run.__qualname__ = name
    return run


#: The method of each name: ``f(QT, *, rtol, atol, maxiter, x0, callback)`` (``sor`` also takes
#: ``omega``) solves the irreducible chain of the transposed generator ``QT`` (canonical CSR)
#: and returns a :class:`SolverResult` on that chain.
SOLVERS = {
    "direct": direct.direct,
    "gmres": krylov.gmres,
    "bicgstab": krylov.bicgstab,
    "power": _stationary("power"),
    "sor": _stationary("sor"),
}

#: Methods accepted by :func:`steady_state` (besides ``"auto"``).
METHODS = tuple(SOLVERS)


def steady_state(
    Q,
    *,
    method="auto",
    rtol=RTOL,
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
    if method != "auto" and method not in SOLVERS:
        raise ValueError(f"unknown method {method!r}; choose 'auto' or one of {METHODS}")
    if not 0.0 < omega < 2.0:
        raise ValueError(f"omega must be in (0, 2), got {omega}")
    if maxiter is not None and maxiter < 0:
        raise ValueError(f"maxiter must be >= 0, got {maxiter}")
    residual_bound(0.0, rtol, atol)         # rejects negative tolerances before any work
    gen = check_generator(Q)
    bound = residual_bound(gen.max_rate, rtol, atol)
    G = gen.Q
    n = G.shape[0]
    if x0 is not None:
        x0 = np.array(x0, dtype=np.float64).ravel()
        if x0.shape != (n,) or not np.all(np.isfinite(x0)) or (x0 < 0).any() or x0.sum() <= 0:
            raise ValueError("x0 must be a finite non-negative vector of length n with positive sum")

    states = ergodic_class(gen)
    m = states.size
    transient_note = f"; {n - m} transient states have probability 0" if m < n else ""

    def full(x_sub):
        if m == n:
            return x_sub
        x = np.zeros(n)
        x[states] = x_sub
        return x

    if m == 1:  # a single state, or one absorbing state reached from all others
        used = "direct" if method == "auto" else method
        out = finish(np.ones(1), 0.0, CONVERGED, "single closed state", 0, bound=bound, method=used,
                     started=t0)
        return dataclasses.replace(out, x=full(out.x), message=out.message + transient_note)

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

        def callback(niter, x_sub, res):
            user_callback(niter, full(x_sub), res)

    if method != "auto":
        chain = (method,)
    else:
        chain = _FALLBACK_CHAIN if m <= AUTO_DIRECT_MAX_STATES else _ITERATIVE_CHAIN

    tried, failures = [], []
    best_x, best_res = x0, (residual(QT, x0) if x0 is not None else math.inf)
    for used in chain:
        it = maxiter
        if method == "auto" and used == "sor" and maxiter is None:
            it = AUTO_SOR_SWEEPS
        options = {"omega": omega} if used == "sor" else {}
        # Lambda is that of the whole chain, which the closed class may not reach:
        # the methods get the bound itself as their absolute tolerance
        out = SOLVERS[used](QT, rtol=0.0, atol=bound, maxiter=it, x0=best_x, callback=callback,
                            **options)
        if out.residual <= bound or used == chain[-1]:
            break
        tried.append(used)
        failures.append(f"{used}: {STATUS_TEXT[out.status]}, residual {out.residual:.3g}")
        if out.residual < best_res:
            best_x, best_res = out.x, out.residual
    message = out.message + ("; after " + "; ".join(failures) if failures else "") + transient_note
    return dataclasses.replace(out, x=full(out.x), message=message, method=used,
                               fallback_from=tuple(tried), seconds=time.perf_counter() - t0)
