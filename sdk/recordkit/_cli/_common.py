"""Helpers the CLI commands share: plain-text tables, the dataset argument, the split option."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import click

from recordkit.dataset._manifest import MANIFEST_FILE
from recordkit.storage import Location, is_remote, location

__all__ = ["dataset_root", "one_line", "remote_root", "split_option", "storage_option", "table"]

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


def remote_root(dataset: str, storage_options: Sequence[str]) -> Path | Location:
    """The dataset that the DATASET argument names: a local folder (or its dataset.json)
    as :func:`dataset_root` gives it, or a remote URL's Location."""
    if not is_remote(dataset):
        return dataset_root(Path(dataset))
    root = location(dataset, parse_storage_options(storage_options))
    return root.parent if root.name == MANIFEST_FILE else root


def dataset_root(path: Path) -> Path:
    """The dataset folder that ``path`` names: the folder itself or its ``dataset.json``."""
    return path.parent if path.is_file() and path.name == MANIFEST_FILE else path
