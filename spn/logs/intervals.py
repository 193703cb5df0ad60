"""Arithmetic on time intervals ``(start, end)`` in epoch milliseconds, as logs give them.

Each function takes pairs, or an array of shape ``(n, 2)`` (a log's tasks, as columns, give one in
a single step), and works on whole arrays: a log may hold hundreds of thousands of intervals.

>>> covered_seconds([(0, 2000), (1000, 3000), (5000, 6000)], 0, 10_000)
4.0
>>> most_at_once([(0, 2000), (1000, 3000), (3000, 4000)])
2
>>> union([(1000, 3000), (0, 2000), (5000, 6000)]).tolist()
[[0, 3000], [5000, 6000]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_intervals", "covered_seconds", "most_at_once", "union"]


def as_intervals(intervals) -> np.ndarray:
    """``intervals`` (pairs, or an ``(n, 2)`` array) as an int64 array of shape ``(n, 2)``."""
    return np.asarray(intervals, dtype=np.int64).reshape(-1, 2)


def union(intervals) -> np.ndarray:
    """The union of ``intervals`` as sorted, disjoint intervals (an ``(m, 2)`` array). Intervals that touch
    are joined; an empty one (a task of 0 ms) apart from the others stays a piece of its own: something
    happened at that instant."""
    spans = as_intervals(intervals)
    spans = spans[np.lexsort((spans[:, 1], spans[:, 0]))]
    if not len(spans):
        return spans
    reach = np.maximum.accumulate(spans[:, 1])     # the furthest end so far
    # an interval opens a new piece when it starts after every earlier one ended
    opens = np.r_[True, spans[1:, 0] > reach[:-1]]
    first = np.flatnonzero(opens)
    last = np.r_[first[1:], len(spans)] - 1
    return np.column_stack((spans[first, 0], reach[last]))


def covered_seconds(intervals, start: int, end: int) -> float:
    """Seconds of [start, end] covered by the union of ``intervals`` (ms)."""
    spans = as_intervals(intervals)
    clipped = np.column_stack((np.maximum(spans[:, 0], start), np.minimum(spans[:, 1], end)))
    clipped = clipped[clipped[:, 1] > clipped[:, 0]]
    pieces = union(clipped)
    return int((pieces[:, 1] - pieces[:, 0]).sum()) / 1000.0


def most_at_once(intervals) -> int:
    """Most intervals open at the same time.

    An interval that ends at ``t`` is closed before one that starts at ``t``
    opens: a task finishing frees its core for a task launched at the same time.
    """
    spans = as_intervals(intervals)
    times = np.concatenate((spans[:, 0], spans[:, 1]))
    change = np.concatenate((np.ones(len(spans), dtype=np.int64), -np.ones(len(spans), dtype=np.int64)))
    order = np.lexsort((change, times))     # by time, an end (-1) before a start (+1)
    return int(max(np.cumsum(change[order]).max(initial=0), 0))
