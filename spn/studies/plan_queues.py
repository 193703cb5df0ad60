"""Capacity planning of queue shares: the smallest share of a queue that meets a class's target.

``spn plan two-queues.yaml --vary queues.bi.capacity=0.05..0.95 --target dashboard.mean<=4.9``
answers "what share of the cluster must queue bi be guaranteed so that the dashboard
queries stay under 4.9 s?" for a description with query classes (docs/design.md §4.6, §5.7).
Each probe is the pipeline's simulation (``spn solve --method simulation``: the queue simulator),
and the search must live with noise:

- **Probes.** A share matters only through containers (the queue is guaranteed
  share · C and may hold floor(max_capacity · C)), so the shares searched are the grid k/C,
  k = 1..C-1, that lies in LO..HI. Capacities must sum to 1: with two queues the other one
  gets 1 - share; with more, the others are scaled in proportion to their capacities in the
  model. A queue whose capacity would exceed its ``max_capacity`` has the maximum raised to
  the capacity for that probe (a probe note says so): YARN requires max >= capacity, and
  raising the ceiling is the smallest change that keeps the probe a valid configuration.
- **Decision rule** (:func:`spn.studies.plan_result.verdict`, as for any estimated value). A target
  is met at a probe only if the whole 95 % interval of the class's R_c is within the bound, missed
  only if the whole interval is outside; an interval straddling the bound sends the probe back for
  more replications (a finer relative precision, down to ``refine_to``) and, if it still straddles,
  the probe is *undecided*: reported as such, never counted as met.
- **Search.** :func:`spn.studies.plan.find_boundary`'s bisection over the grid (both ends, then
  halves; no interior probes), assuming more share never hurts the classes of the
  varied queue (so the smallest share meeting a target on one of them is wanted) and never
  helps the classes of the other queues (a target on those asks for the *largest* share of
  the varied queue). The probes evaluated check that assumption
  (:func:`spn.studies.plan_result.monotonicity_evidence`, on every class): a class's interval
  moving the wrong way, or the targets met at one share and missed at one more helpful, is evidence.
- **Common random numbers.** Every probe uses the same ``seed``, so replication i of every
  probe draws from the same stream: differences between probes are the share's, not noise's.

The answer is a :class:`~spn.studies.plan_result.PlanResult`, as for one parameter: its values are
the shares, and its ``queue`` (:class:`~spn.studies.plan_result.QueueShare`) the queue varied.

>>> share_grid(0.3, 0.8, containers=4)
(0.5, 0.75)
>>> from spn.description.model import Queue
>>> probe_queues((Queue("a", 0.5), Queue("b", 0.3, 0.4), Queue("c", 0.2)), "c", 0.6)[0]
{'a': (0.25, 1.0), 'b': (0.15, 0.4), 'c': (0.6, 1.0)}
"""

from __future__ import annotations

import copy
import math
import re
import sys
import time
from dataclasses import replace

from spn.studies.plan import Target, find_boundary, model_data
from spn.studies.plan_result import UNDECIDED, PlanResult, QueueShare, shown, target_verdict, verdict
from spn.exceptions import ModelError, SpnError

__all__ = ["is_queue_share", "parse_share_vary", "share_grid", "probe_queues", "plan_queue_share", "REL_PRECISION"]

#: relative half-width of the 95 % interval of every class's R_c at a first evaluation
REL_PRECISION = 0.01
#: a straddling probe is refined down to this fraction of ``rel_precision`` (16 times the replications)
REFINE_FACTOR = 0.25

_PATH = re.compile(r"^queues\.(.+)\.capacity$")


# --------------------------------------------------------------------------- the question
def is_queue_share(vary: str) -> bool:
    """Does ``--vary`` ask for a queue's capacity (``queues.NAME.capacity=LO..HI``)?

    >>> is_queue_share("queues.bi.capacity=0.1..0.9"), is_queue_share("cluster.containers=1..9")
    (True, False)
    """
    return bool(_PATH.match(str(vary).partition("=")[0].strip()))


