"""The processes of one machine download a remote split's shard table once (issue #37):
rank processes started together, PyTorch DataLoader workers (fork and spawn) and Grain
workers, on the local S3 server (127.0.0.1). The table goes into the user's cache folder
(``RECORDKIT_CACHE``; each test has its own, see tests/conftest.py), keyed by its sha256
and hashed on every read; the GETs are counted by the server, from every process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _object_stores import Bucket, ServerGets

import recordkit as rk
from recordkit.dataset import _manifest  # private: the shard-table threshold, lowered for a few shards
from recordkit.errors import ManifestError
from recordkit.storage import CACHE_OPTION, location

SCHEMA = rk.Schema.loads(
    """
name: tiny
fields:
  caption: {codec: text}
"""
)
SHARDS = 8


@pytest.fixture
def remote(s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch) -> str:
    """A remote dataset of 8 one-record shards, its split listed by a shard table."""
    monkeypatch.setattr(_manifest, "SHARD_TABLE_FROM", 4)
    url = s3_bucket.join("shared")
    records = [{"caption": f"record {i}"} for i in range(SHARDS)]
    rk.write_dataset(
        records, url, SCHEMA, shard_records=1, progress=False, storage_options=s3_bucket.storage_options
    )
    return url


def table_of(url: str, bucket: Bucket) -> _manifest.ShardTableFile:
    """The manifest's reference to the split's shard table."""
    ref = rk.Manifest.load(url, storage_options={**bucket.storage_options, CACHE_OPTION: False})
    table = ref.splits["train"].shard_table
    assert table is not None
    return table


def cached_table(sha256: str) -> Path:
    """Where the default cache keeps the table of digest ``sha256``."""
    return Path(os.environ["RECORDKIT_CACHE"]) / "shard-tables" / sha256


def captions(ds: Any) -> list[str]:
    return [record["caption"] for record in ds.records()]


EXPECTED = [f"record {i}" for i in range(SHARDS)]

RANK = """
import sys
import recordkit as rk
sys.stdin.readline()  # started: wait until every rank is
ds = rk.open({url!r}, "train", storage_options={options!r})
print(len(ds), ds[len(ds) - 1]["caption"])
"""


def test_rank_processes_started_together_download_a_remote_shard_table_once(
    remote: str, s3_bucket: Bucket, s3_server_gets: ServerGets
) -> None:
    table = table_of(remote, s3_bucket)
    s3_server_gets.clear()
    script = RANK.format(url=remote, options=s3_bucket.storage_options)
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    for rank in ranks:  # all four open the dataset at once
        assert rank.stdin is not None
        rank.stdin.write("go\n")
        rank.stdin.flush()
    outputs = [rank.communicate(timeout=240)[0] for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0] * 4
    assert outputs == [f"{SHARDS} record {SHARDS - 1}\n"] * 4
    # Each rank reads dataset.json; one downloads the table while the others wait for it.
    assert s3_server_gets.of("dataset.json") == 4
    assert s3_server_gets.of(table.file) == 1
    assert hashlib.sha256(cached_table(table.sha256).read_bytes()).hexdigest() == table.sha256


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_dataloader_workers_reuse_the_table_their_parent_loaded(
    remote: str, s3_bucket: Bucket, s3_server_gets: ServerGets, start: str
) -> None:
    torch = pytest.importorskip("torch")
    table = table_of(remote, s3_bucket)
    s3_server_gets.clear()
    ds = rk.open(remote, "train", storage_options=s3_bucket.storage_options)
    assert (s3_server_gets.of("dataset.json"), s3_server_gets.of(table.file)) == (1, 1)
    dataset = ds.torch()
    # Forked: two epochs, workers forked anew for each from the parent that holds the
    # table. Spawned: one epoch (a second's workers would start as the first's did, from
    # the same filled cache, at about 4 s of CPU each to import torch and recordkit).
    epochs = 2 if start == "fork" else 1
    for _ in range(epochs):
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=2, num_workers=2, collate_fn=dataset.collate_fn, multiprocessing_context=start
        )
        assert [caption for batch in loader for caption in batch["caption"]] == EXPECTED
    # Forked workers hold the parent's manifest and table: no request. Spawned ones open
    # the dataset again: dataset.json each, the table from the cache the parent filled.
    assert s3_server_gets.of("dataset.json") == (1 if start == "fork" else 1 + epochs * 2)
    assert s3_server_gets.of(table.file) == 1


def test_grain_workers_read_the_table_from_the_cache_their_parent_filled(
    remote: str, s3_bucket: Bucket, s3_server_gets: ServerGets
) -> None:
    grain = pytest.importorskip("grain")
    table = table_of(remote, s3_bucket)
    s3_server_gets.clear()
    source = rk.open(remote, "train", storage_options=s3_bucket.storage_options).grain()
    sampler = grain.samplers.IndexSampler(num_records=len(source), shuffle=False, num_epochs=1, seed=0)
    loaded = grain.DataLoader(data_source=source, sampler=sampler, worker_count=2)
    assert [record["caption"] for record in loaded] == EXPECTED
    assert s3_server_gets.of("dataset.json") == 1 + 2  # the parent, then each worker
    assert s3_server_gets.of(table.file) == 1


def test_a_damaged_cached_table_is_fetched_again_and_replaced(
    remote: str, s3_bucket: Bucket, s3_server_gets: ServerGets
) -> None:
    table = table_of(remote, s3_bucket)
    s3_server_gets.clear()
    assert captions(rk.open(remote, "train", storage_options=s3_bucket.storage_options)) == EXPECTED
    cached = cached_table(table.sha256)
    damaged = bytearray(cached.read_bytes())
    damaged[20] ^= 0x01  # a record count changed by one bit
    cached.write_bytes(bytes(damaged))
    assert captions(rk.open(remote, "train", storage_options=s3_bucket.storage_options)) == EXPECTED
    assert s3_server_gets.of(table.file) == 2
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == table.sha256
    assert captions(rk.open(remote, "train", storage_options=s3_bucket.storage_options)) == EXPECTED
    assert s3_server_gets.of(table.file) == 2


def test_with_the_cache_turned_off_each_open_downloads_the_table_and_keeps_nothing(
    remote: str, s3_bucket: Bucket, s3_server_gets: ServerGets, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = table_of(remote, s3_bucket)
    s3_server_gets.clear()
    for _ in range(2):
        assert (
            captions(rk.open(remote, "train", storage_options=s3_bucket.storage_options, cache=False))
            == EXPECTED
        )
    assert s3_server_gets.of(table.file) == 2
    assert not cached_table(table.sha256).parent.exists()
    monkeypatch.setenv("RECORDKIT_CACHE", "off")
    for _ in range(2):
        assert captions(rk.open(remote, "train", storage_options=s3_bucket.storage_options)) == EXPECTED
    assert s3_server_gets.of(table.file) == 4
    with pytest.raises(
        TypeError, match=r"cache= takes a ShardCache, a folder, or False \(no cache\), not True"
    ):
        rk.open(remote, "train", storage_options=s3_bucket.storage_options, cache=True)  # type: ignore[arg-type]


def test_a_cache_folder_that_cannot_be_written_only_costs_the_download(
    remote: str,
    s3_bucket: Bucket,
    s3_server_gets: ServerGets,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    table = table_of(remote, s3_bucket)
    (tmp_path / "a-file").write_bytes(b"not a folder")
    monkeypatch.setenv("RECORDKIT_CACHE", str(tmp_path / "a-file"))
    s3_server_gets.clear()
    for _ in range(2):
        assert captions(rk.open(remote, "train", storage_options=s3_bucket.storage_options)) == EXPECTED
    assert s3_server_gets.of(table.file) == 2


def test_a_remote_table_that_differs_from_its_listed_sha256_is_refused_and_not_cached(
    remote: str, s3_bucket: Bucket
) -> None:
    table = table_of(remote, s3_bucket)
    where = location(f"{remote}/{table.file}", s3_bucket.storage_options)
    changed = bytearray(where.read_bytes())
    changed[20] ^= 0x01
    where.write_bytes(bytes(changed))
    with pytest.raises(
        ManifestError, match=rf"shard table {table.file} has sha256 .* \(changed or damaged\)"
    ):
        rk.open(remote, "train", storage_options=s3_bucket.storage_options)
    assert not cached_table(table.sha256).exists()
