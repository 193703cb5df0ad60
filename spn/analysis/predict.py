"""Predicted execution time over a range of configurations, from the logs of one pilot.

For every value of the varied setting, :func:`predict` fits the what-if
model (:mod:`spn.fit.whatif`: the pilot's task times carried to that
configuration, at the task laws the data ask for) and evaluates its mean
execution time the way ``spn solve`` does (docs/design.md §5.6): the exact
chain where it fits, else for one user the job-alone method (with bounds),
else a simulation to the asked relative half-width; each row says which
(``method``) and gives the bounds or the interval (``ci_low``, ``ci_high``).

>>> rows = predict(["app.json"], vary=("spark.executor.instances", [3, 6]))   # doctest: +SKIP
>>> [(row.value, round(row.mean_s)) for row in rows]                         # doctest: +SKIP
[(3, 2120), (6, 1101)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spn.exceptions import ModelError
from spn.limits import MAX_SHAPE

__all__ = ["PredictionRow", "parse_vary", "predict", "MAX_VALUES"]

#: the most configurations one table evaluates
MAX_VALUES = 64


@dataclass(frozen=True)
class PredictionRow:
    """One configuration: the varied ``value``, the prediction and how it was obtained."""

    key: str
    value: int
    target: str
    mean_s: float
    ci_low: float
    ci_high: float
    method: str
    rules: tuple[str, ...]

    def as_dict(self) -> dict:
        return {"key": self.key, "value": self.value, "target": self.target, "mean_execution_time": self.mean_s,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "method": self.method, "rules": list(self.rules)}


def parse_vary(text: str) -> tuple[str, list[int]]:
    """``KEY=A..B`` (every whole number from A to B) or ``KEY=V1,V2,...`` as the key and its values.

    >>> parse_vary("spark.executor.instances=3..6")
    ('spark.executor.instances', [3, 4, 5, 6])
    >>> parse_vary("input-size=1GB,2GB")
    ('input-size', [1000000000, 2000000000])
    """
    from spn.fit.whatif import parse_changes as what_if

    def parse_changes(pair):
        try:
            return what_if(pair)
        except ModelError as error:
            raise ModelError("vary " + str(error).removeprefix("what-if "), option="vary") from None

    key, sep, values = str(text).partition("=")
    key = key.strip()
    if not sep or not values.strip():
        raise ModelError(f"vary {text!r} is not KEY=A..B or KEY=V1,V2,...", option="vary")
    if ".." in values:
        low, _, high = values.partition("..")
        low, high = (parse_changes({key: low})[key], parse_changes({key: high})[key])
        if high < low:
            raise ModelError(f"vary {text!r}: the range ends before it starts", option="vary")
        if high - low + 1 > MAX_VALUES:
            raise ModelError(f"vary {text!r}: {high - low + 1:,} values, more than {MAX_VALUES} in one table: "
                             "list the values you want (KEY=V1,V2,...)", option="vary")
        numbers = list(range(low, high + 1))
    else:
        items = [v for v in values.split(",") if v.strip()]
        if len(items) > MAX_VALUES:
            raise ModelError(f"vary {text!r}: more than {MAX_VALUES} values in one table", option="vary")
        numbers = [parse_changes({key: v})[key] for v in items]
    return key, list(dict.fromkeys(numbers))


#: tangible states past which ``spn predict`` does not solve a configuration's chain exactly: its task
#: laws are fitted at Erlang shapes up to MAX_SHAPE, so a marking can have thousands of places, and
#: 2,000,000 of them (``spn solve``'s budget) took 17 GB and 4 minutes for a 6-task log, to end in
#: a simulation anyway
PREDICT_MAX_STATES = 100_000


def predict(logs: Sequence, vary: tuple[str, Iterable[int]], what_if=(), *, users: int = 1,
            think_time: float | None = None, seed: int = 0, rel_precision: float = 0.005,
            max_seconds: float | None = None, max_states: int = PREDICT_MAX_STATES) -> list[PredictionRow]:
    """One :class:`PredictionRow` per value of ``vary = (key, values)``, the other settings from ``what_if``.

    ``users``/``think_time`` describe the workload (one user by default: the
    time of the application alone); ``max_seconds`` bounds each simulation,
    ``max_states`` each exact chain (past it: the job-alone method or a simulation).
    """
    from spn.analysis.solve import solve_description
    from spn.description import parse_description
    from spn.fit import fit_logs
    from spn.fit.whatif import parse_changes

    key, values = vary
    fixed = parse_changes(what_if)
    if key in fixed:
        raise ModelError(f"{key} is both varied and fixed: give it once", option="vary")
    rows = []
    for value in values:
        changes = {**fixed, key: value}
        model = fit_logs(logs, what_if=changes, max_shape=MAX_SHAPE, users=users, think_time=think_time)
        desc = parse_description(model.description)
        result = solve_description(desc, fallback=True, seed=seed, rel_precision=rel_precision,
                                   max_seconds=max_seconds, max_states=max_states).as_dict()
        r = result["mean_execution_time"]
        if result["method"] == "simulation":
            low, high = result["ci_low"], result["ci_high"]
        elif result["method"] == "job-alone":
            low, high = result["low"], result["high"]
        else:  # exact
            low = high = r
        what = model.description["reference"]["what_if"]
        rows.append(PredictionRow(key, value, what["target"], r, low, high, _method(result), tuple(what["rules"])))
    return rows


def _method(result: dict) -> str:
    """How a row was computed, in words."""
    if result["method"] == "simulation":
        return (f"simulation ({result['engine']} engine, {result['replications']} replications x "
                f"{result['jobs_per_replication']} jobs, 95 % interval"
                f"{'' if result['precision_met'] else ', precision not reached'})")
    if result["method"] == "job-alone":
        return "job alone: order statistics, with rigorous bounds"
    return "exact (CTMC)"
