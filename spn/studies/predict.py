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

from spn.defaults import SEED
from spn.exceptions import ModelError

__all__ = ["PredictionRow", "parse_vary", "predict", "prediction_errors", "MAX_VALUES"]

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
    #: where one run on the cluster will fall (:class:`spn.pipeline.prediction.PredictionInterval`)
    prediction: object = None
    #: the model's own (1 - level)/2 and (1 + level)/2 quantiles of one run's time
    spread: tuple[float, float] | None = None

    def as_dict(self) -> dict:
        """``ci_low``/``ci_high`` are the method's numerical error; ``prediction_interval`` is the range
        of one real run."""
        return {"key": self.key, "value": self.value, "target": self.target, "mean_execution_time": self.mean_s,
                "ci_low": self.ci_low, "ci_high": self.ci_high,
                "method_interval": {"low": self.ci_low, "high": self.ci_high, "kind": "numerical"},
                "prediction_interval": None if self.prediction is None else self.prediction.as_dict(),
                "method": self.method, "rules": list(self.rules)}


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
            think_time: float | None = None, seed: int = SEED, rel_precision: float = 0.005,
            max_seconds: float | None = None, max_states: int | None = None,
            level: float | None = 0.9, method: str = "auto", errors=None) -> list[PredictionRow]:
    """One :class:`PredictionRow` per value of ``vary = (key, values)``, the other settings from ``what_if``.

    Each configuration is fitted and evaluated by :func:`spn.pipeline.evaluate` (the same model and
    the same method choice as ``spn solve`` of ``spn fit --what-if``'s output). ``users``/``think_time``
    describe the workload (one user by default: the time of the application alone); ``max_seconds``
    bounds each evaluation (default 30 s), ``max_states`` each exact chain.

    Each row has a prediction interval at ``level`` (None: none) for one run on the cluster
    (:mod:`spn.pipeline.prediction`): logs of several configurations are backtested, each from each
    other, and their errors widen it; logs of one configuration take the project's validation errors.
    ``errors``: those errors and their source in words, when already known (:func:`prediction_errors`);
    ``method``: the pipeline's method (``auto``: the most exact that fits, as ``spn solve``).
    """
    from spn.fit.whatif import parse_changes
    from spn.pipeline import Budget, Question, evaluate_description
    from spn.pipeline.prediction import prediction_interval, spread_levels
    from spn.pipeline.source import configure

    key, values = vary
    fixed = parse_changes(what_if)
    if key in fixed:
        raise ModelError(f"{key} is both varied and fixed: give it once", option="vary")
    limits = {name: value for name, value in (("max_seconds", max_seconds), ("max_states", max_states))
              if value is not None}
    budget = Budget(seed=seed, rel_precision=rel_precision, **limits)
    workload = [f"workload.users={users}"] + ([] if think_time is None else [f"workload.think_time={think_time}"])
    question = Question(percentiles=spread_levels(level)) if level is not None else None
    errors, source = errors if errors is not None else (None, None)
    rows = []
    for value in values:
        settings = [f"{k}={v}" for k, v in {**fixed, key: value}.items()] + workload
        desc = configure(list(logs), settings)
        if level is not None and errors is None:      # once the logs are known to fit
            errors, source = prediction_errors(logs, budget, level=level)
        result = evaluate_description(desc, budget=budget, question=question, method=method)
        what = desc.reference["what_if"]
        interval = spread = None
        if level is not None:
            spread = tuple(result.percentiles[q] for q in spread_levels(level))
            interval = prediction_interval(result.mean_execution_time, spread, errors, level=level, source=source)
        rows.append(PredictionRow(key, value, what["target"], result.mean_execution_time, *result.interval,
                                  result.how, tuple(what["rules"]), interval, spread))
    return rows


def prediction_errors(logs, budget=None, *, level: float = 0.9) -> tuple[tuple[float, ...], str]:
    """Backtest errors of the logs at hand (several configurations), else the project's validation errors,
    and where they come from in words: what a prediction interval of :func:`predict` widens by. While the
    logs give too few errors for a guaranteed ``level``, the validation errors are added."""
    from spn.studies.backtest import backtest, read_run
    from spn.pipeline.prediction import default_errors, fewest_errors

    runs = [read_run(p) for p in logs]
    if len({(r.executors, r.cores, r.input_bytes) for r in runs}) > 1:
        own = backtest(logs, pilot="others", budget=budget).errors
        if len(own) >= fewest_errors(level):
            return own, "backtest of the given logs"
        errors, source = default_errors()
        return (*own, *errors), f"backtest of the given logs ({len(own)} runs) and the {source}"
    return default_errors()
