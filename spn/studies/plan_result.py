"""What a capacity plan found, and how far to trust it: the points solved, their verdicts, the evidence.

:func:`spn.studies.plan.plan` gives a :class:`PlanResult`, over any parameter; over a queue's share
it adds :class:`QueueShare`. Two rules decide what a plan may claim:

- **The decision rule** (:func:`verdict`). A target is *met* at a value only if its metric's whole
  interval is within the bound, *missed* only if the whole interval is outside, and *undecided*
  otherwise; an exact value's interval is the value itself. Nothing undecided counts as met.
- **The monotone assumption** (:func:`monotonicity_evidence`). The search bisects, so it assumes that
  the values meeting the targets lie on one side of the answer. Every target is an upper bound, so a
  search for the smallest value assumes its metric never rises as the value grows (for the largest:
  never falls). A move the wrong way is evidence only if it is significant: the two values'
  intervals do not overlap. Targets met at one value and missed at one further from the preferred
  end are evidence too.

>>> from spn.studies.targets import parse_target
>>> verdict({"mean": 9.0, "mean_ci_low": 8.0, "mean_ci_high": 10.0}, [parse_target("mean<=9.5")])
'undecided'
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MET", "MISSED", "UNDECIDED", "verdict", "target_verdict", "monotonicity_evidence", "shown",
           "PlanPoint", "QueueShare", "PlanResult"]

#: verdicts of a value on the targets
MET, MISSED, UNDECIDED = "met", "missed", "undecided"
#: exact values closer than this (relative) are equal: a solver's tolerance is not a trend
EXACT_RTOL = 1e-9


# --------------------------------------------------------------------------- judging one value
def _interval(metrics: dict, key: str) -> tuple[float, float]:
    """The metric's interval: ``KEY_ci_low``..``KEY_ci_high`` when estimated, the value itself when exact."""
    value = metrics[key]
    return metrics.get(f"{key}_ci_low", value), metrics.get(f"{key}_ci_high", value)


def target_verdict(metrics: dict, target) -> str:
    """``met`` if the metric's whole interval is within ``target``'s bound, ``missed`` if wholly outside."""
    low, high = _interval(metrics, target.key)
    if target.met(high):
        return MET
    if not target.met(low):
        return MISSED
    return UNDECIDED


def verdict(metrics: dict, targets) -> str:
    """Every target met: ``met``; one missed: ``missed``; otherwise ``undecided``."""
    verdicts = {target_verdict(metrics, t) for t in targets}
    return MISSED if MISSED in verdicts else UNDECIDED if UNDECIDED in verdicts else MET


def shown(value) -> str:
    """A value as the summary and the tables print it: an integer whole, a share to four digits.

    >>> shown(12), shown(0.3125), shown(1 / 3)
    ('12', '0.3125', '0.3333')
    """
    return f"{value:.4g}" if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- the monotone assumption
def monotonicity_evidence(points, targets, largest: bool, *, path: str = "value",
                          directions: dict | None = None) -> list[str]:
    """Where the solved ``points`` (in increasing order) contradict the monotone assumption.

    ``directions`` ({metric key: -1, never rises as the value grows; +1, never falls}) says which
    metrics to check; by default the targets' (-1 for the smallest value, +1 for the largest). A queue
    plan also checks the classes that have no target.

    >>> from spn.studies.targets import parse_target
    >>> points = [PlanPoint(v, {"mean": m}, MET) for v, m in ((1, 9.0), (2, 7.0), (3, 8.0))]
    >>> monotonicity_evidence(points, [parse_target("mean<=10")], largest=False, path="x")
    ['mean rises from 7 s at x=2 to 8 s at 3, though it should never rise as x grows']
    """
    if directions is None:
        directions = {t.key: 1 if largest else -1 for t in targets}
    evidence = []
    for key, direction in directions.items():
        pair = _wrong_way(points, key, direction)
        if pair is not None:
            a, b = pair
            wrong = "rises" if direction < 0 else "falls"
            evidence.append(f"{key} {wrong} from {_seconds(a.metrics, key)} s at {path}={shown(a.value)} to "
                            f"{_seconds(b.metrics, key)} s at {shown(b.value)}, though it should never "
                            f"{wrong[:-1]} as {path} grows")
    # in the search's order of preference, decided values should go missed..., met...: a met before a miss is not
    decided = [p for p in (reversed(points) if largest else points) if p.verdict != UNDECIDED]
    met = next((a for a, p in enumerate(decided) if p.met), None)
    missed = None if met is None else next((p for p in decided[met + 1:] if p.verdict == MISSED), None)
    if missed is not None:
        evidence.append(f"the targets are met at {path}={shown(decided[met].value)} but missed at "
                        f"{shown(missed.value)}")
    return evidence


