"""``RandomAccess``: record ``i`` of a split, read and decoded on its own, without TensorFlow.

Built on the record index each shard carries (:mod:`recordkit.read._shard_index`): a
read is one ``pread`` of the record's framed bytes (one ranged GET for a remote
dataset), its CRCs checked, then each requested field decoded by its codec's
``decode_numpy``. Records are numbered across the split's shards in manifest order, so
``ds[i]`` is the ``i``-th record that :func:`recordkit.iter_records` yields.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import operator
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor
from typing import Any, TypeVar, cast, overload

import numpy as np

from recordkit.codec._geometry import ImageGeometry
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import RecordkitError
from recordkit.format._batch_parse import ParsedExample, Templates
from recordkit.read._batched_access import fetch_checked
from recordkit.read._epoch_order import SplitOrder, pair_list
from recordkit.read._numpy_decode import decode_columns_numpy, decode_record_numpy, wanted_keys
from recordkit.read._numpy_geometry import GeometryPlan
from recordkit.read._open import OpenedDataset, open_dataset
from recordkit.read._parsed_shard import DecodedBatch, DecodedRecord, parsed_files
from recordkit.read._paths import Paths
from recordkit.read._shard_index import DEFAULT_MAX_OPEN_FILES, IndexedShards
from recordkit.schema._bound import BoundField
from recordkit.schema._schema import SchemaLike
from recordkit.storage import StorageOptions

__all__ = ["GROWN_BYTES", "GROWTH", "RandomAccess", "gathered", "read_bounds"]

#: :meth:`RandomAccess.stream` fetches up to this many times ``prefetch`` records at once
#: when they are small (the batches of small records were mostly fixed costs: fetching,
#: checking and parsing 64 records of a caption and a label cost about 1.4 times what
#: 256 did per record, and 512 cost about 10% less again) ...
GROWTH = 8
#: ... while the records fetched at once hold at most this many bytes.
GROWN_BYTES = 1 << 20

#: :meth:`RandomAccess.stream` reads this many fetches' records at once while they hold
#: at most :data:`GROWN_BYTES`, and gives them a fetch at a time. A shuffled order's fetch
#: of 512 small records reads the bytes of the whole window of 1,024 they lie in, a rank's
#: share of a resumed epoch four times its records' bytes; reading four fetches at once
#: reads a window's bytes once, and shares the reads' and checks' fixed costs (in one
#: process, CPU a record against one fetch a read: two 0.94 to 0.97x, four 0.96x to 0.97x
#: of two). When the records of the first fetch show that a read's would hold at most
#: :data:`GROWN_BYTES` decoded too (text and numbers), the later reads' records are parsed
#: and decoded at once, which shares the parse's and decode's fixed costs (a layout's and
#: a column's steps): 0.90x to 0.95x the CPU a record of a fetch at a time for small
#: records in order, shuffled and for a rank's share, 0.76x to 0.79x for captions of
#: varied lengths (medians, busy machine). The records alive at once (dicts of text and
#: numbers, which the garbage collector does not track but counts as they are made) pass
#: its first generation's threshold (700): the benchmark's process ran 2 to 3.5 times as
#: many young collections, each over the few tracked objects alive, and as many full ones
#: (counted in the gain). Records that decode large (pictures, however small stored) are
#: parsed and decoded a fetch at a time: 2,048 thumbnails of 32 x 32 held decoded at once
#: raised a read's peak RSS from 74 to 87 MB for no CPU saved.
READ_FETCHES = 4

#: The records of a fetch whose decoded values :meth:`RandomAccess.stream_chunks` measures.
_SAMPLED = 64

#: Records as :meth:`RandomAccess._parsed` gives them.
_Parsed = Sequence[tuple[bytes | RecordkitError, ...] | bytes | ParsedExample | DecodedRecord] | DecodedBatch

#: What :func:`gathered` takes into lists.
T = TypeVar("T")


class RandomAccess:
    """Random access to the records of one split: ``len(ds)``, ``ds[i]``, ``ds[i:j]``,
    ``ds[[i, j, k]]`` (a slice or a list is fetched at once: from a remote dataset its
    ranged GETs run concurrently). ``recordkit.open(path, split)`` gives the same
    ``len`` and ``ds[i]``, beside the other readers.

    :param path: a dataset folder, local or remote (``s3://``, ``gs://``, any fsspec
        URL); or, with ``schema``, TFRecord files recordkit did not write (their
        ``<file>.index`` sidecars are used when ``recordkit index`` made them, else each
        local file is scanned once when opened; a remote one must have its sidecar).
    :param split: the split to read.
    :param fields: the fields to decode (default: all).
    :param schema: the reader's schema (see :func:`recordkit.load_dataset`).
    :param verify: check each record's data CRC (its header is always checked).
    :param max_open_files: local shard files kept open at once (least recently used
        closed).
    :param storage_options: for a remote ``path``: the fsspec filesystem's options
        (``endpoint_url``, ``key``, ``token`` ...).
    :param geometry: pictures brought to one size (and flipped), the fields tied to
        them moved with them (:class:`~recordkit.ImageGeometry`).

    A record is a dict of Python and numpy values, as :func:`recordkit.iter_records`
    gives it. A corrupt record raises :class:`~recordkit.errors.CorruptRecordError`
    naming its shard, offset and record. An instance may be shared between threads, and
    used in processes forked after it was made (each process opens its own files and
    its own storage client); it pickles as its arguments (with the default codec
    registry).

    A shard's record index is fetched (and checked against the manifest's sha256) on the
    first read of that shard; then each record costs one read (a remote one, one ranged GET).
    """

    def __init__(
        self,
        path: Paths,
        split: str = "train",
        fields: str | Sequence[str] | None = None,
        *,
        schema: SchemaLike | None = None,
        registry: CodecRegistry | None = None,
        verify: bool = True,
        max_open_files: int = DEFAULT_MAX_OPEN_FILES,
        storage_options: StorageOptions | None = None,
        geometry: ImageGeometry | None = None,
    ) -> None:
        args: dict[str, Any] = {
            "path": path,
            "split": split,
            "fields": fields,
            "schema": schema,
            "verify": verify,
            "max_open_files": max_open_files,
            "storage_options": storage_options,
            "geometry": geometry,
        }
        dataset = open_dataset(
            path, split, fields, schema=schema, registry=registry, storage_options=storage_options
        )
        self._attach(dataset, args)

    @classmethod
    def over(cls, dataset: OpenedDataset, args: dict[str, Any]) -> RandomAccess:
        """Random access to a split already opened (by :func:`recordkit.open`); ``args``
        are the keyword arguments of the constructor that open it again (it pickles as
        them), their ``verify`` and ``max_open_files`` used here too."""
        self = cls.__new__(cls)
        self._attach(dataset, args)
        return self

    def _attach(self, dataset: OpenedDataset, args: dict[str, Any]) -> None:
        self._args = args
        #: The opened split: its shards, schema and bound fields.
        self.dataset = dataset
        self.shards = IndexedShards(dataset, verify=args["verify"], max_open_files=args["max_open_files"])
        #: The shards and, for a split with field groups, each joined column of group shards
        #: (:attr:`~recordkit.dataset._shards.Shard.joined`): a record is its bytes from each, joined.
        self._files = [self.shards] + [
            IndexedShards(
                dataclasses.replace(dataset, shards=tuple(s.joined[k] for s in dataset.shards)),
                verify=args["verify"],
                max_open_files=args["max_open_files"],
            )
            for k in range(len(dataset.shards[0].joined) if dataset.shards else 0)
        ]
        self._stored: tuple[BoundField, ...] = dataset.stored_fields.fields
        self._keys = wanted_keys(self._stored)
        self._record_bytes = _mean_record_bytes(dataset)
        #: The layouts of each file's records met so far, for parsing fetched batches.
        self._templates: list[Templates] = [{} for _ in self._files]
        self._defaults = {
            name: decode_record_numpy([dataset.bound[name]], example)[name]
            for name, example in dataset.defaults.items()
        }
        geometry = args.get("geometry")
        self._geometry = (
            GeometryPlan(dataset.fields, geometry, dataset.picture_sizes) if geometry is not None else None
        )

    def with_geometry(self, geometry: ImageGeometry | None) -> RandomAccess:
        """This random access with its records brought to ``geometry`` (the same open
        shards); itself when ``geometry`` is None."""
        if geometry is None:
            return self
        other = RandomAccess.__new__(RandomAccess)
        other.__dict__.update(self.__dict__)
        other._args = {**self._args, "geometry": geometry}
        other._geometry = GeometryPlan(self.dataset.fields, geometry, self.dataset.picture_sizes)
        return other

    @property
    def _plain(self) -> bool:
        """Whether a record decoded with its batch is given as it is (nothing to add)."""
        return not self._defaults and self._geometry is None

    @functools.cached_property
    def split_order(self) -> SplitOrder:
        """The canonical epochs of this split's records (its shards, their counts and
        fingerprint): worked out once, shared by every epoch stream made over it."""
        return SplitOrder.of_shards(self.dataset.shards, self.shards.counts)

    @property
    def geometry_plan(self) -> GeometryPlan | None:
        """How records are brought to the geometry asked for (None: as stored)."""
        return self._geometry

    @property
    def source(self) -> OpenedDataset:
        """Deprecated: :attr:`dataset`, the opened split."""
        warnings.warn(
            "RandomAccess.source is deprecated: use RandomAccess.dataset (the opened split)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.dataset

    # -- pickling: the arguments, reopened on the other side --------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return dict(self._args)

    def __setstate__(self, state: dict[str, Any]) -> None:
        RandomAccess.__init__(self, **state)

    # -- reading ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.shards)

    def _index(self, i: Any) -> int:
        if isinstance(i, bool):
            raise TypeError(f"record indices must be integers, not {i!r}")
        try:
            index = operator.index(i)
        except TypeError:
            raise TypeError(f"record indices must be integers, slices or lists of them, not {i!r}") from None
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"record {i} is out of range: the split has {size} records")
        return index

    def read_serialized(self, i: int) -> bytes:
        """Record ``i`` as the serialized ``tf.train.Example`` the shard holds."""
        located = self.shards.locate(self._index(i))
        return b"".join(files.read(*located) for files in self._files)

    def decode(
        self, data: bytes | ParsedExample | DecodedRecord, i: int, draws: np.ndarray | None = None
    ) -> dict[str, Any]:
        """Decode serialized record ``i`` (its number goes into errors), or finish one
        parsed or decoded with others of its batch; with a geometry, ``draws`` are its
        random draws (default: keyed by the geometry's seed and ``i``)."""
        if isinstance(data, DecodedRecord):
            record = data.values
        else:
            record = decode_record_numpy(
                self._stored,
                data,
                index=i,
                decoders=None if self._geometry is None else self._geometry.decoders,
                keys=self._keys,
            )
        if self._defaults:
            record.update(copy.deepcopy(self._defaults))
            record = {f.name: record[f.name] for f in self.dataset.fields}
        if self._geometry is not None:
            record = self._geometry.apply(record, i, draws)
        return record

    def record(self, shard: int, number: int) -> dict[str, Any]:
        """Record ``number`` of shard ``shard`` (in manifest order), decoded."""
        index = int(self.shards.starts[shard]) + number
        try:
            return self.decode(b"".join(files.read(shard, number) for files in self._files), index)
        except RecordkitError as exc:
            raise self._context(exc, shard, number, index) from None

    def records(
        self, located: Sequence[tuple[int, int]] | np.ndarray, draws: np.ndarray | None = None
    ) -> list[dict[str, Any]]:
        """Each ``(shard, number)``'s record (``located`` may be an ``[n, 2]`` array),
        decoded: the bytes of all of them fetched first (from a remote dataset
        concurrently, one ranged GET each), then checked and decoded in order
        (``draws``: as :meth:`stream`'s)."""
        pairs = located if isinstance(located, np.ndarray) else list(located)
        if len(pairs) == 0:
            return []
        fetched = self._parsed(self._fetch_files(pairs), by_columns=True)
        if isinstance(fetched, DecodedBatch):
            if self._plain:
                return fetched.records  # decoded with their batch
            fetched = fetched.wrapped()
        rows = _draw_rows(draws, 0, len(pairs))
        listed = pair_list(pairs) if isinstance(pairs, np.ndarray) else pairs
        return [
            self._decoded(s, n, item, row) for (s, n), item, row in zip(listed, fetched, rows, strict=True)
        ]

    def stream(
        self,
        located: Iterable[tuple[int, int]] | np.ndarray,
        prefetch: int = 64,
        draws: np.ndarray | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Each ``(shard, number)``'s record, decoded, in order; the bytes of the next
        ``prefetch`` records are fetched together (from a remote dataset: their ranged
        GETs concurrently), and up to :data:`GROWTH` times as many while they hold at
        most :data:`GROWN_BYTES` (small records: the fixed costs of fetching and parsing
        a batch shared by more of them). Records of one layout are parsed and decoded
        with their batch, the others as they are yielded. With a geometry, ``draws`` (a
        row per record) are the records' random draws (default: keyed by the geometry's
        seed and each record's number). ``located`` may be an ``[n, 2]`` array."""
        return itertools.chain.from_iterable(self.stream_chunks(located, prefetch, draws))

    def stream_chunks(
        self,
        located: Iterable[tuple[int, int]] | np.ndarray,
        prefetch: int = 64,
        draws: np.ndarray | None = None,
        groups: np.ndarray | None = None,
    ) -> Iterator[list[dict[str, Any]]]:
        """:meth:`stream`'s records as lists, a fetched batch's in one (when a record of
        it raises, those before it, then the error: :func:`gathered`); the records of a
        read (:meth:`read_size`) are parsed and decoded together when they hold little
        decoded (see :data:`READ_FETCHES`). Chained, they are
        :meth:`stream` with no Python step a record. ``groups`` (with an ``[n, 2]``
        array ``located``; non-decreasing, one a record) says which records lie close
        together in the shards (an epoch's window of its order): a read then ends where
        a group does while that leaves it at least half its records (:func:`read_bounds`),
        so that the bytes of a group that one read would have shared with the next are
        read once."""
        plain = self._plain
        done = 0
        size, read_size = self.fetch_size(prefetch), self.read_size(prefetch)
        # Whether a read's records are parsed and decoded together: decided by the records
        # of the first fetch given (see READ_FETCHES), None until then.
        together: bool | None = None if plain and read_size > size else False
        reads = (
            _chunks(located, read_size)
            if groups is None or not isinstance(located, np.ndarray)
            else _cut(located, read_bounds(groups, read_size))
        )
        for read in reads:
            files = self._fetch_files(read)
            parsed = self._parsed(files, by_columns=True) if together or len(read) <= size else None
            for begin in range(0, len(read), size):
                chunk = read[begin : begin + size]
                rows = _draw_rows(draws, done, len(chunk))
                done += len(chunk)
                if parsed is not None:
                    fetched = parsed if len(chunk) == len(read) else _part(parsed, begin, begin + size)
                else:
                    fetched = self._parsed([data[begin : begin + size] for data in files], by_columns=True)
                if isinstance(fetched, DecodedBatch):
                    if plain:
                        if together is None:
                            together = _held_bytes(fetched.records) * read_size <= GROWN_BYTES
                        yield fetched.records  # decoded with their batch
                        continue
                    fetched = fetched.wrapped()
                pairs = pair_list(chunk) if isinstance(chunk, np.ndarray) else chunk
                for given in gathered(
                    item.values  # decoded with its batch, nothing to add
                    if plain and isinstance(item, DecodedRecord)
                    else self._decoded(shard, number, item, row)
                    for (shard, number), item, row in zip(pairs, fetched, rows, strict=True)
                ):
                    if together is None:
                        together = _held_bytes(given) * read_size <= GROWN_BYTES
                    yield given

    @property
    def mean_record_bytes(self) -> int | None:
        """The split's mean record size in bytes, framing included, by the manifest's
        sizes and counts (None: it does not list them all)."""
        return self._record_bytes

    def fetch_size(self, prefetch: int) -> int:
        """The records :meth:`stream` fetches at once for ``prefetch``: more, up to
        :data:`GROWTH` times as many, while they hold at most :data:`GROWN_BYTES` by the
        split's mean record size (its shards' sizes over their records, as the manifest
        lists them; ``prefetch`` when it does not)."""
        if self._record_bytes is None:
            return prefetch
        return max(prefetch, min(prefetch * GROWTH, GROWN_BYTES // max(self._record_bytes, 1)))

    def read_size(self, prefetch: int) -> int:
        """The records :meth:`stream` reads at once for ``prefetch``: :data:`READ_FETCHES`
        times :meth:`fetch_size` while they hold at most :data:`GROWN_BYTES`, then given
        :meth:`fetch_size` at a time (see :data:`READ_FETCHES`)."""
        size = self.fetch_size(prefetch)
        if self._record_bytes is None or size * READ_FETCHES * self._record_bytes > GROWN_BYTES:
            return size
        return size * READ_FETCHES

    def read_batch(
        self, indices: Sequence[int] | np.ndarray, pool: Executor | None = None
    ) -> list[dict[str, Any]]:
        """Records ``indices``, decoded, in the order asked: read sorted by shard and
        offset, one read per contiguous run (remote runs fetched concurrently), then
        decoded on ``pool``'s threads when one is given (the codecs' decoders release
        the GIL), else in this thread."""
        located = [self.shards.locate(self._index(i)) for i in np.asarray(indices, dtype=np.int64).tolist()]
        parsed = self._parsed(self._fetch_files(located), by_columns=pool is None)
        fetched = parsed.wrapped() if isinstance(parsed, DecodedBatch) else parsed
        jobs = [(shard, number, framed) for (shard, number), framed in zip(located, fetched, strict=True)]
        if pool is None or len(jobs) < 2:
            return [self._decoded(*job) for job in jobs]
        return list(pool.map(lambda job: self._decoded(*job), jobs))

    def _fetch(
        self, located: Sequence[tuple[int, int]] | np.ndarray
    ) -> list[tuple[bytes | RecordkitError, ...]]:
        """The data of each record in each of :attr:`_files` (the split's shards, then its
        field groups'), checked, or the error reading it gave."""
        return _by_record(self._fetch_files(located))

    def _fetch_files(
        self, located: Sequence[tuple[int, int]] | np.ndarray
    ) -> list[list[bytes | RecordkitError]]:
        """:meth:`_fetch`'s data a file at a time (``[k][i]``: record ``i``'s in file ``k``)."""
        return [fetch_checked(files, located) for files in self._files]

    def _parsed(self, files: list[list[bytes | RecordkitError]], *, by_columns: bool) -> _Parsed:
        """The records :meth:`_fetch_files` gave, parsed together where they share a layout
        (:func:`~recordkit.read._parsed_shard.parsed_files`) and, ``by_columns`` and
        without a geometry, decoded together; as :meth:`_fetch` gives them when one of
        them is damaged (each then raises its own error as it comes)."""
        decode = None
        if by_columns and self._geometry is None:
            decode = functools.partial(decode_columns_numpy, self._stored)
        parsed = parsed_files(files, self._keys, self._templates, decode)
        return _by_record(files) if parsed is None else parsed

    def serialized(self, located: Sequence[tuple[int, int]] | np.ndarray) -> list[bytes]:
        """Each ``(shard, number)``'s serialized ``tf.train.Example`` (its field groups'
        joined), fetched in runs as :meth:`records` fetches them, lengths and CRCs
        checked, not decoded: what a ``tf.data`` pipeline parses itself."""
        if len(self._files) == 1:
            data = fetch_checked(self.shards, located)
            if not any(map(isinstance, data, itertools.repeat(RecordkitError))):
                return cast(list[bytes], data)  # every record sound: no step of Python a record
            fetched = _by_record([data])
        else:
            fetched = self._fetch(located)
        listed = pair_list(located) if isinstance(located, np.ndarray) else located
        return [
            self._checked(shard, number, parts)
            for (shard, number), parts in zip(listed, fetched, strict=True)
        ]

    def _checked(self, shard: int, number: int, parts: tuple[bytes | RecordkitError, ...]) -> bytes:
        """The record's data from :meth:`_fetch`'s parts, or the first part's error raised
        naming the record."""
        for part in parts:
            if isinstance(part, RecordkitError):
                raise self._context(part, shard, number, int(self.shards.starts[shard]) + number)
        data = cast(tuple[bytes, ...], parts)
        return data[0] if len(data) == 1 else b"".join(data)

    def _decoded(
        self,
        shard: int,
        number: int,
        parts: tuple[bytes | RecordkitError, ...] | bytes | ParsedExample | DecodedRecord,
        draws: np.ndarray | None = None,
    ) -> dict[str, Any]:
        data = self._checked(shard, number, parts) if isinstance(parts, tuple) else parts
        index = int(self.shards.starts[shard]) + number
        try:
            return self.decode(data, index, draws)
        except RecordkitError as exc:
            raise self._context(exc, shard, number, index) from None

    def _context(self, exc: RecordkitError, shard: int, number: int, index: int) -> RecordkitError:
        return exc.with_context(
            shard=self.shards.shards[shard].name, offset=self.shards.offset(shard, number), record=index
        )

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice | Sequence[int] | np.ndarray) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.records([self.shards.locate(j) for j in range(*i.indices(len(self)))])
        if isinstance(i, (Sequence, np.ndarray)) and not isinstance(i, (str, bytes)):
            indices = i.tolist() if isinstance(i, np.ndarray) else i
            return self.records([self.shards.locate(self._index(j)) for j in indices])
        index = self._index(i)
        return self.record(*self.shards.locate(index))

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def close(self) -> None:
        """Close the open local shard files (reading again reopens them)."""
        for files in self._files:
            files.files.close()

    def __repr__(self) -> str:
        return (
            f"RandomAccess({self._args['path']!r}, split={self._args['split']!r}, "
            f"{len(self)} records in {len(self.shards.shards)} shards)"
        )


def _draw_rows(draws: np.ndarray | None, done: int, count: int) -> list[np.ndarray | None]:
    """Rows ``done`` to ``done + count`` of ``draws``, one per record (None for each
    without draws); a ValueError when ``draws`` has fewer rows than the records asked
    for, rather than records left out."""
    if draws is None:
        return [None] * count
    rows = list(draws[done : done + count])
    if len(rows) != count:
        raise ValueError(f"draws has {done + len(rows)} rows, for at least {done + count} records asked for")
    return rows


def _part(parsed: _Parsed, begin: int, end: int) -> _Parsed:
    """Records ``begin`` to ``end`` of a read's records as :meth:`RandomAccess._parsed`
    gives them (a :class:`DecodedBatch` stays one)."""
    if isinstance(parsed, DecodedBatch):
        return DecodedBatch(parsed.records[begin:end])
    return parsed[begin:end]


def _held_bytes(records: Sequence[dict[str, Any]]) -> float:
    """About the bytes a record of ``records`` holds decoded: the mean, over the first
    :data:`_SAMPLED` of them, of its arrays' data, its texts' and bytes' lengths and its
    other values' objects (lists and dicts by what they hold)."""
    sample = records[:_SAMPLED]
    return sum(_value_bytes(value) for record in sample for value in record.values()) / max(len(sample), 1)


def _value_bytes(value: Any) -> int:
    """:func:`_held_bytes` of one value."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(map(_value_bytes, value))
    if isinstance(value, dict):
        return sum(map(_value_bytes, value.values()))
    return sys.getsizeof(value)


def _by_record(files: list[list[bytes | RecordkitError]]) -> list[tuple[bytes | RecordkitError, ...]]:
    """Data given a file at a time (``files[k][i]``: record ``i``'s in file ``k``) as a
    tuple a record, a part a file: what a record read on its own takes."""
    return list(zip(*files, strict=True))


def gathered(records: Iterable[T]) -> Iterator[list[T]]:
    """``records`` taken into one list; when taking one raises, the list of those before
    it, then the error (as a stream of them would have given them)."""
    taken: list[T] = []
    try:
        taken.extend(records)  # keeps what it took before an error
    except Exception:
        if taken:
            yield taken
        raise
    yield taken


def _chunks(
    located: Iterable[tuple[int, int]] | np.ndarray, size: int
) -> Iterator[Sequence[tuple[int, int]] | np.ndarray]:
    """``located`` in chunks of ``size`` (an array's as slices of it)."""
    if isinstance(located, np.ndarray):
        for begin in range(0, len(located), size):
            yield located[begin : begin + size]
        return
    pairs = iter(located)
    while chunk := list(itertools.islice(pairs, size)):
        yield chunk


def read_bounds(groups: np.ndarray, size: int) -> list[int]:
    """Where the reads of records in ``groups`` (non-decreasing, one a record) begin, and
    their end: at most ``size`` records a read, each ending where a group begins unless
    that leaves it fewer than half of ``size`` (a group larger than that is cut)."""
    count = len(groups)
    bounds = [0]
    while bounds[-1] + size < count:
        begin = bounds[-1]
        end = begin + size
        aligned = int(np.searchsorted(groups[begin:end], groups[end], side="left")) + begin
        bounds.append(aligned if aligned - begin >= max(size // 2, 1) else end)
    bounds.append(count)
    return bounds


def _cut(located: np.ndarray, bounds: Sequence[int]) -> Iterator[np.ndarray]:
    """``located`` in the slices between consecutive ``bounds``."""
    for begin, end in itertools.pairwise(bounds):
        if end > begin:
            yield located[begin:end]


def _mean_record_bytes(dataset: OpenedDataset) -> int | None:
    """The mean bytes of a record of ``dataset`` (its files joined), framing included, by
    the manifest's sizes and counts (None: it does not list them all, or no records)."""
    files = [file for shard in dataset.shards for file in shard.files]
    sizes = [file.bytes for file in files]
    counts = [shard.records for shard in dataset.shards]
    if None in sizes or None in counts or not sum(c or 0 for c in counts):
        return None
    return sum(s or 0 for s in sizes) // sum(c or 0 for c in counts)
