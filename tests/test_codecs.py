"""Every codec Spark writes event logs in (zstd, lz4, snappy, lzf) reads as the plain log, streamed.

Two references, independent of the reader under test:

- **real Spark** (``tests/spark_logs.py``, marked ``slow``): a tiny application
  logged plain, in each codec and as rolling logs; every file decompressed by spn
  has the SHA-256 of the same file decompressed by Spark's own ``CompressionCodec``
  classes in the JVM, and every log has the jobs, stages and tasks of the plain one;
- **the framings as their formats define them** (fast): a real Apache log framed
  here, block by block, with the codecs' own compressors (``lz4.block``,
  ``cramjam.snappy``, ``lzf``, ``zstandard``) and the headers written from the
  formats (lz4-java's ``LZ4BlockOutputStream``, snappy-java's ``SnappyOutputStream``,
  compress-lzf's ``LZFOutputStream``); then what such streams do at the edges:
  concatenated streams, a stream cut short (a warning, the events before it kept),
  corrupt data and a bad checksum (a ``LogFormatError`` naming the file and line),
  a block that declares gigabytes (refused before anything is allocated), and a
  24 MB log read with a peak of memory under 4 MB.
"""

from __future__ import annotations

import hashlib
import os
import tracemalloc
import warnings
from pathlib import Path

import cramjam
import lz4.block
import lzf
import pytest
import xxhash
import zstandard

from spn.exceptions import LogFormatError
from spn.logs import read_spark_log
from spn.logs.inputs import resolve_inputs
from spn.logs.lines import log_lines
from spark_logs import APP_NAME

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
PLAIN = DATA / "spark-events" / "local-1430917381534.json"      # 110 tasks, 138 kB: several blocks
needs_data = pytest.mark.skipif(not PLAIN.exists(), reason=f"the Apache Spark logs are absent ({PLAIN})")


# --------------------------------------------------------------------------
# The framings, written from their formats
# --------------------------------------------------------------------------


def lz4_stream(data: bytes, block: int = 1 << 15, end: bool = True) -> bytes:
    """lz4-java: ``LZ4Block``, token (method | log2(block) - 10), LE lengths, xxHash32 & 0x0FFFFFFF, end mark."""
    level = block.bit_length() - 1 - 10
    out = bytearray()
    for start in range(0, len(data), block):
        piece = data[start:start + block]
        packed = lz4.block.compress(piece, store_size=False)
        method, body = (0x20, packed) if len(packed) < len(piece) else (0x10, piece)
        check = xxhash.xxh32_intdigest(piece, seed=0x9747B28C) & 0x0FFFFFFF
        out += b"LZ4Block" + bytes([method | level]) + len(body).to_bytes(4, "little") \
            + len(piece).to_bytes(4, "little") + check.to_bytes(4, "little") + body
    if end:
        out += b"LZ4Block" + bytes([0x10 | level]) + bytes(12)
    return bytes(out)


