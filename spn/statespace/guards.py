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

    Given the states expanded so far, it also *predicts* where the exploration is going
    (:func:`projected_states`) and stops it as soon as the projection says it will not end
    within the budget, or will pass ``max_states``: a caller with a fallback then still has
    most of its time (the budget is not spent on a chain that was never going to fit).

    >>> TimeBudget(None, started=0.0).check(states=10**9)
    >>> TimeBudget(2.5, started=time.perf_counter() - 3).check(states=12_345)
    Traceback (most recent call last):
    ...
    spn.exceptions.StateSpaceLimitError: stopped exploring after 2.5 s (max_seconds) at 12,345 tangible markings: solve a smaller configuration, allow more time, or estimate it by simulation
    """

    def __init__(self, max_seconds: float | None, *, started: float, max_states: int | None = None):
        self.max_seconds = max_seconds
        self.started = started
        self.deadline = None if max_seconds is None else started + max_seconds
        self.max_states = max_states
        self.history = []           # (seconds, states found, states expanded), WATCH_STEP apart

    def check(self, *, states: int, expanded: int | None = None) -> None:
        """Raise :class:`StateSpaceLimitError` once the clock has passed the budget, or once the
        exploration's projection (from ``expanded``, when given) will not end within it."""
        if self.deadline is None:
            return
        now = time.perf_counter()
        if now > self.deadline:
            raise StateSpaceLimitError(
                f"stopped exploring after {self.max_seconds:g} s (max_seconds) at {states:,} tangible markings: "
                f"solve a smaller configuration, allow more time, or estimate it by simulation",
                option="max_seconds", reached=states)
        if expanded is None or (self.history and now - self.history[-1][0] < WATCH_STEP):
            return
        self.history.append((now, states, expanded))
        if now - self.started < WATCH_AFTER or len(self.history) < 4:
            return
        total, rate = projected_states(self.history)
        finish = now + (total - expanded) / rate
        if self.max_states is not None and total > PROJECTION_MARGIN * self.max_states:
            raise StateSpaceLimitError(
                f"stopped exploring at {states:,} tangible markings after {now - self.started:.1f} s: the growth so "
                f"far projects about {total:,.3g} states, past max_states {self.max_states:,}", option="max_states",
                reached=states)
        if finish - self.started > PROJECTION_MARGIN * self.max_seconds:
            raise StateSpaceLimitError(
                f"stopped exploring at {states:,} tangible markings after {now - self.started:.1f} s: the growth so "
                f"far projects about {total:,.3g} states, {finish - self.started:,.0f} s at {rate:,.0f} states/s, "
                f"past the {self.max_seconds:g} s it may take (max_seconds)", option="max_seconds",
                reached=states)


#: seconds between two looks at the exploration's growth
WATCH_STEP = 0.25
#: seconds of exploration before its growth is projected (the first levels say little)
WATCH_AFTER = 1.0
#: how far past a limit the projection must land before exploring stops
PROJECTION_MARGIN = 1.0


def projected_states(history) -> tuple[float, float]:
    """The tangible states a breadth-first exploration will end with, and its rate (states expanded
    per second), from ``(seconds, found, expanded)`` samples.

    The frontier ``f = found - expanded`` grows by ``g - 1`` per state expanded, ``g`` being the new
    states an expansion finds; the exploration ends when the frontier is empty. ``g`` is measured on
    the older and the newer half of the samples; where it falls, it is taken to fall on linearly,
    ``g(x) = g - b x``, and the end is the root of ``f + (g - 1) x - b x^2 / 2 = 0``; while it is still
    above 1 (the frontier widening), the frontier is taken to be at its widest now, so that the
    exploration is at best half done (as many states again, plus the frontier): chains of job
    identities widen for long, and a linear fall of ``g`` there ended far short of the truth. A projection, not a bound: it decides when to stop
    looking for an exact chain that will not fit, never a number that is printed.

    >>> samples = [(t, 1000 * t * (2 - t / 10), 1000 * t * (2 - t / 10) - 50 * t) for t in range(1, 9)]
    >>> total, rate = projected_states(samples)
    >>> 8_000 < total < 40_000
    True
    """
    half = len(history) // 2
    (t0, s0, e0), (t1, s1, e1), (t2, s2, e2) = history[0], history[half], history[-1]
    rate = max((e2 - e0) / max(t2 - t0, 1e-9), 1.0)
    g_old = (s1 - s0) / max(e1 - e0, 1)
    g_new = (s2 - s1) / max(e2 - e1, 1)
    frontier = max(s2 - e2, 0)
    slope = (g_old - g_new) / max((e2 - e0) / 2, 1)
    if g_new >= 1:
        left = e2 + frontier        # still widening: at its widest now at best
    elif slope > 0:
        left = ((g_new - 1) + ((g_new - 1) ** 2 + 2 * slope * frontier) ** 0.5) / slope
    else:
        left = frontier / (1 - g_new)
    return e2 + max(left, frontier), rate


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
