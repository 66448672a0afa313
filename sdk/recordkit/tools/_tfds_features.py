"""The ``features.json`` of a recordkit dataset: its fields' TFDS features, checked against
what each field stores and nested as TFDS nests them.

A codec says which TFDS features read its wire features as they are stored
(:class:`~recordkit.TfdsDescribed`), and what each expects to parse: a kind and a shape.
:func:`described_field` places them at the field's Example keys (its own, or those the
schema maps) and refuses the field, by name, when it stores anything else there: other
values, columns spread over several keys, an optional field (TFDS reads every feature in
every record). :func:`features_dict` builds TFDS's ``FeaturesDict`` from the placed
features: TFDS joins nested feature names with ``/`` into Example keys, so the key
``objects/bbox`` is the feature ``bbox`` of the ``FeaturesDict`` ``objects``; a codec's
``sequence`` features go in one ``Sequence`` (a box's ``BBoxFeature`` and its class's
``ClassLabel``, under ``objects/bbox`` and ``objects/label``, in the ``Sequence``
``objects``). Two fields whose keys would nest into each other are refused by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from recordkit.codec._capabilities import TfdsDescribed, TfdsFeature
from recordkit.errors import DatasetError
from recordkit.schema._bound import BoundField

__all__ = ["PlacedFeature", "described_field", "features_dict"]

_CLASSES = "tensorflow_datasets.core.features."
_FEATURES_DICT = f"{_CLASSES}features_dict.FeaturesDict"
_SEQUENCE = f"{_CLASSES}sequence_feature.Sequence"


@dataclasses.dataclass(frozen=True)
class PlacedFeature:
    """A TFDS feature of field ``field``, read under Example key ``key``."""

    field: str
    key: str
    feature: TfdsFeature


def refused(field: str, codec: str, why: str) -> DatasetError:
    """The error of a field TFDS cannot read as it is stored."""
    return DatasetError(f"codec {codec!r} has no TFDS feature recordkit can describe: {why}", field=field)


def described_field(field: BoundField) -> list[PlacedFeature]:
    """The TFDS features of ``field`` at its Example keys, each checked against what the
    field stores there (see the module docs); a DatasetError naming the field when TFDS
    cannot read it as it is stored."""
    spec, codec = field.spec, field.codec
    if spec.optional:
        raise refused(field.name, spec.codec, "it is optional (TFDS reads every feature in every record)")
    if not isinstance(codec, TfdsDescribed):
        raise refused(field.name, spec.codec, "the codec does not describe its fields for TFDS")
    try:
        features = codec.tfds_features()
    except ValueError as exc:
        raise refused(field.name, spec.codec, str(exc)) from None
    stored = {keyed.feature.name: keyed for keyed in field.features}
    placed = []
    for feature in features:
        keyed = stored.get(feature.wire)
        what = _class_name(feature.entry)
        if keyed is None:
            raise refused(
                field.name, spec.codec, f"its {what} reads wire feature {feature.wire!r}, which it lacks"
            )
        if keyed.columns or keyed.constant is not None:
            how = "a constant" if keyed.constant is not None else f"the columns {list(keyed.columns)}"
            raise refused(
                field.name, spec.codec, f"TFDS's {what} reads one key, and the schema's keys store {how}"
            )
        held = keyed.feature
        if held.kind is not feature.kind or held.shape != feature.shape:
            expected, found = _values(feature.kind.value, feature.shape), _values(held.kind.value, held.shape)
            raise refused(
                field.name,
                spec.codec,
                f"TFDS's {what} parses {expected} under {keyed.key!r}, and the field stores {found}",
            )
        if spec.sequence:
            if feature.sequence or keyed.lengths_key:
                raise refused(field.name, spec.codec, "it is a sequence of lists, which TFDS does not read")
            feature = dataclasses.replace(feature, shape=(None, *feature.shape), sequence=True)
        placed.append(PlacedFeature(field.name, keyed.key, feature))
    return placed


def features_dict(placed: Iterable[PlacedFeature]) -> dict[str, Any]:
    """The top ``FeaturesDict`` of ``features.json`` holding every placed feature,
    nested by its key; a DatasetError naming the fields whose keys collide."""
    tree = _Tree()
    by_field: dict[str, list[PlacedFeature]] = {}
    for item in placed:
        by_field.setdefault(item.field, []).append(item)
    for field, items in by_field.items():
        in_sequence = [item for item in items if item.feature.sequence]
        for item in items:
            if not item.feature.sequence:
                tree.put(field, item.key, dict(item.feature.entry))
        if len(in_sequence) == 1:
            tree.put(field, in_sequence[0].key, _sequence(in_sequence[0].feature.entry))
        elif in_sequence:
            tree.put(field, _sequence_parent(field, in_sequence), _sequence(_dict(_leaves(in_sequence))))
    return _dict(tree.root)


def _sequence_parent(field: str, items: list[PlacedFeature]) -> str:
    """The key of the ``Sequence`` holding ``items`` (``objects`` for ``objects/bbox``
    and ``objects/label``): their keys' one parent."""
    parents = {item.key.rpartition("/")[0] for item in items}
    if len(parents) != 1 or "" in parents:
        keys = ", ".join(repr(item.key) for item in items)
        raise DatasetError(
            f"TFDS reads the features of one Sequence under <name>/<feature> keys, and the field's keys "
            f"are {keys}; map them under one name, e.g. keys: {{'': objects/bbox, labels: objects/label}}",
            field=field,
        )
    return parents.pop()


