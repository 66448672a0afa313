"""Adopting TFRecords that recordkit did not write.

A schema describes foreign records through each field's ``keys``, which say where the
codec's wire features are (see :class:`~recordkit.FieldSpec`):

* a key: ``{"": "image/encoded", "height": "image/height"}``;
* a list of keys, the columns of the feature's last dimension, for layouts that store
  them apart: ``{"": ["image/object/bbox/xmin", ".../ymin", ".../xmax", ".../ymax"]}``
  for boxes, ``{"shape": ["height", "width", "depth"]}`` for a raw array's shape, where
  a number is a column the records do not store (``["height", "width", 3]``);
* a number, for a feature the records do not store: ``{"channels": 3}``.

Fields may share a key they read as a column (an image's and a mask's ``height``).
The writer writes such schemas' keys as they are (see ``schema/_foreign_write.py``).

:func:`infer_schema` proposes such a schema by looking at a sample of records. This
module only samples (each key's kind, lengths, first values and range, as
:class:`~recordkit.ForeignKey`), names fields and collects notes: what a layout means
comes from the codecs. Every registered codec, built-in or from a plugin, is asked in
turn through :meth:`recordkit.Codec.adopt` to propose fields for the keys no earlier
codec claimed. It is a proposal: read it, adjust it, and keep it as a schema file next
to the data.
"""

from __future__ import annotations

import re
from typing import Any

from recordkit.codec._adoption import Adoption, ForeignKey, ForeignRecords, LeftOut
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.codec._wire import WireKind
from recordkit.dataset._detect import find_dataset
from recordkit.errors import DatasetError, SchemaError
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import Compression, iter_tfrecords
from recordkit.read._paths import Paths, expand_files, guess_compression, to_locations
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.storage import Location, StorageOptions

__all__ = ["infer_schema"]

_KEEP_VALUES = 64  # values of one key kept per record (for label names)
_KEEP_BYTES = 1 << 16  # bytes of a value kept (enough for an image header)


def infer_schema(
    files: Paths,
    *,
    name: str = "inferred",
    max_records: int = 100,
    compression: str | None = None,
    registry: CodecRegistry | None = None,
    storage_options: StorageOptions | None = None,
) -> Schema:
    """Propose a schema for TFRecord files recordkit did not write.

    :param files: a TFRecord file, a glob pattern, or a list of them; local, or remote
        URLs (``s3://``, ``gs://``, any fsspec protocol).
    :param name: the proposed schema's name.
    :param max_records: how many records to inspect (from the first files on).
    :param compression: ``"GZIP"``, ``"ZLIB"`` or None (guessed from the suffix).
    :param registry: the codecs asked to adopt the keys (default: the installed ones,
        :func:`recordkit.default_registry`), each through :meth:`recordkit.Codec.adopt`
        in their :attr:`~recordkit.Codec.adopt_order`.
    :param storage_options: the fsspec filesystem's options for remote ``files``.

    The schema's fields say in their descriptions what they were inferred from; keys
    that no codec fits are listed in the schema's description. For a recordkit dataset
    (a folder with ``dataset.json``) there is nothing to infer: its schema is returned.
    """
    where = to_locations(files, storage_options)
    found = find_dataset(where[0]) if len(where) == 1 and not where[0].is_pattern else None
    if found is not None:
        return found[1].schema
    paths = expand_files(where)
    comp = Compression.parse(compression) if compression is not None else guess_compression(paths)
    keys, count = _sample(paths, comp, max_records)
    if not keys:
        raise DatasetError(f"no records in {', '.join(str(p) for p in paths[:3])}")
    records = ForeignRecords(keys, count)
    fields: dict[str, FieldSpec] = {}
    notes: list[str] = []
    codecs = sorted(
        (info.codec for info in registry or default_registry()), key=lambda c: (c.adopt_order, c.name)
    )
    for codec in codecs:
        for proposal in codec.adopt(records):
            records.claim(proposal.claims)
            if isinstance(proposal, LeftOut):
                notes.append(proposal.note)
            else:
                field_name = _field_name(proposal.name, fields, codec.name)
                fields[field_name] = _field_spec(codec.name, field_name, proposal)
    for stats in records.unclaimed():
        if not records.flags_an_unclaimed_key(stats.key):
            notes.append(_unread(stats))
    description = f"Proposed by recordkit.infer_schema from {count} records of {len(paths)} file(s)."
    if notes:
        description += "\nKeys left out:" + "".join(f"\n- {note}" for note in notes)
    return Schema(name=name, description=description, fields=fields)


