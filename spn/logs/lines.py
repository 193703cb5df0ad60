r"""The lines of a log file, read as a bounded stream: what both log readers stand on.

A log may be as large as it likes, so it is never read whole: it is decompressed
and read one line at a time, and only a line's worth is ever held. What is refused,
with a :class:`~spn.exceptions.LogFormatError` naming the file (and the line):

- anything but a regular file (a named pipe would block, ``/dev/zero`` never ends);
- a line longer than :data:`~spn.limits.LOG_LINE_BYTES` after decompression: a
  compression bomb (a few kB that inflate to gigabytes without a newline) is one;
- a run of blank lines longer than :data:`MAX_BLANK_LINES` (no writer puts more
  than one between events, and a few kB of compressed newlines would keep the
  reader busy for minutes);
- compressed data that is corrupt, or (gzip) has bytes after its end (bzip2 and xz
  streams are read by the standard library's readers, which ignore such bytes);
- a JSON line nested deeper than the parser goes, or so dense with values that
  parsing it would take more memory than :data:`PARSE_BUDGET` allows.

A compressed stream that stops early (the application was still writing it)
ends with a warning instead, keeping the lines before it. The compression is
told by the file's first bytes, not its name, so a plain log saved under a ``.gz``
name still reads: every codec Spark writes (zstd, lz4, snappy, lzf: read by
:mod:`spn.logs.codecs`), and gzip, bzip2 and xz, which people use to archive logs.

>>> import gzip, hashlib, os, tempfile
>>> with tempfile.NamedTemporaryFile(suffix=".gz", delete=False) as file:
...     _ = file.write(gzip.compress(b'{"n": 1}\n\n{"n": 2}\n'))
>>> digest = hashlib.sha256()
>>> [(n, json_line(raw, f"line {n}")) for n, raw in log_lines(file.name, what="log", digest=digest)]
[(1, {'n': 1}), (3, {'n': 2})]
>>> digest.hexdigest() == hashlib.sha256(b'{"n": 1}\n\n{"n": 2}\n').hexdigest()
True
>>> os.unlink(file.name)
>>> list(log_lines("/dev/zero", what="Spark event log"))
Traceback (most recent call last):
...
spn.exceptions.LogFormatError: /dev/zero: not a regular file (a Spark event log is read from a file)
"""

from __future__ import annotations

import bz2
import errno
import gzip
import json
import lzma
import os
import sys
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

from spn import limits
from spn.exceptions import LogFormatError
from spn.logs.codecs import CorruptStream, open_codec

__all__ = ["log_lines", "json_line", "MAX_BLANK_LINES", "PARSE_BUDGET"]

#: blank lines in a row before a file is taken for something else than a log
MAX_BLANK_LINES = 10_000
#: bytes that parsing one line may cost, estimated before it is parsed (see :func:`json_line`)
PARSE_BUDGET = 640 << 20
#: a line shorter than this cannot reach the budget however dense (about 50 bytes per byte of input)
_DENSE_LINE_BYTES = 8 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_BZIP2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"


