"""A shard's records parsed many at a time for the keys a read wants: the numpy reader's
sequential stream of a local, uncompressed shard (and the field groups' files joined to
it), each file read whole (never mapped), its framing checked whole
(:func:`~recordkit.format._batch_parse.framed_records`), then its Examples parsed a chunk
of records at a time (:func:`~recordkit.format._batch_parse.parsed_records`).

Why: with small fixed-shape fields (an embedding and a label in a field group), reading
a record one at a time (its framing, one protobuf parse, the conversion of each value)
cost several times what decoding its fields does. The values are those of the
per-record path: a record that cannot be parsed with the others is given as its bytes.
A shard whose framing is not sound is read by
:func:`~recordkit.read._iter_records.iter_shard_records`, whose errors name the record.

:func:`parsed_fetched` parses the same way the records that random access and the epoch
readers fetch by index, a batch at a time (the shuffled order of an epoch, a mixture's
sources), their framing already checked by the fetch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import mmap
import os
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any, cast

import numpy as np

from recordkit.dataset._shards import Shard
from recordkit.errors import RecordkitError
from recordkit.format._batch_parse import (
    Column,
    ParsedChunk,
    ParsedExample,
    Templates,
    framed_records,
    parsed_data,
    parsed_records,
)
from recordkit.format._tfrecord import FOOTER_BYTES, FRAMING_BYTES, HEADER_BYTES, LENGTH_FIELD, Compression
from recordkit.storage._ranges import read_into

__all__ = [
    "ColumnDecoder",
    "DecodedBatch",
    "DecodedRecord",
    "ShardBatch",
    "ShardItem",
    "parsed_fetched",
    "parsed_shard_records",
]


#: Records parsed together by :func:`parsed_shard_records` (a bounded batch of parsed
#: Examples held at a time, whatever the shard's size).
_PARSED_CHUNK = 2048
#: A shard whose records are at most this many bytes on average (by the manifest) is
#: read whole and parsed a chunk at a time even when its records vary in size (captions of
#: varied lengths): each length's records are parsed and decoded together.
_SMALL_RECORD_BYTES = 1024


@dataclasses.dataclass(frozen=True, slots=True)
class DecodedRecord:
    """A record already decoded with the others of its chunk (its fields' values)."""

    values: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class DecodedBatch:
    """Every record of a fetched batch decoded with its batch, in the order fetched, as
    plain dicts (:func:`parsed_fetched`). One object for the batch, not a
    :class:`DecodedRecord` a record: a wrapper is an object the garbage collector
    tracks, where a record of strings, numbers and arrays is not, so wrappers held
    while a batch is read made the collector's passes, and the records it moved to its
    oldest generation, grow with the records read (about a fifth of the cost of reading
    a small record)."""

    records: list[dict[str, Any]]

    def wrapped(self) -> list[DecodedRecord]:
        """Each record as a :class:`DecodedRecord`, for a reader with more to do a record."""
        return list(map(DecodedRecord, self.records))


#: Decodes ``count`` records from their columns (or None: decode them one by one).
ColumnDecoder = Callable[[Mapping[str, Column], int], "list[dict[str, Any]] | None"]


#: A record of a shard as :func:`parsed_shard_records` gives it.
ShardItem = tuple[int, "bytes | ParsedExample | DecodedRecord"]
#: A chunk of a shard's records decoded together, as :func:`parsed_shard_records` gives it
#: with ``batches``: each record's offset, and the records.
ShardBatch = tuple[list[int], DecodedBatch]


def parsed_shard_records(
    shard: Shard,
    compression: Compression,
    keys: Collection[str],
    fallback: Callable[[], Iterator[ShardItem]],
    decode: ColumnDecoder | None = None,
    *,
    batches: bool = False,
) -> Generator[ShardItem | ShardBatch]:
    """``(offset, record)`` of each record of ``shard`` (joined with its field groups'
    files), each record's Example parsed for ``keys`` many records at a time
    (:mod:`recordkit.format._batch_parse`), or its bytes where it has to be parsed alone;
    the records of ``fallback()`` when the shard cannot be read this way (compressed, not
    local, or its framing or alignment not sound: ``fallback``, which reads it record by
    record, then names what is wrong). Every file is checked whole before the first
    record is given. With ``decode``, a chunk of records of one layout comes decoded
    (:class:`DecodedRecord`; with ``batches``, the chunk as one item: its records'
    offsets and a :class:`DecodedBatch`, no wrapper a record). The files are opened
    when the first record is asked for, inside the generator, so a generator never
    started holds no file open, and closed when it ends or is closed."""
    if compression is not Compression.NONE or any(f.path.local_path is None for f in shard.files):
        yield from fallback()
        return
    with ExitStack() as stack:
        try:
            mapped = [_read_whole(file, stack) for file in shard.files]
            buffers = [buffer for buffer in mapped if buffer is not None]
            offsets = [framed_records(buffer) for buffer in buffers]
        except (OSError, ValueError):
            buffers, mapped, offsets = [], [None], []
        checked = [o for o in offsets if o is not None]
        sound = (
            len(buffers) == len(mapped)
            and len(checked) == len(offsets)
            and len({len(o) for o in checked}) == 1
        )
        if sound:
            yield from _parsed_chunks(buffers, checked, keys, decode, batches)
            return
    yield from fallback()  # the files above closed first


def _read_whole(file: Shard, stack: ExitStack) -> bytes | mmap.mmap | None:
    """The bytes of a local shard file, read whole (an empty file: ``b""``), when its
    size is a multiple of its first record's framed size, as when all its records have
    that size (a field group's, or fixed-size fields'), or when its records hold at most
    :data:`_SMALL_RECORD_BYTES` on average by the manifest (each length's records are
    then parsed together: small captions of varied lengths read at 0.45x the CPU a
    record of the record-by-record read); None otherwise (large records of varied sizes
    share few layouts: the buffered read of :func:`iter_shard_records` serves them).
    Read, never mapped: a mapped file cut short while it is read (rewritten in place by
    another process, changed on a network filesystem) kills the process with ``SIGBUS``,
    which nothing in Python can catch; a file cut short before it is read whole gives
    fewer bytes, whose framing check fails (the fallback then names the record). It is
    read into anonymous memory (:func:`_anonymous`), which slices to ``bytes`` as the
    file's mapping did."""
    local = file.path.local_path
    assert local is not None
    raw = stack.enter_context(open(local, "rb"))  # noqa: SIM115 - closed by the stack
    size = os.fstat(raw.fileno()).st_size
    if size == 0:
        return b""
    head = os.pread(raw.fileno(), LENGTH_FIELD.size, 0)
    if len(head) < LENGTH_FIELD.size:
        return None
    small = bool(file.records) and size // max(file.records or 1, 1) <= _SMALL_RECORD_BYTES
    if size % (LENGTH_FIELD.unpack(head)[0] + FRAMING_BYTES) and not small:
        return None
    buffer = _anonymous(size)
    stack.callback(_close, buffer)
    filled = read_into(raw, memoryview(buffer))
    return buffer if filled == size else buffer[:filled]


def _anonymous(size: int) -> mmap.mmap:
    """``size`` bytes of private anonymous memory, advised to be backed by huge pages where
    the system has them (``MADV_HUGEPAGE``: 512 times fewer page faults; as numpy does for
    a large array). Read into it, a 128 MiB shard cost 36 ms of CPU, against 72 ms for
    ``read()``'s ``bytes`` (a fault a 4 KB page) and 2 ms for the file's mapping."""
    if not hasattr(mmap, "MAP_PRIVATE"):  # Windows: anonymous memory backed by the paging file
        return mmap.mmap(-1, size)
    buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with contextlib.suppress(AttributeError, OSError):  # no madvise, or no huge pages
        buffer.madvise(mmap.MADV_HUGEPAGE)
    return buffer


def _close(buffer: mmap.mmap) -> None:
    """Close ``buffer``; while the traceback of an error raised in the read still holds a
    numpy view of it, leave it to close when that view goes, so that the error raised is
    that error, not mmap's ``BufferError`` (cannot close: exported pointers exist)."""
    with contextlib.suppress(BufferError):
        buffer.close()


def _parsed_chunks(
    buffers: list[bytes | mmap.mmap],
    offsets: list[np.ndarray],
    keys: Collection[str],
    decode: ColumnDecoder | None,
    batches: bool,
) -> Iterator[ShardItem | ShardBatch]:
    count = len(offsets[0]) - 1
    for first in range(0, count, _PARSED_CHUNK):
        last = min(first + _PARSED_CHUNK, count)
        chunks = [parsed_records(b, o[first : last + 1], keys) for b, o in zip(buffers, offsets, strict=True)]
        starts = offsets[0][first:last].tolist()
        if len(chunks) == 1 and decode is not None:  # each length's records decoded together
            parsed = _parsed_items(chunks[0], list(_data(buffers, offsets, first, last)), decode)
            if isinstance(parsed, DecodedBatch):
                if batches:
                    yield starts, parsed
                    continue
                yield from zip(starts, parsed.wrapped(), strict=True)
            else:
                yield from zip(starts, parsed, strict=True)
            continue
        if batches and decode is not None:
            records = _decoded(chunks, decode)
            if records is not None:
                yield starts, DecodedBatch(records)
                continue
        tried = batches  # not decoded together: not tried again record by record
        items = _chunk_items(chunks, _data(buffers, offsets, first, last), None if tried else decode)
        yield from zip(starts, items, strict=True)


def _chunk_items(
    chunks: Sequence[ParsedChunk], data: Iterable[bytes], decode: ColumnDecoder | None
) -> Iterator[bytes | ParsedExample | DecodedRecord]:
    """The records of ``chunks`` (one per joined file; ``data``: each record's bytes, the
    files' joined): all decoded together with ``decode`` where every file has one layout
    throughout, else each record's Example (one file's entries after another's) where
    every file's template matched it, else its bytes, to be parsed alone."""
    records = None if decode is None else _decoded(list(chunks), decode)
    if records is not None:
        return map(DecodedRecord, records)
    if all(not chunk.parts for chunk in chunks):  # no layout shared: every record's bytes
        return iter(data)
    examples = zip(*(chunk.examples() for chunk in chunks), strict=True)
    return (
        joined if None in parsed else parsed[0] if len(parsed) == 1 else _merged(parsed)
        for parsed, joined in zip(examples, data, strict=True)
    )


def parsed_fetched(
    fetched: Sequence[tuple[bytes | RecordkitError, ...]],
    keys: Collection[str],
    templates: Sequence[Templates],
    decode: ColumnDecoder | None = None,
) -> list[bytes | ParsedExample | DecodedRecord] | DecodedBatch | None:
    """Records fetched by index (each its checked data in every joined file, as
    :meth:`~recordkit.read._random_access.RandomAccess` fetches them), parsed for ``keys``
    many at a time (:func:`~recordkit.format._batch_parse.parsed_data`, file ``k``'s
    against the templates ``templates[k]`` keeps), as :func:`parsed_shard_records` gives
    a shard's: each record's Example, or its bytes (joined) where it has to be parsed
    alone, or, with ``decode`` and records of one layout, all of them decoded (when every
    record was decoded, the batch as a :class:`DecodedBatch`). None when
    a record could not be read or is damaged: the batch is read record by record, which
    raises each error where its record comes."""
    files = list(zip(*fetched, strict=True)) if fetched else []
    if any(any(map(isinstance, parts, itertools.repeat(RecordkitError))) for parts in files):
        return None
    datas = cast(list[tuple[bytes, ...]], files)
    chunks = [parsed_data(parts, keys, kept) for parts, kept in zip(datas, templates, strict=True)]
    if len(chunks) == 1:
        return _parsed_items(chunks[0], datas[0], decode)
    records = None if decode is None else _decoded(chunks, decode)
    if records is not None:
        return DecodedBatch(records)
    return list(_chunk_items(chunks, map(b"".join, zip(*datas, strict=True)), None))


def _parsed_items(
    chunk: ParsedChunk, datas: Sequence[bytes], decode: ColumnDecoder | None
) -> list[bytes | ParsedExample | DecodedRecord] | DecodedBatch:
    """The records of one file's ``chunk`` (their data ``datas``): those of a layout all
    of whose records matched, decoded together with ``decode``; the other matched ones
    parsed; the rest as their data. When every record was decoded (each length's
    records with their layout), the batch's records as they are (:class:`DecodedBatch`)."""
    out: list[Any] = list(datas)
    decoded: list[tuple[np.ndarray, list[dict[str, Any]]]] = []
    for part in chunk.parts:
        if decode is not None and bool(part.match.all()):
            records = decode(part.columns, len(part.chosen))
            if records is not None:
                decoded.append((part.chosen, records))
                continue
        for position, example in part.examples():
            out[position] = example
    if sum(len(chosen) for chosen, _ in decoded) == chunk.count:
        if len(decoded) == 1:  # one layout: its records are the batch's, in order
            return DecodedBatch(decoded[0][1])
        for chosen, records in decoded:
            list(map(out.__setitem__, chosen.tolist(), records))  # each in its place, in C
        return DecodedBatch(out)
    for chosen, records in decoded:
        for position, record in zip(chosen.tolist(), records, strict=True):
            out[position] = DecodedRecord(record)
    return out


def _data(
    buffers: list[bytes | mmap.mmap], offsets: list[np.ndarray], first: int, last: int
) -> Iterator[bytes]:
    """The data of records ``first`` to ``last`` (excluded), each file's joined, sliced as
    they are asked for."""
    pieces = [
        map(
            buffer.__getitem__,
            map(
                slice,
                (o[first:last] + HEADER_BYTES).tolist(),
                (o[first + 1 : last + 1] - FOOTER_BYTES).tolist(),
            ),
        )
        for buffer, o in zip(buffers, offsets, strict=True)
    ]
    if len(pieces) == 1:
        return pieces[0]
    return map(b"".join, zip(*pieces, strict=True))


def _decoded(chunks: list[ParsedChunk], decode: ColumnDecoder) -> list[dict[str, Any]] | None:
    """The records of ``chunks`` (one per joined file) decoded from their columns, or None
    when one of them does not have one layout throughout."""
    columns: dict[str, Column] = {}
    for chunk in chunks:
        part = chunk.columns
        if part is None:
            return None
        columns.update(part)
    return decode(columns, chunks[0].count)


def _merged(examples: Sequence[ParsedExample]) -> ParsedExample:
    merged: ParsedExample = {}
    for example in examples:
        merged.update(example)
    return merged
