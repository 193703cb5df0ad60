"""Choice gates in compiled code: does a scheduler's pick (:mod:`spn.net.choice`) hold in a marking?

The compiled exploration engine (:mod:`spn.statespace.compiled`) calls :func:`gates_hold` for an
arc-enabled instantaneous activity with choice gates; the gates come as the arrays of
:func:`spn.statespace.kernel_arrays.gate_arrays`. The answer is the one ``ChoiceGate.__call__``
gives on the NumPy side: the chosen candidate is the first eligible one whose key is the smallest
(or within the gate's tie of it). Keys are doubles, exact for the integer sums that
:func:`~spn.statespace.activity_table.is_plain` admits.

Numba caches each function with its own file: :mod:`spn.kernels` stamps this file with the
kernel's, and compiles the kernel again (its cache cleared) when any of them changes.

>>> import numpy as np
>>> from spn.net import InputGate, InstantActivity, Net, Place
>>> from spn.net.choice import Candidate, ChoiceGate
>>> from spn.statespace.kernel_arrays import gate_arrays
>>> jobs = tuple(Candidate(key=((f"run{j}", 1),), needs=((((f"wait{j}", 1),), 1),)) for j in (1, 2))
>>> net = Net([Place(p) for p in ("run1", "wait1", "run2", "wait2")],
...           [InstantActivity(f"give{j}", inputs={f"wait{j}": 1}, outputs={f"run{j}": 1},
...                            input_gates=[InputGate(ChoiceGate(jobs, chosen=j - 1))]) for j in (1, 2)])
>>> gates = gate_arrays(net, net.instant, np.zeros((2, 2), dtype=bool))
>>> m = np.array([2, 1, 1, 1])        # job 2 runs fewer tasks: it gets the container
>>> bool(gates_hold(m, gates, 0)), bool(gates_hold(m, gates, 1))
(False, True)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from spn.statespace.kernel_arrays import (CANDIDATE_PTR, CHOSEN, FORM_COEFFICIENT, FORM_COLUMN, FORM_PTR, GATE_PTR,
                                          KEY_FORM, NEED_BOUND, NEED_FORM, NEED_PTR)


def _compiled(function):
    return njit(cache=True, nogil=True)(function)


def _inlined(function):
    return njit(cache=True, nogil=True, inline="always")(function)


@_inlined
def _table(tables, k):
    """Integer table k of the choice gates (:func:`~spn.statespace.kernel_arrays.gate_arrays`)."""
    return tables[tables[k]:tables[k + 1]]


@_inlined
def _form(m, tables, f):
    """The sum of choice-gate form f over marking m, as a double (exact: see is_plain)."""
    form_ptr, column, coefficient = _table(tables, FORM_PTR), _table(tables, FORM_COLUMN), \
        _table(tables, FORM_COEFFICIENT)
    total = 0
    for t in range(form_ptr[f], form_ptr[f + 1]):
        total += coefficient[t] * m[column[t]]
    return float(total)


@_inlined
def _key(m, tables, scale, c):
    """Choice-gate candidate c's key in m, or infinity where c is not eligible."""
    need_ptr, need_form, need_bound = _table(tables, NEED_PTR), _table(tables, NEED_FORM), _table(tables, NEED_BOUND)
    for t in range(need_ptr[c], need_ptr[c + 1]):
        if _form(m, tables, need_form[t]) < need_bound[t]:
            return np.inf
    return _form(m, tables, _table(tables, KEY_FORM)[c]) / scale[c]


@_compiled
def gates_hold(m, gates, a):
    """Do the choice gates of instantaneous activity a pick it in m (as ChoiceGate.__call__)?"""
    tables, reals = gates[2], gates[3]
    gate_ptr, candidate_ptr, chosen = _table(tables, GATE_PTR), _table(tables, CANDIDATE_PTR), _table(tables, CHOSEN)
    tie, scale = reals[:len(chosen)], reals[len(chosen):]
    for g in range(gate_ptr[a], gate_ptr[a + 1]):
        best, pick = np.inf, -1
        for c in range(candidate_ptr[g], candidate_ptr[g + 1]):
            key = _key(m, tables, scale, c)
            if key < best:                  # strictly: the first of equal keys stays
                best, pick = key, c
        if tie[g] > 0 and pick >= 0:        # a key within the tie of the smallest, earlier, wins
            for c in range(candidate_ptr[g], pick):
                if _key(m, tables, scale, c) <= best + tie[g]:
                    pick = c
                    break
        if pick != candidate_ptr[g] + chosen[g]:
            return False
    return True
