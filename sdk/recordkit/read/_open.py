"""The open phase: what a reader reads, resolved once.

Every reader (:func:`recordkit.open` and its consumers, :func:`recordkit.load_dataset`,
:func:`recordkit.iter_records`, :class:`recordkit.RandomAccess`, the PyTorch and Grain
datasets, the commands that decode records) starts at :func:`open_locations`. It takes what
the reader was given as Locations (:func:`~recordkit.read._paths.to_locations`, once, at
the entry point), detects a recordkit dataset or a folder TFDS prepared once
(:func:`~recordkit.dataset._detect.find_dataset`), or else takes TFRecord files recordkit
did not write (with a schema that describes their keys), and returns an
:class:`OpenedDataset`: the dataset's folder, its manifest, the shards of the split and
the requested fields bound to their codecs. Local and remote are told apart only by the
storage layer.

Checks made when opening, before any record is read:

* the schema the caller gives is checked against the stored one with the compatibility
  rules (:func:`recordkit.check_compatibility`, mode ``"read"``);
* every codec the requested fields need is installed; if not, the error names the codec
  and the distribution that wrote the dataset (from the manifest's ``codecs`` section);
* each field is bound to the codec that reads what the codec version recorded in the
  manifest stored (:meth:`recordkit.Codec.for_stored_version`), with the reader's own
  ``schema=`` too; a codec that does not read that version is a
  :class:`~recordkit.errors.CodecVersionError` naming the field, both versions and the
  distribution that wrote the dataset.

:func:`check_shards`, before the first read that needs it: every shard exists and has
the size the manifest gives (a cheap ``stat``, a HEAD or one listing), and on request
its sha256 matches; a mismatch names the shard and, where the framing shows it, the
offset of the first bad record (:mod:`recordkit.read._corruption`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import TypeVar

from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._detect import find_dataset
from recordkit.dataset._manifest import MANIFEST_FILE, FieldGroup, Manifest
from recordkit.dataset._picture_sizes import PictureSizes
from recordkit.dataset._shards import Shard, split_picture_sizes, split_shards
from recordkit.dataset._split_groups import bind_split, join_split_groups, split_groups, split_schema
from recordkit.errors import (
    CodecVersionError,
    CorruptRecordError,
    DatasetError,
    ManifestError,
    UnknownCodecError,
)
from recordkit.format._tfrecord import Compression
from recordkit.read._corruption import file_sha256, locate_corruption
from recordkit.read._paths import Paths, describe, expand_files, guess_compression, to_locations
from recordkit.schema._bound import BoundField
from recordkit.schema._compatibility import check_compatibility
from recordkit.schema._encoder import RecordEncoder
from recordkit.schema._schema import BoundSchema, Schema, SchemaLike
from recordkit.storage import Location, StorageOptions

__all__ = [
    "OpenedDataset",
    "bind_to_read",
    "check_shard_size",
    "check_shards",
    "open_dataset",
    "open_locations",
    "open_split",
]


@dataclasses.dataclass(frozen=True)
class OpenedDataset:
    """A dataset opened for reading (recordkit's, or TFRecord files it did not write):
    the shards to read and the bound fields to decode them with."""

    #: The shards, in order (a split's listed shards are made as they are asked for:
    #: :class:`~recordkit.dataset._shards.ListedShards`).
    shards: Sequence[Shard]
    compression: Compression
    #: The schema records are decoded with (the caller's, or the stored one).
    schema: Schema
    #: The requested fields only, bound to their codecs.
    bound: BoundSchema
    manifest: Manifest | None = None
    #: Requested fields that the stored records lack and the reader's schema gives a
    #: default: each record reads as holding it (:attr:`defaults`).
    defaulted: frozenset[str] = frozenset()
    #: The dataset's folder (None: TFRecord files without a manifest), from which
    #: :func:`open_split` reads other splits without reading the manifest again.
    root: Location | None = None
    #: The sizes of the pictures the split holds, by field, where the manifest records
    #: them: readers that resize choose one decode for a field's pictures from them.
    picture_sizes: Mapping[str, PictureSizes] = dataclasses.field(default_factory=dict)

    @property
    def fields(self) -> tuple[BoundField, ...]:
        return self.bound.fields

    @property
    def stored_fields(self) -> BoundSchema:
        """The requested fields that the records store (all but :attr:`defaulted`)."""
        return BoundSchema(self.bound.schema, tuple(f for f in self.fields if f.name not in self.defaulted))

    @functools.cached_property
    def defaults(self) -> Mapping[str, bytes]:
        """Each :attr:`defaulted` field's default as one serialized Example holds it,
        encoded by its codec when a reader first asks (not in the open phase)."""
        return {
            field.name: _default_example(self.bound, field)
            for field in self.fields
            if field.name in self.defaulted
        }


def open_dataset(
    path: Paths,
    split: str | None = "train",
    fields: str | Sequence[str] | None = None,
    *,
    schema: SchemaLike | None = None,
    registry: CodecRegistry | None = None,
    compression: str | None = None,
    check_sizes: bool = True,
    verify_sha256: bool = False,
    storage_options: StorageOptions | None = None,
) -> OpenedDataset:
    """A reader's entry into the open phase: ``path`` (a dataset folder or its
    ``dataset.json``, a folder TFDS prepared, or TFRecord files: a file, a glob pattern
    or a list; local, or remote with its ``storage_options``) as Locations, the schema
    file loaded, then :func:`open_locations`, then :func:`check_shards`.

    :param split: a split expression; None: the dataset's only split, or all of them when
        it has several.
    :param schema: the reader's schema, or the path of a schema file (loaded and checked
        against ``registry``).
    :param check_sizes: compare each shard's size with the manifest (raise on a mismatch).
    :param verify_sha256: also hash every shard and compare with the manifest.
    """
    names = [fields] if isinstance(fields, str) else (list(fields) if fields is not None else None)
    if registry is None:
        registry = default_registry()
    if schema is not None and not isinstance(schema, Schema):
        schema = Schema.load(schema, registry=registry, storage_options=storage_options)
    where = to_locations(path, storage_options)
    dataset = open_locations(where, split, names, schema=schema, registry=registry, compression=compression)
    check_shards(dataset, sizes=check_sizes, sha256=verify_sha256)
    return dataset


def open_locations(
    where: Sequence[Location],
    split: str | None,
    fields: Sequence[str] | None,
    *,
    schema: Schema | None,
    registry: CodecRegistry,
    compression: str | None = None,
) -> OpenedDataset:
    """The open phase (see the module docs): ``where`` (one dataset, or TFRecord files)
    opened once, its ``split`` and ``fields`` resolved (``split`` None: the dataset's only
    split, or all of them when it has several). Nothing is read but the manifest (and, for
    files without one, what their names match); shards are checked later."""
    found = find_dataset(where[0]) if len(where) == 1 and not where[0].is_pattern else None
    if found is not None:
        root, manifest = found
        if split is None:
            split = next(iter(manifest.splits)) if len(manifest.splits) == 1 else "all"
        return _open_manifest(root, manifest, split, fields, schema, registry)
    if schema is None:
        _check_exists(where)
        raise DatasetError(
            f"{describe(where)} is not a recordkit dataset (no {MANIFEST_FILE}); to read TFRecord "
            "files written elsewhere, pass schema= with a schema that describes their keys"
        )
    files = expand_files(where)
    comp = Compression.parse(compression) if compression is not None else guess_compression(files)
    shards = tuple(Shard(f, f.name) for f in files)
    return OpenedDataset(shards, comp, schema, schema.bind(registry, fields=fields))


def open_split(
    dataset: OpenedDataset,
    split: str,
    fields: Sequence[str] | None,
    schema: Schema | None,
    registry: CodecRegistry,
) -> OpenedDataset:
    """Another split (or other fields) of ``dataset``, opened through its manifest, from
    that manifest: nothing is read again. Shards are not checked (see
    :func:`check_shards`)."""
    if dataset.manifest is None or dataset.root is None:
        raise DatasetError("TFRecord files read without a manifest have no splits")
    names = list(fields) if fields is not None else None
    return _open_manifest(dataset.root, dataset.manifest, split, names, schema, registry)


def _open_manifest(
    root: Location,
    manifest: Manifest,
    split: str,
    names: Sequence[str] | None,
    schema: Schema | None,
    registry: CodecRegistry,
) -> OpenedDataset:
    """A dataset (local or remote, recordkit's or TFDS's) opened through its manifest."""
    shards = split_shards(root, manifest, split)
    groups = split_groups(manifest, split)
    stored = split_schema(manifest, groups)
    if schema is not None:
        check_compatibility(
            stored, schema, fields=names, mode="read", registry=registry
        ).raise_for_incompatible()
    read_schema = schema if schema is not None else stored
    bound = bind_to_read(manifest, registry, schema=read_schema, fields=names, split=split)
    if groups:
        shards = join_split_groups(root, manifest, split, shards, [f.name for f in bound.fields])
    defaulted = frozenset(f.name for f in bound.fields if f.name not in stored.fields and f.spec.has_default)
    comp = Compression.parse(manifest.compression)
    sizes = split_picture_sizes(manifest, split)
    return OpenedDataset(shards, comp, read_schema, bound, manifest, defaulted, root, sizes)


def bind_to_read(
    manifest: Manifest,
    registry: CodecRegistry,
    *,
    schema: Schema | None = None,
    fields: Sequence[str] | None = None,
    split: str | None = None,
    groups: dict[str, FieldGroup] | None = None,
) -> BoundSchema:
    """``schema`` (default: the manifest's own, with ``split``'s field groups when a
    split is named, or with ``groups``) bound to decode the dataset's records: each field
    gets the codec that reads what the codec version the manifest (or the field's group)
    records stored. A codec that is missing, or that does not read that version, is an
    error naming the distribution that wrote the dataset (the manifest's ``codecs``
    section)."""
    if groups is None:
        groups = split_groups(manifest, split) if split is not None else {}
    read_schema = schema if schema is not None else split_schema(manifest, groups)
    try:
        return bind_split(manifest, groups, registry, read_schema, fields)
    except UnknownCodecError as exc:
        raise _with_writer(exc, manifest) from None
    except CodecVersionError as exc:
        raise _with_writer(exc, manifest) from None


def _default_example(bound: BoundSchema, field: BoundField) -> bytes:
    """A serialized Example holding only ``field``'s default, encoded by its codec."""
    return RecordEncoder(BoundSchema(bound.schema, (field,))).encode({})


_BindError = TypeVar("_BindError", UnknownCodecError, CodecVersionError)


def _with_writer(exc: _BindError, manifest: Manifest) -> _BindError:
    """``exc`` (a field's codec is not installed, or does not read the version that
    stored the records) with what the manifest says of the codec that wrote them: its
    version, its distribution, and what to install."""
    codec = exc.context.codec
    provenance = manifest.codecs.get(codec) if codec else None
    if provenance is None or provenance.distribution is None:
        return exc
    dist = provenance.distribution
    version = provenance.distribution_version
    written = (
        f"this dataset was written with codec {codec!r} version {provenance.version} "
        f"from distribution {dist!r}{f' {version}' if version else ''}"
    )
    if isinstance(exc, UnknownCodecError):
        advice = f": install it (pip install {dist}) to read this field"
    else:
        advice = f" (pip install '{f'{dist}=={version}' if version else dist}')"
    return type(exc)(f"{exc.reason}; {written}{advice}", context=exc.context.merged(distribution=dist))


def _check_exists(where: Sequence[Location]) -> None:
    """A single local path that names nothing: say so (not "not a dataset")."""
    single = where[0] if len(where) == 1 else None
    if single is not None and not single.is_pattern and single.local_path is not None and not single.exists():
        raise DatasetError("does not exist", file=str(single))


#: Objects one LIST request returns (S3's page; GCS's is the same by default).
_LIST_PAGE = 1000


def check_shards(dataset: OpenedDataset, *, sizes: bool, sha256: bool) -> None:
    """Check the shards of a dataset opened through its manifest against it: each is
    there, with the size the manifest gives (``sizes``; from one listing where that saves
    requests) and its sha256 (``sha256``). A reader checks before the first read that
    needs it."""
    if dataset.manifest is None or not (sizes or sha256):
        return  # nothing asked: no shard is touched (a split of a million opens at once)
    listed = (
        _listed_sizes(dataset.root, dataset.manifest, dataset.shards)
        if sizes and dataset.root is not None
        else {}
    )
    for shard in dataset.shards:
        for file in shard.files:  # the shard, and the field groups' shards joined to it
            _check_shard(file, dataset.compression, sizes=sizes, sha256=sha256, size=listed.get(file.name))


def check_shard_size(shard: Shard, compression: Compression) -> None:
    """``shard`` there, with the size its manifest gives: what a reader checks of each
    shard as it comes to it (a ``stat`` or a HEAD), instead of every shard at open."""
    _check_shard(shard, compression, sizes=True, sha256=False)


def _listed_sizes(root: Location, manifest: Manifest, shards: Sequence[Shard]) -> dict[str, int]:
    """The shards' sizes from one listing of a remote dataset's folder, when that takes
    fewer requests than a HEAD per shard (its pages, judged from the files the manifest
    lists, against the shards); else {} (each shard's size is asked on its own: locally
    a ``stat``)."""
    if root.local_path is not None or len(shards) < 2:
        return {}
    files = sum(2 * len(split.shards) + 2 for split in manifest.splits.values())
    if files // _LIST_PAGE + 1 >= len(shards):
        return {}
    return root.list_sizes()


def _check_shard(
    shard: Shard, compression: Compression, *, sizes: bool, sha256: bool, size: int | None = None
) -> None:
    """Check ``shard`` against the manifest (``size``: already known from a listing)."""
    try:
        if size is None:
            size = shard.path.size()
    except FileNotFoundError:
        raise ManifestError("listed in the manifest but missing on disk", shard=shard.name) from None
    if sizes and shard.bytes is not None and size != shard.bytes:
        problem = locate_corruption(shard.path, compression)
        raise CorruptRecordError(
            f"the file has {size} bytes, the manifest says {shard.bytes} (truncated or changed)"
            + (f"; {problem.reason}" if problem else ""),
            shard=shard.name,
            offset=problem.context.offset if problem else None,
        )
    if sha256 and shard.sha256 is not None:
        digest = file_sha256(shard.path)
        if digest != shard.sha256:
            problem = locate_corruption(shard.path, compression)
            raise CorruptRecordError(
                f"sha256 {digest} differs from the manifest's {shard.sha256}"
                + (f"; {problem.reason}" if problem else "; every record's framing and CRCs are intact"),
                shard=shard.name,
                offset=problem.context.offset if problem else None,
            )
