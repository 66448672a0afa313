"""A state's cost not growing with the epoch (sdk/recordkit/read/_epoch_order.py:
``loader_taken``, ``Division.sizes``, ``Progress.after``/``unread_at``;
sdk/recordkit/read/_epoch_stream.py: ``loader_state``, ``state_dict``, a resumed reader's
places). Each is checked against a frozen copy of what it replaced (a step a batch, arrays
of the whole epoch), kept here or in tests/recordkit/_epoch_reference.py, over random
epochs, divisions, batches and progress."""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import islice
from typing import Any

import numpy as np
import pytest
from _epoch_reference import advanced as frozen_advanced
from _epoch_reference import owners as frozen_owners
from _epoch_reference import read_after as frozen_read_after
from _epoch_reference import remaining as frozen_remaining
from _epoch_reference import share
from hypothesis import given, settings
from hypothesis import strategies as st

import recordkit as rk
from recordkit.read import _epoch_order
from recordkit.read._epoch_order import Division, Progress, loader_taken

# -- frozen copies of the functions replaced ------------------------------------------------


def frozen_loader_taken(
    sizes: Sequence[int], batch_size: int, batches: int, *, drop_last: bool
) -> list[int] | None:
    done = [0] * len(sizes)
    pointer = 0
    for _ in range(batches):
        for step in range(len(sizes)):
            worker = (pointer + step) % len(sizes)
            left = sizes[worker] - done[worker]
            if left >= batch_size or (left > 0 and not drop_last):
                done[worker] += min(batch_size, left)
                pointer = (worker + 1) % len(sizes)
                break
        else:
            return None
    return done


def frozen_sizes(division: Division, count: int) -> list[int]:
    owner, _ = frozen_owners(division, count)
    return [int(n) for n in np.bincount(owner, minlength=division.readers)]


def frozen_after(progress: Progress, division: Division, taken: Sequence[int]) -> Progress:
    return frozen_advanced(progress, frozen_read_after(division, frozen_remaining(progress), taken))


def frozen_loader_taken_all(
    division: Division, left: int, batch_size: int, batches: int, *, drop_last: bool
) -> list[int] | None:
    sizes = frozen_sizes(division, left)
    taken = [0] * division.readers
    for rank in range(division.world_size):
        readers = [division.reader(rank, w) for w in range(division.workers)]
        done = frozen_loader_taken([sizes[r] for r in readers], batch_size, batches, drop_last=drop_last)
        for reader, count in zip(readers, done or [sizes[r] for r in readers], strict=True):
            taken[reader] = count
    return taken


# -- strategies -----------------------------------------------------------------------------

divisions = st.builds(Division, st.integers(1, 4), st.integers(0, 3), st.integers(1, 6))


@st.composite
def progresses(draw: st.DrawFn, most: int = 120) -> Progress:
    length = draw(st.integers(0, most))
    done = draw(st.integers(0, length))
    also = draw(st.sets(st.integers(done + 1, max(done + 1, length - 1)), max_size=12))
    return Progress(length, done, tuple(sorted(p for p in also if done < p < length)))


# -- properties -----------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 60), min_size=1, max_size=6),
    batch_size=st.integers(1, 9),
    batches=st.integers(0, 50),
    drop_last=st.booleans(),
)
def test_loader_taken_counts_whole_rounds_as_the_loader_steps_batch_by_batch(
    sizes: list[int], batch_size: int, batches: int, drop_last: bool
) -> None:
    assert loader_taken(sizes, batch_size, batches, drop_last=drop_last) == frozen_loader_taken(
        sizes, batch_size, batches, drop_last=drop_last
    )


@settings(max_examples=300, deadline=None)
@given(division=divisions, count=st.integers(0, 200))
def test_sizes_from_block_arithmetic_equal_the_epochs_arrays(division: Division, count: int) -> None:
    assert division.sizes(count) == frozen_sizes(division, count)


@settings(max_examples=400, deadline=None)
@given(progress=progresses(), division=divisions, data=st.data())
def test_a_progress_after_readers_took_their_shares_equals_the_whole_epochs_mask(
    progress: Progress, division: Division, data: st.DataObject
) -> None:
    sizes = division.sizes(progress.length - progress.read)
    taken = [data.draw(st.integers(0, size + 2)) for size in sizes]
    assert progress.after(division, taken) == frozen_after(progress, division, taken)


@settings(max_examples=300, deadline=None)
@given(progress=progresses(), division=divisions, data=st.data())
def test_a_readers_unread_places_are_its_share_of_what_is_left(
    progress: Progress, division: Division, data: st.DataObject
) -> None:
    left = progress.length - progress.read
    reader = data.draw(st.integers(0, division.readers - 1))
    expected = share(division, frozen_remaining(progress), reader)
    assert progress.unread_at(division.places(0, left, reader)).tolist() == expected.tolist()
    # Many places are shifted a run of them at a time (here, a few are too).
    runs = _epoch_order._SHIFT_RUNS
    try:
        _epoch_order._SHIFT_RUNS = 0
        assert progress.unread_at(division.places(0, left, reader)).tolist() == expected.tolist()
    finally:
        _epoch_order._SHIFT_RUNS = runs


@settings(max_examples=200, deadline=None)
@given(
    progress=progresses(),
    division=divisions,
    batch_size=st.integers(1, 6),
    batches=st.integers(0, 30),
    drop_last=st.booleans(),
)
def test_a_loaders_state_equals_the_one_stepped_batch_by_batch(
    progress: Progress, division: Division, batch_size: int, batches: int, drop_last: bool
) -> None:
    left = progress.length - progress.read
    sizes = division.sizes(left)
    taken = [0] * division.readers
    for rank in range(division.world_size):
        readers = [division.reader(rank, w) for w in range(division.workers)]
        done = loader_taken([sizes[r] for r in readers], batch_size, batches, drop_last=drop_last)
        for reader, count in zip(readers, done or [sizes[r] for r in readers], strict=True):
            taken[reader] = count
    frozen = frozen_loader_taken_all(division, left, batch_size, batches, drop_last=drop_last)
    assert taken == frozen
    assert progress.after(division, taken) == frozen_after(progress, division, frozen)


