"""How many tangible states a chain will have, before exploring it: the same model with fewer users,
explored exactly, and the growth of those counts carried on to the users asked for.

A chain of n users is embedded in the chain of n + 1 (the extra user may think for as long as any
path takes), so every count explored is a proven lower bound on the chain asked for. The counts grow
by one law (:func:`_project`): each added user adds states, the increment grows by a ratio, and the
ratio falls as the containers fill, down to linear growth. On 53 MapReduce and join models under
fifo, fair and gate (``benchmarks/state_estimate.py``) it lands at 0.92-3.47 times the true count
from three counts or more (exact once the users sampled pass the containers), 0.75-10 times from two;
MapReduce fifo N = C = 6 (988,702 states) from the counts at 1-5 users: 987,862.

The estimate is a projection, not a bound (``at_least`` is the bound): it decides whether to explore,
and is printed with "about" and the counts it came from. While exploring, the watch of
:class:`spn.statespace.guards.TimeBudget` still stands. Not estimated: one user (counting is exploring
then; :func:`spn.analysis.choice.state_space_lower_bound` stands), and query classes.

>>> from spn.description import load_description
>>> e = estimate_states(load_description("models/mapreduce.yaml", ["scheduler.policy=fifo", "workload.users=9"]))
>>> e.counts, round(e.states)                               # the chain of 9 users has 41,160 states
((9, 86, 1050, 7745, 14428), 41160)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from spn.exceptions import StateSpaceLimitError

__all__ = ["StateEstimate", "estimate_states", "SAMPLE_STATES"]

#: the largest chain of fewer users explored for an estimate (about 1-2 s of the compiled explorer on a
#: job-identity net); one that passes it ends the sampling, its partial count a lower bound
SAMPLE_STATES = 200_000
#: a count past which the next chain is explored by the compiled explorer from its first state (smaller
#: chains are explored before the compiled code would have loaded)
COMPILED_AFTER = 200
#: the relative change of the projection, from one count to the next, at which sampling stops
SETTLED = 0.02
#: a projection below this many states ends the sampling: exploring the chain itself is as cheap
CHEAP = 100_000


@dataclass(frozen=True)
class StateEstimate:
    """``states`` projected at ``users`` users, a proven lower bound (``at_least``), the counts at 1, 2, ...
    users it came from, and the seconds it took."""

    users: int
    states: float
    at_least: int
    counts: tuple
    seconds: float

    def describe(self) -> str:
        """``about 4.51e+06 tangible states at 3 users (241, 33,036 at 1-2 users; a rough projection: ...)``."""
        counts = ", ".join(f"{n:,}" for n in self.counts)
        more = (f", more than {self.at_least:,} at {len(self.counts) + 1}"
                if self.at_least > self.counts[-1] else "")
        rough = "" if len(self.counts) >= 3 else "; a rough projection: the growth was not yet seen to slow"
        sampled = "1 user" if len(self.counts) == 1 else f"1-{len(self.counts)} users"
        return (f"about {self.states:,.3g} tangible states at {self.users} users "
                f"({counts} at {sampled}{more}{rough})")


def estimate_states(desc, *, max_states: int | None = None, max_seconds: float | None = None) -> StateEstimate | None:
    """The projected tangible states of ``desc``'s chain (None: one user, query classes, or too few
    chains sampled within ``max_seconds`` to see a growth).

    The chains of 1, 2, ... users are explored while each stays under :data:`SAMPLE_STATES` (and
    ``max_states``), within ``max_seconds`` in all; sampling stops early once three counts project
    fewer than :data:`CHEAP` states, or the last count moved the projection by less than :data:`SETTLED`.
    """
    from spn.models.jobs import application_net

    if desc.classes or desc.workload.users < 2:
        return None
    users = desc.workload.users
    started = time.perf_counter()
    deadline = None if max_seconds is None else started + max_seconds
    cap = SAMPLE_STATES if max_states is None else min(SAMPLE_STATES, max_states)
    counts, at_least = [], 0
    for n in range(1, users):
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            break
        try:
            net = application_net(replace(desc, workload=replace(desc.workload, users=n))).net
            states = _count(net, cap, left, compiled=bool(counts) and counts[-1] >= COMPILED_AFTER)
        except StateSpaceLimitError as error:
            at_least = max(at_least, error.reached or 0)
            break
        counts.append(states)
        at_least = states
        if len(counts) >= 3 and (_project(counts, users) < CHEAP or _settled(counts, users)):
            break
    # where the next chain passed the sample's limit, the chain grows at least as fast as that says
    seen = counts + [at_least] if counts and at_least > counts[-1] else counts
    if len(seen) < 2:
        return None
    projected = max(_project(counts, users) if len(counts) >= 2 else 0.0, _project(seen, users))
    return StateEstimate(users=users, states=projected, at_least=at_least, counts=tuple(counts),
                         seconds=time.perf_counter() - started)


def _count(net, cap: int, seconds: float | None, *, compiled: bool) -> int:
    """The tangible states of ``net`` (StateSpaceLimitError past ``cap`` or ``seconds``); with ``compiled``,
    by the compiled explorer from the first state when it is ready (a chain sampled after a large one is
    worth its start: exploring 20,000 states with NumPy first would cost more)."""
    from spn import kernels
    from spn.statespace import explore
    from spn.statespace.activity_table import is_plain

    engine = "auto"
    if compiled and kernels.ready() and is_plain(net, choices=True):
        engine = "compiled"
    try:
        return explore(net, max_states=cap, max_seconds=seconds, engine=engine).n_states
    except ValueError:      # the compiled explorer gave up on this net
        return explore(net, max_states=cap, max_seconds=seconds).n_states


def _settled(counts, users: int) -> bool:
    """Does one more count no longer move the projection (within :data:`SETTLED`)? Then the growth
    is known, and a larger chain would cost time for nothing."""
    before, now = _project(counts[:-1], users), _project(counts, users)
    return abs(now - before) <= SETTLED * now


def _project(counts, users: int) -> float:
    """The count at ``users`` from the counts at 1, 2, ... users, by the growth of their increments.

    With no user a chain has one marking (everyone thinks). Each added user adds states; the
    increment grows by a ratio (a slot's progress times every other's: geometric growth while the
    containers are free), and that ratio falls as the containers fill, at the rate it fell between
    the last two increments, down to 1: past the containers an added user waits and adds as many
    states as the one before (linear growth; the gate net's chains grow so from two users on).

    >>> round(_project([9, 79, 1229, 16549, 154173], 6))      # MapReduce fifo, N = C = 6: 988,702
    987862
    >>> round(_project([16, 121, 226], 10))                   # fifo with 2 containers: 961
    961
    """
    c = [1, *counts]
    d = [b - a for a, b in zip(c, c[1:])]
    ratio = d[-1] / d[-2] if len(d) >= 2 and d[-2] > 0 else 1.0
    fall = min(1.0, ratio * d[-3] / d[-2]) if len(d) >= 3 and d[-3] > 0 and d[-2] > 0 else 1.0
    total, step = float(c[-1]), float(d[-1])
    for _ in range(users - len(counts)):
        ratio = max(ratio * fall, 1.0)
        step *= ratio
        total += step
    return total
