"""Helpers the CLI commands share: plain-text tables, the split option, and the paths
commands take, each a local path or a remote URL (``s3://``, ``gs://``, any fsspec
protocol) with ``--storage-option KEY=VALUE``: a dataset (:func:`dataset_at`), a schema
(:func:`schema_at`: :func:`manifest_at` when it is a dataset's, else
:func:`schema_file_at`), a dataset to write (:func:`output_at`), and inputs that must
be local (:func:`local_input`). Every command resolves its paths here, so that local and
remote differ only in the storage layer (:mod:`recordkit.storage`)."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import click

from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import MANIFEST_FILE, Manifest, read_manifest
from recordkit.schema._schema import Schema
from recordkit.storage import Location, StorageOptions, is_remote, location
from recordkit.tools._common import (
    dataset_location,
    describe_error,
    in_cli_words,
    is_local_dir,
    one_line,
)

__all__ = [
    "FILE_OR_URL",
    "FILE_TO_WRITE",
    "FOLDER_OR_URL",
    "FOLDER_TO_WRITE",
    "PATH_OR_URL",
    "LocalPathType",
    "PathOrUrlType",
    "checked_path",
    "dataset_at",
    "describe_error",
    "has_manifest",
    "in_cli_words",
    "local_input",
    "manifest_at",
    "one_line",
    "output_at",
    "parse_storage_options",
    "reader_path",
    "schema_at",
    "schema_file_at",
    "split_option",
    "storage_option",
    "table",
]

#: Suffixes of schema files (a URL ending in one names a schema file, not a dataset).
SCHEMA_SUFFIXES = (".yaml", ".yml", ".json")

#: ``--storage-option KEY=VALUE``, repeatable: the fsspec options of a remote dataset URL
#: (values are JSON where they parse as JSON: ``anon=true``, ``endpoint_url=http://...``).
storage_option = click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option of the remote filesystem (s3://, gs:// ...), e.g. endpoint_url=http://127.0.0.1:9000; "
    "repeatable. Credentials also come from the clients' usual environment variables.",
)

#: ``-s/--split NAME``, repeatable, for the commands that look at a dataset's splits.
split_option = click.option(
    "-s",
    "--split",
    "splits",
    multiple=True,
    metavar="NAME",
    help="Only this split (repeat for several; default: every split).",
)


def table(rows: Sequence[Sequence[str]], *, right: Collection[int] = ()) -> str:
    """``rows`` (the first is the header) as aligned columns under a dashed rule.

    Columns whose index is in ``right`` (numbers) are right-aligned.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines = [line(row) for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def parse_storage_options(values: Sequence[str]) -> dict[str, Any]:
    """``["key=value", ...]`` as a dict (values parsed as JSON when they are JSON)."""
    options: dict[str, Any] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--storage-option")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def checked_path(
    value: str, what: str, *, exists: bool = True, file_okay: bool = True, dir_okay: bool = True
) -> Path:
    """``value`` as a local path, checked: an OSError naming it (shown as one
    ``Error: <Type>: ...`` line, status 1) when it is missing (``exists``), a folder where a
    file is expected (not ``dir_okay``), or a file where a folder is (not ``file_okay``)."""
    path = Path(value)
    if not path.exists():
        if exists:
            raise FileNotFoundError(errno.ENOENT, f"{os.strerror(errno.ENOENT)} ({what})", value)
        return path
    if path.is_dir() and not dir_okay:
        raise IsADirectoryError(errno.EISDIR, f"{os.strerror(errno.EISDIR)} ({what} must be a file)", value)
    if not path.is_dir() and not file_okay:
        raise NotADirectoryError(
            errno.ENOTDIR, f"{os.strerror(errno.ENOTDIR)} ({what} must be a folder)", value
        )
    return path


