"""Writing records into a sharded TFRecord dataset with its manifest.

:class:`DatasetWriter` streams records of one or several splits into shards
(``train-00000.tfrecord`` ...), and :func:`write_dataset` writes one iterable with it.
The guarantees, and how they are kept:

* A shard appears under its final name only when complete: it is written under a
  temporary name, fsynced, then renamed (:mod:`recordkit.write._shard_file`).
* ``dataset.json`` is the commit. It is written when a write starts, after every
  completed shard (so it always lists exactly the complete shards, and an interrupted
  write can be resumed), and when the write finishes. Locally the folder's lock keeps
  other writers out; remotely each save is conditional on the version this writer read
  or saved last (:mod:`recordkit.write._commit`), so no writer replaces another's.
* Shard boundaries depend only on the records' sizes and order, so the same input
  gives the same shards, serial or parallel, and a resumed write skips exactly the
  records that the complete shards (and the rejects file) account for.
* ``overwrite=True`` writes the new dataset beside the old one and swaps the two only
  when it is complete (:mod:`recordkit.write._replace`): a crash leaves the old dataset
  or the new one, never a mix. On an object store the new dataset is written into a
  generation folder inside the old one's prefix, and committed by one ``dataset.json``
  PUT listing it; the old objects are deleted after.
* The per-record path is one codec ``encode`` per field, the Example and TFRecord
  framing, and a list append: no plugin calls, no registry lookups, no TensorFlow.

The writer's steps live in modules of their own: a split being written
(:mod:`~recordkit.write._split_writer`), the manifest a write starts from and an append's
plan (:mod:`~recordkit.write._plan`), debris of interrupted writes
(:mod:`~recordkit.write._debris`). What stays here, a little over 500 lines, is the
writer's life cycle (open, write, close, abort), which reads best in one place.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sized
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from typing_extensions import Unpack

from recordkit.codec._plugins import default_registry
from recordkit.dataset._manifest import (
    MANIFEST_FILE,
    Manifest,
    SplitInfo,
    UnfinishedWrite,
    read_manifest,
    write_manifest,
)
from recordkit.errors import DatasetError, RecordError, RecordkitError
from recordkit.format._tfrecord import Compression
from recordkit.schema._encoder import RecordEncoder, SidesSeen, record_items
from recordkit.schema._record_class import Record
from recordkit.schema._schema import Schema
from recordkit.storage import Location, PathOrUrl, location
from recordkit.write._commit import RemoteManifest
from recordkit.write._debris import check_no_strays, remove_split_debris, remove_write_debris, stopped_runs
from recordkit.write._group_shards import GroupAppend, group_field_owners, without_group_fields
from recordkit.write._lock import DatasetLock
from recordkit.write._parallel import FIRST_BATCH_RECORDS, OrderedPool, Result, WorkerSetup
from recordkit.write._plan import (
    AppendPlan,
    load_schema,
    path_and_schema,
    plan_append,
    set_card,
    start_manifest,
)
from recordkit.write._progress import Progress
from recordkit.write._replace import earlier_generations, remove_unlisted, replace_dataset, replacement_folder
from recordkit.write._shard_file import (
    DEFAULT_SHARD_BYTES,
    ShardLimits,
    check_split_name,
    fsync_dir,
    new_run_token,
)
from recordkit.write._split_writer import SplitSink, SplitWriter, now, takeover_time
from recordkit.write._write_options import OnError, WriteOptions

__all__ = ["DEFAULT_SHARD_BYTES", "DatasetWriter", "OnError", "WriteOptions", "write_dataset"]


logger = logging.getLogger("recordkit")

_ALL = sys.maxsize
#: Where a batch sent to the workers goes back: its split and each record's (index, key).
_BatchTag = tuple[SplitWriter, list[tuple[int, "str | None"]]]


class DatasetWriter:
    """Writes records into a sharded TFRecord dataset at ``path``, one or several splits.

    Use it as a context manager; leaving the block finishes every split and writes the
    final manifest, and an exception aborts (complete shards stay valid and listed,
    the partial shard is removed, and ``resume=True`` continues later)::

        with rk.DatasetWriter("data/pets", schema) as writer:
            for record in train_records:
                writer.write(record, split="train")
            for record in test_records:
                writer.write(record, split="test")

    :param path: the dataset's folder (created if missing), or a URL.
    :param schema: the :class:`~recordkit.Schema` records are checked and encoded with, a
        :class:`~recordkit.Record` class, or the path of a schema file (as readers take).
        Every writer takes the path, then the schema (as Beam's ``WriteToParquet`` and
        pyarrow's ``ParquetWriter`` do); given the other way round, they are swapped.
    :param options: the write's options, listed and documented in :class:`WriteOptions`
        (``shard_bytes``, ``shard_records``, ``compression``, ``workers``, ``on_error``,
        ``key``, ``resume``, ``append``, ``progress``, ``registry``, ``durable``, ``wait``,
        ``overwrite``).
    """

    def __init__(
        self,
        path: PathOrUrl,
        schema: Schema | type[Record] | str | os.PathLike[str],
        **options: Unpack[WriteOptions],
    ) -> None:
        unknown = sorted(set(options) - set(WriteOptions.__annotations__))
        if unknown:
            raise TypeError(
                f"unknown write option(s) {unknown}; the options are {list(WriteOptions.__annotations__)}"
            )
        on_error = options.get("on_error", "raise")
        workers = options.get("workers", 0)
        durable = options.get("durable", True)
        registry = options.get("registry")
        resume = options.get("resume", False)
        append = options.get("append", False)
        overwrite = options.get("overwrite", False)
        if overwrite and (append or resume):
            raise ValueError("overwrite=True cannot be combined with append or resume")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        if not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be 0, 1 (in-process) or more (processes), not {workers!r}")
        path, schema = path_and_schema(path, schema)
        #: Where the dataset is being written (local folder or remote URL).
        self.where = location(path, options.get("storage_options"))
        #: With overwrite: where the dataset goes when complete (``where`` is the staging
        #: folder beside it, or remotely the generation folder inside it: see _replace).
        self._target: Location | None = None
        if overwrite:
            staged = replacement_folder(self.where)
            if staged is not None:  # (remotely None: nothing to replace, written in place)
                self._target, self.where = self.where, staged
        #: A remote dataset's manifest, each save conditional on the last (no writer
        #: replaces another's commit: see _commit); with a remote overwrite, also the
        #: target's, whose one save is the commit.
        self._remote_manifest = RemoteManifest.at(self.where)
        self._target_manifest = RemoteManifest.at(self._target) if self._target is not None else None
        #: With a remote overwrite: the dataset it replaces, as read before writing.
        self._replaced: Manifest | None = None
        #: With a remote overwrite: the generation folders its sweep may delete (those
        #: there before it read the manifest it replaces: see _replace.remove_unlisted).
        self._sweepable: frozenset[str] = frozenset()
        #: In a bucket, the token in the names of the shards this run writes: no lock
        #: keeps an earlier run (one a resume took over) from finishing an upload late,
        #: and under a name of its own it can never replace a shard this run listed.
        self._run_token = new_run_token() if self._remote_manifest is not None else None
        self.durable = durable
        self._limits = ShardLimits(
            options.get("shard_bytes", DEFAULT_SHARD_BYTES), options.get("shard_records")
        )
        self._on_error = on_error
        self._key = options.get("key")
        self._card = options.get("card")
        self._resume = resume
        self._append = append
        self._workers = workers
        if registry is None:
            registry = default_registry()
        self._registry = registry
        self.schema = load_schema(schema, registry, options.get("storage_options"))
        self._bound = self.schema.bind(registry)
        self._encoder = RecordEncoder(self._bound)
        #: The encoder's reasons for fields that other splits' field groups store.
        self._elsewhere: dict[str, str] = {}
        self._pool: OrderedPool[_BatchTag] | None = None
        self._splits: dict[str, SplitWriter] = {}
        #: How these records join the stored dataset (its schema grown by the optional
        #: fields they add), until the manifest is saved with it.
        self._append_plan: AppendPlan | None = None
        self._state: Literal["open", "closed", "aborted"] = "open"
        #: Held while the manifest changes or is saved: shards are listed from their
        #: background threads as they complete (see SplitWriter.commit_shard).
        self._lock = threading.RLock()
        self._folder_lock: DatasetLock | None = None
        folder = self.where.local_path
        if folder is not None:
            if folder.exists() and not folder.is_dir():
                raise DatasetError("exists and is not a folder", file=str(folder))
            folder.mkdir(parents=True, exist_ok=True)
            self._folder_lock = DatasetLock(folder, wait=options.get("wait", False))
        try:
            if folder is not None and not (folder / MANIFEST_FILE).exists():
                # Holding the lock, this is the only writer: temp files are a dead one's.
                # (In a dataset, the resume that a stopped write requires removes them:
                # a folder of a million shards is not listed for every append.)
                remove_write_debris(folder)
            if self._target_manifest is not None and self._target is not None:
                # Listed before the manifest is read (see earlier_generations).
                self._sweepable = earlier_generations(self._target) | {self.where.name}
                # The version the commit must still find, and the dataset it replaces.
                self._replaced = self._target_manifest.load()
            self.manifest, self.compression = self._open_manifest(options.get("compression"))
        except BaseException:
            self._release_lock()
            raise
        name = (self._target or self.where).name
        self._progress = Progress(options.get("progress"), desc=f"writing {name}")

    @property
    def root(self) -> Path | str:
        """Where the dataset is being written, as a reader takes it: the local folder as a
        Path, or a remote dataset's URL. During an overwrite, the staging folder; after
        :meth:`close`, the dataset itself."""
        folder = self.where.local_path
        return folder if folder is not None else self.where.url

    def _release_lock(self) -> None:
        if self._folder_lock is not None:
            self._folder_lock.release()

    # -- the manifest ---------------------------------------------------------------------

    def _open_manifest(self, compression: str | Compression | None) -> tuple[Manifest, Compression]:
        if self._remote_manifest is not None:
            existing = self._remote_manifest.load()
        else:
            existing = _load_if_present(self.where)
        if existing is None:
            chosen = Compression.parse(compression)
            manifest = start_manifest(self.schema, self._bound, self._registry, chosen, self._card)
            self._store(manifest)
            return manifest, chosen
        if not (self._append or self._resume):
            raise DatasetError(
                f"already holds a dataset ({MANIFEST_FILE}); pass append=True to add records or "
                "splits, or resume=True to finish an interrupted write",
                file=str(self.where),
            )
        own = without_group_fields(existing, self.schema)
        self._elsewhere = group_field_owners(existing, self.schema)
        if own is not self.schema:  # the groups' fields go to the groups' shards (GroupAppend)
            self._bound = own.bind(self._registry)
            self._encoder = RecordEncoder(self._bound, self._elsewhere)
        where = str(self.where)
        plan = plan_append(
            existing, self._bound.schema, self._registry, compression, file=where, append=self._append
        )
        self._append_plan = plan
        set_card(existing, self._card or self.schema.card)
        return existing, plan.compression

    def _grow_schema(self) -> None:
        """The records add optional fields to a stored dataset: its schema grows (see
        :func:`~recordkit.write._plan.plan_append`), in the manifest save that first marks
        a split as being written."""
        plan, self._append_plan = self._append_plan, None
        if plan is not None:
            plan.grow(self.manifest, self._bound, self._registry)

    def _save(self, *, sync_dir: bool = False) -> None:
        with self._lock:
            folder = self.where.local_path
            if sync_dir and self.durable and folder is not None:
                fsync_dir(folder)  # make shard renames durable before the manifest lists them
            self._store(self.manifest)

    def _store(self, manifest: Manifest) -> None:
        """Save ``manifest``: locally atomically (the lock keeps other writers out);
        remotely only if no other writer replaced the stored one meanwhile."""
        if self._remote_manifest is not None:
            self._remote_manifest.save(manifest)
        else:
            write_manifest(manifest, self.where, durable=self.durable)

    # -- splits ---------------------------------------------------------------------------

    def _open_split(self, name: str) -> SplitWriter:
        with self._lock:
            return self._open_split_locked(name)

    def _open_split_locked(self, name: str) -> SplitWriter:
        if self._state != "open":
            raise DatasetError(f"this writer is {self._state}; open a new one", file=str(self.where))
        check_split_name(name)
        info = self.manifest.splits.get(name)
        skip = 0
        groups = None
        if info is None:
            info = SplitInfo(unfinished=UnfinishedWrite(consumed=0, started=now()))
            check_no_strays(self.where, name, info, self.compression, self._run_token)
            self.manifest.splits[name] = info
        elif info.unfinished is not None:
            if not self._resume:
                raise DatasetError(
                    f"split {name!r} has an unfinished write; pass resume=True (with the same input) "
                    "to finish it first",
                    file=str(self.where),
                )
            skip = info.unfinished.consumed
            groups = self._groups_of(name, info)
            stopped = None
            if self._remote_manifest is not None:
                # No lock in a bucket: the write being resumed may still be running. Take
                # it over first (a conditional save: its next save fails with
                # ConcurrentWriteError, so it can never list another shard); only then
                # are the shards it left unlisted provably its debris. Only its runs'
                # files are: another resume may take the write over from this one and
                # upload a shard before this sweep lists the folder.
                stopped = stopped_runs(info)
                info.unfinished = info.unfinished.model_copy(update={"started": takeover_time()})
                self._grow_schema()
                self._save()
            remove_split_debris(self.where, name, info, stopped)
            if groups is not None:
                groups.remove_debris(info, stopped)
        elif self._resume:
            skip = _ALL  # the write finished: resuming it writes nothing
        else:  # append to a finished split
            groups = self._groups_of(name, info)
            check_no_strays(self.where, name, info, self.compression, self._run_token)
            if groups is not None and self._folder_lock is not None:  # locked: no other writer's files
                groups.remove_debris(info)
            # Readers keep reading the shards from before the append until it finishes.
            info.unfinished = UnfinishedWrite(consumed=0, started=now(), shards_before=len(info.shards))
        split = SplitWriter(self._sink(), name, info, skip=skip, groups=groups)
        self._splits[name] = split
        self._grow_schema()
        self._save()
        return split

    def _groups_of(self, name: str, info: SplitInfo) -> GroupAppend | None:
        """The field groups that records appended to split ``name`` fill in (None: it has
        none); refused, before anything is written, when the records cannot fill them."""
        if not info.field_groups:
            return None
        return GroupAppend(
            self.where,
            name,
            info,
            self.schema,
            self._registry,
            compression=self.compression,
            durable=self.durable,
            token=self._run_token,
        )

    def _sink(self) -> SplitSink:
        """What a split being written needs of this writer."""
        return SplitSink(
            where=self.where,
            compression=self.compression,
            durable=self.durable,
            limits=self._limits,
            progress=self._progress,
            lock=self._lock,
            save=lambda: self._save(sync_dir=True),
            token=self._run_token,
        )

    # -- writing --------------------------------------------------------------------------

    def write(self, record: Any, split: str = "train") -> None:
        """Write one record (a Record or a mapping of field name to value) to ``split``.

        Raises :class:`~recordkit.errors.RecordError` naming the record and field when
        ``on_error="raise"`` (with workers, possibly on a later call or at close); the
        writer is then aborted.
        """
        state = self._splits.get(split)
        if state is None:
            state = self._open_split(split)
        state.input_done = False
        index = state.next_index
        state.next_index = index + 1
        if index < state.skip:
            return
        key = None if self._key is None else self._key_of(record, index)
        label: int | str = index if key is None else key
        if state.groups is not None:  # in this process: a record's parts go to several shards
            try:
                pieces, size, parts = state.groups.encode(self._encoder, record, label, state.seen)
            except RecordkitError as exc:
                self._reject(state, index, key, exc)
                return
            state.add_pieces(pieces, size, parts)
            return
        if self._workers < 2:
            try:
                pieces, size = self._encoder.encode_pieces(record, label, state.seen)
            except RecordkitError as exc:
                self._reject(state, index, key, exc)
                return
            state.add_pieces(pieces, size)
            return
        state.batch_meta.append((index, key))
        state.batch_items.append((label, record))
        wanted = FIRST_BATCH_RECORDS if self._pool is None else self._pool.batch_records
        if len(state.batch_items) >= wanted:
            self._submit(state)

    def write_all(self, records: Iterable[Any], split: str = "train") -> None:
        """Write every record of ``records`` to ``split`` (skipping, on resume, those
        already written without encoding them)."""
        state = self._splits.get(split) or self._open_split(split)
        if state.skip == _ALL:
            return
        iterator = iter(records)
        to_skip = state.skip - state.next_index
        if to_skip > 0:
            skipped = sum(1 for _ in itertools.islice(iterator, to_skip))
            state.next_index += skipped
        if self._workers < 2 and self._key is None and state.groups is None:
            self._write_serial(state, iterator)
        else:
            for record in iterator:
                self.write(record, split)
        state.input_done = True

    def _write_serial(self, state: SplitWriter, records: Iterator[Any]) -> None:
        """:meth:`write` of every record of ``records``, encoded in this process and
        named by their index: the same steps, with the lookups that do not change from
        record to record (the encoder, the split, the options) made once, not per
        record: the encoding thread's time bounds a serial write's speed (measured:
        docs/performance.md#the-writers-buffers)."""
        encode = self._encoder.encode_pieces
        add = state.add_pieces
        seen = state.seen
        state.input_done = False
        for record in records:
            index = state.next_index
            state.next_index = index + 1
            try:
                pieces, size = encode(record, index, seen)
            except RecordkitError as exc:
                self._reject(state, index, None, exc)
                continue
            add(pieces, size)

    def _key_of(self, record: Any, index: int) -> str:
        try:
            key = self._key
            assert key is not None
            value = key(record) if callable(key) else record_items(record)[key]
        except Exception as exc:
            self.abort()
            reason = f"cannot get the record's key: {type(exc).__name__}: {exc}"
            raise RecordError(reason, record=index) from exc
        return value if isinstance(value, str) else str(value)

    def _reject(self, state: SplitWriter, index: int, key: str | None, error: RecordkitError) -> None:
        if self._on_error == "raise":
            if len(self.manifest.splits) > 1:  # which split, when there is a choice
                error.with_context(split=state.name)
            self.abort(failed=state)
            raise error
        state.reject(index, key, error)

    def _submit(self, state: SplitWriter) -> None:
        if self._pool is None:
            setup = WorkerSetup.from_bound(self._bound, self._registry, self._elsewhere)
            self._pool = OrderedPool(setup, self._workers, local_encoder=self._encoder)
        tag = (state, state.batch_meta)
        items = state.batch_items
        state.batch_meta, state.batch_items = [], []
        try:
            done = self._pool.submit(tag, items)
        except BaseException:
            self.abort()
            raise
        for (done_state, meta), results, seen in done:
            self._place(done_state, meta, results, seen)

    def _place(
        self, state: SplitWriter, meta: list[tuple[int, str | None]], results: list[Result], seen: SidesSeen
    ) -> None:
        state.note_sides(seen)  # before the records: the shard they complete lists their pictures
        for (index, key), result in zip(meta, results, strict=True):
            if isinstance(result, bytes):
                state.add(result)
            else:
                self._reject(state, index, key, result)

    # -- finishing ------------------------------------------------------------------------

    def close(self) -> Manifest:
        """Finish every split and write the final manifest; returns it."""
        if self._state == "closed":
            return self.manifest
        if self._state == "aborted":
            raise DatasetError("this writer was aborted; resume with a new writer", file=str(self.where))
        try:
            for state in self._splits.values():
                if state.batch_items:
                    self._submit(state)
            if self._pool is not None:
                for (state, meta), results, seen in self._pool.drain():
                    self._place(state, meta, results, seen)
            for state in self._splits.values():
                state.finish()
            self._save(sync_dir=True)
            replaced_remote = self._target_manifest is not None
            if self._target is not None:
                self.manifest = replace_dataset(
                    self.where, self._target, self.manifest, self._target_manifest, durable=self.durable
                )
                self.where, self._target = self._target, None  # committed: no abort undoes it
        except BaseException:
            self.abort()
            raise
        self._shutdown(cancel=False)
        self._release_lock()
        self._state = "closed"
        self._splits.clear()  # a later write() reaches _open_split, which refuses
        if replaced_remote:
            _remove_old_objects(self.where, self.manifest, self._replaced, self._sweepable)
        return self.manifest

    def abort(self, *, failed: SplitWriter | None = None) -> None:
        """Stop: remove partial shards, keep complete ones listed (resume continues).

        A split whose whole input :meth:`write_all` already wrote, other than the one
        that ``failed``, is finished instead (when no worker process holds its records):
        a bad record in one split does not throw away another that is complete.
        """
        if self._state != "open":
            return
        self._state = "aborted"
        in_flight = self._pool is not None
        self._shutdown(cancel=True)
        try:
            for state in self._splits.values():
                if state is not failed and state.input_done and not in_flight and not state.batch_items:
                    try:
                        state.finish()
                        continue
                    except Exception:  # cannot finish it (a full disk?): it stays resumable
                        pass
                state.abort()
            self._splits.clear()  # a later write() reaches _open_split, which refuses
            if self._target is not None:  # the old dataset stays; the staged one goes
                self.where.remove_tree()
                return
            if self._remote_manifest is None or not self._remote_manifest.lost:
                self._save()  # (after another writer's commit: nothing more is saved)
        finally:
            self._release_lock()

    def _shutdown(self, *, cancel: bool) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.close(cancel=cancel)
        self._progress.close()

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_dataset(
    records: Iterable[Any],
    path: PathOrUrl,
    schema: Schema | type[Record] | str | os.PathLike[str],
    split: str = "train",
    **options: Unpack[WriteOptions],
) -> Manifest:
    """Write ``records`` (any iterable of Records or mappings) as split ``split`` of the
    dataset at ``path``, and return its manifest.

    The arguments come in the order of every recordkit writer: the records, the
    dataset's path, its schema. The older order, ``write_dataset(records, schema, path)``,
    still works (see :func:`~recordkit.write._plan.path_and_schema`).

    The options are those of :class:`DatasetWriter`, listed in :class:`WriteOptions`.
    With ``resume=True`` the same ``records`` (same order) must be given again; those
    already in complete shards are skipped without being encoded, and if the earlier
    write finished nothing is written.
    """
    with DatasetWriter(path, schema, **options) as writer:
        if isinstance(records, Sized):
            writer._progress.expect(len(records))
        writer.write_all(records, split)
    return writer.manifest


# -- helpers ------------------------------------------------------------------------------


def _remove_old_objects(
    root: Location, manifest: Manifest, replaced: Manifest | None, generations: frozenset[str]
) -> None:
    """After a remote overwrite's commit: delete the objects of the dataset it replaced
    that the new manifest does not list, in the generation folders ``generations`` or
    outside them (:func:`~recordkit.write._replace.remove_unlisted`). The new dataset is
    complete whatever happens here, so a failure is logged, not raised."""
    try:
        remove_unlisted(root, manifest, replaced, generations)
    except Exception as exc:
        logger.warning(
            "recordkit: the dataset at %s is written, but deleting the objects it no longer lists "
            "failed (%s: %s); readers never see them, and the next overwrite removes them",
            root,
            type(exc).__name__,
            exc,
        )


def _load_if_present(root: Location) -> Manifest | None:
    if not root.join(MANIFEST_FILE).exists():
        return None
    return read_manifest(root)
