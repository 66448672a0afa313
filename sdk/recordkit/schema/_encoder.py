"""Records to serialized tf.train.Example bytes: the writer's hot path.

:class:`RecordEncoder` is built once per schema; encoding a record then costs one codec
``encode`` per field plus the Example framing, with no registry or plugin lookups.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pydantic

from recordkit._suggest import did_you_mean
from recordkit.codec._capabilities import Raster
from recordkit.codec._wire import WireKind
from recordkit.errors import InvalidValueError, RecordError, RecordkitError
from recordkit.format._entry_sizes import entry_sizes
from recordkit.format._example import (
    array_entry,
    encode_entry,
    encode_feature,
    encode_float_scalar_feature,
    encode_int64_scalar_entry,
    example_pieces,
    join_entries,
    normalize_values,
    payload_entry_head,
)
from recordkit.format._tfrecord import frame_pieces
from recordkit.schema._bound import BoundField, HasFields, KeyedFeature
from recordkit.schema._foreign_write import WrittenKeys, append_foreign, is_foreign, shared_keys

__all__ = ["EncodedRecord", "RecordEncoder", "SidesSeen"]

#: The sides of the pictures a writer has encoded: picture field name to ``[min_height,
#: max_height, min_width, max_width, full_size_only]`` (the last 1 when a picture decodes
#: at full size only: :meth:`~recordkit.Raster.decodes_scaled`), as
#: :meth:`RecordEncoder.encode_pieces` gathers them and the manifest records them
#: (:mod:`recordkit.dataset._picture_sizes`).
SidesSeen = dict[str, list[int]]

_PRESENT = encode_feature(WireKind.INT64, np.ones(1, dtype=np.int64))


@dataclasses.dataclass(frozen=True)
class EncodedRecord:
    """A record's serialized Example, with each field's share of the bytes: what the
    deprecated :meth:`RecordEncoder.encode_with_sizes` returns."""

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

    def __init__(self, bound: HasFields, elsewhere: Mapping[str, str] | None = None) -> None:
        """``elsewhere``: why a field the schema does not store is refused, by name, where
        it says more than "not a field of the schema" (a field stored by another split's
        field group)."""
        self.bound = bound
        self._names = frozenset(f.name for f in bound.fields)
        self._elsewhere = dict(elsewhere or {})
        self._related = [f for f in bound.fields if f.codec.related_fields()]
        shared = shared_keys(bound)
        self._field_encoders = tuple(_FieldEncoder.build(f, shared) for f in bound.fields)
        #: Whether a field writes another tool's layout (column keys, constants, shared
        #: keys): each record then tracks the shared keys it has written.
        self._foreign = any(is_foreign(k, shared) for f in bound.fields for k in f.features)
        #: The picture fields (one picture a record) whose height and width the wire
        #: holds: (field, codec, height feature, width feature).
        self._sized = tuple(
            (f.name, f.codec, *f.codec.size_features)
            for f in bound.fields
            if isinstance(f.codec, Raster) and f.codec.size_features is not None and not f.spec.sequence
        )
        #: The fields whose wire values a record's checks keep: those checked against
        #: others and the fields they name; with the pictures whose sides are noted too.
        self._kept = frozenset(name for f in self._related for name in (f.name, *f.codec.related_fields()))
        self._kept_with_sides = self._kept | {name for name, *_ in self._sized}

    def encode(self, record: Any, index: int | str | None = None, seen: SidesSeen | None = None) -> bytes:
        """The serialized Example of ``record``; raises RecordError naming the record.
        With ``seen``, the sides of the record's pictures are added to it."""
        return b"".join(join_entries(self._entries(record, index, seen)))

    def encode_framed(
        self, record: Any, index: int | str | None = None, seen: SidesSeen | None = None
    ) -> bytes:
        """The serialized Example of ``record`` with its TFRecord framing, ready to be
        appended to a shard (what worker processes send back: payloads copied once).
        With ``seen``, the sides of the record's pictures are added to it."""
        return frame_pieces(*self.encode_pieces(record, index, seen))

    def encode_pieces(
        self, record: Any, index: int | str | None = None, seen: SidesSeen | None = None
    ) -> tuple[list[bytes], int]:
        """The serialized Example of ``record`` as pieces, not joined, and its size: the
        writer frames them straight into its shard chunk (payloads are copied once).
        With ``seen``, the sides of the record's pictures are added to it."""
        return example_pieces(self._entries(record, index, seen))

    def encode_with_sizes(self, record: Any, index: int | str | None = None) -> EncodedRecord:
        """Deprecated: use :meth:`encode`, then :func:`recordkit.byte_breakdown` on the
        bytes (the one way to see where a record's bytes go, written or read back)."""
        warnings.warn(
            "RecordEncoder.encode_with_sizes is deprecated: call encode(), then "
            "recordkit.byte_breakdown(schema, data) for each field's share of the bytes",
            DeprecationWarning,
            stacklevel=2,
        )
        data = self.encode(record, index)
        by_key = entry_sizes(data).by_key
        field_bytes = {f.name: sum(by_key.get(key, 0) for key in f.keys) for f in self.bound.fields}
        return EncodedRecord(data, field_bytes)

    def _entries(self, record: Any, index: int | str | None, seen: SidesSeen | None = None) -> list[bytes]:
        """The pieces of every field's Example map entries; all of the record's errors
        raised as one. With ``seen``, the sides of the record's pictures are added to it."""
        try:
            items = record if type(record) is dict else record_items(record)
        except RecordError as exc:
            raise exc.with_context(record=index) from None
        errors: list[RecordkitError] = []
        if len(items) > len(self._names) or not self._names.issuperset(items):
            for name in items:
                if name not in self._names:
                    hint = did_you_mean(name, self._names).strip()
                    reason = f"not a field of the schema ({hint})" if hint else "not a field of the schema"
                    reason = self._elsewhere.get(name, reason)
                    errors.append(RecordError(reason, field=name, record=index))
        entries: list[bytes] = []
        written: WrittenKeys | None = {} if self._foreign else None
        wires: dict[str, Mapping[str, Any]] = {}
        # Only fields checked against others, and the pictures whose sides are noted, need them.
        note_sides = seen is not None and bool(self._sized)
        kept = self._kept_with_sides if note_sides else self._kept
        for field_encoder in self._field_encoders:
            name = field_encoder.name
            try:
                wire = field_encoder.encode_into(items.get(name), entries, written)
            except RecordkitError as exc:
                errors.append(exc.with_context(field=name, record=index))
                continue
            if wire is not None and name in kept:
                wires[name] = wire
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
        if note_sides:
            assert seen is not None
            _note_sides(seen, self._sized, wires)
        return entries


