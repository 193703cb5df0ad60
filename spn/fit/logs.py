"""Execution logs -> a runnable model description (what ``spn fit`` writes).

A Spark event log (or a MapReduce ``.jhist``) says which stages ran, how many
tasks each had, how long every task held its core, and when the driver
submitted what. :func:`fit_logs` turns that into a model description
(docs/design.md §4) that ``spn solve`` and ``spn simulate`` accept:

- **phases** are the stages that ran (``stage-<id>``); a MapReduce job has a
  ``map`` and a ``reduce`` phase. Task times are the wall times of the
  successful attempts, fitted with an Erlang law whose shape is capped
  (``max_shape``, default 10) so that the CTMC stays small enough to solve.
  With ``stage_groups=True`` the stages of one job that ran at the same time
  are merged into one phase (PERIDOT's *stage groups*: fewer phases, a
  smaller state space, but one task-time law for different stages).
- **edges** come from the stages' parents (inferred from stage times in
  Spark 1.x logs; see :mod:`spn.logs.spark_runs`). Jobs are chained in
  submission order; a job submitted while an earlier one was still running
  runs beside it (it depends only on the jobs that had ended).
- **delay phases**: time in which none of a job's tasks ran (application
  start-up, driver work between jobs and stages, scheduling gaps, result
  collection, a failed job's time) does not depend on the tasks, and a model
  of the tasks alone would lose it. Each job's share becomes a phase
  ``driver-job<id>`` of **one task** whose time is the measured delay, with
  the largest Erlang shape allowed (nearly constant), placed before the job's
  first stages; the time after the last job until the application ended
  becomes ``driver-end``. They are ``kind: driver`` phases: the driver runs in
  its own JVM, so such a phase holds no container and waits for none, and
  several users' jobs can be in theirs at once. ``delays=False`` leaves them out. Idle gaps, with no job active (a person at a spark-shell or
  notebook, jobs spaced out: :mod:`spn.logs.idle`), are not execution time: they
  are left out of the delays and of the measured execution time, and listed
  under ``reference.idle_gaps``.
- **containers** are the cores the log saw
  (:func:`~spn.logs.spark_stages.application_cores`).

Three ways to use several runs:

- several logs of the same application (**repetitions**): samples pooled per
  stage; the logs must have the same jobs, stages, task counts and DAG;
- ``per_query=True``: one application that ran the same query many times
  (:func:`~spn.logs.queries.query_runs`): one query's DAG is modelled with
  samples pooled over the repetitions, and the think time is the mean gap
  between the end of a user's query and that user's next submission;
- ``input_size=...``: logs of one application at different input sizes (a
  run's input size: the most bytes one of its stages read), extrapolated to
  that size (:mod:`spn.fit.scaling`).

>>> model = fit_logs(["app-1.json"], max_shape=10)   # doctest: +SKIP
>>> print(model.to_yaml())                            # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses

from pathlib import Path

import numpy as np

from spn.description.model import THINK_TIME_PLACEHOLDER
from spn.exceptions import LogFormatError, ModelError
from spn.limits import MAX_PHASES
from spn.fit.erlang import MIN_TEST_SAMPLES, fit_delay, misfit_effect, phase_description
from spn.fit.scaling import FittedPhase, pooled_template, scaled_template
from spn.fit.write import FittedModel
from spn.logs.queries import query_runs
from spn.logs.records import Run
from spn.fit.whatif import WhatIf, parse_changes, what_if_run, with_what_if
from spn.logs.runs import check_distinct, load_runs, log_kind
from spn.logs.spark import read_spark_log
from spn.logs.spark_runs import spark_run, timed_jobs
from spn.logs.sizes import format_size, parse_size

__all__ = ["fit_logs", "FittedModel"]

#: a delay shorter than this (seconds) is not worth a phase
MIN_DELAY_S = 0.001

#: significant digits of the numbers written into a model
_DIGITS = 6

#: the think time (s) written when no log says one and one user is modelled: with one user Z does
#: not change R; ``reference.think_time_placeholder`` marks it (spn.pipeline.notices refuses it for N > 1)
PLACEHOLDER_THINK_TIME = 1.0


def fit_logs(paths, *, per_query: bool = False, input_size=None, max_shape: int = 10, method: str = "mle",
             empirical: bool = False, think_time: float | None = None, users: int | None = None,
             containers: int | None = None, stage_groups: bool = False, delays: bool = True,
             allow_incomplete: bool = False, name: str | None = None, warmup_runs: int = 0,
             what_if=None, test_laws: bool = True, origins=None) -> FittedModel:
    """Fit a model description to one or more logs (see the module doc for the three modes).

    ``max_shape`` caps every Erlang shape (delays get exactly ``max_shape``);
    ``empirical=True`` writes the measured samples (``distribution:
    empirical``) for ``spn simulate`` instead of Erlang laws; ``think_time``
    overrides the estimate (required when none can be made and more than one
    user is asked for: a :class:`~spn.exceptions.ModelError` otherwise; with one
    user :data:`PLACEHOLDER_THINK_TIME` is written and marked in ``reference``); ``users`` defaults to the users seen (per query) or 1;
    ``containers`` overrides the cores read from the log; ``warmup_runs``
    (per query) leaves out the first runs of the query in each log. A log given
    twice (the same file, or a copy of it) is a :class:`~spn.exceptions.LogFormatError`.
    ``what_if`` (``KEY=VALUE`` items or a mapping, :mod:`spn.fit.whatif`) fits
    the configuration they describe instead of the logs' own. ``test_laws=False`` leaves out each law's
    goodness of fit (a parametric bootstrap, 0.1-1 s a stage; a model only evaluated needs none).
    ``origins`` names the logs in the model's provenance (default: their paths), e.g. the History
    Server URL a log was downloaded from.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ModelError("give at least one log")
    if int(max_shape) != max_shape or max_shape < 1:
        raise ModelError(f"max_shape must be an integer >= 1, got {max_shape!r}", option="max_shape")
    if warmup_runs and not per_query:
        raise ModelError("warm-up runs apply to per-query fitting only", option="per_query")
    if per_query and input_size is not None:
        raise ModelError("per-query fitting and a target input size cannot be combined: fit one question at a time",
                         option="input_size")
    target = None if input_size is None else parse_size(input_size)
    changes = parse_changes(what_if) if what_if else {}
    if changes and (per_query or target is not None):
        raise ModelError("what-if predictions start from whole-application logs of one configuration: they "
                         "cannot be combined with per-query fitting or a two-log input size (use input-size=)",
                         option="what_if")
    if not per_query and think_time is None and users is not None and users > 1:
        # without --per-query no log says how long a user thinks, and with several users Z changes R
        raise ModelError(f"{users} users need a think time: the logs give none without --per-query (one "
                         "repeated query); give the mean pause between a user's jobs in seconds",
                         option="think_time")
    placeholder = not per_query and think_time is None
    notes = []
    what_ifs = []
    if per_query:
        found = [query_runs(p, allow_incomplete=allow_incomplete, stage_groups=stage_groups,
                            warmup_runs=warmup_runs) for p in paths]
        check_distinct(zip(paths, [f.runs[0].digest for f in found]))
        runs = [run for f in found for run in f.runs]
        gaps = [g for f in found for g in f.think_gaps]
        seen_users = max(f.streams for f in found)
        for p, f in zip(paths, found):
            notes.append(f"{p.name}: {len(f.runs)} runs of a {f.jobs_per_query}-job query by {f.streams} "
                         f"user(s) (job groups); {f.skipped_jobs} other job(s) left out")
        if think_time is None:
            if not gaps or any(f.overlapping and f.streams == 1 for f in found):
                raise ModelError(
                    "cannot estimate the think time from the log (the queries of one user never follow one "
                    "another, or jobs of several users overlap without job groups): give --think-time"
                )
            think_time = float(np.mean(gaps))
            think_how = f"mean of {len(gaps)} gaps between a user's query end and next submission"
        else:
            think_how = "given (--think-time)"
        users = users or seen_users
    elif changes:
        what_ifs = [_what_if(p, changes, allow_incomplete=allow_incomplete, stage_groups=stage_groups)
                    for p in paths]
        runs = [w.run for w in what_ifs]
        check_distinct(zip(paths, [run.digest for run in runs]))
        think_how = "given (--think-time)" if think_time is not None else "placeholder (1 user)"
        think_time = PLACEHOLDER_THINK_TIME if think_time is None else think_time
        users = users or 1
    else:
        runs = [load_runs(p, allow_incomplete=allow_incomplete, stage_groups=stage_groups) for p in paths]
        if target is None:  # else after the template, whose refusal of logs at one input size says more
            check_distinct(zip(paths, [run.digest for run in runs]))
        kinds = {run.framework for run in runs}
        if len(kinds) > 1:
            raise LogFormatError("the logs mix Spark event logs and MapReduce job histories: fit them apart")
        think_how = "given (--think-time)" if think_time is not None else (
            "placeholder: with 1 user the think time does not change the mean execution time; "
            "set it for several users (--set workload.think_time=SECONDS)")
        think_time = PLACEHOLDER_THINK_TIME if think_time is None else think_time
        users = users or 1
    for run in runs:
        for note in run.notes:
            notes.append(f"{Path(run.source).name}: {note}")
    if target is not None:
        template = scaled_template(runs, target, method=method, max_shape=max_shape, test=test_laws)
        check_distinct(zip(paths, [run.digest for run in runs]))
    else:
        # a what-if run's tasks are the pilot's, in its order on other slots: their order says nothing
        as_run = all(w.target == w.pilot for w in what_ifs)
        template = pooled_template(runs, method=method, max_shape=max_shape, as_run=as_run, test=test_laws)
    if origins is not None:     # the provenance names each log where it came from
        named = {str(path): str(origin) for path, origin in zip(paths, origins)}
        paths = [named[str(path)] for path in paths]
        runs = [dataclasses.replace(run, source=named.get(str(run.source), run.source)) for run in runs]
    model = _describe(runs, template, paths=paths, per_query=per_query, think_time=think_time,
                      think_how=think_how, users=users, containers=containers, max_shape=max_shape,
                      empirical=empirical, delays=delays, method=method, name=name, notes=notes,
                      input_size=target, placeholder=placeholder)
    return with_what_if(model, what_ifs, changes) if changes else model


