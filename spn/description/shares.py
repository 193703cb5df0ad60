"""A queue's share of the cluster changed alone: the other queues share the rest.

YARN requires the capacities of sibling queues to sum to 1, and a capacity planner who asks
"what if bi had 0.25 of the cluster?" means "and the others share the rest". ``spn plan
--vary queues.NAME.capacity`` and ``spn sweep --grid queues.NAME.capacity=...`` both build
their configurations with :func:`rebalance`:

- the queues whose capacity is *not* set share 1 minus the set capacities in proportion to
  their capacities in the model (with two queues the other gets exactly 1 - share);
- a queue whose capacity then exceeds its ``max_capacity`` has the maximum raised to the
  capacity (YARN requires max >= capacity; raising the ceiling is the smallest change that
  keeps the configuration valid), unless its ``max_capacity`` is itself set (``pinned``);
- when every queue's capacity is set, nothing is rebalanced (capacities not summing to 1 are
  then the description's error to report).

A plain ``--set queues.etl.capacity=0.3`` does not rebalance: every override is applied before
the checks, so the capacities are changed together (docs/design.md §4.6).

>>> data = {"queues": [{"name": "a", "capacity": 0.5}, {"name": "b", "capacity": 0.3, "max_capacity": 0.1},
...                    {"name": "c", "capacity": 0.6}]}          # c set to 0.6
>>> [(q["capacity"], q.get("max_capacity")) for q in rebalance(data, (2,))["queues"]]
[(0.25, None), (0.15, 0.15), (0.6, None)]
>>> share_grid(0.3, 0.8, containers=4)
(0.5, 0.75)
"""

from __future__ import annotations

import math
import re

from spn.exceptions import ModelError

__all__ = ["SHARE_PATH", "share_positions", "rebalance", "share_grid", "raised_maxima"]

#: a queue's share: ``queues.NAME.capacity`` (NAME a queue's name or index)
SHARE_PATH = re.compile(r"^queues\.(.+)\.capacity$")


def _queue_position(items, key: str):
    """The position of queue ``key`` (a name first, else an index), as ``--set`` finds it."""
    from spn.description.overrides import _list_index

    return _list_index(items, key) if isinstance(items, list) else None


def share_positions(data, paths) -> tuple[tuple, tuple]:
    """The positions of the queues whose ``capacity``, and whose ``max_capacity``, are among ``paths``.

    >>> share_positions({"queues": [{"name": "etl"}, {"name": "bi"}]}, ["queues.bi.capacity", "cluster.containers"])
    ((1,), ())
    """
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
    """``data`` (a description mapping whose queues at positions ``shares`` were given their capacity;
    changed in place) with the other queues sharing the rest and maxima raised to capacities.

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
        raise ModelError(f"queues: {names} given {sum(given):.6g} of the cluster, leaving nothing for "
                         f"{left} (the queues not given a capacity share 1 - the given capacities)")
    total = sum(before)
    for k, capacity in zip(others, before):
        items[k]["capacity"] = rest if len(others) == 1 else capacity * rest / total
    for k, item in enumerate(items):
        ceiling = _fraction(item.get("max_capacity", 1.0))
        capacity = _fraction(item.get("capacity"))
        if k not in pinned and ceiling is not None and capacity is not None and ceiling < capacity:
            item["max_capacity"] = capacity
    return data


def raised_maxima(before, after) -> list[str]:
    """Notes on the maxima :func:`rebalance` raised, from the parsed queues before and after.

    >>> from spn.description.model import Queue
    >>> raised_maxima([Queue("etl", 0.6, 0.9), Queue("bi", 0.4)], [Queue("etl", 0.9375, 0.9375), Queue("bi", 0.0625)])
    ['etl.max_capacity raised from 0.9 to 0.9375 (its capacity)']
    """
    return [f"{b.name}.max_capacity raised from {b.max_capacity:g} to {a.max_capacity:.4g} (its capacity)"
            for b, a in zip(before, after) if a.max_capacity - b.max_capacity > 1e-9]


def share_grid(lo: float, hi: float, containers: int) -> tuple[float, ...]:
    """The shares k/C (k = 1..C-1) in ``lo..hi``: a share matters only through containers (the queue is
    guaranteed share · C), so between two of them the configurations are the same."""
    eps = 1e-12
    return tuple(k / containers for k in range(1, containers) if lo - eps <= k / containers <= hi + eps)
