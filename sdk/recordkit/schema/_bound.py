"""Binding: a field's codec name and options resolved into a codec instance, and each of
its wire features placed under an Example key.

:func:`bind_field` is the one place a field meets its codec; :meth:`Schema.bind` binds
every field (or the ones asked for) with it and then checks what fields share.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection, Sequence
from typing import Any, Protocol

from recordkit.codec._codec import Codec
from recordkit.codec._registry import CodecRegistry
from recordkit.codec._wire import WireFeature, wire_key
from recordkit.errors import RecordkitError, SchemaError
from recordkit.schema._fields import FieldSpec

__all__ = ["BoundField", "HasFields", "KeyedFeature", "bind_field", "check_shared_keys"]


class HasFields(Protocol):
    """Anything that holds bound fields (a :class:`~recordkit.BoundSchema`)."""

    @property
    def fields(self) -> tuple[BoundField, ...]: ...


def bind_field(name: str, spec: FieldSpec, registry: CodecRegistry, version: str | None = None) -> BoundField:
    """``spec``'s codec created through ``registry`` and its features keyed; errors name
    the field (and the codec, when it is unknown, its options are wrong, or it does not
    read ``version``).

    ``version``: the version of the codec that stored the records this binding reads (a
    dataset's manifest records it); the field then gets the codec that reads them,
    :meth:`~recordkit.Codec.for_stored_version`. None: the installed codec as it is (to
    write, or to read records stored by the installed version). A field that maps its
    keys gets :meth:`~recordkit.Codec.for_mapped_keys` first.
    """
    try:
        codec = registry.create(spec.codec, spec.options)
        if spec.keys:
            codec = codec.for_mapped_keys(spec.keys)
        if version is not None:
            codec = codec.for_stored_version(version)
    except RecordkitError as exc:
        raise exc.with_context(field=name, codec=spec.codec) from None
    return BoundField.build(name, spec, codec)


def check_shared_keys(bound: Sequence[BoundField], all_names: Collection[str]) -> None:
    """Every related field exists among ``all_names``, and no two fields write one Example
    key (except to store a foreign layout's shared key alike)."""
    owners: dict[str, tuple[str, Any, bool]] = {}
    for b in bound:
        for related in b.codec.related_fields():
            if related not in all_names:
                raise SchemaError(
                    f"refers to field {related!r}, which the schema does not have", field=b.name
                )
        for key, how, column in _key_readers(b):
            if key in owners and not _may_share(owners[key][1:], (how, column)):
                raise SchemaError(
                    f"writes Example key {key!r}, which field {owners[key][0]!r} writes too", field=b.name
                )
            owners[key] = (b.name, how, column or (key in owners and owners[key][2]))


@dataclasses.dataclass(frozen=True)
class KeyedFeature:
    """A codec's wire feature placed in a record: its Example key and stored shape."""

    feature: WireFeature
    key: str
    #: Key of the int64 list that holds each element's length, for a variable feature of
    #: a sequence field (the elements' values are concatenated under ``key``).
    lengths_key: str | None = None
    #: The columns of the last dimension, when stored as separate keys (foreign
    #: layouts): each an Example key, or a number for a column the records do not store
    #: (that constant in every row); ``key`` is then the first key among them.
    columns: tuple[str | int | float, ...] = ()
    #: The value of a feature the records do not store (foreign layouts).
    constant: int | float | None = None

    @functools.cached_property
    def key_bytes(self) -> bytes:
        """The key as UTF-8, encoded once (the writer uses it for every record)."""
        return self.key.encode("utf-8")

    @property
    def stored_keys(self) -> tuple[str, ...]:
        """The Example keys that hold this feature's values."""
        if self.columns:
            return tuple(key for key in self.columns if isinstance(key, str))
        return () if self.constant is not None else (self.key,)

    @property
    def key_shape(self) -> tuple[int | None, ...]:
        """The shape of what each of :attr:`stored_keys` holds in one record."""
        return self.feature.shape[:-1] if self.columns else self.feature.shape


@dataclasses.dataclass(frozen=True)
class BoundField:
    """A field with its codec instance and its Example keys."""

    name: str
    spec: FieldSpec
    codec: Codec[Any]
    features: tuple[KeyedFeature, ...]
    presence_key: str | None

    @classmethod
    def build(cls, name: str, spec: FieldSpec, codec: Codec[Any]) -> BoundField:
        """Field ``name`` bound to ``codec``: its wire features under their Example keys
        (the spec's ``keys`` applied); a :class:`SchemaError` for keys the codec lacks."""
        wire = codec.wire_spec()
        unknown = set(spec.keys) - set(wire.names)
        if unknown:
            raise SchemaError(
                f"'keys' names wire features the codec does not have: {sorted(unknown)} "
                f"(codec {codec.name!r} has {list(wire.names)})",
                field=name,
            )
        features = []
        for feature in wire:
            stored = spec.keys.get(feature.name)
            if isinstance(stored, (list, int, float)):
                features.append(_foreign_feature(name, spec, feature, stored))
                continue
            key = wire_key(name, feature.name, {feature.name: stored} if stored else None)
            lengths = f"{key}/lengths" if spec.sequence and not feature.is_fixed else None
            features.append(KeyedFeature(feature, key, lengths))
        if all(k.constant is not None for k in features):
            raise SchemaError(
                "'keys' makes every wire feature a constant; at least one must be stored", field=name
            )
        present = spec.keys.get("present", f"{name}/present")
        presence = present if spec.optional and isinstance(present, str) else None
        if spec.has_default:
            _check_default(name, spec, codec)
        return cls(name, spec, codec, tuple(features), presence)

    def wire_layout(self) -> dict[str, Any]:
        """What this field stores: the part of :meth:`BoundSchema.wire_layout` it makes."""
        return {
            "field": self.name,
            "codec": self.spec.codec,
            "codec_version": self.codec.version,
            "options": self.codec.stored_options(),
            "optional": self.spec.optional,
            "default": self.spec.default if self.spec.has_default else None,
            "sequence": self.spec.sequence,
            "keys": [_keyed_layout(k) for k in self.features],
            "presence_key": self.presence_key,
        }

    @property
    def keys(self) -> list[str]:
        """Every Example key this field writes."""
        keys = [key for f in self.features for key in f.stored_keys]
        keys += [f.lengths_key for f in self.features if f.lengths_key]
        if self.presence_key:
            keys.append(self.presence_key)
        return keys


def _check_default(name: str, spec: FieldSpec, codec: Codec[Any]) -> None:
    """A default is written for every record that leaves the field out: check that the
    codec takes it once, when the schema is bound, not once per record."""
    values: Sequence[Any] = spec.default if spec.sequence else [spec.default]
    if spec.sequence and not isinstance(spec.default, list):
        raise SchemaError(f"the default of a sequence field must be a list, not {spec.default!r}", field=name)
    for value in values:
        try:
            codec.encode(value)
        except RecordkitError as exc:
            raise SchemaError(
                f"the default {spec.default!r} is not a valid value: {exc.reason}", field=name
            ) from None
        except Exception as exc:
            raise SchemaError(
                f"the default {spec.default!r} is not a valid value: {type(exc).__name__}: {exc}", field=name
            ) from exc


# -- layouts of TFRecords that recordkit did not write ----------------------------------


def _foreign_feature(
    name: str, spec: FieldSpec, feature: WireFeature, stored: list[str | int | float] | int | float
) -> KeyedFeature:
    """A wire feature read from columns (a list of keys, with numbers for columns the
    records do not store) or given as a constant (a number)."""
    if spec.sequence:
        raise SchemaError(
            f"keys[{feature.name!r}]: column keys and constants are not supported for sequence fields",
            field=name,
        )
    default_key = wire_key(name, feature.name)
    if isinstance(stored, list):
        columns = tuple(
            key if isinstance(key, str) else _constant(name, feature, key, f"keys[{feature.name!r}][{i}]")
            for i, key in enumerate(stored)
        )
        if not feature.shape or feature.shape[-1] != len(stored):
            raise SchemaError(
                f"keys[{feature.name!r}] lists {len(stored)} columns, but the wire feature's shape "
                f"{feature.shape} does not end in {len(stored)}",
                field=name,
            )
        keys = [key for key in stored if isinstance(key, str)]
        if len(set(keys)) != len(keys):
            raise SchemaError(f"keys[{feature.name!r}] lists a column key twice", field=name)
        return KeyedFeature(feature, keys[0], columns=columns)
    constant = _constant(name, feature, stored, f"keys[{feature.name!r}]")
    return KeyedFeature(feature, default_key, constant=constant)


def _constant(name: str, feature: WireFeature, value: int | float, where: str) -> int | float:
    """``value`` as a constant of ``feature`` (an int for int64, a float for float), or a
    SchemaError naming the field and key: bytes and variable-length features hold no
    constants (a number there says nothing about what to store)."""
    if feature.kind.value == "bytes" or not feature.is_fixed:
        what = f"wire feature {feature.name!r}" if feature.name else "the main wire feature"
        raise SchemaError(
            f"{where}: a constant needs a numeric wire feature of fixed shape, but {what} is "
            f"{feature.kind.value} of shape {list(feature.shape)} (got the number {value}; "
            "give the Example key that stores it)",
            field=name,
        )
    if feature.kind.value == "int64":
        if float(value) != int(value):
            raise SchemaError(f"{where}: the int64 feature needs an integer, not {value}", field=name)
        return int(value)
    return float(value)


def _keyed_layout(keyed: KeyedFeature) -> dict[str, Any]:
    layout = {**keyed.feature.as_dict(), "key": keyed.key, "lengths_key": keyed.lengths_key}
    if keyed.columns:
        layout["columns"] = list(keyed.columns)
    if keyed.constant is not None:
        layout["constant"] = keyed.constant
        del layout["key"]
    return layout


def _key_readers(field: BoundField) -> list[tuple[str, Any, bool]]:
    """Each Example key ``field`` uses, with how it is read (a plain field's kind and
    shape; None: not shareable) and whether it is a column key."""
    plain = not field.spec.optional and not field.spec.sequence
    out: list[tuple[str, Any, bool]] = []
    for keyed in field.features:
        how = (keyed.feature.kind.value, keyed.key_shape) if plain else None
        out += [(key, how, bool(keyed.columns)) for key in keyed.stored_keys]
        if keyed.lengths_key:
            out.append((keyed.lengths_key, None, False))
    if field.presence_key:
        out.append((field.presence_key, None, False))
    return out


def _may_share(first: tuple[Any, bool], second: tuple[Any, bool]) -> bool:
    """Fields may share an Example key only in a foreign layout (one of them stores it
    as a column, e.g. an image's and a mask's height) and only when they store it alike
    (the writer writes it once and checks that they agree)."""
    (how_a, column_a), (how_b, column_b) = first, second
    return how_a is not None and how_a == how_b and (column_a or column_b)
