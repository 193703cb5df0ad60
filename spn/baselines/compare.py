"""Every baseline and the SAN model, from the same logs, for the same targets (what ``spn baseline`` prints).

Each method takes from the reference runs what it can use:

- **SAN**: ``spn fit`` of all the logs (with ``--input-size`` when they were
  run at different sizes), ``cluster.containers`` set to the target's cores,
  evaluated as ``spn solve`` does (exact where the chain fits, else the
  job-alone method or a simulation; mean execution time, one user);
- **PERIDOT**: two runs on the same cores at different input sizes: the
  smallest and the largest input on the core count with the most runs;
- **ideal scaling** and **Ernest**: all the runs;
- **Amdahl, Gustafson, a/n+b*sqrt(n), a/n+b*n^c**: the runs at the target's
  input size (within 1 %), which must cover enough core counts;
- **PERIDOT (1 run)** and **Sparklens**: each run at the target's input size
  on its own (mean of their predictions): they change only the cores.

A method that cannot serve a target says why instead of giving a number.

>>> from spn.baselines.runs import ReferenceRun
>>> runs = [ReferenceRun("a", 30.0, 100, 1), ReferenceRun("b", 20.0, 100, 2), ReferenceRun("c", 16.0, 100, 4)]
>>> report = compare_runs(runs, [Target(100, 8)])
>>> row = report.row(Target(100, 8))
>>> round(row["Amdahl"].seconds, 3), row["a/n+b*n^c"].note   # least squares T = 11 + 18.857/n
(13.357, 'a/n+b*n^c needs runs on at least 4 different core counts at this input size, got 3')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from spn.defaults import MAX_STATES
from spn.limits import MAX_SHAPE
from spn.baselines.executors import LAWS, ExecutorFit, fit_executors
from spn.baselines.ernest import fit_ernest, predict_ernest
from spn.baselines.ideal import ideal_scaling
from spn.baselines.peridot import (
    PeridotModel, PeridotSingleModel, fit_peridot, fit_peridot_single, predict_peridot, predict_peridot_single,
)
from spn.baselines.runs import ReferenceRun, reference_run
from spn.baselines.sparklens import SparklensProfile, replay, sparklens_profile
from spn.exceptions import ModelError, SpnError
from spn.logs.runs import check_distinct

__all__ = ["METHODS", "Target", "Prediction", "BaselineReport", "compare_runs", "compare_logs", "same_size",
           "format_table"]

#: method name in the table -> law of spn.baselines.executors (for the runtime-vs-executors fits)
EXECUTOR_METHODS = {"Amdahl": "amdahl", "Gustafson": "gustafson", "a/n+b*sqrt(n)": "sqrt", "a/n+b*n^c": "power"}
#: the methods that predict other core counts from one run at the target's own input size
SINGLE_RUN_METHODS = ("PERIDOT (1 run)", "Sparklens")
METHODS = ("SAN", "PERIDOT", "ideal scaling", "Ernest", *EXECUTOR_METHODS, *SINGLE_RUN_METHODS)
#: two input sizes within this relative difference are the same size
SIZE_TOLERANCE = 0.01


@dataclass(frozen=True)
class Target:
    """A configuration to predict: input size (bytes) and cores."""

    input_bytes: int
    cores: int


@dataclass(frozen=True)
class Prediction:
    """One method's answer for one target: ``seconds``, or ``None`` and in ``note`` why not."""

    method: str
    seconds: float | None
    note: str = ""


