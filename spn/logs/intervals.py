"""Arithmetic on time intervals ``(start, end)`` in epoch milliseconds, as logs give them.

>>> covered_seconds([(0, 2000), (1000, 3000), (5000, 6000)], 0, 10_000)
4.0
>>> most_at_once([(0, 2000), (1000, 3000), (3000, 4000)])
2
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["covered_seconds", "most_at_once"]


def covered_seconds(intervals: Iterable[tuple[int, int]], start: int, end: int) -> float:
    """Seconds of [start, end] covered by the union of ``intervals`` (ms)."""
    clipped = sorted((max(a, start), min(b, end)) for a, b in intervals if min(b, end) > max(a, start))
    total, current = 0, None
    for a, b in clipped:
        if current is None or a > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [a, b]
        else:
            current[1] = max(current[1], b)
    if current is not None:
        total += current[1] - current[0]
    return total / 1000.0


def most_at_once(intervals: Iterable[tuple[int, int]]) -> int:
    """Most intervals open at the same time.

    An interval that ends at ``t`` is closed before one that starts at ``t``
    opens: a task finishing frees its core for a task launched at the same time.
    """
    intervals = list(intervals)
    changes = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    running = most = 0
    for _, change in changes:
        running += change
        most = max(most, running)
    return most
