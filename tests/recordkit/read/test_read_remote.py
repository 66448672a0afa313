"""The readers on object stores: only what the manifest lists is read, load_dataset over
s3:// equals the local copy, corruption is named, and which filesystem reads a shard."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, remote_records

import recordkit as rk
from recordkit.storage import location


def test_a_reader_trusts_only_the_manifest(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    rk.write_dataset(remote_records(10), REMOTE_SCHEMA, url, shard_records=5, storage_options=options)
    # An object under a shard's name that the manifest does not list (a writer that
    # died after its upload, before its manifest PUT) is not read.
    location(url, options).join("train-00002.tfrecord").write_bytes(b"garbage")
    assert len(list(rk.iter_records(url, storage_options=options))) == 10


def test_missing_dataset_is_a_clear_error(s3_bucket: Bucket) -> None:
    with pytest.raises(rk.errors.DatasetError, match="not a recordkit dataset"):
        rk.iter_records(s3_bucket.join("nothing"), storage_options=s3_bucket.storage_options)


def test_load_dataset_over_s3_equals_the_local_copy(s3_bucket: Bucket, tmp_path: Path) -> None:
    """s3 is not a TensorFlow filesystem: ``auto`` streams it through fsspec."""
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    records = remote_records(40)
    rk.write_dataset(records, REMOTE_SCHEMA, url, shard_records=15, storage_options=options)
    rk.write_dataset(records, REMOTE_SCHEMA, tmp_path / "items", shard_records=15)
    remote = list(rk.load_dataset(url, batch_size=8, storage_options=options, remote_io="auto"))
    local = list(rk.load_dataset(tmp_path / "items", batch_size=8))
    assert len(remote) == len(local) == 5
    for a, b in zip(remote, local, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())


def test_load_dataset_reports_a_corrupt_remote_shard(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    manifest = rk.write_dataset(
        remote_records(10), REMOTE_SCHEMA, url, shard_records=5, storage_options=options
    )
    shard = location(url, options).join(manifest.split("train").shards[1].file)
    data = bytearray(shard.read_bytes())
    data[-6] ^= 0xFF  # the last record's data, same size: only its CRC finds it
    shard.write_bytes(bytes(data))
    import tensorflow as tf

    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"CorruptRecordError: shard train-00001\.tfrecord"
    ):
        list(rk.load_dataset(url, batch_size=4, storage_options=options, remote_io="fsspec"))


def test_which_filesystem_reads_remote_shards() -> None:
    """``auto`` reads through TensorFlow's filesystem where it registers the scheme (gs:
    TensorFlow's own GCS client, which cannot be pointed at a local emulator, so the
    tests read gs:// through fsspec), else through fsspec (s3)."""
    from recordkit.read._open import Shard
    from recordkit.read._shard_stream import _streamed

    gs = Shard(location("gs://bucket/ds/train-00000.tfrecord"), "train-00000.tfrecord")
    s3 = Shard(location("s3://bucket/ds/train-00000.tfrecord"), "train-00000.tfrecord")
    local = Shard(Path("train-00000.tfrecord"), "train-00000.tfrecord")
    assert _streamed(gs, "auto") is False
    assert _streamed(gs, "fsspec") is True
    assert _streamed(s3, "auto") is True
    assert _streamed(local, "fsspec") is False
    with pytest.raises(ValueError, match=r"no filesystem for s3://"):
        _streamed(s3, "tensorflow")
