"""The content of a report, as one plain dict (the JSON of ``spn report --json``; the page renders it).

:func:`build_report` asks every question through the commands' own functions, so that each number can
be had again from a command:

- the runs (:mod:`spn.report.runs`): each log's configuration, time, executor-hours, Sparklens' times;
  the *pilot* is the configuration with the fewest task slots (as ``spn backtest`` takes it), and its
  first log is shown in detail (timeline, stages; the laws of ``spn fit PILOT_LOGS --report``);
- the what-if curves over executors, over cores per executor and over the input size, each
  ``spn predict LOGS --vary KEY=... --what-if ...`` (:func:`spn.studies.predict.predict`: the mean and
  the prediction interval of one run) with the other two settings at the pilot's, beside Sparklens'
  replay and ideal scaling (:mod:`spn.baselines`) of the pilot, and the measured runs that differ
  from the pilot in that setting alone; a configuration on two curves (the pilot's) is asked once;
- the multi-user curve: the pilot's logs with ``workload.users=N`` and ``workload.think_time=Z``
  (:func:`spn.pipeline.evaluate`, as ``spn sweep PILOT --grid workload.users=...``): mean and p95;
- the cost of every configuration (:mod:`spn.studies.cost`), and with ``target`` the smallest and the
  cheapest configuration meeting it (as ``spn plan --minimize cost``).

**Budget.** ``max_seconds`` bounds the evaluations together: each point is given what is left divided
by the points left (a simulation stops there, its interval as wide as it got). A method whose time the
budget does not bound (the job-alone method's convolutions) may overrun its share: once one has, the
points after it are asked by simulation, and once nothing is left, the remaining points are left out.
Each point says its method, and ``budget.notes`` says what was simulated or left out and why.

>>> default_executors([3, 3, 6]), default_cores(2), default_input_sizes(1000)
([3, 6, 12, 24], [1, 2, 4, 8], [500, 1000, 2000, 4000])
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from spn.defaults import SEED
from spn.exceptions import LogFormatError, ModelError, SpnError

__all__ = ["build_report", "default_executors", "default_cores", "default_input_sizes", "FORMAT", "USERS",
           "MAX_SECONDS", "REL_PRECISION"]

#: the version of the report's JSON layout
FORMAT = 1
#: the users of the multi-user curve by default
USERS = (1, 2, 4, 8)
#: the whole report's evaluations, by default (seconds)
MAX_SECONDS = 60.0
#: relative half-width of a simulated point's 95 % interval, by default (a curve beside prediction
#: intervals of +-10-20 % needs no finer)
REL_PRECISION = 0.01
#: executor counts of the what-if curve by default: the smallest seen times 1, 2, 4, 8
DOUBLINGS = 4
#: task slots per executor of the cores curve by default (with the pilot's): YARN's executors mostly have 1 to 8
CORES = (1, 2, 4, 8)
#: input sizes of the input-size curve by default: the pilot's times these
INPUT_SCALES = (0.5, 1, 2, 4)
#: the what-if rules' keys the curves vary
EXECUTORS, CORES_KEY, INPUT = "spark.executor.instances", "spark.executor.cores", "input-size"
#: each curve: its key in the report, the setting it varies, a run's field for that setting, a point's name,
#: the setting in words
CURVES = (("what_if", EXECUTORS, "executors", "{} executors", "executors"),
          ("what_if_cores", CORES_KEY, "cores", "{} cores", "cores per executor"),
          ("what_if_input", INPUT, "input_bytes", "input {}", "input size"))


def default_executors(seen: Sequence[int]) -> list[int]:
    """The executor counts of the what-if curve: those the logs ran at, and doublings of the smallest."""
    smallest = min(seen)
    return sorted(set(seen) | {smallest * 2 ** k for k in range(DOUBLINGS)})


def default_cores(pilot: int) -> list[int]:
    """The cores per executor of the cores curve: :data:`CORES` and the pilot's."""
    return sorted(set(CORES) | {pilot})


