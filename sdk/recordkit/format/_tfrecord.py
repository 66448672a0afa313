"""TFRecord files, without TensorFlow: framing, CRCs, compression, strict reading and
the resynchronising scan. The one place that knows the format.

A TFRecord file is a sequence of records, each framed as::

    uint64 length (little endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

optionally inside one GZIP or ZLIB stream. Framed records made here are read by plain
``tf.data.TFRecordDataset`` (tests check that); files read here get their CRCs checked,
and a truncated or corrupt record is reported with its shard and byte offset, which
TensorFlow's own error does not give. Two readers share the framing and the streamed
inflate: :func:`iter_tfrecords` stops at the first damage (strict), and
:func:`scan_tfrecords` reports damage and carries on from the next intact record.

Shards are written by :class:`recordkit.write._shard_file.ShardFile` from records framed
by :func:`frame_into` (straight into its chunk) or :func:`frame_pieces`, compressed by
:func:`compressor`.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import io
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import google_crc32c
import numpy as np

from recordkit.errors import CorruptRecordError
from recordkit.storage import Location, location

__all__ = [
    "CRC_FIELD",
    "CRC_MASK_DELTA",
    "FOOTER_BYTES",
    "FRAMING_BYTES",
    "HEADER_BYTES",
    "LENGTH_FIELD",
    "Compression",
    "Damage",
    "HeaderWalk",
    "OversizedRecord",
    "compressor",
    "frame_into",
    "frame_pieces",
    "frame_record",
    "iter_tfrecords",
    "masked_crc",
    "unframe_record",
    "oversized_record",
    "scan_tfrecords",
    "walk_headers",
]

#: A record's length field (little-endian uint64) and a CRC field (little-endian uint32,
#: masked as TFRecord masks it: :func:`masked_crc`, :data:`CRC_MASK_DELTA`).
LENGTH_FIELD = struct.Struct("<Q")
CRC_FIELD = struct.Struct("<I")
CRC_MASK_DELTA = 0xA282EAD8
#: Bytes before a record's data: its length and the length's CRC.
HEADER_BYTES = LENGTH_FIELD.size + CRC_FIELD.size
#: Bytes after a record's data: the data's CRC.
FOOTER_BYTES = CRC_FIELD.size
#: Bytes of framing each record takes in a TFRecord file besides its data (16).
FRAMING_BYTES = HEADER_BYTES + FOOTER_BYTES
#: Compressed bytes read (and most bytes inflated) per step of a streamed inflate.
_INFLATE_CHUNK = 1 << 16
#: The read buffer of a local shard file.
_READ_BUFFER = 1 << 20


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

    @property
    def wbits(self) -> int:
        """zlib's ``wbits`` for this stream: a gzip (31) or zlib (15) wrapper."""
        return 16 + zlib.MAX_WBITS if self is Compression.GZIP else zlib.MAX_WBITS


# -- framing ------------------------------------------------------------------------------


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + CRC_MASK_DELTA) & 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    return _mask(google_crc32c.value(data))


def frame_record(data: bytes) -> bytes:
    """One record with its TFRecord framing."""
    return frame_pieces((data,), len(data))


def unframe_record(framed: bytes, *, shard: str, offset: int, verify: bool = True) -> bytes:
    """The data of one whole framed record (read at ``offset`` of ``shard``, e.g. with one
    ``pread`` of the size a record index gives): its length and the length's CRC checked
    against the framing's size, the data's CRC when ``verify``."""
    if len(framed) < FRAMING_BYTES:
        reason = f"truncated: {len(framed)} bytes, not a whole record"
        raise CorruptRecordError(reason, shard=shard, offset=offset)
    (length,) = LENGTH_FIELD.unpack_from(framed)
    length_crc = CRC_FIELD.unpack_from(framed, LENGTH_FIELD.size)[0]
    if length != len(framed) - FRAMING_BYTES or masked_crc(framed[: LENGTH_FIELD.size]) != length_crc:
        raise CorruptRecordError(
            "corrupt record header (length or its CRC does not match the index)", shard=shard, offset=offset
        )
    data = framed[HEADER_BYTES : HEADER_BYTES + length]
    if verify and masked_crc(data) != CRC_FIELD.unpack_from(framed, HEADER_BYTES + length)[0]:
        raise CorruptRecordError("data CRC mismatch (corrupt record)", shard=shard, offset=offset)
    return data


