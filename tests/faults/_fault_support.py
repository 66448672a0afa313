"""Helpers of the fault-injection suite: a small dataset, and the faults applied to it.

Everything here is deterministic: the random choices take a seed, so a failing case
names its seed and reproduces. Also imported by the suite's subprocesses (killed
writers, concurrent writers, TensorFlow readers of hostile shards), so it stays light:
no TensorFlow, no pytest.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import recordkit as rk
from recordkit.format._tfrecord import (  # private: frames records by hand, to build or damage shards
    Compression,
    iter_tfrecords,
    masked_crc,
)
from recordkit.storage import location

SCHEMA = rk.Schema(
    name="faults",
    fields={
        "id": rk.FieldSpec(codec="scalar"),
        "payload": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),
    },
)


def records(n: int, start: int = 0) -> Iterator[dict[str, Any]]:
    """Records with ids ``start`` .. ``start + n - 1`` and payloads of 0 to 60 characters."""
    for i in range(start, start + n):
        yield {"id": i, "payload": chr(ord("a") + i % 26) * ((i * 37) % 61)}


def write(
    root: Path, n: int = 30, *, split: str = "train", shard_records: int = 10, **options: Any
) -> rk.Manifest:
    """A finished dataset (or a split appended to one) of ``n`` records."""
    return rk.write_dataset(
        records(n, options.pop("start", 0)),
        SCHEMA,
        root,
        split,
        shard_records=shard_records,
        progress=False,
        durable=False,
        **options,
    )


def ids(root: Path, split: str = "train") -> list[int]:
    """The ids of the split's records, read with iter_records (CRCs checked)."""
    return [int(r["id"]) for r in rk.iter_records(root, split)]


def shard_paths(root: Path, split: str = "train") -> list[Path]:
    return [root / s.file for s in rk.Manifest.load(root).split(split).shards]


def record_offsets(path: Path, compression: Compression = Compression.NONE) -> list[int]:
    return [offset for offset, _ in iter_tfrecords(location(path), compression)]


def edit_manifest(root: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    """Apply ``change`` to dataset.json as JSON data and write it back as is (no checks:
    this is how an attacker or a broken tool edits it)."""
    path = root / "dataset.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def relist(root: Path, split: str = "train") -> None:
    """Make the manifest agree with the shard files' current sizes and sha256, as an
    attacker who crafts a shard would."""

    def change(data: dict[str, Any]) -> None:
        for shard in data["splits"][split]["shards"]:
            payload = (root / shard["file"]).read_bytes()
            shard["bytes"] = len(payload)
            shard["sha256"] = hashlib.sha256(payload).hexdigest()

    edit_manifest(root, change)


def set_declared_length(path: Path, offset: int, length: int) -> None:
    """Give the record header at ``offset`` a new declared ``length`` with a valid CRC
    (uncompressed shards)."""
    data = bytearray(path.read_bytes())
    packed = struct.pack("<Q", length)
    data[offset : offset + 12] = packed + struct.pack("<I", masked_crc(packed))
    path.write_bytes(bytes(data))


def flip_bit(path: Path, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))


def truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


#: A field group the field-group faults add: a score per record.
SCORES = rk.Schema(name="scores", fields={"score": rk.FieldSpec(codec="scalar", options={"dtype": "int64"})})


def doubled(root: Path, split: str = "train") -> list[int]:
    """The scores the field-group faults add: each record's id times two, in order."""
    return [2 * i for i in ids(root, split)]
