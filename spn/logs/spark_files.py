r"""The events of a Spark event log, from a file or a rolling log directory, decompressed.

Spark writes one JSON object per line (an *event*, named by its ``Event`` key)
to ``spark.eventLog.dir``. Where the log can come from:

- one file, plain or compressed in any codec Spark writes (zstd, lz4, snappy, lzf:
  :mod:`spn.logs.codecs`) or archived with gzip, bzip2 or xz, told by the file's
  first bytes; a trailing ``.inprogress`` is ignored;
- a rolling log directory ``eventlog_v2_<appId>/``: its ``events_<N>_<appId>``
  files are read in order of N as one log; ``appstatus_*`` markers are ignored.

A truncated last line (the application was still running) is dropped with a
``warnings.warn`` naming the file and line. Refused, with a ``LogFormatError``
naming the file and line: an empty file, bytes that are not UTF-8 text, a
line that is not a JSON object with an ``Event`` key (anywhere but the last line),
and whatever :mod:`spn.logs.lines` refuses (a named pipe or device, a line over
64 MiB, corrupt compressed data, JSON nested too deeply).

>>> import gzip, os, tempfile
>>> with tempfile.NamedTemporaryFile(suffix=".json.gz", delete=False) as file:
...     _ = file.write(gzip.compress(b'{"Event": "SparkListenerLogStart", "Spark Version": "3.5.0"}\n'))
>>> [(line, event["Event"]) for _, line, event in read_events(file.name)]
[(1, 'SparkListenerLogStart')]
>>> os.unlink(file.name)
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path

from spn.exceptions import LogFormatError
from spn.logs.lines import json_line, log_lines

__all__ = ["read_events"]

_EVENTS_FILE = re.compile(r"^events_(\d+)_")


def read_events(path, *, digest=None, cuts=None) -> Iterator[tuple[str, int, dict]]:
    """Every event of a Spark event log as ``(file, line number, event)``; see the module doc for errors.

    ``path`` is a file (plain or compressed) or a rolling ``eventlog_v2_*`` directory;
    ``digest`` (a ``hashlib`` object) is fed the decompressed bytes of every file read;
    ``cuts`` (a list) gets the warnings of a cut-off log too.
    """
    path = Path(path)
    if path.is_dir():
        files = _rolling_files(path)
    else:
        files = [path]
    seen_event = False
    bad_line = None  # (file, line, why): a line that failed; fine only if it is the very last one
    for file in files:
        for lineno, raw in log_lines(file, what="Spark event log", digest=digest, cuts=cuts):
            if bad_line is not None:
                raise LogFormatError(f"{bad_line[0]}: line {bad_line[1]}: {bad_line[2]}")
            try:
                event = json_line(raw, f"{file}: line {lineno}")
            except ValueError as error:
                bad_line = (str(file), lineno, f"{error}: not a Spark event log")
                continue
            if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
                raise LogFormatError(
                    f"{file}: line {lineno}: a JSON line without an 'Event' key: not a Spark event log"
                )
            seen_event = True
            yield str(file), lineno, event
    if bad_line is not None:
        if not seen_event:
            raise LogFormatError(f"{bad_line[0]}: line {bad_line[1]}: {bad_line[2]}")
        message = (f"{bad_line[0]}: line {bad_line[1]}: last line is incomplete (application still running?); "
                   "ignored it and kept the events before it")
        warnings.warn(message, stacklevel=3)
        if cuts is not None:
            cuts.append(message)
    elif not seen_event:
        raise LogFormatError(f"{files[-1]}: line 1: empty file: no events, not a Spark event log")


def _rolling_files(directory: Path) -> list[Path]:
    """The ``events_<N>_*`` entries of a rolling log directory, in order of N.

    Every such entry is returned, not only regular files: one that is not a
    file is refused when read rather than skipped, which would lose its events.
    """
    numbered = []
    for file in directory.iterdir():
        match = _EVENTS_FILE.match(file.name)
        if match:
            numbered.append((int(match.group(1)), file.name, file))
    if not numbered:
        raise LogFormatError(
            f"{directory}: line 0: directory has no events_<N>_<appId> files: not a Spark rolling event log"
        )
    return [file for _, _, file in sorted(numbered)]
