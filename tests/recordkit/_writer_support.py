"""Helpers for the writer tests: small deterministic records, and reading a written
dataset back without TensorFlow (framing CRCs checked) to compare with what went in.

Also imported by the subprocess of the kill-and-resume test, so it stays light.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.format._index import RecordIndex  # private: the record-offset index file itself
from recordkit.format._tfrecord import (  # private: a shard's raw frames, without TensorFlow
    Compression,
    iter_tfrecords,
)
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.storage import location

SCHEMA = rk.Schema(
    name="writer-test",
    fields={
        "id": rk.FieldSpec(codec="scalar"),
        "payload": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),
    },
)


def make_records(n: int, *, bad: frozenset[int] = frozenset()) -> Iterator[dict[str, Any]]:
    """``n`` records with ids 0..n-1 and payloads of 0 to 96 characters; the ids in
    ``bad`` get an int payload, which the ``str`` scalar codec rejects."""
    for i in range(n):
        payload: Any = i if i in bad else chr(ord("a") + i % 26) * ((i * 37) % 97)
        yield {"id": i, "payload": payload}


def read_split(
    root: Path, split: str = "train", *, registry: rk.CodecRegistry | None = None
) -> list[dict[str, Any]]:
    """Every record of ``split``, in shard order, decoded through the manifest's schema
    (its codecs from ``registry``, default: the installed plugins)."""
    manifest = rk.Manifest.load(root)
    bound = manifest.schema.bind(registry)
    compression = Compression.parse(manifest.compression)
    records = []
    for shard in manifest.split(split).shards:
        for _, data in iter_tfrecords(location(root / shard.file), compression):
            records.append(decode_record_numpy(bound.fields, data))
    return records


def read_ids(root: Path, split: str = "train") -> list[int]:
    return [int(r["id"]) for r in read_split(root, split)]


def check_manifest_matches_files(root: Path, *, lock: bool = True) -> None:
    """Every shard the manifest lists exists with its size, sha256 and record count, and
    its record index with its sha256 and exactly the offsets of the shard's records; the
    folder holds nothing but the manifest, the shards, their indexes and the rejects files."""
    manifest = rk.Manifest.load(root)
    compression = Compression.parse(manifest.compression)
    expected = {"dataset.json"}
    for name, split in manifest.splits.items():
        for shard in split.shards:
            path = root / shard.file
            data = path.read_bytes()
            assert len(data) == shard.bytes, shard.file
            assert hashlib.sha256(data).hexdigest() == shard.sha256, shard.file
            offsets = [offset for offset, _ in iter_tfrecords(location(path), compression)]
            assert len(offsets) == shard.records, shard.file
            expected.add(shard.file)
            assert shard.index is not None, shard.file
            index_bytes = (root / shard.index.file).read_bytes()
            assert hashlib.sha256(index_bytes).hexdigest() == shard.index.sha256, shard.index.file
            index = RecordIndex.from_bytes(index_bytes)
            assert index.offsets[:-1].tolist() == offsets, shard.index.file
            expected.add(shard.index.file)
        if split.rejects_file is not None:
            assert split.rejects_file == f"rejects-{name}.jsonl"
            lines = (root / split.rejects_file).read_text().splitlines()
            assert len(lines) == split.rejected
            expected.add(split.rejects_file)
    # plus the writers' lock file (recordkit.write._lock), never listed (object stores have none)
    assert {p.name for p in root.iterdir()} == expected | ({".recordkit.lock"} if lock else set())


@contextlib.contextmanager
def tensor_one_value_short(monkeypatch: pytest.MonkeyPatch, bad: int) -> Iterator[None]:
    """Writers store the tensor whose values all equal ``bad`` one value short (4 bytes
    short when stored as bytes), as a faulty tool would: the codec's and the encoder's
    checks let it through, so a reader's own value-count check must catch it."""
    import recordkit.schema._encoder as encoder_module  # private: lets a faulty writer store a wrong count
    from recordkit_codecs import tensor

    encode = tensor.TensorCodec.encode

    def short(self: Any, value: Any) -> Any:
        wire = encode(self, value)
        if float(np.asarray(value).reshape(-1)[0]) == float(bad):
            stored = wire[""]
            wire = {**wire, "": stored[:-4] if isinstance(stored, bytes) else stored[:-1]}
        return wire

    with monkeypatch.context() as patch:
        patch.setattr(tensor.TensorCodec, "encode", short)
        patch.setattr(encoder_module, "_check_size", lambda *args: None)
        yield


@contextlib.contextmanager
def tensor_bytes_counted(monkeypatch: pytest.MonkeyPatch, bad: int, count: int) -> Iterator[None]:
    """Writers store the tensor whose values all equal ``bad``, when stored as bytes, as
    ``count`` values (its raw bytes repeated; 0: the key left with no value) instead of
    one, as a faulty tool would: each value has the right size, the number of values is
    wrong, and the codec's and the encoder's checks let it through."""
    import recordkit.schema._encoder as encoder_module  # private: lets a faulty writer store a wrong count
    from recordkit_codecs import tensor

    encode = tensor.TensorCodec.encode

    def counted(self: Any, value: Any) -> Any:
        wire = encode(self, value)
        stored = wire[""]
        if isinstance(stored, bytes) and float(np.asarray(value).reshape(-1)[0]) == float(bad):
            wire = {**wire, "": [stored] * count}
        return wire

    with monkeypatch.context() as patch:
        patch.setattr(tensor.TensorCodec, "encode", counted)
        patch.setattr(encoder_module, "_check_size", lambda *args: None)
        yield
