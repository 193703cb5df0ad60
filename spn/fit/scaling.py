"""Task-time laws per phase from several runs: pooled (repetitions) or scaled to another input size.

A :class:`Template` holds, job by job, the fitted phases of the stages and
the measured delays of every run. :func:`pooled_template` pools the samples
of runs of one configuration; :func:`scaled_template` predicts the phases at
a target input size from runs at different sizes (PERIDOT's observation,
paper "PERIDOT: quick predictions from two small reference runs"):

- a stage whose task count is the same in every run is **fixed**: it keeps
  its pooled task time unless that clearly grows with the input (slope
  significant at 1 % and the change > 10 %): then its mean is extrapolated
  linearly in the input size;
- a stage whose task count changes is **variable**: its task count is
  extrapolated linearly in the input size (least squares through the
  references), and its mean task time follows PERIDOT's constant wave time,
  with one refinement: the constant is the mean of the tasks after the first
  wave (warm executors), and the first wave's excess (a fresh JVM's cold
  start) is paid once per run, not by every task at a larger size.

The shape of a scaled stage is fitted to the durations divided by their own
run's mean. Delays are kept as measured: their mean over the runs is taken
when the description is written.

>>> from spn.logs.records import JobRecord, Run, StageRecord
>>> def run(durations):
...     stage = StageRecord((0,), "scan", len(durations), tuple(durations), ())
...     return Run("app.json", "app", "spark", (JobRecord((0,), (stage,), 0.5, ()),), 0.0, 0, 2, "given", 9.0)
>>> template = pooled_template([run([1.0, 1.2]), run([0.8, 1.0])], method="mle", max_shape=10)
>>> phase = template.jobs[0][1][0]
>>> phase.name, phase.tasks, round(phase.fit.fit.mean, 6), template.jobs[0][2]
('stage-0', 2, 1.0, [0.5, 0.5])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spn.exceptions import LogFormatError, ModelError
from spn.fit.erlang import PhaseFit, fit_phase, fit_pooled
from spn.fit.order import order_effect, order_note
from spn.logs.records import JobRecord, Run, StageRecord
from spn.logs.sizes import format_size

__all__ = ["FittedPhase", "Template", "pooled_template", "scaled_template"]


@dataclass
class FittedPhase:
    """A phase of the model: its fitted task-time law and where it came from.

    ``kind`` is ``"stage"`` or ``"delay"``; ``samples_from`` the number of
    runs whose samples were used; ``scaling`` (``"fixed"`` or ``"variable"``)
    and ``notes`` say how a scaled stage was predicted.
    """

    name: str
    kind: str
    tasks: int
    fit: PhaseFit
    stage_ids: tuple = ()
    stage_name: str = ""
    samples_from: int = 0
    scaling: str | None = None
    notes: tuple = ()


class Template(NamedTuple):
    """Job by job ``(job of the first run, its stage phases, its delay in every run)``; the end delays."""

    jobs: list[tuple[JobRecord, list[FittedPhase], list[float]]]
    end_delays: list[float]


def pooled_template(runs: list[Run], *, method: str, max_shape: int, as_run: bool = True,
                    test: bool = True) -> Template:
    """Phases for runs of one structure: samples pooled per stage position.

    ``as_run``: the runs' tasks are listed as they ran (not carried to another configuration), so a stage's
    launch order can be replayed (:mod:`spn.fit.order`); ``test``: each law's goodness of fit too.

    Raises :class:`~spn.exceptions.LogFormatError` when the runs differ in
    jobs, stages, task counts or DAG, or a stage has no successful task.
    """
    _check_same_structure(runs, tasks_may_differ=False)
    first = runs[0]
    jobs = []
    for j, job in enumerate(first.jobs):
        stages = []
        for k, stage in enumerate(job.stages):
            groups = [run.jobs[j].stages[k].durations for run in runs]
            groups = [g for g in groups if g]
            if not groups:
                raise LogFormatError(f"{first.source}: {_phase_name(stage)} has no successful task attempt to fit")
            # repetitions of one configuration: one law, so the raw durations are pooled as they are
            phase_fit = fit_phase(np.concatenate([np.asarray(g, dtype=float) for g in groups]), method=method,
                                  max_shape=max_shape, test=test)
            note = _order_note(runs, j, k) if as_run else None
            stages.append(FittedPhase(_phase_name(stage), "stage", stage.tasks, phase_fit, stage.stage_ids,
                                      stage.name, len(groups), notes=(note,) if note else ()))
        jobs.append((job, stages, [run.jobs[j].delay for run in runs]))
    return Template(jobs, [run.end_delay for run in runs])


def _order_note(runs: list[Run], j: int, k: int) -> str | None:
    """The note on stage ``k`` of job ``j`` when its tasks' launch order shortened it (:mod:`spn.fit.order`);
    only Spark logs list a stage's tasks in launch order."""
    measured = [run for run in runs if run.framework == "spark" and run.containers]
    if not measured or len({run.containers for run in measured}) != 1:
        return None
    effects = [order_effect(run.jobs[j].stages[k].durations, run.containers) for run in measured]
    return order_note(effects, measured[0].containers)


