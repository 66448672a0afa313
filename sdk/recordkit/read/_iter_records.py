"""The numpy reader: a dataset's records as Python and numpy values, without TensorFlow
(what :meth:`recordkit.Dataset.records` and :func:`recordkit.iter_records` give).

Shards are read with recordkit's own TFRecord framing (:mod:`recordkit.format._tfrecord`), CRCs
checked, and each requested field decoded by its codec's ``decode_numpy``. Useful for
inspection, tests, data loaders of other frameworks, and machines without TensorFlow.

With ``on_corrupt="skip"`` a damaged shard costs only its damaged records (found by
:func:`~recordkit.format._tfrecord.scan_tfrecords`): a record whose data fails its CRC
is skipped alone (its length is intact), and after a damaged header the reader searches
forward for the next intact record (a valid header CRC and data CRC) and carries on from
there; a record that does not decode is skipped too. A shard joined with its field
groups' shards skips a record damaged in any of its files in all of them
(:mod:`recordkit.read._joined_scan`).
What was skipped goes to a :class:`~recordkit.CorruptionReport`.

``split`` takes TFDS's slicing syntax (``train[:10%]``, ``train[100:200]``,
``train+validation``; :mod:`recordkit.dataset._slices`): only the shards the slice touches
are opened, records before it are read past without being decoded, and reading stops
at its end.

A worker of a multi-worker job (``num_workers`` and ``worker_index``, or an
``input_context``) reads its share as :func:`recordkit.load_dataset` does: every
``num_workers``-th shard when there are at least as many shards as workers, else every
``num_workers``-th record (counted over the records the shards hold, so that all
workers count alike; only a worker's own records are decoded).

The iterator knows its position (:mod:`recordkit.read._position`): the records it has
yielded. ``start=`` a position (or the state dict it gives) skips that many records
without decoding them (whole shards by the manifest's counts, without reading them), so
a read that stopped resumes at exactly the next record.
"""

from __future__ import annotations

import collections
import concurrent.futures
import copy
import dataclasses
import functools
import itertools
import operator
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from contextlib import closing
from typing import Any, cast

from recordkit.codec._geometry import ImageGeometry
from recordkit.dataset._shards import Shard
from recordkit.errors import CorruptRecordError, RecordkitError
from recordkit.format._batch_parse import ParsedExample
from recordkit.format._tfrecord import Compression, Damage, iter_tfrecords, scan_tfrecords
from recordkit.read._corruption import CorruptionReport, SkippedRecords
from recordkit.read._joined_scan import joined_records_skipping
from recordkit.read._numpy_decode import decode_columns_numpy, decode_record_numpy, wanted_keys
from recordkit.read._numpy_geometry import GeometryPlan
from recordkit.read._open import OpenedDataset, check_shard_size
from recordkit.read._options import Opened
from recordkit.read._parsed_shard import (
    ColumnDecoder,
    DecodedBatch,
    DecodedRecord,
    ShardBatch,
    ShardItem,
    parsed_shard_records,
)
from recordkit.read._position import Start, position_state, resolve_start

__all__ = ["RecordIterator", "iter_shard_records", "raw_records", "record_iterator"]


def record_iterator(
    opened: Opened,
    split: str,
    *,
    verify: bool,
    start: Start,
    num_threads: int | None,
    geometry: ImageGeometry | None = None,
) -> RecordIterator:
    """The records of a dataset already opened (what :func:`iter_records` and
    :meth:`recordkit.Dataset.records` give); ``split`` goes into its state dicts."""
    if num_threads is not None and num_threads < 1:
        raise ValueError(f"num_threads must be at least 1, not {num_threads}")
    dataset, share = opened.dataset, opened.share
    defaults = {  # fields the records lack, read as the reader schema's default
        name: decode_record_numpy([dataset.bound[name]], example)[name]
        for name, example in dataset.defaults.items()
    }
    shards, by_record = share.shards(dataset.shards) if share is not None else (dataset.shards, False)
    keep = (share.count, share.index) if by_record and share is not None else None
    worker = [share.count, share.index] if share is not None else [1, 0]
    options = {"split": split, "worker": worker}
    skip = resolve_start(start, "iter_records", **options)
    plan = GeometryPlan(dataset.fields, geometry, dataset.picture_sizes) if geometry is not None else None
    chunks = _record_chunks(
        dataset, shards, keep, defaults, verify, opened.report, skip, num_threads or 1, plan
    )
    return RecordIterator.over(chunks, skip, options)