def _note_sides(
    seen: SidesSeen, sized: tuple[tuple[str, Raster, str, str], ...], wires: dict[str, Mapping[str, Any]]
) -> None:
    """Add the height and width of each picture in ``wires`` (those whose wire holds
    them) to ``seen``."""
    for name, codec, height_key, width_key in sized:
        wire = wires.get(name)
        if wire is None or height_key not in wire or width_key not in wire:
            continue
        height, width = wire[height_key], wire[width_key]
        if type(height) is not int or type(width) is not int:  # what codecs return, else converted
            try:
                height, width = int(height), int(width)
            except (TypeError, ValueError):
                continue
        sides = seen.get(name)
        if sides is None:
            seen[name] = [height, height, width, width, 0 if codec.decodes_scaled(wire) else 1]
            continue
        if not sides[4] and not codec.decodes_scaled(wire):  # once one is, the field is marked
            sides[4] = 1
        if height < sides[0]:
            sides[0] = height
        if height > sides[1]:
            sides[1] = height
        if width < sides[2]:
            sides[2] = width
        if width > sides[3]:
            sides[3] = width


#: A field's default when it has none (a default may be None itself).
_NO_DEFAULT: Any = object()


@dataclasses.dataclass(frozen=True)
class _FieldEncoder:
    """What encoding one field needs, looked up once per schema rather than per record:
    the codec's bound ``encode``, the presence entry, and per wire feature its name,
    encoded key, kind and whether it holds a single value (the fast paths)."""

    field: BoundField
    name: str
    encode: Callable[[Any], Mapping[str, Any]]
    optional: bool
    default: Any
    sequence: bool
    #: Per wire feature: its name, encoded key, kind, whether it holds a single value
    #: (the fast paths), the keyed feature, and whether it is written another tool's way.
    features: tuple[tuple[str, bytes, WireKind, bool, KeyedFeature, bool], ...]
    presence_entry: bytes | None

    @classmethod
    def build(cls, field: BoundField, shared: frozenset[str] = frozenset()) -> _FieldEncoder:
        spec = field.spec
        features = tuple(
            (
                keyed.feature.name,
                keyed.key_bytes,
                keyed.feature.kind,
                keyed.feature.shape == () and not is_foreign(keyed, shared),
                keyed,
                is_foreign(keyed, shared),
            )
            for keyed in field.features
        )
        presence = None if field.presence_key is None else encode_entry(field.presence_key.encode(), _PRESENT)
        return cls(
            field=field,
            name=field.name,
            encode=field.codec.encode,
            optional=spec.optional,
            default=spec.default if spec.has_default else _NO_DEFAULT,
            sequence=spec.sequence,
            features=features,
            presence_entry=presence,
        )

    def encode_into(
        self, value: Any, entries: list[bytes], written: WrittenKeys | None = None
    ) -> Mapping[str, Any] | None:
        """Append the field's Example entries for ``value``; its wire values (None when
        an optional field is absent). ``written``: the shared keys this record has written
        so far (None when the schema writes no other tool's layout). Raises
        RecordkitError without the field's context."""
        if value is None:
            if self.optional:
                return None
            if self.default is _NO_DEFAULT:
                raise RecordError("missing (the field is neither optional nor has a default)")
            value = self.default
        try:
            if self.sequence:
                wire = self._encode_sequence(value, entries)
            else:
                try:  # what _encode_value does, inlined: this runs for every field of every record
                    wire = self.encode(value)
                except RecordkitError:
                    raise
                except Exception as exc:
                    raise self._failure(exc) from exc
                for name, key, kind, single, keyed, foreign in self.features:
                    feature_value = wire[name]
                    if single:  # fast paths for the commonest values
                        value_type = type(feature_value)
                        if value_type is bytes and kind is WireKind.BYTES:
                            entries.append(payload_entry_head(key, len(feature_value)))
                            entries.append(feature_value)  # the payload, uncopied
                            continue
                        if value_type is int and kind is WireKind.INT64:
                            try:  # what _int64_scalar does, inlined (five a mixed record)
                                entries.append(encode_int64_scalar_entry(key, feature_value))
                            except ValueError as exc:
                                raise InvalidValueError(f"wire feature {name!r}: {exc}") from None
                            continue
                    if foreign and written is not None:
                        append_foreign(self.name, keyed, feature_value, entries, written)
                        continue
                    _append_general(keyed, feature_value, entries)
        except KeyError as exc:  # only the wire lookups raise it: codec errors are wrapped
            raise InvalidValueError(
                f"codec {self.field.codec.name!r} returned no value for its wire feature {exc.args[0]!r}"
            ) from None
        if self.presence_entry is not None:
            entries.append(self.presence_entry)
        return wire

    def _encode_value(self, value: Any, element: int | None = None) -> Mapping[str, Any]:
        """The codec's encode of ``value`` (of element ``element`` of a sequence field,
        which errors then name); a crash of the codec becomes an InvalidValueError."""
        where = None if element is None else f"{self.name}[{element}]"
        try:
            return self.encode(value)
        except RecordkitError as exc:
            if where is not None:
                exc.with_context(field=where)
            raise
        except Exception as exc:  # a codec bug or an unexpected value type: keep the context
            raise self._failure(exc, where) from exc

    def _failure(self, exc: Exception, where: str | None = None) -> InvalidValueError:
        """The error for a codec that crashed on a value (of element ``where``)."""
        reason = f"codec {self.field.codec.name!r} failed: {type(exc).__name__}: {exc}"
        return InvalidValueError(reason, field=where)

    def _encode_sequence(self, value: Any, entries: list[bytes]) -> Mapping[str, Any]:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise InvalidValueError(f"a sequence field takes a list, not {type(value).__name__}")
        elements: list[Mapping[str, Any]] = []
        errors: list[RecordkitError] = []
        for i, element in enumerate(value):  # every bad element is reported, not the first
            try:
                elements.append(self._encode_value(element, i))
            except RecordkitError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise RecordError(f"{len(errors)} invalid elements:{_listing(errors)}", errors=errors)
        for keyed in self.field.features:
            _append_sequence(keyed, elements, entries)
        return elements[0] if len(elements) == 1 else {}


