"""Records fetched by index (shuffled epochs, resumes on other rank and worker counts,
mixtures, random access in batches) are parsed and decoded many at a time where they
share a layout (sdk/recordkit/read/_parsed_shard.py ``parsed_files``): the values,
dtypes, shapes and order are those of the record-by-record read of the same reader."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import assert_same

import recordkit as rk
from recordkit.read import _parsed_shard, _random_access  # private: to count the records decoded together

SCHEMA = rk.Schema(
    name="fixed",
    fields={
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [3]}),
        "counts": rk.FieldSpec(codec="tensor", options={"dtype": "int16", "shape": [2], "stored": "numbers"}),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 1000}),
        "tags": rk.FieldSpec(codec="label", options={"num_classes": 5, "multi": True}),
        "count": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        "weight": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
        "code": rk.FieldSpec(codec="text"),
        "extra": rk.FieldSpec(codec="tensor", options={"dtype": "uint8", "shape": [2]}, optional=True),
    },
)
RECORDS = 90
WINDOW = 16


def make_records(count: int, *, seed: int, varied: bool) -> list[dict[str, Any]]:
    """Records of one layout (``varied``: lengths and layouts that change from record to
    record: tags of 1 to 3 values, larger numbers, optional values left out)."""
    rng = np.random.default_rng(seed)
    return [
        {
            "embedding": rng.normal(size=3).astype(np.float32),
            "counts": (rng.integers(-300, 300, size=2) if varied else np.arange(2)).astype(np.int16),
            "label": int(rng.integers(0, 1000 if varied else 100)),
            "tags": [int(t) for t in rng.permutation(5)[: (1 + i % 3 if varied else 2)]],
            "count": int(rng.integers(-(2**40), 2**40)) if varied else 2**40 + i,
            "weight": float(np.float32(rng.normal())),
            "code": f"c{i % 10}",
            "extra": None if varied and i % 4 == 0 else np.array([i % 256, 7], np.uint8),
        }
        for i in range(count)
    ]


@pytest.fixture(scope="module", params=["one layout", "varied layouts"])
def dataset(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp(request.param.replace(" ", "-")) / "data"
    records = make_records(RECORDS, seed=7, varied=request.param == "varied layouts")
    rk.write_dataset(records, SCHEMA, path, shard_records=40, progress=False)
    return path


class Counted:
    """Counts the records decoded together (``decode_columns_numpy``); ``off()`` reads
    record by record instead, the path before records fetched by index were parsed
    together."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.together = 0
        decode = _random_access.decode_columns_numpy

        def counted(*args: Any) -> Any:
            records = decode(*args)
            self.together += 0 if records is None else len(records)
            return records

        monkeypatch.setattr(_random_access, "decode_columns_numpy", counted)

    def off(self) -> None:
        self.monkeypatch.setattr(_random_access, "parsed_files", lambda *args: None)


def reads(ds: rk.Dataset, other: rk.Dataset) -> dict[str, Callable[[], list[Any]]]:
    """Every reader that fetches records by index, over ``ds`` (and ``other``, mixed in)."""
    options: dict[str, Any] = {"shuffle": True, "seed": 3, "window": WINDOW}
    state = ds.epoch_stream(**options, world_size=2, batch_size=4).loader_state(
        5, batch_size=4, num_workers=2
    )
    mixture = rk.mix({ds: 0.6, other: 0.4}, samples_per_epoch=RECORDS)

    def resumed(world_size: int) -> Iterator[Any]:
        for rank in range(world_size):
            yield from ds.epoch_stream(**options, rank=rank, world_size=world_size, start=state)

    return {
        "shuffled epoch": lambda: list(ds.epoch_stream(**options)),
        "next epoch, small prefetch": lambda: list(_epoch(ds.epoch_stream(**options, prefetch=7), 1)),
        "resumed on 3 ranks": lambda: list(resumed(3)),
        "resumed on 1 rank": lambda: list(resumed(1)),
        "mixture": lambda: list(mixture.epoch_stream(**options)),
        "torch-free batch": lambda: ds.epoch_stream(**options).read_located(
            ds.epoch_stream(**options).worker_records(0, 1)
        ),
        "random access batch": lambda: ds[np.random.default_rng(1).permutation(RECORDS).tolist()],
        "random access slice": lambda: ds[5:80],
        "read_batch in threads": lambda: _read_batch_in_threads(ds),
    }


def _epoch(stream: Any, epoch: int) -> Any:
    stream.set_epoch(epoch)
    return stream


def _read_batch_in_threads(ds: rk.Dataset) -> list[Any]:
    access = ds._random_access()
    with ThreadPoolExecutor(2) as pool:
        return access.read_batch(np.arange(RECORDS)[::-1], pool=pool)


