"""``load_dataset``: a recordkit dataset as a ``tf.data.Dataset`` of decoded dicts.

The pipeline, in order (each step only when asked for):

1. the split's shards from the manifest (:mod:`recordkit._source`), sharded by worker
   for distributed input, shuffled with a seed;
2. the shards read in parallel and interleaved, ``block_length`` records at a time;
   each shard's reader checks on the way that it read every record the manifest lists
   and every byte of the file, so a corrupt or truncated shard is named (TensorFlow's
   own ``DataLossError`` names neither the file nor the shard);
3. repeat, shuffle (a record buffer), then batch: *before* parsing, so each batch
   costs one ``tf.io.parse_example``;
4. parse and decode (:func:`recordkit.make_parser`) only the requested fields, in
   parallel, then the layout options: ragged fields padded, images resized, cropped or
   padded to a size;
5. unbatch when no batch size is given, and prefetch.

TensorFlow is imported when :func:`load_dataset` is called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from recordkit._parse import PRESENT_SUFFIX, make_parser
from recordkit._registry import CodecRegistry
from recordkit._schema import BoundField, BoundSchema, Schema
from recordkit._source import CorruptionReport, OnCorrupt, Paths, Shard, SkippedRecords, Source, open_source

__all__ = ["DEFAULT_BLOCK_LENGTH", "SHAPE_SUFFIX", "ImageFit", "load_dataset"]

#: Records read from one shard before the reader moves on to the next one. Shards are
#: read in blocks (one tf.data element per block, not per record), which keeps the
#: per-element cost of interleaving off the hot path; a shuffle buffer mixes the blocks.
DEFAULT_BLOCK_LENGTH = 64
#: Suffix of the output that holds each record's true shape when a field is padded,
#: resized, cropped: ``"<field>/shape"``.
SHAPE_SUFFIX = "/shape"

ImageFit = Literal["resize", "resize_with_pad", "crop_or_pad"]
Size = tuple[int, int]

#: Codecs whose decoded values are images ``[H, W, C]`` or masks ``[H, W]``: the
#: fields that ``image_size`` applies to unless it names fields.
IMAGE_CODECS = frozenset({"image", "mask"})
#: Codecs whose values are class indices: resized with nearest neighbour, never blended.
INDEX_CODECS = frozenset({"mask"})

_RECORD_FRAMING = 16  # bytes around each record: length, its CRC, the data's CRC


def load_dataset(
    path: Paths,
    split: str = "train",
    fields: str | Sequence[str] | None = None,
    batch_size: int | None = None,
    *,
    schema: Schema | None = None,
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
    compression: str | None = None,
    prefetch: bool = True,
) -> Any:
    """Read a split of a dataset as a ``tf.data.Dataset`` of dicts of decoded tensors.

    :param path: a dataset folder (with ``dataset.json``); or, with ``schema``, TFRecord
        files recordkit did not write (a file, a glob pattern or a list).
    :param split: the split to read.
    :param fields: the fields to parse and decode (default: all). Other Example keys
        are not even parsed.
    :param batch_size: records per batch; None yields single records (still parsed in
        batches of ``block_length`` inside the pipeline).
    :param schema: the reader's schema: checked against the stored one with the
        compatibility rules, and used to decode (default: the stored schema).
    :param registry: the codec registry (default: the installed plugins).
    :param shuffle_files: read the shards in a random order (reshuffled every epoch;
        reproducible with ``seed``).
    :param seed: seed of the shard and record shuffles.
    :param shuffle_buffer: shuffle records through a buffer of this many (0: no shuffle).
    :param cycle_length: shards read at once (default: up to 16, one per CPU).
    :param block_length: records taken from one shard before moving to the next.
    :param deterministic: keep the order reproducible; False lets parallel steps
        yield out of order when that is faster.
    :param repeat: False reads once, True forever, an int that many times.
    :param drop_remainder: drop the last batch when it is smaller than ``batch_size``.
    :param pad: turn ragged outputs into dense ones padded with zeros (empty strings)
        to the batch's largest, adding ``"<field>/shape"`` with each record's true shape;
        True for every field, or the names of the fields to pad.
    :param image_size: ``(height, width)`` that image and mask fields are brought to
        (by ``image_fit``), so they batch densely; or a mapping of field name to size.
        ``"<field>/shape"`` then holds each image's original shape.
    :param image_fit: ``"resize"`` (stretch), ``"resize_with_pad"`` (keep the aspect
        ratio, pad with zeros) or ``"crop_or_pad"`` (centre crop or pad, no resampling).
    :param image_method: the ``tf.image.ResizeMethod`` name, or a mapping of field name
        to method (default ``"bilinear"``, and ``"nearest"`` for fields of the ``mask``
        codec so class indices are never blended; give ``"nearest"`` for masks stored
        otherwise). Resized images keep their dtype (uint8 stays uint8, rounded).
    :param on_corrupt: ``"raise"``: a corrupt or truncated shard stops the read with an
        error naming the shard and the offset of the bad record; ``"skip"``: the rest of
        that shard is skipped, logged, and added to ``report``.
    :param report: a :class:`~recordkit.CorruptionReport` that collects what was skipped.
    :param verify_sha256: hash every shard before reading and compare with the manifest.
    :param input_context: a ``tf.distribute.InputContext``: this input pipeline reads
        its share of the shards (of the records, when there are fewer shards than
        pipelines).
    :param compression: for files without a manifest: ``"GZIP"``, ``"ZLIB"`` or None
        (guessed from the file suffix).
    :param prefetch: prefetch batches (``tf.data.AUTOTUNE``).
    """
    import tensorflow as tf

    if on_corrupt not in ("raise", "skip"):
        raise ValueError(f"on_corrupt must be 'raise' or 'skip', not {on_corrupt!r}")
    if image_fit not in ("resize", "resize_with_pad", "crop_or_pad"):
        raise ValueError(f"image_fit must be resize, resize_with_pad or crop_or_pad, not {image_fit!r}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    if block_length < 1:
        raise ValueError(f"block_length must be at least 1, not {block_length}")
    source = open_source(
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
    if input_context is not None and input_context.num_input_pipelines > 1:
        count, index = input_context.num_input_pipelines, input_context.input_pipeline_id
        if len(shards) >= count:
            shards = shards[index::count]
        else:
            record_shard = (count, index)
    if report is None and on_corrupt == "skip":
        report = CorruptionReport()  # still logs each skip
    files = _shard_table(shards, source)
    if shuffle_files and len(shards) > 1:
        files = files.shuffle(len(shards), seed=seed, reshuffle_each_iteration=True)
    read = _shard_reader(source, block_length, on_corrupt, report)
    if len(shards) > 1:
        chunks = files.interleave(
            read,
            cycle_length=cycle_length or min(len(shards), 16),
            block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )
    else:
        chunks = files.flat_map(read)
    if repeat is True:
        chunks = chunks.repeat()
    elif repeat is not False and repeat != 1:
        chunks = chunks.repeat(int(repeat))
    if shuffle_buffer or record_shard is not None:
        records = chunks.unbatch()
        if record_shard is not None:
            records = records.shard(*record_shard)
        if shuffle_buffer:
            records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        batches = records.batch(
            batch_size or block_length, drop_remainder=drop_remainder and bool(batch_size)
        )
    elif batch_size is not None:
        batches = chunks.rebatch(batch_size, drop_remainder=drop_remainder)
    else:
        batches = chunks
    parse = _decoder(source, pad, image_size, image_fit, image_method)
    dataset = batches.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
    if batch_size is None:
        dataset = dataset.unbatch()
        densify = _record_densifier(source, dataset.element_spec)
        if densify is not None:
            dataset = dataset.map(densify, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
    if prefetch:
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    size = _known_size(shards, record_shard, repeat, batch_size, drop_remainder, on_corrupt)
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
) -> int | None:
    """How many elements the dataset yields, when the manifest says (and nothing is skipped)."""
    if on_corrupt != "raise" or repeat is True or any(s.records is None for s in shards):
        return None
    records = sum(s.records or 0 for s in shards) * (1 if repeat is False else int(repeat))
    if record_shard is not None:  # applied after repeat
        count, index = record_shard
        records = len(range(index, records, count))
    if batch_size is None:
        return records
    return records // batch_size if drop_remainder else -(-records // batch_size)


# -- reading shards -------------------------------------------------------------------


def _shard_table(shards: list[Shard], source: Source) -> Any:
    """A dataset of (file, display name, expected records, expected bytes); -1: unknown."""
    import tensorflow as tf

    rows: list[tuple[str, str, int, int]] = []
    for shard in shards:
        expected_bytes = -1
        if not source.compression.value:
            expected_bytes = shard.bytes if shard.bytes is not None else shard.path.stat().st_size
        rows.append(
            (str(shard.path), shard.name, -1 if shard.records is None else shard.records, expected_bytes)
        )
    if not rows:
        return tf.data.Dataset.from_tensor_slices(
            (
                tf.constant([], tf.string),
                tf.constant([], tf.string),
                tf.constant([], tf.int64),
                tf.constant([], tf.int64),
            )
        )
    paths, names, counts, sizes = zip(*rows, strict=True)
    return tf.data.Dataset.from_tensor_slices(
        (list(paths), list(names), tf.constant(counts, tf.int64), tf.constant(sizes, tf.int64))
    )


def _shard_reader(
    source: Source, block_length: int, on_corrupt: OnCorrupt, report: CorruptionReport | None
) -> Callable[[Any, Any, Any, Any], Any]:
    """The function that reads one shard into chunks of ``block_length`` serialized records.

    The records are read with TensorFlow's TFRecordDataset with its errors ignored (a
    corrupt record ends the shard's records), and a last, empty chunk checks that the
    shard gave every record and byte expected: if not, it raises an error naming the
    shard and the offset of the first record that could not be read (``"raise"``) or
    adds the loss to ``report`` (``"skip"``).
    """
    import tensorflow as tf

    compression = source.compression.value

    def read(path: Any, name: Any, expected_records: Any, expected_bytes: Any) -> Any:
        if compression and source.manifest is None:
            # Neither a record count nor the uncompressed size is known: nothing to check
            # against, so let TensorFlow's own error through rather than hide a loss.
            return tf.data.TFRecordDataset(path, compression_type=compression).batch(block_length)
        chunks = (
            tf.data.TFRecordDataset(path, compression_type=compression).ignore_errors().batch(block_length)
        )
        flagged = chunks.map(lambda chunk: (chunk, tf.constant(False))).concatenate(
            tf.data.Dataset.from_tensors((tf.zeros([0], tf.string), tf.constant(True)))
        )

        def count(state: Any, element: Any) -> Any:
            chunk, last = element
            records, offset = state
            records += tf.size(chunk, out_type=tf.int64)
            offset += tf.reduce_sum(tf.cast(tf.strings.length(chunk), tf.int64) + _RECORD_FRAMING)
            return (records, offset), (chunk, last, records, offset)

        counted = flagged.scan((tf.constant(0, tf.int64), tf.constant(0, tf.int64)), count)

        def check(chunk: Any, last: Any, records: Any, offset: Any) -> Any:
            complete = tf.logical_and(
                tf.logical_or(expected_records < 0, tf.equal(records, expected_records)),
                tf.logical_or(expected_bytes < 0, tf.equal(offset, expected_bytes)),
            )
            lost = tf.logical_and(last, tf.logical_not(complete))
            if on_corrupt == "raise":
                message = tf.strings.join(
                    [
                        "recordkit CorruptRecordError: shard ",
                        name,
                        ", offset ",
                        tf.strings.as_string(offset),
                        ": the record there is corrupt or truncated; ",
                        tf.strings.as_string(records),
                        " of ",
                        tf.where(expected_records < 0, "?", tf.strings.as_string(expected_records)),
                        " records could be read",
                        " (recordkit.iter_records(..., on_corrupt='skip') shows every bad record;"
                        " on_corrupt='skip' reads past it)",
                    ]
                )
                guard = tf.debugging.Assert(tf.logical_not(lost), [message], summarize=1)
            else:
                assert report is not None  # load_dataset makes one for "skip"
                add = _reporter(report)
                guard = tf.cond(
                    lost,
                    lambda: tf.py_function(add, [name, offset, records, expected_records], tf.int64),
                    lambda: tf.constant(0, tf.int64),
                )
            with tf.control_dependencies([guard]):
                return tf.identity(chunk)

        def not_empty(chunk: Any) -> Any:
            return tf.size(chunk) > 0

        return counted.map(check).filter(not_empty)  # the last, empty chunk only checks

    return read


def _reporter(report: CorruptionReport) -> Callable[[Any, Any, Any, Any], int]:
    """The Python function a shard's reader calls (once, at its end) to report a loss."""

    def add(name: Any, offset: Any, records: Any, expected: Any) -> int:
        read, total = int(records.numpy()), int(expected.numpy())
        report.add(
            SkippedRecords(
                shard=name.numpy().decode("utf-8"),
                offset=int(offset.numpy()),
                records=total - read if total >= 0 else None,
                reason="corrupt or truncated record; the rest of the shard was skipped"
                + (f" ({read} of {total} records read)" if total >= 0 else ""),
            )
        )
        return 0

    return add


