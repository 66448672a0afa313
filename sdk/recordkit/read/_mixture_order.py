"""The canonical order of a weighted mixture's epochs (pure numpy).

An epoch of a mixture is ``samples_per_epoch`` samples; source ``i`` gives ``counts[i]``
of them (``weights[i] * samples_per_epoch``, rounded so that they add up). Which source
each position of the epoch takes from is drawn from the seed and the epoch (shuffled) or
spread evenly (not shuffled). Each source is read in its own epochs, in its own canonical
order (:func:`~recordkit.read._epoch_order.epoch_order`), continuing where the mixture's
last epoch left it. :class:`MixtureOrder` gives the epoch as items numbered across the
sources, which the streaming readers divide and resume exactly as a split's
(:mod:`recordkit.read._epoch_order`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from recordkit.read._epoch_order import SplitOrder, located_pairs, pair_list, pairs_of_codes

__all__ = ["MixtureOrder"]


def _weights(weights: Sequence[float], sources: int) -> list[float]:
    """``weights`` normalised to add up to 1; each must be a positive finite number."""
    if len(weights) != sources:
        raise ValueError(
            f"mix() got {sources} sources and {len(weights)} weights; give one weight per source"
        )
    for i, weight in enumerate(weights):
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not math.isfinite(weight)
            or weight <= 0
        ):
            raise ValueError(f"weight {i} must be a positive number, not {weight!r}")
    total = float(sum(weights))
    return [float(w) / total for w in weights]


def _counts(weights: Sequence[float], samples: int) -> list[int]:
    """``samples`` divided in proportion to ``weights`` (largest remainders rounded up)."""
    exact = [w * samples for w in weights]
    counts = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: samples - sum(counts)]:
        counts[i] += 1
    return counts


class MixtureOrder:
    """The epochs of a mixture of ``sources`` (each a split's order) in proportions
    ``weights``; items are numbered across the sources (source ``i``'s records after
    those of the sources before it)."""

    def __init__(
        self, sources: Sequence[SplitOrder], weights: Sequence[float], samples_per_epoch: int | None = None
    ) -> None:
        if not sources:
            raise ValueError("mix() needs at least one source")
        self.sources = list(sources)
        self.weights = _weights(weights, len(sources))
        self.sizes = [len(source) for source in sources]
        empty = [i for i, size in enumerate(self.sizes) if size == 0]
        if empty:
            raise ValueError(f"source {empty[0]} of the mixture has no records")
        if samples_per_epoch is None:
            samples_per_epoch = max(
                1, math.floor(min(s / w for s, w in zip(self.sizes, self.weights, strict=True)))
            )
        if (
            isinstance(samples_per_epoch, bool)
            or not isinstance(samples_per_epoch, int)
            or samples_per_epoch < 1
        ):
            raise ValueError(f"samples_per_epoch must be an int of at least 1, not {samples_per_epoch!r}")
        self.samples_per_epoch = samples_per_epoch
        self.counts = _counts(self.weights, samples_per_epoch)
        self.item_starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.shard_starts = np.concatenate([[0], np.cumsum([len(s.counts) for s in sources])]).astype(
            np.int64
        )
        #: The first item of each shard (shards numbered across the sources), then the
        #: items of all the sources: where :meth:`locate_pairs` looks items up.
        self.all_starts = np.concatenate(
            [
                *(
                    source.starts[:-1] + first
                    for source, first in zip(sources, self.item_starts[:-1].tolist(), strict=True)
                ),
                [self.item_starts[-1]],
            ]
        ).astype(np.int64)
        #: Each shard's source (shards numbered across the sources), and each source's
        #: first shard, as lists: looked up per record as a mixture is read.
        self.shard_owners: tuple[list[int], list[int]] = (
            [i for i, source in enumerate(sources) for _ in range(len(source.counts))],
            self.shard_starts[:-1].tolist(),
        )
        #: The unshuffled epochs' labels and positions (:meth:`_spread`), made on first use.
        self._spread_cache: tuple[np.ndarray, list[np.ndarray]] | None = None

    def __len__(self) -> int:
        return self.samples_per_epoch

    def labels(self, *, seed: int | Sequence[int], epoch: int, shuffle: bool) -> np.ndarray:
        """The source of each position of epoch ``epoch`` (read-only when not shuffled:
        the same array every epoch)."""
        if not shuffle:
            return self._spread()[0]
        labels = np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)
        seeds = [seed] if isinstance(seed, int) else list(seed)
        # Shuffled in place: ``permutation`` of an array is a copy of it, then ``shuffle``.
        np.random.default_rng([*seeds, epoch, 2]).shuffle(labels)
        return labels

    def _spread(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """The sources spread evenly over an epoch (source i's k-th sample at
        ``(k + 1/2) / counts[i]`` of it), and each source's positions: the same every
        epoch and seed, so worked out once (they were about 1% of the CPU of reading an
        epoch of small records through an unshuffled mixture, every epoch)."""
        if self._spread_cache is None:
            labels = np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)
            places = np.concatenate([(np.arange(c) + 0.5) / c for c in self.counts if c])
            labels = labels[np.argsort(places, kind="stable")]
            positions = [np.flatnonzero(labels == i) for i in range(len(self.counts))]
            for array in (labels, *positions):
                array.setflags(write=False)
            self._spread_cache = (labels, positions)
        return self._spread_cache

    def _positions(self, seeds: list[int], epoch: int, shuffle: bool) -> tuple[int, list[np.ndarray]]:
        """The epoch's length, and each source's positions in it, in order."""
        if not shuffle:
            labels, positions = self._spread()
            return len(labels), positions
        labels = self.labels(seed=seeds, epoch=epoch, shuffle=True)
        return len(labels), [np.flatnonzero(labels == i) for i in range(len(self.counts))]

    def items(self, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int) -> np.ndarray:
        """The epoch's samples, as items numbered across the sources."""
        return self._samples(seed, epoch, shuffle, window, coded=False)

    def pairs_at(
        self, places: slice | np.ndarray, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int
    ) -> np.ndarray:
        """The ``(shard, number)`` of the samples at ``places`` of epoch ``epoch`` (shards
        numbered across the sources), as an ``[n, 2]`` array: the epoch laid out with each
        sample as its code (:func:`~recordkit.read._epoch_order.pairs_of_codes`), so that
        no sample is looked up in its shard."""
        if not all(source.coded for source in self.sources):
            items = self.items(seed=seed, epoch=epoch, shuffle=shuffle, window=window)
            return self.locate_pairs(items[places])
        return pairs_of_codes(self._samples(seed, epoch, shuffle, window, coded=True)[places])

    def _samples(
        self, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int, *, coded: bool
    ) -> np.ndarray:
        """The epoch's samples: items numbered across the sources, or (``coded``) codes
        of their shards (numbered across the sources) and numbers."""
        seeds = [seed] if isinstance(seed, int) else list(seed)
        length, positions = self._positions(seeds, epoch, shuffle)
        out = np.empty(length, dtype=np.int64)
        for i, where in enumerate(positions):
            for begin, end, keys in self._source_runs(i, seeds, epoch, shuffle, window, 0, len(where), coded):
                out[where[begin:end]] = keys
        return out

    def _source_runs(
        self,
        i: int,
        seeds: list[int],
        epoch: int,
        shuffle: bool,
        window: int,
        begin: int,
        end: int,
        coded: bool | None,
    ) -> Iterator[tuple[int, int, np.ndarray]]:
        """Source ``i``'s samples ``begin`` to ``end - 1`` of this epoch, as runs
        ``(first, stop, keys)``: items numbered across the sources, or (``coded``) codes of
        their shards numbered across the sources, or (``coded`` None) of the source's own."""
        # The source's own stream: its epochs one after another, continued across the
        # mixture's (its k-th place this epoch takes sample k after the epochs before).
        # Taken in order, so each source epoch gives one run of its order: a slice,
        # laid out from its first place to its last only.
        source, taken, size = self.sources[i], epoch * self.counts[i], self.sizes[i]
        done = begin
        while done < end:
            source_epoch, position = divmod(taken + done, size)
            step = min(end - done, size - position)
            options: dict[str, Any] = {
                "seed": [*seeds, i],
                "epoch": source_epoch,
                "shuffle": shuffle,
                "window": window,
            }
            stop = position + step
            if coded is None:
                keys = source.codes_from(position, **options, stop=stop)
            elif coded:
                keys = source.codes_from(
                    position, **options, stop=stop, first_shard=int(self.shard_starts[i])
                )
            else:
                keys = source.items_from(position, **options, stop=stop)
                keys += self.item_starts[i]
            yield done, done + step, keys
            done += step

    def source_pairs(
        self, start: int, stop: int, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int
    ) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """Each source's places among positions ``start`` to ``stop - 1`` of epoch ``epoch``
        (counted from ``start``), and its samples' ``(shard, number)`` there (its own
        shards), as :meth:`pairs_at` gives them for those places, each source's share
        straight from its order: no array of the whole epoch's samples laid out, then each
        source's taken back out of it (:func:`~recordkit.read._mixture_read.source_chunks`).
        None when a source's records have no codes."""
        if not all(source.coded for source in self.sources):
            return None
        seeds = [seed] if isinstance(seed, int) else list(seed)
        _, positions = self._positions(seeds, epoch, shuffle)
        places, pairs = [], []
        for i, where in enumerate(positions):
            first, last = np.searchsorted(where, [start, stop]).tolist()
            runs = [
                keys for _, _, keys in self._source_runs(i, seeds, epoch, shuffle, window, first, last, None)
            ]
            places.append(where[first:last] - start)
            pairs.append(
                pairs_of_codes(runs[0] if len(runs) == 1 else np.concatenate(runs or [np.empty(0, np.int64)]))
            )
        return places, pairs

    def source_of(self, items: np.ndarray) -> np.ndarray:
        """Each item's source."""
        return np.searchsorted(self.item_starts, items, side="right") - 1

    def locate(self, items: np.ndarray) -> list[tuple[int, int]]:
        """Each item's ``(shard, number)``, shards numbered across the sources."""
        return pair_list(self.locate_pairs(items))

    def locate_pairs(self, items: np.ndarray) -> np.ndarray:
        """:meth:`locate` as an ``[n, 2]`` array: the sources' shards, one after another,
        hold the items in their numbering, so one lookup over all of them finds each."""
        return located_pairs(self.all_starts, items)

    def identity(self) -> dict[str, Any]:
        """What a state records of the mixture: its sources, weights and epoch length."""
        return {
            "mixture": {
                "sources": [source.fingerprint for source in self.sources],
                "weights": self.weights,
                "samples_per_epoch": self.samples_per_epoch,
            }
        }
