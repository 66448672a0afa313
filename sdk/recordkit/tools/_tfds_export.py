"""A recordkit dataset made readable by TensorFlow Datasets, where it lies.

:func:`write_tfds_metadata` writes the ``features.json`` and ``dataset_info.json`` (and a
``<field>.labels.txt`` per named label) that ``tfds.builder_from_directory`` reads,
beside the dataset's ``dataset.json``. The shards are not rewritten: each split's
``filepathTemplate`` is recordkit's shard naming (``{SPLIT}-{SHARD_INDEX}.{FILEFORMAT}``,
``train-00000.tfrecord``). It is the reverse of :mod:`recordkit.dataset._tfds`'s
mapping, for the codecs whose stored keys TFDS parses as they are: each codec says so
through the :class:`~recordkit.TfdsDescribed` capability (the built-in ones: ``image``,
png or jpeg with a fixed channel count, as ``Image``, which reads the encoded bytes and
ignores recordkit's ``<field>/height`` and siblings; ``label``, one class per record, as
``ClassLabel``; ``text`` as ``Text``).

Anything else (boxes, whose packed bytes TFDS cannot parse; optional or sequence fields,
mapped keys, compressed shards, shards not named ``{split}-NNNNN.tfrecord``) is refused
by field name and reason with a :class:`~recordkit.errors.DatasetError`, before a file is
written.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from recordkit.codec._capabilities import TfdsDescribed
from recordkit.codec._codec import Codec
from recordkit.dataset._manifest import Manifest
from recordkit.dataset._tfds import TFDS_FEATURES, TFDS_INFO
from recordkit.errors import DatasetError
from recordkit.schema._fields import FieldSpec

__all__ = ["TFDS_FILE_TEMPLATE", "write_tfds_metadata"]

#: recordkit's shard names as a TFDS file-path template.
TFDS_FILE_TEMPLATE = "{SPLIT}-{SHARD_INDEX}.{FILEFORMAT}"


def write_tfds_metadata(path: str | Path) -> tuple[Path, ...]:
    """Write the files TFDS needs to read the local dataset at ``path`` (see the module
    docs) and return them; a DatasetError naming the field or shard that has no TFDS
    equivalent, and nothing written, when it cannot."""
    root = Path(path)
    manifest = Manifest.load(root)
    if manifest.compression:
        raise DatasetError(
            f"{root}: the shards are {manifest.compression}-compressed; TFDS reads them uncompressed"
        )
    features: dict[str, Any] = {}
    label_files: dict[str, list[str]] = {}
    bound = manifest.schema.bind(versions=manifest.codec_versions)
    for field in bound.fields:
        features[field.name] = _feature(field.name, field.spec, field.codec, label_files)
    splits = [_split(root, name, split) for name, split in manifest.splits.items()]
    info = {
        "fileFormat": "tfrecord",
        "name": re.sub(r"[^a-z0-9_]", "_", manifest.schema.name.lower()),
        "version": manifest.schema.version,
        "description": manifest.schema.description,
        "splits": splits,
    }
    feature_dict = {
        "featuresDict": {"features": features},
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
    }
    written = [_write(root / TFDS_FEATURES, json.dumps(feature_dict, indent=2))]
    for label_field, names in label_files.items():
        written.append(_write(root / f"{label_field}.labels.txt", "".join(n + "\n" for n in names)))
    written.append(_write(root / TFDS_INFO, json.dumps(info, indent=2)))  # last: TFDS looks for it
    return tuple(written)


def _feature(
    name: str, spec: FieldSpec, codec: Codec[Any], label_files: dict[str, list[str]]
) -> dict[str, Any]:
    """The features.json entry of field ``name``, from its codec's
    :class:`~recordkit.TfdsDescribed` capability; a DatasetError when it has none."""
    if spec.optional or spec.sequence or spec.keys:
        what = "optional" if spec.optional else "a sequence" if spec.sequence else "stored under mapped keys"
        raise _refused(name, spec.codec, f"it is {what}")
    if not isinstance(codec, TfdsDescribed):
        raise _refused(name, spec.codec, "the codec does not describe its fields for TFDS")
    try:
        feature = codec.tfds_feature()
    except ValueError as exc:
        raise _refused(name, spec.codec, str(exc)) from None
    if feature.label_names:
        label_files[name] = list(feature.label_names)
    return dict(feature.entry)


def _refused(field: str, codec: str, why: str) -> DatasetError:
    return DatasetError(f"codec {codec!r} has no TFDS feature recordkit can describe: {why}", field=field)


def _split(root: Path, name: str, split: Any) -> dict[str, Any]:
    """The dataset_info.json entry of split ``name``: its shard counts, its shards kept
    where they are (their names must follow recordkit's numbering)."""
    if split.unfinished is not None:
        raise DatasetError(f"{root}: split {name!r} has an unfinished write; finish it first")
    for i, shard in enumerate(split.shards):
        expected = f"{name}-{i:05d}.tfrecord"
        if shard.file != expected:
            raise DatasetError(
                f"shard {shard.file!r} of split {name!r} is not named {expected!r}, as TFDS's template "
                f"{TFDS_FILE_TEMPLATE} needs (TFDS would have to read renamed copies)",
                shard=shard.file,
            )
    return {
        "filepathTemplate": TFDS_FILE_TEMPLATE,
        "name": name,
        "numBytes": str(sum(s.bytes for s in split.shards)),
        "shardLengths": [str(s.records) for s in split.shards],
    }


def _write(path: Path, text: str) -> Path:
    """``text`` into ``path`` through a temporary file: a reader never sees half a file."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path
