"""Writing another tool's layout: the wire features a schema maps onto column keys,
constants or keys that several fields share.

A schema that maps keys that way describes someone else's Example layout (the object
detection API's four float lists of box coordinates, an image's and a mask's shared
``height``). The writer writes exactly those keys: each column of a feature under its
own key, nothing for a constant (the value must equal it), and a shared key once (every
field that shares it must give the same values). Anything else is an
:class:`~recordkit.errors.InvalidValueError` that says which feature, key or column
differs and how; the encoder adds the field and the record.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from recordkit.codec._wire import WireKind
from recordkit.errors import InvalidValueError
from recordkit.format._example import encode_entry, encode_feature, normalize_values
from recordkit.schema._bound import HasFields, KeyedFeature

__all__ = ["WrittenKeys", "append_foreign", "is_foreign", "shared_keys"]

#: The values written under each shared Example key of one record, with the field that
#: wrote them first: the next field that shares the key is checked against them.
WrittenKeys = dict[str, tuple[str, Any]]


def shared_keys(bound: HasFields) -> frozenset[str]:
    """The Example keys that more than one wire feature of ``bound`` stores."""
    counts = Counter(key for field in bound.fields for keyed in field.features for key in keyed.stored_keys)
    return frozenset(key for key, count in counts.items() if count > 1)


def is_foreign(keyed: KeyedFeature, shared: frozenset[str]) -> bool:
    """Whether ``keyed`` is written another tool's way: from columns, as a constant, or
    under a key another feature shares."""
    return bool(keyed.columns) or keyed.constant is not None or keyed.key in shared


def append_foreign(
    field: str, keyed: KeyedFeature, value: Any, entries: list[bytes], written: WrittenKeys
) -> None:
    """Append the entries of ``keyed``'s ``value`` as the schema maps it (see the module
    docstring); raises InvalidValueError when the value does not fit the layout."""
    feature = keyed.feature
    try:
        values = normalize_values(feature.kind, value)
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"wire feature {feature.name!r}: {exc}") from None
    if feature.is_fixed and len(values) != feature.fixed_size:
        raise InvalidValueError(
            f"wire feature {feature.name!r} holds {len(values)} values, its shape "
            f"{feature.shape} needs {feature.fixed_size}"
        )
    what = f"wire feature {feature.name!r}" if feature.name else "the main wire feature"
    if keyed.constant is not None:
        if any(v != keyed.constant for v in values):
            raise InvalidValueError(
                f"{what} is {_shown(values)}, but the layout stores no key for it: it must be "
                f"{keyed.constant} in every record"
            )
        return
    if not keyed.columns:
        _append_key(field, keyed.key, feature.kind, values, entries, written)
        return
    width = len(keyed.columns)
    if len(values) % width:
        raise InvalidValueError(f"{what} holds {len(values)} values, not a multiple of its {width} columns")
    table = np.asarray(values, dtype=object if feature.kind is WireKind.BYTES else None).reshape(-1, width)
    for i, column in enumerate(keyed.columns):
        cells = table[:, i]
        if isinstance(column, str):
            column_values = list(cells) if feature.kind is WireKind.BYTES else np.ascontiguousarray(cells)
            _append_key(field, column, feature.kind, column_values, entries, written)
        elif np.any(cells != column):
            raise InvalidValueError(
                f"{what}: column {i} is {_shown(cells)}, but the layout stores no key for it: "
                f"it must be {column} in every row"
            )


def _append_key(
    field: str, key: str, kind: WireKind, values: Any, entries: list[bytes], written: WrittenKeys
) -> None:
    """Write ``values`` under ``key``, once: a key another field wrote already in this
    record must hold the same values."""
    if key in written:
        owner, earlier = written[key]
        if not _equal(earlier, values):
            raise InvalidValueError(
                f"Example key {key!r} is {_shown(values)} here, but field {owner!r} writes "
                f"{_shown(earlier)} under it: fields that share a key must agree"
            )
        return
    written[key] = (field, values)
    entries.append(encode_entry(key.encode("utf-8"), encode_feature(kind, values)))


def _equal(first: Any, second: Any) -> bool:
    return len(first) == len(second) and all(a == b for a, b in zip(first, second, strict=True))


def _shown(values: Any, limit: int = 6) -> str:
    """A feature's values, as short as an error message needs."""
    items = [v.item() if isinstance(v, np.generic) else v for v in list(values)[:limit]]
    more = ", ..." if len(values) > limit else ""
    return f"[{', '.join(repr(v) for v in items)}{more}]"
