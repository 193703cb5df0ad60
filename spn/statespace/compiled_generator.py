"""The generator of a chain explored by the compiled engine, built in one compiled pass.

:func:`spn.ctmc.generator_matrix` builds Q with SciPy: COO to CSR (sorting each row, summing
duplicates), the row sums, then ``off - diags(sums)``, each a pass over millions of entries into
fresh arrays (on MapReduce ``fifo`` N = C = 6, 4 million transitions: about 0.25 s, an eighth of
the exploration). The compiled engine lists its transitions by source, so the same matrix can be
built row by row in one pass, with the same floating-point operations in the same order, so that
Q is equal to the last bit:

- a row's entries are ordered by column as SciPy's ``csr_sort_indices`` does for rows of at most
  16 entries (an insertion sort: equal columns keep their order), then equal columns summed in
  that order (``csr_sum_duplicates``);
- the row's sum is NumPy's ``add.reduceat`` over the summed entries (what ``csr_matrix.sum(axis=1)``
  calls): the first entry plus the pairwise sum of the others (plain in blocks of 8 accumulators);
- the diagonal is ``0 - sum``, put in its place by column, and zero results are left out, as
  SciPy's subtraction of two canonical matrices does.

Where that cannot be promised (sources out of order, a row of more than 16 transitions, a self
loop, indices past 32 bits), :func:`generator` answers None and the SciPy path is taken.

>>> import numpy as np
>>> from spn.ctmc import generator_matrix
>>> src, dst, rate = np.array([0, 0, 0, 1]), np.array([2, 1, 2, 0]), np.array([1.0, 2.0, 0.5, 3.0])
>>> Q = generator(3, src, dst, rate)
>>> Q.toarray().tolist()
[[-3.5, 2.0, 1.5], [3.0, -3.0, 0.0], [0.0, 0.0, 0.0]]
>>> R = generator_matrix(3, src, dst, rate)
>>> all((Q.indptr == R.indptr).tolist() + (Q.indices == R.indices).tolist() + (Q.data == R.data).tolist())
True

Numba caches each function with its own file: :mod:`spn.kernels` stamps this file with the
kernel's, and compiles it with the kernel.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

#: longest row SciPy's csr_sort_indices is known to sort stably (libstdc++'s insertion sort below 17)
STABLE_ROW = 16


def generator(n: int, src: np.ndarray, dst: np.ndarray, rate: np.ndarray) -> sp.csr_matrix | None:
    """Q (CSR) from transitions listed by source, equal to ``generator_matrix(n, src, dst, rate)`` to
    the last bit; None where that cannot be promised (the caller then builds it with SciPy)."""
    if n >= 2**31 - 1 or len(src) + n >= 2**31 - 1:
        return None
    indptr = np.empty(n + 1, dtype=np.int32)
    indices = np.empty(len(src) + n, dtype=np.int32)
    data = np.empty(len(src) + n)
    nnz = _fill(n, src, dst, rate, indptr, indices, data)
    if nnz < 0:
        return None
    indices.resize(nnz, refcheck=False)         # (in place: the tail is never read)
    data.resize(nnz, refcheck=False)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


@njit(cache=True, nogil=True)
def _fill(n, src, dst, rate, indptr, indices, data):
    """Q's rows into (indptr, indices, data); returns its non-zeros, or -1 (see :func:`generator`)."""
    cols = np.empty(STABLE_ROW, dtype=np.int64)
    vals = np.empty(STABLE_ROW)
    acc = np.empty(8)
    m = len(src)
    t, q = 0, 0
    for i in range(n):
        indptr[i] = q
        if t < m and src[t] < i:
            return -1                           # sources out of order
        k = 0
        while t < m and src[t] == i:
            c, v = dst[t], rate[t]
            if k == STABLE_ROW or c == i:
                return -1
            j = k                               # insertion sort by column: equal columns keep their order
            while j > 0 and cols[j - 1] > c:
                cols[j], vals[j] = cols[j - 1], vals[j - 1]
                j -= 1
            cols[j], vals[j] = c, v
            k += 1
            t += 1
        # equal columns summed in order, in place (as csr_sum_duplicates)
        d = 0
        j = 0
        while j < k:
            c, x = cols[j], vals[j]
            j += 1
            while j < k and cols[j] == c:
                x += vals[j]
                j += 1
            cols[d], vals[d] = c, x
            d += 1
        # the row's sum as add.reduceat: the first, plus the pairwise sum of the rest
        total = 0.0
        if d > 0:
            rest = d - 1                        # (at most STABLE_ROW - 1: no recursion in the pairwise sum)
            if rest < 8:
                s = 0.0
                for j in range(1, d):
                    s += vals[j]
            else:
                for j in range(8):
                    acc[j] = vals[1 + j]
                j = 8
                while j <= rest - 8:
                    for u in range(8):
                        acc[u] += vals[1 + j + u]
                    j += 8
                s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
                while j < rest:
                    s += vals[1 + j]
                    j += 1
            total = vals[0] + s
        # the row of off - diags(total): the diagonal in its column, zero results left out
        diagonal = 0.0 - total
        placed = diagonal == 0.0
        for j in range(d):
            if not placed and cols[j] > i:
                indices[q], data[q] = i, diagonal
                q += 1
                placed = True
            if vals[j] != 0.0:
                indices[q], data[q] = cols[j], vals[j]
                q += 1
        if not placed:
            indices[q], data[q] = i, diagonal
            q += 1
    if t < m:
        return -1                               # sources beyond the last state
    indptr[n] = q
    return q
