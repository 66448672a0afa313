"""Helpers the CLI commands share: plain-text tables, the split option, and the paths
commands take, each a local path or a remote URL (``s3://``, ``gs://``, any fsspec
protocol) with ``--storage-option KEY=VALUE``: a dataset (:func:`dataset_at`), a schema
(:func:`schema_at`: :func:`manifest_at` when it is a dataset's, else
:func:`schema_file_at`), a dataset to write (:func:`output_at`), and inputs that must
be local (:func:`local_input`). Every command resolves its paths here, so that local and
remote differ only in the storage layer (:mod:`recordkit.storage`)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import click

from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import MANIFEST_FILE, Manifest
from recordkit.schema._schema import Schema
from recordkit.storage import Location, StorageOptions, is_remote, location

__all__ = [
    "FILE_OR_URL",
    "FOLDER_OR_URL",
    "PATH_OR_URL",
    "PathOrUrlType",
    "dataset_at",
    "dataset_root",
    "has_manifest",
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


def one_line(message: str) -> str:
    """``message`` on one line: its lines, stripped of list markers, joined by "; "
    (a line that introduces a list, ending in ":", is followed by a space only)."""
    lines = [line.strip().removeprefix("- ") for line in message.splitlines()]
    joined = ""
    for line in filter(None, lines):
        joined += (" " if joined.endswith(":") else "; " if joined else "") + line
    return joined


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


class PathOrUrlType(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.2 on; recordkit takes 8.1
    """A local path, checked as ``click.Path`` checks it (``exists``, ``file_okay``,
    ``dir_okay``), or a remote URL, passed on as it is (the storage layer reports what
    is not there)."""

    name = "path"

    def __init__(self, *, exists: bool = True, file_okay: bool = True, dir_okay: bool = True) -> None:
        self._local = click.Path(exists=exists, file_okay=file_okay, dir_okay=dir_okay)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if isinstance(value, str) and is_remote(value):
            return value
        return str(self._local.convert(value, param, ctx))


#: A file or folder that must exist, or a URL.
PATH_OR_URL = PathOrUrlType()
#: A file (not a folder) that must exist, or a URL.
FILE_OR_URL = PathOrUrlType(dir_okay=False)
#: A folder (not a file) that must exist, or a URL.
FOLDER_OR_URL = PathOrUrlType(file_okay=False)


def dataset_at(dataset: str, storage_options: Sequence[str]) -> Path | Location:
    """The dataset that a DATASET argument names: a local folder (or its dataset.json)
    as :func:`dataset_root` gives it, or a remote URL's Location (its dataset.json's
    URL names its folder too)."""
    if not is_remote(dataset):
        return dataset_root(Path(dataset))
    root = location(dataset, parse_storage_options(storage_options))
    return root.parent if root.name == MANIFEST_FILE else root


def has_manifest(root: Path | Location) -> bool:
    """Whether ``root`` holds a ``dataset.json`` (one HEAD request for a remote dataset)."""
    manifest = location(root).join(MANIFEST_FILE)
    return manifest.path.is_file() if manifest.is_local else manifest.exists()


def reader_path(root: Path | Location) -> tuple[str | Path, StorageOptions | None]:
    """``root`` as the readers (``iter_records``, ``open_dataset``) take it: a local
    path, or a URL with its storage options."""
    if isinstance(root, Location):
        return (root.path, None) if root.is_local else (root.url, root.storage_options)
    return root, None


def schema_at(source: str, storage_options: Sequence[str], registry: CodecRegistry | None = None) -> Schema:
    """The schema that a SCHEMA argument names: a schema file (YAML or JSON), or a
    dataset (its folder or its dataset.json) whose manifest holds one; local or remote."""
    manifest = manifest_at(source, storage_options)
    return manifest.schema if manifest is not None else schema_file_at(source, storage_options, registry)


def schema_file_at(
    source: str, storage_options: Sequence[str], registry: CodecRegistry | None = None
) -> Schema:
    """The schema file a SCHEMA argument names, once :func:`manifest_at` found no dataset
    there; local or remote."""
    if is_remote(source):
        options = parse_storage_options(storage_options)
        return Schema.load(source, registry=registry, storage_options=options)
    return Schema.load(Path(source), registry=registry)


def manifest_at(source: str, storage_options: Sequence[str]) -> Manifest | None:
    """The manifest of the dataset that a SCHEMA argument names (its folder or its
    dataset.json, local or remote), or None when it names a schema file."""
    if is_remote(source):
        if source.endswith(SCHEMA_SUFFIXES) and not source.endswith(MANIFEST_FILE):
            return None
        return Manifest.load(dataset_at(source, storage_options))
    path = Path(source)
    if not path.exists():
        raise click.BadParameter(f"{source!r} does not exist", param_hint="SCHEMA")
    if path.is_dir() or path.name == MANIFEST_FILE:
        return Manifest.load(dataset_root(path))
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


def dataset_root(path: Path) -> Path:
    """The dataset folder that ``path`` names: the folder itself or its ``dataset.json``."""
    return path.parent if path.is_file() and path.name == MANIFEST_FILE else path
