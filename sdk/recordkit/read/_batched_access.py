"""A batch of records' bytes in as few reads as they allow, checked at once.

The records asked for are sorted by shard and offset; records that lie end to end in a
shard, or with less than :data:`MERGE_GAP` bytes between them (or are asked for twice),
are read together, one read per run (a local ``pread``, a remote ranged GET: the runs of
a bucket's shards are fetched concurrently through
:meth:`~recordkit.storage.RangeReader.read_many`), then cut apart and given back in the
order asked. Sequential and shuffled-within-a-window batches become a few large reads
instead of one small read per record: the small records of a shuffled window lie a few
records apart, and one read of the bytes between them costs less than a read each.

The runs are worked out in numpy, and the framing of a batch of small records is checked
for the whole batch at once (:func:`~recordkit.format._framing_check.unframe_run`, over
the run's bytes or the runs' bytes joined): record by record in Python, the check cost
more than the rest of reading a small record. A batch that fails that check, or whose
records are large (where the per-record check costs nothing beside copying them to join
the runs), is checked record by record, and each damaged record gets its own error.

Batches of large records (:data:`ONE_BY_ONE_BYTES` or more on average: pictures, audio)
from local files are read a record a read instead, each checked as soon as it is read,
while its bytes are still in the CPU's cache (:func:`_fetched_each`): at 45 KB a record,
checking a batch's records after reading them all cost more than the reads it would
save, and only neighbours end to end would share a run. A record that fails its checks
sends the batch down the run path, whose errors name the record.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from recordkit.errors import RecordkitError
from recordkit.format._framing_check import framed_header, unframe_run
from recordkit.format._tfrecord import CRC_FIELD, FOOTER_BYTES, FRAMING_BYTES, HEADER_BYTES, masked_crc
from recordkit.read._shard_index import IndexedShards
from recordkit.storage import Location

__all__ = ["MERGE_GAP", "fetch_checked", "fetch_in_runs"]

#: Records of a shard less than this many bytes apart are read in one run (the bytes
#: between them read and dropped): cheaper than a read each, locally and remotely.
MERGE_GAP = 16 * 1024
#: Runs are joined to be checked at once while they hold at most this many bytes per
#: record they serve (more, and copying them costs more than checking record by record).
JOIN_BYTES_PER_RECORD = 4 * 1024
#: Batches of records of at least this many bytes on average are read a record a read,
#: each checked as soon as it is read (while its bytes are in the CPU's cache), not in
#: runs: only neighbours end to end would share a run, and cutting each out of its run
#: costs a copy of it. (The shuffled tf.data epoch's fetch of the benchmark's mixed records,
#: 48 KB on average, 64 a batch: 14.3 µs of CPU a record against 22.6 in runs, medians
#: of 9 passes on a busy machine.)
ONE_BY_ONE_BYTES = MERGE_GAP
#: Batches of fewer records than this are planned record by record in Python
#: (:func:`_runs_shard_by_shard`): numpy's fixed costs would be most of the time.
_FEW_TO_PLAN = 32
#: Batches of at least this many records are sorted by a key that packs each record's place
#: with its address (fewer: an argsort, which costs less than the packing then).
_PACKED_SORT = 256
#: Bits of the sort key on which a batch's runs are planned at once: each record's shard (less
#: the batch's lowest), its offset and its place in the batch, packed into one int64 (a
#: batch whose shards, offsets and length need more is planned shard by shard).
_KEY_BITS = 62


@dataclass
class _Runs:
    """How a batch is read: run ``r`` is bytes ``starts[r]`` to ``ends[r]`` of shard
    ``shards[r]``; record ``i`` (in the order asked), at ``offsets[i]`` with ``sizes[i]``
    bytes, lies in run ``run_of[i]``; ``order`` lists the records by shard and offset (the
    order of their bytes in the runs; None: that order is the order asked)."""

    shards: list[int]
    starts: np.ndarray
    ends: np.ndarray
    run_of: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    order: np.ndarray | None = None

    def members(self) -> list[list[tuple[int, int, int]]]:
        """Each run's records ``(place asked, offset, size)``, by offset."""
        out: list[list[tuple[int, int, int]]] = [[] for _ in self.shards]
        order = np.lexsort((self.offsets, self.run_of)).tolist()
        runs, offsets, sizes = self.run_of.tolist(), self.offsets.tolist(), self.sizes.tolist()
        for i in order:
            out[runs[i]].append((i, offsets[i], sizes[i]))
        return out


