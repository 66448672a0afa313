"""``add_fields`` and ``remove_fields``: fields added to a written split, its shards untouched.

The added fields go to a field group (:class:`~recordkit.dataset._manifest.FieldGroup`):
one shard per shard of the split, ``fields/<split>/<group>.<token>-<shard>.tfrecord``,
each holding, in the split's record order, a ``tf.train.Example`` of the group's fields
per record, with its record index beside it, as the writer writes shards. Readers join
the group to the split (:mod:`recordkit.dataset._split_groups`).

A write is atomic and resumable, as the dataset writer's: the group is listed in
``dataset.json`` as ``<group>~<run>`` (``unfinished``), which readers leave out, and each
completed shard is added to it; when the last shard is written the group takes its
name (replacing the one it replaces) in one save of the manifest, the commit. A run
that stops leaves the complete shards listed: running ``add_fields`` again with the
same arguments skips them (the values of their records included) and goes on.

``<run>`` is a token new at every run, in the names of the files the run writes. A run
first saves the manifest with its own token in the group's key (the claim), and only
then removes what the run it takes over left unlisted, the files of that run's token
alone: locally the dataset's lock keeps other writers out; on an object store each save
of ``dataset.json`` is conditional on the version this run read or wrote
(:class:`~recordkit.write._commit.RemoteManifest`), so once the claim is saved no save of
the run taken over succeeds, and nothing removed can be listed after. No run lists the
folder or removes a file before its claim, nor ever another run's files (a concurrent
append's, another group's, a replacement's being written), and no two runs write the
same name, so a late upload of a run that lost its claim lands beside the listed files,
never over them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import (
    FieldGroup,
    Manifest,
    SplitInfo,
    read_manifest,
    write_manifest,
)
from recordkit.errors import DatasetError, RecordError, SchemaError
from recordkit.format._tfrecord import Compression
from recordkit.read._shortcuts import iter_records
from recordkit.schema._schema import BoundSchema, Schema, SchemaLike
from recordkit.storage import Location, PathOrUrl, StorageOptions, fsync_dir, location
from recordkit.write._commit import RemoteManifest
from recordkit.write._group_shards import (
    FIELDS_FOLDER,
    group_shard_entry,
    group_shard_file,
    group_token,
    new_run_token,
    remove_unlisted_group_files,
)
from recordkit.write._lock import DatasetLock, Wait
from recordkit.write._plan import codec_provenance, load_schema
from recordkit.write._shard_file import ShardFile

__all__ = ["FIELDS_FOLDER", "Values", "add_fields", "remove_fields"]

#: A group's name: it goes into file names (no dot, which separates the name from its token).
_GROUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")
#: The key under which a group being written is listed until its commit: its name and
#: the token of the run writing it (``new`` before runs had tokens).
_STAGED = "{name}~{run}"
#: A run's token, as the staged key holds it.
_RUN_TOKEN = re.compile(r"^[0-9a-f]{1,64}$")

#: The added values, record by record in the split's order: each a mapping of the group's
#: fields (or, for a group of one field, the field's value), or a function of the record.
Values = Iterable[Any] | Callable[[dict[str, Any]], Any]


def add_fields(
    path: PathOrUrl,
    split: str,
    fields: SchemaLike,
    values: Values,
    *,
    name: str | None = None,
    replace: bool = False,
    read_fields: Iterable[str] | None = None,
    registry: CodecRegistry | None = None,
    storage_options: StorageOptions | None = None,
    durable: bool = True,
    wait: Wait = False,
) -> FieldGroup:
    """Add ``fields`` to the records of ``split`` of the dataset at ``path``, in a field
    group of their own: the split's shards are not rewritten (see the module docs).

    :param fields: the added fields: a :class:`~recordkit.Schema` (its fields), a Record
        class or a schema file; none may share a name with a field the split has.
    :param values: the added values in the split's record order: an iterable (a list, a
        generator, a numpy array of one field's values ...) of one item per record, or
        a function called with each record (decoded as ``iter_records`` gives it, only
        ``read_fields``) that returns its item. An item is a mapping of the group's
        fields to their values; for a group of one field, the field's value alone (a
        mapping is read as the record only when its one key is the field's name).
    :param name: the group's name (default: its first field's); one group per name.
    :param replace: replace the group of that name (its files are removed after the
        commit); without it, adding a group that exists is refused.
    :param read_fields: the fields of each record the function ``values`` is given
        (default: all).
    :param durable: fsync each shard before it is listed (local datasets).
    :param wait: wait for another writer's lock (seconds, or True: as long as it takes).
    :returns: the committed group, as ``dataset.json`` lists it.
    :raises DatasetError: the split is not there or not finished, the group exists
        (without ``replace``), a field name is taken, or ``values`` has fewer or more items
        than the split has records (the shards written so far stay listed, unfinished).
    :raises RecordError: a value fails its codec, naming the record and the field.
    """
    if registry is None:
        registry = default_registry()
    schema = load_schema(fields, registry, storage_options)
    group_name = _check_group_name(name if name is not None else next(iter(schema.fields)))
    bound = schema.bind(registry)
    with _Dataset(location(path, storage_options), wait=wait, durable=durable) as dataset:
        info = dataset.split(split)
        _check_fields(dataset.manifest, info, split, schema, group_name, replace=replace)
        groups = info.field_groups if info.field_groups is not None else {}
        token = new_run_token()
        taken_key, taken = _staged(groups, group_name)
        staged = taken
        if staged is None or staged.fields != schema.fields:
            staged = FieldGroup(
                fields=dict(schema.fields), codecs=codec_provenance(bound, registry), unfinished=True
            )
        if taken_key is not None:
            del groups[taken_key]
        staged_key = _STAGED.format(name=group_name, run=token)
        groups[staged_key] = staged
        info.field_groups = groups
        folder = dataset.root.join(FIELDS_FOLDER, split)
        folder.mkdir()
        dataset.save()  # the claim: from here on no save of the run taken over succeeds
        if taken_key is not None and taken is not None:
            _remove_taken_over(dataset.root, folder, group_name, taken_key, taken, info, kept=taken is staged)
        done = sum(s.records for s in staged.shards)
        items = _items(values, dataset.root, split, read_fields, done, registry, storage_options)
        encoder = bound.encoder()
        compression = Compression.parse(dataset.manifest.compression)
        for index in range(len(staged.shards), len(info.shards)):
            base = info.shards[index]
            file = group_shard_file(split, group_name, token, index, compression)
            shard = ShardFile(dataset.root.join(*file.split("/")), compression, durable=durable)
            try:
                for number in range(base.records):
                    record = done + number
                    item = next(items, _END)
                    if item is _END:
                        raise _count_error(split, record, info)
                    shard.add(encoder.encode_framed(_as_record(item, bound, record), record))
            except BaseException:
                shard.discard()
                raise
            staged.shards.append(group_shard_entry(shard.commit(), file, base.sha256))
            done += base.records
            if durable and folder.local_path is not None:
                fsync_dir(folder.local_path)  # the rename made durable before the manifest lists it
            dataset.save()
        if next(items, _END) is not _END:
            raise _count_error(split, None, info)
        old = groups.pop(group_name, None)
        del groups[staged_key]
        staged.unfinished = None
        groups[group_name] = staged
        dataset.save()
        if old is not None:
            _remove_files(dataset.root, old)
        return staged


def remove_fields(
    path: PathOrUrl,
    split: str,
    name: str,
    *,
    storage_options: StorageOptions | None = None,
    wait: Wait = False,
) -> FieldGroup:
    """Remove the field group ``name`` from ``split``: ``dataset.json`` stops listing it
    (the commit), then its files are deleted. Returns the group removed."""
    with _Dataset(location(path, storage_options), wait=wait, durable=True) as dataset:
        info = dataset.split(split)
        groups = info.field_groups or {}
        if name not in groups:
            raise DatasetError(
                f"split {split!r} has no field group {name!r} (groups: {', '.join(groups) or 'none'})",
                file=str(dataset.root),
            )
        removed = groups.pop(name)
        info.field_groups = groups or None
        dataset.save()
        _remove_files(dataset.root, removed)
        return removed


#: The end of the values.
_END: Any = object()


class _Dataset:
    """A dataset opened to change its field groups: the lock held (local) or the
    manifest's version remembered (remote), the manifest loaded, saved on request."""

    def __init__(self, root: Location, *, wait: Wait, durable: bool) -> None:
        self.root = root
        self.durable = durable
        local = root.local_path
        if local is not None:
            read_manifest(root)  # not a dataset: its error, before a lock file is made there
        self._lock = DatasetLock(local, wait=wait) if local is not None else None
        self._remote = RemoteManifest.at(root, advice=_ADVICE)
        try:
            # Read again holding the lock: what another writer committed meanwhile counts.
            loaded = self._remote.load() if self._remote is not None else read_manifest(root)
            if loaded is None:
                raise DatasetError("no dataset.json: not a recordkit dataset", file=str(root))
        except BaseException:
            self.close()
            raise
        self.manifest = loaded

    def split(self, name: str) -> SplitInfo:
        info = self.manifest.split(name)
        if info.unfinished is not None:
            raise DatasetError(
                f"split {name!r} has an unfinished write; finish it (resume=True) before adding fields",
                file=str(self.root),
            )
        return info

    def save(self) -> None:
        if self._remote is not None:
            self._remote.save(self.manifest)
        else:
            write_manifest(self.manifest, self.root, durable=self.durable)

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> _Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_ADVICE = "run one writer per dataset at a time, then run add_fields again: it resumes"


