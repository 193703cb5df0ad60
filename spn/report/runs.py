"""What one measured run was, read from its Spark event log: the facts a report shows of it.

Everything here is a summary of the log, never its content (no task, host or stage name is kept):

- :func:`run_summary`: its configuration and measured time (the span, and the execution time that
  ``spn fit`` models: the span without idle gaps, :mod:`spn.logs.idle`), the **executor-hours** the
  executors were held for and the **idle executor-hours** in which an executor ran no task at all (its cores likewise: core-hours held and idle), and from Sparklens' replay
  (:mod:`spn.baselines.sparklens`): the **driver time** (no task running), the **critical path** (the run
  replayed on as many slots as it has tasks: driver time plus the longest chain of tasks, the time no
  number of executors beats) and the **ideal time** (driver time plus the task-seconds spread evenly over
  the run's slots: the time if no slot ever idled while work was left);
- :func:`timeline`: the stages over time and, in :data:`BINS` slices of the run, the executors alive, the
  executors running at least one task and the tasks running (time averages over each slice);
- :func:`stage_table`: per stage, its tasks, duration, skew (longest / median task time), tasks per slot
  (the waves its tasks make on the run's slots) and the fit of its task-time law (``spn fit --report``).

An executor is *held* from its ``ExecutorAdded`` to its ``ExecutorRemoved`` (or the application's end);
a log without executors (local mode) has one, the driver, with the application's cores, all run long.

>>> busy_integral([(0, 2000), (1000, 3000)], [0, 1000, 2000, 4000])      # task-seconds up to each edge
[0.0, 1.0, 3.0, 4.0]
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spn.exceptions import LogFormatError
from spn.logs.intervals import covered_seconds, union
from spn.logs.spark_stages import exact_sum, sum_in_order

__all__ = ["read_application", "run_summary", "timeline", "stage_table", "busy_integral", "BINS"]

#: slices of the run the executor timeline is averaged over (a summary, whatever the log's size)
BINS = 240


def read_application(path):
    """The :class:`~spn.logs.spark.SparkApplication` of a Spark event log, read as every command reads it, and
    its :class:`~spn.logs.records.Run`; a MapReduce job history is refused (a report is of a Spark run)."""
    from spn.logs.runs import log_kind
    from spn.logs.spark import read_spark_log
    from spn.logs.spark_runs import spark_run, timed_jobs

    if log_kind(path) != "spark":
        raise LogFormatError(f"{path}: spn report reads Spark event logs; this is a MapReduce job history")
    app = read_spark_log(Path(path))
    if app.start_ms is None or app.end_ms is None:
        raise LogFormatError(f"{path}: the log has no application span (ApplicationStart and ApplicationEnd): "
                             "a report is of a finished run")
    return app, spark_run(app, timed_jobs(app))


def run_summary(app, run) -> dict:
    """The configuration, measured time, executor-hours (held and idle) and Sparklens' times of one run."""
    from spn.baselines.sparklens import replay, sparklens_profile
    from spn.fit.whatif import pilot_setting

    setting = pilot_setting(app, run)
    held = _executors_held(app, setting.cores)
    tasks = app.tasks
    owner = _owners(tasks, held)
    spans = np.column_stack((tasks.launch_ms, tasks.finish_ms))
    executor_seconds = idle_seconds = core_seconds = 0.0
    for rows, (start, end, cores) in zip(_rows_of(owner, len(held)), held.values()):
        alive = (end - start) / 1000.0
        ran = covered_seconds(spans[rows], start, end)
        executor_seconds += alive
        idle_seconds += alive - ran
        core_seconds += cores * alive
    clipped = np.minimum(tasks.finish_ms, app.end_ms) - np.maximum(tasks.launch_ms, app.start_ms)
    task_seconds = exact_sum(np.maximum(clipped, 0)) / 1000.0
    profile = sparklens_profile(app)
    slots = setting.slots
    critical = replay(profile, max(len(app.tasks), 1)).seconds
    ideal = profile.driver_seconds + task_seconds / slots
    return {
        "log": Path(app.path).name, "app_id": app.app_id, "executors": setting.executors, "cores": setting.cores,
        "slots": slots, "input_bytes": setting.input_bytes, "span_s": float(run.span),
        # what spn fit models and spn predict predicts: the span without its idle gaps (spn.logs.idle)
        "seconds": float(run.execution_time),
        "tasks": len(app.tasks), "executor_hours": executor_seconds / 3600.0,
        "idle_executor_hours": idle_seconds / 3600.0, "core_hours": core_seconds / 3600.0,
        "idle_core_hours": max(core_seconds - task_seconds, 0.0) / 3600.0, "task_hours": task_seconds / 3600.0,
        "driver_s": profile.driver_seconds, "critical_path_s": critical, "ideal_s": ideal,
    }


