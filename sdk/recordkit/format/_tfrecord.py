"""TFRecord framing, written and read without TensorFlow.

A TFRecord file is a sequence of records, each framed as::

    uint64 length (little endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

optionally inside one GZIP or ZLIB stream. Files written here are read by plain
``tf.data.TFRecordDataset`` (tests check that); files read here get their CRCs checked,
and a truncated or corrupt record is reported with its shard and byte offset, which
TensorFlow's own error does not give.
"""

from __future__ import annotations

import enum
import gzip
import io
import os
import struct
import zlib
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import google_crc32c

from recordkit.errors import CorruptRecordError

__all__ = [
    "Compression",
    "TFRecordFileWriter",
    "frame_pieces",
    "frame_record",
    "iter_tfrecords",
    "masked_crc",
]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_HEADER_SIZE = _LENGTH.size + _CRC.size


class Compression(str, enum.Enum):
    """The compression types TFRecordDataset understands (its ``compression_type``)."""

    NONE = ""
    GZIP = "GZIP"
    ZLIB = "ZLIB"

    @classmethod
    def parse(cls, value: str | Compression | None) -> Compression:
        if isinstance(value, Compression):
            return value
        if value is None or value.upper() in ("", "NONE"):
            return cls.NONE
        try:
            return cls(value.upper())
        except ValueError:
            raise ValueError(f"compression must be none, GZIP or ZLIB, not {value!r}") from None

    @property
    def suffix(self) -> str:
        return {"": "", "GZIP": ".gz", "ZLIB": ".zz"}[self.value]


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    return _mask(int(google_crc32c.value(data)))


def frame_record(data: bytes) -> bytes:
    """One record with its TFRecord framing."""
    return frame_pieces([data], len(data))


def frame_pieces(pieces: Sequence[bytes], size: int) -> bytes:
    """One record given as pieces (of ``size`` bytes in all), framed, in one copy.

    The CRC of the data is accumulated piece by piece, so the record is never joined
    before it is joined into its frame.
    """
    length = _LENGTH.pack(size)
    crc = 0
    for piece in pieces:
        crc = google_crc32c.extend(crc, piece)
    return b"".join([length, _CRC.pack(masked_crc(length)), *pieces, _CRC.pack(_mask(int(crc)))])


