"""Columnar tables as records: Parquet files and Hugging Face datasets.

``parquet(path)`` reads a Parquet file, or a folder of them (``*.parquet``, in name
order), a row group's batch at a time (``pyarrow.parquet.ParquetFile.iter_batches``),
never the whole file at once; it needs pyarrow (``pip install 'recordkit[parquet]'``).
``hf_dataset(dataset)`` reads a ``datasets.Dataset`` in memory or a folder written by
``Dataset.save_to_disk`` (``pip install 'recordkit[hf]'``), through its Arrow table:
images and audio come as the encoded bytes the dataset holds, never decoded, so
neither Pillow's nor torchcodec's decoding runs (Hugging Face's ``Audio`` decodes
through torchcodec and FFmpeg; recordkit keeps the WAV or FLAC bytes instead).

Columns map onto fields as :mod:`recordkit.sources._hf_features` says, from the
dataset's features (a Parquet file written by ``datasets`` carries them in its
metadata) or from the Arrow types. A column holding nulls is an optional field. A
record's key is ``<file>:<row>`` (the row counted from 0 across the file's row groups)
or ``row <n>`` for a dataset in memory; a bad value is an InputError naming it and the
column.
"""

from __future__ import annotations

import abc
import importlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from recordkit.errors import InputError, MissingExtraError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Source, SourceItem
from recordkit.sources._hf_features import arrow_entry, field_of_entry

__all__ = ["BATCH_ROWS", "HfDatasetSource", "ParquetSource", "import_extra"]

#: Rows converted to Python values at a time.
BATCH_ROWS = 256
_MEDIA = {"Image", "Audio"}


