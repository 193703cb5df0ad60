"""Capacity planning: the smallest value of a parameter meeting a target.

Each value is solved by :func:`spn.pipeline.evaluate_description` (the mean and, for
percentile targets, the tagged job's distribution). :func:`plan` finds the smallest value of one parameter (``--vary
cluster.containers=1..400``) whose solution meets every target (``mean<=120``,
``p95<=150``). Execution time usually falls as containers are added, but the net
does not promise it (priorities, the capacity-scheduler gate and pooled finished
tasks can all bend the curve), so the search *checks* monotonicity instead of
assuming it:

1. solve both ends of the range and ``probes`` evenly spaced interior values;
2. take the first of those (in increasing order) that meets the targets and
   bisect between it and the evaluated value below it, which does not;
3. look at every value solved on the way: if a target's metric rises significantly
   as the value grows (both values' intervals apart), or the targets are met at
   one value and missed at a larger one, report that evidence
   (:func:`spn.studies.plan_result.monotonicity_evidence`). The answer then is
   still a value that meets the targets while the value just below it does not
   (both solved), but a smaller one may exist between the solved values:
   ``exhaustive=True`` solves them all.

``largest=True`` asks for the largest value instead (e.g. how many users a
queue can take).

>>> find_boundary([1, 2, 3, 4, 5, 6, 7, 8], lambda v: {"mean": 100.0 / v},
...               [parse_target("mean<=20")]).answer
5
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from spn.defaults import MAX_STATES, RTOL
from spn.exceptions import ConvergenceError, ModelError, SpnError
from spn.studies.plan_result import PlanPoint, PlanResult, monotonicity_evidence, verdict

__all__ = [
    "Target", "parse_target", "parse_vary", "vary_values", "find_boundary", "plan", "solve_point",
    "model_data", "solved_point", "MAX_POINTS", "MAX_PROBES", "MAX_VALUE", "MAX_COST_VALUES",
]

#: the most configurations one command solves (a sweep's grid, an exhaustive plan)
MAX_POINTS = 1_000_000
#: interior values a plan solves before bisecting
MAX_PROBES = 1_000
#: the most values above the smallest meeting the targets that a search for the cheapest solves
MAX_COST_VALUES = 200
#: the largest magnitude of a --vary or --grid range end: integers stay exact as floats below 2**53
MAX_VALUE = 10 ** 15


# --------------------------------------------------------------------------- targets and ranges
# [CLASS.]METRIC<=S: the class is everything before the last dot that precedes the metric
_TARGET = re.compile(r"^\s*(?:(.+?)\.)?(mean_execution_time|mean|p(\d+(?:\.\d+)?))\s*(<=|<)\s*"
                     r"([0-9.]+(?:[eE][-+]?\d+)?)\s*s?\s*$")


@dataclass(frozen=True)
class Target:
    """``mean<=120`` or ``p95<=150``: a metric (seconds), a comparison and a bound.

    ``query_class`` names the class whose metric it is (``dashboard.mean<=30``) in a
    description with query classes (docs/design.md §4.6); None: the model's one class.
    """

    metric: str
    op: str
    bound: float
    query_class: str | None = None

    @property
    def percentile(self) -> float | None:
        return None if self.metric == "mean" else float(self.metric[1:])

    @property
    def key(self) -> str:
        """The name of its metric among a solved point's metrics: ``p95``, or with a class ``dashboard.mean``."""
        return self.metric if self.query_class is None else f"{self.query_class}.{self.metric}"

    def met(self, value: float) -> bool:
        return value <= self.bound if self.op == "<=" else value < self.bound

    def __str__(self) -> str:
        prefix = "" if self.query_class is None else f"{self.query_class}."
        return f"{prefix}{self.metric}{self.op}{self.bound:g}"