_crc_extend = google_crc32c.extend
_crc_value = google_crc32c.value
_pack_length = LENGTH_FIELD.pack
_pack_crc = CRC_FIELD.pack
_HEADER = struct.Struct("<QI")
#: Runs an iterator to its end in C, keeping nothing: ``_exhaust(map(f, items))``.
_exhaust: Callable[[Iterable[object]], None] = collections.deque[object](maxlen=0).extend


def frame_into(chunk: mmap.mmap, start: int, pieces: Sequence[bytes], size: int) -> int:
    """Write one record given as pieces (of ``size`` bytes in all), framed, into
    ``chunk`` at ``start``; the end of the frame (where ``chunk``'s position is left).
    The bytes are those of :func:`frame_pieces`, with each piece copied once, straight
    into place (no joined record in between): the writer frames records into its shard
    chunk this way.

    The pieces are copied and their CRC accumulated by loops that run in C (``map`` of
    the chunk's ``write``, ``reduce`` of the CRC's ``extend``), not a Python loop over
    the pieces: a mixed record has 14 of them, and a Python loop costs the encoding
    thread time for each (measured: docs/performance.md#the-writers-buffers).
    """
    chunk.seek(start)
    write = chunk.write
    write(_HEADER.pack(size, _mask(_crc_value(_pack_length(size)))))
    _exhaust(map(write, pieces))
    write(_pack_crc(_mask(functools.reduce(_crc_extend, pieces, 0))))
    return start + size + FRAMING_BYTES


def frame_pieces(pieces: Sequence[bytes], size: int) -> bytes:
    """One record given as pieces (of ``size`` bytes in all), framed, in one copy.

    The CRC of the data is accumulated piece by piece (each a C call over the piece's
    buffer), so the record is never joined before it is joined into its frame.
    """
    length = _pack_length(size)
    crc = functools.reduce(_crc_extend, pieces, 0)
    return b"".join((length, _pack_crc(_mask(_crc_value(length))), *pieces, _pack_crc(_mask(crc))))


# -- compression --------------------------------------------------------------------------


def compressor(compression: Compression) -> Any:
    """A zlib compress object for ``compression`` (None for no compression).

    GZIP streams get a fixed header (no file name, mtime 0), so the same records always
    give the same bytes.
    """
    if compression is Compression.NONE:
        return None
    return zlib.compressobj(wbits=compression.wbits)


