"""The grid of a sweep and its points: ``--grid`` parsed, each point's description, the values checked
before anything is solved, and the CSV columns.

**Columns.** ``point`` (index in the grid), one column per ``--grid`` path (the value as written),
then for one class ``mean_execution_time``, ``throughput``, ``utilization``, ``tangible_states``,
``transitions``, ``method``, ``low``, ``high``, ``p<q>`` per requested percentile,
``deadline_probability`` when a deadline is given; ``converged``, ``seconds`` and ``error`` last
(empty unless the point failed: a failed point is recorded, not retried). With query classes and
queues (docs/design.md §4.6) the names are those of ``spn solve --json`` flattened with dots, as
``spn compare`` names its measures: after the grid, the totals ``mean_execution_time`` (over every job),
``ci_low``, ``ci_high``, ``throughput``, ``utilization`` and ``method``; for each class
``classes.C.mean_execution_time``, ``.ci_low``, ``.ci_high``, ``.throughput``,
``.throughput_ci_low``, ``.throughput_ci_high``; for each queue ``queues.Q.utilization``,
``.utilization_ci_low``, ``.utilization_ci_high``, ``.capacity``, ``.max_capacity`` (the
configuration the point was solved with); then ``tangible_states``, ``transitions`` (exact
rows), ``replications``, ``precision_met`` (simulated rows), ``converged`` (exact rows),
``seconds`` and ``error``. Interval columns are empty on exact rows. A result column that
is also a grid path (``queues.bi.capacity``) appears once, as the grid's.

**Queue capacities on the grid.** A queue's capacity on the grid rebalances the queues off it
(:func:`spn.description.shares.rebalance`, as ``spn plan --vary queues.NAME.capacity`` does): they
share 1 minus the grid's capacities in proportion to their capacities in the model, and a maximum
below its capacity is raised unless the ``max_capacity`` is itself on the grid (then the point is
invalid and recorded as failed). When every queue's capacity is on the grid, nothing is rebalanced:
the points whose capacities do not sum to 1 are invalid. Refusing instead would make a one-queue
question take one grid dimension per queue, with most combinations invalid.

>>> grid = parse_grid(["cluster.containers=2..4", "workload.users=1,5"])
>>> grid
[('cluster.containers', ['2', '3', '4']), ('workload.users', ['1', '5'])]
>>> grid_size(grid), grid_point(grid, 3)
(6, ('3', '5'))
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from spn.defaults import SEED
from spn.pipeline.result import percentile_key
from spn.studies.targets import MAX_POINTS, MAX_VALUE, _short
from spn.studies.sweep_files import RESULT_COLUMNS, TAIL_COLUMNS
from spn.description.shares import rebalance, share_positions
from spn.description.validate import CAPACITY_SUM
from spn.exceptions import ModelError

__all__ = ["parse_grid", "grid_size", "grid_points", "grid_point", "columns", "ClassSweep", "class_layout",
           "point_description", "names_of", "check_values", "TOTAL_COLUMNS",
           "CLASS_KEYS", "QUEUE_KEYS"]


# --------------------------------------------------------------------------- the grid
def parse_grid(texts: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``PATH=V1,V2,...`` or ``PATH=LO..HI`` (integers, inclusive) -> [(path, [value text, ...])].

    Values stay text: they are passed on as ``--set PATH=VALUE``. A grid of more
    than :data:`~spn.studies.plan.MAX_POINTS` points is refused with its size,
    counted before any value is listed.
    """
    specs, seen = [], set()
    for text in texts:
        path, sep, spec = str(text).partition("=")
        path, spec = path.strip(), spec.strip()
        if not sep or not path or not spec:
            raise ModelError(f"grid: expected PATH=V1,V2,... or PATH=LO..HI, got {_short(text)!r}")
        if path in seen:
            raise ModelError(f"grid: {path} is given twice")
        seen.add(path)
        if ".." in spec and "," not in spec:
            try:
                lo, hi = (int(x) for x in spec.split("..", 1))
            except ValueError:
                raise ModelError(f"grid: a range LO..HI takes integers, got {_short(spec)!r}") from None
            if hi < lo:
                raise ModelError(f"grid: empty range {spec!r}")
            if max(abs(lo), abs(hi)) > MAX_VALUE:
                raise ModelError(f"grid: {path} values must lie between -{MAX_VALUE:.0e} and {MAX_VALUE:.0e}, "
                                 f"got {_short(spec)}")
            specs.append((path, range(lo, hi + 1)))
        else:
            values = [v.strip() for v in spec.split(",")]
            if any(not v for v in values):
                raise ModelError(f"grid: empty value in {_short(text)!r}")
            if any("\n" in v or "\r" in v for v in values):     # a CSV row is one line
                raise ModelError(f"grid: a value of {path} contains a line break")
            if len(set(values)) != len(values):
                raise ModelError(f"grid: a value is repeated in {_short(text)!r}")
            specs.append((path, values))
    if not specs:
        raise ModelError("give at least one grid dimension PATH=VALUES")
    size = math.prod(len(values) for _, values in specs)
    if size > MAX_POINTS:
        sizes = " x ".join(f"{len(values):,}" for _, values in specs)
        raise ModelError(f"grid: {size:,} points ({sizes}), more than {MAX_POINTS:,}: split the sweep")
    return [(path, [str(v) for v in values] if isinstance(values, range) else values) for path, values in specs]


def grid_size(grid) -> int:
    """The number of points of ``grid``, without listing them."""
    return math.prod(len(values) for _, values in grid)


def grid_points(grid):
    """Every combination of the grid's values, first path varying slowest (an iterator)."""
    return itertools.product(*(values for _, values in grid))


