"""Which instantaneous activities may fire in a marking, and how often in a row: the compiled
exploration engine's (:mod:`spn.statespace.compiled`) questions about one marking.

The enabled activities of the highest priority are the choices (ties split by weight); a
single choice fires in a *run* as long as it stays the only one (:meth:`ActivityTable.run_lengths`
answers the same for the NumPy engine). Both read the arrays of
:mod:`spn.statespace.kernel_arrays`, and look at few activities: only those woken on the way from
a tangible marking (less those a test failing there, on a place the timed firing leaves alone,
keeps disabled), each first through its sentinel test, and for a run only the rivals that read
what it changes.

Numba caches each function with its own file: :mod:`spn.kernels` stamps this file with the
kernel's, and compiles the kernel again (its cache cleared) when any of them changes.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from spn.statespace.activity_table import UNBOUNDED
from spn.statespace.compiled_gates import gates_hold


def _compiled(function):
    return njit(cache=True, nogil=True)(function)


def _inlined(function):
    """Compiled into its callers: these run several times per marking."""
    return njit(cache=True, nogil=True, inline="always")(function)


@_inlined
def enabled(m, ptr, column, threshold, a):
    for t in range(ptr[a], ptr[a + 1]):
        need = threshold[t]
        if need > 0:
            if m[column[t]] < need:
                return False
        elif m[column[t]] >= -need:
            return False
    return True


@_inlined
def _window(m, ptr, column, threshold, delta_a, b):
    """The firings i of a run of delta_a (i = 0, 1, ...) after which activity b is enabled: [lo, hi)."""
    lo, hi = 0, UNBOUNDED
    for t in range(ptr[b], ptr[b + 1]):
        need = threshold[t]
        sign = 1 if need > 0 else -1                    # a test reads sign * m[column] >= bound
        bound = need if need > 0 else 1 + need
        value = sign * m[column[t]]
        change = sign * delta_a[column[t]]
        if change == 0:
            if value < bound:
                return UNBOUNDED, 0
        elif change == 1:                               # (the usual case, without a division)
            lo = max(lo, bound - value)
        elif change == -1:
            hi = min(hi, value - bound + 1)
        elif change > 0:
            lo = max(lo, -((value - bound) // change))
        else:
            hi = min(hi, (value - bound) // (-change) + 1)
    return lo, hi


@_inlined
def run_length(m, a, instant, gates, links):
    """How often activity a, the only choice in m, fires in a row (see ActivityTable.run_lengths);
    once when a gate could stop the run or start a rival. Only the rivals that read a place a
    changes can start during the run (its stoppers, :func:`~spn.statespace.kernel_arrays.link_arrays`)."""
    if gates is not None and not gates[0][a]:
        return 1
    ptr, column, threshold, delta = instant[0], instant[1], instant[2], instant[3]
    stoppers = links[0]
    n = len(ptr) - 1
    for picked in (len(stoppers) - 3 * n, len(stoppers) - 6 * n):      # a's sentinel, its second test
        t = np.uint64(picked + 3 * a)
        column_t = np.uint64(stoppers[t])
        if stoppers[t + np.uint64(1)] * (m[column_t] + delta[a, column_t]) < stoppers[t + np.uint64(2)]:
            return 1                # (most firings: a fails one of its likeliest-failing tests after one)
    run = _window(m, ptr, column, threshold, delta[a], a)[1]
    for r in range(stoppers[a], stoppers[a + 1]):
        if run <= 1:                # (most firings: a token moved on, a container handed out)
            return 1
        lo, hi = _window(m, ptr, column, threshold, delta[a], stoppers[r])
        if lo < hi:
            run = min(run, max(lo, 1))
    return 1 if run >= UNBOUNDED else run


@_inlined
def choices(m, instant, gates, priority, links, woken, choice):
    """The instantaneous activities that may fire in m (the enabled ones of the highest priority)
    into ``choice``; returns how many, and their total weight (0 choices: m is tangible). Only the
    activities in the bit set ``woken`` are looked at (all of them, or those woken on the way from a
    tangible marking: :func:`~spn.statespace.kernel_arrays.link_arrays`), in the order of their numbers.

    Those found disabled are taken out of ``woken``: a firing cannot enable an activity that reads no
    place it changes, so after it only those left and those it wakes need a look (along a slot shift or
    an allocation, the set stays that small instead of growing to every activity of the slots)."""
    if gates is not None:       # choice gates: scanned in a call of its own (None: pruned when compiled)
        return _gated_choices(m, instant, gates, priority, links, woken, choice)
    ptr, column, threshold, base = instant[0], instant[1], instant[2], instant[4]
    sentinels = links[0]
    sentinel = len(sentinels) - 3 * len(priority)       # (the last 3 n entries)
    n_choices, best, total = 0, -np.inf, 0.0
    for i in range(len(woken)):
        word = woken[i]
        keep = word
        while word != 0:
            a = 64 * i + trailing_zeros(word)
            bit = word & -word
            word ^= bit
            if priority[a] < best:                  # so is every one after it (highest priority first)
                woken[i] = keep
                return n_choices, total
            # most activities fail their sentinel test (unsigned indices: no negative ones to wrap)
            test = np.uint64(sentinel + 3 * a)
            if sentinels[test + np.uint64(1)] * m[np.uint64(sentinels[test])] < sentinels[test + np.uint64(2)]:
                keep ^= bit
                continue
            if enabled(m, ptr, column, threshold, a):
                if priority[a] > best:
                    best, n_choices, total = priority[a], 0, 0.0
                choice[n_choices] = a
                n_choices += 1
                total += base[a]
            else:
                keep ^= bit
        woken[i] = keep
    return n_choices, total


@_inlined
def failing(m, links, n, n_timed, fails):
    """Into ``fails``: the activities a timed firing may wake whose sentinel (row 0), and whose second
    test (row 1), fail in tangible marking m (bit sets; see :func:`may_enable`). No branch on the tests:
    their outcomes are hard to predict."""
    tests, wakes = links[0], links[1]
    second = len(tests) - 6 * n
    sentinel = second + 3 * n
    for i in range(wakes.shape[1]):
        word = wakes[n + 3 * n_timed, i]
        first, other = 0, 0
        while word != 0:
            bit = word & -word
            t = np.uint64(3 * (64 * i + trailing_zeros(word)))
            word ^= bit
            s, u = np.uint64(sentinel) + t, np.uint64(second) + t
            first |= bit * (tests[s + np.uint64(1)] * m[np.uint64(tests[s])] < tests[s + np.uint64(2)])
            other |= bit * (tests[u + np.uint64(1)] * m[np.uint64(tests[u])] < tests[u + np.uint64(2)])
        fails[0, i], fails[1, i] = first, other


@_inlined
def may_enable(links, n, n_timed, a, fails, woken):
    """Into ``woken``: the activities timed activity a, fired from a tangible marking, may enable: those it
    wakes, but those with a test that fails in the marking (``fails``, :func:`failing`) on a place a
    leaves alone (such a test still fails after the firing)."""
    wakes = links[1]
    for i in range(wakes.shape[1]):
        stay = (fails[0, i] & ~wakes[n + n_timed + a, i]) | (fails[1, i] & ~wakes[n + 2 * n_timed + a, i])
        woken[i] = wakes[n + a, i] & ~stay


@_compiled
def _gated_choices(m, instant, gates, priority, links, woken, choice):
    """:func:`choices` where activities may have choice gates (kept out of the plain nets' loop,
    which it slows down even where no gate is ever evaluated). Activities come highest priority
    first, so the scan stops at the first below the enabled ones found."""
    ptr, column, threshold, base = instant[0], instant[1], instant[2], instant[4]
    sentinels = links[0]
    sentinel = len(sentinels) - 3 * len(priority)       # (the last 3 n entries)
    n_choices, best, total = 0, -np.inf, 0.0
    for i in range(len(woken)):
        word = woken[i]
        keep = word
        while word != 0:
            a = 64 * i + trailing_zeros(word)
            bit = word & -word
            word ^= bit
            if priority[a] < best:
                woken[i] = keep
                return n_choices, total
            test = sentinel + 3 * a
            if sentinels[test + 1] * m[sentinels[test]] < sentinels[test + 2]:
                keep ^= bit
                continue
            if enabled(m, ptr, column, threshold, a) and (not gates[1][a] or gates_hold(m, gates, a)):
                if priority[a] > best:
                    best, n_choices, total = priority[a], 0, 0.0
                choice[n_choices] = a
                n_choices += 1
                total += base[a]
            else:
                keep ^= bit
        woken[i] = keep
    return n_choices, total
