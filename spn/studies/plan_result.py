"""What a capacity plan found: every value solved (:class:`PlanPoint`) and the answer (:class:`PlanResult`).

:func:`spn.studies.plan.find_boundary` builds it; ``spn plan`` prints its :meth:`PlanResult.summary`
and, with ``--json``, its :meth:`PlanResult.as_dict`.

>>> r = PlanResult("x", (1, 2), (), False, 2, 1, (PlanPoint(1, {}, False), PlanPoint(2, {}, True)), True, (),
...                "bisection")
>>> r.point(2).met
True
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PlanPoint", "PlanResult"]


@dataclass(frozen=True)
class PlanPoint:
    """A solved value: metrics (an estimated mean adds ``mean_ci_low``/``_high``), met, how (:func:`solve_point`)."""

    value: int
    metrics: dict
    met: bool
    seconds: float = 0.0
    method: str = "exact"


@dataclass(frozen=True)
class PlanResult:
    """What :func:`plan` found.

    ``values``: the values searched (a :class:`range` or a tuple); ``answer``: the
    smallest (``largest=True``: largest) value meeting every
    target, or None; ``neighbour``: the value just below (above) it, which was
    solved and does not meet them (None when the answer is an end of the range);
    ``points``: every value solved, in increasing order; ``monotone``: no
    evidence against monotonicity among them; ``evidence``: what was seen
    otherwise; ``method``: ``bisection`` or ``exhaustive``.
    """

    path: str
    values: tuple
    targets: tuple
    largest: bool
    answer: int | None
    neighbour: int | None
    points: tuple
    monotone: bool
    evidence: tuple
    method: str
    seconds: float = 0.0
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
        lo, hi = self.values[0], self.values[-1]
        if self.answer is None:
            text = f"no {self.path} in {lo}..{hi} meets {targets}"
            if self.method != "exhaustive":
                text += (" (every solved value misses it)" if self.monotone else
                         " among the solved values; the metric is not monotone, so another value might")
            return text + "."
        text = f"{what} {self.path} meeting {targets}: {self.answer}"
        if self.neighbour is not None:
            text += f" ({self.neighbour} does not meet it)"
        if self.method == "exhaustive":
            text += f"; every value in {lo}..{hi} solved, " + ("monotone" if self.monotone else "NOT monotone")
        elif self.monotone:
            text += f"; monotone on all {len(self.points)} solved values"
        else:
            text += ("; NOT monotone on the solved values, so a "
                     f"{'larger' if self.largest else 'smaller'} value may also meet it (use --exhaustive)")
        estimated = sum(1 for p in self.points if p.method != "exact")
        text += (f". {estimated} value(s) had too large a chain and were estimated (simulation or job-alone "
                 f"bounds): one meets a target only if its whole interval does." if estimated else ".")
        if self.resource is not None and self.cheapest is not None:
            text += (f" Cheapest meeting {targets}: {self.cheapest} ({self.resource}-hours = {self.resource}s x mean "
                     f"execution time; every value from {self.answer} to {hi} solved)")
        return text

    def as_dict(self) -> dict:
        return {
            "path": self.path, "range": [self.values[0], self.values[-1]],
            "targets": [str(t) for t in self.targets], "want": "largest" if self.largest else "smallest",
            "answer": self.answer, "neighbour": self.neighbour, "method": self.method,
            "monotone": self.monotone, "evidence": list(self.evidence),
            "points": [{"value": p.value, **p.metrics, "met": p.met, "method": p.method, "seconds": p.seconds}
                       for p in self.points],
            "summary": self.summary(), "seconds": self.seconds,
            **({} if self.resource is None else {"cost": self.cost_dict()}),
        }

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