class _Counted:
    """The records a :class:`RecordIterator` yielded: ``before`` (those skipped by its
    start and those of the chunks before), and those taken from ``records``, the
    iterator over the current chunk of ``size`` (its length hint: the records left)."""

    def __init__(self, before: int) -> None:
        self.before = before
        self.size = 0
        self.records: Iterator[dict[str, Any]] = iter(())

    def count(self) -> int:
        return self.before + self.size - operator.length_hint(self.records)

    def counted(self, chunks: Iterator[list[dict[str, Any]]]) -> Iterator[Iterator[dict[str, Any]]]:
        """Each of ``chunks`` as an iterator kept in :attr:`records`, so that
        :meth:`count` knows the records taken from it without a Python step a record."""
        for chunk in chunks:
            self.before += self.size
            self.size, self.records = len(chunk), iter(chunk)
            yield self.records


class RecordIterator(itertools.chain[dict[str, Any]]):
    """The records of :func:`iter_records`, and the position of those yielded.

    The records come in lists (a chunk decoded together, or one record), chained in C:
    no Python step a record (it was a sixth of reading a small record)."""

    _counted: _Counted
    _chunks: Generator[list[dict[str, Any]]]
    _options: dict[str, Any]

    @classmethod
    def over(
        cls, chunks: Generator[list[dict[str, Any]]], position: int, options: dict[str, Any]
    ) -> RecordIterator:
        """The records of ``chunks`` (lists of records), the first at ``position``."""
        counted = _Counted(position)
        self = cast(RecordIterator, cls.from_iterable(counted.counted(chunks)))
        self._counted = counted
        self._chunks = chunks
        self._options = options
        return self

    @property
    def position(self) -> int:
        """Records yielded so far, counting those skipped by ``start``."""
        return self._counted.count()

    def close(self) -> None:
        """Stop reading: open shards are closed and pending decodes dropped (as a generator's
        ``close``)."""
        counted = self._counted
        counted.before, counted.size = counted.count(), 0
        collections.deque(counted.records, maxlen=0)  # the chunk's records not taken: dropped
        counted.records = iter(())
        self._chunks.close()

    def state_dict(self) -> dict[str, Any]:
        """The position as a JSON-compatible dict, for ``iter_records(..., start=state)``."""
        return position_state("iter_records", self.position, **self._options)


#: One record to decode: its index in the split, its shard, its offset and its bytes
#: (or its Example already parsed, for the keys a read wants).
#: With a :class:`DecodedBatch`, the first of its records' index and offset.
_Raw = tuple[int, Shard, int, bytes | ParsedExample | DecodedRecord | DecodedBatch]


def raw_records(
    dataset: OpenedDataset,
    shards: Sequence[Shard],
    keep: tuple[int, int] | None,
    verify: bool,
    report: CorruptionReport | None,
    skip: int,
) -> Iterator[tuple[int, Shard, int, bytes]]:
    """The undecoded records of ``shards``, checked against the manifest's counts; with
    ``keep = (count, index)`` only every ``count``-th record, from the ``index``-th; the
    first ``skip`` of those are left out (a resumed read), whole shards unread."""
    for index, shard, offset, data in _raw_records(dataset, shards, keep, verify, report, skip):
        assert isinstance(data, bytes)  # neither parsed nor decoded without keys
        yield index, shard, offset, data


