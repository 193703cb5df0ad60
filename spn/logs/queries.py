"""The repetitions of one query inside one Spark application, each as a :class:`~spn.logs.records.Run`.

A benchmark loop, or N users each resubmitting the same query, runs the
same jobs again and again. Users are told apart by job group
(``spark.jobGroup.id``, set per thread by ``setJobGroup``); without groups
all jobs are one user. The query is the shortest pattern of jobs (same stage
names, task counts and DAG) that repeats most often; the think time of a
user is the gap from the end of one of its queries to its next submission.

>>> found = query_runs("app-benchmark-loop.json", warmup_runs=1)  # doctest: +SKIP
>>> len(found.runs), found.streams, found.jobs_per_query            # doctest: +SKIP
(7, 1, 2)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from spn.exceptions import LogFormatError
from spn.logs.records import Run, largest_input
from spn.logs.runs import log_kind
from spn.logs.spark import read_spark_log
from spn.logs.spark_runs import app_label, job_records, timed_jobs
from spn.logs.spark_stages import application_cores

__all__ = ["QueryRuns", "query_runs"]


@dataclass(frozen=True)
class QueryRuns:
    """The repetitions of one query found in a log, and what they say about the users.

    ``think_gaps`` (s) are the gaps between a user's query end and its next
    submission; ``streams`` the users (job groups); ``skipped_jobs`` the jobs
    outside the query or left out as warm-up; ``overlapping`` says that jobs
    of one stream overlapped (several users without job groups).
    """

    runs: tuple[Run, ...]
    think_gaps: tuple[float, ...]
    streams: int
    skipped_jobs: int
    jobs_per_query: int
    overlapping: bool


def query_runs(path, *, allow_incomplete: bool = False, stage_groups: bool = False,
               warmup_runs: int = 0) -> QueryRuns:
    """The repetitions of the query a Spark application ran many times.

    Jobs outside the query (set-up) are left out, and so are the first
    ``warmup_runs`` runs of the query in time order (a cold JVM). Raises
    :class:`~spn.exceptions.LogFormatError` when the log is not a Spark event
    log, when no job succeeded, or when no query ran twice.
    """
    path = Path(path)
    if log_kind(path) != "spark":
        raise LogFormatError(f"{path}: repeated queries are found in Spark event logs only; a .jhist holds one "
                             "job (fit the .jhist files of the repetitions together instead)", option="per_query")
    app = read_spark_log(path)
    jobs = [job for job in timed_jobs(app, allow_incomplete=allow_incomplete, stage_groups=stage_groups)
            if not job.failed]
    if not jobs:
        raise LogFormatError(f"{path}: no job of the application succeeded: nothing to model")
    jobs.sort(key=lambda job: (job.submit, job.job_id))
    streams = defaultdict(list)
    for job in jobs:
        streams[job.group].append(job)

    def signature(job):
        return tuple((s.name, s.tasks, s.parents) for s in job.stages)

    best = None  # (repetitions, -length, pattern)
    for stream in streams.values():
        sigs = [signature(job) for job in stream]
        for length in range(1, len(sigs) // 2 + 1):
            counts = Counter(tuple(sigs[i:i + length]) for i in range(len(sigs) - length + 1))
            pattern, most = counts.most_common(1)[0]
            # a longer pattern occurs at most as often as its prefix: once the commonest one here cannot
            # beat the best (more repetitions, or as many and shorter), no longer one can (thousands of jobs)
            if most < 2 or (best is not None and (most, -length) <= best[:2]):
                break
            repetitions = _count_runs(sigs, pattern)
            candidate = (repetitions, -length, pattern)
            if repetitions >= 2 and (best is None or candidate[:2] > best[:2]):
                best = candidate
    if best is None:
        raise LogFormatError(
            f"{path}: found no query that ran twice or more (jobs grouped by "
            "spark.jobGroup.id when set): nothing repeats", option="per_query")
    pattern = best[2]
    length = len(pattern)
    containers, how = application_cores(app)
    chunks, gaps, skipped = [], [], 0  # gaps: (chunk before, chunk after, seconds)
    overlapping = False
    for group, stream in streams.items():
        sigs = [signature(job) for job in stream]
        for a, b in zip(stream, stream[1:]):
            overlapping |= b.submit < a.complete
        i, previous = 0, None  # previous: (chunk index, position after it)
        while i < len(stream):
            if tuple(sigs[i:i + length]) != pattern:
                skipped += 1
                i += 1
                continue
            chunk = stream[i:i + length]
            if previous is not None and previous[1] == i:
                before = chunks[previous[0]][1]
                gaps.append((previous[0], len(chunks),
                             max(chunk[0].submit - max(job.complete for job in before), 0) / 1000.0))
            previous = (len(chunks), i + length)
            chunks.append((group, chunk))
            i += length
    order = sorted(range(len(chunks)), key=lambda c: (chunks[c][1][0].submit, c))
    dropped = set(order[:warmup_runs])
    if len(order) - len(dropped) < 1:
        raise LogFormatError(f"{path}: {len(order)} runs of the query, all left out as warm-up runs", option="warmup_runs")
    label = app_label(app)
    runs = []
    for rank, c in enumerate(order):
        if c in dropped:
            continue
        group, chunk = chunks[c]
        records = job_records(chunk, None)
        start = min(job.submit for job in chunk)
        end = max(job.complete for job in chunk)
        runs.append(Run(
            source=app.path, label=f"{label}, query run {rank + 1}", framework="spark", jobs=records,
            end_delay=0.0, input_bytes=largest_input(records),
            containers=containers, containers_how=how, span=(end - start) / 1000.0, stream=group,
            digest=app.digest,
        ))
    kept_gaps = tuple(g for a, b, g in gaps if a not in dropped and b not in dropped)
    users = {chunks[c][0] for c in order if c not in dropped}
    return QueryRuns(tuple(runs), kept_gaps, len(users), skipped + sum(len(chunks[c][1]) for c in dropped),
                     length, overlapping)


def _count_runs(sigs, pattern) -> int:
    """How many times ``pattern`` occurs in ``sigs``, without overlaps, scanning from the start."""
    i = count = 0
    while i <= len(sigs) - len(pattern):
        if tuple(sigs[i:i + len(pattern)]) == pattern:
            count += 1
            i += len(pattern)
        else:
            i += 1
    return count
