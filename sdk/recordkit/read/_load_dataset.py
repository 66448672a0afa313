"""``load_dataset``: a recordkit dataset as a ``tf.data.Dataset`` of decoded dicts.

The pipeline, in order (each step only when asked for):

1. the split's shards from the manifest (:mod:`recordkit.read._open`), this worker's share
   of them for distributed input (:func:`recordkit.read._open.worker_share`), shuffled with
   a seed;
2. the shards read in parallel and interleaved, ``block_length`` records at a time,
   checked on the way (:mod:`recordkit.read._shard_stream`): every record the manifest lists
   and every byte of each file must be read, so a corrupt or truncated shard is named
   (TensorFlow's own ``DataLossError`` names neither the file nor the shard);
3. repeat, shuffle (a record buffer), then batch: *before* parsing, so each batch
   costs one ``tf.io.parse_example``;
4. parse and decode (:func:`recordkit.make_parser`) only the requested fields, in
   parallel, then the shaping options (:mod:`recordkit.read._dense`): ragged fields
   padded (with each codec's :meth:`~recordkit.Codec.pad_value`), images resized,
   cropped or padded to a size
   (a random crop draws per record from a stateless generator keyed by the seed and the
   batch's position, so that a seed gives the same windows run after run);
5. unbatch when no batch size is given, and prefetch.

TensorFlow is imported when :func:`load_dataset` is called.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from recordkit.codec._registry import CodecRegistry
from recordkit.read._dense import (
    CROP_FITS,
    OFFSET_SUFFIX,
    SHAPE_SUFFIX,
    ImageFit,
    Size,
    crop_offsets,
    dense_record,
    fit_images,
    pad_into,
    row_shapes,
)
from recordkit.read._open import (
    CorruptionReport,
    OnCorrupt,
    OpenedDataset,
    Paths,
    Shard,
    open_dataset,
    worker_share,
)
from recordkit.read._parse import PRESENT_SUFFIX, make_padded_parser, make_parser
from recordkit.read._position import Start, tf_data_start
from recordkit.read._shard_stream import read_shards
from recordkit.schema._bound import BoundField
from recordkit.schema._schema import BoundSchema, Schema

__all__ = ["DEFAULT_BLOCK_LENGTH", "IMAGE_FITS", "OFFSET_SUFFIX", "SHAPE_SUFFIX", "ImageFit", "load_dataset"]

#: Records read from one shard before the reader moves on to the next one. Shards are
#: read in blocks (one tf.data element per block, not per record), which keeps the
#: per-element cost of interleaving off the hot path; a shuffle buffer mixes the blocks.
DEFAULT_BLOCK_LENGTH = 64
#: The values of ``image_fit``.
IMAGE_FITS = ("resize", "resize_with_pad", "crop_or_pad", "random_crop_or_pad")


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
    on_corrupt: OnCorrupt = "raise",
    report: CorruptionReport | None = None,
    verify_sha256: bool = False,
    input_context: Any = None,
    num_workers: int | None = None,
    worker_index: int | None = None,
    compression: str | None = None,
    prefetch: bool = True,
    start: Start = None,
) -> Any:
    """Read a split of a dataset as a ``tf.data.Dataset`` of dicts of decoded tensors.

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
    """
    import tensorflow as tf

    if on_corrupt not in ("raise", "skip"):
        raise ValueError(f"on_corrupt must be 'raise' or 'skip', not {on_corrupt!r}")
    if image_fit not in IMAGE_FITS:
        raise ValueError(f"image_fit must be one of {', '.join(IMAGE_FITS)}, not {image_fit!r}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    if block_length < 1:
        raise ValueError(f"block_length must be at least 1, not {block_length}")
    share = worker_share(input_context, num_workers, worker_index)
    skip = tf_data_start(
        start, shuffled=shuffle_files or bool(shuffle_buffer), seed=seed, deterministic=deterministic
    )
    source = open_dataset(
        path,
        split,
        fields,
        schema=schema,
        registry=registry,
        compression=compression,
        check_sizes=on_corrupt == "raise",
        verify_sha256=verify_sha256,
    )
    shards = list(source.shards)
    record_shard: tuple[int, int] | None = None
    if share is not None:
        mine, by_record = share.shards(shards)
        shards = list(mine)
        record_shard = (share.count, share.index) if by_record else None
    if report is None and on_corrupt == "skip":
        report = CorruptionReport()  # still logs each skip
    chunks = read_shards(
        source,
        shards,
        block_length=block_length,
        on_corrupt=on_corrupt,
        report=report,
        shuffle_files=shuffle_files,
        seed=seed,
        cycle_length=cycle_length,
        deterministic=deterministic,
    )
    if repeat is True:
        chunks = chunks.repeat()
    elif repeat is not False and repeat != 1:
        chunks = chunks.repeat(int(repeat))
    if shuffle_buffer or record_shard is not None or skip:
        records = chunks.unbatch()
        if record_shard is not None:
            records = records.shard(*record_shard)
        if shuffle_buffer:
            records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        if skip:  # resume: the records an earlier read yielded, dropped before parsing
            records = records.skip(skip)
        batches = records.batch(
            batch_size or block_length, drop_remainder=drop_remainder and bool(batch_size)
        )
    elif batch_size is not None:
        batches = chunks.rebatch(batch_size, drop_remainder=drop_remainder)
    else:
        batches = chunks
    parse = _decoder(source, pad, image_size, image_fit, image_method, seed)
    if image_fit == "random_crop_or_pad" and image_size is not None:
        # Each batch's position keys its random draws: the same seed, the same windows.
        dataset = batches.enumerate().map(
            lambda position, serialized: parse(serialized, position),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )
    else:
        dataset = batches.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
    if batch_size is None:
        dataset = dataset.unbatch()
        densify = _record_densifier(source, dataset.element_spec)
        if densify is not None:
            dataset = dataset.map(densify, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
    if prefetch:
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    size = _known_size(shards, record_shard, repeat, batch_size, drop_remainder, on_corrupt, skip)
    if size is not None:  # Keras and tf.distribute see the number of steps
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(size))
    return dataset


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


# -- decoding and shaping ---------------------------------------------------------------


def _decoder(
    source: OpenedDataset,
    pad: bool | Sequence[str],
    image_size: Size | Mapping[str, Size] | None,
    image_fit: ImageFit,
    image_method: str | Mapping[str, str] | None,
    seed: int | None = None,
) -> Callable[..., dict[str, Any]]:
    """The function from a batch of serialized records (and, for the random crop, the
    batch's position in the dataset) to the decoded, laid out batch."""
    names = [f.name for f in source.fields]
    sizes = _image_sizes(source.fields, image_size)
    padded = set(names) if pad is True else set() if pad is False else set(_known(pad, names, "pad"))
    padded -= set(sizes)
    parse = make_padded_parser(source.stored_fields.fields, padded)
    defaults = {
        field.name: (make_parser(BoundSchema(source.bound.schema, (field,))), source.defaults[field.name])
        for field in source.fields
        if field.name in source.defaults
    }
    methods = dict(image_method) if isinstance(image_method, Mapping) else {}
    _known(methods, list(sizes), "image_method")
    pad_values = {f.name: _pad_value(f) for f in source.fields if f.name in sizes or f.name in padded}
    # The random crop's draws: a stateless generator keyed by (seed, batch position).
    crop_seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)

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
        uniforms = None
        if image_fit == "random_crop_or_pad" and sizes:
            key = tf.stack([tf.constant(crop_seed, tf.int64), tf.cast(position, tf.int64)])
            # One pair of draws per record, shared by its fields: an image and its mask
            # of one size get one window.
            uniforms = tf.random.stateless_uniform(tf.stack([tf.shape(serialized)[0], 2]), seed=key)
        for field in source.fields:
            name = field.name
            if name in sizes:
                method = methods.get(name) or (
                    "nearest"
                    if field.codec.raster == "indices"
                    else (image_method if isinstance(image_method, str) else "bilinear")
                )
                shapes = row_shapes(out[name])
                out[name + SHAPE_SUFFIX] = shapes
                offsets = None
                if image_fit in CROP_FITS:
                    offsets = crop_offsets(shapes, sizes[name], image_fit, uniforms)
                    out[name + OFFSET_SUFFIX] = offsets
                out[name] = fit_images(
                    out[name], sizes[name], image_fit, method, pad_value=pad_values[name], offsets=offsets
                )
            elif name in padded and name + SHAPE_SUFFIX not in out:
                pad_into(out, name, out[name], pad_values[name])
        return out

    return decode