# -- decoding and layout ----------------------------------------------------------------


def _decoder(
    source: Source,
    pad: bool | Sequence[str],
    image_size: Size | Mapping[str, Size] | None,
    image_fit: ImageFit,
    image_method: str | Mapping[str, str] | None,
) -> Callable[[Any], dict[str, Any]]:
    parse = make_parser(source.stored_fields)
    defaults = {
        field.name: (make_parser(BoundSchema(source.bound.schema, (field,))), source.defaults[field.name])
        for field in source.fields
        if field.name in source.defaults
    }
    names = [f.name for f in source.fields]
    sizes = _image_sizes(source.fields, image_size)
    padded = set(names) if pad is True else set() if pad is False else set(_known(pad, names, "pad"))
    padded -= set(sizes)
    methods = dict(image_method) if isinstance(image_method, Mapping) else {}
    _known(methods, list(sizes), "image_method")

    def decode(serialized: Any) -> dict[str, Any]:
        import tensorflow as tf

        parsed = parse(serialized)
        rows = tf.zeros(tf.shape(serialized)[:1], tf.int64)
        for default_parse, example in defaults.values():  # each row gets the one default
            for key, value in default_parse(tf.constant([example])).items():
                parsed[key] = tf.nest.map_structure(lambda t: tf.gather(t, rows), value)
        out = {}  # in field order
        for name in names:
            out[name] = parsed[name]
            if name + PRESENT_SUFFIX in parsed:
                out[name + PRESENT_SUFFIX] = parsed[name + PRESENT_SUFFIX]
        for field in source.fields:
            name = field.name
            if name in sizes:
                method = methods.get(name) or (
                    "nearest"
                    if field.spec.codec in INDEX_CODECS
                    else (image_method if isinstance(image_method, str) else "bilinear")
                )
                out[name + SHAPE_SUFFIX] = _row_shapes(out[name])
                out[name] = _fit_images(out[name], sizes[name], image_fit, method)
            elif name in padded:
                _pad_into(out, name, out[name])
        return out

    return decode


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
        chosen = {f.name: image_size for f in fields if f.spec.codec in IMAGE_CODECS and not f.spec.sequence}
    for name, size in chosen.items():
        if len(size) != 2 or any(int(d) < 1 for d in size):
            raise ValueError(
                f"image_size for {name!r} must be (height, width) of positive ints, not {size!r}"
            )
    return {name: (int(size[0]), int(size[1])) for name, size in chosen.items()}