def _what_if(path: Path, changes, *, allow_incomplete: bool, stage_groups: bool) -> WhatIf:
    """One pilot log rewritten for the target configuration."""
    if log_kind(path) != "spark":
        raise LogFormatError(f"{path}: what-if predictions need a Spark event log (task metrics); "
                             "this is a MapReduce job history", option="what_if")
    app = read_spark_log(path)
    run = spark_run(app, timed_jobs(app, allow_incomplete=allow_incomplete, stage_groups=stage_groups))
    return what_if_run(app, run, changes)


def _describe(runs, template, *, paths, per_query, think_time, think_how, users, containers, max_shape,
              empirical, delays, method, name, notes, input_size, placeholder=False) -> FittedModel:
    """The description of ``template`` (phases, delay phases, edges, cluster, workload), with its provenance."""
    jobs, end_delays = template
    first = runs[0]
    phases, edges, phase_notes = [], [], {}
    warnings_out = list(notes)
    job_exits = []
    used_names = set()

    def unique(base):
        candidate, n = base, 2
        while candidate in used_names:
            candidate, n = f"{base}-{n}", n + 1
        used_names.add(candidate)
        return candidate

    for j, (job, stages, job_delays) in enumerate(jobs):
        names = [unique(stage.name) for stage in stages]
        for stage, phase_name in zip(stages, names):
            stage.name = phase_name
            phases.append(stage)
        for k, record in enumerate(job.stages):
            for p in record.parents:
                edges.append((names[p], names[k]))
        sources = [names[k] for k, record in enumerate(job.stages) if not record.parents]
        children = {p for record in job.stages for p in record.parents}
        sinks = [names[k] for k in range(len(job.stages)) if k not in children]
        entry = sources
        positive = [d for d in job_delays if d > 0]
        if delays and positive and np.mean(job_delays) >= MIN_DELAY_S:
            delay_name = unique(f"driver-job{job.job_ids[0]}")
            phases.append(FittedPhase(delay_name, "delay", 1, fit_delay(job_delays, max_shape=max_shape),
                                      samples_from=len(job_delays)))
            edges += [(delay_name, s) for s in sources]
            entry = [delay_name]
        job_exits.append(sinks)
        for i in job.after:
            edges += [(a, b) for a in job_exits[i] for b in entry]
    if delays and np.mean(end_delays) >= MIN_DELAY_S and any(d > 0 for d in end_delays):
        later = {i for job, _, _ in jobs for i in job.after}
        last_exits = [s for j, exits in enumerate(job_exits) if j not in later for s in exits]
        end_name = unique("driver-end")
        phases.append(FittedPhase(end_name, "delay", 1, fit_delay(end_delays, max_shape=max_shape),
                                  samples_from=len(end_delays)))
        edges += [(s, end_name) for s in last_exits]

    if len(phases) > MAX_PHASES:
        delay_phases = sum(phase.kind == "delay" for phase in phases)
        raise LogFormatError(
            f"{first.source}: {len(phases):,} phases ({len(phases) - delay_phases:,} stages, {delay_phases:,} delays), "
            f"more than a description may have ({MAX_PHASES:,} at most): leave the delays out (--no-delays), merge "
            "the stages that ran together (--stage-groups), or model one repeated query (--per-query)")
    cores = [run.containers for run in runs if run.containers]
    if containers is None:
        if not cores:
            raise LogFormatError(f"{first.source}: the log does not say how many cores the application had: "
                                 "give the number of containers")
        containers = cores[0]
        containers_how = first.containers_how
        if len(set(cores)) > 1:
            warnings_out.append(f"the logs ran with different core counts {sorted(set(cores))}: the model uses "
                                f"{containers} (the first log's); give the number of containers to use another")
    else:
        containers_how = "given (--containers)"

    description = {
        "name": name or _model_name(first, per_query),
        "framework": first.framework,
        "workload": {"users": int(users), "think_time": float(_round(think_time))},
        "cluster": {"containers": int(containers)},
        # Spark (FIFO scheduling inside an application) and YARN (FIFO ordering inside a capacity-scheduler
        # queue) hand a free container to the oldest job; measured against Spark's FIFO scheduler, fifo is
        # within 9 % where the paper's gate is up to 60 % off (docs/scheduling-spark.md)
        "scheduler": {"policy": "fifo"},
        "phases": [],
        "edges": [list(e) for e in dict.fromkeys(edges)],
    }
    provenance, law_warnings = {}, []
    for phase in phases:
        description["phases"].append(phase_description(phase.name, phase.tasks, phase.fit, empirical=empirical,
                                                       digits=_DIGITS, driver=phase.kind == "delay"))
        phase_notes[phase.name] = _phase_comment(phase)
        provenance[phase.name] = _phase_provenance(phase, empirical=empirical)
        if not empirical and phase.fit.quality is not None and phase.fit.quality.rejected:
            law_warnings.append(_rejection_warning(phase))
    if not description["edges"]:
        del description["edges"]
    description["reference"] = _reference(runs, paths=paths, per_query=per_query, input_size=input_size,
                                          think_time=think_time, provenance=provenance, placeholder=placeholder)
    header = _header(runs, paths=paths, per_query=per_query, input_size=input_size, max_shape=max_shape,
                     method=method, empirical=empirical, delays=delays, containers_how=containers_how,
                     think_how=think_how, phases=phases)
    from spn.description import parse_description

    parse_description(description)  # what is written must be a valid description
    return FittedModel(description, tuple(header), phase_notes, tuple(warnings_out), tuple(law_warnings))


