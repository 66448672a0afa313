"""One serialized Example to Python and numpy values, without TensorFlow."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from recordkit.codec._capabilities import column_decode
from recordkit.codec._wire import WireKind
from recordkit.errors import DecodeError, RecordkitError
from recordkit.format._batch_parse import Column, ParsedExample
from recordkit.format._example import decode_example, load_decoder
from recordkit.schema._bound import BoundField, KeyedFeature

__all__ = ["decode_columns_numpy", "decode_record_numpy", "feature_array", "preload_decoding", "wanted_keys"]

#: numpy modules the read path imports on first use (numpy loads them lazily): the epoch
#: order draws from ``numpy.random``; ``np.unique`` asks ``numpy.ma``.
_LAZY_NUMPY = ("numpy.random", "numpy.ma")


def preload_decoding() -> None:
    """Import now what reading and decoding the first record import on first use:
    protobuf's Example class and numpy's lazily loaded modules. A DataLoader worker forked
    afterwards inherits them, instead of each worker importing them again at its first
    batch, every epoch."""
    load_decoder()
    for module in _LAZY_NUMPY:
        importlib.import_module(module)


def _values(keyed: KeyedFeature, parsed: dict[str, tuple[WireKind, Any]], ragged: bool = False) -> Any:
    """A feature's values; a missing key of a ``ragged`` feature (variable, or in a
    sequence field) holds none, as TensorFlow's parse has it."""
    if keyed.constant is not None:  # a foreign layout's constant: not stored
        return np.full(keyed.feature.fixed_size, keyed.constant, dtype=keyed.feature.kind.numpy_dtype)
    if keyed.columns:  # a foreign layout's columns, one key each: interleave them
        keys = [key for key in keyed.columns if isinstance(key, str)]
        stored = {key: _key_values(keyed, key, parsed, ragged) for key in keys}
        if len({len(column) for column in stored.values()}) > 1:
            counts = ", ".join(f"{key!r}: {len(c)}" for key, c in stored.items())
            raise DecodeError(f"column keys hold different numbers of values ({counts})")
        rows = len(stored[keys[0]])
        columns = [  # a number is a column the records do not store: that constant in every row
            stored[key] if isinstance(key, str) else np.full(rows, key, keyed.feature.kind.numpy_dtype)
            for key in keyed.columns
        ]
        if keyed.feature.kind is WireKind.BYTES:
            return [value for row in zip(*columns, strict=True) for value in row]
        return np.stack(columns, axis=-1).reshape(-1)
    return _key_values(keyed, keyed.key, parsed, ragged)


def _key_values(keyed: KeyedFeature, key: str, parsed: dict[str, tuple[WireKind, Any]], ragged: bool) -> Any:
    kind, values = parsed.get(key, (keyed.feature.kind, None))
    if values is None and ragged:
        values = []
    if values is None:
        raise DecodeError(f"Example key {key!r} is missing")
    if kind is not keyed.feature.kind and len(values):
        expected = keyed.feature.kind.value
        raise DecodeError(f"Example key {key!r} holds {kind.value}, expected {expected}")
    if keyed.feature.kind is WireKind.BYTES:
        return list(values)
    return np.asarray(values, dtype=keyed.feature.kind.numpy_dtype)


def _shape_one(keyed: KeyedFeature, values: Any) -> Any:
    """Give one element's values their wire shape (the form decode_numpy takes)."""
    feature = keyed.feature
    if feature.kind is WireKind.BYTES:
        if feature.shape == ():
            if len(values) != 1:
                raise DecodeError(f"Example key {keyed.key!r} holds {len(values)} values, expected 1")
            return values[0]
        return values
    if feature.is_fixed:
        if values.size != feature.fixed_size:
            raise DecodeError(
                f"Example key {keyed.key!r} holds {values.size} values, "
                f"shape {feature.shape} needs {feature.fixed_size}"
            )
        return values.reshape(feature.shape)
    return values.reshape((-1, *feature.inner_shape))


