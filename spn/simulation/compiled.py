"""A net compiled for simulation: per-activity tables and closures over a marking list.

:class:`CompiledNet` is what :class:`~spn.simulation.NetSimulator` runs on. Each
activity gets a ``kind`` (``"instant"``, ``"exp"`` for the race of exponential
activities, ``"clock"`` for a non-exponential law sampled per token), an
enabling check ``check[i](m)`` and, for exponential ones, a rate ``rate_fn[i](m)``,
where ``m`` is the marking as a Python list of ints.

Activities described by arcs only compile to small closures and dependency lists,
so that after a firing only the activities whose input or inhibitor places changed
are re-checked. Activities with gates or marking-dependent rates/weights go
through the MarkingView (:meth:`Net.fire`, :meth:`Net.rate`, :meth:`Net.weight`,
gate predicates) on a one-row batch. An input gate is re-checked only when a place
that its predicates read at their last evaluation changes (the reads are traced
through the view: a deterministic predicate that did not read a place cannot
change with it); marking-dependent rates are re-evaluated after every firing.
``compiled=False`` takes the MarkingView path everywhere (the reference).

>>> from spn.net import Net, Place, TimedActivity
>>> net = Net([Place("idle", 2), Place("busy")], [
...     TimedActivity("start", inputs={"idle": 1}, outputs={"busy": 1}, rate=1.0),
...     TimedActivity("stop", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0, servers="infinite")])
>>> compiled = CompiledNet(net)
>>> compiled.kind, compiled.rate_fn[1]([0, 2])
(['exp', 'exp'], 4.0)
>>> compiled.after[0].delta              # firing 'start' moves a token from idle to busy
[(0, -1), (1, 1)]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from spn.exceptions import ModelError
from spn.net import MARKING_DTYPE, InstantActivity, Net, TimedActivity
from spn.simulation.distributions import Distribution

__all__ = ["CompiledNet", "Effect", "TracingView", "arc_check", "marking_row"]


@dataclass(frozen=True)
class Effect:
    """What firing one arc-only activity does, and what must be looked at again after it."""

    #: (place, change in tokens), by place
    delta: list
    #: instantaneous activities whose enabling may have changed
    instants: list
    #: exponential activities whose rate may have changed
    exps: list
    #: (clock activity, tokens) for each private input place the firing puts tokens in
    clocks: list
    #: the places whose tokens changed
    changed: frozenset


def marking_row(m) -> np.ndarray:
    """A marking list as the one-row batch :class:`Net` methods take."""
    return np.array([m], dtype=MARKING_DTYPE)


class CompiledNet:
    """``net`` with a task-time law per timed activity in ``distributions``, as tables.

    Raises :class:`ModelError` for unknown names, instantaneous activities given a
    law, and non-exponential laws on activities that are not infinite-server with
    one private input place.
    """

    def __init__(self, net: Net, distributions=None, *, compiled: bool = True):
        self.net = net
        distributions = dict(distributions or {})
        self.compiled = bool(compiled)
        acts = net.activities
        n, P = len(acts), len(net.places)
        self.n, self.P = n, P
        _check_laws(net, distributions)

        pidx = net.place_index
        need = [[(pidx[p], k) for p, k in a.inputs.items()] for a in acts]
        inhib = [[(pidx[p], b) for p, b in a.inhibitors.items()] for a in acts]
        produce = [{pidx[p]: k for p, k in a.outputs.items()} for a in acts]

        kind, laws, base_rate = _kinds(acts, distributions)
        clock_of_place = _private_places(net, laws, need)

        generic = not self.compiled
        self.gated_fire = [generic or bool(a.input_gates) or bool(a.output_gates) for a in acts]
        # traced: enabling re-checked when a place its gates read last time changes;
        # volatile: re-checked after every firing (callable rates; the reference path)
        traced = [self.compiled and bool(a.input_gates) for a in acts]
        volatile = [generic] * n
        self.reads = [frozenset()] * n
        self.check = [self._check_function(i, need[i], inhib[i]) for i in range(n)]
        self.rate_fn = {}
        for i in range(n):
            if kind[i] != "exp":
                continue
            if callable(base_rate[i]):
                volatile[i] = True
                traced[i] = False
            self.rate_fn[i] = self._rate_function(i, base_rate[i], self.check[i])
        # callable weights are read at choice time
        self.weight_const = [float(a.weight) if kind[i] == "instant" and not callable(a.weight) else None
                             for i, a in enumerate(acts)]
        self.prio = [float(a.priority) if kind[i] == "instant" else 0.0 for i, a in enumerate(acts)]

        # dependencies: which activities to re-check when place p changes
        self.place_inst = [[] for _ in range(P)]
        self.place_exp = [[] for _ in range(P)]
        for i in range(n):
            if volatile[i] or traced[i] or kind[i] == "clock":
                continue
            for p in {p for p, _ in need[i]} | {p for p, _ in inhib[i]}:
                (self.place_inst if kind[i] == "instant" else self.place_exp)[p].append(i)
        self.after = []
        for i in range(n):
            delta = _delta(need[i], produce[i])
            changed = {p for p, _ in delta}
            instants, exps = self.dependents(changed)
            clocks = [(c, produce[i][p]) for p, c in sorted(clock_of_place.items()) if produce[i].get(p)]
            self.after.append(Effect(delta, instants, exps, clocks, frozenset(changed)))

        self.kind = kind
        self.laws = laws
        self.clock_of_place = clock_of_place
        self.volatile_instants = [i for i in range(n) if volatile[i] and kind[i] == "instant"]
        self.volatile_exps = [i for i in range(n) if volatile[i] and kind[i] == "exp"]
        self.traced = [i for i in range(n) if traced[i]]
        self.instants = [i for i in range(n) if kind[i] == "instant"]
        self.exps = [i for i in range(n) if kind[i] == "exp"]
        self.clocks = sorted(laws)

    def dependents(self, changed) -> tuple[list[int], list[int]]:
        """The instantaneous and the exponential activities to re-check when places ``changed`` change."""
        instants = sorted({j for p in changed for j in self.place_inst[p]})
        exps = sorted({j for p in changed for j in self.place_exp[p]})
        return instants, exps

    def _check_function(self, i, need, inhib):
        net, a = self.net, self.net.activities[i]
        if not self.compiled:
            return lambda m: bool(net.enabled(a, marking_row(m))[0])
        arcs = arc_check(need, inhib)
        if not a.input_gates:
            return arcs
        arc_places = frozenset(p for p, _ in need) | frozenset(p for p, _ in inhib)
        reads = self.reads
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
                    view = TracingView(net.view(marking_row(m)))
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
            return lambda m: float(net.rate(a, marking_row(m))[0]) if check(m) else 0.0
        if callable(r):
            def marking_dependent(m):
                return float(net.rate(a, marking_row(m))[0]) if check(m) else 0.0
            return marking_dependent
        r = float(r)
        servers = a.servers
        if servers == 1:
            return lambda m: r if check(m) else 0.0
        ((place, mult),) = a.inputs.items()
        p = net.place_index[place]
        if servers == "infinite":
            if not a.inhibitors and not a.input_gates:
                if mult == 1:
                    return lambda m: r * m[p]
                return lambda m: r * (m[p] // mult)
            return lambda m: r * (m[p] // mult) if check(m) else 0.0
        return lambda m: r * min(m[p] // mult, servers) if check(m) else 0.0


def _check_laws(net: Net, distributions: dict) -> None:
    """Every law names a timed activity and is a :class:`Distribution`."""
    problems = []
    for name, law in distributions.items():
        if name not in net.activity_index:
            problems.append(f"distributions: unknown activity {name!r}")
        elif not isinstance(net.activities[net.activity_index[name]], TimedActivity):
            problems.append(f"distributions: {name!r} is instantaneous; only timed activities take a law")
        if not isinstance(law, Distribution):
            problems.append(f"distributions: {name!r} maps to {law!r}, not a Distribution")
    if problems:
        raise ModelError(problems)


def _kinds(acts, distributions: dict):
    """Each activity's kind, the laws of the clock ones, the rates of the exponential ones."""
    kind = [""] * len(acts)
    laws: dict[int, Distribution] = {}
    base_rate: dict[int, object] = {}
    for i, a in enumerate(acts):
        if isinstance(a, InstantActivity):
            kind[i] = "instant"
            continue
        law = distributions.get(a.name)
        if law is None and a.erlang is not None:
            law = Distribution.erlang(a.erlang.shape, a.erlang.mean)
        if law is None or law.is_exponential:
            kind[i] = "exp"
            base_rate[i] = a.rate if law is None else 1.0 / law.mean
        else:
            kind[i] = "clock"
            laws[i] = law
    return kind, laws, base_rate


