"""A schema's fields as plain data: :class:`FieldSpec` (codec name, options, optional,
default, sequence, keys), with the checks that keep options and defaults plain JSON data.

Nothing here knows a codec: binding names to codecs is :mod:`recordkit.schema._bound`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeAlias

import numpy as np
import pydantic

__all__ = ["FIELD_NAME", "FieldSpec", "SchemaFormat", "field_name_problem", "json_data"]

FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")

SchemaFormat: TypeAlias = Literal["yaml", "json"]
#: Where a wire feature is stored: an Example key, the columns of its last dimension (a
#: key each, or a number for a column the records do not store, as the 3 of
#: ``[height, width, 3]``), or a constant (a feature the records do not store).
StoredAs: TypeAlias = "str | _Columns | int | float"
#: The columns of a wire feature's last dimension (see :data:`StoredAs`). Its JSON Schema
#: says what ``FieldSpec._check_keys`` checks: non-empty keys and numbers, at least one key.
_Columns: TypeAlias = Annotated[
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
    if not isinstance(name, str) or not FIELD_NAME.match(name):
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
    keys: dict[str, StoredAs] = pydantic.Field(
        default_factory=dict,
        description=(
            "Example keys for the codec's wire features, to read or write another tool's "
            "TFRecord layout (wire feature name to key; '' is the main feature, 'present' the "
            "presence flag of an optional field). A list of keys gives the columns of the "
            "feature's last dimension from separate keys (e.g. a box's xmin, ymin, xmax, "
            "ymax); a number in such a list is a column the records do not store (e.g. a "
            "shape's [height, width, 3]), and a number alone a constant for a feature the "
            "records do not store; numbers only for numeric features of fixed shape. The "
            "writer writes exactly these keys: each column under its key, a key shared by "
            "fields once (they must agree), nothing for a number (the value must equal it)."
        ),
    )

    @pydantic.field_validator("keys", mode="before")
    @classmethod
    def _check_keys(cls, keys: Any) -> Any:
        """Check each value before pydantic's union coerces it (it would read ``true`` as 1)."""
        if not isinstance(keys, Mapping):
            return keys  # pydantic names the type error
        for name, stored in keys.items():
            if isinstance(stored, list):
                for i, item in enumerate(stored):
                    problem = _number_problem(item)
                    if problem or not isinstance(item, (str, int, float)):
                        raise ValueError(
                            f"keys[{name!r}][{i}]: {item!r} is not a key or a finite number"
                            + (f" ({problem})" if problem else "")
                        )
                    if item == "":
                        raise ValueError(f"keys[{name!r}][{i}]: an empty key")
                if not any(isinstance(item, str) for item in stored):
                    raise ValueError(
                        f"keys[{name!r}]: a list of columns needs at least one key (a string); "
                        f"{stored!r} stores nothing (a constant alone is a number, not a list)"
                    )
            elif not isinstance(stored, (str, int, float)) or _number_problem(stored):
                problem = _number_problem(stored)
                raise ValueError(
                    f"keys[{name!r}]: {stored!r} is not a key, a list of columns or a finite number"
                    + (f" ({problem})" if problem else "")
                )
            if name == "present" and not isinstance(stored, str):
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
