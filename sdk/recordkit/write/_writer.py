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
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import itertools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sized
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypedDict

from typing_extensions import Unpack

from recordkit._version import __version__
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import (
    MANIFEST_FILE,
    CodecProvenance,
    Manifest,
    ShardInfo,
    SplitInfo,
    UnfinishedWrite,
)
from recordkit.errors import DatasetError, IncompatibleSchemaError, RecordError, RecordkitError
from recordkit.format._index import index_name
from recordkit.format._tfrecord import FRAMING_BYTES, Compression
from recordkit.schema._compatibility import check_compatibility
from recordkit.schema._encoder import RecordEncoder, record_items
from recordkit.schema._record_class import Record, schema_of
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.storage import Location, PathOrUrl, StorageOptions, location
from recordkit.write._commit import RemoteManifest
from recordkit.write._lock import DatasetLock, Wait
from recordkit.write._parallel import FIRST_BATCH_RECORDS, Item, OrderedPool, Result, WorkerSetup
from recordkit.write._progress import Progress
from recordkit.write._rejects import RejectsFile
from recordkit.write._replace import (
    commit_generation,
    generation_folder,
    remove_unlisted,
    replace_folder,
    staging_folder,
)
from recordkit.write._shard_file import (
    DEFAULT_SHARD_BYTES,
    ShardFile,
    ShardLimits,
    check_split_name,
    fsync_dir,
    shard_name,
    shard_pattern,
    temp_pattern,
)

__all__ = ["DEFAULT_SHARD_BYTES", "DatasetWriter", "OnError", "WriteOptions", "write_dataset"]

OnError = Literal["raise", "skip"]
#: How to name records in errors and in the rejects file: a field's name, or a function
#: of the record.
RecordKey = str | Callable[[Any], Any]


class WriteOptions(TypedDict, total=False):
    """The options of a write, taken as keywords by both :class:`DatasetWriter` and
    :func:`write_dataset` (the one list of them; a dict of them passes as ``**options``).

    :ivar shard_bytes: target shard size in bytes of (uncompressed) TFRecord data; a
        shard never exceeds it unless a single record does. None: no size limit.
        Default: :data:`DEFAULT_SHARD_BYTES` (128 MiB).
    :ivar shard_records: maximum records per shard (default None: no limit).
    :ivar compression: None/"none" (default), "GZIP" or "ZLIB"; an existing dataset
        keeps its own.
    :ivar workers: 0 (default) or 1 encodes in this process; N > 1 encodes in N
        worker processes.
    :ivar on_error: "raise" (default) stops at the first bad record with an error
        naming it; "skip" leaves it out and lists it in ``rejects-<split>.jsonl``.
    :ivar key: names records in errors and rejects: a field's name or a function of
        the record (default: the record's index in the split's input).
    :ivar resume: continue an interrupted write: the records that complete shards
        already hold are skipped (the input must be the same, in the same order).
    :ivar append: add records or new splits to an existing dataset. The schema must
        store records as the dataset's schema does, except that it may leave out the
        dataset's optional fields and add optional fields of its own (the dataset's
        schema then becomes the new one, keeping the optional fields it leaves out);
        anything else is an IncompatibleSchemaError.
    :ivar progress: show a progress bar; None (default): only when stderr is a terminal.
    :ivar registry: the codec registry (default: the installed plugins).
    :ivar durable: True (default) fsyncs every shard before its rename (while the next
        shard is being encoded), the folder before the manifest lists it, and the
        manifest and rejects files, so that what a manifest lists survives a machine
        crash or power loss, not only the process stopping. False leaves the flushing to
        the operating system, as ``tf.io.TFRecordWriter`` does: faster, and still atomic
        if the process dies, but a machine crash may lose or truncate recently written
        shards (``recordkit verify`` finds them).
    :ivar overwrite: replace whatever dataset is at the path: the new one is written
        into a sibling folder and swapped in when the writer closes, so a crash (or an
        error, or ``abort``) leaves the old dataset as it was; on Linux the swap is one
        atomic step, elsewhere two renames (see :mod:`recordkit.write._replace`). In a
        remote dataset the new one is written into a generation folder inside it
        (``gen-<id>/``), committed by one PUT of ``dataset.json``; then every object
        under the URL that the new manifest does not list is deleted. Readers see the
        old dataset or the new one, never a mix. Not with ``append`` or ``resume``.
    :ivar wait: the writer locks the dataset folder (one writer at a time, see
        :mod:`recordkit.write._lock`); if another writer holds it, False (default) raises
        DatasetLockedError at once naming its pid, True waits for it, a number waits at
        most that many seconds. Remote datasets take no lock (and ``wait`` does not
        apply): each save of ``dataset.json`` is conditional on the version this writer
        read or saved last, and a writer that finds another's commit raises
        ConcurrentWriteError (see :mod:`recordkit.write._commit`).
    :ivar storage_options: for a remote ``path`` (``s3://``, ``gs://``, any fsspec
        URL): the options of its fsspec filesystem (``endpoint_url``, credentials ...).
        There each shard is streamed under its final name and appears whole when its
        upload completes; ``dataset.json``, written last in one PUT, is the commit
        (see the how-to *Datasets in cloud storage*).
    """

    shard_bytes: int | None
    shard_records: int | None
    compression: str | Compression | None
    workers: int
    on_error: OnError
    key: RecordKey | None
    resume: bool
    append: bool
    progress: bool | None
    registry: CodecRegistry | None
    durable: bool
    wait: Wait
    overwrite: bool
    storage_options: StorageOptions | None