def import_extra(module: str, package: str, extra: str, purpose: str) -> Any:
    """``module``, imported when first needed; a MissingExtraError naming ``extra`` when
    ``package`` is not installed (the extras are optional, and recordkit imports
    without them)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(package, extra, purpose=purpose) from exc


class _ArrowSource(Source):
    """Records from Arrow batches, with the features of their columns."""

    def __init__(self, *, on_error: OnBadInput, allow_outside_root: bool) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        self._fields: dict[str, FieldSpec] | None = None
        #: The columns of Image and Audio features (structs of bytes and path).
        self._media: set[str] = set()

    # What a subclass gives: the name in errors, the features (None: from the Arrow
    # types), the Arrow schema, the columns with nulls, and the batches with their keys.
    name: str

    @abc.abstractmethod
    def _features(self) -> Mapping[str, Any] | None:
        """See the comment above."""

    @abc.abstractmethod
    def _arrow_schema(self) -> Any:
        """See the comment above."""

    @abc.abstractmethod
    def _nullable(self) -> set[str]:
        """See the comment above."""

    @abc.abstractmethod
    def _batches(self) -> Iterator[tuple[str, int, Any]]:
        """``(file, first row, pyarrow.RecordBatch or Table)`` in order; a part of a file
        that does not read as an InputError in the batch's place (the file's rows
        after it are not read)."""

    def fields(self) -> dict[str, FieldSpec]:
        """The proposed field of every column (worked out once, from the first batch's
        first non-null values where the features do not say enough)."""
        if self._fields is None:
            arrow_schema = self._arrow_schema()
            features = dict(self._features() or {})
            samples = self._samples(arrow_schema.names)
            nullable = self._nullable()
            fields: dict[str, FieldSpec] = {}
            for column in arrow_schema.names:
                entry = features.get(column)
                if entry is None:
                    column_type = arrow_schema.field(column).type
                    entry = arrow_entry(column, column_type, samples.get(column), file=self.name)
                spec = field_of_entry(column, entry, samples.get(column), file=self.name)
                inner = entry.get("feature")
                kinds = {entry.get("_type"), inner.get("_type") if isinstance(inner, Mapping) else None}
                if kinds & _MEDIA:
                    self._media.add(column)
                fields[column] = spec.model_copy(update={"optional": True}) if column in nullable else spec
            self._fields = fields
        return dict(self._fields)

    def _samples(self, columns: Sequence[str]) -> dict[str, Any]:
        """A non-null value of each column, from the first batch that has one."""
        found: dict[str, Any] = {}
        for _, _, batch in self._batches():
            if isinstance(batch, InputError):
                break
            for column in columns:
                if column not in found:
                    values = [v for v in batch.column(column).to_pylist() if v is not None]
                    if values:
                        found[column] = values[0]
            if len(found) == len(columns):
                break
        return found

    def schema(self, name: str | None = None) -> Schema:
        return Schema(name=name or "dataset", fields=self.fields())

    def scan(self) -> Iterator[SourceItem | InputError]:
        fields = self.fields()
        for file, first, batch in self._batches():
            if isinstance(batch, InputError):
                yield batch
                continue
            for offset, row in enumerate(batch.to_pylist()):
                key = f"{file}:{first + offset}"
                try:
                    record = {name: self._value(name, fields[name], row.get(name)) for name in fields}
                except InputError as exc:
                    exc.context = exc.context.merged(file=file, entry=f"row {first + offset}")
                    yield exc
                    continue
                yield SourceItem(key, record)

    def _value(self, name: str, spec: FieldSpec, value: Any) -> Any:
        """A cell as its codec takes it: an image or audio struct as its bytes."""
        if value is None or name not in self._media:
            return value
        return [_bytes_of(name, v) for v in value] if spec.sequence else _bytes_of(name, value)


def _bytes_of(name: str, value: Any) -> bytes:
    data = value.get("bytes") if isinstance(value, dict) else value
    if not isinstance(data, bytes):
        path = value.get("path") if isinstance(value, dict) else None
        raise InputError(
            "holds no encoded bytes"
            + (f" (only the path {path!r:.200}, which recordkit does not follow)" if path else ""),
            field=name,
        )
    return data


class ParquetSource(_ArrowSource):
    """A Parquet file, or a folder of ``*.parquet`` files sharing one schema (see the
    module docs)."""

    kind = "parquet"

    def __init__(
        self,
        path: str | Path,
        *,
        batch_rows: int = BATCH_ROWS,
        on_error: OnBadInput = "raise",
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        self._pq = import_extra("pyarrow.parquet", "pyarrow", "parquet", "reading Parquet")
        self.path = Path(path)
        self.name = str(self.path)
        self.files = sorted(self.path.glob("*.parquet")) if self.path.is_dir() else [self.path]
        if not self.files or not self.files[0].is_file():
            raise InputError("no Parquet file here" if self.path.is_dir() else "no such file", file=str(path))
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
        self.batch_rows = batch_rows
        first = self._open(self.files[0])
        self._schema = first.schema_arrow
        for file in self.files[1:]:
            other = self._open(file).schema_arrow
            if not other.equals(self._schema, check_metadata=False):
                raise InputError(f"its columns differ from {self.files[0].name}'s", file=str(file))

    def _open(self, file: Path) -> Any:
        try:
            return self._pq.ParquetFile(file)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InputError(f"not a Parquet file pyarrow reads: {exc}", file=str(file)) from None

    def _features(self) -> Mapping[str, Any] | None:
        metadata = self._schema.metadata or {}
        raw = metadata.get(b"huggingface")
        if raw is None:
            return None
        try:
            features = json.loads(raw)["info"]["features"]
        except (ValueError, KeyError, TypeError):
            raise InputError(
                "its 'huggingface' metadata holds no features (info.features)", file=str(self.files[0])
            ) from None
        if not isinstance(features, dict):
            raise InputError("its Hugging Face features are not a mapping", file=str(self.files[0]))
        return features

    def _arrow_schema(self) -> Any:
        return self._schema

    def _nullable(self) -> set[str]:
        """The columns holding a null, from the row groups' statistics where a column is
        one leaf (or an image's ``bytes``); a list column is read alone to count them (a
        leaf's nulls there include empty lists)."""
        nullable: set[str] = set()
        listed: set[str] = set()
        for file in self.files:
            metadata = self._open(file).metadata
            for group in range(metadata.num_row_groups):
                row_group = metadata.row_group(group)
                for i in range(row_group.num_columns):
                    column = row_group.column(i)
                    top = column.path_in_schema.split(".")[0]
                    if column.path_in_schema not in (top, f"{top}.bytes"):
                        listed.add(top)
                        continue
                    statistics = column.statistics
                    if statistics is None or not statistics.has_null_count or statistics.null_count:
                        nullable.add(top)
        for file in self.files:
            for top in sorted(listed - nullable):
                batches = self._open(file).iter_batches(batch_size=self.batch_rows, columns=[top])
                if any(batch.column(0).null_count for batch in batches):
                    nullable.add(top)
        return nullable & set(self._schema.names)

    def _batches(self) -> Iterator[tuple[str, int, Any]]:
        for file in self.files:
            parquet = self._open(file)
            first = 0
            try:
                for batch in parquet.iter_batches(batch_size=self.batch_rows):
                    yield str(file), first, batch
                    first += batch.num_rows
            except (OSError, ValueError) as exc:
                reason = f"the rows from row {first} on do not read (the rows before were read): {exc}"
                yield str(file), first, InputError(reason, file=str(file), entry=f"row {first}")


class HfDatasetSource(_ArrowSource):
    """A Hugging Face ``datasets.Dataset``, or the folder ``save_to_disk`` wrote (with
    ``split`` naming one of a ``DatasetDict``'s splits); see the module docs."""

    kind = "hf"

    def __init__(
        self,
        dataset: Any,
        *,
        split: str | None = None,
        batch_rows: int = BATCH_ROWS,
        on_error: OnBadInput = "raise",
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        datasets = import_extra("datasets", "datasets", "hf", "reading a Hugging Face dataset")
        if isinstance(dataset, (datasets.Dataset, datasets.DatasetDict)):
            self.name = "dataset"
        else:  # a folder save_to_disk wrote (a str or os.PathLike; anything else: TypeError)
            folder = Path(dataset)
            self.name = str(folder)
            if not folder.is_dir():
                raise InputError("no such folder (a folder Dataset.save_to_disk wrote)", file=self.name)
            try:
                dataset = datasets.load_from_disk(str(folder))
            except (FileNotFoundError, ValueError, KeyError) as exc:
                raise InputError(f"not a dataset save_to_disk wrote: {exc}", file=self.name) from None
        if isinstance(dataset, datasets.DatasetDict):
            if split is None or split not in dataset:
                raise InputError(
                    f"holds the splits {', '.join(dataset)}: name one with split=", file=self.name
                )
            dataset = dataset[split]
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
        self.dataset = dataset
        self.batch_rows = batch_rows

    def _features(self) -> Mapping[str, Any] | None:
        features: dict[str, Any] = self.dataset.features.to_dict()
        return features

    def _arrow_schema(self) -> Any:
        return self.dataset.data.schema

    def _nullable(self) -> set[str]:
        table = self.dataset.data
        return {name for name in table.column_names if table.column(name).null_count}

    def _batches(self) -> Iterator[tuple[str, int, Any]]:
        first = 0
        for table in self.dataset.with_format("arrow").iter(batch_size=self.batch_rows):
            yield self.name, first, table
            first += table.num_rows
