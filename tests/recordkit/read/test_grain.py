"""recordkit.grain.DataSource (sdk/recordkit/read/_grain.py) in real Grain pipelines: a
global shuffle, sharding between two simulated hosts, and a checkpointed iterator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import assert_record, expected, make_records, write

import recordkit as rk

grain = pytest.importorskip("grain")
from recordkit.grain import DataSource  # noqa: E402

N = 10


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N, seed=4)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("grain") / "data"
    write(path, records, shard_records=4)
    return path


def test_a_shuffled_map_dataset_reads_every_record_with_its_values(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    source = DataSource(dataset)
    assert len(source) == N
    by_caption = {r["caption"]: r for r in records}
    shuffled = list(grain.MapDataset.source(source).shuffle(seed=3))
    assert sorted(r["caption"] for r in shuffled) == sorted(by_caption)
    assert [r["caption"] for r in shuffled] != [r["caption"] for r in records]
    for record in shuffled:
        assert_record(expected(by_caption[record["caption"]]), record)


def _loader(source: DataSource, shard: int) -> Any:
    sampler = grain.samplers.IndexSampler(
        num_records=len(source),
        shard_options=grain.sharding.ShardOptions(shard_index=shard, shard_count=2, drop_remainder=False),
        shuffle=True,
        num_epochs=1,
        seed=9,
    )
    return grain.DataLoader(data_source=source, sampler=sampler, worker_count=0)


def test_two_hosts_share_the_records_and_a_checkpoint_resumes_exactly(dataset: Path) -> None:
    source = DataSource(dataset, fields=["caption"])
    seen = []
    for shard in range(2):
        full = [r["caption"] for r in _loader(source, shard)]
        iterator = iter(_loader(source, shard))
        head = [next(iterator)["caption"] for _ in range(2)]
        state = iterator.get_state()  # what a Grain checkpoint saves
        resumed = iter(_loader(source, shard))
        resumed.set_state(state)
        assert head + [r["caption"] for r in resumed] == full
        seen += full
    assert sorted(seen) == sorted(r["caption"] for r in rk.iter_records(dataset, fields="caption"))


def test_batched_reads_give_the_records_of_single_reads(dataset: Path) -> None:
    source = DataSource(dataset, fields=["caption"])
    keys = [7, 0, 7, 3]
    want = [source[k]["caption"] for k in keys]
    assert [r["caption"] for r in source.__getitems__(keys)] == want
    assert [r["caption"] for r in source._getitems(keys)] == want


def test_grain_batches_records_of_several_sizes_with_the_sources_batch_fn(dataset: Path) -> None:
    source = rk.open(dataset, "train").select(["caption", "image", "audio"]).grain()
    batched = grain.MapDataset.source(source).batch(4, batch_fn=source.batch_fn(concat=["audio"]))
    iterated = list(batched.to_iter_dataset(grain.ReadOptions(num_threads=2, prefetch_buffer_size=2)))
    assert len(iterated) == len(batched)
    first = iterated[0]
    records = [source[i] for i in range(4)]
    assert first["caption"] == [r["caption"] for r in records]
    for row, record in enumerate(records):
        h, w, _ = record["image"].shape
        assert first["image/shape"][row].tolist() == list(record["image"].shape)
        assert (first["image"][row, :h, :w] == record["image"]).all()
    assert first["audio/lengths"].tolist() == [len(r["audio"]) for r in records]
    assert (first["audio"] == np.concatenate([r["audio"] for r in records])).all()
