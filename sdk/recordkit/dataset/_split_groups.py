"""Reading a split's field groups as fields of its schema.

A field group (:class:`~recordkit.dataset._manifest.FieldGroup`, written by
:func:`recordkit.add_fields`) keeps fields added after a split was written in shards of
its own, aligned one to one with the split's: record ``j`` of the group's shard ``i``
belongs to record ``j`` of the split's shard ``i``. Readers see the split's schema with
the groups' fields appended (:func:`split_schema`), bound each to the codec version that
wrote it (:func:`bind_split`).

The join costs no decode of its own: a serialized ``tf.train.Example`` followed by
another is, by protobuf's rules, the Example holding both one's features and the
other's, so a reader joins a record by concatenating its bytes from each file read
(``tf.strings.join`` in tf.data, ``b"".join`` elsewhere) and parses it once, as a record
written inline. Only the files holding requested fields are read
(:func:`join_groups`): reading ``["embedding", "label"]`` reads the split's shards (for
``label``) and the embedding's group, not the other groups; a projection of group fields
only reads no shard of the split at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import FieldGroup, Manifest, ShardInfo
from recordkit.dataset._paths import member
from recordkit.dataset._shards import LazyShards, ListedShards, Shard, ShardPiece, split_names
from recordkit.errors import ManifestError
from recordkit.schema._bound import BoundField, check_shared_keys
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.storage import Location

__all__ = [
    "JoinedShards",
    "bind_split",
    "dataset_groups",
    "join_groups",
    "join_split_groups",
    "split_groups",
    "split_schema",
]


def split_groups(manifest: Manifest, split: str) -> dict[str, FieldGroup]:
    """The field groups that readers of ``split`` join (one split, or the splits of an
    expression such as ``train+validation``, which must have the same groups)."""
    splits = split_names(manifest, split)
    found = [manifest.split(name).groups for name in splits]
    if not found:
        return {}
    first = found[0]
    for name, groups in zip(splits[1:], found[1:], strict=True):
        if set(groups) != set(first) or any(groups[g].fields != first[g].fields for g in groups):
            raise ManifestError(
                f"splits {splits[0]!r} and {name!r} have different field groups "
                f"({', '.join(sorted(first)) or 'none'} against {', '.join(sorted(groups)) or 'none'}); "
                "read them one at a time"
            )
    return first


def dataset_groups(manifest: Manifest) -> dict[str, FieldGroup]:
    """The field groups of every split, for what parses any split's records (a generated
    parser), by ``split/group``: splits may have different groups, but a field that two
    splits' groups both hold must be stored alike (same spec, same codec version)."""
    found: dict[str, FieldGroup] = {}
    stored: dict[str, tuple[str, Any]] = {}
    for split_name, info in manifest.splits.items():
        for name, group in info.groups.items():
            where = f"{split_name}/{name}"
            for field, spec in group.fields.items():
                provenance = group.codecs.get(spec.codec)
                layout = (spec, provenance.version if provenance is not None else None)
                first = stored.setdefault(field, (where, layout))
                if first[1] != layout:
                    raise ManifestError(
                        f"field {field!r} is stored differently by field group {where!r} and by {first[0]!r} "
                        "(another spec or codec version): generate a parser for one split's fields at a time"
                    )
            found[where] = group
    return found


def split_schema(manifest: Manifest, groups: dict[str, FieldGroup]) -> Schema:
    """The stored schema as readers of a split with ``groups`` see it: the manifest's
    fields, then each group's."""
    if not groups:
        return manifest.schema
    fields = dict(manifest.schema.fields)
    for group in groups.values():
        fields.update(group.fields)
    return manifest.schema.model_copy(update={"fields": fields})


def bind_split(
    manifest: Manifest,
    groups: dict[str, FieldGroup],
    registry: CodecRegistry,
    schema: Schema,
    fields: Sequence[str] | None,
) -> BoundSchema:
    """``schema``'s ``fields`` bound to read a split with ``groups``: a group's field to
    the codec that reads what the group's codec version stored, another to the split's."""
    if not groups:
        return schema.bind(registry, fields=fields, versions=manifest.codec_versions)
    owner = {field: group for group in groups.values() for field in group.fields}
    names = list(schema.fields) if fields is None else list(dict.fromkeys(fields))
    bound: list[BoundField] = []
    for name in names:
        group = owner.get(name)
        versions = (
            manifest.codec_versions
            if group is None
            else {codec: provenance.version for codec, provenance in group.codecs.items()}
        )
        bound.extend(schema.bind(registry, fields=[name], versions=versions).fields)
    check_shared_keys(bound, schema.fields)
    return BoundSchema(schema, tuple(bound))


