"""A shard's records parsed many at a time for the keys a read wants: the numpy reader's
sequential stream of a local, uncompressed shard (and the field groups' files joined to
it), each file read a chunk at a time into one buffer used again (never mapped), each
record's framing checked before it is given
(:class:`~recordkit.read._shard_chunks.ChunkedRecords`: a reader holds about one chunk,
:data:`~recordkit.read._shard_chunks.CHUNK_BYTES`, and one record of each file, where a
file read whole held all of it), then its Examples parsed a chunk of records at a time
(:func:`~recordkit.format._batch_parse.parsed_records`).

Why: with small fixed-shape fields (an embedding and a label in a field group), reading
a record one at a time (its framing, one protobuf parse, the conversion of each value)
cost several times what decoding its fields does. The values are those of the
per-record path: a record that cannot be parsed with the others is given as its bytes.
Where a chunk's framing is not sound (or a file was cut short while it was read), the
records after those given are read by
:func:`~recordkit.read._iter_records.iter_shard_records`, whose errors name the record.

:func:`parsed_files` parses the same way the records that random access and the epoch
readers fetch by index, a batch at a time (the shuffled order of an epoch, a mixture's
sources), their framing already checked by the fetch.
"""

from __future__ import annotations

import dataclasses
import functools
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
    parsed_data,
    parsed_records,
)
from recordkit.format._tfrecord import FOOTER_BYTES, FRAMING_BYTES, HEADER_BYTES, LENGTH_FIELD, Compression
from recordkit.read import _shard_chunks
from recordkit.read._shard_chunks import ChunkedRecords