def default_input_sizes(pilot: int) -> list[int]:
    """The input sizes (bytes) of the input-size curve: the pilot's times :data:`INPUT_SCALES`."""
    return sorted({round(pilot * scale) for scale in INPUT_SCALES})


def build_report(logs: Sequence, *, executors: Sequence[int] | None = None, cores: Sequence[int] | None = None,
                 input_sizes: Sequence[int] | None = None, users: Sequence[int] = USERS,
                 think_time: float | None = None, target=None, price=None, level: float = 0.9, seed: int = SEED,
                 rel_precision: float = REL_PRECISION, max_seconds: float = MAX_SECONDS, method: str = "auto",
                 progress: bool = False) -> dict:
    """The report of ``logs`` (Spark event logs of one application) as a plain dict (see the module doc).

    ``executors``, ``cores`` and ``input_sizes`` (bytes) are the values of the what-if curves (default:
    :func:`default_executors`, :func:`default_cores`, :func:`default_input_sizes`; an empty list: no
    curve). ``target`` (:class:`spn.studies.plan.Target`: ``mean`` or the prediction level's upper
    percentile, e.g. p95 at level 0.9), ``price`` (:class:`spn.studies.cost.Price`), ``think_time``
    (default: the pilot's measured time). Raises :class:`~spn.exceptions.SpnError` (one line) on bad input.
    """
    from spn.fit import fit_logs
    from spn.limits import MAX_SHAPE
    from spn.pipeline import Budget
    from spn.pipeline.prediction import spread_levels
    from spn.report.runs import read_application, run_summary, stage_table, timeline
    from spn.studies.predict import prediction_errors

    started = time.perf_counter()
    logs = [str(p) for p in logs]
    if not logs:
        raise ModelError("give at least one Spark event log")
    users = sorted(set(int(n) for n in users))
    if not users or users[0] < 1:
        raise ModelError("users: give numbers of users >= 1", option="users")
    if target is not None:
        _check_target(target, level)
    apps, runs, digests = [], [], {}
    for path in logs:
        app, run = read_application(path)
        if app.digest in digests:
            raise LogFormatError(f"{path}: the same log as {digests[app.digest]} (given twice)")
        digests[app.digest] = path
        apps.append(app)
        runs.append(run_summary(app, run))
    pilot_key = min(((r["slots"], r["executors"]), k) for k, r in enumerate(runs))[1]
    pilot = runs[pilot_key]
    pilot_logs = [p for p, r in zip(logs, runs)
                  if (r["executors"], r["cores"], r["input_bytes"]) == (pilot["executors"], pilot["cores"],
                                                                          pilot["input_bytes"])]
    detail_app = apps[pilot_key]
    pilot_runs = [r for p, r in zip(logs, runs) if p in pilot_logs]
    think = think_time if think_time is not None else sum(r["seconds"] for r in pilot_runs) / len(pilot_runs)
    # the pilot's model, fitted once: its laws for the stage table, its workload for the multi-user curve
    fitted = fit_logs(pilot_logs, max_shape=MAX_SHAPE, think_time=think)
    for note in fitted.law_warnings:
        _say(progress, f"note: {note}")
    detail = {"log": pilot["log"], "timeline": timeline(detail_app),
              "stages": stage_table(detail_app, pilot["slots"], fitted.description["reference"].get("phases"))}
    errors = (prediction_errors(logs, Budget(seed=seed, rel_precision=rel_precision), level=level)
              if level is not None else None)
    values = {EXECUTORS: default_executors([r["executors"] for r in runs]) if executors is None else executors,
              CORES_KEY: default_cores(pilot["cores"]) if cores is None else cores,
              INPUT: (default_input_sizes(pilot["input_bytes"]) if pilot["input_bytes"] > 0 else [])
              if input_sizes is None else input_sizes}
    values = {key: sorted(set(int(v) for v in chosen)) for key, chosen in values.items()}
    asked = {_configuration(key, v, pilot, runs) for key, chosen in values.items() for v in chosen}
    budget = _Budget(max_seconds, len(asked) + len(users), method, progress)
    curves, answered = {}, {}
    for name, key, field_name, point, label in CURVES:
        curves[name] = _what_if_curve(logs, key, values[key], pilot, runs, detail_app, pilot_runs, budget,
                                      answered, field_name=field_name, point=point, label=label, errors=errors,
                                      level=level, seed=seed, rel_precision=rel_precision)
    many = _users_curve(pilot_logs, fitted.description, users, think, budget, seed=seed,
                        rel_precision=rel_precision)
    cost = _cost(curves["what_if"]["rows"], runs, target, price, spread_levels(level)[1])
    return {
        "spn_report": FORMAT,
        "title": f"{pilot['log']}" + (f" and {len(logs) - 1} other log(s)" if len(logs) > 1 else ""),
        "inputs": [Path(p).name for p in logs],
        "settings": {"level": level, "seed": seed, "rel_precision": rel_precision, "max_seconds": max_seconds,
                     "method": method, "think_time": think,
                     "think_time_how": "given (--think-time)" if think_time is not None else
                     "the pilot's measured time (a user looks at a result as long as a run takes)",
                     "target": None if target is None else str(target),
                     "target_bound": None if target is None else target.bound,
                     "price": None if price is None else price.as_dict()},
        "pilot": {"log": pilot["log"], "executors": pilot["executors"], "cores": pilot["cores"],
                  "input_bytes": pilot["input_bytes"], "logs": [Path(p).name for p in pilot_logs]},
        "runs": runs, "detail": detail, **curves, "users": many, "cost": cost,
        "budget": {"max_seconds": max_seconds, "seconds": time.perf_counter() - started, "notes": budget.notes},
    }