@dataclasses.dataclass(frozen=True)
class GroupFile:
    """A file to read for one shard of a split: the split's shard or a group's."""

    path: Location
    info: ShardInfo


def join_groups(
    root: Location, groups: dict[str, FieldGroup], wanted: Iterable[str], index: int, shard: ShardInfo
) -> list[GroupFile]:
    """The files that hold the ``wanted`` fields of ``shard``, the split's ``index``-th:
    the shard itself when a wanted field is no group's, then the ``index``-th shard of
    each group with a wanted field, in manifest order. The first file is the one read
    as "the shard"; the others are joined to it."""
    wanted = set(wanted)
    needed = [g for g in groups.values() if wanted & set(g.fields)]
    in_groups = {field for g in groups.values() for field in g.fields}
    files = [GroupFile(member(root, shard.file), shard)] if not needed or wanted - in_groups else []
    files.extend(GroupFile(member(root, g.shards[index].file), g.shards[index]) for g in needed)
    return files


def join_split_groups(
    root: Location, manifest: Manifest, split: str, shards: LazyShards, wanted: Sequence[str]
) -> JoinedShards:
    """``shards`` of ``split`` with the field groups holding ``wanted`` fields joined
    (:func:`join_groups`), each made when it is asked for (:class:`JoinedShards`)."""
    return JoinedShards(root, manifest, split, shards, tuple(wanted))


class JoinedShards(LazyShards):
    """A split's shards with their field groups' shards joined: shard ``i`` is the
    :class:`Shard` of the first file :func:`join_groups` gives for the split's ``i``-th
    shard, the others joined to it. A shard whose wanted fields all live in groups is
    read from the first group's file: the split's own shard is then never made, so its
    file is not touched (not even a ``stat``: a listed shard's path is resolved only
    when it is made). Made when asked for, as :class:`ListedShards` makes shards."""

    def __init__(
        self, root: Location, manifest: Manifest, split: str, shards: LazyShards, wanted: tuple[str, ...]
    ) -> None:
        super().__init__()
        self._root = root
        self._manifest = manifest
        self._split = split
        self._shards = shards
        self._wanted = wanted
        self._where: dict[str, tuple[dict[str, FieldGroup], int]] | None = None

    def __len__(self) -> int:
        return len(self._shards)

    def piece(self, i: int) -> ShardPiece:
        return self._shards.piece(i)

    def place(self, i: int) -> int | None:
        return self._shards.place(i)

    @property
    def root(self) -> Location:
        """The dataset's folder (every file's path is inside it)."""
        return self._root

    @property
    def known_records(self) -> int | None:
        """The split's records (a group's shard holds its split's shard's records: the
        manifest check refuses a group listed otherwise)."""
        return self._shards.known_records

    @property
    def whole_split_alone(self) -> bool:
        """Whether these are a whole split's shards (no slice, one split) each read from
        one file alone (the wanted fields all in the split's own shards, or all in one
        group): known from the manifest, without making a shard."""
        if not isinstance(self._shards, ListedShards):
            return False
        groups = self._manifest.split(self._split).groups.values()
        wanted = set(self._wanted)
        needed = [group for group in groups if wanted & set(group.fields)]
        in_groups = {field for group in groups for field in group.fields}
        own = not needed or bool(wanted - in_groups)
        return int(own) + len(needed) == 1

    def _located(self, name: str) -> tuple[dict[str, FieldGroup], int]:
        """The groups of the split that lists shard ``name``, and its place there."""
        if self._where is None:
            self._where = {
                info.file: (split_info.groups, index)
                for split_info in (self._manifest.split(s) for s in split_names(self._manifest, self._split))
                for index, info in enumerate(split_info.readable_shards)
            }
        return self._where[name]

    def _make(self, i: int) -> Shard:
        piece = self._shards.piece(i)
        index = self._shards.place(i)
        if index is not None:  # a whole split's shard
            groups = self._manifest.split(self._split).groups
        else:
            groups, index = self._located(piece.info.file)
        first, *rest = (
            Shard(
                f.path,
                f.info.file,
                f.info.records,
                f.info.bytes,
                f.info.sha256 or None,
                piece.skip,
                piece.take,
            )
            for f in join_groups(self._root, groups, self._wanted, index, piece.info)
        )
        return dataclasses.replace(first, joined=tuple(rest))