def parse_share_vary(text: str) -> tuple[str, float, float]:
    """``queues.NAME.capacity=LO..HI`` -> (NAME, LO, HI), shares in (0, 1).

    >>> parse_share_vary("queues.bi.capacity=0.1..0.9")
    ('bi', 0.1, 0.9)
    """
    path, _, spec = str(text).partition("=")
    match = _PATH.match(path.strip())
    if not match or ".." not in spec:
        raise ModelError(f"vary: expected queues.NAME.capacity=LO..HI with shares in (0, 1), got {text!r}")
    try:
        lo, hi = (float(x) for x in spec.split("..", 1))
    except ValueError:
        raise ModelError(f"vary: the shares must be numbers in (0, 1), got {spec.strip()!r}") from None
    for share in (lo, hi):
        if not 0 < share < 1:      # also refuses nan
            raise ModelError(f"vary: a queue's share must lie in (0, 1) (the other queues need some), got {share:g}")
    if hi < lo:
        raise ModelError(f"vary: empty range {spec.strip()!r} (LO must be <= HI)")
    return match.group(1), lo, hi


def share_grid(lo: float, hi: float, containers: int) -> tuple[float, ...]:
    """The shares k/C (k = 1..C-1) in ``lo..hi``: between two of them the containers are the same."""
    eps = 1e-12
    return tuple(k / containers for k in range(1, containers) if lo - eps <= k / containers <= hi + eps)


def probe_queues(queues, varied: str, share: float) -> tuple[dict, list]:
    """Every queue's (capacity, max_capacity) when ``varied`` gets ``share``, and notes on raised maxima.

    Two queues: the other gets 1 - share. More: the others keep their proportions.
    """
    rest = sum(q.capacity for q in queues if q.name != varied)
    out, notes = {}, []
    for q in queues:
        if q.name == varied:
            capacity = share
        else:
            capacity = 1.0 - share if len(queues) == 2 else q.capacity * (1.0 - share) / rest
        ceiling = q.max_capacity
        if ceiling < capacity:
            if capacity - ceiling > 1e-9:
                notes.append(f"{q.name}.max_capacity raised from {ceiling:g} to {capacity:.4g} (its capacity)")
            ceiling = capacity
        out[q.name] = (capacity, ceiling)
    return out, notes


# --------------------------------------------------------------------------- the plan
def plan_queue_share(model, vary: str, targets, *, sets=(), seed: int = 1, rel_precision: float = REL_PRECISION,
                     refine_to: float | None = None, max_seconds: float | None = 60.0,
                     progress: bool = False) -> PlanResult:
    """The smallest share of a queue meeting every target (see the module docstring).

    ``targets``: :class:`~spn.studies.plan.Target` (or text) naming classes, means only.
    ``refine_to``: the finest relative precision a straddling probe is refined to (default
    ``rel_precision / 4``); ``max_seconds`` bounds each simulation. The result's values are the
    shares, its ``queue`` the varied queue; each point's metrics are every class's R_c
    (``dashboard.mean`` and its interval), its ``details`` the probe's queues and replications.

    >>> r = plan_queue_share("models/two-queues.yaml", "queues.bi.capacity=0.05..0.95",
    ...                      ["dashboard.mean<=4.9"])                                  # doctest: +SKIP
    >>> r.answer, r.queue.guaranteed(r.answer)                                         # doctest: +SKIP
    (0.375, 6)
    """
    from spn.studies.plan import parse_target
    from spn.description import parse_description
    from spn.description.model import queues_of

    name, lo, hi = parse_share_vary(vary)
    targets = tuple(t if isinstance(t, Target) else parse_target(t) for t in targets)
    refine_to = rel_precision * REFINE_FACTOR if refine_to is None else refine_to
    if not targets:
        raise ModelError("give at least one target")
    if not 0 < refine_to <= rel_precision:
        raise ModelError(f"refine_to {refine_to:g} must lie in (0, rel_precision {rel_precision:g}]",
                         option="refine_to")
    data = model_data(model, sets)
    base = parse_description(data, source=str(model))
    queues, classes = queues_of(base), {c.name: c for c in base.classes}
    if not base.queues:
        raise ModelError(f"vary: model {base.name} has no queues to share (queues.{name}.capacity needs a "
                         f"description with classes and queues, docs/design.md §4.6)")
    index = next((i for i, q in enumerate(queues) if q.name == name), None)
    if index is None and name.isdigit() and int(name) < len(queues):
        index = int(name)
    if index is None:
        raise ModelError(f"vary: unknown queue {name!r} in queues.{name}.capacity "
                         f"(queues: {', '.join(q.name for q in queues)})")
    queue = queues[index].name
    problems = [_target_problem(t, classes) for t in targets]
    if any(problems):
        raise ModelError([p for p in problems if p])
    helped = {classes[t.query_class].queue == queue for t in targets}
    if len(helped) > 1:
        raise ModelError(f"target: {', '.join(map(str, targets))} mix classes of queue {queue} (which want the "
                         f"smallest share) with classes of other queues (which want the largest): plan them apart")
    largest = helped == {False}
    C = base.cluster.containers
    grid = share_grid(lo, hi, C)
    if not grid:
        raise ModelError(f"vary: no share k/{C} (a whole number of the {C} containers) lies in {lo:g}..{hi:g}")

    started = time.perf_counter()
    seed = int(seed)
    path = f"queues.{queue}.capacity"

    def solve(share: float) -> dict:
        """Simulate ``share``: every class's R_c and its interval, as the search reads them, and the probe's details."""
        layout, notes = probe_queues(queues, queue, share)
        probe_data = copy.deepcopy(data)
        for item, q in zip(probe_data["queues"], queues):   # parsed in list order
            item["capacity"], item["max_capacity"] = layout[q.name]
        try:
            desc = parse_description(probe_data, source=str(model))
            metrics, how = _simulate(desc, targets, seed=seed, rel_precision=rel_precision, refine_to=refine_to,
                                     max_seconds=max_seconds)
        except SpnError as error:
            located = type(error)(f"at {path}={share:.4g}: {error}")
            located.option = error.option
            raise located from None
        details = {"guaranteed_containers": round(share * C), "capacities": {q: c for q, (c, _) in layout.items()},
                   "max_capacities": {q: m for q, (_, m) in layout.items()}, "notes": notes, **how}
        return {"method": "simulation", **metrics, "details": details}

    def show(point):
        if progress:
            print(f"plan: {path}={shown(point.value)}: {point.verdict} ({point.details['replications']} "
                  f"replications, {point.seconds:.1f} s)", file=sys.stderr, flush=True)

    # plan's search over the grid, without interior probes: both ends, then bisection (an undecided
    # probe is "not shown to meet", so the answer is always a probe that met). More share never hurts
    # the classes of the varied queue and never helps the others': the monotone assumption to check.
    directions = {f"{c}.mean": -1 if query_class.queue == queue else 1 for c, query_class in classes.items()}
    result = find_boundary(grid, solve, targets, largest=largest, probes=0, on_point=show, path=path,
                           directions=directions)
    return replace(result, model=base.name, queue=QueueShare(queue, C, grid, rel_precision, refine_to, seed),
                   seconds=time.perf_counter() - started)


