"""Shard files: names, size limits, and writing one shard so it appears only when complete.

A shard is written under a hidden temporary name (``.train-00003.tfrecord.tmp``), its
sha256 and size computed from the bytes as they go to disk, then flushed, fsynced and
renamed to its final name (``train-00003.tfrecord``). A final name therefore always
holds a complete shard; a temporary name is debris of a write that stopped, removed by
the next write to the split.

Hashing, compressing and writing happen on one background thread per shard, in chunks
of a few megabytes: all three release the GIL, so they overlap with the encoding of
the next records instead of adding to it. A durable shard also asks the kernel to start
writing each chunk to disk at once (Linux's ``sync_file_range``), so the fsync that
completes the shard finds little left to wait for.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import functools
import hashlib
import os
import re
import sys
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from recordkit.dataset._manifest import ShardIndex, ShardInfo
from recordkit.format._index import RecordIndex, index_name, write_index
from recordkit.format._tfrecord import Compression

__all__ = [
    "DEFAULT_SHARD_BYTES",
    "ShardFile",
    "ShardLimits",
    "check_split_name",
    "fsync_dir",
    "shard_name",
    "shard_pattern",
    "temp_pattern",
]

#: Default target size of a shard: 128 MiB of (uncompressed) TFRecord data. Large
#: enough that reading is sequential and per-file overheads (opening, first-byte latency
#: on object stores) vanish; small enough that a dataset of a few GB still has enough
#: shards to interleave across readers and hosts, and a stopped write loses little.
DEFAULT_SHARD_BYTES = 128 * 2**20

#: Encoded records are collected to this many bytes before being hashed, compressed and
#: written, so the per-record cost is one list append. Large on purpose: the background
#: thread needs the GIL back after each hash and write call, and while the encoder runs
#: Python it waits up to the interpreter's switch interval (5 ms) each time; 8 MB chunks
#: make those waits few (1 MB chunks left the thread starved and the writer 15% slower).
_CHUNK_BYTES = 8 << 20
#: Chunks handed to the background thread and not yet written: bounds the memory a slow
#: disk can hold up (with the chunk being filled, 24 MB), and makes the encoder wait for it.
_CHUNKS_IN_FLIGHT = 2
_DIGITS = 5
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def check_split_name(split: str) -> str:
    """``split`` if it is a valid split name (letters, digits, ``_ . -``), else ValueError."""
    if not isinstance(split, str) or not _SPLIT_NAME.match(split):
        raise ValueError(
            f"invalid split name {split!r}: use letters, digits, '_', '.' and '-', starting "
            "with a letter or digit"
        )
    return split


def shard_name(split: str, index: int, compression: Compression) -> str:
    """The final file name of shard ``index`` of ``split``: ``train-00000.tfrecord[.gz]``.

    Zero-padded so names sort in shard order (past 99999 shards they grow a digit).
    """
    return f"{split}-{index:0{_DIGITS}d}.tfrecord{compression.suffix}"


def shard_pattern(split: str) -> re.Pattern[str]:
    """Matches the final names of ``split``'s shards (any compression); group 1 is the index."""
    return re.compile(rf"^{re.escape(split)}-(\d{{{_DIGITS},}})\.tfrecord(?:\.gz|\.zz)?$")


def temp_pattern(split: str) -> re.Pattern[str]:
    """Matches the temporary names of ``split``'s shards."""
    return re.compile(rf"^\.{re.escape(split)}-\d{{{_DIGITS},}}\.tfrecord(?:\.gz|\.zz)?\.tmp$")


#: ``sync_file_range`` flag: start writing the range's dirty pages, do not wait.
_SYNC_FILE_RANGE_WRITE = 2


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """libc's ``sync_file_range(fd, offset, nbytes, flags)`` where there is one (Linux);
    None elsewhere. Called through ctypes, which releases the GIL for the call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def start_writeback(fd: int, offset: int, size: int) -> None:
    """Ask the kernel to start writing ``size`` bytes at ``offset`` of ``fd`` to disk
    now, without waiting: a hint that makes a later fsync shorter (ignored where it is
    not available, or fails)."""
    function = _sync_file_range()
    if function is not None:
        function(fd, offset, size, _SYNC_FILE_RANGE_WRITE)


def fsync_dir(path: Path) -> None:
    """Make renames in ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclasses.dataclass(frozen=True)
