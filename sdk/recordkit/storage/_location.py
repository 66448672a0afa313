"""A :class:`Location`: one file or folder, local or remote, and what the SDK does with it.

Semantics, local path against remote URL (fsspec):

* ``open_read()``: the file, buffered / a streamed, ranged read (no full download).
* ``open_write()``: a new file (truncated) / a streamed upload (multipart on S3,
  resumable on GCS): the object appears whole when the stream is closed, never in
  part, and ``abort()`` leaves nothing.
* ``write_bytes(data)``: temp file, fsync, ``os.replace``, fsync of the folder (atomic
  and durable) / one PUT, the object replaced whole.
* ``read_range(offset, size)``: one ``pread`` / one ranged GET.
* :func:`read_files`, :func:`read_ranges`: each file or range read / one GET each,
  sent concurrently.
* ``exists()``, ``size()``: ``os`` calls / one metadata request (HEAD).
* ``list()``, ``list_sizes()``: the files in the folder / the names (and sizes) under
  the prefix (one LIST).
* ``glob()``: the files a pattern (``*``, ``?``, ``[...]``) matches / the objects
  (fsspec's glob: a LIST of the prefix before the first wildcard).
* ``remove()``: unlink / DELETE (missing is fine in both); ``remove_files(names)``:
  several, remotely in batched requests.
* ``join(*parts)``: ``Path / part`` / ``url + "/" + part``.

Object stores have no atomic rename and no folder fsync, which is why writers on them
write each object once, under its final name, and commit with one manifest PUT.
"""

from __future__ import annotations

import builtins
import contextlib
import glob as _glob
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from recordkit.storage._cache import CACHE_OPTION, ShardCache, default_table_cache
from recordkit.storage._clients import filesystem, split_protocol
from recordkit.storage._local import fsync_dir

__all__ = [
    "Location",
    "PathOrUrl",
    "StorageOptions",
    "WriteStream",
    "is_remote",
    "location",
    "read_files",
    "read_ranges",
]

#: One path or URL, as users give it: what the SDK accepts wherever it takes a dataset,
#: shard or schema path (``str``, :class:`pathlib.Path`, ``"s3://..."``).
PathOrUrl = str | os.PathLike[str]
#: Keyword arguments for the fsspec filesystem (``endpoint_url``, ``key``, ``token`` ...).
StorageOptions = Mapping[str, Any]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
#: Part size of a streamed upload (S3's multipart minimum is 5 MiB).
UPLOAD_BLOCK_BYTES = 16 << 20

#: Filesystem clients a forked child inherited from its parent: kept referenced, never
#: used or closed. Collecting one would run its finalizer, which closes the parent's
#: connections through an event loop whose selector the child shares with the parent.
_INHERITED: list[Any] = []


def is_remote(path: object) -> bool:
    """Whether ``path`` is a URL with a scheme other than ``file://`` (a Location: its kind)."""
    if isinstance(path, Location):
        return not path.is_local
    if not isinstance(path, str):
        return False
    match = _URL.match(path)
    return match is not None and match.group(1).lower() != "file"


def location(path: PathOrUrl | Location, storage_options: StorageOptions | None = None) -> Location:
    """The :class:`Location` of a local path, a ``file://`` URL or any fsspec URL.

    ``storage_options`` go to the fsspec filesystem (ignored for local paths), but for
    :data:`~recordkit.storage._cache.CACHE_OPTION`, a :class:`ShardCache` the location
    reads its shards through; a Location passed in is returned as it is (its own options
    kept unless new ones are given).
    """
    if isinstance(path, Location):
        return path if storage_options is None else Location(path.url, storage_options)
    return Location(os.fspath(path), storage_options)