# -- end to end, on a real dataset ------------------------------------------------------------

N = 83
SCHEMA = rk.Schema(name="names", fields={"name": rk.FieldSpec(codec="text")})
OPTIONS: dict[str, Any] = {"shuffle": True, "seed": 5, "window": 9, "batch_size": 4}


@pytest.fixture(scope="module")
def handle(tmp_path_factory: pytest.TempPathFactory) -> rk.Dataset:
    path = tmp_path_factory.mktemp("state-arithmetic") / "names"
    rk.write_dataset([{"name": f"n{i}"} for i in range(N)], SCHEMA, path, shard_records=7, progress=False)
    return rk.open(path, "train")


def frozen_state(stream: Any, division: Division, taken: list[int]) -> dict[str, Any]:
    progress = stream._current()
    after = frozen_advanced(progress, frozen_read_after(division, frozen_remaining(progress), taken))
    return {"position": after.read, "done": after.done, "also": list(after.also)}


@pytest.mark.parametrize(("world_size", "workers", "batches"), [(2, 2, 3), (3, 3, 2), (1, 0, 5), (4, 2, 4)])
def test_loader_states_and_resumed_reads_equal_the_frozen_ones(
    handle: rk.Dataset, world_size: int, workers: int, batches: int
) -> None:
    # A first run of 2 ranks x 3 workers taking batches of 6 (blocks of 4) leaves positions
    # read beyond its prefix: its first two workers took a block and a half each.
    first = handle.epoch_stream(**OPTIONS, rank=0, world_size=2)
    state = json.loads(json.dumps(first.loader_state(2, 6, 3)))
    assert state["also"]
    whole = [r["name"] for r in handle.epoch_stream(**OPTIONS)]
    read_before = {whole[p] for p in [*range(state["done"]), *state["also"]]}
    stream = handle.epoch_stream(**OPTIONS, rank=0, world_size=world_size, start=state)
    division = stream.division(workers)
    taken = frozen_loader_taken_all(division, N - state["position"], 4, batches, drop_last=False)
    assert taken is not None
    saved = stream.loader_state(batches, 4, workers)
    assert {key: saved[key] for key in ("position", "done", "also")} == frozen_state(stream, division, taken)
    # Every rank's workers read, together, exactly what the first run left.
    rest = []
    for rank in range(world_size):
        ranked = handle.epoch_stream(**OPTIONS, rank=rank, world_size=world_size, start=state)
        for worker in range(max(workers, 1)):
            rest += [r["name"] for r in ranked.read_share(worker, max(workers, 1), count=False)]
    assert sorted(rest) == sorted(set(whole) - read_before)


def test_a_state_dict_after_part_of_a_resumed_share_equals_the_frozen_one(handle: rk.Dataset) -> None:
    first = handle.epoch_stream(**OPTIONS, rank=1, world_size=2)
    state = first.loader_state(2, 6, 3)
    assert state["also"]
    stream = handle.epoch_stream(**OPTIONS, rank=0, world_size=3, start=state)
    list(islice(iter(stream), 10))
    saved = stream.state_dict()
    division = Division(3, 0, 4)
    assert {key: saved[key] for key in ("position", "done", "also")} == frozen_state(
        stream, division, [10] * 3
    )


# -- Grain's sampler ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data(), hosts=st.integers(1, 4), records=st.integers(0, 30), mixed=st.booleans())
def test_a_grain_samplers_keys_and_state_equal_those_of_the_whole_epochs_arrays(
    handle: rk.Dataset, data: st.DataObject, hosts: int, records: int, mixed: bool
) -> None:
    grain = pytest.importorskip("grain.python")
    from recordkit.grain import EpochSampler

    source = (rk.mix({handle: 0.5, handle.select("name"): 0.5}) if mixed else handle).grain()
    options = {"shuffle": True, "seed": 3, "window": 5}
    probe = EpochSampler(source, **options)
    done = data.draw(st.integers(0, len(probe.order)))
    also = data.draw(st.sets(st.integers(done + 1, len(probe.order) + 1), max_size=10))
    progress = Progress(len(probe.order), done, tuple(sorted(p for p in also if p < len(probe.order))))
    state = {"format": "recordkit.epoch/1", "reader": "grain.EpochSampler", "epoch": 0}
    state |= {
        "position": progress.read,
        "done": progress.done,
        "also": list(progress.also),
        **probe._identity(),
    }
    whole = probe.order.items(seed=3, epoch=0, shuffle=True, window=5)
    left = frozen_remaining(progress)
    count = len(left) - len(left) % hosts
    for host in range(hosts):
        shard = grain.ShardOptions(shard_index=host, shard_count=hosts, drop_remainder=True)
        sampler = EpochSampler(source, **options, start=state, shard_options=shard)
        assert len(sampler) == count
        keys = [sampler[i].record_key for i in range(host, count, hosts)]
        assert keys == whole[left[host:count:hosts]].tolist()
    division = Division(hosts, 0, 1)
    taken = [min(records, size) for size in frozen_sizes(division, count)]
    expected = frozen_advanced(progress, frozen_read_after(division, left[:count], taken))
    saved = sampler.state_after(records)
    assert (saved["done"], tuple(saved["also"])) == (expected.done, expected.also)
