"""The record index: the byte offset of every record of a TFRecord shard, in a sidecar file.

A shard ``train-00000.tfrecord`` gets ``train-00000.tfrecord.index`` beside it. The shard
stays plain TFRecord (any TensorFlow reader ignores the sidecar); the index is what makes
random access, global shuffles and exact resumption possible without reading the shard
front to back. The file is small (8 bytes per record) and holds no Python objects::

    8 bytes   magic  b"RKINDEX1"
    uint64    n, the number of records (little endian)
    uint64    offsets[n + 1] (little endian)

``offsets[i]`` is where record ``i``'s header starts in the shard's uncompressed TFRecord
stream, and ``offsets[n]`` is where the stream ends, so record ``i`` spans
``offsets[i + 1] - offsets[i]`` bytes (its framing included): one read fetches it whole.
For a GZIP or ZLIB shard the offsets are in the decompressed stream.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import struct
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from recordkit.errors import CorruptRecordError
from recordkit.format._tfrecord import FRAMING_BYTES, Compression, iter_tfrecords
from recordkit.storage import Location

__all__ = [
    "INDEX_MAGIC",
    "INDEX_SUFFIX",
    "RecordIndex",
    "build_index",
    "index_name",
    "max_index_bytes",
    "read_index",
    "write_index",
]

INDEX_MAGIC = b"RKINDEX1"
#: Appended to a shard's file name to name its index.
INDEX_SUFFIX = ".index"
_HEADER = struct.Struct("<8sQ")


def max_index_bytes(stream_bytes: int) -> int:
    """The most bytes the index of a TFRecord stream of ``stream_bytes`` can hold: every
    record takes at least its framing, so the stream holds at most
    ``stream_bytes // FRAMING_BYTES`` records. A reader bounds what it reads of an index
    by this before reading it (an index is untrusted: it may declare any count)."""
    return _HEADER.size + 8 * (max(stream_bytes, 0) // FRAMING_BYTES + 1)


def index_name(shard_file: str) -> str:
    """The index file name of a shard file name: ``train-00000.tfrecord.index``."""
    return shard_file + INDEX_SUFFIX


class RecordIndex:
    """The offsets of a shard's records: ``offsets`` has one more entry than records."""

    __slots__ = ("offsets",)

    def __init__(self, offsets: np.ndarray) -> None:
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def span(self, record: int) -> tuple[int, int]:
        """``(offset, size)`` of record ``record``, its framing included."""
        start = int(self.offsets[record])
        return start, int(self.offsets[record + 1]) - start

    def parts(self) -> tuple[bytes, memoryview]:
        """The index file's bytes in two parts, the header and the offsets, without a copy
        of the offsets on a little-endian machine (an index of a big shard of small records
        is megabytes: the writer writes and hashes it straight from the offsets)."""
        # Offsets are never negative, so their int64 bytes are their uint64 bytes.
        offsets = np.ascontiguousarray(self.offsets, dtype="<i8")
        return _HEADER.pack(INDEX_MAGIC, len(self)), offsets.data.cast("B")

    def to_bytes(self) -> bytes:
        header, offsets = self.parts()
        with offsets:
            return header + offsets

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str = "index") -> RecordIndex:
        """Parse an index file's bytes; CorruptRecordError naming ``name`` when malformed."""
        if len(data) < _HEADER.size or data[:8] != INDEX_MAGIC:
            raise CorruptRecordError(f"not a recordkit record index (no {INDEX_MAGIC!r} header)", shard=name)
        _, count = _HEADER.unpack_from(data)
        expected = _HEADER.size + 8 * (count + 1)
        if len(data) != expected:
            raise CorruptRecordError(
                f"index of {count} records should have {expected} bytes, has {len(data)} (truncated?)",
                shard=name,
            )
        offsets = np.frombuffer(data, dtype="<u8", offset=_HEADER.size).astype(np.int64)
        if offsets[0] != 0 or (count and bool(np.any(np.diff(offsets) < FRAMING_BYTES))):
            raise CorruptRecordError("offsets do not increase by at least one record's framing", shard=name)
        return cls(offsets)

    @classmethod
    def from_offsets(cls, offsets: Sequence[int] | array[int], end: int) -> RecordIndex:
        """The index of records starting at ``offsets``, the stream ending at ``end``
        (``offsets`` is copied once, with no list of Python ints made on the way)."""
        values = np.empty(len(offsets) + 1, dtype=np.int64)
        values[:-1] = offsets
        values[-1] = end
        return cls(values)

    @classmethod
    def taking(cls, offsets: array[int], end: int) -> RecordIndex:
        """Like :meth:`from_offsets`, for an ``array("q")`` that the caller gives up:
        ``end`` is appended to it and the index views its memory, so an index of millions
        of records costs no second copy (the shard writer's offsets, see
        :class:`~recordkit.write._shard_file.ShardFile`)."""
        if offsets.typecode != "q" or offsets.itemsize != 8:
            raise TypeError(f"offsets must be an array('q') of 8-byte ints, not array({offsets.typecode!r})")
        offsets.append(end)
        return cls(np.frombuffer(offsets, dtype=np.int64))


def write_index(path: Location, index: RecordIndex, *, durable: bool = True) -> str:
    """Write ``index`` to ``path`` atomically (temp name, then rename; a remote object:
    one PUT); return its sha256. A local file is written from the offsets in place (see
    :meth:`RecordIndex.parts`)."""
    header, offsets = index.parts()
    with offsets:
        digest = hashlib.sha256(header)
        digest.update(offsets)
        local = path.local_path
        if local is None:
            path.write_bytes(header + offsets, durable=durable)
            return digest.hexdigest()
        _write_local(local, header, offsets, durable=durable)
    return digest.hexdigest()


def _write_local(path: Path, header: bytes, offsets: memoryview, *, durable: bool) -> None:
    # Unique per writer, like the shards' temp names (see write._shard_file.temp_pattern).
    temp = path.with_name(f".{path.name}.{os.getpid():x}-{secrets.token_hex(4)}.tmp")
    try:
        with open(temp, "wb") as out:
            out.write(header)
            out.write(offsets)
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def read_index(path: Path) -> RecordIndex:
    """Read an index file (CorruptRecordError naming it when malformed or missing)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = f"cannot read the record index: {exc.strerror or exc}"
        raise CorruptRecordError(reason, shard=path.name) from None
    return RecordIndex.from_bytes(data, name=path.name)


def build_index(shard: Location, compression: Compression = Compression.NONE) -> RecordIndex:
    """Scan a TFRecord file, local or remote (CRCs checked), and return the offsets of
    its records."""
    offsets: list[int] = []
    end = 0
    for offset, data in iter_tfrecords(shard, compression, verify=True):
        offsets.append(offset)
        end = offset + len(data) + FRAMING_BYTES
    return RecordIndex.from_offsets(offsets, end)