class Location:
    """One file or folder: a local path or a remote URL (see the module docs)."""

    def __init__(self, url: str, storage_options: StorageOptions | None = None) -> None:
        options = dict(storage_options or {})
        cache = options.pop(CACHE_OPTION, None)
        if cache is not None and cache is not False and not isinstance(cache, ShardCache):
            raise TypeError(
                f"storage option {CACHE_OPTION!r} takes a ShardCache or False, not {type(cache).__name__}"
            )
        #: The fsspec filesystem's options.
        self.storage_options: dict[str, Any] = options
        #: Where a remote shard is kept after its first read (see :meth:`with_sha256`).
        self.cache: ShardCache | None = cache or None
        #: No cache at all, not even the default one of shard tables (``cache=False``).
        self.cache_off = cache is False
        #: The sha256 the manifest lists for this file: what lets the cache keep it.
        self.sha256: str | None = None
        self._uncacheable = False
        if url.lower().startswith("file://"):
            url = url[len("file://") :]
        self.is_local = not is_remote(url)
        if self.is_local:
            self._path: Path | None = Path(url)
            self.url = str(self._path)
            self.protocol = "file"
            self.cache = None
        else:
            self._path = None
            protocol, rest = split_protocol(url)
            self.protocol = protocol
            self.url = f"{protocol}://{rest.rstrip('/')}"
        self._fs: Any = None
        self._fs_pid = 0

    # -- naming ------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The local path (ValueError for a remote location: use the methods instead)."""
        if self._path is None:
            raise ValueError(f"{self.url} is not a local path")
        return self._path

    @property
    def local_path(self) -> Path | None:
        """The local path, or None for a remote location: what code with a local fast
        path (``pread``, ``os.fstat``, symlink checks) asks, instead of telling local
        from remote itself."""
        return self._path

    @property
    def is_pattern(self) -> bool:
        """Whether the name holds a wildcard (``*``, ``?``, ``[``) for :meth:`glob`."""
        return any(ch in self.url for ch in "*?[")

    @property
    def name(self) -> str:
        """The last part of the path (a file's or folder's name)."""
        return self._path.name if self._path is not None else self.url.rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        """The folder this location lies in."""
        if self._path is not None:
            return Location(str(self._path.parent))
        head = self.url.rsplit("/", 1)[0]
        return Location(head if "://" in head else self.url, self.options)

    def join(self, *parts: str) -> Location:
        """The location of ``parts`` (``/``-separated names) inside this folder."""
        if self._path is not None:
            return Location(str(self._path.joinpath(*parts)))
        tail = "/".join(part.strip("/") for part in parts)
        return Location(f"{self.url}/{tail}", self.options)

    @property
    def options(self) -> dict[str, Any]:
        """The storage options this location was made with (its cache included): what
        makes another location on the same store, read the same way."""
        if self.cache is None and not self.cache_off:
            return self.storage_options
        return {**self.storage_options, CACHE_OPTION: self.cache or False}

    def table_cache(self) -> ShardCache | None:
        """Where a remote file listed with its sha256 and read whole when a dataset opens
        (a shard table) is kept: the dataset's cache, else the user's default one
        (:func:`~recordkit.storage._cache.default_table_cache`); None for a local file, or
        with caching turned off."""
        if self.is_local or self.cache_off:
            return None
        return self.cache if self.cache is not None else default_table_cache()

    def with_sha256(self, sha256: str | None) -> Location:
        """This location, knowing the sha256 the manifest lists for it: with a cache, a
        remote file is then read from its checked local copy (see
        :mod:`recordkit.storage._cache`)."""
        if sha256 is None or self.cache is None or sha256 == self.sha256:
            return self
        known = Location(self.url, self.options)
        known.sha256 = sha256
        return known

    def cached_file(self) -> Path | None:
        """The local copy this remote file is read from, fetched on first use: None
        without a cache or a listed sha256, or when the file exceeds the cache's limit."""
        if self.cache is None or self.sha256 is None or self._uncacheable:
            return None
        found = self.cache.cached(self.sha256)
        if found is None:
            size = int(self.fs.size(self._key))
            found = self.cache.fetch(
                self.url, self.sha256, size, lambda local: self.fs.get_file(self._key, local)
            )
            # Larger than the whole cache: read from the store, without asking again.
            self._uncacheable = found is None
        return found

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"Location({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Location) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __getstate__(self) -> dict[str, Any]:
        # Pickled without its client: the process that unpickles it makes its own.
        return {**self.__dict__, "_fs": None, "_fs_pid": 0}

    # -- remote plumbing -----------------------------------------------------------------

    @property
    def fs(self) -> Any:
        """The fsspec filesystem of a remote location (imported on first use), one per
        process: a child forked after it was made gets its own client, with its own
        connections (fsspec's async clients refuse to run in a forked child)."""
        pid = os.getpid()
        if self._fs_pid != pid:
            if self._fs is not None:
                _INHERITED.append(self._fs)
            self._fs = filesystem(self.protocol, self.storage_options)
            self._fs_pid = pid
        return self._fs

    @property
    def _key(self) -> str:
        """The path the fsspec filesystem takes (the URL without its scheme)."""
        return split_protocol(self.url)[1]

    # -- operations ----------------------------------------------------------------------

    def exists(self) -> bool:
        """Whether a file or folder (for a remote URL: an object or a prefix) is there."""
        if self._path is not None:
            return self._path.exists()
        return bool(self.fs.exists(self._key))

    def is_file(self) -> bool:
        """Whether a file (for a remote URL: an object) is there, not a folder."""
        if self._path is not None:
            return self._path.is_file()
        return bool(self.fs.exists(self._key))

    def is_dir(self) -> bool:
        """Whether this is a folder (remote: a prefix holding objects, or a bucket)."""
        if self._path is not None:
            return self._path.is_dir()
        return bool(self.fs.isdir(self._key))

    def size(self) -> int:
        """The size in bytes of the file (FileNotFoundError when it is not there)."""
        if self._path is not None:
            return self._path.stat().st_size
        cached = self.cache.cached(self.sha256) if self.cache is not None and self.sha256 else None
        if cached is not None:
            return cached.stat().st_size
        return int(self.fs.size(self._key))

    def list(self) -> list[str]:
        """The names of the files directly in this folder, sorted ([] when there is none)."""
        return self._entries(folders=False)

    def list_folders(self) -> builtins.list[str]:
        """The names of the folders directly in this folder, sorted ([] when there is
        none): remotely one delimited LIST, which does not walk what is inside them."""
        return self._entries(folders=True)

    def _entries(self, *, folders: bool) -> builtins.list[str]:
        """The names of the folders (``folders``) or the files directly in this folder,
        sorted; [] when there is no such folder."""
        if self._path is not None:
            try:
                return sorted(
                    entry.name
                    for entry in os.scandir(self._path)
                    if (entry.is_dir() if folders else entry.is_file())
                )
            except (FileNotFoundError, NotADirectoryError):
                return []
        try:
            entries = self.fs.ls(self._key, detail=True, refresh=True)
        except FileNotFoundError:
            return []
        kind = "directory" if folders else "file"
        return sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == kind)

    def glob(self) -> builtins.list[Location]:
        """The files that this location's pattern (``*``, ``?``, ``[...]``) matches,
        sorted ([] when none does); without a wildcard, the file itself if it is there."""
        if self._path is not None:
            return [Location(name) for name in sorted(_glob.glob(self.url)) if os.path.isfile(name)]
        names = sorted(self.fs.glob(self._key, detail=True).items())
        return [
            Location(f"{self.protocol}://{name.split('://')[-1].lstrip('/')}", self.options)
            for name, info in names
            if info.get("type") == "file"
        ]

    def list_sizes(self) -> dict[str, int]:
        """The size of each file directly in this folder, by name ({} when there is none):
        ``os.scandir`` / one LIST (paged by the store, 1,000 objects a page on S3), which
        is cheaper than a HEAD per file once a folder's files outnumber its pages."""
        if self._path is not None:
            try:
                return {e.name: e.stat().st_size for e in os.scandir(self._path) if e.is_file()}
            except (FileNotFoundError, NotADirectoryError):
                return {}
        try:
            entries = self.fs.ls(self._key, detail=True, refresh=True)
        except FileNotFoundError:
            return {}
        return {
            e["name"].rstrip("/").rsplit("/", 1)[-1]: int(e["size"])
            for e in entries
            if e.get("type") == "file"
        }

    def remove(self) -> None:
        """Delete the file; a file that is not there is fine."""
        if self._path is not None:
            self._path.unlink(missing_ok=True)
            return
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._key)

    def mkdir(self) -> None:
        """Create the folder and its parents (remote: nothing, prefixes need no creating)."""
        if self._path is not None:
            self._path.mkdir(parents=True, exist_ok=True)

    def open_read(self) -> IO[bytes]:
        """The file opened for streamed binary reading (FileNotFoundError if absent)."""
        if self._path is not None:
            return open(self._path, "rb")
        cached = self.cached_file()
        if cached is not None:
            return open(cached, "rb")
        return self.fs.open(self._key, "rb")  # type: ignore[no-any-return]

    def read_bytes(self) -> bytes:
        """The whole file."""
        if self._path is not None:
            return self._path.read_bytes()
        cached = self.cached_file()
        if cached is not None:
            return cached.read_bytes()
        return bytes(self.fs.cat_file(self._key))

    def read_range(self, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset`` (fewer where the file ends): locally one
        ``pread``, remotely one ranged GET (see :mod:`recordkit.storage._ranges` for
        reads of many records, which keeps local files open)."""
        local = self._path if self._path is not None else self.cached_file()
        if local is not None:
            fd = os.open(local, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            try:
                return os.pread(fd, size, offset)
            finally:
                os.close(fd)
        # Keywords: s3fs's cat_file takes a version id as its second argument.
        return bytes(self.fs.cat_file(self._key, start=offset, end=offset + size))

    def open_write(self) -> WriteStream:
        """A stream that writes this file (see :class:`WriteStream`)."""
        return WriteStream(self)

    def write_bytes(self, data: bytes, *, durable: bool = True) -> None:
        """Replace the file with ``data`` whole: locally a temp file fsynced (when
        ``durable``) and renamed over it; remotely one PUT. A reader sees the old bytes
        or the new ones, never a mix."""
        if self._path is None:
            self.fs.pipe_file(self._key, data)
            return
        folder = self._path.parent
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{self._path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                if durable:
                    out.flush()
                    os.fsync(out.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        if durable:
            fsync_dir(folder)

    def move_to(self, target: Location) -> None:
        """Give the file ``target``'s name: locally a rename; on an object store (which
        has no rename) a server-side copy, then a delete."""
        if self._path is not None and target._path is not None:
            os.replace(self._path, target._path)
            return
        self.fs.copy(self._key, target._key)
        self.remove()

    def remove_files(self, names: Iterable[str]) -> None:
        """Delete the files ``names`` (``/``-separated paths inside this folder); those
        not there are fine. Remotely in batched requests (S3: up to 1000 a request)."""
        names = builtins.list(names)
        if self._path is not None or not names:
            for name in names:
                self.join(*name.split("/")).remove()
            return
        files = [self.join(*name.split("/")) for name in names]
        try:
            self.fs.rm([file._key for file in files])
        except FileNotFoundError:  # some filesystems refuse the batch when one is missing
            for file in files:
                file.remove()

    def remove_tree(self) -> None:
        """Delete this folder and everything under it; one that is not there is fine."""
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            return
        for name in list(self.walk_files()):
            self.join(*name.split("/")).remove()

    def walk_files(self) -> Iterator[str]:
        """Every file under this folder, as ``/``-separated paths relative to it."""
        if self._path is not None:
            for path in sorted(self._path.rglob("*")):
                if path.is_file():
                    yield path.relative_to(self._path).as_posix()
            return
        # As the filesystem spells its own paths (memory:// adds a leading "/").
        prefix = str(self.fs._strip_protocol(self._key)).rstrip("/") + "/"
        for name in sorted(self.fs.find(self._key)):
            if name.startswith(prefix):
                yield name[len(prefix) :]


def read_files(locations: list[Location]) -> list[bytes | OSError]:
    """Each file's bytes, or the OSError that reading it raised (FileNotFoundError when
    it is not there). Remote files of one filesystem are fetched concurrently (one GET
    each, many in flight, no HEAD first), which makes a thousand small objects, such as
    a dataset's record indexes, about one round trip's wait rather than a thousand."""
    # From 0, not None: s3fs sends a HEAD before a GET of a whole object (to split a
    # large one into parts), not before a ranged one.
    return _read([(where, 0, None) for where in locations])


def read_ranges(requests: list[tuple[Location, int, int]]) -> list[bytes | OSError]:
    """The bytes of each ``(file, offset, size)`` (fewer where the file ends), or the
    OSError that reading it raised. Ranges of remote files of one filesystem are fetched
    concurrently (fsspec's ``cat_ranges``: one ranged GET each, many in flight; the
    filesystem's ``batch_size`` storage option caps how many); local ones in turn."""
    return _read([(where, offset, offset + size) for where, offset, size in requests])


def _read(requests: list[tuple[Location, int, int | None]]) -> list[bytes | OSError]:
    """``(file, start, end)`` (end None: the file's end) read as :func:`read_ranges` says."""
    results: list[bytes | OSError | None] = [None] * len(requests)
    remote: dict[tuple[str, str], list[int]] = {}
    for i, (where, start, end) in enumerate(requests):
        if not where.is_local and where.cached_file() is None:
            group = (where.protocol, repr(sorted(where.storage_options.items())))
            remote.setdefault(group, []).append(i)
            continue
        try:
            if end is None:
                results[i] = where.read_bytes()[start:]
            else:
                results[i] = where.read_range(start, end - start)
        except OSError as exc:
            results[i] = exc
    for members in remote.values():
        fs = requests[members[0]][0].fs
        keys = [requests[i][0]._key for i in members]
        starts = [requests[i][1] for i in members]
        ends = [requests[i][2] for i in members]
        fetched = fs.cat_ranges(keys, starts, ends, on_error="return")
        for i, key, got in zip(members, keys, fetched, strict=True):
            results[i] = _as_result(got, key)
    return [r if r is not None else FileNotFoundError() for r in results]


def _as_result(got: Any, key: str) -> bytes | OSError:
    if isinstance(got, OSError):
        return got
    if isinstance(got, Exception):
        return OSError(f"{type(got).__name__}: {got}")
    if got is None:
        return FileNotFoundError(key)
    return bytes(got)


class WriteStream:
    """A file being written, streamed: ``write()`` as often as needed, then ``close()``.

    Locally it is a plain file (the shard writer adds its temp name and rename on top).
    Remotely it is an upload in parts of :data:`UPLOAD_BLOCK_BYTES`: the object appears
    under its name, complete, only when :meth:`close` finishes; :meth:`abort` (also
    called when a ``with`` block raises) cancels the upload and leaves nothing. A
    process killed mid-way leaves no object either (an unfinished multipart upload,
    which the bucket's lifecycle rule expires).
    """

    def __init__(self, where: Location) -> None:
        self.location = where
        if where.is_local:
            flags = (
                os.O_WRONLY
                | os.O_CREAT
                | os.O_TRUNC
                | getattr(os, "O_BINARY", 0)
                | getattr(os, "O_CLOEXEC", 0)
            )
            self._fd = os.open(where.path, flags, 0o644)
            self._file: Any = None
        else:
            self._fd = -1
            self._file = where.fs.open(where._key, "wb", block_size=UPLOAD_BLOCK_BYTES)
        self.closed = False

    @property
    def fileno(self) -> int:
        """The OS file descriptor of a local file (-1 for a remote upload)."""
        return self._fd

    def write(self, data: bytes | memoryview) -> None:
        """Append ``data`` (all of it)."""
        if self._file is not None:
            self._file.write(data)
            return
        size = len(data)
        written = os.write(self._fd, data)
        while written < size:  # a short write (rare: signals, some filesystems)
            with memoryview(data) as view:
                written += os.write(self._fd, view[written:])

    def close(self, *, fsync: bool = False) -> None:
        """Finish the file (``fsync``: locally, flush it to disk first)."""
        if self.closed:
            return
        self.closed = True
        if self._file is not None:
            self._file.close()
            return
        try:
            if fsync:
                os.fsync(self._fd)
        finally:
            os.close(self._fd)

    def abort(self) -> None:
        """Stop without finishing: the local file is deleted, the upload cancelled."""
        if self.closed:
            return
        self.closed = True
        if self._file is not None:
            with contextlib.suppress(Exception):
                self._file.discard()
            try:
                # Marked closed, so that garbage collection does not upload the rest.
                self._file.closed = True
            except AttributeError:  # fsspec's in-memory file, listed from the start
                self.location.remove()
            return
        os.close(self._fd)
        self.location.remove()

    def __enter__(self) -> WriteStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
