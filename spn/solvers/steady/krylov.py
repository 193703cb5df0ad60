"""Krylov steady-state methods: restarted GMRES and BiCGSTAB, ILU-preconditioned.

Both iterate on the system pinned at one state
(:func:`~spn.solvers.steady.common.pinned_system`), re-pinned at the likeliest state
when the pinned one turns out tiny; ILU falls back to a Jacobi preconditioner when
it fails or blows up. SciPy's own tolerances only end inner cycles early: the
stopping rule checked after every step is that of every method (normwise residual and
balance, :class:`~spn.solvers.steady.rule.Rule`). Once the residual is small, the states
whose probabilities the Krylov noise leaves inaccurate are re-solved directly
(:func:`~spn.solvers.steady.common.repair`).

>>> import scipy.sparse as sp
>>> QT = sp.csr_array([[-2.0, 1.0], [2.0, -1.0]])     # Q^T of rates 2 (0 -> 1), 1 (1 -> 0)
>>> [r.x.round(6).tolist() for r in (gmres(QT), bicgstab(QT))]
[[0.333333, 0.666667], [0.333333, 0.666667]]
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as sla

from spn.defaults import RTOL
from spn.solvers.steady.common import (
    BREAKDOWN, CONVERGED, MAXITER, SolverResult, begin, column_ordering, finish, first_pin,
    normalise, pinned_system, repair,
)

__all__ = ["gmres", "bicgstab"]

_GMRES_RESTART = 30
_ILU_DROP_TOL = 1e-5
_ILU_FILL_FACTOR = 10.0
_ILU_PROBE_MAX = 1e6
_STAGNATION_CYCLES = 20
_MAX_REPINS = 3
_REPIN_RATIO = 1e-8
_REPIN_PROGRESS = 1e-3
_MAX_BICGSTAB_RESTARTS = 10
_MAX_REPAIRS = 2
_RESTART = -1  # restart BiCGSTAB from the current iterate (re-pinned, or repaired)


class _Stop(Exception):
    """Raised from a SciPy callback to end the iteration early."""

    def __init__(self, status):
        self.status = status


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
        self.repairs = 0
        self.orderings = None     # ILU column orderings still to try, best guess first
        self.pin(k)

    def pin(self, k):
        self.k = k
        self.res_start = None
        self.A, self.b = pinned_system(self.QT, k)
        if self.orderings is None:
            # narrow envelope: natural order; otherwise COLAMD, which suits SAN chains,
            # then minimum degree, which suits grid-like chains (tried on stagnation)
            self.orderings = [column_ordering(self.A, "COLAMD"), "MMD_AT_PLUS_A"]
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

    def repaired(self, x, bal, rule):
        """``(x, bal)`` after :func:`~spn.solvers.steady.common.repair` of the states that do not
        balance, once the residual is small enough (and at most ``_MAX_REPAIRS`` times);
        None if that does not help."""
        if self.repairs >= _MAX_REPAIRS or not bal.residual <= rule.bound or rule.met(bal):
            return None
        self.repairs += 1
        x2, solved = repair(self.QT, x, rule)
        bal2 = rule.check(x2) if solved else bal
        if not solved or rule.excess(bal2) >= rule.excess(bal):
            return None
        self.notes.append(f"{solved} states re-solved by sparse LU of their block")
        return x2, bal2

    def describe(self, what):
        msg = f"{what} with {'Jacobi' if self.jacobi else 'ILU'} preconditioner"
        if self.repins:
            msg += f"; pinned state re-chosen {self.repins} times"
        if self.notes:
            msg += "; " + "; ".join(self.notes)
        return msg


def gmres(QT, *, rtol=RTOL, atol=0.0, ctol=None, rule=None, maxiter=None, x0=None,
          callback=None) -> SolverResult:
    """Restarted GMRES(30) on the pinned system of the transposed generator ``QT`` (CSR, irreducible).

    One iteration is one inner GMRES step; ``callback(niter, x, residual)`` runs after
    every restart cycle.
    """
    started, rule, maxiter, x = begin(QT, "gmres", rtol, atol, ctol, maxiter, x0, rule)
    sys_ = _PinnedKrylov(QT, first_pin(x0))
    restart = min(_GMRES_RESTART, QT.shape[0])
    bal = rule.check(x)
    best, since_best = rule.excess(bal), 0
    niter = 0
    shrink = 1.0
    while True:
        if rule.met(bal):
            status = CONVERGED
            break
        if not rule.verifiable(bal):
            status = BREAKDOWN
            break
        if niter >= maxiter:
            status = MAXITER
            break
        if since_best >= _STAGNATION_CYCLES or shrink < 1e-12:
            if sys_.next_ordering():
                since_best, shrink = 0, 1.0
                continue
            status = BREAKDOWN
            sys_.notes.append("stagnated")
            break
        m = min(restart, maxiter - niter)
        y = sys_.y_of(x)
        # SciPy's gmres ends a cycle early on the 2-norm of b - A y; ask for a
        # bit less than our rule needs and check our rule after every cycle.
        inner_atol = 0.5 * rule.bound * shrink * float(y.sum())
        count = [0]

        def cb(_pr, count=count):
            count[0] += 1

        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            y, _info = sla.gmres(
                sys_.A, sys_.b, x0=y, rtol=0.0, atol=inner_atol, restart=m, maxiter=1,
                M=sys_.M, callback=cb, callback_type="pr_norm",
            )
        niter += count[0]
        x_new = normalise(y)
        if x_new is None:
            if sys_.jacobi:
                sys_.notes.append("breakdown (NaN/inf)")
                status = BREAKDOWN
                break
            sys_.to_jacobi("ILU-preconditioned GMRES produced NaN/inf")
            continue
        x = x_new
        bal = rule.check(x)
        better = sys_.repaired(x, bal, rule)
        if better is not None:
            x, bal = better
        if callback is not None:
            callback(niter, x.copy(), bal.residual)
        excess = rule.excess(bal)
        if excess < best * 0.99:
            best, since_best = excess, 0
        else:
            since_best += 1
        if rule.met(bal):
            continue
        if sys_.should_repin(x, bal.residual):
            shrink, since_best = 1.0, 0
        elif count[0] < m:
            shrink *= 1e-2  # inner tolerance met but our rule not yet: tighten
    return finish(x, status, sys_.describe(f"GMRES({restart})"), niter, rule=rule, method="gmres",
                  started=started)


def bicgstab(QT, *, rtol=RTOL, atol=0.0, ctol=None, rule=None, maxiter=None, x0=None,
             callback=None) -> SolverResult:
    """BiCGSTAB on the pinned system of the transposed generator ``QT`` (CSR, irreducible).

    One iteration is one BiCGSTAB step (2 products); ``callback(niter, x, residual)``
    runs after every one.
    """
    started, rule, maxiter, x = begin(QT, "bicgstab", rtol, atol, ctol, maxiter, x0, rule)
    sys_ = _PinnedKrylov(QT, first_pin(x0))
    state = {"x": x, "bal": rule.check(x), "niter": 0}
    restarts = 0

    def accept(yk, count):
        """Record iterate ``yk``; return a status if the iteration must end."""
        if count:
            state["niter"] += 1
        xk = normalise(yk)
        if xk is None:
            return BREAKDOWN
        bal = rule.check(xk)
        better = sys_.repaired(xk, bal, rule)
        if better is not None:
            xk, bal = better
        state["x"], state["bal"] = xk, bal
        if callback is not None and count:
            callback(state["niter"], xk.copy(), bal.residual)
        if rule.met(bal):
            return CONVERGED
        if better is not None:
            return _RESTART
        if not rule.verifiable(bal):
            return BREAKDOWN
        if sys_.should_repin(xk, bal.residual):
            return _RESTART
        return None

    def cb(yk):
        stop = accept(yk, count=True)
        if stop is not None:
            raise _Stop(stop)

    status = CONVERGED if rule.met(state["bal"]) else MAXITER
    while status != CONVERGED and state["niter"] < maxiter:
        before = rule.excess(state["bal"])
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
        if stop == _RESTART:
            continue
        if stop == BREAKDOWN and not sys_.jacobi:
            sys_.to_jacobi("ILU-preconditioned BiCGSTAB produced NaN/inf")
            continue
        if stop in (CONVERGED, BREAKDOWN):
            status = stop
            if status == BREAKDOWN:
                sys_.notes.append("breakdown (NaN/inf)")
            break
        if info is not None and info > 0:
            status = MAXITER
            break
        # info < 0: BiCGSTAB breakdown (rho or omega ~ 0), or an exact solve
        # of the pinned system that still misses our rule: restart from the
        # current iterate while restarts make progress
        if rule.excess(state["bal"]) < before and restarts < _MAX_BICGSTAB_RESTARTS:
            restarts += 1
            continue
        status = BREAKDOWN
        sys_.notes.append(f"BiCGSTAB breakdown (info {info})")
        break
    msg = sys_.describe("BiCGSTAB")
    if restarts:
        msg += f"; restarted {restarts} times after breakdown"
    return finish(state["x"], status, msg, state["niter"], rule=rule, method="bicgstab",
                  started=started)