def parse_target(text: str) -> Target:
    """Parse ``mean<=120``, ``p95<=150``, ``p99.9<200``, and with a class ``dashboard.mean_execution_time<=30``.

    ``mean_execution_time`` is another name for ``mean``.

    >>> parse_target("p95 <= 150")
    Target(metric='p95', op='<=', bound=150.0, query_class=None)
    >>> str(parse_target("dashboard.mean_execution_time<=30"))
    'dashboard.mean<=30'
    """
    match = _TARGET.match(str(text))
    if not match:
        raise ModelError(f"target: expected [CLASS.]METRIC<=SECONDS with METRIC mean (or mean_execution_time) "
                         f"or pQ (e.g. mean<=120, p95<=150, dashboard.mean<=30), got {text!r}")
    query_class, metric, q, op, number = match.groups()
    try:
        bound = float(number)
    except ValueError:      # the pattern lets "1.2.3" through
        raise ModelError(f"target: the bound must be a number of seconds, got {number!r}") from None
    if metric == "mean_execution_time":
        metric = "mean"
    if q is not None:
        if not 0 < float(q) < 100:
            raise ModelError(f"target: percentile {q} is not in (0, 100)")
        metric = f"p{float(q):g}"
    if not math.isfinite(bound) or bound <= 0:
        raise ModelError(f"target: the bound must be a positive number of seconds, got {number}")
    if query_class is not None:
        query_class = query_class.strip()
        if not query_class:
            raise ModelError(f"target: the class name before {metric} is empty in {text!r}")
    return Target(metric, op, bound, query_class)


def parse_vary(text: str) -> tuple[str, list[int]]:
    """``PATH=LO..HI`` (integers, inclusive) or ``PATH=V1,V2,...`` -> (path, sorted values), as a list.

    >>> parse_vary("cluster.containers=3..6")
    ('cluster.containers', [3, 4, 5, 6])
    """
    path, values = vary_values(text)
    if len(values) > MAX_POINTS:
        raise ModelError(f"vary: {len(values):,} values, more than {MAX_POINTS:,} to list")
    return path, list(values)


def vary_values(text: str) -> tuple[str, Sequence[int]]:
    """Like :func:`parse_vary`, but a range stays a :class:`range`: nothing is built for ``1..10**15``.

    >>> vary_values("workload.users=1..1000000000000")
    ('workload.users', range(1, 1000000000001))
    """
    path, sep, spec = str(text).partition("=")
    path, spec = path.strip(), spec.strip()
    if not sep or not path or not spec:
        raise ModelError(f"vary: expected PATH=LO..HI or PATH=V1,V2,..., got {text!r}")
    try:
        if ".." in spec:
            lo, hi = (int(x) for x in spec.split("..", 1))
            if hi < lo:
                raise ModelError(f"vary: empty range {spec!r} (LO must be <= HI)")
            values = range(lo, hi + 1)
        else:
            values = sorted({int(x) for x in spec.split(",")})
    except ValueError:
        raise ModelError(f"vary: the values must be integers (LO..HI or a list), got {_short(spec)!r}") from None
    if abs(values[0]) > MAX_VALUE or abs(values[-1]) > MAX_VALUE:
        raise ModelError(f"vary: {path} values must lie between -{MAX_VALUE:.0e} and {MAX_VALUE:.0e}, "
                         f"got {_short(spec)}")
    return path, values


def _short(text, width: int = 60) -> str:
    """``text``, cut to ``width`` characters for a one-line message."""
    text = str(text)
    return text if len(text) <= width else text[:width] + "..."


def model_data(model, sets: Sequence[str] = ()) -> dict:
    """The mapping of the description file ``model`` with ``sets`` applied, read once.

    :func:`plan` and :mod:`spn.studies.sweep` build every configuration from it
    (``parse_description(data, [f"{path}={value}"])``), so that the file is read once
    and every configuration comes from the same text. Raises :class:`ModelError`.

    >>> model_data("models/mapreduce.yaml", ["workload.users=5"])["workload"]
    {'users': 5, 'think_time': 10.0}
    """
    from collections.abc import Mapping

    from spn.description import parse_description
    from spn.description.load import _read_file      # load_description's reader, with its size limits
    from spn.description.overrides import apply_overrides

    source = str(model)
    data = _read_file(source)
    if not isinstance(data, Mapping):
        parse_description(data, source=source)      # raises the reader's own message
    return apply_overrides(data, sets)


