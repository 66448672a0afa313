"""A mixture's samples read from their sources, in the mixture's order, a block at a time.

Each source streams its own records (:meth:`RandomAccess.stream_chunks`: runs of
neighbours fetched, parsed and decoded together, in lists). A block of the mixture's
places takes each source's next records as list slices of those lists, laid one source
after another, and puts them in their places with one ``itemgetter`` (each place's index
among them worked out in numpy for the whole read: :func:`_arrangement`), so there is
no Python step a record. Taking them with ``next`` of a chained stream a place, as the
mixture did before, cost about 40 ns a record against 15 to 19 for the itemgetter; with a
reader's whole share handed straight from the order (:func:`source_chunks`), the
mixture's own part of a pass of small records fell from 84 to 52 ns a record in order
and from 108 to 75 shuffled, about 3% of its CPU a record (busy machine, see
docs/performance-epochs.md).

The first blocks are small (1, 2, 4 ... places), so that the first record waits only
for its own source's first fetch, not for a fetch of every source: with blocks of 256
from the start, the first record of a 0.7 : 0.3 mixture of pictures and sounds waited
for 320 records decoded (about 150 ms of CPU, where reading one split waits 25 for its
first fetch of 64).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from recordkit.read._random_access import GROWN_BYTES, RandomAccess

__all__ = [
    "MIXED_BLOCK",
    "MIXED_BYTES",
    "SOURCE_GROWTH",
    "block_size",
    "mixed_chunks",
    "source_chunks",
    "source_prefetch",
]

#: The most places of a mixture's read put in one list ...
MIXED_BLOCK = 256
#: ... while their records hold at most about this many bytes as stored (by each
#: source's mean record size), and no fewer than :data:`FEWEST` places.
MIXED_BYTES = 1 << 20
FEWEST = 8
#: A source of small records fetches up to this many times the mixture's ``prefetch``
#: at once (:func:`source_prefetch`).
SOURCE_GROWTH = 8


def block_size(sources: Sequence[RandomAccess]) -> int:
    """The most places of a block: :data:`MIXED_BLOCK`, fewer for large records. Why:
    a block's records are all decoded before the first of them is yielded, so with
    pictures and sounds (47 KB a record stored) blocks of 256 held tens of MB of decoded
    values at once, and took about 5% more CPU a record than blocks of 16 (477 against
    454 µs; plain iteration 441)."""
    sizes = [records.mean_record_bytes for records in sources]
    largest = max((size for size in sizes if size is not None), default=None)
    if largest is None:
        return MIXED_BLOCK
    return max(FEWEST, min(MIXED_BLOCK, MIXED_BYTES // max(largest, 1)))


def source_prefetch(records: RandomAccess, prefetch: int) -> int:
    """The ``prefetch`` a source of a mixture streams with: :data:`SOURCE_GROWTH` times
    the mixture's (else 4, else 2 times) while the records it then fetches at once hold
    at most :data:`GROWN_BYTES` by their mean size (small records), else the mixture's.
    Why: each fetch has fixed costs (planning and reading the runs, checking their
    framing, parsing and decoding the batch), and each source's fetched batch lives
    while the other sources' places are read. With small records (a caption and a
    label, 200,000 of them) twice the fetch (1,024 records at once) took the mixture's
    CPU a record from 1.04x to 1.09x that of plain iteration to 0.99x to 1.00x in
    order; eight times (4,096), with a fetch taken apart by file without an object a
    record (:mod:`recordkit.read._parsed_shard`; else the garbage collector's full
    collections cost more than the larger fetch saved), from 1.04x to 1.06x to 0.93x
    to 0.95x in order and from 1.04x to 1.05x to 0.96x to 0.97x shuffled (busy
    machine, see docs/performance-epochs.md). Large records keep the mixture's fetch:
    more of them at once held more decoded bytes, which cost more."""
    size = records.mean_record_bytes
    if size is None:
        return prefetch
    for factor in (SOURCE_GROWTH, 4, 2):
        grown = prefetch * factor
        if records.fetch_size(grown) * size <= GROWN_BYTES:
            return grown
    return prefetch


def _blocks(count: int, largest: int) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` of the blocks of ``count`` places: 1, 2, 4 ... up to ``largest``."""
    begin, size = 0, 1
    while begin < count:
        end = min(begin + size, count)
        yield begin, end
        begin, size = end, min(size * 2, largest)


class _Held:
    """A source's records as its stream gives them (:meth:`RandomAccess.stream_chunks`):
    the list it is taking from, and how many of it are taken."""

    __slots__ = ("at", "chunk", "chunks")

    def __init__(self, chunks: Iterator[list[dict[str, Any]]]) -> None:
        self.chunks = chunks
        self.chunk: list[dict[str, Any]] = []
        self.at = 0

    def take(self, count: int) -> list[dict[str, Any]]:
        """The source's next ``count`` records, list slices of its stream's lists. When its
        stream raises, :class:`_ShortError` with those it gave before."""
        at, chunk = self.at, self.chunk
        end = at + count
        if end <= len(chunk):
            self.at = end
            return chunk[at:end]
        part = chunk[at:]
        self.at = len(chunk)
        try:
            while len(part) < count:
                # Each source yields exactly its places' records (or raises): it does not
                # run out before ``count``.
                self.chunk = chunk = next(self.chunks)
                need = count - len(part)
                part += chunk[:need]
                self.at = min(need, len(chunk))
        except Exception as error:
            raise _ShortError(part, error) from error
        return part