def _wrong_way(points, key: str, direction: int):
    """The first pair (a, b), a before b, where ``key`` moves significantly against ``direction``, or None.

    One pass: each point is compared with the earlier one that went furthest the right way (the lowest
    interval top when the metric must not rise), so a slow drift that no two neighbours show is found too.
    """
    best = None
    for b in points:
        low, high = _interval(b.metrics, key)
        if best is None:
            best = b
            continue
        best_low, best_high = _interval(best.metrics, key)
        gap = low - best_high if direction < 0 else best_low - high
        if gap > EXACT_RTOL * max(abs(low), abs(high), abs(best_low), abs(best_high)):
            return best, b
        if (high < best_high) if direction < 0 else (low > best_low):
            best = b
    return None


def _seconds(metrics: dict, key: str) -> str:
    """An exact value as ``12.5``, an estimated one as its interval ``[12.1, 12.9]``."""
    if f"{key}_ci_low" not in metrics:
        return f"{metrics[key]:.6g}"
    low, high = _interval(metrics, key)
    return f"[{low:.4g}, {high:.4g}]"


# --------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class PlanPoint:
    """A solved value: its metrics (an estimated one adds ``KEY_ci_low``/``KEY_ci_high``), its verdict on the
    targets, the seconds it took, its method, and ``details`` the plan adds (a queue share: its guaranteed
    containers, capacities, replications...)."""

    value: int | float
    metrics: dict
    verdict: str
    seconds: float = 0.0
    method: str = "exact"
    details: dict = field(default_factory=dict)

    @property
    def met(self) -> bool:
        return self.verdict == MET

    def as_dict(self) -> dict:
        return {"value": self.value, **self.metrics, "met": self.met, "verdict": self.verdict, "method": self.method,
                "seconds": self.seconds, **self.details}


@dataclass(frozen=True)
class QueueShare:
    """The queue a queue-share plan varies: its values are the shares k/``containers`` of the ``grid``."""

    name: str
    containers: int
    grid: tuple

    def guaranteed(self, share: float) -> int:
        """The containers ``share`` guarantees the queue."""
        return round(share * self.containers)

    def as_dict(self) -> dict:
        return {"name": self.name, "containers": self.containers, "grid": list(self.grid)}


