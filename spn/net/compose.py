"""Join sub-models into one net by sharing places (the paper's composite models, §4.3).

A :class:`SubModel` is a small net whose places have *local* names and which
exposes some of them as interface places (``start``, ``end``, ``containers``...).
:func:`compose` renames every local place to ``"<sub-model>.<place>"`` and merges
the interface places listed in ``shared`` into one place with the given name.
The merged place starts with the sum of its members' initial tokens (the union of
their markings, as in SNAKES' place merging), so a resource is declared with its
tokens in one sub-model and with zero in the others. Gates, rates and weights keep
using local names: they are wrapped with a view that translates them.

>>> from spn.net import Place, TimedActivity
>>> a = SubModel("a", [Place("out")], [TimedActivity("make", outputs={"out": 1}, inhibitors={"out": 1}, rate=1.0)], {"end": "out"})
>>> b = SubModel("b", [Place("in")], [TimedActivity("use", inputs={"in": 1}, rate=2.0)], {"start": "in"})
>>> net = compose([a, b], {"a->b": [("a", "end"), ("b", "start")]})
>>> [p.name for p in net.places], [x.name for x in net.activities]
(['a->b'], ['a.make', 'b.use'])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from spn.exceptions import ModelError
from spn.net.core import InputGate, Net, OutputGate, Place, _Activity


@dataclass(frozen=True)
class SubModel:
    """Places and activities with local names, and the interface places others may share.

    ``interface`` maps a role (``"start"``, ``"end"``, ``"containers"``, ...) to a local place.
    """

    name: str
    places: tuple[Place, ...]
    activities: tuple[_Activity, ...]
    interface: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "places", tuple(self.places))
        object.__setattr__(self, "activities", tuple(self.activities))
        object.__setattr__(self, "interface", dict(self.interface))


class _RenamedView:
    """A MarkingView seen through local place names."""

    __slots__ = ("_view", "_names")

    def __init__(self, view, names):
        self._view = view
        self._names = names

    def __len__(self):
        return len(self._view)

    def __getitem__(self, place):
        return self._view[self._names.get(place, place)]

    def __setitem__(self, place, value):
        self._view[self._names.get(place, place)] = value


def _localised(function, names):
    if function is None or not callable(function):
        return function

    def wrapped(m):
        return function(_RenamedView(m, names))
    wrapped.__name__ = getattr(function, "__name__", "function")
    return wrapped


def _rename_activity(a: _Activity, prefix: str, names: Mapping[str, str]) -> _Activity:
    def arcs(d):
        return {names[p]: k for p, k in d.items()}
    changes = dict(
        name=f"{prefix}.{a.name}",
        inputs=arcs(a.inputs), outputs=arcs(a.outputs), inhibitors=arcs(a.inhibitors),
        input_gates=tuple(InputGate(_localised(g.predicate, names), _localised(g.function, names), g.name)
                          for g in a.input_gates),
        output_gates=tuple(OutputGate(_localised(g.function, names), g.name) for g in a.output_gates),
    )
    if hasattr(a, "rate"):
        changes["rate"] = _localised(a.rate, names)
    if hasattr(a, "weight"):
        changes["weight"] = _localised(a.weight, names)
    return dataclasses.replace(a, **changes)


def compose(submodels: Iterable[SubModel], shared: Mapping[str, list[tuple[str, str]]],
            *, name: str = "net") -> Net:
    """One net from sub-models; ``shared`` maps a merged place name to the (sub-model, role) pairs it joins.

    Raises :class:`ModelError` for unknown sub-models or roles and for an
    interface place claimed by two merged places.
    """
    submodels = list(submodels)
    by_name = {s.name: s for s in submodels}
    problems = []
    if len(by_name) != len(submodels):
        problems.append("two sub-models have the same name")
    merged: dict[tuple[str, str], str] = {}          # (sub-model, local place) -> merged name
    for merged_name, members in shared.items():
        for sub, role in members:
            if sub not in by_name:
                problems.append(f"shared place {merged_name!r}: unknown sub-model {sub!r}")
                continue
            local = by_name[sub].interface.get(role)
            if local is None:
                problems.append(f"shared place {merged_name!r}: sub-model {sub!r} has no interface "
                                f"place {role!r} (it has {sorted(by_name[sub].interface)})")
                continue
            if (sub, local) in merged and merged[(sub, local)] != merged_name:
                problems.append(f"place {sub}.{local} is merged into both {merged[(sub, local)]!r} "
                                f"and {merged_name!r}")
            merged[(sub, local)] = merged_name
    if problems:
        raise ModelError(problems)

    tokens: dict[str, int] = {}
    order: list[str] = []
    activities = []
    for s in submodels:
        names = {}
        for p in s.places:
            global_name = merged.get((s.name, p.name), f"{s.name}.{p.name}")
            names[p.name] = global_name
            if global_name not in tokens:
                order.append(global_name)
                tokens[global_name] = 0
            tokens[global_name] += p.tokens
        activities += [_rename_activity(a, s.name, names) for a in s.activities]
    return Net([Place(n, tokens[n]) for n in order], activities, name=name)