def _staged(groups: dict[str, FieldGroup], name: str) -> tuple[str | None, FieldGroup | None]:
    """The key and entry of group ``name`` being written (by a run that stopped, or runs)."""
    for key, group in groups.items():
        if group.unfinished and key.startswith(f"{name}~"):
            return key, group
    return None, None


def _remove_taken_over(
    root: Location, folder: Location, name: str, key: str, group: FieldGroup, info: SplitInfo, *, kept: bool
) -> None:
    """After the claim: remove what the run listed under ``key`` left unlisted (its
    token's files only), and, when this run starts the group afresh (other fields), the
    shards it had listed too."""
    if not kept:
        _remove_files(root, group)
    run = key.split("~", 1)[1]
    if run == "new":  # written before runs had tokens: its shards' token, if it listed any
        run = group_token(group) if group.shards else ""
    if _RUN_TOKEN.fullmatch(run):
        remove_unlisted_group_files(folder, name, (run,), info)


def _check_group_name(name: str) -> str:
    if not isinstance(name, str) or not _GROUP_NAME.fullmatch(name):
        raise ValueError(
            f"invalid field group name {name!r}: use letters, digits, '_' and '-', starting with "
            "a letter or digit"
        )
    return name


def _check_fields(
    manifest: Manifest, info: SplitInfo, split: str, schema: Schema, name: str, *, replace: bool
) -> None:
    """Refuse a group that exists (without ``replace``) and fields whose names the split
    has: in its schema, or in another group."""
    groups = info.groups
    if name in groups and not replace:
        raise DatasetError(
            f"split {split!r} already has a field group {name!r} (fields: {', '.join(groups[name].fields)}); "
            "pass replace=True to replace it, or choose another name",
        )
    taken = {field: "the schema" for field in manifest.schema.fields}
    for other, group in groups.items():
        if other != name:
            taken.update(dict.fromkeys(group.fields, f"field group {other!r}"))
    for field in schema.fields:
        if field in taken:
            raise SchemaError(
                f"split {split!r} already has a field {field!r} (in {taken[field]})", field=field
            )