def _check_target(target, level: float) -> None:
    """The report judges a target by the mean or by the prediction's upper percentile (p95 at level 0.9)."""
    from spn.pipeline.prediction import spread_levels

    high = spread_levels(level)[1]
    if target.query_class is not None:
        raise ModelError(f"target {target}: a report is of one application (leave the class out)", option="target")
    if target.percentile is not None and target.percentile != high:
        raise ModelError(f"target {target}: the report knows the mean and p{high:g} of each configuration (its "
                         f"prediction level {level:g}); give --level {2 * target.percentile / 100 - 1:g} for "
                         f"p{target.percentile:g}", option="target")


class _Budget:
    """The report's time: each point's share, the method it is asked by, and notes on what the budget changed."""

    def __init__(self, max_seconds: float, points: int, method: str, progress: bool):
        self.deadline = time.perf_counter() + max_seconds
        self.max_seconds, self.points, self.method, self.progress = max_seconds, points, method, progress
        self.overrun = None         # the first point that took more than its share with an unbounded method
        self.simulated, self.left_out, self.failed, self.notes = [], [], [], []

    def next(self, name: str) -> tuple[str, float] | None:
        """The method and the seconds for point ``name``, or None when nothing is left (it is left out)."""
        left = self.deadline - time.perf_counter()
        share = left / max(self.points, 1)
        self.points -= 1
        if left <= 0:
            self.left_out.append(name)
            return None
        if self.overrun is not None and self.method == "auto":
            self.simulated.append(name)
            return "simulation", share
        return self.method, share

    def took(self, name: str, seconds: float, share: float, method: str) -> None:
        _say(self.progress, f"report: {name}: {method} ({seconds:.1f} s)")
        if self.overrun is None and seconds > share and not method.startswith("simulation"):
            self.overrun = (name, seconds, share)

    def ask(self, name: str, answer):
        """``answer(method, share)`` for the point ``name`` within its share of the budget; None where the
        point is left out (no time left, or no answer in its share: noted)."""
        asked = self.next(name)
        if asked is None:
            return None
        method, share = asked
        started = time.perf_counter()
        try:
            result = answer(method, share)
        except SpnError as error:       # the point's share ran out (a method refused more time): go on
            self.failed_at(name, error)
            return None
        self.took(name, time.perf_counter() - started, share, result.method)
        return result

    def failed_at(self, name: str, error) -> None:
        """Point ``name`` got no answer within its share (``error`` says why): it is left out, the others go on."""
        _say(self.progress, f"report: {name}: no answer ({error})")
        self.failed.append(f"{name} ({' '.join(str(error).split())})")

    def close(self, what: str) -> None:
        """Notes on the points of ``what`` that the budget changed."""
        if self.simulated:
            name, seconds, share = self.overrun
            self.notes.append(f"{what}: {', '.join(self.simulated)} asked by simulation: {name} took {seconds:.1f} s "
                              f"of a {share:.1f} s share of the report's {self.max_seconds:g} s (--max-seconds)")
        if self.left_out:
            self.notes.append(f"{what}: {', '.join(self.left_out)} left out: the report's {self.max_seconds:g} s "
                              "(--max-seconds) had run out")
        if self.failed:
            self.notes.append(f"{what}: left out, no answer within the point's share of --max-seconds: "
                              + "; ".join(self.failed))
        self.simulated, self.left_out, self.failed = [], [], []


