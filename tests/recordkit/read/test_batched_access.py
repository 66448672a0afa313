"""Random access in batches (sdk/recordkit/read/_batched_access.py and
RandomAccess.read_batch): one read per contiguous run of records, decoded values in the
order asked, the same as one record at a time, for every built-in codec."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import EVERY_CODEC, every_codec_records
from hypothesis import given, settings
from hypothesis import strategies as st

import recordkit as rk
from recordkit.errors import CorruptRecordError
from recordkit.read import _batched_access
from recordkit.storage import RangeReader
from recordkit.testing import assert_values_equal


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batched") / "every"
    rk.write_dataset(every_codec_records(12), EVERY_CODEC, path, progress=False, shard_records=4)
    return path


class CountingReader(RangeReader):
    """A RangeReader that remembers the ranges it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, int, int]] = []

    def read_many(self, requests: list[tuple[Any, int, int]]) -> list[bytes | OSError]:
        self.asked += [(str(where), offset, size) for where, offset, size in requests]
        return super().read_many(requests)


def assert_same_records(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for w, g in zip(want, got, strict=True):
        assert set(g) == set(w)
        for name in w:
            assert_values_equal(w[name], g[name], path=name)


@pytest.mark.parametrize("threads", [0, 3])
def test_a_batch_holds_the_records_asked_for_in_their_order_for_every_codec(
    dataset: Path, threads: int
) -> None:
    ds = rk.RandomAccess(dataset)
    indices = [11, 0, 5, 4, 6, 5, 1, 10]  # out of order, across shards, one asked twice
    pool = ThreadPoolExecutor(threads) if threads else None
    got = ds.read_batch(np.asarray(indices), pool)
    assert_same_records([ds[i] for i in indices], got)
    if pool is not None:
        pool.shutdown()


def test_records_that_lie_end_to_end_are_read_in_one_read_per_run(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset)
    ds.shards.files = reader = CountingReader()
    ds.read_batch([6, 1, 0, 2, 5, 3, 9])  # shard 0: 0-3; shard 1: 5, 6; shard 2: 9
    assert [Path(where).name for where, _, _ in reader.asked] == [
        "train-00000.tfrecord",
        "train-00001.tfrecord",
        "train-00002.tfrecord",
    ]
    whole = (dataset / "train-00000.tfrecord").stat().st_size
    assert reader.asked[0][1:] == (0, whole)  # records 0 to 3: the whole of shard 0, one read


def test_a_damaged_record_in_a_run_is_named_by_shard_and_record(dataset: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    rk.write_dataset(every_codec_records(8), EVERY_CODEC, copy, progress=False, shard_records=4)
    shard = copy / "train-00001.tfrecord"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0xFF  # the data CRC of the shard's last record
    shard.write_bytes(bytes(data))
    ds = rk.RandomAccess(copy)
    assert_same_records([ds[4], ds[0]], ds.read_batch([4, 0]))
    with pytest.raises(CorruptRecordError, match=r"shard train-00001\.tfrecord.*record 7"):
        ds.read_batch([4, 5, 6, 7])


def test_records_a_few_records_apart_share_a_read_and_distant_ones_do_not(tmp_path: Path) -> None:
    schema = rk.Schema(name="texts", fields={"text": rk.FieldSpec(codec="text")})
    records = [{"text": f"{i:05d}" + "x" * 6_000} for i in range(12)]  # about 6 KB each
    rk.write_dataset(records, schema, tmp_path / "texts", shard_records=12, progress=False)
    ds = rk.RandomAccess(tmp_path / "texts")
    ds.shards.files = reader = CountingReader()
    got = ds.read_batch([3, 0, 2])  # 1 record between 0 and 2, none between 2 and 3: one read
    assert [r["text"][:5] for r in got] == ["00003", "00000", "00002"]
    assert len(reader.asked) == 1
    assert reader.asked[0][2] < 4 * 6_100  # records 0 to 3, no further
    reader.asked.clear()
    got = ds.read_batch([0, 5, 11])  # 4 and 5 records (more than 16 KiB) between them
    assert [r["text"][:5] for r in got] == ["00000", "00005", "00011"]
    assert len(reader.asked) == 3


def test_shards_too_large_to_plan_together_are_planned_shard_by_shard_alike(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = rk.RandomAccess(dataset)
    indices = [11, 0, 5, 4, 6, 5, 1, 10, 3, 2]
    want = ds.read_batch(indices)
    ds.shards.files = reader = CountingReader()
    ds.read_batch(indices)
    runs = list(reader.asked)
    monkeypatch.setattr(_batched_access, "_KEY_BITS", 0)  # every batch "too large"
    reader.asked.clear()
    assert_same_records(want, ds.read_batch(indices))
    assert reader.asked == runs  # the same reads


class LocalCountingReader(CountingReader):
    """A CountingReader that also counts the ranges of local files read one by one."""

    def __init__(self) -> None:
        super().__init__()
        self.one_by_one = 0

    def local_reads(self, files: list[Any], file_of: list[int], offsets: list[int], sizes: list[int]) -> Any:
        self.one_by_one += len(offsets)
        return super().local_reads(files, file_of, offsets, sizes)


def _large_records(path: Path, count: int = 12) -> Path:
    """A dataset of ``count`` records of 20 KB and more (4 a shard): records read a read each."""
    schema = rk.Schema(name="texts", fields={"text": rk.FieldSpec(codec="text")})
    records = [{"text": f"{i:05d}" + "x" * (20_000 + 500 * i)} for i in range(count)]
    rk.write_dataset(records, schema, path, shard_records=4, progress=False)
    return path


def test_large_records_are_read_a_read_each_and_checked_as_in_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = rk.RandomAccess(_large_records(tmp_path / "large"))
    indices = [5, 4, 0, 11, 5, 6, 1, 2]  # end to end, across shards, one asked twice
    located = [ds.shards.locate(i) for i in indices]
    ds.shards.files = reader = LocalCountingReader()
    got = ds.serialized(located)
    records = ds.read_batch(indices)
    assert reader.asked == []  # no run read
    assert reader.one_by_one == 2 * len(indices)
    monkeypatch.setattr(_batched_access, "ONE_BY_ONE_BYTES", 1 << 62)  # read in runs instead
    assert ds.serialized(located) == got
    assert_same_records(records, ds.read_batch(indices))
    assert [r["text"][:5] for r in records] == [f"{i:05d}" for i in indices]
    assert len(reader.asked) < len(indices)  # neighbours share a read


@pytest.mark.parametrize("damage", ["data", "length", "cut"])
def test_a_damaged_large_record_is_named_as_in_runs(tmp_path: Path, damage: str) -> None:
    path = _large_records(tmp_path / "large", count=8)
    ds = rk.RandomAccess(path)
    want = ds.read_batch([4, 0])  # shard 1 opened (and its size checked) before it is damaged
    shard = path / "train-00001.tfrecord"
    data = bytearray(shard.read_bytes())
    if damage == "data":
        data[-3] ^= 0xFF  # the data CRC of the shard's last record (7)
    elif damage == "length":
        data[ds.shards.index(1).span(3)[0]] ^= 0x01  # its length
    else:
        del data[-10:]  # the file cut short in its last record, while it is read
    shard.write_bytes(bytes(data))
    assert_same_records(want, ds.read_batch([4, 0]))
    with pytest.raises(CorruptRecordError, match=r"shard train-00001\.tfrecord.*record 7"):
        ds.read_batch([4, 7, 0])
    with pytest.raises(CorruptRecordError, match=r"shard train-00001\.tfrecord.*record 7"):
        ds.serialized([ds.shards.locate(i) for i in (4, 7, 0)])


def _plain(runs: Any) -> tuple[list[int], list[int], list[int], list[int]]:
    return runs.shards, runs.starts.tolist(), runs.ends.tolist(), runs.run_of.tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 100_000), st.integers(16, 40_000)), min_size=1),
    st.integers(0, 3),
    st.booleans(),
)
def test_runs_planned_at_once_are_those_planned_shard_by_shard(
    spans: list[tuple[int, int, int]], far: int, in_order: bool
) -> None:
    """In order or not, over one shard or several (far apart), with records asked twice
    or overlapping (as a hostile index may give): the same runs as the plain plan."""
    if in_order:
        spans = sorted(spans)
    shard_of = np.asarray([s * (1 + 1000 * far) for s, _, _ in spans], dtype=np.int64)
    offsets = np.asarray([o for _, o, _ in spans], dtype=np.int64)
    sizes = np.asarray([z for _, _, z in spans], dtype=np.int64)
    one = np.zeros_like(shard_of) + 7
    saved = _batched_access._FEW_TO_PLAN, _batched_access._PACKED_SORT
    try:
        # planned in numpy whatever the batch's length, sorted by an argsort, then by packed keys
        for packed_from in (1 << 30, 0):
            _batched_access._FEW_TO_PLAN, _batched_access._PACKED_SORT = 0, packed_from
            want = _batched_access._runs_shard_by_shard(shard_of, offsets, sizes)
            assert _plain(_batched_access._runs(shard_of, offsets, sizes)) == _plain(want)
            want = _batched_access._runs_shard_by_shard(one, offsets, sizes)
            assert _plain(_batched_access._runs(one, offsets, sizes)) == _plain(want)
    finally:
        _batched_access._FEW_TO_PLAN, _batched_access._PACKED_SORT = saved