def _pad_into(out: dict[str, Any], path: str, value: Any) -> None:
    """Replace each ragged tensor under ``path`` with a padded one and its row shapes."""
    import tensorflow as tf

    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, tf.RaggedTensor):
                out[f"{path}/{key}{SHAPE_SUFFIX}"] = _row_shapes(item)
                value[key] = item.to_tensor()
        return
    if isinstance(value, tf.RaggedTensor):
        out[path + SHAPE_SUFFIX] = _row_shapes(value)
        out[path] = value.to_tensor()


def _row_shapes(value: Any) -> Any:
    """Each row's shape, int64 ``[B, rank - 1]`` (ragged dimensions: the row's largest)."""
    import tensorflow as tf

    if not isinstance(value, tf.RaggedTensor):
        shape = tf.shape(value, out_type=tf.int64)
        return tf.tile(shape[None, 1:], tf.stack([shape[0], 1]))
    dims = []
    for axis in range(1, value.shape.rank):
        if axis <= value.ragged_rank:
            lengths = value.row_lengths(axis=axis)
            for _ in range(axis - 1):
                lengths = tf.reduce_max(lengths, axis=-1)
            dims.append(tf.maximum(lengths, 0))
        else:
            size = tf.shape(value.flat_values, out_type=tf.int64)[axis - value.ragged_rank]
            dims.append(tf.fill(tf.reshape(value.nrows(), [1]), size))
    return tf.stack(dims, axis=1)


