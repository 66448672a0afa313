"""Reading a split's shards for :func:`recordkit.load_dataset`: checked chunks of records.

Every local shard's record headers are walked in Python when the read is built
(:func:`vet_framing`: a header declaring more bytes than the file holds would make
TensorFlow allocate them). Where that walk shows a sound framing that covers the whole
file and holds the records (and bytes) the manifest lists, as it does for every intact
local, uncompressed shard read whole with ``on_corrupt="raise"``, the shards are read by
``TFRecordDataset`` alone, whose CRC checks cover every byte left (:func:`_framed_reader`):
each shard's records are taken up to their count, and only where they end early (a CRC
TensorFlow found bad, a file cut after the walk) is the next element an error naming the
shard, the offset and the records read (TensorFlow's own ``DataLossError`` names
neither), computed then by reading the shard again. Nothing of the check runs per record
or per chunk, and no function is instantiated for it at each iterator. (Records appended
to a shard file after the walk are not read: shards are never appended to in place.)

Every other read (a slice, ``on_corrupt="skip"``, field groups, compressed or remote
shards, a framing the walk found damaged) is checked in the graph: each shard is read
(its errors ignored: a corrupt or truncated record ends that shard's records) in chunks
of ``block_length`` serialized records; several shards are read at once and interleaved.
Every chunk carries the index of its shard, and each shard ends with one empty chunk, a
marker. One ``scan`` over the interleaved chunks counts the records and bytes read from
each shard; at a shard's marker it compares them with what the manifest lists (the
records, and every byte of the file but for compressed shards), and on a loss raises the
same error, or with ``on_corrupt="skip"`` adds the loss to the report. The markers are
then dropped by a ``rebatch`` to ``block_length`` (empty chunks give no records), which
also joins a shard's last, short chunk with the next shard's.

A shard that a split slice reads in part (``train[:10%]``) has its records before the
slice read past (``skip``) and reading stops at the slice's end (``take``); its check
counts the records of the slice only, since the file's bytes are not all read.

The checks cost one function for the whole read, run once per chunk: the per-shard
part (reader, index, marker) is made of datasets alone, so opening a shard instantiates
no function. A version with a ``map`` and ``scan`` per shard cost more to start an
iterator than to read 2,000 records of the benchmark's workload. Each function in the
pipeline costs CPU at every iterator (TensorFlow optimizes and instantiates it again,
about 1 ms per few ops), which a small dataset read pass by pass pays each epoch: a
dataset of one shard is therefore read without the ``interleave``/``flat_map`` function
(about 15 ms of CPU per iterator), the markers are dropped without a ``filter``
function, and the check function is kept to the ops it needs (see :func:`_checker`).

Remote shards (:class:`~recordkit.storage.Location`) are read by TensorFlow's own
filesystem when it registers their scheme (``gs``), else their records are streamed
through fsspec by recordkit's framing reader (:func:`~recordkit.format._tfrecord.iter_tfrecords`,
CRCs checked) into the same pipeline (``remote_io`` chooses). The framing pre-check
(:func:`vet_framing`) reads every record header, so it is made on local shards only; a
remote shard's size is checked against the manifest when it is opened.

TensorFlow is imported when :func:`read_shards` is called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from recordkit.dataset._shards import Shard
from recordkit.errors import CorruptRecordError
from recordkit.format._tfrecord import FRAMING_BYTES, HeaderWalk, iter_tfrecords
from recordkit.read._corruption import CorruptionReport, OnCorrupt, SkippedRecords
from recordkit.read._framed_read import (
    DEFAULT_CYCLE,
    framed_count,
    framed_records,
    loss_messages,
    read_as_opened,
    walk_shard,
)
from recordkit.read._generator_exit import FailureEnds
from recordkit.read._open import OpenedDataset
from recordkit.read._options import RemoteIO
from recordkit.read._traced import traced_as_written
from recordkit.storage import location

__all__ = ["read_shards"]


def read_shards(
    dataset: OpenedDataset,
    shards: Sequence[Shard],
    *,
    block_length: int,
    on_corrupt: OnCorrupt,
    report: CorruptionReport | None,
    shuffle_files: bool,
    seed: int | None,
    cycle_length: int | None,
    deterministic: bool,
    remote_io: RemoteIO = "auto",
    one_by_one: bool = False,
    as_opened: bool = False,
    joined: bool = True,
) -> Any:
    """A dataset of ``[n]`` string tensors (``n <= block_length``): the records of
    ``shards``, checked as the module docs say. Repeat it to read it again: each pass
    counts afresh. With ``one_by_one``, the same records one by one (scalars), in the
    same order: the framed read gives them so without batching them first. With
    ``as_opened`` (what :func:`~recordkit.read._framed_read.checked_as_opened` says of the
    whole split), each shard is checked as the read opens it, its size too.

    Without ``joined``, the chunks are left as the shards give them (a shard's last one
    short, and where the checks run in the graph an empty one ending each shard), for a
    caller that rebatches them itself (:func:`~recordkit.read._traced.rebatched` drops
    the empty ones too): one ``rebatch`` rather than two. A ``rebatch`` that joins pieces
    of elements another ``rebatch`` cut (not whole ones) makes TensorFlow log
    ``E ... tensor.h:692] Tensor RefCount not reliable if buf_ points to a SubBuffer`` on
    stderr for each joined piece (``RebatchDatasetV2`` asks the piece's parent tensor for
    its reference count, which a slice cannot give, and copies it): a harmless line that
    reads as an error."""
    import tensorflow as tf

    if as_opened:
        chunks = read_as_opened(
            dataset,
            shards,
            chunk=None if one_by_one else block_length,
            block_length=block_length,
            shuffle_files=shuffle_files,
            seed=seed,
            cycle_length=cycle_length,
            deterministic=deterministic,
        )
        return chunks if one_by_one or not joined else chunks.rebatch(block_length)
    walks: dict[str, HeaderWalk] = {}
    shards = vet_framing(shards, dataset, on_corrupt, report, walks)
    if not shards:  # an empty split, or every shard skipped: no records, in the shape a read gives
        empty = tf.data.Dataset.from_tensor_slices(tf.zeros([0], tf.string))
        return empty if one_by_one else empty.batch(block_length)
    compression = dataset.compression.value
    # A split with field groups: each shard's files (its own, then the groups'), whose
    # records are read side by side and joined in the checks (see _checker).
    width = len(shards[0].files)
    if any(len(shard.files) != width for shard in shards):
        raise ValueError("the shards of one read must all have the same field groups")
    paths: list[Any] = [
        str(shard.path) if width == 1 else [str(file.path) for file in shard.files] for shard in shards
    ]
    # The shards of one dataset are all local or all in one remote store.
    fsspec_read = _fsspec_reader(shards, dataset) if any(_streamed(s, remote_io) for s in shards) else None
    indices = tf.constant(list(range(len(shards))), tf.int64)
    files = tf.data.Dataset.from_tensor_slices((indices, tf.constant(paths, tf.string)))
    if shuffle_files and len(shards) > 1:
        files = files.shuffle(len(shards), seed=seed, reshuffle_each_iteration=True)
    # Compressed files without a manifest: neither a record count nor the uncompressed size
    # is known, nothing to check against; let TensorFlow's own error through rather than
    # hide a loss.
    checked = not (compression and dataset.manifest is None)

    sliced = any(shard.sliced for shard in shards)
    skips = tf.constant([shard.skip for shard in shards] or [0], tf.int64)
    takes = tf.constant([-1 if shard.take is None else shard.take for shard in shards] or [0], tf.int64)
    whole = on_corrupt == "raise" and checked and fsspec_read is None and width == 1 and not sliced
    chunk = None if one_by_one else block_length
    framed = _framed_reader(shards, dataset, walks, chunk) if whole else None

    def read(index: Any, path: Any) -> Any:
        if framed is not None:
            return framed(index, path)
        if fsspec_read is not None:
            records = fsspec_read(index)
        elif width == 1:
            records = tf.data.TFRecordDataset(path, compression_type=compression)
        else:  # a record of each file, side by side (a tuple)
            records = tf.data.Dataset.zip(
                tuple(tf.data.TFRecordDataset(path[k], compression_type=compression) for k in range(width))
            )
        if not checked:
            records = records.skip(skips[index]).take(takes[index]) if sliced else records
            return records.batch(block_length)
        records = records.ignore_errors()
        if sliced:  # a split slice: only its records, and the checks count only them
            records = records.skip(skips[index]).take(takes[index])
        chunks = records.batch(block_length)
        chunks = tf.data.Dataset.zip((chunks, tf.data.Dataset.from_tensors(index).repeat()))
        empty = tf.zeros([0], tf.string)
        marker = tf.data.Dataset.from_tensors((empty if width == 1 else (empty,) * width, index))
        return chunks.concatenate(marker)

    if len(shards) == 1:  # no function to instantiate for each iterator (see the module docs)
        chunks = read(tf.constant(0, tf.int64), tf.constant(paths[0], tf.string))
    elif len(shards) > 1:
        chunks = files.interleave(
            traced_as_written(read),
            cycle_length=cycle_length or min(len(shards), DEFAULT_CYCLE),
            block_length=block_length if framed is not None and one_by_one else 1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )
    else:
        chunks = files.flat_map(traced_as_written(read))
    if not checked:
        return chunks.unbatch() if one_by_one else chunks
    if framed is not None:  # no markers; the shard ends of several shards joined, as below
        return chunks if len(shards) == 1 or one_by_one or not joined else chunks.rebatch(block_length)
    # Records and bytes read, by shard (one shard: a pair, see _checker).
    counts = tf.zeros([2] if len(shards) == 1 else [len(shards), 2], tf.int64)
    check = _checker(dataset, shards, on_corrupt, report)
    # ``rebatch`` drops the empty markers, as a ``filter`` would, with no function.
    chunks = chunks.scan(counts, traced_as_written(check))
    if joined or one_by_one:
        chunks = chunks.rebatch(block_length)
    return chunks.unbatch() if one_by_one else chunks


def _streamed(shard: Shard, remote_io: RemoteIO) -> bool:
    """Whether ``shard`` is read through fsspec rather than TensorFlow's filesystem."""
    if shard.path.local_path is not None:
        return False
    # A cached shard is read from its local copy, by recordkit's reader (TensorFlow never sees it).
    if remote_io == "fsspec" or shard.path.cache is not None:
        return True
    import tensorflow as tf

    registered = tf.io.gfile.get_registered_schemes()
    if remote_io == "tensorflow" and shard.path.protocol not in registered:
        raise ValueError(
            f"remote_io='tensorflow', but TensorFlow has no filesystem for {shard.path.protocol}:// "
            f"(it has: {', '.join(sorted(registered))}); use remote_io='auto' or 'fsspec'"
        )
    return shard.path.protocol not in registered


