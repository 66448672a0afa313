"""Tables of records: ``jsonl(path)`` and ``csv(path)`` sources.

One record per row (read as :mod:`recordkit.sources._rows` says: UTF-8 with or without
a byte-order mark, large cells, a bad line refused alone). Columns become fields, named
by :func:`~recordkit.sources._rows.field_name_of` (``my caption`` -> ``my_caption``), or
as ``columns`` maps field names to column names to rename or select them.

A file column holds file names relative to ``root`` (default: the table's folder); the
record holds the file's path, so the codec reads the file's own bytes. The file
columns are those ``files`` names, or, without ``files``, those whose sampled values
all look like image or audio file names (text of at most
:data:`~recordkit.sources._paths.MAX_PATH_CHARS` characters, without line breaks,
ending in an image or audio suffix) and either all name files inside ``root`` or, for
a column whose name says it holds files (``image``, ``img``, ``picture``, ``photo``,
``audio``, ``sound``, ``file``, ``path`` in it), at least one does. No other value is
ever tried as a path, so a long caption is only text. Every file name goes through
the sources' containment rule (:meth:`~recordkit.sources.Source.input_path`).

The proposed schema follows the values: image and audio files by their suffix, whole
numbers as int64 scalars, other numbers as float32 scalars, booleans as bool scalars,
anything else as text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec, field_name_problem
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem
from recordkit.sources._media import AUDIO_SUFFIXES, IMAGE_SUFFIXES, audio_field
from recordkit.sources._paths import file_name_like, resolve_inside
from recordkit.sources._rows import csv_header, field_name_of, field_names, read_rows

__all__ = ["FILE_COLUMN_WORDS", "SAMPLE_ROWS", "CsvSource", "JsonlSource", "propose_fields"]

#: Rows looked at to find file columns and to propose field types.
SAMPLE_ROWS = 100
#: Words in a column's name that say it holds files.
FILE_COLUMN_WORDS = ("image", "img", "picture", "photo", "audio", "sound", "file", "path")
MEDIA_SUFFIXES = IMAGE_SUFFIXES | AUDIO_SUFFIXES


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
    """A table of records (see the module docs).

    :param root: the folder file names are relative to (default: the table's folder).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        columns: Mapping[str, str] | None = None,
        files: Sequence[str] | None = None,
        root: str | Path | None = None,
        on_error: OnBadInput = "raise",
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError("no such table file", file=str(self.path))
        self.root = Path(root) if root is not None else self.path.parent
        self.columns = dict(columns) if columns is not None else None
        for field in self.columns or ():
            problem = field_name_problem(field)
            if problem is not None:
                raise ValueError(f"columns: {problem}")
        self._files = [field_name_of(f, 0) for f in files] if files is not None else None
        self._names: tuple[tuple[str, ...], dict[str, str]] = ((), {})
        if self.path.suffix.lower() in (".csv", ".tsv"):
            header = csv_header(self.path)
            if isinstance(header, InputError):
                raise header
            if self.columns is None:
                self._rename(header, 1)

    @property
    def folder(self) -> Path:
        """The folder file names are relative to (``root``)."""
        return self.root

    def _rename(self, columns: Sequence[str], line: int) -> dict[str, str]:
        """The field of each column (cached for the last set of columns seen)."""
        key = tuple(columns)
        if key != self._names[0]:
            try:
                self._names = (key, field_names(key))
            except ValueError as exc:
                raise InputError(str(exc), file=str(self.path), line=line) from None
        return self._names[1]

    def _fields(self, number: int, cells: dict[str, Any]) -> dict[str, Any]:
        """A row's cells by field name; an InputError naming the line when a selected
        column is absent or two columns become one field."""
        if self.columns is None:
            names = self._rename(list(cells), number)
            return {names[column]: value for column, value in cells.items()}
        out: dict[str, Any] = {}
        renamed: dict[str, str] | None = None
        for field, column in self.columns.items():
            if column not in cells:
                renamed = renamed or {field_name_of(c, 0): c for c in cells}
                if column not in renamed:
                    raise InputError(f"the row has no column {column!r}", file=str(self.path), line=number)
                column = renamed[column]
            out[field] = cells[column]
        return out

    def _sample(self) -> list[dict[str, Any]]:
        sample: list[dict[str, Any]] = []
        for row in read_rows(self.path):
            if isinstance(row, InputError):
                continue
            try:
                sample.append(self._fields(*row))
            except InputError:
                continue
            if len(sample) >= SAMPLE_ROWS:
                break
        return sample

    def _existing(self, value: str) -> Path | None:
        """The file ``value`` names inside ``root``, when there is one."""
        try:
            path = resolve_inside(self.root, value, allow_outside_root=self.allow_outside_root)
            return path if path.is_file() else None
        except (ValueError, OSError):
            return None

    def _found_files(self, sample: list[dict[str, Any]]) -> dict[str, Path | None]:
        """The file columns, each with a sampled file that exists (None when none does)."""
        names = self._files if self._files is not None else list(dict.fromkeys(n for r in sample for n in r))
        found: dict[str, Path | None] = {}
        for name in names:
            values = [row.get(name) for row in sample]
            present = [v for v in values if v is not None and v != ""]
            existing = [
                p for p in (self._existing(v) for v in present if isinstance(v, str)) if p is not None
            ]
            if self._files is not None:
                found[name] = existing[0] if existing else None
                continue
            if not present or not all(file_name_like(v, MEDIA_SUFFIXES) for v in present):
                continue
            named = any(word in name.lower() for word in FILE_COLUMN_WORDS)
            if len(existing) == len(present) or (named and existing):
                found[name] = existing[0]
        return found

    def file_columns(self) -> list[str]:
        """The fields that hold file names (see the module docs)."""
        if self._files is None:
            self._files = list(self._found_files(self._sample()))
        return self._files

    def schema(self, name: str | None = None) -> Schema:
        sample = self._sample()
        if not sample:
            raise InputError("the table has no rows to propose a schema from", file=str(self.path))
        found = self._found_files(sample)
        self._files = self._files if self._files is not None else list(found)
        files = {}
        for column, path in found.items():
            first = next((r[column] for r in sample if r.get(column) not in (None, "")), None)
            files[column] = path or self.root / str(first)
        rows = [{k: (None if k in files and v == "" else v) for k, v in r.items()} for r in sample]
        fields = propose_fields(rows, files)
        return Schema(name=name or self.path.stem, fields=fields)

    def scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        file_columns = self.file_columns()
        for row in read_rows(self.path):
            if isinstance(row, InputError):
                yield row
                continue
            number = row[0]
            try:
                record = self._fields(*row)
                for column in file_columns:
                    record[column] = self._file(record.get(column), number, column)
            except InputError as exc:
                yield exc
                continue
            yield SourceItem(f"{self.path.name}:{number}", record)

    def _file(self, value: Any, line: int, column: str) -> Path | None:
        """The checked path of a file column's value (None for an empty cell)."""
        if value is None or value == "":
            return None
        path = self.input_path(self.root, value, file=self.path, line=line, field=column)
        if not path.is_file():
            raise InputError(
                f"no such file {str(value)!r:.300} (relative to {self.root})",
                file=str(self.path),
                line=line,
                field=column,
            )
        return path


class JsonlSource(_TableSource):
    """A JSON Lines file, one record per line (see the module docs)."""

    kind = "jsonl"


class CsvSource(_TableSource):
    """A CSV file with a header row, one record per row (see the module docs)."""

    kind = "csv"
