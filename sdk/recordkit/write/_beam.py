"""Writing a dataset with Apache Beam: :class:`WriteDataset`, behind ``recordkit[beam]``.

The pipeline, per split, follows TFDS's Beam writer:

1. **Encode** (:mod:`recordkit.write._beam_encode`), on the workers: each worker loads
   the schema's codec plugins once (``setup``, from a
   :class:`~recordkit.write._parallel.WorkerSetup`, as the local writer's worker
   processes do) and encodes records with the same :class:`~recordkit.RecordEncoder`,
   so the errors are the local writer's, naming the record's key and the field. A bad
   record fails the pipeline (``on_error="raise"``) or goes to the ``rejects`` output
   (``"skip"``). Per-field encoded bytes and record counts are Beam metrics (namespace
   ``recordkit``).
2. **Assign shards** from a salted hash of each record's key (the split's name is the
   salt; without a key, the record's encoded bytes are hashed): the same records always
   land in the same shards, whatever the runner, the number of workers or a retried
   bundle. The shard count is ``num_shards``, or the split's total encoded bytes over
   ``shard_bytes`` (shards come out about that size: hashing balances them, it does not
   cut them exactly).
3. **Write shards** (:class:`_WriteShardFn`): one worker writes each shard, its records
   sorted by hashed key, with the local writer's ``ShardFile`` (:func:`write_shard`: its
   sha256, count and record index) into a staging folder of its own
   (``.beam-staging/<run>/<attempt>/``: a folder a run, made when the pipeline is built,
   and one an attempt), so two attempts at the same shard never share a file.
4. **Commit** (:class:`_CommitFn`), once, after every shard of every split: the shards
   that the runner committed are renamed to their final names (numbered densely, in
   order), the rejects files written, ``dataset.json`` written last, then the run's
   staging folder removed, with those of the runs that were there before the pipeline
   read the manifest (runs that can never commit once this one has: each commit checks
   the manifest its run read). Another run's staging folder is never removed by a
   commit or an overwrite's sweep while that run may still commit. A pipeline that fails
   before this step leaves no ``dataset.json``; running it again writes the dataset from
   scratch and clears the debris.

``append=True`` adds the pipeline's records to an existing dataset, as the local
writer's ``append`` does: the schema is checked against the stored one when the
pipeline is built (the local writer's rules and code: :mod:`recordkit.write._plan`),
the new shards are numbered after the split's existing ones, and the commit rewrites
``dataset.json`` listing the old shards and the new. The manifest seen when the pipeline
was built is checked again at the commit: if another writer changed it meanwhile,
nothing is committed (:class:`~recordkit.errors.ConcurrentWriteError`). On an object
store, where no lock keeps other writers out, the commit's PUT of ``dataset.json`` is
conditional on the version read at that check (:mod:`recordkit.write._commit`), so a
writer that commits while the shards are being moved is not overwritten either; nor are
its shards, since there the final names carry the run's token
(``train-00000.5f0c9a1e.tfrecord``: :func:`_run_token`). A failed
append leaves the old manifest, which lists only the old shards; running the same
pipeline again appends every record once.

All file operations go through :class:`~recordkit.write._beam_folder.Folder`, over
:mod:`recordkit.storage`: the dataset may be a local folder or an ``s3://``, ``gs://``
or other fsspec URL. On an object store a "rename" is a server-side copy and a delete.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics

from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import (
    MANIFEST_FILE,
    Manifest,
    ShardIndex,
    ShardInfo,
    SplitInfo,
    read_manifest,
    write_manifest,
)
from recordkit.dataset._picture_sizes import PictureSizes, SidesSeen, sizes_from_seen
from recordkit.errors import ConcurrentWriteError, DatasetError, ManifestError
from recordkit.format._index import index_name
from recordkit.format._tfrecord import Compression
from recordkit.schema._record_class import Record
from recordkit.schema._schema import Schema
from recordkit.storage import Location, PathOrUrl, StorageOptions
from recordkit.write._beam_encode import (
    METRICS,
    RECORDS,
    REJECTS,
    SIDES,
    Encoded,
    EncodeFn,
    MergeSides,
    salted_hash,
)
from recordkit.write._beam_folder import Folder
from recordkit.write._commit import RemoteManifest
from recordkit.write._debris import remove_unlisted_shards
from recordkit.write._parallel import WorkerSetup
from recordkit.write._plan import RecordKey, load_schema, path_and_schema, plan_append, start_manifest
from recordkit.write._rejects import rejects_file_name
from recordkit.write._replace import BEAM_STAGING, staging_runs
from recordkit.write._shard_file import (
    DEFAULT_SHARD_BYTES,
    ShardFile,
    check_split_name,
    shard_name,
    shard_pattern,
)

__all__ = ["STAGING_FOLDER", "WriteDataset", "salted_hash", "write_shard"]

#: Where workers write shards before the commit renames them (``<run>/<attempt>/``,
#: removed by the commit).
STAGING_FOLDER = BEAM_STAGING
_log = logging.getLogger(__name__)

#: A shard written to the staging folder: (split, shard number, staged file, ShardInfo as JSON).
_Staged = tuple[str, int, str, str]


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


class _WriteShardFn(beam.DoFn):  # type: ignore[misc]  # Beam's DoFn is untyped for mypy
    """Writes one shard's records, sorted by hashed key, into a staging folder of its own."""

    def __init__(self, folder: Folder, split: str, compression: Compression, run: str) -> None:
        self._folder = folder
        self._split = split
        self._compression = compression
        #: The run's staging folder (``.beam-staging/<run>``).
        self._run = run

    def setup(self) -> None:
        self._shards = Metrics.counter(METRICS, f"{self._split}/shards")
        self._shard_bytes = Metrics.distribution(METRICS, f"{self._split}/shard_bytes")

    def process(self, element: tuple[int, Iterable[Encoded]]) -> Iterator[_Staged]:
        number, records = element
        # One folder per attempt: a retried bundle never writes over another attempt's file.
        staged = f"{self._run}/{secrets.token_hex(8)}/{shard_name(self._split, number, self._compression)}"
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
    ``run`` is the run's staging folder, ``earlier`` the staging folders there before the
    pipeline read the manifest: both removed once the manifest is written.
    """

    def __init__(
        self,
        folder: Folder,
        before_json: str | None,
        base_json: str,
        splits: list[str],
        run: str,
        earlier: frozenset[str],
    ) -> None:
        self._folder = folder
        self._before_json = before_json
        self._base_json = base_json
        self._splits = splits
        self._staging = sorted({run, *earlier})

    def process(
        self, staged: list[_Staged], rejects: list[dict[str, Any]], sides: Mapping[str, SidesSeen]
    ) -> Iterator[str]:
        folder = self._folder
        with folder.locked():
            manifest = Manifest.model_validate_json(self._base_json)
            # On an object store (no lock) the commit's PUT is conditional on the version
            # read here: a writer that commits meanwhile is not overwritten.
            stored = RemoteManifest.at(folder.at(), advice=_BEAM_ADVICE)
            current = _current_manifest(folder) if stored is None else stored.load()
            if not _same(current, self._before_json):
                if current is not None and _committed_already(current, manifest, staged, self._splits):
                    _clear_staging(folder, self._staging)  # a retried commit: this write is in the manifest
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
            token = None if stored is None else _run_token(staged)
            for split in self._splits:
                mine = [(number, path, info) for s, number, path, info in staged if s == split]
                theirs = [r for r in rejects if r["split"] == split]
                existing = manifest.splits.get(split)
                info = _commit_split(folder, split, existing, mine, theirs, compression, token)
                info.picture_sizes = _split_sizes(existing, sides.get(split, {}))
                manifest.splits[split] = info
            if stored is None:
                write_manifest(manifest, folder.at())  # the commit
            else:
                stored.save(manifest)  # the commit, if no other writer's came first
            _clear_staging(folder, self._staging)
        yield folder.at(MANIFEST_FILE).url


#: What a Beam writer that lost a commit to another writer does.
_BEAM_ADVICE = (
    "run one writer per dataset at a time: run the pipeline again once the other writer has finished"
)


def _current_manifest(folder: Folder) -> Manifest | None:
    """The dataset's manifest as it is now (None when there is none)."""
    if not folder.exists(MANIFEST_FILE):
        return None
    return read_manifest(folder.at())


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


