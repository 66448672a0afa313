"""The built-in sources as functions, the names users call (``recordkit.sources.coco(...)``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from recordkit.sources._base import OnBadInput, Source
from recordkit.sources._coco import CocoSource
from recordkit.sources._folders import AudioFolderSource, ImageFolderSource
from recordkit.sources._tables import CsvSource, JsonlSource
from recordkit.sources._voc import VOC_CLASSES, PascalVocSource, Task

__all__ = ["audio_folder", "coco", "csv", "image_folder", "jsonl", "pascal_voc"]


def image_folder(root: str | Path, *, on_error: OnBadInput = "raise") -> ImageFolderSource:
    """A folder with one subfolder of images per class: image, label and file name."""
    return ImageFolderSource(root, on_error=on_error)


def audio_folder(
    root: str | Path, *, metadata: str | Path | None = None, on_error: OnBadInput = "raise"
) -> AudioFolderSource:
    """Audio files, with a CSV/JSONL of transcripts or labels keyed by ``file_name``."""
    return AudioFolderSource(root, metadata=metadata, on_error=on_error)


def coco(
    annotations_json: str | Path,
    images_dir: str | Path | None = None,
    *,
    masks: bool = False,
    on_error: OnBadInput = "raise",
) -> CocoSource:
    """COCO detection: image, boxes (xywh pixels) with category names, iscrowd, area, id."""
    return CocoSource(annotations_json, images_dir, masks=masks, on_error=on_error)


def pascal_voc(
    root: str | Path,
    split: str = "train",
    *,
    task: Task = "detection",
    classes: Sequence[str] = VOC_CLASSES,
    on_error: OnBadInput = "raise",
) -> PascalVocSource:
    """Pascal VOC: XML boxes with difficult/truncated, or SegmentationClass masks."""
    return PascalVocSource(root, split, task=task, classes=list(classes), on_error=on_error)


def jsonl(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    files: Sequence[str] | None = None,
    on_error: OnBadInput = "raise",
) -> JsonlSource:
    """A JSON Lines manifest, one record per line; file columns relative to it."""
    return JsonlSource(path, columns=columns, files=files, on_error=on_error)


def csv(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    files: Sequence[str] | None = None,
    on_error: OnBadInput = "raise",
) -> CsvSource:
    """A CSV manifest with a header, one record per row; file columns relative to it."""
    return CsvSource(path, columns=columns, files=files, on_error=on_error)


#: The sources recordkit ships, by kind.
BUILTIN_SOURCES: dict[str, Callable[..., Source]] = {
    "image_folder": image_folder,
    "audio_folder": audio_folder,
    "coco": coco,
    "pascal_voc": pascal_voc,
    "jsonl": jsonl,
    "csv": csv,
}
