"""A rank's share of an in-order canonical epoch streamed from its shards by ``TFRecordDataset``.

An epoch read in order (``tf_epochs(shuffle=False)``) visits a split's records in the
shards' own order; a rank's share of it (every ``world_size``-th block of ``batch_size``
records, from where a resumed state left the epoch) is a list of runs of neighbouring
records, each run within one shard (:func:`record_runs`). Such a share is read as
:meth:`recordkit.Dataset.tf` reads a split: each run by ``TFRecordDataset`` (its CRCs
checked, the records before the run passed over by their headers alone, ``skip``, and
the run's count taken, ``take``), the runs one after the other, with no Python call a
batch: what the index-driven generator of :mod:`recordkit.read._tf_epochs` costs over
``ds.tf`` on records of pictures and sounds (a call and a copy of every record through
Python; see docs/performance-epochs.md).

The checks are the generator's. Before ``TFRecordDataset`` opens a shard, its record
headers are walked (once a process while the file is unchanged:
:func:`~recordkit.read._framed_read.opened_walk`), so that no header declaring more bytes
than the file holds reaches TensorFlow, which would allocate them; a shard that walk
refuses is read no further. Where a run ends early (a CRC TensorFlow found bad, a file
cut short, a refused shard), the next element reads the run again in Python, as the
generator reads it (:meth:`~recordkit.read._epoch_stream.EpochStream.serialized_located`),
and fails with the generator's error (a :class:`~recordkit.errors.CorruptRecordError`
naming the shard, the offset and the record). Nothing of the check runs per record or
per run while the records are sound: the loss's element is never reached.

Only a split's own local, uncompressed shards without field groups or a slice are read
so (:func:`streams_in_order`); anything else, and every shuffled epoch or mixture, is
fetched by the generator.

TensorFlow is imported when a read is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recordkit.dataset._shards import Shard
from recordkit.errors import CorruptRecordError, RecordkitError
from recordkit.format._tfrecord import Compression
from recordkit.read._epoch_stream import EpochStream
from recordkit.read._framed_read import opened_walk
from recordkit.read._traced import tfrecord_file, traced_as_written

__all__ = ["InOrderRecords", "record_runs", "streams_in_order"]


def record_runs(located: np.ndarray) -> np.ndarray:
    """The runs of neighbouring records of one shard in ``located`` (``[n, 2]`` rows of
    ``(shard, record)``, in the order they are read), as ``[runs, 3]`` rows of
    ``(shard, first record, records)``."""
    pairs = np.asarray(located, dtype=np.int64).reshape(-1, 2)
    if not len(pairs):
        return np.zeros((0, 3), dtype=np.int64)
    shards, numbers = pairs[:, 0], pairs[:, 1]
    breaks = np.flatnonzero((np.diff(shards) != 0) | (np.diff(numbers) != 1)) + 1
    firsts = np.concatenate([[0], breaks])
    counts = np.diff(np.concatenate([firsts, [len(pairs)]]))
    return np.stack([shards[firsts], numbers[firsts], counts], axis=1)


#: The mean serialized record (by the manifest) from which an in-order epoch is streamed
#: from its shards: the generator's cost a record is mostly its copies of the record's
#: bytes (a read into one buffer, a ``bytes`` a record, TensorFlow's string a record),
#: which streaming saves, where ``TFRecordDataset`` and the batch cost a few microseconds
#: a record more than a generator's call of thousands of small records. Measured at the
#: two ends (docs/performance-epochs.md): on records of about 45 KB (a JPEG, a WAV, a
#: caption, boxes, a label) the source stage fell from 77 to 43 µs of CPU a record; on
#: records of about 60 bytes (a caption and a label) the whole read rose from 2.8 to 9.5.
STREAM_FROM_BYTES = 16 << 10


def streams_in_order(stream: EpochStream, runs: np.ndarray) -> bool:
    """Whether ``stream``'s share, read in ``runs`` (:func:`record_runs`), is streamed
    from its shards by ``TFRecordDataset``: an in-order epoch of a split (not a mixture)
    of records of :data:`STREAM_FROM_BYTES` or more on average, whose shards read are
    local, uncompressed files of their own (no field group joined, no slice), in runs
    of more than one record on average that pass over no more records (``skip``) than
    they read: ``skip`` reads each header it passes (about 10 µs a record of 45 KB), so
    a rank of several, whose runs are its batches, each after the batches of the other
    ranks, is fetched by the index instead (rank 0 of 2 in batches of 64: the source
    stage 120 µs of CPU a record streamed against 104 fetched)."""
    if stream.sources is not None or stream.shuffle or not len(runs):
        return False
    dataset = stream.records.dataset
    if dataset.compression is not Compression.NONE:
        return False
    read = int(runs[:, 2].sum())
    if read < 2 * len(runs) or int(runs[:, 1].sum()) > read:
        return False
    shards = stream.records.shards.shards
    record_bytes = _mean_record_bytes(shards[int(runs[0, 0])])
    if record_bytes is None or record_bytes < STREAM_FROM_BYTES:
        return False
    return all(_plain_file(shards[int(index)]) for index in np.unique(runs[:, 0]).tolist())


def _mean_record_bytes(shard: Shard) -> float | None:
    """The mean size of a record of ``shard`` (its frame included), from the manifest;
    None when it does not say."""
    if not shard.records or shard.bytes is None:
        return None
    return shard.bytes / shard.records


def _plain_file(shard: Shard) -> bool:
    """Whether ``shard`` is one local file read whole (no field group, no slice)."""
    return shard.path.local_path is not None and not shard.joined and not shard.sliced


class InOrderRecords:
    """The serialized records of ``runs`` (:func:`record_runs`) of ``stream``'s split as
    a ``tf.data.Dataset`` of scalar strings (:meth:`dataset`), checked as the module
    docs say; a failure is handed to ``failed`` before it is raised (for
    :meth:`~recordkit.read._tf_epochs.TfEpochs.__iter__` to raise it clean)."""

    def __init__(
        self, stream: EpochStream, runs: np.ndarray, failed: Callable[[RecordkitError], None]
    ) -> None:
        self._stream = stream
        self._runs = np.asarray(runs, dtype=np.int64).reshape(-1, 3)
        self._failed = failed
        self._shards: Sequence[Shard] = stream.records.shards.shards
        self._compression = stream.records.dataset.compression

    def dataset(self) -> Any:
        """The records of every run, in order."""
        import tensorflow as tf

        numbered = np.concatenate([np.arange(len(self._runs), dtype=np.int64)[:, None], self._runs], axis=1)
        runs = tf.data.Dataset.from_tensor_slices(numbered)
        tf_string = tf.TensorSpec([], tf.string)

        def read(run: Any) -> Any:
            # The shard's path once its headers are vouched for (else the run's error).
            path = tf.numpy_function(self._vouched, [run[0]], tf.string, stateful=False)
            path = tf.ensure_shape(path, [])
            records = tfrecord_file(path).skip(run[2]).take(run[3]).ignore_errors()
            lost = tf.data.Dataset.from_tensors(run[0]).map(
                lambda index: tf.ensure_shape(
                    tf.numpy_function(self._lost, [index], tf.string, stateful=False), tf_string.shape
                )
            )
            # The run's records, then (reached only when TensorFlow gave fewer) its error.
            return records.concatenate(lost).take(run[3])

        return runs.flat_map(traced_as_written(read))

    def _vouched(self, index: np.int64) -> bytes:
        """The path of run ``index``'s shard, its headers walked and sound (a shard's walk
        is kept while its file is unchanged); else the run's error, as the generator
        gives it where it reads the run, or the walk's."""
        shard_index = int(self._runs[int(index), 0])
        shard = self._shards[shard_index]
        try:
            opened_walk(shard, self._compression)
        except (RecordkitError, OSError) as exc:
            self._raise_lost(int(index))  # the generator's error for this run, if it has one
            error = (
                exc
                if isinstance(exc, RecordkitError)
                else CorruptRecordError(
                    f"cannot read the shard file: {exc.strerror or exc}", shard=shard.name
                )
            )
            self._failed(error)
            raise error from None
        return str(shard.path).encode("utf-8")

    def _lost(self, index: np.int64) -> bytes:
        """Run ``index`` ended early: its error, as the generator gives it (or, if Python
        reads the run whole, one naming the shard)."""
        self._raise_lost(int(index))
        shard, first, count = (int(v) for v in self._runs[int(index)])
        error = CorruptRecordError(
            f"TensorFlow read fewer than the {count} records from record {first} on, which "
            "recordkit's own read of them finds sound (was the file changed while it was read?)",
            shard=self._shards[shard].name,
        )
        self._failed(error)
        raise error

    def _raise_lost(self, index: int) -> None:
        """Read run ``index`` in Python, as the generator does: raise its error, if any."""
        shard, first, count = (int(v) for v in self._runs[index])
        located = np.stack(
            [np.full(count, shard, dtype=np.int64), np.arange(first, first + count, dtype=np.int64)], axis=1
        )
        try:
            self._stream.serialized_located(located)
        except RecordkitError as error:
            self._failed(error)
            raise