def _field_spec(codec: str, name: str, proposal: Adoption) -> FieldSpec:
    """The proposal as a FieldSpec named ``name``; keys that say what the defaults say
    (the main key equal to the field's name, its presence flag at ``<name>/present``)
    are left out."""
    keys = dict(proposal.keys)
    if keys.get("") == name:
        del keys[""]
    if keys.get("present") == f"{name}/present":
        del keys["present"]
    try:
        return FieldSpec(
            codec=codec,
            options=dict(proposal.options),
            keys=keys,
            description=proposal.description,
            optional=proposal.optional,
            sequence=proposal.sequence,
        )
    except (SchemaError, ValueError) as exc:
        raise SchemaError(f"codec {codec!r} proposed an invalid field for {proposal.claims}: {exc}") from exc


def _unread(stats: ForeignKey) -> str:
    if stats.kind is None:
        return f"{stats.key}: only empty values in the sample (kind unknown)"
    if stats.kind is WireKind.BYTES:
        return f"{stats.key}: bytes no codec reads from these keys alone"
    return f"{stats.key}: {stats.kind.name.lower()} values no codec proposed a field for"


def _sample(paths: list[Location], compression: Compression, limit: int) -> tuple[dict[str, ForeignKey], int]:
    """Each key of the first ``limit`` records, described; and how many records that was."""
    keys: dict[str, ForeignKey] = {}
    count = 0
    for path in paths:
        for _, data in iter_tfrecords(path, compression):
            if count >= limit:
                break
            try:
                example = decode_example(data)
            except ValueError as exc:
                raise DatasetError(
                    f"record {count} is not a tf.train.Example: {exc}", shard=path.name
                ) from None
            for key in example:
                if key not in keys:
                    keys[key] = ForeignKey(
                        key, lengths=[None] * count, values=[None] * count, sizes=[None] * count
                    )
            for key, stats in keys.items():
                if key in example:
                    _observe(stats, *example[key])
                else:
                    stats.lengths.append(None)
                    stats.values.append(None)
                    stats.sizes.append(None)
            count += 1
        if count >= limit:
            break
    return keys, count


def _observe(stats: ForeignKey, kind: WireKind, values: Any) -> None:
    stats.lengths.append(len(values))
    if not len(values):
        stats.empty_seen = True  # an empty Feature reads as any kind
        stats.values.append(None)
        stats.sizes.append(None)
        return
    stats.kinds.add(kind)
    kept = list(values[:_KEEP_VALUES])
    if kind is WireKind.BYTES:
        stats.sizes.append(len(values[0]))
        kept = [value[:_KEEP_BYTES] for value in kept]
    else:
        stats.sizes.append(None)
        stats.low = min(stats.low, float(values.min()))
        stats.high = max(stats.high, float(values.max()))
    stats.values.append(kept)


def _field_name(key: str, taken: dict[str, FieldSpec], fallback: str) -> str:
    """A field name made of the last parts of ``key`` that no field has yet."""
    parts = [re.sub(r"[^A-Za-z0-9_.\-]", "_", p) for p in key.split("/") if p]
    parts = [p if re.match(r"^[A-Za-z_]", p) else f"_{p}" for p in parts] or [fallback]
    for size in range(1, len(parts) + 1):
        candidate = "_".join(parts[-size:])
        if candidate not in taken:
            return candidate
    suffix = 2
    while f"{parts[-1]}_{suffix}" in taken:
        suffix += 1
    return f"{parts[-1]}_{suffix}"