def _fit_images(images: Any, size: Size, fit: ImageFit, method: str) -> Any:
    """Bring a batch of images ``[B, H, W, C]`` or masks ``[B, H, W]`` (dense or ragged)
    to ``size``, keeping their dtype."""
    import tensorflow as tf

    rank = images.shape.rank
    if rank not in (3, 4):
        raise ValueError(f"image_size applies to images [B, H, W, C] or masks [B, H, W], not rank {rank}")
    dtype = images.dtype
    mask = rank == 3
    if mask:
        images = (
            images.with_flat_values(images.flat_values[..., None])
            if isinstance(images, tf.RaggedTensor)
            else images[..., None]
        )

    def fit_one(image: Any) -> Any:
        if fit == "crop_or_pad":
            return tf.image.resize_with_crop_or_pad(image, size[0], size[1])
        if fit == "resize_with_pad":
            out = tf.image.resize_with_pad(image, size[0], size[1], method=method)
        else:
            out = tf.image.resize(image, size, method=method)
        if out.dtype != dtype:
            out = tf.saturate_cast(tf.round(out) if dtype.is_integer else out, dtype)
        return out

    if isinstance(images, tf.RaggedTensor):
        channels = images.shape[-1]

        def fit_all() -> Any:
            return tf.map_fn(
                lambda image: fit_one(image.to_tensor()),
                images,
                fn_output_signature=tf.TensorSpec([size[0], size[1], channels], dtype),
            )

        def none() -> Any:  # map_fn cannot stack zero images of an unknown channel count
            depth = tf.shape(images.flat_values)[-1]
            return tf.zeros(tf.stack([0, size[0], size[1], depth]), dtype)

        fitted = tf.cond(images.nrows() > 0, fit_all, none)
    else:
        fitted = fit_one(images)
    return fitted[..., 0] if mask else fitted


def _record_densifier(source: Source, spec: Any) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
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
            out[name] = tf.nest.map_structure(
                lambda t: t.to_tensor() if isinstance(t, tf.RaggedTensor) else t, record[name]
            )
        return out

    return densify