def _configuration(key: str, value: int, pilot: dict, runs) -> tuple:
    """The what-if settings of a curve's point: ``key`` at ``value``, the other settings at the pilot's; a
    setting every log already has is left out (it changes nothing), so that a configuration has one name."""
    settings = {k: value if k == key else pilot[field] for _, k, field, *_ in CURVES}
    return tuple((k, settings[k]) for _, k, field, *_ in CURVES
                 if any(r[field] != settings[k] for r in runs) and settings[k] > 0)   # no input counted: not set


def _what_if_curve(logs, key, values, pilot, runs, app, pilots, budget: _Budget, answered: dict, *, field_name,
                   point, label, errors, level, seed, rel_precision) -> dict:
    """``spn predict LOGS --vary KEY=VALUES`` with the other settings at the pilot's (``--what-if``), one point at a
    time, with Sparklens' replay and ideal scaling of the pilot beside each point, and the runs that differ from
    the pilot in ``key`` alone. ``answered``: the points asked so far by configuration (asked once)."""
    from spn.baselines.ideal import ideal_scaling
    from spn.baselines.runs import ReferenceRun
    from spn.baselines.sparklens import sparklens_estimate
    from spn.logs.sizes import format_size
    from spn.studies.predict import predict

    references = [ReferenceRun(r["log"], r["seconds"], r["input_bytes"], r["slots"]) for r in pilots]
    fixed = [f"{k}={v}" for k, v in _configuration(key, pilot[field_name], pilot, runs) if k != key]
    fields = [f for _, _, f, *_ in CURVES]
    rows = []
    for value in values:
        configuration = _configuration(key, value, pilot, runs)
        if configuration not in answered:
            answered[configuration] = budget.ask(
                point.format(format_size(value) if key == INPUT else value),
                lambda method, share: predict(logs, (key, [value]), fixed, users=1, seed=seed,
                                              rel_precision=rel_precision, max_seconds=share, level=level,
                                              method=method, errors=errors)[0])
        row = answered[configuration]
        if row is None:
            continue
        at = {f: value if f == field_name else pilot[f] for f in fields}
        rows.append({**row.as_dict(), "key": key, "value": value, **at,
                     "spread": None if row.spread is None else list(row.spread),
                     "sparklens_s": sparklens_estimate(app, executors=at["executors"], cores=at["cores"])
                     if at["input_bytes"] == pilot["input_bytes"] else None,
                     "ideal_scaling_s": ideal_scaling(references, at["input_bytes"], at["executors"] * at["cores"])
                     if references[0].input_bytes > 0 else None})
    budget.close(f"what-if curve over {label}")
    measured = [{"log": r["log"], "value": r[field_name], "seconds": r["seconds"]} for r in runs
                if all(r[f] == pilot[f] for f in fields if f != field_name)]
    command = (f"spn predict {' '.join(Path(p).name for p in logs)} --vary {key}={','.join(str(v) for v in values)}"
               + "".join(f" --what-if {f}" for f in fixed) + f" --seed {seed} --rel-precision {rel_precision:g}"
               + ("" if level is None else f" --level {level:g}"))
    return {"key": key, "label": label, "values": list(values), "rows": rows, "measured": measured, "command": command,
            "interval_how": rows[-1]["prediction_interval"]["how"] if rows and level is not None else None,
            "note": None if values or key != INPUT or pilot["input_bytes"] > 0 else
            "the pilot's log counts no input bytes read, and the input-size rule scales the pilot's tasks by "
            "the input: no curve"}


