"""Backtests: every configuration among a set of logs predicted from the others, against its real runs.

The logs are grouped by configuration (executors, cores per executor, input size: read from each
log). Two protocols:

- ``pilot="smallest"`` (what a user with one pilot does): the logs of the configuration with the
  fewest task slots are the pilot, and every other configuration is predicted from them;
- ``pilot="others"``: every configuration is predicted from each other configuration in turn.

A prediction is the pipeline's answer (:func:`spn.pipeline.evaluate`) for the logs of the pilot
with the target's executors as what-if settings; each run of the target is compared with it:
``error = measured / predicted - 1``. Those errors are what a prediction interval widens by
(:mod:`spn.pipeline.prediction`); a backtest also reports how many runs fell inside the intervals,
each computed *without* the errors of its own target configuration (leave one out), so that the
coverage is not judged on the data that made the intervals.

>>> setting_key(type("S", (), {"executors": 3, "cores": 2, "input_bytes": 10**9})())
(3, 2, 1000000000)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spn.exceptions import ModelError

__all__ = ["LogRun", "BacktestRow", "Backtest", "read_run", "backtest", "setting_key"]


@dataclass(frozen=True)
class LogRun:
    """One log: its path, its configuration and its measured execution time (application span)."""

    path: str
    executors: int
    cores: int
    input_bytes: int
    seconds: float

    @property
    def label(self) -> str:
        return f"{self.executors} x {self.cores}"


@dataclass(frozen=True)
class BacktestRow:
    """One run of a target configuration against the prediction from a pilot configuration."""

    pilot: str
    target: str
    log: str
    measured: float
    predicted: float
    method: str
    interval: tuple[float, float] | None = None
    #: the model's own (1 - level)/2 and (1 + level)/2 quantiles of one run
    spread: tuple[float, float] | None = None

    @property
    def error(self) -> float:
        return self.measured / self.predicted - 1

    @property
    def inside(self) -> bool | None:
        return None if self.interval is None else self.interval[0] <= self.measured <= self.interval[1]

    def as_dict(self) -> dict:
        return {"pilot": self.pilot, "target": self.target, "log": self.log, "measured_s": self.measured,
                "predicted_s": self.predicted, "error": self.error, "method": self.method,
                "prediction_interval": None if self.interval is None else list(self.interval),
                "inside": self.inside}


@dataclass(frozen=True)
class Backtest:
    """Every row, and what they say: mean |error|, the largest, and the intervals' coverage."""

    rows: tuple[BacktestRow, ...]
    pilot: str
    level: float
    notes: tuple[str, ...] = field(default=())

    @property
    def errors(self) -> tuple[float, ...]:
        return tuple(row.error for row in self.rows)

    def summary_numbers(self) -> dict:
        errors = [abs(e) for e in self.errors]
        judged = [row for row in self.rows if row.inside is not None]
        widths = [(row.interval[1] - row.interval[0]) / 2 / row.predicted for row in judged]
        return {"runs": len(self.rows), "mean_abs_error": sum(errors) / len(errors) if errors else math.nan,
                "max_abs_error": max(errors) if errors else math.nan,
                "coverage": sum(bool(row.inside) for row in judged) / len(judged) if judged else math.nan,
                "mean_half_width": sum(widths) / len(widths) if widths else math.nan}

    def as_dict(self) -> dict:
        return {"pilot": self.pilot, "level": self.level, **self.summary_numbers(),
                "rows": [row.as_dict() for row in self.rows], "notes": list(self.notes)}

    def summary(self) -> str:
        """The table ``spn backtest`` prints."""
        head = ["pilot", "target", "log", "measured (s)", "predicted (s)", "error",
                f"{100 * self.level:g} % prediction interval (s)", "inside"]
        table = [head]
        for row in self.rows:
            interval = "" if row.interval is None else f"[{row.interval[0]:.5g}, {row.interval[1]:.5g}]"
            table.append([row.pilot, row.target, _run_name(row.log), f"{row.measured:.5g}",
                          f"{row.predicted:.5g}", f"{100 * row.error:+.1f} %", interval,
                          "" if row.inside is None else ("yes" if row.inside else "no")])
        widths = [max(len(r[k]) for r in table) for k in range(len(head))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in table]
        n = self.summary_numbers()
        lines.append(f"{n['runs']} runs: mean |error| {100 * n['mean_abs_error']:.1f} %, max "
                     f"{100 * n['max_abs_error']:.1f} %; inside their {100 * self.level:g} % prediction intervals: "
                     f"{100 * n['coverage']:.0f} % (mean half-width {100 * n['mean_half_width']:.1f} %; each "
                     f"interval from the other targets' errors)")
        return "\n".join(lines + list(self.notes))