def _target_problem(target: Target, classes: dict) -> str | None:
    if target.query_class is None:
        return (f"target {target}: name the class, e.g. {next(iter(classes))}.{target.metric}"
                f"{target.op}{target.bound:g} (classes: {', '.join(classes)})")
    if target.query_class not in classes:
        return f"target {target}: unknown class {target.query_class!r} (classes: {', '.join(classes)})"
    if target.metric != "mean":
        return (f"target {target}: a queue plan simulates, and its simulation estimates mean execution times "
                f"only (use CLASS.mean<=S)")
    return None


def _simulate(desc, targets, *, seed, rel_precision, refine_to, max_seconds) -> tuple[dict, dict]:
    """Simulate one share, refined while a target's interval straddles its bound (the decision rule).

    Returns every class's R_c with its interval (``dashboard.mean``, ``dashboard.mean_ci_low``...) and how
    it was reached: the replications, the last precision asked (finer than ``rel_precision`` after
    ``refinements``).
    """
    from spn.pipeline import Budget, evaluate_description

    precision, refinements = rel_precision, 0
    while True:
        report = evaluate_description(desc, budget=Budget(rel_precision=precision, seed=seed, max_seconds=max_seconds),
                                      method="simulation").report.simulation
        metrics = {}
        for name, c in report.classes.items():
            r = c["mean_execution_time"]
            metrics |= {f"{name}.mean": r.value, f"{name}.mean_ci_low": r.ci_low, f"{name}.mean_ci_high": r.ci_high}
        if verdict(metrics, targets) != UNDECIDED or precision <= refine_to * (1 + 1e-9) or not report.precision_met:
            break
        # ask for the precision that would decide the closest straddling target, at least halving it
        gaps = [abs(metrics[t.key] - t.bound) / abs(metrics[t.key])
                for t in targets if target_verdict(metrics, t) == UNDECIDED and metrics[t.key]]
        gap = min(gaps, default=0.0) if all(math.isfinite(g) for g in gaps) else 0.0
        precision = max(refine_to, min(precision / 2, 0.8 * gap))
        refinements += 1
    return metrics, {"replications": report.replications, "rel_precision": precision, "refinements": refinements}
