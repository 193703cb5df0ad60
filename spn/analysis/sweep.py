"""Parameter sweeps: solve a grid of configurations on Dask, stream rows to a CSV, resume, plot.

``spn sweep MODEL --grid cluster.containers=10,20,40 --grid workload.users=1..5 --out results.csv``
solves every combination of the grid values (the Cartesian product, first
``--grid`` varying slowest) and writes one CSV row per point *as soon as it is
solved*, in the order points finish. Each row is written with a single write and
flushed, so a sweep killed at any moment keeps every row it finished; ``--resume``
reads them back (dropping a torn last line, if any), checks they belong to the same
sweep (same columns, points of the same grid) and solves only the missing points.
An existing ``--out`` is never replaced without ``--force``.

Points are solved on Dask (``dask.distributed``): an embedded local cluster of
``workers`` processes by default, an existing cluster with ``scheduler=
"tcp://HOST:PORT"`` (its workers need ``spn`` installed), or in this process with
``workers=0``. Every point is solved independently and deterministically, so the
numbers do not depend on where it ran.

Columns: ``point`` (index in the grid), one column per ``--grid`` path (the value
as written), ``mean_execution_time``, ``throughput``, ``utilization``,
``tangible_states``, ``transitions``, ``p<q>`` per requested percentile,
``deadline_probability`` when a deadline is given, ``converged``, ``seconds`` and
``error`` (empty unless the point failed: a failed point is recorded, not retried).

>>> parse_grid(["cluster.containers=2..4", "workload.users=1,5"])
[('cluster.containers', ['2', '3', '4']), ('workload.users', ['1', '5'])]
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from spn.defaults import MAX_STATES, RTOL
from spn.exceptions import ModelError, SpnError

__all__ = ["parse_grid", "grid_points", "columns", "SweepTask", "solve_point", "SweepSummary",
           "run_sweep", "read_rows"]

RESULT_COLUMNS = ("mean_execution_time", "throughput", "utilization", "tangible_states", "transitions")
TAIL_COLUMNS = ("converged", "seconds", "error")


# --------------------------------------------------------------------------- the grid
def parse_grid(texts: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``PATH=V1,V2,...`` or ``PATH=LO..HI`` (integers, inclusive) -> [(path, [value text, ...])].

    Values stay text: they are passed on as ``--set PATH=VALUE``.
    """
    grid, seen = [], set()
    for text in texts:
        path, sep, spec = str(text).partition("=")
        path, spec = path.strip(), spec.strip()
        if not sep or not path or not spec:
            raise ModelError(f"grid: expected PATH=V1,V2,... or PATH=LO..HI, got {text!r}")
        if path in seen:
            raise ModelError(f"grid: {path} is given twice")
        seen.add(path)
        if ".." in spec and "," not in spec:
            try:
                lo, hi = (int(x) for x in spec.split("..", 1))
            except ValueError:
                raise ModelError(f"grid: a range LO..HI takes integers, got {spec!r}") from None
            if hi < lo:
                raise ModelError(f"grid: empty range {spec!r}")
            values = [str(v) for v in range(lo, hi + 1)]
        else:
            values = [v.strip() for v in spec.split(",")]
            if any(not v for v in values):
                raise ModelError(f"grid: empty value in {text!r}")
            if len(set(values)) != len(values):
                raise ModelError(f"grid: a value is repeated in {text!r}")
        grid.append((path, values))
    if not grid:
        raise ModelError("give at least one grid dimension PATH=VALUES")
    return grid


def grid_points(grid) -> list[tuple[str, ...]]:
    """Every combination of the grid's values, first path varying slowest."""
    return list(itertools.product(*(values for _, values in grid)))


def columns(grid, percentiles: Sequence[float] = (), deadline: float | None = None) -> list[str]:
    """The CSV header of a sweep."""
    from spn.analysis.plan import percentile_key

    cols = ["point", *(path for path, _ in grid), *RESULT_COLUMNS]
    cols += [f"p{percentile_key(q)}" for q in percentiles]
    if deadline is not None:
        cols.append("deadline_probability")
    return cols + list(TAIL_COLUMNS)


