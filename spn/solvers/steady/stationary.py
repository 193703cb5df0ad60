"""Stationary iterations for the steady state: power iteration and Gauss-Seidel/SOR sweeps.

Gauss-Seidel sweeps run compiled (Numba). Each kernel has one signature with fixed
dtypes (``int32`` indices, ``float64`` values, C-contiguous), so it compiles once per
installation and is loaded from Numba's cache afterwards; the callers convert their
arrays to those dtypes. Both methods stop by the rule of every method (normwise
residual and balance, :class:`~spn.solvers.steady.rule.Rule`).

>>> import scipy.sparse as sp
>>> QT = sp.csr_array([[-2.0, 1.0], [2.0, -1.0]])     # Q^T of rates 2 (0 -> 1), 1 (1 -> 0)
>>> [r.x.round(6).tolist() for r in (sor(QT), power(QT))]
[[0.333333, 0.666667], [0.333333, 0.666667]]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from spn.defaults import RTOL
from spn.solvers.steady.common import (
    BREAKDOWN, CONVERGED, MAXITER, SETUP_FAILED, Balance, SolverResult, begin, finish,
    normalise_in_place, start,
)

__all__ = ["power", "sor", "sor_sweep", "residual_norm"]

_INT32_MAX = np.iinfo(np.int32).max


@njit("void(int32[::1], int32[::1], float64[::1], float64[::1], float64[::1], float64)",
      cache=True, nogil=True)
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


@njit("float64(int32[::1], int32[::1], float64[::1], float64[::1])", cache=True, nogil=True)
def _residual_norm(indptr, indices, data, x):
    """``||Q^T x||_1`` without a new vector."""
    total = 0.0
    for i in range(len(indptr) - 1):
        row = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            row += data[p] * x[indices[p]]
        total += abs(row)
    return total


def _kernel_arrays(A):
    """``(indptr, indices, data)`` of CSR ``A`` in the kernels' dtypes."""
    if A.nnz > _INT32_MAX or A.shape[0] >= _INT32_MAX:
        raise ValueError(f"{A.nnz:,} transitions: too many for the int32 indices of the compiled sweep")
    return (np.require(A.indptr, np.int32, ["C", "W"]), np.require(A.indices, np.int32, ["C", "W"]),
            np.require(A.data, np.float64, ["C", "W"]))


def _vector(x):
    if not (x.dtype == np.float64 and x.ndim == 1 and x.flags.c_contiguous and x.flags.writeable):
        raise ValueError("x must be a writable, contiguous 1-D float64 array")
    return x


def sor_sweep(A, x, omega=1.0):
    """One SOR sweep on ``A x = 0`` (``A = Q^T``, canonical CSR), in place on float64 ``x``.

    With ``A = D + L + U`` (diagonal, strictly lower, strictly upper) it solves
    ``(D + omega L) x_new = -(omega U + (omega - 1) D) x_old`` row by row.

    >>> import numpy as np, scipy.sparse as sp
    >>> x = np.array([0.5, 0.5])
    >>> sor_sweep(sp.csr_array([[-2.0, 1.0], [2.0, -1.0]]), x)
    >>> x.tolist()
    [0.25, 0.5]
    """
    indptr, indices, data = _kernel_arrays(A)
    _sor_sweep(indptr, indices, data, np.require(A.diagonal(), np.float64, ["C", "W"]), _vector(x),
               float(omega))


def residual_norm(A, x) -> float:
    """``||A x||_1`` for canonical CSR ``A`` (``Q^T``) and float64 ``x``, without a new vector.

    >>> import numpy as np, scipy.sparse as sp
    >>> residual_norm(sp.csr_array([[-2.0, 1.0], [2.0, -1.0]]), np.array([0.5, 0.5]))
    1.0
    """
    indptr, indices, data = _kernel_arrays(A)
    return float(_residual_norm(indptr, indices, data, _vector(x)))


#: ``_iterate`` stopped on NaN/inf (else on a chain too stiff to verify, see ``Rule.verifiable``)
_NAN = "; breakdown (NaN/inf)"


