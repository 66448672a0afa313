"""Reading records by position: each shard's record index, and one read per record.

:class:`IndexedShards` is the core that :class:`recordkit.RandomAccess`, the PyTorch
datasets and the Grain data source share. It finds each shard's index (listed in the
manifest and checked against its sha256; else a ``<shard>.index`` sidecar, as
``recordkit index`` writes for foreign files; else, for a local shard only, a scan of
the shard, kept in memory), each loaded on the first read of its shard; it maps a global
record number to its shard and record, and reads a record's framed bytes in one read,
whose CRCs it checks.

Local and remote shards differ only in how bytes arrive, which the storage layer's
:class:`~recordkit.storage.RangeReader` decides: a local shard is read with one
``os.pread`` on a file kept open (an LRU of at most ``max_open_files``, fork-aware); a
remote one (``s3://``, ``gs://``, any fsspec URL) with one ranged GET per record, through
a client made per process. A shard's index is fetched (one GET) on the first read of
that shard, so opening a split of a million shards loads none; the records of each
shard are counted from the manifest. A remote shard without an index is refused with
the command that builds one, since scanning it would download it whole.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence

import numpy as np

from recordkit.dataset._manifest import ShardInfo
from recordkit.dataset._shard_table import ShardTable
from recordkit.dataset._shards import ListedShards, Shard
from recordkit.errors import CorruptRecordError, DatasetError, RecordkitError
from recordkit.format._index import INDEX_SUFFIX, RecordIndex, build_index, max_index_bytes
from recordkit.format._tfrecord import Compression, unframe_record
from recordkit.read._open import OpenedDataset, check_shard_size
from recordkit.read._record_starts import RecordStarts
from recordkit.storage import DEFAULT_MAX_OPEN_FILES, Location, RangeReader, read_ranges

__all__ = ["DEFAULT_MAX_OPEN_FILES", "IndexedShards", "load_indexes"]


def _beside(shard: Shard, name: str) -> Location:
    """The file ``name`` in the folder of ``shard``."""
    return shard.path.parent.join(name)


def _dataset_member(shard: Shard, name: str) -> Location:
    """The file the manifest names ``name`` (relative to the dataset's root), from a
    ``shard`` the manifest names too (in the root, or in a field group's folder)."""
    return _dataset_root(shard).join(*name.split("/"))


def _dataset_root(shard: Shard) -> Location:
    """The folder of the dataset of a ``shard`` its manifest lists (its name is relative to it)."""
    folder = shard.path
    for _ in shard.name.split("/"):
        folder = folder.parent
    return folder


def load_indexes(
    shards: Sequence[Shard],
    listed: dict[str, ShardInfo],
    compression: Compression = Compression.NONE,
) -> list[RecordIndex]:
    """The record index of each shard: the manifest's (sha256 and record count checked),
    else a ``<file>.index`` sidecar, else (local shards only) built by scanning the shard.
    The shards must be uncompressed (a compressed shard's offsets are in its
    decompressed stream, which no size on disk bounds): a DatasetError otherwise.

    An index is untrusted, and may be stale (the shard rewritten after ``recordkit
    index``): of each index file no more is read than a shard of its size can need
    (:func:`~recordkit.format._index.max_index_bytes`), and each index must end where its
    shard ends, so no record it lists spans bytes the shard lacks.
    Either failure names the shard and the command that rebuilds its index. The index
    files are read together (:func:`recordkit.storage.read_ranges`: remote ones
    concurrently, one GET each); a remote shard with neither index is an error that says
    how to build them.
    """
    if compression is not Compression.NONE:
        raise DatasetError(f"record indexes are read for uncompressed shards only, not {compression.value}")
    # Each shard's index file, the sha256 the manifest gives it (None: a sidecar), and
    # the shard's size (what bounds the index).
    wanted: list[tuple[Location, str | None, int] | None] = []
    for shard in shards:
        info = listed.get(shard.name)
        if info is not None and info.index is not None:
            wanted.append((_dataset_member(shard, info.index.file), info.index.sha256, _shard_size(shard)))
            continue
        sidecar = _beside(shard, shard.path.name + INDEX_SUFFIX)
        wanted.append((sidecar, None, _shard_size(shard)) if sidecar.exists() else None)
    # One byte past the bound: enough to tell an index that is too large, and no more.
    found = [(where, max_index_bytes(size) + 1) for where, _, size in filter(None, wanted)]
    data = iter(read_ranges([(where, 0, limit) for where, limit in found]))
    indexes = []
    for shard, want in zip(shards, wanted, strict=True):
        if want is None:
            indexes.append(_scan(shard))
            continue
        where, sha256, size = want
        index = _parse_index(shard, where, sha256, _bounded(shard, where, sha256, size, next(data)))
        end = int(index.offsets[-1])
        if end != size:
            raise DatasetError(
                f"its record index {where.name} does not match the shard: it lists {len(index)} "
                f"records ending at byte {end}, the shard has {size} bytes (the shard changed after "
                f"the index was built, or the index is damaged); {_rebuild(shard, sha256)}",
                shard=shard.name,
            )
        if shard.records is not None and len(index) != shard.records:
            raise CorruptRecordError(
                f"its record index lists {len(index)} records, the manifest says {shard.records}",
                shard=shard.name,
            )
        indexes.append(index)
    return indexes


def _bounded(
    shard: Shard, where: Location, sha256: str | None, size: int, data: bytes | OSError
) -> bytes | OSError:
    """``data``, read from the index file ``where`` with the bound of a ``size``-byte
    shard plus one byte; a CorruptRecordError when it reached that extra byte."""
    limit = max_index_bytes(size)
    if not isinstance(data, OSError) and len(data) > limit:
        raise CorruptRecordError(
            f"its record index {where.name} holds more than the {limit} bytes that the index of "
            f"a {size}-byte shard can hold; {_rebuild(shard, sha256)}",
            shard=shard.name,
        )
    return data


def _shard_size(shard: Shard) -> int:
    """The shard's size: a local file's from a ``stat``, a remote one's from the manifest
    (checked when the dataset was opened) or else one request."""
    try:
        if shard.path.local_path is not None or shard.bytes is None:
            return shard.path.size()
    except OSError as exc:
        raise DatasetError(f"cannot read the shard: {exc.strerror or exc}", shard=shard.name) from None
    return shard.bytes


def _rebuild(shard: Shard, sha256: str | None) -> str:
    """How to rebuild ``shard``'s index: a dataset's (listed in its manifest, with its
    sha256) with ``--rebuild`` on the dataset's folder, a sidecar on the shard's file."""
    if sha256 is None:
        return f"rebuild it with `recordkit index {shard.path}`"
    return f"rebuild it with `recordkit index --rebuild {_dataset_root(shard)}`"


def _parse_index(shard: Shard, where: Location, sha256: str | None, data: bytes | OSError) -> RecordIndex:
    if isinstance(data, OSError):
        raise CorruptRecordError(
            f"its record index {where.name} cannot be read: {data.strerror or data}", shard=shard.name
        )
    if sha256 is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise CorruptRecordError(
                f"its record index {where.name} has sha256 {digest}, the manifest says "
                f"{sha256}; rebuild it with `recordkit index`",
                shard=shard.name,
            )
    return RecordIndex.from_bytes(data, name=where.name)


def _scan(shard: Shard) -> RecordIndex:
    """A local shard's index, built by reading it once; a remote shard: the error."""
    if shard.path.local_path is None:
        folder = shard.path.parent.url
        raise DatasetError(
            "has no record index, which random access to a remote shard needs (without one "
            f"the whole shard would be downloaded); build the indexes with `recordkit index {folder}` "
            f"for a dataset, or `recordkit index {shard.path.url}` for TFRecord files recordkit "
            "did not write",
            shard=shard.name,
        )
    return build_index(shard.path)


def _listing(dataset: OpenedDataset) -> Callable[[int, Shard], dict[str, ShardInfo]]:
    """How to find shard ``s``'s manifest entry: by position in a whole split's listing,
    else by file name among every split's shards (a slice, or an unfinished append)."""
    shards = dataset.shards
    if isinstance(shards, ListedShards):
        listed = shards.listed
        return lambda s, shard: {shard.name: listed[s]}
    by_name: dict[str, ShardInfo] | None = None

    def find(_: int, shard: Shard) -> dict[str, ShardInfo]:
        nonlocal by_name
        if by_name is None:
            manifest = dataset.manifest
            splits = manifest.splits.values() if manifest is not None else ()
            by_name = {info.file: info for split in splits for info in split.listed_shards}
        info = by_name.get(shard.name)
        return {} if info is None else {shard.name: info}

    return find


def _counts(shards: Sequence[Shard]) -> np.ndarray | None:
    """The records read of each shard, from the manifest (None: not all known)."""
    if isinstance(shards, ListedShards):
        listed = shards.listed
        if isinstance(listed, ShardTable):
            return listed.record_counts()
        return np.asarray([s.records for s in listed], dtype=np.int64)
    counts = [shard.selected for shard in shards]
    if any(count is None for count in counts):
        return None
    return np.asarray(counts, dtype=np.int64)


#: Offsets :class:`_JoinedOffsets` makes room for at first.
_JOINED_FIRST = 1024


class _JoinedOffsets:
    """Shards' record offsets laid end to end in one array, so that the records of a batch
    over several shards (most of a shuffled read's) are looked up in one numpy gather, not
    a pass per shard. Row ``s`` of ``table`` is shard ``s``'s: where its first record read
    (its record ``skip``) starts in ``offsets``, and the lowest and one past the highest
    record number a batch may ask of it (``-skip`` and its index's records less ``skip``,
    as :meth:`IndexedShards._bounds` allows); ``[0, 0, 0]``, which allows none: not joined.
    A joined shard's index then holds a view of ``offsets`` (the same values), so the
    offsets are not held twice.

    Shards are joined as batches first ask for them (under the shards' lock); a lookup
    reads ``table`` before ``offsets``, and :meth:`add` writes a shard's offsets (into a
    new, larger array when they do not fit, which replaces ``offsets``) before its row,
    so a lookup that finds a shard joined finds its offsets too."""

    def __init__(self, shards: int) -> None:
        self.table = np.zeros((shards, 3), dtype=np.int64)
        self.joined = np.zeros(shards, dtype=bool)
        self.offsets = np.empty(0, dtype=np.int64)
        #: Each joined index, with where its offsets start in ``offsets``.
        self._members: list[tuple[RecordIndex, int]] = []
        self._used = 0

    def add(self, shard: int, index: RecordIndex, skip: int) -> None:
        """Shard ``shard``'s ``index`` (its offsets, one more than its records) joined."""
        if self.joined[shard]:
            return
        used, size = self._used, len(index.offsets)
        if used + size > len(self.offsets):  # grown by doubling: each offset copied a few times at most
            grown = np.empty(max(2 * len(self.offsets), used + size, _JOINED_FIRST), dtype=np.int64)
            grown[:used] = self.offsets[:used]
            for member, start in self._members:  # the old array freed once no lookup holds it
                member.offsets = grown[start : start + len(member.offsets)]
            self.offsets = grown
        self.offsets[used : used + size] = index.offsets
        index.offsets = self.offsets[used : used + size]
        self._members.append((index, used))
        self.table[shard] = (used + skip, -skip, size - 1 - skip)
        self.joined[shard] = True
        self._used = used + size


class IndexedShards:
    """A split's shards, their indexes, and reads of single records by position."""

    def __init__(
        self,
        dataset: OpenedDataset,
        *,
        verify: bool = True,
        max_open_files: int = DEFAULT_MAX_OPEN_FILES,
    ) -> None:
        if dataset.compression is not Compression.NONE:
            raise DatasetError(
                f"random access needs uncompressed shards; these are stored {dataset.compression.value} "
                "(rewrite the dataset without compression, or read it in order with iter_records)"
            )
        self.shards = dataset.shards
        self.verify = verify
        self.compression = dataset.compression
        self._listing = _listing(dataset)
        self._manifest = dataset.manifest is not None
        #: Each shard's record index, loaded on the first read of that shard (a dict: at a
        #: million shards a list would be made whole before the first read).
        self._indexes: dict[int, RecordIndex] = {}
        self._lock = threading.Lock()
        #: The indexes looked up by batches over several shards, end to end (see :meth:`span_arrays`).
        self._joined: _JoinedOffsets | None = None
        #: How many records the dataset reads of each shard (from the manifest, else
        #: from the indexes, loaded for it); record numbers below count from the first read.
        counts = _counts(dataset.shards)
        if counts is None:  # files without a manifest: their indexes say
            counts = np.asarray(
                [
                    len(self.index(s)) - shard.skip if shard.take is None else shard.take
                    for s, shard in enumerate(self.shards)
                ],
                dtype=np.int64,
            )
        self.counts: np.ndarray = counts
        #: ``starts[s]``: the global number of shard ``s``'s first record.
        self.starts = RecordStarts(counts)
        #: Reads a record's bytes, from a local file or a remote object.
        self.files = RangeReader(max_open_files)

    def index(self, shard: int) -> RecordIndex:
        """Shard ``shard``'s record index, loaded (and checked) on first use."""
        found = self._indexes.get(shard)
        if found is None:
            with self._lock:
                found = self._indexes.get(shard)
                if found is None:
                    one = self.shards[shard]
                    if self._manifest:
                        check_shard_size(one, self.compression)  # this shard's, on its first read
                    (found,) = load_indexes((one,), self._listing(shard, one), self.compression)
                    self._indexes[shard] = found
        return found

    def span(self, shard: int, record: int) -> tuple[int, int]:
        """``(offset, size)`` of record ``record`` (counted from the first read) of ``shard``."""
        return self.index(shard).span(self.shards[shard].skip + record)

    def span_arrays(
        self, records: Sequence[tuple[int, int]] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The shard, offset and size of each ``(shard, record)`` (:meth:`span`'s), as three
        arrays (``records`` may be an ``[n, 2]`` array): a batch of one shard's records in
        its index's array, a batch over several shards in one gather over their indexes
        joined end to end (:class:`_JoinedOffsets`)."""
        pairs = np.asarray(records, dtype=np.int64).reshape(-1, 2)
        shards, numbers = pairs[:, 0], pairs[:, 1]
        if len(pairs) and (shards == shards[0]).all():  # one shard, the usual batch: fewer steps
            starts, ends = self._bounds(int(shards[0]), numbers)
            return shards, starts, ends - starts
        if len(pairs) == 0 or int(shards.min()) < 0 or int(shards.max()) >= len(self.shards):
            return self._spans_shard_by_shard(shards, numbers)
        joined = self._joined_offsets()
        rows = np.take(joined.table, shards, axis=0)  # a third of indexing's time (``table[shards]``)
        if bool(((numbers < rows[:, 1]) | (numbers >= rows[:, 2])).any()):
            # A shard not joined yet (its row allows no record), or a record out of range.
            missing = np.unique(shards[~joined.joined[shards]]).tolist()
            if not missing:
                return self._spans_shard_by_shard(shards, numbers)  # which raises, naming the record
            self._join(joined, missing)
            return self.span_arrays(pairs)
        at = rows[:, 0] + numbers
        offsets = joined.offsets  # read after ``table``: it holds every shard ``table`` lists
        starts = offsets[at]
        return shards, starts, offsets[at + 1] - starts

    def _spans_shard_by_shard(
        self, shards: np.ndarray, numbers: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`span_arrays` a shard at a time, in each shard's own index (the first
        record out of range raises, in the lowest shard that has one)."""
        starts = np.empty(len(shards), dtype=np.int64)
        ends = np.empty(len(shards), dtype=np.int64)
        if len(shards) == 0:
            return shards, starts, ends
        low, high = int(shards.min()), int(shards.max())
        # The batch's shards: counted over their span when it is short (np.unique sorts,
        # which cost more than the rest of finding a batch's records).
        present = np.flatnonzero(np.bincount(shards - low)) + low if high - low < 4096 else np.unique(shards)
        for shard in present.tolist():
            where = shards == shard
            starts[where], ends[where] = self._bounds(shard, numbers[where])
        return shards, starts, ends - starts

    def _joined_offsets(self) -> _JoinedOffsets:
        """The offsets of the indexes that batches over several shards have looked up,
        laid end to end (made on the first such batch)."""
        joined = self._joined
        if joined is None:
            with self._lock:
                if self._joined is None:
                    self._joined = _JoinedOffsets(len(self.shards))
                joined = self._joined
        return joined

    def _join(self, joined: _JoinedOffsets, shards: list[int]) -> None:
        """The indexes of ``shards`` loaded and joined to ``joined``."""
        indexes = [(shard, self.index(shard)) for shard in shards]  # loaded outside the lock
        with self._lock:
            for shard, index in indexes:
                joined.add(shard, index, self.shards[shard].skip)

    def _bounds(self, shard: int, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where records ``numbers`` (counted from the first read) of ``shard`` start and end."""
        offsets = self.index(shard).offsets
        at = numbers + self.shards[shard].skip
        count = len(offsets) - 1
        if at.min() < 0 or at.max() >= count:
            bad = int(numbers[(at < 0) | (at >= count)][0])
            raise IndexError(
                f"record {bad} is out of range for shard {self.shards[shard].name}, "
                f"which has {count - self.shards[shard].skip} records to read"
            )
        return offsets[at], offsets[at + 1]

    def __len__(self) -> int:
        return self.starts.total

    @property
    def indexes(self) -> list[RecordIndex]:
        """Every shard's record index (all loaded)."""
        return [self.index(s) for s in range(len(self.shards))]

    def locate(self, index: int) -> tuple[int, int]:
        """``(shard, record)`` of global record ``index`` (0 <= index < len)."""
        return self.starts.locate(index)

    def offset(self, shard: int, record: int) -> int:
        return self.span(shard, record)[0]

    def read(self, shard: int, record: int) -> bytes:
        """Record ``record`` of shard ``shard``: one read (a local ``pread``, a remote
        ranged GET), CRCs checked."""
        offset, size = self.span(shard, record)
        framed: bytes | OSError
        try:
            framed = self.files.read(self.shards[shard].path, offset, size)
        except OSError as exc:
            framed = exc
        return self._unframe(shard, offset, size, framed)

    def fetch(self, records: list[tuple[int, int]]) -> list[bytes | OSError]:
        """The framed bytes of each ``(shard, record)``, unchecked (see :meth:`unframe`):
        local records read in turn, remote ones fetched concurrently."""
        spans = [self.span(s, r) for s, r in records]
        return self.files.read_many(
            [
                (self.shards[s].path, offset, size)
                for (s, _), (offset, size) in zip(records, spans, strict=True)
            ]
        )

    def unframe(self, shard: int, record: int, framed: bytes | OSError) -> bytes:
        """The data of record ``record`` of shard ``shard`` from what :meth:`fetch` gave:
        its length and CRCs checked (an OSError raised as a DatasetError naming the shard)."""
        offset, size = self.span(shard, record)
        return self._unframe(shard, offset, size, framed)

    def unframe_run(
        self, shard: int, start: int, got: bytes | OSError, members: Sequence[tuple[int, int, int]]
    ) -> list[bytes | RecordkitError]:
        """The data of each record ``(place, offset, size)`` of shard ``shard`` in the run
        read from ``start`` (``got``: its bytes, or the OSError reading it gave), checked
        as :meth:`unframe` checks it; a record that fails gets its error in its place."""
        name = self.shards[shard].name
        out: list[bytes | RecordkitError] = []
        for _, offset, size in members:
            framed = got if isinstance(got, OSError) else got[offset - start : offset - start + size]
            try:
                out.append(self._checked(name, offset, size, framed))
            except RecordkitError as exc:
                out.append(exc)
        return out

    def _unframe(self, shard: int, offset: int, size: int, framed: bytes | OSError) -> bytes:
        return self._checked(self.shards[shard].name, offset, size, framed)

    def _checked(self, name: str, offset: int, size: int, framed: bytes | OSError) -> bytes:
        """The data of the record of shard ``name`` at ``offset``, from its framed bytes."""
        if isinstance(framed, OSError):
            raise DatasetError(
                f"cannot read the shard: {framed.strerror or framed}", shard=name, offset=offset
            )
        if len(framed) < size:
            raise CorruptRecordError(
                f"truncated: the index says {size} bytes, the file holds {len(framed)} from here",
                shard=name,
                offset=offset,
            )
        return unframe_record(framed, shard=name, offset=offset, verify=self.verify)
