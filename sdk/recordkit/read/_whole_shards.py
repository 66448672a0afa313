"""Shards of one record layout read whole: a ``tf.data`` read of fields of fixed shapes
(a field group's embedding and label) with no work per record in TensorFlow.

The records of a field group's shard, or of any shard whose fields all have a fixed
shape, are all of one length and one Example layout: each value at the same byte offset
of every record. The read of such fields (:func:`reads_whole`) reads each shard as one
element of its pipeline: one Python call a shard (``tf.numpy_function``) reads the file,
checks its framing whole (every length, length CRC and data CRC, as ``TFRecordDataset``
checks them; :func:`~recordkit.format._batch_parse.framed_records`), compares every
record's structure bytes (keys, tags, lengths: everything but the values) with the first
record's in one numpy step and slices each key's values out as one column
(:func:`~recordkit.format._batch_parse.parsed_records`); the codecs then decode the
shard's columns in one call, and the decoded values are cut into the read's batches.
A field stored as raw arrays (:class:`~recordkit.DecodedAsRawArray`: ``tensor`` of a fixed
shape) is not cut value by value (``substr``, then ``decode_raw``): the shard is read
into one array (never mapped: a file cut short while mapped kills the process with
``SIGBUS``), its frames are handed to TensorFlow as one ``[records, frame]`` array
(64-byte aligned, which ``tf.numpy_function`` takes without a copy) with the column its
values start at, and one ``slice`` and one ``bitcast`` give the decoded values, in
TensorFlow's thread rather than under Python's lock.
A shard whose records do not all share the layout (another length, a key renamed, an
int64 whose varint takes more bytes) is parsed by ``tf.io.parse_example`` from the same
bytes instead, in the same call: the values are the parse's either way.

A shard is checked as the read opens it, as :func:`~recordkit.read._framed_read.read_as_opened`
checks one (its size against the manifest, then its bytes): a bit flipped anywhere, a
file cut short or holding other records than the manifest lists fails the read at that
shard's first element with the error ``TFRecordDataset``'s read gives (the shard, the
offset of the first bad record and the records before it), and a header declaring more
bytes than the file holds is refused naming the shard. A shard is held in memory while
it is decoded (a shard of the read's fields only: the read applies where no shard
listed is larger than :data:`WHOLE_SHARD_BYTES`).

The records come in the framed read's order (``cycle_length`` shards interleaved,
``block_length`` records of each in turn), so the batches are those of the record by
record read. Each shard's call runs in a parallel ``map`` over the shards' places (one
call more than the CPUs at once, at most ``cycle_length``:
:func:`~recordkit.read._traced.parallel_map`), whose
function gives the shard as a dataset of its blocks (:func:`_blocks`); one ``interleave``
of those datasets, in one thread, takes a block of each of ``cycle_length`` shards in
turn (:func:`~recordkit.read._traced.interleaved_datasets`). The first batch waits for
the first shard alone, and no function is started for each shard: the map's function is
started once an iterator, and the interleave's is the identity, which TensorFlow does not
run. Each block is a tensor of its own, copied out of the shard's, never a slice of it: a
``rebatch`` that joins parts of blocks sliced out of a larger tensor into one batch logs
``Tensor RefCount not reliable if buf_ points to a SubBuffer`` for each part (TensorFlow's
``RebatchDatasetV2`` asks each part's parent for its reference count to move rather than
copy it, and ``Tensor::RefCount`` logs that line for a slice): about 12,000 lines a pass
of 100,000 records at a batch of 50 when the shards were cut by a ``rebatch``.

The traced function depends on the fields' layout alone (their parse plans, their
codecs' decode sources, the block length: :func:`_trace_key`): the shards reach the
call through each element, the place of a shard (a token naming the read's loader in
:data:`_LOADERS`, and the shard's index), so a later read of the same layout reuses the
trace (:func:`~recordkit.read._traced.parallel_map`), most of what building a small
read costs. The pipeline holds its loader; the table holds it weakly.

TensorFlow is imported when a read is built.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import weakref
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recordkit.codec._capabilities import PadsAsDecoded, RawArray, decodes_per_record, raster_kind, raw_array
from recordkit.codec._wire import WireKind
from recordkit.dataset._shard_table import ShardTable
from recordkit.dataset._shards import LazyShards, ListedShards, Shard, SlicedShards
from recordkit.errors import CorruptRecordError, RecordkitError
from recordkit.format._batch_parse import UniformRecords, framed_records, parsed_records, uniform_records
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import FOOTER_BYTES, HEADER_BYTES, Compression
from recordkit.read._framed_read import (
    DEFAULT_CYCLE,
    loss_messages,
    opened_walk,
    readable,
    refusal_message,
)
from recordkit.read._layout import DecodeLayout
from recordkit.read._open import OpenedDataset, check_shard_size
from recordkit.read._options import PipelineOptions
from recordkit.read._parse import decode_key, parsed_decoder
from recordkit.read._traced import default_parallel_calls, interleaved_datasets, parallel_map, rebatched
from recordkit.read._wire_checks import WireCheck, count_reason, size_reason, wire_checks
from recordkit.schema._bound import BoundField
from recordkit.storage._ranges import read_into

__all__ = ["WHOLE_SHARD_BYTES", "dense_fields", "read_whole", "reads_whole"]

#: The largest shard a read of whole shards is made for (each shard it reads is held in
#: memory while it is decoded, ``cycle_length`` of them at once, and at most as many read
#: ahead by the map).
WHOLE_SHARD_BYTES = 64 << 20


def dense_fields(layout: DecodeLayout) -> bool:
    """Whether every field read is plain (neither optional nor a sequence), stored with
    fixed-shape wire features and decoded in its batch by a codec that is no picture and
    pads nothing, and nothing is padded, fitted or filled with a default: a read whose
    decoded values all have one shape a field."""
    if layout.per_record or layout.per_record_values or layout.padded or layout.sizes:
        return False
    dataset = layout.dataset
    if dataset.defaulted or not dataset.fields:
        return False
    for field in dataset.fields:
        if field.presence_key is not None or field.spec.sequence:
            return False
        if any(None in keyed.feature.shape for keyed in field.features):
            return False
        codec = field.codec
        if raster_kind(codec) is not None or isinstance(codec, PadsAsDecoded) or decodes_per_record(codec):
            return False
    return True


def reads_whole(
    dataset: OpenedDataset, shards: Sequence[Shard], layout: DecodeLayout, options: PipelineOptions
) -> bool:
    """Whether the read of ``shards`` reads them whole (see the module docs): its fields
    are :func:`dense_fields`, batched, raising on a loss, and read in order (no
    ``shuffle_buffer``, no resume, no share of records); the shards are local,
    uncompressed files of a manifest read whole, each alone (no field group joined to
    it), the first one's records all have one size (its bytes a multiple of its
    records), and no shard listed holds more than :data:`WHOLE_SHARD_BYTES`. The caller
    has checked the rest of the options (``on_corrupt``, the records skipped or shared)."""
    if options.batch_size is None or options.random_crop or options.shuffle_buffer:
        return False
    if dataset.compression is not Compression.NONE or dataset.manifest is None or not shards:
        return False
    if not dense_fields(layout) or isinstance(shards, SlicedShards):
        return False
    first = shards[0]
    if len(first.files) != 1 or first.path.local_path is None or first.sliced:
        return False
    if not isinstance(shards, LazyShards) and any(
        len(s.files) != 1 or s.sliced or s.path.local_path is None for s in shards
    ):
        return False
    if not first.records or first.bytes is None or _largest_bytes(shards) > WHOLE_SHARD_BYTES:
        return False
    return first.bytes % first.records == 0


def _largest_bytes(shards: Sequence[Shard]) -> float:
    """The bytes of the largest of ``shards`` as listed (infinite when one's are not
    known): a read of whole shards holds each one it reads, so a small first shard must
    not let a far larger later one in. A split's shard table gives it from its column."""
    listed: Sequence[Any] = shards.listed if isinstance(shards, ListedShards) else shards
    if isinstance(listed, ShardTable):
        return listed.largest_bytes
    sizes = [shard.bytes for shard in listed]
    return math.inf if None in sizes else max(sizes, default=0)