def _fsspec_reader(shards: list[Shard], dataset: OpenedDataset) -> Callable[[Any], Any]:
    """``read(index)``: a dataset of shard ``index``'s records, streamed through fsspec
    and unframed (CRCs checked) by recordkit's TFRecord reader. A corrupt record ends
    the shard with an error, which the checks downstream turn into the usual report."""
    import tensorflow as tf

    compression = dataset.compression
    width = len(shards[0].files) if shards else 1

    def records(index: Any) -> Iterator[bytes | tuple[bytes, ...]]:
        files = shards[int(index)].files
        if width == 1:
            for _, data in iter_tfrecords(files[0].path, compression):
                yield data
            return
        # Side by side; the shortest file ends them, and the checks count what is missing.
        streams = [iter_tfrecords(file.path, compression) for file in files]
        for items in zip(*streams, strict=False):
            yield tuple(data for _, data in items)

    one = tf.TensorSpec([], tf.string)
    signature = one if width == 1 else (one,) * width

    def shard(index: Any) -> FailureEnds:
        # Ends at once after a failure, and frees the read's iterators at exit before the
        # interpreter finalizes: an uncaught error (a corrupt record) otherwise hung the
        # process at exit in about one run in twenty (_generator_exit's docs).
        return FailureEnds(records(index))

    def read(index: Any) -> Any:
        return tf.data.Dataset.from_generator(shard, args=(index,), output_signature=signature)

    return read


