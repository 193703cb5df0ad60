"""Passage times of stiff chains: an implicit ODE solver where uniformisation would take too long.

Uniformisation (:func:`spn.solvers.passage.passage_time`) takes about ``q t`` steps to
reach time ``t``, with ``q`` the chain's fastest rate. A job whose tasks take milliseconds
in one phase and minutes in another (or a task law fitted at a high Erlang shape) makes
``q t`` reach billions. Here the survival vector of the tagged job obeys the linear ODE ::

    d p(t)/dt = p(t) Q,    p(0) = alpha,    P(T > t) = p(t) 1,

which is integrated with SciPy's variable-order BDF method (implicit, so its steps follow
the time scale of the answer, not of the fastest rate; its Jacobian ``Q^T`` is given, so
each step solves a sparse linear system). Every step is recorded as the survival
``S(t) = p(t) 1`` and its derivative ``S'(t) = p(t) (Q 1)`` at its end and at three points
within it (the step's own interpolant), and ``S`` between them is the cubic Hermite
interpolant of those values. Integration stops once ``S(t) <= atol``.

The moments do not come from the integration: ``E[T] = alpha M^-1 1`` and
``E[T^2] = 2 alpha M^-2 1`` with ``M = -Q`` are solved exactly with one sparse LU factorisation.

Accuracy: the BDF method controls its local error to ``rtol`` (relative) and ``atol / n``
(absolute, per state); unlike uniformisation's, its bound is not rigorous. The tests check
it against closed forms and against uniformisation where both run.

>>> import math, numpy as np, scipy.sparse as sp
>>> Q = sp.csr_matrix([[-1e6, 1e6], [0.0, -1e-3]])      # a microsecond, then a thousand seconds
>>> r = stiff_passage_time(Q, np.array([1.0, 0.0]))
>>> r.converged, round(r.mean, 6), round(r.quantile(0.5) / (1000 * math.log(2)), 6)
(True, 1000.000001, 1.0)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.integrate import BDF
from scipy.interpolate import CubicHermiteSpline
from scipy.sparse.linalg import splu

from spn.solvers.passage import PassageDistribution

__all__ = ["StiffPassageResult", "stiff_passage_time"]

#: relative tolerance of the BDF steps
RTOL = 1e-9
#: BDF steps past which the integration stops, not converged
MAX_STEPS = 200_000
#: points within each step where the survival is recorded (besides its end)
_INSIDE = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class StiffPassageResult(PassageDistribution):
    """A passage-time distribution from the BDF integration, shaped like
    :class:`~spn.solvers.passage.PassageTimeResult`: ``t``, ``s``, ``ds``: the recorded times,
    survival ``P(T > t)`` and its derivative (``t[0] = 0``, ``s[0] = 1``); ``niter``: BDF steps."""

    t: np.ndarray
    s: np.ndarray
    ds: np.ndarray
    method: str = "bdf"

    def _spline(self) -> CubicHermiteSpline:
        return CubicHermiteSpline(self.t, self.s, self.ds, extrapolate=False)

    def sf(self, t):
        """P(T > t), for a number or an array of times (0 past the last recorded time)."""
        times = np.asarray(t, dtype=float)
        out = np.nan_to_num(self._spline()(np.clip(times, 0.0, None)), nan=0.0)
        out = np.where(times > self.t[-1], 0.0, np.clip(out, 0.0, 1.0))
        return out if times.ndim else float(out)

    def pdf(self, t):
        """Density of T: -S'(t)."""
        times = np.asarray(t, dtype=float)
        out = np.nan_to_num(-self._spline().derivative()(times), nan=0.0)
        out = np.where((times < 0) | (times > self.t[-1]), 0.0, np.clip(out, 0.0, None))
        return out if times.ndim else float(out)


def stiff_passage_time(Q, alpha, *, atol: float = 1e-12, rtol: float = RTOL, max_steps: int = MAX_STEPS,
                       callback: Callable | None = None) -> StiffPassageResult:
    """Time to absorption of a CTMC with transient sub-generator ``Q``, started in ``alpha``, by BDF.

    Stopping rule: ``converged <=> S(t_K) <= atol`` after K steps (K <= ``max_steps``).
    ``callback(niter, p, S)`` is called every 100 steps. Never raises on non-convergence.
    """
    started = time.perf_counter()
    Q = sp.csr_matrix(Q, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    n = Q.shape[0]
    alpha = alpha / alpha.sum()
    mean, second = _moments(Q, alpha)
    exits = np.asarray(Q.sum(axis=1)).ravel()         # minus each state's absorption rate
    QT = Q.T.tocsc()
    solver = BDF(lambda _, p: QT @ p, 0.0, alpha, t_bound=np.inf, rtol=rtol, atol=atol / max(n, 1),
                 jac=QT, first_step=min(mean, 1.0) * 1e-6)
    times, survival, slope = [0.0], [1.0], [float(exits @ alpha)]
    steps, message = 0, None
    while survival[-1] > atol and steps < max_steps:
        before = solver.t
        failure = solver.step()
        if solver.status == "failed":
            message = f"the BDF integration failed at t = {solver.t:.3g} s ({failure})"
            break
        steps += 1
        inside = solver.dense_output()
        for f in _INSIDE:
            p = inside(before + f * (solver.t - before))
            times.append(before + f * (solver.t - before))
            survival.append(float(p.sum()))
            slope.append(float(exits @ p))
        times.append(solver.t)
        survival.append(float(solver.y.sum()))
        slope.append(float(exits @ solver.y))
        if callback is not None and steps % 100 == 0:
            callback(steps, solver.y, survival[-1])
    s = np.minimum.accumulate(np.clip(survival, 0.0, 1.0))     # rounding never lets the survival grow
    converged = message is None and bool(s[-1] <= atol)
    if message is None:
        message = "converged" if converged else (f"{steps:,} BDF steps reached t = {times[-1]:.3g} s with "
                                                 f"P(still running) = {s[-1]:.3g}")
    return StiffPassageResult(t=np.array(times), s=s, ds=np.minimum(np.array(slope), 0.0), mean=mean,
                              std=float(np.sqrt(max(second - mean ** 2, 0.0))), converged=converged,
                              status=0 if converged else 1, message=message, niter=steps,
                              residual=float(s[-1]), seconds=time.perf_counter() - started, n_states=n)


def _moments(Q, alpha) -> tuple[float, float]:
    """``E[T]`` and ``E[T^2]`` of the time to absorption: ``alpha M^-1 1`` and ``2 alpha M^-2 1``, ``M = -Q``."""
    lu = splu((-Q).T.tocsc())
    first = lu.solve(alpha)                 # alpha M^-1, as a column
    return float(first.sum()), float(2 * lu.solve(first).sum())