def read_whole(dataset: OpenedDataset, shards: Sequence[Shard], options: PipelineOptions) -> Any:
    """The decoded records of ``shards`` in chunks of at most ``block_length``, each shard
    read whole (see the module docs): what :func:`reads_whole` allows."""
    import tensorflow as tf

    fields = dataset.stored_fields.fields
    spec, _ = parsed_decoder(fields)
    # The fields stored as raw arrays come out of the loader decoded (one array a shard,
    # in numpy); the others are decoded by their codecs from the wire values it gives.
    raws = {field.features[0].key: (field.name, raw) for field in fields if (raw := _raw(field)) is not None}
    _, decode = parsed_decoder([field for field in fields if field.features[0].key not in raws])
    keys = list(spec)
    kinds = {key: _KINDS[spec[key].dtype.name] for key in keys}
    shapes = {key: [int(dim) for dim in spec[key].shape] for key in keys}
    # Each key's outputs: a raw array's records' bytes (rows, the column where its values
    # start: one slice and bitcast), another bytes key's values by where they sit in the
    # shard (their starts and widths: one ``substr``), a number key's values.
    outputs = [
        dtype
        for key in keys
        for dtype in (
            (tf.uint8, tf.int64)
            if key in raws
            else (tf.int64, tf.int64)
            if kinds[key] is WireKind.BYTES
            else (spec[key].dtype,)
        )
    ]
    checks = {check.key: check for check in wire_checks(fields)}
    arrays = {key: raw for key, (_, raw) in raws.items()}
    named = _Named(checks, dataset.shards, arrays)
    load = _loader(shards, dataset.compression, keys, kinds, shapes, named)
    token = next(_TOKENS)
    _LOADERS[token] = load
    block_length = options.block_length

    def loaded(place: Any) -> Any:
        # Nothing of this read but its fields' layout is traced (its shards come through
        # the place: :func:`_dispatched`), so that the next read of that layout reuses it.
        refusal, whole, *values = tf.numpy_function(
            _dispatched, [place], [tf.string, tf.string, *outputs], stateful=False
        )
        with tf.control_dependencies(
            [tf.debugging.Assert(tf.equal(tf.strings.length(refusal), 0), [refusal], summarize=1)]
        ):
            whole = tf.identity(tf.reshape(whole, []))
        parsed, given, decoded = {}, iter(values), {}
        for key in keys:
            value = next(given)
            if key in raws:
                name, raw = raws[key]
                decoded[name] = _raw_values(value, next(given), raw)
                continue
            if kinds[key] is WireKind.BYTES:
                value = tf.strings.substr(whole, value, next(given))
            parsed[key] = tf.reshape(value, [-1, *shapes[key]])
        decoded.update(decode(parsed))
        return {field.name: decoded[field.name] for field in fields}

    def blocks(place: Any) -> Any:
        # Nothing of this read but its fields' layout is traced (see ``loaded``).
        return _blocks(loaded(place), block_length)

    # Even one shard is read in the map's function: called here, the shard would be read
    # when the pipeline is built, and its values kept in the pipeline's graph. Each
    # element is the place of a shard: this read's token and the shard's index.
    first = token << _INDEX_BITS
    files = tf.data.Dataset.range(first, first + len(shards))
    if options.shuffle_files:
        files = files.shuffle(len(shards), seed=options.seed, reshuffle_each_iteration=True)
    cycle_length = options.cycle_length or min(len(shards), DEFAULT_CYCLE)
    # Each call's result is a whole shard held decoded until the interleave is done with it:
    # the calls at once are at most the cycle's shards, so that a read holds at most twice
    # the cycle's shards (the cycle's, and as many read ahead), as the interleave of the
    # shards' reads held before, however many CPUs the machine has.
    shard_blocks = parallel_map(
        files,
        blocks,
        deterministic=options.deterministic,
        calls=min(default_parallel_calls(), cycle_length),
        reuse=_trace_key(fields, block_length),
    )
    interleaved = interleaved_datasets(shard_blocks, cycle_length=cycle_length)
    # The pipeline keeps the loader (and so its shards) alive, and no longer: _LOADERS
    # holds it weakly. An iterator keeps its dataset, which keeps this one.
    interleaved._recordkit_loader = load
    return interleaved


