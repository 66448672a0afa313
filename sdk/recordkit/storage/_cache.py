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

Remote shard tables (read whole when a dataset opens) are cached even when no cache was
given: in :func:`default_table_cache`, a small folder of the user's cache directory
(``RECORDKIT_CACHE`` moves it, ``RECORDKIT_CACHE=off`` turns it off), read through
:meth:`ShardCache.read_through`, which hashes the bytes it returns every time and lets the
processes of one machine that ask at once wait for one download.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from recordkit.errors import CorruptRecordError

try:
    import fcntl
except ImportError:  # Windows: processes asking at once each download
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CACHE_ENV",
    "CACHE_OPTION",
    "DEFAULT_CACHE_BYTES",
    "TABLE_CACHE_BYTES",
    "ShardCache",
    "default_table_cache",
    "file_sha256",
]

#: The ``storage_options`` key that carries a :class:`ShardCache` to every Location made
#: from those options (it is taken out before the options reach fsspec).
CACHE_OPTION = "recordkit_cache"
#: The size limit of a cache given as a folder alone: 10 GiB.
DEFAULT_CACHE_BYTES = 10 << 30
#: The environment variable that moves recordkit's cache folder (shard tables are kept
#: in its ``shard-tables`` folder), or turns the default cache off (``off`` or ``0``).
CACHE_ENV = "RECORDKIT_CACHE"
#: The size limit of the default cache of shard tables: 1 GiB (a table of a million
#: shards takes about 110 MB).
TABLE_CACHE_BYTES = 1 << 30
_OFF = ("off", "0")
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

        Processes of one machine that miss at once (DataLoader workers, ranks starting
        together) wait for the first one's download, then use its copy: one GET.
        """
        found = self.cached(sha256)
        if found is not None or size > self.max_bytes:
            return found
        folder = Path(self.directory)
        folder.mkdir(parents=True, exist_ok=True)
        with self._download_lock(sha256):
            found = self.cached(sha256)
            if found is not None:
                return found
            return self._download_into_place(url, sha256, size, download)

    def _download_into_place(self, url: str, sha256: str, size: int, download: Callable[[str], None]) -> Path:
        """:meth:`fetch`'s download: into a temporary file, checked, renamed into place."""
        folder = Path(self.directory)
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

    def read_through(self, sha256: str, download: Callable[[], bytes]) -> tuple[bytes, str]:
        """The bytes of the object of digest ``sha256`` and their sha256 (hex), hashed here
        on every call: the folder's copy when its bytes hash to ``sha256`` (a damaged copy
        is deleted), else ``download()`` (one request), kept when its digest is
        ``sha256`` (else the caller names the mismatch). For objects read whole, such as
        shard tables: the bytes returned are the bytes checked.

        Processes of one machine that miss at once wait for the first one's download (a
        lock file beside the entry), then read its copy: one download. A folder that
        cannot be written (read-only, full) only costs the download.
        """
        found = self._read_entry(sha256)
        if found is not None:
            return found, sha256
        with contextlib.ExitStack() as held:
            with contextlib.suppress(OSError):  # a folder that cannot be written: no wait
                held.enter_context(self._download_lock(sha256))
            found = self._read_entry(sha256)
            if found is not None:
                return found, sha256
            data = download()
            digest = hashlib.sha256(data).hexdigest()
            if digest == sha256 and len(data) <= self.max_bytes:
                with contextlib.suppress(OSError):
                    self._keep(sha256, data)
            return data, digest

    def _read_entry(self, sha256: str) -> bytes | None:
        """The bytes of the folder's copy of ``sha256`` if they hash to it (a damaged copy
        is deleted: None), marked as used."""
        path = self.entry(sha256)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != sha256:
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return data

    @contextlib.contextmanager
    def _download_lock(self, sha256: str) -> Iterator[None]:
        """Held while this process downloads ``sha256``: others wait (POSIX ``flock``,
        released by the system if the process dies; none on Windows).

        The lock file is removed before it is released, so the folder holds none once
        downloads are over: whoever waited on it, or opens a new one, looks for the copy
        again before downloading (two downloads only where the first one failed)."""
        folder = Path(self.directory)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f".{sha256}.lock"
        with open(path, "ab") as lock:
            if fcntl is not None:
                try:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self._wait_for_download(lock.fileno())
            try:
                yield
            finally:
                path.unlink(missing_ok=True)

    def _wait_for_download(self, lock: int) -> None:
        """Wait until the process downloading (holding ``lock``) is done."""
        assert fcntl is not None
        fcntl.flock(lock, fcntl.LOCK_EX)

    def _keep(self, sha256: str, data: bytes) -> None:
        """Put ``data`` (checked) in the folder under ``sha256``: a temporary file renamed
        into place, room made first."""
        folder = Path(self.directory)
        self._make_room(len(data))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fetch-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, self.entry(sha256))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

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


def default_table_cache() -> ShardCache | None:
    """Where remote shard tables are kept when a dataset is opened without a cache:
    ``shard-tables`` in recordkit's cache folder (``$RECORDKIT_CACHE``, else the user's
    cache directory: ``$XDG_CACHE_HOME/recordkit`` or ``~/.cache/recordkit`` on Linux,
    ``~/Library/Caches/recordkit`` on macOS, ``%LOCALAPPDATA%\\recordkit\\Cache`` on
    Windows), at most :data:`TABLE_CACHE_BYTES`; None when ``RECORDKIT_CACHE`` is
    ``off`` or ``0``, or no home folder is known. Read at each call: set in a process, it
    holds for the datasets it opens next."""
    setting = os.environ.get(CACHE_ENV, "").strip()
    if setting.lower() in _OFF:
        return None
    if setting:
        root = Path(setting).expanduser()
    else:
        try:
            root = _user_cache_folder()
        except RuntimeError:  # no home folder
            return None
    return ShardCache(str(root / "shard-tables"), TABLE_CACHE_BYTES)


def _user_cache_folder() -> Path:
    """recordkit's folder in the platform's per-user cache directory."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return (Path(base) if base else Path.home() / "AppData" / "Local") / "recordkit" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "recordkit"
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "recordkit"


#: Cached files checked in this process, by (path, inode, size): when last marked used.
_CHECKED: dict[tuple[str, int, int], float] = {}
_LOCK = threading.Lock()


def _new_lock_after_fork() -> None:
    # A lock another thread held at the fork would never be released in the child.
    global _LOCK
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)
