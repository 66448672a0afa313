"""Checking a whole TFRecord file against the record offsets its index lists, at once.

:func:`~recordkit.format._tfrecord.iter_tfrecords` reads a file record by record, which
costs a few microseconds of Python a record: with small records, that is most of what
``recordkit verify`` spends, and it holds the GIL, so threads cannot share it.
:func:`framing_matches` checks the same things for a file held in memory (a ``mmap``)
whose record offsets are known: each record's length leads exactly to the next offset
and the last to the end of the file, each length CRC is right (computed for every header
at once with a table, in numpy), and each data CRC is right (one C call a record, no
other Python); a file of a few records is checked record by record in plain Python
instead, where numpy's fixed costs per step would be most of the time (verify on many
tiny shards). It answers only yes or no: a file that fails is read again with
:func:`~recordkit.format._tfrecord.iter_tfrecords`, whose errors name the record and what
is wrong.

:func:`unframe_run` does the same for the records of one read of a shard (the run of
nearby records the random-access and epoch readers fetch at once), giving their data:
the readers check a run this way instead of record by record with
:func:`~recordkit.format._tfrecord.unframe_record`, whose Python per record (a header
unpack, two CRC calls) is a large share of reading a small record. A run that fails gives
None, and the caller checks it record by record for the error that names the record.
"""

from __future__ import annotations

import functools
import itertools
import operator
import struct
from typing import Any

import google_crc32c
import numpy as np

from recordkit.format._tfrecord import (
    CRC_FIELD,
    CRC_MASK_DELTA,
    FOOTER_BYTES,
    FRAMING_BYTES,
    HEADER_BYTES,
    LENGTH_FIELD,
    masked_crc,
)

__all__ = ["framed_header", "framing_matches", "unframe_run"]


def _crc32c_table() -> np.ndarray:
    """The byte table of CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1).astype(np.uint32)
    return table


_TABLE = _crc32c_table()
#: The byte columns of a record's header (its length, then the length's CRC) and footer.
_HEADER_COLUMNS = np.arange(HEADER_BYTES)
_FOOTER_COLUMNS = np.arange(FOOTER_BYTES)


def _masked(crc: np.ndarray) -> np.ndarray:
    """TFRecord's masked CRC of each CRC in ``crc`` (uint32)."""
    crc = crc.astype(np.uint64)
    return ((((crc >> 15) | (crc << 17)) + CRC_MASK_DELTA) & 0xFFFFFFFF).astype(np.uint32)


def _length_crcs(headers: np.ndarray) -> np.ndarray:
    """The CRC-32C of each row of ``headers`` (``[n, 8]`` uint8), byte column by column."""
    crc: np.ndarray = np.full(len(headers), 0xFFFFFFFF, dtype=np.uint32)
    for column in range(headers.shape[1]):
        crc = _TABLE[(crc ^ headers[:, column]) & 0xFF] ^ (crc >> 8)
    flipped: np.ndarray = crc ^ np.uint32(0xFFFFFFFF)
    return flipped


