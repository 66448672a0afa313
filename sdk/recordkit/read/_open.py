"""What a reader reads: a dataset's shards and the schema to decode them with.

Both readers (:func:`recordkit.load_dataset` with TensorFlow, :func:`recordkit.iter_records`
without) start here. :func:`open_dataset` takes either a recordkit dataset (a folder with
``dataset.json``) or TFRecord files recordkit did not write (a file, a glob pattern or a
list of them, with a schema that describes their keys), and returns the shards with what
the manifest knows of each, and the fields to decode, bound to their codecs.

Checks made here, before any record is read:

* the schema the caller gives is checked against the stored one with the compatibility
  rules (:func:`recordkit.check_compatibility`, mode ``"read"``);
* every codec the requested fields need is installed; if not, the error names the codec
  and the distribution that wrote the dataset (from the manifest's ``codecs`` section);
* each field is bound to the codec that reads what the codec version recorded in the
  manifest stored (:meth:`recordkit.Codec.for_stored_version`), with the reader's own
  ``schema=`` too; a codec that does not read that version is a
  :class:`~recordkit.errors.CodecVersionError` naming the field, both versions and the
  distribution that wrote the dataset;
* every shard exists and has the size the manifest gives (a cheap ``stat``), and on
  request its sha256 matches; a mismatch names the shard and, where the framing shows
  it, the offset of the first bad record.

Also here: :class:`CorruptionReport`, what a read that skips corrupt records lost, and
:func:`worker_share`, the part of a split one worker of a multi-worker job reads.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import logging
import operator
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import MANIFEST_FILE, Manifest
from recordkit.dataset._paths import member
from recordkit.dataset._tfds import is_tfds_folder, load_manifest
from recordkit.errors import (
    CodecVersionError,
    CorruptRecordError,
    DatasetError,
    ManifestError,
    UnknownCodecError,
)
from recordkit.format._tfrecord import Compression, iter_tfrecords
from recordkit.read._slices import SplitRange, is_plain_split, resolve_split, shard_slices
from recordkit.schema._bound import BoundField
from recordkit.schema._compatibility import check_compatibility
from recordkit.schema._encoder import RecordEncoder
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.storage import Location, StorageOptions, is_remote, location

__all__ = [
    "CorruptionReport",
    "OnCorrupt",
    "OpenedDataset",
    "Shard",
    "SkippedRecords",
    "WorkerShare",
    "bind_to_read",
    "check_shards",
    "dataset_root",
    "expand_files",
    "expand_paths",
    "file_sha256",
    "guess_compression",
    "locate_corruption",
    "open_dataset",
    "open_split",
    "worker_share",
]

logger = logging.getLogger("recordkit")

#: What a reader does with a corrupt record: stop with an error, or skip it and report.
OnCorrupt = Literal["raise", "skip"]

PathLike = str | Path
Paths = PathLike | Sequence[PathLike]


@dataclasses.dataclass(frozen=True)
class Shard:
    """One TFRecord file to read, with what the manifest says about it (None: unknown).

    ``path`` is a local Path, or a remote object's :class:`~recordkit.storage.Location`.
    """

    path: Path | Location
    name: str
    records: int | None = None
    bytes: int | None = None
    sha256: str | None = None
    #: A slice of the split (``train[:10%]``): records to read past, then to read (None:
    #: all the rest) (:mod:`recordkit.read._slices`).
    skip: int = 0
    take: int | None = None

    def __post_init__(self) -> None:
        # A remote shard knows its listed sha256: with a cache, it is read from a checked local copy.
        if isinstance(self.path, Location) and self.sha256 is not None:
            object.__setattr__(self, "path", self.path.with_sha256(self.sha256))

    @property
    def sliced(self) -> bool:
        """Whether only part of the shard is read."""
        return self.skip > 0 or self.take is not None

    @property
    def selected(self) -> int | None:
        """How many of the shard's records are read (None: unknown)."""
        if self.take is not None:
            return self.take
        return None if self.records is None else max(self.records - self.skip, 0)


