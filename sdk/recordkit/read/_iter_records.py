"""``iter_records``: a dataset's records as Python and numpy values, without TensorFlow.

Shards are read with recordkit's own TFRecord framing (:mod:`recordkit.format._tfrecord`), CRCs
checked, and each requested field decoded by its codec's ``decode_numpy``. Useful for
inspection, tests, data loaders of other frameworks, and machines without TensorFlow.

With ``on_corrupt="skip"`` a damaged shard costs only its damaged records: a record
whose data fails its CRC is skipped alone (its length is intact), and after a damaged
header the reader searches forward for the next intact record (a valid header CRC and
data CRC) and carries on from there; a record that does not decode is skipped too.
What was skipped goes to a :class:`~recordkit.CorruptionReport`.

A worker of a multi-worker job (``num_workers`` and ``worker_index``, or an
``input_context``) reads its share as :func:`recordkit.load_dataset` does: every
``num_workers``-th shard when there are at least as many shards as workers, else every
``num_workers``-th record (counted over the records the shards hold, so that all
workers count alike; only a worker's own records are decoded).
"""

from __future__ import annotations

import collections
import concurrent.futures
import copy
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from recordkit.codec._registry import CodecRegistry
from recordkit.errors import RecordkitError
from recordkit.format._tfrecord import Compression, iter_tfrecords, masked_crc
from recordkit.read._numpy_decode import decode_record_numpy
from recordkit.read._open import (
    CorruptionReport,
    OnCorrupt,
    Paths,
    Shard,
    SkippedRecords,
    Source,
)
from recordkit.read._options import SourceOptions
from recordkit.schema._schema import Schema

__all__ = ["iter_records", "iter_shard_records"]

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_HEADER = 12  # length (8) + its CRC (4)
_FOOTER = 4  # the data's CRC


