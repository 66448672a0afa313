"""A local disk cache of remote shards: read from the bucket once, then from disk.

A :class:`ShardCache` is a folder and a size limit. A remote :class:`Location` that
carries one (given in ``storage_options`` under :data:`CACHE_OPTION`, which
:func:`recordkit.open`'s ``cache=`` does) and the sha256 the manifest lists for it (see
:meth:`Location.with_sha256`) is read from its local copy: the first read downloads the
whole object (one GET), checks its sha256 against the manifest's, and keeps it; later
reads, in this process or another, find it on disk and make no request. Objects without
a listed sha256 (manifests, record indexes, schema files) are never cached, so a dataset
rewritten in place is never read stale: its shards' new digests are new cache entries.

Files are named by their sha256, written to a temporary name and renamed into place, so
processes sharing the folder (DataLoader workers, several jobs) never see a partial
file. A file found in the folder is hashed again on its first use in each process
(damaged on disk: it is fetched again). When an entry would take the folder past
``max_bytes``, the least recently used files are deleted first; an object larger than
the whole limit is read from the bucket as without a cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from recordkit.errors import CorruptRecordError

__all__ = ["CACHE_OPTION", "DEFAULT_CACHE_BYTES", "ShardCache", "file_sha256"]

#: The ``storage_options`` key that carries a :class:`ShardCache` to every Location made
#: from those options (it is taken out before the options reach fsspec).
CACHE_OPTION = "recordkit_cache"
#: The size limit of a cache given as a folder alone: 10 GiB.
DEFAULT_CACHE_BYTES = 10 << 30
#: How often, at most, a process marks a cached file as used (its mtime, the LRU order).
_TOUCH_SECONDS = 30.0

_ENTRY = re.compile(r"^[0-9a-f]{64}$")


def file_sha256(path: Path) -> str:
    """The sha256 of a local file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class ShardCache:
    """A folder that keeps remote shards on local disk after their first read, holding at
    most ``max_bytes`` (least recently used shards deleted first).

    Give it to :func:`recordkit.open` as ``cache=``; the folder is made when the first
    shard is cached, and may be shared by processes and datasets. Each cached shard is
    checked against the sha256 the manifest lists for it: when it is downloaded, and on
    its first use in each process.
    """

    directory: str
    max_bytes: int = DEFAULT_CACHE_BYTES

    def __post_init__(self) -> None:
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) or self.max_bytes < 1:
            raise ValueError(f"a ShardCache's max_bytes must be a positive number, not {self.max_bytes!r}")
        folder = os.path.abspath(os.path.expanduser(os.fspath(self.directory)))
        object.__setattr__(self, "directory", folder)

    def entry(self, sha256: str) -> Path:
        """Where the shard of digest ``sha256`` is kept (whether it is there or not)."""
        if not _ENTRY.match(sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        return Path(self.directory) / sha256

    def cached(self, sha256: str) -> Path | None:
        """The local copy of the shard of digest ``sha256`` if the folder holds it, checked
        on its first use in this process (a damaged copy is deleted: None)."""
        path = self.entry(sha256)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        key = (str(path), stat.st_ino, stat.st_size)
        with _LOCK:
            last = _CHECKED.get(key)
        if last is None:
            if file_sha256(path) != sha256:
                path.unlink(missing_ok=True)
                return None
            last = 0.0
        now = time.monotonic()
        if now - last >= _TOUCH_SECONDS:
            try:
                os.utime(path)
            except FileNotFoundError:  # evicted by another process meanwhile
                return None
            with _LOCK:
                _CHECKED[key] = now
        return path

    def fetch(self, url: str, sha256: str, size: int, download: Callable[[str], None]) -> Path | None:
        """The local copy of the object at ``url`` (``size`` bytes, digest ``sha256``):
        from the cache, else fetched by ``download(local_path)`` (one GET), checked and
        kept; None when ``size`` exceeds the whole limit (read it from the store).

        A download whose sha256 differs from ``sha256`` is a CorruptRecordError naming the
        object (changed after the manifest listed it, or damaged), and is not kept.
        """
        found = self.cached(sha256)
        if found is not None or size > self.max_bytes:
            return found
        folder = Path(self.directory)
        folder.mkdir(parents=True, exist_ok=True)
        self._make_room(size)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fetch-", suffix=".tmp")
        os.close(fd)
        try:
            download(tmp)
            digest = file_sha256(Path(tmp))
            if digest != sha256:
                raise CorruptRecordError(
                    f"{url} has sha256 {digest}, the manifest lists {sha256} (the object "
                    "changed after the manifest was written, or is damaged); it was not cached",
                    shard=url.rsplit("/", 1)[-1],
                )
            path = self.entry(sha256)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        stat = path.stat()
        with _LOCK:
            _CHECKED[(str(path), stat.st_ino, stat.st_size)] = time.monotonic()
        return path

    def usage(self) -> int:
        """The bytes the cached shards take now."""
        return sum(size for _, _, size in self._entries())

    def _entries(self) -> list[tuple[float, Path, int]]:
        """Each cached shard's (last use, path, size), least recently used first."""
        entries = []
        try:
            scanned = list(os.scandir(self.directory))
        except FileNotFoundError:
            return []
        for item in scanned:
            if _ENTRY.match(item.name):
                try:
                    stat = item.stat()
                except FileNotFoundError:
                    continue
                entries.append((stat.st_mtime, Path(item.path), stat.st_size))
        return sorted(entries)

    def _make_room(self, incoming: int) -> None:
        """Delete the least recently used shards until ``incoming`` more bytes fit."""
        entries = self._entries()
        total = sum(size for _, _, size in entries)
        for _, path, size in entries:
            if total + incoming <= self.max_bytes:
                break
            path.unlink(missing_ok=True)  # a reader with it open keeps reading it (POSIX)
            total -= size


#: Cached files checked in this process, by (path, inode, size): when last marked used.
_CHECKED: dict[tuple[str, int, int], float] = {}
_LOCK = threading.Lock()


def _new_lock_after_fork() -> None:
    # A lock another thread held at the fork would never be released in the child.
    global _LOCK
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)