@dataclasses.dataclass(frozen=True)
class OpenedDataset:
    """A dataset opened for reading (recordkit's, or TFRecord files it did not write):
    the shards to read and the bound fields to decode them with."""

    shards: tuple[Shard, ...]
    compression: Compression
    #: The schema records are decoded with (the caller's, or the stored one).
    schema: Schema
    #: The requested fields only, bound to their codecs.
    bound: BoundSchema
    manifest: Manifest | None = None
    #: Requested fields that the stored records lack and the reader's schema gives a
    #: default: each record reads as holding it, as one serialized Example holds it.
    defaults: Mapping[str, bytes] = dataclasses.field(default_factory=dict)
    #: The dataset's folder (None: TFRecord files without a manifest), from which
    #: :func:`open_split` reads other splits without reading the manifest again.
    root: Path | Location | None = None

    @property
    def fields(self) -> tuple[BoundField, ...]:
        return self.bound.fields

    @property
    def stored_fields(self) -> BoundSchema:
        """The requested fields that the records store (all but :attr:`defaults`)."""
        return BoundSchema(self.bound.schema, tuple(f for f in self.fields if f.name not in self.defaults))


@dataclasses.dataclass(frozen=True)
class SkippedRecords:
    """Records a read skipped: where, how many (None: unknown) and why."""

    shard: str
    offset: int | None
    records: int | None
    reason: str

    def __str__(self) -> str:
        count = "records" if self.records is None else f"{self.records} record{'s' * (self.records != 1)}"
        where = f"shard {self.shard}" + (f", offset {self.offset}" if self.offset is not None else "")
        return f"{where}: skipped {count}: {self.reason}"


