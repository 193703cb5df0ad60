"""A log's task attempts as columns: tens of bytes a task, the same table whatever the chunks it was read in.

A report of a log of 200,000 tasks once held about 2.7 kB a task in Python objects (800 MB); the
columns of :class:`spn.logs.task_table.TaskTable` hold under 100 bytes a task. These tests catch that
regressing (the bytes the columns hold, not a clock or the process's memory, which vary by machine).
"""

import numpy as np
import pytest

import spn.logs.task_table as task_table
from spn.logs.spark import read_spark_log
from spn.logs.spark_stages import successful_tasks
from spn.logs.task_table import TaskRows, TaskTable
from tests.whatif_logs import pilot_log

#: the most bytes a task's columns may take (2 times and the metrics in the smallest integer type that holds them)
BYTES_PER_TASK = 100


def test_a_log_of_many_tasks_takes_tens_of_bytes_a_task(tmp_path, monkeypatch):
    monkeypatch.setattr(task_table, "CHUNK", 1000)     # several chunks, and a part of one
    app = read_spark_log(pilot_log(tmp_path / "many.json", input_tasks=3_500))
    tasks = app.tasks
    assert len(tasks) == 3_504 and isinstance(tasks, TaskTable)
    assert tasks.nbytes / len(tasks) < BYTES_PER_TASK, {k: v.dtype for k, v in tasks._columns().items()}
    # every column is an array of one row per task, none a list of Python objects
    assert all(isinstance(c, np.ndarray) and c.shape == (len(tasks),) for c in tasks._columns().values())
    # and the stages' tables, taken from it, are columns too
    stages = successful_tasks(app)
    assert sum(s.nbytes for s in stages.values()) <= tasks.nbytes


def test_the_table_is_the_same_whatever_the_chunks(tmp_path, monkeypatch):
    path = pilot_log(tmp_path / "log.json", input_tasks=50)
    whole = read_spark_log(path).tasks
    monkeypatch.setattr(task_table, "CHUNK", 7)
    other = tmp_path / "copy.json"
    other.write_bytes(path.read_bytes())
    chunked = read_spark_log(other).tasks
    assert chunked == whole
    assert chunked.duration.tolist() == whole.duration.tolist() == [2.0] * 50 + [1.1, 1.1, 1.1, 3.5]


def test_a_column_widens_when_a_value_needs_it():
    rows = TaskRows()
    rows.add(0, 0, 0, 1000, metrics=[-1] * len(task_table.METRICS))
    for k in range(1, 5):
        rows.add(1, k, 0, 1000, task_id=k * 2 ** 40)   # ids past 32 bits
    tasks = rows.table()
    assert tasks.stage_id.dtype == np.int8 and tasks.task_id.dtype == np.int64
    assert tasks.task_id.tolist() == [-1] + [k * 2 ** 40 for k in range(1, 5)]
    assert tasks.launch_ms.dtype == np.int64        # times: always int64, whatever their values
    assert tasks.has_metrics.tolist() == [True] + [False] * 4
    assert np.isnan(tasks.metric("run_s")).all()


def test_metrics_read_in_si_units_and_nan_where_unknown():
    rows = TaskRows()
    values = dict.fromkeys(task_table.METRICS, -1)
    values.update(run_s=1500, cpu_s=2_500_000_000, input_bytes=3 * 2 ** 40)
    rows.add(0, 0, 0, 2000, metrics=list(values.values()), missing=("Executor Deserialize Time",))
    rows.add(0, 1, 0, 2000)
    tasks = rows.table()
    assert tasks.metric("run_s").tolist()[0] == 1.5 and tasks.metric("cpu_s").tolist()[0] == 2.5
    assert tasks.metric("input_bytes").tolist()[0] == 3 * 2 ** 40
    assert np.isnan(tasks.metric("deserialize_s")).all() and np.isnan(tasks.metric("run_s")[1])
    assert tasks.lacking("Executor Deserialize Time").tolist() == [True, False]


def test_take_and_join_keep_the_names():
    rows = TaskRows()
    for k, executor in enumerate(["7", "3", "7"]):
        rows.add(k % 2, k, 10 * k, 10 * k + 5, executor=executor, host=f"h{executor}")
    tasks = rows.table()
    first, second = tasks.take(tasks.stage_id == 0), tasks.take(tasks.stage_id == 1)
    joined = TaskTable.join([second, first])
    assert joined.index.tolist() == [1, 0, 2]
    assert [joined.executor_ids[k] for k in joined.executor.tolist()] == ["3", "7", "7"]
    with pytest.raises(ValueError, match="from one table"):
        TaskTable.join([first, TaskRows().table()])
