"""A mixture's samples read from their sources, in the mixture's order, a block at a time.

Each source streams its own records (:meth:`RandomAccess.stream`: runs of neighbours
fetched, parsed and decoded together), and each place of the mixture's order takes the
next record of its source, ``next`` mapped over the places in C (no Python step a
record), a block of places into one list.

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

from recordkit.read._random_access import GROWN_BYTES, RandomAccess, gathered

__all__ = ["MIXED_BLOCK", "MIXED_BYTES", "SOURCE_GROWTH", "block_size", "mixed_chunks", "source_prefetch"]

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


def mixed_chunks(
    sources: Sequence[RandomAccess],
    located: np.ndarray,
    shard_owners: tuple[list[int], list[int]],
    prefetch: int,
) -> Iterator[list[dict[str, Any]]]:
    """Each ``(shard, number)``'s record (shards numbered across ``sources``; each
    shard's source and each source's first shard in ``shard_owners``), decoded, in
    order, in lists of a block each: each source streams its own records
    (:meth:`RandomAccess.stream`, :func:`source_prefetch` at a time, more for small
    records). When a source raises, the block's records before its place come first,
    then the error."""
    owner_of, first_shard = shard_owners
    pairs = np.asarray(located, dtype=np.int64).reshape(-1, 2)
    owners = np.asarray(owner_of, dtype=np.int64).take(pairs[:, 0])
    streams: list[Iterator[dict[str, Any]]] = []
    for source, records in enumerate(sources):
        # Rows taken by their numbers: a boolean mask over the rows cost four times as much.
        local = pairs.take(np.flatnonzero(owners == source), axis=0)
        local[:, 0] -= first_shard[source]
        streams.append(records.stream(local, prefetch=source_prefetch(records, prefetch)))
    # Each source yields exactly its places' records (or raises), so no stream runs out
    # early. A stream fetches when its first record is asked for: a block asks only for
    # the sources of its places.
    places = owners.tolist()
    for begin, end in _blocks(len(places), block_size(sources)):
        # The block's streams picked in one C call (a tuple), then ``next`` of each.
        picked = itemgetter(*places[begin:end])(streams) if end - begin > 1 else (streams[places[begin]],)
        yield from gathered(map(next, picked))
