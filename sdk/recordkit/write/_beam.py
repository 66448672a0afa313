"""Writing a dataset with Apache Beam: :class:`WriteDataset`, behind ``recordkit[beam]``.

The pipeline, per split, follows TFDS's Beam writer:

1. **Encode** (:class:`_EncodeFn`), on the workers: each worker loads the schema's codec
   plugins once (``setup``, from a :class:`~recordkit.write._parallel.WorkerSetup`, as the
   local writer's worker processes do) and encodes records with the same
   :class:`~recordkit.RecordEncoder`, so the errors are the local writer's, naming the
   record's key and the field. A bad record fails the pipeline (``on_error="raise"``) or
   goes to the ``rejects`` output (``"skip"``). Per-field encoded bytes and record
   counts are Beam metrics (namespace ``recordkit``).
2. **Assign shards** from a salted hash of each record's key (the split's name is the
   salt; without a key, the record's encoded bytes are hashed): the same records always
   land in the same shards, whatever the runner, the number of workers or a retried
   bundle. The shard count is ``num_shards``, or the split's total encoded bytes over
   ``shard_bytes`` (shards come out about that size: hashing balances them, it does not
   cut them exactly).
3. **Write shards** (:class:`_WriteShardFn`): one worker writes each shard, its records
   sorted by hashed key, with the local writer's ``ShardFile`` (:func:`write_shard`: its
   sha256, count and record index) into a staging folder of its own
   (``.beam-staging/<token>/``), so two attempts at the same shard never share a file.
4. **Commit** (:class:`_CommitFn`), once, after every shard of every split: the shards
   that the runner committed are renamed to their final names (numbered densely, in
   order), the rejects files written, ``dataset.json`` written last, then the staging
   folder removed. A pipeline that fails before this step leaves no ``dataset.json``;
   running it again writes the dataset from scratch and clears the debris.

``append=True`` adds the pipeline's records to an existing dataset, as the local
writer's ``append`` does: the schema is checked against the stored one when the
pipeline is built (the local writer's rules and code),
the new shards are numbered after the split's existing ones, and the commit rewrites
``dataset.json`` listing the old shards and the new. The manifest seen when the pipeline
was built is checked again at the commit: if another writer changed it meanwhile,
nothing is committed (:class:`~recordkit.errors.ConcurrentWriteError`). On an object
store, where no lock keeps other writers out, the commit's PUT of ``dataset.json`` is
conditional on the version read at that check (:mod:`recordkit.write._commit`), so a
writer that commits while the shards are being moved is not overwritten either (its
shards may be, if it took the same numbers: run one writer per dataset). A failed
append leaves the old manifest, which lists only the old shards; running the same
pipeline again appends every record once.

All file operations go through :class:`_Folder`, over :mod:`recordkit.storage`: the
dataset may be a local folder or an ``s3://``, ``gs://`` or other fsspec URL. On an
object store a "rename" is a server-side copy and a delete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics

from recordkit._version import __version__
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._breakdown import byte_breakdown
from recordkit.dataset._manifest import MANIFEST_FILE, Manifest, ShardIndex, ShardInfo, SplitInfo
from recordkit.errors import ConcurrentWriteError, DatasetError, ManifestError, RecordError, RecordkitError
from recordkit.format._index import index_name
from recordkit.format._tfrecord import Compression, frame_record
from recordkit.schema._encoder import RecordEncoder, record_items
from recordkit.schema._record_class import Record, schema_of
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.storage import Location, PathOrUrl, StorageOptions, location
from recordkit.write._commit import RemoteManifest
from recordkit.write._lock import DatasetLock
from recordkit.write._parallel import WorkerSetup
from recordkit.write._rejects import error_entries, rejects_file_name
from recordkit.write._shard_file import (
    DEFAULT_SHARD_BYTES,
    ShardFile,
    check_split_name,
    shard_name,
    shard_pattern,
)
from recordkit.write._writer import _check_schema, codec_provenance

__all__ = ["STAGING_FOLDER", "WriteDataset", "salted_hash", "write_shard"]

#: Where workers write shards before the commit renames them (removed by the commit).
STAGING_FOLDER = ".beam-staging"
_METRICS = "recordkit"
_REJECTS = "rejects"
_RECORDS = "records"
_log = logging.getLogger(__name__)

#: A record after encoding: (salted hash of its key, its framed TFRecord bytes).
_Encoded = tuple[int, bytes]
#: A shard written to the staging folder: (split, shard number, staged file, ShardInfo as JSON).
_Staged = tuple[str, int, str, str]
RecordKey = str | Callable[[Any], Any]


def salted_hash(salt: str, key: bytes) -> int:
    """A 128-bit hash of ``key`` salted with ``salt``: stable across processes, machines
    and Python versions (unlike ``hash()``), as TFDS's shard assignment needs."""
    digest = hashlib.blake2b(key, digest_size=16, person=hashlib.sha256(salt.encode()).digest()[:16])
    return int.from_bytes(digest.digest(), "big")