__all__ = [
    "ColumnDecoder",
    "DecodedBatch",
    "DecodedRecord",
    "ShardBatch",
    "ShardItem",
    "parsed_files",
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
    plain dicts (:func:`parsed_files`). One object for the batch, not a
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
    (:mod:`recordkit.format._batch_parse`), or its bytes where it has to be parsed alone.
    Each file is read a chunk at a time (:class:`~recordkit.read._shard_chunks.ChunkedRecords`:
    about one chunk and one record held a file), each record's framing checked before
    it is given. Where the shard cannot be read this way (compressed, not local, its
    records too large and varied) the records are those of ``fallback()``, which reads it
    record by record; where a chunk's framing or the files' alignment is not sound, the
    records given so far are followed by the rest of ``fallback()``'s, which names what is
    wrong. With ``decode``, a chunk of records of one layout comes decoded
    (:class:`DecodedRecord`; with ``batches``, the chunk as one item: its records'
    offsets and a :class:`DecodedBatch`, no wrapper a record). The files are opened
    when the first record is asked for, inside the generator, so a generator never
    started holds no file open, and closed when it ends or is closed."""
    if compression is not Compression.NONE or any(f.path.local_path is None for f in shard.files):
        yield from fallback()
        return
    given = 0
    with ExitStack() as stack:
        try:
            opened = [_opened(file, stack) for file in shard.files]
        except OSError:
            opened = [None]
        readers = [reader for reader in opened if reader is not None]
        if len(readers) == len(opened):
            stopped = yield from _parsed_chunks(readers, keys, decode, batches)
            if stopped is None:
                return
            given = stopped
    # The files above closed first; the records after those given, read one by one.
    yield from itertools.islice(fallback(), given, None)


def _opened(file: Shard, stack: ExitStack) -> ChunkedRecords | None:
    """The reader of a local shard file's records a chunk at a time, when its size is a
    multiple of its first record's framed size, as when all its records have that size
    (a field group's, or fixed-size fields'), or when its records hold at most
    :data:`_SMALL_RECORD_BYTES` on average by the manifest (each length's records are
    then parsed together: small captions of varied lengths read at 0.45x the CPU a
    record of the record-by-record read); None otherwise (large records of varied sizes
    share few layouts: the buffered read of :func:`iter_shard_records` serves them; read a
    chunk at a time and decoded by columns, the benchmark's mixed records cost about 5%
    less CPU but a chunk's pictures held decoded until taken raised the read's peak RSS
    from 64 to 159 MiB, and decoded in runs of 2 MiB the gain went: see docs/performance.md)."""
    local = file.path.local_path
    assert local is not None
    raw = stack.enter_context(open(local, "rb", buffering=0))  # noqa: SIM115 - closed by the stack
    size = os.fstat(raw.fileno()).st_size
    if size == 0:
        return ChunkedRecords(raw, 0)
    head = os.pread(raw.fileno(), LENGTH_FIELD.size, 0)
    if len(head) < LENGTH_FIELD.size:
        return None
    small = bool(file.records) and size // max(file.records or 1, 1) <= _SMALL_RECORD_BYTES
    frame = LENGTH_FIELD.unpack(head)[0] + FRAMING_BYTES
    uniform = size % frame == 0
    if not uniform and not small:
        return None
    reader = ChunkedRecords(raw, size, _shard_chunks.CHUNK_BYTES, frame=frame if uniform else None)
    stack.callback(reader.close)
    return reader


def _parsed_chunks(
    readers: list[ChunkedRecords],
    keys: Collection[str],
    decode: ColumnDecoder | None,
    batches: bool,
) -> Generator[ShardItem | ShardBatch, None, int | None]:
    """The records of ``readers`` (one per joined file), parsed :data:`_PARSED_CHUNK` at a
    time (fewer at the end of a file's chunk: a file reads on only once its chunk's
    records are all taken, so that no record is moved in its buffer, only the one the
    chunk's end cut). Returns None once every file has been read to its end, else the
    records given before a file's framing failed or a file ended before the others."""
    given = 0
    while True:
        for reader in readers:
            if not reader.available:
                reader.fill()  # the records given before are all consumed: the buffer is free
        if not all(reader.sound for reader in readers):
            return given
        count = min(min(reader.available for reader in readers), _PARSED_CHUNK)
        if count == 0:
            return None if all(reader.finished for reader in readers) else given
        buffers = [cast(mmap.mmap, reader.buffer) for reader in readers]
        offsets = [reader.take(count) for reader in readers]
        starts = (offsets[0][:-1] + readers[0].base).tolist()
        given += count
        chunks = [parsed_records(b, o, keys) for b, o in zip(buffers, offsets, strict=True)]
        if len(chunks) == 1 and decode is not None:  # each length's records decoded together
            parsed = _parsed_items(chunks[0], functools.partial(_data, buffers, offsets), decode)
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
        items = _chunk_items(chunks, _data(buffers, offsets), None if tried else decode)
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


def parsed_files(
    files: Sequence[Sequence[bytes | RecordkitError]],
    keys: Collection[str],
    templates: Sequence[Templates],
    decode: ColumnDecoder | None = None,
) -> list[bytes | ParsedExample | DecodedRecord] | DecodedBatch | None:
    """Records fetched by index (``files[k][i]``: record ``i``'s checked data in file ``k``
    of the joined files, as :func:`~recordkit.read._batched_access.fetch_checked` gives a
    file's), parsed for ``keys`` many at a time
    (:func:`~recordkit.format._batch_parse.parsed_data`, file ``k``'s against the templates
    ``templates[k]`` keeps), as :func:`parsed_shard_records` gives a shard's: each
    record's Example, or its bytes (joined) where it has to be parsed alone, or, with
    ``decode`` and records of one layout, all of them decoded (when every record was
    decoded, the batch as a :class:`DecodedBatch`). None when a record could not be read
    or is damaged: the batch is read record by record, which raises each error where its
    record comes. A list a file, no tuple a record: a batch of more records than the
    garbage collector's first generation holds (700) would have it collect again and
    again."""
    if any(any(map(isinstance, parts, itertools.repeat(RecordkitError))) for parts in files):
        return None
    datas = cast(list[Sequence[bytes]], files)
    chunks = [parsed_data(parts, keys, kept) for parts, kept in zip(datas, templates, strict=True)]
    if len(chunks) == 1:
        return _parsed_items(chunks[0], lambda: datas[0], decode)
    records = None if decode is None else _decoded(chunks, decode)
    if records is not None:
        return DecodedBatch(records)
    return list(_chunk_items(chunks, map(b"".join, zip(*datas, strict=True)), None))


def _parsed_items(
    chunk: ParsedChunk, datas: Callable[[], Iterable[bytes]], decode: ColumnDecoder | None
) -> list[bytes | ParsedExample | DecodedRecord] | DecodedBatch:
    """The records of one file's ``chunk`` (``datas()``: their data, asked for only when a
    record is not decoded, so that a chunk decoded whole slices no record's bytes): those
    of a layout all of whose records matched, decoded together with ``decode``; the other
    matched ones parsed; the rest as their data. When every record was decoded (each
    length's records with their layout), the batch's records as they are
    (:class:`DecodedBatch`)."""
    decoded: list[tuple[np.ndarray, list[dict[str, Any]]]] = []
    parsed = []
    for part in chunk.parts:
        if decode is not None and bool(part.match.all()):
            records = decode(part.columns, len(part.chosen))
            if records is not None:
                decoded.append((part.chosen, records))
                continue
        parsed.append(part)
    if not parsed and sum(len(chosen) for chosen, _ in decoded) == chunk.count:
        if len(decoded) == 1:  # one layout: its records are the batch's, in order
            return DecodedBatch(decoded[0][1])
        every: list[Any] = [None] * chunk.count
        for chosen, records in decoded:
            list(map(every.__setitem__, chosen.tolist(), records))  # each in its place, in C
        return DecodedBatch(every)
    out: list[Any] = list(datas())
    for part in parsed:
        for position, example in part.examples():
            out[position] = example
    for chosen, records in decoded:
        for position, record in zip(chosen.tolist(), records, strict=True):
            out[position] = DecodedRecord(record)
    return out


def _data(buffers: list[mmap.mmap], offsets: list[np.ndarray]) -> Iterator[bytes]:
    """The data of the records framed at ``offsets`` (one array a file), each file's
    joined, sliced as they are asked for."""
    pieces = [
        map(
            buffer.__getitem__,
            map(slice, (o[:-1] + HEADER_BYTES).tolist(), (o[1:] - FOOTER_BYTES).tolist()),
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