# --------------------------------------------------------------------------- the search
def find_boundary(values: Sequence[int], solve: Callable[[int], dict], targets: Sequence[Target], *,
                  largest: bool = False, probes: int = 3, exhaustive: bool = False,
                  on_point: Callable | None = None, path: str = "value",
                  directions: dict | None = None) -> PlanResult:
    """Smallest (or largest) value whose metrics meet every target; checks monotonicity on the way.

    ``solve(value)`` returns ``{metric: seconds}`` for the targets' metrics (their
    :attr:`Target.key`: ``"mean"``, ``"p95"``, ``"dashboard.mean"``...), and for an estimated
    one its interval (``"mean_ci_low"``, ``"mean_ci_high"``): it meets a target only if the
    whole interval does (:func:`spn.studies.plan_result.verdict`). It may add ``"method"`` (how the
    value was solved) and ``"details"`` (kept on the point, :class:`~spn.studies.plan_result.PlanPoint`).
    ``directions``: the metrics whose monotonicity is checked, as
    :func:`~spn.studies.plan_result.monotonicity_evidence` takes them. See the module docstring for the search.

    >>> r = find_boundary(range(1, 11), lambda v: {"mean": (v - 5) ** 2 + 1.0},
    ...                   [parse_target("mean<=2")], probes=3)
    >>> r.answer, r.monotone
    (4, False)
    """
    started = time.perf_counter()
    # a range is searched by index arithmetic, never listed: 1..10**15 costs what 1..1000 does
    if not (isinstance(values, range) and values.step > 0):
        values = tuple(sorted(values))
    if not values:
        raise ModelError("no values to search")
    n = len(values)
    if exhaustive and n > MAX_POINTS:
        raise ModelError(f"an exhaustive search solves every value: {n:,} of them, more than {MAX_POINTS:,}",
                         option="exhaustive")
    if not 0 <= probes <= MAX_PROBES:
        raise ModelError(f"probes: expected 0 to {MAX_PROBES:,}, got {probes!r}")
    targets = tuple(targets)
    cache: dict[int, PlanPoint] = {}

    def index(pos: int) -> int:
        """The index in ``values`` of search position ``pos`` (position 0 is the preferred end)."""
        return n - 1 - pos if largest else pos

    def at(pos: int) -> PlanPoint:
        v = values[index(pos)]
        if v not in cache:
            cache[v] = solved_point(v, solve, targets)
            if on_point is not None:
                on_point(cache[v])
        return cache[v]

    if exhaustive:
        found = next((pos for pos in range(n) if at(pos).met), None)
        for pos in range(n):
            at(pos)
        method = "exhaustive"
    else:
        # both ends and the probes, as search positions (index() maps one to the other both ways)
        probes = min(probes, n)
        seen = sorted({index(i) for i in (0, n - 1, *(round(j * (n - 1) / (probes + 1))
                                                       for j in range(1, probes + 1)))})
        for pos in seen:
            at(pos)
        first = next((pos for pos in seen if at(pos).met), None)
        found = first
        if first is not None and first != 0:
            # bisect between the last solved miss before `first` and `first`
            lo, hi = max(pos for pos in seen if pos < first), first
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if at(mid).met:
                    hi = mid
                else:
                    lo = mid
            found = hi
        method = "bisection"
    answer = neighbour = None
    if found is not None:
        answer = values[index(found)]
        if found > 0:
            neighbour = values[index(found - 1)]
            at(found - 1)          # the search has solved it already: the answer always comes with its neighbour
    points = tuple(cache[v] for v in sorted(cache))
    evidence = monotonicity_evidence(points, targets, largest, path=path, directions=directions)
    return PlanResult(path, values, targets, largest, answer, neighbour, points, not evidence,
                      tuple(evidence), method, time.perf_counter() - started)