class CorruptionReport:
    """What a read with ``on_corrupt="skip"`` skipped; pass one in to see it.

    It fills in while the data is read (with tf.data, when a shard's end is reached), so
    look at it after iterating. Each skip is also logged as a warning on the
    ``recordkit`` logger.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._skipped: list[SkippedRecords] = []

    def add(self, skipped: SkippedRecords) -> None:
        """Note records skipped (the readers call it), and log them as a warning."""
        with self._lock:
            self._skipped.append(skipped)
        logger.warning("recordkit: %s", skipped)

    @property
    def skipped(self) -> list[SkippedRecords]:
        """Each skip, in the order it happened."""
        with self._lock:
            return list(self._skipped)

    @property
    def records_skipped(self) -> int:
        """How many records were skipped in all (those of unknown count not included)."""
        return sum(s.records or 0 for s in self.skipped)

    @property
    def shards(self) -> list[str]:
        """The shards where something was skipped."""
        return list(dict.fromkeys(s.shard for s in self.skipped))

    def __bool__(self) -> bool:
        return bool(self.skipped)

    def __str__(self) -> str:
        skipped = self.skipped
        if not skipped:
            return "nothing skipped"
        lines = "".join(f"\n  - {s}" for s in skipped)
        return f"{self.records_skipped} records skipped in {len(self.shards)} shard(s):{lines}"

    def __repr__(self) -> str:
        return f"CorruptionReport({self.skipped!r})"


@dataclasses.dataclass(frozen=True)
class WorkerShare:
    """The part of a split that worker ``index`` of ``count`` reads.

    With at least as many shards as workers, a worker reads every ``count``-th shard,
    starting at its ``index`` (each shard is opened by one worker only); with fewer
    shards, every worker reads every shard and keeps every ``count``-th record, starting
    at its ``index`` (still every record exactly once across the workers). Both readers
    split the same way, so a worker's share is the same records whichever reads it.
    """

    count: int
    index: int

    def shards(self, shards: Sequence[Shard]) -> tuple[tuple[Shard, ...], bool]:
        """This worker's shards, and whether it must also keep only every ``count``-th
        record of them (True when there are fewer shards than workers)."""
        if len(shards) >= self.count:
            return tuple(shards[self.index :: self.count]), False
        return tuple(shards), True


def worker_share(
    input_context: Any = None,
    num_workers: int | None = None,
    worker_index: int | None = None,
    *,
    names: tuple[str, str] = ("num_workers", "worker_index"),
) -> WorkerShare | None:
    """The share of the split a reader's worker options ask for (None: the whole split).

    ``input_context`` is anything with ``num_input_pipelines`` and ``input_pipeline_id``
    (a ``tf.distribute.InputContext``); ``num_workers`` and ``worker_index`` say the same
    in plain numbers. Give one form or the other; a bad value raises ``ValueError`` (or
    ``TypeError``) naming the option, as ``names`` (the caller's names for the two) spell it.
    """
    count_name, index_name = names
    if input_context is not None:
        if num_workers is not None or worker_index is not None:
            raise ValueError(
                f"give input_context or {count_name} and {index_name}, not both (input_context="
                f"{input_context!r}, {count_name}={num_workers!r}, {index_name}={worker_index!r})"
            )
        missing = [a for a in ("num_input_pipelines", "input_pipeline_id") if not hasattr(input_context, a)]
        if missing:
            raise TypeError(
                "input_context must have num_input_pipelines and input_pipeline_id (a "
                f"tf.distribute.InputContext); {type(input_context).__name__} lacks {' and '.join(missing)}"
            )
        count = _whole(input_context.num_input_pipelines, "input_context.num_input_pipelines")
        index = _whole(input_context.input_pipeline_id, "input_context.input_pipeline_id")
        names = ("input_context.num_input_pipelines", "input_context.input_pipeline_id")
    elif num_workers is None and worker_index is None:
        return None
    elif num_workers is None:
        raise ValueError(f"{index_name} needs {count_name} too (how many workers share the split)")
    elif worker_index is None:
        raise ValueError(f"{count_name} needs {index_name} too (this worker's index, 0 to {count_name} - 1)")
    else:
        count = _whole(num_workers, count_name)
        index = _whole(worker_index, index_name)
        names = (count_name, index_name)
    if count < 1:
        raise ValueError(f"{names[0]} must be at least 1, not {count}")
    if not 0 <= index < count:
        raise ValueError(f"{names[1]} must be in 0..{count - 1} ({names[0]} is {count}), not {index}")
    return WorkerShare(count, index) if count > 1 else None


def _whole(value: Any, name: str) -> int:
    """``value`` as an int: Python and numpy integers pass, anything else (bool, float,
    str) is a TypeError naming ``name``."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {value!r}") from None


