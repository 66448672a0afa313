"""Rewrite an adopted dataset (a folder TFDS prepared) as a native recordkit dataset.

The result has what every recordkit dataset has (``dataset.json`` with the schema,
per-shard sha256, the record-offset index) and reads without the TFDS files. Encoded
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

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from recordkit.dataset._manifest import Manifest
from recordkit.dataset._tfds import load_tfds
from recordkit.errors import DatasetError
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import iter_tfrecords
from recordkit.read._iter_records import iter_records
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.storage import PathOrUrl, StorageOptions, location
from recordkit.tools._output import FreshOutput, refuse_overlap
from recordkit.write._writer import DatasetWriter

__all__ = ["AUDIO_FORMATS", "AudioFormat", "convert_dataset", "native_schema"]

#: What ``convert`` may turn audio samples stored as numbers into.
AudioFormat = Literal["wav", "flac"]
AUDIO_FORMATS: tuple[AudioFormat, ...] = ("wav", "flac")


def native_schema(adopted: Schema, *, audio: AudioFormat | None = None) -> Schema:
    """``adopted`` (a schema that reads foreign keys) as a schema recordkit writes;
    ``audio`` (wav or flac) stores audio samples kept as numbers as encoded files."""
    fields: dict[str, FieldSpec] = {}
    for name, spec in adopted.fields.items():
        options = dict(spec.options)
        if spec.codec == "image":
            options.pop("sizes", None)
            options["format"] = "keep"
            if options.get("channels") is None:
                options.pop("channels", None)
        if spec.codec in ("bbox", "tensor"):
            # Canonical storage: boxes in recordkit's order, tensors as raw bytes.
            options.pop("stored", None)
        if spec.codec == "audio" and audio is not None:
            options.pop("stored", None)
            options["format"] = audio
        if audio is not None and spec.codec == "scalar" and "Audio" in spec.description:
            raise DatasetError(
                f"field {name!r}: TFDS recorded no sample rate for this audio, so it cannot be stored as "
                f"{audio}; convert without --audio to keep its samples as numbers"
            )
        data = spec.model_dump(exclude={"keys", "options"})
        fields[name] = FieldSpec(**data, options=options)
    return Schema(name=adopted.name, version=adopted.version, description=adopted.description, fields=fields)


def convert_dataset(
    source: str | Path,
    out: PathOrUrl,
    *,
    audio: AudioFormat | None = None,
    progress: bool | None = False,
    storage_options: StorageOptions | None = None,
) -> Manifest:
    """Write every split of the (local) TFDS folder ``source`` to the new dataset ``out``
    (a local folder, or a remote URL with its ``storage_options``); ``audio`` (``"wav"``
    or ``"flac"``) turns audio samples stored as numbers into audio files of that format
    (default: kept as numbers)."""
    where = location(out, storage_options)
    refuse_overlap(where, {"the TFDS folder": Path(source)})
    view = load_tfds(source)
    schema = native_schema(view.schema, audio=audio)
    images = [name for name, spec in view.schema.fields.items() if spec.codec == "image"]
    others = [name for name in view.schema.fields if name not in images]
    fresh = FreshOutput.at(where)
    writer = DatasetWriter(out, schema, progress=progress, storage_options=storage_options)
    try:
        with writer:
            for split, info in view.manifest.splits.items():
                raw = _raw_images(view.root, [s.file for s in info.shards], view.schema, images)
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


def _raw_images(root: Path, files: list[str], schema: Schema, names: list[str]) -> Iterator[dict[str, Any]]:
    """Each record's encoded image bytes, by field, as stored (never decoded)."""
    keys = {name: str(schema.fields[name].keys.get("", name)) for name in names}
    for file in files:
        for _, data in iter_tfrecords(root / file):
            example = decode_example(data)
            record: dict[str, Any] = {}
            for name, key in keys.items():
                values: Any = example[key][1] if key in example else []
                sequence = schema.fields[name].sequence
                record[name] = list(values) if sequence else (values[0] if len(values) else None)
            yield record