def _users_curve(pilot_logs, model: dict, users, think, budget: _Budget, *, seed, rel_precision) -> dict:
    """Mean and p95 of one job's time with ``users`` users thinking ``think`` s, at the pilot's configuration.

    ``model`` is the pilot's logs fitted with that think time: ``workload.users=N`` on it is the description
    the pipeline fits from the logs for N users (``spn sweep PILOT --grid workload.users=...``), fitted once.
    """
    from spn.pipeline import Budget, Question, evaluate

    rows = []
    for n in users:
        result = budget.ask(f"{n} user(s)", lambda method, share: evaluate(
            model, [f"workload.users={n}"], question=Question(percentiles=(95.0,)), method=method,
            budget=Budget(seed=seed, rel_precision=rel_precision, max_seconds=share)))
        if result is None:
            continue
        low, high = result.interval
        rows.append({"users": n, "mean_execution_time": result.mean_execution_time, "ci_low": low, "ci_high": high,
                     "p95": result.percentiles[95.0], "method": result.how, "throughput": result.throughput,
                     "utilization": result.utilization})
    budget.close("multi-user curve")
    command = (f"spn sweep {' '.join(Path(p).name for p in pilot_logs)} --grid workload.users="
               f"{','.join(str(n) for n in users)} --set workload.think_time={think:g} --percentiles 95 "
               f"--seed {seed} --rel-precision {rel_precision:g} --out users.csv")
    return {"think_time": think, "users": list(users), "rows": rows, "command": command}


def _cost(rows, runs, target, price, high: float) -> dict:
    """Executor-hours (and money) of every predicted configuration and measured run; with ``target``, the
    smallest and the cheapest configuration meeting it."""
    from spn.studies.cost import cheapest, run_cost

    configurations = []
    for row in rows:
        cost = run_cost(row["executors"], row["mean_execution_time"], price)
        metric = row["mean_execution_time"] if target is None or target.percentile is None else (
            None if row["spread"] is None else row["spread"][1])
        meets = None if target is None or metric is None else bool(target.met(metric))
        configurations.append({**cost.as_dict(), "target_metric": metric, "meets": meets})
    measured = [{"log": r["log"], **run_cost(r["executors"], r["seconds"], price).as_dict(),
                 "held_executor_hours": r["executor_hours"],
                 "held_money": None if price is None else r["executor_hours"] * price.per_executor_hour}
                for r in runs]
    out = {"configurations": configurations, "measured": measured, "smallest": None, "cheapest": None}
    if target is not None:
        met = [c for c in configurations if c["meets"]]
        out["smallest"] = min(met, key=lambda c: c["executors"]) if met else None
        best = cheapest([run_cost(c["executors"], c["seconds"], price) for c in met])
        out["cheapest"] = None if best is None else next(c for c in met if c["executors"] == best.executors)
    return out


def _say(progress: bool, line: str) -> None:
    if progress:
        print(f"spn: {line}", file=sys.stderr, flush=True)
