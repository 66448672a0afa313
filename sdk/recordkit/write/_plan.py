"""What a write starts from, the same for the local writer and the Beam writer: the
arguments in one order, the schema (a file's read with the dataset's storage options),
the manifest of a new dataset (:func:`start_manifest`), and the checks and schema growth
of an append (:func:`plan_append`).

Both writers call these, so a dataset written or appended by either is the same in kind,
and refused for the same reasons, in the same words.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard, cast

from recordkit._version import __version__
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import CodecProvenance, Manifest
from recordkit.errors import DatasetError, IncompatibleSchemaError
from recordkit.format._tfrecord import Compression
from recordkit.schema._card import DatasetCard, checked_card
from recordkit.schema._compatibility import check_compatibility
from recordkit.schema._record_class import Record, schema_of
from recordkit.schema._schema import BoundSchema, Schema, SchemaLike
from recordkit.storage import PathOrUrl, StorageOptions

__all__ = [
    "AppendPlan",
    "RecordKey",
    "codec_provenance",
    "load_schema",
    "path_and_schema",
    "plan_append",
    "start_manifest",
]

#: How to name records in errors and in the rejects file (and, in Beam, to pick their
#: shard): a field's name, or a function of the record.
RecordKey = str | Callable[[Any], Any]

#: The names a schema file is recognised by when a writer's path and schema are both
#: strings (see :func:`path_and_schema`).
_SCHEMA_SUFFIXES = (".yaml", ".yml", ".json")


def path_and_schema(
    path: PathOrUrl, schema: SchemaLike | type[Record]
) -> tuple[PathOrUrl, SchemaLike | type[Record]]:
    """A writer's ``(path, schema)``, also from the order ``write_dataset`` and
    ``WriteDataset`` took first (schema before path).

    The two are swapped when ``path`` is a Schema or a Record class and ``schema`` is
    not, or when both are strings (or paths) and only ``path`` names a schema file
    (``.yaml``, ``.yml``, ``.json``). Two schemas, or a schema that is none of a Schema,
    a Record class or a file, are a TypeError naming the order.
    """
    if (_is_schema_object(path) and not _is_schema_object(schema)) or (
        _names_schema_file(path) and _is_file_name(schema) and not _names_schema_file(schema)
    ):
        path, schema = (
            cast(PathOrUrl, schema),
            cast(SchemaLike | type[Record], path),
        )  # given the other way round
    if _is_schema_object(path) or not (_is_schema_object(schema) or _is_file_name(schema)):
        raise TypeError(
            "a writer takes the dataset's path (a folder or a URL), then its schema (a Schema, a "
            f"Record class or a schema file), not {type(path).__name__} and {type(schema).__name__}"
        )
    return path, schema


def _is_schema_object(value: object) -> bool:
    return isinstance(value, Schema) or (isinstance(value, type) and issubclass(value, Record))


def _is_file_name(value: object) -> TypeGuard[str | os.PathLike[str]]:
    return isinstance(value, (str, os.PathLike))


def _names_schema_file(value: object) -> bool:
    return _is_file_name(value) and os.fspath(value).lower().endswith(_SCHEMA_SUFFIXES)


def load_schema(
    schema: SchemaLike | type[Record], registry: CodecRegistry, storage_options: StorageOptions | None
) -> Schema:
    """The Schema a writer encodes with: ``schema`` itself, a Record class's, or a schema
    file's (a local path or a URL, read with ``storage_options`` as readers read it)."""
    if isinstance(schema, (str, os.PathLike)):
        schema = Schema.load(schema, registry=registry, storage_options=storage_options)
    return schema_of(schema)


def codec_provenance(bound: BoundSchema, registry: CodecRegistry) -> dict[str, CodecProvenance]:
    """Which codec version and distribution encodes each of ``bound``'s codecs (the manifest's ``codecs``)."""
    codecs = {}
    for field in bound.fields:
        info = registry.info(field.spec.codec)
        codecs[info.name] = CodecProvenance(
            version=field.codec.version,
            plugin=info.plugin,
            distribution=info.distribution,
            distribution_version=info.distribution_version,
        )
    return dict(sorted(codecs.items()))


def start_manifest(
    schema: Schema,
    bound: BoundSchema,
    registry: CodecRegistry,
    compression: Compression,
    card: DatasetCard | Mapping[str, Any] | None = None,
) -> Manifest:
    """The manifest of a new dataset of ``schema`` (bound as ``bound``), with no splits yet.

    Its card is ``card`` or else the schema's: the manifest keeps it in its own ``card``
    entry, and the schema it stores has none."""
    manifest = Manifest(
        recordkit_version=__version__,
        schema=schema.model_copy(update={"card": None}),
        fingerprint=bound.fingerprint(),
        codecs=codec_provenance(bound, registry),
        compression=compression.value,
    )
    set_card(manifest, card or schema.card)
    return manifest


