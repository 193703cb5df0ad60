"""Sweeps over descriptions with query classes and queues: their columns, their points, their rows.

``spn sweep models/two-queues.yaml --grid queues.bi.capacity=0.25,0.5 --grid classes.dashboard.users=2..6``
solves each point as ``spn solve`` does (:func:`~spn.analysis.solve_classes.solve_classes`):
exactly on the job-identity net while its chain fits ``max_states``, otherwise (``method``
``auto``) by the queue simulator to a 95 % interval, and the row says which (``method``).

**Columns.** The names are those of ``spn solve --json`` flattened with dots, as ``spn compare``
names its measures: after the grid, the totals ``mean_execution_time`` (over every job),
``ci_low``, ``ci_high``, ``throughput``, ``utilization`` and ``method``; for each class
``classes.C.mean_execution_time``, ``.ci_low``, ``.ci_high``, ``.throughput``,
``.throughput_ci_low``, ``.throughput_ci_high``; for each queue ``queues.Q.utilization``,
``.utilization_ci_low``, ``.utilization_ci_high``, ``.capacity``, ``.max_capacity`` (the
configuration the point was solved with); then ``tangible_states``, ``transitions`` (exact
rows), ``replications``, ``precision_met`` (simulated rows), ``converged`` (exact rows),
``seconds`` and ``error``. Interval columns are empty on exact rows. A result column that
is also a grid path (``queues.bi.capacity``) appears once, as the grid's.

**Queue capacities on the grid.** YARN requires the capacities of sibling queues to sum to 1,
and a capacity planner who asks "what if bi had 0.25 of the cluster?" means "and the others
share the rest": so do ``spn plan --vary queues.NAME.capacity`` and this sweep. The queues
whose capacity is *not* on the grid share 1 minus the grid's capacities in proportion to
their capacities in the model (with two queues the other gets exactly 1 - share, as
:func:`~spn.analysis.plan_queues.probe_queues` gives it). A queue whose capacity then
exceeds its ``max_capacity`` has the maximum raised to the capacity, as a plan's probe
does (YARN requires max >= capacity; raising the ceiling is the smallest change that keeps
the point a configuration), unless its ``max_capacity`` is itself on the grid (then the
point is invalid and recorded as failed). When every queue's capacity is on the grid,
nothing is rebalanced: the points whose capacities do not sum to 1 are invalid. Refusing
instead would make a one-queue question take one grid dimension per queue, with most
combinations invalid. A point whose grid capacities leave nothing for the other queues
fails with that reason.

**Simulated points** use ``seed`` at every point (common random numbers: two points differ
by their configuration, not by their random streams), ``rel_precision`` and ``max_seconds``
per point; a point is then deterministic unless ``max_seconds`` stopped it (the row's
``precision_met`` is False and its interval depends on the machine's speed).

>>> shares_on_grid({"queues": [{"name": "etl"}, {"name": "bi"}]}, ["queues.bi.capacity", "cluster.containers"])
((1,), ())
>>> data = {"queues": [{"name": "a", "capacity": 0.5}, {"name": "b", "capacity": 0.3, "max_capacity": 0.1},
...                    {"name": "c", "capacity": 0.6}]}          # the grid's queues.c.capacity=0.6
>>> [(q["capacity"], q.get("max_capacity")) for q in rebalance(data, (2,))["queues"]]
[(0.25, None), (0.15, 0.15), (0.6, None)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spn.exceptions import ModelError

__all__ = ["ClassSweep", "shares_on_grid", "rebalance", "point_description", "class_columns", "solve_class_point",
           "TOTAL_COLUMNS", "CLASS_KEYS", "QUEUE_KEYS"]

#: after the grid (``mean_execution_time`` first: ``spn.analysis.plot`` finds the grid columns before it)
TOTAL_COLUMNS = ("mean_execution_time", "ci_low", "ci_high", "throughput", "utilization", "method")
#: the keys of a class in ``spn solve --json`` (the ``ci`` ones only when it simulated)
CLASS_KEYS = ("mean_execution_time", "ci_low", "ci_high", "throughput", "throughput_ci_low", "throughput_ci_high")
#: the keys of a queue in ``spn solve --json``
QUEUE_KEYS = ("utilization", "utilization_ci_low", "utilization_ci_high", "capacity", "max_capacity")
#: how the point was solved, and the tail every sweep has
SOLUTION_COLUMNS = ("tangible_states", "transitions", "replications", "precision_met")


@dataclass(frozen=True)
class ClassSweep:
    """What a worker needs, beyond the point's overrides, to solve a point with query classes (picklable).

    ``classes``/``queues``: the names the columns are made of; ``shares``/``pinned``: the
    positions in the description's ``queues`` list whose ``capacity``/``max_capacity`` the
    grid sets; ``seed``, ``rel_precision``, ``max_seconds``: of a point that simulates.
    """

    classes: tuple
    queues: tuple
    shares: tuple = ()
    pinned: tuple = ()
    seed: int = 1
    rel_precision: float | None = None
    max_seconds: float | None = None


def _queue_position(items, key: str):
    """The position of queue ``key`` (a name first, else an index), as ``--set`` finds it."""
    from spn.description.overrides import _list_index

    return _list_index(items, key) if isinstance(items, list) else None


def shares_on_grid(data, paths) -> tuple[tuple, tuple]:
    """The positions of the queues whose ``capacity``, and whose ``max_capacity``, are grid paths."""
    items = data.get("queues")
    found = {"capacity": [], "max_capacity": []}
    for path in paths:
        parts = str(path).split(".")
        if len(parts) == 3 and parts[0] == "queues" and parts[2] in found:
            position = _queue_position(items, parts[1])
            if position is not None and position not in found[parts[2]]:
                found[parts[2]].append(position)
    return tuple(sorted(found["capacity"])), tuple(sorted(found["max_capacity"]))


def _fraction(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok and 0 < value <= 1 else None


def rebalance(data: dict, shares, pinned=()) -> dict:
    """``data`` (a mapping after the point's overrides; changed in place) with the queues off the grid
    sharing 1 - the grid's capacities, and maxima raised to capacities (see the module docstring).

    Values that are not capacities in (0, 1] are left for the validation to name.
    """
    items = data.get("queues")
    if not shares or not isinstance(items, list) or not all(isinstance(q, dict) for q in items):
        return data
    others = [k for k in range(len(items)) if k not in shares]
    given = [_fraction(items[k].get("capacity")) for k in shares]
    before = [_fraction(items[k].get("capacity")) for k in others]
    if not others or None in given or None in before:
        return data
    rest = 1.0 - sum(given)
    if rest <= 1e-9:
        names = ", ".join(str(items[k].get("name", k)) for k in shares)
        left = ", ".join(str(items[k].get("name", k)) for k in others)
        raise ModelError(f"queues: the grid gives {names} {sum(given):.6g} of the cluster, leaving nothing for "
                         f"{left} (the queues off the grid share 1 - the grid's capacities)")
    total = sum(before)
    for k, capacity in zip(others, before):
        items[k]["capacity"] = rest if len(others) == 1 else capacity * rest / total
    for k, item in enumerate(items):
        ceiling = _fraction(item.get("max_capacity", 1.0))
        capacity = _fraction(item.get("capacity"))
        if k not in pinned and ceiling is not None and capacity is not None and ceiling < capacity:
            item["max_capacity"] = capacity
    return data


def point_description(data, overrides, layout: ClassSweep | None, source=None):
    """The description of one point: ``data`` with the point's overrides, its queues rebalanced."""
    from spn.description import parse_description
    from spn.description.overrides import apply_overrides

    if layout is None or not layout.shares:
        return parse_description(data, overrides, source=source)
    return parse_description(rebalance(apply_overrides(data, overrides), layout.shares, layout.pinned),
                             source=source)


def names_of(desc) -> tuple[tuple, tuple]:
    """The class names and the queue names of ``desc`` (what a class sweep's columns are made of)."""
    from spn.description.model import job_classes, queues_of

    return tuple(c.name for c in job_classes(desc)), tuple(q.name for q in queues_of(desc))


def class_columns(grid, layout: ClassSweep) -> list[str]:
    """The CSV header of a sweep over query classes."""
    from spn.analysis.sweep import TAIL_COLUMNS

    paths = [path for path, _ in grid]
    results = [*TOTAL_COLUMNS, *(f"classes.{c}.{k}" for c in layout.classes for k in CLASS_KEYS),
               *(f"queues.{q}.{k}" for q in layout.queues for k in QUEUE_KEYS), *SOLUTION_COLUMNS]
    return ["point", *paths, *(c for c in results if c not in paths), *TAIL_COLUMNS]


def solve_class_point(task) -> dict:
    """The row values of one point (a :class:`~spn.analysis.sweep.SweepTask` with ``classes``);
    errors propagate (the caller records them)."""
    from spn.analysis.solve_classes import solve_classes

    layout = task.classes
    desc = point_description(task.data, task.overrides, layout, task.source)
    if names_of(desc) != (layout.classes, layout.queues):
        raise ModelError("the grid renames a class or a queue, and the columns are named after the model's")
    report = solve_classes(desc, method=task.method, rtol=task.rtol, max_states=task.max_states, fallback=True,
                           rel_precision=layout.rel_precision, max_seconds=layout.max_seconds, seed=layout.seed)
    return class_row(report)


def class_row(report) -> dict:
    """The columns of a ``solve_classes`` answer (exact or simulated), read from its ``spn solve --json`` object."""
    result = report.as_dict()
    simulated = result["method"] == "simulation"
    row = {key: result[key] for key in TOTAL_COLUMNS if key in result}
    for kind, keys in (("classes", CLASS_KEYS), ("queues", QUEUE_KEYS)):
        for name, values in result[kind].items():
            row.update({f"{kind}.{name}.{key}": values[key] for key in keys if key in values})
    if simulated:
        row.update(replications=result["replications"], precision_met=bool(result["precision_met"]), converged="")
    else:
        row.update(tangible_states=report.tangible_states, transitions=report.transitions,
                   converged=bool(report.solver.converged))
    row["error"] = ""
    return row
