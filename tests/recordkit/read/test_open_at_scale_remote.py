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
    return {"open": sum(opening.values()), "first": sum(first.values()), "last": sum(last.values())}


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
