"""A recordkit dataset handed over as Parquet or as a Hugging Face dataset.

:func:`export_parquet` writes each split as one Parquet file in Hugging Face's layout
(``<split>-00000-of-00001.parquet``), with the dataset's features in the file's
``huggingface`` metadata, as ``Dataset.to_parquet`` stores them: images and audio as
``struct<bytes, path>`` holding the stored encoded bytes byte for byte, class labels as
int64 ids with their names in the features. So ``datasets.load_dataset("parquet",
data_dir=out)`` reads the images as ``Image`` and the labels as ``ClassLabel``, and
pyarrow, pandas, DuckDB or Spark read the columns. It needs pyarrow
(``pip install 'recordkit[parquet]'``); records are written a row group at a time.

:func:`to_hf` gives a ``datasets.DatasetDict`` with the same features, in memory
(``pip install 'recordkit[hf]'``); for a dataset larger than memory export Parquet and
load that, which ``datasets`` memory-maps.

A field's feature comes from its codec (the :class:`~recordkit.HfDescribed` capability:
``image``, ``audio`` with WAV or FLAC stored, ``label``, ``scalar``, ``text``, ``tensor``
with a shape); an optional field is a column with nulls, a sequence field a ``List`` of
its codec's feature (``List(Image())``, ``List(Value("string"))``); a field stored under
another tool's keys (``keys:`` in its schema) as any other. A field whose codec
has no Hugging Face feature (boxes, masks) or whose options have none is refused by name
with a :class:`~recordkit.errors.DatasetError` before anything is written; select the
fields to hand over with ``fields=``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from recordkit.codec._capabilities import HfDescribed, HfFeature
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import Manifest
from recordkit.errors import DatasetError, RecordkitError
from recordkit.read._iter_records import raw_records
from recordkit.read._numpy_decode import decode_record_numpy
from recordkit.read._open import OpenedDataset, open_dataset
from recordkit.schema._bound import BoundField
from recordkit.sources._arrow_tables import import_extra

__all__ = ["ROWS_PER_GROUP", "export_parquet", "hf_features", "to_hf"]

#: Records per Parquet row group (and per Arrow batch built in memory).
ROWS_PER_GROUP = 1000


def hf_features(
    path: str | Path, fields: Sequence[str] | None = None, *, registry: CodecRegistry | None = None
) -> dict[str, Any]:
    """The Hugging Face features (``datasets.Features.to_dict()`` form) of the dataset
    at ``path``, or of its ``fields``; a DatasetError naming a field that has none."""
    opened = open_dataset(path, _split_names(path)[0], fields, registry=registry)
    return {field.name: dict(_feature(field).entry) for field in opened.fields}


def export_parquet(
    path: str | Path,
    out: str | Path,
    *,
    splits: Sequence[str] | None = None,
    fields: Sequence[str] | None = None,
    rows_per_group: int = ROWS_PER_GROUP,
    overwrite: bool = False,
    registry: CodecRegistry | None = None,
) -> tuple[Path, ...]:
    """Write the ``splits`` (default: all) of the local dataset at ``path`` as Parquet
    files in the folder ``out`` (see the module docs) and return them. Each file is
    written under a temporary name and renamed when complete; a file already there is a
    DatasetError, before anything is written, unless ``overwrite``."""
    pa = import_extra("pyarrow", "pyarrow", "parquet", "exporting Parquet")
    pq = import_extra("pyarrow.parquet", "pyarrow", "parquet", "exporting Parquet")
    if rows_per_group < 1:
        raise ValueError(f"rows_per_group must be at least 1, not {rows_per_group}")
    opened = _opened(path, splits, fields, registry)
    folder = Path(out)
    targets = {split: folder / f"{split}-00000-of-00001.parquet" for split in opened}
    there = [target.name for target in targets.values() if target.exists()]
    if there and not overwrite:
        raise DatasetError(
            f"{folder}: holds {', '.join(there)} already; pass overwrite=True "
            "(recordkit parquet --overwrite) to replace it"
        )
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for split, dataset in opened.items():
        features, schema = _arrow_schema(pa, dataset)
        target = targets[split]
        temporary = target.with_name(f".{target.name}.tmp")
        with pq.ParquetWriter(temporary, schema) as writer:
            for batch in _batches(pa, dataset, features, schema, rows_per_group):
                writer.write_table(batch, row_group_size=rows_per_group)
        os.replace(temporary, target)
        written.append(target)
    return tuple(written)


def to_hf(
    path: str | Path,
    *,
    splits: Sequence[str] | None = None,
    fields: Sequence[str] | None = None,
    registry: CodecRegistry | None = None,
) -> Any:
    """The ``splits`` (default: all) of the dataset at ``path`` as a
    ``datasets.DatasetDict`` in memory, with the matching features (see the module
    docs)."""
    datasets = import_extra("datasets", "datasets", "hf", "recordkit.to_hf")
    pa = import_extra("pyarrow", "pyarrow", "hf", "recordkit.to_hf")
    out = {}
    for split, dataset in _opened(path, splits, fields, registry).items():
        features, schema = _arrow_schema(pa, dataset)
        table = pa.Table.from_batches(
            [b for t in _batches(pa, dataset, features, schema, ROWS_PER_GROUP) for b in t.to_batches()],
            schema=schema,
        )
        info = datasets.DatasetInfo(features=datasets.Features.from_dict(_entries(features)))
        out[split] = datasets.Dataset(table, info=info, split=split)
    return datasets.DatasetDict(out)


def _split_names(path: str | Path) -> list[str]:
    return list(Manifest.load(Path(path)).splits)


def _opened(
    path: str | Path,
    splits: Sequence[str] | None,
    fields: Sequence[str] | None,
    registry: CodecRegistry | None,
) -> dict[str, OpenedDataset]:
    """Each split opened, every field's feature checked before anything is written."""
    names = list(fields) if fields is not None else None
    chosen = list(splits) if splits is not None else _split_names(path)
    opened = {split: open_dataset(path, split, names, registry=registry) for split in chosen}
    for dataset in opened.values():
        for field in dataset.fields:
            _feature(field)
    return opened


