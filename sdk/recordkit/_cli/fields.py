"""``recordkit add-fields`` and ``recordkit remove-fields``: field groups from the command line.

``add-fields DATASET TABLE --schema FIELDS`` adds the fields of the schema file FIELDS to
a split, from a JSON Lines or CSV table (read as the table sources read it:
:mod:`recordkit.sources._rows`), through :func:`recordkit.add_fields`. Each row holds one
record's added values (a column per field) and says which record it belongs to: by its
position in the split (the ``index`` column, or ``--index-column``), or, with ``--key
FIELD``, by the value of one of the split's fields (a caption, a file name, an id), which
each record must have exactly one row for. Rows may come in any order; every record needs
exactly one row. The rows are held in memory (one per record) while the group is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from recordkit._cli._common import (
    FILE_OR_URL,
    dataset_at,
    local_input,
    reader_path,
    schema_file_at,
    storage_option,
)
from recordkit.dataset._manifest import read_manifest
from recordkit.errors import InputError
from recordkit.sources._rows import read_rows
from recordkit.tools._field_groups import add_fields, remove_fields

__all__ = ["add_fields_command", "remove_fields_command"]


def _rows(table: Path, fields: Sequence[str], column: str) -> dict[Any, tuple[int, dict[str, Any]]]:
    """Each row's added values, by the value of its ``column`` (with its line number);
    an InputError naming the line for a row that lacks it, repeats one, or has a column
    that is neither ``column`` nor a field."""
    rows: dict[Any, tuple[int, dict[str, Any]]] = {}
    for row in read_rows(table):
        if isinstance(row, InputError):
            raise row
        line, cells = row
        if column not in cells:
            raise InputError(
                f"has no {column!r} column, which says which record the row is for",
                file=str(table),
                line=line,
            )
        extra = sorted(set(cells) - {column, *fields})
        if extra:
            raise InputError(
                f"has columns that are not fields of the group: {', '.join(extra)} "
                f"(fields: {', '.join(fields)})",
                file=str(table),
                line=line,
            )
        key = cells.pop(column)
        if isinstance(key, list | dict):
            raise InputError(
                f"its {column!r} is a {type(key).__name__}, not a number or text", file=str(table), line=line
            )
        if key in rows:
            raise InputError(
                f"{column} {key!r} is also on line {rows[key][0]}: one row per record",
                file=str(table),
                line=line,
            )
        rows[key] = (line, cells)
    return rows


def _by_index(
    rows: dict[Any, tuple[int, dict[str, Any]]], total: int, table: Path, column: str
) -> list[dict[str, Any]]:
    """The rows in record order, by their record index."""
    for key, (line, _) in rows.items():
        if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < total:
            raise InputError(
                f"{column} {key!r} is not a record of the split (0 to {total - 1})",
                file=str(table),
                line=line,
            )
    missing = [i for i in range(total) if i not in rows]
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
        raise InputError(f"has no row for records {shown} ({len(missing)} of {total})", file=str(table))
    return [rows[i][1] for i in range(total)]


def _by_key(
    rows: dict[Any, tuple[int, dict[str, Any]]], key: str, table: Path
) -> Callable[[dict[str, Any]], Any]:
    """A function of a record: the row whose key is the record's ``key`` field."""
    wanted = {str(k): cells for k, (_, cells) in rows.items()}
    seen = {"records": 0}

    def values(record: dict[str, Any]) -> Any:
        value = record[key]
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        cells = wanted.get(text)
        if cells is None:
            raise InputError(
                f"has no row whose {key!r} is {text!r} (record {seen['records']} of the split)",
                file=str(table),
            )
        seen["records"] += 1
        return cells

    return values


@click.command("add-fields", short_help="Add fields to a written split, in a field group.")
@click.argument("dataset")
@click.argument("table")
@click.option(
    "--schema", "schema_file", required=True, type=FILE_OR_URL, help="Schema file of the added fields."
)
@click.option("-s", "--split", default="train", show_default=True, help="The split to add the fields to.")
@click.option("--name", help="The field group's name (default: its first field's).")
@click.option("--replace", is_flag=True, help="Replace the field group of that name.")
@click.option("--key", help="Match rows to records by this field of the split (default: by record index).")
@click.option(
    "--index-column", default="index", show_default=True, help="The column holding each row's record index."
)
@storage_option
def add_fields_command(
    dataset: str,
    table: str,
    schema_file: str,
    split: str,
    name: str | None,
    replace: bool,
    key: str | None,
    index_column: str,
    storage_options: tuple[str, ...],
) -> None:
    """Add the fields of --schema to SPLIT of DATASET from TABLE (.jsonl, .csv or .tsv),
    without rewriting its shards.

    Each row of TABLE holds one record's added values, a column per field, and says which
    record it is for: its position in the split (the --index-column, "index"), or, with
    --key FIELD, the value of that field of the split. Every record needs exactly one row.
    """
    root = dataset_at(dataset, storage_options)
    path = local_input(table, "TABLE")
    schema = schema_file_at(schema_file, storage_options)
    fields = list(schema.fields)
    rows = _rows(path, fields, key or index_column)
    url, options = reader_path(root)
    values: Any
    if key is None:
        total = read_manifest(root).split(split).num_records
        values = _by_index(rows, total, path, index_column)
        read_fields = None
    else:
        values, read_fields = _by_key(rows, key, path), [key]
    group = add_fields(
        url,
        split,
        schema,
        values,
        name=name,
        replace=replace,
        read_fields=read_fields,
        storage_options=options,
    )
    records = sum(s.records for s in group.shards)
    click.echo(
        f"added {', '.join(group.fields)} to {records} records of split {split!r} "
        f"in {len(group.shards)} shard{'s' * (len(group.shards) != 1)}"
    )


@click.command("remove-fields", short_help="Remove a field group from a split.")
@click.argument("dataset")
@click.argument("name")
@click.option("-s", "--split", default="train", show_default=True, help="The split to remove the group from.")
@storage_option
def remove_fields_command(dataset: str, name: str, split: str, storage_options: tuple[str, ...]) -> None:
    """Remove the field group NAME from SPLIT of DATASET (its files are deleted)."""
    root = dataset_at(dataset, storage_options)
    url, options = reader_path(root)
    group = remove_fields(url, split, name, storage_options=options)
    click.echo(f"removed field group {name!r} ({', '.join(group.fields)}) from split {split!r}")
