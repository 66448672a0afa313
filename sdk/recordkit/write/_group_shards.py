"""Field group shards, as ``add_fields`` writes them and as an append keeps them aligned.

A field group (:class:`~recordkit.dataset._manifest.FieldGroup`) has one shard per shard
of its split, ``fields/<split>/<group>.<token>-<shard>.tfrecord``, holding the group's
fields of the split's shard's records in the same order. ``<token>`` is the run's: each
run of ``add_fields`` writes under a token of its own; an append writes under its group's
first shard's in a local folder (whose lock keeps other runs out) and under its own run's
token in an object store (where no lock does: a late upload of an append a resume took
over then lands beside the resume's shard, never on it). Two runs never write the same
name in a bucket, and a run's leftovers are told from another's by name. This module
names those files, lists them in the manifest, removes the ones a stopped run left
unlisted (after the run that removes them took the write over), and, for a
:class:`~recordkit.DatasetWriter` appending to a split with field groups, splits each
record into the split's fields and each group's (:class:`GroupAppend`): the writer writes
the groups' parts into group shards that roll over with the split's shards and are
listed in the same save of ``dataset.json`` as the shard they are aligned with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import FieldGroup, GroupShardInfo, Manifest, ShardInfo, SplitInfo
from recordkit.errors import DatasetError, IncompatibleSchemaError
from recordkit.format._tfrecord import Compression
from recordkit.schema._encoder import RecordEncoder, SidesSeen, record_items
from recordkit.schema._schema import Schema
from recordkit.storage import Location, fsync_dir
from recordkit.write._shard_file import ShardFile, new_run_token

__all__ = [
    "FIELDS_FOLDER",
    "GroupAppend",
    "GroupShards",
    "group_shard_entry",
    "group_shard_file",
    "group_field_owners",
    "group_token",
    "new_run_token",
    "remove_unlisted_group_files",
    "without_group_fields",
]

#: The folder, under a dataset's root, of its field groups' shards (one folder per split).
FIELDS_FOLDER = "fields"


def group_shard_file(split: str, group: str, token: str, index: int, compression: Compression) -> str:
    """The file, relative to the dataset's root, of group ``group``'s ``index``-th shard."""
    return f"{FIELDS_FOLDER}/{split}/{group}.{token}-{index:05d}.tfrecord{compression.suffix}"


def group_token(group: FieldGroup) -> str:
    """The token in the names of a group's shards: its first listed shard's, else a new one
    (a replaced group's files and its replacement's never share a name)."""
    if group.shards:
        return group.shards[0].file.rsplit("/", 1)[-1].split(".")[1].split("-")[0]
    return new_run_token()


def group_shard_entry(written: ShardInfo, file: str, aligned_with: str) -> GroupShardInfo:
    """The manifest entry of a group shard just written as ``file``, aligned with the
    split's shard of sha256 ``aligned_with`` (its index file named from the root too)."""
    index = None
    if written.index is not None:
        folder = file.rsplit("/", 1)[0]
        index = written.index.model_copy(update={"file": f"{folder}/{written.index.file}"})
    return GroupShardInfo(
        file=file,
        records=written.records,
        bytes=written.bytes,
        sha256=written.sha256,
        index=index,
        aligned_with=aligned_with,
    )


def without_group_fields(manifest: Manifest, schema: Schema) -> Schema:
    """``schema`` without the fields of any split's field groups (``schema`` itself when it
    has none): what an append stores in the split's own shards and the dataset's schema."""
    in_groups = {
        field
        for info in manifest.splits.values()
        for group in (info.field_groups or {}).values()
        for field in group.fields
    }
    if not in_groups & set(schema.fields):
        return schema
    own = {name: spec for name, spec in schema.fields.items() if name not in in_groups}
    return schema.model_copy(update={"fields": own})


