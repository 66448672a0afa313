"""MosaicML Streaming as its docs advise
(https://docs.mosaicml.com/projects/streaming/en/stable/getting_started/quick_start.html and
https://docs.mosaicml.com/projects/streaming/en/stable/preparing_datasets/basic_dataset_conversion.html):
``MDSWriter(out=..., columns=...)``, then a ``StreamingDataset(local=..., batch_size=64,
shuffle=True)`` subclass whose ``__getitem__`` decodes, given to a ``DataLoader`` with the
same ``batch_size``; random access is ``dataset[i]``. The JPEG and WAV are ``bytes``
columns (the ``jpeg`` encoding would re-encode a PIL image, changing the bytes every
other contender stores), decoded with Pillow to uint8 HWC and soundfile to int16; boxes and
their labels are ``bytes`` too (the ``ndarray`` encoding refuses an empty array, and a
record has 0 to 6 boxes). No compression: JPEG and WAV bytes do not shrink with zstd, and
every contender stores them as they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import streaming
from streaming.base.util import clean_stale_shared_memory

from benchmarks._data import MixedRecord
from benchmarks._peer_adapters._decode import field_lists, jpeg_pixels, wav_samples

DOC = "https://docs.mosaicml.com/projects/streaming/en/stable/getting_started/quick_start.html"
COLUMNS = {
    "jpeg": "bytes",
    "wav": "bytes",
    "caption": "str",
    "boxes": "bytes",
    "box_labels": "bytes",
    "label": "int",
}


def write(records: list[MixedRecord], folder: Path) -> int:
    with streaming.MDSWriter(out=str(folder / "data"), columns=COLUMNS) as out:
        for r in records:
            out.write(
                {
                    "jpeg": r.jpeg,
                    "wav": r.wav,
                    "caption": r.caption,
                    "boxes": r.boxes.astype(np.float32).tobytes(),
                    "box_labels": r.box_labels.astype(np.int64).tobytes(),
                    "label": int(r.label),
                }
            )
    return len(records)


class DecodedDataset(streaming.StreamingDataset):  # type: ignore[misc]  # untyped (not in the dev venv)
    """The docs' subclass: ``__getitem__`` decodes the stored sample."""

    def __getitem__(self, index: int) -> dict[str, Any]:
        sample = super().__getitem__(index)
        return {
            "image": jpeg_pixels(sample["jpeg"]),
            "audio": wav_samples(sample["wav"]),
            "caption": sample["caption"],
            "boxes": np.frombuffer(sample["boxes"], np.float32).reshape(-1, 4),
            "box_labels": np.frombuffer(sample["box_labels"], np.int64),
            "label": sample["label"],
        }


def _dataset(folder: Path, batch: int, shuffle: bool) -> DecodedDataset:
    clean_stale_shared_memory()  # one dataset at a time per local folder: the last one's is gone
    return DecodedDataset(local=str(folder / "data"), batch_size=batch, shuffle=shuffle, shuffle_seed=0)


def read(folder: Path) -> int:
    return sum(1 for _ in _dataset(folder, 64, shuffle=False))


def loader(folder: Path, batch: int) -> tuple[Any, dict[str, Any]]:
    return _dataset(folder, batch, shuffle=True), {"batch_size": batch, "collate_fn": field_lists}


def batch_size(batch: dict[str, list[Any]]) -> int:
    return len(batch["caption"])


def random(folder: Path, indices: list[int], batch: int) -> int:
    """``dataset[i]`` for each index: Streaming has no call that reads a batch of indices."""
    dataset = _dataset(folder, batch, shuffle=False)
    return sum(1 for i in indices if dataset[i] is not None)