def _runs(shard_of: np.ndarray, offsets: np.ndarray, sizes: np.ndarray) -> _Runs:
    """The runs that read the records at ``offsets`` (``sizes`` bytes) of shards ``shard_of``."""
    count = len(offsets)
    if count < _FEW_TO_PLAN:
        return _runs_shard_by_shard(shard_of, offsets, sizes)
    low, high = int(shard_of.min()), int(shard_of.max())
    # Each shard's offsets placed at its own stretch of one line of addresses, a stretch
    # long enough that no run reaches from one shard into the next (no table of the
    # batch's shards: working one out cost more than the rest of the planning).
    reach_bits = int(offsets.max() + sizes.max() + MERGE_GAP).bit_length()
    place_bits = (count - 1).bit_length()
    if low < 0 or (high - low).bit_length() + reach_bits + place_bits > _KEY_BITS:
        return _runs_shard_by_shard(shard_of, offsets, sizes)
    address = offsets if low == high else ((shard_of - low) << reach_bits) + offsets
    if bool((address[1:] >= address[:-1]).all()):  # in order already (a sequential batch)
        order = None
        first, first_sizes = address, sizes
    elif count < _PACKED_SORT:
        order = np.argsort(address)
        first, first_sizes = address[order], sizes[order]
    else:
        # One sort of each address with its place packed below it, not an argsort: half
        # the time on a shuffled fetch of 2,048 (records asked twice sort by place, which
        # changes nothing below).
        keys = np.sort((address << place_bits) | np.arange(count))
        order = keys & ((1 << place_bits) - 1)
        first = keys >> place_bits
        first_sizes = sizes[order]
    reach = np.maximum.accumulate(first + first_sizes)
    opens = np.empty(count, dtype=bool)
    opens[0] = True
    np.greater(first[1:], reach[:-1] + MERGE_GAP, out=opens[1:])
    heads = np.flatnonzero(opens)
    numbered = np.cumsum(opens) - 1
    if order is None:
        run_of = numbered
    else:
        run_of = np.empty(count, dtype=np.int64)
        run_of[order] = numbered
    starts = first[heads]
    ends = reach[np.append(heads[1:], count) - 1]
    if low == high:
        return _Runs([low] * len(heads), starts, ends, run_of, offsets, sizes, order)
    within = (1 << reach_bits) - 1
    shards = ((starts >> reach_bits) + low).tolist()
    return _Runs(shards, starts & within, ends & within, run_of, offsets, sizes, order)


def _runs_shard_by_shard(shard_of: np.ndarray, offsets: np.ndarray, sizes: np.ndarray) -> _Runs:
    """:func:`_runs` in Python, record by record (for a batch of a few records, or shards
    too large to share a line)."""
    shard_list, offset_list, size_list = shard_of.tolist(), offsets.tolist(), sizes.tolist()
    order = sorted(range(len(offset_list)), key=lambda i: (shard_list[i], offset_list[i]))
    shards: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    run_of = [0] * len(order)
    for i in order:
        shard, offset, size = shard_list[i], offset_list[i], size_list[i]
        if not shards or shards[-1] != shard or offset > ends[-1] + MERGE_GAP:
            shards.append(shard)
            starts.append(offset)
            ends.append(offset + size)
        ends[-1] = max(ends[-1], offset + size)
        run_of[i] = len(shards) - 1
    return _Runs(
        shards,
        np.asarray(starts, np.int64),
        np.asarray(ends, np.int64),
        np.asarray(run_of, np.int64),
        offsets,
        sizes,
        np.asarray(order, np.int64),
    )


def _plan(shards: IndexedShards, located: Sequence[tuple[int, int]] | np.ndarray) -> _Runs:
    return _runs(*shards.span_arrays(located))


def _read_runs(shards: IndexedShards, runs: _Runs) -> list[bytes | OSError]:
    paths = shards.shards
    return shards.files.read_many(
        [
            (paths[shard].path, start, end - start)
            for shard, start, end in zip(runs.shards, runs.starts.tolist(), runs.ends.tolist(), strict=True)
        ]
    )


