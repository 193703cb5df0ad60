"""Predicted execution time over a range of configurations, from the logs of one pilot.

For every value of the varied setting, :func:`predict` fits the what-if
model (:mod:`spn.fit.whatif`: the pilot's task times carried to that
configuration, at the task laws the data ask for) and evaluates its mean
execution time. The laws of a fitted application are nearly constant (Erlang
shapes in the hundreds), far past what the exact engine can hold, so the
model is simulated with the job-level simulator until the 95 % interval has
the asked relative half-width; each row says so (``method``).

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


def predict(logs: Sequence, vary: tuple[str, Iterable[int]], what_if=(), *, users: int = 1,
            think_time: float | None = None, seed: int = 0, rel_precision: float = 0.005,
            max_seconds: float | None = None) -> list[PredictionRow]:
    """One :class:`PredictionRow` per value of ``vary = (key, values)``, the other settings from ``what_if``.

    ``users``/``think_time`` describe the workload (one user by default: the
    time of the application alone); ``max_seconds`` bounds each simulation.
    """
    from spn.description import parse_description
    from spn.fit import fit_logs
    from spn.fit.whatif import parse_changes
    from spn.simulation.runner import simulate_description

    key, values = vary
    fixed = parse_changes(what_if)
    if key in fixed:
        raise ModelError(f"{key} is both varied and fixed: give it once", option="vary")
    rows = []
    for value in values:
        changes = {**fixed, key: value}
        model = fit_logs(logs, what_if=changes, max_shape=MAX_SHAPE, users=users, think_time=think_time)
        desc = parse_description(model.description)
        # one user: jobs never meet, so each job is one sample and no warm-up is needed
        jobs, warmup = (20, 0) if users == 1 else (None, None)
        report = simulate_description(desc, engine="cluster", seed=seed, replications=5,
                                      rel_precision=rel_precision, max_seconds=max_seconds, jobs=jobs,
                                      warmup_jobs=warmup)
        r = report.mean_execution_time
        what = model.description["reference"]["what_if"]
        method = (f"simulation (job-level simulator, {report.replications} replications x {report.jobs} jobs, "
                  f"95 % interval{'' if report.precision_met else ', precision not reached'})")
        rows.append(PredictionRow(key, value, what["target"], r.value, r.ci_low, r.ci_high, method,
                                  tuple(what["rules"])))
    return rows