def iter_records(
    path: Paths,
    split: str = "train",
    fields: str | Sequence[str] | None = None,
    *,
    schema: Schema | str | os.PathLike[str] | None = None,
    registry: CodecRegistry | None = None,
    verify: bool = True,
    on_corrupt: OnCorrupt = "raise",
    report: CorruptionReport | None = None,
    verify_sha256: bool = False,
    compression: str | None = None,
    num_workers: int | None = None,
    worker_index: int | None = None,
    input_context: Any = None,
    num_threads: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Each record of a split as a dict of Python and numpy values (an iterator).

    The options are checked, the manifest read and the schemas compared when it is
    called, so a bad option or an incompatible schema fails at once; the shards are read
    as the iterator is consumed.

    :param path: a dataset folder (with ``dataset.json``); or, with ``schema``, TFRecord
        files recordkit did not write (a file, a glob pattern or a list).
    :param fields: the fields to decode (default: all); others are not decoded.
    :param schema: the reader's schema, checked against the stored one (see
        :func:`recordkit.load_dataset`).
    :param verify: check each record's data CRC (header CRCs are always checked).
    :param on_corrupt: ``"raise"`` stops at the first corrupt record with a
        :class:`~recordkit.errors.CorruptRecordError` (or ``DecodeError``) naming the
        shard and offset; ``"skip"`` skips it and goes on (see the module docs).
    :param report: collects what ``"skip"`` skipped (each skip is also logged).
    :param verify_sha256: hash every shard first and compare with the manifest.
    :param compression: for files without a manifest (default: guessed from the suffix).
    :param num_workers: with ``worker_index``: read only this worker's share of the
        split (see the module docs); all the workers together read every record once.
    :param worker_index: this worker's index, 0 to ``num_workers - 1``.
    :param input_context: instead of the two above, anything with
        ``num_input_pipelines`` and ``input_pipeline_id`` (a
        ``tf.distribute.InputContext``), as :func:`recordkit.load_dataset` takes.
    :param num_threads: decode records in a pool of this many threads (None or 1: in the
        calling thread). Pillow and soundfile release the GIL while they decode, so images
        and audio decode on several cores; the records come in the same order, with the
        same values, and errors are raised (or skipped) as without threads.

    An optional field that a record leaves out is ``None``.
    """
    if num_threads is not None and num_threads < 1:
        raise ValueError(f"num_threads must be at least 1, not {num_threads}")
    opened = SourceOptions(
        schema=schema,
        registry=registry,
        on_corrupt=on_corrupt,
        report=report,
        verify_sha256=verify_sha256,
        compression=compression,
        input_context=input_context,
        num_workers=num_workers,
        worker_index=worker_index,
    ).open(path, split, fields)
    source, share = opened.source, opened.share
    defaults = {  # fields the records lack, read as the reader schema's default
        name: decode_record_numpy([source.bound[name]], example)[name]
        for name, example in source.defaults.items()
    }
    shards, by_record = share.shards(source.shards) if share is not None else (source.shards, False)
    keep = (share.count, share.index) if by_record and share is not None else None
    return _records(source, shards, keep, defaults, verify, opened.report, num_threads or 1)


#: One record to decode: its index in the split, its shard, its offset and its bytes.
_Raw = tuple[int, Shard, int, bytes]


def _raw_records(
    source: Source,
    shards: Sequence[Shard],
    keep: tuple[int, int] | None,
    verify: bool,
    report: CorruptionReport | None,
) -> Iterator[_Raw]:
    """The undecoded records of ``shards``; with ``keep = (count, index)`` only every
    ``count``-th record, from the ``index``-th."""
    index = 0
    for shard in shards:
        for offset, data in iter_shard_records(shard, source.compression, verify=verify, report=report):
            if keep is None or index % keep[0] == keep[1]:
                yield index, shard, offset, data
            index += 1


def _records(
    source: Source,
    shards: Sequence[Shard],
    keep: tuple[int, int] | None,
    defaults: dict[str, Any],
    verify: bool,
    report: CorruptionReport | None,
    num_threads: int = 1,
) -> Iterator[dict[str, Any]]:
    """The decoded records of ``shards``, in order (the others are not decoded); with
    ``num_threads`` above 1 decoded in a pool of threads, a bounded window ahead."""
    stored = source.stored_fields.fields

    def decode(raw: _Raw) -> dict[str, Any] | RecordkitError:
        index, shard, offset, data = raw
        try:
            record = decode_record_numpy(stored, data, index=index)
            if defaults:
                record.update(copy.deepcopy(defaults))
                record = {f.name: record[f.name] for f in source.fields}
        except RecordkitError as exc:
            return exc.with_context(shard=shard.name, offset=offset)
        return record

    raws = _raw_records(source, shards, keep, verify, report)
    if num_threads == 1:
        decoded: Iterator[tuple[_Raw, dict[str, Any] | RecordkitError]] = ((raw, decode(raw)) for raw in raws)
    else:
        decoded = _in_threads(decode, raws, num_threads)
    for raw, record in decoded:
        if isinstance(record, RecordkitError):
            if report is None:
                raise record
            index, shard, offset, _ = raw
            reason = f"record {index} does not decode: {record.reason}"
            report.add(SkippedRecords(shard.name, offset, 1, reason))
            continue
        yield record


def _in_threads(
    decode: Callable[[_Raw], dict[str, Any] | RecordkitError], raws: Iterator[_Raw], num_threads: int
) -> Iterator[tuple[_Raw, dict[str, Any] | RecordkitError]]:
    """``(raw, decode(raw))`` in order, decoded by ``num_threads`` threads (Pillow and
    soundfile release the GIL while they decode) at most ``4 * num_threads`` ahead."""
    with concurrent.futures.ThreadPoolExecutor(num_threads, thread_name_prefix="recordkit-decode") as pool:
        pending: collections.deque[tuple[_Raw, concurrent.futures.Future[Any]]] = collections.deque()
        try:
            for raw in raws:
                pending.append((raw, pool.submit(decode, raw)))
                if len(pending) >= 4 * num_threads:
                    done, future = pending.popleft()
                    yield done, future.result()
            while pending:
                done, future = pending.popleft()
                yield done, future.result()
        finally:
            for _, future in pending:  # the consumer stopped early: drop the rest
                future.cancel()


def iter_shard_records(
    shard: Shard,
    compression: Compression = Compression.NONE,
    *,
    verify: bool = True,
    report: CorruptionReport | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, data)`` of each record of ``shard``.

    Without ``report`` the first damaged record raises CorruptRecordError (naming the
    shard and offset); with one, damaged records are skipped and reported.
    """
    if report is None:
        try:
            yield from iter_tfrecords(shard.path, compression, verify=verify)
        except RecordkitError as exc:
            raise exc.with_context(shard=shard.name) from None
        return
    skips: list[SkippedRecords] = []
    read = 0
    try:
        with ExitStack() as stack:
            buffer = _shard_bytes(shard.path, compression, stack, skips, shard.name)
            for offset, data in _scan(buffer, shard.name, verify, skips):
                read += 1
                yield offset, data
    finally:
        _settle(skips, shard, read)
        for skip in skips:
            report.add(skip)