@dataclass
class BaselineReport:
    """The references, the targets, every method's prediction, and the fitted models worth showing."""

    references: tuple[ReferenceRun, ...]
    targets: tuple[Target, ...]
    predictions: dict = field(default_factory=dict)      # Target -> {method: Prediction}
    peridot: PeridotModel | str | None = None            # the model, or why there is none
    ernest: tuple[float, ...] | str | None = None        # theta (input in bytes), or why there is none
    executor_fits: dict = field(default_factory=dict)    # (input_bytes, law) -> ExecutorFit | reason
    peridot_single: tuple = ()                           # per reference: PeridotSingleModel | reason
    sparklens: tuple | None = None                       # per reference: SparklensProfile | reason; None: not asked

    def row(self, target: Target) -> dict:
        return self.predictions[target]

    def as_dict(self) -> dict:
        """Plain JSON-ready data (``spn baseline --json``)."""
        return {
            "references": [
                {"source": r.source, "seconds": r.seconds, "input_bytes": r.input_bytes, "cores": r.cores,
                 "stage_groups": [{"stage_ids": list(g.stage_ids), "partitions": g.partitions,
                                   "seconds": g.seconds} for g in r.groups]}
                for r in self.references],
            "predictions": [
                {"input_bytes": t.input_bytes, "cores": t.cores, "method": p.method, "seconds": p.seconds,
                 **({"note": p.note} if p.note else {})}
                for t in self.targets for p in self.predictions[t].values()],
            "peridot": _peridot_dict(self.peridot),
            "ernest": ({"theta": list(self.ernest), "features": ["1", "D/n", "log n", "n"], "D": "bytes"}
                       if isinstance(self.ernest, tuple) else {"error": self.ernest}),
            "executor_fits": [_fit_dict(size, law, fit) for (size, law), fit in self.executor_fits.items()],
            "peridot_single": [_single_dict(r, m) for r, m in zip(self.references, self.peridot_single)],
            **({"sparklens": [_sparklens_dict(r, p) for r, p in zip(self.references, self.sparklens)]}
               if self.sparklens is not None else {}),
        }


def same_size(a: float, b: float) -> bool:
    """Whether two input sizes are the same within :data:`SIZE_TOLERANCE` (relative).

    >>> same_size(100, 100.5), same_size(100, 102)
    (True, False)
    """
    return abs(a - b) <= SIZE_TOLERANCE * max(abs(a), abs(b))


def compare_logs(paths, targets, *, cores_range: tuple[int, int] | None = None, san: bool = True,
                 max_shape: int = MAX_SHAPE, max_states: int = MAX_STATES, references=None) -> BaselineReport:
    """Read the logs, then :func:`compare_runs` with the SAN model fitted from the same logs.

    ``references`` are the logs' :class:`ReferenceRun` when already read (one per path, same order).
    """
    from spn.fit.scaling import check_same_application

    paths = list(paths)
    references = [reference_run(p) for p in paths] if references is None else list(references)
    check_distinct(zip(paths, [r.digest for r in references]))
    # every formula takes them as runs of one application
    check_same_application([r.run for r in references if r.run is not None])
    solver = _san_solver(paths, references, max_shape=max_shape, max_states=max_states) if san else None
    return compare_runs(references, targets, cores_range=cores_range, san=solver,
                        sparklens=[_attempt(lambda: _sparklens_of(p)) for p in paths])


def _sparklens_of(path) -> SparklensProfile:
    """Sparklens' profile of one log (a Spark event log: a MapReduce history has no stages to replay)."""
    from spn.logs.runs import log_kind
    from spn.logs.spark import read_spark_log

    if log_kind(path) != "spark":
        raise ModelError("Sparklens replays the stages of a Spark event log; a MapReduce history has none")
    return sparklens_profile(read_spark_log(path))