class _Folder:
    """The dataset's folder, local or remote: every file operation of the Beam writer,
    through :mod:`recordkit.storage`. Pickled into the steps as its URL and storage
    options (a :class:`~recordkit.storage.Location` is made where it is used)."""

    def __init__(self, url: str, storage_options: StorageOptions | None) -> None:
        self.url = url
        self.storage_options = dict(storage_options or {})

    def at(self, name: str = "") -> Location:
        root = location(self.url, self.storage_options)
        return root.join(*name.split("/")) if name else root

    def exists(self, name: str) -> bool:
        return self.at(name).exists()

    def names(self) -> list[str]:
        return self.at().list()

    def size(self, name: str) -> int | None:
        try:
            return self.at(name).size()
        except FileNotFoundError:
            return None

    def write_bytes(self, name: str, data: bytes) -> None:
        """A whole file at once: locally atomic (temp name, rename), remotely one PUT."""
        self.at(name).write_bytes(data)

    def move(self, source: str, target: str) -> None:
        self.at(source).move_to(self.at(target))

    def remove(self, name: str) -> None:
        self.at(name).remove()

    def remove_tree(self, name: str) -> None:
        self.at(name).remove_tree()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Locally, the local writers' lock (:mod:`recordkit.write._lock`), so that no
        local writer changes the folder meanwhile; object stores have no lock."""
        root = self.at()
        if not root.is_local:
            yield
            return
        with DatasetLock(root.path):
            yield


def write_shard(target: Location, framed_records: Iterable[bytes], compression: Compression) -> ShardInfo:
    """Write one shard (framed records, in order) at ``target`` with the local writer's
    :class:`~recordkit.write._shard_file.ShardFile` (sha256, count, record index beside
    it; on an object store streamed, appearing only when complete); its ShardInfo."""
    shard = ShardFile(target, compression)
    try:
        for framed in framed_records:
            shard.add(framed)
        return shard.commit()
    except BaseException:
        shard.discard()
        raise


class _EncodeFn(beam.DoFn):  # type: ignore[misc]  # Beam's DoFn is untyped for mypy
    """Validates and encodes records on the workers; the encoder is built once per worker."""

    def __init__(self, setup: WorkerSetup, split: str, key: RecordKey | None, on_error: str) -> None:
        self._setup = setup
        self._split = split
        self._key = key
        self._on_error = on_error
        self._encoder: RecordEncoder | None = None
        self._bound: BoundSchema | None = None

    def setup(self) -> None:
        self._encoder = self._setup.build_encoder()
        bound = self._encoder.bound
        assert isinstance(bound, BoundSchema)
        self._bound = bound
        self._records = Metrics.counter(_METRICS, f"{self._split}/records")
        self._rejected = Metrics.counter(_METRICS, f"{self._split}/rejected")
        self._field_bytes = {
            f.name: Metrics.counter(_METRICS, f"{self._split}/bytes/{f.name}") for f in bound.fields
        }

    def process(self, record: Any) -> Iterator[Any]:
        assert self._encoder is not None
        assert self._bound is not None
        key = self._key_of(record)
        try:
            data = self._encoder.encode(record, key)
        except RecordkitError as exc:
            if self._on_error == "raise":
                raise _as_raised(exc.with_context(split=self._split)) from None
            self._rejected.inc()
            yield pvalue.TaggedOutput(_REJECTS, _reject_entry(self._split, key, exc))
            return
        for name, size in byte_breakdown(self._bound, data).items():
            counter = self._field_bytes.get(name)
            if counter is not None:
                counter.inc(size)
        self._records.inc()
        framed = frame_record(data)
        hashed = salted_hash(self._split, data if key is None else key.encode("utf-8"))
        yield hashed, framed

    def _key_of(self, record: Any) -> str | None:
        if self._key is None:
            return None
        try:
            value = self._key(record) if callable(self._key) else record_items(record)[self._key]
        except Exception as exc:
            reason = f"cannot get the record's key: {type(exc).__name__}: {exc}"
            raise _as_raised(RecordError(reason, split=self._split)) from exc
        return value if isinstance(value, str) else str(value)


def _as_raised(error: RecordkitError) -> RecordkitError:
    """``error`` with its whole message (context included) in its args: Beam re-raises a
    step's error rebuilt from them, and the context would be lost."""
    error.args = (str(error),)
    return error