def snappy_stream(data: bytes, block: int = 1 << 15) -> bytes:
    """snappy-java: ``\\x82SNAPPY\\0``, version 1, compatible 1 (BE ints), then BE length + raw snappy block."""
    out = bytearray(b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") + (1).to_bytes(4, "big"))
    for start in range(0, len(data), block):
        packed = bytes(cramjam.snappy.compress_raw(data[start:start + block]))
        out += len(packed).to_bytes(4, "big") + packed
    return bytes(out)


def lzf_stream(data: bytes, block: int = 0xFFFF) -> bytes:
    """compress-lzf: ``ZV``, type 1 (BE compressed and original lengths) or 0 (stored, BE length)."""
    out = bytearray()
    for start in range(0, len(data), block):
        piece = data[start:start + block]
        packed = lzf.compress(piece)
        if packed is None or len(packed) >= len(piece):
            out += b"ZV\x00" + len(piece).to_bytes(2, "big") + piece
        else:
            out += b"ZV\x01" + len(packed).to_bytes(2, "big") + len(piece).to_bytes(2, "big") + packed
    return bytes(out)


def zstd_stream(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


FRAMINGS = {"lz4": lz4_stream, "snappy": snappy_stream, "lzf": lzf_stream, "zstd": zstd_stream}


def structure(app) -> tuple:
    """What two runs of one program share: jobs, and stages with their task counts."""
    return len(app.jobs), sorted((stage.stage_id, stage.num_tasks) for stage in app.stages)


@needs_data
@pytest.mark.parametrize("codec", sorted(FRAMINGS))
def test_a_framed_log_reads_as_the_plain_one(tmp_path, codec):
    data = PLAIN.read_bytes()
    framed = tmp_path / f"local-1430917381534.{codec}"
    framed.write_bytes(FRAMINGS[codec](data))
    digest = hashlib.sha256()
    assert sum(1 for _ in log_lines(framed, what="log", digest=digest)) == data.count(b"\n")
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()
    framed_app, plain_app = read_spark_log(framed), read_spark_log(PLAIN)
    assert (framed_app.jobs, framed_app.stages, framed_app.tasks, framed_app.executors) == (
        plain_app.jobs, plain_app.stages, plain_app.tasks, plain_app.executors)


@pytest.mark.parametrize("codec", sorted(FRAMINGS))
def test_the_codec_is_told_by_the_bytes_not_the_name(tmp_path, codec):
    line = b'{"Event": "SparkListenerApplicationStart", "App ID": "x", "Timestamp": 1}\n'
    (tmp_path / "plain.lz4").write_bytes(line)                      # a plain log under a codec's name
    (tmp_path / "framed.json").write_bytes(FRAMINGS[codec](line))   # a framed log under a plain name
    assert read_spark_log(tmp_path / "plain.lz4").app_id == read_spark_log(tmp_path / "framed.json").app_id == "x"


def test_concatenated_streams_read_as_one(tmp_path):
    first, second = b'{"n": 1}\n', b'{"n": 2}\n'
    for codec in ("lz4", "snappy", "zstd", "lzf"):
        path = tmp_path / f"two.{codec}"
        path.write_bytes(FRAMINGS[codec](first) + FRAMINGS[codec](second))
        assert [raw for _, raw in log_lines(path, what="log")] == [first, second], codec


LINES = b"".join(b'{"Event": "SparkListenerTaskEnd", "n": %d}\n' % n for n in range(20_000))


@pytest.mark.parametrize("codec", sorted(FRAMINGS))
def test_a_stream_cut_short_keeps_what_came_before_with_a_warning(tmp_path, codec):
    framed = FRAMINGS[codec](LINES)
    path = tmp_path / f"cut.{codec}"
    path.write_bytes(framed[: len(framed) * 2 // 3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lines = [raw for _, raw in log_lines(path, what="Spark event log")]
    assert any("ends early" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert 0 < len(lines) < 20_000
    assert b"".join(lines[:-1]) == LINES[: len(b"".join(lines[:-1]))]     # every line before the cut, intact


def test_an_lz4_stream_without_its_end_mark_is_cut_short(tmp_path):
    path = tmp_path / "running.lz4"
    path.write_bytes(lz4_stream(LINES, end=False))
    with pytest.warns(UserWarning, match="ends early"):
        assert sum(1 for _ in log_lines(path, what="log")) == 20_000


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1:]


def _second_lzf_chunk(data: bytes, at: int, value: bytes) -> bytes:
    """``data`` with byte ``at`` of its second lzf chunk set to ``value`` (a first chunk's damage would make
    the file no lzf stream at all: it would be read as plain text)."""
    second = 7 + int.from_bytes(data[3:5], "big") if data[2] == 1 else 5 + int.from_bytes(data[3:5], "big")
    return data[:second + at] + value + data[second + at + 1:]


@pytest.mark.parametrize("codec, damage", [
    ("lz4", lambda s: _flip(s, 200)),                         # inside the first block: the checksum says so
    ("lz4", lambda s: s[:8] + b"\x70" + s[9:]),               # an unknown method
    ("snappy", lambda s: s[:20] + b"\xff\xff\xff\xff" + s[24:]),   # a chunk's content length
    ("snappy", lambda s: _flip(s, 16 + 4)),                  # the length a block says it decompresses to
    ("lzf", lambda s: _second_lzf_chunk(s, 2, b"\x07")),      # an unknown chunk type
    ("lzf", lambda s: s[:5] + b"\x00\x10" + s[7:]),           # less than the chunk decompresses to
    ("zstd", lambda s: _flip(s, 4)),                          # the frame header
])
def test_corrupt_data_is_refused_naming_file_and_line(tmp_path, codec, damage):
    path = tmp_path / f"bad.{codec}"
    path.write_bytes(damage(FRAMINGS[codec](LINES)))
    with pytest.raises(LogFormatError, match=rf"bad\.{codec}: line \d+: corrupt compressed data"):
        list(log_lines(path, what="Spark event log"))


@pytest.mark.parametrize("header", [
    b"LZ4Block\x2f" + (1 << 30).to_bytes(4, "little") + (1 << 25).to_bytes(4, "little") + bytes(4),
    b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + (2**31 - 1).to_bytes(4, "big"),
    b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + (6).to_bytes(4, "big")
    + b"\xff\xff\xff\xff\x0f\x00",                        # a 6-byte block that says it holds 4 GiB
])
def test_a_block_declaring_gigabytes_is_refused_before_it_is_read(tmp_path, header):
    path = tmp_path / "bomb"
    path.write_bytes(header)
    tracemalloc.start()
    try:
        with pytest.raises(LogFormatError, match="corrupt compressed data .*declares"):
            list(log_lines(path, what="log"))
        assert tracemalloc.get_traced_memory()[1] < 8 << 20
    finally:
        tracemalloc.stop()


#: megabytes of events in the large log (tracemalloc slows reading some tenfold: enough to tell a bound)
STREAMS = 24


@pytest.mark.parametrize("codec", sorted(FRAMINGS))
def test_a_large_log_is_read_in_bounded_memory(tmp_path, codec):
    """24 MB of events: read with a peak of memory far below what the log holds decompressed."""
    line = b'{"Event": "SparkListenerTaskEnd", "Task Info": {"Launch Time": 1, "Finish Time": 2}}\n'
    block = line * (1_000_000 // len(line))
    path = tmp_path / f"large.{codec}"
    with open(path, "wb") as out:
        for _ in range(STREAMS):
            out.write(FRAMINGS[codec](block))        # concatenated streams: each codec reads them as one
    tracemalloc.start()
    try:
        count = sum(1 for _ in log_lines(path, what="log"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == STREAMS * block.count(b"\n")
    assert peak < 4 << 20, f"{peak / 1e6:.1f} MB at the peak"


# --------------------------------------------------------------------------
# Real Spark (slow: a JVM runs the application once per codec)
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_spark_wrote_every_codec(spark_logs):
    folder, manifest = spark_logs
    assert {(entry["codec"], entry["rolling"]) for entry in manifest} == {
        (None, False), ("zstd", False), ("lz4", False), ("lzf", False), ("snappy", False),
        ("zstd", True), ("lz4", True)}


@pytest.mark.slow
def test_every_file_decompresses_to_what_spark_reads(spark_logs):
    folder, manifest = spark_logs
    for entry in manifest:
        for name, expected in entry["sha256"].items():
            digest = hashlib.sha256()
            for _ in log_lines(folder / name, what="log", digest=digest):
                pass
            assert digest.hexdigest() == expected, f"{name} ({entry['codec']})"


@pytest.mark.slow
def test_every_log_has_the_stages_and_tasks_of_the_plain_one(spark_logs):
    folder, manifest = spark_logs
    plain = next(entry for entry in manifest if entry["codec"] is None and not entry["rolling"])
    reference = read_spark_log(folder / plain["path"])
    assert len(reference.tasks) == 8 and len(reference.jobs) == 1
    for entry in manifest:
        app = read_spark_log(folder / entry["path"])
        assert app.app_id == entry["app_id"] and app.name == APP_NAME
        assert structure(app) == structure(reference), entry["path"]
        assert sorted(zip(app.tasks.stage_id.tolist(), app.tasks.index.tolist())) == sorted(
            zip(reference.tasks.stage_id.tolist(), reference.tasks.index.tolist()))


@pytest.mark.slow
def test_the_folder_spark_wrote_is_one_application_in_every_codec(spark_logs):
    folder, manifest = spark_logs
    with resolve_inputs([folder], single=True) as inputs:
        assert {log.app_id for log in inputs.logs} == {entry["app_id"] for entry in manifest}
        assert set(inputs.groups()) == {APP_NAME}
        starts = [log.start_ms for log in inputs.logs]
        assert starts == sorted(starts)