def _raw_records(
    dataset: OpenedDataset,
    shards: Sequence[Shard],
    keep: tuple[int, int] | None,
    verify: bool,
    report: CorruptionReport | None,
    skip: int,
    keys: Collection[str] | None = None,
    decode: ColumnDecoder | None = None,
    batches: bool = False,
) -> Iterator[_Raw]:
    """:func:`raw_records`; with ``keys``, records of local uncompressed shards come
    parsed for those keys where a whole shard's records can be parsed at once
    (:func:`parsed_shard_records`), and with ``decode`` too, decoded where a chunk of them
    has one layout; with ``batches`` (and neither ``keep`` nor ``report``), such a chunk
    comes as one :class:`DecodedBatch`."""
    index = 0
    for shard in shards:
        selected = shard.selected
        if keep is None and report is None and selected is not None and skip >= selected:
            skip -= selected  # resuming past this whole shard: not even read
            index += selected
            continue
        if report is None and dataset.manifest is not None:
            check_shard_size(shard, dataset.compression)  # as it comes: not every shard at open
        in_shard = 0
        for offset, data in _selected(shard, dataset.compression, verify, report, keys, decode, batches):
            if type(data) is DecodedBatch:
                starts, records, over = cast(list[int], offset), data.records, None
                if shard.records is not None and in_shard + len(records) > shard.records:
                    kept = shard.records - in_shard  # the manifest is the commit (as below)
                    over, records, starts = starts[kept], records[:kept], starts[:kept]
                in_shard += len(records)
                if skip:
                    dropped = min(skip, len(records))  # yielded before the resumed read's start
                    skip, index = skip - dropped, index + dropped
                    records, starts = records[dropped:], starts[dropped:]
                if records:
                    yield index, shard, starts[0], DecodedBatch(records)
                    index += len(records)
                if over is not None:
                    reason = f"holds more records than the {shard.records} the manifest lists"
                    raise CorruptRecordError(reason, shard=shard.name, offset=over)
                continue
            offset = cast(int, offset)
            in_shard += 1
            if shard.records is not None and in_shard > shard.records:
                # The manifest is the commit: records it does not count are not the dataset's.
                reason = f"holds more records than the {shard.records} the manifest lists"
                extra = CorruptRecordError(reason, shard=shard.name, offset=offset)
                if report is None:
                    raise extra
                report.add(SkippedRecords(shard.name, offset, None, f"{extra.reason}; the rest was skipped"))
                break
            if keep is not None and index % keep[0] != keep[1]:
                index += 1  # another worker's record
                continue
            if skip:
                skip -= 1  # yielded before the resumed read's start
                index += 1
                continue
            yield index, shard, offset, data
            index += 1
        if report is None and not shard.sliced and shard.records is not None and in_shard < shard.records:
            raise CorruptRecordError(
                f"holds {in_shard} records, the manifest lists {shard.records}", shard=shard.name
            )


def _selected(
    shard: Shard,
    compression: Compression,
    verify: bool,
    report: CorruptionReport | None,
    keys: Collection[str] | None,
    decode: ColumnDecoder | None,
    batches: bool = False,
) -> Iterator[ShardItem | ShardBatch]:
    """The records of ``shard`` that a split slice selects (all, unless sliced): those
    before it are read past undecoded, and reading stops at its end. With ``batches``,
    an unsliced shard's chunks decoded together come whole (:func:`parsed_shard_records`)."""
    stream: Generator[ShardItem | ShardBatch]
    if keys is not None and report is None:
        stream = parsed_shard_records(
            shard,
            compression,
            keys,
            lambda: iter_shard_records(shard, compression, verify=verify),
            decode,
            batches=batches and not shard.sliced,
        )
    else:
        stream = iter_shard_records(shard, compression, verify=verify, report=report)
    if not shard.sliced:
        yield from stream
        return
    end = None if shard.take is None else shard.skip + shard.take
    with closing(stream) as records:
        for position, item in enumerate(records):
            if end is not None and position >= end:
                return
            if position >= shard.skip:
                yield item