def log_lines(path, *, what: str, digest=None, cuts=None) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of every non-blank line of a log file, decompressed, newline kept.

    ``what`` names the kind of log in messages; ``digest`` (a ``hashlib`` object),
    when given, is fed every byte read, blank lines included, so that two files
    with the same content can be told to be one log; ``cuts`` (a list), when given,
    gets the warning of a cut-off stream too. Raises ``FileNotFoundError``
    when the file is missing; the module doc lists what is a ``LogFormatError``.
    """
    path = Path(path)
    if not os.path.lexists(path):  # as such: callers say "no such file" their own way
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    limits.input_file(path, max_bytes=sys.maxsize, what=what, error=LogFormatError)
    line_bytes = limits.LOG_LINE_BYTES  # looked up here, so that tests can lower it
    stream, errors = _open(path)
    lineno = blank = 0
    try:
        while True:
            try:
                raw = stream.readline(line_bytes + 1)
            except EOFError:
                message = (f"{path}: line {lineno + 1}: compressed stream ends early (application still "
                           "running?); kept the events before it")
                warnings.warn(message, stacklevel=3)
                if cuts is not None:
                    cuts.append(message)
                return
            except errors as error:
                raise LogFormatError(f"{path}: line {lineno + 1}: corrupt compressed data ({error}): not a "
                                     f"readable {what}") from None
            if not raw:
                return
            lineno += 1
            if len(raw) > line_bytes and not raw.endswith(b"\n"):
                raise LogFormatError(
                    f"{path}: line {lineno}: longer than {line_bytes:,} bytes (the most one line of a log may "
                    f"hold): not a {what}, or a compression bomb")
            if digest is not None:
                digest.update(raw)
            if raw.isspace():
                blank += 1
                if blank > MAX_BLANK_LINES:
                    raise LogFormatError(f"{path}: line {lineno}: more than {MAX_BLANK_LINES:,} blank lines in a "
                                         f"row: not a {what}")
                continue
            blank = 0
            yield lineno, raw
    finally:
        stream.close()


def json_line(raw: bytes, where: str):
    """The JSON value of one line; ``ValueError`` (saying why) when it is not UTF-8 JSON.

    A line that is JSON but too deep to parse, or so dense with values that it
    would cost more than :data:`PARSE_BUDGET` bytes of memory, is a
    :class:`~spn.exceptions.LogFormatError` naming ``where`` (file and line): that
    is no cut-off last line. The cost is estimated from the punctuation (each
    ``,`` or ``:`` starts a value, each ``[`` or ``{`` a container) and the text
    (held twice, as bytes and decoded, up to 4 bytes a character), an upper
    bound for CPython's objects.

    >>> json_line(b'{"Event": "x"}', "a.json: line 1")
    {'Event': 'x'}
    >>> json_line(b"[" * 100_000, "a.json: line 2")
    Traceback (most recent call last):
    ...
    spn.exceptions.LogFormatError: a.json: line 2: JSON nested too deeply to read: not a log event
    """
    if len(raw) > _DENSE_LINE_BYTES:
        values = raw.count(b",") + raw.count(b":") + 1
        containers = raw.count(b"[") + raw.count(b"{")
        cost = 64 * values + 80 * containers + (3 if raw.isascii() else 9) * len(raw)
        if cost > PARSE_BUDGET:
            raise LogFormatError(f"{where}: {len(raw):,} bytes holding about {values + containers:,} JSON values: "
                                 f"more than one log event can hold in memory ({PARSE_BUDGET >> 20} MiB)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise LogFormatError(f"{where}: JSON nested too deeply to read: not a log event") from None
    except MemoryError:
        raise LogFormatError(f"{where}: {len(raw):,} bytes of JSON: more than memory holds") from None
    except ValueError as error:
        raise ValueError(f"not JSON ({error})") from None


def _open(path: Path):
    """``(binary stream, the errors its decompressor raises for corrupt data)`` for ``path``."""
    try:
        raw = open(path, "rb")
    except OSError as error:
        raise LogFormatError(f"{path}: cannot read it ({error.strerror or error})") from None
    try:
        magic = raw.read(8)
        raw.seek(0)
        if magic.startswith(_GZIP_MAGIC):
            return _Owning(gzip.GzipFile(fileobj=raw, mode="rb"), raw), (OSError, zlib.error, ValueError)
        if magic.startswith(_BZIP2_MAGIC) and magic[3:4].isdigit():     # "BZh" and the block size, 1-9
            return _Owning(bz2.BZ2File(raw, "rb"), raw), (OSError, ValueError)
        if magic.startswith(_XZ_MAGIC):
            return _Owning(lzma.LZMAFile(raw, "rb"), raw), (OSError, ValueError, lzma.LZMAError)
        stream = open_codec(raw, magic)
        if stream is not None:
            return stream, (OSError, CorruptStream)
        return raw, (OSError,)
    except BaseException:
        raw.close()
        raise


class _Owning:
    """A decompressing stream that closes the file under it too."""

    def __init__(self, stream, raw):
        self.stream, self.raw = stream, raw

    def readline(self, size: int) -> bytes:
        return self.stream.readline(size)

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            self.raw.close()
