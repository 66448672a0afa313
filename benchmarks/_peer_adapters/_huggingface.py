"""Hugging Face datasets as its docs advise (https://huggingface.co/docs/datasets/use_with_pytorch,
"Data loading" and "Use multiple Workers"; writing: https://huggingface.co/docs/datasets/create_dataset,
``Dataset.from_generator``): ``from_generator`` with ``Features`` (the JPEG as an ``Image()``
column, kept as the given bytes), ``save_to_disk``, then ``load_from_disk(...).with_format("numpy")``
(uint8 HWC images) straight into a ``DataLoader`` with ``batch_size`` and ``num_workers``:
the workers memory-map the Arrow files. Random access is ``ds[i]`` and, for a batch,
``ds[indices]``. The WAV is a ``binary`` column decoded with soundfile to its stored int16
samples (the ``Audio()`` feature decodes through torchcodec and FFmpeg, which the other
contenders do not need)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from benchmarks._data import MixedRecord
from benchmarks._peer_adapters._decode import field_lists, wav_samples

DOC = "https://huggingface.co/docs/datasets/use_with_pytorch"
FEATURES = datasets.Features(
    {
        "image": datasets.Image(),
        "wav": datasets.Value("binary"),
        "caption": datasets.Value("string"),
        "boxes": datasets.Sequence(datasets.Sequence(datasets.Value("float32"), length=4)),
        "box_labels": datasets.Sequence(datasets.Value("int64")),
        "label": datasets.Value("int64"),
    }
)


def write(records: list[MixedRecord], folder: Path) -> int:
    def rows() -> Iterator[dict[str, Any]]:
        for r in records:
            yield {
                "image": {"bytes": r.jpeg, "path": None},
                "wav": r.wav,
                "caption": r.caption,
                "boxes": r.boxes.astype(np.float32).tolist(),
                "box_labels": r.box_labels.tolist(),
                "label": r.label,
            }

    datasets.disable_progress_bars()
    dataset = datasets.Dataset.from_generator(
        rows, features=FEATURES, cache_dir=str(folder / "cache"), keep_in_memory=False
    )
    dataset.save_to_disk(str(folder / "data"))
    shutil.rmtree(folder / "cache")  # from_generator's working copy: the saved dataset is the data
    return len(records)


def _dataset(folder: Path) -> Any:
    return datasets.load_from_disk(str(folder / "data")).with_format("numpy")


def _record(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "wav": wav_samples(row["wav"])}


def read(folder: Path) -> int:
    return sum(1 for row in _dataset(folder) if _record(row) is not None)


def _collate(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return field_lists([_record(row) for row in rows])


def loader(folder: Path, batch: int) -> tuple[Any, dict[str, Any]]:
    return _dataset(folder), {"batch_size": batch, "shuffle": True, "collate_fn": _collate}


def batch_size(batch: dict[str, list[Any]]) -> int:
    return len(batch["caption"])


def random(folder: Path, indices: list[int], batch: int) -> int:
    dataset = _dataset(folder)
    if batch == 1:
        return sum(1 for i in indices if _record(dataset[i]) is not None)
    count = 0
    for first in range(0, len(indices), batch):
        columns = dataset[indices[first : first + batch]]
        count += len([wav_samples(w) for w in columns["wav"]])
    return count