def _record_chunks(
    dataset: OpenedDataset,
    shards: Sequence[Shard],
    keep: tuple[int, int] | None,
    defaults: dict[str, Any],
    verify: bool,
    report: CorruptionReport | None,
    skip: int = 0,
    num_threads: int = 1,
    geometry: GeometryPlan | None = None,
) -> Generator[list[dict[str, Any]]]:
    """The decoded records of ``shards``, in order (the others are not decoded), in lists:
    a chunk decoded together in one, else a record in each; with ``num_threads`` above 1
    decoded in a pool of threads, a bounded window ahead."""
    stored = dataset.stored_fields.fields
    keys = wanted_keys(stored)

    def decode(raw: _Raw) -> dict[str, Any] | RecordkitError:
        index, shard, offset, data = raw
        try:
            if isinstance(data, DecodedRecord):
                record = data.values
            else:
                assert not isinstance(data, DecodedBatch)  # given whole, never decoded here
                decoders = None if geometry is None else geometry.decoders
                record = decode_record_numpy(stored, data, index=index, decoders=decoders, keys=keys)
            if defaults:
                record.update(copy.deepcopy(defaults))
                record = {f.name: record[f.name] for f in dataset.fields}
            if geometry is not None:
                record = geometry.apply(record, index)
        except RecordkitError as exc:
            return exc.with_context(shard=shard.name, offset=offset)
        return record

    # Decoded a chunk at a time in this thread: not where threads were asked to decode,
    # nor pictures decoded at a scale.
    by_columns = num_threads == 1 and geometry is None
    column_decoder = functools.partial(decode_columns_numpy, stored) if by_columns else None
    as_decoded = not defaults and geometry is None  # a chunk's decoded records are final
    # Whole chunks where nothing is left to do a record (and no record to leave out).
    batches = by_columns and as_decoded and keep is None and report is None
    raws = _raw_records(dataset, shards, keep, verify, report, skip, keys, column_decoder, batches)
    if num_threads > 1:
        for raw, record in _in_threads(decode, raws, num_threads):
            if isinstance(record, RecordkitError):
                _skip_or_raise(record, raw, report)
                continue
            yield [record]
        return
    for raw in raws:
        data = raw[3]
        if type(data) is DecodedBatch:
            yield data.records
            continue
        if as_decoded and type(data) is DecodedRecord:
            yield [data.values]
            continue
        record = decode(raw)
        if isinstance(record, RecordkitError):
            _skip_or_raise(record, raw, report)
            continue
        yield [record]


def _skip_or_raise(error: RecordkitError, raw: _Raw, report: CorruptionReport | None) -> None:
    """Raise a record's decode ``error``, or with a ``report``, add the record to it as skipped."""
    if report is None:
        raise error
    index, shard, offset, _ = raw
    report.add(SkippedRecords(shard.name, offset, 1, f"record {index} does not decode: {error.reason}"))


#: Records per task of the decode pool (fewer when they are large, see
#: :data:`_CHUNK_BYTES`): one future and one hand-off to a thread per chunk rather than
#: per record. Small: on the shared 2-core machine, chunks of 1 to 8 records used the
#: same CPU time per record within the noise, and chunks of 16 read no faster. Measured
#: again in quiet rounds: chunks of 1 cost about 700 to 735 us of CPU a record in two
#: threads against about 650 for 4, 8 or 16, whose passes took the same time (the
#: larger chunks cut context switches from 1.6 to 0.9 a record, and nothing else).
_CHUNK_RECORDS = 4
#: A chunk closes once its records hold this many bytes, so that the window of chunks
#: read ahead stays small whatever the records' size.
_CHUNK_BYTES = 1 << 20
#: Chunks read ahead per thread, beyond the one being handed over.
_AHEAD = 2