# --------------------------------------------------------------------------- one point (runs on a worker)
@dataclass(frozen=True)
class SweepTask:
    """Everything a worker needs to solve one point (picklable)."""

    index: int
    values: tuple
    description: object
    percentiles: tuple = ()
    deadline: float | None = None
    method: str = "auto"
    rtol: float = RTOL
    max_states: int = MAX_STATES


def solve_point(task: SweepTask) -> dict:
    """Solve one point; return its CSV row as a dict. Errors of spn become the ``error`` column."""
    from spn.analysis.plan import evaluate, percentile_key

    started = time.perf_counter()
    row = {"point": task.index}
    try:
        ev = evaluate(task.description, percentiles=task.percentiles, deadline=task.deadline,
                      method=task.method, rtol=task.rtol, max_states=task.max_states)
    except SpnError as error:
        row.update(converged="", error=" ".join(str(error).split()) or type(error).__name__)
    else:
        m = ev.report.measures
        row.update(mean_execution_time=m.mean_execution_time, throughput=m.throughput,
                   utilization=m.utilization, tangible_states=ev.report.tangible_states,
                   transitions=ev.report.transitions, converged=bool(ev.report.solver.converged), error="")
        for q, t in ev.percentiles.items():
            row[f"p{percentile_key(q)}"] = t
        if task.deadline is not None:
            row["deadline_probability"] = ev.deadline_probability
    row["seconds"] = time.perf_counter() - started
    return row


def _cell(value) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def _line(cols, row) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([_cell(row.get(c, "")) for c in cols])
    return buffer.getvalue()


# --------------------------------------------------------------------------- the output file
def read_rows(path) -> tuple[list[str], list[dict]]:
    """Header and rows of a sweep CSV (a torn last line, from a killed run, is left out)."""
    with open(path, newline="") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def _prepare_output(out, cols, grid, points, *, resume, force) -> set[int]:
    """Create or check ``out``; return the indices of the points it already holds."""
    if resume and force:
        raise ModelError(f"resume and force contradict each other: resuming keeps the rows of {out}, "
                         "forcing replaces the file")
    exists = os.path.exists(out)
    if exists and os.path.isdir(out):
        raise ModelError(f"{out} is a directory")
    if exists and not resume and not force:
        raise ModelError(f"{out} exists: add --resume to continue that sweep, or --force to replace it")
    if not exists or force:
        with open(out, "w", newline="") as f:
            f.write(_line(cols, {c: c for c in cols}))
        return set()
    header, rows = read_rows(out)
    if not header:                                   # created, killed before the header: start again
        with open(out, "w", newline="") as f:
            f.write(_line(cols, {c: c for c in cols}))
        return set()
    if header != cols:
        raise ModelError(f"{out} was written by another sweep (its columns are {','.join(header)}; this sweep's "
                         f"are {','.join(cols)}): write to another file, or replace it")
    done, paths = set(), [p for p, _ in grid]
    for n, row in enumerate(rows, start=2):
        try:
            index = int(row["point"])
        except (TypeError, ValueError):
            raise ModelError(f"{out}, line {n}: point {row.get('point')!r} is not an integer") from None
        if not 0 <= index < len(points) or tuple(row[p] for p in paths) != points[index]:
            raise ModelError(f"{out}, line {n}: point {index} is not a point of this grid "
                             f"(write to another file, or replace it)")
        done.add(index)
    # drop a torn last line so that appended rows start on a line of their own
    with open(out, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)
    return done


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


