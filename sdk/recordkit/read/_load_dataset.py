"""``load_dataset`` and ``tf_pipeline``: a recordkit dataset as a ``tf.data.Dataset``
of decoded dicts. The shards are read and checked (:mod:`recordkit.read._shard_stream`),
batched *before* parsing so each batch costs one ``tf.io.parse_example``, decoded and laid
out in batches (:mod:`recordkit.read._layout`), and, where pictures are decoded record by
record on every core, split and batched again (:mod:`recordkit.read._per_record`). The
steps in order: docs/architecture.md, "The tf.data pipeline".

TensorFlow is imported when :func:`load_dataset` is called.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from recordkit.codec._registry import CodecRegistry
from recordkit.read._corruption import CorruptionReport, OnCorrupt
from recordkit.read._dense import OFFSET_SUFFIX, SHAPE_SUFFIX, ImageFit, Size, pad_into, row_shapes
from recordkit.read._layout import DecodeLayout
from recordkit.read._open import Shard
from recordkit.read._options import (
    DEFAULT_BLOCK_LENGTH,
    IMAGE_FITS,
    JpegScale,
    Opened,
    OpenOptions,
    PipelineOptions,
    RemoteIO,
)
from recordkit.read._parse import PRESENT_SUFFIX, make_padded_parser, make_parser
from recordkit.read._paths import Paths
from recordkit.read._per_record import DRAWS, RaggedUnbatcher, per_record
from recordkit.read._position import Start, tf_data_start
from recordkit.read._shard_stream import read_shards
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.storage import StorageOptions

__all__ = [
    "DEFAULT_BLOCK_LENGTH",
    "IMAGE_FITS",
    "OFFSET_SUFFIX",
    "SHAPE_SUFFIX",
    "ImageFit",
    "load_dataset",
    "tf_pipeline",
]


def load_dataset(
    path: Paths,
    split: str = "train",
    fields: str | Sequence[str] | None = None,
    batch_size: int | None = None,
    *,
    schema: Schema | str | os.PathLike[str] | None = None,
    registry: CodecRegistry | None = None,
    shuffle_files: bool = False,
    seed: int | None = None,
    shuffle_buffer: int = 0,
    cycle_length: int | None = None,
    block_length: int = DEFAULT_BLOCK_LENGTH,
    deterministic: bool = True,
    repeat: bool | int = False,
    drop_remainder: bool = False,
    pad: bool | Sequence[str] = False,
    image_size: Size | Mapping[str, Size] | None = None,
    image_fit: ImageFit = "resize",
    image_method: str | Mapping[str, str] | None = None,
    jpeg_scale: JpegScale = "auto",
    on_corrupt: OnCorrupt = "raise",
    report: CorruptionReport | None = None,
    verify_sha256: bool = False,
    input_context: Any = None,
    num_workers: int | None = None,
    worker_index: int | None = None,
    compression: str | None = None,
    prefetch: bool = True,
    start: Start = None,
    storage_options: StorageOptions | None = None,
    remote_io: RemoteIO = "auto",
) -> Any:
    """Read a split of a dataset as a ``tf.data.Dataset`` of dicts of decoded tensors.

    A shortcut for ``recordkit.open(path, split, fields=fields).tf(batch_size, ...)``,
    which opens the dataset once for every reader and groups these options
    (:class:`recordkit.ReadConfig`, :class:`recordkit.Layout`); the same pipeline.

    :param path: a dataset folder (with ``dataset.json``); or, with ``schema``, TFRecord
        files recordkit did not write (a file, a glob pattern or a list).
    :param split: the split to read, or a slice of splits in TFDS's syntax
        (``"train[:10%]"``, ``"train[100:200]"``, ``"train+validation"``): only the
        shards it touches are opened.
    :param fields: the fields to parse and decode (default: all). Other Example keys
        are not even parsed.
    :param batch_size: records per batch; None yields single records (still parsed in
        batches of ``block_length`` inside the pipeline).
    :param schema: the reader's schema (a Schema, or the path of a schema file): checked
        against the stored one with the compatibility rules, and used to decode (default:
        the stored schema).
    :param registry: the codec registry (default: the installed plugins).
    :param shuffle_files: read the shards in a random order (reshuffled every epoch;
        reproducible with ``seed``).
    :param seed: seed of the shard and record shuffles, and of the random crops (None:
        other windows every run).
    :param shuffle_buffer: shuffle records through a buffer of this many (0: no shuffle).
    :param cycle_length: shards read at once (default: up to 16, one per CPU).
    :param block_length: records taken from one shard before moving to the next.
    :param deterministic: keep the order reproducible; False lets parallel steps
        yield out of order when that is faster.
    :param repeat: False reads once, True forever, an int that many times.
    :param drop_remainder: drop the last batch when it is smaller than ``batch_size``.
    :param pad: turn ragged outputs into dense ones padded to the batch's largest,
        adding ``"<field>/shape"`` with each record's true shape; True for every field,
        or the names of the fields to pad. Padding is each codec's
        :meth:`~recordkit.Codec.pad_value`: zeros (empty strings), and the ignore index
        for ``mask`` fields.
    :param image_size: ``(height, width)`` that picture fields (those whose codec
        declares a ``raster``: image, mask, and plugins' alike) are brought to (by
        ``image_fit``), so they batch densely; or a mapping of field name to size.
        ``"<field>/shape"`` then holds each image's original shape.
    :param image_fit: ``"resize"`` (stretch), ``"resize_with_pad"`` (keep the aspect
        ratio, pad), ``"crop_or_pad"`` (centre crop or pad, no resampling) or
        ``"random_crop_or_pad"`` (crop or pad at a random place, for augmentation: the
        image fields of a record that have one size and one target size, such as an
        image and its mask, are cut at the same place; reproducible with ``seed``).
        Padding holds each codec's pad value (0; a mask's ignore index). The crop fits
        add ``"<field>/offset"``: the window's top left corner in the original
        (negative where padding comes first).
    :param image_method: the ``tf.image.ResizeMethod`` name, or a mapping of field name
        to method (default ``"bilinear"``, and ``"nearest"`` for fields whose codec
        declares ``raster = "indices"``, such as ``mask``, so class indices are never
        blended; give ``"nearest"`` for masks stored otherwise). Resized images keep
        their dtype (uint8 stays uint8, rounded).
    :param jpeg_scale: ``"auto"`` (default): a JPEG that is resized (``image_fit``
        ``"resize"`` or ``"resize_with_pad"``, with an interpolating ``image_method``)
        decodes at the largest libjpeg scale (1/2, 1/4, 1/8) whose result still covers
        ``image_size``, then is resized onto the same pixels a full decode's resize
        lands on; pictures that small keep the full decode, exactly. ``"full"``: every
        JPEG decodes at full size. See the how-to "Images at the model's size".
    :param on_corrupt: ``"raise"``: a corrupt or truncated shard stops the read with an
        error naming the shard and the offset of the bad record; ``"skip"``: the rest of
        that shard is skipped, logged, and added to ``report``.
    :param report: a :class:`~recordkit.CorruptionReport` that collects what was skipped.
    :param verify_sha256: hash every shard before reading and compare with the manifest.
    :param input_context: a ``tf.distribute.InputContext``: this input pipeline reads
        its share of the shards (of the records, when there are fewer shards than
        pipelines).
    :param num_workers: with ``worker_index``, the same as ``input_context`` in plain
        numbers (for jobs launched without ``tf.distribute``).
    :param worker_index: this worker's index, 0 to ``num_workers - 1``.
    :param compression: for files without a manifest: ``"GZIP"``, ``"ZLIB"`` or None
        (guessed from the file suffix).
    :param prefetch: prefetch batches (``tf.data.AUTOTUNE``).
    :param start: resume: skip this many records of the order the other options give
        (an earlier read's batches times ``batch_size``); skipped records are read but
        not parsed. Shuffles need a ``seed``. The iterator can also be saved with
        ``tf.train.Checkpoint`` (see the how-to "Random access and resuming").
    :param storage_options: for a remote ``path`` (``s3://``, ``gs://``, any fsspec
        URL): the options of its fsspec filesystem (manifest, checks, fsspec reads).
    :param remote_io: how remote shards are read: ``"auto"`` (default) through
        TensorFlow's filesystem where it registers the scheme
        (``tf.io.gfile.get_registered_schemes()``: ``gs``, not ``s3``), else streamed
        through fsspec; ``"tensorflow"`` or ``"fsspec"`` forces one.
    """
    options = PipelineOptions(
        batch_size=batch_size,
        shuffle_files=shuffle_files,
        seed=seed,
        shuffle_buffer=shuffle_buffer,
        cycle_length=cycle_length,
        block_length=block_length,
        deterministic=deterministic,
        repeat=repeat,
        drop_remainder=drop_remainder,
        pad=pad,
        image_size=image_size,
        image_fit=image_fit,
        image_method=image_method,
        jpeg_scale=jpeg_scale,
        prefetch=prefetch,
        remote_io=remote_io,
    )
    opening = OpenOptions(
        schema=schema,
        registry=registry,
        on_corrupt=on_corrupt,
        report=report,
        verify_sha256=verify_sha256,
        compression=compression,
        input_context=input_context,
        num_workers=num_workers,
        worker_index=worker_index,
        storage_options=storage_options,
    )
    opening.check()
    options.check()
    skip = tf_data_start(
        start, shuffled=shuffle_files or bool(shuffle_buffer), seed=seed, deterministic=deterministic
    )
    return tf_pipeline(opening.open(path, split, fields), options, on_corrupt, skip)


def tf_pipeline(opened: Opened, options: PipelineOptions, on_corrupt: OnCorrupt, skip: int = 0) -> Any:
    """The ``tf.data`` pipeline (see docs/architecture.md) over a dataset already opened, with
    options already checked: what :func:`load_dataset` and :meth:`recordkit.Dataset.tf`
    build; ``skip`` records of its order are dropped before they are parsed (a resume)."""
    import tensorflow as tf

    shards, record_shard = _my_shards(opened)
    batches = _serialized_batches(opened, shards, record_shard, options, on_corrupt, skip)
    layout = DecodeLayout.build(opened.dataset, options)
    batch_size = options.batch_size
    if layout.per_record or batch_size is None:
        to_records = RaggedUnbatcher()
        dataset = _decode_batches(batches, layout, options, to_records)
        dataset = per_record(dataset, to_records, layout, options)
    else:
        dataset = _decode_batches(batches, layout, options)
    if options.prefetch:
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    size = _known_size(
        shards, record_shard, options.repeat, batch_size, options.drop_remainder, on_corrupt, skip
    )
    if size is not None:  # Keras and tf.distribute see the number of steps
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(size))
    return dataset


def _my_shards(opened: Opened) -> tuple[list[Shard], tuple[int, int] | None]:
    """The shards this worker reads, and ``(count, index)`` when it reads every
    ``count``-th record of them instead (fewer shards than workers)."""
    shards = list(opened.dataset.shards)
    if opened.share is None:
        return shards, None
    mine, by_record = opened.share.shards(shards)
    return list(mine), (opened.share.count, opened.share.index) if by_record else None


def _serialized_batches(
    opened: Opened,
    shards: list[Shard],
    record_shard: tuple[int, int] | None,
    options: PipelineOptions,
    on_corrupt: OnCorrupt,
    skip: int = 0,
) -> Any:
    """Batches of serialized records (``batch_size`` of them, or ``block_length`` when
    single records are asked for): read, checked, repeated and shuffled; the first
    ``skip`` records (a resumed read) dropped before they are parsed."""
    chunks = read_shards(
        opened.dataset,
        shards,
        block_length=options.block_length,
        on_corrupt=on_corrupt,
        report=opened.report,
        shuffle_files=options.shuffle_files,
        seed=options.seed,
        cycle_length=options.cycle_length,
        deterministic=options.deterministic,
        remote_io=options.remote_io,
    )
    repeat, batch_size = options.repeat, options.batch_size
    if repeat is True:
        chunks = chunks.repeat()
    elif repeat is not False and repeat != 1:
        chunks = chunks.repeat(int(repeat))
    if options.shuffle_buffer or record_shard is not None or skip:
        records = chunks.unbatch()
        if record_shard is not None:
            records = records.shard(*record_shard)
        if options.shuffle_buffer:
            records = records.shuffle(
                options.shuffle_buffer, seed=options.seed, reshuffle_each_iteration=True
            )
        if skip:  # resume: the records an earlier read yielded, dropped before parsing
            records = records.skip(skip)
        return records.batch(
            batch_size or options.block_length, drop_remainder=options.drop_remainder and bool(batch_size)
        )
    if batch_size is not None:
        return chunks.rebatch(batch_size, drop_remainder=options.drop_remainder)
    return chunks


def _decode_batches(
    batches: Any, layout: DecodeLayout, options: PipelineOptions, unbatcher: RaggedUnbatcher | None = None
) -> Any:
    """Each batch parsed, decoded and laid out (but for the per-record fields); with
    ``unbatcher`` (the batches are split into records next), made ready for ``unbatch``
    in the same function (:meth:`~recordkit.read._per_record.RaggedUnbatcher.encode`):
    one function, not a map of its own, since TensorFlow optimizes and instantiates each
    function of a pipeline again for every iterator."""
    import tensorflow as tf

    decode = _decoder(layout, options)

    def parse(*args: Any) -> dict[str, Any]:
        return decode(*args) if unbatcher is None else unbatcher.encode(decode(*args))

    if options.random_crop:
        # Each batch's position keys its random draws: the same seed, the same windows.
        return batches.enumerate().map(
            lambda position, serialized: parse(serialized, position),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=options.deterministic,
        )
    return batches.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=options.deterministic)


def _known_size(
    shards: list[Shard],
    record_shard: tuple[int, int] | None,
    repeat: bool | int,
    batch_size: int | None,
    drop_remainder: bool,
    on_corrupt: OnCorrupt,
    skip: int = 0,
) -> int | None:
    """How many elements the dataset yields, when the manifest says (and nothing is skipped)."""
    if on_corrupt != "raise" or repeat is True or any(s.selected is None for s in shards):
        return None
    records = sum(s.selected or 0 for s in shards) * (1 if repeat is False else int(repeat))
    if record_shard is not None:  # applied after repeat
        count, index = record_shard
        records = len(range(index, records, count))
    records = max(records - skip, 0)
    if batch_size is None:
        return records
    return records // batch_size if drop_remainder else -(-records // batch_size)


def _decoder(layout: DecodeLayout, options: PipelineOptions) -> Callable[..., dict[str, Any]]:
    """The function from a batch of serialized records (and, for the random crop, the
    batch's position in the dataset) to the decoded, laid out batch; the per-record
    fields hold their wire values, and with a random crop ``DRAWS`` each record's draws."""
    dataset = layout.dataset
    names = [f.name for f in dataset.fields]
    undecoded = {f.name for f in (*layout.per_record, *layout.per_record_values)}
    padded = layout.padded - set(layout.sizes) if layout.pads_in_batch else frozenset()
    parse = make_padded_parser(dataset.stored_fields.fields, padded, undecoded)
    defaults = {
        field.name: (make_parser(BoundSchema(dataset.bound.schema, (field,))), dataset.defaults[field.name])
        for field in dataset.fields
        if field.name in dataset.defaults
    }
    fit = options.image_fit

    def decode(serialized: Any, position: Any = None) -> dict[str, Any]:
        import tensorflow as tf

        parsed = parse(serialized)
        rows = tf.zeros(tf.shape(serialized)[:1], tf.int64)
        for default_parse, example in defaults.values():  # each row gets the one default
            for key, value in default_parse(tf.constant([example])).items():
                parsed[key] = tf.nest.map_structure(lambda t: tf.gather(t, rows), value)
        out = {}  # in field order
        for name in names:
            out[name] = parsed[name]
            for suffix in (PRESENT_SUFFIX, SHAPE_SUFFIX):  # SHAPE_SUFFIX: padded as decoded
                if name + suffix in parsed:
                    out[name + suffix] = parsed[name + suffix]
            if isinstance(parsed[name], dict):  # a dict padded as decoded: a shape per key
                for key in parsed[name]:
                    if f"{name}/{key}{SHAPE_SUFFIX}" in parsed:
                        out[f"{name}/{key}{SHAPE_SUFFIX}"] = parsed[f"{name}/{key}{SHAPE_SUFFIX}"]
        draws = None
        if options.random_crop and layout.sizes:
            key = tf.stack([tf.constant(layout.crop_seed, tf.int64), tf.cast(position, tf.int64)])
            # One pair of draws per record, shared by its fields: an image and its mask
            # of one size get one window.
            draws = tf.random.stateless_uniform(tf.stack([tf.shape(serialized)[0], 2]), seed=key)
            if undecoded:
                out[DRAWS] = draws
        for field in dataset.fields:
            name = field.name
            if name in undecoded:
                continue
            if name in layout.sizes:
                shapes = row_shapes(out[name])
                out[name + SHAPE_SUFFIX] = shapes
                out[name], offsets = layout.fit(name, out[name], shapes, draws, fit)
                if offsets is not None:
                    out[name + OFFSET_SUFFIX] = offsets
            elif name in padded and name + SHAPE_SUFFIX not in out:
                pad_into(out, name, out[name], layout.pad_values[name])
        return out

    return decode
