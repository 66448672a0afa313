"""The canonical epoch order, its division between readers and elastic progress
(sdk/recordkit/read/_epoch_order.py, _epoch_state.py): pure numpy, property-tested over
random cluster shapes and stop points."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from _epoch_reference import advanced, read_after, remaining, share
from hypothesis import given, settings
from hypothesis import strategies as st

from recordkit.errors import ResumeStateError
from recordkit.read._epoch_order import (
    Division,
    Progress,
    SplitOrder,
    epoch_order,
    epoch_order_from,
    loader_taken,
    located_pairs,
    pairs_of_codes,
    slice_windows,
)
from recordkit.read._epoch_state import epoch_state, resumed_progress

COUNTS = [7, 3, 12, 1, 9, 5]

shapes = st.tuples(st.integers(1, 5), st.integers(0, 4), st.integers(1, 6))  # world, workers, block


def test_an_epoch_reads_every_record_once_in_an_order_of_the_seed_and_epoch_alone() -> None:
    first = epoch_order(COUNTS, seed=3, epoch=0, shuffle=True, window=4)
    assert sorted(first.tolist()) == list(range(sum(COUNTS)))
    assert np.array_equal(first, epoch_order(COUNTS, seed=3, epoch=0, shuffle=True, window=4))
    assert not np.array_equal(first, epoch_order(COUNTS, seed=3, epoch=1, shuffle=True, window=4))
    assert not np.array_equal(first, epoch_order(COUNTS, seed=4, epoch=0, shuffle=True, window=4))
    assert epoch_order(COUNTS, seed=3, epoch=0, shuffle=False, window=4).tolist() == list(range(sum(COUNTS)))


@given(shape=shapes)
def test_the_readers_of_any_division_together_read_the_order_exactly_once(
    shape: tuple[int, int, int],
) -> None:
    division = Division(*shape)
    order = epoch_order(COUNTS, seed=1, epoch=2, shuffle=True, window=5)
    shares = [share(division, order, r) for r in range(division.readers)]
    assert sorted(np.concatenate(shares).tolist()) == sorted(order.tolist())
    assert [len(s) for s in shares] == division.sizes(len(order))


def test_dataloaders_taking_batches_in_turn_give_the_canonical_global_batches_for_any_worker_count() -> None:
    order = epoch_order(COUNTS, seed=0, epoch=0, shuffle=True, window=3)
    world, batch = 2, 4
    for workers in (1, 2, 3):
        division = Division(world, workers, batch)
        rank_batches = []
        for rank in range(world):
            queues = [list(share(division, order, division.reader(rank, w))) for w in range(workers)]
            batches = [[q[i : i + batch] for i in range(0, len(q), batch)] for q in queues]
            turn = [
                b
                for step in range(max(map(len, batches)))
                for w in batches
                if step < len(w)
                for b in [w[step]]
            ]
            rank_batches.append(turn)
        global_order = [
            x for step in range(len(rank_batches[0])) for r in rank_batches if step < len(r) for x in r[step]
        ]
        assert global_order == order.tolist()


@settings(max_examples=200)
@given(
    before=shapes,
    after=shapes,
    data=st.data(),
)
def test_stopping_anywhere_and_resuming_with_another_division_reads_exactly_the_rest(
    before: tuple[int, int, int], after: tuple[int, int, int], data: st.DataObject
) -> None:
    order = epoch_order(COUNTS, seed=9, epoch=0, shuffle=True, window=4)
    first = Division(*before)
    sizes = first.sizes(len(order))
    taken = [data.draw(st.integers(0, size)) for size in sizes]
    read_first = read_after(first, order, taken)
    progress = advanced(Progress(len(order)), read_after(first, np.arange(len(order)), taken))
    state = json.loads(json.dumps(epoch_state("r", 0, progress, {"seed": 9})))
    _, resumed = resumed_progress(state, "r", {"seed": 9}, len(order))
    assert resumed == progress
    assert resumed.read == sum(taken)
    second = Division(*after)
    rest = order[remaining(resumed)]
    read_later = np.concatenate([share(second, rest, r) for r in range(second.readers)])
    assert sorted(np.concatenate([read_first, read_later]).tolist()) == list(range(sum(COUNTS)))
    assert rest.tolist() == [
        x for x in order.tolist() if x not in set(read_first.tolist())
    ]  # canonical order kept


def test_a_loader_that_took_every_batch_in_turn_leaves_a_prefix_of_the_order() -> None:
    division = Division(3, 2, 4)
    sizes = division.sizes(37)
    taken = [0] * division.readers
    for rank in range(3):
        readers = [division.reader(rank, w) for w in range(2)]
        done = loader_taken([sizes[r] for r in readers], 4, 2, drop_last=False)
        assert done is not None
        for reader, count in zip(readers, done, strict=True):
            taken[reader] = count
    progress = advanced(Progress(37), read_after(division, np.arange(37), taken))
    assert (progress.done, progress.also) == (24, ())  # 2 batches x 3 ranks x 4 records
    assert loader_taken([4, 4], 4, 3, drop_last=False) is None


def test_a_state_of_another_seed_dataset_or_reader_is_refused_naming_the_difference() -> None:
    order = SplitOrder(COUNTS, ["a.tfrecord"])
    state = epoch_state("torch.IterableDataset", 1, Progress(len(order), 5), {"seed": 1, **order.identity()})
    other = SplitOrder(COUNTS, ["b.tfrecord"])
    with pytest.raises(
        ResumeStateError, match=r"seed=1 saved, 2 now; dataset='[0-9a-f]{16}' saved, '[0-9a-f]{16}' now"
    ):
        resumed_progress(state, "torch.IterableDataset", {"seed": 2, **other.identity()}, len(order))
    with pytest.raises(
        ResumeStateError, match=r"holds the state of 'torch\.IterableDataset'; this reader is 'grain'"
    ):
        resumed_progress(state, "grain", {"seed": 1, **order.identity()}, len(order))
    with pytest.raises(ResumeStateError, match="not a well-formed"):
        resumed_progress(
            {**state, "done": 999}, "torch.IterableDataset", {"seed": 1, **order.identity()}, len(order)
        )
    with pytest.raises(ResumeStateError, match=r"epoch must be an epoch number \(an int\), not 'x'$"):
        resumed_progress(
            {**state, "epoch": "x"}, "torch.IterableDataset", {"seed": 1, **order.identity()}, len(order)
        )
    with pytest.raises(ResumeStateError, match="past the end of the epoch"):
        resumed_progress(999, "torch.IterableDataset", {}, len(order))


def test_a_division_refuses_counts_that_cannot_be() -> None:
    with pytest.raises(ValueError, match="world_size must be an int of at least 1, not 0"):
        Division(0, 1, 1)
    with pytest.raises(ValueError, match="block must be an int of at least 1, not 0"):
        Division(1, 1, 0)
    with pytest.raises(ValueError, match=r"rank must be in 0..1, not 2"):
        Division(2, 1, 1).reader(2, 0)


def _order_as_first_defined(counts: list[int], seed: int, epoch: int, window: int) -> np.ndarray:
    """The shuffled order as the first release worked it out (a copy of each shard's
    records, then each window replaced by a permutation of its copy): states saved then
    must resume into the very same order."""
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    shards = np.random.default_rng([seed, epoch]).permutation(len(counts))
    order = np.concatenate(
        [np.arange(starts[s], starts[s + 1], dtype=np.int64) for s in shards] or [np.zeros(0, np.int64)]
    )
    mix = np.random.default_rng([seed, epoch, 1])
    for begin in range(0, len(order), window):
        order[begin : begin + window] = mix.permutation(order[begin : begin + window])
    return order


@given(
    counts=st.lists(st.integers(0, 40), max_size=12),
    seed=st.integers(0, 2**32 - 1),
    epoch=st.integers(0, 50),
    window=st.integers(1, 70),
)
def test_the_shuffled_order_is_the_one_epochs_always_had(
    counts: list[int], seed: int, epoch: int, window: int
) -> None:
    got = epoch_order(counts, seed=seed, epoch=epoch, shuffle=True, window=window)
    assert got.dtype == np.int64
    assert np.array_equal(got, _order_as_first_defined(counts, seed, epoch, window))


@given(
    counts=st.lists(st.integers(0, 40), max_size=12),
    seed=st.integers(0, 2**32 - 1),
    epoch=st.integers(0, 50),
    window=st.integers(1, 70),
    shuffle=st.booleans(),
    data=st.data(),
)
def test_the_order_from_a_position_on_is_the_orders_rest(
    counts: list[int], seed: int, epoch: int, window: int, shuffle: bool, data: st.DataObject
) -> None:
    # A resumed reader lays the order out from its first place only: the windows before
    # are shuffled in a scratch array, which must draw what shuffling them in place draws.
    whole = epoch_order(counts, seed=seed, epoch=epoch, shuffle=shuffle, window=window)
    begin = data.draw(st.integers(0, len(whole) + 2))
    got = epoch_order_from(counts, begin, seed=seed, epoch=epoch, shuffle=shuffle, window=window)
    assert got.dtype == np.int64
    assert np.array_equal(got, whole[begin:])
    order = SplitOrder(counts, ["a"])
    tail = order.items_from(begin, seed=seed, epoch=epoch, shuffle=shuffle, window=window)
    assert np.array_equal(tail, whole[begin:])


@given(shape=shapes, length=st.integers(0, 60), data=st.data())
def test_a_readers_places_in_the_run_left_are_its_share_of_that_run(
    shape: tuple[int, int, int], length: int, data: st.DataObject
) -> None:
    division = Division(*shape)
    start = data.draw(st.integers(0, length))
    order = np.arange(1000, 1000 + length, dtype=np.int64)
    for reader in range(division.readers):
        expected = share(division, order[start:], reader)
        assert np.array_equal(order[division.places(start, length, reader)], expected)


@given(counts=st.lists(st.integers(0, 40), max_size=12), data=st.data())
def test_items_are_located_in_their_shards_whether_few_or_many(
    counts: list[int], data: st.DataObject
) -> None:
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    total = int(starts[-1])
    # Any number of items in any order: a few (looked up one by one), or most of them
    # (looked up in a table of every item's shard).
    items = np.asarray(data.draw(st.lists(st.integers(0, max(total - 1, 0)), max_size=total * 2)), np.int64)
    pairs = located_pairs(starts, items)
    assert pairs.dtype == np.int64
    assert pairs.shape == (len(items), 2)
    expected = [
        (s, int(i - starts[s])) for i in items.tolist() for s in [int(np.flatnonzero(starts <= i)[-1])]
    ]
    assert [tuple(row) for row in pairs.tolist()] == expected


def test_items_of_more_shards_than_two_bytes_number_are_located() -> None:
    counts = [2] * 70_000
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    items = epoch_order(counts, seed=1, epoch=0, shuffle=True, window=8)
    pairs = located_pairs(starts, items)
    assert np.array_equal(pairs[:, 0], items // 2)
    assert np.array_equal(pairs[:, 1], items % 2)


@given(length=st.integers(1, 80), data=st.data())
def test_the_positions_left_are_those_after_the_prefix_not_read_beyond_it(
    length: int, data: st.DataObject
) -> None:
    done = data.draw(st.integers(0, length - 1))
    also = (
        sorted(data.draw(st.sets(st.integers(done + 1, length - 1), max_size=length)))
        if done + 1 < length
        else []
    )
    progress = Progress(length, done, tuple(also))
    left = progress.unread_at(slice(0, length - progress.read))
    assert left.dtype == np.int64
    assert left.tolist() == [p for p in range(done, length) if p not in also]


# -- the order as the sixteenth session worked it out, frozen --------------------------------
#
# Copies of the functions that laid out an epoch's order and located its records before
# the order was laid out as codes (``shard << 32 | number``), its windows shuffled in one
# call and its runs numbered without a cumulative sum: every state saved with them must
# resume into the very same records.


def _frozen_shards_in_turn(starts: np.ndarray, shards: np.ndarray, skip: int = 0) -> np.ndarray:
    firsts = starts[shards]
    lengths = starts[shards + 1] - firsts
    firsts, lengths = firsts[lengths > 0], lengths[lengths > 0]
    if skip:
        ends = np.cumsum(lengths)
        kept = int(np.searchsorted(ends, skip, side="right"))
        into = skip - (int(ends[kept - 1]) if kept else 0)
        firsts, lengths = firsts[kept:].copy(), lengths[kept:].copy()
        if len(firsts):
            firsts[0] += into
            lengths[0] -= into
    order = np.ones(int(lengths.sum()), dtype=np.int64)
    if len(order):
        order[0] = firsts[0]
        lasts = firsts + lengths - 1
        order[(np.cumsum(lengths) - lengths)[1:]] = firsts[1:] - lasts[:-1]
        np.cumsum(order, out=order)
    return order


def frozen_order_from(
    counts: list[int], begin: int, *, seed: int | list[int], epoch: int, shuffle: bool, window: int
) -> np.ndarray:
    sizes = np.asarray(counts, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    total = int(starts[-1])
    begin = min(max(int(begin), 0), total)
    if not shuffle:
        return np.arange(begin, total, dtype=np.int64)
    seeds = [seed] if isinstance(seed, int) else list(seed)
    rng = np.random.default_rng([*seeds, epoch])
    first = begin - begin % window if window > 1 else begin
    order = _frozen_shards_in_turn(starts, rng.permutation(len(sizes)), first)
    if window > 1:
        mix = np.random.default_rng([*seeds, epoch, 1])
        if first:
            scratch = np.empty(window, dtype=np.int64)
            for _ in range(first // window):
                mix.shuffle(scratch)
        for at in range(0, total - first, window):
            mix.shuffle(order[at : at + window])
    return order[begin - first :]


def frozen_located_pairs(starts: np.ndarray, items: np.ndarray) -> np.ndarray:
    shards = np.searchsorted(starts, items, side="right") - 1
    return np.stack([shards, items - starts[shards]], axis=1).astype(np.int64).reshape(-1, 2)


orders = st.fixed_dictionaries(
    {
        "counts": st.lists(st.integers(0, 60), max_size=14),
        "seed": st.integers(0, 2**32 - 1) | st.lists(st.integers(0, 2**16), min_size=1, max_size=3),
        "epoch": st.integers(0, 50),
        "window": st.integers(1, 90),
        "shuffle": st.booleans(),
    }
)


@given(order=orders, data=st.data())
def test_the_order_between_any_two_positions_is_that_part_of_the_frozen_order(
    order: dict[str, Any], data: st.DataObject
) -> None:
    counts = order.pop("counts")
    whole = frozen_order_from(counts, 0, **order)
    begin = data.draw(st.integers(0, len(whole) + 2))
    stop = data.draw(st.none() | st.integers(0, len(whole) + 2))
    got = epoch_order_from(counts, begin, **order, stop=stop)
    assert got.dtype == np.int64
    assert np.array_equal(got, whole[begin:stop] if stop is None or stop >= begin else whole[:0])
    assert np.array_equal(epoch_order_from(counts, begin, **order), frozen_order_from(counts, begin, **order))
    split = SplitOrder(counts, ["a"])
    codes = split.codes_from(begin, **order, stop=stop)
    expected = frozen_located_pairs(split.starts, got)
    assert np.array_equal(pairs_of_codes(codes), expected)
    assert np.array_equal(
        pairs_of_codes(split.codes_from(begin, **order, stop=stop, first_shard=5))[:, 1], expected[:, 1]
    )


@given(order=orders, shape=shapes, data=st.data())
def test_any_readers_pairs_after_any_progress_are_the_frozen_orders_records_at_its_places(
    order: dict[str, Any], shape: tuple[int, int, int], data: st.DataObject
) -> None:
    # What a reader of a resumed epoch reads: its share of the positions left (a run, or
    # positions read beyond the prefix too), located in the frozen order.
    counts = order.pop("counts")
    split = SplitOrder(counts, ["a"])
    length = len(split)
    done = data.draw(st.integers(0, length))
    also = (
        sorted(data.draw(st.sets(st.integers(done + 1, length - 1), max_size=8))) if done + 1 < length else []
    )
    progress = Progress(length, done, tuple(also))
    division = Division(*shape)
    whole = frozen_order_from(counts, 0, **order)
    for reader in range(division.readers):
        places = (
            share(division, remaining(progress), reader)
            if also
            else division.places(progress.done, progress.length, reader)
        )
        expected = frozen_located_pairs(split.starts, whole[share(division, remaining(progress), reader)])
        got = split.pairs_at(places, **order)
        assert got.dtype == np.int64
        assert np.array_equal(got, expected)


def test_records_of_shards_too_large_for_codes_are_located_by_their_items() -> None:
    split = SplitOrder([3, 2], ["a"])
    split._codes = None  # as for a shard of 2**32 records or more
    assert not split.coded
    options: dict[str, Any] = {"seed": 1, "epoch": 0, "shuffle": True, "window": 2}
    expected = frozen_located_pairs(split.starts, frozen_order_from([3, 2], 0, **options))
    assert np.array_equal(split.pairs_at(slice(0, 5), **options), expected)
    with pytest.raises(ValueError, match="too many records"):
        split.codes_from(0, **options)


@given(
    start=st.integers(0, 300), length=st.integers(0, 300), step=st.integers(1, 9), window=st.integers(1, 70)
)
def test_the_windows_of_a_slice_of_places_are_each_places_window(
    start: int, length: int, step: int, window: int
) -> None:
    places = slice(start, start + length, step)
    got = slice_windows(places, window)
    assert got.dtype == np.int64
    assert got.tolist() == [p // window for p in range(start, start + length, step)]
    assert slice_windows(slice(start, start + length), window).tolist() == [
        p // window for p in range(start, start + length)
    ]
