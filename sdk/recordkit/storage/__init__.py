"""Where a dataset's bytes live: a local folder or any fsspec URL (``s3://``, ``gs://``,
``memory://`` ...), behind one small API.

:func:`location` turns a path or URL plus ``storage_options`` into a :class:`Location`;
its methods are every operation the SDK needs (open for streamed reading and writing,
exists, list, size, remove, write a whole object in one request, join, read a byte
range). :func:`read_versioned` and :func:`write_if_version` replace a remote object only
if no other writer replaced it meanwhile (how a writer's commit detects another). Local
paths keep the exact local behaviour (atomic rename, fsync); remote ones go through
fsspec, whose clients (s3fs, gcsfs) are imported only when a remote URL is used, one
client per process. :class:`RangeReader` reads records by position from local or remote
shards, the one place random access tells the two apart. A :class:`ShardCache` keeps
remote shards on local disk after their first read (checked against their sha256).
"""

from __future__ import annotations

from recordkit.storage._cache import CACHE_OPTION, DEFAULT_CACHE_BYTES, ShardCache
from recordkit.storage._conditional import VersionConflictError, Versioned, read_versioned, write_if_version
from recordkit.storage._local import fsync_dir
from recordkit.storage._location import (
    Location,
    PathOrUrl,
    StorageOptions,
    WriteStream,
    is_remote,
    location,
    read_files,
    read_ranges,
)
from recordkit.storage._ranges import DEFAULT_MAX_OPEN_FILES, FileCache, RangeReader

__all__ = [
    "CACHE_OPTION",
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_MAX_OPEN_FILES",
    "FileCache",
    "Location",
    "PathOrUrl",
    "RangeReader",
    "ShardCache",
    "StorageOptions",
    "VersionConflictError",
    "Versioned",
    "WriteStream",
    "fsync_dir",
    "is_remote",
    "location",
    "read_files",
    "read_ranges",
    "read_versioned",
    "write_if_version",
]