def group_field_owners(manifest: Manifest, schema: Schema) -> dict[str, str]:
    """The writer's reason for refusing a field of ``schema`` that split field groups store
    (:func:`without_group_fields` leaves it out of the split's shards), by field name: the
    groups and splits that store it. A split with that group takes the field into its group
    shards; a record of any other split carrying it gets this reason."""
    owners: dict[str, list[str]] = {}
    for split, info in manifest.splits.items():
        for name, group in (info.field_groups or {}).items():
            for field in group.fields:
                if field in schema.fields:
                    owners.setdefault(field, []).append(f"field group {name!r} of split {split!r}")
    return {
        field: (
            f"a field of {' and '.join(where)} only, which this split does not have: leave it out of "
            "this split's records, or add it to this split with recordkit.add_fields"
        )
        for field, where in owners.items()
    }


def remove_unlisted_group_files(
    folder: Location, name: str, runs: Collection[str] | None, info: SplitInfo
) -> None:
    """Files of group ``name`` written by the runs of tokens ``runs`` (None: by any run)
    in ``folder`` that the manifest does not list, removed: what those runs left (their
    temporary files, shards renamed or uploaded but never listed). Called once no save of
    those runs can succeed any more (their lock is gone, or this writer's conditional
    save replaced the manifest they read), so nothing removed can be listed later; with
    ``runs``, another run's files, under its own token, are left alone."""
    listed = {
        f.rsplit("/", 1)[-1]
        for group in (info.field_groups or {}).values()
        for shard in group.shards
        for f in (shard.file, shard.index.file if shard.index is not None else "")
    }
    prefixes = tuple(
        f"{hidden}{name}.{run}"
        for hidden in ("", ".")
        for run in ([""] if runs is None else [f"{token}-" for token in sorted(runs)])
    )
    if not prefixes:
        return
    for file in folder.list():
        if file.startswith(prefixes) and file not in listed:
            folder.join(file).remove()


@dataclasses.dataclass
class _Group:
    """One field group of a split being appended to."""

    name: str
    entry: FieldGroup
    #: Encodes the group's fields that the appending schema lists (those it leaves out,
    #: all optional, are written absent).
    encoder: RecordEncoder
    fields: frozenset[str]
    token: str


class GroupShards:
    """The group shards being written beside one shard of the split, one per group."""

    def __init__(self, files: list[tuple[_Group, str, ShardFile]], folder: Location, durable: bool) -> None:
        self._files = files
        self._folder = folder
        self._durable = durable

    def add(self, parts: list[bytes]) -> None:
        """Append a record's framed group parts, one per group, in the groups' order."""
        for (_, _, shard), framed in zip(self._files, parts, strict=True):
            shard.add(framed)

    def commit(self, aligned_with: ShardInfo) -> list[tuple[FieldGroup, GroupShardInfo]]:
        """Complete every group shard (written, fsynced, renamed) and return each group's
        entry for it, aligned with the split's shard ``aligned_with``; on an error, the
        shards not completed are discarded."""
        entries = []
        try:
            while self._files:
                group, file, shard = self._files[0]
                written = shard.commit()
                self._files.pop(0)
                entries.append((group.entry, group_shard_entry(written, file, aligned_with.sha256)))
        except BaseException:
            self.discard()
            raise
        local = self._folder.local_path
        if self._durable and local is not None:
            fsync_dir(local)  # the renames made durable before the manifest lists them
        return entries

    def discard(self) -> None:
        """Discard the group shards not completed (their split's shard was not)."""
        files, self._files = self._files, []
        for _, _, shard in files:
            shard.discard()