#: the one executor of a log without executors (local mode: the driver runs the tasks)
_LOCAL = "driver"


def _executors_held(app, cores: int) -> dict[str, tuple[int, int, int]]:
    """``executor -> (from, to, cores)`` (ms, clipped to the application's span); local mode: the driver."""
    held = {}
    for e in app.executors:
        if e.executor_id == _LOCAL:
            continue
        start = max(e.added_ms if e.added_ms is not None else app.start_ms, app.start_ms)
        end = min(e.removed_ms if e.removed_ms is not None else app.end_ms, app.end_ms)
        if end > start:
            held[e.executor_id] = (start, end, e.cores or cores)
    if not held:
        from spn.logs.spark_stages import application_cores

        held[_LOCAL] = (app.start_ms, app.end_ms, application_cores(app)[0] or cores)
    return held


def _owners(tasks, held: dict) -> np.ndarray:
    """Per task, the position in ``held`` of the executor it ran on; a task on none of them is the driver's where
    the driver is held (local mode), else -1."""
    position = {executor_id: k for k, executor_id in enumerate(held)}
    # by code + 1: code -1 (no executor id) comes first
    by_code = np.array([position.get(_LOCAL, -1)] + [position.get(name, position.get(_LOCAL, -1))
                                                     for name in tasks.executor_ids], dtype=np.int64)
    return by_code[tasks.executor.astype(np.int64) + 1]


def _rows_of(owner: np.ndarray, count: int) -> list[np.ndarray]:
    """The rows (in log order) whose ``owner`` is 0, 1, ..., ``count - 1``: one sort, not a pass per executor."""
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(count + 1))
    return [order[bounds[k]:bounds[k + 1]] for k in range(count)]


def busy_integral(intervals, edges) -> list[float]:
    """``F(edge)``: the seconds of interval time (ms) before each edge (ms), summed over ``intervals``.

    The count of open intervals is a step function; its integral is piecewise linear between the
    intervals' ends, so sampling it at the ends and interpolating at the edges is exact. The mean
    number of open intervals over a slice ``[e0, e1]`` is ``(F(e1) - F(e0)) / (e1 - e0)``.
    """
    if not len(intervals):
        return [0.0 for _ in edges]
    bounds = np.asarray(intervals, dtype=np.float64).reshape(-1, 2)
    times = np.concatenate([bounds[:, 0], bounds[:, 1]])
    change = np.concatenate([np.ones(len(bounds)), -np.ones(len(bounds))])
    order = np.argsort(times, kind="stable")
    times, change = times[order], change[order]
    open_after = np.cumsum(change)
    area = np.concatenate([[0.0], np.cumsum(open_after[:-1] * np.diff(times))])
    return [float(x) for x in np.interp(np.asarray(edges, dtype=np.float64), times, area, left=0.0,
                                        right=area[-1]) / 1000.0]