def _model_name(run: Run, per_query: bool) -> str:
    """The log's file name without its suffixes (``-query`` appended per query)."""
    stem = Path(run.source).name
    for suffix in (".gz", ".json", ".jhist", ".inprogress"):
        stem = stem.removesuffix(suffix)
    stem = stem.removeprefix("eventlog_v2_")
    return stem + ("-query" if per_query else "")


def _round(value: float) -> float:
    return float(f"{value:.{_DIGITS}g}")


def _phase_comment(phase: FittedPhase) -> list[str]:
    """The comment lines above a phase: its samples, spread, fitted shape and goodness of fit."""
    fit = phase.fit.fit
    if phase.kind == "delay":
        values = ", ".join(f"{s:.4g}" for s in phase.fit.samples[:6])
        more = ", ..." if len(phase.fit.samples) > 6 else ""
        return [f"delay (no task of the job running: driver, scheduling, start-up): {values}{more} s "
                f"in {phase.samples_from} run(s); 1 task, Erlang shape {fit.shape} (= --max-shape, nearly constant), "
                "no container"]
    samples = np.asarray(phase.fit.samples)
    cv = float(samples.std(ddof=1) / samples.mean()) if samples.size > 1 else float("nan")
    ks = "n/a" if fit.ks is None else f"{fit.ks:.3f}"
    uncapped = phase.fit.uncapped_shape or 0
    capped = (f", capped; the data ask for {uncapped}" + ("+ (nearly constant)" if uncapped >= 1000 else "")
              if phase.fit.capped else "")
    label = phase.stage_name[:70] + ("..." if len(phase.stage_name) > 70 else "")
    lines = [f"stage id(s) {', '.join(map(str, phase.stage_ids))} \"{label}\": {fit.n} task samples"
             + (f" from {phase.samples_from} runs" if phase.samples_from > 1 else "")
             + f", mean {fit.mean:.4g} s, cv {cv:.3g}; Erlang shape {fit.shape} ({fit.method}{capped})"
             + ("" if phase.fit.quality is not None else f", KS {ks}")]
    if phase.fit.quality is not None:
        lines.append(f"fit quality: {_quality_text(phase.fit.quality)}")
    lines += list(phase.notes)
    return lines


