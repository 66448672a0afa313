"""The readers on object stores: only what the manifest lists is read, load_dataset over
s3:// equals the local copy, corruption is named, and which filesystem reads a shard."""

from __future__ import annotations

import re
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
        tf.errors.InvalidArgumentError, match=rf"CorruptRecordError: shard {re.escape(shard.name)}"
    ):
        list(rk.load_dataset(url, batch_size=4, storage_options=options, remote_io="fsspec"))


def test_which_filesystem_reads_remote_shards() -> None:
    """``auto`` reads through TensorFlow's filesystem where it registers the scheme (gs:
    TensorFlow's own GCS client, which cannot be pointed at a local emulator, so the
    tests read gs:// through fsspec), else through fsspec (s3)."""
    from recordkit.dataset._shards import Shard  # private: a shard built by hand for the filesystem choice
    from recordkit.read._shard_stream import _streamed

    gs = Shard(location("gs://bucket/ds/train-00000.tfrecord"), "train-00000.tfrecord")
    s3 = Shard(location("s3://bucket/ds/train-00000.tfrecord"), "train-00000.tfrecord")
    local = Shard(location("train-00000.tfrecord"), "train-00000.tfrecord")
    assert _streamed(gs, "auto") is False
    assert _streamed(gs, "fsspec") is True
    assert _streamed(s3, "auto") is True
    assert _streamed(local, "fsspec") is False
    with pytest.raises(ValueError, match=r"no filesystem for s3://"):
        _streamed(s3, "tensorflow")


def test_load_dataset_over_gs_through_fsspec(gcs_bucket: Bucket, tmp_path: Path) -> None:
    """gs is TensorFlow's, but its client cannot reach the emulator: forced to fsspec."""
    url = gcs_bucket.join("items")
    options = gcs_bucket.storage_options
    rk.write_dataset(remote_records(20), REMOTE_SCHEMA, url, shard_records=8, storage_options=options)
    rk.write_dataset(remote_records(20), REMOTE_SCHEMA, tmp_path / "items", shard_records=8)
    remote = list(rk.load_dataset(url, batch_size=8, storage_options=options, remote_io="fsspec"))
    local = list(rk.load_dataset(tmp_path / "items", batch_size=8))
    assert [b["name"].numpy().tolist() for b in remote] == [b["name"].numpy().tolist() for b in local]
    np.testing.assert_array_equal(
        np.concatenate([b["values"].numpy() for b in remote]),
        np.concatenate([b["values"].numpy() for b in local]),
    )


def test_load_dataset_through_tensorflows_filesystem(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other way: a scheme TensorFlow registers (``ram://``, its in-memory filesystem)
    has its shards read by TensorFlow itself. fsspec gets a ``ram`` protocol for the
    test (its in-memory filesystem), and every object is copied into TensorFlow's
    ``ram://``, so both see the same bytes: recordkit reads the manifest through
    fsspec, TensorFlow the shards."""
    import fsspec
    import tensorflow as tf
    from fsspec.implementations.memory import MemoryFileSystem

    class RamFileSystem(MemoryFileSystem):  # type: ignore[misc]
        protocol = "ram"
        store: dict[str, object] = {}  # noqa: RUF012 - fsspec's own pattern: one store per class
        pseudo_dirs = [""]  # noqa: RUF012

    fsspec.register_implementation("ram", RamFileSystem, clobber=True)
    url = "ram://recordkit-test/items"
    rk.write_dataset(remote_records(20), REMOTE_SCHEMA, url, shard_records=8)
    root = location(url)
    tf.io.gfile.makedirs(url)
    for name in root.list():
        with tf.io.gfile.GFile(f"{url}/{name}", "wb") as out:
            out.write(root.join(name).read_bytes())
    names = [
        n for b in rk.load_dataset(url, batch_size=8, remote_io="auto") for n in b["name"].numpy().tolist()
    ]
    assert names == [f"item-{i}".encode() for i in range(20)]
    from recordkit.dataset._shards import Shard  # private: a shard built by hand for the filesystem choice
    from recordkit.read._shard_stream import _streamed

    assert not _streamed(Shard(root.join("train-00000.tfrecord"), "train-00000.tfrecord"), "auto")