def scaled_template(runs: list[Run], target: int, *, method: str, max_shape: int, test: bool = True) -> Template:
    """Phases for a ``target`` input size (bytes) from runs at different input sizes (fixed and variable stages);
    ``test``: each law's goodness of fit too.

    Raises :class:`~spn.exceptions.ModelError` for fewer than two runs and
    :class:`~spn.exceptions.LogFormatError` when the runs differ in structure,
    report no input size, or all read the same size.
    """
    if len(runs) < 2:
        raise ModelError("predicting another input size needs two or more logs of the same application at "
                         "different input sizes", option="input_size")
    _check_same_structure(runs, tasks_may_differ=True)
    sizes = np.array([run.input_bytes for run in runs], dtype=float)
    for run, size in zip(runs, sizes):
        if size <= 0:
            raise LogFormatError(f"{run.source}: the log reports no input bytes read (Input Metrics): its input "
                                 "size is unknown, so it cannot anchor a prediction for another input size",
                                 option="input_size")
    if np.ptp(sizes) <= 0.01 * sizes.mean():
        raise LogFormatError("the logs read the same input size "
                             f"({', '.join(format_size(s) for s in sizes)}): predicting another input size "
                             "needs logs at different sizes", option="input_size")
    first = runs[0]
    jobs = []
    for j, job in enumerate(first.jobs):
        stages = []
        for k, stage in enumerate(job.stages):
            records = [run.jobs[j].stages[k] for run in runs]
            counts = np.array([r.tasks for r in records], dtype=float)
            groups = [r.durations for r in records]
            if any(not g for g in groups):
                raise LogFormatError(f"{first.source}: {_phase_name(stage)} has no successful task attempt in "
                                     "every log")
            means = np.array([np.mean(g) for g in groups])
            if np.all(counts == counts[0]):
                kind, tasks = "fixed", int(counts[0])
                mean, how = _fixed_stage_mean(groups, sizes, target)
            else:
                kind = "variable"
                slope, intercept = np.polyfit(sizes, counts, 1)
                tasks = max(1, int(round(intercept + slope * target)))
                mean, rule = _variable_stage_mean(groups, [run.containers or 1 for run in runs], tasks)
                how = (f"tasks {', '.join(str(int(c)) for c in counts)} at "
                       f"{', '.join(format_size(s) for s in sizes)} -> {tasks} at {format_size(target)} "
                       f"(linear in input size); {rule}")
            phase_fit = fit_pooled(groups, mean=mean, method=method, max_shape=max_shape, test=test)
            note = f"{kind}: {how}; mean task time per log {', '.join(f'{m:.4g}' for m in means)} s"
            stages.append(FittedPhase(_phase_name(stage), "stage", tasks, phase_fit, stage.stage_ids, stage.name,
                                      len(groups), kind, (note,)))
        jobs.append((job, stages, [run.jobs[j].delay for run in runs]))
    return Template(jobs, [run.end_delay for run in runs])