def compare_runs(references, targets, *, cores_range: tuple[int, int] | None = None, san=None,
                 sparklens=None) -> BaselineReport:
    """Every method's prediction for every target.

    ``san`` is a function ``target -> seconds`` (it may raise
    :class:`~spn.exceptions.SpnError`, shown as the reason) or ``None`` to
    leave the SAN column out; ``sparklens`` is one
    :class:`~spn.baselines.sparklens.SparklensProfile` (or the reason there is
    none) per reference, same order, or ``None`` to leave the Sparklens column
    out; ``cores_range`` bounds the search for the best core count of the
    runtime-vs-executors laws (default 1 to 4 x the most cores of a reference
    or target).
    """
    references = tuple(references)
    targets = tuple(dict.fromkeys(targets))
    if not references:
        raise ModelError("give at least one reference run")
    # the same run twice would look like two runs that agree: every fit would trust it double
    check_distinct((r.source, r.digest) for r in references if r.digest)
    if cores_range is None:
        cores_range = (1, 4 * max(max(r.cores for r in references), max((t.cores for t in targets), default=1)))
    report = BaselineReport(references, targets)
    report.peridot_single = tuple(_attempt(lambda r=r: fit_peridot_single(r)) for r in references)
    if sparklens is not None:
        report.sparklens = tuple(sparklens)
        if len(report.sparklens) != len(references):
            raise ModelError(f"give one Sparklens profile per reference run ({len(references)}), "
                             f"got {len(report.sparklens)}")
    report.peridot = _attempt(lambda: fit_peridot(*_peridot_pair(references)))
    report.ernest = _attempt(lambda: tuple(float(x) for x in fit_ernest(
        [r.input_bytes for r in references], [r.cores for r in references], [r.seconds for r in references])))
    for target in targets:
        row = {}
        if san is not None:
            row["SAN"] = _predict("SAN", lambda: san(target))
        row["PERIDOT"] = _from_model("PERIDOT", report.peridot,
                                     lambda m: predict_peridot(m, target.input_bytes, target.cores))
        row["ideal scaling"] = _predict("ideal scaling",
                                        lambda: ideal_scaling(references, target.input_bytes, target.cores))
        row["Ernest"] = _from_model("Ernest", report.ernest,
                                    lambda theta: predict_ernest(theta, target.input_bytes, target.cores))
        for method, law in EXECUTOR_METHODS.items():
            fit = _executor_fit(report, references, target.input_bytes, law, cores_range)
            row[method] = _from_model(method, fit, lambda f: f.predict(target.cores))
        row["PERIDOT (1 run)"] = _single_run("PERIDOT (1 run)", references, report.peridot_single, target,
                                             lambda m: predict_peridot_single(m, target.cores))
        if report.sparklens is not None:
            row["Sparklens"] = _single_run("Sparklens", references, report.sparklens, target,
                                           lambda p: replay(p, target.cores).seconds)
        report.predictions[target] = row
    return report


def _attempt(make):
    """``make()``, or the one-line reason it could not be made."""
    try:
        return make()
    except SpnError as error:
        return " ".join(str(error).split())


def _predict(method: str, compute) -> Prediction:
    value = _attempt(compute)
    if isinstance(value, str):
        return Prediction(method, None, value)
    if not math.isfinite(value):
        return Prediction(method, None, f"{method} gives no finite prediction here")
    return Prediction(method, float(value))


def _from_model(method: str, model, predict) -> Prediction:
    if isinstance(model, str):
        return Prediction(method, None, model)
    return _predict(method, lambda: predict(model))


def _single_run(method: str, references, models, target: Target, predict) -> Prediction:
    """Mean of the predictions of each run at the target's input size (their own model each), or why none."""
    pilots = [m for r, m in zip(references, models) if same_size(r.input_bytes, target.input_bytes)]
    if not pilots:
        return Prediction(method, None, "the single-run methods change only the cores: no reference run at "
                          "this input size")
    usable = [m for m in pilots if not isinstance(m, str)]
    if not usable:
        return Prediction(method, None, pilots[0])
    return _predict(method, lambda: sum(predict(m) for m in usable) / len(usable))


def _peridot_pair(references):
    """PERIDOT's two references: smallest and largest input on the core count with the most runs (>= 2 sizes)."""
    by_cores = {}
    for run in references:
        if run.input_bytes > 0:
            by_cores.setdefault(run.cores, []).append(run)
    usable = {c: runs for c, runs in by_cores.items()
              if not same_size(min(r.input_bytes for r in runs), max(r.input_bytes for r in runs))}
    if not usable:
        raise ModelError("PERIDOT needs two runs on the same cores at different input sizes")
    cores = max(usable, key=lambda c: (len(usable[c]), -c))
    runs = usable[cores]
    return min(runs, key=lambda r: r.input_bytes), max(runs, key=lambda r: r.input_bytes)