@dataclass(frozen=True)
class PlanResult:
    """What a plan found.

    ``values``: the values searched (a :class:`range` or a tuple); ``answer``: the
    smallest (``largest=True``: largest) value meeting every
    target, or None; ``neighbour``: the value just below (above) it, which was
    solved and not shown to meet them, missed or undecided (None when the answer is an end of the range);
    ``points``: every value solved, in increasing order; ``monotone``: no
    evidence against monotonicity among them; ``evidence``: what was seen
    otherwise; ``method``: ``bisection`` or ``exhaustive``; ``model``: the model's name.
    """

    path: str
    values: tuple
    targets: tuple
    largest: bool
    answer: int | float | None
    neighbour: int | float | None
    points: tuple
    monotone: bool
    evidence: tuple
    method: str
    seconds: float = 0.0
    model: str | None = None
    #: a queue-share plan: the queue whose share is varied (its values are shares)
    queue: QueueShare | None = None
    #: how a value that simulates is simulated: ``rel_precision`` of its 95 % intervals, refined down to
    #: ``refine_to`` when one straddles a bound, the same ``seed`` at every value (common random numbers)
    simulation: dict | None = None
    #: ``minimize="cost"``: the cost of every value solved that meets the targets (:mod:`spn.studies.cost`),
    #: the cheapest value, the price and the priced resource (``executor``, ``container``)
    costs: tuple = ()
    cheapest: int | None = None
    price: object = None
    resource: str | None = None

    def point(self, value) -> PlanPoint | None:
        return next((p for p in self.points if p.value == value), None)

    def summary(self) -> str:
        """One or two sentences: the answer and how much to trust it."""
        what = "largest" if self.largest else "smallest"
        targets = " and ".join(str(t) for t in self.targets)
        lo, hi = shown(self.values[0]), shown(self.values[-1])
        undecided = [shown(p.value) for p in self.points if p.verdict == UNDECIDED]
        if self.answer is None:
            text = f"no {self.path} in {lo}..{hi} {'is shown to meet' if undecided else 'meets'} {targets}"
            if self.method != "exhaustive":
                if not self.monotone:
                    text += " among the solved values; the metric is not monotone, so another value might"
                elif not undecided:
                    text += " (every solved value misses it)"
        else:
            text = f"{what} {self.path} meeting {targets}: {shown(self.answer)}"
            notes = [] if self.queue is None else [
                f"{self.queue.guaranteed(self.answer)} of {self.queue.containers} containers guaranteed"]
            near = None if self.neighbour is None else self.point(self.neighbour)
            if near is not None:
                notes.append(f"{shown(near.value)} is undecided, so it may meet it too" if near.verdict == UNDECIDED
                             else f"{shown(near.value)} does not meet it")
            text += f" ({'; '.join(notes)})" if notes else ""
            if self.method == "exhaustive":
                text += f"; every value in {lo}..{hi} solved, " + ("monotone" if self.monotone else "NOT monotone")
            elif self.monotone:
                text += f"; monotone on all {len(self.points)} solved values"
            else:
                text += (f"; NOT monotone on the solved values, so a {'larger' if self.largest else 'smaller'} "
                         "value may also meet it (use --exhaustive)")
        estimated = [p for p in self.points if p.method != "exact"]
        if estimated:
            how = " or ".join(sorted({p.method for p in estimated}))
            text += f". {len(estimated)} value(s) estimated ({how}): one meets a target only if its whole interval does"
        if undecided:
            text += f". Undecided: {', '.join(undecided)} (an interval straddles a bound: reported, not guessed)"
        text += "."
        if self.resource is not None and self.cheapest is not None:
            text += (f" Cheapest meeting {targets}: {self.cheapest} ({self.resource}-hours = {self.resource}s x mean "
                     f"execution time; every value from {self.answer} to {hi} solved)")
        return text

    def as_dict(self) -> dict:
        out = {
            "model": self.model, "path": self.path, "range": [self.values[0], self.values[-1]],
            "targets": [str(t) for t in self.targets], "want": "largest" if self.largest else "smallest",
            "answer": self.answer, "neighbour": self.neighbour, "method": self.method,
            "monotone": self.monotone, "evidence": list(self.evidence),
            "points": [p.as_dict() for p in self.points], "summary": self.summary(), "seconds": self.seconds,
        }
        if self.queue is not None:
            out["queue"] = self.queue.as_dict() | {
                "answer_containers": None if self.answer is None else self.queue.guaranteed(self.answer)}
        if self.simulation is not None:
            out["simulation"] = {"confidence": 0.95, **self.simulation, "common_random_numbers": True}
        if self.resource is not None:
            out["cost"] = self.cost_dict()
        return out

    def cost_dict(self) -> dict:
        """``minimize="cost"``: the smallest and the cheapest value meeting the targets, and every met value's cost."""
        by_value = {c.executors: c for c in self.costs}
        unit = f"{self.resource}_hours"

        def row(cost):
            if cost is None:
                return None
            out = {"value": cost.executors, "mean_execution_time": cost.seconds, unit: cost.executor_hours}
            return out | ({} if cost.money is None else {"money": cost.money})

        return {"resource": self.resource, "unit": f"{self.resource}-hours",
                "price": None if self.price is None else self.price.as_dict(),
                "smallest": row(by_value.get(self.answer)), "cheapest": row(by_value.get(self.cheapest)),
                "points": [row(c) for c in self.costs]}
