"""Erlang activities become chains of exponential stages (docs/design.md §3.2).

An infinite-server activity ``t`` with ``erlang=Erlang(k, mean)`` over input place
``P`` becomes stage places ``P_1 .. P_k`` and stage activities ``t_1 .. t_k``:
tokens that used to enter ``P`` enter ``P_1``; stage ``i`` moves each token from
``P_i`` to ``P_{i+1}`` at rate ``k/mean``; the last stage does what ``t`` did. So
every token (task) spends an Erlang(k, mean) time in the chain. Gates still read
``m["P"]`` (the sum of the stages), throughput of ``t`` is that of ``t_k``.
Shape 1 is just an exponential activity of rate ``1/mean``.

>>> from spn.net import InputGate, Net, Place, TimedActivity, Erlang
>>> net = Net([Place("P", 2), Place("Done")],
...           [TimedActivity("t", inputs={"P": 1}, outputs={"Done": 1},
...                          erlang=Erlang(3, 1.5), servers="infinite")])
>>> [p.name for p in expand_erlang(net).places]
['P_1', 'P_2', 'P_3', 'Done']
"""

from __future__ import annotations

import dataclasses

from spn.exceptions import ModelError
from spn.net import InputGate, Net, Place, TimedActivity


def expand_erlang(net: Net) -> Net:
    """Return an equivalent net in which every timed activity is exponential.

    Returns ``net`` itself when there is nothing to expand.
    """
    to_expand = [a for a in net.timed if a.erlang is not None and a.erlang.shape > 1]
    if not to_expand:
        return _exponential(net)

    problems = []
    split: dict[str, tuple[str, ...]] = {}        # input place -> stage places
    for a in to_expand:
        if a.servers != "infinite" or len(a.inputs) != 1 or next(iter(a.inputs.values())) != 1:
            problems.append(
                f"activity {a.name!r}: an Erlang activity with shape > 1 needs servers='infinite' "
                f"and exactly one input place with multiplicity 1"
            )
            continue
        if a.inhibitors or a.input_gates:
            problems.append(
                f"activity {a.name!r}: an Erlang activity with shape > 1 cannot have inhibitor arcs "
                f"or input gates (each task's stages would not be disabled together)"
            )
            continue
        (place,) = a.inputs
        if place in split:
            problems.append(f"place {place!r} is the input of two Erlang activities")
            continue
        split[place] = tuple(f"{place}_{i}" for i in range(1, a.erlang.shape + 1))
    for other in net.activities:
        for place in split:
            if other not in to_expand and place in other.inputs:
                problems.append(
                    f"activity {other.name!r} consumes from {place!r}, the private input "
                    f"place of an Erlang activity"
                )
    clash = {s for stages in split.values() for s in stages} & set(net.place_index)
    if clash:
        problems.append(f"stage place names already in use: {sorted(clash)}")
    if problems:
        raise ModelError(problems)

    places = []
    for p in net.places:
        if p.name in split:
            first, *rest = split[p.name]
            places.append(Place(first, p.tokens))
            places += [Place(s) for s in rest]
        else:
            places.append(p)

    def redirect(arcs):
        return {split[q][0] if q in split else q: n for q, n in arcs.items()}

    activities, aliases = [], dict(net.activity_aliases)
    for a in net.activities:
        if a in to_expand:
            (place,) = a.inputs
            stages = split[place]
            k = len(stages)
            for i in range(k):
                last = i == k - 1
                activities.append(TimedActivity(
                    f"{a.name}_{i + 1}",
                    inputs={stages[i]: 1},
                    outputs=redirect(a.outputs) if last else {stages[i + 1]: 1},
                    output_gates=a.output_gates if last else (),
                    rate=a.erlang.stage_rate,
                    servers="infinite",
                ))
            aliases[a.name] = f"{a.name}_{k}"
        else:
            activities.append(_inhibit_on_stages(a, split, redirect))
    aggregates = {**net.aggregates, **split}
    return _exponential(Net(places, activities, name=net.name, aggregates=aggregates,
                            activity_aliases=aliases))


def _inhibit_on_stages(a, split, redirect):
    """Redirect output arcs to first stages; an inhibitor arc on a split place becomes an input
    gate on the sum of its stages (the tokens the place would have held)."""
    inhibitors = {q: b for q, b in a.inhibitors.items() if q not in split}
    gates = tuple(
        InputGate(lambda m, q=q, b=b: m[q] < b, name=f"inhibitor {q}>={b}")
        for q, b in a.inhibitors.items() if q in split
    )
    return dataclasses.replace(a, outputs=redirect(a.outputs), inhibitors=inhibitors,
                               input_gates=gates + a.input_gates)


def _exponential(net: Net) -> Net:
    """Turn shape-1 Erlang activities into plain exponential ones (rate 1/mean)."""
    if not any(a.erlang is not None for a in net.timed):
        return net
    activities = [
        dataclasses.replace(a, rate=a.erlang.stage_rate, erlang=None)
        if isinstance(a, TimedActivity) and a.erlang is not None else a
        for a in net.activities
    ]
    return Net(net.places, activities, name=net.name, aggregates=net.aggregates,
               activity_aliases=net.activity_aliases)