def _quality_text(quality) -> str:
    """``KS D 0.192, p <= 0.001 (...): rejected at 1 %``: the comment's words for a phase's goodness of fit."""
    if quality.ks_p_value is None:
        return f"{quality.samples} samples: too few to test (a verdict needs {MIN_TEST_SAMPLES})"
    return f"{_quality_test(quality)}: {'rejected' if quality.rejected else 'not rejected'} at 1 %"


def _quality_test(quality, *, detail: bool = True) -> str:
    """The KS distance and p-values of a tested fit, in words (``detail``: how p was found)."""
    floor = 1.0 / (quality.replicates + 1)   # the bootstrap's p cannot go lower
    p = f"<= {floor:.2g}" if quality.ks_p_value <= floor else f"{quality.ks_p_value:.2g}"
    how = (f" (parametric bootstrap, {quality.replicates} refits; kstest's {quality.ks_p_value_kstest:.2g} "
           "ignores the fitting)") if detail else ""
    return f"KS D {quality.ks_distance:.3f}, p {p}{how}"


def _rejection_warning(phase: FittedPhase) -> str:
    """One line on a phase whose Erlang law is rejected: the test, where the law misses, and the way out.

    The net carries Erlang, exponential and deterministic laws only (no two-phase law a rejected
    Erlang could fall back to), so the way out is the measured sample, for simulation."""
    fit, quality = phase.fit.fit, phase.fit.quality
    return (f"{phase.name}: Erlang({fit.shape}) rejected at 1 % ({_quality_test(quality, detail=False)}, "
            f"{quality.samples} samples): {misfit_effect(phase.fit)}; `spn fit --empirical` keeps the measured "
            "law (for spn simulate)")


