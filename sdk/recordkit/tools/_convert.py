"""Rewrite an adopted dataset (a folder TFDS prepared) as a native recordkit dataset.

The result has what every recordkit dataset has (``dataset.json`` with the schema,
per-shard sha256, the record-offset index) and reads without the TFDS files. How each
field is stored is its codec's to say (``to_native``, see
:class:`~recordkit.codec._capabilities.Convertible`); the built-in codecs store: encoded
images are stored byte for byte (the image codec's ``format: keep``), with their
height, width and channels now stored beside them; boxes are stored in recordkit's
canonical order (readers still get ``yxyx``, the schema's format) and tensors as raw
bytes (not TFDS's int64 or float lists); every other field
is written from the values the numpy reader decodes. Audio samples stay the list of
numbers TFDS stored unless ``audio`` asks for WAV or FLAC files (16-bit PCM: exact for
16-bit samples).

The new dataset never touches the TFDS folder: ``out`` equal to it, holding it or inside
it is refused before anything is written, and a conversion that fails leaves nothing
at ``out`` (see :mod:`recordkit.tools._output`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from recordkit.codec._capabilities import Convertible, NativeField, NativeRequest
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import Manifest
from recordkit.dataset._tfds import load_tfds
from recordkit.errors import DatasetError
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import iter_tfrecords
from recordkit.read._shortcuts import iter_records
from recordkit.schema._card import DatasetCard, card_with
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.storage import PathOrUrl, StorageOptions, location
from recordkit.tools._output import FreshOutput, refuse_overlap
from recordkit.write._writer import DatasetWriter

__all__ = ["AUDIO_FORMATS", "AudioFormat", "convert_dataset", "native_fields", "native_schema"]

#: What ``convert`` may turn audio samples stored as numbers into.
AudioFormat = Literal["wav", "flac"]
AUDIO_FORMATS: tuple[AudioFormat, ...] = ("wav", "flac")


def native_fields(
    adopted: Schema, *, audio: AudioFormat | None = None, registry: CodecRegistry | None = None
) -> dict[str, NativeField]:
    """How each field of ``adopted`` is stored natively: its codec's answer
    (:class:`~recordkit.codec._capabilities.Convertible`), or its options as they are, its
    values decoded and encoded again, when the codec has none. DatasetError naming the
    field when its codec cannot meet the request (``audio`` for samples without a rate)."""
    codecs = registry or default_registry()
    native: dict[str, NativeField] = {}
    for name, spec in adopted.fields.items():
        codec = codecs.create(spec.codec, spec.options)
        if not isinstance(codec, Convertible):
            native[name] = NativeField(dict(spec.options))
            continue
        request = NativeRequest(options=spec.options, description=spec.description, audio=audio)
        try:
            native[name] = codec.to_native(request)
        except ValueError as exc:
            raise DatasetError(f"field {name!r}: {exc}") from None
    return native


def native_schema(
    adopted: Schema, *, audio: AudioFormat | None = None, registry: CodecRegistry | None = None
) -> Schema:
    """``adopted`` (a schema that reads foreign keys) as a schema recordkit writes;
    ``audio`` (wav or flac) stores audio samples kept as numbers as encoded files."""
    return _with_native(adopted, native_fields(adopted, audio=audio, registry=registry))


def _with_native(adopted: Schema, native: dict[str, NativeField]) -> Schema:
    fields = {
        name: FieldSpec(**spec.model_dump(exclude={"keys", "options"}), options=native[name].options)
        for name, spec in adopted.fields.items()
    }
    return Schema(name=adopted.name, version=adopted.version, description=adopted.description, fields=fields)


def convert_dataset(
    source: str | Path,
    out: PathOrUrl,
    *,
    audio: AudioFormat | None = None,
    progress: bool | None = False,
    storage_options: StorageOptions | None = None,
    card: DatasetCard | Mapping[str, Any] | None = None,
) -> Manifest:
    """Write every split of the (local) TFDS folder ``source`` to the new dataset ``out``
    (a local folder, or a remote URL with its ``storage_options``); ``audio`` (``"wav"``
    or ``"flac"``) turns audio samples stored as numbers into audio files of that format
    (default: kept as numbers). The new dataset's card is the folder's (its citation,
    homepage and license, as :func:`~recordkit.open_tfds` reads them), with each entry
    ``card`` gives in place of its own; a bad entry is a SchemaError naming it, before
    anything is written."""
    where = location(out, storage_options)
    refuse_overlap(where, {"the TFDS folder": Path(source)})
    view = load_tfds(source)
    adopted_card = card_with(view.manifest.card, card)  # checked before anything is written
    native = native_fields(view.schema, audio=audio)
    schema = _with_native(view.schema, native)
    copied = [name for name, field in native.items() if field.copy_stored]
    others = [name for name in view.schema.fields if name not in copied]
    fresh = FreshOutput.at(where)
    writer = DatasetWriter(
        out,
        schema,
        progress=progress,
        storage_options=storage_options,
        card=adopted_card,
    )
    try:
        with writer:
            for split, info in view.manifest.splits.items():
                raw = _stored_values(view.root, [s.file for s in info.shards], view.schema, copied)
                decoded = iter_records(view.root, split=split, fields=others) if others else None
                for encoded in raw:
                    record: dict[str, Any] = dict(next(decoded)) if decoded is not None else {}
                    record.update(encoded)
                    writer.write(record, split=split)
    except BaseException:
        if fresh is not None:
            fresh.undo()
        raise
    return writer.manifest


def _stored_values(
    root: Path, files: list[str], schema: Schema, names: list[str]
) -> Iterator[dict[str, Any]]:
    """Each record's values of the fields ``names`` (encoded images), by field, as
    stored (never decoded)."""
    keys = {name: str(schema.fields[name].keys.get("", name)) for name in names}
    for file in files:
        for _, data in iter_tfrecords(location(root / file)):
            example = decode_example(data)
            record: dict[str, Any] = {}
            for name, key in keys.items():
                values: Any = example[key][1] if key in example else []
                sequence = schema.fields[name].sequence
                record[name] = list(values) if sequence else (values[0] if len(values) else None)
            yield record