def _reject_entry(split: str, key: str | None, error: RecordkitError) -> dict[str, Any]:
    """A rejected record as the rejects file lists it (with its split, for the output)."""
    entry: dict[str, Any] = {"split": split}
    if key is not None:
        entry["key"] = key
    entry["errors"] = error_entries(error)
    entry["message"] = str(error)
    return entry


class _WriteShardFn(beam.DoFn):  # type: ignore[misc]  # Beam's DoFn is untyped for mypy
    """Writes one shard's records, sorted by hashed key, into a staging folder of its own."""

    def __init__(self, folder: _Folder, split: str, compression: Compression) -> None:
        self._folder = folder
        self._split = split
        self._compression = compression

    def setup(self) -> None:
        self._shards = Metrics.counter(_METRICS, f"{self._split}/shards")
        self._shard_bytes = Metrics.distribution(_METRICS, f"{self._split}/shard_bytes")

    def process(self, element: tuple[int, Iterable[_Encoded]]) -> Iterator[_Staged]:
        number, records = element
        # One folder per attempt: a retried bundle never writes over another attempt's file.
        staged = (
            f"{STAGING_FOLDER}/{secrets.token_hex(8)}/{shard_name(self._split, number, self._compression)}"
        )
        target = self._folder.at(staged)
        target.parent.mkdir()
        # By hashed key, ties by bytes: the same shard whatever order the records came in.
        info = write_shard(target, (framed for _, framed in sorted(records)), self._compression)
        self._shards.inc()
        self._shard_bytes.update(info.bytes)
        yield self._split, number, staged, info.model_dump_json()


