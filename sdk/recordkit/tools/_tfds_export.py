"""A recordkit dataset made readable by TensorFlow Datasets, where it lies.

:func:`write_tfds_metadata` writes the ``features.json`` and ``dataset_info.json`` (and a
``<key>.labels.txt`` per ``ClassLabel``) that ``tfds.builder_from_directory`` reads,
beside the dataset's ``dataset.json``. The shards are not rewritten: each split's
``filepathTemplate`` is recordkit's shard naming (``{SPLIT}-{SHARD_INDEX}.{FILEFORMAT}``,
``train-00000.tfrecord``). It is the reverse of :mod:`recordkit.dataset._tfds`'s
mapping, for the codecs whose stored keys TFDS parses as they are: each codec says so,
and what TFDS expects to parse, through the :class:`~recordkit.TfdsDescribed` capability
(the built-in ones: ``image``, png or jpeg with a fixed channel count, as ``Image``,
which reads the encoded bytes and ignores recordkit's ``<field>/height`` and siblings;
``label`` as ``ClassLabel``, a ``Sequence`` of them for ``multi``; ``text`` as ``Text``;
``scalar`` as a ``Tensor`` of shape ``()`` (not ``float64``, stored as its bits);
``bbox`` stored as TFDS stores boxes, as a ``Sequence`` of ``BBoxFeature`` with its
labels' ``ClassLabel``). :mod:`recordkit.tools._tfds_features` checks each against what
the field stores and nests them by their keys.

Anything else (packed boxes, optional fields, keys TFDS would nest into each other,
compressed shards, shards not named ``{split}-NNNNN.tfrecord``) is refused by field name
and reason with a :class:`~recordkit.errors.DatasetError`, before a file is written.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import Manifest
from recordkit.dataset._tfds import TFDS_FEATURES, TFDS_INFO
from recordkit.errors import DatasetError
from recordkit.schema._card import DatasetCard
from recordkit.tools._tfds_features import described_field, features_dict

__all__ = ["TFDS_FILE_TEMPLATE", "write_tfds_metadata"]

#: recordkit's shard names as a TFDS file-path template.
TFDS_FILE_TEMPLATE = "{SPLIT}-{SHARD_INDEX}.{FILEFORMAT}"


def write_tfds_metadata(path: str | Path, *, registry: CodecRegistry | None = None) -> tuple[Path, ...]:
    """Write the files TFDS needs to read the local dataset at ``path`` (see the module
    docs) and return them; a DatasetError naming the field or shard that has no TFDS
    equivalent, and nothing written, when it cannot. ``registry``: the codecs that
    describe the fields (default: the installed plugins)."""
    root = Path(path)
    manifest = Manifest.load(root)
    if manifest.compression:
        raise DatasetError(
            f"{root}: the shards are {manifest.compression}-compressed; TFDS reads them uncompressed"
        )
    bound = manifest.schema.bind(registry, versions=manifest.codec_versions)
    placed = [feature for field in bound.fields for feature in described_field(field)]
    feature_dict = features_dict(placed)
    splits = [_split(root, name, split) for name, split in manifest.splits.items()]
    info = {
        "fileFormat": "tfrecord",
        "name": re.sub(r"[^a-z0-9_]", "_", manifest.schema.name.lower()),
        "version": manifest.schema.version,
        "description": manifest.schema.description,
        "splits": splits,
        **_card_info(manifest.card),
    }
    written = [_write(root / TFDS_FEATURES, json.dumps(feature_dict, indent=2))]
    for item in placed:  # TFDS names a ClassLabel's file by its key, '/' as '-'
        if item.feature.label_names:
            names = "".join(name + "\n" for name in item.feature.label_names)
            written.append(_write(root / f"{item.key.replace('/', '-')}.labels.txt", names))
    written.append(_write(root / TFDS_INFO, json.dumps(info, indent=2)))  # last: TFDS looks for it
    return tuple(written)


def _split(root: Path, name: str, split: Any) -> dict[str, Any]:
    """The dataset_info.json entry of split ``name``: its shard counts, its shards kept
    where they are (their names must follow recordkit's numbering)."""
    if split.unfinished is not None:
        raise DatasetError(f"{root}: split {name!r} has an unfinished write; finish it first")
    for group_name, group in (split.field_groups or {}).items():  # the first one found
        raise DatasetError(
            f"{root}: split {name!r} keeps the fields {list(group.fields)} of field group "
            f"{group_name!r} in shards of their own, which TFDS does not join to the split's; "
            "write the dataset again with them, or remove them (rk.remove_fields)"
        )
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


def _card_info(card: DatasetCard | None) -> dict[str, Any]:
    """The card's entries TFDS's ``DatasetInfo`` has: its description, citation,
    homepage (``location.urls``) and license (``redistributionInfo.license``)."""
    if card is None:
        return {}
    info: dict[str, Any] = {}
    if card.description:
        info["description"] = card.description
    if card.citation:
        info["citation"] = card.citation
    if card.homepage:
        info["location"] = {"urls": [card.homepage]}
    if card.license:
        info["redistributionInfo"] = {"license": card.license}
    return info


def _write(path: Path, text: str) -> Path:
    """``text`` into ``path`` through a temporary file: a reader never sees half a file."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path