class LocalPathType(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.2 on; recordkit takes 8.1
    """A local path, checked by :func:`checked_path` (an OS error, one line, not click's
    three-line usage error: the path is wrong, not the command line)."""

    name = "path"

    def __init__(self, *, exists: bool = True, file_okay: bool = True, dir_okay: bool = True) -> None:
        self.exists, self.file_okay, self.dir_okay = exists, file_okay, dir_okay

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        what = param.human_readable_name if param is not None else "the path"
        if param is not None and isinstance(param, click.Option):
            what = param.opts[-1]
        return checked_path(
            str(value), what, exists=self.exists, file_okay=self.file_okay, dir_okay=self.dir_okay
        )


class PathOrUrlType(LocalPathType):
    """A local path, checked as :class:`LocalPathType` checks it, or a remote URL, passed
    on as it is (the storage layer reports what is not there)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:  # type: ignore[override]  # a URL stays text
        if isinstance(value, str) and is_remote(value):
            return value
        return str(super().convert(value, param, ctx))


#: A file or folder that must exist, or a URL.
PATH_OR_URL = PathOrUrlType()
#: A file (not a folder) that must exist, or a URL.
FILE_OR_URL = PathOrUrlType(dir_okay=False)
#: A folder (not a file) that must exist, or a URL.
FOLDER_OR_URL = PathOrUrlType(file_okay=False)
#: A local file to write (it may exist, as a file, not as a folder).
FILE_TO_WRITE = LocalPathType(exists=False, dir_okay=False)
#: A local folder to write into (it may exist, as a folder, not as a file).
FOLDER_TO_WRITE = LocalPathType(exists=False, file_okay=False)


def dataset_at(dataset: str, storage_options: Sequence[str]) -> Location:
    """The dataset that a DATASET argument names, local or remote (see :func:`dataset_location`)."""
    return dataset_location(dataset, parse_storage_options(storage_options) if is_remote(dataset) else None)


def has_manifest(root: Location) -> bool:
    """Whether ``root`` holds a ``dataset.json`` (one HEAD request for a remote dataset)."""
    manifest = root.join(MANIFEST_FILE)
    return manifest.exists() and not is_local_dir(manifest)


def reader_path(root: Location) -> tuple[str, StorageOptions | None]:
    """``root`` as the readers (``iter_records``, ``open_dataset``) take it: its path or
    URL, with its storage options."""
    return root.url, root.storage_options or None


def schema_at(
    path_or_url: str, storage_options: Sequence[str], registry: CodecRegistry | None = None
) -> Schema:
    """The schema that a SCHEMA argument names: a schema file (YAML or JSON), or a
    dataset (its folder or its dataset.json) whose manifest holds one; local or remote."""
    manifest = manifest_at(path_or_url, storage_options)
    return manifest.schema if manifest is not None else schema_file_at(path_or_url, storage_options, registry)


def schema_file_at(
    path_or_url: str, storage_options: Sequence[str], registry: CodecRegistry | None = None
) -> Schema:
    """The schema file a SCHEMA argument names, once :func:`manifest_at` found no dataset
    there; local or remote."""
    if is_remote(path_or_url):
        options = parse_storage_options(storage_options)
        return Schema.load(path_or_url, registry=registry, storage_options=options)
    return Schema.load(Path(path_or_url), registry=registry)


def manifest_at(path_or_url: str, storage_options: Sequence[str]) -> Manifest | None:
    """The manifest of the dataset that a SCHEMA argument names (its folder or its
    dataset.json, local or remote), or None when it names a schema file."""
    if is_remote(path_or_url):
        if path_or_url.endswith(SCHEMA_SUFFIXES) and not path_or_url.endswith(MANIFEST_FILE):
            return None
        return read_manifest(dataset_at(path_or_url, storage_options))
    path = checked_path(path_or_url, "SCHEMA")
    if path.is_dir() or path.name == MANIFEST_FILE:
        return read_manifest(dataset_at(str(path), ()))
    return None


def output_at(out: str, storage_options: Sequence[str]) -> Location:
    """Where a command writes a dataset: a local folder or a remote URL."""
    return location(out, parse_storage_options(storage_options) if is_remote(out) else None)


def local_input(value: str, what: str) -> Path:
    """``value`` as a local path; a remote URL is a usage error saying why (the reader
    of ``what`` goes through local files, not through the storage layer)."""
    if is_remote(value):
        raise click.UsageError(
            f"{what} {value!r} must be a local path: it is read through local files, not from "
            "object storage; copy it to a local folder first (the output may be a URL)"
        )
    return Path(value)
