"""Shard files: names, size limits, and writing one shard so it appears only when complete.

A shard is written under a hidden temporary name unique to its writer
(``.train-00003.tfrecord.<pid>-<random>.tmp``, created exclusively), its
sha256 and size computed from the bytes as they go to disk, then flushed, fsynced and
renamed to its final name (``train-00003.tfrecord``). A final name therefore always
holds a complete shard. A write that fails (a full disk, an error) deletes its
temporary file at once, so that its space is free again; one that was killed leaves
it, and the next write to the split removes it.

Records are framed into chunks of a few megabytes. A chunk of a local uncompressed
shard is written by the encoding thread when it is full (the write releases the GIL)
and hashed on one background thread per shard, overlapping the encoding of the next
records; a compressed or remote shard's chunks are compressed, hashed and stored on
that thread. A durable shard also asks the kernel to start writing each chunk to disk
at once (Linux's ``sync_file_range``), so the fsync that completes the shard finds
little left to wait for.

What a shard file holds in memory is bounded by the shard, never by the dataset: at
most four chunk buffers of 2 MB (the one being filled and three in flight), and each
record's offset for the shard's index, 8 bytes a record in an ``array("q")``, released
when the index is written.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import functools
import hashlib
import mmap
import os
import re
import secrets
import sys
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from recordkit.dataset._manifest import ShardIndex, ShardInfo
from recordkit.format._index import RecordIndex, index_name, write_index
from recordkit.format._tfrecord import FRAMING_BYTES, Compression, compressor, frame_into, frame_pieces
from recordkit.storage import Location, WriteStream, fsync_dir

__all__ = [
    "DEFAULT_SHARD_BYTES",
    "ShardFile",
    "ShardLimits",
    "check_split_name",
    "fsync_dir",
    "new_run_token",
    "run_token_of",
    "shard_name",
    "shard_pattern",
    "temp_pattern",
]

#: Default target size of a shard: 128 MiB of (uncompressed) TFRecord data. Large
#: enough that reading is sequential and per-file overheads (opening, first-byte latency
#: on object stores) vanish; small enough that a dataset of a few GB still has enough
#: shards to interleave across readers and hosts, and a stopped write loses little.
DEFAULT_SHARD_BYTES = 128 * 2**20

#: Encoded records are copied into a chunk of this many bytes before it is hashed,
#: compressed and written, so the per-record cost is one copy. Small enough to stay in
#: the processor's cache between the copy, the write and the hash, and to keep both
#: threads busy from the first records to the last (measured:
#: docs/performance.md#the-writers-buffers).
_CHUNK_BYTES = 2 << 20
#: Chunks handed to the background thread and not yet hashed (or written): bounds the
#: memory a slow disk can hold up (with the chunk being filled, 8 MB; the buffers are
#: reused, so no page faults after the first), and makes the encoder wait for it. A
#: chunk already done when the next one is handed off gives its buffer back at once, so
#: a thread that keeps up needs fewer buffers than that.
_CHUNKS_IN_FLIGHT = 3
#: A chunk goes to its file in ``write`` calls of at most this many bytes. Why not one
#: call: the kernel caches a large write in large page-cache folios, and from 2 MB on
#: these are taken from the free 2 MB blocks that a virtual machine with free page
#: reporting (virtio-balloon) has handed back to its host, so copying into each of them
#: stalls while the host backs it again (measured: docs/performance.md#the-writers-buffers).
_WRITE_PIECE_BYTES = 1 << 20
_DIGITS = 5
#: The optional run token in a shard's name (see :func:`shard_name`), as a pattern.
_TOKEN = r"(?:\.[0-9a-f]{8})?"
#: Files are written as bytes on every platform (Windows would otherwise translate).
_O_BINARY = getattr(os, "O_BINARY", 0)
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def check_split_name(split: str) -> str:
    """``split`` if it is a valid split name (letters, digits, ``_ . -``), else ValueError."""
    if not isinstance(split, str) or not _SPLIT_NAME.fullmatch(split):
        raise ValueError(
            f"invalid split name {split!r}: use letters, digits, '_', '.' and '-', starting "
            "with a letter or digit"
        )
    return split


def shard_name(split: str, index: int, compression: Compression, token: str | None = None) -> str:
    """The final file name of shard ``index`` of ``split``: ``train-00000.tfrecord[.gz]``,
    or with a run ``token`` (a write to an object store) ``train-00000.5f0c9a1e.tfrecord``.

    Zero-padded so names sort in shard order (past 99999 shards they grow a digit). The
    token makes the names a run writes its own: in a bucket, where no lock keeps an
    earlier run out, that run's late upload can never land on a shard this run listed.
    """
    run = "" if token is None else f".{token}"
    return f"{split}-{index:0{_DIGITS}d}{run}.tfrecord{compression.suffix}"


def new_run_token() -> str:
    """A new run token: 8 hex digits that make the names of the shards one run writes
    differ from any other run's (see :func:`shard_name`)."""
    return secrets.token_hex(4)