def solved_point(value, solve: Callable[[int], dict], targets) -> PlanPoint:
    """``value`` solved by ``solve`` (its metrics, ``method`` and ``details``), judged against ``targets``."""
    started = time.perf_counter()
    metrics = dict(solve(value))
    how = metrics.pop("method", "exact")
    details = metrics.pop("details", {})
    return PlanPoint(value, metrics, verdict(metrics, targets), time.perf_counter() - started, how, details)


def solve_point(desc, targets, *, percentiles=(), method: str = "auto", budget=None) -> dict:
    """The targets' metrics at one configuration (``{"mean": s, "p95": s}``) and the ``method`` that gave them,
    from :func:`spn.pipeline.evaluate_description` (what ``spn solve`` answers). An estimated metric
    (job-alone bounds, a simulation's interval) also gives ``METRIC_ci_low``/``METRIC_ci_high``."""
    from spn.pipeline import Question, evaluate_description

    result = evaluate_description(desc, question=Question(percentiles=tuple(percentiles)), budget=budget,
                                  method=method)
    out = {"method": result.method}
    for metric in {t.metric for t in targets} | {"mean"}:
        out[metric] = result.metric(metric)
        if result.method != "exact":
            out[f"{metric}_ci_low"], out[f"{metric}_ci_high"] = result.metric_interval(metric)
    return out


def plan(model, vary: str, targets: Sequence[str | Target], *, sets: Sequence[str] = (),
         largest: bool = False, probes: int = 3, exhaustive: bool = False, method: str = "auto",
         rtol: float = RTOL, max_states: int = MAX_STATES, progress: bool = False, fallback: bool = True,
         seed=1, rel_precision: float | None = None, max_seconds: float | None = None,
         minimize: str = "value", price=None) -> PlanResult:
    """The smallest (or largest) value of ``vary``'s parameter meeting every target, for a model file.

    Each value is solved by :func:`solve_point` (``seed``, ``rel_precision``, ``max_seconds``: its simulations).
    ``minimize="cost"`` (``vary`` executors or containers, :data:`spn.studies.cost.COSTED_PATHS`) also solves
    every value above the smallest one meeting the targets (at most :data:`MAX_COST_VALUES`) and gives the
    cheapest of them: value x mean execution time, in money at ``price`` (:class:`spn.studies.cost.Price`).

    >>> r = plan("models/mapreduce.yaml", "cluster.containers=1..16", ["mean<=14"])  # doctest: +SKIP
    >>> r.answer, r.neighbour                                                         # doctest: +SKIP
    (4, 3)
    """
    from spn.description import parse_description
    from spn.description.model import require_single_class
    from spn.pipeline import Budget
    from spn.pipeline.source import configure, is_description_file

    from spn.studies.cost import COSTED_PATHS

    path, values = vary_values(vary)
    targets = tuple(t if isinstance(t, Target) else parse_target(t) for t in targets)
    if not targets:
        raise ModelError("give at least one target")
    if minimize not in ("value", "cost"):
        raise ModelError(f"minimize must be 'value' or 'cost', got {minimize!r}", option="minimize")
    if minimize == "cost":
        if path not in COSTED_PATHS:
            raise ModelError(f"a cost counts the hours of what is varied: vary {' or '.join(COSTED_PATHS)}, "
                             f"not {path}", option="minimize")
        if largest:
            raise ModelError("the cheapest configuration is searched above the smallest one meeting the targets: "
                             "it cannot be combined with the largest", option="largest")
    percentiles = sorted({t.percentile for t in targets if t.percentile is not None})
    logs = [model] if isinstance(model, (str, os.PathLike)) else list(model)
    from_logs = not (len(logs) == 1 and is_description_file(logs[0]))
    data = {} if from_logs else model_data(logs[0], sets)

    def describe(v=None):
        if from_logs:       # a pilot's logs: Spark keys apply the what-if rules (spn.pipeline.source)
            desc = configure(logs, [*sets, *([] if v is None else [f"{path}={v}"])])
        else:
            desc = parse_description(data, [] if v is None else [f"{path}={v}"], source=str(model))
        require_single_class(desc, "spn plan --vary " + path,
                             instead="spn plan --vary queues.NAME.capacity=LO..HI --target CLASS.mean<=S")
        return desc

    if data.get("classes"):
        describe()          # a model with query classes is refused here once, not at every value

    # report bad values before solving anything: every value of a list, the two ends of a range
    # (a range is never listed; a bad value inside it stops the search when it is reached)
    checked = values if isinstance(values, list) else sorted({values[0], values[-1]})
    problems = []
    for v in checked:
        try:
            name = describe(v).name
        except ModelError as error:
            problems.append(f"{path}={v}: {error}")
    if problems:
        raise ModelError(problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else []))
    strangers = [str(t) for t in targets if t.query_class not in (None, name)]
    if strangers:
        raise ModelError(f"target: {', '.join(strangers)} names a class, but model {name} has one class, "
                         f"{name!r} (leave the prefix out)")
    # a prefix naming the one class names the model's own metric: "mapreduce.mean" is what solve_point calls "mean"
    targets = tuple(replace(t, query_class=None) for t in targets)

    limits = {name: value for name, value in (("rel_precision", rel_precision), ("max_seconds", max_seconds))
              if value is not None}
    budget = Budget(rtol=rtol, max_states=max_states, seed=seed, progress=progress, **limits)
    if not fallback and method == "auto":
        method = "exact"

    def solve(v):
        try:
            return solve_point(describe(v), targets, percentiles=percentiles, method=method, budget=budget)
        except ConvergenceError:
            raise
        except SpnError as error:
            located = type(error)(f"at {path}={v}: {error}")
            located.option = error.option
            raise located from None

    def show(point):
        if progress:
            metrics = ", ".join(f"{k} {x:.6g} s" for k, x in point.metrics.items())
            print(f"plan: {path}={point.value}: {metrics} ({point.method}) -> {point.verdict} "
                  f"({point.seconds:.2f} s)", file=sys.stderr, flush=True)

    result = replace(find_boundary(values, solve, targets, largest=largest, probes=probes, exhaustive=exhaustive,
                                   on_point=show, path=path), model=name)
    if minimize == "cost":
        result = _cheapest(result, solve, COSTED_PATHS[path], price, show)
    return result