class ShardLimits:
    """When to start a new shard.

    A shard never goes over ``max_bytes`` of framed TFRecord data (uncompressed; a
    single record bigger than that gets a shard of its own) nor over ``max_records``
    records. Either may be None (no limit). Boundaries depend only on the records'
    sizes and order, so the same input always gives the same shards.
    """

    max_bytes: int | None = DEFAULT_SHARD_BYTES
    max_records: int | None = None

    def __post_init__(self) -> None:
        if self.max_bytes is not None and self.max_bytes < 1:
            raise ValueError(f"shard_bytes must be positive, not {self.max_bytes}")
        if self.max_records is not None and self.max_records < 1:
            raise ValueError(f"shard_records must be positive, not {self.max_records}")


class ShardFile:
    """One shard being written: framed records in, a complete file and its ShardInfo out."""

    def __init__(
        self, root: Path, split: str, index: int, compression: Compression, *, durable: bool = True
    ) -> None:
        self.name = shard_name(split, index, compression)
        #: fsync the file before renaming it (see ``DatasetWriter(durable=...)``).
        self.durable = durable
        self.final_path = root / self.name
        self.temp_path = root / f".{self.name}.tmp"
        self.records = 0
        #: Framed, uncompressed bytes so far (what the shard size limit counts).
        self.payload_bytes = 0
        self._stored_bytes = 0
        self._hash = hashlib.sha256()
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        #: Each record's offset in the (uncompressed) stream: the shard's record index.
        self._offsets: list[int] = []
        self._compressor: Any = None
        if compression is Compression.GZIP:
            # wbits=31: a gzip stream with a fixed header (no name, mtime 0): reproducible.
            self._compressor = zlib.compressobj(wbits=31)
        elif compression is Compression.ZLIB:
            self._compressor = zlib.compressobj()
        self._file = open(self.temp_path, "wb")  # noqa: SIM115 - closed in commit()/discard()
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recordkit-shard")
        self._in_flight: collections.deque[Future[None]] = collections.deque()

    def fits(self, size: int, limits: ShardLimits) -> bool:
        """Whether a record of ``size`` framed bytes may still go into this shard."""
        if self.records == 0:
            return True
        if limits.max_records is not None and self.records >= limits.max_records:
            return False
        return limits.max_bytes is None or self.payload_bytes + size <= limits.max_bytes

    def add(self, framed: bytes) -> None:
        """Append one record already framed by :func:`~recordkit.format._tfrecord.frame_record`."""
        self._offsets.append(self.payload_bytes)
        self._pending.append(framed)
        self._pending_bytes += len(framed)
        self.records += 1
        self.payload_bytes += len(framed)
        if self._pending_bytes >= _CHUNK_BYTES:
            self._flush_pending()

    def _flush_pending(self) -> None:
        if not self._pending:
            return
        chunk, self._pending = self._pending, []
        self._pending_bytes = 0
        while len(self._in_flight) >= _CHUNKS_IN_FLIGHT:
            self._in_flight.popleft().result()
        self._in_flight.append(self._io.submit(self._store_chunk, chunk))

    def _store_chunk(self, chunk: list[bytes]) -> None:
        """On the background thread: join, compress, hash and write one chunk."""
        data = b"".join(chunk)
        if self._compressor is not None:
            data = self._compressor.compress(data)
        self._store(data)

    def _store(self, data: bytes) -> None:
        if data:
            self._hash.update(data)
            self._file.write(data)
            if self.durable:  # it must reach the disk anyway: start now, fsync waits less
                self._file.flush()
                start_writeback(self._file.fileno(), self._stored_bytes, len(data))
            self._stored_bytes += len(data)

    def _wait_for_io(self) -> None:
        """Wait until every chunk handed over is written; re-raise a write's error."""
        while self._in_flight:
            self._in_flight.popleft().result()

    def commit(self) -> ShardInfo:
        """Finish the file, fsync it (when durable) and rename it to its final name."""
        self._flush_pending()
        self._wait_for_io()
        self._io.shutdown()
        if self._compressor is not None:
            self._store(self._compressor.flush())
        self._file.flush()
        if self.durable:
            os.fsync(self._file.fileno())
        self._file.close()
        # The index first: a shard under its final name always has its index beside it.
        index = RecordIndex.from_offsets(self._offsets, self.payload_bytes)
        index_file = index_name(self.name)
        index_sha256 = write_index(self.final_path.with_name(index_file), index, durable=self.durable)
        os.replace(self.temp_path, self.final_path)
        return ShardInfo(
            file=self.name,
            records=self.records,
            bytes=self._stored_bytes,
            sha256=self._hash.hexdigest(),
            index=ShardIndex(file=index_file, sha256=index_sha256),
        )

    def discard(self) -> None:
        """Close and delete the temporary file (the shard was not completed)."""
        try:
            for future in self._in_flight:
                future.cancel()
            self._in_flight.clear()
            self._io.shutdown(wait=True)
            self._file.close()
        finally:
            self.temp_path.unlink(missing_ok=True)
