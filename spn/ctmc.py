"""The CTMC beneath a state space: sparse generator, rewards and activity throughputs.

>>> import numpy as np
>>> Q = generator_matrix(2, np.array([0, 1]), np.array([1, 0]), np.array([1.0, 2.0]))
>>> Q.toarray()
array([[-1.,  1.],
       [ 2., -2.]])
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def generator_matrix(n: int, src: np.ndarray, dst: np.ndarray, rate: np.ndarray) -> sp.csr_matrix:
    """The generator Q (CSR) of a CTMC with transitions src -> dst at the given rates.

    Duplicate transitions are summed, self loops must already be left out; the
    diagonal makes every row sum to zero.
    """
    off = sp.csr_matrix((rate, (src, dst)), shape=(n, n))
    off.sum_duplicates()
    out = np.asarray(off.sum(axis=1)).ravel()
    Q = (off - sp.diags(out, format="csr")).tocsr()
    Q.sort_indices()
    return Q


def expected_reward(pi: np.ndarray, reward: np.ndarray) -> float:
    """Steady-state expectation of a reward vector: sum_i pi_i r_i."""
    return float(np.dot(pi, reward))


def timed_throughputs(pi: np.ndarray, timed_rates: sp.spmatrix) -> np.ndarray:
    """Throughput of every timed activity: sum_i pi_i rate_a(i)."""
    return np.asarray(timed_rates.T @ pi).ravel()


def instant_throughputs(pi: np.ndarray, impulses: sp.spmatrix) -> np.ndarray:
    """Throughput of every instantaneous activity: expected firings per unit time."""
    return np.asarray(impulses.T @ pi).ravel()
