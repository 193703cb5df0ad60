"""Stochastic activity networks: places, activities, arcs and gates (docs/design.md §3.1).

A :class:`Net` is plain data: a tuple of :class:`Place` and a tuple of activities.
Everything that looks at markings works on *batches*: a marking is a row of an
integer array whose columns are the places in net order, and gates, rates and
weights are functions of a :class:`MarkingView`, which hands out whole columns.
One definition therefore evaluates one marking or a million at once.

>>> net = Net(
...     places=[Place("idle", 2), Place("busy")],
...     activities=[
...         TimedActivity("start", inputs={"idle": 1}, outputs={"busy": 1}, rate=1.0),
...         TimedActivity("stop", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0,
...                       servers="infinite"),
...     ],
... )
>>> net.initial_marking()
array([2, 0], dtype=int32)
>>> m = net.initial_marking()[None, :]
>>> net.enabled(net.activity("start"), m), net.fire(net.activity("start"), m)
(array([ True]), array([[1, 1]], dtype=int32))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from spn.exceptions import ModelError
from spn.limits import MAX_COUNT, MAX_RATE, MAX_SHAPE, MIN_RATE

MARKING_DTYPE = np.int32
#: places times activities up to which a net keeps the arc vectors of all its activities
_KEEP_VECTORS = 1 << 22


# --------------------------------------------------------------------------- marking view
class MarkingView:
    """Named access to the columns of a batch of markings.

    ``m["P"]`` is the token count of place P in every marking of the batch (a 1-d
    array); ``m["P"] = value`` assigns it (gate functions use this). A place that
    Erlang expansion split into stages reads as the sum of its stages.

    >>> v = MarkingView(np.array([[1, 2], [3, 4]]), {"a": 0, "b": 1})
    >>> v["a"] + v["b"]
    array([3, 7])
    >>> v["b"] = v["b"] - 1
    >>> v.markings
    array([[1, 1],
           [3, 3]])
    """

    __slots__ = ("markings", "_index", "_aggregates")

    def __init__(self, markings: np.ndarray, index: Mapping[str, int], aggregates=None):
        self.markings = markings
        self._index = index
        self._aggregates = aggregates or {}

    def __len__(self) -> int:
        return self.markings.shape[0]

    def __getitem__(self, place: str) -> np.ndarray:
        j = self._index.get(place)
        if j is not None:
            column = self.markings[:, j]
            # compactly stored markings (unsigned) are read as signed, so that m["P"] - 1 < 0 works
            return column if column.dtype.kind == "i" else column.astype(np.int64)
        stages = self._aggregates.get(place)
        if stages is not None:
            return self.markings[:, stages].sum(axis=1, dtype=np.int64)
        raise ModelError(f"unknown place {place!r}")

    def sums(self, forms, dtype=np.int64) -> np.ndarray:
        """(markings, forms) array: each form, a sequence of (place, coefficient), summed as
        coefficient times tokens in every marking (``dtype`` object: Python integers, exact
        however large the coefficients).

        One gather and one product for any number of places, where a loop of ``m["P"]``
        costs a call per place: choice gates compare such sums (a scheduler's running tasks
        per job) for every block of markings while exploring.

        >>> v = MarkingView(np.array([[1, 2, 3], [4, 5, 6]]), {"a": 0, "b": 1, "c": 2})
        >>> v.sums([(("a", 2), ("c", -1)), (("b", 3),)])
        array([[-1,  6],
               [ 2, 15]])
        """
        columns, member, coefficient = [], [], []
        for f, form in enumerate(forms):
            for place, c in form:
                found = self.columns(place)
                columns += found
                member += [f] * len(found)
                coefficient += [c] * len(found)
        matrix = np.zeros((len(columns), len(forms)), dtype=dtype)
        matrix[np.arange(len(columns)), member] = np.array(coefficient, dtype=dtype)
        return self.markings[:, columns].astype(np.int64).astype(dtype) @ matrix

    def columns(self, place: str) -> list[int]:
        """The columns of ``place``: its own, or those of its Erlang stages."""
        j = self._index.get(place)
        if j is not None:
            return [j]
        if place in self._aggregates:
            return list(self._aggregates[place])
        raise ModelError(f"unknown place {place!r}")

    def __setitem__(self, place: str, value) -> None:
        j = self._index.get(place)
        if j is None:
            if place in self._aggregates:
                raise ModelError(
                    f"place {place!r} was split into Erlang stages; a gate function cannot assign it"
                )
            raise ModelError(f"unknown place {place!r}")
        self.markings[:, j] = value


# --------------------------------------------------------------------------- net elements
@dataclass(frozen=True)
class Place:
    """A place with a name and an initial number of tokens.

    >>> Place("PC", 4)
    Place(name='PC', tokens=4)
    """

    name: str
    tokens: int = 0


@dataclass(frozen=True)
class Erlang:
    """Erlang(shape, mean) firing time of one server: ``shape`` exponential stages of rate shape/mean.

    >>> Erlang(3, 2.0).stage_rate
    1.5
    """

    shape: int
    mean: float

    def __post_init__(self):
        # each stage becomes a place and an activity: a shape of a million would allocate
        # until killed before any other check runs
        if isinstance(self.shape, (int, np.integer)) and self.shape > MAX_SHAPE:
            raise ModelError(f"Erlang shape {self.shape:,} is more than {MAX_SHAPE:,} (stages of one delay)")

    @property
    def stage_rate(self) -> float:
        return self.shape / self.mean


@dataclass(frozen=True)
class InputGate:
    """A predicate that must hold for the activity to be enabled, and a function applied on firing.

    Both take a :class:`MarkingView`; the predicate returns a boolean array, the
    function assigns places in place.

    >>> gate = InputGate(lambda m: m["PFM"] >= 4, lambda m: m.__setitem__("PFM", m["PFM"] - 4))
    """

    predicate: Callable
    function: Callable | None = None
    name: str = ""


@dataclass(frozen=True)
class OutputGate:
    """A function applied to the marking after the output arcs when the activity fires.

    >>> gate = OutputGate(lambda m: m.__setitem__("PWM", m["PWM"] + 4))
    """

    function: Callable
    name: str = ""


def _arcs(arcs) -> dict[str, int]:
    """Normalise arcs to {place: multiplicity}; a list of names means multiplicity 1 each."""
    if arcs is None:
        return {}
    if isinstance(arcs, str):
        return {arcs: 1}
    if isinstance(arcs, Mapping):
        return dict(arcs)
    out: dict[str, int] = {}
    for name in arcs:
        out[name] = out.get(name, 0) + 1
    return out


@dataclass(frozen=True)
class _Activity:
    name: str
    inputs: Mapping[str, int] = field(default_factory=dict)
    outputs: Mapping[str, int] = field(default_factory=dict)
    inhibitors: Mapping[str, int] = field(default_factory=dict)
    input_gates: tuple[InputGate, ...] = ()
    output_gates: tuple[OutputGate, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "inputs", _arcs(self.inputs))
        object.__setattr__(self, "outputs", _arcs(self.outputs))
        object.__setattr__(self, "inhibitors", _arcs(self.inhibitors))
        object.__setattr__(self, "input_gates", tuple(self.input_gates))
        object.__setattr__(self, "output_gates", tuple(self.output_gates))


@dataclass(frozen=True)
class TimedActivity(_Activity):
    """An activity that fires after an exponential (or Erlang) delay.

    Give either ``rate`` (a positive number, or a function of a MarkingView
    returning rates) or ``erlang=Erlang(shape, mean)``. ``servers="infinite"``
    multiplies the rate by the tokens of the single input place (every token is
    an independent task); an integer k caps that multiplier at k.
    Inhibitor arcs ``{place: bound}`` disable the activity while place holds >= bound tokens.

    >>> TimedActivity("TAM", inputs={"PRM": 1}, outputs={"PFM": 1, "PC": 1},
    ...               erlang=Erlang(2, 3.0), servers="infinite").erlang.stage_rate
    0.6666666666666666
    """

    rate: float | Callable | None = None
    erlang: Erlang | None = None
    servers: int | str = 1


@dataclass(frozen=True)
class InstantActivity(_Activity):
    """An activity that fires in zero time as soon as it is enabled.

    Among the enabled instantaneous activities only those of the highest
    ``priority`` may fire; one of them is chosen with probability proportional to
    its ``weight`` (a positive number or a function of a MarkingView).

    >>> InstantActivity("IAGRM", inputs={"PC": 1, "PWM": 1}, outputs={"PRM": 1}).priority
    0
    """

    priority: float = 0
    weight: float | Callable = 1.0


# --------------------------------------------------------------------------- the net
class Net:
    """A stochastic activity network: places, timed and instantaneous activities.

    The constructor validates the whole net and raises :class:`ModelError` listing
    every problem. ``aggregates`` maps the name of a place that Erlang expansion
    split to its stage places (read as their sum); ``activity_aliases`` maps the
    name of an expanded activity to the stage activity that completes it.
    """

    def __init__(self, places: Iterable[Place], activities: Iterable[_Activity], *,
                 name: str = "net", aggregates: Mapping[str, tuple[str, ...]] | None = None,
                 activity_aliases: Mapping[str, str] | None = None):
        self.name = name
        self.places: tuple[Place, ...] = tuple(places)
        self.activities: tuple[_Activity, ...] = tuple(activities)
        self.place_index = {p.name: i for i, p in enumerate(self.places)}
        self.activity_index = {a.name: i for i, a in enumerate(self.activities)}
        self.aggregates = {k: tuple(v) for k, v in (aggregates or {}).items()}
        self.activity_aliases = dict(activity_aliases or {})
        self._aggregate_columns = {
            k: np.array([self.place_index[s] for s in v if s in self.place_index], dtype=np.intp)
            for k, v in self.aggregates.items()
        }
        self._validate()
        # arc vectors are as long as the net has places: kept for every activity of a small net,
        # made when asked for in a large one (thousands of activities times thousands of places)
        self._vectors = {}
        self._keep_vectors = len(self.places) * len(self.activities) <= _KEEP_VECTORS
        self._check_functions()

    # ---- lookup
    @property
    def timed(self) -> tuple[TimedActivity, ...]:
        return tuple(a for a in self.activities if isinstance(a, TimedActivity))

    @property
    def instant(self) -> tuple[InstantActivity, ...]:
        return tuple(a for a in self.activities if isinstance(a, InstantActivity))

    def activity(self, name: str) -> _Activity:
        """The activity called ``name`` (an expanded Erlang activity answers by its last stage)."""
        name = self.activity_aliases.get(name, name)
        try:
            return self.activities[self.activity_index[name]]
        except KeyError:
            raise ModelError(f"unknown activity {name!r}") from None

    def initial_marking(self) -> np.ndarray:
        return np.array([p.tokens for p in self.places], dtype=MARKING_DTYPE)

    def view(self, markings: np.ndarray) -> MarkingView:
        """A :class:`MarkingView` over a batch of markings (rows) of this net."""
        return MarkingView(markings, self.place_index, self._aggregate_columns)

    # ---- semantics, vectorised over a batch of markings (rows)
    def enabled(self, activity: _Activity, markings: np.ndarray) -> np.ndarray:
        """Boolean array: which markings enable ``activity`` (arcs, inhibitors, input gates)."""
        need, _, inhibit_idx, inhibit_bound = self.arc_vectors(activity)
        ok = np.ones(len(markings), dtype=bool)
        for j in np.flatnonzero(need):          # only the input places: one column each
            ok &= markings[:, j] >= need[j]
        for j, bound in zip(inhibit_idx, inhibit_bound):
            ok &= markings[:, j] < bound
        for gate in activity.input_gates:
            rows = np.flatnonzero(ok)
            if rows.size == 0:
                break
            holds = self._call(activity, gate.predicate, markings[rows], "input gate predicate")
            ok[rows] = np.broadcast_to(np.asarray(holds, dtype=bool), rows.shape)
        return ok

    def fire(self, activity: _Activity, markings: np.ndarray) -> np.ndarray:
        """New markings after ``activity`` fires in each (enabled) marking of the batch.

        Order: input arcs, input-gate functions, output arcs, output-gate functions.
        """
        need, produce, _, _ = self.arc_vectors(activity)
        new = markings - need
        for gate in activity.input_gates:
            if gate.function is not None:
                self._call(activity, gate.function, new, "input gate function")
        new += produce
        for gate in activity.output_gates:
            self._call(activity, gate.function, new, "output gate function")
        if new.size and new.min() < 0:
            row = int(np.flatnonzero((new < 0).any(axis=1))[0])
            raise ModelError(
                f"activity {activity.name!r} makes a place negative when fired in marking "
                f"{self.describe(markings[row])}"
            )
        return new

    def rate(self, activity: TimedActivity, markings: np.ndarray) -> np.ndarray:
        """Firing rate of a timed activity in each marking of the batch (enabled ones)."""
        if activity.erlang is not None:
            base = np.full(len(markings), activity.erlang.stage_rate)
        elif callable(activity.rate):
            base = self._call(activity, activity.rate, markings, "rate")
            base = np.broadcast_to(np.asarray(base, dtype=float), (len(markings),)).copy()
            bad = ~np.isfinite(base) | (base < 0)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ModelError(
                    f"activity {activity.name!r} has rate {base[row]!r} in marking "
                    f"{self.describe(markings[row])}; rates must be finite and >= 0"
                )
        else:
            base = np.full(len(markings), float(activity.rate))
        if activity.servers != 1:
            ((place, mult),) = activity.inputs.items()
            busy = markings[:, self.place_index[place]] // mult
            if activity.servers != "infinite":
                busy = np.minimum(busy, activity.servers)
            base = base * busy
        return base

    def weight(self, activity: InstantActivity, markings: np.ndarray) -> np.ndarray:
        """Weight of an instantaneous activity in each marking of the batch."""
        if callable(activity.weight):
            w = self._call(activity, activity.weight, markings, "weight")
            w = np.broadcast_to(np.asarray(w, dtype=float), (len(markings),))
            if (~np.isfinite(w) | (w < 0)).any():
                raise ModelError(f"activity {activity.name!r} has a negative or non-finite weight")
            return w
        return np.full(len(markings), float(activity.weight))

    def describe(self, marking: np.ndarray) -> str:
        """A marking as ``{place: tokens}`` text, places with tokens only."""
        parts = [f"{p.name}={int(t)}" for p, t in zip(self.places, marking) if t]
        if len(parts) > 20:         # a message stays one readable line
            parts = parts[:20] + [f"... ({len(parts):,} places hold tokens)"]
        return "{" + ", ".join(parts) + "}"

    def arc_vectors(self, activity: _Activity):
        """(need, produce, inhibitor columns, inhibitor bounds) of an activity's arcs, as arrays over places."""
        vectors = self._vectors.get(activity.name)
        if vectors is None:
            vectors = self._arc_vectors(activity)
            if self._keep_vectors:
                self._vectors[activity.name] = vectors
        return vectors

    # ---- internals
    def _call(self, activity, function, markings, what):
        try:
            return function(self.view(markings))
        except ModelError as err:
            raise ModelError(f"activity {activity.name!r}, {what}: {err}") from None

    def _arc_vectors(self, activity):
        p = len(self.places)
        need = np.zeros(p, dtype=MARKING_DTYPE)
        produce = np.zeros(p, dtype=MARKING_DTYPE)
        for place, mult in activity.inputs.items():
            need[self.place_index[place]] += mult
        for place, mult in activity.outputs.items():
            produce[self.place_index[place]] += mult
        idx = np.array([self.place_index[q] for q in activity.inhibitors], dtype=np.intp)
        bound = np.array(list(activity.inhibitors.values()), dtype=MARKING_DTYPE)
        return need, produce, idx, bound

    def _validate(self):
        problems = [] if self.places else ["a net needs at least one place"]
        seen = set()
        for p in self.places:
            if not isinstance(p.name, str) or not p.name:
                problems.append(f"place {p.name!r}: a place needs a non-empty name")
            if p.name in seen:
                problems.append(f"place {p.name!r} is declared twice")
            seen.add(p.name)
            if not isinstance(p.tokens, (int, np.integer)) or isinstance(p.tokens, bool) or p.tokens < 0:
                problems.append(f"place {p.name!r}: initial tokens must be an integer >= 0, got {p.tokens!r}")
            elif p.tokens > MAX_COUNT:
                problems.append(f"place {p.name!r}: {p.tokens:,} initial tokens, more than {MAX_COUNT:,}")
        names = set()
        for a in self.activities:
            where = f"activity {a.name!r}"
            if a.name in names or a.name in self.place_index:
                problems.append(f"{where}: the name is used twice")
            names.add(a.name)
            for kind, arcs in (("input", a.inputs), ("output", a.outputs), ("inhibitor", a.inhibitors)):
                for place, mult in arcs.items():
                    if place not in self.place_index:
                        problems.append(f"{where}: {kind} arc names unknown place {place!r}")
                    if not isinstance(mult, (int, np.integer)) or isinstance(mult, bool) or mult < 1:
                        problems.append(f"{where}: {kind} arc to {place!r} needs an integer multiplicity >= 1, got {mult!r}")
                    elif mult > MAX_COUNT:
                        problems.append(f"{where}: {kind} arc to {place!r} has multiplicity {mult:,}, "
                                        f"more than {MAX_COUNT:,}")
            if isinstance(a, TimedActivity):
                problems += self._validate_timed(a, where)
            elif isinstance(a, InstantActivity):
                if not callable(a.weight) and not (_finite(a.weight) and a.weight > 0):
                    problems.append(f"{where}: weight must be > 0, got {a.weight!r}")
                elif not callable(a.weight):
                    problems += _in_range(where, "weight", a.weight)
                if not _finite(a.priority):
                    problems.append(f"{where}: priority must be a number, got {a.priority!r}")
            else:
                problems.append(f"{where}: not a TimedActivity or InstantActivity")
        if problems:
            raise ModelError(problems)

    @staticmethod
    def _validate_timed(a, where):
        problems = []
        if (a.rate is None) == (a.erlang is None):
            problems.append(f"{where}: give exactly one of rate or erlang")
        if a.rate is not None and not callable(a.rate) and not (_finite(a.rate) and a.rate > 0):
            problems.append(f"{where}: rate must be > 0, got {a.rate!r}")
        elif a.rate is not None and not callable(a.rate):
            problems += _in_range(where, "rate", a.rate)
        if a.erlang is not None:
            k, mean = a.erlang.shape, a.erlang.mean
            shape_ok = isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1
            if not shape_ok:
                problems.append(f"{where}: Erlang shape must be an integer >= 1, got {k!r}")
            if not (_finite(mean) and mean > 0):
                problems.append(f"{where}: Erlang mean must be > 0, got {mean!r}")
            elif shape_ok:
                problems += _in_range(where, "Erlang stage rate (shape / mean)", k / mean)
        if a.servers != 1:
            if a.servers != "infinite" and not (isinstance(a.servers, (int, np.integer))
                                                and not isinstance(a.servers, bool) and a.servers >= 1):
                problems.append(f"{where}: servers must be 'infinite' or an integer >= 1, got {a.servers!r}")
            elif a.servers != "infinite" and a.servers > MAX_COUNT:
                problems.append(f"{where}: {a.servers:,} servers, more than {MAX_COUNT:,}")
            if len(a.inputs) != 1:
                problems.append(f"{where}: a multi-server activity needs exactly one input place, has {len(a.inputs)}")
        return problems

    def _check_functions(self):
        """Call every gate, rate and weight once on the initial marking so that a
        misspelt place name is reported now, naming the activity."""
        m0 = self.initial_marking()[None, :]
        problems = []
        for a in self.activities:
            calls = [g.predicate for g in a.input_gates]
            calls += [g.function for g in a.input_gates if g.function is not None]
            calls += [g.function for g in a.output_gates]
            if callable(getattr(a, "rate", None)):
                calls.append(a.rate)
            if callable(getattr(a, "weight", None)):
                calls.append(a.weight)
            for f in calls:
                try:
                    f(self.view(m0.copy()))
                except ModelError as err:
                    problems.append(f"activity {a.name!r}: {err}")
                except Exception:  # a function may legitimately fail on this marking; fine
                    pass
        if problems:
            raise ModelError(sorted(set(problems)))

    def __repr__(self):
        return (f"Net({self.name!r}: {len(self.places)} places, {len(self.timed)} timed and "
                f"{len(self.instant)} instantaneous activities)")


def _in_range(where: str, what: str, value) -> list[str]:
    """A constant rate or weight within [MIN_RATE, MAX_RATE]: the solvers add and divide rates,
    and their ratios must stay far from overflow."""
    if MIN_RATE <= float(value) <= MAX_RATE:
        return []
    return [f"{where}: {what} {float(value):g} is outside [{MIN_RATE:g}, {MAX_RATE:g}]"]


def _finite(x) -> bool:
    try:
        return not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False