def vet_framing(
    shards: Sequence[Shard],
    dataset: OpenedDataset,
    on_corrupt: OnCorrupt,
    report: CorruptionReport | None,
    walks: dict[str, HeaderWalk] | None = None,
) -> list[Shard]:
    """The shards TensorFlow may read: no record header in them declares more bytes than
    the file holds (TensorFlow allocates a declared length before reading, and a hostile
    2**40 kills the process). ``"raise"``: such a header is a CorruptRecordError naming
    the shard and offset. ``"skip"``: a length beyond the shard's whole size leaves the
    shard out (reported); a shorter one, a plain truncation, is left to the checks.
    ``walks`` receives the walk of each local file, by its path (for
    :func:`_framed_counts`, which would otherwise walk a split of many shards again)."""
    kept = []
    for shard in shards:
        if shard.path.local_path is None:  # remote: see the module docs
            kept.append(shard)
            continue
        found, name = None, shard.name
        for file in shard.files:  # the shard, and the field groups' shards joined to it
            walk, name = walk_shard(file, dataset.compression), file.name
            if walks is not None:
                walks[str(file.path)] = walk
            found = walk.oversized
            if found is not None:
                break
        if found is None:
            kept.append(shard)
        elif on_corrupt == "raise":
            raise CorruptRecordError(found.describe(), shard=name, offset=found.offset)
        elif found.declared <= found.total:
            kept.append(shard)  # bounded by the file's size: TensorFlow reads up to it and stops
        else:
            skipped = SkippedRecords(
                name,
                found.offset,
                shard.records,
                f"{found.describe()}; the whole shard was left out (TensorFlow cannot read past it "
                "safely; recordkit.iter_records(..., on_corrupt='skip') reads the records before it)",
            )
            if report is not None:
                report.add(skipped)
    return kept