def _phase_provenance(phase: FittedPhase, *, empirical: bool = False) -> dict:
    """A phase's entry under ``reference.phases``."""
    fit = phase.fit.fit
    entry = {"kind": phase.kind, "samples": int(fit.n), "mean_s": _round(fit.mean), "shape": int(fit.shape)}
    if phase.kind == "stage":
        entry["stage_ids"] = [int(s) for s in phase.stage_ids]
        entry["shape_uncapped"] = int(phase.fit.uncapped_shape or fit.shape)
        if phase.fit.quality is not None:
            quality = phase.fit.quality.as_dict()
            entry.update({key: (_round(value) if isinstance(value, float) else value) for key, value in quality.items()})
            entry["law_rejected"] = bool(phase.fit.quality.rejected and not empirical)
        if phase.scaling:
            entry["scaling"] = phase.scaling
    return entry


def _reference(runs, *, paths, per_query, input_size, think_time, provenance, placeholder=False) -> dict:
    """The ``reference`` section: the logs, what was measured in them, and each phase's provenance."""
    reference = {"fitted_by": "spn fit", "logs": [str(p) for p in paths]}
    spans = [run.span for run in runs if run.span is not None]
    if per_query:
        reference["query_runs"] = len(runs)
        reference["measured_mean_query_time_s"] = _round(float(np.mean(spans)))
        reference["measured_think_time_s"] = _round(think_time)
    elif input_size is not None:
        reference["reference_runs"] = [
            {"log": run.source, "input_bytes": int(run.input_bytes),
             "measured_execution_time_s": None if run.execution_time is None else _round(run.execution_time)}
            for run in runs]
        reference["target_input_bytes"] = int(input_size)
    else:
        # without the idle gaps (spn.logs.idle, under idle_gaps): the jobs' time, what the model predicts
        reference["measured_execution_time_s"] = [None if run.execution_time is None else _round(run.execution_time)
                                                  for run in runs]
        reference["input_bytes"] = [int(run.input_bytes) for run in runs]
    if placeholder:
        reference[THINK_TIME_PLACEHOLDER] = _round(think_time)
    idle = [{"log": run.source, "application_span_s": _round(run.span), **run.idle.reference()}
            for run in runs if getattr(run, "idle", None)]
    if idle:  # gaps with no job active (spn.logs.idle): left out of measured_execution_time_s and of the delays
        reference["idle_gaps"] = idle
    reference["phases"] = provenance
    return reference