def _pad_value(field: BoundField) -> int | float:
    """The field's codec's :meth:`~recordkit.Codec.pad_value`, checked to be a number."""
    value = field.codec.pad_value()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"codec {field.codec.name!r} (field {field.name!r}): pad_value() must return an int or "
            f"a float, not {value!r}"
        )
    return value


def _known(names: Sequence[str] | Mapping[str, Any], fields: list[str], option: str) -> list[str]:
    unknown = [n for n in names if n not in fields]
    if unknown:
        raise ValueError(f"{option} names {unknown}, which are not among the fields it applies to ({fields})")
    return list(names)


def _image_sizes(
    fields: Sequence[BoundField], image_size: Size | Mapping[str, Size] | None
) -> dict[str, Size]:
    if image_size is None:
        return {}
    names = [f.name for f in fields]
    if isinstance(image_size, Mapping):
        chosen = {name: image_size[name] for name in _known(image_size, names, "image_size")}
    else:
        chosen = {f.name: image_size for f in fields if f.codec.raster and not f.spec.sequence}
    for name, size in chosen.items():
        if len(size) != 2 or any(int(d) < 1 for d in size):
            raise ValueError(
                f"image_size for {name!r} must be (height, width) of positive ints, not {size!r}"
            )
    return {name: (int(size[0]), int(size[1])) for name, size in chosen.items()}


def _record_densifier(source: OpenedDataset, spec: Any) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """After unbatching, a field's value is rectangular (an image, a tensor) unless the
    field is a sequence: give those still ragged their dense form."""
    import tensorflow as tf

    ragged: set[str] = set()
    for field in source.fields:
        if field.spec.sequence:
            continue
        leaves = tf.nest.flatten(spec[field.name], expand_composites=False)
        if any(isinstance(leaf, tf.RaggedTensorSpec) for leaf in leaves):
            ragged.add(field.name)
    if not ragged:
        return None

    def densify(record: dict[str, Any]) -> dict[str, Any]:
        out = dict(record)
        for name in ragged:
            out[name] = tf.nest.map_structure(dense_record, record[name], expand_composites=False)
        return out

    return densify
