"""Any log (Spark event log or MapReduce ``.jhist``) as one :class:`~spn.logs.records.Run`.

:func:`log_kind` tells the two apart by their first bytes; :func:`load_runs`
reads the log and turns it into a run: a Spark application with its modelled
jobs (:mod:`spn.logs.spark_runs`), or a MapReduce job as a map phase followed
by a reduce phase.

>>> run = load_runs("job_1416424547277_0002-...-TeraGen-...jhist")  # doctest: +SKIP
>>> run.framework, [s.name for s in run.jobs[0].stages]              # doctest: +SKIP
('mapreduce', ['map'])
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path

from spn.exceptions import LogFormatError
from spn.logs.intervals import covered_seconds, most_at_once
from spn.logs.jhist import MapReduceJob, attempt_durations, read_jhist
from spn.logs.lines import log_lines
from spn.logs.records import JobRecord, Run, StageRecord, duration_floor
from spn.logs.spark import read_spark_log
from spn.logs.spark_runs import spark_run, timed_jobs

__all__ = ["log_kind", "load_runs", "check_distinct"]


def log_kind(path) -> str:
    """``"spark"`` or ``"jhist"``, from the first line (a .jhist starts with ``Avro-``, compressed or not).

    A directory is a Spark rolling log. Raises :class:`~spn.exceptions.LogFormatError`
    when the file does not exist or cannot be read (not a regular file, corrupt
    compressed data, a first line past the size limit).
    """
    path = Path(path)
    if not path.exists():
        raise LogFormatError(f"{path}: no such file or directory")
    if path.is_dir():
        return "spark"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a cut-off stream is reported when the log is read
        with contextlib.closing(log_lines(path, what="log")) as lines:
            for _, first in lines:
                return "jhist" if first.startswith(b"Avro-") else "spark"
    return "spark"


def load_runs(path, *, allow_incomplete: bool = False, stage_groups: bool = False) -> Run:
    """The whole application of a Spark log (or the job of a ``.jhist``) as one :class:`~spn.logs.records.Run`.

    Raises :class:`~spn.exceptions.LogFormatError` when the file is not a log,
    when the application did not finish (crashed, killed or still running;
    ``allow_incomplete=True`` keeps the jobs that did), when a stage's parent
    never ran and no job declares it, or when no job succeeded.
    ``stage_groups=True`` merges the stages of a Spark job that ran at the same time.
    """
    path = Path(path)
    if log_kind(path) == "jhist":
        return _jhist_run(read_jhist(path))
    app = read_spark_log(path)
    return spark_run(app, timed_jobs(app, allow_incomplete=allow_incomplete, stage_groups=stage_groups))


def _jhist_run(job: MapReduceJob) -> Run:
    """A MapReduce job history as a run: map phase, then reduce phase (when it has reduces)."""
    if job.status != "SUCCEEDED":
        if job.finish_ms is None:
            raise LogFormatError(f"{job.path}: the job did not finish (crashed, killed or still running): "
                                 f"last status {job.status or 'unknown'}", option="allow_incomplete")
        raise LogFormatError(f"{job.path}: the job ended {job.status}: nothing to model")
    maps = [a for a in job.map_attempts if a.duration is not None]
    reduces = [a for a in job.reduce_attempts if a.duration is not None]
    good_maps = [a for a in maps if a.status == "SUCCEEDED"]
    if not good_maps:
        raise LogFormatError(f"{job.path}: no successful map attempt: nothing to model")
    last_map = max(a.finish_ms for a in good_maps)
    stages = [StageRecord((0,), "map", max(job.total_maps or 0, 1),
                          tuple(duration_floor(attempt_durations(job, "MAP"))), (),
                          sum(a.bytes_read for a in good_maps), phase="map")]
    notes = []
    good_reduces = [a for a in reduces if a.status == "SUCCEEDED"]
    _check_job_end(job, good_maps + good_reduces)
    early = [a for a in good_reduces if a.finish_ms < last_map]
    if early and (job.total_reduces or 0) > 0:
        # a reduce needs every map's output: one done before the last map is a log at odds with itself
        raise LogFormatError(f"{job.path}: reduce attempt {early[0].attempt_id} finished (finishTime "
                             f"{early[0].finish_ms}) before the last map did ({last_map}): the job history is "
                             "inconsistent, and its reduce time cannot be measured")
    if (job.total_reduces or 0) > 0 and good_reduces:
        # reduces start early (slow start) and wait for maps: only their time after the last map counts
        effective = [(a.finish_ms - max(a.start_ms, last_map)) / 1000.0 for a in good_reduces]
        stages.append(StageRecord((1,), "reduce", job.total_reduces, tuple(duration_floor(effective)), (0,),
                                  phase="reduce"))
        if any(a.start_ms < last_map for a in good_reduces):
            notes.append("reduce attempts that started before the last map ended are timed from that end "
                         "(their earlier part only waited for map output)")
    spans = [(min(a.start_ms for a in good_maps), last_map)]
    if len(stages) > 1:
        spans.append((last_map, max(a.finish_ms for a in good_reduces)))
    start = job.submit_ms if job.submit_ms is not None else spans[0][0]
    end = job.finish_ms
    delay = max((end - start) / 1000.0 - covered_seconds(spans, start, end), 0.0)
    concurrent = most_at_once([(a.start_ms, a.finish_ms) for a in maps + reduces])
    return Run(
        source=job.path, label=f"MapReduce job {job.job_id or '?'}" + (f" ({job.name})" if job.name else ""),
        framework="mapreduce", jobs=(JobRecord((0,), tuple(stages), delay, ()),), end_delay=0.0,
        input_bytes=stages[0].input_bytes, containers=concurrent or None,
        containers_how="most task attempts running at once (a .jhist does not say the queue's size)",
        span=(end - start) / 1000.0, notes=tuple(notes), digest=job.digest,
    )


def _check_job_end(job: MapReduceJob, attempts) -> None:
    """Refuse a job that finished before one of its successful attempts did: its span would be wrong."""
    last = max(attempts, key=lambda a: a.finish_ms)
    if job.finish_ms < last.finish_ms:
        raise LogFormatError(f"{job.path}: the job finished (finishTime {job.finish_ms}) before its attempt "
                             f"{last.attempt_id} did ({last.finish_ms}): the job history is inconsistent, and "
                             "its execution time cannot be measured")


def check_distinct(logs) -> None:
    """Refuse a log given twice: ``logs`` are ``(path, digest)``; the same file, or the same content, twice.

    Pooling a run with itself would count each of its tasks twice: the fit
    would look surer than it is, and a baseline would see two runs that agree.
    The content is compared by its digest, so a copy, or a compressed copy,
    of a log is the same log. Two logs of one application id are not refused:
    test and generated logs reuse ids (``local-1``) for runs that differ.

    >>> check_distinct([("a.json", "d1"), ("b.json", "d2")])
    >>> check_distinct([("a.json", "d1"), ("copy/a.json", "d1")])
    Traceback (most recent call last):
    ...
    spn.exceptions.LogFormatError: copy/a.json: the same log as a.json (same content): give each log once, or its tasks count twice
    """
    seen = {}
    for path, digest in logs:
        keys = [("same file", _file_key(path))] + ([("same content", digest)] if digest else [])
        for how, key in keys:
            if key in seen:
                same = "given twice" if str(seen[key]) == str(path) else f"the same log as {seen[key]} ({how})"
                raise LogFormatError(f"{path}: {same}: give each log once, or its tasks count twice")
        for _, key in keys:
            seen[key] = path


def _file_key(path):
    """What makes two paths one file: device and inode (a link or another spelling of the path is the same)."""
    try:
        info = os.stat(path)
        return ("inode", info.st_dev, info.st_ino)
    except OSError:
        return ("path", str(Path(path).resolve()))
