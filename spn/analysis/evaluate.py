"""One configuration solved as ``spn solve`` does, plus the tagged job's execution-time distribution.

:func:`evaluate` (also :func:`solve_with_distribution`) solves a description and, when
asked, adds the distribution of a tagged job's execution time
(:mod:`spn.solvers.passage`): percentiles and P(R <= deadline). ``spn solve
--percentiles/--deadline``, :mod:`spn.studies.sweep` and :mod:`spn.studies.plan` all use it.

>>> parse_percentiles("50, 99.9")
(50.0, 99.9)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from spn.defaults import MAX_STATES, RTOL
from spn.exceptions import ModelError

__all__ = ["Evaluation", "evaluate", "solve_with_distribution", "percentile_key", "parse_percentiles"]

#: percentiles one solve reports
MAX_PERCENTILES = 100


@dataclass(frozen=True)
class Evaluation:
    """A solved configuration: the report of ``spn solve`` and, when asked, the execution-time distribution.

    ``percentiles`` maps q (e.g. 95.0) to seconds; ``deadline_probability`` is P(R <= ``deadline``);
    ``distribution`` is the :class:`~spn.solvers.passage.PassageDistribution` (None when not asked for).
    """

    report: object
    distribution: object | None = None
    percentiles: dict = field(default_factory=dict)
    deadline: float | None = None
    deadline_probability: float | None = None
    distribution_s: float = 0.0

    @property
    def mean_execution_time(self) -> float:
        return self.report.measures.mean_execution_time

    def metric(self, name: str) -> float:
        """``"mean"`` or ``"pQ"`` (a percentile that was computed)."""
        if name == "mean":
            return self.mean_execution_time
        q = float(name[1:])
        if q not in self.percentiles:
            raise ModelError(f"percentile {name} was not computed")
        return self.percentiles[q]

    def as_dict(self) -> dict:
        """``spn solve --json``'s object, plus ``percentiles`` {"50": s, ...}, ``deadline_probability``
        and ``execution_time_distribution`` when they were asked for."""
        out = self.report.as_dict()
        if self.distribution is not None:
            d = self.distribution
            if self.percentiles:
                out["percentiles"] = {percentile_key(q): t for q, t in self.percentiles.items()}
            if self.deadline is not None:
                out["deadline"] = self.deadline
                out["deadline_probability"] = self.deadline_probability
            out["execution_time_distribution"] = {
                "mean": d.mean, "std": d.std, "method": d.method, "transient_states": d.n_states,
                "iterations": d.niter, "residual": d.residual, "converged": d.converged,
                "seconds": self.distribution_s,
            }
            out["timings"] = dict(out["timings"], distribution_s=self.distribution_s,
                                  total_s=out["timings"]["total_s"] + self.distribution_s)
        return out


def percentile_key(q: float) -> str:
    """The JSON key and CSV column suffix of percentile ``q``: its shortest decimal, so that two
    percentiles never share a key (``:g`` would print 99.9999999 as "100").

    >>> [percentile_key(q) for q in (95.0, 99.9, 99.9999999, 1e-05)]
    ['95', '99.9', '99.9999999', '1e-05']
    """
    text = repr(float(q))
    return text.removesuffix(".0")


def solve_with_distribution(desc, *, percentiles: Sequence[float] = (), deadline: float | None = None,
                            distribution: bool | None = None, method: str = "auto", rtol: float = RTOL,
                            max_states: int = MAX_STATES, atol: float = 1e-12, progress: bool = False):
    """Like :func:`spn.analysis.solve.solve_description`, plus the tagged job's distribution when asked.

    ``distribution`` defaults to "when percentiles or a deadline are asked for".
    Returns an :class:`Evaluation`; raises :class:`ConvergenceError` when the
    steady state or the passage time does not converge.
    """
    from spn.analysis.solve import solve_application
    from spn.description.model import require_single_class
    from spn.analysis.passage_slots import tagged_job_distribution

    require_single_class(desc, "the execution-time distribution (--percentiles, --deadline)")
    percentiles = tuple(float(q) for q in percentiles)
    if distribution is None:
        distribution = bool(percentiles) or deadline is not None
    solution = solve_application(desc, method=method, rtol=rtol, max_states=max_states, progress=progress)
    report, app, ss, result = solution.report, solution.app, solution.state_space, solution.result
    if not distribution:
        return Evaluation(report)
    t0 = time.perf_counter()
    shown = []

    def show(niter, x, residual):
        shown.append(niter)
        print(f"\rdistribution: {niter:,} steps, P(still running) = {residual:.2g}", end="", file=sys.stderr,
              flush=True)
    # by slot on a job-identity net: under fifo and fair a younger job may end first
    dist = tagged_job_distribution(desc, app, ss, result.x, atol=atol,
                                   callback=show if progress and sys.stderr.isatty() else None)
    if shown:
        print(file=sys.stderr)
    values = dist.percentiles(percentiles) if percentiles else {}
    prob = dist.cdf(float(deadline)) if deadline is not None else None
    return Evaluation(report, dist, values, None if deadline is None else float(deadline), prob,
                      time.perf_counter() - t0)


#: the name :mod:`spn.studies.sweep` and :func:`plan` use
evaluate = solve_with_distribution


def parse_percentiles(text: str) -> tuple[float, ...]:
    """``"50,90,99"`` -> ``(50.0, 90.0, 99.0)``; each in (0, 100).

    >>> parse_percentiles("50, 99.9")
    (50.0, 99.9)
    """
    out = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            q = float(part)
        except ValueError:
            raise ModelError(f"percentiles: expected numbers in (0, 100) separated by commas, got {part!r}") \
                from None
        if not 0 < q < 100:
            raise ModelError(f"percentiles: {part} is not in (0, 100)")
        out.append(q)
    out = tuple(dict.fromkeys(out))
    if len(out) > MAX_PERCENTILES:
        raise ModelError(f"percentiles: {len(out):,} of them, more than {MAX_PERCENTILES}")
    return out
