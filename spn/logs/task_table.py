"""A Spark log's task attempts as columns: one NumPy array per field, one row per ``SparkListenerTaskEnd``.

A log of 200,000 tasks kept as a Python object per task took about 1 kB a task (the object, its
metrics, the strings the JSON reader made); as columns it takes about 100 bytes, as each column
but the two times holds the smallest integer type its values fit. :class:`TaskRows` collects the
rows as the events stream past, turning them into arrays every :data:`CHUNK` rows, and
:meth:`TaskRows.table` joins the chunks into a :class:`TaskTable`.

Times are epoch ms as Spark wrote them. Each metric is kept as logged, in the unit of
:data:`~spn.logs.task_metrics.METRICS` (ms, ns, bytes, records; ``-1``: the log does not say) and
read in SI units, ``nan`` where unknown, with :meth:`TaskTable.metric`.

>>> rows = TaskRows()
>>> rows.add(0, 0, 1000, 3500, executor="1")
>>> rows.add(0, 1, 1000, 2000, executor="2", reason="ExceptionFailure", status="failed")
>>> tasks = rows.table()
>>> len(tasks), tasks.duration.tolist(), tasks.successful.tolist(), tasks.executor_ids
(2, [2.5, 1.0], [True, False], ('1', '2'))
>>> tasks.take(tasks.failed).reason_names()
['ExceptionFailure']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np

from spn.logs.task_metrics import METRICS

__all__ = ["CHUNK", "STATUSES", "TaskRows", "TaskTable"]

#: rows collected as Python values before they become arrays (a few MB of Python objects at most)
CHUNK = 8192
#: a task attempt's status, as :attr:`TaskTable.status` codes it
STATUSES = ("success", "failed", "killed")
#: the columns that keep int64 whatever their values: times, which arithmetic with epoch ms must not overflow
_WIDE = ("launch_ms", "finish_ms")
#: the columns that are codes into a table of names (``-1``: none), and that table
_NAMED = {"executor": "executor_ids", "host": "hosts", "reason": "reasons", "missing": "missing_names"}


@dataclass(frozen=True, eq=False)
class TaskTable:
    """Task attempts in log order, a NumPy array per field (every array of the same length).

    ``executor``, ``host``, ``reason`` and ``missing`` are codes into the tuples of names below them
    (``-1``: the log gives none); ``status`` codes :data:`STATUSES`. ``task_id`` is ``-1`` where the
    log has no ``Task ID``. ``missing`` names the metrics an attempt's ``Task Metrics`` lacks, and
    is ``-1`` for an attempt without ``Task Metrics`` (a failed one often has none). ``metrics``
    holds a column per name of :data:`~spn.logs.task_metrics.METRICS`, as logged (``-1``: unknown).
    """

    stage_id: np.ndarray
    stage_attempt: np.ndarray
    task_id: np.ndarray
    index: np.ndarray
    attempt: np.ndarray
    launch_ms: np.ndarray
    finish_ms: np.ndarray
    executor: np.ndarray
    host: np.ndarray
    reason: np.ndarray
    status: np.ndarray
    speculative: np.ndarray
    missing: np.ndarray
    metrics: Mapping[str, np.ndarray]
    executor_ids: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    missing_names: tuple[tuple[str, ...], ...] = ()

    def __len__(self) -> int:
        return len(self.launch_ms)

    def __repr__(self) -> str:
        return f"TaskTable({len(self):,} tasks, {self.nbytes:,} bytes)"

    def __eq__(self, other) -> bool:
        if not isinstance(other, TaskTable):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    @property
    def nbytes(self) -> int:
        """The bytes of the columns (the names aside: one per executor, host, reason)."""
        return sum(column.nbytes for column in self._columns().values())

    @property
    def duration(self) -> np.ndarray:
        """Wall time of each attempt, seconds (finish - launch): the time it held its executor core."""
        return (self.finish_ms - self.launch_ms) / 1000.0

    @property
    def successful(self) -> np.ndarray:
        return self.status == 0

    @property
    def failed(self) -> np.ndarray:
        return self.status == 1

    @property
    def killed(self) -> np.ndarray:
        return self.status == 2

    @property
    def has_metrics(self) -> np.ndarray:
        """Which attempts have ``Task Metrics``."""
        return self.missing >= 0

    def metric(self, name: str) -> np.ndarray:
        """The metric ``name`` of :data:`~spn.logs.task_metrics.METRICS` in SI units (seconds, bytes,
        records), as float64; ``nan`` where the log does not say (and for attempts without metrics)."""
        raw = self.metrics[name]
        divisor = METRICS[name]
        return np.where(raw >= 0, raw / divisor if divisor else raw.astype(np.float64), np.nan)

    def lacking(self, name: str) -> np.ndarray:
        """Which attempts have ``Task Metrics`` without the field Spark calls ``name`` (e.g. ``Executor CPU Time``)."""
        codes = [k for k, names in enumerate(self.missing_names) if name in names]
        return np.isin(self.missing, codes)

    def reason_names(self) -> list[str]:
        """Spark's end reason of each attempt (``Success``, ``ExceptionFailure``, ``TaskKilled``, ...)."""
        return [self.reasons[k] for k in self.reason.tolist()]

    def take(self, which) -> TaskTable:
        """The rows ``which`` selects (a boolean mask or indexes, in their order), with the same names."""
        return self._with({name: column[which] for name, column in self._columns().items()})

    @staticmethod
    def join(tables: Sequence[TaskTable]) -> TaskTable:
        """The rows of ``tables`` one after another: tables taken from one :class:`TaskTable` (same names)."""
        first = tables[0]
        if any(t.executor_ids != first.executor_ids or t.hosts != first.hosts or t.reasons != first.reasons
               or t.missing_names != first.missing_names for t in tables):
            raise ValueError("only tables taken from one table join (their codes must mean the same names)")
        columns = {name: np.concatenate([t._columns()[name] for t in tables]) for name in first._columns()}
        return first._with(columns)

    def _columns(self) -> dict[str, np.ndarray]:
        """Every array, metrics by their names."""
        columns = {f.name: getattr(self, f.name) for f in fields(self)
                   if f.name not in _NAMED.values() and f.name != "metrics"}
        return {**columns, **self.metrics}

    def _with(self, columns: dict[str, np.ndarray]) -> TaskTable:
        own = {name: columns.pop(name) for name in list(columns) if name not in self.metrics}
        names = {name: getattr(self, name) for name in _NAMED.values()}
        return TaskTable(**own, metrics=columns, **names)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    return a == b