def grid_point(grid, index: int) -> tuple[str, ...]:
    """The ``index``-th point of :func:`grid_points`, computed from the index."""
    values = []
    for _, dimension in reversed(grid):
        index, k = divmod(index, len(dimension))
        values.append(dimension[k])
    return tuple(reversed(values))


# --------------------------------------------------------------------------- one point
#: after the grid (``mean_execution_time`` first: ``spn.studies.plot`` finds the grid columns before it)
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
    seed: int = SEED
    rel_precision: float | None = None
    max_seconds: float | None = None


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


def columns(grid, percentiles: Sequence[float] = (), deadline: float | None = None,
            layout: ClassSweep | None = None) -> list[str]:
    """The CSV header of a sweep: of one class, or (``layout``) of query classes and queues."""
    paths = [path for path, _ in grid]
    if layout is None:
        results = [*RESULT_COLUMNS, *(f"p{percentile_key(q)}" for q in percentiles),
                   *(["deadline_probability"] if deadline is not None else [])]
    else:
        results = [*TOTAL_COLUMNS, *(f"classes.{c}.{k}" for c in layout.classes for k in CLASS_KEYS),
                   *(f"queues.{q}.{k}" for q in layout.queues for k in QUEUE_KEYS), *SOLUTION_COLUMNS]
    return ["point", *paths, *(c for c in results if c not in paths), *TAIL_COLUMNS]


# --------------------------------------------------------------------------- checked before solving
def class_layout(data, grid, *, method, percentiles, deadline, seed, rel_precision,
                 max_seconds) -> ClassSweep | None:
    """The :class:`ClassSweep` of a description with query classes (names filled in later), else None;
    refuses the options that do not apply to the description."""
    from spn.analysis.solve import SIMULATION_PRECISION, SIMULATION_SECONDS

    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ModelError(f"seed: expected an integer >= 0, got {seed!r}", option="seed")
    for name, value in (("rel_precision", rel_precision), ("max_seconds", max_seconds)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ModelError(f"{name}: expected a positive number, got {value!r}", option=name)
    if not data.get("classes"):
        return None
    one_class = next((path for path, _ in grid if path.split(".")[0] in ("workload", "phases", "edges")), None)
    if one_class is not None:
        names = ", ".join(str(c.get("name")) for c in data["classes"] if isinstance(c, dict))
        raise ModelError(f"--grid {one_class}: the model has query classes, each with its own users, think_time, "
                         f"phases and edges: vary classes.NAME.{one_class.split('.', 1)[-1]} (classes: {names})")
    if percentiles or deadline is not None:
        raise ModelError("percentiles and deadline: a sweep over query classes reports each class's mean execution "
                         "time and throughput (the execution-time distribution is solved for one class)",
                         option="percentiles" if percentiles else "deadline")
    shares, pinned = share_positions(data, [path for path, _ in grid])
    return ClassSweep((), (), shares, pinned, seed,
                      SIMULATION_PRECISION if rel_precision is None else float(rel_precision),
                      SIMULATION_SECONDS if max_seconds is None else float(max_seconds))


def _check_paths(data, grid) -> None:
    """Refuse, in one line, a grid path that names nothing in the description (with the first value)."""
    from spn.description.overrides import apply_overrides

    for path, values in grid:
        try:
            apply_overrides(data, [f"{path}={values[0]}"])
        except ModelError as error:
            text = str(error)
            prefix = f"--set {path}={values[0]}: "
            raise ModelError(f"--grid {path}: {text[len(prefix):] if text.startswith(prefix) else text}") from None


def check_values(model, data, grid, layout: ClassSweep | None = None):
    """Every value of every dimension, with the others at their first value, must make a valid description;
    returns the description of the first point.

    Of a range ``LO..HI`` only the ends are checked (the bounds of a description are
    intervals), so that a grid of a million points starts at once. With query classes each
    point is rebalanced first (:func:`~spn.description.shares.rebalance`), and a value may not rename a class or a
    queue (the columns are named after them).
    """
    from spn.description.model import require_single_class

    _check_paths(data, grid)
    first = [values[0] for _, values in grid]
    problems, bad, reference = [], 0, None
    queues = data.get("queues") if layout is not None else None
    # every queue's capacity on the grid: nothing is rebalanced, and a combination not summing to 1
    # is a failed point (recorded when it comes), not a reason to refuse the whole grid
    every_share = isinstance(queues, list) and len(share_positions(data, [p for p, _ in grid])[0]) == len(queues)
    for d, (path, values) in enumerate(grid):
        others = [f"{p}={first[k]}" for k, (p, _) in enumerate(grid) if k != d]
        for v in ((values[0], values[-1]) if _is_range(values) else values):
            try:
                desc = point_description(data, [*others, f"{path}={v}"], layout, source=str(model))
                if layout is None:
                    require_single_class(desc, "spn sweep")
                elif reference is not None and names_of(desc) != names_of(reference):
                    raise ModelError("it renames a class or a queue, and the columns are named after the model's")
                if reference is None:
                    reference = desc
            except ModelError as error:
                if every_share and all(CAPACITY_SUM in p for p in error.problems):
                    continue
                bad += 1
                if len(problems) < 3:
                    problems.append(f"{path}={v}: {error}")
    if problems:
        raise ModelError(problems + ([f"... and {bad - 3} more values"] if bad > 3 else []))
    return reference if reference is not None else point_description(data, [], layout, source=str(model))


def _is_range(values) -> bool:
    """Whether ``values`` are consecutive integers, as ``LO..HI`` writes them."""
    try:
        start = int(values[0])
        return len(values) > 2 and all(v == str(start + k) for k, v in enumerate(values))
    except ValueError:
        return False