def run_token_of(name: str) -> str | None:
    """The run token in a shard's (or a shard index's) file name, or a field group
    shard's (``train-00003.5f0c9a1e.tfrecord``, ``score.5f0c9a1e-00003.tfrecord``); None
    for a name without one (a shard written to a local folder)."""
    found = _RUN_TOKEN_IN_NAME.search(name.rsplit("/", 1)[-1])
    return None if found is None else found.group(1)


#: Where a run token sits in a split shard's name and in a field group shard's.
_RUN_TOKEN_IN_NAME = re.compile(r"\.([0-9a-f]{8})(?:\.tfrecord|-\d{5,}\.tfrecord)")


def shard_pattern(split: str) -> re.Pattern[str]:
    """Matches the final names of ``split``'s shards (any compression, with or without a
    run token); group 1 is the index."""
    return re.compile(rf"^{re.escape(split)}-(\d{{{_DIGITS},}}){_TOKEN}\.tfrecord(?:\.gz|\.zz)?$")


def temp_pattern(split: str | None) -> re.Pattern[str]:
    """Matches the temporary names of ``split``'s shards (None: of any split's)."""
    name = r"[A-Za-z0-9][A-Za-z0-9_.\-]*" if split is None else re.escape(split)
    return re.compile(
        rf"^\.{name}-\d{{{_DIGITS},}}{_TOKEN}\.tfrecord(?:\.gz|\.zz)?(?:\.index)?(?:\.[0-9a-f]+-[0-9a-f]+)?\.tmp$"
    )


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


def new_chunk(size: int) -> mmap.mmap:
    """An empty chunk buffer of ``size`` bytes: anonymous memory that the kernel hands
    out page by page as records are copied in.

    Why not a ``bytearray``: one grown as records arrive is zero-filled and copied at
    every growth, and every fresh page costs a fault; pages of this mapping are faulted
    in once, when a record is first copied to them, and a small shard touches only the
    pages its records fill.

    Why no transparent huge pages (``MADV_HUGEPAGE``), which would fault 512 times less
    often: where the kernel compacts memory on such a fault (``defrag`` set to
    ``madvise``, a common default), a fault may stall to find a free 2 MB page, and the
    mixed write became bimodal (measured: docs/performance.md#the-writers-buffers).
    """
    if hasattr(mmap, "MAP_PRIVATE"):  # Unix: private anonymous memory
        return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    return mmap.mmap(-1, size)  # Windows: anonymous memory backed by the paging file


class ChunkPool:
    """Chunk buffers kept between the shard files of one process, at most ``keep``.

    A fresh buffer's pages cost the kernel a fault and a zero-fill each the first time a
    record is copied to them, and in a virtual machine the host may have to back them
    too (measured: docs/performance.md#the-writers-buffers). A process that has written
    keeps up to ``keep`` buffers (2 MB each; the pages its writes touched stay resident)
    for its next shard or writer.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._chunks: list[mmap.mmap] = []

    def take(self, size: int) -> mmap.mmap:
        """A buffer of ``size`` bytes: a kept one when there is one, else a new one."""
        with self._lock:
            for i, chunk in enumerate(self._chunks):
                if len(chunk) == size:
                    return self._chunks.pop(i)
        return new_chunk(size)

    def give_back(self, chunks: Iterable[mmap.mmap]) -> None:
        """Keep ``chunks`` for later writes, up to ``keep``; close the rest."""
        with self._lock:
            for chunk in chunks:
                if len(self._chunks) < self.keep:
                    self._chunks.append(chunk)
                else:
                    chunk.close()

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (another thread may have held the parent's)
        and no buffers (they are the parent's pages, copied on write)."""
        self._lock = threading.Lock()
        self._chunks = []


