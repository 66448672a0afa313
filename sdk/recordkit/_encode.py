"""Records to serialized tf.train.Example bytes: the writer's hot path.

:class:`RecordEncoder` is built once per schema; encoding a record then costs one codec
``encode`` per field plus the Example framing, with no registry or plugin lookups.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pydantic

from recordkit._example import (
    encode_example,
    encode_feature,
    encode_single_bytes_feature,
    entry_size,
    normalize_values,
)
from recordkit._schema import BoundField, BoundSchema, KeyedFeature, read_only_reason
from recordkit._wire import WireKind
from recordkit.errors import InvalidValueError, RecordError, RecordkitError, SchemaError

__all__ = ["EncodedRecord", "RecordEncoder"]

_PRESENT = encode_feature(WireKind.INT64, np.ones(1, dtype=np.int64))


@dataclasses.dataclass(frozen=True)
class EncodedRecord:
    """A record's serialized Example, with each field's share of the bytes."""

    data: bytes
    field_bytes: Mapping[str, int]


def record_items(record: Any) -> Mapping[str, Any]:
    """A record as a mapping of field name to value (dicts and Record models alike)."""
    if isinstance(record, Mapping):
        return record
    if isinstance(record, pydantic.BaseModel):
        return {name: getattr(record, name) for name in type(record).model_fields}
    raise RecordError(f"a record must be a mapping or a Record, not {type(record).__name__}")


class RecordEncoder:
    """Validates records against a bound schema and serializes them."""

    def __init__(self, bound: BoundSchema) -> None:
        reason = read_only_reason(bound)
        if reason is not None:
            raise SchemaError(reason)
        self.bound = bound
        self._names = frozenset(f.name for f in bound.fields)
        self._related = [f for f in bound.fields if f.codec.related_fields()]

    def encode(self, record: Any, index: int | str | None = None) -> bytes:
        """The serialized Example of ``record``; raises RecordError naming the record."""
        return self.encode_with_sizes(record, index, sizes=False).data

    def encode_with_sizes(
        self, record: Any, index: int | str | None = None, *, sizes: bool = True
    ) -> EncodedRecord:
        """Like :meth:`encode`, also counting each field's serialized bytes."""
        items = record_items(record)
        errors: list[RecordkitError] = []
        unknown = [name for name in items if name not in self._names]
        for name in unknown:
            errors.append(RecordError("not a field of the schema", field=name, record=index))
        parts: list[tuple[bytes, bytes]] = []
        field_bytes: dict[str, int] = {}
        wires: dict[str, Mapping[str, Any]] = {}
        for field in self.bound.fields:
            start = len(parts)
            try:
                wire = self._encode_field(field, items, parts)
            except RecordkitError as exc:
                errors.append(exc.with_context(field=field.name, record=index))
                continue
            if wire is not None:
                wires[field.name] = wire
            if sizes:
                field_bytes[field.name] = sum(entry_size(key, feature) for key, feature in parts[start:])
        for field in self._related:
            if field.name not in wires:
                continue
            related = {name: wires[name] for name in field.codec.related_fields() if name in wires}
            try:
                field.codec.check_related(wires[field.name], related)
            except RecordkitError as exc:
                errors.append(exc.with_context(field=field.name, record=index))
        if errors:
            raise _combine(errors, index)
        return EncodedRecord(encode_example(parts), field_bytes)

    def _encode_field(
        self, field: BoundField, items: Mapping[str, Any], parts: list[tuple[bytes, bytes]]
    ) -> Mapping[str, Any] | None:
        value = items.get(field.name)
        if value is None:
            if field.spec.optional:
                return None
            if field.spec.has_default:
                value = field.spec.default
            else:
                raise RecordError("missing (the field is neither optional nor has a default)")
        if field.spec.sequence:
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise InvalidValueError(f"a sequence field takes a list, not {type(value).__name__}")
            elements = [_call_encode(field, element, i) for i, element in enumerate(value)]
            for keyed in field.features:
                self._append_sequence(keyed, elements, parts)
            wire: Mapping[str, Any] = elements[0] if len(elements) == 1 else {}
        else:
            wire = _call_encode(field, value, None)
            for keyed in field.features:
                single = wire[keyed.feature.name]
                feature = keyed.feature
                if type(single) is bytes and feature.kind is WireKind.BYTES and feature.shape == ():
                    parts.append((keyed.key_bytes, encode_single_bytes_feature(single)))
                    continue
                values = _normalize(keyed, wire)
                _check_size(keyed, values)
                parts.append((keyed.key_bytes, encode_feature(keyed.feature.kind, values)))
        if field.presence_key is not None:
            parts.append((field.presence_key.encode(), _PRESENT))
        return wire

    @staticmethod
    def _append_sequence(
        keyed: KeyedFeature, elements: list[Mapping[str, Any]], parts: list[tuple[bytes, bytes]]
    ) -> None:
        chunks = []
        lengths = []
        for i, wire in enumerate(elements):
            try:
                values = _normalize(keyed, wire)
                _check_size(keyed, values)
            except RecordkitError as exc:
                raise exc.with_context(field=f"[{i}]") from None
            chunks.append(values)
            inner = max(keyed.feature.fixed_size if keyed.feature.is_fixed else keyed.feature.inner_size, 1)
            lengths.append(len(values) // inner)
        kind = keyed.feature.kind
        if kind is WireKind.BYTES:
            joined: Any = [b for chunk in chunks for b in chunk]
        else:
            joined = np.concatenate(chunks) if chunks else np.zeros(0, kind.numpy_dtype)
        parts.append((keyed.key_bytes, encode_feature(kind, joined)))
        if keyed.lengths_key is not None:
            parts.append(
                (keyed.lengths_key.encode(), encode_feature(WireKind.INT64, np.asarray(lengths, np.int64)))
            )


def _call_encode(field: BoundField, value: Any, element: int | None) -> Mapping[str, Any]:
    try:
        wire = field.codec.encode(value)
    except RecordkitError as exc:
        if element is not None:
            exc.with_context(field=f"{field.name}[{element}]")
        raise
    except Exception as exc:  # a codec bug or an unexpected value type: keep the context
        where = f"{field.name}[{element}]" if element is not None else None
        raise InvalidValueError(
            f"codec {field.codec.name!r} failed: {type(exc).__name__}: {exc}", field=where
        ) from exc
    missing = [k.feature.name for k in field.features if k.feature.name not in wire]
    if missing:
        raise InvalidValueError(f"codec {field.codec.name!r} returned no value for wire features {missing}")
    return wire


def _normalize(keyed: KeyedFeature, wire: Mapping[str, Any]) -> Any:
    try:
        return normalize_values(keyed.feature.kind, wire[keyed.feature.name])
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"wire feature {keyed.feature.name!r}: {exc}") from None


def _check_size(keyed: KeyedFeature, values: Any) -> None:
    feature = keyed.feature
    if feature.is_fixed:
        if len(values) != feature.fixed_size:
            raise InvalidValueError(
                f"wire feature {feature.name!r} holds {len(values)} values, its shape "
                f"{feature.shape} needs {feature.fixed_size}"
            )
    elif len(values) % max(feature.inner_size, 1):
        raise InvalidValueError(
            f"wire feature {feature.name!r} holds {len(values)} values, not a multiple of "
            f"its inner shape {feature.inner_shape}"
        )


def _combine(errors: list[RecordkitError], index: int | str | None) -> RecordkitError:
    if len(errors) == 1:
        return errors[0]
    listing = "".join(f"\n  - {e}" for e in errors)
    return RecordError(f"{len(errors)} invalid fields:{listing}", errors=errors, record=index)