class _Inflater(io.RawIOBase):
    """A read-only file object over a GZIP or ZLIB stream, inflated as it is read.

    Memory stays at one chunk whatever the shard's size, and the records before a
    truncation or a damaged block are still read. Concatenated gzip members are read
    one after the other, as ``gzip`` and TensorFlow do.
    """

    def __init__(self, raw: BinaryIO, compression: Compression) -> None:
        self._raw = raw
        self._wbits = compression.wbits
        self._inflater = zlib.decompressobj(self._wbits)
        self._buffer = b""
        self._position = 0
        self._finished = False
        self._started = False

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
        inflater = self._inflater
        if inflater.eof and inflater.unused_data:  # another gzip member follows
            pending = inflater.unused_data
            inflater = self._inflater = zlib.decompressobj(self._wbits)
        else:
            pending = inflater.unconsumed_tail or self._raw.read(_INFLATE_CHUNK)
        if pending:
            self._started = True
            # Bounded output per call: a small chunk can inflate to a great deal.
            self._buffer = inflater.decompress(pending, _INFLATE_CHUNK)
        else:
            self._buffer = inflater.flush()
            self._finished = True
            if self._started and not inflater.eof:  # an empty file is an empty stream
                raise zlib.error("the compressed stream ends early (truncated file)")
        self._position = 0

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open(path: Location, compression: Compression) -> BinaryIO:
    """``path`` opened for reading its uncompressed stream."""
    local = path.local_path
    if local is None:
        raw: BinaryIO = path.open_read()  # type: ignore[assignment]
    else:
        # A large buffer: records are read from memory, with one system call per
        # megabyte rather than two per record (each call lets go of the GIL, which a
        # thread decoding records then takes: a hand-off the reading thread waits out).
        raw = open(local, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - returned, closed by the caller
    if compression is Compression.NONE:
        return raw
    return io.BufferedReader(_Inflater(raw, compression), _INFLATE_CHUNK)


# -- strict reading -----------------------------------------------------------------------


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
    path: Location,
    compression: Compression = Compression.NONE,
    *,
    verify: bool = True,
) -> Generator[tuple[int, bytes], None, None]:
    """Yield ``(offset, data)`` for each record in a TFRecord file, checking CRCs.

    ``offset`` is the byte offset of the record's header in the (uncompressed) stream.
    Raises :class:`CorruptRecordError` naming the file and offset on a truncated
    record or a CRC mismatch; records before it have already been yielded. ``verify``
    False skips the data CRCs (the header CRCs are always checked).
    """
    shard = path.name
    try:
        stream = _open(path, compression)
        # The uncompressed stream's size where known: no declared length may pass it.
        size: int | None = None
        if compression is Compression.NONE:
            size = path.size() if path.local_path is None else os.fstat(stream.fileno()).st_size
    except OSError as exc:
        raise CorruptRecordError(f"cannot read the shard file: {exc.strerror or exc}", shard=shard) from None
    with stream:
        offset = 0
        while True:
            try:
                header = stream.read(HEADER_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                raise CorruptRecordError(f"cannot decompress: {exc}", shard=shard, offset=offset) from None
            if not header:
                return
            if len(header) < HEADER_BYTES:
                raise CorruptRecordError("truncated record header", shard=shard, offset=offset)
            length_bytes = header[: LENGTH_FIELD.size]
            (length,) = LENGTH_FIELD.unpack(length_bytes)
            (length_crc,) = CRC_FIELD.unpack_from(header, LENGTH_FIELD.size)
            if masked_crc(length_bytes) != length_crc:
                raise CorruptRecordError("length CRC mismatch (corrupt header)", shard=shard, offset=offset)
            if size is not None and length > size - offset - FRAMING_BYTES:
                # Checked before reading: a hostile header may declare 2**40 bytes.
                raise CorruptRecordError(
                    f"truncated record: {length} bytes announced, "
                    f"{max(size - offset - FRAMING_BYTES, 0)} present",
                    shard=shard,
                    offset=offset,
                )
            try:
                # The data and its CRC read apart: the data is not sliced out of a copy.
                data = _read_up_to(stream, length)
                footer = stream.read(FOOTER_BYTES) if len(data) == length else b""
            except (OSError, EOFError, zlib.error) as exc:
                raise CorruptRecordError(f"cannot decompress: {exc}", shard=shard, offset=offset) from None
            if len(footer) < FOOTER_BYTES:
                present = max(len(data) + len(footer) - FOOTER_BYTES, 0)
                raise CorruptRecordError(
                    f"truncated record: {length} bytes announced, {present} present",
                    shard=shard,
                    offset=offset,
                )
            if verify and masked_crc(data) != CRC_FIELD.unpack(footer)[0]:
                raise CorruptRecordError("data CRC mismatch (corrupt record)", shard=shard, offset=offset)
            yield offset, data
            offset += FRAMING_BYTES + length


# -- the resynchronising scan ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Damage:
    """Damage :func:`scan_tfrecords` found and went past: where in the (uncompressed)
    stream, how many records it cost (None when unknown) and what was wrong."""

    offset: int
    records: int | None
    reason: str


def scan_tfrecords(
    path: Location,
    compression: Compression,
    on_damage: Callable[[Damage], None],
    *,
    verify: bool = True,
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, data)`` of every intact record of a TFRecord file, going past
    damage instead of stopping at it; each damage goes to ``on_damage``.

    A record whose data fails its CRC is skipped alone (its length is intact); after a
    damaged header the scan searches forward for the next intact record (a valid header
    CRC and, with ``verify``, data CRC) and carries on from there. A compressed file is
    inflated as far as it can be, and the damage past that point reported.
    """
    yield from _scan(_uncompressed(path, compression, on_damage), verify, on_damage)


def _uncompressed(
    path: Location, compression: Compression, on_damage: Callable[[Damage], None]
) -> bytes | bytearray:
    """The file's (uncompressed) bytes: read whole, or inflated as far as possible (a
    remote object: downloaded). Never mapped: a mapped file cut short while it is scanned
    (rewritten in place by another process) kills the process with ``SIGBUS``; read, a
    file cut short gives fewer bytes, whose end the scan reports as damage."""
    if compression is Compression.NONE:
        return path.read_bytes()
    out = bytearray()
    with _open(path, compression) as stream:
        try:
            while chunk := stream.read(_INFLATE_CHUNK):
                out += chunk
        except zlib.error as exc:
            reason = "the compressed stream is truncated" if "ends early" in str(exc) else None
            on_damage(Damage(len(out), None, reason or f"cannot decompress past here ({exc})"))
    return out


def _scan(
    buffer: bytes | bytearray, verify: bool, on_damage: Callable[[Damage], None]
) -> Iterator[tuple[int, bytes]]:
    size = len(buffer)
    view = memoryview(buffer)
    try:
        pos = 0
        while pos < size:
            if size - pos < HEADER_BYTES:
                on_damage(Damage(pos, None, "truncated record header at the end of the shard"))
                return
            (length,) = LENGTH_FIELD.unpack_from(buffer, pos)
            if (
                masked_crc(bytes(view[pos : pos + LENGTH_FIELD.size]))
                == CRC_FIELD.unpack_from(buffer, pos + LENGTH_FIELD.size)[0]
            ):
                end = pos + FRAMING_BYTES + length
                if end > size:
                    reason = f"truncated record: {length} bytes announced, the shard ends first"
                    on_damage(Damage(pos, None, reason))
                    return
                data = bytes(view[pos + HEADER_BYTES : end - FOOTER_BYTES])
                if verify and masked_crc(data) != CRC_FIELD.unpack_from(buffer, end - FOOTER_BYTES)[0]:
                    on_damage(Damage(pos, 1, "data CRC mismatch (corrupt record)"))
                else:
                    yield pos, data
                pos = end
                continue
            resume = _resync(buffer, view, pos + 1, verify)
            if resume is None:
                on_damage(Damage(pos, None, "corrupt record header; no intact record follows it"))
                return
            on_damage(Damage(pos, None, f"corrupt record header; reading resumed at offset {resume}"))
            pos = resume
    finally:
        view.release()


def _resync(buffer: bytes | bytearray, view: memoryview, start: int, verify: bool) -> int | None:
    """The first offset from ``start`` where an intact record begins, or None."""
    size = len(buffer)
    for pos in range(start, size - FRAMING_BYTES + 1):
        (length,) = LENGTH_FIELD.unpack_from(buffer, pos)
        end = pos + FRAMING_BYTES + length
        if end > size:
            continue
        if (
            masked_crc(bytes(view[pos : pos + LENGTH_FIELD.size]))
            != CRC_FIELD.unpack_from(buffer, pos + LENGTH_FIELD.size)[0]
        ):
            continue
        data_crc = CRC_FIELD.unpack_from(buffer, end - FOOTER_BYTES)[0]
        if verify and masked_crc(bytes(view[pos + HEADER_BYTES : end - FOOTER_BYTES])) != data_crc:
            continue
        return pos
    return None


# -- vetting record headers before TensorFlow reads a file ----------------------------------
# TensorFlow's TFRecordDataset trusts a declared length once its CRC matches and allocates
# it before reading: a hostile header declaring 2**40 bytes kills the process. The walk
# below reads each header and seeks (or, compressed, reads and drops in bounded chunks)
# over the data, so memory stays small whatever the file declares. It stops where
# TensorFlow would: at a header whose CRC fails, or the end. Results are cached per file
# (path, size, mtime, inode), so reading a dataset again does not walk it again.


@dataclasses.dataclass(frozen=True)
class OversizedRecord:
    """A record header declaring more bytes than its file holds after it."""

    #: Byte offset of the header in the (uncompressed) stream.
    offset: int
    #: The length the header declares.
    declared: int
    #: Bytes of data (and CRC) the file actually holds after the header.
    available: int
    #: Size of the whole (uncompressed) stream, as far as it could be read.
    total: int

    def describe(self) -> str:
        present = max(self.available - FOOTER_BYTES, 0)
        return (
            f"the record header declares {self.declared} bytes, but only {present} "
            "follow in the shard (truncated, or a hostile length)"
        )


def oversized_record(path: str | Path, compression: Compression = Compression.NONE) -> OversizedRecord | None:
    """The first record of ``path`` whose header (with a valid CRC) declares more bytes
    than the file holds after it, or None. OSError if the file cannot be read."""
    return walk_headers(path, compression).oversized


@dataclasses.dataclass(frozen=True)
class HeaderWalk:
    """What one walk of a file's record headers found (data and data CRCs unread)."""

    #: Records whose header holds its CRC and whose length fits in the file.
    records: int
    #: Where the walk stopped, in the (uncompressed) stream.
    end: int
    #: The headers frame the whole file: every one of them sound, the last record
    #: ending at the file's end (so every byte of the file is under a CRC).
    complete: bool
    #: The header that declares more bytes than the file holds, if one does.
    oversized: OversizedRecord | None = None


