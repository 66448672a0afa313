"""WebDataset as its README advises (https://github.com/webdataset/webdataset#readme,
"Creating a WebDataset" and "Using WebDataset with DataLoader"): ``ShardWriter`` with a
record count per shard; ``WebDataset(urls).decode("rgb8")`` (uint8 HWC images) with a
``.wav`` handler that keeps the stored int16 samples; in workers, ``.batched(64)`` and
``WebLoader(batch_size=None)``. Tar files have no index: no random access (0 records)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import soundfile
import webdataset as wds

from benchmarks._data import MixedRecord

DOC = "https://github.com/webdataset/webdataset#readme"
SHARD_RECORDS = 100


def write(records: list[MixedRecord], folder: Path) -> int:
    with wds.ShardWriter(str(folder / "shard-%06d.tar"), maxcount=SHARD_RECORDS, verbose=0) as sink:
        for i, r in enumerate(records):
            meta = {"boxes": r.boxes.tolist(), "box_labels": r.box_labels.tolist(), "label": r.label}
            sink.write({"__key__": f"{i:08d}", "jpg": r.jpeg, "wav": r.wav, "txt": r.caption, "json": meta})
    return len(records)


def _wav(key: str, data: bytes) -> Any:
    if not key.endswith("wav"):
        return None
    samples, _ = soundfile.read(io.BytesIO(data), dtype="int16")
    return samples


def _decoded(record: dict[str, Any]) -> tuple[Any, ...]:
    meta = record["json"]
    boxes = np.asarray(meta["boxes"], np.float32).reshape(-1, 4)
    return record["jpg"], record["wav"], record["txt"], boxes, np.asarray(meta["box_labels"]), meta["label"]


def _dataset(folder: Path, shuffle: bool) -> Any:
    urls = sorted(str(p) for p in folder.glob("shard-*.tar"))
    dataset = wds.WebDataset(urls, shardshuffle=100 if shuffle else False, empty_check=False)
    if shuffle:
        dataset = dataset.shuffle(256)
    return dataset.decode(_wav, "rgb8").map(_decoded)


def read(folder: Path) -> int:
    return sum(1 for _ in _dataset(folder, shuffle=False))


def _lists(samples: list[tuple[Any, ...]]) -> list[list[Any]]:
    """A batch as one list per field (the images differ in size: nothing to stack)."""
    return [list(column) for column in zip(*samples, strict=True)]


def loader(folder: Path, batch: int) -> tuple[Any, dict[str, Any]]:
    return _dataset(folder, shuffle=True).batched(batch, collation_fn=_lists), {"batch_size": None}


def batch_size(batch: list[list[Any]]) -> int:
    return len(batch[0])


def random(folder: Path, indices: list[int], batch: int) -> int:
    return 0