def _clear_staging(folder: Folder, runs: list[str]) -> None:
    """Remove the staging folders ``runs`` (this run's, and those of runs that can no
    longer commit), once ``dataset.json`` is written; a staging folder that appeared
    since the pipeline read the manifest may be a later run's, still writing, and stays.
    A failure here does not fail the write, which is committed (failing it would invite a
    rerun, and a rerun of an append would append again): it is logged, and a later Beam
    write or overwrite clears it."""
    try:
        for run in runs:
            folder.remove_tree(run)
        staging = folder.at(STAGING_FOLDER).local_path
        if staging is not None and staging.is_dir() and not any(staging.iterdir()):
            staging.rmdir()  # locally, no empty folder left (another run may add one meanwhile)
    except OSError as exc:
        _log.warning("committed %s, but could not remove %s: %s", folder.url, ", ".join(runs), exc)


def _run_token(staged: list[_Staged]) -> str:
    """The run token in the final names of the shards a commit to an object store moves
    (see ``shard_name``): taken from the staged shards' paths, whose folders are random
    per attempt, so a retried commit finds the names it already used and another run
    (which, with no lock, might commit at the same time) never uses them."""
    paths = sorted(path for _, _, path, _ in staged)
    return hashlib.sha256("\n".join(paths).encode("utf-8")).hexdigest()[:8]


