"""What stops an exploration before it exhausts memory or runs forever.

Both engines call these checks between blocks of work, never per marking:

- :class:`TimeBudget`: the seconds an exploration may take (``max_seconds``); past
  them it stops with :class:`StateSpaceLimitError` (``option="max_seconds"``), so that a
  caller with a clock of its own (``spn compare``) can go on without the chain.
- :class:`MemoryBudget`: the memory a chain of n states will need, from what the
  exploration has measured so far, against what the process may still allocate
  (:func:`spn.limits.available_memory`, read once when exploration starts). Past
  it, exploration stops with :class:`StateSpaceLimitError` saying how far it got.
- :func:`endless_run` and :func:`too_many_rounds`: instantaneous activities that
  would fire forever while the marking changes (tokens growing without end), which
  no cycle check can see since no marking repeats; they raise
  :class:`TimelessTrapError`.

The estimate, per tangible state (docs/performance.md, "Memory per state")::

    bytes(n) = n * (row + STATE_BYTES + t * TRANSITION_BYTES)

with ``row`` the bytes of one stored marking, ``t`` the transitions per expanded
state measured so far, STATE_BYTES the hash table slots, the per-state entries of
the timed-rate matrix, and the solver's vectors, and TRANSITION_BYTES the
transition's entry while exploring (4 + 4 + 8 bytes) plus the generator, its
transpose and the temporaries of building them. It counts the solve, which comes
after exploring and is where memory peaks, so that a chain is stopped while it
can still be told about. (A MapReduce chain, 15 one-byte places and 3
transitions per state, comes to 15 + 64 + 3 * 96 = 367 bytes per state; measured:
335.)

>>> budget = MemoryBudget(available=10 << 20)
>>> budget.check(states=1_000, expanded=1_000, transitions=3_000, row_bytes=15)
>>> budget.check(states=100_000, expanded=50_000, transitions=150_000, row_bytes=15)
Traceback (most recent call last):
...
spn.exceptions.StateSpaceLimitError: stopped exploring at 100,000 tangible markings: the chain would need about 36.7 MB (367 bytes per state at 3.0 transitions per state) and 8.4 MB of memory is available to it; solve a smaller configuration, or estimate it by simulation
"""

from __future__ import annotations

import time

from spn.exceptions import StateSpaceLimitError, TimelessTrapError
from spn.limits import available_memory
from spn.statespace.activity_table import DENSE_ENTRIES, is_plain

#: bytes per state besides the marking and the transitions
STATE_BYTES = 64
#: bytes per transition, from exploring to the solve's peak
TRANSITION_BYTES = 96
#: the share of the available memory a chain may be planned to take (the rest: the
#: interpreter's own growth, and arrays that double while they grow)
SHARE = 0.8
#: places up to which the compiled engine takes a net (its scratch arrays hold 100,000 markings)
MAX_COMPILED_PLACES = 1 << 12
#: states below which no estimate is made (a small chain cannot be a danger)
SMALL = 10_000
#: rounds of instantaneous firings after one timed firing (after runs of one activity are
#: taken in one step), past which the vanishing markings are taken to grow without end
#: (as the compiled engine's DEPTH_LIMIT)
MAX_ROUNDS = 10_000


class TimeBudget:
    """The seconds an exploration may take from ``started`` (a :func:`time.perf_counter` value; None: no limit).

    >>> TimeBudget(None, started=0.0).check(states=10**9)
    >>> TimeBudget(2.5, started=time.perf_counter() - 3).check(states=12_345)
    Traceback (most recent call last):
    ...
    spn.exceptions.StateSpaceLimitError: stopped exploring after 2.5 s (max_seconds) at 12,345 tangible markings: solve a smaller configuration, allow more time, or estimate it by simulation
    """

    def __init__(self, max_seconds: float | None, *, started: float):
        self.max_seconds = max_seconds
        self.deadline = None if max_seconds is None else started + max_seconds

    def check(self, *, states: int) -> None:
        """Raise :class:`StateSpaceLimitError` once the clock has passed the budget."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise StateSpaceLimitError(
                f"stopped exploring after {self.max_seconds:g} s (max_seconds) at {states:,} tangible markings: "
                f"solve a smaller configuration, allow more time, or estimate it by simulation",
                option="max_seconds")


class MemoryBudget:
    """The memory an exploration may plan to use (bytes; read from the system when not given)."""

    def __init__(self, available: int | None = None):
        self.available = available_memory() if available is None else available

    def check(self, *, states: int, expanded: int, transitions: int, row_bytes: int) -> None:
        """Raise :class:`StateSpaceLimitError` when ``states`` states would need more than the share
        of memory available (``transitions`` found while expanding ``expanded`` states)."""
        if states < SMALL:
            return
        per_transition = transitions / max(expanded, 1)
        per_state = row_bytes + STATE_BYTES + per_transition * TRANSITION_BYTES
        need = states * per_state
        if need > SHARE * self.available:
            raise StateSpaceLimitError(
                f"stopped exploring at {states:,} tangible markings: the chain would need about "
                f"{_size(need)} ({per_state:,.0f} bytes per state at {per_transition:.1f} transitions per "
                f"state) and {_size(SHARE * self.available)} of memory is available to it; solve a smaller "
                f"configuration, or estimate it by simulation")


def _size(nbytes: float) -> str:
    """``36.7 MB``, ``1.2 GB``: a size for a person (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes:.0f} bytes"


def small_and_plain(net) -> bool:
    """Can the compiled engine take ``net``? It must be plain (choice gates allowed), and its dense arrays (token changes
    of every activity over every place, rivals of every instantaneous activity) must be small.

    >>> from spn.net import Net, Place, TimedActivity
    >>> small_and_plain(Net([Place("a", 1)], [TimedActivity("t", inputs={"a": 1}, outputs={"a": 1}, rate=1.0)]))
    True
    """
    n_instant = sum(1 for a in net.activities if not hasattr(a, "rate"))
    return (len(net.activities) * len(net.places) <= DENSE_ENTRIES and n_instant ** 2 <= DENSE_ENTRIES
            and len(net.places) <= MAX_COMPILED_PLACES and is_plain(net, choices=True))


def endless_run(net, activity, marking) -> TimelessTrapError:
    """The error for an instantaneous activity that nothing disables and whose firing changes the
    marking: it would fire forever, its tokens growing without end."""
    return TimelessTrapError(
        f"timeless trap: instantaneous activity {activity.name!r} would fire forever from marking "
        f"{net.describe(marking)} (nothing disables it, and tokens grow with every firing)")


def too_many_rounds(net, names, marking) -> TimelessTrapError:
    """The error for vanishing markings still changing after :data:`MAX_ROUNDS` rounds of firings."""
    return TimelessTrapError(
        f"timeless trap: instantaneous activities {sorted(set(names))[:10]} fired more than "
        f"{MAX_ROUNDS:,} rounds in zero time without reaching a tangible marking (now "
        f"{net.describe(marking)}): their tokens grow without end")
