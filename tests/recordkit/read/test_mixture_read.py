"""A mixture's samples taken from their sources a block at a time
(sdk/recordkit/read/_mixture_read.py): the mixture's order exactly, and a first record
that waits for its own source's first fetch only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.read import _mixture_read
from recordkit.read._random_access import RandomAccess

SCHEMA = rk.Schema(name="names", fields={"name": rk.FieldSpec(codec="text")})


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[rk.Dataset]:
    root = tmp_path_factory.mktemp("mixture-read")
    handles = []
    for prefix, count in (("a", 70), ("b", 45), ("c", 20)):
        rows = [{"name": f"{prefix}{i}"} for i in range(count)]
        rk.write_dataset(rows, SCHEMA, root / prefix, shard_records=8, progress=False)
        handles.append(rk.open(root / prefix, "train"))
    return handles


def test_blocks_grow_from_one_place_to_the_largest() -> None:
    assert list(_mixture_read._blocks(10, 4)) == [(0, 1), (1, 3), (3, 7), (7, 10)]
    assert list(_mixture_read._blocks(0, 4)) == []


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("prefetch", [1, 3, 64])
def test_every_sample_comes_in_its_place_of_the_mixture(
    sources: list[rk.Dataset], shuffle: bool, prefetch: int
) -> None:
    mixture = rk.mix({sources[0]: 0.5, sources[1]: 0.3, sources[2]: 0.2}, samples_per_epoch=300)
    stream = mixture.epoch_stream(shuffle=shuffle, seed=5, window=16, prefetch=prefetch)
    for epoch in range(2):
        stream.set_epoch(epoch)
        together = [r["name"] for r in stream.read_located(stream.worker_records(0, 1))]
        assert [r["name"] for r in stream] == together  # each source's read at once, then placed
        assert len(together) == 300


def test_the_first_record_waits_only_for_its_own_sources_first_fetch(
    sources: list[rk.Dataset], monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched: list[str] = []
    fetch = RandomAccess._fetch_files

    def counted(self: RandomAccess, located: Any) -> Any:
        fetched.append(self.dataset.shards[0].path.url)  # ".../a/train-..." or ".../b/train-..."
        return fetch(self, located)

    monkeypatch.setattr(RandomAccess, "_fetch_files", counted)
    mixture = rk.mix({sources[0]: 0.6, sources[1]: 0.4}, samples_per_epoch=100)
    records = iter(mixture.epoch_stream(prefetch=4))
    first = next(records)
    assert len(fetched) == 1  # one fetch, of the first record's source
    assert fetched[0].split("/")[-2] == first["name"][0]
    rest = [r["name"] for r in records]
    assert len(rest) == 99
    assert np.isclose(sum(n.startswith("a") for n in [first["name"], *rest]), 60)


def test_blocks_of_large_records_hold_fewer_places(sources: list[rk.Dataset]) -> None:
    small = [handle._random_access() for handle in sources[:2]]
    assert _mixture_read.block_size(small) == _mixture_read.MIXED_BLOCK  # a few bytes a record
    size = small[0].mean_record_bytes
    assert size is not None
    assert 0 < size < 100
    large = RandomAccess.__new__(RandomAccess)
    large._record_bytes = 50_000  # pictures and sounds
    assert _mixture_read.block_size([small[0], large]) == (1 << 20) // 50_000
    large._record_bytes = 1 << 30
    assert _mixture_read.block_size([large]) == _mixture_read.FEWEST


def test_sources_of_small_records_fetch_more_at_once(sources: list[rk.Dataset]) -> None:
    small = sources[0]._random_access()
    grown = 64 * _mixture_read.SOURCE_GROWTH
    assert _mixture_read.source_prefetch(small, 64) == grown  # a few bytes a record
    assert small.fetch_size(grown) == _mixture_read.SOURCE_GROWTH * small.fetch_size(64)
    large = RandomAccess.__new__(RandomAccess)
    large._record_bytes = 50_000  # pictures and sounds: the mixture's own prefetch
    assert _mixture_read.source_prefetch(large, 64) == 64
    large._record_bytes = None  # sizes not in the manifest
    assert _mixture_read.source_prefetch(large, 64) == 64


@pytest.mark.parametrize(("size", "factor"), [(1000, 8), (3000, 4), (6000, 2), (9000, 1)])
def test_sources_of_middling_records_grow_their_fetch_less(size: int, factor: int) -> None:
    """The largest of 8, 4 or 2 times whose fetch holds at most 1 MiB (by the mean size)."""
    middling = RandomAccess.__new__(RandomAccess)
    middling._record_bytes = size
    assert _mixture_read.source_prefetch(middling, 64) == 64 * factor
    fetched = middling.fetch_size(64 * factor)
    assert fetched * size <= _mixture_read.GROWN_BYTES


@pytest.mark.parametrize(("count", "sources"), [(1000, 3), (70_000, 2)])
def test_each_place_is_laid_out_source_after_source_in_its_block(count: int, sources: int) -> None:
    owners = np.random.default_rng(count).integers(0, sources, count)
    blocks = list(_mixture_read._blocks(count, _mixture_read.MIXED_BLOCK))
    bounds = np.array([begin for begin, _ in blocks] + [count])
    positions = [np.flatnonzero(owners == source) for source in range(sources)]
    arranged, counts = _mixture_read._arrangement(positions, count, bounds)
    for (begin, end), wanted in zip(blocks, counts, strict=True):
        block = owners[begin:end].tolist()
        assert list(wanted) == [block.count(source) for source in range(sources)]
        laid = sorted(range(end - begin), key=lambda place: (block[place], place))
        assert [laid[index] for index in arranged[begin:end]] == list(range(end - begin))


class _Failing:
    """A source of a mixture that gives each place's ``(shard, number)`` as its record,
    in lists of ``size``, and raises at its ``fails``-th record (as a stream does: the
    list of those before it first)."""

    mean_record_bytes = 10

    def __init__(self, name: str, fails: int | None, size: int = 5) -> None:
        self.name, self.fails, self.size = name, fails, size

    def fetch_size(self, prefetch: int) -> int:
        return prefetch

    def stream_chunks(self, located: np.ndarray, prefetch: int) -> Any:
        records = [f"{self.name}{int(number)}" for _, number in located]
        for begin in range(0, len(records), self.size):
            chunk = records[begin : begin + self.size]
            if self.fails is not None and begin <= self.fails < begin + self.size:
                if self.fails > begin:
                    yield chunk[: self.fails - begin]
                raise ValueError(f"{self.name} fails")
            yield chunk


@pytest.mark.parametrize(
    "fails", [(None, None), (7, None), (None, 3), (7, 3), (2, 9), (0, 0), (20, 12), (12, 20)]
)
def test_when_sources_raise_the_records_before_the_earliest_failing_place_come_first(
    fails: tuple[int | None, int | None],
) -> None:
    owners = np.random.default_rng(1).integers(0, 2, 60)
    located = np.zeros((60, 2), dtype=np.int64)
    located[:, 0] = owners  # source i's shard i
    for source in range(2):
        located[owners == source, 1] = np.arange(int((owners == source).sum()))
    expected = [f"{'ab'[shard]}{number}" for shard, number in located.tolist()]
    failing = [
        expected.index(f"{'ab'[source]}{fail}") for source, fail in enumerate(fails) if fail is not None
    ]
    sources = [_Failing("a", fails[0]), _Failing("b", fails[1])]
    chunks = _mixture_read.mixed_chunks(sources, located, ([0, 1], [0, 1]), 4)  # type: ignore[arg-type]
    if not failing:
        assert [record for chunk in chunks for record in chunk] == expected
        return
    first = min(failing)
    taken: list[list[str]] = []
    with pytest.raises(ValueError, match=f"{expected[first][0]} fails"):
        taken.extend(chunks)
    assert all(taken)  # no empty list before the error
    assert [record for chunk in taken for record in chunk] == expected[:first]
