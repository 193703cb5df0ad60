r"""The events of a Spark event log, from a file or a rolling log directory, decompressed.

Spark writes one JSON object per line (an *event*, named by its ``Event`` key)
to ``spark.eventLog.dir``. Where the log can come from:

- one file, plain or compressed (``.gz`` always; ``.zst``/``.zstd`` when the
  ``zstandard`` package or Python 3.14's ``compression.zstd`` is importable;
  Spark's ``.lz4``, ``.lzf`` and ``.snappy`` use JVM-specific framing and are
  refused with a :class:`~spn.exceptions.LogFormatError` naming the codec);
  a trailing ``.inprogress`` is ignored;
- a rolling log directory ``eventlog_v2_<appId>/``: its ``events_<N>_<appId>``
  files are read in order of N as one log; ``appstatus_*`` markers are ignored.

A truncated last line (the application was still running) is dropped with a
``warnings.warn`` naming the file and line. Refused, with a ``LogFormatError``
naming the file and line: an empty file, bytes that are not UTF-8 text, a
line that is not a JSON object with an ``Event`` key (anywhere but the last line).

>>> import gzip, os, tempfile
>>> with tempfile.NamedTemporaryFile(suffix=".json.gz", delete=False) as file:
...     _ = file.write(gzip.compress(b'{"Event": "SparkListenerLogStart", "Spark Version": "3.5.0"}\n'))
>>> [(line, event["Event"]) for _, line, event in read_events(file.name)]
[(1, 'SparkListenerLogStart')]
>>> os.unlink(file.name)
"""

from __future__ import annotations

import gzip
import io
import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

from spn.exceptions import LogFormatError

__all__ = ["read_events"]

_EVENTS_FILE = re.compile(r"^events_(\d+)_")
_REFUSED_CODECS = {".lz4": "lz4", ".lzf": "lzf", ".snappy": "snappy"}


def read_events(path) -> Iterator[tuple[str, int, dict]]:
    """Every event of a Spark event log as ``(file, line number, event)``; see the module doc for errors.

    ``path`` is a file (plain or compressed) or a rolling ``eventlog_v2_*`` directory.
    """
    path = Path(path)
    if path.is_dir():
        files = _rolling_files(path)
    else:
        files = [path]
    seen_event = False
    bad_line = None  # (file, line, why): a line that failed; fine only if it is the very last one
    for file in files:
        for lineno, raw in _numbered_lines(file):
            if not raw.strip():
                continue
            if bad_line is not None:
                raise LogFormatError(f"{bad_line[0]}: line {bad_line[1]}: {bad_line[2]}")
            try:
                text = raw.decode("utf-8")
                event = json.loads(text)
            except (UnicodeDecodeError, ValueError) as error:
                why = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else f"not JSON ({error})"
                bad_line = (str(file), lineno, why + ": not a Spark event log")
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
        warnings.warn(
            f"{bad_line[0]}: line {bad_line[1]}: last line is incomplete (application still running?); "
            "ignored it and kept the events before it",
            stacklevel=3,
        )
    elif not seen_event:
        raise LogFormatError(f"{files[-1]}: line 1: empty file: no events, not a Spark event log")


def _rolling_files(directory: Path) -> list[Path]:
    """The ``events_<N>_*`` files of a rolling log directory, in order of N."""
    numbered = []
    for file in directory.iterdir():
        match = _EVENTS_FILE.match(file.name)
        if match and file.is_file():
            numbered.append((int(match.group(1)), file))
    if not numbered:
        raise LogFormatError(
            f"{directory}: line 0: directory has no events_<N>_<appId> files: not a Spark rolling event log"
        )
    return [file for _, file in sorted(numbered)]


def _numbered_lines(file: Path) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of a file, decompressed; a cut-off gzip stream ends with a warning."""
    stream = _open_binary(file)
    lineno = 0
    with stream:
        try:
            for lineno, raw in enumerate(stream, start=1):
                yield lineno, raw
        except EOFError:
            warnings.warn(
                f"{file}: line {lineno + 1}: compressed stream ends early (application still running?); "
                "kept the events before it",
                stacklevel=4,
            )


def _open_binary(file: Path):
    """Open ``file`` for reading bytes, decompressing by suffix (gzip also by its magic bytes)."""
    suffix = file.suffix
    if suffix == ".inprogress":
        suffix = Path(file.stem).suffix
    if suffix in _REFUSED_CODECS:
        raise LogFormatError(
            f"{file}: line 0: codec '{_REFUSED_CODECS[suffix]}' is not supported (Spark writes it in a "
            "JVM-specific framing that no installed module reads); decompress it with Spark first, or "
            "log with spark.eventLog.compression.codec=zstd or spark.eventLog.compress=false"
        )
    if suffix in (".zst", ".zstd"):
        return _open_zstd(file)
    with open(file, "rb") as probe:
        magic = probe.read(2)
    if suffix == ".gz" or magic == b"\x1f\x8b":
        return gzip.open(file, "rb")
    return open(file, "rb")


def _open_zstd(file: Path):
    try:
        from compression import zstd  # Python 3.14+

        return zstd.open(file, "rb")
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise LogFormatError(
            f"{file}: line 0: codec 'zstd' is not supported here: install the 'zstandard' package "
            "(or use Python 3.14+), or decompress it first with `zstd -d`"
        ) from None
    return io.BufferedReader(zstandard.open(file, "rb"))