class _ZlibWriter(io.RawIOBase):
    """A write-only file object that zlib-compresses into ``raw`` (TFRecord's ZLIB)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._compressor = zlib.compressobj()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._raw.write(self._compressor.compress(data))
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._raw.write(self._compressor.flush())
        super().close()


class TFRecordFileWriter:
    """Appends framed records to one file; counts records and (uncompressed) bytes."""

    def __init__(self, path: str | Path, compression: Compression = Compression.NONE) -> None:
        self.path = Path(path)
        self._raw: BinaryIO = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._out: BinaryIO
        if compression is Compression.GZIP:
            # mtime=0 keeps files reproducible; filename="" keeps temp names out of them.
            self._out = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0)  # type: ignore[assignment]
        elif compression is Compression.ZLIB:
            self._out = _ZlibWriter(self._raw)  # type: ignore[assignment]
        else:
            self._out = self._raw
        self.records = 0
        self.payload_bytes = 0

    def write(self, data: bytes) -> None:
        self.write_framed(frame_record(data))

    def write_framed(self, framed: bytes) -> None:
        """Write a record already framed by :func:`frame_record` (e.g. in a worker)."""
        self._out.write(framed)
        self.records += 1
        self.payload_bytes += len(framed)

    def close(self) -> None:
        """Flush everything to disk (fsync) and close."""
        if self._out is not self._raw:
            self._out.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()

    def abort(self) -> None:
        """Close without caring about the content (the caller deletes the file)."""
        try:
            if self._out is not self._raw:
                self._out.close()
        finally:
            self._raw.close()


class _ZlibReader(io.RawIOBase):
    """A read-only file object over a zlib stream (TFRecord's ZLIB), decompressed as it
    is read: memory stays at one chunk whatever the shard's size, and the records
    before a truncation or a damaged block are still read."""

    _CHUNK = 1 << 16

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._decompressor = zlib.decompressobj()
        self._buffer = b""
        self._position = 0
        self._finished = False

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while self._position == len(self._buffer) and not self._finished:
            self._refill()
        count = min(len(target), len(self._buffer) - self._position)
        target[:count] = self._buffer[self._position : self._position + count]
        self._position += count
        return count

    def _refill(self) -> None:
        # Bounded output per call: a small chunk can inflate to a great deal.
        pending = self._decompressor.unconsumed_tail or self._raw.read(self._CHUNK)
        if pending:
            self._buffer = self._decompressor.decompress(pending, self._CHUNK)
        else:
            self._buffer = self._decompressor.flush()
            self._finished = True
            if not self._decompressor.eof:
                raise zlib.error("the zlib stream ends early (truncated file)")
        self._position = 0

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open_for_reading(path: Path, compression: Compression) -> BinaryIO:
    if compression is Compression.GZIP:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if compression is Compression.ZLIB:
        return io.BufferedReader(_ZlibReader(open(path, "rb")))
    return open(path, "rb")


#: Bytes read at a time from a compressed stream, whose size is not known in advance.
_READ_CHUNK = 1 << 20


def _read_up_to(stream: BinaryIO, count: int) -> bytes:
    """Up to ``count`` bytes of ``stream``, read in bounded chunks: memory grows with the
    bytes there are, never with the (untrusted) count asked for."""
    if count <= _READ_CHUNK:
        return stream.read(count)
    parts: list[bytes] = []
    left = count
    while left > 0:
        part = stream.read(min(left, _READ_CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def iter_tfrecords(
    path: str | Path,
    compression: Compression = Compression.NONE,
    *,
    verify: bool = True,
) -> Generator[tuple[int, bytes], None, None]:
    """Yield ``(offset, data)`` for each record in a TFRecord file, checking CRCs.

    ``offset`` is the byte offset of the record's header in the (uncompressed) stream.
    Raises :class:`CorruptRecordError` naming the file and offset on a truncated
    record or a CRC mismatch; records before it have already been yielded.
    """
    path = Path(path)
    shard = path.name
    try:
        stream = _open_for_reading(path, compression)
    except OSError as exc:
        raise CorruptRecordError(f"cannot read the shard file: {exc.strerror or exc}", shard=shard) from None
    with stream:
        # The uncompressed stream's size where known: no declared length may pass it.
        size = os.fstat(stream.fileno()).st_size if compression is Compression.NONE else None
        offset = 0
        while True:
            try:
                header = stream.read(_HEADER_SIZE)
            except (OSError, EOFError, zlib.error) as exc:
                raise CorruptRecordError(f"cannot decompress: {exc}", shard=shard, offset=offset) from None
            if not header:
                return
            if len(header) < _HEADER_SIZE:
                raise CorruptRecordError("truncated record header", shard=shard, offset=offset)
            length_bytes = header[: _LENGTH.size]
            (length,) = _LENGTH.unpack(length_bytes)
            (length_crc,) = _CRC.unpack(header[_LENGTH.size :])
            if verify and masked_crc(length_bytes) != length_crc:
                raise CorruptRecordError("length CRC mismatch (corrupt header)", shard=shard, offset=offset)
            if size is not None and length > size - offset - _HEADER_SIZE - _CRC.size:
                # Checked before reading: a hostile header may declare 2**40 bytes.
                raise CorruptRecordError(
                    f"truncated record: {length} bytes announced, "
                    f"{max(size - offset - _HEADER_SIZE - _CRC.size, 0)} present",
                    shard=shard,
                    offset=offset,
                )
            try:
                body = _read_up_to(stream, length + _CRC.size)
            except (OSError, EOFError, zlib.error) as exc:
                raise CorruptRecordError(f"cannot decompress: {exc}", shard=shard, offset=offset) from None
            if len(body) < length + _CRC.size:
                raise CorruptRecordError(
                    f"truncated record: {length} bytes announced, {max(len(body) - _CRC.size, 0)} present",
                    shard=shard,
                    offset=offset,
                )
            data = body[:length]
            if verify:
                (data_crc,) = _CRC.unpack(body[length:])
                if masked_crc(data) != data_crc:
                    raise CorruptRecordError("data CRC mismatch (corrupt record)", shard=shard, offset=offset)
            yield offset, data
            offset += _HEADER_SIZE + length + _CRC.size