def timeline(app, bins: int = BINS) -> dict:
    """The stages over time (seconds from the application's start) and the executors' use in ``bins`` slices."""
    from spn.logs.spark_stages import stage_jobs

    start, end = app.start_ms, app.end_ms
    span = max(end - start, 1)
    jobs = stage_jobs(app)
    stages = []
    for stage in app.stages:
        if stage.submission_ms is None and stage.completion_ms is None:
            continue
        s0 = stage.submission_ms if stage.submission_ms is not None else stage.completion_ms
        s1 = stage.completion_ms if stage.completion_ms is not None else end
        stages.append({"stage": stage.stage_id, "attempt": stage.attempt, "job": jobs.get(stage.stage_id),
                       "start_s": (s0 - start) / 1000.0, "end_s": (s1 - start) / 1000.0,
                       "tasks": stage.num_tasks, "failed": stage.failed})
    stages.sort(key=lambda s: (s["start_s"], s["stage"], s["attempt"]))
    held = _executors_held(app, 1)
    edges = [start + span * k / bins for k in range(bins + 1)]
    owner = _owners(app.tasks, held)
    clipped = np.column_stack((np.maximum(app.tasks.launch_ms, start), np.minimum(app.tasks.finish_ms, end)))
    # an executor is busy while one of its tasks runs: the union of its tasks' intervals (of some length)
    pieces = [union(clipped[rows]) for rows in _rows_of(owner, len(held))]
    busy = np.concatenate([p[p[:, 1] > p[:, 0]] for p in pieces]) if pieces else []
    alive = [(a, b) for a, b, _ in held.values()]
    tasks = clipped[app.tasks.finish_ms > app.tasks.launch_ms]
    width = span / bins / 1000.0

    def means(intervals):
        f = busy_integral(intervals, edges)
        return [(f[k + 1] - f[k]) / width for k in range(bins)]

    return {"span_s": span / 1000.0, "stages": stages, "slice_s": width,
            "executors_alive": means(alive), "executors_busy": means(busy), "tasks_running": means(tasks)}


def stage_table(app, slots: int, fitted: dict | None = None) -> list[dict]:
    """One row per stage that ran tasks: tasks, attempts, duration, task times, skew, tasks per slot and the
    fit of its law from ``fitted`` (a fitted description's ``reference.phases``, as ``spn fit --report`` reads)."""
    from spn.logs.spark_stages import stage_jobs, stage_times, successful_tasks

    submitted, completed = stage_times(app)
    jobs = stage_jobs(app)
    stage_ids, counts = np.unique(app.tasks.stage_id, return_counts=True)
    attempts = dict(zip(stage_ids.tolist(), counts.tolist()))
    phase_of = {}
    for name, ref in (fitted or {}).items():
        for sid in ref.get("stage_ids", ()):
            phase_of[sid] = (name, ref)
    rows = []
    for sid, tasks in sorted(successful_tasks(app).items()):
        times = tasks.duration
        median = float(np.median(times))
        longest = float(times.max())
        first = submitted.get(sid, int(tasks.launch_ms.min()))
        last = completed.get(sid, int(tasks.finish_ms.max()))
        row = {"stage": sid, "job": jobs.get(sid), "tasks": len(tasks), "attempts": attempts[sid],
               "duration_s": (last - first) / 1000.0, "mean_task_s": sum_in_order(times) / len(times),
               "median_task_s": median, "max_task_s": longest, "skew": longest / median if median > 0 else None,
               "tasks_per_slot": len(tasks) / slots, "phase": None, "law": None, "ks_distance": None,
               "ks_p_value": None, "ks_p_at_most": False, "verdict": None}
        if sid in phase_of:
            name, ref = phase_of[sid]
            row.update(phase=name, law=f"Erlang({ref['shape']})" if "shape" in ref else None,
                       ks_distance=ref.get("ks_distance"), ks_p_value=ref.get("ks_p_value"), verdict=ref.get("verdict"),
                       # the bootstrap's smallest p-value, 1/(replicates + 1), is an upper bound (spn fit --report)
                       ks_p_at_most=bool(ref.get("bootstrap_replicates")) and ref.get("ks_p_value") is not None
                       and ref["ks_p_value"] <= 1.0 / (ref["bootstrap_replicates"] + 1) + 1e-12)
        rows.append(row)
    return rows