#: The process's kept chunk buffers: as many as one shard file uses at most.
CHUNK_POOL = ChunkPool(keep=_CHUNKS_IN_FLIGHT + 1)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=CHUNK_POOL.after_fork)


def start_writeback(fd: int, offset: int, size: int) -> None:
    """Ask the kernel to start writing ``size`` bytes at ``offset`` of ``fd`` to disk
    now, without waiting: a hint that makes a later fsync shorter (ignored where it is
    not available, or fails)."""
    function = _sync_file_range()
    if function is not None:
        function(fd, offset, size, _SYNC_FILE_RANGE_WRITE)


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
    """One shard being written: framed records in, a complete file and its ShardInfo out.

    The one writer of TFRecord files (the dataset writer's shards, the conformance kit's
    files): ``path`` is the final name; the records go to ``.<name>.tmp`` beside it
    until :meth:`commit` (or :meth:`commit_async`) renames it.
    """

    def __init__(self, where: Location, compression: Compression, *, durable: bool = True) -> None:
        self.name = where.name
        #: fsync the file before renaming it (see ``WriteOptions`` ``durable``).
        self.durable = durable
        self.final_path = where
        local = where.local_path
        #: A remote object is streamed under its final name (an object store has no
        #: rename; the object appears only when its upload completes, in :meth:`_finish`).
        self._remote: WriteStream | None = where.open_write() if local is None else None
        # Unique per writer (pid and a random token), so no two writers ever share one.
        self.temp_path = (
            local.with_name(f".{self.name}.{os.getpid():x}-{secrets.token_hex(4)}.tmp")
            if local is not None
            else None
        )
        self.records = 0
        #: Framed, uncompressed bytes so far (what the shard size limit counts).
        self.payload_bytes = 0
        self._stored_bytes = 0
        self._hash = hashlib.sha256()
        self._compressor = compressor(compression)
        self._chunk_bytes = _CHUNK_BYTES
        #: The chunk being filled (None until a record needs one; see :func:`new_chunk`),
        #: reused once written, so big shards do not fault in fresh pages for every chunk.
        self._buffer: mmap.mmap | None = None
        self._filled = 0
        #: Buffers the background thread has finished with, ready to be filled again.
        self._free: collections.deque[mmap.mmap] = collections.deque()
        # O_EXCL: never write through a file (or symlink) that is already there.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(self.temp_path, flags, 0o644) if self.temp_path is not None else -1
        #: Each record's offset in the (uncompressed) stream: the shard's record index. An
        #: array of 8-byte ints, not a list (whose ints take about 40 bytes a record): a
        #: 128 MiB shard of 100-byte records has 1.2 million of them.
        self._offsets = array("q")
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recordkit-shard")
        self._in_flight: collections.deque[Future[mmap.mmap | None]] = collections.deque()
        self._finishing: Future[ShardInfo] | None = None

    def fits(self, size: int, limits: ShardLimits) -> bool:
        """Whether a record of ``size`` framed bytes may still go into this shard."""
        if self.records == 0:
            return True
        if limits.max_records is not None and self.records >= limits.max_records:
            return False
        return limits.max_bytes is None or self.payload_bytes + size <= limits.max_bytes

    def add(self, framed: bytes) -> None:
        """Append one record framed by :func:`~recordkit.format._tfrecord.frame_pieces`
        (or ``frame_record``): a copy into the chunk being filled, nothing else."""
        size = len(framed)
        start = self._reserve(size)
        if start < 0:  # a record bigger than a chunk goes as it is
            self._submit(framed, None)
            return
        assert self._buffer is not None
        self._buffer.seek(start)
        self._buffer.write(framed)
        self._filled = start + size

    def add_pieces(self, pieces: Sequence[bytes], size: int) -> None:
        """Append one record given as the pieces of its data (``size`` bytes in all),
        framed straight into the chunk being filled (:func:`frame_into`): each piece is
        copied once, and no joined record is made."""
        framed_size = size + FRAMING_BYTES
        start = self._reserve(framed_size)
        if start < 0:
            self._submit(frame_pieces(pieces, size), None)
            return
        assert self._buffer is not None
        self._filled = frame_into(self._buffer, start, pieces, size)

    def _reserve(self, size: int) -> int:
        """Count a record of ``size`` framed bytes in; where it goes in the chunk being
        filled (handing a full chunk off first, and making room), or -1 when it is
        bigger than a chunk and goes to the background thread on its own."""
        self._offsets.append(self.payload_bytes)
        self.records += 1
        self.payload_bytes += size
        start = self._filled
        if start + size > self._chunk_bytes:
            self._hand_off()
            if size >= self._chunk_bytes:
                return -1
            start = 0
        if self._buffer is None:
            self._buffer = self._free.popleft() if self._free else CHUNK_POOL.take(self._chunk_bytes)
        return start

    def _hand_off(self) -> None:
        """Send the filled part of the chunk to the background thread; take an empty one."""
        buffer, filled = self._buffer, self._filled
        if buffer is None or not filled:
            return
        self._submit(memoryview(buffer)[:filled], buffer)
        self._buffer = None
        self._filled = 0

    def _submit(self, data: bytes | memoryview, buffer: mmap.mmap | None) -> None:
        while len(self._in_flight) >= _CHUNKS_IN_FLIGHT:
            self._reclaim(self._in_flight.popleft().result())
        if self._fd >= 0 and self._compressor is None:
            # A local file, stored as it is: written from this thread, hashed on the other.
            offset = self._stored_bytes
            try:
                self._write(data)
            except BaseException:
                if isinstance(data, memoryview):
                    data.release()
                raise
            self._in_flight.append(self._io.submit(self._hash_chunk, data, buffer, offset))
        else:
            self._in_flight.append(self._io.submit(self._store_chunk, data, buffer))
        self._reclaim_written()

    def _reclaim(self, buffer: mmap.mmap | None) -> None:
        if buffer is not None:
            self._free.append(buffer)

    def _hash_chunk(
        self, data: bytes | memoryview, buffer: mmap.mmap | None, offset: int
    ) -> mmap.mmap | None:
        """On the background thread: hash one chunk that the encoding thread has written
        to the file (starting its writeback when durable); give its buffer back.

        Why the write is not done here too: the hash is most of this thread's work, and
        the write (the kernel's copy into its cache) made it the slower thread, which
        set the pace; with the encoder writing (:meth:`_write`, the GIL released
        meanwhile), the encoder waits on nothing (measured:
        docs/performance.md#the-writers-buffers)."""
        try:
            self._hash.update(data)
            if self.durable:  # it must reach the disk anyway: start now, fsync waits less
                start_writeback(self._fd, offset, len(data))
        finally:
            if isinstance(data, memoryview):
                data.release()
        return buffer

    def _store_chunk(self, data: bytes | memoryview, buffer: mmap.mmap | None) -> mmap.mmap | None:
        """On the background thread: compress, hash and store one chunk (a compressed or
        remote shard); give its buffer back. C calls that release the GIL, with next to
        no Python between them, so the thread rarely needs the GIL that the encoding
        thread holds."""
        try:
            self._store(data if self._compressor is None else self._compressor.compress(data))
        finally:
            if isinstance(data, memoryview):
                data.release()
        return buffer

    def _store(self, data: bytes | memoryview) -> None:
        size = len(data)
        if not size:
            return
        self._hash.update(data)
        if self._remote is not None:
            self._remote.write(data)  # buffered into parts, each uploaded when full
            self._stored_bytes += size
            return
        offset = self._stored_bytes
        self._write(data)
        if self.durable:  # it must reach the disk anyway: start now, fsync waits less
            start_writeback(self._fd, offset, size)

    def _write(self, data: bytes | memoryview) -> None:
        """Append ``data`` to the local file, in writes of at most
        :data:`_WRITE_PIECE_BYTES`. An uncompressed chunk is written by the encoding
        thread when it hands the chunk off (each write releases the GIL, the kernel's
        copy overlapping the other thread's hash), the rest by the background thread."""
        size = len(data)
        with memoryview(data) as view:
            written = 0
            while written < size:  # a short write is rare (signals, some filesystems)
                written += os.write(self._fd, view[written : written + _WRITE_PIECE_BYTES])
        self._stored_bytes += size

    def _reclaim_written(self) -> None:
        """Take back, without waiting, the buffers of the chunks already written: else a
        disk that keeps up would still make a third buffer, filled while two written
        chunks wait to be reclaimed (a chunk more for every big shard)."""
        in_flight = self._in_flight
        while in_flight and in_flight[0].done():
            self._reclaim(in_flight.popleft().result())

    def commit_async(self, then: Callable[[ShardInfo], None] | None = None) -> Future[ShardInfo]:
        """Finish the file in the background: the rest written, fsynced (when durable),
        renamed to its final name, then ``then(info)`` called (on the background
        thread: e.g. to list the shard in a manifest). The future gives the ShardInfo
        once all that is done, or the error; meanwhile the caller may encode the next
        shard."""
        if self._finishing is None:
            try:
                self._hand_off()  # the last chunk's write (a full disk fails it here)
            except BaseException:
                self.discard()  # the temporary file goes now: its space is the user's
                raise
            self._finishing = self._io.submit(self._finish, then)
            self._io.shutdown(wait=False)  # the thread ends after the last job
        return self._finishing

    def commit(self) -> ShardInfo:
        """Finish the file, fsync it (when durable) and rename it to its final name."""
        return self.commit_async().result()

    def _finish(self, then: Callable[[ShardInfo], None] | None) -> ShardInfo:
        """On the background thread, after every chunk: the end of the file."""
        try:
            while self._in_flight:
                self._reclaim(self._in_flight.popleft().result())  # each finished before this job
            # No more records: the buffers go back to the process's pool (the next shard
            # or writer reuses them) or are closed.
            CHUNK_POOL.give_back(self._free)
            self._free.clear()
            if self._compressor is not None:
                self._store(self._compressor.flush())
            if self._fd >= 0:
                if self.durable:
                    os.fsync(self._fd)
                os.close(self._fd)
                self._fd = -1
            # The index first: a shard under its final name always has its index beside it.
            # It takes over the offsets (no copy), and they go when it is written.
            offsets, self._offsets = self._offsets, array("q")
            index = RecordIndex.taking(offsets, self.payload_bytes)
            del offsets
            index_file = index_name(self.name)
            index_sha256 = write_index(
                self.final_path.parent.join(index_file),
                index,
                durable=self.durable,
            )
            del index
            if self._remote is not None:
                self._remote.close()  # completes the upload: the shard appears, whole
            else:
                assert self.temp_path is not None
                os.replace(self.temp_path, self.final_path.path)
        except BaseException:
            self._close_and_delete()
            raise
        info = ShardInfo(
            file=self.name,
            records=self.records,
            bytes=self._stored_bytes,
            sha256=self._hash.hexdigest(),
            index=ShardIndex(file=index_file, sha256=index_sha256),
        )
        if then is not None:
            then(info)
        return info

    def discard(self) -> None:
        """Close and delete the temporary file (the shard was not completed)."""
        try:
            for future in self._in_flight:
                future.cancel()
            self._io.shutdown(wait=True)
        finally:
            self._close_and_delete()

    def _close_and_delete(self) -> None:
        if self._remote is not None:
            self._remote.abort()  # the upload is cancelled: no object appears
            return
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)
        if self.temp_path is not None:
            self.temp_path.unlink(missing_ok=True)
