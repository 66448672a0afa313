"""The options of a local write, :class:`WriteOptions`: one list, documented once, that
:class:`~recordkit.DatasetWriter` and :func:`~recordkit.write_dataset` both take."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from recordkit.codec._registry import CodecRegistry
from recordkit.format._tfrecord import Compression
from recordkit.schema._card import DatasetCard
from recordkit.storage import StorageOptions
from recordkit.write._lock import Wait
from recordkit.write._plan import RecordKey

__all__ = ["OnError", "WriteOptions"]

OnError = Literal["raise", "skip"]


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
    :ivar card: the dataset's card (a :class:`~recordkit.DatasetCard`, or its entries as a
        dict: license, citation, homepage, authors ...; a bad entry is a SchemaError),
        stored in ``dataset.json``; default: the schema's card, if its file declares
        one. Appending with a card replaces the stored one.
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
    card: DatasetCard | Mapping[str, Any] | None
