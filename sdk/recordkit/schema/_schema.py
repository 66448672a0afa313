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
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import pydantic

from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import RecordError, RecordkitError, SchemaError
from recordkit.schema import _file
from recordkit.schema._bound import BoundField, bind_field, check_shared_keys
from recordkit.schema._card import DatasetCard
from recordkit.schema._encoder import RecordEncoder
from recordkit.schema._fields import FIELD_NAME, FieldSpec, SchemaFormat, field_name_problem
from recordkit.storage import StorageOptions

__all__ = ["BoundSchema", "Schema", "SchemaLike"]


class Schema(pydantic.BaseModel):
    """A dataset's schema: a name, a version and its fields, in order."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    name: str = pydantic.Field(min_length=1, description="The schema's name (e.g. pets).")
    version: str = pydantic.Field(
        default="1.0.0",
        min_length=1,
        description='The schema\'s own version, a string (quote it in YAML: version: "1.0").',
    )
    description: str = pydantic.Field(default="", description="Free text for people; not stored on the wire.")
    fields: dict[str, FieldSpec] = pydantic.Field(
        description="The fields, by name, in order.",
        json_schema_extra={"minProperties": 1, "propertyNames": {"pattern": FIELD_NAME.pattern}},
    )
    card: DatasetCard | None = pydantic.Field(
        default=None,
        description=(
            "The dataset card (license, citation, homepage, authors, version notes, description); "
            "written datasets store it in dataset.json's card entry, not in their schema."
        ),
    )

    @pydantic.field_validator("version", mode="before")
    @classmethod
    def _version_is_text(cls, version: Any) -> Any:
        if isinstance(version, (int, float)) and not isinstance(version, bool):
            raise ValueError(f'must be a string, not the number {version!r}; quote it ("{version}")')
        if isinstance(version, datetime.date):  # YAML reads an unquoted 2024-01-31 as a date
            raise ValueError(f'must be a string, not the date {version}; quote it ("{version}")')
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
        cls,
        path: str | os.PathLike[str],
        *,
        registry: CodecRegistry | None = None,
        check: bool = True,
        storage_options: StorageOptions | None = None,
    ) -> Schema:
        """Read a schema file (YAML, or JSON when the name ends in ``.json``): a local
        path, or a URL (``s3://``, ``gs://``, any fsspec protocol, with ``storage_options``).

        With ``check`` (the default) every field is also bound against ``registry``
        (default: the installed plugins), so unknown codecs and bad options are caught
        here, with the file, line, field and option in the error. ``check=False`` only
        checks the file's structure, for tools that run without the codecs installed.

        :raises SchemaFileError: the file cannot be read, parsed or is malformed.
        :raises UnknownCodecError: a field names a codec that is not installed.
        :raises CodecOptionsError: a field's options fail its codec's options model.
        """
        return _file.load_schema(path, cls, registry=registry, check=check, storage_options=storage_options)

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
        return _file.loads_schema(text, cls, format, source=source, registry=registry, check=check)

    def dumps(self, format: SchemaFormat = "yaml") -> str:
        """The schema as a schema file's text (YAML or JSON); keys at their defaults
        (``optional: false``, empty options ...) are left out, options are kept as given."""
        return _file.dumps_schema(self, format)

    def dump(self, path: str | Path, format: SchemaFormat | None = None) -> None:
        """Write the schema file ``path`` (JSON when it ends in ``.json``, else YAML)."""
        _file.dump_schema(self, path, format)

    # -- binding, fingerprint, records ------------------------------------------------

    def fingerprint(self, registry: CodecRegistry | None = None) -> str:
        """The hash of the wire layout (see :meth:`BoundSchema.fingerprint`)."""
        return self.bind(registry).fingerprint()

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

    def bind(
        self,
        registry: CodecRegistry | None = None,
        *,
        fields: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> BoundSchema:
        """Resolve the codecs of ``fields`` (default: all, in schema order) through
        ``registry`` (default: the installed plugins).

        Binding only some fields lets a reader read part of a dataset whose other codecs
        are not installed. ``versions`` maps codec names to the versions that stored the
        records to read (a dataset's :attr:`~recordkit.Manifest.codec_versions`): each
        field of such a codec gets the codec that reads what that version stored
        (:meth:`~recordkit.Codec.for_stored_version`); codecs it does not name are bound
        as installed, as they are for writing.

        Raises UnknownCodecError or CodecOptionsError naming the field, CodecVersionError
        naming the field when its codec does not read the stored version, or SchemaError
        when the fields refer to a missing field or share an Example key.
        """
        if registry is None:
            registry = default_registry()
        names = list(self.fields) if fields is None else list(dict.fromkeys(fields))
        stored = versions or {}
        bound = []
        for name in names:
            spec = self.fields.get(name)
            if spec is None:
                raise SchemaError(f"no field named {name!r} (fields: {', '.join(self.fields)})", field=name)
            bound.append(bind_field(name, spec, registry, stored.get(spec.codec)))
        check_shared_keys(bound, self.fields)
        return BoundSchema(self, tuple(bound))


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


#: A schema as the SDK's functions take one: a :class:`Schema`, or the path (or URL) of a
#: schema file, loaded with the codec registry the function uses.
SchemaLike: TypeAlias = Schema | str | os.PathLike[str]
