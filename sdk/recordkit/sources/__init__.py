"""Sources: collections that exist before recordkit, read as records.

Each source yields records (dicts ready for :func:`recordkit.write_dataset`), proposes
their schema (:meth:`Source.schema`), and names the file and line or entry of every
bad input (:class:`~recordkit.errors.InputError`). Sources emit file paths or bytes,
never re-encoded pixels::

    import recordkit as rk
    from recordkit import sources

    flowers = sources.image_folder("flower_photos")
    rk.write_dataset(flowers, "data/flowers", flowers.schema())

The package is itself a plugin: recordkit's ``pyproject.toml`` declares it under the
``recordkit`` entry points (as ``sources``), and its ``recordkit_register_sources`` hook
registers the sources above exactly as a third party's plugin registers its own.
:func:`default_sources` holds them all by kind (``recordkit ingest KIND``).
"""

from __future__ import annotations

from recordkit.sources._arrow_tables import HfDatasetSource, ParquetSource
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem
from recordkit.sources._coco import CocoSource
from recordkit.sources._factories import (
    audio_folder,
    coco,
    csv,
    hf_dataset,
    image_folder,
    jsonl,
    parquet,
    pascal_voc,
    recordkit_register_sources,
)
from recordkit.sources._folders import AudioFolderSource, ImageFolderSource
from recordkit.sources._masks import decode_rle, polygons_mask
from recordkit.sources._registry import SourceInfo, SourceRegistry, default_sources
from recordkit.sources._tables import CsvSource, JsonlSource
from recordkit.sources._voc import VOC_CLASSES, PascalVocSource

__all__ = [
    "VOC_CLASSES",
    "AudioFolderSource",
    "CocoSource",
    "CsvSource",
    "HfDatasetSource",
    "ImageFolderSource",
    "JsonlSource",
    "OnBadInput",
    "ParquetSource",
    "PascalVocSource",
    "Skipped",
    "Source",
    "SourceInfo",
    "SourceItem",
    "SourceRegistry",
    "audio_folder",
    "coco",
    "csv",
    "decode_rle",
    "default_sources",
    "hf_dataset",
    "image_folder",
    "jsonl",
    "parquet",
    "pascal_voc",
    "polygons_mask",
    "recordkit_register_sources",
]
