"""Opening a remote split of many shards costs a fixed number of requests on the local S3
server (127.0.0.1): the manifest, its shard table, and then only the shards read; never
one request per shard. The requests are counted in the S3 client (aiobotocore)."""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from _object_stores import Bucket

import recordkit as rk
from recordkit.dataset import _manifest  # private: the shard-table threshold, lowered for a few shards

SCHEMA = rk.Schema.loads(
    """
name: tiny
fields:
  caption: {codec: text}
"""
)


@contextlib.contextmanager
def s3_requests() -> Iterator[collections.Counter[str]]:
    """The S3 API calls the client makes inside the block, by operation."""
    from aiobotocore.client import AioBaseClient

    counts: collections.Counter[str] = collections.Counter()
    original = AioBaseClient._make_api_call

    async def counting(self: Any, operation: str, params: Any) -> Any:
        counts[operation] += 1
        if operation == "GetObject":  # and which object: "GetObject <key>"
            counts[f"GetObject {params['Key'].rsplit('/', 1)[-1]}"] += 1
        return await original(self, operation, params)

    AioBaseClient._make_api_call = counting  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        AioBaseClient._make_api_call = original  # type: ignore[method-assign]


def requests_to_open_and_read(s3_bucket: Bucket, shards: int) -> dict[str, int]:
    url = s3_bucket.join(f"scale-{shards}")
    options = s3_bucket.storage_options
    records = [{"caption": f"record {i}"} for i in range(shards)]
    rk.write_dataset(records, url, SCHEMA, shard_records=1, progress=False, storage_options=options)
    with s3_requests() as opening:
        ds = rk.open(url, "train", storage_options=options)
        assert len(ds) == shards
    with s3_requests() as first:
        assert next(iter(ds.records()))["caption"] == "record 0"
    with s3_requests() as last:
        assert ds[shards - 1]["caption"] == f"record {shards - 1}"
    return {name: _calls(counts) for name, counts in (("open", opening), ("first", first), ("last", last))}


def _calls(counts: collections.Counter[str]) -> int:
    return sum(n for operation, n in counts.items() if " " not in operation)


def test_opening_a_remote_split_of_many_shards_takes_requests_independent_of_their_number(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_manifest, "SHARD_TABLE_FROM", 4)  # both splits listed by a shard table
    few = requests_to_open_and_read(s3_bucket, 6)
    many = requests_to_open_and_read(s3_bucket, 24)
    assert few == many
    # Opening: dataset.json and its shard table (3 HEADs, 2 GETs); the first record: the
    # first shard's size, then its bytes streamed (3 HEADs, 1 GET); the last record: the
    # last shard's size, its index, the record's bytes (1 HEAD, 2 GETs).
    assert many == {"open": 5, "first": 4, "last": 3}


def test_processes_sharing_a_cache_download_a_remote_shard_table_once(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr(_manifest, "SHARD_TABLE_FROM", 4)
    url = s3_bucket.join("shared-table")
    options = s3_bucket.storage_options
    records = [{"caption": f"record {i}"} for i in range(8)]
    rk.write_dataset(records, url, SCHEMA, shard_records=1, progress=False, storage_options=options)
    cache = rk.ShardCache(str(tmp_path / "cache"))
    opens = []
    for _ in range(3):  # what each rank or DataLoader worker of one machine does
        with s3_requests() as opening:
            ds = rk.open(url, "train", storage_options=options, cache=cache)
            assert ds[7]["caption"] == "record 7"
        opens.append(opening)
    table = next(name for name in opens[0] if name.startswith("GetObject train.shards."))
    # dataset.json each time; its shard table the first time only (then the checked copy).
    assert [o["GetObject dataset.json"] for o in opens] == [1, 1, 1]
    assert [o[table] for o in opens] == [1, 0, 0]
    assert [r["caption"] for r in rk.open(url, "train", storage_options=options, cache=cache).records()] == [
        r["caption"] for r in records
    ]