def _private_places(net: Net, laws: dict, need: list) -> dict[int, int]:
    """place -> the clock activity it privately feeds; non-exponential laws need independent tokens."""
    acts = net.activities
    problems = []
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
        ((p, _),) = need[i]
        if p in clock_of_place:
            problems.append(f"{where}: its input place {net.places[p].name!r} feeds two "
                            f"non-exponential activities")
        clock_of_place[p] = i
    for j, a in enumerate(acts):
        for p, _ in need[j]:
            c = clock_of_place.get(p)
            if c is not None and c != j:
                problems.append(f"activity {a.name!r} consumes from {net.places[p].name!r}, the private "
                                f"input place of the non-exponential activity {acts[c].name!r}")
    if problems:
        raise ModelError(problems)
    return clock_of_place


def _delta(need, produce) -> list[tuple[int, int]]:
    """(place, change) of one firing, by place, without the places it leaves alone."""
    d: dict[int, int] = {}
    for p, k in need:
        d[p] = d.get(p, 0) - k
    for p, k in produce.items():
        d[p] = d.get(p, 0) + k
    return [(p, v) for p, v in sorted(d.items()) if v]


class TracingView:
    """A MarkingView that remembers which places were read.

    >>> view = TracingView({"a": 1, "b": 2})
    >>> view["a"], sorted(view.read)
    (1, ['a'])
    """

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


def arc_check(need, inhib):
    """A closure m -> bool for 'every input arc has enough tokens and no inhibitor bound is reached'.

    >>> check = arc_check([(0, 2)], [(1, 1)])      # two tokens in place 0, none in place 1
    >>> check([2, 0]), check([2, 1]), check([1, 0])
    (True, False, False)
    """
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