def _expected(shards: list[Shard], dataset: OpenedDataset) -> tuple[list[int], list[int]]:
    """The records and bytes each shard should give; -1: unknown (no manifest, or
    compressed, where the file's size is not the records' size)."""
    records = [-1 if shard.selected is None else shard.selected for shard in shards]
    sizes = []
    for shard in shards:
        size = -1
        if not dataset.compression.value and not shard.sliced:
            size = sum(f.bytes if f.bytes is not None else location(f.path).size() for f in shard.files)
        sizes.append(size)
    return records, sizes


def _framed_counts(
    shards: list[Shard], dataset: OpenedDataset, walks: dict[str, HeaderWalk]
) -> list[int] | None:
    """The records of each shard, when Python has walked its framing (``walks``: by
    :func:`vet_framing`) and found it sound (:func:`~recordkit.read._framed_read.framed_count`);
    None when a shard is not known so: the checks in the graph read it."""
    if not shards:
        return None
    counts = []
    for shard in shards:
        count = framed_count(shard, walks.get(str(shard.path)), dataset.compression)
        if count is None:
            return None
        counts.append(count)
    return counts


def _framed_reader(
    shards: list[Shard], dataset: OpenedDataset, walks: dict[str, HeaderWalk], block_length: int | None
) -> Callable[[Any, Any], Any] | None:
    """``read(index, path)``: shard ``index``'s records in chunks of ``block_length``
    (None: one by one),
    read by ``TFRecordDataset`` alone (its CRCs checked), when :func:`_framed_counts` knows
    every shard's records; None otherwise. Nothing runs per record or per chunk: a
    shard's records are taken up to its count, and only where they end early (a CRC
    TensorFlow found bad, the file cut after it was walked) is the next element one that
    reads the shard again, counts what it can read and fails with the error the checks
    in the graph give (the shard, the offset, the records read). No function runs
    before that, so the read costs an iterator no more to start than the raw read."""
    import tensorflow as tf

    counts = _framed_counts(shards, dataset, walks)
    if counts is None:
        return None
    heads, middle, tails = loss_messages(shards, counts)

    def read(index: Any, path: Any) -> Any:
        records = framed_records(
            path,
            _pick(counts, tf.int64, index),
            lambda: _pick(heads, tf.string, index),
            middle,
            lambda: _pick(tails, tf.string, index),
        )
        return records if block_length is None else records.batch(block_length)

    return read


