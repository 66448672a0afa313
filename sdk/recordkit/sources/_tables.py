"""Tables of records: ``jsonl(path)`` and ``csv(path)`` sources, and the row readers
that the folder sources use for their metadata files.

One record per row. Columns become fields (``columns`` maps field names to column
names to rename or select them); a column whose values are file names (``files``, or
found: every value of the first rows names an existing file) is resolved relative to
the table's folder, and the file's path is what the record holds, so the codec reads
the file's own bytes. The proposed schema follows the values: image and audio files by
their suffix, whole numbers as int64 scalars, other numbers as float32 scalars,
booleans as bool scalars, anything else as text.
"""

from __future__ import annotations

import csv as _csv
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem
from recordkit.sources._media import AUDIO_SUFFIXES, IMAGE_SUFFIXES, audio_field

__all__ = ["CsvSource", "JsonlSource", "Row", "propose_fields", "read_rows"]

#: A table row: its line number (1-based, the header is line 1 of a CSV) and its cells.
Row = tuple[int, dict[str, Any]]

#: Rows looked at to find file columns and to propose field types.
SAMPLE_ROWS = 100


def read_rows(path: Path) -> Iterator[Row | InputError]:
    """The rows of a ``.csv`` or ``.jsonl`` file (by suffix), each with its line number;
    a malformed row as an InputError naming the file and line."""
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return _jsonl_rows(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        return _csv_rows(path)
    raise InputError("a table must be a .csv, .tsv or .jsonl file", file=str(path))


def _jsonl_rows(path: Path) -> Iterator[Row | InputError]:
    with path.open(encoding="utf-8") as stream:
        for number, text in enumerate(stream, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                yield InputError(f"not JSON: {exc.msg} (column {exc.colno})", file=str(path), line=number)
                continue
            if not isinstance(row, dict):
                yield InputError(
                    f"a row must be a JSON object, not {type(row).__name__}", file=str(path), line=number
                )
                continue
            yield number, row


def _csv_rows(path: Path) -> Iterator[Row | InputError]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with path.open(encoding="utf-8", newline="") as stream:
        reader = _csv.reader(stream, delimiter=delimiter)
        header = next(reader, None)
        if header is None:
            yield InputError("the table is empty (no header row)", file=str(path), line=1)
            return
        names = [name.strip() for name in header]
        for cells in reader:
            number = reader.line_num
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
                yield InputError(reason, file=str(path), line=number)
                continue
            yield number, {name: _cell(cell) for name, cell in zip(names, cells, strict=True)}


def _cell(text: str) -> Any:
    """A CSV cell as the number it spells, or the text itself."""
    stripped = text.strip()
    for kind in (int, float):
        try:
            return kind(stripped)
        except ValueError:
            pass
    return text


def propose_fields(rows: Sequence[dict[str, Any]], files: Mapping[str, Path]) -> dict[str, FieldSpec]:
    """Field specs for the columns of ``rows``; ``files`` maps file columns to a sample
    file (audio fields need its sample rate)."""
    fields: dict[str, FieldSpec] = {}
    columns = list(dict.fromkeys(name for row in rows for name in row))
    for name in columns:
        values = [row.get(name) for row in rows]
        optional = any(v is None for v in values)
        present = [v for v in values if v is not None]
        if name in files:
            spec = _file_field(files[name])
        elif present and all(isinstance(v, bool) for v in present):
            spec = FieldSpec(codec="scalar", options={"dtype": "bool"})
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            spec = FieldSpec(codec="scalar", options={"dtype": "int64"})
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            spec = FieldSpec(codec="scalar", options={"dtype": "float32"})
        elif present and all(isinstance(v, list) for v in present):
            spec = FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [None]})
        else:
            spec = FieldSpec(codec="text")
        fields[name] = spec.model_copy(update={"optional": optional}) if optional else spec
    return fields


def _file_field(sample: Path) -> FieldSpec:
    suffix = sample.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return FieldSpec(codec="image", options={"format": "keep"})
    if suffix in AUDIO_SUFFIXES:
        return audio_field(sample)
    raise InputError(
        "a file column holds files recordkit has no codec for by their suffix (images: "
        f"{', '.join(sorted(IMAGE_SUFFIXES))}; audio: {', '.join(sorted(AUDIO_SUFFIXES))})",
        file=str(sample),
    )


class _TableSource(Source):
    """A table of records (see the module docs)."""

    def __init__(
        self,
        path: str | Path,
        *,
        columns: Mapping[str, str] | None = None,
        files: Sequence[str] | None = None,
        on_error: OnBadInput = "raise",
    ) -> None:
        super().__init__(on_error=on_error)
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError("no such table file", file=str(self.path))
        self.folder = self.path.parent
        self.columns = dict(columns) if columns is not None else None
        self._files = list(files) if files is not None else None

    def _sample(self) -> list[dict[str, Any]]:
        sample: list[dict[str, Any]] = []
        for row in read_rows(self.path):
            if isinstance(row, InputError):
                continue
            sample.append(self._select(row[1]))
            if len(sample) >= SAMPLE_ROWS:
                break
        return sample

    def _select(self, row: dict[str, Any]) -> dict[str, Any]:
        if self.columns is None:
            return row
        return {field: row.get(column) for field, column in self.columns.items()}

    def file_columns(self) -> list[str]:
        """The fields that hold file names: those given, or those whose every sampled
        value names an existing file next to the table."""
        if self._files is not None:
            return self._files
        sample = self._sample()
        found = []
        for name in dict.fromkeys(n for row in sample for n in row):
            values = [row.get(name) for row in sample]
            if values and all(isinstance(v, str) and v and (self.folder / v).is_file() for v in values):
                found.append(name)
        self._files = found
        return found

    def schema(self, name: str | None = None) -> Schema:
        sample = self._sample()
        if not sample:
            raise InputError("the table has no rows to propose a schema from", file=str(self.path))
        files = {c: self.folder / str(sample[0][c]) for c in self.file_columns()}
        fields = propose_fields(sample, files)
        return Schema(name=name or self.path.stem, fields=fields)

    def _scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        file_columns = self.file_columns()
        wanted = list(self.columns) if self.columns is not None else None
        for row in read_rows(self.path):
            if isinstance(row, InputError):
                yield row
                continue
            number, cells = row
            if self.columns is not None:
                absent = [c for c in self.columns.values() if c not in cells]
                if absent:
                    yield InputError(
                        f"the row has no column {', '.join(repr(c) for c in absent)}",
                        file=str(self.path),
                        line=number,
                    )
                    continue
            record = self._select(cells)
            problem = None
            for column in file_columns:
                value = record.get(column)
                if value is None:
                    continue
                target = self.folder / str(value)
                if not target.is_file():
                    problem = InputError(
                        f"column {column!r}: no such file {value!r} (relative to {self.folder})",
                        file=str(self.path),
                        line=number,
                    )
                    break
                record[column] = target
            if problem is not None:
                yield problem
                continue
            if wanted is not None:
                record = {name: record[name] for name in wanted}
            yield SourceItem(f"{self.path.name}:{number}", record)


class JsonlSource(_TableSource):
    """A JSON Lines file, one record per line (see the module docs)."""

    kind = "jsonl"


class CsvSource(_TableSource):
    """A CSV file with a header row, one record per row (see the module docs)."""

    kind = "csv"