def walk_headers(path: str | Path, compression: Compression = Compression.NONE) -> HeaderWalk:
    """Walk the record headers of the local file ``path`` (cached while its size, time
    and inode stay the same). OSError if the file cannot be read."""
    stat = os.stat(path)
    return _cached(str(path), compression, stat.st_size, stat.st_mtime_ns, stat.st_ino)


@functools.lru_cache(maxsize=4096)
def _cached(path: str, compression: Compression, size: int, mtime_ns: int, inode: int) -> HeaderWalk:
    del mtime_ns, inode  # part of the cache key only: a changed file is walked again
    if compression is Compression.NONE:
        return _walk_plain(path, size)
    return _walk_stream(path, compression)


def _walk_plain(path: str, size: int) -> HeaderWalk:
    uniform = _walk_uniform(path, size)
    if uniform is not None:
        return uniform
    records = 0
    with open(path, "rb") as stream:
        offset = 0
        while size - offset >= HEADER_BYTES:
            stream.seek(offset)
            header = stream.read(HEADER_BYTES)
            if len(header) < HEADER_BYTES or masked_crc(header[:8]) != CRC_FIELD.unpack_from(header, 8)[0]:
                return HeaderWalk(records, offset, False)
            (length,) = LENGTH_FIELD.unpack_from(header)
            available = size - offset - HEADER_BYTES
            if length + FOOTER_BYTES > available:
                return HeaderWalk(records, offset, False, OversizedRecord(offset, length, available, size))
            offset += FRAMING_BYTES + length
            records += 1
    return HeaderWalk(records, offset, offset == size)


