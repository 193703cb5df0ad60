"""The stopping rule of every steady-state method: the residual, and the balance of every state.

With ``r = x Q`` and ``(|x| |Q|)_i = inflow_i + outflow_i`` (the probability flow through
state ``i``), a normalised ``x >= 0`` has converged when::

    ||r||_1 <= bound = atol + rtol * Lambda                                (normwise)
    max_i |r_i| / ((|x| + nu) |Q|)_i <= ctol                              (every state)
    max_e |net flow into the states beyond e| / flow across e <= ctol      (every group)

The second is the component-wise backward error (Oettli-Prager, ``0/0 := 0``; ``nu``,
2e-292, only keeps underflowing probabilities out): every state's inflow and outflow
agree to ``ctol`` relative to the flow through it. It costs no product besides ``r``.

It is not enough on a chain that moves slowly between groups of fast states: every state
of a group can balance to ``ctol`` of its own fast flow while the group as a whole gains
or loses probability through the slow transitions (random birth-death chains with rates
from 1e-5 to 1e5: sparse LU 9 % off with every state balanced to 1e-7). The third part
routes the residuals to a root along the spanning tree of largest flows (which maximises
the smallest flow on the path between any two states): each tree edge ``e`` must carry
the net flow the states beyond it gain, ``sum r_i`` over them, with a relative change of
at most ``ctol`` in its two rates. Then ``x`` is the exact stationary vector of a chain
whose rates differ from ``Q``'s by at most ``ctol`` relatively, and that moves every
probability relatively by at most ``((1 + ctol) / (1 - ctol))^(n-1) - 1``: by the Markov
chain tree theorem each ``pi_i`` is proportional to a sum over spanning trees of products
of ``n - 1`` rates (O'Cinneide 1993, "Entrywise perturbation theory and error analysis for
Markov chains"). Stationary vectors are well-conditioned under relative perturbations of
the rates, however stiff the chain; only the residual's view of them can be poor.

Rounding sets the limit: a computed ``r_i`` is uncertain by a few roundoffs of the flow
through ``i``, and routed into a group of fast states through a slow transition that
uncertainty can exceed ``ctol`` times the flow across (``Balance.rounding``). Such an
``x`` cannot be verified by its residual in double precision: it does not converge,
unless it comes from GTH, accurate entrywise by construction (``met(..., entrywise=True)``),
or the group holds less than :data:`NEGLIGIBLE` probability. The tree costs a minimum
spanning tree once per solve (0.08 s at 261,635 states), each check a pass over the states.

>>> import numpy as np, scipy.sparse as sp
>>> QT = sp.csr_array([[-2.0, 1.0], [2.0, -1.0]])      # Q^T of rates 2 (0 -> 1), 1 (1 -> 0)
>>> rule = Rule(QT, rtol=1e-10)
>>> float(f"{rule.ctol:.3g}"), rule.met(rule.check(np.array([1 / 3, 2 / 3])))
(1e-07, True)
>>> bad = rule.check(np.array([0.3, 0.7]), full=True)   # state 0: inflow 0.7, outflow 0.6
>>> round(bad.imbalance, 4), bad.where
(0.0769, 'state 0 does not balance: inflow 0.7, outflow 0.6')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import depth_first_order, minimum_spanning_tree

__all__ = ["CTOL_FACTOR", "UNIT_ROUNDOFF", "Balance", "Rule", "max_rate", "residual_bound"]

#: ``ctol = CTOL_FACTOR * (rtol + atol / Lambda)`` when no component-wise tolerance is given.
#: Measured: on well-conditioned chains an iterate that just meets the normwise rule balances
#: each state to ~300 times ``rtol`` (power iteration on an M/M/1/30 queue, the tail state), so
#: with 1e3 the balance tests do not hold a well-conditioned solve back at any ``rtol``; at the
#: default ``rtol = 1e-10`` they ask for 1e-7, where direct and GTH reach 1e-15.
CTOL_FACTOR = 1e3

#: ``u``: the unit roundoff of double precision.
UNIT_ROUNDOFF = 2.0 ** -53

#: A group of states holding at most this probability is not asked to balance beyond what the
#: rounding of its residuals explains. Measured: models/spark-sq2.yaml has a group of 455 states
#: holding 1.6e-15, with flows up to 3e-16 inside and 5e-49 to the rest; whether it holds 1.6e-15
#: or twice that, no residual computed in double precision can tell, and no measure can notice.
NEGLIGIBLE = 1e-12

#: ``nu``: probabilities below it count as ``nu`` in the balance tests. Their products with rates
#: underflow into subnormal numbers, which carry no relative accuracy: ``tiny / u``, 2e-292.
UNDERFLOW = float(np.finfo(np.float64).tiny) / UNIT_ROUNDOFF

# sums over subtrees run in Python up to this many states (~5 ms), compiled beyond
_PYTHON_ROUTE_MAX = 5_000

# bound on the rounding error of a computed r_i = inflow_i - outflow_i (x_i itself rounded,
# sums of a handful of terms), relative to the flow through i. Routed through a slow transition
# into a group of fast states it can exceed ctol times the flow across: then no residual computed
# in double precision can tell a right answer from a wrong one.
_ROUNDING = 8 * UNIT_ROUNDOFF


def max_rate(QT) -> float:
    """``Lambda = max_i |q_ii|`` of a (transposed) generator."""
    return float(np.abs(QT.diagonal()).max(initial=0.0))


def residual_bound(lam: float, rtol: float, atol: float) -> float:
    """The right-hand side of the normwise rule, ``atol + rtol * Lambda``."""
    if not (rtol >= 0 and atol >= 0):
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    return atol + rtol * lam


@dataclass(frozen=True)
class Balance:
    """How well ``x`` balances: ``residual = ||x Q||_1``; ``imbalance``, the larger of the two
    balance tests (NaN: not computed, an earlier part of the rule already failed), and
    ``where`` it is attained; ``rounding``, the largest imbalance the rounding errors of the
    computed ``r_i`` could make up (the balance tests cannot see below it), and
    ``within_rounding``, the imbalance left once they are allowed for."""

    residual: float
    imbalance: float = math.nan
    where: str = ""
    rounding: float = math.nan
    within_rounding: float = math.nan


class Rule:
    """The stopping rule for the transposed generator ``QT`` of an irreducible chain.

    ``check(x)`` measures, ``met`` decides, ``excess`` says how far from converged
    (``<= 1``: converged) and ``verdict`` which part fails and by how much.
    """

    def __init__(self, QT, *, rtol=0.0, atol=0.0, ctol=None):
        lam = max_rate(QT)
        self.bound = residual_bound(lam, rtol, atol)
        if ctol is None:
            ctol = min(1.0, CTOL_FACTOR * (self.bound / lam if lam > 0 else rtol))
        if not ctol >= 0:
            raise ValueError(f"ctol must be >= 0, got {ctol}")
        self.ctol = float(ctol)
        self.QT = QT
        self.q = -QT.diagonal()
        # flows of probabilities that underflow: (nu 1 |Q|)_i, with (1 |Q|)_i the rates in and out
        self.floor = UNDERFLOW * (QT @ np.ones(QT.shape[0]) + 2.0 * self.q)
        self._tree = None
        self._last = None           # (x, its full Balance): a method and its caller check one x

    def check(self, x, r=None, *, full=False) -> Balance:
        """The :class:`Balance` of ``x`` (``r = x Q`` if already known). Each part is measured
        only when the parts before it hold, or with ``full``."""
        if self._last is not None and np.array_equal(self._last[0], x):
            return self._last[1]
        bal = self._check(x, r, full)
        if full:
            self._last = x.copy(), bal
        return bal

    def _check(self, x, r, full):
        if r is None:
            r = self.QT @ x
        res = float(np.abs(r).sum())
        if not math.isfinite(res) or not (full or res <= self.bound):
            return Balance(res)
        out = x * self.q
        inflow = r + out
        flow = np.abs(inflow) + out
        ratio = _divide(np.abs(r), flow + self.floor)
        i = int(np.argmax(ratio))
        worst = float(ratio[i])
        where = f"state {i} does not balance: inflow {inflow[i]:.6g}, outflow {out[i]:.6g}"
        if not (full or worst <= self.ctol):
            return Balance(res, worst, where)
        capacity = self._capacity(x)
        gain, rounding, mass = self._beyond(r, _ROUNDING * flow, x)
        # a group holding a negligible probability may keep the imbalance rounding explains
        negligible = mass <= NEGLIGIBLE
        routed = self._worst(np.abs(gain) - np.where(negligible, rounding, 0.0), capacity)
        hidden = self._worst(np.where(negligible, 0.0, rounding), capacity)
        consistent = max(worst, self._worst(np.abs(gain) - rounding, capacity)[0])
        if routed[0] > worst:
            v = routed[1]
            worst, where = routed[0], (f"the states beyond the transition {v} <-> "
                                       f"{self._tree.parent[v]} gain a net flow {gain[v]:.3g} (flow "
                                       f"across it {capacity[v]:.3g})")
        if hidden[0] > self.ctol and worst <= self.ctol:
            v = hidden[1]
            where = (f"too stiff a chain to verify by its residual in double precision: rounding "
                     f"alone can unbalance the states beyond the transition {v} <-> "
                     f"{self._tree.parent[v]} by {hidden[0]:.3g} of the flow across it")
        return Balance(res, worst, where, hidden[0], consistent)

    def met(self, bal: Balance, *, entrywise=False) -> bool:
        """Every part of the rule holds. A result computed ``entrywise`` accurately (GTH: every
        probability to a few roundoffs, whatever the chain) needs only to balance to within
        what rounding can hide, the others must be verifiable despite it."""
        if entrywise:
            return bal.residual <= self.bound and bal.within_rounding <= self.ctol
        return self.verifiable(bal) and bal.residual <= self.bound and bal.imbalance <= self.ctol

    def verifiable(self, bal: Balance) -> bool:
        """Whether rounding leaves the balance tests able to see ``ctol`` (NaN: not known yet)."""
        return not bal.rounding > self.ctol

    def excess(self, bal: Balance) -> float:
        """How far from converged: ``max(residual / bound, imbalance / ctol)``."""
        parts = [_ratio(bal.residual, self.bound)]
        if not math.isnan(bal.imbalance):
            parts.append(_ratio(bal.imbalance, self.ctol))
        return max(parts)

    def progress(self, new: Balance, old: Balance) -> bool:
        """``new`` is closer to converged: a lower residual until the normwise part holds,
        then a lower excess."""
        if new.residual > self.bound:
            return new.residual < old.residual
        return old.residual > self.bound or self.excess(new) < self.excess(old)

    def verdict(self, bal: Balance) -> str:
        """Which part of the rule fails and by how much ("" when all hold)."""
        if not bal.residual <= self.bound:
            return f"residual {bal.residual:.3g} > {self.bound:.3g} (atol + rtol * Lambda)"
        if not bal.imbalance <= self.ctol:
            return f"{bal.where}: imbalance {bal.imbalance:.3g} > ctol {self.ctol:.3g}"
        if not self.verifiable(bal):
            return f"{bal.where} > ctol {self.ctol:.3g}; method 'gth' computes it entrywise"
        return ""

    # ------------------------------------------------------------------ the routed balance
    def _worst(self, flows, capacity):
        """``(largest ratio of flows (> 0) to the capacity of their tree edge, its state)``."""
        ratio = _divide(np.maximum(flows, 0.0), capacity)
        ratio[self._tree.order[0]] = 0.0                     # the root has no edge
        v = int(np.argmax(ratio))
        return float(ratio[v]), v

    def _beyond(self, *vectors):
        """For each vector, the sums of its values over the states beyond each state's tree
        edge (the state and its descendants)."""
        tree = self._tree
        sums = (_subtree_sums if tree.order.size <= _PYTHON_ROUTE_MAX else _compiled_sums())(
            tree.order, tree.parent, np.stack(vectors, axis=1))
        return sums.T

    def _capacity(self, x):
        """The flow across each tree edge (state <-> its parent), probabilities that underflow
        counting as ``nu``."""
        if self._tree is None:
            self._tree = _flow_tree(self.QT, x, self.q)
        tree = self._tree
        xl = np.maximum(x, UNDERFLOW)
        return xl * tree.up + xl[np.maximum(tree.parent, 0)] * tree.down

    def unbalanced(self, x) -> np.ndarray:
        """The states to solve again: those whose own balance misses ``ctol / 4``, and the
        largest group beyond a tree edge whose balance misses it."""
        r = self.QT @ x
        out = x * self.q
        states = np.abs(r) > 0.25 * self.ctol * (np.abs(r + out) + out + self.floor)
        if not states.all():
            capacity = self._capacity(x)                          # (builds the tree)
            gain, sizes = self._beyond(r, np.ones(x.size))
            failing = np.abs(gain) > 0.25 * self.ctol * capacity
            failing[self._tree.order[0]] = False
            if failing.any():
                sizes = np.rint(sizes).astype(np.int64)
                v = int(np.argmax(np.where(failing, sizes, 0)))
                at = self._tree.position[v]
                states[self._tree.order[at:at + sizes[v]]] = True
        return np.flatnonzero(states)


class _Tree(NamedTuple):
    """A spanning tree: states in depth-first preorder (a state's descendants follow it), the
    ``position`` of each state in that order, ``parent`` (-1 at the root), and the rates to
    (``up``) and from (``down``) the parent."""

    order: np.ndarray
    position: np.ndarray
    parent: np.ndarray
    up: np.ndarray
    down: np.ndarray


def _flow_tree(QT, x, q) -> _Tree:
    """The spanning tree of largest flows ``x_i q_ij``, rooted at the state of largest flow."""
    n = QT.shape[0]
    flow = QT.data * x[QT.indices]          # QT[j, i] = q_ij: the flow from i to j (< 0: i = j)
    top = 2.0 * float(flow.max(initial=0.0)) + 1.0
    # a maximum spanning tree is a minimum one of top - flow (> 0: no edge is lost as a zero;
    # the diagonal, heaviest, loops on a state and never joins the tree)
    weights = sp.csr_array((top - flow, QT.indices, QT.indptr), shape=(n, n))
    tree = minimum_spanning_tree(weights).tocoo()
    ends = np.concatenate([tree.row, tree.col]), np.concatenate([tree.col, tree.row])
    adjacency = sp.csr_array((np.ones(ends[0].size), ends), shape=(n, n))
    order, parent = depth_first_order(adjacency, int(np.argmax(x * q)), directed=False)
    order, parent = order.astype(np.int64), parent.astype(np.int64)
    parent[order[0]] = -1
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    child = np.arange(n, dtype=np.int64)
    p = np.maximum(parent, 0)
    up = np.asarray(QT[p, child]).ravel()             # q(child -> parent) = QT[parent, child]
    down = np.asarray(QT[child, p]).ravel()           # q(parent -> child) = QT[child, parent]
    up[order[0]] = down[order[0]] = 0.0
    return _Tree(order, position, parent, up, down)


def _subtree_sums(order, parent, values):
    """Sums of the rows of ``values`` over each state and its descendants: children before
    parents."""
    s = values.copy()
    for k in range(order.size - 1, 0, -1):
        v = order[k]
        p = parent[v]
        for j in range(s.shape[1]):
            s[p, j] += s[v, j]
    return s


_compiled = []


def _compiled_sums():
    """:func:`_subtree_sums` compiled (Numba, cached on disk), for large chains."""
    if not _compiled:
        from numba import njit

        _compiled.append(njit(cache=True, nogil=True)(_subtree_sums))
    return _compiled[0]


def _divide(num, den):
    """``num / den`` with ``0/0 = 0`` and ``x/0 = inf``."""
    return np.divide(num, den, out=np.where(num == 0, 0.0, np.inf), where=den > 0)


def _ratio(value, tol):
    if tol > 0:
        return value / tol
    return 0.0 if value <= 0 else math.inf