def _split(keyed: KeyedFeature, values: Any, lengths: Sequence[int] | None, count: int | None) -> list[Any]:
    feature = keyed.feature
    if feature.is_fixed:
        size = feature.fixed_size
        pieces = [values[i * size : (i + 1) * size] for i in range(len(values) // max(size, 1))]
    else:
        assert lengths is not None
        inner = int(np.prod(feature.inner_shape)) if feature.inner_shape else 1
        pieces, start = [], 0
        for n in lengths:
            pieces.append(values[start : start + n * inner])
            start += n * inner
    if count is not None and len(pieces) != count:
        raise DecodeError(f"Example key {keyed.key!r} holds {len(pieces)} elements, expected {count}")
    return [_shape_one(keyed, p) for p in pieces]


def _own_keys_wire(field: BoundField, parsed: dict[str, tuple[WireKind, Any]]) -> dict[str, Any] | None:
    """A plain field's wire values when each of its features is stored under a key of
    its own, present, with values of its declared kind (every record recordkit writes);
    None for anything else (a missing key, another kind, a foreign layout's columns or
    constants), which :func:`_values` then decodes or reports.

    Why: the general way asks several questions of every feature of every record; this
    one asks only these, and the numpy reader's threads spend less time holding the GIL.
    The values are the same: :func:`~recordkit.format._example.decode_example` already
    gives each kind's own type (a list of bytes, an int64 or float32 array).
    """
    wire: dict[str, Any] = {}
    for keyed in field.features:
        stored = parsed.get(keyed.key) if not keyed.columns and keyed.constant is None else None
        if stored is None or stored[0] is not keyed.feature.kind:
            return None
        wire[keyed.feature.name] = _shape_one(keyed, stored[1])
    return wire


def decode_field_numpy(
    field: BoundField,
    parsed: dict[str, tuple[WireKind, Any]],
    decode: Callable[[Mapping[str, Any]], Any] | None = None,
) -> Any:
    """Decode one field of a parsed Example; ``None`` for an absent optional field.
    ``decode`` replaces the codec's ``decode_numpy`` (for each element of a sequence field)."""
    if field.presence_key is not None:
        _, present = parsed.get(field.presence_key, (WireKind.INT64, np.zeros(0)))
        if not (len(present) and int(present[0])):
            return None
    if not field.spec.sequence:
        wire = _own_keys_wire(field, parsed)
        if wire is None:
            wire = {
                k.feature.name: _shape_one(k, _values(k, parsed, ragged=not k.feature.is_fixed))
                for k in field.features
            }
        return field.codec.decode_numpy(wire) if decode is None else decode(wire)
    columns: dict[str, list[Any]] = {}
    count: int | None = None
    for keyed in field.features:
        lengths = None
        if keyed.lengths_key is not None:
            _, lengths = parsed.get(keyed.lengths_key, (WireKind.INT64, np.zeros(0, np.int64)))
            lengths = [int(n) for n in lengths]
        columns[keyed.feature.name] = _split(keyed, _values(keyed, parsed, ragged=True), lengths, count)
        count = len(columns[keyed.feature.name])
    decode_one = field.codec.decode_numpy if decode is None else decode
    return [decode_one({name: column[i] for name, column in columns.items()}) for i in range(count or 0)]


def decode_record_numpy(
    fields: Sequence[BoundField],
    data: bytes | ParsedExample,
    *,
    index: int | str | None = None,
    decoders: Mapping[str, Callable[[Mapping[str, Any]], Any]] | None = None,
    keys: Collection[str] | None = None,
) -> dict[str, Any]:
    """Decode the ``fields`` of one serialized Example (or one already parsed, for the
    fields' keys at least) to Python/numpy values; a field named in ``decoders`` decoded
    by its function there (a picture decoded at a scale,
    :class:`~recordkit.read._numpy_geometry.GeometryPlan`). ``keys``, the fields' Example
    keys (:func:`wanted_keys`, made once by a reader of many records), lets a projection
    convert only what it reads."""
    if isinstance(data, dict):
        parsed = data
    else:
        try:
            parsed = decode_example(data, keys)
        except ValueError as exc:
            raise DecodeError(str(exc), record=index) from None
    out: dict[str, Any] = {}
    for field in fields:
        try:
            out[field.name] = decode_field_numpy(field, parsed, (decoders or {}).get(field.name))
        except RecordkitError as exc:
            raise exc.with_context(field=field.name, record=index) from None
        except Exception as exc:
            raise DecodeError(
                f"codec {field.codec.name!r} failed: {type(exc).__name__}: {exc}",
                field=field.name,
                record=index,
            ) from exc
    return out


def wanted_keys(fields: Sequence[BoundField]) -> frozenset[str]:
    """Every Example key that decoding ``fields`` looks at (see :func:`decode_record_numpy`)."""
    return frozenset(key for field in fields for key in field.keys)


def decode_columns_numpy(
    fields: Sequence[BoundField], columns: Mapping[str, Column], count: int
) -> list[dict[str, Any]] | None:
    """Decode the ``fields`` of ``count`` records parsed together into columns (records
    of one layout, :attr:`~recordkit.format._batch_parse.ParsedChunk.columns`): each
    record's wire values sliced from the columns in a few steps per field, then the codec's
    ``decode_numpy`` for each; the values are those :func:`decode_record_numpy` gives.
    None when a field is not a plain one whose keys the columns hold in its declared kind
    and fixed size, or when a codec fails on one of the records: those records are then
    decoded one by one, whose errors name the record."""
    decoded: list[list[Any]] = []
    for field in fields:
        values = _field_column(field, columns, count)
        if values is None:
            return None
        decoded.append(values)
    return _rows_of([field.name for field in fields], decoded, count)


def _rows_of(names: Sequence[str], columns: Sequence[Sequence[Any]], count: int) -> list[dict[str, Any]]:
    """Each of ``count`` records' ``{name: value}`` from one column of ``count`` values a
    name (none: an empty dict a record). A dict display a record holds the first name's
    value, then each other name's values are set in a loop: a fifth of the CPU of
    ``dict(zip(names, row))`` a record, which the reads of small records paid as much as
    their parse."""
    if not names:
        return [{} for _ in range(count)]
    first, *others = names
    rows = [{first: value} for value in columns[0]]
    for name, column in zip(others, columns[1:], strict=True):
        for row, value in zip(rows, column, strict=True):
            row[name] = value
    return rows


def _field_column(field: BoundField, columns: Mapping[str, Column], count: int) -> list[Any] | None:
    """One field's values for every record of ``columns``, or None (see
    :func:`decode_columns_numpy`)."""
    if field.spec.sequence:
        return None
    if field.presence_key is not None:
        kind, present = columns.get(field.presence_key, (WireKind.INT64, None))
        if present is None or kind is not WireKind.INT64 or present.shape[1] == 0:
            return [None] * count if present is None else None
        flags = present[:, 0] != 0
        if not flags.any():
            return [None] * count
        if not flags.all():
            return None
    in_columns = _decoded_in_columns(field, columns, count)
    if in_columns is not None:
        return in_columns
    wires: list[list[Any]] = []
    for keyed in field.features:
        wire = _feature_column(keyed, columns, count)
        if wire is None:
            return None
        wires.append(wire)
    names = [keyed.feature.name for keyed in field.features]
    decode = field.codec.decode_numpy
    try:
        return [decode(wire) for wire in _rows_of(names, wires, count)]
    except Exception:  # decoded again one by one, which names the record and the error
        return None


def _decoded_in_columns(field: BoundField, columns: Mapping[str, Column], count: int) -> list[Any] | None:
    """The field's values by its codec's :meth:`~recordkit.DecodedInColumns.decode_numpy_column`,
    or None: no such hook, a feature without a column form, or the hook declined or
    refused a value (the records are then decoded one by one, and the record's own error
    is given).

    A refused value is one of :data:`COLUMN_REFUSALS`, what a codec raises for a bad
    value. Any other exception (a ``TypeError``, a ``KeyError``) is a fault of the hook
    itself: it stops the read with a :class:`~recordkit.errors.DecodeError` naming the
    codec and the field, instead of the read going on one record at a time without a word
    (the same records, decoded another way than the codec's own test kit checked)."""
    decode = column_decode(field.codec)
    if decode is None:
        return None
    wire: dict[str, Any] = {}
    for keyed in field.features:
        column = feature_array(keyed, columns, count)
        if column is None:
            return None
        wire[keyed.feature.name] = column
    try:
        values = decode(wire, count)
    except COLUMN_REFUSALS:  # decoded again one by one, which names the record and the error
        return None
    except Exception as exc:
        raise DecodeError(
            f"codec {field.codec.name!r} failed in decode_numpy_column for {count} records: "
            f"{type(exc).__name__}: {exc}",
            field=field.name,
        ) from exc
    return None if values is None or len(values) != count else list(values)


#: What a codec's :meth:`~recordkit.DecodedInColumns.decode_numpy_column` raises for a value
#: it refuses (the errors of the plugin guide's codecs: recordkit's own, ``ValueError``,
#: and numpy's ``OverflowError`` and the like).
COLUMN_REFUSALS = (RecordkitError, ValueError, ArithmeticError)


def feature_array(keyed: KeyedFeature, columns: Mapping[str, Column], count: int) -> Any | None:
    """A wire feature's values for every record as one column: an array ``[count, *shape]``
    for a fixed numeric feature, a list of ``count`` bytes for a bytes feature of shape
    ``()``; None for any other (see :func:`_feature_column`)."""
    feature = keyed.feature
    values = _stored_column(keyed, columns)
    if values is None:
        return None
    if feature.kind is WireKind.BYTES:
        return values[0] if feature.shape == () and len(values) == 1 else None
    if feature.is_fixed and values.shape[1] == feature.fixed_size:
        return values.reshape(count, *feature.shape)
    return None


def _feature_column(keyed: KeyedFeature, columns: Mapping[str, Column], count: int) -> list[Any] | None:
    """A wire feature's value for each record, as :func:`_shape_one` gives it, or None."""
    feature = keyed.feature
    if feature.is_fixed and (feature.kind is not WireKind.BYTES or feature.shape == ()):
        column = feature_array(keyed, columns, count)
        if column is None or feature.kind is WireKind.BYTES:
            return column
        return [column[i, ...] for i in range(count)] if feature.shape == () else list(column)
    values = _stored_column(keyed, columns)
    if values is None:
        return None
    if feature.kind is WireKind.BYTES:
        return [list(row) for row in zip(*values, strict=True)] if values else [[] for _ in range(count)]
    if feature.inner_size == 0 or values.shape[1] % feature.inner_size:
        return None
    return list(values.reshape(count, -1, *feature.inner_shape))


def _stored_column(keyed: KeyedFeature, columns: Mapping[str, Column]) -> Any | None:
    """The column of ``keyed``'s own key in its declared kind, or None (a foreign
    layout's columns or constant, a key the records lack, another kind)."""
    if keyed.columns or keyed.constant is not None or keyed.key not in columns:
        return None
    kind, values = columns[keyed.key]
    return values if kind is keyed.feature.kind else None
