"""A quick walk over a TFRecord file's record headers, to vet it before TensorFlow reads it.

TensorFlow's ``TFRecordDataset`` trusts each record's declared length once the length's
CRC matches: it allocates that many bytes before reading them. A hostile shard whose
header declares 2**40 bytes (with a valid CRC, which anyone can compute) makes it
allocate a terabyte, and the process dies with a segmentation fault: no error, no
shard named. :func:`oversized_record` finds such a header without reading the records'
data: it reads each 12-byte header and seeks over the data (an uncompressed file), or
decompresses and discards the data in bounded chunks (a compressed one), so memory
stays small whatever the file declares.

The walk stops where TensorFlow itself would stop: at a header whose CRC fails (that is
an ordinary corrupt record, which TensorFlow reports) or at the end of the file.
Results are cached per file (its path, size, modification time and inode), so reading a
dataset again does not walk it again.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import struct
import zlib
from pathlib import Path
from typing import BinaryIO

from recordkit.format._tfrecord import Compression, _open_for_reading, masked_crc

__all__ = ["OversizedRecord", "oversized_record"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_HEADER = 12
_FOOTER = 4
_SKIP_CHUNK = 1 << 20


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
        return (
            f"the record header declares {self.declared} bytes, but only {max(self.available - _FOOTER, 0)} "
            "follow in the shard (truncated, or a hostile length)"
        )


def oversized_record(path: str | Path, compression: Compression = Compression.NONE) -> OversizedRecord | None:
    """The first record of ``path`` whose header (with a valid CRC) declares more bytes
    than the file holds after it, or None. OSError if the file cannot be read."""
    stat = os.stat(path)
    return _cached(str(path), compression, stat.st_size, stat.st_mtime_ns, stat.st_ino)


@functools.lru_cache(maxsize=4096)
def _cached(
    path: str, compression: Compression, size: int, mtime_ns: int, inode: int
) -> OversizedRecord | None:
    del mtime_ns, inode  # part of the cache key only: a changed file is walked again
    if compression is Compression.NONE:
        return _walk_plain(path, size)
    return _walk_stream(path, compression)


def _walk_plain(path: str, size: int) -> OversizedRecord | None:
    with open(path, "rb") as stream:
        offset = 0
        while size - offset >= _HEADER:
            stream.seek(offset)
            header = stream.read(_HEADER)
            if len(header) < _HEADER or masked_crc(header[:8]) != _CRC.unpack_from(header, 8)[0]:
                return None
            (length,) = _LENGTH.unpack_from(header)
            available = size - offset - _HEADER
            if length + _FOOTER > available:
                return OversizedRecord(offset, length, available, size)
            offset += _HEADER + length + _FOOTER
    return None


def _walk_stream(path: str, compression: Compression) -> OversizedRecord | None:
    stream: BinaryIO
    try:
        stream = _open_for_reading(Path(path), compression)
    except OSError:
        return None
    offset = 0
    try:
        with stream:
            while True:
                header = stream.read(_HEADER)
                if len(header) < _HEADER or masked_crc(header[:8]) != _CRC.unpack_from(header, 8)[0]:
                    return None
                (length,) = _LENGTH.unpack_from(header)
                wanted = length + _FOOTER
                skipped = _skip(stream, wanted)
                if skipped < wanted:
                    return OversizedRecord(offset, length, skipped, offset + _HEADER + skipped)
                offset += _HEADER + wanted
    except (OSError, EOFError, ValueError, zlib.error):  # a damaged stream: TensorFlow reports it
        return None


def _skip(stream: BinaryIO, count: int) -> int:
    """Read and drop up to ``count`` bytes, a chunk at a time; how many there were."""
    done = 0
    while done < count:
        part = stream.read(min(count - done, _SKIP_CHUNK))
        if not part:
            break
        done += len(part)
    return done