def _executor_fit(report, references, input_bytes, law, cores_range):
    """The law fitted to the references at ``input_bytes`` (cached in the report), or why not."""
    runs = [r for r in references if same_size(r.input_bytes, input_bytes)]
    size = runs[0].input_bytes if runs else input_bytes
    key = (size, law)
    if key not in report.executor_fits:
        if not runs:
            report.executor_fits[key] = ("the runtime-against-cores laws are fitted at one input size: no reference "
                                         "run at this input size")
        else:
            try:
                report.executor_fits[key] = fit_executors(law, [r.cores for r in runs], [r.seconds for r in runs],
                                                          cores_range=cores_range)
            except ModelError as error:
                message = str(error).replace(f"{law} ({LAWS[law][0]})", _label(law)).replace(
                    "at one input size", "at this input size")
                report.executor_fits[key] = message
    return report.executor_fits[key]


def _label(law: str) -> str:
    return next(method for method, name in EXECUTOR_METHODS.items() if name == law)


def _san_solver(paths, references, *, max_shape: int, max_states: int):
    """``target -> seconds``: the SAN model fitted from ``paths``, at the target's size, on its cores.

    One fit per input size (the logs' own size when they all have one, else
    ``--input-size``); the cores only change ``cluster.containers``.
    """
    from spn.description import parse_description
    from spn.fit.logs import fit_logs
    from spn.pipeline import Budget, evaluate_description

    sizes = [r.input_bytes for r in references]
    one_size = all(same_size(s, sizes[0]) for s in sizes)
    models = {}

    def solve(target: Target) -> float:
        if one_size:
            if not same_size(target.input_bytes, sizes[0]):
                raise ModelError("the SAN model scales the input size from logs at two or more input sizes; "
                                 "these logs all have one")
            key = None
        else:
            key = target.input_bytes
        if key not in models:
            models[key] = _attempt(lambda: fit_logs(paths, input_size=key, max_shape=max_shape).description)
        if isinstance(models[key], str):
            raise ModelError(models[key])
        desc = parse_description(models[key], [f"cluster.containers={target.cores}"])
        # the pipeline spn solve runs: the exact chain where it fits, else the job-alone method or a simulation
        return evaluate_description(desc, budget=Budget(max_states=max_states, seed=0)).mean_execution_time

    return solve


def _peridot_dict(model) -> dict:
    if not isinstance(model, PeridotModel):
        return {"error": model}
    return {"reference_bytes": model.reference_bytes, "reference_cores": model.reference_cores,
            "fixed_seconds": model.fixed_seconds,
            "groups": [{"stage_ids": list(g.stage_ids), "partitions": list(g.partitions), "seconds": list(g.seconds),
                        "variable": g.variable, "wave_seconds": g.wave_seconds} for g in model.groups]}


def _single_dict(reference, model) -> dict:
    if not isinstance(model, PeridotSingleModel):
        return {"source": reference.source, "error": model}
    return {"source": reference.source, "cores": model.cores, "input_bytes": model.input_bytes,
            "fixed_seconds": model.fixed_seconds,
            "groups": [{"stage_ids": list(g.stage_ids), "partitions": g.partitions, "seconds": g.seconds,
                        "wave_seconds": g.wave_seconds} for g in model.groups]}


def _sparklens_dict(reference, profile) -> dict:
    if not isinstance(profile, SparklensProfile):
        return {"source": reference.source, "error": profile}
    return {"source": reference.source, "span_seconds": profile.span_seconds,
            "driver_seconds": profile.driver_seconds, "slots": profile.slots,
            "jobs": [{"job_ids": list(j.job_ids), "stage_ids": [s.stage_id for s in j.stages],
                      "measured_seconds": j.measured_seconds} for j in profile.jobs]}


def _fit_dict(size, law, fit) -> dict:
    head = {"input_bytes": size, "method": _label(law), "law": law, "formula": LAWS[law][0]}
    if not isinstance(fit, ExecutorFit):
        return {**head, "error": fit}
    r2 = fit.r_squared if np.isfinite(fit.r_squared) else None
    return {**head, "params": dict(zip(LAWS[law][1], fit.params)), "r_squared": r2, "points": fit.points,
            "best_cores": fit.best_cores, "best_seconds": fit.best_seconds, "cores_range": list(fit.cores_range)}


