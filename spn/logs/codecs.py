r"""Spark's event-log codecs as streams: zstd, lz4, snappy and lzf, one block in memory at a time.

Spark compresses an event log with ``spark.eventLog.compression.codec``
(``org.apache.spark.io.CompressionCodec``). zstd writes standard zstd frames; the
other three write the framing of the JVM library Spark uses, around blocks of the
codec, so each is read here by its framing, and each block is handed to a
maintained package (``zstandard``, ``lz4``, ``cramjam``, ``python-lzf``):

- **lz4** (lz4-java's ``LZ4BlockOutputStream``): blocks of ``LZ4Block``, a token
  (method: raw or LZ4, and the block size as a power of two), compressed and
  original lengths and an xxHash32 checksum (seed ``0x9747b28c``, 28 bits kept) of
  the original bytes, all little-endian; an empty raw block ends a stream, and
  another stream may follow;
- **snappy** (snappy-java's ``SnappyOutputStream``): a 16-byte header (``\x82SNAPPY\0``,
  version, compatible version), then chunks of a big-endian length and a raw
  snappy block; a header may recur (concatenated streams);
- **lzf** (compress-lzf's ``LZFOutputStream``): chunks of ``ZV``, a type (0: stored,
  1: compressed) and big-endian lengths of at most 64 KiB.

:func:`open_codec` tells the codec by the first bytes and returns a buffered
stream of the decompressed bytes. A stream that stops inside a block (or, for
zstd and lz4, before its end mark: the application was still writing) raises
``EOFError`` when read there; data that cannot be decompressed, a checksum that
does not match, or a block that declares more than :data:`MAX_BLOCK_BYTES` (a
compression bomb would) raise :class:`CorruptStream`.

>>> import io
>>> text = b'{"Event": "SparkListenerLogStart"}\n'
>>> chunk = b"ZV\x00" + len(text).to_bytes(2, "big") + text       # an lzf chunk stored as it is
>>> open_codec(io.BytesIO(chunk), chunk[:8]).readline()
b'{"Event": "SparkListenerLogStart"}\n'
"""

from __future__ import annotations

import io
import struct

__all__ = ["CorruptStream", "codec_of", "open_codec", "MAX_BLOCK_BYTES"]

#: the most bytes one block may declare, compressed or not: lz4-java's largest block is 32 MiB,
#: snappy-java's and compress-lzf's are far smaller; a zstd read is bounded by its input instead
MAX_BLOCK_BYTES = 64 << 20
#: compressed bytes handed to zstd at a time (an RLE block inflates a few bytes to 128 KiB, so this
#: bounds one call's output to some 32 MiB)
_ZSTD_INPUT = 1 << 10

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_LZ4_MAGIC = b"LZ4Block"
_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_LZF_MAGIC = b"ZV"

_LZ4_HEADER = struct.Struct("<8sBiiI")
_LZ4_RAW, _LZ4_COMPRESSED = 0x10, 0x20
_LZ4_SEED = 0x9747B28C
_SNAPPY_HEADER = struct.Struct(">8sii")


class CorruptStream(ValueError):
    """Compressed data that its codec cannot read."""


def codec_of(magic: bytes) -> str | None:
    r"""The Spark codec whose stream starts with ``magic`` (its first 8 bytes), or ``None``.

    >>> codec_of(b"LZ4Block"), codec_of(b"ZV\x01\x00\x10\x00\x20\x00"), codec_of(b'{"Event"')
    ('lz4', 'lzf', None)
    """
    if magic.startswith(_ZSTD_MAGIC):
        return "zstd"
    if magic.startswith(_LZ4_MAGIC):
        return "lz4"
    if magic.startswith(_SNAPPY_MAGIC):
        return "snappy"
    if magic.startswith(_LZF_MAGIC) and magic[2:3] in (b"\x00", b"\x01"):
        return "lzf"
    return None


def open_codec(raw, magic: bytes):
    """A buffered stream of what the binary file ``raw`` holds decompressed, or ``None`` if no codec here.

    ``magic`` is the file's first 8 bytes (``raw`` is read from where it is);
    closing the stream closes ``raw``.
    """
    blocks = {"zstd": _zstd_blocks, "lz4": _lz4_blocks, "snappy": _snappy_blocks, "lzf": _lzf_blocks}
    codec = codec_of(magic)
    if codec is None:
        return None
    return io.BufferedReader(_BlockStream(blocks[codec](raw), raw), buffer_size=1 << 16)


class _BlockStream(io.RawIOBase):
    """A readable raw stream over an iterator of decompressed blocks."""

    def __init__(self, blocks, raw):
        super().__init__()
        self._blocks, self._raw = blocks, raw
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            block = next(self._blocks, None)
            if block is None:
                return 0
            self._pending = memoryview(block)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def _read_exactly(raw, size: int, what: str) -> bytes:
    """``size`` bytes of ``raw``; ``b""`` at a clean end of file, ``EOFError`` when it ends inside them."""
    data = raw.read(size)
    while data and len(data) < size:
        more = raw.read(size - len(data))
        if not more:
            break
        data += more
    if data and len(data) < size:
        raise EOFError(f"stream ends inside {what}")
    return data


def _block_size(size: int, what: str) -> int:
    if not 0 <= size <= MAX_BLOCK_BYTES:
        raise CorruptStream(f"{what} declares {size:,} bytes (at most {MAX_BLOCK_BYTES:,})")
    return size