def _cheapest(result: PlanResult, solve, resource: str, price, show) -> PlanResult:
    """``result`` with every value above its answer solved and costed: the cheapest that meets the targets.

    Cost need not fall or rise with the value (a fixed driver time makes more executors dearer, a stage
    that spills on few makes them cheaper), so every value from the answer up is solved, not bisected.
    """
    from spn.studies.cost import cheapest, run_cost

    if result.answer is None:
        return replace(result, resource=resource, price=price)
    values = result.values
    above = values[values.index(result.answer):]
    if len(above) > MAX_COST_VALUES:
        raise ModelError(f"the cheapest configuration: {len(above):,} values from {result.answer} to {values[-1]} "
                         f"to solve, more than {MAX_COST_VALUES}; give the values to compare as a list "
                         f"(--vary {result.path}=V1,V2,...)", option="vary")
    started = time.perf_counter()
    cache = {p.value: p for p in result.points}
    for v in above:
        if v not in cache:
            cache[v] = solved_point(v, solve, result.targets)
            show(cache[v])
    points = tuple(cache[v] for v in sorted(cache))
    costs = tuple(run_cost(p.value, p.metrics["mean"], price) for p in points if p.met)
    best = cheapest(costs)
    evidence = tuple(monotonicity_evidence(points, result.targets, result.largest, path=result.path))
    return replace(result, points=points, evidence=evidence, monotone=not evidence, costs=costs,
                   cheapest=None if best is None else best.executors, price=price, resource=resource,
                   seconds=result.seconds + time.perf_counter() - started)