def _header(runs, *, paths, per_query, input_size, max_shape, method, empirical, delays, containers_how,
            think_how, phases) -> list[str]:
    """The comment lines at the top of the file: where the model came from and how it was fitted."""
    first = runs[0]
    lines = [f"Fitted by `spn fit` from {', '.join(str(p) for p in paths)}",
             first.label.split(", query run ")[0]]
    if per_query:
        lines.append(f"Mode: one query, task times pooled over {len(runs)} repetitions; "
                     "`spn solve MODEL --set workload.users=N` predicts N users")
    elif input_size is not None:
        sizes = ", ".join(format_size(run.input_bytes) for run in runs)
        lines.append(f"Mode: prediction for input size {format_size(input_size)} from logs at {sizes} "
                     "(input size = the most bytes one stage read); fixed stages keep their task count, "
                     "variable ones scale with the input")
    elif len(runs) > 1:
        lines.append(f"Mode: {len(runs)} runs of one application, task times pooled per stage")
    else:
        lines.append("Mode: the whole application, its jobs chained in submission order")
    if any(job.inferred_dag for run in runs for job in run.jobs):
        lines.append("No Parent IDs in this (Spark 1.x) log: stage DAG inferred from stage times")
    lines.append(f"Task time: wall time (finish - launch) of successful attempts, Erlang by {method}; shapes "
                 f"capped at --max-shape {max_shape} so that `spn solve` stays tractable")
    if empirical:
        lines.append("Task times are the measured samples (distribution: empirical): use `spn simulate`; "
                     "`spn solve` takes Erlang laws only (refit without --empirical)")
    if delays:
        if any(p.kind == "delay" for p in phases):
            lines.append("driver-* phases: time when none of a job's tasks ran (start-up, driver work, "
                         "scheduling gaps), as 1 task of the measured mean with Erlang shape --max-shape; "
                         "kind: driver, so it holds no container (the driver runs outside the executors)")
    else:
        lines.append("Delays left out (--no-delays): the model covers task time only")
    idle = [run.idle for run in runs if getattr(run, "idle", None)]
    if idle:
        lines.append(f"Idle gaps left out (no job active; spn.logs.idle): {sum(i.total_s for i in idle):.4g} s in "
                     f"{sum(len(i.gaps) for i in idle)} gap(s), listed under reference.idle_gaps")
    lines.append(f"containers: {containers_how}")
    lines.append(f"think time: {think_how}")
    return lines
