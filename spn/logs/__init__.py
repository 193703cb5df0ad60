"""Reading execution logs (Spark event logs, MapReduce ``.jhist``): records only, no modelling.

- :mod:`~spn.logs.spark` (with :mod:`~spn.logs.spark_files`): a Spark event
  log as a :class:`SparkApplication`, its task attempts as columns
  (:mod:`~spn.logs.task_table`); :mod:`~spn.logs.spark_stages`: its
  stages' task times, DAG, concurrency and cores; :mod:`~spn.logs.task_metrics`:
  what a task's ``Task Metrics`` say, and :mod:`~spn.logs.task_profile`: its wall
  time in parts (scheduler delay, fetch wait, compute, ...) and per-stage profiles;
- :mod:`~spn.logs.jhist`: a MapReduce job history as a :class:`MapReduceJob`;
- :mod:`~spn.logs.runs`: either log as a :class:`Run` (jobs, stages, task
  durations, delays), built by :mod:`~spn.logs.spark_runs` for Spark;
  :mod:`~spn.logs.queries`: the repetitions of a query inside one log;
- :mod:`~spn.logs.sizes`: data sizes in bytes;
- :mod:`~spn.logs.lines` and :mod:`~spn.logs.fields`: what both readers stand
  on: a log read as a bounded stream of lines (regular files only, each line
  at most ``LOG_LINE_BYTES``, compression told by its bytes: Spark's codecs in
  :mod:`~spn.logs.codecs`), and every field checked as it is read (a time that
  is not a whole number of ms, a task that finishes before it launches, ... is a
  ``LogFormatError`` naming file and line);
- :mod:`~spn.logs.inputs`: what a command is given, resolved to local logs: files,
  folders of logs, a Spark History Server (:mod:`~spn.logs.history_server`).

>>> from spn.logs import parse_size, format_size
>>> format_size(parse_size("1.5GB"))
'1.5 GB'
"""

from spn.logs.jhist import MapReduceJob, TaskAttempt, attempt_durations, read_jhist
from spn.logs.queries import QueryRuns, query_runs
from spn.logs.records import JobRecord, Run, StageRecord
from spn.logs.runs import check_distinct, load_runs, log_kind
from spn.logs.sizes import format_size, parse_size
from spn.logs.spark import SparkApplication, SparkExecutor, SparkJob, SparkStage, read_spark_log
from spn.logs.task_metrics import METRICS, read_task_metrics
from spn.logs.task_table import TaskRows, TaskTable
from spn.logs.task_profile import PARTS, StageProfile, TaskParts, stage_profiles, task_parts

__all__ = [
    "SparkApplication", "SparkExecutor", "SparkJob", "SparkStage", "read_spark_log", "TaskTable", "TaskRows",
    "METRICS", "read_task_metrics", "TaskParts", "task_parts", "StageProfile", "stage_profiles", "PARTS",
    "MapReduceJob", "TaskAttempt", "attempt_durations", "read_jhist",
    "StageRecord", "JobRecord", "Run", "load_runs", "log_kind", "check_distinct",
    "QueryRuns", "query_runs",
    "parse_size", "format_size",
]
