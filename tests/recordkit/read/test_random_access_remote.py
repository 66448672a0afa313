"""Random access to remote datasets (sdk/recordkit/read/_shard_index.py over the storage
layer's RangeReader): RandomAccess, the PyTorch DataLoader and the Grain data source
over the local S3 server (and the GCS emulator) read what they read from the local copy;
indexes are checked; corruption names the shard and the record."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _object_stores import Bucket
from _reader_support import SCHEMA, make_records, write

import recordkit as rk
from recordkit.errors import CorruptRecordError, DatasetError
from recordkit.storage import Location, location
from recordkit.testing import assert_values_equal

pytestmark = pytest.mark.slow  # every test here talks to a local server

N = 10


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N, seed=5)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("ra-remote") / "data"
    write(path, records, shard_records=3)  # 4 shards
    return path


def _upload(bucket: Bucket, records: list[dict[str, Any]]) -> str:
    url = bucket.join("data")
    rk.write_dataset(
        records, SCHEMA, url, shard_records=3, progress=False, storage_options=bucket.storage_options
    )
    return url


def test_ds_i_equals_the_local_copys_for_every_i(
    bucket: Bucket, local: Path, records: list[dict[str, Any]]
) -> None:
    url = _upload(bucket, records)
    remote = rk.RandomAccess(url, storage_options=bucket.storage_options)
    near = rk.RandomAccess(local)
    assert len(remote) == len(near) == N
    for i in reversed(range(N)):  # out of order on purpose: every read jumps
        assert_values_equal(near[i], remote[i], path=f"record {i}")
    assert [r["caption"] for r in remote[[7, 1, 7]]] == [near[i]["caption"] for i in (7, 1, 7)]
    assert len(remote.shards.files) == 0  # a remote read holds no file open


def _captions_in_child(ds: rk.RandomAccess) -> list[str]:
    return [r["caption"] for r in ds[list(range(len(ds)))]]


def test_processes_forked_after_use_read_with_their_own_client(
    s3_bucket: Bucket, records: list[dict[str, Any]]
) -> None:
    url = _upload(s3_bucket, records)
    ds = rk.RandomAccess(url, fields=["caption"], storage_options=s3_bucket.storage_options)
    parent = [r["caption"] for r in ds]  # the parent's client is connected when it forks
    with multiprocessing.get_context("fork").Pool(2) as pool:
        children = pool.map(_captions_in_child, [ds, ds])
    assert children == [parent, parent]
    assert [r["caption"] for r in ds] == parent  # the parent's client still works


def test_a_torch_dataloader_with_two_workers_reads_the_local_copys_records(
    s3_bucket: Bucket, local: Path, records: list[dict[str, Any]]
) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from recordkit.torch import IterableDataset, MapDataset

    url = _upload(s3_bucket, records)
    options = s3_bucket.storage_options

    def batches(dataset: Any) -> list[dict[str, Any]]:
        loader = DataLoader(dataset, batch_size=3, num_workers=2, collate_fn=dataset.collate_fn)
        return list(loader)

    for kind in (MapDataset, IterableDataset):
        extra: dict[str, Any] = {"shuffle": True, "seed": 4, "window": 4} if kind is IterableDataset else {}
        remote = batches(kind(url, storage_options=options, **extra))
        near = batches(kind(local, **extra))
        assert [b["caption"] for b in remote] == [b["caption"] for b in near], kind.__name__
        for a, b in zip(remote, near, strict=True):
            assert torch.equal(a["image"], b["image"])
            assert torch.equal(a["label"], b["label"])
    assert sum(len(b["caption"]) for b in remote) == N


def test_a_grain_loader_with_two_workers_reads_the_local_copys_records(
    s3_bucket: Bucket, local: Path, records: list[dict[str, Any]]
) -> None:
    grain = pytest.importorskip("grain")
    from recordkit.grain import DataSource

    url = _upload(s3_bucket, records)

    def read(source: DataSource, workers: int = 0) -> list[dict[str, Any]]:
        sampler = grain.samplers.IndexSampler(num_records=len(source), shuffle=True, num_epochs=1, seed=2)
        return list(grain.DataLoader(data_source=source, sampler=sampler, worker_count=workers))

    remote = read(DataSource(url, fields=["caption", "depth"], storage_options=s3_bucket.storage_options), 2)
    near = read(DataSource(local, fields=["caption", "depth"]))
    assert [r["caption"] for r in remote] == [r["caption"] for r in near]
    for a, b in zip(remote, near, strict=True):
        np.testing.assert_array_equal(a["depth"], b["depth"])


def test_a_bit_flipped_remote_record_is_named_by_shard_and_record(
    s3_bucket: Bucket, records: list[dict[str, Any]]
) -> None:
    url = _upload(s3_bucket, records)
    options = s3_bucket.storage_options
    shard = rk.Manifest.load(location(url, options)).splits["train"].shards[1]
    assert shard.index is not None
    root = location(url, options)
    offsets = np.frombuffer(root.join(shard.index.file).read_bytes()[16:], "<u8")
    data = bytearray(root.join(shard.file).read_bytes())
    data[int(offsets[2]) + 30] ^= 0x01  # inside record 2 of shard 1: record 5 of the split
    root.join(shard.file).write_bytes(bytes(data))
    ds = rk.RandomAccess(url, storage_options=options)
    with pytest.raises(CorruptRecordError, match="data CRC mismatch") as info:
        ds[5]
    assert (info.value.context.shard, info.value.context.record) == (shard.file, 5)
    assert f"shard {shard.file}" in str(info.value.context.describe())
    assert "record 5" in info.value.context.describe()
    with pytest.raises(CorruptRecordError, match="data CRC mismatch") as info:
        ds[[3, 4, 5, 6]]  # fetched together: the same error, the same record named
    assert (info.value.context.shard, info.value.context.record) == (shard.file, 5)
    assert ds[4]["caption"] == records[4]["caption"]  # its neighbours still read


def test_a_remote_dataset_without_indexes_says_how_to_build_them(
    s3_bucket: Bucket, records: list[dict[str, Any]]
) -> None:
    url = _upload(s3_bucket, records[:4])
    root = location(url, s3_bucket.storage_options)
    raw = json.loads(root.join("dataset.json").read_bytes())
    raw["format"] = "recordkit.dataset/1"  # written before indexes were
    raw["splits"]["train"].pop("picture_sizes", None)  # recorded from format 6 on
    for shard in raw["splits"]["train"]["shards"]:
        root.join(shard.pop("index")["file"]).remove()
    root.join("dataset.json").write_bytes(json.dumps(raw).encode())
    with pytest.raises(DatasetError, match=rf"has no record index.*`recordkit index {url}`"):
        rk.RandomAccess(url, storage_options=s3_bucket.storage_options)[0]
    assert len(list(rk.iter_records(url, storage_options=s3_bucket.storage_options))) == 4  # still streams


def test_a_changed_remote_index_is_refused(s3_bucket: Bucket, records: list[dict[str, Any]]) -> None:
    url = _upload(s3_bucket, records[:4])
    root = location(url, s3_bucket.storage_options)
    index = rk.Manifest.load(root).splits["train"].shards[0].index
    assert index is not None
    root.join(index.file).write_bytes(root.join(index.file).read_bytes()[:-8])
    with pytest.raises(CorruptRecordError, match="rebuild it with `recordkit index`"):
        rk.RandomAccess(url, storage_options=s3_bucket.storage_options)[0]


def test_shard_sizes_come_from_one_listing_and_a_changed_shard_is_still_named(
    s3_bucket: Bucket, records: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3_bucket.join("data")
    options = s3_bucket.storage_options
    manifest = rk.write_dataset(
        records, SCHEMA, url, shard_records=1, progress=False, storage_options=options
    )
    shards = manifest.splits["train"].shards
    root = location(url, options)
    assert root.list_sizes()[shards[0].file] == shards[0].bytes
    asked: list[str] = []
    monkeypatch.setattr(Location, "size", lambda self: asked.append(self.name) or 0)
    assert len(rk.RandomAccess(url, fields="caption", storage_options=options)) == N
    assert asked == []  # no HEAD per shard: 10 shards, one LIST
    monkeypatch.undo()
    shard = root.join(shards[3].file)
    shard.write_bytes(shard.read_bytes()[:-1])
    with pytest.raises(CorruptRecordError, match=r"the file has \d+ bytes, the manifest says") as info:
        rk.RandomAccess(url, storage_options=options)
    assert info.value.context.shard == shards[3].file
    shard.remove()
    with pytest.raises(rk.errors.ManifestError, match="missing"):
        rk.RandomAccess(url, storage_options=options)