def fetch_in_runs(shards: IndexedShards, located: Sequence[tuple[int, int]]) -> list[bytes | OSError]:
    """The framed bytes of each ``(shard, record)``, unchecked, in the order asked (see
    :meth:`IndexedShards.unframe`): one read per run of them. A run that cannot be read
    gives its OSError to each of its records."""
    if not located:
        return []
    runs = _plan(shards, located)
    got = _read_runs(shards, runs)
    out: list[bytes | OSError] = [b""] * len(located)
    for members, data, start in zip(runs.members(), got, runs.starts.tolist(), strict=True):
        for i, offset, size in members:
            out[i] = data if isinstance(data, OSError) else data[offset - start : offset - start + size]
    return out


def fetch_checked(
    shards: IndexedShards, located: Sequence[tuple[int, int]] | np.ndarray
) -> list[bytes | RecordkitError]:
    """The data of each ``(shard, record)``, in the order asked, its length and CRCs
    checked: read as :func:`fetch_in_runs` reads them, each record's span looked up once.
    A record that cannot be read, or is damaged, gets its error (naming the shard and
    offset) in its place, for the caller to raise when it comes to it."""
    if len(located) == 0:
        return []
    shard_of, offsets, sizes = shards.span_arrays(located)
    if int(sizes.sum()) >= ONE_BY_ONE_BYTES * len(sizes):
        each = _fetched_each(shards, shard_of, offsets, sizes)
        if each is not None:
            return list[bytes | RecordkitError](each)
    runs = _runs(shard_of, offsets, sizes)
    got = _read_runs(shards, runs)
    checked = _checked_at_once(runs, got, verify=shards.verify)
    if checked is not None:
        return cast(list[bytes | RecordkitError], checked)  # a new list, the caller's
    out: list[bytes | RecordkitError] = [b""] * len(located)
    for run, members in enumerate(runs.members()):
        start = int(runs.starts[run])
        for (i, _, _), data in zip(
            members, shards.unframe_run(runs.shards[run], start, got[run], members), strict=True
        ):
            out[i] = data
    return out


def _fetched_each(
    shards: IndexedShards, shard_of: np.ndarray, offsets: np.ndarray, sizes: np.ndarray
) -> list[bytes] | None:
    """The data of each record (``sizes`` bytes framed at ``offsets`` of shards
    ``shard_of``), each read on its own from a local file and checked as it is read
    (:func:`_data_of`); None: a shard is remote, a read failed or a record is damaged
    (read the batch in runs, for the error naming the record)."""
    listed = shard_of.tolist()
    distinct = list(dict.fromkeys(listed))
    place = {shard: i for i, shard in enumerate(distinct)}
    paths = shards.shards
    files: list[Location] = [paths[shard].path for shard in distinct]
    size_list = sizes.tolist()
    try:
        with shards.files.local_reads(
            files, list(map(place.__getitem__, listed)), offsets.tolist(), size_list
        ) as reads:
            if reads is None:
                return None
            data = list(map(_data_of, reads, size_list, itertools.repeat(shards.verify)))
    except OSError:
        return None
    return None if None in data else cast(list[bytes], data)


def _data_of(framed: bytes, size: int, verify: bool) -> bytes | None:
    """The data of one whole framed record read on its own (``size`` bytes with its
    framing, as the index gives it), checked as :func:`~recordkit.format._tfrecord.unframe_record`
    checks it (its header compared whole with the one its size gives); None if it fails."""
    if len(framed) != size or size < FRAMING_BYTES or framed[:HEADER_BYTES] != framed_header(size):
        return None
    data = framed[HEADER_BYTES:-FOOTER_BYTES]
    if verify and masked_crc(data) != CRC_FIELD.unpack_from(framed, size - FOOTER_BYTES)[0]:
        return None
    return data


def _checked_at_once(runs: _Runs, got: list[bytes | OSError], *, verify: bool) -> list[bytes] | None:
    """The data of every record of the batch, checked at once over its run's bytes (the
    runs' bytes joined when there are several, and small); None: a run could not be read
    or was cut short, the runs are too large to join, or a record is damaged."""
    lengths = runs.ends - runs.starts
    buffers = [data for data in got if not isinstance(data, OSError)]
    if len(buffers) != len(got) or list(map(len, buffers)) != lengths.tolist():
        return None
    if len(buffers) == 1:
        buffer = buffers[0]
        positions = runs.offsets - runs.starts[0]
    else:
        if int(lengths.sum()) > JOIN_BYTES_PER_RECORD * len(runs.offsets):
            return None
        buffer = b"".join(buffers)
        firsts = np.cumsum(lengths) - lengths
        positions = runs.offsets + (firsts - runs.starts)[runs.run_of]
    return unframe_run(buffer, positions, runs.sizes, verify=verify, order=runs.order)