def _commit_split(
    folder: Folder,
    split: str,
    existing: SplitInfo | None,
    staged: list[tuple[int, str, str]],
    rejects: list[dict[str, Any]],
    compression: Compression,
    token: str | None = None,
) -> SplitInfo:
    """Move a split's staged shards to their final names (numbered densely, in shard
    order, after the ``existing`` split's shards when appending; with the run's
    ``token`` on an object store) and write its rejects file (the existing lines, then
    the new ones; on an object store as ``rejects-<split>.<token>.jsonl``); return what
    the manifest lists for it.

    In a local folder, held under its lock, the split's unlisted shards (an earlier run's
    debris) are removed. On an object store nothing is: with no lock, an unlisted shard
    may be another writer's, uploaded and not yet listed, and the names of this run
    (its token) cannot meet an earlier run's debris, which no reader sees."""
    old = existing.shards if existing is not None else []
    start = _next_shard_number(split, old)
    placed = [
        _place(
            folder,
            path,
            ShardInfo.model_validate_json(info),
            shard_name(split, start + i, compression, token),
        )
        for i, (_, path, info) in enumerate(sorted(staged))
    ]
    shards = [*old, *placed]
    if token is None:
        _remove_unlisted(folder, split, {s.file for s in shards})
    info = SplitInfo(shards=shards)
    if existing is not None:
        info.rejected, info.rejects_file = existing.rejected, existing.rejects_file
    lines = sorted(
        json.dumps({k: v for k, v in r.items() if k != "split"}, ensure_ascii=False, default=str) + "\n"
        for r in rejects
    )
    if lines:
        listed = info.rejects_file or rejects_file_name(split)
        kept = _kept_rejects(folder, listed, info.rejected)
        # On an object store under the run's token, as its shards: never over a listed file.
        name = listed if token is None else rejects_file_name(split, token)
        info.rejects_file = name
        info.rejected += len(lines)
        folder.write_bytes(name, "".join(kept + lines).encode("utf-8"))
    return info


def _split_sizes(existing: SplitInfo | None, seen: SidesSeen) -> dict[str, PictureSizes] | None:
    """What a split lists as its pictures' sizes after a write that saw ``seen``, by the
    local writer's rule (:func:`~recordkit.dataset._picture_sizes.sizes_from_seen`): None
    when the split already held records whose sizes it does not list."""
    had_records = existing is not None and bool(existing.shards)
    before = None if existing is None else existing.picture_sizes
    if had_records and before is None:
        return None
    return sizes_from_seen(seen, before, had_records=had_records)


def _next_shard_number(split: str, shards: list[ShardInfo]) -> int:
    """The number of the first new shard of ``split``: after every listed one, so that no
    new shard takes an existing shard's name."""
    pattern = shard_pattern(split)
    numbers = [int(m.group(1)) for s in shards if (m := pattern.match(s.file))]
    return max(len(shards), max(numbers, default=-1) + 1)


def _kept_rejects(folder: Folder, name: str, count: int) -> list[str]:
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


def _place(folder: Folder, staged: str, info: ShardInfo, final: str) -> ShardInfo:
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


def _remove_unlisted(folder: Folder, split: str, listed: set[str]) -> None:
    """Shards of ``split`` under final names that this write does not list: debris of an
    earlier run that failed while committing (no manifest listed them)."""
    remove_unlisted_shards(folder.at(), split, listed)


