"""Reads of byte ranges by position, local or remote, safe across threads and ``fork``.

:class:`RangeReader` is what random access (:class:`recordkit.RandomAccess`, the PyTorch
datasets, the Grain data source) reads a record with, and the one place that decides
how, by where the shard lives:

* a local file: one ``os.pread`` on a descriptor kept open in a small LRU cache
  (:class:`FileCache`), the fastest a single read can be;
* a remote object kept by a :class:`~recordkit.storage.ShardCache`: its local copy, as a
  local file;
* a remote object (a :class:`~recordkit.storage.Location` with a URL): one ranged GET,
  ``fs.cat_file(path, start=, end=)``; :meth:`RangeReader.read_many` sends a batch's
  GETs concurrently (``fs.cat_ranges``). It holds no open file: nothing to share between
  threads or to leak across a ``fork``. An open fsspec file costs a HEAD when opened,
  then the same one GET per read with ``cache_type="none"`` (or whole 5 MiB blocks
  with s3fs's default read-ahead); measured against moto's S3 server both cost the
  client the same CPU per read, so the stateless call is used.

The filesystem client of a remote location is made per process (see
:attr:`Location.fs`), so a DataLoader or Grain worker forked after the reader was made
opens its own connections.
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from recordkit.storage._location import Location, read_ranges

__all__ = ["DEFAULT_MAX_OPEN_FILES", "FileCache", "RangeReader", "read_into"]

#: Files a reader keeps open at most (per process).
DEFAULT_MAX_OPEN_FILES = 64


class _Handle:
    """A descriptor open for reading, closed once: by :meth:`close`, or when the handle is
    dropped (a reader that is garbage collected with its cache must not leave its files
    open: a process that opened a dataset again and again ran out of descriptors)."""

    __slots__ = ("closing", "fd", "users")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.users = 0
        self.closing = False

    def close(self) -> None:
        """Close the descriptor (once: a closed handle's ``fd`` is -1)."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()


class FileCache:
    """At most ``max_open`` local files open for reading, least recently used closed first.

    Thread-safe; after a ``fork`` the child drops (closes) the parent's descriptors and
    opens its own, never sharing a file position or a lock with its parent.
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
            handle.close()

    def acquire(self, path: Path) -> _Handle:
        """``path`` open for reading (its ``fd``), held until :meth:`release`."""
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
                        old.close()
            else:
                self._open.move_to_end(path)
            handle.users += 1
        return handle

    def release(self, handle: _Handle) -> None:
        """Done with ``handle`` (closed now if it was evicted meanwhile)."""
        with self._lock:
            handle.users -= 1
            if handle.closing and handle.users == 0:
                handle.close()

    @contextmanager
    def open(self, path: Path) -> Iterator[int]:
        """A descriptor of ``path`` open for reading, for the duration of the block."""
        handle = self.acquire(path)
        try:
            yield handle.fd
        finally:
            self.release(handle)

    def close(self) -> None:
        """Close every file not in use (those in use close when their read ends)."""
        if os.getpid() != self._pid:
            self._after_fork()
            return
        with self._lock:
            for handle in self._open.values():
                handle.closing = True
                if handle.users == 0:
                    handle.close()
            self._open.clear()

    def __len__(self) -> int:
        return len(self._open)


class RangeReader:
    """``read(where, offset, size)``: ``size`` bytes of a file from ``offset`` (fewer at
    its end), whether ``where`` is a local path or a remote object; see the module docs.

    Shared safely between threads, and usable in processes forked after it was made.
    ``len()`` is the number of local files it holds open.
    """

    def __init__(self, max_open_files: int = DEFAULT_MAX_OPEN_FILES) -> None:
        self.files = FileCache(max_open_files)

    def read(self, where: Path | Location, offset: int, size: int) -> bytes:
        path = _local_file(where)
        if path is None:
            return cast(Location, where).read_range(offset, size)
        # acquire/release rather than the context manager: a generator per read costs
        # more than the pread of a small record.
        files = self.files
        handle = files.acquire(path)
        try:
            return os.pread(handle.fd, size, offset)
        finally:
            files.release(handle)

    def read_many(self, requests: list[tuple[Path | Location, int, int]]) -> list[bytes | OSError]:
        """The bytes of each ``(where, offset, size)``, or the OSError that reading it
        raised: local ranges read in turn, remote ones fetched concurrently (one ranged
        GET each, many in flight), so a batch of records from a bucket costs about one
        round trip's wait rather than one per record."""
        results: list[bytes | OSError | None] = [None] * len(requests)
        remote: list[int] = []
        remote_requests: list[tuple[Location, int, int]] = []
        for i, (where, offset, size) in enumerate(requests):
            if isinstance(where, Location) and not where.is_local and where.cached_file() is None:
                remote.append(i)
                remote_requests.append((where, offset, size))
                continue
            try:
                results[i] = self.read(where, offset, size)
            except OSError as exc:
                results[i] = exc
        if remote:
            fetched = read_ranges(remote_requests)
            for i, got in zip(remote, fetched, strict=True):
                results[i] = got
        return [r if r is not None else FileNotFoundError() for r in results]

    @contextmanager
    def local_reads(
        self, files: Sequence[Path | Location], file_of: list[int], offsets: list[int], sizes: list[int]
    ) -> Iterator[Iterator[bytes] | None]:
        """The bytes of each range ``i``: ``sizes[i]`` bytes from ``offsets[i]`` of
        ``files[file_of[i]]`` (fewer at its end), read as the iterator is taken (a caller
        that checks each range as it comes checks it while it is in the CPU's cache), each
        file held open once for the block and each ``pread`` made from C (``map``): no
        Python step a range. None: a file is remote (and not kept in a local copy), or
        there are more files than are kept open. A read that fails raises its OSError."""
        paths: list[Path] = []
        for where in files:
            path = _local_file(where)
            if path is None:  # a remote object with no local copy: stop at the first
                yield None
                return
            paths.append(path)
        cache = self.files
        if len(set(paths)) > cache.max_open:  # never more files open than it keeps
            yield None
            return
        handles: list[_Handle] = []
        try:
            for path in paths:
                handles.append(cache.acquire(path))
            fds = [handle.fd for handle in handles]
            yield map(os.pread, map(fds.__getitem__, file_of), sizes, offsets)
        finally:
            for handle in handles:
                cache.release(handle)

    def close(self) -> None:
        """Close the local files not in use (reading again reopens them)."""
        self.files.close()

    def __len__(self) -> int:
        return len(self.files)


def read_into(stream: io.RawIOBase | io.BufferedIOBase, target: memoryview) -> int:
    """Read ``stream`` from where it stands into ``target`` until ``target`` is full or the
    file ends, and give the bytes read: fewer than ``len(target)`` when the file was cut
    short since its size was taken. (One ``readinto`` may stop short of a full buffer.)
    The shard readers read whole files this way rather than mapping them: a mapped file
    cut short while it is read kills the process with ``SIGBUS``."""
    filled = 0
    while filled < len(target) and (got := stream.readinto(target[filled:])):
        filled += got
    return filled


def _local_file(where: Path | Location) -> Path | None:
    """The local file that ``where`` names, or a remote object's local copy; None: a
    remote object with no local copy (read it by ranges)."""
    if not isinstance(where, Location):
        return where
    if where.is_local:
        return where.path
    return where.cached_file()
