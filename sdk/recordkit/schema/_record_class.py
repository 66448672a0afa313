"""Schemas declared as Python classes: :class:`Record` and :func:`field`.

A record class is a Pydantic model whose fields each name their codec in an
``Annotated`` marker, so type checkers see the declared Python type while recordkit
sees the codec::

    class Pet(rk.Record, name="pets", version="1.0.0"):
        image: Annotated[bytes, rk.field("image", format="jpeg", quality=95)]
        caption: Annotated[str | None, rk.field("text")] = None

The class gives the same :class:`~recordkit.Schema` as the equivalent schema file
(:func:`schema_of`). Its instances are records the writer takes: values are not
converted or checked when an instance is built (a field typed ``bytes`` also takes a
numpy array, a PIL image or a path, whatever its codec accepts); the codecs check them
when the record is validated or written.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

import pydantic
from pydantic.fields import FieldInfo
from pydantic_core import core_schema

from recordkit.errors import RecordError, RecordkitError, SchemaError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema

__all__ = ["FieldDeclaration", "Record", "field", "schema_of"]


class FieldDeclaration:
    """What :func:`field` returns: a field's codec, options and flags, kept in the
    field's ``Annotated`` metadata. It also tells Pydantic to take any value as it is:
    the codec, not Pydantic, decides what a field accepts."""

    __slots__ = ("codec", "description", "keys", "optional", "options", "sequence")

    def __init__(
        self,
        codec: str,
        options: Mapping[str, Any],
        *,
        optional: bool | None,
        sequence: bool,
        description: str | None,
        keys: Mapping[str, str] | None,
    ) -> None:
        if not isinstance(codec, str) or not codec:
            raise SchemaError(f"rk.field() takes a codec name first, not {codec!r}")
        self.codec = codec
        self.options = dict(options)
        self.optional = optional
        self.sequence = sequence
        self.description = description
        self.keys = dict(keys or {})

    def __get_pydantic_core_schema__(self, source: Any, handler: pydantic.GetCoreSchemaHandler) -> Any:
        return core_schema.any_schema()

    def __repr__(self) -> str:
        args = [repr(self.codec), *(f"{k}={v!r}" for k, v in self.options.items())]
        if self.sequence:
            args.append("sequence=True")
        if self.optional is not None:
            args.append(f"optional={self.optional}")
        return f"rk.field({', '.join(args)})"


def field(
    codec: str,
    /,
    *,
    options: Mapping[str, Any] | None = None,
    optional: bool | None = None,
    sequence: bool = False,
    description: str | None = None,
    keys: Mapping[str, str] | None = None,
    **codec_options: Any,
) -> Any:
    """Declare a :class:`Record` field stored by ``codec``, for ``Annotated``.

    :param codec: the codec's name, exactly as a schema file says it (built-in or from
        a plugin alike).
    :param codec_options: the codec's options (``format="jpeg"``); ``options`` takes
        them as a mapping instead, for an option whose name clashes with a parameter
        here.
    :param optional: records may leave the field out (readers get a presence flag). By
        default a field is optional when its default is ``None`` or its type admits
        ``None``.
    :param sequence: the field holds a list of the codec's values.
    :param description: for people; defaults to the Pydantic description or the
        attribute's docstring.
    :param keys: Example keys for the codec's wire features, to read TFRecords that
        recordkit did not write.

    The returned marker's type is ``Any`` so that it fits any ``Annotated`` type.
    """
    merged = {**(options or {}), **codec_options}
    return FieldDeclaration(
        codec, merged, optional=optional, sequence=sequence, description=description, keys=keys
    )


def _admits_none(annotation: Any) -> bool:
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return any(_admits_none(arg) for arg in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _admits_none(typing.get_args(annotation)[0])
    return False


def _field_spec(cls: type[Record], name: str, info: FieldInfo) -> FieldSpec:
    where = f"{cls.__qualname__}.{name}"
    declarations = [m for m in info.metadata if isinstance(m, FieldDeclaration)]
    if not declarations:
        raise SchemaError(
            f"{where} names no codec: declare it as Annotated[<type>, rk.field('<codec>', ...)]", field=name
        )
    if len(declarations) > 1:
        raise SchemaError(f"{where} has {len(declarations)} rk.field() markers; give one", field=name)
    if info.alias is not None and info.alias != name:
        raise SchemaError(
            f"{where}: aliases are not supported; the attribute name is the field name", field=name
        )
    declared = declarations[0]
    required = info.is_required()
    default = None if required else info.get_default(call_default_factory=True)
    if declared.optional is None:
        optional = (not required and default is None) or (required and _admits_none(info.annotation))
    else:
        optional = declared.optional
    description = declared.description or info.description or ""
    spec: dict[str, Any] = {
        "codec": declared.codec,
        "options": declared.options,
        "optional": optional,
        "sequence": declared.sequence,
        "description": inspect.cleandoc(description),
        "keys": declared.keys,
    }
    if default is not None:
        spec["default"] = default
    try:
        return FieldSpec.model_validate(spec)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            ": ".join(
                part
                for part in (".".join(str(p) for p in e["loc"]), str(e["msg"]).removeprefix("Value error, "))
                if part
            )
            for e in exc.errors(include_url=False)
        )
        raise SchemaError(f"{where}: {problems}", field=name) from None


def _build_schema(cls: type[Record]) -> Schema:
    meta = cls.__recordkit_meta__
    own_doc = cls.__dict__.get("__doc__")
    description = cls.__dict__.get("__recordkit_own_meta__", {}).get("description")
    if description is None:
        description = inspect.cleandoc(own_doc) if isinstance(own_doc, str) else meta.get("description", "")
    fields = {name: _field_spec(cls, name, info) for name, info in cls.model_fields.items()}
    if not fields:
        raise SchemaError(f"{cls.__qualname__} declares no fields")
    try:
        return Schema(
            name=meta.get("name") or cls.__name__,
            version=meta.get("version") or "1.0.0",
            description=description,
            fields=fields,
        )
    except pydantic.ValidationError as exc:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise SchemaError(f"{cls.__qualname__}: {problems}") from None


class Record(pydantic.BaseModel):
    """Base of record classes: a schema declared in Python, and its records.

    Subclass it with the schema's name, version and description as class keywords
    (``class Pet(rk.Record, name="pets", version="1.0.0")``; the name defaults to the
    class name, the description to the class docstring), and one annotated attribute
    per field (see :func:`field`). :func:`schema_of` (or :meth:`recordkit_schema`)
    gives its :class:`~recordkit.Schema`.

    Building an instance checks only that required fields are there and no unknown
    ones are (a :class:`~recordkit.errors.RecordError` names each); the values are
    taken as they are and checked by their codecs when the record is validated or
    written.
    """

    model_config = pydantic.ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, use_attribute_docstrings=True
    )

    #: The schema's name, version and description given as class keywords, inherited.
    __recordkit_meta__: ClassVar[dict[str, str]] = {}
    #: Those given on this very class (a docstring beats an inherited description).
    __recordkit_own_meta__: ClassVar[dict[str, str]] = {}
    __recordkit_schema__: ClassVar[Schema | None] = None

    def __init_subclass__(
        cls,
        *,
        name: str | None = None,
        version: str | None = None,
        description: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        given = {"name": name, "version": version, "description": description}
        cls.__recordkit_own_meta__ = {k: v for k, v in given.items() if v is not None}
        cls.__recordkit_meta__ = {**cls.__recordkit_meta__, **cls.__recordkit_own_meta__}
        cls.__recordkit_schema__ = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # Build (and so check) the schema as soon as the class exists, so a wrong
        # declaration fails where it is written; classes with unresolved forward
        # references, or without fields yet (abstract bases), are built on first use.
        if cls.__pydantic_complete__ and cls.model_fields:
            cls.__recordkit_schema__ = _build_schema(cls)

    @classmethod
    def recordkit_schema(cls) -> Schema:
        """The :class:`~recordkit.Schema` this class declares."""
        if cls is Record:
            raise SchemaError("Record itself declares no schema; subclass it")
        schema = cls.__dict__.get("__recordkit_schema__")
        if schema is None:
            if not cls.__pydantic_complete__:
                cls.model_rebuild()
            schema = _build_schema(cls)
            cls.__recordkit_schema__ = schema
        return schema

    @pydantic.model_validator(mode="wrap")
    @classmethod
    def _record_errors(cls, data: Any, handler: pydantic.ModelWrapValidatorHandler[Record]) -> Record:
        try:
            return handler(data)
        except pydantic.ValidationError as exc:
            raise _as_record_error(exc) from None


def _as_record_error(exc: pydantic.ValidationError) -> RecordkitError:
    errors: list[RecordkitError] = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        name = str(loc[0]) if loc else None
        if error["type"] == "missing":
            reason = "missing (the field is neither optional nor has a default)"
        elif error["type"] == "extra_forbidden":
            reason = "not a field of the schema"
        else:
            reason = str(error["msg"])
        errors.append(RecordError(reason, field=name))
    if len(errors) == 1:
        return errors[0]
    listing = "".join(f"\n  - {e}" for e in errors)
    return RecordError(f"{len(errors)} invalid fields:{listing}", errors=errors)


def schema_of(declaration: type[Record] | Schema) -> Schema:
    """The :class:`~recordkit.Schema` of a :class:`Record` class (a Schema is
    returned as it is, so APIs can take either)."""
    if isinstance(declaration, Schema):
        return declaration
    if isinstance(declaration, type) and issubclass(declaration, Record):
        return declaration.recordkit_schema()
    raise SchemaError(f"expected a Record class or a Schema, not {declaration!r}")
