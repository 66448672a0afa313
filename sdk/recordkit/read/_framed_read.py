"""The framed read of local shards: ``TFRecordDataset`` alone, where a walk of the record
headers vouches for the framing (see :mod:`recordkit.read._shard_stream`).

A shard whose headers frame the whole file and hold the records (and bytes) the manifest
lists is read by ``TFRecordDataset``, its records taken up to their count; only where they
end early is the next element an error naming the shard, the offset and the records read
(:func:`framed_records`). The walk (:func:`walk_shard`) is what keeps TensorFlow from a
hostile length: a header declaring more bytes than the file holds would make it allocate
them, so no shard is handed to TensorFlow before its walk.

A read of a few shards walks them when it is built (:mod:`recordkit.read._shard_stream`). A
read of more shards than it opens at once (:func:`checked_as_opened`) checks each shard
only when the interleave opens it (:func:`read_as_opened`): one Python call per shard
(``tf.numpy_function``) makes the shard (its path resolved: a symlink out of the dataset is
refused), compares its size with the manifest, walks its headers, and gives the path, the
records to take and the message of a loss; a refusal is the error of that shard's first
element, before ``TFRecordDataset`` is made for it. Building such a read touches no shard,
so its cost does not grow with the shards. The call is stateless (the same shard, the same
verdict), so an iterator still saves in a ``tf.train.Checkpoint``.

TensorFlow is imported when a read is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recordkit.dataset._shards import ListedShards, Shard
from recordkit.dataset._split_groups import JoinedShards
from recordkit.errors import CorruptRecordError, RecordkitError
from recordkit.format._tfrecord import FRAMING_BYTES, Compression, HeaderWalk, iter_tfrecords, walk_headers
from recordkit.read._corruption import OnCorrupt
from recordkit.read._open import OpenedDataset, check_shard_size
from recordkit.read._traced import mapped, tfrecord_file, traced_as_written
from recordkit.storage import location

__all__ = [
    "checked_as_opened",
    "framed_count",
    "framed_records",
    "loss_messages",
    "opened_walk",
    "read_as_opened",
    "readable",
    "refusal_message",
    "walk_shard",
]

#: Shards a read opens at once unless told (its ``cycle_length``).
DEFAULT_CYCLE = 16
#: The words of a loss's message between the offset and the records read (one file).
_MIDDLE = ": the record there is corrupt or truncated; "


def walk_shard(shard: Shard, compression: Compression) -> HeaderWalk:
    """The walk of the local ``shard``'s record headers (its ``oversized``: the first that
    declares more bytes than the file holds); a file that cannot be read is a
    CorruptRecordError naming the shard."""
    local = shard.path.local_path
    assert local is not None
    try:
        return walk_headers(local, compression)
    except OSError as exc:
        reason = f"cannot read the shard file: {exc.strerror or exc}"
        raise CorruptRecordError(reason, shard=shard.name) from None


def framed_count(shard: Shard, walk: HeaderWalk | None, compression: Compression) -> int | None:
    """The records of ``shard`` when its ``walk`` found its framing sound: a local,
    uncompressed file whose record headers frame it whole, holding the records and bytes
    the manifest lists, so that every byte is under a CRC TensorFlow checks. None when
    it is not known so (remote, compressed, damaged or unlike its manifest)."""
    if compression is not Compression.NONE or walk is None or shard.path.local_path is None:
        return None
    if not walk.complete or (shard.records is not None and walk.records != shard.records):
        return None
    if shard.bytes is not None and walk.end != shard.bytes:
        return None
    return walk.records


def loss_messages(shards: Sequence[Shard], expected_records: list[int]) -> tuple[list[str], str, list[str]]:
    """The error message of a loss in each shard, in pieces around the offset and the
    records read: the heads (one a shard), the middle, the tails (one a shard)."""
    heads = [f"recordkit CorruptRecordError: shard {shard.label}, offset " for shard in shards]
    middle = _MIDDLE
    if len(shards[0].files) > 1:  # with field groups: the bytes read are of all the files
        heads = [
            f"recordkit CorruptRecordError: shard {shard.label}: the files are not aligned (a field "
            "group's shard holds other records than its split's), or a record is corrupt or truncated ("
            for shard in shards
        ]
        middle = " bytes read in all); "
    tails = [
        f" of {'?' if n < 0 else n} records could be read (recordkit.iter_records(..., on_corrupt='skip')"
        " shows every bad record; on_corrupt='skip' reads past it)"
        for n in expected_records
    ]
    return heads, middle, tails


def framed_records(
    path: Any, count: Any, head: Callable[[], Any], middle: str, tail: Callable[[], Any]
) -> Any:
    """The records of the shard at ``path`` read by ``TFRecordDataset`` (its CRCs checked),
    taken up to ``count`` (-1: all, then the error). A loss ends them early (TensorFlow's
    DataLossError is ignored only to be replaced): the next element reads the shard again
    in Python (:func:`readable`: the records and bytes before the first bad one, where
    TensorFlow stopped too) and fails with the message ``head() offset middle records
    tail()`` (``head`` and ``tail`` give it in the graph). Nothing runs per record, and
    the loss's branch is two datasets and one function: a read builds and starts one for
    each shard it opens."""
    import tensorflow as tf

    # The message's pieces come with the path: the function depends on ``middle`` alone,
    # and a read built in Python (one shard) reuses the trace an earlier one made.
    lost = tf.data.Dataset.from_tensors((path, head(), tail()))
    reuse = ("framed loss", middle) if tf.executing_eagerly() else None
    lost = mapped(lost, _loss_function(middle), reuse=reuse)
    records = tfrecord_file(path).ignore_errors()
    return records.concatenate(lost).take(count)


def _loss_function(middle: str) -> Callable[[Any, Any, Any], Any]:
    """The function of :func:`framed_records`' loss: the shard read again in Python, and
    its error (``head offset middle records tail``)."""
    import tensorflow as tf

    def fail(shard: Any, head: Any, tail: Any) -> Any:
        # Stateless: the same file, the same answer (an iterator holding it saves in a checkpoint).
        offset, read = tf.numpy_function(readable, [shard], [tf.int64, tf.int64], stateful=False)
        pieces = [head, tf.strings.as_string(offset), middle, tf.strings.as_string(read), tail]
        message = tf.strings.join(pieces)
        with tf.control_dependencies([tf.debugging.Assert(False, [message], summarize=1)]):
            return tf.constant("")

    return fail


def readable(path: bytes) -> tuple[np.int64, np.int64]:
    """The bytes and the records of the local, uncompressed TFRecord file ``path`` that can
    be read before its first corrupt or truncated record (its CRCs checked)."""
    offset = records = 0
    try:
        for start, data in iter_tfrecords(location(path.decode("utf-8"))):
            offset, records = start + len(data) + FRAMING_BYTES, records + 1
    except (CorruptRecordError, OSError):
        pass
    return np.int64(offset), np.int64(records)


def checked_as_opened(dataset: OpenedDataset, shards: Sequence[Shard], on_corrupt: OnCorrupt) -> bool:
    """Whether a ``tf.data`` read of ``shards`` checks each shard as it opens it
    (:func:`read_as_opened`) rather than all of them when it is built: a read of more
    shards than it opens at once, of a whole local, uncompressed split of its own files,
    that raises on a loss (the framed read). Asks no shard of a listed split to be made."""
    if on_corrupt != "raise" or dataset.compression is not Compression.NONE or len(shards) <= DEFAULT_CYCLE:
        return False
    if isinstance(shards, ListedShards):
        return shards.root.local_path is not None
    if isinstance(shards, JoinedShards) and shards.whole_split_alone:  # no shard made to know it
        return shards.root.local_path is not None
    return all(s.path.local_path is not None and not s.joined and not s.sliced for s in shards)


def opened_walk(shard: Shard, compression: Compression) -> HeaderWalk:
    """The walk of ``shard``'s headers, checked as a read opens the shard: its size is the
    manifest's, no header declares more bytes than the file holds, and it holds no more
    records than the manifest lists (the manifest is the commit: records it does not
    count are not the dataset's). A RecordkitError (or OSError: a ``stat`` refused) names
    what is wrong."""
    check_shard_size(shard, compression)
    walk = walk_shard(shard, compression)
    if walk.oversized is not None:
        raise CorruptRecordError(walk.oversized.describe(), shard=shard.name, offset=walk.oversized.offset)
    if walk.complete and shard.records is not None and walk.records > shard.records:
        reason = f"holds more records than the {shard.records} the manifest lists"
        raise CorruptRecordError(reason, shard=shard.name)
    return walk


def refusal_message(exc: RecordkitError | OSError, shard: Shard | None, index: Any) -> str:
    """The message of a read's error for the shard ``index`` (``shard``, when it could be
    made) that :func:`opened_walk` refused."""
    if isinstance(exc, OSError):  # the file's size could not be asked (a stat refused)
        name = shard.name if shard is not None else f"#{int(index)}"
        exc = CorruptRecordError(f"cannot read the shard file: {exc.strerror or exc}", shard=name)
    return f"recordkit {type(exc).__name__}: {exc}"


def read_as_opened(
    dataset: OpenedDataset,
    shards: Sequence[Shard],
    *,
    chunk: int | None,
    block_length: int,
    shuffle_files: bool,
    seed: int | None,
    cycle_length: int | None,
    deterministic: bool,
) -> Any:
    """The records of ``shards`` in chunks of ``chunk`` (None: one by one, interleaved by
    ``block_length``), each shard checked as the interleave opens it (see the module docs)."""
    import tensorflow as tf

    compression = dataset.compression

    def verdict(index: Any) -> tuple[bytes, np.int64, bytes, bytes, bytes]:
        """Shard ``index``'s path, the records to take (-1: all, then the error), the head
        and tail of a loss's message, and a refusal ("" when there is none)."""
        shard = None
        try:
            shard = shards[int(index)]  # made now: its path resolved inside the dataset
            walk = opened_walk(shard, compression)
        except (RecordkitError, OSError) as exc:
            return b"", np.int64(0), b"", b"", refusal_message(exc, shard, index).encode("utf-8")
        count = framed_count(shard, walk, compression)
        expected = count if count is not None else (-1 if shard.selected is None else shard.selected)
        (head,), _, (tail,) = loss_messages([shard], [expected])
        take = -1 if count is None else count
        return str(shard.path).encode("utf-8"), np.int64(take), head.encode(), tail.encode(), b""

    def read(index: Any) -> Any:
        path, count, head, tail, refusal = tf.numpy_function(
            verdict, [index], [tf.string, tf.int64, tf.string, tf.string, tf.string], stateful=False
        )
        refused = tf.strings.length(refusal) > 0
        with tf.control_dependencies([tf.debugging.Assert(~refused, [refusal], summarize=1)]):
            path = tf.identity(path)
        records = framed_records(
            tf.reshape(path, []), tf.reshape(count, []), lambda: head, _MIDDLE, lambda: tail
        )
        return records if chunk is None else records.batch(chunk)

    files = tf.data.Dataset.range(len(shards))
    if shuffle_files:
        files = files.shuffle(len(shards), seed=seed, reshuffle_each_iteration=True)
    chunks = files.interleave(
        traced_as_written(read),
        cycle_length=cycle_length or DEFAULT_CYCLE,
        block_length=block_length if chunk is None else 1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic,
    )
    return chunks