logger = logging.getLogger("recordkit")

_ALL = sys.maxsize
#: Where a batch sent to the workers goes back: its split and each record's (index, key).
_BatchTag = tuple["_Split", list[tuple[int, "str | None"]]]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class _Split:
    """The state of one split being written by a :class:`DatasetWriter`."""

    def __init__(self, writer: DatasetWriter, name: str, info: SplitInfo, *, skip: int) -> None:
        self.writer = writer
        self.name = name
        self.info = info
        #: Input records to drop before writing (resume): those already accounted for.
        self.skip = skip
        #: Index of the next record given to write() (its position in the input).
        self.next_index = 0
        #: Input records handled so far (written, rejected or skipped), in order.
        self.handled = skip
        self.shard: ShardFile | None = None
        #: The previous shard, being completed and listed in the background.
        self.committing: Future[ShardInfo] | None = None
        self.rejects = RejectsFile(
            writer.where, name, keep=info.rejected, durable=writer.durable, file=info.rejects_file
        )
        self.rejected_since_commit = 0
        #: Records waiting to be sent to the workers: (index, key) and (label, record).
        self.batch_meta: list[tuple[int, str | None]] = []
        self.batch_items: list[Item] = []
        #: write_all() went through its whole input: if the writer stops because another
        #: split fails, this split is complete and is finished, not thrown away.
        self.input_done = False

    def add(self, framed: bytes) -> None:
        """Append one framed record (as worker processes send them)."""
        self._shard_for(len(framed)).add(framed)
        self.handled += 1
        self.writer._progress.advance(len(framed))

    def add_pieces(self, pieces: list[bytes], size: int) -> None:
        """Append one record given as the pieces of its Example (``size`` bytes), framed
        straight into the shard (the one-process path)."""
        framed_size = size + FRAMING_BYTES
        self._shard_for(framed_size).add_pieces(pieces, size)
        self.handled += 1
        self.writer._progress.advance(framed_size)

    def _shard_for(self, framed_size: int) -> ShardFile:
        """The shard a record of ``framed_size`` bytes goes to: the current one, or a
        new one when it is full (the full one is committed)."""
        shard = self.shard
        if shard is None or not shard.fits(framed_size, self.writer._limits):
            if shard is not None:
                self.commit_shard()
            index = len(self.info.shards) + (self.committing is not None)
            name = shard_name(self.name, index, self.writer.compression)
            shard = self.shard = ShardFile(
                self.writer.where.join(name), self.writer.compression, durable=self.writer.durable
            )
        return shard

    def reject(self, index: int, key: str | None, error: RecordkitError) -> None:
        self.rejects.add(index, key, error)
        self.rejected_since_commit += 1
        self.handled += 1
        self.writer._progress.advance(0)

    def commit_shard(self) -> None:
        """Complete the current shard in the background: its last writes and fsync, its
        rename and the manifest that lists it overlap the encoding of the next records."""
        assert self.shard is not None
        self.settle_commit()  # at most one shard completing at a time
        shard, self.shard = self.shard, None
        handled, rejected = self.handled, self.rejected_since_commit
        self.rejected_since_commit = 0
        self.committing = shard.commit_async(then=lambda info: self._list(info, handled, rejected))

    def _list(self, shard_info: ShardInfo, handled: int, rejected: int) -> None:
        """On the shard's background thread, once it is complete: list it in the manifest,
        with the ``handled`` input records and the ``rejected`` ones it accounts for."""
        self.rejects.sync()  # the manifest never counts rejects not on disk
        with self.writer._lock:
            self.info.shards.append(shard_info)
            if rejected:
                self.info.rejected += rejected
                self.info.rejects_file = self.rejects.name
            previous = self.info.unfinished
            # Records handled up to the commit (not the one that opened the next shard).
            self.info.unfinished = UnfinishedWrite(
                consumed=handled,
                started=previous.started if previous else _now(),
                shards_before=previous.shards_before if previous else None,
            )
            self.writer._save(sync_dir=True)

    def settle_commit(self) -> None:
        """Wait until the shard being completed, if any, is listed (re-raising its error)."""
        committing, self.committing = self.committing, None
        if committing is not None:
            committing.result()

    def finish(self) -> None:
        if self.shard is not None:
            self.commit_shard()
        self.settle_commit()
        self.rejects.sync()
        with self.writer._lock:
            if self.rejected_since_commit:
                self.info.rejected += self.rejected_since_commit
                self.info.rejects_file = self.rejects.name
                self.rejected_since_commit = 0
            self.info.unfinished = None
        self.rejects.close()

    def abort(self) -> None:
        if self.shard is not None:
            self.shard.discard()
            self.shard = None
        # A shard completed before the error stays listed, as if committed at once; if it
        # failed too, that failure is not the error being reported.
        with contextlib.suppress(Exception):
            self.settle_commit()
        # Rejects after the last complete shard are not counted: cut them from the file.
        with self.writer._lock:
            self.rejects.cut_to(self.info.rejected)
        self.rejected_since_commit = 0
        self.batch_meta, self.batch_items = [], []


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

    :param path: the dataset's folder (created if missing).
    :param schema: the :class:`~recordkit.Schema` records are checked and encoded with, a
        :class:`~recordkit.Record` class, or the path of a schema file (as readers take).
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
        #: Where the dataset is being written (local folder or remote URL).
        self.where = location(path, options.get("storage_options"))
        #: The local folder (for a remote dataset: its URL, as a Location).
        self.root: Path | Location = self.where.path if self.where.is_local else self.where
        #: With overwrite: where the dataset goes when complete (``where`` is the staging
        #: folder beside it, or remotely the generation folder inside it: see _replace).
        self._target: Location | None = None
        if overwrite:
            staged = (
                location(staging_folder(self.where.path))
                if self.where.is_local
                else generation_folder(self.where)
            )
            if staged is not None:  # (remotely None: nothing to replace, written in place)
                self._target, self.where = self.where, staged
                self.root = staged.path if staged.is_local else staged
        #: A remote dataset's manifest, each save conditional on the last (no writer
        #: replaces another's commit: see _commit); with a remote overwrite, also the
        #: target's, whose one save is the commit.
        self._remote_manifest = None if self.where.is_local else RemoteManifest(self.where)
        self._target_manifest = (
            RemoteManifest(self._target) if self._target is not None and not self._target.is_local else None
        )
        self.durable = durable
        self._limits = ShardLimits(
            options.get("shard_bytes", DEFAULT_SHARD_BYTES), options.get("shard_records")
        )
        self._on_error = on_error
        self._key = options.get("key")
        self._resume = resume
        self._append = append
        self._workers = workers
        if registry is None:
            registry = default_registry()
        self._registry = registry
        if isinstance(schema, (str, os.PathLike)):  # a schema file, as every reader takes
            schema = Schema.load(schema, registry=registry, storage_options=options.get("storage_options"))
        self.schema = schema_of(schema)
        self._bound = self.schema.bind(registry)
        self._encoder = RecordEncoder(self._bound)
        self._pool: OrderedPool[_BatchTag] | None = None
        self._splits: dict[str, _Split] = {}
        #: The dataset's schema grown by optional fields these records add, until saved.
        self._grown: Schema | None = None
        self._state: Literal["open", "closed", "aborted"] = "open"
        #: Held while the manifest changes or is saved: shards are listed from their
        #: background threads as they complete (see _Split.commit_shard).
        self._lock = threading.RLock()
        self._folder_lock: DatasetLock | None = None
        if isinstance(self.root, Path):
            if self.root.exists() and not self.root.is_dir():
                raise DatasetError("exists and is not a folder", file=str(self.root))
            self.root.mkdir(parents=True, exist_ok=True)
            self._folder_lock = DatasetLock(self.root, wait=options.get("wait", False))
        try:
            if isinstance(self.root, Path):
                # Holding the lock, this is the only writer: temp files are a dead one's.
                _remove_manifest_debris(self.root)
            if self._target_manifest is not None:
                self._target_manifest.load()  # the version the commit must still find
            self.manifest, self.compression = self._open_manifest(options.get("compression"))
        except BaseException:
            self._release_lock()
            raise
        name = (self._target or self.where).name
        self._progress = Progress(options.get("progress"), desc=f"writing {name}")

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
            manifest = Manifest(
                recordkit_version=__version__,
                schema=self.schema,
                fingerprint=self._bound.fingerprint(),
                codecs=codec_provenance(self._bound, self._registry),
                compression=chosen.value,
            )
            self._store(manifest)
            return manifest, chosen
        if not (self._append or self._resume):
            raise DatasetError(
                f"already holds a dataset ({MANIFEST_FILE}); pass append=True to add records or "
                "splits, or resume=True to finish an interrupted write",
                file=str(self.root),
            )
        stored = Compression.parse(existing.compression)
        if compression is not None and Compression.parse(compression) is not stored:
            raise DatasetError(
                f"the dataset is stored with compression {stored.value or 'none'!r}; cannot add "
                f"shards with {Compression.parse(compression).value or 'none'!r}",
                file=str(self.root),
            )
        self._grown = _check_schema(existing, self.schema, self._registry, append=self._append)
        return existing, stored

    def _grow_schema(self) -> None:
        """The records add optional fields to a stored dataset: its schema grows (see
        :func:`_check_schema`), in the manifest save that first marks a split as being
        written."""
        grown, self._grown = self._grown, None
        if grown is not None:
            codecs = {**codec_provenance(self._bound, self._registry), **self.manifest.codecs}
            self.manifest.schema_ = grown
            self.manifest.fingerprint = grown.bind(self._registry).fingerprint()
            self.manifest.codecs = dict(sorted(codecs.items()))

    def _save(self, *, sync_dir: bool = False) -> None:
        with self._lock:
            if sync_dir and self.durable and isinstance(self.root, Path):
                fsync_dir(self.root)  # make shard renames durable before the manifest lists them
            self._store(self.manifest)

    def _store(self, manifest: Manifest) -> None:
        """Save ``manifest``: locally atomically (the lock keeps other writers out);
        remotely only if no other writer replaced the stored one meanwhile."""
        if self._remote_manifest is not None:
            self._remote_manifest.save(manifest)
        else:
            manifest.save(self.where, durable=self.durable)

    # -- splits ---------------------------------------------------------------------------

    def _open_split(self, name: str) -> _Split:
        with self._lock:
            return self._open_split_locked(name)

    def _open_split_locked(self, name: str) -> _Split:
        if self._state != "open":
            raise DatasetError(f"this writer is {self._state}; open a new one", file=str(self.root))
        check_split_name(name)
        info = self.manifest.splits.get(name)
        skip = 0
        if info is None:
            info = SplitInfo(unfinished=UnfinishedWrite(consumed=0, started=_now()))
            _check_no_strays(self.where, name, info)
            self.manifest.splits[name] = info
        elif info.unfinished is not None:
            if not self._resume:
                raise DatasetError(
                    f"split {name!r} has an unfinished write; pass resume=True (with the same input) "
                    "to finish it first",
                    file=str(self.root),
                )
            skip = info.unfinished.consumed
            _remove_split_debris(self.where, name, info)
        elif self._resume:
            skip = _ALL  # the write finished: resuming it writes nothing
        else:  # append to a finished split
            _check_no_strays(self.where, name, info)
            # Readers keep reading the shards from before the append until it finishes.
            info.unfinished = UnfinishedWrite(consumed=0, started=_now(), shards_before=len(info.shards))
        split = _Split(self, name, info, skip=skip)
        self._splits[name] = split
        self._grow_schema()
        self._save()
        return split

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
        if self._workers < 2:
            try:
                pieces, size = self._encoder.encode_pieces(record, label)
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
        if self._workers < 2 and self._key is None:
            self._write_serial(state, iterator)
        else:
            for record in iterator:
                self.write(record, split)
        state.input_done = True

    def _write_serial(self, state: _Split, records: Iterator[Any]) -> None:
        """:meth:`write` of every record of ``records``, encoded in this process and
        named by their index: the same steps, with the lookups that do not change from
        record to record (the encoder, the split, the options) made once, not per
        record: the encoding thread's time bounds a serial write's speed (measured:
        docs/performance.md#the-writers-buffers)."""
        encode = self._encoder.encode_pieces
        add = state.add_pieces
        state.input_done = False
        for record in records:
            index = state.next_index
            state.next_index = index + 1
            try:
                pieces, size = encode(record, index)
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

    def _reject(self, state: _Split, index: int, key: str | None, error: RecordkitError) -> None:
        if self._on_error == "raise":
            if len(self.manifest.splits) > 1:  # which split, when there is a choice
                error.with_context(split=state.name)
            self.abort(failed=state)
            raise error
        state.reject(index, key, error)

    def _submit(self, state: _Split) -> None:
        if self._pool is None:
            setup = WorkerSetup.from_bound(self._bound, self._registry)
            self._pool = OrderedPool(setup, self._workers, local_encoder=self._encoder)
        tag = (state, state.batch_meta)
        items = state.batch_items
        state.batch_meta, state.batch_items = [], []
        try:
            done = self._pool.submit(tag, items)
        except BaseException:
            self.abort()
            raise
        for (done_state, meta), results in done:
            self._place(done_state, meta, results)

    def _place(self, state: _Split, meta: list[tuple[int, str | None]], results: list[Result]) -> None:
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
            raise DatasetError("this writer was aborted; resume with a new writer", file=str(self.root))
        try:
            for state in self._splits.values():
                if state.batch_items:
                    self._submit(state)
            if self._pool is not None:
                for (state, meta), results in self._pool.drain():
                    self._place(state, meta, results)
            for state in self._splits.values():
                state.finish()
            self._save(sync_dir=True)
            replaced_remote = self._target is not None and not self._target.is_local
            if self._target is not None:
                if self._target.is_local:
                    replace_folder(self.where.path, self._target.path, durable=self.durable)
                else:
                    assert self._target_manifest is not None
                    self.manifest = commit_generation(
                        self.where, self._target, self.manifest, self._target_manifest
                    )
                self.where, self._target = self._target, None  # committed: no abort undoes it
                self.root = self.where.path if self.where.is_local else self.where
        except BaseException:
            self.abort()
            raise
        self._shutdown(cancel=False)
        self._release_lock()
        self._state = "closed"
        self._splits.clear()  # a later write() reaches _open_split, which refuses
        if replaced_remote:
            _remove_old_objects(self.where, self.manifest)
        return self.manifest

    def abort(self, *, failed: _Split | None = None) -> None:
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
    schema: Schema | type[Record] | str | os.PathLike[str],
    path: PathOrUrl,
    split: str = "train",
    **options: Unpack[WriteOptions],
) -> Manifest:
    """Write ``records`` (any iterable of Records or mappings) as split ``split`` of the
    dataset at ``path``, and return its manifest.

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


def _remove_old_objects(root: Location, manifest: Manifest) -> None:
    """After a remote overwrite's commit: delete what the new manifest does not list. The
    new dataset is complete whatever happens here, so a failure is logged, not raised."""
    try:
        remove_unlisted(root, manifest)
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
    return Manifest.load(root)


def codec_provenance(bound: BoundSchema, registry: CodecRegistry) -> dict[str, CodecProvenance]:
    """Which codec version and distribution encodes each of ``bound``'s codecs (the manifest's ``codecs``)."""
    codecs = {}
    for field in bound.fields:
        info = registry.info(field.spec.codec)
        codecs[info.name] = CodecProvenance(
            version=field.codec.version,
            plugin=info.plugin,
            distribution=info.distribution,
            distribution_version=info.distribution_version,
        )
    return dict(sorted(codecs.items()))


def _check_schema(
    manifest: Manifest, schema: Schema, registry: CodecRegistry, *, append: bool
) -> Schema | None:
    """Records written with ``schema`` may join the dataset only if every stored record
    stays a valid record of the dataset's schema, and every new record is one.

    That holds under the append rules of :func:`~recordkit.check_compatibility`
    (identical layouts, but for optional fields added or left out) with the same codec
    versions. When the appending schema adds optional fields, the dataset's schema must
    grow: the appending schema, plus the dataset's optional fields it leaves out, is
    returned (None when the stored schema stays as it is). Any other difference raises
    IncompatibleSchemaError naming the fields.
    """
    report = check_compatibility(manifest.schema, schema, mode="append", registry=registry)
    report.raise_for_incompatible()
    # What is left is compatible: optional fields added, or optional fields left out.
    added = [d.field for d in report.differences if d.kind == "added"]
    left_out = [d.field for d in report.differences if d.kind == "removed"]
    stored_now = manifest.schema.bind(registry)
    if stored_now.fingerprint() != manifest.fingerprint:
        differences = []
        for field in stored_now.fields:
            stored = manifest.codecs.get(field.spec.codec)
            if stored is not None and stored.version != field.codec.version:
                differences.append(
                    f"field {field.name!r}: codec {field.spec.codec!r} version {stored.version!r} stored, "
                    f"{field.codec.version!r} installed"
                )
        action = "append to" if append else "resume writing"
        reason = f"cannot {action} the dataset: the records would not be stored as the stored ones are"
        if differences:  # another codec version: readers still read the dataset, say how to grow it
            reason += (
                "; to add records, write the dataset again with the installed codecs "
                "(rk.write_dataset(rk.iter_records(old), schema, new)) and append to the new one"
            )
        else:
            differences.append(f"fingerprint {manifest.fingerprint} stored, {stored_now.fingerprint()} now")
        raise IncompatibleSchemaError(reason, differences=differences)
    if not added:
        return None
    # The appending schema (newer: it has the added fields), keeping the dataset's
    # optional fields that it leaves out.
    fields = {**schema.fields, **{name: manifest.schema.fields[name] for name in left_out}}
    grown = Schema.model_validate({**schema.model_dump(), "fields": fields})
    grown.bind(registry)  # refused if an added field's Example keys clash with a left-out field's
    return grown


def _remove_manifest_debris(root: Path) -> None:
    """Temp files of a manifest save that was interrupted (called holding the lock: no
    other writer is running, so they are a dead writer's)."""
    for path in root.glob(".dataset.*.json.tmp"):
        path.unlink(missing_ok=True)


def _unlisted_shards(names: list[str], split: str, info: SplitInfo) -> list[str]:
    listed = {s.file for s in info.shards}
    pattern = shard_pattern(split)
    return sorted(n for n in names if pattern.match(n) and n not in listed)


def _remove_split_debris(root: Location, split: str, info: SplitInfo) -> None:
    """Before resuming: remove temp shards, and shards renamed but never listed (the
    process stopped between the rename and the manifest update; on an object store,
    between a shard's upload and the manifest PUT)."""
    temp = temp_pattern(split)
    names = root.list()
    for name in names:
        if temp.match(name):
            root.join(name).remove()
    for name in _unlisted_shards(names, split, info):
        root.join(name).remove()
        root.join(index_name(name)).remove()


def _check_no_strays(root: Location, split: str, info: SplitInfo) -> None:
    """Before a fresh write to a split: remove temp shards, refuse to overwrite shard
    files that the manifest does not list."""
    temp = temp_pattern(split)
    names = root.list()
    for name in names:
        if temp.match(name):
            root.join(name).remove()
    strays = _unlisted_shards(names, split, info)
    if strays:
        shown = ", ".join(strays[:5]) + (" ..." if len(strays) > 5 else "")
        raise DatasetError(
            f"holds shard files of split {split!r} that {MANIFEST_FILE} does not list ({shown}); "
            "remove them, or pass resume=True if they come from an interrupted write",
            file=str(root),
        )
