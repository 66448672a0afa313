"""Where a serialized tf.train.Example's bytes go, key by key.

:func:`entry_sizes` walks the protobuf wire format of one serialized Example (without
TensorFlow and without building messages) and charges every entry of its feature map,
key and tags included, to that entry's key; what is left is the Example's and
Features' own headers. It knows nothing of schemas: :func:`recordkit.byte_breakdown`
(dataset layer) charges the keys to the fields that own them.
"""

from __future__ import annotations

import dataclasses

from recordkit.errors import CorruptRecordError

__all__ = ["EntrySizes", "entry_sizes"]

_INVALID = "not a valid tf.train.Example"


@dataclasses.dataclass(frozen=True)
class EntrySizes:
    """The bytes of one serialized Example: per feature key, and the headers around the
    entries (``framing``). Together they add up to the record's size."""

    by_key: dict[str, int]
    framing: int


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise CorruptRecordError(f"{_INVALID}: truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError(f"{_INVALID}: varint too long")


def _fields(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """The protobuf fields in ``data[start:end]`` as ``(number, field start, payload
    start, field end)``; only length-delimited payloads are located, others skipped."""
    out = []
    pos = start
    while pos < end:
        field_start = pos
        tag, pos = _varint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 2:
            length, pos = _varint(data, pos)
            payload = pos
            pos += length
        elif wire_type == 0:
            _, pos = _varint(data, pos)
            payload = pos
        elif wire_type in (1, 5):
            payload = pos
            pos += 8 if wire_type == 1 else 4
        else:
            raise CorruptRecordError(f"{_INVALID}: wire type {wire_type} at byte {field_start}")
        if pos > end:
            raise CorruptRecordError(f"{_INVALID}: field at byte {field_start} overruns")
        out.append((number if wire_type == 2 else -1, field_start, payload, pos))
    return out


def _entry_key(data: bytes, start: int, end: int) -> str:
    for number, _, payload, field_end in _fields(data, start, end):
        if number == 1:
            try:
                return data[payload:field_end].decode("utf-8")
            except UnicodeDecodeError:
                raise CorruptRecordError(f"{_INVALID}: key at byte {payload} is not UTF-8") from None
    return ""


def entry_sizes(serialized: bytes) -> EntrySizes:
    """Bytes of each feature-map entry of the serialized Example ``serialized``, by key
    (a key repeated in the map is charged for every entry), and of its headers.

    Raises :class:`~recordkit.errors.CorruptRecordError` when the bytes are not an Example.
    """
    data = bytes(serialized)
    by_key: dict[str, int] = {}
    framing = 0
    for number, start, payload, end in _fields(data, 0, len(data)):
        if number != 1:  # not Example.features: no entry of the map
            framing += end - start
            continue
        framing += payload - start
        for entry_number, entry_start, entry_payload, entry_end in _fields(data, payload, end):
            if entry_number != 1:
                framing += entry_end - entry_start
                continue
            key = _entry_key(data, entry_payload, entry_end)
            by_key[key] = by_key.get(key, 0) + entry_end - entry_start
    return EntrySizes(by_key, framing)
