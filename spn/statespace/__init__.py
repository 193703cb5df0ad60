"""The tangible state space of a net: explore it, then read the CTMC off it (docs/design.md §3).

A marking is *vanishing* when some instantaneous activity is enabled in it, and
*tangible* otherwise. :func:`explore` starts from the initial marking and keeps
only tangible markings: each timed firing is followed through the vanishing
markings it leads to (highest priority first, ties split by weight) until it
lands in tangible ones, and the probability of each landing is folded into the
rate. Instantaneous firings on the way are counted, so that their throughput can
be computed later.

``explore`` picks an engine (``frontier``: NumPy, any net; ``compiled``: Numba,
plain nets); both fill the same :class:`Parts`, from which the
:class:`StateSpace` is assembled (``space``). ``activity_table`` evaluates
activities on blocks of markings, ``marking_index`` remembers the markings seen.

Markings are rows of a NumPy integer array; enabling, rates and firing are
evaluated for a whole frontier at once (:mod:`spn.statespace.frontier`). Plain nets (arcs only, constant rates
and weights: every model :mod:`spn.models` builds) go by default to the compiled
engine of :mod:`spn.statespace.compiled`, which builds the same chain faster (the scheduler's
choice gates of :mod:`spn.net.choice` included).

>>> from spn.net import Net, Place, TimedActivity, InstantActivity
>>> net = Net([Place("idle", 1), Place("ready"), Place("busy")], [
...     TimedActivity("arrive", inputs={"idle": 1}, outputs={"ready": 1}, rate=1.0),
...     InstantActivity("start", inputs={"ready": 1}, outputs={"busy": 1}),
...     TimedActivity("serve", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0)])
>>> ss = explore(net)
>>> ss.n_states, ss.generator().toarray().tolist()
(2, [[-1.0, 1.0], [2.0, -2.0]])
"""

from __future__ import annotations

import time

from spn import kernels
from spn.defaults import MAX_STATES
from spn.exceptions import StateSpaceLimitError
from spn.net import Net
from spn.net.erlang import expand_erlang
from spn.statespace import frontier
from spn.statespace.activity_table import is_plain
from spn.statespace.space import Parts, StateSpace, from_parts

__all__ = ["Parts", "StateSpace", "explore"]

#: tangible states below which explore(engine="auto") does not load the compiled engine
SMALL = 20_000
#: the seconds the NumPy engine may take on such a small chain before the compiled engine takes over
#: (loading it costs about a second; the NumPy engine explores a job-identity net at a few thousand
#: states per second, so 20,000 states could take ten)
SMALL_SECONDS = 1.0


def explore(net: Net, *, max_states: int = MAX_STATES, progress: bool = False,
            engine: str = "auto", starts=None, max_seconds: float | None = None) -> StateSpace:
    """Generate the tangible reachability graph of ``net``.

    Erlang activities are expanded first (:func:`spn.net.erlang.expand_erlang`).
    Raises :class:`StateSpaceLimitError` past ``max_states`` tangible markings, or
    ``max_seconds`` seconds (None: no limit; the engines look at the clock between blocks of
    markings, so a limit is overrun by a fraction of a second), and
    :class:`TimelessTrapError` when vanishing markings loop with no way out.
    ``progress=True`` prints a progress line on stderr.

    ``engine``: ``"numpy"`` explores a frontier at a time with NumPy calls (any
    net); ``"compiled"`` one marking at a time in compiled code
    (:mod:`spn.statespace.compiled`: plain nets only, several times faster);
    ``"auto"`` explores chains of up to :data:`SMALL` states with the NumPy
    engine (loading the compiled code takes longer than that) if it takes it
    at most :data:`SMALL_SECONDS`, then takes the compiled engine where it
    applies and the NumPy engine otherwise, or where the compiled one gives up
    (vanishing loops, traps). Until this installation
    has compiled the engine (:mod:`spn.kernels`), ``auto`` takes the NumPy
    engine and has it compiled in the background.

    ``starts``: explore from each of these markings (rows, in the order of the
    expanded net's places) instead of the initial marking, with the NumPy engine
    (a passage time starts from the states a tagged job can arrive in).
    """
    if engine not in ("auto", "numpy", "compiled"):
        raise ValueError(f"unknown exploration engine {engine!r}: auto, numpy or compiled")
    try:
        if starts is not None:
            started = time.perf_counter()
            net = expand_erlang(net)
            return from_parts(net, frontier.explore_frontier(net, max_states, progress, started, starts,
                                                             max_seconds), started)
        return _explore(net, max_states, progress, engine, max_seconds)
    except MemoryError:     # the estimate of spn.statespace.guards missed: still a clean stop
        raise StateSpaceLimitError("ran out of memory while exploring the state space: solve a smaller "
                                   "configuration, or estimate it by simulation") from None


def _explore(net, max_states, progress, engine, max_seconds):
    started = time.perf_counter()
    net = expand_erlang(net)
    if engine == "auto":
        if not (max_states > SMALL and is_plain(net, choices=True)):
            engine = "numpy"
        else:
            # small chains are explored before the compiled code would have been loaded
            shortcut = SMALL_SECONDS if max_seconds is None else min(max_seconds, SMALL_SECONDS)
            try:
                return from_parts(net, frontier.explore_frontier(net, SMALL, progress, started,
                                                                 max_seconds=shortcut), started)
            except StateSpaceLimitError as error:
                caller_limit = error.option == "max_seconds" and shortcut == max_seconds
                if error.option not in ("max_states", "max_seconds") or caller_limit:   # memory, or the caller's time
                    raise
            if not kernels.ready():
                # compiled once per installation, in another process; with a time budget, wait for it
                # (the NumPy engine is 5-15 times slower on a large chain), else explore on without it
                kernels.warm_in_background()
                if max_seconds is None:
                    engine = "numpy"
                elif not kernels.wait_ready(until=started + max_seconds, message=(
                        "waiting for the compiled explorer (compiled once per installation, about a minute)")):
                    raise StateSpaceLimitError(
                        f"the chain has more than {SMALL:,} states and the compiled explorer was still being "
                        f"compiled after {max_seconds:g} s (max_seconds; it is compiled once per installation)",
                        option="max_seconds")
    if engine != "numpy":
        from spn.statespace import compiled   # loads Numba: only when the chain is worth it
        if not kernels.ready():
            kernels.await_other(until=None if max_seconds is None else started + max_seconds)
        if engine == "compiled" and not is_plain(net, choices=True):
            raise ValueError("the compiled engine needs a plain net (no gates but choice gates, constant rates "
                             "and weights)")
        parts = compiled.explore_plain(net, max_states=max_states, progress=progress, started=started,
                                       max_seconds=max_seconds)
        if parts is not None:
            kernels.mark_ready()
            return from_parts(net, parts, started)
        if engine == "compiled":
            raise ValueError("the compiled engine gave up on this net (vanishing loops, very many "
                             "interleavings, a trap, or too many activities and places): use engine='numpy'")
    return from_parts(net, frontier.explore_frontier(net, max_states, progress, started, max_seconds=max_seconds),
                      started)