def format_table(report: BaselineReport) -> str:
    r"""The human table of ``spn baseline``: references, one row per target, footnotes for "n/a".

    >>> from spn.baselines.runs import ReferenceRun
    >>> report = compare_runs([ReferenceRun("a.json", 20.0, 10**6, 2)], [Target(2 * 10**6, 4)])
    >>> print("\n".join(format_table(report).splitlines()[5:]))
    input  cores  PERIDOT  ideal scaling  Ernest   Amdahl   Gustafson  a/n+b*sqrt(n)  a/n+b*n^c  PERIDOT (1 run)
    2 MB   4      n/a [1]  20             n/a [2]  n/a [3]  n/a [3]    n/a [3]        n/a [3]    n/a [4]
    [1] PERIDOT needs two runs on the same cores at different input sizes
    [2] Ernest needs runs at two configurations (input size or cores) or more: its four coefficients say nothing from one
    [3] the runtime-against-cores laws are fitted at one input size: no reference run at this input size
    [4] the single-run methods change only the cores: no reference run at this input size
    """
    from spn.logs.sizes import format_size

    lines = ["reference runs", _columns([["log", "input", "cores", "time (s)"]] + [
        [r.source, format_size(r.input_bytes), str(r.cores), f"{r.seconds:.4g}"] for r in report.references])]
    methods = [m for m in METHODS if any(m in report.predictions[t] for t in report.targets)]
    notes: dict[str, int] = {}
    rows = [["input", "cores", *methods]]
    for target in report.targets:
        cells = [format_size(target.input_bytes), str(target.cores)]
        for method in methods:
            p = report.predictions[target][method]
            if p.seconds is not None:
                cells.append(f"{p.seconds:.4g}")
            else:
                cells.append(f"n/a [{notes.setdefault(p.note, len(notes) + 1)}]")
        rows.append(cells)
    lines += ["", "predicted execution time (s)", _columns(rows)]
    lines += [f"[{k}] {note}" for note, k in notes.items()]
    fitted = [(size, law, fit) for (size, law), fit in report.executor_fits.items() if isinstance(fit, ExecutorFit)]
    if fitted:
        lines += ["", "runtime against cores (fits at one input size)"]
        lines += [f"{format_size(size)}: {_label(law)} = {fit.formula}, "
                  + ", ".join(f"{k}={v:.4g}" for k, v in zip(LAWS[law][1], fit.params))
                  + f"; R^2 {fit.r_squared:.3f} over {fit.points} runs; least runtime {fit.best_seconds:.4g} s on "
                  f"{fit.best_cores} cores (searched {fit.cores_range[0]}..{fit.cores_range[1]})"
                  for size, law, fit in fitted]
    lines += _single_run_lines(report)
    return "\n".join(lines)


def _single_run_lines(report: BaselineReport) -> list[str]:
    """What the single-run methods took from each run, when some target used them."""
    used = any(report.predictions[t][m].seconds is not None
               for t in report.targets for m in SINGLE_RUN_METHODS if m in report.predictions[t])
    if not used:
        return []
    lines = ["", "single-run methods (each run at its own input size, its own cores)"]
    profiles = report.sparklens if report.sparklens is not None else (None,) * len(report.references)
    for run, model, profile in zip(report.references, report.peridot_single, profiles):
        parts = []
        if isinstance(model, PeridotSingleModel):
            parts.append(f"PERIDOT (1 run): F = {model.fixed_seconds:.4g} s + waves of {len(model.groups)} stage "
                         f"group(s) on {model.cores} cores")
        if isinstance(profile, SparklensProfile):
            busy = sum(j.measured_seconds for j in profile.jobs)
            parts.append(f"Sparklens: driver time {profile.driver_seconds:.4g} s kept, {len(profile.jobs)} job "
                         f"set(s) replayed ({busy:.4g} s with tasks running on {profile.slots} slots)")
        if parts:
            lines.append(f"{run.source}: " + "; ".join(parts))
    return lines


def _columns(rows) -> str:
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)