class _ShortError(Exception):
    """A source's stream raised before it gave a block's records: those it gave, and its error."""

    def __init__(self, part: list[dict[str, Any]], error: Exception) -> None:
        super().__init__(part, error)
        self.part, self.error = part, error


def _arrangement(
    positions: Sequence[np.ndarray], count: int, bounds: np.ndarray
) -> tuple[list[int], list[tuple[int, ...]]]:
    """For blocks of places from ``bounds[k]`` to ``bounds[k + 1]`` of a read of
    ``count`` places, each source's at ``positions`` (in order): each place's index among
    its block's records laid out source after source (each source's in order), and each
    block's count of each source's places. Worked out for the whole read in numpy: a
    block is then one C call over its sources' list slices (:func:`mixed_chunks`), not a
    ``next`` of a chained stream a record."""
    before = np.stack([np.searchsorted(where, bounds) for where in positions])
    per_block = np.diff(before, axis=1)
    # A place's index: its rank among its source's places, less its source's places in
    # the blocks before its own, plus its block's places of the sources before its own.
    # In 16 bits (a block's places are far fewer): the scatter took a fifth the time.
    shift = (before[:, :-1] - (np.cumsum(per_block, axis=0) - per_block)).astype(np.int16)
    arranged = np.empty(count, dtype=np.int16)
    ranks = np.arange(max(len(where) for where in positions), dtype=np.int16)
    for where, moved, counts in zip(positions, shift, per_block, strict=True):
        local = np.repeat(moved, counts)
        np.subtract(ranks[: len(where)], local, out=local)  # wraps past 2**15 as the shift does
        arranged[where] = local
    # Rows of the per-block counts by zip (the transpose's tolist took 20 times as long).
    return arranged.tolist(), list(zip(*per_block.tolist(), strict=True))


def mixed_chunks(
    sources: Sequence[RandomAccess],
    located: np.ndarray,
    shard_owners: tuple[list[int], list[int]],
    prefetch: int,
) -> Iterator[list[dict[str, Any]]]:
    """Each ``(shard, number)``'s record (shards numbered across ``sources``; each
    shard's source and each source's first shard in ``shard_owners``), decoded, in
    order, in lists of a block each: each source streams its own records
    (:meth:`RandomAccess.stream_chunks`, :func:`source_prefetch` at a time, more for
    small records), and a block takes each source's records as list slices, placed by
    one ``itemgetter``. When a source raises, the block's records before its place come
    first, then the error (the earliest place's, when several raise)."""
    owner_of, first_shard = shard_owners
    pairs = np.asarray(located, dtype=np.int64).reshape(-1, 2)
    owners = np.asarray(owner_of, dtype=np.int64).take(pairs[:, 0])
    positions = [np.flatnonzero(owners == source) for source in range(len(sources))]
    local: list[np.ndarray] = []
    for where, first in zip(positions, first_shard, strict=True):
        # Rows taken by their numbers: a boolean mask over the rows cost four times as much.
        rows = pairs.take(where, axis=0)
        rows[:, 0] -= first
        local.append(rows)
    yield from source_chunks(sources, positions, local, prefetch)


def source_chunks(
    sources: Sequence[RandomAccess],
    positions: Sequence[np.ndarray],
    pairs: Sequence[np.ndarray],
    prefetch: int,
) -> Iterator[list[dict[str, Any]]]:
    """:func:`mixed_chunks` given each source's places in the read (in order) and its
    records' ``(shard, number)`` there (its own shards): what a mixture's order gives
    for a reader's whole share without laying the read out
    (:meth:`~recordkit.read._mixture_order.MixtureOrder.source_pairs`)."""
    count = sum(len(where) for where in positions)
    held = [
        _Held(records.stream_chunks(rows, prefetch=source_prefetch(records, prefetch)))
        for records, rows in zip(sources, pairs, strict=True)
    ]
    blocks = list(_blocks(count, block_size(sources)))
    if not blocks:
        return
    bounds = np.array([begin for begin, _ in blocks] + [blocks[-1][1]], dtype=np.int64)
    arranged, counts = _arrangement(positions, count, bounds)
    # A stream fetches when its first record is asked for: a block asks only for the
    # sources of its places.
    for (begin, end), wanted in zip(blocks, counts, strict=True):
        parts: list[list[dict[str, Any]]] = []
        short: list[tuple[int, _ShortError]] = []
        for source, count in enumerate(wanted):
            if count:
                try:
                    parts.append(held[source].take(count))
                except _ShortError as error:
                    short.append((len(parts), error))
                    parts.append(error.part + [None] * (count - len(error.part)))  # type: ignore[list-item]
        if short:
            yield from _before_error(parts, short, arranged[begin:end])
        if len(parts) == 1:
            yield parts[0]
            continue
        laid = parts[0]
        for part in parts[1:]:
            laid += part
        yield list(itemgetter(*arranged[begin:end])(laid))


def _before_error(
    parts: list[list[dict[str, Any]]], short: list[tuple[int, _ShortError]], arranged: list[int]
) -> Iterator[list[dict[str, Any]]]:
    """A block's records before the earliest place whose source raised, then its error.
    (Every record before that place was given: its source raised later, or not at all.)"""
    starts = [0]
    for part in parts:
        starts.append(starts[-1] + len(part))
    place, error = min((arranged.index(starts[at] + len(e.part)), e.error) for at, e in short)
    laid = [record for part in parts for record in part]
    if place:
        yield [laid[index] for index in arranged[:place]]
    raise error