def _iterate(step, x, bal, *, rule, maxiter, callback):
    """Repeat ``bal = step(x, bal)`` (in place on ``x``; None on breakdown) until the stopping rule.

    Returns ``(status, niter, note)``; ``callback(niter, x, residual)`` runs after every step.
    """
    niter = 0
    while not rule.met(bal):
        if not rule.verifiable(bal):
            return BREAKDOWN, niter, ""         # more iterations cannot make it verifiable
        if niter >= maxiter:
            return MAXITER, niter, ""
        new = step(x, bal)
        niter += 1
        if new is None:
            return BREAKDOWN, niter, _NAN
        bal = new
        if callback is not None:
            callback(niter, x.copy(), bal.residual)
    return CONVERGED, niter, ""


def power(QT, *, rtol=RTOL, atol=0.0, ctol=None, rule=None, maxiter=None, x0=None,
          callback=None) -> SolverResult:
    """Power iteration ``x <- x P`` on ``P = I + Q / (1.02 Lambda)``, for the transposed generator ``QT``.

    One iteration is one product; ``callback(niter, x, residual)`` runs after every one.
    """
    started, rule, maxiter, x = begin(QT, "power", rtol, atol, ctol, maxiter, x0, rule)
    lam_u = 1.02 * float(-QT.diagonal().min())
    inv = 1.0 / lam_u
    r = QT @ x

    def step(x, bal):
        nonlocal r
        x += inv * r                     # x P = x + (x Q) / Lambda_u, with x Q = r
        if normalise_in_place(x) is None:
            return None
        r = QT @ x
        return rule.check(x, r)

    status, niter, note = _iterate(step, x, rule.check(x, r), rule=rule, maxiter=maxiter,
                                   callback=callback)
    msg = f"power iteration on P = I + Q/{lam_u:.6g}" + note
    if note:
        x = start(x0, QT.shape[0])
    return finish(x, status, msg, niter, rule=rule, method="power", started=started)


def sor(QT, *, rtol=RTOL, atol=0.0, ctol=None, rule=None, maxiter=None, x0=None,
        callback=None, omega=1.0) -> SolverResult:
    """Gauss-Seidel (``omega = 1``) or SOR sweeps on ``Q^T pi = 0``, for the transposed generator ``QT``.

    One iteration is one forward sweep (:func:`sor_sweep`), in place: no triangular
    factor and no new vector per sweep (on chains of millions of states fresh vectors
    cost page faults that outweigh the arithmetic). A sweep that does not lower the
    residual is averaged with the previous iterate: Gauss-Seidel can cycle (iteration
    matrix with eigenvalues of modulus 1 besides 1, e.g. on cyclic chains), and the
    average keeps ``pi`` fixed while it damps those modes.
    ``callback(niter, x, residual)`` runs after every sweep.
    """
    if not 0.0 < omega < 2.0:
        raise ValueError(f"omega must be in (0, 2), got {omega}")
    started, rule, maxiter, x = begin(QT, "sor", rtol, atol, ctol, maxiter, x0, rule)
    try:
        indptr, indices, data = _kernel_arrays(QT)
    except ValueError as exc:
        return finish(x, SETUP_FAILED, str(exc), 0, rule=rule, method="sor", started=started)
    d = np.require(QT.diagonal(), np.float64, ["C", "W"])
    omega = float(omega)
    previous = np.empty_like(x)
    damped = 0

    def balance(x):
        # the residual from the compiled pass; the rest of the rule once it holds
        res = float(_residual_norm(indptr, indices, data, x))
        return rule.check(x) if res <= rule.bound else Balance(res)

    def step(x, bal):
        nonlocal damped
        previous[:] = x
        _sor_sweep(indptr, indices, data, d, x, omega)
        if normalise_in_place(x) is None:
            x[:] = previous
            return None
        new = balance(x)
        if not rule.progress(new, bal):
            x += previous
            x *= 0.5
            normalise_in_place(x)
            new = balance(x)
            damped += 1
        return new

    status, niter, note = _iterate(step, x, balance(x), rule=rule, maxiter=maxiter, callback=callback)
    msg = "Gauss-Seidel" if omega == 1.0 else f"SOR (omega={omega:g})"
    msg += " sweeps on Q^T"
    if damped:
        msg += f"; {damped} sweeps damped (no progress)"
    msg += note
    return finish(x, status, msg, niter, rule=rule, method="sor", started=started)
