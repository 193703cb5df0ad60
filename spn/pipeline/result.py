"""One result type for every method: :class:`Result`, with ``summary()`` (the table) and ``as_dict()`` (the JSON).

Every interval a result carries is the *method's numerical error*: the bounds of the job-alone
method, a simulation's confidence interval, or none for the exact chain (its error is the
solver's tolerance). ``interval_kind`` says so in words. It is not the range a real run of
the application will fall in: runs of one configuration on a real cluster spread by several
per cent around the model's mean (docs/design.md).

>>> r = Result(model="m", method="exact", how="exact (CTMC)", reason=None, mean_execution_time=2.0,
...            interval=(2.0, 2.0), throughput=0.1, utilization=0.5, details={"users": 1})
>>> r.metric("mean"), r.as_dict()["interval"]
(2.0, {'low': 2.0, 'high': 2.0})
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spn.exceptions import ModelError

__all__ = ["Result", "percentile_key", "INTERVAL_KINDS"]

#: what each method's intervals are, in words
INTERVAL_KINDS = {
    "exact": "exact CTMC: no interval (its numerical error is the solver's tolerance)",
    "job-alone": "numerical: rigorous bounds of the job-alone method (not the spread of real runs)",
    "simulation": "numerical: 95 % confidence intervals of the simulation (not the spread of real runs)",
    "decomposition": "numerical: the simulated X(k)'s 95 % intervals propagated, widened by the model's error "
                     "(for the mean a share of the gap between its fifo and birth-death chains, the share chosen on a "
                     "tuning grid: docs/decomposition-tuning.md; for each percentile a share, chosen there too, of its "
                     "gap to processor sharing's plus how far a job alone's Erlang law in the chain is from its own; "
                     "measured in docs/decomposition.md), not the spread of real runs",
}


def percentile_key(q: float) -> str:
    """The JSON key and CSV column suffix of percentile ``q``: its shortest decimal, so that two
    percentiles never share a key (``:g`` would print 99.9999999 as "100").

    >>> [percentile_key(q) for q in (95.0, 99.9, 99.9999999, 1e-05)]
    ['95', '99.9', '99.9999999', '1e-05']
    """
    return repr(float(q)).removesuffix(".0")


@dataclass(frozen=True)
class Result:
    """One configuration evaluated by one method.

    ``method``: ``exact``, ``job-alone``, ``decomposition`` or ``simulation``; ``how``: the method in words;
    ``reason``: why no more exact method answered (None when the exact chain did);
    ``interval``: (low, high) around ``mean_execution_time``; ``percentiles``: {q: seconds};
    ``percentile_intervals``: {q: (low, high)}; ``deadline_probability`` with its
    ``deadline_interval``; ``details``: the method's own fields (states, solver, replications...);
    ``notices``: what the user should know about the answer; ``report``: the method's own report
    object (for the Python API: a state space, a simulation report...).
    """

    model: str
    method: str
    how: str
    reason: str | None
    mean_execution_time: float
    interval: tuple[float, float]
    throughput: float
    utilization: float
    details: dict
    percentiles: dict = field(default_factory=dict)
    percentile_intervals: dict = field(default_factory=dict)
    deadline: float | None = None
    deadline_probability: float | None = None
    deadline_interval: tuple[float, float] | None = None
    notices: tuple[str, ...] = ()
    seconds: float = 0.0
    report: object = field(default=None, compare=False, repr=False)
    #: the exact method's execution-time law (:class:`~spn.solvers.passage.PassageDistribution`: cdf,
    #: quantile, grid), when percentiles or a deadline were asked for; None from the other methods
    distribution: object = field(default=None, compare=False, repr=False)

    def metric(self, name: str) -> float:
        """``"mean"`` or ``"pQ"`` (a percentile that was asked for)."""
        if name == "mean":
            return self.mean_execution_time
        q = float(name[1:])
        if q not in self.percentiles:
            raise ModelError(f"percentile {name} was not computed")
        return self.percentiles[q]

    def metric_interval(self, name: str) -> tuple[float, float]:
        """The method's interval around :meth:`metric` ``(name)``."""
        if name == "mean":
            return self.interval
        q = float(name[1:])
        return self.percentile_intervals.get(q, (self.percentiles[q], self.percentiles[q]))

    def as_dict(self) -> dict:
        """The JSON object of ``spn solve --json`` (docs/design.md §5): the method's own keys, then
        the keys every method has."""
        out = dict(self.details)
        out.update(model=self.model, method=self.method, how=self.how, reason=self.reason,
                   mean_execution_time=self.mean_execution_time,
                   interval={"low": self.interval[0], "high": self.interval[1]},
                   interval_kind=INTERVAL_KINDS[self.method],
                   throughput=self.throughput, utilization=self.utilization)
        if self.percentiles:
            out["percentiles"] = {percentile_key(q): t for q, t in self.percentiles.items()}
            if self.percentile_intervals:
                out["percentile_intervals"] = {percentile_key(q): {"low": lo, "high": hi}
                                               for q, (lo, hi) in self.percentile_intervals.items()}
        if self.deadline is not None:
            out["deadline"] = self.deadline
            out["deadline_probability"] = self.deadline_probability
            if self.deadline_interval is not None:
                out["deadline_probability_interval"] = {"low": self.deadline_interval[0],
                                                        "high": self.deadline_interval[1]}
        out["notices"] = list(self.notices)
        timings = dict(out.get("timings", {}))
        timings["total_s"] = self.seconds
        out["timings"] = timings
        return out

    def summary(self) -> str:
        """The table ``spn solve`` prints."""
        from spn.pipeline.summary import format_distribution

        return format_distribution(self.as_dict())