class WriteDataset(beam.PTransform):  # type: ignore[misc]  # Beam's PTransform is untyped for mypy
    """Writes a PCollection of records (or a dict of split name to PCollection) as a
    recordkit dataset at ``path``, identical in kind to one :func:`~recordkit.write_dataset`
    writes::

        with beam.Pipeline(options=opts) as p:
            (p | beam.Create(items) | beam.Map(to_record)
               | rk.beam.WriteDataset("data/pets", schema, split="train", key="file"))

    :param path: the dataset's folder, local or a URL (``gs://``, ``s3://``); it must hold
        no dataset yet, unless ``append``.
    :param schema: a :class:`~recordkit.Schema`, a :class:`~recordkit.Record` class or a
        schema file's path or URL (read with ``storage_options``). The path comes first,
        as in every recordkit writer; the older order, schema first, still works.
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
        path: PathOrUrl,
        schema: Schema | type[Record] | str | os.PathLike[str],
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
        path, schema = path_and_schema(path, schema)
        registry = registry if registry is not None else default_registry()
        self._schema = load_schema(schema, registry, storage_options)
        self._bound = self._schema.bind(registry)
        self._setup = WorkerSetup.from_bound(self._bound, registry)
        self._registry = registry
        self._folder = Folder(os.fspath(path), storage_options)
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
        # Listed before the manifest is read: runs that cannot commit once this one has.
        earlier = staging_runs(folder.at())
        run = f"{STAGING_FOLDER}/{secrets.token_hex(8)}"
        before = self._existing(list(inputs))
        base = self._base(before)
        compression = Compression.parse(base.compression)
        folder.at().mkdir()
        staged, rejects, sides = [], [], []
        for split, pcoll in inputs.items():
            shards, rejected, seen = self._write_split(split, pcoll, compression, run)
            staged.append(shards)
            rejects.append(rejected)
            sides.append(seen)
        pipeline = next(iter(inputs.values())).pipeline
        all_staged = staged | "StagedShards" >> beam.Flatten(pipeline=pipeline)
        all_rejects = rejects | "Rejects" >> beam.Flatten(pipeline=pipeline)
        rejects_list = all_rejects | "ListRejects" >> beam.combiners.ToList()
        all_sides = sides | "PictureSides" >> beam.Flatten(pipeline=pipeline)
        commit = _CommitFn(
            self._folder,
            None if before is None else before.model_dump_json(by_alias=True),
            base.model_dump_json(by_alias=True),
            list(inputs),
            run,
            earlier,
        )
        manifest = (
            all_staged
            | "ListShards" >> beam.combiners.ToList()
            | "Commit"
            >> beam.ParDo(commit, rejects=pvalue.AsSingleton(rejects_list), sides=pvalue.AsDict(all_sides))
        )
        return {"rejects": all_rejects, "manifest": manifest}

    def _write_split(
        self, split: str, records: Any, compression: Compression, run: str
    ) -> tuple[Any, Any, Any]:
        """The split's staged shards, its rejected records, and ``(split, the sides of
        its pictures)``."""
        encoded = records | f"Encode[{split}]" >> beam.ParDo(
            EncodeFn(self._setup, split, self._key, self._on_error)
        ).with_outputs(REJECTS, SIDES, main=RECORDS)
        seen = (
            encoded[SIDES]
            | f"MergeSides[{split}]" >> beam.CombineGlobally(MergeSides())
            | f"SplitSides[{split}]" >> beam.Map(lambda sides, name: (name, sides), name=split)
        )
        good = encoded[RECORDS]
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
            | f"WriteShards[{split}]" >> beam.ParDo(_WriteShardFn(self._folder, split, compression, run))
        )
        return shards, encoded[REJECTS], seen

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
        manifest = read_manifest(folder.at())
        for split in splits:
            info = manifest.splits.get(split)
            if info is not None and info.unfinished is not None:
                raise DatasetError(
                    f"split {split!r} has an unfinished write; finish it first "
                    "(rk.write_dataset(..., resume=True) with the same input), then append",
                    file=folder.url,
                )
            if info is not None and info.field_groups:
                raise DatasetError(
                    f"split {split!r} has field groups ({', '.join(info.field_groups)}), whose shards the "
                    "Beam writer does not write: append to it with rk.DatasetWriter or rk.write_dataset "
                    "(append=True), which write the groups' fields beside the new shards",
                    file=folder.url,
                )
        return manifest

    def _base(self, before: Manifest | None) -> Manifest:
        """The manifest to add the new shards to: a new dataset's, with no splits yet;
        or, appending, ``before`` checked as the local writer checks an append
        (compression, schema and codec versions), its schema grown by the optional
        fields these records add."""
        if before is None:
            compression = Compression.parse(self._compression)
            return start_manifest(self._schema, self._bound, self._registry, compression)
        plan = plan_append(before, self._schema, self._registry, self._compression, file=self._folder.url)
        base = before.model_copy(deep=True)
        plan.grow(base, self._bound, self._registry)
        return base
