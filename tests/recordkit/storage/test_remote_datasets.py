"""Datasets in object stores (the local S3 server and the GCS emulator): written, read
back by both readers, resumed, appended, verified and inspected like local ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _object_stores import Bucket

import recordkit as rk
from recordkit.storage import location

Item = rk.Schema(
    name="remote-test",
    fields={
        "name": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="scalar"),
        "values": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [3]}),
    },
)


def _records(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"name": f"item-{i}", "label": i % 10, "values": np.full(3, i, dtype=np.float32)}
        for i in range(start, start + count)
    ]


def _names(rows: Any) -> list[str]:
    return [row["name"] for row in rows]


def test_write_then_read_back(bucket: Bucket, tmp_path: Path) -> None:
    url = bucket.join("items")
    options = bucket.storage_options
    manifest = rk.write_dataset(_records(50), Item, url, shard_records=20, storage_options=options)
    assert [s.records for s in manifest.split("train").shards] == [20, 20, 10]
    root = location(url, options)
    names = root.list()
    assert "dataset.json" in names
    assert not [n for n in names if n.startswith(".")]  # no temp names, no lock file remotely
    listed = json.loads(root.join("dataset.json").read_bytes())
    assert [s["file"] for s in listed["splits"]["train"]["shards"]] == [
        "train-00000.tfrecord",
        "train-00001.tfrecord",
        "train-00002.tfrecord",
    ]
    # sha256 computed as the shard streamed equals the stored object's
    for shard in manifest.split("train").shards:
        import hashlib

        data = root.join(shard.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard.sha256
    assert _names(rk.iter_records(url, storage_options=options, verify_sha256=True)) == [
        f"item-{i}" for i in range(50)
    ]


def test_a_reader_trusts_only_the_manifest(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    rk.write_dataset(_records(10), Item, url, shard_records=5, storage_options=options)
    # An object under a shard's name that the manifest does not list (a writer that
    # died after its upload, before its manifest PUT) is not read.
    location(url, options).join("train-00002.tfrecord").write_bytes(b"garbage")
    assert len(list(rk.iter_records(url, storage_options=options))) == 10


def test_missing_dataset_is_a_clear_error(s3_bucket: Bucket) -> None:
    with pytest.raises(rk.errors.DatasetError, match="not a recordkit dataset"):
        rk.iter_records(s3_bucket.join("nothing"), storage_options=s3_bucket.storage_options)


def test_append_and_resume(bucket: Bucket) -> None:
    url = bucket.join("items")
    options = bucket.storage_options
    rk.write_dataset(_records(10), Item, url, shard_records=4, storage_options=options)
    rk.write_dataset(_records(5, 10), Item, url, shard_records=4, append=True, storage_options=options)
    assert _names(rk.iter_records(url, storage_options=options)) == [f"item-{i}" for i in range(15)]

    def failing() -> Any:
        yield from _records(9, 100)
        raise RuntimeError("the input broke")

    with pytest.raises(RuntimeError, match="input broke"):
        rk.write_dataset(failing(), Item, url, "test", shard_records=4, append=True, storage_options=options)
    # Complete shards stay listed: the unfinished split reads its 8 records.
    assert len(list(rk.iter_records(url, "test", storage_options=options))) == 8
    rk.write_dataset(
        _records(12, 100), Item, url, "test", shard_records=4, resume=True, storage_options=options
    )
    assert _names(rk.iter_records(url, "test", storage_options=options)) == [
        f"item-{i}" for i in range(100, 112)
    ]


def test_remote_overwrite_is_refused(s3_bucket: Bucket) -> None:
    with pytest.raises(ValueError, match="overwrite=True needs a local folder"):
        rk.write_dataset(
            _records(1), Item, s3_bucket.join("x"), overwrite=True, storage_options=s3_bucket.storage_options
        )


@pytest.mark.parametrize("remote_io", ["auto", "fsspec"])
def test_load_dataset_over_s3_equals_the_local_copy(
    s3_bucket: Bucket, tmp_path: Path, remote_io: str
) -> None:
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    records = _records(40)
    rk.write_dataset(records, Item, url, shard_records=15, storage_options=options)
    rk.write_dataset(records, Item, tmp_path / "items", shard_records=15)
    remote = list(rk.load_dataset(url, batch_size=8, storage_options=options, remote_io=remote_io))  # type: ignore[arg-type]
    local = list(rk.load_dataset(tmp_path / "items", batch_size=8))
    assert len(remote) == len(local) == 5
    for a, b in zip(remote, local, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())


def test_load_dataset_reports_a_corrupt_remote_shard(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    manifest = rk.write_dataset(_records(10), Item, url, shard_records=5, storage_options=options)
    shard = location(url, options).join(manifest.split("train").shards[1].file)
    data = bytearray(shard.read_bytes())
    data[-6] ^= 0xFF  # the last record's data, same size: only its CRC finds it
    shard.write_bytes(bytes(data))
    with pytest.raises(rk.errors.CorruptRecordError, match=r"train-00001\.tfrecord"):
        list(rk.load_dataset(url, batch_size=4, storage_options=options, remote_io="fsspec"))
