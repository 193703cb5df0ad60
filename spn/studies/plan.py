"""Capacity planning: the smallest value of a parameter, or share of a queue, meeting a target.

Each value is solved by :func:`spn.pipeline.evaluate_description`, as ``spn solve`` would (the mean
and, for percentile targets, the tagged job's distribution; with query classes every class's mean);
a simulated value whose interval straddles a bound is refined before it is called undecided
(:func:`solve_point`). A queue's share (``queues.NAME.capacity=LO..HI``) is one more parameter
(:func:`share_plan`). :func:`plan` finds the smallest value of one parameter (``--vary
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

>>> from spn.studies.targets import parse_target
>>> find_boundary([1, 2, 3, 4, 5, 6, 7, 8], lambda v: {"mean": 100.0 / v},
...               [parse_target("mean<=20")]).answer
5
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from spn.defaults import MAX_STATES, RTOL, SEED
from spn.exceptions import ConvergenceError, ModelError, SpnError
from spn.studies.plan_result import (UNDECIDED, PlanPoint, PlanResult, QueueShare, monotonicity_evidence, shown,
                                     target_verdict, verdict)
from spn.studies.targets import MAX_POINTS, Target, parse_share_vary, parse_target, targets_for, vary_values

__all__ = ["plan", "find_boundary", "solve_point", "solved_point", "model_data", "share_plan", "SharePlan",
           "REFINE_FACTOR", "MAX_PROBES", "MAX_COST_VALUES"]

#: interior values a plan solves before bisecting
MAX_PROBES = 1_000
#: the most values above the smallest meeting the targets that a search for the cheapest solves
MAX_COST_VALUES = 200
#: a simulated value whose interval straddles a bound is refined down to this fraction of ``rel_precision``
#: (16 times the replications) before it is called undecided
REFINE_FACTOR = 0.25


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


# --------------------------------------------------------------------------- a queue's share
@dataclass(frozen=True)
class SharePlan:
    """A plan over a queue's share (``--vary queues.NAME.capacity=LO..HI``), for a description with queues.

    A share matters only through containers (the queue is guaranteed share · C and may hold
    floor(max_capacity · C)), so its values are the shares k/C in LO..HI; each share's configuration
    is the model with the other queues sharing the rest (:func:`spn.description.shares.rebalance`).
    More share never hurts the classes of the varied queue and never helps the others': a target on
    the queue's classes asks for the smallest share, a target on another queue's for the largest,
    and every class's mean is checked for that direction (``directions``).
    """

    path: str
    grid: tuple
    queue: QueueShare
    largest: bool
    directions: dict
    data: dict = field(repr=False)
    position: int = 0
    before: tuple = ()
    source: str = ""

    def describe(self, share: float):
        from spn.description import parse_description
        from spn.description.overrides import apply_overrides
        from spn.description.shares import rebalance

        data = rebalance(apply_overrides(self.data, [f"{self.path}={share!r}"]), (self.position,))
        return parse_description(data, source=self.source)

    def details(self, desc) -> dict:
        """What a share's configuration was: its guaranteed containers, every queue's capacity and maximum,
        and notes on the maxima raised."""
        from spn.description.model import queues_of
        from spn.description.shares import raised_maxima

        after = queues_of(desc)
        return {"guaranteed_containers": self.queue.guaranteed(after[self.position].capacity),
                "capacities": {q.name: q.capacity for q in after},
                "max_capacities": {q.name: q.max_capacity for q in after},
                "notes": raised_maxima(self.before, after)}


def share_plan(data, vary: str, targets, largest: bool = False, *, source: str = "") -> SharePlan | None:
    """The :class:`SharePlan` of ``vary`` on the description mapping ``data``, or None when ``vary`` is not a
    queue's share.

    >>> import yaml
    >>> p = share_plan(yaml.safe_load(open("models/two-queues.yaml")), "queues.bi.capacity=0.2..0.6",
    ...                [parse_target("dashboard.mean<=5")])
    >>> p.grid, p.largest, p.queue.name
    ((0.25, 0.3125, 0.375, 0.4375, 0.5, 0.5625), False, 'bi')
    """
    from spn.description import parse_description
    from spn.description.model import job_classes, queues_of
    from spn.description.shares import share_grid

    parsed = parse_share_vary(vary)
    if parsed is None:
        return None
    name, lo, hi = parsed
    base = parse_description(data, source=source)
    queues = queues_of(base)
    if not base.queues:
        raise ModelError(f"vary: model {base.name} has no queues to share (queues.{name}.capacity needs a "
                         f"description with classes and queues, docs/design.md §4.6)")
    position = next((i for i, q in enumerate(queues) if q.name == name), None)
    if position is None and name.isdigit() and int(name) < len(queues):
        position = int(name)
    if position is None:
        raise ModelError(f"vary: unknown queue {name!r} in queues.{name}.capacity "
                         f"(queues: {', '.join(q.name for q in queues)})")
    queue = queues[position].name
    classes = {c.name: c for c in job_classes(base)}
    helped = {classes[t.query_class].queue == queue for t in targets_for(base, targets)}
    if len(helped) > 1:
        raise ModelError(f"target: {', '.join(map(str, targets))} mix classes of queue {queue} (which want the "
                         f"smallest share) with classes of other queues (which want the largest): plan them apart")
    if largest:
        raise ModelError("largest: a queue-share plan takes the direction from the targets' classes (smallest "
                         "share for a class of the queue, largest for the others)", option="largest")
    C = base.cluster.containers
    grid = share_grid(lo, hi, C)
    if not grid:
        raise ModelError(f"vary: no share k/{C} (a whole number of the {C} containers) lies in {lo:g}..{hi:g}")
    directions = {f"{c}.mean": -1 if query_class.queue == queue else 1 for c, query_class in classes.items()}
    return SharePlan(f"queues.{queue}.capacity", grid, QueueShare(queue, C, grid), helped == {False}, directions,
                     data, position, queues, source)


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


def solve_point(desc, targets, *, percentiles=(), method: str = "auto", budget=None,
                refine_to: float | None = None) -> dict:
    """The targets' metrics at one configuration and the ``method`` that gave them, from
    :func:`spn.pipeline.evaluate_description` (what ``spn solve`` answers).

    One class: ``{"mean": s, "p95": s}``; query classes: every class's mean, ``{"dashboard.mean": s, ...}``
    (the planner sees what the other classes pay, not only the targets'). An estimated metric
    (job-alone bounds, a simulation's interval) also gives ``METRIC_ci_low``/``METRIC_ci_high``.
    A simulation whose interval straddles a target's bound is run again to a finer precision, down
    to ``refine_to`` (None: never), before the value is called undecided; ``details`` then says the
    replications, the last precision asked and the ``refinements``.

    Where the decomposition applies, it is asked first at whatever error it has (a second or less,
    where a simulation to ``rel_precision`` takes seconds to minutes): a value its interval puts
    wholly on one side of every bound is decided; one it leaves straddling is solved as above.
    """
    from spn.pipeline import Budget, Question, evaluate_description
    from spn.pipeline.methods import Decomposition

    budget = budget or Budget()
    question = Question(percentiles=tuple(percentiles))
    if method == "auto" and Decomposition().applies(desc, question) is None:
        result = evaluate_description(desc, question=question, budget=replace(budget, rel_precision=1.0), method=method)
        out = _metrics(result, targets)
        if result.method != "simulation" and all(target_verdict(out, t) != UNDECIDED for t in targets):
            return out
    precision, refinements = budget.rel_precision, 0
    while True:
        result = evaluate_description(desc, question=question,
                                      budget=replace(budget, rel_precision=precision), method=method)
        out = _metrics(result, targets)
        if result.method != "simulation":
            return out
        straddling = [t for t in targets if target_verdict(out, t) == UNDECIDED]
        if (not straddling or refine_to is None or precision <= refine_to * (1 + 1e-9)
                or not result.details.get("precision_met", True)):
            break
        # ask for the precision that would decide the closest straddling target, at least halving it
        gaps = [abs(out[t.key] - t.bound) / abs(out[t.key]) if out[t.key] else 0.0 for t in straddling]
        gap = min(gaps) if all(math.isfinite(g) for g in gaps) else 0.0
        precision = max(refine_to, min(precision / 2, 0.8 * gap))
        refinements += 1
    out["details"] = {"replications": result.details.get("replications"), "rel_precision": precision,
                      "refinements": refinements}
    return out


def _metrics(result, targets) -> dict:
    """The metrics a plan judges, read from a :class:`spn.pipeline.Result` (see :func:`solve_point`)."""
    out = {"method": result.method}
    estimated = result.method != "exact"
    if "classes" in result.details:
        for name, c in result.details["classes"].items():
            out[f"{name}.mean"] = c["mean_execution_time"]
            if estimated:
                out[f"{name}.mean_ci_low"], out[f"{name}.mean_ci_high"] = c["ci_low"], c["ci_high"]
        return out
    for metric in {t.metric for t in targets} | {"mean"}:
        out[metric] = result.metric(metric)
        if estimated:
            out[f"{metric}_ci_low"], out[f"{metric}_ci_high"] = result.metric_interval(metric)
    return out


def plan(model, vary: str, targets: Sequence[str | Target], *, sets: Sequence[str] = (),
         largest: bool = False, probes: int = 3, exhaustive: bool = False, method: str = "auto",
         rtol: float = RTOL, max_states: int = MAX_STATES, progress: bool = False, fallback: bool = True,
         seed=SEED, rel_precision: float | None = None, refine_to: float | None = None,
         max_seconds: float | None = None, minimize: str = "value", price=None) -> PlanResult:
    """The smallest (or largest) value of ``vary``'s parameter meeting every target, for a model file
    (or a pilot's logs, whose Spark keys apply the what-if rules).

    Each value is solved by :func:`solve_point` (``seed``, ``rel_precision``, ``max_seconds``: its
    simulations; the same seed at every value, so differences between values are theirs, not noise's;
    a simulated value straddling a bound is refined down to ``refine_to``, by default ``rel_precision / 4``).
    ``vary`` is ``PATH=LO..HI`` or ``PATH=V1,V2,...`` of integers, or a queue's share
    ``queues.NAME.capacity=LO..HI`` (see :func:`share_plan`). ``minimize="cost"`` (``vary`` executors or
    containers, :data:`spn.studies.cost.COSTED_PATHS`) also solves every value above the smallest one
    meeting the targets (at most :data:`MAX_COST_VALUES`) and gives the cheapest of them: value x mean
    execution time, in money at ``price`` (:class:`spn.studies.cost.Price`).

    >>> r = plan("models/mapreduce.yaml", "cluster.containers=1..16", ["mean<=14"])  # doctest: +SKIP
    >>> r.answer, r.neighbour                                                         # doctest: +SKIP
    (4, 3)
    """
    from spn.description import parse_description
    from spn.pipeline import Budget
    from spn.pipeline.source import configure, is_description_file

    from spn.studies.cost import COSTED_PATHS

    targets = tuple(t if isinstance(t, Target) else parse_target(t) for t in targets)
    if not targets:
        raise ModelError("give at least one target")
    if minimize not in ("value", "cost"):
        raise ModelError(f"minimize must be 'value' or 'cost', got {minimize!r}", option="minimize")
    logs = [model] if isinstance(model, (str, os.PathLike)) else list(model)
    from_logs = not (len(logs) == 1 and is_description_file(logs[0]))
    data = {} if from_logs else model_data(logs[0], sets)
    if from_logs and parse_share_vary(vary) is not None:
        raise ModelError("vary: a model fitted from logs has one class and no queues to share (a queue's share "
                         "needs a description with classes and queues, docs/design.md §4.6)")
    share = None if from_logs else share_plan(data, vary, targets, largest, source=str(model))
    path, values = (share.path, share.grid) if share else vary_values(vary)
    if minimize == "cost":
        if path not in COSTED_PATHS:
            raise ModelError(f"a cost counts the hours of what is varied: vary {' or '.join(COSTED_PATHS)}, "
                             f"not {path}", option="minimize")
        if largest:
            raise ModelError("the cheapest configuration is searched above the smallest one meeting the targets: "
                             "it cannot be combined with the largest", option="largest")
    percentiles = sorted({t.percentile for t in targets if t.percentile is not None})

    def describe(v):
        if from_logs:       # a pilot's logs: Spark keys apply the what-if rules (spn.pipeline.source)
            return configure(logs, [*sets, f"{path}={v}"])
        if share:
            return share.describe(v)
        return parse_description(data, [f"{path}={v}"], source=str(model))

    # report bad values before solving anything: every value of a list, the two ends of a range
    # (a range is never listed; a bad value inside it stops the search when it is reached)
    checked = values if isinstance(values, (list, tuple)) else sorted({values[0], values[-1]})
    problems = []
    for v in checked:
        try:
            reference = describe(v)
        except ModelError as error:
            problems.append(f"{path}={shown(v)}: {error}")
    if problems:
        raise ModelError(problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else []))
    targets = targets_for(reference, targets)
    if share is not None:
        largest = share.largest

    limits = {name: value for name, value in (("rel_precision", rel_precision), ("max_seconds", max_seconds))
              if value is not None}
    budget = Budget(rtol=rtol, max_states=max_states, seed=seed, progress=progress, **limits)
    refine_to = budget.rel_precision * REFINE_FACTOR if refine_to is None else refine_to
    if not 0 < refine_to <= budget.rel_precision:
        raise ModelError(f"refine_to {refine_to:g} must lie in (0, rel_precision {budget.rel_precision:g}]",
                         option="refine_to")
    if not fallback and method == "auto":
        method = "exact"

    # shares differ only in the queues' gates: every share's chain has the same places, classes and users.
    # Once one share's chain was not solved exactly, the others are answered by the method that answered
    # it instead of exploring again (each exploration may take half the budget before it is abandoned).
    answered_by = {}        # the method and value of the first share not solved exactly

    def solve(v):
        chosen = answered_by.get("method", method)
        try:
            desc = describe(v)
            point = solve_point(desc, targets, percentiles=percentiles, method=chosen, budget=budget,
                                refine_to=refine_to)
        except ConvergenceError:
            raise
        except SpnError as error:
            located = type(error)(f"at {path}={shown(v)}: {error}")
            located.option = error.option
            raise located from None
        if share:
            point["details"] = share.details(desc) | point.get("details", {})
            if chosen != method:
                point["details"]["notes"] = [*point["details"]["notes"], f"not explored: the chain at "
                                             f"{path}={shown(answered_by['at'])} was not solved exactly"]
            elif method == "auto" and point["method"] != "exact":
                answered_by.update(method=point["method"], at=v)
        return point

    def show(point):
        if progress:
            metrics = ", ".join(f"{k} {x:.6g} s" for k, x in point.metrics.items()
                                if not k.endswith(("_ci_low", "_ci_high")))
            print(f"plan: {path}={shown(point.value)}: {metrics} ({point.method}) -> {point.verdict} "
                  f"({point.seconds:.2f} s)", file=sys.stderr, flush=True)

    result = find_boundary(values, solve, targets, largest=largest, probes=probes, exhaustive=exhaustive,
                           on_point=show, path=path, directions=share.directions if share else None)
    result = replace(result, model=reference.name, queue=share.queue if share else None,
                     simulation={"rel_precision": budget.rel_precision, "refine_to": refine_to, "seed": seed})
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
