"""A dataset's MLCommons Croissant 1.0 description (JSON-LD), from its ``dataset.json``,
or of a folder TFDS prepared, opened in place.

Croissant is the metadata format TFDS, the Hugging Face Hub and Kaggle publish for their
datasets. recordkit's description holds the dataset's card (name, description, license,
citation, homepage, authors, version), a ``cr:FileObject`` per shard with its sha256, a
``cr:FileSet`` per split gathering them, and a ``cr:RecordSet`` per split whose fields
are the schema's, each with the data type its codec names (:class:`~recordkit.DataTyped`)
and the Example key it is extracted from (the field's own, or the one its schema maps).

A split's field groups (:func:`recordkit.add_fields`) are file sets and record sets of
their own (``train-<group>-shards``, ``train-<group>``), whose description says how their
records align with the split's: Croissant joins record sets by a key's value, and a
group's records are matched to the split's by their place. A TFDS folder's shards have
no sha256 in its files: it is computed from the shards (so describing one reads it once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recordkit.codec._capabilities import DataTyped
from recordkit.codec._plugins import default_registry
from recordkit.dataset._detect import load_manifest
from recordkit.dataset._manifest import MANIFEST_FILE, ShardInfo
from recordkit.dataset._split_groups import bind_split, split_schema
from recordkit.read._corruption import file_sha256
from recordkit.schema._bound import BoundField
from recordkit.storage import Location, PathOrUrl, StorageOptions, location

__all__ = ["CROISSANT_CONTEXT", "croissant"]

#: The JSON-LD context of Croissant 1.0 (its specification's, section "@context").
CROISSANT_CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
TFRECORD = "application/x-tfrecord"


def _data_type(codec: object) -> str:
    """The Croissant data type a codec names (:class:`~recordkit.DataTyped`), else ``sc:Text``."""
    return codec.data_type() if isinstance(codec, DataTyped) else "sc:Text"


def croissant(path: PathOrUrl, storage_options: StorageOptions | None = None) -> dict[str, Any]:
    """The Croissant 1.0 JSON-LD description of the dataset at ``path`` (a recordkit
    dataset, or a local folder TFDS prepared), as a dict (``json.dumps`` it to a file).
    Files are named relative to the dataset's folder."""
    root = location(path, storage_options)
    root = root.parent if root.name == MANIFEST_FILE else root
    manifest = load_manifest(root)
    schema = manifest.schema
    card = manifest.card
    dataset: dict[str, Any] = {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": schema.name,
        "description": (card.description if card and card.description else schema.description)
        or f"The recordkit dataset {schema.name}",
        "version": schema.version,
        "datePublished": manifest.created[:10],
    }
    if card is not None:
        if card.license:
            dataset["license"] = card.license
        if card.citation:
            dataset["citeAs"] = card.citation
        if card.homepage:
            dataset["url"] = card.homepage
        if card.authors:
            dataset["creator"] = [{"@type": "sc:Person", "name": name} for name in card.authors]
    distribution: list[dict[str, Any]] = []
    record_sets: list[dict[str, Any]] = []
    registry = default_registry()
    for split, info in manifest.splits.items():
        groups = info.groups
        bound = {
            f.name: f
            for f in bind_split(manifest, groups, registry, split_schema(manifest, groups), None).fields
        }
        shards = _file_set(root, f"{split}-shards", info.readable_shards, distribution)
        own = [bound[name] for name in schema.fields]
        record_sets.append(
            _record_set(split, f"The {info.num_records} records of split {split}", own, shards)
        )
        for name, group in groups.items():
            files = _file_set(root, f"{split}-{name}-shards", group.shards, distribution)
            what = (
                f"Fields added to split {split} (field group {name}): record i of each of its shards belongs "
                f"to record i of the split's shard in the same place, which recordkit's readers join"
            )
            fields = [bound[field] for field in group.fields]
            record_sets.append(_record_set(f"{split}-{name}", what, fields, files))
    dataset["distribution"] = distribution
    dataset["recordSet"] = record_sets
    return dataset


def _file_set(
    root: Location, name: str, shards: Sequence[ShardInfo], distribution: list[dict[str, Any]]
) -> str:
    """Add a ``cr:FileObject`` per shard and the ``cr:FileSet`` ``name`` gathering them
    to ``distribution``; return the file set's id."""
    for shard in shards:
        sha256 = shard.sha256 or file_sha256(root.join(shard.file))  # TFDS records none
        distribution.append(
            {
                "@type": "cr:FileObject",
                "@id": shard.file,
                "name": shard.file,
                "contentUrl": shard.file,
                "contentSize": f"{shard.bytes} B",
                "encodingFormat": TFRECORD,
                "sha256": sha256,
            }
        )
    files = [shard.file for shard in shards]
    distribution.append(
        {
            "@type": "cr:FileSet",
            "@id": name,
            "name": name,
            "containedIn": [{"@id": file} for file in files],
            "encodingFormat": TFRECORD,
            # Each listed shard by its own name, never a pattern: a glob of the names'
            # common start (train-0000*) would also take the unlisted shards an unfinished
            # run leaves beside them, which no reader reads.
            "includes": files[0] if len(files) == 1 else files if files else f"{name}/*",
        }
    )
    return name


def _record_set(name: str, description: str, fields: list[BoundField], file_set: str) -> dict[str, Any]:
    """The ``cr:RecordSet`` ``name`` of ``fields``, read from the files of ``file_set``."""
    return {
        "@type": "cr:RecordSet",
        "@id": name,
        "name": name,
        "description": description,
        "field": [_field(name, field, file_set) for field in fields],
    }


def _field(record_set: str, field: BoundField, file_set: str) -> dict[str, Any]:
    """The ``cr:Field`` of ``field`` in ``record_set``, extracted from the Example key of
    its main wire feature in the files of ``file_set``."""
    main = next((k for k in field.features if k.feature.name == ""), field.features[0])
    return {
        "@type": "cr:Field",
        "@id": f"{record_set}/{field.name}",
        "name": field.name,
        "description": field.spec.description or f"codec {field.spec.codec}",
        "dataType": _data_type(field.codec),
        "source": {"fileSet": {"@id": file_set}, "extract": {"column": main.key}},
    }