def _zstd_blocks(raw):
    """Standard zstd frames, one after another; a frame left open at the end of file is ``EOFError``."""
    import zstandard

    decompressor = zstandard.ZstdDecompressor()
    frame, pending = None, b""
    while True:
        data = pending or raw.read(_ZSTD_INPUT)
        pending = b""
        if not data:
            if frame is not None and not frame.eof:
                raise EOFError("stream ends inside a zstd frame")
            return
        if frame is None or frame.eof:
            frame = decompressor.decompressobj()
        try:
            out = frame.decompress(data)
        except zstandard.ZstdError as error:
            raise CorruptStream(f"zstd: {error}") from None
        if frame.eof:
            pending = frame.unused_data     # the next frame's first bytes
        if out:
            yield out


def _lz4_blocks(raw):
    """lz4-java's ``LZ4BlockOutputStream`` blocks (see the module doc), checksums checked."""
    import lz4.block
    import xxhash

    ended = True        # at the start of a stream, or after its end mark: a clean place for the file to end
    while True:
        header = _read_exactly(raw, _LZ4_HEADER.size, "an lz4 block header")
        if not header:
            if not ended:
                raise EOFError("stream ends before lz4's end mark")
            return
        magic, token, compressed, original, check = _LZ4_HEADER.unpack(header)
        method, largest = token & 0xF0, 1 << (10 + (token & 0x0F))
        if magic != _LZ4_MAGIC or method not in (_LZ4_RAW, _LZ4_COMPRESSED):
            raise CorruptStream("not an lz4 block (LZ4Block magic and method expected)")
        if (not 0 <= original <= largest or compressed < 0 or (original == 0) != (compressed == 0)
                or (method == _LZ4_RAW and original != compressed)):
            raise CorruptStream(f"lz4 block header with lengths {compressed:,} and {original:,} that do not fit")
        if original == 0:
            if check != 0:
                raise CorruptStream("lz4 end mark with a checksum")
            ended = True
            continue
        ended = False
        data = _read_exactly(raw, _block_size(compressed, "an lz4 block"), "an lz4 block")
        if len(data) < compressed:
            raise EOFError("stream ends inside an lz4 block")
        if method == _LZ4_COMPRESSED:
            try:
                data = lz4.block.decompress(data, uncompressed_size=original)
            except lz4.block.LZ4BlockError as error:
                raise CorruptStream(f"lz4: {error}") from None
        if len(data) != original or xxhash.xxh32_intdigest(data, seed=_LZ4_SEED) & 0x0FFFFFFF != check:
            raise CorruptStream("lz4 block checksum does not match its bytes")
        yield data


def _snappy_blocks(raw):
    """snappy-java's ``SnappyOutputStream`` chunks (see the module doc)."""
    import cramjam

    head = _SNAPPY_MAGIC[:4]
    header = _read_exactly(raw, _SNAPPY_HEADER.size, "the snappy header")
    while True:
        if header is not None:
            magic, _, compatible = _SNAPPY_HEADER.unpack(header)      # the writer's version: any
            if magic != _SNAPPY_MAGIC or compatible < 1:
                raise CorruptStream(f"not a snappy-java stream (header {magic!r}, compatible version {compatible})")
            header = None
        length = _read_exactly(raw, 4, "a snappy chunk length")
        if not length:
            return
        if length == head:       # another stream's header: the rest of it follows
            header = length + _read_exactly(raw, _SNAPPY_HEADER.size - 4, "the snappy header")
            continue
        size = _block_size(int.from_bytes(length, "big", signed=True), "a snappy chunk")
        data = _read_exactly(raw, size, "a snappy chunk")
        if len(data) < size:
            raise EOFError("stream ends inside a snappy chunk")
        _block_size(_snappy_length(data), "a snappy chunk's content")
        try:
            yield bytes(cramjam.snappy.decompress_raw(data))
        except cramjam.DecompressionError as error:
            raise CorruptStream(f"snappy: {error}") from None


def _snappy_length(block: bytes) -> int:
    """The decompressed length a raw snappy block starts with (a little-endian base-128 varint)."""
    length = 0
    for shift, byte in zip(range(0, 35, 7), block):
        length |= (byte & 0x7F) << shift
        if byte < 0x80:
            return length
    raise CorruptStream("snappy block without a valid length")


def _lzf_blocks(raw):
    """compress-lzf's ``LZFOutputStream`` chunks (see the module doc)."""
    import lzf

    while True:
        header = _read_exactly(raw, 5, "an lzf chunk header")
        if not header:
            return
        if header[:2] != _LZF_MAGIC or header[2] not in (0, 1):
            raise CorruptStream(f"not an lzf chunk (header {header[:3]!r})")
        size = int.from_bytes(header[3:5], "big")
        if header[2] == 0:
            data = _read_exactly(raw, size, "an lzf chunk")
            if len(data) < size:
                raise EOFError("stream ends inside an lzf chunk")
            yield data
            continue
        original = _read_exactly(raw, 2, "an lzf chunk header")
        if len(original) < 2:
            raise EOFError("stream ends inside an lzf chunk header")
        original = int.from_bytes(original, "big")
        data = _read_exactly(raw, size, "an lzf chunk")
        if len(data) < size:
            raise EOFError("stream ends inside an lzf chunk")
        try:
            out = lzf.decompress(data, original) if size else b""
        except ValueError as error:
            raise CorruptStream(f"lzf: {error}") from None
        if out is None or len(out) != original:
            raise CorruptStream(f"lzf chunk does not decompress to the {original:,} bytes it declares")
        yield out
