"""Helpers the CLI commands share: plain-text tables, the dataset argument, the split option."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import click

from recordkit.dataset._manifest import MANIFEST_FILE

__all__ = ["dataset_root", "one_line", "split_option", "table"]

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


def dataset_root(path: Path) -> Path:
    """The dataset folder that ``path`` names: the folder itself or its ``dataset.json``."""
    return path.parent if path.is_file() and path.name == MANIFEST_FILE else path