def _feature(field: BoundField) -> HfFeature:
    """The Hugging Face feature of ``field``, from its codec; a DatasetError when it has none."""
    spec = field.spec
    if not isinstance(field.codec, HfDescribed):
        raise _refused(field, "the codec does not describe its fields as Hugging Face features")
    try:
        feature = field.codec.hf_feature()
    except ValueError as exc:
        raise _refused(field, str(exc)) from None
    if spec.sequence:  # a List of the feature; the value is made for each element
        return HfFeature({"feature": dict(feature.entry), "_type": "List"}, feature.value)
    return feature


def _refused(field: BoundField, why: str) -> DatasetError:
    return DatasetError(
        f"codec {field.spec.codec!r} has no Hugging Face feature recordkit can hand over: {why} "
        "(leave the field out with fields=)",
        field=field.name,
    )


def _entries(features: Mapping[str, HfFeature]) -> dict[str, Any]:
    return {name: dict(feature.entry) for name, feature in features.items()}


def _arrow_type(pa: Any, entry: Mapping[str, Any]) -> Any:
    """The Arrow type Hugging Face stores a feature's values in."""
    kind = entry.get("_type")
    if kind in ("Image", "Audio"):
        return pa.struct({"bytes": pa.binary(), "path": pa.string()})
    if kind == "ClassLabel":
        return pa.int64()
    if kind == "Value":
        return pa.type_for_alias(str(entry["dtype"]))
    if kind == "List":
        inner = _arrow_type(pa, entry["feature"])
        length = entry.get("length", -1)
        return pa.list_(inner) if length in (None, -1) else pa.list_(inner, int(length))
    raise ValueError(f"no Arrow type for the feature {kind!r}")


def _arrow_schema(pa: Any, dataset: OpenedDataset) -> tuple[dict[str, HfFeature], Any]:
    """The features of the dataset's fields and the Arrow schema of their columns, with
    the features in its ``huggingface`` metadata."""
    features = {field.name: _feature(field) for field in dataset.fields}
    columns = [
        pa.field(name, _arrow_type(pa, feature.entry), nullable=True) for name, feature in features.items()
    ]
    metadata = {"huggingface": json.dumps({"info": {"features": _entries(features)}})}
    return features, pa.schema(columns, metadata=metadata)


def _batches(
    pa: Any, dataset: OpenedDataset, features: Mapping[str, HfFeature], schema: Any, rows: int
) -> Iterator[Any]:
    """The split's records as Arrow tables of up to ``rows`` rows, each field's values
    made by its feature from the stored wire values (pixels and samples not decoded)."""
    fields = dataset.stored_fields.fields
    decoders = {name: feature.value for name, feature in features.items()}
    pending: list[dict[str, Any]] = []
    for index, shard, offset, data in raw_records(dataset, dataset.shards, None, True, None, 0):
        try:
            pending.append(decode_record_numpy(fields, data, index=index, decoders=decoders))
        except RecordkitError as exc:
            raise exc.with_context(shard=shard.name, offset=offset) from None
        if len(pending) == rows:
            yield pa.Table.from_pylist(pending, schema=schema)
            pending = []
    if pending:
        yield pa.Table.from_pylist(pending, schema=schema)