@pytest.mark.parametrize("fields", [None, ["embedding", "label"], ["extra", "code"]])
def test_records_fetched_by_index_read_together_equal_those_read_one_by_one(
    dataset: Path, fields: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(monkeypatch)
    ds = rk.open(dataset, "train", fields=fields)
    other = rk.open(dataset, "train[10:50]", fields=fields)
    together = {name: read() for name, read in reads(ds, other).items()}
    if "one-layout" in dataset.parent.name:
        # Every record of every read but the threaded one (parsed together, decoded in the
        # pool) was decoded with the others of its batch.
        assert counted.together == sum(len(v) for k, v in together.items() if k != "read_batch in threads")
    counted.off()
    counted.together = 0
    ds = rk.open(dataset, "train", fields=fields)
    other = rk.open(dataset, "train[10:50]", fields=fields)
    for name, read in reads(ds, other).items():
        one_by_one = read()
        assert len(one_by_one) > 0, name
        assert_same(one_by_one, together[name], name)
    assert counted.together == 0  # the reference read was record by record


def test_a_torch_dataset_read_by_dataloader_workers_gives_the_same_batches(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    counted = Counted(monkeypatch)
    ds = rk.open(dataset, "train", fields=["embedding", "label", "count"])
    options: dict[str, Any] = {"shuffle": True, "seed": 5, "window": WINDOW}

    def batches() -> list[dict[str, Any]]:
        loader = DataLoader(ds.torch_iterable(**options, batch_size=8), batch_size=8, num_workers=0)
        return list(loader)

    together = batches()
    if "one-layout" in dataset.parent.name:
        assert counted.together == RECORDS
    counted.off()
    one_by_one = batches()
    assert len(together) == len(one_by_one)
    for got, expected in zip(together, one_by_one, strict=True):
        for key in expected:
            assert got[key].dtype == expected[key].dtype
            assert torch.equal(got[key], expected[key]), key


def test_each_record_decoded_with_its_batch_owns_its_values(dataset: Path) -> None:
    first, second = list(rk.open(dataset, "train").epoch_stream(shuffle=True, seed=1))[:2]
    before = second["embedding"].copy()
    first["embedding"][:] = 0
    assert np.array_equal(second["embedding"], before)
    assert first["embedding"].flags.writeable


def test_small_records_are_fetched_more_at_a_time_than_prefetch_and_large_ones_prefetch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blobs = rk.Schema(name="blobs", fields={"blob": rk.FieldSpec(codec="text")})
    small, large = tmp_path / "small", tmp_path / "large"
    rk.write_dataset(make_records(RECORDS, seed=1, varied=False), SCHEMA, small, progress=False)
    texts = [{"blob": chr(97 + i % 26) * 200_000} for i in range(RECORDS)]
    rk.write_dataset(texts, blobs, large, progress=False)
    fetch = _random_access.fetch_checked
    sizes: list[int] = []

    def counted(files: Any, located: Any) -> Any:
        sizes.append(len(located))
        return fetch(files, located)

    monkeypatch.setattr(_random_access, "fetch_checked", counted)
    assert len(list(rk.open(small, "train").epoch_stream(shuffle=True, seed=2, prefetch=2))) == RECORDS
    read = _random_access.GROWTH * 2 * _random_access.READ_FETCHES  # fetches read at once, parsed apart
    assert sizes == [min(read, RECORDS - begin) for begin in range(0, RECORDS, read)]
    assert read < RECORDS
    sizes.clear()
    assert len(list(rk.open(large, "train").epoch_stream(shuffle=True, seed=2, prefetch=10))) == RECORDS
    assert sizes == [10] * 9  # records of 200 KB: 1 MB holds fewer than 10


def test_a_batch_whose_records_all_decode_together_is_given_as_plain_records(tmp_path: Path) -> None:
    """Records of several lengths (each length parsed with its layout) decoded with their
    batch come as one DecodedBatch, in the order fetched: no wrapper a record (an object
    the garbage collector tracks, where a record of text and numbers is not)."""
    schema = rk.Schema(
        name="small",
        fields={
            "name": rk.FieldSpec(codec="text"),
            "n": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        },
    )
    rows = [{"name": "x" * (1 + i % 3), "n": i} for i in range(90)]
    rk.write_dataset(rows, schema, tmp_path / "data", shard_records=12, progress=False)  # 8+ of each length
    access = rk.open(tmp_path / "data", "train")._random_access()
    located = np.array([(s, n) for s in (2, 0, 1) for n in (*range(11, -1, -1), 5)], dtype=np.int64)
    parsed = access._parsed(access._fetch_files(located), by_columns=True)
    assert isinstance(parsed, _parsed_shard.DecodedBatch)
    records = access.records(located)
    assert [(r["name"], int(r["n"])) for r in records] == [
        (rows[12 * s + n]["name"], 12 * s + n) for s, n in located.tolist()
    ]
    assert not any(map(gc.is_tracked, records))


def test_a_large_fetch_is_taken_apart_by_file_without_an_object_a_record(tmp_path: Path) -> None:
    """Thousands of records fetched at once (a mixture's source of small records) come a
    list a file, without a Python object a record that the garbage collector counts (a
    tuple or an iterator a record, all alive at once, set off young collections whose
    survivors brought on full ones), and read as before."""
    schema = rk.Schema(name="small", fields={"name": rk.FieldSpec(codec="text")})
    rows = [{"name": f"record {i}"} for i in range(3000)]
    rk.write_dataset(rows, schema, tmp_path / "data", shard_records=1000, progress=False)
    access = rk.open(tmp_path / "data", "train")._random_access()
    located = np.array([(s, n) for n in range(1000) for s in (2, 0, 1)], dtype=np.int64)
    assert [r["name"] for r in access.records(located)] == [
        f"record {1000 * s + n}" for s, n in located.tolist()
    ]
    gc.disable()  # the split's indexes are loaded by the read above: counted here, the fetch alone
    try:
        before = gc.get_count()[0]
        files = access._fetch_files(located)
        made = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert [len(parts) for parts in files] == [3000]
    assert made <= 10  # a list a file, not an object a record
