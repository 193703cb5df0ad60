"""The tangible state space of a net: its markings and the rates between them.

Both exploration engines fill the same flat arrays (:class:`Parts`);
:func:`from_parts` turns them into a :class:`StateSpace` without copying.

>>> from spn.net import Net, Place, TimedActivity
>>> from spn.statespace import explore
>>> ss = explore(Net([Place("up", 1), Place("down")],
...     [TimedActivity("fail", inputs={"up": 1}, outputs={"down": 1}, rate=1.0),
...      TimedActivity("repair", inputs={"down": 1}, outputs={"up": 1}, rate=3.0)]))
>>> ss.n_states, ss.tokens("up").tolist()
(2, [1, 0])
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from spn.net import Net


@dataclass
class StateSpace:
    """Tangible markings of a net and the rates between them.

    Attributes
    ----------
    net : the (Erlang-expanded) net that was explored.
    markings : (n, places) integer array, one tangible marking per row, in discovery order.
    initial : length-n probability vector of the tangible markings the initial marking leads to.
    src, dst, rate : transitions between tangible markings (COO, duplicates allowed, no self loops).
    timed_rates : (n, timed activities) sparse matrix, rate of each timed activity in each marking.
    impulses : (n, instantaneous activities) sparse matrix (COO), expected firings per unit time of
        each instantaneous activity caused by leaving each marking (its throughput is ``pi @ impulses``).
    """

    net: Net
    markings: np.ndarray
    initial: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    rate: np.ndarray
    timed_rates: sp.csr_matrix
    impulses: sp.csr_matrix
    seconds: float = 0.0
    _generator: sp.csr_matrix | None = field(default=None, repr=False)

    @property
    def n_states(self) -> int:
        return self.markings.shape[0]

    def generator(self) -> sp.csr_matrix:
        """The CTMC generator Q (CSR): off-diagonal rates, rows summing to zero."""
        if self._generator is None:
            from spn.ctmc import generator_matrix
            Q = None
            if "spn.statespace.compiled" in sys.modules:    # Numba loaded: one pass, the same matrix
                from spn.statespace.compiled_generator import generator
                Q = generator(self.n_states, self.src, self.dst, self.rate)
            self._generator = generator_matrix(self.n_states, self.src, self.dst, self.rate) if Q is None else Q
        return self._generator

    @property
    def n_transitions(self) -> int:
        """Off-diagonal non-zeros of Q."""
        Q = self.generator()
        return int(Q.nnz - np.count_nonzero(Q.diagonal()))

    def dead_markings(self) -> np.ndarray:
        """Indices of tangible markings that enable no timed activity (absorbing)."""
        return np.flatnonzero(np.asarray(self.timed_rates.sum(axis=1)).ravel() == 0)

    def tokens(self, place: str) -> np.ndarray:
        """Tokens of ``place`` in every tangible marking (a stage-split place sums its stages)."""
        return np.asarray(self.net.view(self.markings)[place])

    def __repr__(self):
        return f"StateSpace({self.net.name!r}: {self.n_states} tangible markings, {len(self.src)} transitions)"


@dataclass
class Parts:
    """What an exploration engine found, in the arrays a :class:`StateSpace` is built from."""

    markings: np.ndarray
    initial_ids: np.ndarray
    initial_weights: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    rate: np.ndarray
    timed_counts: np.ndarray
    timed_cols: np.ndarray
    timed_vals: np.ndarray
    imp_rows: np.ndarray
    imp_cols: np.ndarray
    imp_vals: np.ndarray


def from_parts(net: Net, parts, started: float) -> StateSpace:
    """Assemble a :class:`StateSpace` from the arrays an engine filled (moved, not copied)."""
    n = len(parts.markings)
    initial = np.bincount(parts.initial_ids, weights=parts.initial_weights, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(parts.timed_counts, out=indptr[1:])
    timed_rates = sp.csr_matrix((parts.timed_vals, parts.timed_cols.astype(np.int32), indptr),
                                shape=(n, len(net.timed)))
    impulses = sp.coo_matrix((parts.imp_vals, (parts.imp_rows, parts.imp_cols)), shape=(n, len(net.instant)))
    return StateSpace(net=net, markings=parts.markings, initial=initial, src=parts.src, dst=parts.dst,
                      rate=parts.rate, timed_rates=timed_rates, impulses=impulses,
                      seconds=time.perf_counter() - started)


def progress_line(states: int, frontier: int, started: float) -> None:
    """Rewrite the exploration's progress line on stderr: states so far, frontier, states per second."""
    rate = states / max(time.perf_counter() - started, 1e-9)
    print(f"\rexploring: {states:,} states, frontier {frontier:,}, {rate:,.0f} states/s",
          end="", file=sys.stderr, flush=True)
