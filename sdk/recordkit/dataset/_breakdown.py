"""Where a serialized record's bytes go, field by field.

:func:`byte_breakdown` charges every feature-map entry of one serialized
``tf.train.Example``, key and tags included (as measured without TensorFlow by
:func:`recordkit.format._entry_sizes.entry_sizes`), to the field that owns its key:
the codec's wire features, a sequence field's ``/lengths`` keys and an optional
field's ``/present`` flag. What belongs to no field is reported apart, so the parts always add
up to the record's size:

* ``"(framing)"``: the Example and Features headers around the entries;
* ``"(unknown)"``: entries whose key no field of the schema owns (only when there are
  some, e.g. a TFRecord written by another tool).

Field names cannot contain parentheses, so these names never clash with a field.
"""

from __future__ import annotations

from recordkit.format._entry_sizes import entry_sizes
from recordkit.schema._schema import BoundSchema, Schema

__all__ = ["FRAMING", "UNKNOWN", "byte_breakdown"]

#: Key of the bytes spent on the Example's own headers.
FRAMING = "(framing)"
#: Key of the bytes of entries that no field of the schema owns.
UNKNOWN = "(unknown)"


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
    measured = entry_sizes(serialized)
    unknown = 0
    for key, size in measured.by_key.items():
        name = owner.get(key)
        if name is None:
            unknown += size
        else:
            sizes[name] += size
    out: dict[str, int] = dict(sizes)
    out[FRAMING] = measured.framing
    if unknown:
        out[UNKNOWN] = unknown
    return out
