"""The base of every codec's options model, and its stricter number checks.

Pydantic turns ``true`` into 1 where an int is expected, and accepts any Python int; a
codec's options end up in TensorFlow, whose widest integer is int64, and a boolean where a
number belongs is nearly always a mistake in a schema file. :class:`CodecOptions` refuses
both, for every codec's options alike.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

import pydantic

__all__ = ["CodecOptions", "check_numbers"]

_INT64 = (-(2**63), 2**63 - 1)


def _leaf_types(annotation: Any) -> set[Any] | None:
    """The scalar types an annotation admits, through unions, containers, Annotated and
    Literal; None when it admits anything (Any, object, or unknown generics)."""
    found: set[Any] = set()
    stack = [annotation]
    while stack:
        item = stack.pop()
        if item is Any or item is object:
            return None
        origin = typing.get_origin(item)
        if origin is Literal:
            found.update(type(arg) for arg in typing.get_args(item))
        elif origin is typing.Annotated:
            stack.append(typing.get_args(item)[0])
        elif origin is not None or isinstance(item, types.UnionType):
            stack.extend(arg for arg in typing.get_args(item) if arg is not Ellipsis)
        elif isinstance(item, type):
            found.add(item)
        else:
            return None
    return found


def check_numbers(value: Any, annotation: Any) -> None:
    """ValueError if ``value`` (or a value nested in it) is a bool where ``annotation``
    admits numbers but no bool, or an int beyond int64 where it admits ints."""
    leaves = _leaf_types(annotation)
    if leaves is None:
        return
    numbers = bool(leaves & {int, float})
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            if numbers and bool not in leaves:
                raise ValueError(f"must be a number, not the boolean {str(item).lower()}")
        elif isinstance(item, int):
            if int in leaves and not _INT64[0] <= item <= _INT64[1]:
                raise ValueError(f"{item} is out of the int64 range")
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())


class CodecOptions(pydantic.BaseModel):
    """Base of every codec's options model: immutable, unknown options are errors.

    Numbers are checked more strictly than pydantic's default, for every codec's options
    alike: a boolean is refused where a number is expected (``channels: true`` would
    otherwise become 1, ``max_length: false`` 0), and an integer must fit in int64, the
    widest integer TensorFlow stores.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    @pydantic.field_validator("*", mode="before")
    @classmethod
    def _strict_numbers(cls, value: Any, info: pydantic.ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None:
            check_numbers(value, field.annotation)
        return value