#: Records from which a file whose size is a multiple of its first record's frame is
#: walked at once (:func:`_walk_uniform`).
_UNIFORM_FROM = 16
#: The frame from which :func:`_walk_uniform` reads each header alone (``pread``: about a
#: microsecond a header), below which it reads the file a block of :data:`_UNIFORM_BLOCK`
#: bytes at a time into one buffer (about 0.12 ms a MiB: cheaper for frames under ~10 KiB).
_SPARSE_FRAME = 8 << 10
_UNIFORM_BLOCK = 1 << 20


def _walk_uniform(path: str, size: int) -> HeaderWalk | None:
    """The walk of a file whose records all have its first record's size (a field group's
    shard, or any of fixed-size fields), found at once: the first header's CRC checked,
    then every header compared with it byte for byte (equal headers hold the same length
    and the same right CRC), in numpy a block of records at a time. None when the file is
    not so (the walk is then made header by header, which finds where it differs): a
    Python walk costs a few microseconds a record, most of reading a small record.

    The file is read, never mapped: a mapped file cut short while it is walked (rewritten
    in place by another process, a network filesystem's file changed) kills the process
    with ``SIGBUS``, which nothing in Python catches. (The mapping cost less: 3.6 ms of
    CPU for 128 MiB of 1 KiB records where the reads take about 16, and 0.4 ms for 16 KiB
    records where they take about 5.) A file found shorter than ``size`` gives None."""
    with open(path, "rb", buffering=0) as stream:
        fd = stream.fileno()
        header = os.pread(fd, HEADER_BYTES, 0)
        if len(header) < HEADER_BYTES or masked_crc(header[:8]) != CRC_FIELD.unpack_from(header, 8)[0]:
            return None
        frame = LENGTH_FIELD.unpack_from(header)[0] + FRAMING_BYTES
        if size % frame or size // frame < _UNIFORM_FROM:
            return None
        count = size // frame
        if frame >= _SPARSE_FRAME:
            same = all(os.pread(fd, HEADER_BYTES, place * frame) == header for place in range(count))
            return HeaderWalk(count, size, True) if same else None
        first = np.frombuffer(header, dtype=np.uint8)
        step = max(1, _UNIFORM_BLOCK // frame)
        block = np.empty(step * frame, np.uint8)
        view = block.data
        for begin in range(0, count, step):
            records = min(step, count - begin)
            if os.preadv(fd, [view[: records * frame]], begin * frame) != records * frame:
                return None  # cut short since its size was asked
            headers = block[: records * frame].reshape(records, frame)[:, :HEADER_BYTES]
            if not bool((headers == first).all()):
                return None
    return HeaderWalk(count, size, True)


def _walk_stream(path: str, compression: Compression) -> HeaderWalk:
    stream: BinaryIO
    records = offset = 0
    try:
        stream = _open(location(path), compression)
    except OSError:
        return HeaderWalk(records, offset, False)
    try:
        with stream:
            while True:
                header = stream.read(HEADER_BYTES)
                if not header:
                    return HeaderWalk(records, offset, True)
                if (
                    len(header) < HEADER_BYTES
                    or masked_crc(header[: LENGTH_FIELD.size])
                    != CRC_FIELD.unpack_from(header, LENGTH_FIELD.size)[0]
                ):
                    return HeaderWalk(records, offset, False)
                (length,) = LENGTH_FIELD.unpack_from(header)
                wanted = length + FOOTER_BYTES
                skipped = _skip(stream, wanted)
                if skipped < wanted:
                    found = OversizedRecord(offset, length, skipped, offset + HEADER_BYTES + skipped)
                    return HeaderWalk(records, offset, False, found)
                offset += HEADER_BYTES + wanted
                records += 1
    except (OSError, EOFError, ValueError, zlib.error):  # a damaged stream: TensorFlow reports it
        return HeaderWalk(records, offset, False)


def _skip(stream: BinaryIO, count: int) -> int:
    """Read and drop up to ``count`` bytes, a chunk at a time; how many there were."""
    done = 0
    while done < count:
        part = stream.read(min(count - done, _READ_CHUNK))
        if not part:
            break
        done += len(part)
    return done
