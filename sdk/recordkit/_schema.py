"""The Schema object: a named, versioned set of typed fields.

A :class:`Schema` is plain data (codec names and options, never code), so it can live
in a YAML file in a repo, in a dataset's manifest, or be derived from a Python
:class:`~recordkit.Record` class; all three give equal objects. :meth:`Schema.bind`
resolves codec names through a registry into a :class:`BoundSchema`, which the writer
and reader use.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

import numpy as np
import pydantic

from recordkit._codec import Codec
from recordkit._registry import CodecRegistry
from recordkit._wire import WireFeature, wire_key
from recordkit.errors import RecordError, RecordkitError, SchemaError

if TYPE_CHECKING:
    from recordkit._encode import RecordEncoder

__all__ = ["BoundField", "BoundSchema", "FieldSpec", "KeyedFeature", "Schema"]

_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")

SchemaFormat: TypeAlias = Literal["yaml", "json"]
#: Where a wire feature comes from: an Example key, the columns of its last dimension (a
#: key each, or a number for a column the records do not store, as the 3 of
#: ``[height, width, 3]``), or a constant (a feature the records do not store).
KeySource: TypeAlias = "str | _ColumnSources | int | float"
#: The columns of a wire feature's last dimension (see :data:`KeySource`). Its JSON Schema
#: says what ``FieldSpec._key_sources`` checks: non-empty keys and numbers, at least one key.
_ColumnSources: TypeAlias = Annotated[
    list[str | int | float],
    pydantic.Field(
        json_schema_extra={
            "items": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "number"}]},
            "contains": {"type": "string"},
            "minItems": 1,
        }
    ),
]


def json_data(value: Any, where: str = "value") -> Any:
    """``value`` as plain JSON data (dict, list, str, int, float, bool, None).

    Options and defaults live in schema files and manifests, so they must be data:
    tuples become lists and numpy scalars and arrays become Python numbers and lists
    (a Python-declared schema then equals its YAML twin); anything else is an error.
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value} is not allowed (schema files hold finite numbers)")
        return value
    if isinstance(value, (np.generic, np.ndarray)):
        return json_data(value.tolist(), where)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: mapping keys must be strings, not {type(key).__name__}")
            out[key] = json_data(item, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [json_data(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise ValueError(
        f"{where}: {type(value).__name__} is not schema data "
        "(use strings, numbers, booleans, null, lists and mappings)"
    )


def _number_problem(value: object) -> str | None:
    """Why ``value`` cannot be a constant among a field's keys (None: it can, or it is
    no number). YAML reads ``true`` as a boolean, which Python counts as a number."""
    if isinstance(value, bool):
        return "a boolean, not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return "not finite"
    return None


def field_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a field, or None when it can. Field names become
    Example keys, where ``/`` separates a field from its wire features."""
    if not isinstance(name, str) or not _FIELD_NAME.match(name):
        return f"invalid field name {name!r}: start with a letter or _, then use letters, digits, _ . -"
    return None


class FieldSpec(pydantic.BaseModel):
    """One field of a schema: which codec stores it, with which options."""

    model_config = pydantic.ConfigDict(
        extra="forbid",
        frozen=True,
        # optional and a (non-null) default exclude each other (see _optional_or_default).
        json_schema_extra={
            "not": {
                "required": ["optional", "default"],
                "properties": {"optional": {"const": True}, "default": {"not": {"type": "null"}}},
            }
        },
    )

    codec: str = pydantic.Field(description="Name of the codec that stores this field (e.g. image).")
    options: dict[str, Any] = pydantic.Field(
        default_factory=dict,
        description="Options of the codec, validated by the codec (see its reference page).",
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
    keys: dict[str, KeySource] = pydantic.Field(
        default_factory=dict,
        description=(
            "Example keys for the codec's wire features, to read TFRecords that recordkit "
            "did not write (wire feature name to key; '' is the main feature, 'present' the "
            "presence flag of an optional field). A list of keys gives the columns of the "
            "feature's last dimension from separate keys (e.g. a box's xmin, ymin, xmax, "
            "ymax); a number in such a list is a column the records do not store (e.g. a "
            "shape's [height, width, 3]), and a number alone a constant for a feature the "
            "records do not store; numbers only for numeric features of fixed shape. Schemas "
            "with lists, numbers or keys shared by fields are for reading only."
        ),
    )

    @pydantic.field_validator("keys", mode="before")
    @classmethod
    def _key_sources(cls, keys: Any) -> Any:
        """Check each source before pydantic's union coerces it (it would read ``true`` as 1)."""
        if not isinstance(keys, Mapping):
            return keys  # pydantic names the type error
        for name, source in keys.items():
            if isinstance(source, list):
                for i, item in enumerate(source):
                    problem = _number_problem(item)
                    if problem or not isinstance(item, (str, int, float)):
                        raise ValueError(
                            f"keys[{name!r}][{i}]: {item!r} is not a key or a finite number"
                            + (f" ({problem})" if problem else "")
                        )
                    if item == "":
                        raise ValueError(f"keys[{name!r}][{i}]: an empty key")
                if not any(isinstance(item, str) for item in source):
                    raise ValueError(
                        f"keys[{name!r}]: a list of columns needs at least one key (a string); "
                        f"{source!r} stores nothing (a constant alone is a number, not a list)"
                    )
            elif not isinstance(source, (str, int, float)) or _number_problem(source):
                problem = _number_problem(source)
                raise ValueError(
                    f"keys[{name!r}]: {source!r} is not a key, a list of columns or a finite number"
                    + (f" ({problem})" if problem else "")
                )
            if name == "present" and not isinstance(source, str):
                raise ValueError("keys['present'] (the presence flag's key) must be a key")
        return keys

    @pydantic.field_validator("options")
    @classmethod
    def _options_are_data(cls, options: dict[str, Any]) -> dict[str, Any]:
        return {name: json_data(value, f"option {name!r}") for name, value in options.items()}

    @pydantic.field_validator("default")
    @classmethod
    def _default_is_data(cls, default: Any) -> Any:
        return json_data(default, "default")

    @pydantic.model_validator(mode="after")
    def _optional_or_default(self) -> FieldSpec:
        if self.optional and self.has_default:
            raise ValueError("a field is either optional or has a default, not both")
        return self

    @property
    def has_default(self) -> bool:
        """True when records may leave the field out and get :attr:`default` written."""
        return self.default is not None


class Schema(pydantic.BaseModel):
    """A dataset's schema: a name, a version and its fields, in order."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    name: str = pydantic.Field(min_length=1, description="The schema's name (e.g. pets).")
    version: str = pydantic.Field(
        default="1.0.0",
        min_length=1,
        description="The schema's own version, a string (quote it in YAML: version: \"1.0\").",
    )
    description: str = pydantic.Field(default="", description="Free text for people; not stored on the wire.")
    fields: dict[str, FieldSpec] = pydantic.Field(
        description="The fields, by name, in order.",
        json_schema_extra={"minProperties": 1, "propertyNames": {"pattern": _FIELD_NAME.pattern}},
    )

    @pydantic.field_validator("version", mode="before")
    @classmethod
    def _version_is_text(cls, version: Any) -> Any:
        if isinstance(version, (int, float)) and not isinstance(version, bool):
            raise ValueError(f"must be a string, not the number {version!r}; quote it (\"{version}\")")
        if isinstance(version, datetime.date):  # YAML reads an unquoted 2024-01-31 as a date
            raise ValueError(f"must be a string, not the date {version}; quote it (\"{version}\")")
        return version

    @pydantic.field_validator("fields")
    @classmethod
    def _field_names(cls, fields: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
        if not fields:
            raise ValueError("a schema needs at least one field")
        for name in fields:
            problem = field_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        return fields

    # -- schema files -------------------------------------------------------------------

    @classmethod
    def load(
        cls, path: str | Path, *, registry: CodecRegistry | None = None, check: bool = True
    ) -> Schema:
        """Read a schema file (YAML, or JSON when the name ends in ``.json``).

        With ``check`` (the default) every field is also bound against ``registry``
        (default: the installed plugins), so unknown codecs and bad options are caught
        here, with the file, line, field and option in the error. ``check=False`` only
        checks the file's structure, for tools that run without the codecs installed.

        :raises SchemaFileError: the file cannot be read, parsed or is malformed.
        :raises UnknownCodecError: a field names a codec that is not installed.
        :raises CodecOptionsError: a field's options fail its codec's options model.
        """
        from recordkit._schema_file import load_schema

        return load_schema(path, registry=registry, check=check)

    @classmethod
    def loads(
        cls,
        text: str,
        format: SchemaFormat = "yaml",
        *,
        source: str = "<string>",
        registry: CodecRegistry | None = None,
        check: bool = True,
    ) -> Schema:
        """Parse a schema from ``text``; like :meth:`load`, ``source`` names it in errors."""
        from recordkit._schema_file import loads_schema

        return loads_schema(text, format, source=source, registry=registry, check=check)

    def dumps(self, format: SchemaFormat = "yaml") -> str:
        """The schema as a schema file's text (YAML or JSON); keys at their defaults
        (``optional: false``, empty options ...) are left out, options are kept as given."""
        from recordkit._schema_file import dumps_schema

        return dumps_schema(self, format)

    def dump(self, path: str | Path, format: SchemaFormat | None = None) -> None:
        """Write the schema file ``path`` (JSON when it ends in ``.json``, else YAML)."""
        from recordkit._schema_file import dump_schema

        dump_schema(self, path, format)

    # -- binding, fingerprint, records ------------------------------------------------

    def fingerprint(self, registry: CodecRegistry | None = None) -> str:
        """The hash of the wire layout (see :meth:`BoundSchema.fingerprint`)."""
        return self.bind(registry).fingerprint()

    def feature_spec(
        self, fields: str | Sequence[str] | None = None, *, registry: CodecRegistry | None = None
    ) -> dict[str, Any]:
        """The ``tf.io.parse_example`` spec of ``fields`` (all when None); imports
        TensorFlow (see :func:`recordkit.feature_spec`)."""
        from recordkit._parse import feature_spec

        return feature_spec(self.bind(registry), fields)

    def validate_record(
        self, record: Any, index: int | str | None = None, *, registry: CodecRegistry | None = None
    ) -> None:
        """Check ``record`` against the schema (see :meth:`BoundSchema.validate_record`).

        Binds the schema on each call: to check many records, bind once and call
        :meth:`BoundSchema.validate_record`.
        """
        self.bind(registry).validate_record(record, index)

    def record_errors(
        self, record: Any, index: int | str | None = None, *, registry: CodecRegistry | None = None
    ) -> list[RecordkitError]:
        """Every problem of ``record`` (see :meth:`BoundSchema.record_errors`)."""
        return self.bind(registry).record_errors(record, index)

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
        owners: dict[str, tuple[str, Any, bool]] = {}
        for b in bound:
            for related in b.codec.related_fields():
                if related not in names:
                    raise SchemaError(
                        f"refers to field {related!r}, which the schema does not have", field=b.name
                    )
            for key, how, column in _key_readers(b):
                if key in owners and not _may_share(owners[key][1:], (how, column)):
                    raise SchemaError(
                        f"writes Example key {key!r}, which field {owners[key][0]!r} writes too", field=b.name
                    )
                owners[key] = (b.name, how, column or (key in owners and owners[key][2]))
        return BoundSchema(self, tuple(bound))


@dataclasses.dataclass(frozen=True)
class KeyedFeature:
    """A codec's wire feature placed in a record: its Example key and stored shape."""

    feature: WireFeature
    key: str
    #: Key of the int64 list that holds each element's length, for a variable feature of
    #: a sequence field (the elements' values are concatenated under ``key``).
    lengths_key: str | None = None
    #: The columns of the last dimension, when stored as separate keys (reading foreign
    #: layouts): each an Example key, or a number for a column the records do not store
    #: (that constant in every row); ``key`` is then the first key among them.
    columns: tuple[str | int | float, ...] = ()
    #: The value of a feature the records do not store (reading foreign layouts).
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
            source = spec.keys.get(feature.name)
            if isinstance(source, (list, int, float)):
                features.append(_foreign_feature(name, spec, feature, source))
                continue
            key = wire_key(name, feature.name, {feature.name: source} if source else None)
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


@dataclasses.dataclass(frozen=True)
class BoundSchema:
    """A schema whose codecs are resolved; what writers and readers work from."""

    schema: Schema
    fields: tuple[BoundField, ...]
    _cache: dict[str, Any] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __getitem__(self, name: str) -> BoundField:
        for field in self.fields:
            if field.name == name:
                return field
        raise SchemaError(
            f"no field named {name!r} (fields: {', '.join(f.name for f in self.fields)})", field=name
        )

    def select(self, names: Sequence[str] | None) -> tuple[BoundField, ...]:
        """The fields named (all when ``names`` is None), in the order asked for."""
        if names is None:
            return self.fields
        return tuple(self[n] for n in names)

    def codec_versions(self) -> Mapping[str, str]:
        return {f.spec.codec: f.codec.version for f in self.fields}

    def wire_layout(self) -> list[dict[str, Any]]:
        """What is stored, field by field: codec, version, every option (defaults
        included), optional/sequence, the default, and each Example key with its kind
        and shape. Descriptions, the schema's name and version, and formatting are not
        part of it."""
        return [field.wire_layout() for field in self.fields]

    def fingerprint(self) -> str:
        """A stable hash of :meth:`wire_layout`: equal exactly when the stored layout is.

        Fields are hashed in name order: an Example is a map, so reordering the fields
        of a schema changes nothing that is stored.
        """
        layout = sorted(self.wire_layout(), key=lambda entry: str(entry["field"]))
        canonical = json.dumps(layout, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    # -- records --------------------------------------------------------------------

    def encoder(self) -> RecordEncoder:
        """The :class:`~recordkit.RecordEncoder` of this schema (built once, then kept)."""
        from recordkit._encode import RecordEncoder

        cached = self._cache.get("encoder")
        if cached is None:
            cached = self._cache["encoder"] = RecordEncoder(self)
        return cached

    def record_errors(self, record: Any, index: int | str | None = None) -> list[RecordkitError]:
        """Every problem of ``record``, each naming the record (``index``: its position
        or key) and the field path (``boxes``, ``frames[2]``); empty when it is valid.

        The checks are exactly the writer's (the record is encoded, and the bytes
        dropped): missing and unknown fields, each codec's value checks, the wire
        shapes, and checks between related fields.
        """
        try:
            self.validate_record(record, index)
        except RecordError as exc:
            return list(exc.errors) or [exc]
        except RecordkitError as exc:
            return [exc]
        return []

    def validate_record(self, record: Any, index: int | str | None = None) -> None:
        """Raise a :class:`~recordkit.errors.RecordError` listing every problem of
        ``record`` (see :meth:`record_errors`); return quietly when it is valid."""
        try:
            self.encoder().encode(record, index)
        except RecordkitError as exc:
            raise exc.with_context(record=index) from None


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
    name: str, spec: FieldSpec, feature: WireFeature, source: list[str | int | float] | int | float
) -> KeyedFeature:
    """A wire feature read from columns (a list of keys, with numbers for columns the
    records do not store) or given as a constant (a number)."""
    if spec.sequence:
        raise SchemaError(
            f"keys[{feature.name!r}]: column keys and constants are not supported for sequence fields",
            field=name,
        )
    default_key = wire_key(name, feature.name)
    if isinstance(source, list):
        columns = tuple(
            key if isinstance(key, str) else _constant(name, feature, key, f"keys[{feature.name!r}][{i}]")
            for i, key in enumerate(source)
        )
        if not feature.shape or feature.shape[-1] != len(source):
            raise SchemaError(
                f"keys[{feature.name!r}] lists {len(source)} columns, but the wire feature's shape "
                f"{feature.shape} does not end in {len(source)}",
                field=name,
            )
        keys = [key for key in source if isinstance(key, str)]
        if len(set(keys)) != len(keys):
            raise SchemaError(f"keys[{feature.name!r}] lists a column key twice", field=name)
        return KeyedFeature(feature, keys[0], columns=columns)
    constant = _constant(name, feature, source, f"keys[{feature.name!r}]")
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
    """Fields may share an Example key only to read a foreign layout (one of them reads
    it as a column, e.g. an image's and a mask's height) and only when they read it alike."""
    (how_a, column_a), (how_b, column_b) = first, second
    return how_a is not None and how_a == how_b and (column_a or column_b)


def read_only_reason(bound: BoundSchema) -> str | None:
    """Why records cannot be written with ``bound`` (None: they can): it describes a
    foreign layout, with column keys, constants or keys shared by fields."""
    for field in bound.fields:
        for keyed in field.features:
            if keyed.columns or keyed.constant is not None:
                what = "column keys" if keyed.columns else "a constant"
                return (
                    f"field {field.name!r} reads wire feature {keyed.feature.name!r} from {what}: "
                    "the schema describes TFRecords written elsewhere and is for reading only"
                )
    return None