def set_card(manifest: Manifest, card: DatasetCard | Mapping[str, Any] | None) -> None:
    """Give ``manifest`` the card ``card``, a DatasetCard or its entries as a mapping
    (None or an empty card: keep the one it has); a bad entry is a SchemaError naming it."""
    checked = checked_card(card)
    if checked is not None and not checked.is_empty:
        manifest.card = checked


@dataclasses.dataclass(frozen=True)
class AppendPlan:
    """How records of a schema join an existing dataset: with the dataset's own
    compression, and its schema grown by the optional fields they add (None: it stays)."""

    compression: Compression
    grown: Schema | None

    def grow(self, manifest: Manifest, bound: BoundSchema, registry: CodecRegistry) -> None:
        """Put the grown schema, its fingerprint and the added fields' codecs in ``manifest``."""
        if self.grown is None:
            return
        codecs = {**codec_provenance(bound, registry), **manifest.codecs}
        manifest.schema_ = self.grown
        manifest.fingerprint = self.grown.bind(registry).fingerprint()
        manifest.codecs = dict(sorted(codecs.items()))


def plan_append(
    existing: Manifest,
    schema: Schema,
    registry: CodecRegistry,
    compression: str | Compression | None,
    *,
    file: str,
    append: bool = True,
) -> AppendPlan:
    """Check that records of ``schema``, compressed as asked (None: as the dataset is),
    may join the dataset ``existing`` describes (at ``file``, named in errors); ``append``
    False words the errors for a resumed write. Raises DatasetError for another
    compression, IncompatibleSchemaError for a schema that stores records otherwise."""
    stored = Compression.parse(existing.compression)
    if compression is not None and Compression.parse(compression) is not stored:
        raise DatasetError(
            f"the dataset is stored with compression {stored.value or 'none'!r}; cannot add "
            f"shards with {Compression.parse(compression).value or 'none'!r}",
            file=file,
        )
    return AppendPlan(stored, _check_schema(existing, schema, registry, append=append))


def _check_schema(
    manifest: Manifest, schema: Schema, registry: CodecRegistry, *, append: bool
) -> Schema | None:
    """Records written with ``schema`` may join the dataset only if every stored record
    stays a valid record of the dataset's schema, and every new record is one.

    That holds under the append rules of :func:`~recordkit.check_compatibility`
    (identical layouts, but for optional fields added or left out) with the same codec
    versions. When the appending schema adds optional fields, the dataset's schema must
    grow: the appending schema, plus the dataset's optional fields it leaves out, is
    returned (None when the stored schema stays as it is). Any other difference raises
    IncompatibleSchemaError naming the fields.
    """
    report = check_compatibility(manifest.schema, schema, mode="append", registry=registry)
    report.raise_for_incompatible()
    # What is left is compatible: optional fields added, or optional fields left out.
    added = [d.field for d in report.differences if d.kind == "added"]
    left_out = [d.field for d in report.differences if d.kind == "removed"]
    stored_now = manifest.schema.bind(registry)
    if stored_now.fingerprint() != manifest.fingerprint:
        differences = []
        for field in stored_now.fields:
            stored = manifest.codecs.get(field.spec.codec)
            if stored is not None and stored.version != field.codec.version:
                differences.append(
                    f"field {field.name!r}: codec {field.spec.codec!r} version {stored.version!r} stored, "
                    f"{field.codec.version!r} installed"
                )
        action = "append to" if append else "resume writing"
        reason = f"cannot {action} the dataset: the records would not be stored as the stored ones are"
        if differences:  # another codec version: readers still read the dataset, say how to grow it
            reason += (
                "; to add records, write the dataset again with the installed codecs "
                "(rk.write_dataset(rk.iter_records(old), new, schema)) and append to the new one"
            )
        else:
            differences.append(f"fingerprint {manifest.fingerprint} stored, {stored_now.fingerprint()} now")
        raise IncompatibleSchemaError(reason, differences=differences)
    if not added:
        return None
    # The appending schema (newer: it has the added fields), keeping the dataset's
    # optional fields that it leaves out.
    fields = {**schema.fields, **{name: manifest.schema.fields[name] for name in left_out}}
    grown = Schema.model_validate({**schema.model_dump(), "fields": fields, "card": None})
    grown.bind(registry)  # refused if an added field's Example keys clash with a left-out field's
    return grown
