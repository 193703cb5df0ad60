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

import gzip
from pathlib import Path

from spn.exceptions import LogFormatError
from spn.logs.intervals import covered_seconds, most_at_once
from spn.logs.jhist import MapReduceJob, attempt_durations, read_jhist
from spn.logs.records import JobRecord, Run, StageRecord, duration_floor
from spn.logs.spark import read_spark_log
from spn.logs.spark_runs import spark_run, timed_jobs

__all__ = ["log_kind", "load_runs"]


def log_kind(path) -> str:
    """``"spark"`` or ``"jhist"``, from the first bytes (a .jhist starts with ``Avro-``, gzipped or not).

    A directory is a Spark rolling log. Raises :class:`~spn.exceptions.LogFormatError`
    when the file does not exist or cannot be read.
    """
    path = Path(path)
    if not path.exists():
        raise LogFormatError(f"{path}: no such file or directory")
    if path.is_dir():
        return "spark"
    try:
        with open(path, "rb") as probe:
            head = probe.read(16)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as probe:
                head = probe.read(16)
    except (OSError, EOFError) as error:
        raise LogFormatError(f"{path}: cannot read: {error}") from None
    return "jhist" if head.startswith(b"Avro-") else "spark"


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
        span=(end - start) / 1000.0, notes=tuple(notes),
    )