class _CommitFn(beam.DoFn):  # type: ignore[misc]  # Beam's DoFn is untyped for mypy
    """The last step, run once: final names, rejects files, ``dataset.json`` last.

    ``before_json`` is the manifest seen when the pipeline was built (None: there was
    none), ``base_json`` the manifest to add the new shards to (the same, its schema
    grown by an append's new optional fields; or a new dataset's, with no splits).
    """

    def __init__(self, folder: _Folder, before_json: str | None, base_json: str, splits: list[str]) -> None:
        self._folder = folder
        self._before_json = before_json
        self._base_json = base_json
        self._splits = splits

    def process(self, staged: list[_Staged], rejects: list[dict[str, Any]]) -> Iterator[str]:
        folder = self._folder
        with folder.locked():
            manifest = Manifest.model_validate_json(self._base_json)
            # On an object store (no lock) the commit's PUT is conditional on the version
            # read here: a writer that commits meanwhile is not overwritten.
            stored = None if folder.at().is_local else RemoteManifest(folder.at(), advice=_BEAM_ADVICE)
            current = _current_manifest(folder) if stored is None else stored.load()
            if not _same(current, self._before_json):
                if current is not None and _committed_already(current, manifest, staged, self._splits):
                    _clear_staging(folder)  # a retried commit: this write is in the manifest
                    yield folder.at(MANIFEST_FILE).url
                    return
                reason = (
                    f"{MANIFEST_FILE} appeared while the pipeline ran; not replaced"
                    if self._before_json is None
                    else f"{MANIFEST_FILE} changed while the pipeline ran (another writer?); nothing "
                    "committed: run the pipeline again"
                )
                raise ConcurrentWriteError(reason, file=folder.url)
            compression = Compression.parse(manifest.compression)
            for split in self._splits:
                mine = [(number, path, info) for s, number, path, info in staged if s == split]
                theirs = [r for r in rejects if r["split"] == split]
                existing = manifest.splits.get(split)
                manifest.splits[split] = _commit_split(folder, split, existing, mine, theirs, compression)
            if stored is None:
                manifest.save(folder.at())  # the commit
            else:
                stored.save(manifest)  # the commit, if no other writer's came first
            _clear_staging(folder)
        yield folder.at(MANIFEST_FILE).url


#: What a Beam writer that lost a commit to another writer does.
_BEAM_ADVICE = (
    "run one writer per dataset at a time: run the pipeline again once the other writer has finished"
)


def _current_manifest(folder: _Folder) -> Manifest | None:
    """The dataset's manifest as it is now (None when there is none)."""
    if not folder.exists(MANIFEST_FILE):
        return None
    return Manifest.load(folder.at())


def _same(current: Manifest | None, before_json: str | None) -> bool:
    """Whether the manifest is still the one seen when the pipeline was built."""
    if current is None or before_json is None:
        return current is None and before_json is None
    return current.model_dump() == Manifest.model_validate_json(before_json).model_dump()


def _committed_already(current: Manifest, base: Manifest, staged: list[_Staged], splits: list[str]) -> bool:
    """Whether ``current`` is the manifest this commit writes: a retried commit step
    whose first attempt got as far as writing it (shards compared by sha256)."""
    if current.fingerprint != base.fingerprint:
        return False
    for split in splits:
        if split not in current.splits:
            return False
        old = base.splits[split].shards if split in base.splits else []
        new = sorted((number, info) for s, number, _, info in staged if s == split)
        expected = [s.sha256 for s in old] + [ShardInfo.model_validate_json(info).sha256 for _, info in new]
        if [s.sha256 for s in current.splits[split].shards] != expected:
            return False
    return True


def _clear_staging(folder: _Folder) -> None:
    """Remove the staging folder, once ``dataset.json`` is written. A failure here does
    not fail the write, which is committed (failing it would invite a rerun, and a rerun
    of an append would append again): it is logged, and the next Beam write clears it."""
    try:
        folder.remove_tree(STAGING_FOLDER)
    except OSError as exc:
        _log.warning("committed %s, but could not remove %s: %s", folder.url, STAGING_FOLDER, exc)


