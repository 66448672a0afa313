"""Schema compatibility: may data written with one schema be read, or appended to, with another?

:func:`check_compatibility` compares a *stored* schema (the one a dataset was written
with) to a *requested* one (a reader's, or a writer's that wants to append) field by
field, and reports every difference with whether it matters.

Reading (``mode="read"``) follows these rules:

* a field the reader asks for that the stored data lacks is fine when it is optional
  (readers see it absent) or has a default; otherwise it is incompatible;
* a stored field the reader's schema dropped, or that the reader does not ask for, is
  not read, so it does not matter;
* for a field both have: a different codec, different codec options (defaults filled
  in), a change of optional, sequence or Example keys, or any other change of its wire
  layout is incompatible; a different default is not (old records hold their values),
  nor are different *decode options* (:attr:`~recordkit.Codec.decode_options`, such as
  the bbox codec's ``format``: the reader gets the values in the form its schema asks
  for). Descriptions never matter.

Appending (``mode="append"``) needs the wire layouts to be identical (equal
fingerprints), with one relaxation for optional fields, because a record that leaves an
optional field out stores nothing for it (no Example key at all):

* an optional field the appending schema adds is compatible: the stored records hold it
  as absent, and the dataset's schema grows to include it;
* an optional field of the stored schema that the appending one leaves out is
  compatible: the appended records hold it as absent;
* different decode options are compatible: appended records are given in the appending
  schema's form and stored as the others are;
* every other difference but descriptions is incompatible.

Codec versions are not part of a schema, and both schemas are compared as the installed
codecs bind them. They are handled apart: readers bind each field to the codec that reads
the version a dataset's manifest records (:meth:`recordkit.Codec.for_stored_version`),
and appends refuse a codec version other than the stored one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import IncompatibleSchemaError, RecordkitError
from recordkit.schema._bound import BoundField, bind_field
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema

__all__ = ["ChangeKind", "CompatibilityReport", "FieldDifference", "check_compatibility"]

#: What changed about a field.
ChangeKind = Literal[
    "added",  # the requested schema has a field the stored one lacks
    "removed",  # the stored schema has a field the requested one lacks
    "unknown",  # a requested field neither schema has
    "codec",  # a different codec, or a codec that is not installed
    "options",  # different codec options (after filling in defaults)
    "optional",  # optional in one, required in the other
    "sequence",  # a sequence in one, a single value in the other
    "keys",  # different Example keys
    "default",  # a different default
    "wire",  # any other difference of the stored layout
]


@dataclasses.dataclass(frozen=True)
class FieldDifference:
    """One difference between two schemas, for one field."""

    field: str
    kind: ChangeKind
    detail: str
    compatible: bool

    def __str__(self) -> str:
        verdict = "compatible" if self.compatible else "incompatible"
        return f"field {self.field!r}: {self.kind}: {self.detail} ({verdict})"


@dataclasses.dataclass(frozen=True)
class CompatibilityReport:
    """Every difference between a stored and a requested schema, and the verdict."""

    mode: Literal["read", "append"]
    differences: list[FieldDifference]

    @property
    def compatible(self) -> bool:
        """True when no difference is incompatible."""
        return all(d.compatible for d in self.differences)

    @property
    def incompatible(self) -> list[FieldDifference]:
        """The differences that prevent reading (or appending)."""
        return [d for d in self.differences if not d.compatible]

    def raise_for_incompatible(self) -> None:
        """Raise :class:`~recordkit.errors.IncompatibleSchemaError` listing each
        incompatible field; return quietly when the schemas are compatible."""
        bad = self.incompatible
        if bad:
            action = "read the stored data" if self.mode == "read" else "append to the stored data"
            fields = ", ".join(dict.fromkeys(repr(d.field) for d in bad))
            raise IncompatibleSchemaError(
                f"the schema cannot {action}: {fields} differ", differences=[str(d) for d in bad]
            )

    def __str__(self) -> str:
        if not self.differences:
            return "the schemas store the same layout"
        verdict = "compatible" if self.compatible else "incompatible"
        return f"{verdict} for {self.mode}:" + "".join(f"\n  - {d}" for d in self.differences)


def check_compatibility(
    stored: Schema,
    requested: Schema,
    *,
    fields: Sequence[str] | None = None,
    mode: Literal["read", "append"] = "read",
    registry: CodecRegistry | None = None,
) -> CompatibilityReport:
    """Compare the ``stored`` schema (what a dataset was written with) with a
    ``requested`` one, field by field.

    :param fields: for ``mode="read"``, the fields the reader asks for (default: all
        of the requested schema's); only they must be readable.
    :param mode: ``"read"`` (reading stored data with ``requested``) or ``"append"``
        (writing more records with ``requested``: the layouts must be identical but
        for optional fields added or left out).
    :param registry: resolves codecs to compare options with their defaults filled in
        and wire layouts (default: the installed plugins).
    """
    if mode not in ("read", "append"):
        raise ValueError(f"mode must be 'read' or 'append', not {mode!r}")
    if mode == "append" and fields is not None:
        raise ValueError("fields only applies to mode='read': appended records hold every field")
    reading = mode == "read"
    if registry is None:
        registry = default_registry()
    wanted = list(requested.fields) if fields is None else list(dict.fromkeys(fields))
    differences: list[FieldDifference] = []
    for name in wanted:
        spec = requested.fields.get(name)
        old = stored.fields.get(name)
        if spec is None:
            kind: ChangeKind = "removed" if old is not None else "unknown"
            detail = "asked for, but the requested schema does not have it"
            differences.append(FieldDifference(name, kind, detail, False))
        elif old is None:
            differences.append(_added(name, spec, reading))
        else:
            differences += _compare(name, old, spec, reading, registry)
    for name in stored.fields:
        if name not in requested.fields and name not in wanted:
            optional = stored.fields[name].optional
            if reading:
                detail = "the requested schema does not have it; it is not read"
            elif optional:
                detail = "appended records hold it as absent (optional)"
            else:
                detail = "stored records have it; appended records would not, and it is not optional"
            differences.append(FieldDifference(name, "removed", detail, reading or optional))
    return CompatibilityReport(mode, differences)


def _added(name: str, spec: FieldSpec, reading: bool) -> FieldDifference:
    if not reading:
        if spec.optional:
            detail = "stored records hold it as absent (optional); the dataset's schema grows to include it"
            return FieldDifference(name, "added", detail, True)
        return FieldDifference(name, "added", "stored records do not have it, and it is not optional", False)
    if spec.optional:
        return FieldDifference(name, "added", "not in the stored data; read as absent (optional)", True)
    if spec.has_default:
        return FieldDifference(
            name, "added", f"not in the stored data; read as its default {spec.default!r}", True
        )
    return FieldDifference(
        name, "added", "not in the stored data, and neither optional nor with a default", False
    )


def _changes(old: dict[str, Any], new: dict[str, Any]) -> str:
    parts = []
    for key in dict.fromkeys([*old, *new]):
        if old.get(key) != new.get(key):
            parts.append(f"{key}: {old.get(key)!r} -> {new.get(key)!r}")
    return "; ".join(parts)


def _compare(
    name: str, old: FieldSpec, new: FieldSpec, reading: bool, registry: CodecRegistry
) -> list[FieldDifference]:
    if old.codec != new.codec:
        return [FieldDifference(name, "codec", f"{old.codec!r} -> {new.codec!r}", False)]
    out: list[FieldDifference] = []
    try:
        old_bound: BoundField | None = bind_field(name, old, registry)
        new_bound: BoundField | None = bind_field(name, new, registry)
    except RecordkitError as exc:
        # Without the codec, compare what the schemas say; a reader cannot decode anyway.
        old_bound = new_bound = None
        out.append(FieldDifference(name, "codec", f"cannot be resolved: {exc.reason}", False))
    if old_bound is not None and new_bound is not None:
        old_options = old_bound.codec.stored_options()
        new_options = new_bound.codec.stored_options()
        old_all = old_bound.codec.options.model_dump(mode="json")
        new_all = new_bound.codec.options.model_dump(mode="json")
        decoding = {k: old_all[k] for k in old_bound.codec.decode_options}
        wanted = {k: new_all[k] for k in new_bound.codec.decode_options}
        if decoding != wanted:  # how values are given and read back, not what is stored
            detail = f"{_changes(decoding, wanted)} (how values are given and read; the same is stored)"
            out.append(FieldDifference(name, "options", detail, True))
    else:
        old_options, new_options = old.options, new.options
    if old_options != new_options:
        out.append(FieldDifference(name, "options", _changes(old_options, new_options), False))
    if old.sequence != new.sequence:
        detail = (
            "stored as a list of values, requested as one value"
            if old.sequence
            else "stored as one value, requested as a list of values"
        )
        out.append(FieldDifference(name, "sequence", detail, False))
    if old.optional != new.optional:
        detail = (
            "stored optional, requested required (stored records may lack it)"
            if old.optional
            else "stored required, requested optional (stored records have no presence flag)"
        )
        out.append(FieldDifference(name, "optional", detail, False))
    if old.keys != new.keys:
        if old_bound is not None and new_bound is not None:
            detail = f"Example keys {old_bound.keys} -> {new_bound.keys}"
        else:
            detail = f"keys {old.keys} -> {new.keys}"
        out.append(FieldDifference(name, "keys", detail, False))
    if old.default != new.default:
        detail = f"{old.default!r} -> {new.default!r}"
        if reading:
            detail += " (stored records hold their values)"
        out.append(FieldDifference(name, "default", detail, reading))
    if old_bound is not None and new_bound is not None and not any(not d.compatible for d in out):
        old_layout = {k: v for k, v in old_bound.wire_layout().items() if k != "default"}
        new_layout = {k: v for k, v in new_bound.wire_layout().items() if k != "default"}
        if old_layout != new_layout:
            out.append(FieldDifference(name, "wire", _changes(old_layout, new_layout), False))
    return out
