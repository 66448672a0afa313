"""What a reader was given, as Locations: the one place a user's paths become them.

A reader takes a dataset's folder (or its ``dataset.json``), or TFRecord files: a file,
a glob pattern or a list of them, local paths or URLs (``s3://``, ``gs://``, any fsspec
protocol). :func:`to_locations` turns that into :class:`~recordkit.storage.Location`\\ s
once, at the entry point; everything after asks the Locations, local or remote alike.
:func:`expand_files` finds the files they name (globs expanded here only).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from recordkit.dataset._manifest import MANIFEST_FILE
from recordkit.errors import DatasetError
from recordkit.format._tfrecord import Compression
from recordkit.storage import Location, PathOrUrl, StorageOptions, location

__all__ = ["Paths", "describe", "expand_files", "guess_compression", "to_locations"]

#: What a reader takes: one path or URL (:data:`~recordkit.storage.PathOrUrl`), or a list
#: of them (TFRecord files, or globs).
Paths = PathOrUrl | Sequence[PathOrUrl]


def to_locations(path: Paths, storage_options: StorageOptions | None = None) -> tuple[Location, ...]:
    """Each path or URL of ``path`` as a Location (``storage_options``: for remote URLs)."""
    items = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    return tuple(location(item, storage_options) for item in items)


def describe(where: Sequence[Location]) -> str:
    """How errors name what a reader was given: the path, or how many there were."""
    return str(where[0]) if len(where) == 1 else f"{len(where)} paths"


def expand_files(where: Sequence[Location]) -> list[Location]:
    """The TFRecord files that ``where`` names: each file as it is, each glob pattern as
    the files it matches (sorted). A pattern matching nothing, a local folder (without
    ``dataset.json``) and a file that is not there are DatasetErrors naming it."""
    files: list[Location] = []
    for item in where:
        folder = item.local_path
        if item.is_pattern:
            matches = item.glob()
            if not matches:
                raise DatasetError(f"no {'objects' if folder is None else 'files'} match {item.url!r}")
            files += matches
        elif folder is not None and folder.is_dir():
            raise DatasetError(
                f"{item} is a folder without {MANIFEST_FILE}; "
                "give its TFRecord files (a list or a glob pattern)"
            )
        elif not item.exists():
            raise DatasetError("does not exist", file=str(item))
        else:
            files.append(item)
    if not files:
        raise DatasetError("no files to read")
    return files


def guess_compression(files: Sequence[Location]) -> Compression:
    """The compression the files' suffixes say (``.gz``/``.gzip``, ``.zz``/``.zlib``);
    none unless every file agrees."""
    suffixes = [Path(f.name).suffix for f in files]
    if all(s in (".gz", ".gzip") for s in suffixes):
        return Compression.GZIP
    if all(s in (".zz", ".zlib") for s in suffixes):
        return Compression.ZLIB
    return Compression.NONE