def run_sweep(model, grid_texts: Sequence[str], out, *, sets: Sequence[str] = (),
              percentiles: Sequence[float] = (), deadline: float | None = None, resume: bool = False,
              force: bool = False, workers: int | None = None, scheduler: str | None = None,
              method: str = "auto", rtol: float = RTOL, max_states: int = MAX_STATES,
              progress: bool = False, plot: str | None = None) -> SweepSummary:
    """Solve the grid of ``model`` and write/extend the CSV ``out``; optionally plot it.

    ``workers``: processes of the embedded Dask cluster (default: the CPU count,
    at most the number of points; 0 solves in this process without Dask);
    ``scheduler``: address of an existing Dask scheduler (then ``workers`` is unused).

    >>> run_sweep("models/mapreduce.yaml", ["cluster.containers=1..4"], "r.csv", workers=0)  # doctest: +SKIP
    SweepSummary(out='r.csv', points=4, skipped=0, computed=4, failed=0, ...)
    """
    from spn.description import load_description

    started = time.perf_counter()
    grid = parse_grid(grid_texts)
    percentiles = tuple(float(q) for q in percentiles)
    if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
        raise ModelError(f"deadline: expected a positive number of seconds, got {deadline!r}")
    if workers is not None and workers < 0:
        raise ModelError(f"workers: expected an integer >= 0, got {workers}")
    points = grid_points(grid)
    paths = [p for p, _ in grid]
    # every point must be a valid description: report the bad ones before solving anything
    tasks, problems = [], []
    for i, values in enumerate(points):
        overrides = [*sets, *(f"{p}={v}" for p, v in zip(paths, values))]
        try:
            desc = load_description(model, overrides)
        except ModelError as error:
            problems.append(f"{', '.join(f'{p}={v}' for p, v in zip(paths, values))}: {error}")
            continue
        # the read-only reference is a mappingproxy, which does not pickle; it is never an input
        desc = dataclasses.replace(desc, reference={})
        tasks.append(SweepTask(i, values, desc, percentiles, deadline, method, rtol, max_states))
    if problems:
        more = [f"... and {len(problems) - 3} more points"] if len(problems) > 3 else []
        raise ModelError(problems[:3] + more)
    cols = columns(grid, percentiles, deadline)
    fresh = force or not os.path.exists(out)
    done = _prepare_output(out, cols, grid, points, resume=resume, force=force)
    todo = [t for t in tasks if t.index not in done]

    failed = written = 0
    bar = _progress_bar(len(points), len(done), progress)
    with open(out, "a", newline="") as f:
        def record(row):
            nonlocal failed, written
            row.update(zip(paths, points[row["point"]]))
            f.write(_line(cols, row))        # one write per row, then flushed: a kill loses no finished row
            f.flush()
            written += 1
            failed += bool(row.get("error"))
            bar.update(1)

        try:
            if not todo:
                runner = "nothing to do"
            elif scheduler is None and workers == 0:
                runner = "this process"
                for task in todo:
                    record(solve_point(task))
            else:
                runner = _run_dask(todo, record, workers=workers, scheduler=scheduler)
        except BaseException:
            if fresh and not written:        # nothing solved: leave no header-only file behind
                f.close()
                os.remove(out)
            raise
        finally:
            bar.close()
            if not f.closed:
                os.fsync(f.fileno())
    summary = SweepSummary(str(out), len(points), len(done), len(todo), failed,
                           time.perf_counter() - started, runner)
    if plot:
        from spn.analysis.plot import plot_sweep
        plot_sweep(out, plot)
        summary = dataclasses.replace(summary, plot=str(plot))
    return summary


def _run_dask(tasks, record, *, workers, scheduler) -> str:
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


def _run_on_dask(tasks, record, workers, scheduler, Client, LocalCluster, as_completed) -> str:
    import logging

    cluster = None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as error:
            raise SpnError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
        n = len(client.scheduler_info().get("workers", {}))
        runner = f"Dask scheduler {scheduler} ({n} workers)"
    else:
        n = workers if workers is not None else min(os.cpu_count() or 1, len(tasks))
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
        client = Client(cluster)
        runner = f"local Dask cluster ({n} worker processes)"
    futures = []
    try:
        futures = [client.submit(solve_point, task, pure=False) for task in tasks]
        for future in as_completed(futures):
            record(future.result())
    finally:
        for future in futures:
            if not future.done():
                future.cancel()
        client.close()
        if cluster is not None:
            cluster.close()
    return runner


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


# --------------------------------------------------------------------------- plotting
