"""The canonical order of a mixture's epochs (sdk/recordkit/read/_mixture_order.py):
property-tested against a frozen copy of the order as the sixteenth session worked it out
(every source's epoch laid out whole, its samples located by lookup), which every state
saved then must resume into."""

from __future__ import annotations

from typing import Any

import numpy as np
from _epoch_reference import remaining, share
from hypothesis import given
from hypothesis import strategies as st

from recordkit.read._epoch_order import Division, Progress, SplitOrder, epoch_order
from recordkit.read._mixture_order import MixtureOrder


def frozen_items(mixture: MixtureOrder, *, seed: int, epoch: int, shuffle: bool, window: int) -> np.ndarray:
    """The epoch's samples as the sixteenth session laid them out."""
    seeds = [seed]
    if shuffle:
        labels = np.repeat(np.arange(len(mixture.counts), dtype=np.int64), mixture.counts)
        labels = np.random.default_rng([*seeds, epoch, 2]).permutation(labels)
        positions = [np.flatnonzero(labels == i) for i in range(len(mixture.counts))]
    else:
        labels = np.repeat(np.arange(len(mixture.counts), dtype=np.int64), mixture.counts)
        places = np.concatenate([(np.arange(c) + 0.5) / c for c in mixture.counts if c])
        labels = labels[np.argsort(places, kind="stable")]
        positions = [np.flatnonzero(labels == i) for i in range(len(mixture.counts))]
    out = np.empty(len(labels), dtype=np.int64)
    for i, (source, where) in enumerate(zip(mixture.sources, positions, strict=True)):
        taken, size = epoch * mixture.counts[i], mixture.sizes[i]
        done = 0
        while done < len(where):
            source_epoch, position = divmod(taken + done, size)
            step = min(len(where) - done, size - position)
            order = epoch_order(
                source.counts, seed=[*seeds, i], epoch=source_epoch, shuffle=shuffle, window=window
            )
            out[where[done : done + step]] = order[position : position + step] + mixture.item_starts[i]
            done += step
    return out


mixtures = st.fixed_dictionaries(
    {
        "sources": st.lists(
            st.lists(st.integers(0, 30), min_size=1, max_size=6).filter(lambda c: sum(c) > 0),
            min_size=1,
            max_size=3,
        ),
        "weights": st.lists(st.floats(0.05, 5.0), min_size=3, max_size=3),
        "samples": st.integers(1, 200),
    }
)


@given(
    spec=mixtures,
    seed=st.integers(0, 2**32 - 1),
    epoch=st.integers(0, 6),
    window=st.integers(1, 40),
    shuffle=st.booleans(),
    shape=st.tuples(st.integers(1, 3), st.integers(0, 3), st.integers(1, 5)),
    data=st.data(),
)
def test_a_mixtures_samples_and_every_readers_pairs_are_those_of_the_frozen_order(
    spec: dict[str, Any],
    seed: int,
    epoch: int,
    window: int,
    shuffle: bool,
    shape: tuple[int, int, int],
    data: st.DataObject,
) -> None:
    sources = [SplitOrder(counts, [f"s{i}"]) for i, counts in enumerate(spec["sources"])]
    mixture = MixtureOrder(sources, spec["weights"][: len(sources)], spec["samples"])
    options: dict[str, Any] = {"seed": seed, "epoch": epoch, "shuffle": shuffle, "window": window}
    expected = frozen_items(mixture, **options)
    assert np.array_equal(mixture.items(**options), expected)
    # Every reader's share of what a resumed state leaves: one run (a slice of places), or
    # positions read beyond the prefix too (an array of them).
    length = len(expected)
    done = data.draw(st.integers(0, length))
    also = (
        sorted(data.draw(st.sets(st.integers(done + 1, length - 1), max_size=6))) if done + 1 < length else []
    )
    progress = Progress(length, done, tuple(also))
    division = Division(*shape)
    for reader in range(division.readers):
        unread = share(division, remaining(progress), reader)
        places = unread if also else division.places(done, length, reader)
        got = mixture.pairs_at(places, **options)
        assert got.dtype == np.int64
        assert np.array_equal(got, frozen_located_pairs(mixture.all_starts, expected[unread]))


def frozen_located_pairs(starts: np.ndarray, items: np.ndarray) -> np.ndarray:
    shards = np.searchsorted(starts, items, side="right") - 1
    return np.stack([shards, items - starts[shards]], axis=1).astype(np.int64).reshape(-1, 2)


@given(
    spec=mixtures,
    seed=st.integers(0, 2**32 - 1),
    epoch=st.integers(0, 6),
    window=st.integers(1, 40),
    shuffle=st.booleans(),
    data=st.data(),
)
def test_each_sources_share_of_a_run_of_places_is_what_the_laid_out_order_gives(
    spec: dict[str, Any], seed: int, epoch: int, window: int, shuffle: bool, data: st.DataObject
) -> None:
    sources = [SplitOrder(counts, [f"s{i}"]) for i, counts in enumerate(spec["sources"])]
    mixture = MixtureOrder(sources, spec["weights"][: len(sources)], spec["samples"])
    options: dict[str, Any] = {"seed": seed, "epoch": epoch, "shuffle": shuffle, "window": window}
    start = data.draw(st.integers(0, len(mixture)))
    stop = data.draw(st.integers(start, len(mixture)))
    shares = mixture.source_pairs(start, stop, **options)
    assert shares is not None
    laid = frozen_located_pairs(mixture.all_starts, frozen_items(mixture, **options)[start:stop])
    owner_of, first_shard = mixture.shard_owners
    owners = np.asarray(owner_of, dtype=np.int64)[laid[:, 0]]
    for source, (places, pairs) in enumerate(zip(*shares, strict=True)):
        assert np.array_equal(places, np.flatnonzero(owners == source))
        assert np.array_equal(pairs, laid[places] - [first_shard[source], 0])