class GroupAppend:
    """The field groups of split ``split`` that records appended to it fill in.

    Built when the append opens the split, before anything of it is written, it refuses
    what would not read back as the groups' fields: a group still being added, a field
    the appending ``schema`` stores otherwise than its group, a required group field the
    schema leaves out, a codec installed in another version than the one the group was
    written with. A group field the schema leaves out (optional, or with a default) is
    written absent, as the codec writes an absent value.
    """

    def __init__(
        self,
        root: Location,
        split: str,
        info: SplitInfo,
        schema: Schema,
        registry: CodecRegistry,
        *,
        compression: Compression,
        durable: bool,
        token: str | None = None,
    ) -> None:
        self.split = split
        self._token = token
        self._root = root
        self._folder = root.join(FIELDS_FOLDER, split)
        self._compression = compression
        self._durable = durable
        groups = info.field_groups or {}
        unfinished = [name for name, group in groups.items() if group.unfinished]
        if unfinished:
            raise DatasetError(
                f"split {split!r} has a field group being added ({', '.join(unfinished)}); finish it first "
                "(run add_fields again with the same arguments) or remove it (recordkit.remove_fields "
                "with that name), then append",
                file=str(root),
            )
        self._groups = [self._check(name, group, schema, registry) for name, group in groups.items()]
        #: The fields of the records that go to a group rather than to the split's shards.
        self.fields = frozenset(f for group in self._groups for f in group.fields)

    def _check(self, name: str, group: FieldGroup, schema: Schema, registry: CodecRegistry) -> _Group:
        """Group ``name`` as records of ``schema`` fill it in; every difference that stops
        them from doing so raised as one IncompatibleSchemaError."""
        differences = []
        listed = []
        for field, spec in group.fields.items():
            given = schema.fields.get(field)
            if given is None:
                if not spec.optional and not spec.has_default:
                    differences.append(
                        f"field {field!r} of field group {name!r} is required, and the schema leaves it out"
                    )
                continue
            if given != spec:
                differences.append(
                    f"field {field!r}: the schema has {given.model_dump(exclude_defaults=True)}, field group "
                    f"{name!r} stores {spec.model_dump(exclude_defaults=True)}"
                )
            listed.append(field)
        bound = Schema(name=name, fields=dict(group.fields)).bind(registry, fields=listed)
        for bound_field in bound.fields:
            stored = group.codecs.get(bound_field.spec.codec)
            if stored is not None and stored.version != bound_field.codec.version:
                differences.append(
                    f"field {bound_field.name!r} of field group {name!r}: codec {bound_field.spec.codec!r} "
                    f"version {stored.version!r} stored, {bound_field.codec.version!r} installed"
                )
        if differences:
            raise IncompatibleSchemaError(
                f"cannot append to split {self.split!r}: its records carry the fields of its field groups "
                "too, stored as the groups store them (rk.open(path, split).schema lists them all)",
                differences=differences,
            )
        token = self._token if self._token is not None else group_token(group)
        return _Group(name, group, RecordEncoder(bound), frozenset(listed), token)

    def encode(
        self, encoder: RecordEncoder, record: Any, label: int | str, seen: SidesSeen | None = None
    ) -> tuple[list[bytes], int, list[bytes]]:
        """``record`` encoded: the pieces of the split's fields' Example (by ``encoder``,
        which adds the sides of their pictures to ``seen``) and their size, and each
        group's framed Example of its fields. A field the schema does not list goes to
        ``encoder``, which names it; any part that fails raises before anything of the
        record is written."""
        items = record_items(record)
        fields = self.fields
        own = {k: v for k, v in items.items() if k not in fields}
        pieces, size = encoder.encode_pieces(own, label, seen)
        parts = [
            group.encoder.encode_framed({k: v for k, v in items.items() if k in group.fields}, label)
            for group in self._groups
        ]
        return pieces, size, parts

    def open(self, index: int) -> GroupShards:
        """The group shards beside the split's ``index``-th shard."""
        files = []
        for group in self._groups:
            file = group_shard_file(self.split, group.name, group.token, index, self._compression)
            path = self._root.join(*file.split("/"))
            files.append((group, file, ShardFile(path, self._compression, durable=self._durable)))
        self._folder.mkdir()
        return GroupShards(files, self._folder, self._durable)

    def remove_debris(self, info: SplitInfo, stopped: frozenset[str] | None = None) -> None:
        """Remove the group files a stopped append left unlisted (before it resumes, once
        it has taken the append over): locally those under each group's token, which a
        local append writes under (an ``add_fields`` run writes under its own); in an
        object store, where each append wrote under its own run's token, those of the
        ``stopped`` runs (:func:`~recordkit.write._debris.stopped_runs`), as the split's
        unlisted shards are: a live run's files are never removed."""
        for group in self._groups:
            runs = stopped if self._token is not None else (group.token,)
            remove_unlisted_group_files(self._folder, group.name, runs, info)
