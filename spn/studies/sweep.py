"""Parameter sweeps: solve a grid of configurations on Dask, stream rows to a CSV, resume, plot.

``spn sweep MODEL --grid cluster.containers=10,20,40 --grid workload.users=1..5 --out results.csv``
solves every combination of the grid values (the Cartesian product, first
``--grid`` varying slowest) and writes one CSV row per point *as soon as it is
solved*, in the order points finish. Each row is written with a single write and
flushed, so a sweep killed at any moment keeps every row it finished.

The grid is never listed: its size is the product of the dimensions' sizes,
checked against :data:`~spn.studies.plan.MAX_POINTS` before anything else, and
points are generated one at a time (a Dask cluster holds a few per worker).
Every value of a list dimension and both ends of a range are validated before
anything is solved (each with the other dimensions at their first value); a point
that is invalid otherwise (a combination, a value inside a range) is recorded as
a failed point.

The output files follow :mod:`spn.io.output`: an existing ``--out`` is never
replaced without ``force``, and a new one appears only with its first row (until
then it is a hidden temporary file, removed if the sweep stops). Beside it,
``OUT.sweep.json`` records what the sweep was started with (:class:`SweepRecord`:
a hash of the description after ``--set``, the overrides, the grid, the solver
settings, the percentiles and the deadline). ``resume=True`` reads the finished
rows back (dropping a torn last line, if any), checks that they belong to this
sweep (same columns, points of this grid, the same record) and solves only the
missing points; anything that differs is named in the refusal.

Points are solved on Dask (``dask.distributed``): an embedded local cluster of
``workers`` processes by default, an existing cluster with ``scheduler=
"tcp://HOST:PORT"`` (its workers need ``spn`` installed), or in this process with
``workers=0``. Every point is solved independently and deterministically, so the
numbers do not depend on where it ran.

The grid, each point's description and the columns are :mod:`spn.studies.sweep_grid`'s. Every
point, of one class or of query classes and queues (docs/design.md §4.6), is solved by
:func:`solve_point` through :func:`spn.pipeline.evaluate_description`, as ``spn solve`` does (the
method it took in a ``method`` column); with query classes, one column
per class's R and X and per queue's utilisation, named as ``spn solve --json`` and ``spn compare``
name them (``classes.dashboard.mean_execution_time``, ``queues.bi.utilization``); a queue capacity
on the grid rebalances the other queues so that capacities sum to 1. Resuming, workers and failed
rows work alike; ``seed``, ``rel_precision`` and ``max_seconds`` (recorded for resuming) are those
of the points that simulate: the same ``seed`` at every point (common random numbers: two points
differ by their configuration, not by their random streams), so that a point is deterministic
unless ``max_seconds`` stopped it (its ``precision_met`` is then False).

>>> grid = parse_grid(["cluster.containers=2..4", "workload.users=1,5"])
>>> grid
[('cluster.containers', ['2', '3', '4']), ('workload.users', ['1', '5'])]
>>> grid_size(grid), grid_point(grid, 3)
(6, ('3', '5'))
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from spn.defaults import SEED
from spn.pipeline.result import percentile_key
from spn.studies.plan import model_data
from spn.studies.targets import _short
from spn.studies.sweep_files import SweepRecord, SweepWriter, check_outputs, resume_rows
from spn.studies.sweep_grid import (
    CLASS_KEYS, QUEUE_KEYS, TOTAL_COLUMNS, ClassSweep, check_values, class_layout, columns, grid_point, grid_points,
    grid_size, names_of, parse_grid, point_description,
)
from spn.defaults import MAX_STATES, RTOL
from spn.exceptions import ModelError, SpnError

__all__ = ["parse_grid", "grid_size", "grid_points", "grid_point", "columns", "SweepTask", "solve_point",
           "SweepSummary", "run_sweep", "read_rows"]

#: a Dask scheduler's address (checked here: Dask would spend its whole timeout on a malformed one)
_SCHEDULER = re.compile(r"(tcp|tls)://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}")


# --------------------------------------------------------------------------- one point (runs on a worker)
@dataclass(frozen=True)
class SweepTask:
    """Everything a worker needs to solve one point (picklable): the description's mapping after
    ``--set`` (``data``), and the point's own ``overrides``; ``classes`` for a description with
    query classes (:class:`~spn.studies.sweep_grid.ClassSweep`), else None."""

    index: int
    values: tuple
    data: dict
    overrides: tuple
    source: str | None = None
    percentiles: tuple = ()
    deadline: float | None = None
    method: str = "auto"
    rtol: float = RTOL
    max_states: int = MAX_STATES
    classes: ClassSweep | None = None
    seed: int = SEED
    rel_precision: float | None = None
    max_seconds: float | None = None


def solve_point(task: SweepTask) -> dict:
    """Solve one point as ``spn solve`` would (with the sweep's seed and budget); return its CSV row as a
    dict. Errors of spn become the ``error`` column.

    :func:`spn.pipeline.evaluate_description`, read by :func:`result_row` (one class) or
    :func:`class_row` (query classes: ``task.classes``).
    """
    from spn.pipeline import Budget, Question, evaluate_description

    started = time.perf_counter()
    row = {"point": task.index}
    try:
        if "logs" in task.data:
            from spn.pipeline.source import configure

            desc = configure(task.data["logs"], [*task.data["sets"], *task.overrides])
        else:
            desc = point_description(task.data, task.overrides, task.classes, source=task.source)
        limits = {name: value for name, value in (("rel_precision", task.rel_precision),
                                                   ("max_seconds", task.max_seconds)) if value is not None}
        if task.classes is not None:
            layout = task.classes
            if names_of(desc) != (layout.classes, layout.queues):
                raise ModelError("the grid renames a class or a queue, and the columns are named after the model's")
            limits = {"rel_precision": layout.rel_precision, "max_seconds": layout.max_seconds}
            seed = layout.seed
        else:
            seed = task.seed
        result = evaluate_description(
            desc, question=Question(task.percentiles, task.deadline),
            budget=Budget(rtol=task.rtol, max_states=task.max_states, seed=seed, **limits), method=task.method)
        row.update(class_row(result) if task.classes is not None else result_row(result, task.deadline))
    except (SpnError, MemoryError) as error:
        message = "out of memory (lower max_states)" if isinstance(error, MemoryError) else str(error)
        row.update(converged="", error=" ".join(message.split()) or type(error).__name__)
    row["seconds"] = time.perf_counter() - started
    return row


def result_row(result, deadline: float | None = None) -> dict:
    """The columns of a point of one class, read from its :class:`spn.pipeline.Result`: ``low``/``high``
    are the method's interval around the mean (the mean itself for the exact chain)."""
    details = result.details
    solver = details.get("solver")
    row = dict(mean_execution_time=result.mean_execution_time, throughput=result.throughput,
               utilization=result.utilization, tangible_states=details.get("tangible_states", ""),
               transitions=details.get("transitions", ""), method=result.method, low=result.interval[0],
               high=result.interval[1], converged=bool(solver["converged"]) if solver else
               bool(details.get("precision_met", True)), error="")
    for q, t in result.percentiles.items():
        row[f"p{percentile_key(q)}"] = t
    if deadline is not None:
        row["deadline_probability"] = result.deadline_probability
    return row


def class_row(result) -> dict:
    """The columns of a point with query classes (exact or simulated), read from its :class:`spn.pipeline.Result`."""
    data = result.as_dict()
    row = {key: data[key] for key in TOTAL_COLUMNS if key in data}
    for kind, keys in (("classes", CLASS_KEYS), ("queues", QUEUE_KEYS)):
        for name, values in data[kind].items():
            row.update({f"{kind}.{name}.{key}": values[key] for key in keys if key in values})
    if result.method == "simulation":
        row.update(replications=data["replications"], precision_met=bool(data["precision_met"]), converged="")
    else:
        row.update(tangible_states=data["tangible_states"], transitions=data["transitions"],
                   converged=bool(data["solver"]["converged"]))
    row["error"] = ""
    return row


def _cell(value) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def _line(cols, row) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([_cell(row.get(c, "")) for c in cols])
    return buffer.getvalue()


def read_rows(path) -> tuple[list[str], list[dict]]:
    """Header and rows of a sweep CSV (a torn last line, from a killed run, is left out)."""
    from spn.studies.sweep_files import csv_records

    header, records = csv_records(path)
    header = header or []
    return header, [dict(zip(header, record)) for _, record in records]


# --------------------------------------------------------------------------- running
@dataclass(frozen=True)
class SweepSummary:
    """What a sweep did: ``points`` in the grid, ``skipped`` (already in --out), ``computed``, ``failed``."""

    out: str
    points: int
    skipped: int
    computed: int
    failed: int
    seconds: float
    runner: str
    plot: str | None = None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class _Tasks:
    """The points still to solve, made one at a time (``len`` without listing them)."""

    def __init__(self, grid, done, make):
        self.grid, self.done, self.make = grid, done, make

    def __len__(self):
        return grid_size(self.grid) - len(self.done)

    def __iter__(self):
        for index, values in enumerate(grid_points(self.grid)):
            if index not in self.done:
                yield self.make(index, values)


def run_sweep(model, grid_texts: Sequence[str], out, *, sets: Sequence[str] = (),
              percentiles: Sequence[float] = (), deadline: float | None = None, resume: bool = False,
              force: bool = False, workers: int | None = None, scheduler: str | None = None,
              method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
              progress: bool = False, plot: str | None = None, seed: int = SEED,
              rel_precision: float | None = None, max_seconds: float | None = None) -> SweepSummary:
    """Solve the grid of ``model`` and write/extend the CSV ``out``; optionally plot it.

    ``workers``: processes of an embedded Dask cluster when more than one (default and 0 or 1: solve
    in this process, without Dask's start-up);
    ``scheduler``: address of an existing Dask scheduler (then ``workers`` is unused).
    ``force`` replaces an existing ``out`` (and ``plot``); ``resume`` continues ``out``.
    ``method``: as ``spn solve --method`` (``auto``: each point by the most exact method that fits its
    budget, as :func:`spn.pipeline.evaluate` chooses), with ``seed`` (the same at every point),
    ``rel_precision`` (default spn solve's 0.005) and ``max_seconds`` (default 60 s per point).

    >>> run_sweep("models/mapreduce.yaml", ["cluster.containers=1..4"], "r.csv", workers=0)  # doctest: +SKIP
    SweepSummary(out='r.csv', points=4, skipped=0, computed=4, failed=0, ...)
    """
    started = time.perf_counter()
    grid = parse_grid(grid_texts)
    percentiles = tuple(float(q) for q in percentiles)
    if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
        raise ModelError(f"deadline: expected a positive number of seconds, got {deadline!r}")
    if workers is not None and workers < 0:
        raise ModelError(f"workers: expected an integer >= 0, got {workers}")
    if resume and force:
        raise ModelError(f"resume and force contradict each other: resuming keeps the rows of {out}, "
                         "forcing replaces the file")
    if scheduler is not None and not _SCHEDULER.fullmatch(str(scheduler)):
        raise ModelError(f"scheduler: expected an address tcp://HOST:PORT, got {_short(scheduler)!r}",
                         option="scheduler")
    check_outputs(out, plot, resume=resume, force=force)
    logs = _logs(model)
    if logs:        # a pilot's logs: every point is fitted (Spark keys apply the what-if rules)
        data, layout = {"logs": logs, "sets": list(sets)}, None
        _check_log_points(logs, sets, grid)
    else:
        data = model_data(model, sets)
        layout = class_layout(data, grid, method=method, percentiles=percentiles, deadline=deadline, seed=seed,
                              rel_precision=rel_precision, max_seconds=max_seconds)
        first = check_values(model, data, grid, layout)
    if layout is not None:
        layout = dataclasses.replace(layout, classes=names_of(first)[0], queues=names_of(first)[1])
        simulation = {"seed": layout.seed, "rel_precision": layout.rel_precision, "max_seconds": layout.max_seconds}
    else:
        simulation = {"seed": seed, "rel_precision": rel_precision, "max_seconds": max_seconds}
    cols = columns(grid, percentiles, deadline, layout)
    record = SweepRecord.of(model, data, sets, grid_texts, grid, method=method, rtol=rtol, max_states=max_states,
                            percentiles=percentiles, deadline=deadline, **simulation)
    paths = [p for p, _ in grid]
    source = str(model)

    def make(index, values):
        overrides = tuple(f"{p}={v}" for p, v in zip(paths, values))
        return SweepTask(index, values, data, overrides, source, percentiles, deadline, method, rtol, max_states,
                         layout, seed, rel_precision, max_seconds)

    size = grid_size(grid)
    failed = 0
    append = resume and os.path.exists(out)
    with SweepWriter(out, _line(cols, {c: c for c in cols}), record, append=append, force=force) as writer:
        # read under the writer's lock: two sweeps resuming one file would solve the same points
        done = resume_rows(out, cols, grid, record, grid_point) if append else set()
        todo = _Tasks(grid, done, make)
        bar = _progress_bar(size, len(done), progress)

        def record_row(row):
            nonlocal failed
            row.update(zip(paths, grid_point(grid, row["point"])))
            writer.write(_line(cols, row))
            failed += bool(row.get("error"))
            bar.update(1)

        try:
            if not len(todo):
                runner = "nothing to do"
            elif scheduler is None and (workers is None or workers <= 1):
                # Dask's start-up (seconds) pays only with more than one worker or a cluster of its own
                runner = "this process"
                for task in todo:
                    record_row(solve_point(task))
            else:
                runner = _run_dask(todo, record_row, workers=workers, scheduler=scheduler)
        finally:
            bar.close()
    summary = SweepSummary(str(out), size, len(done), len(todo), failed, time.perf_counter() - started, runner)
    if plot:
        from spn.studies.plot import plot_sweep
        plot_sweep(out, plot, force=force)
        summary = dataclasses.replace(summary, plot=str(plot))
    return summary


def _logs(model) -> list[str] | None:
    """The log paths of a sweep over a pilot's logs, or None for a description file."""
    from spn.pipeline.source import is_description_file

    paths = [model] if isinstance(model, (str, os.PathLike)) else list(model)
    if len(paths) == 1 and is_description_file(paths[0]):
        return None
    return [str(p) for p in paths]


def _check_log_points(logs, sets, grid) -> None:
    """Fit the first point before any other: a bad log or setting is one line before the sweep starts."""
    from spn.pipeline.source import configure

    configure(logs, [*sets, *(f"{path}={values[0]}" for path, values in grid)])


# --------------------------------------------------------------------------- Dask
def _run_dask(tasks, record, *, workers, scheduler) -> str:
    """Solve ``tasks`` on Dask, calling ``record`` with each row as it arrives; return who solved them."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SpnError("sweeps run on Dask: install it (pip install 'dask[distributed]'), "
                       "or solve in this process with --workers 0") from None
    import logging

    # Dask logs connection errors while it shuts down (after Ctrl-C, for one): keep stderr for spn's line
    loggers = [logging.getLogger(name) for name in ("distributed", "tornado", "asyncio")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        return _run_on_dask(tasks, record, workers, scheduler, Client, LocalCluster, as_completed)
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _local_cluster(LocalCluster, n: int):
    """A LocalCluster of ``n`` worker processes that ignore Ctrl-C.

    A Ctrl-C in a terminal reaches every process of the foreground group: workers
    that took it would each print a traceback. So the workers are started through a
    launcher that ignores SIGINT before it runs Python (an ignored signal stays
    ignored across exec, and Python then installs no handler of its own), and only
    this process sees the interrupt. An interrupt while the cluster starts is recorded
    and raised once the cluster can be stopped, so that none is lost.
    """
    import logging
    import multiprocessing.spawn
    import signal
    import threading

    def start():
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                            dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)

    python = multiprocessing.spawn.get_executable()
    launcher = _sigint_ignoring_launcher(python)
    if os.access(launcher, os.X_OK):      # not where temporary files may not run (a noexec /tmp)
        multiprocessing.spawn.set_executable(launcher)
    in_main = threading.current_thread() is threading.main_thread()
    interrupted = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum)) if in_main else None
    cluster = None
    try:
        cluster = start()
    except BaseException:
        if not interrupted:
            raise
    finally:
        # the workers have started: later ones (a restart) may run Python itself
        _restore_executable(launcher, python)
        if in_main:
            signal.signal(signal.SIGINT, previous)
    if interrupted:      # a worker killed by it meanwhile fails the start: the interrupt is the cause
        _close_quietly(None, None, cluster)
        raise KeyboardInterrupt
    return cluster


def _sigint_ignoring_launcher(python) -> str:
    """A temporary executable file that runs ``python`` with SIGINT ignored (removed by :func:`_restore_executable`)."""
    import tempfile

    descriptor, path = tempfile.mkstemp(prefix="spn-worker-", suffix=".sh")
    try:
        with os.fdopen(descriptor, "w") as launcher:      # closed before it runs: Linux will not run a file open for writing
            launcher.write(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(os.fsdecode(python))} \"$@\"\n")
        os.chmod(path, 0o700)
    except BaseException:
        os.remove(path)
        raise
    return path


def _restore_executable(launcher: str, python) -> None:
    """Spawn ``python`` itself again, and remove the launcher."""
    import multiprocessing.spawn

    multiprocessing.spawn.set_executable(python)
    try:
        os.remove(launcher)
    except OSError:
        pass


def _run_on_dask(tasks, record, workers, scheduler, Client, LocalCluster, as_completed) -> str:
    cluster = None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except Exception as error:       # OSError, TimeoutError, or Dask's own for a bad address
            raise SpnError(f"cannot reach the Dask scheduler at {scheduler}: {' '.join(str(error).split())}") \
                from None
        n = len(client.scheduler_info().get("workers", {}))
        runner = f"Dask scheduler {scheduler} ({n} workers)"
    else:
        n = min(workers if workers is not None else os.cpu_count() or 1, len(tasks))
        cluster = _local_cluster(LocalCluster, n)
        try:
            client = Client(cluster)
        except BaseException:
            _close_quietly(None, None, cluster)
            raise
        runner = f"local Dask cluster ({n} worker processes)"
    # a few points per worker in flight: the grid is submitted as points finish, never all at once
    pending = iter(tasks)
    running = as_completed()
    try:
        for task in itertools.islice(pending, 2 * max(n, 1)):
            running.add(client.submit(solve_point, task, pure=False))
        for future in running:
            record(future.result())
            for task in itertools.islice(pending, 1):
                running.add(client.submit(solve_point, task, pure=False))
    finally:
        _close_quietly(running, client, cluster)
    return runner


def _close_quietly(running, client, cluster) -> None:
    """Cancel what is left and stop the client and the cluster; their errors do not replace the first one."""
    closings = [lambda: cluster is not None and cluster.close(timeout=10)]
    if client is not None:
        closings[:0] = [lambda: client.cancel(list(running.futures)), lambda: running.clear(),
                        lambda: client.close(timeout=10)]
    for closing in closings:
        try:
            closing()
        except Exception:
            pass


class _NoBar:
    def update(self, n):
        pass

    def close(self):
        pass


def _progress_bar(total, initial, enabled):
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, initial=initial, unit="point", desc="sweep", file=sys.stderr, dynamic_ncols=True)