def _gather(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes of ``data`` from each of ``starts``: an ``[n, width]`` array."""
    gathered: np.ndarray = data[starts[:, None] + np.arange(width)]
    return gathered


#: Records checked together: what the numpy steps hold is about 100 bytes a record.
_BATCH = 1 << 16


def framing_matches(buffer: Any, offsets: np.ndarray, *, whole: bool = True) -> bool:
    """Whether ``buffer`` (the bytes of an uncompressed TFRecord file, as ``bytes`` or a
    ``mmap``: sliced, it gives bytes, which the CRC takes) holds exactly the
    records that start at ``offsets`` (one more entry than records: the last is the end),
    every length and data CRC right. With ``whole`` False, the records are a run of
    ``buffer`` (a chunk of a file read a chunk at a time: they need not start at its
    first byte nor end at its last)."""
    if len(offsets) <= _FEW:  # fewer steps than numpy's for a file of a few records
        return _few_match(buffer, [int(offset) for offset in offsets], whole)
    data = np.frombuffer(buffer, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    if len(offsets) == 0 or not _spans(int(offsets[0]), int(offsets[-1]), len(data), whole):
        return False
    return all(
        _batch_matches(data, buffer, offsets[first : first + _BATCH + 1])
        for first in range(0, len(offsets) - 1, _BATCH)
    )


#: Records up to which a file is checked record by record in plain Python: a shard of a
#: few records is checked mostly in fixed costs, which numpy's steps would dominate.
_FEW = 64


def _spans(first: int, end: int, size: int, whole: bool) -> bool:
    """Whether records from ``first`` to ``end`` may be those of a buffer of ``size``
    bytes: all of it (``whole``), or a run within it."""
    return first == 0 and end == size if whole else 0 <= first <= end <= size


def _few_match(buffer: Any, offsets: list[int], whole: bool = True) -> bool:
    """:func:`framing_matches` record by record (for a few records)."""
    if not offsets or not _spans(offsets[0], offsets[-1], len(buffer), whole):
        return False
    for start, end in itertools.pairwise(offsets):
        first = start + LENGTH_FIELD.size + CRC_FIELD.size
        if first > end:
            return False
        header = buffer[start : start + LENGTH_FIELD.size]
        (length,) = LENGTH_FIELD.unpack(header)
        if first + length + CRC_FIELD.size != end:
            return False
        if masked_crc(header) != CRC_FIELD.unpack(buffer[start + LENGTH_FIELD.size : first])[0]:
            return False
        if masked_crc(buffer[first : first + length]) != CRC_FIELD.unpack(buffer[first + length : end])[0]:
            return False
    return True


def _batch_matches(data: np.ndarray, buffer: Any, offsets: np.ndarray) -> bool:
    """:func:`framing_matches` for the records starting at ``offsets[:-1]``."""
    starts = offsets[:-1]
    if int(starts.max()) + LENGTH_FIELD.size + CRC_FIELD.size > len(data):
        return False
    headers = _gather(data, starts, LENGTH_FIELD.size)
    lengths = headers.view("<u8")[:, 0].astype(np.int64)
    # Each length leads exactly to the next record (and the last to the end of the file).
    if bool((lengths < 0).any()) or not np.array_equal(starts + lengths + 16, offsets[1:]):
        return False
    stored = _gather(data, starts + LENGTH_FIELD.size, CRC_FIELD.size).view("<u4")[:, 0]
    if not np.array_equal(_masked(_length_crcs(headers)), stored):
        return False
    firsts = starts + LENGTH_FIELD.size + CRC_FIELD.size
    ends = firsts + lengths
    footers = _gather(data, ends, CRC_FIELD.size).view("<u4")[:, 0]
    return np.array_equal(_masked(_data_crcs(data, buffer, firsts, lengths)), footers)


def _data_crcs(data: np.ndarray, buffer: Any, firsts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The CRC-32C of each record's data (``lengths`` bytes from ``firsts``, all within
    ``data``): one C call a record and no Python bytecode (map and the CRC are builtins).
    Records of one length, evenly spaced (a field group's), are given to the CRC as the
    rows of one strided view of ``data``, copying nothing; others as slices of ``buffer``
    (each a copy)."""
    count = len(firsts)
    length = int(lengths[0])
    stride = int(firsts[1] - firsts[0]) if count > 1 else length
    if stride >= length and bool((lengths == length).all()) and bool((np.diff(firsts) == stride).all()):
        rows = np.lib.stride_tricks.as_strided(
            data[int(firsts[0]) :], shape=(count, length), strides=(stride, 1), writeable=False
        )
        return np.fromiter(map(google_crc32c.value, rows), dtype=np.uint32, count=count)
    slices = map(slice, firsts.tolist(), (firsts + lengths).tolist())
    return np.fromiter(
        map(google_crc32c.value, map(buffer.__getitem__, slices)), dtype=np.uint32, count=count
    )


@functools.lru_cache(maxsize=1 << 14)
def framed_header(size: int) -> bytes:
    """The header a whole framed record of ``size`` bytes has: its data's length, then
    that length's masked CRC (what TFRecord writes; cached: records share sizes)."""
    length = LENGTH_FIELD.pack(size - FRAMING_BYTES)
    return length + CRC_FIELD.pack(masked_crc(length))


#: Data lengths whose length CRC :func:`unframe_run` looks up in a table (:func:`_length_crc_table`)
#: rather than framing a header for each record's size (records this small are the ones
#: read in runs; a run holding a longer one compares whole headers).
_TABLED_LENGTHS = 1 << 16


@functools.cache
def _length_crc_table() -> np.ndarray:
    """The masked CRC of each data length below :data:`_TABLED_LENGTHS`, as TFRecord stores it
    after the length (made on first use: 256 KiB, a few milliseconds)."""
    lengths = np.arange(_TABLED_LENGTHS, dtype="<u8").view(np.uint8).reshape(-1, LENGTH_FIELD.size)
    return _masked(_length_crcs(lengths))


def _fields(buffer: bytes, width: int) -> np.ndarray:
    """The little-endian unsigned integer of ``width`` bytes starting at each byte of
    ``buffer`` (an unaligned view, one byte apart: indexed by the positions of a batch's
    fields, it gathers them in one step, copying nothing else)."""
    view: np.ndarray = np.ndarray((len(buffer) - width + 1,), dtype=f"<u{width}", buffer=buffer, strides=(1,))
    return view


#: Runs of fewer records than this are checked and cut out record by record (in C: a header
#: framed a record, a slice a record), where the numpy steps' fixed costs would be most of
#: the time (a batch of 64 random records; a fetch of large ones).
_FEW_IN_RUN = 128


def unframe_run(
    buffer: bytes,
    starts: np.ndarray,
    sizes: np.ndarray,
    *,
    verify: bool = True,
    order: np.ndarray | None = None,
) -> list[bytes] | None:
    """The data of each record framed at ``starts`` of ``buffer`` (the bytes one read of a
    shard gave), ``sizes`` bytes each with its framing (as the shard's index gives them),
    when every record is whole, its stored length is its size less the framing, the
    length's CRC is right and (with ``verify``) so is the data's: the checks of
    :func:`~recordkit.format._tfrecord.unframe_record`, for the run at once. None when
    any record fails them (check each with ``unframe_record`` for the error naming it).
    Records may overlap or repeat (a record asked for twice). ``order``, when the caller
    knows it, is the permutation of the records that puts ``starts`` in order (worked out
    here when not given).

    The lengths, their CRCs and the footers are gathered in numpy, one step each (through
    unaligned views of the buffer, :func:`_fields`), and compared with what the sizes give
    (the length CRCs from a table of them); what runs per record is C only (the data cut
    out, :func:`_cut`, and the CRC). Fewer than :data:`_FEW_IN_RUN` records are checked
    against a header framed for each and sliced (:func:`_unframed_each`).
    """
    if len(starts) == 0:
        return []
    ends = starts + sizes
    if int(sizes.min()) < FRAMING_BYTES or int(starts.min()) < 0 or int(ends.max()) > len(buffer):
        return None
    if len(starts) < _FEW_IN_RUN:
        return _unframed_each(buffer, starts, ends, sizes, verify)
    if not _headers_match(buffer, starts, sizes):
        return None
    data_ends = ends - FOOTER_BYTES
    records = _cut(buffer, starts + HEADER_BYTES, data_ends, order)
    if verify:
        computed = np.fromiter(map(google_crc32c.value, records), dtype=np.uint32, count=len(records))
        masked = ((computed >> 15) | (computed << 17)) + np.uint32(CRC_MASK_DELTA)  # wraps as uint32
        if not bool((masked == _fields(buffer, CRC_FIELD.size)[data_ends]).all()):
            return None
    return records


def _unframed_each(
    buffer: bytes, starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, verify: bool
) -> list[bytes] | None:
    """:func:`unframe_run` for a few records (within ``buffer``): each header compared whole
    with the one its size gives (:func:`framed_header`, cached by size), each record
    sliced."""
    data = np.frombuffer(buffer, dtype=np.uint8)
    if data[starts[:, None] + _HEADER_COLUMNS].tobytes() != b"".join(map(framed_header, sizes.tolist())):
        return None
    data_ends = ends - FOOTER_BYTES
    records = list(map(buffer.__getitem__, map(slice, (starts + HEADER_BYTES).tolist(), data_ends.tolist())))
    if verify:
        computed = np.fromiter(map(google_crc32c.value, records), dtype=np.uint32, count=len(records))
        masked = ((computed >> 15) | (computed << 17)) + np.uint32(CRC_MASK_DELTA)  # wraps as uint32
        if masked.astype("<u4").tobytes() != data[data_ends[:, None] + _FOOTER_COLUMNS].tobytes():
            return None
    return records


def _headers_match(buffer: bytes, starts: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the header of each record framed at ``starts`` (``sizes`` bytes with its
    framing, within ``buffer``) holds the length its size gives and that length's CRC."""
    lengths = _fields(buffer, LENGTH_FIELD.size)[starts]
    expected = (sizes - FRAMING_BYTES).astype(np.uint64)
    if not bool((lengths == expected).all()):
        return False
    length_crcs = _fields(buffer, CRC_FIELD.size)[starts + LENGTH_FIELD.size]
    if int(expected.max()) < _TABLED_LENGTHS:
        return bool((length_crcs == _length_crc_table()[expected]).all())
    headers = lengths[:, None].astype("<u8").view(np.uint8)  # each length's 8 bytes
    return bool((_masked(_length_crcs(headers)) == length_crcs).all())


def _cut(buffer: bytes, firsts: np.ndarray, ends: np.ndarray, order: np.ndarray | None) -> list[bytes]:
    """Bytes ``firsts[i]`` to ``ends[i]`` of ``buffer`` for each ``i`` (records whose headers
    were checked: two that start at one place are one record, asked twice), ``order``
    the permutation that sorts ``firsts`` (None: worked out here when they are not in
    order). Unpacked in the buffer's order by one ``struct`` format (:func:`_unpacked`),
    then put in the order asked; sliced where records overlap or one of them or a gap is
    too long for the format's counts."""
    if order is None:
        if bool((firsts[1:] >= ends[:-1]).all()):  # in order, none overlapping
            read = _unpacked(buffer, firsts, ends)
            return _sliced(buffer, firsts, ends) if read is None else read
        order = np.argsort(firsts)
    sorted_firsts, sorted_ends = firsts[order], ends[order]
    fresh = np.empty(len(order), dtype=bool)
    fresh[0] = True
    np.not_equal(sorted_firsts[1:], sorted_firsts[:-1], out=fresh[1:])
    alone = bool(fresh.all())
    if not alone:  # records asked twice: unpacked once
        sorted_firsts, sorted_ends = sorted_firsts[fresh], sorted_ends[fresh]
    if not bool((sorted_firsts[1:] >= sorted_ends[:-1]).all()):  # records that overlap
        return _sliced(buffer, firsts, ends)
    read = _unpacked(buffer, sorted_firsts, sorted_ends)
    if read is None:
        return _sliced(buffer, firsts, ends)
    if len(order) == 1:
        return read
    at = np.empty(len(order), dtype=np.int64)
    at[order] = np.arange(len(order)) if alone else np.cumsum(fresh) - 1
    return list(operator.itemgetter(*at.tolist())(read))  # (of two or more: a tuple)


def _sliced(buffer: bytes, firsts: np.ndarray, ends: np.ndarray) -> list[bytes]:
    """Bytes ``firsts[i]`` to ``ends[i]`` of ``buffer`` for each ``i``, a slice each."""
    return list(map(buffer.__getitem__, map(slice, firsts.tolist(), ends.tolist())))


#: The most digits of a count in :func:`_unpacked`'s formats (ranges and gaps of 100,000
#: bytes or more are sliced).
_COUNT_DIGITS = 5


@functools.cache
def _digits(width: int) -> np.ndarray:
    """Each number below ``10 ** width`` written in ``width`` ASCII digits (leading zeros),
    one ``V{width}`` item a number (made on first use: at most 500 KB)."""
    numbers = np.arange(10**width)
    table = np.empty((10**width, width), dtype=np.uint8)
    for column in range(width - 1, -1, -1):
        table[:, column] = numbers % 10 + ord("0")
        numbers //= 10
    return table.view(f"V{width}").ravel()


def _unpacked(buffer: bytes, firsts: np.ndarray, ends: np.ndarray) -> list[bytes] | None:
    """Bytes ``firsts[i]`` to ``ends[i]`` of ``buffer`` for each ``i``, the ranges in order
    and apart, unpacked by one ``struct`` format (each gap as pad bytes, each range as a
    string: ``"<00016x00062s..."``) written in numpy from a table of digits: no Python
    step a range (a slice a range cost twice as much, for its ``slice`` object). None
    when a range or a gap is too long for the format's counts."""
    gaps = np.empty(len(firsts), dtype=np.int64)
    gaps[0] = firsts[0]
    np.subtract(firsts[1:], ends[:-1], out=gaps[1:])
    lengths = ends - firsts
    largest = max(int(gaps.max()), int(lengths.max()))
    if largest >= 10**_COUNT_DIGITS:
        return None
    width = len(str(largest))
    digits = _digits(width)
    code = np.dtype([("gap", f"V{width}"), ("x", "u1"), ("size", f"V{width}"), ("s", "u1")])
    codes = np.empty(len(firsts), dtype=code)
    codes["gap"] = digits[gaps]
    codes["x"] = ord("x")
    codes["size"] = digits[lengths]
    codes["s"] = ord("s")
    return list(struct.Struct(b"<" + codes.tobytes()).unpack_from(buffer))