def _commit_split(
    folder: _Folder,
    split: str,
    existing: SplitInfo | None,
    staged: list[tuple[int, str, str]],
    rejects: list[dict[str, Any]],
    compression: Compression,
) -> SplitInfo:
    """Move a split's staged shards to their final names (numbered densely, in shard
    order, after the ``existing`` split's shards when appending) and write its rejects
    file (the existing lines, then the new ones); return what the manifest lists for it."""
    old = existing.shards if existing is not None else []
    start = _next_shard_number(split, old)
    placed = [
        _place(folder, path, ShardInfo.model_validate_json(info), shard_name(split, start + i, compression))
        for i, (_, path, info) in enumerate(sorted(staged))
    ]
    shards = [*old, *placed]
    _remove_unlisted(folder, split, {s.file for s in shards})
    info = SplitInfo(shards=shards)
    if existing is not None:
        info.rejected, info.rejects_file = existing.rejected, existing.rejects_file
    lines = sorted(
        json.dumps({k: v for k, v in r.items() if k != "split"}, ensure_ascii=False, default=str) + "\n"
        for r in rejects
    )
    if lines:
        name = info.rejects_file or rejects_file_name(split)
        kept = _kept_rejects(folder, name, info.rejected)
        info.rejects_file = name
        info.rejected += len(lines)
        folder.write_bytes(name, "".join(kept + lines).encode("utf-8"))
    return info


def _next_shard_number(split: str, shards: list[ShardInfo]) -> int:
    """The number of the first new shard of ``split``: after every listed one, so that no
    new shard takes an existing shard's name."""
    pattern = shard_pattern(split)
    numbers = [int(m.group(1)) for s in shards if (m := pattern.match(s.file))]
    return max(len(shards), max(numbers, default=-1) + 1)


def _kept_rejects(folder: _Folder, name: str, count: int) -> list[str]:
    """The first ``count`` lines of the rejects file ``name`` (those the manifest counts:
    a failed append may have left more)."""
    if count == 0:
        return []
    try:
        text = folder.at(name).read_bytes().decode("utf-8")
    except FileNotFoundError:
        reason = f"the manifest counts {count} rejected records but {name} is missing"
        raise ManifestError(reason, file=folder.url) from None
    return text.splitlines(keepends=True)[:count]


def _place(folder: _Folder, staged: str, info: ShardInfo, final: str) -> ShardInfo:
    """Move a staged shard and its index to their final names (the index first, so a
    shard under its final name has its index beside it). Idempotent: a retried commit
    finds the shards it already moved."""
    assert info.index is not None
    staged_index = f"{staged.rsplit('/', 1)[0]}/{info.index.file}"
    final_index = index_name(final)
    if folder.size(staged) is not None:
        folder.move(staged_index, final_index)
        folder.move(staged, final)
    elif folder.size(final) != info.bytes:
        raise DatasetError(f"the staged shard {staged} is missing", file=folder.url)
    return info.model_copy(
        update={"file": final, "index": ShardIndex(file=final_index, sha256=info.index.sha256)}
    )


def _remove_unlisted(folder: _Folder, split: str, listed: set[str]) -> None:
    """Shards of ``split`` under final names that this write does not list: debris of an
    earlier run that failed while committing (no manifest listed them)."""
    pattern = shard_pattern(split)
    for name in folder.names():
        if pattern.match(name) and name not in listed:
            folder.remove(name)
            folder.remove(index_name(name))


