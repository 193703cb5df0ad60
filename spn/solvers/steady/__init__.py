"""Steady-state distribution of a CTMC given by a sparse generator ``Q``.

``steady_state(Q)`` finds ``pi`` with ``pi Q = 0``, ``sum(pi) = 1``, ``pi >= 0``.
It validates ``Q`` (:mod:`spn.ctmc`), solves the chain on its closed class and
hands it to one method per family: ``direct`` (sparse LU), ``gth`` (dense,
subtraction-free state reduction), ``krylov`` (GMRES, BiCGSTAB), ``stationary``
(power, Gauss-Seidel/SOR; ``gth`` and these load Numba only when they run).

Every method uses the same stopping rule (:mod:`spn.solvers.steady.rule`). With ``pi``
normalised to sum 1, ``r = pi Q``, ``Lambda = max_i |q_ii|``, ``(|pi| |Q|)_i = inflow_i +
outflow_i`` (the probability flow through state ``i``) and ``0/0 := 0``::

    converged  <=>  ||r||_1 <= atol + rtol * Lambda                              (normwise)
               and  max_i |r_i| / ((|pi| + nu) |Q|)_i <= ctol                   (every state)
               and  |sum of r_i beyond e| <= ctol * (flow across e), every e   (every group)

    ctol = 1000 (rtol + atol / Lambda)    (1e-7 at the default rtol = 1e-10)

The second part is the component-wise backward error: every state's inflow and outflow
agree to ``ctol`` relative to the flow through it (``nu`` = 2e-292 keeps underflowing
probabilities out). The third asks the same of every group of states hanging from an edge
``e`` of the spanning tree of largest flows. Together they make ``pi`` the exact stationary
vector of rates perturbed relatively by at most ``ctol``, which moves no probability by
more than a factor ``((1 + ctol) / (1 - ctol))^(n-1)`` (O'Cinneide 1993): stationary
vectors are well-conditioned under relative perturbations of the rates, however stiff the
chain. A chain so stiff that the rounding of ``r`` hides ``ctol`` across some slow
transition cannot be verified this way: only ``gth``, entrywise accurate by construction,
converges on it (groups holding under 1e-12 of probability excepted).

The rule is checked by the caller on the ``x`` of every method, ``direct`` included;
``residual`` and ``imbalance`` of the result refer to that ``x`` (after clipping tiny
negatives to 0 and renormalising), so they compare across methods. Why: the normwise
residual is dominated by the fastest states, so on a stiff chain it lets the flow through
a slow, likely state be wrong by orders of magnitude (think times of 1e4 s against tasks of
1e-3 s: Gauss-Seidel stopped after 3 sweeps with R 23 % low).

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
    CONVERGED, DEFAULT_MAXITER, STATUS_TEXT, SolverResult,
)
from spn.solvers.steady.rule import CTOL_FACTOR, Rule, residual_bound

__all__ = ["SolverResult", "steady_state", "METHODS", "SOLVERS", "DEFAULT_MAXITER"]

#: ``auto`` uses ``direct`` up to this many states (of the chain solved), else Gauss-Seidel.
#: Measured on SAN chains (benchmarks/run.py): Gauss-Seidel sweeps in the breadth-first state
#: order converge in 1 sweep on one-user DAG models and in ~30 on multi-user MapReduce chains,
#: where sparse LU fills badly (21,416 states: LU 4.5 s, GMRES+ILU 11 s, Gauss-Seidel 0.1 s).
AUTO_DIRECT_MAX_STATES = 2_000

#: Sweeps ``auto`` gives Gauss-Seidel before falling back to Krylov methods.
AUTO_SOR_SWEEPS = 1_000

#: ``auto`` falls back to GTH up to this many states (dense, O(n^3); measured: 0.4 s at 2,000
#: states, 2.4 s at 3,000, twice that with the other core busy).
AUTO_GTH_MAX_STATES = 3_000

#: Order in which ``auto`` falls back when a method does not converge. GTH (dense, ~1 s at
#: 2,000 states) is entrywise accurate on any chain, so it backs up the faster methods on
#: the small chains, whatever their stiffness; power iteration, last, rarely helps.
_FALLBACK_CHAIN = ("direct", "gmres", "bicgstab", "gth", "power")
_ITERATIVE_CHAIN = ("sor", "gmres", "bicgstab", "gth", "power")


def _compiled(module, name):
    """``spn.solvers.steady.<module>.<name>``, imported when it first runs: it loads Numba."""

    def run(QT, **options):
        import importlib

        return getattr(importlib.import_module(f"spn.solvers.steady.{module}"), name)(QT, **options)

    run.__name__ = run.__qualname__ = name
    return run


#: The method of each name: ``f(QT, *, rtol, atol, ctol, rule, maxiter, x0, callback)``
#: (``sor`` also takes ``omega``) solves the irreducible chain of the transposed generator
#: ``QT`` (canonical CSR) and returns a :class:`SolverResult` on that chain; ``rule``, when
#: given, is the stopping :class:`~spn.solvers.steady.rule.Rule` to use instead of one for
#: ``rtol, atol, ctol`` (the caller's, so that both check with the same tree).
SOLVERS = {
    "direct": direct.direct,
    "gth": _compiled("gth", "gth"),
    "gmres": krylov.gmres,
    "bicgstab": krylov.bicgstab,
    "power": _compiled("stationary", "power"),
    "sor": _compiled("stationary", "sor"),
}

#: Methods accepted by :func:`steady_state` (besides ``"auto"``).
METHODS = tuple(SOLVERS)


def steady_state(
    Q,
    *,
    method="auto",
    rtol=RTOL,
    atol=0.0,
    ctol=None,
    maxiter=None,
    x0=None,
    callback=None,
    omega=1.0,
) -> SolverResult:
    r"""Stationary distribution ``pi`` of the CTMC with generator ``Q``.

    Solves ``pi Q = 0``, ``sum(pi) = 1``.  Stopping rule, the same for every
    method (``r = pi Q``, ``Lambda = max_i |q_ii|``; in full above)::

        converged  <=>  ||r||_1 <= atol + rtol * Lambda
                   and  max_i |r_i| / ((|pi| + nu) |Q|)_i <= ctol
                   and  every group of states balances to ctol (rule.Rule)

    Never raises on non-convergence: check ``result.converged``; its message
    says which part of the rule failed, and by how much.

    Parameters
    ----------
    Q : sparse (n, n) generator: off-diagonals >= 0, rows sum to 0 (within
        ``1e-8 * Lambda``; the diagonal is then recomputed as minus the
        off-diagonal row sum, and the residual refers to that generator).
    method : ``"auto"`` (up to 2,000 states of the solved chain ``direct``, larger
        chains up to 1,000 Gauss-Seidel sweeps; then ``gmres -> bicgstab -> gth ->
        power`` while a method does not converge, ``gth`` only up to 3,000 states),
        ``"direct"`` (sparse LU), ``"gth"`` (dense GTH state reduction,
        entrywise accurate on any chain, at most 10,000 states), ``"gmres"``,
        ``"bicgstab"`` (ILU-preconditioned, Jacobi if ILU fails), ``"power"`` (on
        ``P = I + Q / (1.02 Lambda)``), ``"sor"`` (Gauss-Seidel/SOR sweeps).
    rtol, atol : tolerances of the normwise part of the rule.
    ctol : tolerance of the balance parts (default ``1000 * (rtol + atol / Lambda)``,
        at most 1: 1e-7 with the default ``rtol``).
    maxiter : iteration cap (default 3000 for Krylov methods, 100,000 for
        power, 10,000 for SOR).  One iteration is: an inner Krylov step for
        gmres, a BiCGSTAB step (2 products) for bicgstab, one product
        ``x P`` for power, one forward sweep for sor.  ``direct`` and ``gth``
        ignore ``maxiter``; ``direct`` reports its LU solves: 1, plus
        iterative-refinement steps and further factorisations if it needed them.
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
        summing to 0, unknown method, negative tolerances.
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

    A stiff chain (``pi`` = 1/3 each) on which the normwise residual cannot see that state
    0 is wrong by half; the component-wise part can:

    >>> Q = sp.csr_array([[-1e-6, 1e-6, 0.0], [1e-6, -1e6 - 1e-6, 1e6], [0.0, 1e6, -1e6]])
    >>> res = steady_state(Q, method="power", x0=[0.5, 0.25, 0.25], maxiter=0)
    >>> res.residual <= 1e-10 * 1e6, res.converged
    (True, False)
    >>> print(res.message.replace("; ", ";\n"))
    maxiter reached: power iteration on P = I + Q/1.02e+06;
    state 0 does not balance: inflow 2.5e-07, outflow 5e-07: imbalance 0.333 > ctol 1e-07
    >>> steady_state(Q).x.tolist() == [1 / 3] * 3
    True
    """
    t0 = time.perf_counter()
    if method != "auto" and method not in SOLVERS:
        raise ValueError(f"unknown method {method!r}; choose 'auto' or one of {METHODS}")
    if not 0.0 < omega < 2.0:
        raise ValueError(f"omega must be in (0, 2), got {omega}")
    if maxiter is not None and maxiter < 0:
        raise ValueError(f"maxiter must be >= 0, got {maxiter}")
    residual_bound(0.0, rtol, atol)         # rejects negative tolerances before any work
    if ctol is not None and not ctol >= 0:
        raise ValueError(f"ctol must be >= 0, got {ctol}")
    gen = check_generator(Q)
    bound = residual_bound(gen.max_rate, rtol, atol)
    if ctol is None:
        ctol = min(1.0, CTOL_FACTOR * (bound / gen.max_rate if gen.max_rate > 0 else rtol))
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
        return SolverResult(x=full(np.ones(1)), converged=True, status=CONVERGED,
                            message=f"{STATUS_TEXT[CONVERGED]}: single closed state{transient_note}",
                            niter=0, residual=0.0, seconds=time.perf_counter() - t0,
                            method="direct" if method == "auto" else method, imbalance=0.0)

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
        if m > AUTO_GTH_MAX_STATES:
            chain = tuple(used for used in chain if used != "gth")

    # Lambda is that of the whole chain, which the closed class may not reach:
    # the methods get the bound itself as their absolute tolerance
    rule = Rule(QT, atol=bound, ctol=ctol)
    tried, failures = [], []
    best_x, best_excess = x0, (rule.excess(rule.check(x0, full=True)) if x0 is not None else math.inf)
    for used in chain:
        it = maxiter
        if method == "auto" and used == "sor" and maxiter is None:
            it = AUTO_SOR_SWEEPS
        options = {"omega": omega} if used == "sor" else {}
        out = _verified(SOLVERS[used](QT, rtol=0.0, atol=bound, ctol=ctol, rule=rule, maxiter=it,
                                      x0=best_x, callback=callback, **options),
                        rule, entrywise=used == "gth")
        if out.converged or used == chain[-1]:
            break
        tried.append(used)
        failures.append(f"{used}: {STATUS_TEXT[out.status]}, residual {out.residual:.3g}, "
                        f"imbalance {out.imbalance:.3g}")
        excess = rule.excess(rule.check(out.x, full=True))
        if excess < best_excess:
            best_x, best_excess = out.x, excess
    message = out.message + ("; after " + "; ".join(failures) if failures else "") + transient_note
    return dataclasses.replace(out, x=full(out.x), message=message, method=used,
                               fallback_from=tuple(tried), seconds=time.perf_counter() - t0)


def _verified(out: SolverResult, rule: Rule, *, entrywise=False) -> SolverResult:
    """``out`` with ``converged`` re-checked on its ``x``: a probability vector meeting the rule
    (``entrywise``: see ``Rule.met``).

    Each method checks the rule itself; this check, by the caller, is the one that decides,
    so that no method (nor a replacement in ``SOLVERS``) can return an unchecked number.
    """
    x = out.x
    valid = bool(x.shape == (rule.QT.shape[0],) and np.all(np.isfinite(x)) and np.all(x >= 0)
                 and abs(x.sum() - 1.0) <= 1e-9)
    if not valid:
        x = np.full(rule.QT.shape[0], 1.0 / rule.QT.shape[0])
    bal = rule.check(x, full=True)
    converged = out.converged and valid and rule.met(bal, entrywise=entrywise)
    message = out.message
    if out.converged and not converged:
        message += "; " + (rule.verdict(bal) if valid else "not a probability vector (NaN, inf or < 0)")
    status = out.status if converged or out.status else 2
    return dataclasses.replace(out, x=x, converged=converged, status=status, message=message,
                               residual=bal.residual, imbalance=bal.imbalance)
