"""Discrete-event simulation of a net, with any task-time law (DESIGN §3.1, issue 5).

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

The hot loop works on a Python list of ints. Activities described by arcs only are
compiled to small closures and to dependency lists, so after a firing only the
activities whose input or inhibitor places changed are re-checked. Activities with
gates or marking-dependent rates/weights fall back to the MarkingView path
(:meth:`Net.fire`, :meth:`Net.rate`, :meth:`Net.weight`, gate predicates) on a
one-row batch. An input gate is re-evaluated only when a place that its predicates
read at their last evaluation changes (the reads are traced through the view: a
deterministic predicate that did not read a place cannot change with it);
marking-dependent rates are re-evaluated after every firing. ``compiled=False``
forces the MarkingView path everywhere (the reference: same trajectory, ~100x slower).

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

import dataclasses
import heapq
import math
import time
from dataclasses import dataclass

import numpy as np

from spn.exceptions import ModelError, SpnError, TimelessTrapError
from spn.net import MARKING_DTYPE, InstantActivity, Net, TimedActivity
from spn.simulation.distributions import Distribution, law_stream, stream

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
        self._compile()

    # ------------------------------------------------------------------ compilation
    def _compile(self):
        net = self.net
        acts = net.activities
        n, P = len(acts), len(net.places)
        pidx = net.place_index
        problems = []
        for name, law in self.distributions.items():
            if name not in net.activity_index:
                problems.append(f"distributions: unknown activity {name!r}")
            elif not isinstance(acts[net.activity_index[name]], TimedActivity):
                problems.append(f"distributions: {name!r} is instantaneous; only timed activities take a law")
            if not isinstance(law, Distribution):
                problems.append(f"distributions: {name!r} maps to {law!r}, not a Distribution")
        if problems:
            raise ModelError(problems)

        need = [[(pidx[p], k) for p, k in a.inputs.items()] for a in acts]
        inhib = [[(pidx[p], b) for p, b in a.inhibitors.items()] for a in acts]
        produce = [{pidx[p]: k for p, k in a.outputs.items()} for a in acts]
        delta = []
        for i in range(n):
            d: dict[int, int] = {}
            for p, k in need[i]:
                d[p] = d.get(p, 0) - k
            for p, k in produce[i].items():
                d[p] = d.get(p, 0) + k
            delta.append([(p, v) for p, v in sorted(d.items()) if v])

        kind = [""] * n                # "instant" | "exp" | "clock"
        laws: dict[int, Distribution] = {}
        base_rate: dict[int, object] = {}
        for i, a in enumerate(acts):
            if isinstance(a, InstantActivity):
                kind[i] = "instant"
                continue
            law = self.distributions.get(a.name)
            if law is None and a.erlang is not None:
                law = Distribution.erlang(a.erlang.shape, a.erlang.mean)
            if law is None or law.is_exponential:
                kind[i] = "exp"
                base_rate[i] = a.rate if law is None else 1.0 / law.mean
            else:
                kind[i] = "clock"
                laws[i] = law

        # non-exponential laws need a private input place and independent tokens
        clock_of_place: dict[int, int] = {}
        for i, law in laws.items():
            a = acts[i]
            where = f"activity {a.name!r} ({law})"
            if a.servers != "infinite" or len(a.inputs) != 1 or next(iter(a.inputs.values())) != 1:
                problems.append(f"{where}: a non-exponential law needs servers='infinite' and exactly one "
                                f"input place with multiplicity 1 (each token is an independent task)")
                continue
            if a.inhibitors or a.input_gates:
                problems.append(f"{where}: a non-exponential activity cannot have inhibitor arcs or input "
                                f"gates (its tasks' clocks would have to stop)")
                continue
            (p,) = need[i]
            if p[0] in clock_of_place:
                problems.append(f"{where}: its input place {net.places[p[0]].name!r} feeds two "
                                f"non-exponential activities")
            clock_of_place[p[0]] = i
        for j, a in enumerate(acts):
            for p, _ in need[j]:
                c = clock_of_place.get(p)
                if c is not None and c != j:
                    problems.append(f"activity {a.name!r} consumes from {net.places[p].name!r}, the private "
                                    f"input place of the non-exponential activity {acts[c].name!r}")
        if problems:
            raise ModelError(problems)

        generic = not self.compiled
        gated_enable = [generic or bool(a.input_gates) for a in acts]
        gated_fire = [generic or bool(a.input_gates) or bool(a.output_gates) for a in acts]
        # gated enabling: re-checked when a place its gates read last time changes
        # (a deterministic predicate that did not read a place cannot change with it);
        # volatile: re-checked after every firing (callable rates; the reference path)
        traced = [self.compiled and bool(a.input_gates) for a in acts]
        volatile = [generic] * n
        self._reads = [frozenset()] * n
        check = [self._check_function(i, need[i], inhib[i]) for i in range(n)]
        rate_fn = {}
        for i in range(n):
            if kind[i] != "exp":
                continue
            r = base_rate[i]
            if callable(r):
                volatile[i] = True
                traced[i] = False
            rate_fn[i] = self._rate_function(i, r, check[i])
        weight_const = [None] * n
        for i, a in enumerate(acts):
            if kind[i] == "instant" and not callable(a.weight):
                weight_const[i] = float(a.weight)   # callable weights are read at choice time

        # dependencies: which activities to re-check when place p changes
        place_inst = [[] for _ in range(P)]
        place_exp = [[] for _ in range(P)]
        for i in range(n):
            if volatile[i] or traced[i] or kind[i] == "clock":
                continue
            places = {p for p, _ in need[i]} | {p for p, _ in inhib[i]}
            for p in places:
                (place_inst if kind[i] == "instant" else place_exp)[p].append(i)
        self._after = []
        for i in range(n):
            changed = {p for p, _ in delta[i]}
            inst = sorted({j for p in changed for j in place_inst[p]})
            exps = sorted({j for p in changed for j in place_exp[p]})
            pushes = [(c, produce[i][p]) for p, c in sorted(clock_of_place.items()) if produce[i].get(p)]
            self._after.append((delta[i], inst, exps, pushes, frozenset(changed)))

        self._n, self._P = n, P
        self._kind = kind
        self._laws = laws
        self._check = check
        self._rate_fn = rate_fn
        self._weight_const = weight_const
        self._prio = [float(a.priority) if kind[i] == "instant" else 0.0 for i, a in enumerate(acts)]
        self._gated_fire = gated_fire
        self._place_inst, self._place_exp = place_inst, place_exp
        self._clock_of_place = clock_of_place
        self._vol_inst = [i for i in range(n) if volatile[i] and kind[i] == "instant"]
        self._vol_exp = [i for i in range(n) if volatile[i] and kind[i] == "exp"]
        self._traced = [i for i in range(n) if traced[i]]
        self._instants = [i for i in range(n) if kind[i] == "instant"]
        self._exps = [i for i in range(n) if kind[i] == "exp"]
        self._clocks = sorted(laws)

    def _row(self, m):
        return np.array([m], dtype=MARKING_DTYPE)

    def _check_function(self, i, need, inhib):
        net, a = self.net, self.net.activities[i]
        if not self.compiled:
            return lambda m: bool(net.enabled(a, self._row(m))[0])
        if not a.input_gates:
            return _arc_check(need, inhib)
        arcs = _arc_check(need, inhib)
        arc_places = frozenset(p for p, _ in need) | frozenset(p for p, _ in inhib)
        reads = self._reads
        columns = {name: (j,) for name, j in net.place_index.items()}
        columns.update({name: tuple(net.place_index[s] for s in stages if s in net.place_index)
                        for name, stages in net.aggregates.items()})

        def gated(m):
            reads[i] = arc_places
            if not arcs(m):
                return False
            read = set(arc_places)
            try:
                for gate in a.input_gates:
                    view = _TracingView(net.view(self._row(m)))
                    holds = gate.predicate(view)
                    for name in view.read:
                        read.update(columns.get(name, ()))
                    if not np.asarray(holds, dtype=bool).reshape(-1)[0]:
                        return False
                return True
            except ModelError as err:
                raise ModelError(f"activity {a.name!r}, input gate predicate: {err}") from None
            finally:
                reads[i] = frozenset(read)
        return gated

    def _rate_function(self, i, r, check):
        net, a = self.net, self.net.activities[i]
        if not self.compiled:
            if not callable(r):
                a = dataclasses.replace(a, rate=r, erlang=None)
            return lambda m: float(net.rate(a, self._row(m))[0]) if check(m) else 0.0
        if callable(r):
            def marking_dependent(m):
                return float(net.rate(a, self._row(m))[0]) if check(m) else 0.0
            return marking_dependent
        r = float(r)
        servers = a.servers
        if servers == 1:
            return lambda m: r if check(m) else 0.0
        ((place, mult),) = a.inputs.items()
        p = self.net.place_index[place]
        if servers == "infinite":
            if not a.inhibitors and not a.input_gates:
                if mult == 1:
                    return lambda m: r * m[p]
                return lambda m: r * (m[p] // mult)
            return lambda m: r * (m[p] // mult) if check(m) else 0.0
        return lambda m: r * min(m[p] // mult, servers) if check(m) else 0.0

    # ------------------------------------------------------------------ simulation
    def run(self, seed=None, *, warmup: float = 0.0, length: float, count: str | None = None,
            observe=None, max_events: int | None = None) -> Replication:
        """Simulate one replication and return what its measurement window observed.

        Without ``count``, ``warmup`` and ``length`` are simulated times: statistics
        are collected over [warmup, warmup + length]. With ``count`` (an activity
        name) they are numbers of its firings: the window opens at its
        ``warmup``-th firing and closes at its ``warmup + length``-th. ``observe``
        names the places whose token integrals are kept (default: all; fewer is
        faster). ``seed`` is an int, a :class:`numpy.random.Generator` or None.
        ``max_events`` stops a run that fires that many activities without
        finishing (an SpnError).
        """
        rng = np.random.default_rng(seed)
        net = self.net
        acts = net.activities
        n, P = self._n, self._P
        pidx = net.place_index
        if observe is None:
            observed = [True] * P
        else:
            unknown = [p for p in observe if p not in pidx]
            if unknown:
                raise ModelError(f"observe: unknown places {unknown}")
            observed = [False] * P
            for p in observe:
                observed[pidx[p]] = True
        if count is not None:
            if count not in net.activity_index:
                raise ModelError(f"unknown activity {count!r} to count")
            if not length >= 1:
                raise ModelError("length must be at least one firing")
            target = net.activity_index[count]
            warm_n, stop_n = int(warmup), int(warmup) + int(length)
            warm_t, stop_t = _INF, _INF
        else:
            if not length > 0:
                raise ModelError("length must be a positive time")
            target, warm_n, stop_n = -1, -1, -1
            warm_t, stop_t = float(warmup), float(warmup) + float(length)
        max_events = max_events if max_events is not None else 1 << 62

        # ---- per-run tables (closures read the marking list ``m``)
        check, rate_fn, gated_fire = self._check, self._rate_fn, self._gated_fire
        prio, weight_const = self._prio, self._weight_const
        exps = self._exps
        exp_pos = {i: k for k, i in enumerate(exps)}
        clock_of_place = self._clock_of_place
        place_inst, place_exp = self._place_inst, self._place_exp
        # after firing i: (observed deltas, other deltas, instants to re-check, rates to recompute, clocks)
        after = []
        for d, inst, exl, pushes, changed in self._after:
            after.append((
                [(p, v) for p, v in d if observed[p]], [(p, v) for p, v in d if not observed[p]],
                [(j, check[j]) for j in inst], [(exp_pos[j], rate_fn[j]) for j in exl], pushes, changed))
        vol_inst = [(j, check[j]) for j in self._vol_inst]
        vol_exp = [(exp_pos[j], rate_fn[j]) for j in self._vol_exp]
        volatile = bool(vol_inst or vol_exp)
        reads = self._reads
        traced = [(j, check[j], exp_pos.get(j, -1), rate_fn.get(j)) for j in self._traced]
        heappush, heappop = heapq.heappush, heapq.heappop
        expo = stream(rng.standard_exponential)
        unif = stream(rng.random)
        samplers = {c: law_stream(self._laws[c], rng) for c in self._clocks}

        m = net.initial_marking().tolist()
        area = [0.0] * P
        last = [0.0] * P
        fired = [0] * n
        heap = []
        seq = 0
        rates = [0.0] * len(exps)
        inst_on = set()
        add, discard = inst_on.add, inst_on.discard
        start = -1.0
        n_target = 0
        events = 0
        timed = 0

        def fire_gated(i, t):
            """Fire a gated activity through Net.fire; returns what to re-check."""
            nonlocal seq
            new = net.fire(acts[i], np.array([m], dtype=MARKING_DTYPE))[0].tolist()
            changed = [p for p in range(P) if new[p] != m[p]]
            for p in changed:
                c = clock_of_place.get(p)
                if c is not None:
                    arrived = new[p] - m[p] + (1 if c == i else 0)
                    if arrived < 0:
                        raise ModelError(
                            f"activity {acts[i].name!r} removes tokens from {net.places[p].name!r}, the "
                            f"private input place of the non-exponential activity {acts[c].name!r}")
                    for _ in range(arrived):
                        heappush(heap, (t + next(samplers[c]), seq, c))
                        seq += 1
                area[p] += m[p] * (t - last[p])
                last[p] = t
                m[p] = new[p]
            inst = sorted({j for p in changed for j in place_inst[p]})
            exl = sorted({j for p in changed for j in place_exp[p]})
            return [(j, check[j]) for j in inst], [(exp_pos[j], rate_fn[j]) for j in exl], set(changed)

        def choose():
            """The instantaneous activity to fire among several enabled ones."""
            cand = sorted(inst_on)
            top = max(prio[j] for j in cand)
            cand = [j for j in cand if prio[j] == top]
            if len(cand) == 1:
                return cand[0]
            ws = [weight_const[j] if weight_const[j] is not None
                  else float(net.weight(acts[j], np.array([m], dtype=MARKING_DTYPE))[0]) for j in cand]
            total = sum(ws)
            if not total > 0:
                raise TimelessTrapError(
                    f"instantaneous activities {[acts[j].name for j in cand]} are enabled with "
                    f"zero total weight in marking {net.describe(np.array(m))}")
            u = next(unif) * total
            for j, w in zip(cand, ws):
                u -= w
                if u < 0.0:
                    return j
            return [j for j, w in zip(cand, ws) if w > 0][-1]     # rounding

        started = time.perf_counter()
        # initial marking: clocks for tokens already in private places, enabling, instants
        for p, c in sorted(clock_of_place.items()):
            for _ in range(m[p]):
                heappush(heap, (next(samplers[c]), seq, c))
                seq += 1
        for j in self._instants:
            if check[j](m):
                add(j)
        for k, j in enumerate(exps):
            rates[k] = rate_fn[j](m)
        if warm_n == 0 or warm_t == 0.0:
            start, warm_t = 0.0, _INF
        t = 0.0
        i = -1                         # the activity to fire next; -1: choose a timed one
        if inst_on:                    # a vanishing initial marking
            i = min(inst_on) if len(inst_on) == 1 else choose()
        chain = 0
        while True:
            if i < 0:
                # ---- the next timed event: clocks against the race of exponential activities
                if events > max_events:
                    raise SpnError(f"simulation stopped after {events:,} firings (max_events) without "
                                   f"finishing its run")
                total = sum(rates)
                if total > 0.0:
                    t_next = t + next(expo) / total
                    if heap and heap[0][0] <= t_next:
                        t_next, _, i = heappop(heap)
                    else:
                        u = next(unif) * total
                        for k, r in enumerate(rates):
                            if r > 0.0:
                                i = exps[k]
                                u -= r
                                if u < 0.0:
                                    break
                elif heap:
                    t_next, _, i = heappop(heap)
                else:
                    raise SpnError(f"the net is dead at time {t:g}: no activity is enabled in marking "
                                   f"{net.describe(np.array(m))}")
                if t_next >= warm_t:
                    for p in range(P):
                        area[p] = 0.0
                        last[p] = warm_t
                    fired = [0] * n
                    start, warm_t = warm_t, _INF
                if t_next > stop_t:
                    t = stop_t
                    break
                t = t_next
                timed += 1
                chain = 0
            # ---- fire i
            if gated_fire[i]:
                inst, exl, changed = fire_gated(i, t)
            else:
                obs, other, inst, exl, pushes, changed = after[i]
                for p, v in obs:
                    area[p] += m[p] * (t - last[p])
                    last[p] = t
                    m[p] += v
                for p, v in other:
                    m[p] += v
                if pushes:
                    for c, k in pushes:
                        sampler = samplers[c]
                        for _ in range(k):
                            heappush(heap, (t + next(sampler), seq, c))
                            seq += 1
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
            if volatile:
                for j, chk in vol_inst:
                    if chk(m):
                        add(j)
                    else:
                        discard(j)
                for k, fn in vol_exp:
                    rates[k] = fn(m)
            fired[i] += 1
            events += 1
            if i == target:
                n_target += 1
                if n_target == warm_n:
                    for p in range(P):
                        area[p] = 0.0
                        last[p] = t
                    fired = [0] * n
                    start = t
                if n_target >= stop_n:
                    break
            # ---- then the instantaneous activities, until the marking is tangible
            if inst_on:
                chain += 1
                if chain > MAX_INSTANT_CHAIN:
                    raise TimelessTrapError(
                        f"timeless trap: more than {MAX_INSTANT_CHAIN:,} instantaneous firings in a row, "
                        f"e.g. {acts[i].name!r}, in marking {net.describe(np.array(m))}")
                if len(inst_on) == 1:
                    for i in inst_on:
                        break
                else:
                    i = choose()
            else:
                i = -1
        for p in range(P):
            area[p] += m[p] * (t - last[p])
            last[p] = t
        if start < 0:
            raise SpnError("the run ended before its measurement window opened")
        integrals = np.array(area)
        integrals[~np.array(observed, dtype=bool)] = np.nan
        return Replication(
            start=start, duration=t - start, integrals=integrals, firings=np.array(fired),
            events=events, timed_events=timed, seconds=time.perf_counter() - started,
            place_index=net.place_index, activity_index=net.activity_index,
        )


class _TracingView:
    """A MarkingView that remembers which places were read."""

    __slots__ = ("view", "read")

    def __init__(self, view):
        self.view = view
        self.read = set()

    def __len__(self):
        return len(self.view)

    def __getitem__(self, place):
        self.read.add(place)
        return self.view[place]

    def __setitem__(self, place, value):
        self.view[place] = value

    def __getattr__(self, name):
        return getattr(self.view, name)


def _arc_check(need, inhib):
    """A closure m -> bool for 'every input arc has enough tokens and no inhibitor bound is reached'."""
    if not inhib:
        if not need:
            return lambda m: True
        if len(need) == 1:
            ((p, k),) = need
            return lambda m: m[p] >= k
        if len(need) == 2:
            (p, k), (q, h) = need
            return lambda m: m[p] >= k and m[q] >= h
    if len(need) == 1 and len(inhib) == 1:
        ((p, k),), ((q, b),) = need, inhib
        return lambda m: m[p] >= k and m[q] < b

    def generic(m):
        for p, k in need:
            if m[p] < k:
                return False
        for p, b in inhib:
            if m[p] >= b:
                return False
        return True
    return generic