def _shard_bytes(
    path: Path, compression: Compression, stack: ExitStack, skips: list[SkippedRecords], name: str
) -> bytes | mmap.mmap:
    """The shard's (uncompressed) bytes: memory-mapped, or decompressed as far as possible."""
    if compression is Compression.NONE:
        stream = stack.enter_context(path.open("rb"))
        if path.stat().st_size == 0:
            return b""
        return stack.enter_context(mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ))
    raw = path.read_bytes()
    wbits = 16 + zlib.MAX_WBITS if compression is Compression.GZIP else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    step = 1 << 16
    for start in range(0, len(raw), step):
        try:
            out += inflater.decompress(raw[start : start + step])
        except zlib.error as exc:
            skips.append(SkippedRecords(name, len(out), None, f"cannot decompress past here ({exc})"))
            return bytes(out)
    if not inflater.eof and raw:
        skips.append(SkippedRecords(name, len(out), None, "the compressed stream is truncated"))
    return bytes(out)


def _scan(
    buffer: bytes | mmap.mmap, name: str, verify: bool, skips: list[SkippedRecords]
) -> Iterator[tuple[int, bytes]]:
    size = len(buffer)
    pos = 0
    while pos < size:
        if size - pos < _HEADER:
            skips.append(SkippedRecords(name, pos, None, "truncated record header at the end of the shard"))
            return
        (length,) = _U64.unpack_from(buffer, pos)
        (length_crc,) = _U32.unpack_from(buffer, pos + 8)
        if masked_crc(bytes(buffer[pos : pos + 8])) == length_crc:
            end = pos + _HEADER + length + _FOOTER
            if end > size:
                skips.append(
                    SkippedRecords(
                        name, pos, None, f"truncated record: {length} bytes announced, the shard ends first"
                    )
                )
                return
            data = bytes(buffer[pos + _HEADER : pos + _HEADER + length])
            if verify and masked_crc(data) != _U32.unpack_from(buffer, end - _FOOTER)[0]:
                skips.append(SkippedRecords(name, pos, 1, "data CRC mismatch (corrupt record)"))
            else:
                yield pos, data
            pos = end
            continue
        resume = _resync(buffer, pos + 1, verify)
        if resume is None:
            skips.append(
                SkippedRecords(name, pos, None, "corrupt record header; no intact record follows it")
            )
            return
        skips.append(
            SkippedRecords(name, pos, None, f"corrupt record header; reading resumed at offset {resume}")
        )
        pos = resume


def _resync(buffer: bytes | mmap.mmap, start: int, verify: bool) -> int | None:
    """The first offset from ``start`` where an intact record begins, or None."""
    size = len(buffer)
    for pos in range(start, size - _HEADER - _FOOTER + 1):
        (length,) = _U64.unpack_from(buffer, pos)
        end = pos + _HEADER + length + _FOOTER
        if end > size:
            continue
        if masked_crc(bytes(buffer[pos : pos + 8])) != _U32.unpack_from(buffer, pos + 8)[0]:
            continue
        if (
            verify
            and masked_crc(bytes(buffer[pos + _HEADER : end - _FOOTER]))
            != _U32.unpack_from(buffer, end - _FOOTER)[0]
        ):
            continue
        return pos
    return None


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
