"""recordkit.RandomAccess (sdk/recordkit/read/_random_access.py, _shard_index.py): record
``i`` of a split by one pread, on real shards holding every built-in codec."""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import pickle
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import assert_record, expected, make_records, write

import recordkit as rk
from recordkit.errors import CorruptRecordError, DatasetError
from recordkit.testing import assert_values_equal

N = 11


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N, seed=2)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("random") / "data"
    write(path, records, shard_records=3)  # 4 shards
    return path


def test_ds_i_is_the_i_th_record_of_sequential_reading_for_every_codec(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    ds = rk.RandomAccess(dataset)
    sequential = list(rk.iter_records(dataset))
    assert len(ds) == len(sequential) == N
    for i in reversed(range(N)):  # out of order on purpose
        assert_values_equal(sequential[i], ds[i], path=f"record {i}")
        assert_record(expected(records[i]), ds[i])


def test_slices_lists_arrays_and_negative_indices(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset, fields=["caption"])
    captions = [r["caption"] for r in rk.iter_records(dataset, fields=["caption"])]
    assert ds[-1]["caption"] == captions[-1]
    assert [r["caption"] for r in ds[2:9:3]] == captions[2:9:3]
    assert [r["caption"] for r in ds[[7, 0, 7]]] == [captions[7], captions[0], captions[7]]
    assert [r["caption"] for r in ds[np.array([5, 1])]] == [captions[5], captions[1]]
    assert [set(r) for r in ds[:2]] == [{"caption"}] * 2
    with pytest.raises(IndexError, match=f"record {N} is out of range: the split has {N} records"):
        ds[N]
    with pytest.raises(TypeError, match="record indices must be integers"):
        ds["0"]  # type: ignore[call-overload]


def test_a_corrupt_record_is_named_with_its_shard_and_offset(dataset: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(dataset, tmp_path / "copy"))
    manifest = rk.Manifest.load(copy)
    shard = manifest.splits["train"].shards[1]
    assert shard.index is not None
    offsets = np.frombuffer((copy / shard.index.file).read_bytes()[16:], "<u8")
    data = bytearray((copy / shard.file).read_bytes())
    data[int(offsets[1]) + 30] ^= 0xFF  # inside record 1 of shard 1: global record 4
    (copy / shard.file).write_bytes(bytes(data))
    ds = rk.RandomAccess(copy)
    with pytest.raises(CorruptRecordError, match="data CRC mismatch") as info:
        ds[4]
    assert (info.value.context.shard, info.value.context.offset) == (shard.file, int(offsets[1]))
    assert ds[3]["caption"] == rk.RandomAccess(dataset)[3]["caption"]  # its neighbours still read


def test_threads_share_one_reader_with_few_open_files(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset, fields=["caption", "image"], max_open_files=1)
    want = [r["caption"] for r in rk.iter_records(dataset, fields=["caption"])]
    order = [i % N for i in range(0, 7 * N, 3)]  # jumps between shards
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: ds[i]["caption"], order))
    assert got == [want[i] for i in order]
    assert len(ds.shards.files) <= 1


def _captions_in_child(ds: rk.RandomAccess) -> list[str]:
    return [r["caption"] for r in ds[list(range(len(ds)))]]


def test_forked_processes_reopen_their_files(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset, fields=["caption"], max_open_files=2)
    parent = [r["caption"] for r in ds]  # the parent holds open files when it forks
    assert len(ds.shards.files) == 2
    with multiprocessing.get_context("fork").Pool(2) as pool:
        children = pool.map(_captions_in_child, [ds, ds])
    assert children == [parent, parent]
    assert [r["caption"] for r in ds] == parent  # the parent's files are still fine


def test_it_pickles_as_its_arguments(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset, fields=["label"])
    clone = pickle.loads(pickle.dumps(ds))
    assert len(clone) == N
    assert [r["label"] for r in clone] == [r["label"] for r in ds]


def test_a_dataset_without_indexes_is_scanned_once(dataset: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(dataset, tmp_path / "old"))
    raw = json.loads((copy / "dataset.json").read_text())
    raw["format"] = "recordkit.dataset/1"
    raw["splits"]["train"].pop("picture_sizes", None)  # recorded from format 6 on
    for shard in raw["splits"]["train"]["shards"]:
        (copy / shard.pop("index")["file"]).unlink()
    (copy / "dataset.json").write_text(json.dumps(raw))
    assert [r["caption"] for r in rk.RandomAccess(copy, fields="caption")[::-1]] == [
        r["caption"] for r in rk.RandomAccess(dataset, fields="caption")[::-1]
    ]


def test_a_changed_index_is_refused_when_its_shard_is_first_read(dataset: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(dataset, tmp_path / "changed"))
    index = rk.Manifest.load(copy).splits["train"].shards[0].index
    assert index is not None
    (copy / index.file).write_bytes((copy / index.file).read_bytes()[:-8])
    reader = rk.RandomAccess(copy)  # indexes load per shard, on its first read
    with pytest.raises(CorruptRecordError, match="rebuild it with `recordkit index`"):
        reader[0]


def test_compressed_shards_are_refused_with_the_reason(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    write(tmp_path / "gz", records[:2], compression="GZIP")
    with pytest.raises(DatasetError, match="random access needs uncompressed shards; these are stored GZIP"):
        rk.RandomAccess(tmp_path / "gz")


def test_the_old_name_of_the_opened_split_still_works_with_a_deprecation_warning(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset)
    with pytest.warns(
        DeprecationWarning, match=r"RandomAccess\.source is deprecated: use RandomAccess\.dataset"
    ):
        opened = ds.source
    assert opened is ds.dataset
    assert [f.name for f in opened.fields] == [f.name for f in ds.dataset.fields]


def test_a_record_number_past_its_shard_is_refused_naming_the_record_and_the_shard(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset, fields=["caption"])
    name = rk.Manifest.load(dataset).splits["train"].shards[1].file
    with pytest.raises(
        IndexError, match=re.escape(f"record 7 is out of range for shard {name}, which has 3 records")
    ):
        ds.records([(1, 0), (1, 7)])
    with pytest.raises(
        IndexError, match=re.escape(f"record 5 is out of range for shard {name}, which has 3 records")
    ):
        ds.records([(0, 1), (1, 5)])  # records of two shards: looked up shard by shard


def test_a_stream_given_fewer_rows_of_draws_than_records_is_refused_not_cut_short(dataset: Path) -> None:
    ds = rk.RandomAccess(dataset, fields=["caption"])
    located = [(0, 0), (0, 1), (1, 0)]
    with pytest.raises(ValueError, match="draws has 2 rows, for at least 3 records"):
        list(ds.stream(located, prefetch=2, draws=np.zeros((2, 5))))
    assert len(list(ds.stream(located, prefetch=2, draws=np.zeros((3, 5))))) == 3


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists descriptors through Linux's /proc")
def test_opening_a_dataset_again_and_again_leaves_no_shard_open(dataset: Path) -> None:
    # Each handle's reader keeps the shards it read open; a handle dropped closes them
    # (before, 20 opens of a 14-shard split held 260 descriptors: 70 opens hit ulimit's 1024).
    def open_shards() -> int:
        count = 0
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/self/fd/{fd}").startswith(str(dataset))
        return count

    for _ in range(4):
        ds = rk.open(dataset, "train")
        for i in range(len(ds)):
            ds[i]
        assert open_shards() > 0
        del ds
        gc.collect()
        assert open_shards() == 0
