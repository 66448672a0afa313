"""ArrayRecord with Grain as Grain's docs advise
(https://google-grain.readthedocs.io/en/latest/data_sources.html and
https://google-grain.readthedocs.io/en/latest/tutorials/data_loader_tutorial.html):
``ArrayRecordWriter(path, "group_size:1")`` (one record per chunk, for random access),
``ArrayRecordDataSource``, a ``MapTransform`` that decodes, and ``grain.DataLoader``
with an ``IndexSampler`` (shuffled), ``Batch`` and ``worker_count``. Records are
serialized as length-prefixed fields (the JPEG and WAV bytes as they are): ArrayRecord
stores bytes and leaves the serialization to the user; WAV decodes to int16."""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import grain
import numpy as np
import soundfile
from array_record.python.array_record_data_source import ArrayRecordDataSource
from array_record.python.array_record_module import ArrayRecordWriter
from PIL import Image

from benchmarks._data import MixedRecord

DOC = "https://google-grain.readthedocs.io/en/latest/data_sources.html"
SHARD_RECORDS = 500


def _serialize(r: MixedRecord) -> bytes:
    parts = [
        r.jpeg,
        r.wav,
        r.caption.encode(),
        r.boxes.astype(np.float32).tobytes(),
        r.box_labels.astype(np.int64).tobytes(),
    ]
    return struct.pack("<6q", r.label, *(len(p) for p in parts)) + b"".join(parts)


def write(records: list[MixedRecord], folder: Path) -> int:
    for first in range(0, len(records), SHARD_RECORDS):
        writer = ArrayRecordWriter(
            str(folder / f"shard-{first // SHARD_RECORDS:05d}.array_record"), "group_size:1"
        )
        for r in records[first : first + SHARD_RECORDS]:
            writer.write(_serialize(r))
        writer.close()
    return len(records)


class Decode(grain.transforms.Map):  # type: ignore[misc]  # Grain ships no type information
    """Serialized bytes to the decoded record."""

    def map(self, data: bytes) -> dict[str, Any]:
        label, *sizes = struct.unpack_from("<6q", data)
        pieces, at = [], 48
        for size in sizes:
            pieces.append(data[at : at + size])
            at += size
        jpeg, wav, caption, boxes, labels = pieces
        return {
            "image": np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB")),
            "audio": soundfile.read(io.BytesIO(wav), dtype="int16")[0],
            "caption": caption.decode(),
            "boxes": np.frombuffer(boxes, np.float32).reshape(-1, 4),
            "box_labels": np.frombuffer(labels, np.int64),
            "label": label,
        }


def _source(folder: Path) -> ArrayRecordDataSource:
    return ArrayRecordDataSource(sorted(str(p) for p in folder.glob("*.array_record")))


def read(folder: Path) -> int:
    source, decode = _source(folder), Decode()
    return sum(1 for i in range(len(source)) if decode.map(source[i]) is not None)


def _lists(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """A batch as one list per field (the images differ in size: nothing to stack)."""
    return {key: [r[key] for r in records] for key in records[0]}


def own_loader(folder: Path, batch: int, workers: int) -> int:
    source = _source(folder)
    sampler = grain.samplers.IndexSampler(len(source), shuffle=True, seed=0, num_epochs=1)
    loader = grain.DataLoader(
        data_source=source,
        sampler=sampler,
        operations=[Decode(), grain.transforms.Batch(batch, batch_fn=_lists)],
        worker_count=workers,
    )
    return sum(len(b["caption"]) for b in loader)


def random(folder: Path, indices: list[int], batch: int) -> int:
    source, decode = _source(folder), Decode()
    if batch == 1:
        return sum(1 for i in indices if decode.map(source[i]) is not None)
    count = 0
    for first in range(0, len(indices), batch):
        count += len([decode.map(d) for d in source.__getitems__(indices[first : first + batch])])
    return count
