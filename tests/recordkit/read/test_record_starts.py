"""Where each shard's records start (sdk/recordkit/read/_record_starts.py): block sums
and per-block cumulative sums give what one cumulative sum over every shard gives, and
random access through them reads the records sequential reading gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import recordkit as rk
from recordkit.read import _record_starts
from recordkit.read._record_starts import RecordStarts

SCHEMA = rk.Schema.loads("name: tiny\nfields:\n  caption: {codec: text}\n")


@pytest.mark.parametrize("block", [1, 3, 4096])
def test_every_record_is_located_as_one_cumulative_sum_locates_it(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_record_starts, "BLOCK", block)
    counts = np.random.default_rng(7).integers(0, 4, 41)  # shards without records among them
    counts[[0, 17, 40]] = 0
    starts = RecordStarts(counts)
    expected = np.concatenate([[0], np.cumsum(counts)])
    assert starts.total == int(counts.sum())
    assert [starts[s] for s in range(len(counts) + 1)] == expected.tolist()
    for index in range(starts.total):
        shard = int(np.searchsorted(expected, index, side="right")) - 1
        assert starts.locate(index) == (shard, index - int(expected[shard]))
        assert counts[shard] > 0


def test_a_split_without_shards_has_no_records() -> None:
    assert RecordStarts(np.zeros(0, dtype=np.int64)).total == 0


def test_random_access_across_blocks_reads_what_sequential_reading_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_record_starts, "BLOCK", 2)
    records = [{"caption": f"record {i}"} for i in range(23)]
    rk.write_dataset(records, tmp_path, SCHEMA, shard_records=3, progress=False)
    ds = rk.open(tmp_path, "train")
    in_order = [r["caption"] for r in ds.records()]
    assert len(ds) == 23
    assert [ds[i]["caption"] for i in reversed(range(23))] == in_order[::-1]
    assert [r["caption"] for r in ds[[22, 0, 11]]] == ["record 22", "record 0", "record 11"]
