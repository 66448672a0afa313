"""The Schema object: a named, versioned set of typed fields.

A :class:`Schema` is plain data (codec names and options, never code), so it can live
in a YAML file in a repo, in a dataset's manifest, or be derived from a Python
:class:`~recordkit.Record` class; all three give equal objects. :meth:`Schema.bind`
resolves codec names through a registry into a :class:`BoundSchema`, which the writer
and reader use.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import pydantic

from recordkit._codec import Codec
from recordkit._registry import CodecRegistry
from recordkit._wire import WireFeature, wire_key
from recordkit.errors import RecordkitError, SchemaError

__all__ = ["BoundField", "BoundSchema", "FieldSpec", "KeyedFeature", "Schema"]

_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class FieldSpec(pydantic.BaseModel):
    """One field of a schema: which codec stores it, with which options."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    codec: str = pydantic.Field(description="Name of the codec that stores this field (e.g. image).")
    options: dict[str, Any] = pydantic.Field(
        default_factory=dict, description="Options of the codec, validated by the codec."
    )
    optional: bool = pydantic.Field(
        default=False,
        description="Records may leave this field out; readers get an explicit presence flag.",
    )
    default: Any = pydantic.Field(
        default=None, description="Value written when a record leaves this field out."
    )
    sequence: bool = pydantic.Field(
        default=False, description="The field holds a list of the codec's values (e.g. several images)."
    )
    description: str = pydantic.Field(default="", description="Free text for people; not stored on the wire.")
    keys: dict[str, str] = pydantic.Field(
        default_factory=dict,
        description=(
            "Example keys for the codec's wire features, to read TFRecords that recordkit "
            "did not write (feature name to key; '' is the main feature)."
        ),
    )

    @pydantic.model_validator(mode="after")
    def _optional_or_default(self) -> FieldSpec:
        if self.optional and self.has_default:
            raise ValueError("a field is either optional or has a default, not both")
        return self

    @property
    def has_default(self) -> bool:
        return "default" in self.model_fields_set and self.default is not None


class Schema(pydantic.BaseModel):
    """A dataset's schema: a name, a version and its fields, in order."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    name: str = pydantic.Field(description="The schema's name (e.g. pets).")
    version: str = pydantic.Field(default="1.0.0", description="The schema's own version.")
    description: str = pydantic.Field(default="", description="Free text for people.")
    fields: dict[str, FieldSpec] = pydantic.Field(description="The fields, by name, in order.")

    @pydantic.field_validator("fields")
    @classmethod
    def _field_names(cls, fields: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
        if not fields:
            raise ValueError("a schema needs at least one field")
        for name in fields:
            if not _FIELD_NAME.match(name) or "/" in name:
                raise ValueError(f"invalid field name {name!r}: use letters, digits, _ . -")
        return fields

    def fingerprint(self, registry: CodecRegistry | None = None) -> str:
        """The hash of the wire layout (see :meth:`BoundSchema.fingerprint`)."""
        return self.bind(registry).fingerprint()

    def bind(self, registry: CodecRegistry | None = None) -> BoundSchema:
        """Resolve every field's codec through ``registry`` (default: installed plugins).

        Raises UnknownCodecError or CodecOptionsError naming the field.
        """
        if registry is None:
            from recordkit._plugins import default_registry

            registry = default_registry()
        bound: list[BoundField] = []
        for field_name, spec in self.fields.items():
            try:
                codec = registry.create(spec.codec, spec.options)
            except RecordkitError as exc:
                raise exc.with_context(field=field_name) from None
            bound.append(BoundField.build(field_name, spec, codec))
        names = {b.name for b in bound}
        for b in bound:
            for related in b.codec.related_fields():
                if related not in names:
                    raise SchemaError(
                        f"refers to field {related!r}, which the schema does not have", field=b.name
                    )
        return BoundSchema(self, tuple(bound))


@dataclasses.dataclass(frozen=True)
class KeyedFeature:
    """A codec's wire feature placed in a record: its Example key and stored shape."""

    feature: WireFeature
    key: str
    #: Key of the int64 list that holds each element's length, for a variable feature of
    #: a sequence field (the elements' values are concatenated under ``key``).
    lengths_key: str | None = None

    @property
    def key_bytes(self) -> bytes:
        return self.key.encode("utf-8")


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
            key = wire_key(name, feature.name, spec.keys)
            lengths = f"{key}/lengths" if spec.sequence and not feature.is_fixed else None
            features.append(KeyedFeature(feature, key, lengths))
        presence = spec.keys.get("present", f"{name}/present") if spec.optional else None
        return cls(name, spec, codec, tuple(features), presence)

    @property
    def keys(self) -> list[str]:
        """Every Example key this field writes."""
        keys = [f.key for f in self.features]
        keys += [f.lengths_key for f in self.features if f.lengths_key]
        if self.presence_key:
            keys.append(self.presence_key)
        return keys


@dataclasses.dataclass(frozen=True)
class BoundSchema:
    """A schema whose codecs are resolved; what writers and readers work from."""

    schema: Schema
    fields: tuple[BoundField, ...]

    def __getitem__(self, name: str) -> BoundField:
        for field in self.fields:
            if field.name == name:
                return field
        raise SchemaError(
            f"no field named {name!r} (fields: {', '.join(f.name for f in self.fields)})", field=name
        )

    def select(self, names: list[str] | tuple[str, ...] | None) -> tuple[BoundField, ...]:
        """The fields named (all when ``names`` is None), in the order asked for."""
        if names is None:
            return self.fields
        return tuple(self[n] for n in names)

    def codec_versions(self) -> Mapping[str, str]:
        return {f.spec.codec: f.codec.version for f in self.fields}

    def wire_layout(self) -> list[dict[str, Any]]:
        """What is stored, field by field: codec, version, every option (defaults
        included), optional/sequence, and each Example key with its kind and shape.
        Descriptions, the schema's name and formatting are not part of it."""
        layout = []
        for field in self.fields:
            layout.append(
                {
                    "field": field.name,
                    "codec": field.spec.codec,
                    "codec_version": field.codec.version,
                    "options": field.codec.options.model_dump(mode="json"),
                    "optional": field.spec.optional,
                    "default": field.spec.default if field.spec.has_default else None,
                    "sequence": field.spec.sequence,
                    "keys": [
                        {**k.feature.as_dict(), "key": k.key, "lengths_key": k.lengths_key}
                        for k in field.features
                    ],
                    "presence_key": field.presence_key,
                }
            )
        return layout

    def fingerprint(self) -> str:
        """A stable hash of :meth:`wire_layout`: equal exactly when the stored layout is."""
        canonical = json.dumps(self.wire_layout(), sort_keys=True, separators=(",", ":"), default=str)
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