class WriteDataset(beam.PTransform):  # type: ignore[misc]  # Beam's PTransform is untyped for mypy
    """Writes a PCollection of records (or a dict of split name to PCollection) as a
    recordkit dataset at ``path``, identical in kind to one :func:`~recordkit.write_dataset`
    writes::

        with beam.Pipeline(options=opts) as p:
            (p | beam.Create(items) | beam.Map(to_record)
               | rk.beam.WriteDataset(schema, "data/pets", split="train", key="file"))

    :param schema: a :class:`~recordkit.Schema`, a :class:`~recordkit.Record` class or a
        schema file's path.
    :param path: the dataset's folder, local or a URL (``gs://``, ``s3://``); it must hold
        no dataset yet, unless ``append``.
    :param split: the split's name when the input is one PCollection.
    :param shard_bytes: about how many bytes of TFRecord data per shard (default 128 MiB).
    :param num_shards: the number of shards per split, instead of ``shard_bytes``.
    :param key: a field's name or a function of the record: names records in errors and
        rejects, and decides their shard. Without it the record's bytes are hashed.
    :param on_error: "raise" fails the pipeline at a bad record; "skip" sends it to the
        ``rejects`` output and to ``rejects-<split>.jsonl``.
    :param compression: None (default), "GZIP" or "ZLIB"; an appended dataset keeps its
        own (asking for another is an error).
    :param append: add the records to the dataset at ``path`` (or start it, if there is
        none): to existing splits as new shards, numbered after theirs, or as new
        splits. The schema must store records as the dataset's does, by the local
        writer's append rules (optional fields may be added or left out), checked when
        the pipeline is built. Keys are not checked against the stored records: an
        append adds what it is given.
    :param registry: the codec registry to bind the schema with (default: the installed
        plugins); workers load the same plugins themselves.
    :param storage_options: for a remote ``path`` (``s3://``, ``gs://``, any fsspec URL):
        the fsspec filesystem's options (endpoint, credentials). They travel to the
        workers inside the pipeline; prefer the clients' environment variables for
        credentials where the workers have them.

    The result is a dict: ``"rejects"``, a PCollection of one dict per rejected record
    (``split``, ``key``, ``errors``, ``message``), and ``"manifest"``, the path of the
    ``dataset.json`` written (one element, once the commit is done).
    """

    def __init__(
        self,
        schema: Schema | type[Record] | str | os.PathLike[str],
        path: PathOrUrl,
        split: str = "train",
        *,
        shard_bytes: int | None = DEFAULT_SHARD_BYTES,
        num_shards: int | None = None,
        key: RecordKey | None = None,
        on_error: Literal["raise", "skip"] = "raise",
        compression: str | Compression | None = None,
        registry: CodecRegistry | None = None,
        storage_options: StorageOptions | None = None,
        append: bool = False,
    ) -> None:
        super().__init__()
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        if num_shards is not None and num_shards < 1:
            raise ValueError(f"num_shards must be positive, not {num_shards}")
        if num_shards is None and (shard_bytes is None or shard_bytes < 1):
            raise ValueError(f"shard_bytes must be positive (or give num_shards), not {shard_bytes}")
        registry = registry if registry is not None else default_registry()
        if isinstance(schema, (str, os.PathLike)):
            schema = Schema.load(Path(schema), registry=registry)
        self._schema = schema_of(schema)
        self._bound = self._schema.bind(registry)
        self._setup = WorkerSetup.from_bound(self._bound, registry)
        self._registry = registry
        self._folder = _Folder(os.fspath(path), storage_options)
        self._split = check_split_name(split)
        self._shard_bytes = shard_bytes
        self._num_shards = num_shards
        self._key = key
        self._on_error = on_error
        #: The compression asked for (None: the default, or an appended dataset's own).
        self._compression = None if compression is None else Compression.parse(compression)
        self._append = append

    def expand(self, records: Any) -> dict[str, Any]:
        """Beam's entry point: write ``records`` (a PCollection, or a mapping of split
        name to PCollection); returns the PCollections ``"rejects"`` (the records refused)
        and ``"manifest"`` (the committed manifest)."""
        inputs: Mapping[str, Any] = records if isinstance(records, Mapping) else {self._split: records}
        for split in inputs:
            check_split_name(split)
        folder = self._folder
        before = self._existing(list(inputs))
        base = self._manifest() if before is None else self._appended(before)
        compression = Compression.parse(base.compression)
        folder.at().mkdir()
        staged, rejects = [], []
        for split, pcoll in inputs.items():
            shards, rejected = self._write_split(split, pcoll, compression)
            staged.append(shards)
            rejects.append(rejected)
        pipeline = next(iter(inputs.values())).pipeline
        all_staged = staged | "StagedShards" >> beam.Flatten(pipeline=pipeline)
        all_rejects = rejects | "Rejects" >> beam.Flatten(pipeline=pipeline)
        rejects_list = all_rejects | "ListRejects" >> beam.combiners.ToList()
        commit = _CommitFn(
            self._folder,
            None if before is None else before.model_dump_json(by_alias=True),
            base.model_dump_json(by_alias=True),
            list(inputs),
        )
        manifest = (
            all_staged
            | "ListShards" >> beam.combiners.ToList()
            | "Commit" >> beam.ParDo(commit, rejects=pvalue.AsSingleton(rejects_list))
        )
        return {"rejects": all_rejects, "manifest": manifest}

    def _write_split(self, split: str, records: Any, compression: Compression) -> tuple[Any, Any]:
        encoded = records | f"Encode[{split}]" >> beam.ParDo(
            _EncodeFn(self._setup, split, self._key, self._on_error)
        ).with_outputs(_REJECTS, main=_RECORDS)
        good = encoded[_RECORDS]
        if self._num_shards is not None:
            count: Any = good.pipeline | f"NumShards[{split}]" >> beam.Create([self._num_shards])
        else:
            target = self._shard_bytes
            assert target is not None
            count = (
                good
                | f"Sizes[{split}]" >> beam.Map(lambda r: len(r[1]))
                | f"TotalBytes[{split}]" >> beam.CombineGlobally(sum)
                | f"NumShards[{split}]" >> beam.Map(lambda total: max(1, -(-total // target)))
            )
        shards = (
            good
            | f"AssignShard[{split}]" >> beam.Map(lambda r, n: (r[0] % n, r), n=pvalue.AsSingleton(count))
            | f"GroupShards[{split}]" >> beam.GroupByKey()
            | f"WriteShards[{split}]" >> beam.ParDo(_WriteShardFn(self._folder, split, compression))
        )
        return shards, encoded[_REJECTS]

    def _existing(self, splits: list[str]) -> Manifest | None:
        """The dataset's manifest when appending to one (None: there is none yet);
        refuses an existing dataset without ``append``, and a split with an unfinished
        local write (as the local writer does)."""
        folder = self._folder
        if not folder.exists(MANIFEST_FILE):
            return None
        if not self._append:
            raise DatasetError(
                f"already holds a dataset ({MANIFEST_FILE}); pass append=True to add the records to it",
                file=folder.url,
            )
        manifest = Manifest.load(folder.at())
        for split in splits:
            info = manifest.splits.get(split)
            if info is not None and info.unfinished is not None:
                raise DatasetError(
                    f"split {split!r} has an unfinished write; finish it first "
                    "(rk.write_dataset(..., resume=True) with the same input), then append",
                    file=folder.url,
                )
        return manifest

    def _manifest(self) -> Manifest:
        """The manifest a local write of this schema would start with (no splits yet)."""
        return Manifest(
            recordkit_version=__version__,
            schema=self._schema,
            fingerprint=self._bound.fingerprint(),
            codecs=codec_provenance(self._bound, self._registry),
            compression=Compression.parse(self._compression).value,
        )

    def _appended(self, before: Manifest) -> Manifest:
        """The manifest to add the new shards to: ``before``, checked as the local writer
        checks an append (compression, schema and codec versions), its schema grown by
        the optional fields these records add."""
        stored = Compression.parse(before.compression)
        if self._compression is not None and self._compression is not stored:
            raise DatasetError(
                f"the dataset is stored with compression {stored.value or 'none'!r}; cannot add "
                f"shards with {self._compression.value or 'none'!r}",
                file=self._folder.url,
            )
        manifest = before.model_copy(deep=True)
        grown = _check_schema(before, self._schema, self._registry, append=True)
        if grown is not None:
            codecs = {**codec_provenance(self._bound, self._registry), **before.codecs}
            manifest.schema_ = grown
            manifest.fingerprint = grown.bind(self._registry).fingerprint()
            manifest.codecs = dict(sorted(codecs.items()))
        return manifest
