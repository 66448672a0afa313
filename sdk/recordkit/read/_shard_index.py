"""Reading records by position: each shard's record index, and one ``pread`` per record.

:class:`IndexedShards` is the core that :class:`recordkit.RandomAccess`, the PyTorch
datasets and the Grain data source share. It finds each shard's index (listed in the
manifest and checked against its sha256; else a ``<shard>.index`` sidecar, as
``recordkit index`` writes for foreign files; else a scan of the shard, kept in memory),
maps a global record number to its shard and record, and reads a record with one
``os.pread`` of exactly its framed bytes, whose CRCs it checks.

Open files are held in a small LRU cache (at most ``max_open_files``), safe to share
between threads (a file evicted while another thread reads it is closed when that read
ends) and across ``fork``: a child process notices the new process id and opens its own
files, never sharing a file position or a lock with its parent.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from recordkit.dataset._manifest import ShardInfo
from recordkit.errors import CorruptRecordError, DatasetError
from recordkit.format._index import INDEX_SUFFIX, RecordIndex, build_index, read_index
from recordkit.format._tfrecord import Compression, unframe_record
from recordkit.read._open import OpenedDataset, Shard
from recordkit.storage import Location

__all__ = ["DEFAULT_MAX_OPEN_FILES", "FileCache", "IndexedShards", "load_index"]

#: Files a reader keeps open at most (per process).
DEFAULT_MAX_OPEN_FILES = 64


class _Handle:
    __slots__ = ("closing", "fd", "users")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.users = 0
        self.closing = False


class FileCache:
    """At most ``max_open`` files open for reading, least recently used closed first.

    Thread-safe; after a ``fork`` the child drops (closes) the parent's descriptors and
    opens its own.
    """

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN_FILES) -> None:
        if max_open < 1:
            raise ValueError(f"max_open_files must be at least 1, not {max_open}")
        self.max_open = max_open
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._open: collections.OrderedDict[Path, _Handle] = collections.OrderedDict()

    def _after_fork(self) -> None:
        # Only the forking thread lives on in the child: a lock another thread held at
        # the fork would never be released, so the child starts with fresh state.
        handles = list(self._open.values())
        self._lock = threading.Lock()
        self._open = collections.OrderedDict()
        self._pid = os.getpid()
        for handle in handles:
            with contextlib.suppress(OSError):
                os.close(handle.fd)

    @contextmanager
    def open(self, path: Path) -> Iterator[int]:
        """A descriptor of ``path`` open for reading, for the duration of the block."""
        if os.getpid() != self._pid:
            self._after_fork()
        with self._lock:
            handle = self._open.get(path)
            if handle is None:
                handle = _Handle(os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0)))
                self._open[path] = handle
                while len(self._open) > self.max_open:
                    _, old = self._open.popitem(last=False)
                    old.closing = True
                    if old.users == 0:
                        os.close(old.fd)
            else:
                self._open.move_to_end(path)
            handle.users += 1
        try:
            yield handle.fd
        finally:
            with self._lock:
                handle.users -= 1
                if handle.closing and handle.users == 0:
                    os.close(handle.fd)

    def close(self) -> None:
        """Close every file not in use (those in use close when their read ends)."""
        if os.getpid() != self._pid:
            self._after_fork()
            return
        with self._lock:
            for handle in self._open.values():
                handle.closing = True
                if handle.users == 0:
                    os.close(handle.fd)
            self._open.clear()

    def __len__(self) -> int:
        return len(self._open)


def load_index(shard: Shard, info: ShardInfo | None, compression: Compression) -> RecordIndex:
    """The record index of ``shard``: the manifest's (sha256 and record count checked),
    else a ``<file>.index`` sidecar, else built by scanning the shard."""
    if isinstance(shard.path, Location):
        raise DatasetError(
            "random access (recordkit.RandomAccess, load_dataset(start=...) on shuffled reads, "
            "torch/grain sources) reads local shards only; copy the dataset to a local folder first",
            file=str(shard.path),
        )
    if info is not None and info.index is not None:
        path = shard.path.with_name(info.index.file)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CorruptRecordError(
                f"its record index {info.index.file} cannot be read: {exc.strerror or exc}",
                shard=shard.name,
            ) from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != info.index.sha256:
            raise CorruptRecordError(
                f"its record index {info.index.file} has sha256 {digest}, the manifest says "
                f"{info.index.sha256}; rebuild it with `recordkit index`",
                shard=shard.name,
            )
        index = RecordIndex.from_bytes(data, name=info.index.file)
    else:
        sidecar = shard.path.with_name(shard.path.name + INDEX_SUFFIX)
        index = read_index(sidecar) if sidecar.is_file() else build_index(shard.path, compression)
    if shard.records is not None and len(index) != shard.records:
        raise CorruptRecordError(
            f"its record index lists {len(index)} records, the manifest says {shard.records}",
            shard=shard.name,
        )
    return index


class IndexedShards:
    """A split's shards, their indexes, and reads of single records by position."""

    def __init__(
        self,
        source: OpenedDataset,
        *,
        verify: bool = True,
        max_open_files: int = DEFAULT_MAX_OPEN_FILES,
    ) -> None:
        if source.compression is not Compression.NONE:
            raise DatasetError(
                f"random access needs uncompressed shards; these are stored {source.compression.value} "
                "(rewrite the dataset without compression, or read it in order with iter_records)"
            )
        self.shards = source.shards
        self.verify = verify
        # Each shard's manifest entry, by file name: the source may hold a slice of the
        # split, or only the shards an unfinished append leaves readable.
        listed = {} if source.manifest is None else {
            info.file: info for split in source.manifest.splits.values() for info in split.shards
        }
        self.indexes = [
            load_index(shard, listed.get(shard.name), source.compression) for shard in source.shards
        ]
        #: Records of each shard before what the source reads of it (a split slice), and
        #: how many it reads; record numbers below count from the first read.
        self.firsts = [shard.skip for shard in source.shards]
        self.counts = np.asarray(
            [
                len(index) - shard.skip if shard.take is None else shard.take
                for shard, index in zip(source.shards, self.indexes, strict=True)
            ],
            dtype=np.int64,
        )
        #: ``starts[s]``: the global number of shard ``s``'s first record.
        self.starts = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        self.files = FileCache(max_open_files)

    def __len__(self) -> int:
        return int(self.starts[-1])

    def locate(self, index: int) -> tuple[int, int]:
        """``(shard, record)`` of global record ``index`` (0 <= index < len)."""
        shard = int(np.searchsorted(self.starts, index, side="right")) - 1
        return shard, index - int(self.starts[shard])

    def offset(self, shard: int, record: int) -> int:
        return self.indexes[shard].span(self.firsts[shard] + record)[0]

    def read(self, shard: int, record: int) -> bytes:
        """Record ``record`` of shard ``shard``: one pread, CRCs checked."""
        offset, size = self.indexes[shard].span(self.firsts[shard] + record)
        entry = self.shards[shard]
        assert isinstance(entry.path, Path), "load_index refuses remote shards"
        with self.files.open(entry.path) as fd:
            framed = os.pread(fd, size, offset)
        if len(framed) < size:
            raise CorruptRecordError(
                f"truncated: the index says {size} bytes, the file holds {len(framed)} from here",
                shard=entry.name,
                offset=offset,
            )
        return unframe_record(framed, shard=entry.name, offset=offset, verify=self.verify)