def _append_general(keyed: KeyedFeature, value: Any, entries: list[bytes]) -> None:
    """The entry of one feature of a (non-sequence) field, for any value it accepts."""
    feature = keyed.feature
    if (
        type(value) is np.ndarray
        and value.size
        and feature.kind is not WireKind.BYTES
        and value.dtype == feature.kind.numpy_dtype
    ):
        # Already in the stored type (what codecs give for boxes and label lists).
        values = value.ravel()  # reshape(-1), at a third of its cost
        _check_size(keyed, values)
        entries.append(array_entry(keyed.key_bytes, feature.kind, values))
        return
    if feature.kind is WireKind.FLOAT and type(value) is float and feature.shape == ():
        try:
            entries.append(encode_entry(keyed.key_bytes, encode_float_scalar_feature(value)))
            return
        except OverflowError:
            pass  # beyond float32: the general path below stores what numpy makes of it
    values = _normalize(keyed, value)
    _check_size(keyed, values)
    entries.append(encode_entry(keyed.key_bytes, encode_feature(feature.kind, values)))


def _append_sequence(keyed: KeyedFeature, elements: list[Mapping[str, Any]], entries: list[bytes]) -> None:
    """The entries of one feature of a sequence field: every element's values
    concatenated, and their lengths when the feature is variable."""
    chunks = []
    lengths = []
    for i, wire in enumerate(elements):
        try:
            values = _normalize(keyed, wire[keyed.feature.name])
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
    entries.append(encode_entry(keyed.key_bytes, encode_feature(kind, joined)))
    if keyed.lengths_key is not None:
        lengths_feature = encode_feature(WireKind.INT64, np.asarray(lengths, np.int64))
        entries.append(encode_entry(keyed.lengths_key.encode(), lengths_feature))


def _normalize(keyed: KeyedFeature, value: Any) -> Any:
    try:
        return normalize_values(keyed.feature.kind, value)
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
    return RecordError(f"{len(errors)} invalid fields:{_listing(errors)}", errors=errors, record=index)


def _listing(errors: list[RecordkitError]) -> str:
    """One indented line per error; an error's own listing is indented under it."""
    return "".join("\n  - " + str(e).replace("\n", "\n  ") for e in errors)