def _check_same_structure(runs, *, tasks_may_differ: bool) -> None:
    """Raise LogFormatError unless all runs have the first one's jobs, stages, DAG (and task counts)."""
    first = runs[0]
    for run in runs[1:]:
        problem = None
        if len(run.jobs) != len(first.jobs):
            problem = f"{len(run.jobs)} jobs vs {len(first.jobs)}"
        else:
            for j, (a, b) in enumerate(zip(first.jobs, run.jobs)):
                if len(a.stages) != len(b.stages):
                    problem = f"job #{j + 1}: {len(b.stages)} stages vs {len(a.stages)}"
                elif a.after != b.after:
                    problem = f"job #{j + 1} waits for other jobs ({b.after} vs {a.after})"
                else:
                    for k, (s, t) in enumerate(zip(a.stages, b.stages)):
                        if s.parents != t.parents:
                            problem = f"job #{j + 1}, stage #{k + 1}: parents differ"
                        elif not tasks_may_differ and s.tasks != t.tasks:
                            problem = (f"job #{j + 1}, stage #{k + 1}: {t.tasks} tasks vs {s.tasks} (to predict "
                                       "another input size from logs at different sizes, give --input-size)")
                        if problem:
                            break
                if problem:
                    break
        if problem:
            raise LogFormatError(
                f"{run.source} ({run.label}) and {first.source} ({first.label}) are not runs of the same "
                f"application: {problem}"
            )


def check_same_application(runs) -> None:
    """Raise LogFormatError unless the runs are of one application (same jobs, stages and DAG; the task
    counts may differ with the input size), as the baselines and the fits take them.

    >>> check_same_application([])      # nothing to compare
    """
    for run in runs[1:]:
        if run.framework != runs[0].framework:
            raise LogFormatError(f"{run.source} ({run.framework}) and {runs[0].source} ({runs[0].framework}) are not "
                                 "runs of the same application: one framework's logs at a time")
    if runs:
        _check_same_structure(runs, tasks_may_differ=True)


def _phase_name(stage: StageRecord) -> str:
    """``stage-<id>`` (``stage-<a>-<b>`` for a merged group, ``stages-<a>-to-<z>`` past three), or its own name."""
    if stage.phase:
        return stage.phase
    return "stage-" + "-".join(str(s) for s in stage.stage_ids) if len(stage.stage_ids) <= 3 else (
        f"stages-{stage.stage_ids[0]}-to-{stage.stage_ids[-1]}")


def _variable_stage_mean(groups, cores, tasks: int) -> tuple[float, str]:
    """Mean task time of a variable stage with ``tasks`` tasks, from its durations (launch order) per log.

    A task's cost is taken as constant (PERIDOT's constant wave time) once
    the executors are warm: ``b``, the mean of the tasks launched after the
    first wave (the first ``cores`` tasks) of every log. The first wave of a
    fresh JVM is slower (class loading, interpreted code); its excess over
    ``b`` is paid once per run, ``a`` (mean over the logs, >= 0), so the mean
    at ``tasks`` tasks is ``b + a / tasks``. When no log has a task after its
    first wave, the pooled mean is used.
    """
    warm = [np.asarray(g[c:], dtype=float) for g, c in zip(groups, cores)]
    pooled = float(np.concatenate([np.asarray(g, dtype=float) for g in groups]).mean())
    if sum(w.size for w in warm) == 0:
        return pooled, "task time pooled over the logs (constant per task; no log has a second wave)"
    b = float(np.concatenate(warm).mean())
    excess = [float(np.sum(g[:c]) - min(c, len(g)) * b) for g, c in zip(groups, cores)]
    a = max(float(np.mean(excess)), 0.0)
    mean = b + a / tasks
    return mean, (f"task time: {b:.4g} s per warm task (after the first wave) + {a:.4g} s once for the cold "
                  f"first wave -> mean {mean:.4g} s")


def _fixed_stage_mean(groups, sizes, target) -> tuple[float, str]:
    """Mean task time of a fixed stage at ``target``: pooled, unless it clearly grows with the input size."""
    import scipy.stats  # here, not at the top: importing spn.fit stays quick

    x = np.concatenate([np.full(len(g), s) for g, s in zip(groups, sizes)])
    y = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    pooled = float(y.mean())
    means = [float(np.mean(g)) for g in groups]
    if len(y) >= 3 and np.ptp(x) > 0:
        fit = scipy.stats.linregress(x, y)
        change = fit.slope * np.ptp(sizes) / pooled
        if fit.pvalue < 0.01 and fit.slope > 0 and change > 0.10:
            predicted = max(float(fit.intercept + fit.slope * target), min(means) * 0.5)
            return predicted, (f"task count unchanged; task time grows with input size "
                               f"(slope p={fit.pvalue:.2g}): extrapolated linearly to {predicted:.4g} s")
    return pooled, "task count unchanged: task time pooled over the logs"