def _leaves(items: list[PlacedFeature]) -> dict[str, Any]:
    return {item.key.rpartition("/")[2]: dict(item.feature.entry) for item in items}


def _sequence(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"pythonClassName": _SEQUENCE, "sequence": {"feature": dict(entry), "length": "-1"}}


def _dict(features: Mapping[str, Any]) -> dict[str, Any]:
    nested = {name: _dict(f) if isinstance(f, _Node) else f for name, f in features.items()}
    return {"featuresDict": {"features": nested}, "pythonClassName": _FEATURES_DICT}


class _Node(dict[str, Any]):
    """A nested ``FeaturesDict`` being built (a plain dict is a feature's entry)."""


@dataclasses.dataclass
class _Tree:
    """The features by key path, with the field that placed each, to name collisions."""

    root: _Node = dataclasses.field(default_factory=_Node)
    owners: dict[str, str] = dataclasses.field(default_factory=dict)

    def put(self, field: str, key: str, entry: dict[str, Any]) -> None:
        parts = key.split("/")
        if "" in parts:
            raise DatasetError(f"TFDS cannot name a feature by the key {key!r} (an empty name)", field=field)
        node = self.root
        for depth, part in enumerate(parts):
            path = "/".join(parts[: depth + 1])
            last = depth == len(parts) - 1
            if part in node and (last or not isinstance(node[part], _Node)):
                self.collide(field, key, path)
            if last:
                node[part] = entry
                self.owners[path] = field
            else:
                node = node.setdefault(part, _Node())
                self.owners.setdefault(path, field)

    def collide(self, field: str, key: str, path: str) -> None:
        other = self.owners[path]
        raise DatasetError(
            f"TFDS nests features by the '/' in their keys, and this field's key {key!r} meets field "
            f"{other!r}'s feature {path!r}: map one of them elsewhere with keys:",
            field=field,
        )


def _class_name(entry: Mapping[str, Any]) -> str:
    name = entry.get("pythonClassName")
    return name.rsplit(".", 1)[-1] if isinstance(name, str) else "feature"


def _values(kind: str, shape: tuple[int | None, ...]) -> str:
    dims = ", ".join("n" if d is None else str(d) for d in shape)
    return (
        f"{kind} values of shape ({dims}{',' if len(shape) == 1 else ''})" if shape else f"one {kind} value"
    )