def _blocks(values: dict[str, Any], block_length: int) -> Any:
    """The dataset of one shard's decoded ``values`` (``[records, ...]`` each) in blocks
    of ``block_length`` records, the last one shorter when they do not fill it, each block
    a tensor of its own (copied out of the shard's by ``unbatch``), not a slice of it.

    A ``rebatch`` that joins parts of several blocks into a batch asks each block whether
    it holds its own memory (``Tensor::RefCount``); a block that is a slice of the shard's
    tensor (what a ``rebatch`` of the shard, ``Tensor::Slice``, gives) makes TensorFlow log
    ``Tensor RefCount not reliable if buf_ points to a SubBuffer`` for each one, about
    12,000 lines a pass of 100,000 records at a batch of 50. The whole blocks are the
    shard's first ``records // block_length * block_length`` records, reshaped to
    ``[blocks, block_length, ...]`` and unbatched; the rest, when there is any, is one
    more element (``[1, rest, ...]`` unbatched; ``[0, 0, ...]``, nothing, when there is none).
    A field decoded to a ragged or sparse value (a tensor of varying shape whose shape is
    stored beside its bytes) has the shard cut by ``rebatch``, as it was before."""
    import tensorflow as tf

    if not all(isinstance(value, tf.Tensor) for value in values.values()):
        return rebatched(tf.data.Dataset.from_tensors(values), block_length)
    records = tf.shape(next(iter(values.values())), out_type=tf.int64)[0]
    whole = records // block_length * block_length
    rest = records - whole
    heads, tails = {}, {}
    for name, value in values.items():
        inner = value.shape[1:]
        dims = (
            tf.constant(inner.as_list(), tf.int64)
            if inner.is_fully_defined()
            else tf.shape(value, out_type=tf.int64)[1:]
        )
        heads[name] = tf.reshape(value[:whole], tf.concat([[whole // block_length, block_length], dims], 0))
        tails[name] = tf.reshape(value[whole:], tf.concat([[tf.minimum(rest, 1), rest], dims], 0))
    return (
        tf.data.Dataset.from_tensors(heads)
        .unbatch()
        .concatenate(tf.data.Dataset.from_tensors(tails).unbatch())
    )


#: The bits of a shard's place that hold its index (the rest: its read's token).
_INDEX_BITS = 32
_TOKENS = itertools.count(1)
#: Each read of whole shards' loader, by its token, for as long as its pipeline lives.
_LOADERS: weakref.WeakValueDictionary[int, Callable[[Any], list[Any]]] = weakref.WeakValueDictionary()


def _dispatched(place: Any) -> list[Any]:
    """What the loader of the read that ``place`` names gives for its shard."""
    value = int(place)
    load = _LOADERS.get(value >> _INDEX_BITS)
    if load is None:  # only a copy of the pipeline made outside Python could outlive it
        raise RuntimeError("the recordkit read this tf.data pipeline was built for is no longer alive")
    return load(value & ((1 << _INDEX_BITS) - 1))


def _trace_key(fields: Sequence[BoundField], block_length: int) -> Hashable | None:
    """What a read's traced function depends on besides its shards: the fields'
    :func:`~recordkit.read._parse.decode_key` with how each stores a raw array, and the
    block length (after a tag of this read's map); None when the fields give no key (the
    read is traced anew)."""
    key = decode_key(fields, _raw)
    return None if key is None else ("whole shards", block_length, *key)


def _raw(field: BoundField) -> RawArray | None:
    """How ``field``'s values are stored when its codec stores raw arrays
    (:class:`~recordkit.DecodedAsRawArray`) of a dtype TensorFlow bitcasts bytes to, on a
    little-endian machine, and its one feature is stored under its own key (not read from
    columns or a constant of a foreign layout), else None."""
    raw = raw_array(field.codec)
    if raw is None or len(field.features) != 1 or sys.byteorder != "little" or raw.dtype not in _BITCASTS:
        return None
    (keyed,) = field.features
    feature = keyed.feature
    if keyed.columns or keyed.constant is not None or feature.name != raw.feature:
        return None
    return raw if feature.kind is WireKind.BYTES and feature.shape == () else None


#: The dtypes of raw arrays the read cuts out of a shard: those ``tf.bitcast`` makes of
#: bytes (and ``bool``, any byte not 0, as ``tensor``'s decode reads it).
_BITCASTS = frozenset(
    {
        "bool",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "float16",
        "int32",
        "uint32",
        "float32",
        "int64",
        "uint64",
        "float64",
        "complex64",
        "complex128",
    }
)


def _raw_values(rows: Any, start: Any, raw: RawArray) -> Any:
    """The values of the raw array ``raw`` in every record: ``rows`` holds each record's
    bytes (``[records, width]`` uint8: a shard's frames, or the values alone), from
    column ``start`` on; cut (one copy, in TensorFlow's thread, not Python's) and
    bitcast, ``[records, *shape]`` of the array's dtype."""
    import tensorflow as tf

    rows = tf.ensure_shape(rows, [None, None])
    begin = tf.stack([tf.constant(0, tf.int64), tf.reshape(start, [])])
    cut = tf.slice(rows, begin, tf.constant([-1, raw.nbytes], tf.int64))
    dtype = tf.as_dtype(raw.dtype)
    if raw.dtype == "bool":
        return tf.reshape(tf.not_equal(cut, 0), [-1, *raw.shape])
    size = np.dtype(raw.dtype).itemsize
    if size == 1:
        return tf.reshape(tf.bitcast(cut, dtype), [-1, *raw.shape])
    return tf.bitcast(tf.reshape(cut, [-1, *raw.shape, size]), dtype)


_KINDS = {"float32": WireKind.FLOAT, "int64": WireKind.INT64, "string": WireKind.BYTES}


class _Named:
    """What a refusal of a record names beside its shard and offset: the field of each
    key, each bytes key's one value size (:class:`~recordkit.FixedWireBytes`, or a raw
    array's: ``arrays``, the keys decoded by the loader), and the record's number in the
    split (counted over the dataset's shards, on a refusal only)."""

    def __init__(
        self, checks: dict[str, WireCheck], shards: Sequence[Shard], arrays: dict[str, RawArray]
    ) -> None:
        self.checks = checks
        self.arrays = arrays
        self._shards = shards

    def size(self, key: str) -> int | None:
        check = self.checks.get(key)
        if check is not None and check.size is not None:
            return check.size
        raw = self.arrays.get(key)
        return None if raw is None else raw.nbytes

    def error(self, reason: str, shard: Shard, offset: int, place: int, key: str) -> CorruptRecordError:
        check = self.checks.get(key)
        return CorruptRecordError(
            reason,
            shard=shard.name,
            offset=offset,
            record=self._number(shard, place),
            field=None if check is None else check.field,
        )

    def _number(self, shard: Shard, place: int) -> int | None:
        start = 0
        for number in range(len(self._shards)):
            listed = self._shards[number]
            if listed.name == shard.name or shard.name in (file.name for file in listed.files):
                return start + place
            if listed.records is None:
                return None
            start += listed.records
        return None


def _loader(
    shards: Sequence[Shard],
    compression: Compression,
    keys: list[str],
    kinds: dict[str, WireKind],
    shapes: dict[str, list[int]],
    named: _Named,
) -> Callable[[Any], list[Any]]:
    """``load(index)``: shard ``index`` read and checked (see the module docs), as
    ``(refusal, whole, *columns)``: the error message ("" when there is none), the bytes
    the bytes values are cut from (none when no key holds bytes but raw arrays, decoded
    here: the shard is not handed to TensorFlow), and each key's values (:func:`_columns`)."""
    counts = {key: math.prod(shapes[key]) for key in keys}
    arrays = named.arrays
    cuts_bytes = any(kinds[key] is WireKind.BYTES and key not in arrays for key in keys)
    empty = [
        array
        for key in keys
        for array in (
            (np.zeros((0, arrays[key].nbytes), np.uint8), np.int64(0))
            if key in arrays
            else (np.zeros((0, counts[key]), np.int64),) * 2
            if kinds[key] is WireKind.BYTES
            else (np.zeros((0, counts[key]), kinds[key].numpy_dtype),)
        )
    ]

    def load(index: Any) -> list[Any]:
        shard = None
        try:
            shard = shards[int(index)]  # made now: its path resolved inside the dataset
            check_shard_size(shard, compression)
            local = shard.path.local_path
            assert local is not None
            buffer: Any = _read_aligned(local) if arrays else _read(local)
            offsets = framed_records(buffer)
            if offsets is None or (shard.records is not None and len(offsets) - 1 != shard.records):
                return [_loss(shard, compression), b"", *empty]
            uniform = uniform_records(buffer, offsets)
            values = None if uniform is None else _columns(uniform, offsets, keys, kinds, counts, named)
            if values is not None and cuts_bytes and not isinstance(buffer, bytes):
                buffer = buffer.tobytes()  # the bytes values are cut from a string
            if values is None:
                data = buffer if isinstance(buffer, bytes) else buffer.tobytes()
                buffer, values = _parsed_columns(data, offsets, keys, kinds, counts, shard, named)
        except (RecordkitError, OSError) as exc:
            return [refusal_message(exc, shard, index).encode("utf-8"), b"", *empty]
        return [b"", buffer if cuts_bytes else b"", *values]

    return load


def _columns(
    uniform: UniformRecords,
    offsets: np.ndarray,
    keys: list[str],
    kinds: dict[str, WireKind],
    counts: dict[str, int],
    named: _Named,
) -> list[np.ndarray] | None:
    """Each key's values in every record of one layout as ``tf.io.parse_example`` gives
    them for a fixed-length feature (``[records, count]`` numbers), a raw array's as the
    shard's frames (``[records, frame]``, the file's own memory) and the column its values
    start at, another bytes key's as the starts and widths of its values in the file
    (``[records, count]`` each); None when a key is missing, of another kind or
    holds another number of values, or a bytes key's values are not of their one size
    (:func:`_parsed_columns` then names the record)."""
    out: list[np.ndarray] = []
    for key in keys:
        raw = named.arrays.get(key)
        if raw is not None:
            runs = uniform.byte_runs(key, 1)
            if runs is None or runs[0][1] != raw.nbytes:
                return None
            out.append(uniform.data)  # the frames, handed over without a copy (_read_aligned)
            out.append(np.int64(runs[0][0]))
            continue
        if kinds[key] is not WireKind.BYTES:
            numbers = uniform.numbers(key, kinds[key], counts[key])
            if numbers is None:
                return None
            out.append(_aligned(numbers))
            continue
        runs = uniform.byte_runs(key, counts[key])
        if runs is None:
            return None
        places = np.array([start for start, _ in runs], np.int64)
        widths = np.array([width for _, width in runs], np.int64)
        size = named.size(key)
        if size is not None and bool(np.any(widths != size)):
            return None
        out.append(offsets[:-1, None] + places[None, :])
        out.append(np.broadcast_to(widths, (len(offsets) - 1, len(runs))).copy())
    return out


def _parsed_columns(
    buffer: bytes,
    offsets: np.ndarray,
    keys: list[str],
    kinds: dict[str, WireKind],
    counts: dict[str, int],
    shard: Shard,
    named: _Named,
) -> tuple[bytes, list[np.ndarray]]:
    """:func:`_columns` of a shard whose records do not all share one layout: those of
    one length and layout parsed together, the others one by one (as the numpy reader
    parses them, the values of ``tf.io.parse_example``), and the bytes values joined
    (the first item). A record whose Example is not valid, or that lacks a key or holds
    it with another kind or number of values than its fixed shape asks (which
    ``tf.io.parse_example`` refuses too), or a bytes value of another size than its
    field's one (which the codec's decode refuses), is a CorruptRecordError naming the
    shard, the record's offset and number, the field and the key."""
    starts = (offsets[:-1] + HEADER_BYTES).tolist()
    ends = (offsets[1:] - FOOTER_BYTES).tolist()
    rows: dict[str, list[Any]] = {key: [] for key in keys}
    for place, example in enumerate(parsed_records(buffer, offsets, keys).examples()):
        offset = int(offsets[place])
        if example is None:
            try:
                example = decode_example(buffer[starts[place] : ends[place]], keys)
            except ValueError:
                raise CorruptRecordError(
                    "the record is not a tf.train.Example", shard=shard.name, offset=offset
                ) from None
        for key in keys:
            kind, values = example.get(key, (None, ()))
            if kind is not kinds[key] and not (counts[key] == 0 and len(values) == 0):
                found = "no such key" if kind is None else f"{kind.value} values"
                reason = (
                    f"Example key {key!r} holds {found}, where its field stores {kinds[key].value} values"
                )
                raise named.error(reason, shard, offset, place, key)
            if len(values) != counts[key]:
                raise named.error(count_reason(key, len(values), counts[key]), shard, offset, place, key)
            size = named.size(key)
            wrong = None if size is None else size_reason(key, values, size)
            if wrong is not None:
                raise named.error(wrong, shard, offset, place, key)
            rows[key].append(values)
    records = len(starts)
    out: list[np.ndarray] = []
    pieces: list[bytes] = []
    joined = 0
    for key in keys:
        if kinds[key] is not WireKind.BYTES:
            out.append(np.array(rows[key], dtype=kinds[key].numpy_dtype).reshape(records, counts[key]))
            continue
        values = [value for row in rows[key] for value in row]
        raw = named.arrays.get(key)
        if raw is not None:  # every value checked for its size above
            joined_values = np.frombuffer(b"".join(values), np.uint8).reshape(records, raw.nbytes)
            out.append(_aligned(joined_values))
            out.append(np.int64(0))
            continue
        widths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        places = joined + np.cumsum(widths) - widths
        joined += int(widths.sum())
        pieces.extend(values)
        out.append(places.reshape(records, counts[key]))
        out.append(widths.reshape(records, counts[key]))
    return b"".join(pieces), out


#: The alignment of the arrays the loader gives TensorFlow: ``tf.numpy_function`` takes an
#: array whose memory starts at a multiple of it as its output tensor's memory, and
#: copies any other (about 5 ms of CPU for a shard of 2,800 embeddings of 512 floats).
_ALIGNMENT = 64


def _read(local: Path) -> bytes:
    with open(local, "rb") as stream:
        return stream.read()


def _read_aligned(local: Path) -> np.ndarray:
    """The bytes of the file ``local`` as a uint8 array whose memory starts at a multiple
    of :data:`_ALIGNMENT` (TensorFlow takes its frames without a copy), read into it
    (``readinto``), not mapped: a mapped file cut short while it is read (rewritten in
    place by another process, changed on a network filesystem) kills the process with
    ``SIGBUS`` on the first page past its new end, which nothing in Python can catch. A
    file that ends before the size it had when opened gives the bytes it held (the framing
    check then finds the loss and names the shard). The array is numpy's (huge pages where
    the system has them: a 128 MiB shard read in about 36 ms of CPU, against 2 for the
    mapping)."""
    with open(local, "rb", buffering=0) as stream:
        size = os.fstat(stream.fileno()).st_size
        if size == 0:
            return np.zeros(0, np.uint8)
        block = np.empty(size + _ALIGNMENT, np.uint8)
        start = -block.ctypes.data % _ALIGNMENT
        out = block[start : start + size]
        filled = read_into(stream, out.data)
    return out if filled == size else out[:filled]


def _aligned(array: np.ndarray) -> np.ndarray:
    """``array`` as a C-contiguous array whose memory starts at a multiple of
    :data:`_ALIGNMENT` bytes: itself when it is one, else a copy (one copy, from any
    strides: the rows of a raw array cut out of a shard's records)."""
    if array.flags.c_contiguous and array.ctypes.data % _ALIGNMENT == 0:
        return array
    block = np.empty(array.nbytes + _ALIGNMENT, np.uint8)
    start = -block.ctypes.data % _ALIGNMENT
    out = block[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    np.copyto(out, array)
    return out


def _loss(shard: Shard, compression: Compression) -> bytes:
    """The error of a shard whose bytes are not the records its manifest lists: the
    refusal of its walk (a hostile length, more records than listed), else what the
    framed read says of a loss (the offset of the first bad record, the records before)."""
    try:
        opened_walk(shard, compression)
    except (RecordkitError, OSError) as exc:
        return refusal_message(exc, shard, 0).encode("utf-8")
    offset, read = readable(str(shard.path).encode("utf-8"))
    expected = -1 if shard.selected is None else shard.selected
    (head,), middle, (tail,) = loss_messages([shard], [expected])
    return f"{head}{int(offset)}{middle}{int(read)}{tail}".encode()
