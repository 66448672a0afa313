"""recordkit.grain.DataSource read from many threads at once (sdk/recordkit/read/_grain.py):
Grain's DataLoader with more prefetch threads than its default 16 over a fresh source of
many small shards (the threads load the shards' indexes while the others wait), and
batched reads from many threads sharing one source; every record's values checked."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import assert_record, expected, make_records, write

import recordkit as rk
from recordkit.format import _example  # private: unloads the decoder's protobuf class, as in a fresh process

grain = pytest.importorskip("grain.python")

from recordkit.grain import EpochSampler  # noqa: E402

N = 60
THREADS = 32


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N, seed=11)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("grain-threads") / "data"
    write(path, records, shard_records=4)  # 15 shards: 15 indexes loaded by the first reads
    return path


def test_a_source_makes_the_decoders_protobuf_class_before_any_reading_thread_asks(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_example, "_loaded", [])  # as in a process that has decoded nothing yet
    rk.open(dataset, "train").grain()
    assert _example._loaded


def test_grain_prefetch_threads_of_three_hosts_read_every_record_once_with_its_values(
    dataset: Path, records: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    by_caption = {r["caption"]: expected(r) for r in records}
    source = rk.open(dataset, "train").grain()
    monkeypatch.setattr(_example, "_loaded", [])  # the reading threads make the class, one of them
    seen = []
    for host in range(3):
        sampler = EpochSampler(
            source, shuffle=True, seed=5, window=8, shard_options=grain.ShardOptions(host, 3)
        )
        loader = sampler.loader(
            worker_count=0, read_options=grain.ReadOptions(num_threads=THREADS, prefetch_buffer_size=N)
        )
        for record in loader:
            assert_record(by_caption[record["caption"]], record)
            seen.append(record["caption"])
    assert sorted(seen) == sorted(by_caption)


@pytest.mark.parametrize("layouts", ["mixed", "one"])
def test_batched_reads_from_many_threads_sharing_one_source_give_every_record_its_values(
    dataset: Path, records: list[dict[str, Any]], tmp_path: Path, layouts: str
) -> None:
    if layouts == "one":  # records of one length: the batches share the source's parse templates
        records = [{"caption": f"r{i:04d}", "label": i % 3} for i in range(400)]
        schema = rk.Schema(
            name="one-layout",
            fields={
                "caption": rk.FieldSpec(codec="text"),
                "label": rk.FieldSpec(codec="label", options={"num_classes": 3}),
            },
        )
        rk.write_dataset(records, schema, tmp_path / "one", shard_records=50, progress=False)
        wanted = records
        source = rk.open(tmp_path / "one", "train").grain()
    else:
        wanted = [expected(r) for r in records]
        source = rk.open(dataset, "train").grain()
    rng = np.random.default_rng(3)
    count = len(wanted)
    batches = [rng.choice(count, size=int(rng.integers(1, 40)), replace=False).tolist() for _ in range(150)]
    with ThreadPoolExecutor(THREADS) as pool:
        read = list(pool.map(source.__getitems__, batches))
    for batch, got in zip(batches, read, strict=True):
        assert len(got) == len(batch)
        for i, record in zip(batch, got, strict=True):
            assert_record(wanted[i], record)
    if layouts == "one":
        assert source.records._templates[0]  # the shared templates were used