def _items(
    values: Values,
    root: Location,
    split: str,
    read_fields: Iterable[str] | None,
    done: int,
    registry: CodecRegistry,
    storage_options: StorageOptions | None,
) -> Iterator[Any]:
    """The items of the records from ``done`` on: an iterable's, past its first ``done``;
    a function's, of the split's records read from ``done`` on."""
    if callable(values) and not isinstance(values, Iterable):
        function = values
        fields = list(read_fields) if read_fields is not None else None
        records = iter_records(
            root.url, split, fields, registry=registry, start=done, storage_options=storage_options
        )
        return (function(record) for record in records)
    items = iter(values)
    for _ in itertools.islice(items, done):
        pass
    return items


def _as_record(item: Any, bound: BoundSchema, index: int) -> Mapping[str, Any]:
    """``item`` as a record of the group's fields: a group of one field takes a mapping
    only when its one key is the field's name, anything else (a bounding-box dict too)
    is the field's value."""
    if len(bound.fields) == 1:
        name = bound.fields[0].name
        return item if isinstance(item, Mapping) and set(item) == {name} else {name: item}
    if isinstance(item, Mapping):
        return item
    raise RecordError(
        f"is a {type(item).__name__}, not a mapping of the group's fields "
        f"({', '.join(f.name for f in bound.fields)})",
        record=index,
    )


def _count_error(split: str, record: int | None, info: SplitInfo) -> DatasetError:
    total = info.num_records
    if record is None:
        reason = f"values has more items than the {total} records of split {split!r}"
    else:
        reason = f"values ended after {record} items; split {split!r} has {total} records"
    return DatasetError(
        f"{reason}: give one item per record, in the split's order (the group is not committed; "
        "its complete shards stay listed unfinished, and add_fields with the right values resumes)"
    )


def _remove_files(root: Location, group: FieldGroup) -> None:
    """Delete a group's shards and indexes (after the commit that dropped the group)."""
    for shard in group.shards:
        root.join(*shard.file.split("/")).remove()
        if shard.index is not None:
            root.join(*shard.index.file.split("/")).remove()
