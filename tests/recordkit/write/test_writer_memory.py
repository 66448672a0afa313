"""The writer's memory is bounded by a shard, never by the dataset: measured with tracemalloc.

What a write keeps per record is each record's offset for its shard's index, until the
index is written: 8 bytes a record (an ``array("q")``), where a list of Python ints
kept about 40, copied again into the index when the shard closed (65 bytes a record at
the peak here; with the chunk buffers, 87 MB more peak RSS for a one-shard stream of
400,000 small records than before it). The tests compare the peak of traced memory of
two writes that differ only in their number of records, so everything constant
(imports, caches, buffers, the manifest) cancels out. The chunk buffers are made small,
so that they do not grow with the records of these small writes (they are bounded by
the chunk size, 4 MB, which a big write reaches anyway).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk
from recordkit.write import _shard_file

SCHEMA = rk.Schema(
    name="memory",
    fields={
        "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        "caption": rk.FieldSpec(codec="text"),
    },
)
#: Records of the smaller write; the larger one has four times as many.
N = 5_000
#: Peak traced bytes a one-shard write may add per record: the offsets' 8 bytes and the
#: array's spare room (8.3 measured). The list of ints, and its copies at close, took 65.
BYTES_PER_RECORD = 16


def _records(count: int) -> Iterator[dict[str, Any]]:
    # Few distinct ids: the encoder's cache of small int entries holds the same ones
    # in every write (its content would otherwise change sizes between writes).
    return ({"id": i % 100, "caption": f"record {i}"} for i in range(count))


@pytest.fixture
def peak_of_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A function that writes ``count`` records to a new dataset and returns the peak of
    traced memory during the write, above what was traced before it."""
    monkeypatch.setattr(_shard_file, "_CHUNK_BYTES", 4 << 10)
    written = iter(range(1_000))

    def write(count: int, **options: Any) -> int:
        path = tmp_path / f"dataset-{next(written)}"
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        rk.write_dataset(_records(count), SCHEMA, path, progress=False, durable=False, **options)
        return tracemalloc.get_traced_memory()[1] - before

    tracemalloc.start()
    try:
        write(N)  # imports, and the encoder's caches filled
        yield write
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_a_shard_keeps_a_few_bytes_per_record(peak_of_write: Any) -> None:
    """One shard of N records, then one of 4N: the peak grows by the offsets alone."""
    small = peak_of_write(N)
    large = peak_of_write(4 * N)
    per_record = (large - small) / (3 * N)
    assert per_record <= BYTES_PER_RECORD, (
        f"a one-shard write's peak memory grows by {per_record:.1f} bytes a record "
        f"(at most {BYTES_PER_RECORD}): {small} bytes for {N} records, {large} for {4 * N}"
    )


@pytest.mark.slow
def test_more_shards_of_the_same_size_keep_no_more_memory(peak_of_write: Any) -> None:
    """Two shards of N / 2 records, then eight: past a shard, nothing grows with the
    records. What is kept per shard (its entry in the manifest) is a few hundred bytes;
    the peak varies a little with how far the next shard has got while the last one's
    index is written (about a byte a record here). Anything kept per record of the
    dataset, even in an array, would add 8."""
    two = peak_of_write(N, shard_records=N // 2)
    eight = peak_of_write(4 * N, shard_records=N // 2)
    per_record = (eight - two) / (3 * N)
    assert per_record <= 4, (
        f"a write of shards of {N // 2} records grows by {per_record:.2f} bytes a record: "
        f"{two} bytes for {N} records, {eight} for {4 * N}"
    )
