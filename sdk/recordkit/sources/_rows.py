"""Reading the rows of CSV and JSON Lines files as they come from spreadsheets and
scripts, and naming their columns as fields.

* Text is UTF-8; a byte-order mark (what spreadsheets put first in a "CSV UTF-8"
  file) is dropped. A line that is not UTF-8 is an InputError naming the file and the
  line, for that row only: the rows around it still read.
* A CSV cell may hold up to :data:`MAX_CELL_CHARS` characters (Python's csv module
  stops at 128 KiB); a longer one is an InputError naming its line.
* A JSON line nested more than :data:`~recordkit._limits.MAX_NESTING` levels deep is
  an InputError, as is one Python's parser cannot read (a number of thousands of
  digits, nesting that exhausts its recursion).
* Column names become field names by :func:`field_name_of`; two columns that become
  the same field are an InputError naming both.
"""

from __future__ import annotations

import csv as _csv
import json
import re
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from recordkit._limits import MAX_NESTING, nesting_depth
from recordkit.errors import InputError
from recordkit.schema._fields import FIELD_NAME

__all__ = ["MAX_CELL_CHARS", "Row", "csv_header", "field_name_of", "field_names", "read_rows"]

#: A table row: its line number (1-based, the header is line 1 of a CSV) and its cells.
Row = tuple[int, dict[str, Any]]

#: Longest CSV cell read, in characters (16 MiB of text).
MAX_CELL_CHARS = 16 * 2**20

_BOM = b"\xef\xbb\xbf"


def field_name_of(column: str, position: int) -> str:
    """The field a column becomes: its name, stripped, when that is a valid field name;
    else accents dropped, each run of characters other than ASCII letters, digits,
    ``_ . -`` turned into one ``_`` (``my caption`` -> ``my_caption``), ``_`` trimmed from
    both ends, and ``_`` put in front of a name that starts with a digit, ``.`` or ``-``
    (``2nd score`` -> ``_2nd_score``); a name with nothing left is ``column_<position>``
    (1-based). Letter case is kept."""
    name = column.strip()
    if FIELD_NAME.fullmatch(name):
        return name
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    plain = re.sub(r"[^A-Za-z0-9_.\-]+", "_", plain).strip("_")
    if not plain:
        return f"column_{position}"
    return plain if FIELD_NAME.fullmatch(plain) else f"_{plain}"


def field_names(columns: Sequence[str]) -> dict[str, str]:
    """Each column's field (:func:`field_name_of`); ValueError naming two columns that
    become the same field."""
    out: dict[str, str] = {}
    taken: dict[str, str] = {}
    for position, column in enumerate(columns, start=1):
        field = field_name_of(column, position)
        if field in taken:
            raise ValueError(
                f"the columns {taken[field]!r:.80} and {column!r:.80} both become the field {field!r}; "
                "rename one, or pick columns with columns={field: column}"
            )
        taken[field] = column
        out[column] = field
    return out


def read_rows(path: Path) -> Iterator[Row | InputError]:
    """The rows of a ``.csv``, ``.tsv`` or ``.jsonl`` file (by suffix), each with its line
    number and its cells by column name (stripped); a malformed row as an InputError
    naming the file and line."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return _jsonl_rows(path)
    if suffix in (".csv", ".tsv"):
        return _csv_rows(path, "\t" if suffix == ".tsv" else ",")
    raise InputError("a table must be a .csv, .tsv or .jsonl file", file=str(path))


def _lines(path: Path, bad: dict[int, str]) -> Iterator[str]:
    """The file's lines as text; a line that is not UTF-8 is decoded with replacement
    characters and its number put in ``bad`` with the reason."""
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad[number] = f"is not UTF-8 text (byte {exc.start} of the line)"
                yield raw.decode("utf-8", "replace")


def _jsonl_rows(path: Path) -> Iterator[Row | InputError]:
    bad: dict[int, str] = {}
    for number, text in enumerate(_lines(path, bad), start=1):
        if number in bad:
            yield InputError(bad[number], file=str(path), line=number)
            continue
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            yield InputError(f"not JSON: {exc.msg} (column {exc.colno})", file=str(path), line=number)
            continue
        except RecursionError:
            row = None
        except ValueError as exc:  # a number of more than 4300 digits
            yield InputError(f"not JSON recordkit reads: {exc}", file=str(path), line=number)
            continue
        if row is None or nesting_depth(row) > MAX_NESTING:
            yield InputError(f"nested more than {MAX_NESTING} levels deep", file=str(path), line=number)
            continue
        if not isinstance(row, dict):
            yield InputError(
                f"a row must be a JSON object, not {type(row).__name__}", file=str(path), line=number
            )
            continue
        yield number, {str(name).strip(): value for name, value in row.items()}


def csv_header(path: Path) -> list[str] | InputError:
    """A CSV's column names (stripped), or an InputError saying why there are none."""
    rows = _csv_rows(path, "\t" if path.suffix.lower() == ".tsv" else ",", header_only=True)
    first = next(rows, None)
    if isinstance(first, InputError):
        return first
    return list(first[1]) if first is not None else InputError("the table has no header", file=str(path))


def _csv_rows(path: Path, delimiter: str, *, header_only: bool = False) -> Iterator[Row | InputError]:
    if _csv.field_size_limit() < MAX_CELL_CHARS:
        _csv.field_size_limit(MAX_CELL_CHARS)
    bad: dict[int, str] = {}
    reader = _csv.reader(_lines(path, bad), delimiter=delimiter)
    cells = _next_cells(reader, path)
    if cells is None:
        yield InputError("the table is empty (no header row)", file=str(path), line=1)
        return
    if isinstance(cells, InputError) or 1 in bad:
        yield cells if isinstance(cells, InputError) else InputError(bad[1], file=str(path), line=1)
        return
    names = [name.strip() for name in cells]
    twice = [name for i, name in enumerate(names) if name in names[:i]]
    if twice:
        yield InputError(f"the header names the column {twice[0]!r:.80} twice", file=str(path), line=1)
        return
    if header_only:
        yield 1, dict.fromkeys(names)
        return
    last = reader.line_num
    while True:
        cells = _next_cells(reader, path)
        if cells is None:
            return
        first, last = last + 1, reader.line_num
        if isinstance(cells, InputError):
            yield cells
            continue
        broken = [bad[n] for n in range(first, last + 1) if n in bad]
        if broken:
            yield InputError(broken[0], file=str(path), line=first)
            continue
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(names):
            missing = names[len(cells) :]
            reason = (
                f"the row has {len(cells)} cells, the header {len(names)}: missing "
                + ", ".join(repr(m) for m in missing)
                if len(cells) < len(names)
                else f"the row has {len(cells)} cells, the header only {len(names)}"
            )
            yield InputError(reason, file=str(path), line=first)
            continue
        yield first, {name: _cell(cell) for name, cell in zip(names, cells, strict=True)}


def _next_cells(reader: Iterator[list[str]], path: Path) -> list[str] | InputError | None:
    """The next row's cells, None at the end, or an InputError for a row the csv module
    refuses (a cell over the size limit, a NUL byte)."""
    try:
        return next(reader)
    except StopIteration:
        return None
    except _csv.Error as exc:
        line = getattr(reader, "line_num", None)
        return InputError(f"not CSV recordkit reads: {exc}", file=str(path), line=line)


def _cell(text: str) -> Any:
    """A CSV cell as the number it spells, or the text itself."""
    stripped = text.strip()
    if len(stripped) < 64:
        for kind in (int, float):
            try:
                return kind(stripped)
            except ValueError:
                pass
    return text