def _run_name(path: str) -> str:
    """A log's file name without the suffixes every log has (``.json``, a codec's)."""
    name = Path(path).name
    for suffix in (".gz", ".zst", ".zstd", ".lz4", ".snappy", ".lzf", ".json"):
        name = name.removesuffix(suffix)
    return name


def setting_key(setting) -> tuple[int, int, int]:
    """What makes two logs one configuration: executors, cores per executor, input bytes."""
    return (setting.executors, setting.cores, setting.input_bytes)


def read_run(path) -> LogRun:
    """The configuration a Spark log ran at and its measured time."""
    from spn.baselines.runs import reference_run
    from spn.fit.whatif import pilot_setting
    from spn.logs.spark import read_spark_log
    from spn.logs.spark_runs import spark_run, timed_jobs

    app = read_spark_log(Path(path))
    setting = pilot_setting(app, spark_run(app, timed_jobs(app)))
    return LogRun(str(path), setting.executors, setting.cores, setting.input_bytes, reference_run(path).seconds)


def backtest(logs: Sequence, *, pilot: str = "smallest", level: float = 0.9, budget=None) -> Backtest:
    """Predict every configuration among ``logs`` from the others (``pilot``: ``smallest`` or ``others``)."""
    from spn.pipeline import Budget, Question, evaluate
    from spn.pipeline.prediction import fewest_errors, prediction_interval, spread_levels

    if pilot not in ("smallest", "others"):
        raise ModelError(f"pilot must be 'smallest' or 'others', got {pilot!r}", option="pilot")
    runs = [read_run(p) for p in logs]
    groups: dict[tuple, list[LogRun]] = {}
    for run in runs:
        groups.setdefault((run.executors, run.cores, run.input_bytes), []).append(run)
    if len(groups) < 2:
        raise ModelError("a backtest needs logs of at least two configurations (executors, cores or input size)")
    if len({key[2] for key in groups}) > 1:
        raise ModelError("the logs ran at different input sizes: backtest one input size at a time")
    order = sorted(groups, key=lambda k: (k[0] * k[1], k))
    pairs = ([(order[0], t) for t in order[1:]] if pilot == "smallest"
             else [(p, t) for p in order for t in order if p != t])
    budget = budget or Budget()
    predicted = {}
    for p, t in pairs:
        settings = [f"spark.executor.instances={t[0]}", f"spark.executor.cores={t[1]}", "workload.users=1"]
        predicted[(p, t)] = evaluate([r.path for r in groups[p]], settings, budget=budget,
                                     question=Question(percentiles=spread_levels(level)))
    rows = [BacktestRow(groups[p][0].label, groups[t][0].label, run.path, run.seconds,
                        predicted[(p, t)].mean_execution_time, predicted[(p, t)].method,
                        spread=tuple(predicted[(p, t)].percentiles[q] for q in spread_levels(level)))
            for p, t in pairs for run in groups[t]]
    # each row's interval from the errors of the other targets (leave its own configuration out)
    judged, few = [], set()
    for row in rows:
        others = [r.error for r in rows if r.target != row.target]
        if others:
            pi = prediction_interval(row.predicted, row.spread, others, level=level, source="backtest")
            row = BacktestRow(**{**row.__dict__, "interval": (pi.low, pi.high)})
            if not pi.guaranteed:
                few.add(len(others))
        judged.append(row)
    notes = (f"pilot: {'the configuration with the fewest task slots' if pilot == 'smallest' else 'each other'}"
             f" ({len(runs)} logs, {len(groups)} configurations)",)
    if few:
        notes += (f"intervals made from {', '.join(map(str, sorted(few)))} other runs' errors: too few for a "
                  f"guaranteed {100 * level:g} % (that needs {fewest_errors(level)}); the most extreme "
                  "error is taken on each side",)
    return Backtest(tuple(judged), pilot, level, notes)