def open_dataset(
    path: Paths,
    split: str = "train",
    fields: str | Sequence[str] | None = None,
    *,
    schema: Schema | str | os.PathLike[str] | None = None,
    registry: CodecRegistry | None = None,
    compression: str | None = None,
    check_sizes: bool = True,
    verify_sha256: bool = False,
    storage_options: StorageOptions | None = None,
) -> OpenedDataset:
    """Resolve ``path`` (see the module docs) into a :class:`OpenedDataset`.

    ``path`` may be a remote URL (``s3://``, ``gs://``, any fsspec protocol; with its
    ``storage_options``): a dataset's folder, or TFRecord objects (a URL, a list of them,
    or a glob pattern). Only the shards ``dataset.json`` lists are read.

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
    if _any_remote(path):
        remote = _open_remote(
            path, split, names, schema, registry, compression, storage_options, (check_sizes, verify_sha256)
        )
        if remote is not None:
            return remote
    root = dataset_root(path)
    if root is None and isinstance(path, (str, Path)) and is_tfds_folder(path):
        root = Path(path)  # read in place through its manifest view (recordkit.dataset._tfds)
    if root is None:
        _check_exists(path)
        if schema is None:
            raise DatasetError(
                f"{_describe(path)} is not a recordkit dataset (no {MANIFEST_FILE}); to read TFRecord "
                "files written elsewhere, pass schema= with a schema that describes their keys"
            )
        files = expand_paths(path)
        comp = Compression.parse(compression) if compression is not None else guess_compression(files)
        shards = tuple(Shard(f, f.name) for f in files)
        bound = schema.bind(registry, fields=names)
        return OpenedDataset(shards, comp, schema, bound)
    return _open_manifest(
        root,
        load_manifest(root),
        split,
        names,
        schema,
        registry,
        check_sizes=check_sizes,
        sha256=verify_sha256,
    )


def _open_manifest(
    root: Path | Location,
    manifest: Manifest,
    split: str,
    names: list[str] | None,
    schema: Schema | None,
    registry: CodecRegistry,
    *,
    check_sizes: bool,
    sha256: bool,
) -> OpenedDataset:
    """A recordkit dataset (local or remote) opened through its manifest."""
    for name in _split_names(manifest, split):
        info = manifest.split(name)
        if info.unfinished is not None:
            logger.warning(
                "recordkit: split %r of %s has an unfinished %s; reading its %d complete shards%s",
                name,
                root,
                "write" if info.unfinished.shards_before is None else "append",
                len(info.readable_shards),
                "" if info.unfinished.shards_before is None else " from before the append",
            )
    stored = manifest.schema
    if schema is not None:
        check_compatibility(
            stored, schema, fields=names, mode="read", registry=registry
        ).raise_for_incompatible()
    read_schema = schema if schema is not None else stored
    bound = bind_to_read(manifest, registry, schema=read_schema, fields=names)
    shards = _split_shards(root, manifest, split)
    comp = Compression.parse(manifest.compression)
    listed = _listed_sizes(root, manifest, shards) if check_sizes else {}
    for shard in shards:
        _check_shard(shard, comp, sizes=check_sizes, sha256=sha256, size=listed.get(shard.name))
    defaults = {
        field.name: _default_example(bound, field)
        for field in bound.fields
        if field.name not in stored.fields and field.spec.has_default
    }
    return OpenedDataset(shards, comp, read_schema, bound, manifest, defaults, root)


def bind_to_read(
    manifest: Manifest,
    registry: CodecRegistry,
    *,
    schema: Schema | None = None,
    fields: Sequence[str] | None = None,
) -> BoundSchema:
    """``schema`` (default: the manifest's own) bound to decode the dataset's records:
    each field gets the codec that reads what the codec version the manifest records
    stored. A codec that is missing, or that does not read that version, is an error
    naming the distribution that wrote the dataset (the manifest's ``codecs`` section)."""
    read_schema = schema if schema is not None else manifest.schema
    try:
        return read_schema.bind(registry, fields=fields, versions=manifest.codec_versions)
    except UnknownCodecError as exc:
        raise _with_writer(exc, manifest) from None
    except CodecVersionError as exc:
        raise _with_writer(exc, manifest) from None


def _split_names(manifest: Manifest, split: str) -> list[str]:
    """The splits that ``split`` (a name, or a TFDS-style slice expression) reads."""
    if is_plain_split(split):
        return [split]
    return list(dict.fromkeys(r.split for r in _ranges(manifest, split)))


def _ranges(manifest: Manifest, split: str) -> list[SplitRange]:
    shard_counts = {name: [s.records for s in info.readable_shards] for name, info in manifest.splits.items()}
    counts = {name: sum(records) for name, records in shard_counts.items()}
    try:
        return resolve_split(split, counts, shard_counts)
    except ValueError as exc:
        raise ManifestError(str(exc)) from None


def _split_shards(root: Path | Location, manifest: Manifest, split: str) -> tuple[Shard, ...]:
    """The shards ``split`` reads; for a slice only those it touches, each with the
    records to skip and take."""
    if is_plain_split(split):
        listed = manifest.split(split).readable_shards
        return tuple(
            Shard(member(root, s.file), s.file, s.records, s.bytes, s.sha256 or None) for s in listed
        )
    shards: list[Shard] = []
    for part in _ranges(manifest, split):
        listed = manifest.split(part.split).readable_shards
        for piece in shard_slices(part.start, part.stop, [s.records for s in listed]):
            s = listed[piece.index]
            path = member(root, s.file)
            shards.append(Shard(path, s.file, s.records, s.bytes, s.sha256 or None, piece.skip, piece.take))
    return tuple(shards)


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


def dataset_root(path: Paths) -> Path | None:
    if isinstance(path, (str, Path)):
        candidate = Path(path)
        if candidate.is_dir() and (candidate / MANIFEST_FILE).is_file():
            return candidate
        if candidate.name == MANIFEST_FILE and candidate.is_file():
            return candidate.parent
    return None


def _check_exists(path: Paths) -> None:
    """A single path that names nothing: say so (not "not a dataset")."""
    single = isinstance(path, (str, Path)) and not any(ch in str(path) for ch in "*?[")
    if single and not Path(str(path)).exists():
        raise DatasetError("does not exist", file=str(path))


def _describe(path: Paths) -> str:
    return str(path) if isinstance(path, (str, Path)) else f"{len(path)} paths"


def expand_paths(path: Paths) -> list[Path]:
    items = [path] if isinstance(path, (str, Path)) else list(path)
    files: list[Path] = []
    for item in items:
        text = str(item)
        if any(ch in text for ch in "*?["):
            matches = sorted(glob.glob(text))
            if not matches:
                raise DatasetError(f"no files match {text!r}")
            files += [Path(m) for m in matches]
        elif Path(text).is_dir():
            raise DatasetError(
                f"{text} is a folder without {MANIFEST_FILE}; "
                "give its TFRecord files (a list or a glob pattern)"
            )
        elif not Path(text).is_file():
            raise DatasetError("does not exist", file=text)
        else:
            files.append(Path(text))
    if not files:
        raise DatasetError("no files to read")
    return files


def expand_files(path: Paths, storage_options: StorageOptions | None = None) -> list[Path | Location]:
    """The TFRecord files that ``path`` names (a file, a glob pattern, or a list of them):
    local ones as :func:`expand_paths` finds them, remote URLs as their Locations."""
    items = [path] if isinstance(path, (str, Path)) else list(path)
    files: list[Path | Location] = []
    for item in items:
        if not is_remote(item):
            files += expand_paths(item)
            continue
        matches = location(item, storage_options).glob()
        if not matches:
            raise DatasetError(f"no objects match {str(item)!r}")
        files += matches
    return files


def guess_compression(files: list[Path]) -> Compression:
    if all(f.suffix in (".gz", ".gzip") for f in files):
        return Compression.GZIP
    if all(f.suffix in (".zz", ".zlib") for f in files):
        return Compression.ZLIB
    return Compression.NONE


def _any_remote(path: Paths) -> bool:
    items = [path] if isinstance(path, (str, Path)) else list(path)
    return any(is_remote(item) for item in items)


def _open_remote(
    path: Paths,
    split: str,
    names: list[str] | None,
    schema: Schema | None,
    registry: CodecRegistry,
    compression: str | None,
    storage_options: StorageOptions | None,
    checks: tuple[bool, bool],
) -> OpenedDataset | None:
    """A remote dataset (its folder's URL, or its ``dataset.json``'s), or remote TFRecord
    objects read with ``schema``."""
    items = [path] if isinstance(path, (str, Path)) else list(path)
    if len(items) == 1:
        root = location(items[0], storage_options)
        if root.name == MANIFEST_FILE:
            root = root.parent
        if root.join(MANIFEST_FILE).exists():
            manifest = Manifest.load(root)
            sizes, sha256 = checks
            return _open_manifest(
                root, manifest, split, names, schema, registry, check_sizes=sizes, sha256=sha256
            )
    if schema is None:
        raise DatasetError(
            f"{_describe(path)} is not a recordkit dataset (no {MANIFEST_FILE}); to read TFRecord "
            "objects written elsewhere, pass schema= with a schema that describes their keys"
        )
    files: list[Location] = []
    for item in items:
        where = location(item, storage_options)
        if any(ch in where.url for ch in "*?["):
            matches = sorted(where.fs.glob(where.url))
            if not matches:
                raise DatasetError(f"no objects match {where.url!r}")
            files += [location(f"{where.protocol}://{m.split('://')[-1]}", storage_options) for m in matches]
        elif not where.exists():
            raise DatasetError("does not exist", file=where.url)
        else:
            files.append(where)
    comp = (
        Compression.parse(compression)
        if compression is not None
        else guess_compression([Path(f.name) for f in files])
    )
    shards = tuple(Shard(f, f.name) for f in files)
    return OpenedDataset(shards, comp, schema, schema.bind(registry, fields=names))


def _size(path: Path | Location) -> int:
    return path.size() if isinstance(path, Location) else path.stat().st_size


#: Objects one LIST request returns (S3's page; GCS's is the same by default).
_LIST_PAGE = 1000


def _listed_sizes(root: Path | Location, manifest: Manifest, shards: tuple[Shard, ...]) -> dict[str, int]:
    """The shards' sizes from one listing of a remote dataset's folder, when that takes
    fewer requests than a HEAD per shard (its pages, judged from the files the manifest
    lists, against the shards); else {} (each shard's size is asked on its own)."""
    if not isinstance(root, Location) or root.is_local or len(shards) < 2:
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
            size = _size(shard.path)
    except FileNotFoundError:
        raise ManifestError("listed in the manifest but missing on disk", shard=shard.name) from None
    if sizes and shard.bytes is not None and size != shard.bytes:
        problem = locate_corruption(shard, compression)
        raise CorruptRecordError(
            f"the file has {size} bytes, the manifest says {shard.bytes} (truncated or changed)"
            + (f"; {problem.reason}" if problem else ""),
            shard=shard.name,
            offset=problem.context.offset if problem else None,
        )
    if sha256 and shard.sha256 is not None:
        digest = file_sha256(shard.path)
        if digest != shard.sha256:
            problem = locate_corruption(shard, compression)
            raise CorruptRecordError(
                f"sha256 {digest} differs from the manifest's {shard.sha256}"
                + (f"; {problem.reason}" if problem else "; every record's framing and CRCs are intact"),
                shard=shard.name,
                offset=problem.context.offset if problem else None,
            )


def file_sha256(path: Path | Location) -> str:
    """The sha256 of a file's bytes, as the manifest records it for each shard (a
    remote object: streamed)."""
    digest = hashlib.sha256()
    with location(path).open_read() as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate_corruption(shard: Shard, compression: Compression) -> CorruptRecordError | None:
    """The first framing or CRC error in ``shard``, or None when its records are intact."""
    try:
        for _ in iter_tfrecords(shard.path, compression):
            pass
    except CorruptRecordError as exc:
        return exc
    return None


def open_split(
    source: OpenedDataset,
    split: str,
    fields: Sequence[str] | None,
    schema: Schema | None,
    registry: CodecRegistry,
) -> OpenedDataset:
    """Another split (or other fields) of a dataset that ``source`` opened through its
    manifest, from that manifest: nothing is read again but each shard's size (a
    ``stat``, a HEAD). Shards are not checked (see :func:`check_shards`)."""
    if source.manifest is None or source.root is None:
        raise DatasetError("TFRecord files read without a manifest have no splits")
    names = list(fields) if fields is not None else None
    return _open_manifest(
        source.root, source.manifest, split, names, schema, registry, check_sizes=False, sha256=False
    )


def check_shards(source: OpenedDataset, *, sizes: bool, sha256: bool) -> None:
    """The checks :func:`open_dataset` makes with ``check_sizes`` and ``verify_sha256``,
    for a reader that opened the dataset without them and checks before it reads: each
    shard's size (from one listing where that saves requests) and, on request, its
    sha256, against the manifest."""
    if source.manifest is None or not (sizes or sha256):
        return
    listed = (
        _listed_sizes(source.root, source.manifest, source.shards)
        if sizes and source.root is not None
        else {}
    )
    for shard in source.shards:
        _check_shard(shard, source.compression, sizes=sizes, sha256=sha256, size=listed.get(shard.name))
