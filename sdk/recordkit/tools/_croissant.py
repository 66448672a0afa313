"""A dataset's MLCommons Croissant 1.0 description (JSON-LD), from its ``dataset.json``.

Croissant is the metadata format TFDS, the Hugging Face Hub and Kaggle publish for their
datasets. recordkit's description holds the dataset's card (name, description, license,
citation, homepage, authors, version), a ``cr:FileObject`` per shard with its sha256, a
``cr:FileSet`` per split gathering them, and a ``cr:RecordSet`` per split whose fields
are the schema's, each with the data type its codec names (:class:`~recordkit.DataTyped`).
"""

from __future__ import annotations

from typing import Any

from recordkit.codec._capabilities import DataTyped
from recordkit.dataset._manifest import Manifest
from recordkit.storage import PathOrUrl, StorageOptions

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
    """The Croissant 1.0 JSON-LD description of the dataset at ``path``, as a dict
    (``json.dumps`` it to a file). Files are named relative to the dataset's folder."""
    manifest = Manifest.load(path, storage_options)
    schema = manifest.schema
    codecs = {field.name: field.codec for field in schema.bind(versions=manifest.codec_versions).fields}
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
    for split, info in manifest.splits.items():
        for shard in info.readable_shards:
            file_object: dict[str, Any] = {
                "@type": "cr:FileObject",
                "@id": shard.file,
                "name": shard.file,
                "contentUrl": shard.file,
                "contentSize": f"{shard.bytes} B",
                "encodingFormat": TFRECORD,
            }
            if shard.sha256:
                file_object["sha256"] = shard.sha256
            distribution.append(file_object)
        files_id = f"{split}-shards"
        distribution.append(
            {
                "@type": "cr:FileSet",
                "@id": files_id,
                "name": files_id,
                "containedIn": [{"@id": shard.file} for shard in info.readable_shards],
                "encodingFormat": TFRECORD,
                "includes": f"{split}-*",
            }
        )
        fields = [
            {
                "@type": "cr:Field",
                "@id": f"{split}/{name}",
                "name": name,
                "description": spec.description or f"codec {spec.codec}",
                "dataType": _data_type(codecs[name]),
                "source": {"fileSet": {"@id": files_id}, "extract": {"column": name}},
            }
            for name, spec in schema.fields.items()
        ]
        record_sets.append(
            {
                "@type": "cr:RecordSet",
                "@id": split,
                "name": split,
                "description": f"The {info.num_records} records of split {split}",
                "field": fields,
            }
        )
    dataset["distribution"] = distribution
    dataset["recordSet"] = record_sets
    return dataset
