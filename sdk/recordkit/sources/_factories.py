"""The built-in sources as functions, the names users call (``recordkit.sources.coco(...)``),
and the hook that registers them, exactly as a plugin registers its own.

Every one takes ``on_error`` (``"raise"`` or ``"skip"``) and ``allow_outside_root``
(follow file names that leave the root the source reads from; refused by default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recordkit.hookspecs import SourceRegistrar, hookimpl
from recordkit.sources._arrow_tables import BATCH_ROWS, HfDatasetSource, ParquetSource
from recordkit.sources._base import OnBadInput
from recordkit.sources._coco import CocoSource
from recordkit.sources._folders import AudioFolderSource, ImageFolderSource
from recordkit.sources._tables import CsvSource, JsonlSource
from recordkit.sources._voc import VOC_CLASSES, PascalVocSource, Task

__all__ = [
    "audio_folder",
    "coco",
    "csv",
    "hf_dataset",
    "image_folder",
    "jsonl",
    "parquet",
    "pascal_voc",
    "recordkit_register_sources",
]


def image_folder(
    root: str | Path, *, on_error: OnBadInput = "raise", allow_outside_root: bool = False
) -> ImageFolderSource:
    """A folder with one subfolder of images per class: image, label and file name."""
    return ImageFolderSource(root, on_error=on_error, allow_outside_root=allow_outside_root)


def audio_folder(
    root: str | Path,
    *,
    metadata: str | Path | None = None,
    on_error: OnBadInput = "raise",
    allow_outside_root: bool = False,
) -> AudioFolderSource:
    """Audio files, with a CSV/JSONL of transcripts or labels keyed by file_name."""
    return AudioFolderSource(
        root, metadata=metadata, on_error=on_error, allow_outside_root=allow_outside_root
    )


def coco(
    annotations_json: str | Path,
    images_dir: str | Path | None = None,
    *,
    masks: bool = False,
    on_error: OnBadInput = "raise",
    allow_outside_root: bool = False,
) -> CocoSource:
    """COCO detection: image, boxes (xywh pixels) with category names, iscrowd, area, id."""
    return CocoSource(
        annotations_json, images_dir, masks=masks, on_error=on_error, allow_outside_root=allow_outside_root
    )


def pascal_voc(
    root: str | Path,
    split: str = "train",
    *,
    task: Task = "detection",
    classes: Sequence[str] = VOC_CLASSES,
    on_error: OnBadInput = "raise",
    allow_outside_root: bool = False,
) -> PascalVocSource:
    """Pascal VOC: XML boxes with difficult/truncated, or SegmentationClass masks."""
    return PascalVocSource(
        root,
        split,
        task=task,
        classes=list(classes),
        on_error=on_error,
        allow_outside_root=allow_outside_root,
    )


def jsonl(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    files: Sequence[str] | None = None,
    root: str | Path | None = None,
    on_error: OnBadInput = "raise",
    allow_outside_root: bool = False,
) -> JsonlSource:
    """A JSON Lines manifest, one record per line; file columns relative to it (or to root)."""
    return JsonlSource(
        path,
        columns=columns,
        files=files,
        root=root,
        on_error=on_error,
        allow_outside_root=allow_outside_root,
    )


def csv(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    files: Sequence[str] | None = None,
    root: str | Path | None = None,
    on_error: OnBadInput = "raise",
    allow_outside_root: bool = False,
) -> CsvSource:
    """A CSV manifest with a header, one record per row; file columns relative to it (or to root)."""
    return CsvSource(
        path,
        columns=columns,
        files=files,
        root=root,
        on_error=on_error,
        allow_outside_root=allow_outside_root,
    )


def parquet(
    path: str | Path,
    *,
    batch_rows: int = BATCH_ROWS,
    on_error: OnBadInput = "raise",
    allow_outside_root: bool = False,
) -> ParquetSource:
    """A Parquet file or a folder of them, read a batch at a time; Hugging Face's features kept."""
    return ParquetSource(
        path, batch_rows=batch_rows, on_error=on_error, allow_outside_root=allow_outside_root
    )


def hf_dataset(
    dataset: Any,
    *,
    split: str | None = None,
    batch_rows: int = BATCH_ROWS,
    on_error: OnBadInput = "raise",
    allow_outside_root: bool = False,
) -> HfDatasetSource:
    """A Hugging Face datasets.Dataset, or a save_to_disk folder: images and audio kept as bytes."""
    return HfDatasetSource(
        dataset, split=split, batch_rows=batch_rows, on_error=on_error, allow_outside_root=allow_outside_root
    )


@hookimpl
def recordkit_register_sources(registry: SourceRegistrar) -> None:
    """Register the sources recordkit ships. recordkit's ``pyproject.toml`` declares the
    package :mod:`recordkit.sources` under the ``recordkit`` entry points, as ``sources``,
    so these go through the same loading, allowlist and blocklist as any plugin's."""
    registry.register("image_folder", image_folder)
    registry.register("audio_folder", audio_folder)
    registry.register("coco", coco)
    registry.register("pascal_voc", pascal_voc)
    registry.register("jsonl", jsonl)
    registry.register("csv", csv)
    registry.register("parquet", parquet)
    registry.register("hf", hf_dataset)
