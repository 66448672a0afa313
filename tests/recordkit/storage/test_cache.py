"""The local shard cache (sdk/recordkit/storage/_cache.py, ``rk.open(url, cache=...)``):
a second epoch over the local S3 server makes no shard GETs, every cached shard is
checked against the manifest's sha256, and the folder stays under its size limit."""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, remote_records

import recordkit as rk
from recordkit.storage import CACHE_OPTION, ShardCache, _cache, location


@pytest.fixture
def s3_gets(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every GET the S3 client sends from this process, counted by object key."""
    s3fs = pytest.importorskip("s3fs")
    gets: Counter[str] = Counter()
    call = s3fs.S3FileSystem._call_s3

    async def counting(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "get_object":
            gets[kwargs["Key"]] += 1
        return await call(self, method, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", counting)
    return gets


def shard_gets(gets: Counter[str]) -> int:
    """The GETs of shards (not of dataset.json or of the record indexes)."""
    return sum(count for key, count in gets.items() if key.endswith(".tfrecord"))


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no cached file is known to have been checked yet."""
    monkeypatch.setattr(_cache, "_CHECKED", {})


def write_remote(bucket: Bucket, count: int = 40) -> str:
    url = bucket.join("cached")
    options = bucket.storage_options
    rk.write_dataset(
        remote_records(count), REMOTE_SCHEMA, url, shard_records=10, progress=False, storage_options=options
    )
    return url


def names(records: Any) -> list[str]:
    return [record["name"] for record in records]


def test_with_the_cache_on_a_second_epoch_over_s3_makes_no_shard_gets(
    s3_bucket: Bucket, s3_gets: Counter[str], tmp_path: Path
) -> None:
    url = write_remote(s3_bucket)
    cache = rk.ShardCache(tmp_path / "cache", max_bytes=1 << 20)
    ds = rk.open(url, "train", storage_options=s3_bucket.storage_options, cache=cache)
    s3_gets.clear()

    first = names(ds.records())
    assert shard_gets(s3_gets) == 4  # each shard fetched whole, once
    s3_gets.clear()
    second = names(ds.records())
    by_index = [ds[i]["name"] for i in range(len(ds))]

    assert shard_gets(s3_gets) == 0
    assert first == second == by_index == [f"item-{i}" for i in range(40)]
    assert len(os.listdir(cache.directory)) == 4
    # A later run (a new handle) reads its shards from the same folder too.
    s3_gets.clear()
    again = rk.open(url, "train", storage_options=s3_bucket.storage_options, cache=cache)
    assert names(again.records()) == first
    assert shard_gets(s3_gets) == 0


def test_without_the_cache_every_epoch_gets_the_shards_again(
    s3_bucket: Bucket, s3_gets: Counter[str]
) -> None:
    url = write_remote(s3_bucket)
    ds = rk.open(url, "train", storage_options=s3_bucket.storage_options)
    names(ds.records())
    s3_gets.clear()
    names(ds.records())
    assert shard_gets(s3_gets) >= 4


def test_a_cached_shard_damaged_on_disk_is_fetched_again_on_its_first_use(
    s3_bucket: Bucket, s3_gets: Counter[str], tmp_path: Path, fresh_process: None
) -> None:
    url = write_remote(s3_bucket)
    cache = rk.ShardCache(tmp_path / "cache")
    ds = rk.open(url, "train", storage_options=s3_bucket.storage_options, cache=cache)
    expected = names(ds.records())
    entry = sorted(Path(cache.directory).iterdir())[0]
    damaged = bytearray(entry.read_bytes())
    damaged[20] ^= 0xFF
    entry.write_bytes(bytes(damaged))
    _cache._CHECKED.clear()  # the next use is a new process's first
    s3_gets.clear()

    assert (
        names(rk.open(url, "train", storage_options=s3_bucket.storage_options, cache=cache).records())
        == expected
    )
    assert shard_gets(s3_gets) == 1
    assert hashlib.sha256(entry.read_bytes()).hexdigest() == entry.name


def test_a_shard_that_differs_from_its_manifest_sha256_is_refused_and_not_cached(
    s3_bucket: Bucket, tmp_path: Path
) -> None:
    url = write_remote(s3_bucket)
    manifest = rk.open(url, storage_options=s3_bucket.storage_options).manifest
    assert manifest is not None
    shard = manifest.splits["train"].shards[1]
    where = location(f"{url}/{shard.file}", s3_bucket.storage_options)
    changed = bytearray(where.read_bytes())
    changed[-1] ^= 0xFF  # same size: only the sha256 tells
    where.write_bytes(bytes(changed))
    cache = rk.ShardCache(tmp_path / "cache")
    ds = rk.open(url, "train", storage_options=s3_bucket.storage_options, cache=cache)

    with pytest.raises(rk.errors.CorruptRecordError) as caught:
        list(ds.records())

    assert f"has sha256 {hashlib.sha256(changed).hexdigest()}, the manifest lists {shard.sha256}" in str(
        caught.value
    )
    assert shard.file in str(caught.value)
    assert not (Path(cache.directory) / str(shard.sha256)).exists()
    assert not [p for p in Path(cache.directory).iterdir() if p.name.endswith(".tmp")]


def memory_object(data: bytes) -> tuple[str, str]:
    """A new object in fsspec's in-memory filesystem: its URL and sha256."""
    url = f"memory://rk-cache-{uuid.uuid4().hex}/shard"
    location(url).write_bytes(data)
    return url, hashlib.sha256(data).hexdigest()


def test_the_cache_stays_under_its_limit_deleting_the_least_recently_used_first(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache", max_bytes=250)
    objects = [memory_object(bytes([i]) * 100) for i in range(3)]
    cached = []
    for url, digest in objects[:2]:
        where = location(url, {CACHE_OPTION: cache}).with_sha256(digest)
        cached.append(where.cached_file())
    first, second = cached
    assert first is not None
    assert second is not None
    os.utime(second, (1_000_000, 1_000_000))  # the second used longest ago
    os.utime(first, (2_000_000, 2_000_000))

    url, digest = objects[2]
    third = location(url, {CACHE_OPTION: cache}).with_sha256(digest)
    assert third.read_range(10, 5) == bytes([2]) * 5

    assert sorted(p.name for p in Path(cache.directory).iterdir()) == sorted([objects[0][1], digest])
    assert cache.usage() == 200


def test_an_object_larger_than_the_whole_cache_is_read_from_the_store(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache", max_bytes=50)
    url, digest = memory_object(b"x" * 100)
    where = location(url, {CACHE_OPTION: cache}).with_sha256(digest)
    assert where.cached_file() is None
    assert where.read_bytes() == b"x" * 100
    assert cache.usage() == 0


def test_only_objects_with_a_listed_sha256_are_cached(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache")
    url, _ = memory_object(b"a manifest, which changes")
    where = location(url, {CACHE_OPTION: cache})
    assert where.read_bytes() == b"a manifest, which changes"
    assert where.cached_file() is None
    assert not Path(cache.directory).exists()


def test_a_cache_is_given_a_positive_size_and_a_storage_option_holds_only_a_cache(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes must be a positive number, not 0"):
        ShardCache(tmp_path, max_bytes=0)
    with pytest.raises(TypeError, match="takes a ShardCache or False, not str"):
        location("memory://bucket/x", {CACHE_OPTION: str(tmp_path)})
    assert ShardCache("~/rk-cache").directory == os.path.expanduser("~/rk-cache")


@pytest.mark.slow
def test_tf_data_reads_the_cached_shards_too(
    s3_bucket: Bucket, s3_gets: Counter[str], tmp_path: Path
) -> None:
    url = write_remote(s3_bucket)
    ds = rk.open(url, "train", storage_options=s3_bucket.storage_options, cache=tmp_path / "cache")
    first = [name.decode() for batch in ds.tf(batch_size=8) for name in batch["name"].numpy()]
    s3_gets.clear()
    second = [name.decode() for batch in ds.tf(batch_size=8) for name in batch["name"].numpy()]
    assert first == second == [f"item-{i}" for i in range(40)]
    assert shard_gets(s3_gets) == 0


class SignallingCache(ShardCache):
    """A ShardCache that says when a read through it waits for another's download."""

    def _wait_for_download(self, lock: int) -> None:
        WAITING.set()
        super()._wait_for_download(lock)


WAITING = threading.Event()


@pytest.mark.skipif(_cache.fcntl is None, reason="the download lock is POSIX flock")
def test_a_read_that_misses_while_another_downloads_waits_and_reads_its_copy(tmp_path: Path) -> None:
    data = b"a shard table's bytes" * 100
    sha256 = hashlib.sha256(data).hexdigest()
    first, second = ShardCache(str(tmp_path)), SignallingCache(str(tmp_path))
    downloading, release = threading.Event(), threading.Event()
    downloads: list[str] = []

    def slow_download() -> bytes:
        downloads.append("first")
        downloading.set()
        release.wait(timeout=60)
        return data

    def download() -> bytes:
        downloads.append("second")
        WAITING.set()  # not waiting: let the first go on, the assertion below names it
        return data

    WAITING.clear()
    results: list[tuple[bytes, str]] = []
    one = threading.Thread(target=lambda: results.append(first.read_through(sha256, slow_download)))
    one.start()
    downloading.wait(timeout=60)
    two = threading.Thread(target=lambda: results.append(second.read_through(sha256, download)))
    two.start()
    WAITING.wait(timeout=60)  # the second read found no copy, and waits for the first's
    release.set()
    one.join(timeout=60)
    two.join(timeout=60)
    assert downloads == ["first"]
    assert results == [(data, sha256), (data, sha256)]
    assert first.entry(sha256).read_bytes() == data


@pytest.mark.skipif(_cache.fcntl is None, reason="the download lock is POSIX flock")
def test_a_shard_fetch_that_misses_while_another_downloads_waits_and_uses_its_copy(tmp_path: Path) -> None:
    data = b"a shard's bytes" * 1000
    sha256 = hashlib.sha256(data).hexdigest()
    first, second = ShardCache(str(tmp_path / "cache")), SignallingCache(str(tmp_path / "cache"))
    downloading, release = threading.Event(), threading.Event()
    downloads: list[str] = []

    def slow_download(local: str) -> None:
        downloads.append("first")
        downloading.set()
        release.wait(timeout=60)
        Path(local).write_bytes(data)

    def download(local: str) -> None:
        downloads.append("second")
        WAITING.set()  # not waiting: let the first go on, the assertion below names it
        Path(local).write_bytes(data)

    WAITING.clear()
    paths: list[Path | None] = []
    url = "s3://bucket/train-00000.tfrecord"
    one = threading.Thread(target=lambda: paths.append(first.fetch(url, sha256, len(data), slow_download)))
    one.start()
    downloading.wait(timeout=60)
    two = threading.Thread(target=lambda: paths.append(second.fetch(url, sha256, len(data), download)))
    two.start()
    WAITING.wait(timeout=60)  # the second fetch found no copy, and waits for the first's
    release.set()
    one.join(timeout=60)
    two.join(timeout=60)
    assert downloads == ["first"]
    assert paths == [first.entry(sha256), first.entry(sha256)]
    assert first.entry(sha256).read_bytes() == data
    assert sorted(os.listdir(first.directory)) == [sha256]  # the lock file went with the download


def test_a_read_through_the_cache_hashes_what_it_returns_and_keeps_only_what_matches(tmp_path: Path) -> None:
    data = b"listed bytes"
    sha256 = hashlib.sha256(data).hexdigest()
    cache = ShardCache(str(tmp_path))
    # The store holds other bytes than the manifest lists: returned with their digest, not kept.
    assert cache.read_through(sha256, lambda: b"other bytes") == (
        b"other bytes",
        hashlib.sha256(b"other bytes").hexdigest(),
    )
    assert not cache.entry(sha256).exists()
    assert cache.read_through(sha256, lambda: data) == (data, sha256)
    cache.entry(sha256).write_bytes(b"listed bytez")  # damaged on disk: deleted, fetched again
    assert cache.read_through(sha256, lambda: data) == (data, sha256)
    assert cache.entry(sha256).read_bytes() == data
