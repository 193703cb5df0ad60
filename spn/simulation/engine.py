"""Discrete-event simulation of a net, with any task-time law (docs/design.md §3.1).

The simulator runs the *same* net the analytic path solves, un-expanded, with the
same semantics as :mod:`spn.statespace`:

- **Exponential timed activities race**: each has its (marking-dependent) rate,
  ``servers`` included; the next one fires after an exponential time of the total
  rate and is chosen with probability proportional to its rate.
- **Non-exponential timed activities are clocks per token**: such an activity must
  have ``servers="infinite"`` and one private input place (multiplicity 1, consumed
  by no other activity, as for Erlang expansion); every token that arrives in that
  place is an independent task and gets its own clock, sampled from the activity's
  law when the token arrives. An Erlang activity of shape > 1 keeps its law here
  instead of being expanded into stages.
- **Instantaneous activities** are resolved after the initial marking and after
  every timed firing: while any is enabled, among the enabled ones of the highest
  priority one fires, chosen with probability proportional to its weight.

The event loop works on a Python list of ints, with the tables and closures of
:class:`~spn.simulation.compiled.CompiledNet`; ``compiled=False`` takes the
MarkingView path everywhere (the reference: same trajectory, ~100x slower).

>>> from spn.net import Net, Place, TimedActivity, InstantActivity, Erlang
>>> net = Net([Place("idle", 1), Place("busy")], [
...     TimedActivity("start", inputs={"idle": 1}, outputs={"busy": 1}, rate=1.0),
...     TimedActivity("stop", inputs={"busy": 1}, outputs={"idle": 1},
...                   erlang=Erlang(1, 1.0), servers="infinite")])
>>> from spn.simulation.distributions import Distribution
>>> sim = NetSimulator(net, {"stop": Distribution.deterministic(1.0)})
>>> rep = sim.run(seed=1, warmup=10.0, length=10_000.0)
>>> round(rep.mean_tokens("busy"), 1)     # a cycle: Exp(1) idle then 1 s busy
0.5
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from spn.exceptions import ModelError, SpnError, TimelessTrapError
from spn.net import Net
from spn.simulation.compiled import CompiledNet, marking_row
from spn.simulation.distributions import CLOCK_EVERY, SimulationTimeout, law_stream, stream

__all__ = ["MAX_INSTANT_CHAIN", "NetSimulator", "Replication"]

#: instantaneous firings allowed in a row at one instant before calling it a timeless trap
MAX_INSTANT_CHAIN = 1_000_000

_INF = math.inf


@dataclass(frozen=True)
class Replication:
    """What one run of :meth:`NetSimulator.run` observed in its measurement window.

    ``integrals[k]`` is the integral over the window of the tokens of place k
    (``mean_tokens`` divides by ``duration``; NaN for places not in the run's
    ``observe``); ``firings[k]`` counts the firings of
    activity k in the window. ``events`` counts every firing of the run (timed and
    instantaneous, warm-up included), ``timed_events`` the timed ones.
    """

    start: float
    duration: float
    integrals: np.ndarray
    firings: np.ndarray
    events: int
    timed_events: int
    seconds: float
    place_index: dict
    activity_index: dict

    def mean_tokens(self, place: str) -> float:
        """Time-average tokens of ``place`` over the window."""
        return float(self.integrals[self.place_index[place]] / self.duration)

    def throughput(self, activity: str) -> float:
        """Firings of ``activity`` per unit time over the window."""
        return float(self.firings[self.activity_index[activity]] / self.duration)

    def count(self, activity: str) -> int:
        return int(self.firings[self.activity_index[activity]])

    def integral(self, place: str) -> float:
        return float(self.integrals[self.place_index[place]])


@dataclass(frozen=True)
class _Window:
    """The measurement window: by simulated time, or by the firings of one activity.

    Without a ``target`` (-1) the window is [warm_t, stop_t] and the counts are -1;
    with one it opens at its ``warm_n``-th firing, closes at its ``stop_n``-th, and
    the times are infinite.
    """

    target: int
    warm_n: int
    stop_n: int
    warm_t: float
    stop_t: float


class NetSimulator:
    """A net compiled for simulation; :meth:`run` simulates one replication.

    ``distributions`` maps timed activity names to a :class:`Distribution` that
    replaces the activity's own timing. Activities not listed keep theirs: a
    ``rate`` (exponential, possibly marking-dependent) or an ``erlang`` law.
    Raises :class:`ModelError` for unknown names, instantaneous activities given a
    law, and non-exponential laws on activities that are not infinite-server with
    one private input place.

    ``compiled=False`` evaluates every enabling, rate and firing through
    :meth:`Net.enabled`, :meth:`Net.rate` and :meth:`Net.fire` after every event
    (the reference path: slow, but the same trajectory for the same seed).
    One simulator runs one replication at a time (it is not thread-safe).
    """

    def __init__(self, net: Net, distributions=None, *, compiled: bool = True):
        self.net = net
        self.distributions = dict(distributions or {})
        self.compiled = bool(compiled)
        self.tables = CompiledNet(net, self.distributions, compiled=self.compiled)

    def run(self, seed=None, *, warmup: float = 0.0, length: float, count: str | None = None,
            observe=None, max_events: int | None = None, deadline: float | None = None) -> Replication:
        """Simulate one replication and return what its measurement window observed.

        Without ``count``, ``warmup`` and ``length`` are simulated times: statistics
        are collected over [warmup, warmup + length]. With ``count`` (an activity
        name) they are numbers of its firings: the window opens at its
        ``warmup``-th firing and closes at its ``warmup + length``-th. ``observe``
        names the places whose token integrals are kept (default: all; fewer is
        faster). ``seed`` is an int, a :class:`numpy.random.Generator` or None.
        ``max_events`` stops a run that fires that many activities without
        finishing (an SpnError); ``deadline``, a :func:`time.perf_counter` instant,
        stops it when the clock passes it (:class:`SimulationTimeout`).
        """
        rng = np.random.default_rng(seed)
        observed = self._observed(observe)
        window = self._window(warmup, length, count)
        trajectory = _Trajectory(self.tables, observed, rng)
        started = time.perf_counter()
        trajectory.simulate(window, max_events if max_events is not None else 1 << 62,
                            _INF if deadline is None else deadline)
        return trajectory.replication(time.perf_counter() - started)

    def _observed(self, observe) -> list[bool]:
        """Per place: whether its token integral is kept."""
        pidx = self.net.place_index
        if observe is None:
            return [True] * len(pidx)
        unknown = [p for p in observe if p not in pidx]
        if unknown:
            raise ModelError(f"observe: unknown places {unknown}")
        observed = [False] * len(pidx)
        for p in observe:
            observed[pidx[p]] = True
        return observed

    def _window(self, warmup, length, count) -> _Window:
        if count is None:
            if not length > 0:
                raise ModelError("length must be a positive time")
            return _Window(-1, -1, -1, float(warmup), float(warmup) + float(length))
        if count not in self.net.activity_index:
            raise ModelError(f"unknown activity {count!r} to count")
        if not length >= 1:
            raise ModelError("length must be at least one firing")
        return _Window(self.net.activity_index[count], int(warmup), int(warmup) + int(length), _INF, _INF)


class _Trajectory:
    """One replication in progress: the marking, pending clocks, rates, enabled instants, statistics.

    Random numbers come from three kinds of streams (exponential race times, uniform
    choices, one stream per clock activity), each drawn at the same steps whichever
    path (compiled or not) evaluates the net, so a seed gives one trajectory.
    """

    def __init__(self, tables: CompiledNet, observed: list[bool], rng: np.random.Generator):
        self.tables = tables
        self.net = tables.net
        self.observed = observed
        self.exp_pos = {i: k for k, i in enumerate(tables.exps)}
        # after firing i: (observed deltas, other deltas, instants to re-check, rates to recompute,
        # clocks to start, places changed)
        self.after = [
            ([(p, v) for p, v in e.delta if observed[p]], [(p, v) for p, v in e.delta if not observed[p]],
             *self._refreshers(e.instants, e.exps), e.clocks, e.changed)
            for e in tables.after
        ]
        self.traced = [(j, tables.check[j], self.exp_pos.get(j, -1), tables.rate_fn.get(j))
                       for j in tables.traced]

        self.expo = stream(rng.standard_exponential)
        self.unif = stream(rng.random)
        self.samplers = {c: law_stream(tables.laws[c], rng) for c in tables.clocks}

        self.m = self.net.initial_marking().tolist()
        self.area = [0.0] * tables.P          # token integrals since the window opened
        self.last = [0.0] * tables.P          # when each place's integral was last brought up to date
        self.fired = [0] * tables.n
        self.heap = []                        # pending clocks: (time, sequence number, activity)
        self.seq = itertools.count()
        self.rates = [0.0] * len(tables.exps)
        self.inst_on = set()                  # enabled instantaneous activities
        self.t = 0.0
        self.start = -1.0                     # when the window opened
        self.events = self.timed = 0

    def _refreshers(self, instants, exps):
        """What to re-evaluate after a firing that may have changed ``instants`` and ``exps``.

        (instant, check) and (rate slot, rate function) pairs, the volatile activities
        (re-evaluated after every firing) included.
        """
        tables, exp_pos = self.tables, self.exp_pos
        check, rate_fn = tables.check, tables.rate_fn
        return ([(j, check[j]) for j in (*instants, *tables.volatile_instants)],
                [(exp_pos[j], rate_fn[j]) for j in (*exps, *tables.volatile_exps)])

    # ------------------------------------------------------------------ set-up
    def _initial_state(self):
        """Clocks for the tokens already in private places; enabling and rates of the initial marking."""
        tables, m, heap = self.tables, self.m, self.heap
        for p, c in sorted(tables.clock_of_place.items()):
            for _ in range(m[p]):
                heapq.heappush(heap, (next(self.samplers[c]), next(self.seq), c))
        check = tables.check
        for j in tables.instants:
            if check[j](m):
                self.inst_on.add(j)
        for k, j in enumerate(tables.exps):
            self.rates[k] = tables.rate_fn[j](m)

    # ------------------------------------------------------------------ the event loop
    def simulate(self, window: _Window, max_events: int, deadline: float = _INF):
        """Fire activities from the initial marking until the window closes (or the clock passes ``deadline``)."""
        self._initial_state()
        target, warm_n, stop_n, warm_t, stop_t = (window.target, window.warm_n, window.stop_n,
                                                  window.warm_t, window.stop_t)
        m, area, last, fired, heap, rates = self.m, self.area, self.last, self.fired, self.heap, self.rates
        inst_on, after, traced, reads = self.inst_on, self.after, self.traced, self.tables.reads
        add, discard = inst_on.add, inst_on.discard
        gated_fire, samplers, seq = self.tables.gated_fire, self.samplers, self.seq
        heappush = heapq.heappush
        next_timed, next_instant, fire_gated = self._next_timed, self._next_instant, self._fire_gated

        start = -1.0
        if warm_n == 0 or warm_t == 0.0:
            start, warm_t = 0.0, _INF
        n_target = events = timed = chain = 0
        t = 0.0
        i = next_instant() if inst_on else -1     # -1: the next event is a timed one
        while True:
            if i < 0:
                if events > max_events:
                    raise SpnError(f"simulation stopped after {events:,} firings (max_events) without "
                                   f"finishing its run")
                if not timed % CLOCK_EVERY and time.perf_counter() > deadline:
                    raise SimulationTimeout(f"the replication was stopped at its deadline after {events:,} "
                                            f"firings, at simulated time {t:g}")
                t_next, i = next_timed(t)
                if t_next >= warm_t:
                    start, warm_t = self._open_window(warm_t), _INF
                if t_next > stop_t:
                    t = stop_t
                    break
                t = t_next
                timed += 1
                chain = 0
            # ---- fire i, then re-check what its firing may have changed
            if gated_fire[i]:
                inst, exl, changed = fire_gated(i, t)
            else:
                obs, other, inst, exl, clocks, changed = after[i]
                for p, v in obs:
                    area[p] += m[p] * (t - last[p])
                    last[p] = t
                    m[p] += v
                for p, v in other:
                    m[p] += v
                for c, k in clocks:
                    sampler = samplers[c]
                    for _ in range(k):
                        heappush(heap, (t + next(sampler), next(seq), c))
            for j, chk in inst:
                if chk(m):
                    add(j)
                else:
                    discard(j)
            for k, fn in exl:
                rates[k] = fn(m)
            if traced:
                for j, chk, k, fn in traced:
                    if not reads[j].isdisjoint(changed):
                        if k < 0:
                            if chk(m):
                                add(j)
                            else:
                                discard(j)
                        else:
                            rates[k] = fn(m)
            fired[i] += 1
            events += 1
            if i == target:
                n_target += 1
                if n_target == warm_n:
                    start = self._open_window(t)
                if n_target >= stop_n:
                    break
            # ---- then the instantaneous activities, until the marking is tangible
            if inst_on:
                chain += 1
                if chain > MAX_INSTANT_CHAIN:
                    self._timeless_trap(i)
                i = next_instant()
            else:
                i = -1
        self.t, self.start, self.events, self.timed = t, start, events, timed

    def _next_timed(self, t: float) -> tuple[float, int]:
        """When the next timed event happens and which activity fires: clocks against the race."""
        rates, heap = self.rates, self.heap
        total = sum(rates)
        if total > 0.0:
            t_next = t + next(self.expo) / total
            if heap and heap[0][0] <= t_next:
                t_next, _, i = heapq.heappop(heap)
                return t_next, i
            u = next(self.unif) * total
            exps = self.tables.exps
            for k, r in enumerate(rates):
                if r > 0.0:
                    i = exps[k]
                    u -= r
                    if u < 0.0:
                        break
            return t_next, i
        if heap:
            t_next, _, i = heapq.heappop(heap)
            return t_next, i
        raise SpnError(f"the net is dead at time {t:g}: no activity is enabled in marking "
                       f"{self.net.describe(np.array(self.m))}")

    def _fire_gated(self, i: int, t: float):
        """Fire a gated activity through :meth:`Net.fire`; returns what to re-check."""
        net, m, tables = self.net, self.m, self.tables
        new = net.fire(net.activities[i], marking_row(m))[0].tolist()
        changed = [p for p in range(tables.P) if new[p] != m[p]]
        for p in changed:
            c = tables.clock_of_place.get(p)
            if c is not None:
                arrived = new[p] - m[p] + (1 if c == i else 0)
                if arrived < 0:
                    raise ModelError(
                        f"activity {net.activities[i].name!r} removes tokens from {net.places[p].name!r}, the "
                        f"private input place of the non-exponential activity {net.activities[c].name!r}")
                for _ in range(arrived):
                    heapq.heappush(self.heap, (t + next(self.samplers[c]), next(self.seq), c))
            self.area[p] += m[p] * (t - self.last[p])
            self.last[p] = t
            m[p] = new[p]
        return (*self._refreshers(*tables.dependents(changed)), set(changed))

    # ------------------------------------------------------------------ instantaneous activities
    def _next_instant(self) -> int:
        """The instantaneous activity to fire: the only enabled one, or a choice among them."""
        inst_on = self.inst_on
        if len(inst_on) == 1:
            for i in inst_on:
                return i
        return self._choose()

    def _choose(self) -> int:
        """The highest-priority enabled instantaneous activity, drawn by weight among equals."""
        net, acts, tables, m = self.net, self.net.activities, self.tables, self.m
        prio, weight_const = tables.prio, tables.weight_const
        cand = sorted(self.inst_on)
        top = max(prio[j] for j in cand)
        cand = [j for j in cand if prio[j] == top]
        if len(cand) == 1:
            return cand[0]
        ws = [weight_const[j] if weight_const[j] is not None
              else float(net.weight(acts[j], marking_row(m))[0]) for j in cand]
        total = sum(ws)
        if not total > 0:
            raise TimelessTrapError(
                f"instantaneous activities {[acts[j].name for j in cand]} are enabled with "
                f"zero total weight in marking {net.describe(np.array(m))}")
        u = next(self.unif) * total
        for j, w in zip(cand, ws):
            u -= w
            if u < 0.0:
                return j
        return [j for j, w in zip(cand, ws) if w > 0][-1]     # rounding

    def _timeless_trap(self, i: int):
        raise TimelessTrapError(
            f"timeless trap: more than {MAX_INSTANT_CHAIN:,} instantaneous firings in a row, "
            f"e.g. {self.net.activities[i].name!r}, in marking {self.net.describe(np.array(self.m))}")

    # ------------------------------------------------------------------ statistics
    def _open_window(self, t: float) -> float:
        """Forget what was observed before ``t``; the window opens at ``t``."""
        area, last, fired = self.area, self.last, self.fired
        for p in range(len(area)):
            area[p] = 0.0
            last[p] = t
        for k in range(len(fired)):
            fired[k] = 0
        return t

    def replication(self, seconds: float) -> Replication:
        """What the window observed, once :meth:`simulate` has returned."""
        t, m, area, last = self.t, self.m, self.area, self.last
        for p in range(len(area)):
            area[p] += m[p] * (t - last[p])
            last[p] = t
        if self.start < 0:
            raise SpnError("the run ended before its measurement window opened")
        integrals = np.array(area)
        integrals[~np.array(self.observed, dtype=bool)] = np.nan
        return Replication(
            start=self.start, duration=t - self.start, integrals=integrals, firings=np.array(self.fired),
            events=self.events, timed_events=self.timed, seconds=seconds,
            place_index=self.net.place_index, activity_index=self.net.activity_index,
        )
