"""Where a serialized record's bytes go, field by field.

:func:`byte_breakdown` walks the protobuf wire format of one serialized
``tf.train.Example`` (without TensorFlow and without building messages) and charges
every map entry, key and tags included, to the field that owns its key: the codec's
wire features, a sequence field's ``/lengths`` keys and an optional field's
``/present`` flag. What belongs to no field is reported apart, so the parts always add
up to the record's size:

* ``"(framing)"``: the Example and Features headers around the entries;
* ``"(unknown)"``: entries whose key no field of the schema owns (only when there are
  some, e.g. a TFRecord written by another tool).

Field names cannot contain parentheses, so these names never clash with a field.
"""

from __future__ import annotations

from recordkit.errors import CorruptRecordError
from recordkit.schema._schema import BoundSchema, Schema

__all__ = ["FRAMING", "UNKNOWN", "byte_breakdown"]

#: Key of the bytes spent on the Example's own headers.
FRAMING = "(framing)"
#: Key of the bytes of entries that no field of the schema owns.
UNKNOWN = "(unknown)"

_INVALID = "not a valid tf.train.Example"


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


def byte_breakdown(schema: Schema | BoundSchema, serialized: bytes) -> dict[str, int]:
    """Bytes of the serialized Example ``serialized`` per field of ``schema``.

    Every field of the schema appears, in order (0 when the record does not store it,
    e.g. an absent optional field), then ``"(framing)"`` and, when some keys belong to
    no field, ``"(unknown)"``. The values add up to ``len(serialized)``. Raises
    :class:`~recordkit.errors.CorruptRecordError` when the bytes are not an Example.
    """
    bound = schema.bind() if isinstance(schema, Schema) else schema
    owner = {key: field.name for field in bound.fields for key in field.keys}
    sizes = {field.name: 0 for field in bound.fields}
    data = bytes(serialized)
    framing = 0
    unknown = 0
    for number, start, payload, end in _fields(data, 0, len(data)):
        if number != 1:  # not Example.features: nothing of ours
            framing += end - start
            continue
        framing += payload - start
        for entry_number, entry_start, entry_payload, entry_end in _fields(data, payload, end):
            if entry_number != 1:
                framing += entry_end - entry_start
                continue
            key = _entry_key(data, entry_payload, entry_end)
            name = owner.get(key)
            if name is None:
                unknown += entry_end - entry_start
            else:
                sizes[name] += entry_end - entry_start
    out: dict[str, int] = dict(sizes)
    out[FRAMING] = framing
    if unknown:
        out[UNKNOWN] = unknown
    return out