def _pick(values: list[Any], dtype: Any, index: Any) -> Any:
    """``values[index]`` in the graph: a constant when there is one value (one shard)."""
    import tensorflow as tf

    return tf.constant(values[0], dtype) if len(values) == 1 else tf.gather(tf.constant(values, dtype), index)


def _checker(
    dataset: OpenedDataset, shards: list[Shard], on_corrupt: OnCorrupt, report: CorruptionReport | None
) -> Callable[[Any, Any], Any]:
    """The ``scan`` function: counts each shard's records and bytes, checks them at its
    marker. Kept small (the messages are written here, per shard): TensorFlow optimizes
    it again for every iterator, at a cost that grows with its ops (about 15 ms of CPU
    per iterator for the first version, which built the message of every chunk), so
    what Python knows is not computed in the graph: with one shard its expectations and
    message are constants, and an unknown expectation is only tested for if a shard has
    one."""
    import tensorflow as tf

    expected_records, expected_bytes = _expected(shards, dataset)
    pairs = [[n, size] for n, size in zip(expected_records, expected_bytes, strict=True)]
    heads, middle, tails = loss_messages(shards, expected_records)
    names = [shard.name for shard in shards]
    one = len(shards) == 1
    unknown = any(n < 0 for pair in pairs for n in pair)

    joined = len(shards[0].files) > 1
    add = _reporter(report, joined=joined) if on_corrupt == "skip" and report is not None else None

    width = len(shards[0].files)

    def check(counts: Any, element: Any) -> Any:
        chunk, index = element
        if width > 1:  # a record's bytes from each file, joined: one Example with all their features
            chunk = tf.strings.join(list(chunk))
        size = tf.size(chunk, out_type=tf.int64)
        length = tf.reduce_sum(tf.cast(tf.strings.length(chunk), tf.int64)) + FRAMING_BYTES * width * size
        if one:
            got = counts + tf.stack([size, length])  # records, bytes
            counts = got
        else:
            counts = tf.tensor_scatter_nd_add(counts, [[index]], [tf.stack([size, length])])
            got = counts[index]
        want = _pick(pairs, tf.int64, index)
        matches = tf.equal(got, want) | (want < 0) if unknown else tf.equal(got, want)
        lost = tf.equal(size, 0) & ~tf.reduce_all(matches)  # an empty chunk is a shard's marker
        if add is None:
            message = tf.strings.join(
                [
                    _pick(heads, tf.string, index),
                    tf.strings.as_string(got[1]),
                    middle,
                    tf.strings.as_string(got[0]),
                    _pick(tails, tf.string, index),
                ]
            )
            guard = tf.debugging.Assert(~lost, [message], summarize=1)
        else:
            guard = tf.cond(
                lost,
                lambda: tf.py_function(
                    add, [_pick(names, tf.string, index), got[1], got[0], want[0]], tf.int64
                ),
                lambda: tf.constant(0, tf.int64),
            )
        with tf.control_dependencies([guard]):
            return counts, tf.identity(chunk)

    return check


def _reporter(report: CorruptionReport, *, joined: bool) -> Callable[[Any, Any, Any, Any], int]:
    """The Python function the checks call (once per damaged shard) to report a loss. A
    shard ``joined`` with its field groups' shards reads its files side by side: the
    bytes read are of all of them (no one file's offset), and the rest is skipped in each."""
    where = (
        "corrupt or truncated record in the shard or in a shard of its field groups; the rest of "
        "the shard was skipped in every file"
        if joined
        else "corrupt or truncated record; the rest of the shard was skipped"
    )

    def add(name: Any, offset: Any, records: Any, expected: Any) -> int:
        read, total = int(records.numpy()), int(expected.numpy())
        report.add(
            SkippedRecords(
                shard=name.numpy().decode("utf-8"),
                offset=None if joined else int(offset.numpy()),
                records=total - read if total >= 0 else None,
                reason=where + (f" ({read} of {total} records read)" if total >= 0 else ""),
            )
        )
        return 0

    return add