class TaskRows:
    """Collects task attempts one at a time (:meth:`add`); :meth:`table` gives them as a :class:`TaskTable`.

    Every :data:`CHUNK` rows the Python values become arrays, so a log of any size holds its tasks
    as columns while it is read, not as Python objects.
    """

    _COLUMNS = ("stage_id", "stage_attempt", "task_id", "index", "attempt", "launch_ms", "finish_ms",
                "executor", "host", "reason", "status", "speculative", "missing")

    def __init__(self):
        self._rows = {name: [] for name in self._COLUMNS}
        self._metric_rows: list = []
        self._chunks = {name: [] for name in (*self._COLUMNS, *METRICS)}
        self._codes = {name: {} for name in _NAMED}  # column -> name -> its code, in first-seen order

    def add(self, stage_id: int, index: int, launch_ms: int, finish_ms: int, *, stage_attempt: int = 0,
            task_id: int | None = None, attempt: int = 0, executor: str | None = None, host: str | None = None,
            reason: str = "Success", status: str = "success", speculative: bool = False,
            metrics: Sequence[int] | None = None, missing: tuple[str, ...] = ()) -> None:
        """One attempt; ``metrics``: its raw values in :data:`~spn.logs.task_metrics.METRICS`' order (``-1``:
        unknown), ``None`` without ``Task Metrics``; ``missing``: the Spark names of the fields it lacks."""
        row = self._rows
        row["stage_id"].append(stage_id)
        row["stage_attempt"].append(stage_attempt)
        row["task_id"].append(-1 if task_id is None else task_id)
        row["index"].append(index)
        row["attempt"].append(attempt)
        row["launch_ms"].append(launch_ms)
        row["finish_ms"].append(finish_ms)
        row["executor"].append(self._code("executor", executor))
        row["host"].append(self._code("host", host))
        row["reason"].append(self._code("reason", reason))
        row["status"].append(STATUSES.index(status))
        row["speculative"].append(speculative)
        row["missing"].append(-1 if metrics is None else self._code("missing", missing))
        self._metric_rows.append(_UNKNOWN if metrics is None else metrics)
        if len(self._metric_rows) >= CHUNK:
            self._flush()

    def _code(self, column: str, name) -> int:
        if name is None:
            return -1
        codes = self._codes[column]
        code = codes.get(name)
        if code is None:
            code = codes[name] = len(codes)
        return code

    def _flush(self) -> None:
        """The rows collected so far, as arrays appended to the chunks."""
        if not self._metric_rows:
            return
        for name, values in self._rows.items():
            self._chunks[name].append(np.array(values, dtype=bool) if name == "speculative" else
                                      np.array(values, dtype=np.int64) if name in _WIDE else _compact(values))
            values.clear()
        block = np.array(self._metric_rows, dtype=np.int64).reshape(-1, len(METRICS))
        for k, name in enumerate(METRICS):
            self._chunks[name].append(_compact(block[:, k]))
        self._metric_rows.clear()

    def table(self) -> TaskTable:
        """The rows added so far, as a :class:`TaskTable`."""
        self._flush()
        columns = {name: np.concatenate(chunks) if chunks else np.zeros(0, dtype=bool if name == "speculative"
                                                                        else np.int64)
                   for name, chunks in self._chunks.items()}
        names = {_NAMED[column]: tuple(codes) for column, codes in self._codes.items()}
        metrics = {name: columns.pop(name) for name in METRICS}
        return TaskTable(**columns, metrics=metrics, **names)


_UNKNOWN = (-1,) * len(METRICS)


def _compact(values) -> np.ndarray:
    """``values`` (integers) in the smallest signed integer type that holds them all."""
    array = np.asarray(values, dtype=np.int64)
    if array.size:
        low, high = int(array.min()), int(array.max())
        for kind in (np.int8, np.int16, np.int32):
            limits = np.iinfo(kind)
            if limits.min <= low and high <= limits.max:
                return array.astype(kind)
    return array
