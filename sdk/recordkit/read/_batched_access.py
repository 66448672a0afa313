"""A batch of records' bytes in as few reads as they allow.

The records asked for are sorted by shard and offset; records that lie end to end in a
shard, or with less than :data:`MERGE_GAP` bytes between them (or are asked for twice),
are read together, one read per run (a local ``pread``, a remote ranged GET: the runs of
a bucket's shards are fetched concurrently through
:meth:`~recordkit.storage.RangeReader.read_many`), then cut apart and given back in the
order asked. Sequential and shuffled-within-a-window batches become a few large reads
instead of one small read per record: the small records of a shuffled window lie a few
records apart, and one read of the bytes between them costs less than a read each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from recordkit.errors import RecordkitError
from recordkit.read._shard_index import IndexedShards

__all__ = ["MERGE_GAP", "fetch_checked", "fetch_in_runs"]

#: Records of a shard less than this many bytes apart are read in one run (the bytes
#: between them read and dropped): cheaper than a read each, locally and remotely.
MERGE_GAP = 16 * 1024


@dataclass
class _Run:
    """Bytes ``start`` to ``end`` of shard ``shard``, and the records (position in the
    request, offset) that lie in them."""

    shard: int
    start: int
    end: int
    members: list[tuple[int, int, int]] = field(default_factory=list)


def _runs(spans: Sequence[tuple[int, int, int]]) -> list[_Run]:
    """The runs that read records at ``spans`` (``(shard, offset, size)`` each)."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1]))
    runs: list[_Run] = []
    for i in order:
        shard, offset, size = spans[i]
        last = runs[-1] if runs else None
        if last is None or last.shard != shard or offset > last.end + MERGE_GAP:
            last = _Run(shard, offset, offset + size)
            runs.append(last)
        last.end = max(last.end, offset + size)
        last.members.append((i, offset, size))
    return runs


def _read_runs(shards: IndexedShards, runs: list[_Run]) -> list[bytes | OSError]:
    return shards.files.read_many(
        [(shards.shards[run.shard].path, run.start, run.end - run.start) for run in runs]
    )


def fetch_in_runs(shards: IndexedShards, located: Sequence[tuple[int, int]]) -> list[bytes | OSError]:
    """The framed bytes of each ``(shard, record)``, unchecked, in the order asked (see
    :meth:`IndexedShards.unframe`): one read per run of them. A run that cannot be read
    gives its OSError to each of its records."""
    runs = _runs(shards.spans(located))
    out: list[bytes | OSError] = [b""] * len(located)
    for run, got in zip(runs, _read_runs(shards, runs), strict=True):
        for i, offset, size in run.members:
            out[i] = got if isinstance(got, OSError) else got[offset - run.start : offset - run.start + size]
    return out


def fetch_checked(shards: IndexedShards, located: Sequence[tuple[int, int]]) -> list[bytes | RecordkitError]:
    """The data of each ``(shard, record)``, in the order asked, its length and CRCs
    checked: read as :func:`fetch_in_runs` reads them, each record's span looked up once.
    A record that cannot be read, or is damaged, gets its error (naming the shard and
    offset) in its place, for the caller to raise when it comes to it."""
    spans = shards.spans(located)
    runs = _runs(spans)
    out: list[bytes | RecordkitError] = [b""] * len(located)
    for run, got in zip(runs, _read_runs(shards, runs), strict=True):
        checked = shards.unframe_run(run.shard, run.start, got, run.members)
        for (i, _, _), data in zip(run.members, checked, strict=True):
            out[i] = data
    return out
