"""The storage layer against a local folder and real local object-store servers."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from _object_stores import Bucket

from recordkit.errors import MissingExtraError
from recordkit.storage import Location, _clients, is_remote, location


def test_local_paths_and_file_urls_are_local(tmp_path: Path) -> None:
    assert not is_remote(str(tmp_path))
    assert not is_remote(tmp_path)
    assert not is_remote(f"file://{tmp_path}")
    assert is_remote("s3://bucket/x")
    assert is_remote("gs://b")
    assert is_remote("memory://x")
    where = location(f"file://{tmp_path}")
    assert where.is_local
    assert where.path == tmp_path
    assert location(tmp_path).join("a", "b.txt").path == tmp_path / "a" / "b.txt"
    with pytest.raises(ValueError, match="not a local path"):
        _ = location("s3://bucket/key").path


def test_remote_urls_join_and_name() -> None:
    root = location("s3://bucket/data/", {"anon": True})
    shard = root.join("train-00000.tfrecord")
    assert shard.url == "s3://bucket/data/train-00000.tfrecord"
    assert shard.name == "train-00000.tfrecord"
    assert shard.parent == root
    assert shard.storage_options == {"anon": True}


def test_a_location_says_whether_it_has_a_local_path_and_a_pattern(tmp_path: Path) -> None:
    """What code above the storage layer asks instead of checking types: the local path
    (None for a remote object), whether a name is a glob pattern, whether a file is there."""
    local = location(tmp_path / "a.tfrecord")
    remote = location("s3://bucket/data/a.tfrecord", {"anon": True})
    assert local.local_path == tmp_path / "a.tfrecord"
    assert remote.local_path is None
    assert not local.is_pattern
    assert not remote.is_pattern
    assert location(tmp_path / "a-*.tfrecord").is_pattern
    assert location("s3://bucket/data/a-[01].tfrecord").is_pattern
    assert not local.is_file()
    local.write_bytes(b"x")
    assert local.is_file()
    assert not location(tmp_path).is_file()  # a folder is not a file
    memory = location("memory://recordkit-storage-test/is-file/a.bin")
    assert not memory.is_file()
    memory.write_bytes(b"x")
    assert memory.is_file()


def _exercise(root: Location) -> None:
    """Every operation on one folder: write whole, stream, list, size, read, remove."""
    root.mkdir()
    manifest = root.join("dataset.json")
    assert not manifest.exists()
    assert root.list() == []
    manifest.write_bytes(b'{"a": 1}')
    manifest.write_bytes(b'{"a": 2}')  # replaced whole
    assert manifest.read_bytes() == b'{"a": 2}'
    payload = os.urandom(6 << 20)  # over S3's 5 MiB part minimum: a real multipart upload
    with root.join("big.bin").open_write() as out:
        for start in range(0, len(payload), 1 << 20):
            out.write(payload[start : start + (1 << 20)])
    assert root.join("big.bin").size() == len(payload)
    with root.join("big.bin").open_read() as stream:
        assert hashlib.sha256(stream.read()).digest() == hashlib.sha256(payload).digest()
    assert root.list() == ["big.bin", "dataset.json"]
    stream = root.join("broken.bin").open_write()
    stream.write(payload)
    stream.abort()
    assert not root.join("broken.bin").exists()  # an aborted upload leaves nothing
    root.join("big.bin").remove()
    root.join("big.bin").remove()  # missing is fine
    assert root.list() == ["dataset.json"]
    assert list(root.walk_files()) == ["dataset.json"]
    # Patterns, and several files removed at once (missing ones are fine).
    root.join("gen-1").mkdir()
    for name in ("a-0.tfrecord", "a-1.tfrecord", "b-0.tfrecord", "gen-1/a-0.tfrecord"):
        root.join(name).write_bytes(name.encode())
    assert root.list_folders() == ["gen-1"]  # (what an overwrite's sweep lists first)
    assert root.join("gen-1").list_folders() == []
    assert root.join("no-such-folder").list_folders() == []
    assert [f.name for f in root.join("a-*.tfrecord").glob()] == ["a-0.tfrecord", "a-1.tfrecord"]
    assert [f.read_bytes() for f in root.join("a-*.tfrecord").glob()] == [b"a-0.tfrecord", b"a-1.tfrecord"]
    assert root.join("b-0.tfrecord").glob() == [root.join("b-0.tfrecord")]
    assert root.join("c-*.tfrecord").glob() == []
    root.remove_files(["a-0.tfrecord", "gen-1/a-0.tfrecord", "not-there.tfrecord"])
    assert list(root.walk_files()) == ["a-1.tfrecord", "b-0.tfrecord", "dataset.json"]
    root.remove_files([])


def test_local_folder(tmp_path: Path) -> None:
    _exercise(location(tmp_path / "ds"))
    assert not [p for p in (tmp_path / "ds").iterdir() if p.name.startswith(".")]  # no temp left


def test_object_store(bucket: Bucket) -> None:
    _exercise(location(bucket.join("ds"), bucket.storage_options))


def test_memory_protocol() -> None:
    _exercise(location("memory://recordkit-storage-test/ds"))


def test_a_missing_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    def refuse(protocol: str, **options: object) -> None:
        raise ImportError("Install s3fs to access S3")

    monkeypatch.setattr(fsspec, "filesystem", refuse)
    with pytest.raises(MissingExtraError, match=r"pip install 'recordkit\[s3\]'"):
        _clients.filesystem("s3", {})
    with pytest.raises(MissingExtraError, match=r"pip install 'recordkit\[gcs\]'"):
        location("gs://bucket/x").exists()