def _in_threads(
    decode: Callable[[_Raw], dict[str, Any] | RecordkitError], raws: Iterator[_Raw], num_threads: int
) -> Iterator[tuple[_Raw, dict[str, Any] | RecordkitError]]:
    """``(raw, decode(raw))`` in order, decoded by ``num_threads`` threads (the image and
    audio decoders release the GIL while they decode), a chunk of records per task and at most
    ``_AHEAD * num_threads`` chunks ahead.

    When reading the records fails (a corrupt shard), the records read before the
    failure are decoded and yielded first, then the error is raised: as in one thread.
    """

    def decode_chunk(chunk: list[_Raw]) -> list[dict[str, Any] | RecordkitError]:
        return [decode(raw) for raw in chunk]

    with concurrent.futures.ThreadPoolExecutor(num_threads, thread_name_prefix="recordkit-decode") as pool:
        pending: collections.deque[tuple[list[_Raw], concurrent.futures.Future[Any]]] = collections.deque()
        failure: Exception | None = None
        chunk: list[_Raw] = []
        size = 0
        try:
            while True:
                try:
                    raw = next(raws, None)
                except Exception as exc:  # yield what was read before it, then raise it
                    failure, raw = exc, None
                if raw is not None:
                    chunk.append(raw)
                    size += len(raw[3]) if isinstance(raw[3], bytes) else 0
                if chunk and (raw is None or len(chunk) >= _CHUNK_RECORDS or size >= _CHUNK_BYTES):
                    pending.append((chunk, pool.submit(decode_chunk, chunk)))
                    chunk, size = [], 0
                while pending and (raw is None or len(pending) > _AHEAD * num_threads):
                    done, future = pending.popleft()
                    yield from zip(done, future.result(), strict=True)
                if raw is None:
                    break
        finally:
            for _, future in pending:  # the consumer stopped early: drop the rest
                future.cancel()
    if failure is not None:
        raise failure


def iter_shard_records(
    shard: Shard,
    compression: Compression = Compression.NONE,
    *,
    verify: bool = True,
    report: CorruptionReport | None = None,
) -> Generator[tuple[int, bytes]]:
    """Yield ``(offset, data)`` of each record of ``shard``.

    Without ``report`` the first damaged record raises CorruptRecordError (naming the
    shard and offset); with one, damaged records are skipped and reported. A shard with
    field groups joined (:attr:`Shard.joined`) gives each record joined; with a
    ``report``, a record damaged in one of its files is skipped in all of them
    (:mod:`recordkit.read._joined_scan`).
    """
    if shard.joined:
        if report is None:
            yield from _joined_records(shard, compression, verify=verify)
        else:
            files = [dataclasses.replace(file, joined=()) for file in shard.files]
            yield from joined_records_skipping(shard, files, compression, verify=verify, report=report)
        return
    if report is None:
        try:
            yield from iter_tfrecords(shard.path, compression, verify=verify)
        except RecordkitError as exc:
            raise exc.with_context(shard=shard.name) from None
        return
    skips: list[SkippedRecords] = []

    def damaged(damage: Damage) -> None:
        skips.append(SkippedRecords(shard.name, damage.offset, damage.records, damage.reason))

    read = 0
    try:
        for offset, data in scan_tfrecords(shard.path, compression, damaged, verify=verify):
            read += 1
            yield offset, data
    finally:
        _settle(skips, shard, read)
        for skip in skips:
            report.add(skip)


def _joined_records(shard: Shard, compression: Compression, *, verify: bool) -> Generator[tuple[int, bytes]]:
    """``(offset, data)`` of each record of ``shard``, its bytes followed by those of the
    same record in each file joined to it; a file that ends before the others is a
    CorruptRecordError naming it and the file that goes on."""
    # Each file on its own (the first without its joined files), its errors naming it.
    files = [dataclasses.replace(file, joined=()) for file in shard.files]
    streams = [iter_shard_records(file, compression, verify=verify) for file in files]
    for read, items in enumerate(itertools.zip_longest(*streams)):
        if None in items:
            ended = [file.name for file, item in zip(shard.files, items, strict=True) if item is None]
            going = [file.name for file, item in zip(shard.files, items, strict=True) if item is not None]
            raise CorruptRecordError(
                f"{', '.join(ended)} ends after {read} records, {', '.join(going)} holds more: "
                "a field group's shard must hold the records of the shard it is aligned with",
                shard=shard.name,
            )
        yield items[0][0], b"".join(data for _, data in items)


def _settle(skips: list[SkippedRecords], shard: Shard, read: int) -> None:
    """Give skips of unknown size their count when the manifest tells how many records
    the shard holds and only one skip is of unknown size."""
    if shard.records is None:
        return
    unknown = [i for i, s in enumerate(skips) if s.records is None]
    if len(unknown) != 1:
        return
    known = sum(s.records or 0 for s in skips)
    lost = shard.records - read - known
    if lost >= 0:
        skip = skips[unknown[0]]
        skips[unknown[0]] = SkippedRecords(skip.shard, skip.offset, lost, skip.reason)
