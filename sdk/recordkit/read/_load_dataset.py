"""``load_dataset``: a recordkit dataset as a ``tf.data.Dataset`` of decoded dicts.

The pipeline, in order, one small function a step (each step only when asked for):

1. open (:meth:`~recordkit.read._options.SourceOptions.open`): the manifest, the schemas
   compared, this worker's share of the split (:func:`recordkit.read._open.worker_share`);
2. read (:func:`_serialized_batches`): the shards in parallel, interleaved ``block_length``
   records at a time and checked on the way (:mod:`recordkit.read._shard_stream`: every
   record the manifest lists and every byte of each file must be read, so a corrupt or
   truncated shard is named), then repeat, shuffle (a record buffer), and batch *before*
   parsing, so each batch costs one ``tf.io.parse_example``;
3. parse and decode in batches (:func:`_decoder`, over :func:`recordkit.make_parser`)
   only the requested fields, in parallel, with the layout options: ragged fields padded
   (with each codec's :meth:`~recordkit.Codec.pad_value`), images resized, cropped or
   padded to a size;
4. decode pictures record by record (:func:`_per_record`): the fields whose codec declares
   a ``raster`` (image, mask, and plugins' pictures) leave step 3 as their parsed wire
   values; the batches are split into records (``unbatch``) and each record's
   pictures decoded (and fitted to ``image_size``; a crop decodes only its window where
   the codec can) in a parallel map, so the images of a batch are decoded on every core,
   where one batched decode runs them on one; then the records are batched again (the
   same batches): when every picture is padded or fitted, each record made dense in the
   map and the batch padded as it forms (``padded_batch``: one copy of each value);
   values that ``pad`` leaves ragged (in one dimension: boxes, labels) go through it
   padded, with their lengths, and are rebuilt ragged after (:func:`_finisher`), so
   they come as the unpadded read gives them. A picture left ragged (or a value ragged
   in more dimensions) batches the records ragged (``ragged_batch``) and pads the named
   fields after. Then nothing is padded in step 3;
5. without a batch size, the same split and per-record map (single records, each
   dense); then prefetch.

Where the batches are split anyway (steps 4 and 5), the fields whose codec asks for it
(:meth:`~recordkit.Codec.decodes_per_record`: audio) and that are padded (or read as
single records) leave step 3 as their wire values too and are decoded in the per-record
map: a batch's decode would join their large payloads only for the split to copy each
record's part out again.

A random crop draws per record from a stateless generator keyed by the seed and the
batch's position, so that a seed gives the same windows run after run, and the pictures
of one record (an image and its mask) share their draws.

TensorFlow is imported when :func:`load_dataset` is called.
"""

from __future__ import annotations

import dataclasses
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
    crop_at,
    crop_offsets,
    dense_record,
    fit_images,
    pad_into,
    pad_ragged,
    row_shapes,
)
from recordkit.read._open import CorruptionReport, OnCorrupt, OpenedDataset, Paths, Shard
from recordkit.read._options import (
    DEFAULT_BLOCK_LENGTH,
    IMAGE_FITS,
    Opened,
    PipelineOptions,
    RemoteIO,
    SourceOptions,
)
from recordkit.read._parse import PRESENT_SUFFIX, make_padded_parser, make_parser
from recordkit.read._position import Start, tf_data_start
from recordkit.read._shard_stream import read_shards
from recordkit.schema._bound import BoundField
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

#: The hidden component that carries each record's random crop draws from the batched
#: step to the per-record one (a slash: no field is named so).
_DRAWS = "/draws"
#: The prefix of the hidden components that carry the length of each value that stays
#: ragged through ``padded_batch`` (``"/lengths/<field>"``, ``"/lengths/<field>/<key>"``).
_LENGTHS = "/lengths/"


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
        prefetch=prefetch,
        remote_io=remote_io,
    )
    sources = SourceOptions(
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
    sources.check()
    options.check()
    skip = tf_data_start(
        start, shuffled=shuffle_files or bool(shuffle_buffer), seed=seed, deterministic=deterministic
    )
    return tf_pipeline(sources.open(path, split, fields), options, on_corrupt, skip)


def tf_pipeline(opened: Opened, options: PipelineOptions, on_corrupt: OnCorrupt, skip: int = 0) -> Any:
    """The ``tf.data`` pipeline (see the module docs) over a source already opened, with
    options already checked: what :func:`load_dataset` and :meth:`recordkit.Dataset.tf`
    build; ``skip`` records of its order are dropped before they are parsed (a resume)."""
    import tensorflow as tf

    shards, record_shard = _my_shards(opened)
    batches = _serialized_batches(opened, shards, record_shard, options, on_corrupt, skip)
    layout = _Layout.build(opened.source, options)
    batch_size = options.batch_size
    if layout.per_record or batch_size is None:
        to_records = _Split()
        dataset = _decode_batches(batches, layout, options, to_records)
        dataset = _per_record(dataset, to_records, layout, options)
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
    shards = list(opened.source.shards)
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
        opened.source,
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
    batches: Any, layout: _Layout, options: PipelineOptions, split: _Split | None = None
) -> Any:
    """Each batch parsed, decoded and laid out (but for the per-record fields); with
    ``split`` (the batches are split into records next), made ready for ``unbatch`` in
    the same function (:meth:`_Split.encode`): one function, not a map of its own, since
    TensorFlow optimizes and instantiates each function of a pipeline again for every
    iterator."""
    import tensorflow as tf

    decode = _decoder(layout, options)

    def parse(*args: Any) -> dict[str, Any]:
        return decode(*args) if split is None else split.encode(decode(*args))

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


# -- decoding and shaping ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Layout:
    """What the decode steps need, worked out once from the source and the options."""

    source: OpenedDataset
    #: Fields padded (to the batch's largest), and the size each fitted field is brought to.
    padded: frozenset[str]
    sizes: dict[str, Size]
    #: The resize method and the pad value of each padded or fitted field.
    methods: dict[str, str]
    pad_values: dict[str, int | float]
    #: Fields decoded record by record, in a parallel map: plain (neither optional nor a
    #: sequence) stored fields whose codec declares a raster (pictures, decoded one by one,
    #: and fitted to their size: a crop decodes only its window where it can).
    per_record: tuple[BoundField, ...]
    #: Other fields decoded record by record in that map, when the batches are split
    #: anyway (pictures decoded per record, or single records): plain stored fields whose
    #: codec asks for it (:meth:`~recordkit.Codec.decodes_per_record`: audio), padded
    #: (or single records), so that each record's value is made dense where it is decoded.
    per_record_values: tuple[BoundField, ...]
    #: Whether the padded fields are padded in the batched step (batches that stay as
    #: they are); otherwise each record is made dense in the per-record step and the
    #: batch padded as it is formed (``padded_batch``), or records stay single.
    pads_in_batch: bool
    #: The key of the random crop's stateless draws.
    crop_seed: int

    @classmethod
    def build(cls, source: OpenedDataset, options: PipelineOptions) -> _Layout:
        names = [f.name for f in source.fields]
        sizes = _image_sizes(source.fields, options.image_size)
        pad = options.pad
        padded = set(names) if pad is True else set() if pad is False else set(_known(pad, names, "pad"))
        padded -= set(sizes)
        image_method = options.image_method
        chosen = dict(image_method) if isinstance(image_method, Mapping) else {}
        _known(chosen, list(sizes), "image_method")
        methods = {
            f.name: chosen.get(f.name)
            or (
                "nearest"
                if f.codec.raster == "indices"
                else (image_method if isinstance(image_method, str) else "bilinear")
            )
            for f in source.fields
            if f.name in sizes
        }
        pad_values = {f.name: _pad_value(f) for f in source.fields if f.name in sizes or f.name in padded}
        # What the per-record step can decode: a value in every record (not optional, no
        # default), not a sequence.
        plain = [
            f
            for f in source.stored_fields.fields
            if f.presence_key is None and not f.spec.sequence and f.name not in source.defaults
        ]
        per_record = tuple(f for f in plain if f.codec.raster)
        split = bool(per_record) or options.batch_size is None  # the batches are split anyway
        per_record_values = tuple(
            f
            for f in plain
            if split
            and not f.codec.raster
            and f.codec.decodes_per_record()
            and (f.name in padded or options.batch_size is None)
        )
        crop_seed = options.seed if options.seed is not None else random.SystemRandom().randrange(1 << 31)
        pads_in_batch = not per_record and options.batch_size is not None
        return cls(
            source,
            frozenset(padded),
            sizes,
            methods,
            pad_values,
            per_record,
            per_record_values,
            pads_in_batch,
            crop_seed,
        )

    def fit(self, name: str, value: Any, shapes: Any, draws: Any, fit: ImageFit) -> tuple[Any, Any]:
        """A batch of the field's pictures brought to its size, and the crop windows'
        offsets (None for the resizes)."""
        offsets = crop_offsets(shapes, self.sizes[name], fit, draws) if fit in CROP_FITS else None
        fitted = fit_images(
            value, self.sizes[name], fit, self.methods[name], pad_value=self.pad_values[name], offsets=offsets
        )
        return fitted, offsets


def _decoder(layout: _Layout, options: PipelineOptions) -> Callable[..., dict[str, Any]]:
    """The function from a batch of serialized records (and, for the random crop, the
    batch's position in the dataset) to the decoded, laid out batch; the per-record
    fields hold their wire values, and with a random crop ``_DRAWS`` each record's draws."""
    source = layout.source
    names = [f.name for f in source.fields]
    undecoded = {f.name for f in (*layout.per_record, *layout.per_record_values)}
    padded = layout.padded - set(layout.sizes) if layout.pads_in_batch else frozenset()
    parse = make_padded_parser(source.stored_fields.fields, padded, undecoded)
    defaults = {
        field.name: (make_parser(BoundSchema(source.bound.schema, (field,))), source.defaults[field.name])
        for field in source.fields
        if field.name in source.defaults
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
                out[_DRAWS] = draws
        for field in source.fields:
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


def _per_record(dataset: Any, split: _Split, layout: _Layout, options: PipelineOptions) -> Any:
    """Split the batches into records, decode (and fit) each record's pictures in a
    parallel map, and batch the records again as they were.

    ``dataset`` comes from :func:`_decode_batches` with ``split``, which says how its
    values cross ``unbatch``. When every value of a record can be dense (every field
    padded, fitted or dense in its batch), each record is made dense in the map, with
    the true shapes of its padded values, and the batch is padded as it forms
    (``padded_batch``: one copy of each value); otherwise the records are batched ragged
    and padded after. Single records (no ``batch_size``) are made dense in the map,
    padded fields each to its own size.
    """
    import tensorflow as tf

    batch_size = options.batch_size
    batched_spec = split.batched
    dense = batch_size is None or _dense_records(batched_spec, layout)
    decode = _record_decoder(layout, options, batched_spec, dense)
    records = dataset.unbatch().map(
        lambda record: decode(split.decode(record)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=options.deterministic,
    )
    if batch_size is None:
        return records
    if dense:
        batches = records.padded_batch(
            batch_size,
            padding_values=_padding_values(records.element_spec, layout),
            drop_remainder=options.drop_remainder,
        )
        finish = _finisher(layout, records.element_spec)
        if finish is None:
            return batches
        return batches.map(finish, num_parallel_calls=tf.data.AUTOTUNE, deterministic=options.deterministic)
    return _ragged_batches(records, batched_spec, layout, options)


class _Split:
    """How the batches cross ``unbatch`` into records, with no function of TensorFlow's own.

    ``unbatch`` of a batch that holds ragged values first maps it through a function of
    its own (``normalize``: each ragged value encoded as a variant per record), one more
    function for TensorFlow to optimize and instantiate at every iterator, and run one
    batch at a time. Here the batched step encodes them (:meth:`encode`, the same
    ``RaggedTensorToVariant``) and the per-record step decodes them (:meth:`decode`, as
    ``unbatch``'s element spec did in that step).

    :meth:`encode` first makes each dense value that may hold no elements ragged:
    TensorFlow 2.21's ``unbatch`` crashes (a segmentation fault) on a dense value with a
    batch dimension and no elements, such as ``[B, 0, 4]`` boxes of a batch without any.
    (Slicing each batch with ``from_tensor_slices`` in a ``flat_map`` does not crash, but
    makes TensorFlow log a type inference failure.)

    Filled when the batched step is traced: :attr:`batched`, the type specs of the
    decoded batch (what the per-record step pads and rebuilds by), and :attr:`ragged`,
    the specs of the values encoded, by their index in the flattened batch."""

    def __init__(self) -> None:
        self.batched: dict[str, Any] = {}
        self.ragged: dict[int, Any] = {}

    def encode(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The decoded batch, its ragged values (and dense ones that may be empty)
        encoded as a variant per record."""
        import tensorflow as tf

        self.batched.clear()
        self.batched.update(tf.nest.map_structure(tf.type_spec_from_value, batch))
        self.ragged.clear()
        leaves = tf.nest.flatten(batch, expand_composites=False)
        for index, value in enumerate(leaves):
            if isinstance(value, tf.Tensor) and _may_be_empty(value.shape):
                value = tf.RaggedTensor.from_tensor(value, ragged_rank=1, row_splits_dtype=tf.int64)
            if isinstance(value, tf.RaggedTensor):
                self.ragged[index] = tf.type_spec_from_value(value)
                leaves[index] = tf.raw_ops.RaggedTensorToVariant(
                    rt_nested_splits=value.nested_row_splits,
                    rt_dense_values=value.flat_values,
                    batched_input=True,
                )
        encoded: dict[str, Any] = tf.nest.pack_sequence_as(batch, leaves, expand_composites=False)
        return encoded

    def decode(self, record: dict[str, Any]) -> dict[str, Any]:
        """One record of an encoded batch as ``unbatch`` gives it: each encoded value
        with one ragged dimension fewer (dense when it had one)."""
        import tensorflow as tf

        leaves = tf.nest.flatten(record, expand_composites=False)
        for index, spec in self.ragged.items():
            ragged_rank = spec.ragged_rank - 1
            splits, values = tf.raw_ops.RaggedTensorFromVariant(
                encoded_ragged=leaves[index],
                input_ragged_rank=-1,
                output_ragged_rank=ragged_rank,
                Tvalues=spec.dtype,
                Tsplits=tf.int64,
            )
            shape = spec.shape[1:]
            values.set_shape(shape if ragged_rank == 0 else [None, *shape[ragged_rank + 1 :]])
            leaves[index] = tf.RaggedTensor.from_nested_row_splits(values, splits, validate=False)
        decoded: dict[str, Any] = tf.nest.pack_sequence_as(record, leaves, expand_composites=False)
        return decoded


def _may_be_empty(shape: Any) -> bool:
    """Whether a batch of this static shape may hold no elements in some batch."""
    inner = shape[1:]
    return not inner.is_fully_defined() or inner.num_elements() == 0


def _dense_records(batched_spec: dict[str, Any], layout: _Layout) -> bool:
    """Whether the records can be batched by ``padded_batch``: each per-record picture
    padded or fitted, and each other field padded, dense in its batch, or ragged in one
    dimension only (:func:`_rebuilds_ragged`: padded with the batch, then rebuilt ragged
    from each record's length). A picture left ragged, or another field ragged in
    more dimensions, is batched ragged (:func:`_ragged_batches`)."""
    import tensorflow as tf

    for field in layout.source.fields:
        name = field.name
        if name in layout.sizes or name in layout.padded:
            continue
        if field in layout.per_record:
            return False
        leaves = tf.nest.flatten(batched_spec[name], expand_composites=False)
        if not all(isinstance(leaf, tf.TensorSpec) or _rebuilds_ragged(leaf) for leaf in leaves):
            return False
    return True


def _rebuilds_ragged(spec: Any) -> bool:
    """Whether a value ragged in its batch (``spec``) and not padded can go through
    ``padded_batch`` and be rebuilt: ragged in its first dimension after the batch's
    only (``[B, (n), ...]``: boxes, labels, a sequence of fixed-size values), so that
    one length per record says where its rows end."""
    import tensorflow as tf

    return isinstance(spec, tf.RaggedTensorSpec) and spec.ragged_rank == 1 and spec.shape.rank is not None


def _record_decoder(
    layout: _Layout, options: PipelineOptions, batched_spec: dict[str, Any], dense: bool
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The per-record step: each picture decoded (and fitted), each of the other
    per-record values decoded; with ``dense``, every padded value made dense, with its
    true shape under ``"<field>/shape"``, and other values that are still ragged (but
    sequences) given their dense form."""
    import tensorflow as tf

    per_record = {f.name for f in layout.per_record}
    others = [f for f in layout.source.fields if f.name not in per_record and f.name not in layout.sizes]

    def decode(record: dict[str, Any]) -> dict[str, Any]:
        out = dict(record)
        draws = out.pop(_DRAWS, None)
        for field in layout.per_record:
            out.update(_decode_picture(field, record[field.name], layout, options, draws, dense))
        specs = dict(batched_spec)
        for field in layout.per_record_values:
            out[field.name], specs[field.name] = _decode_value(field, record[field.name])
        if not dense:
            return out
        for field in others:
            name = field.name
            if name in layout.padded:
                _pad_record(out, name, out[name], specs[name], layout.pad_values[name])
            elif options.batch_size is not None:
                _ragged_record(out, name, out[name], specs[name])
            elif not field.spec.sequence:
                out[name] = tf.nest.map_structure(dense_record, out[name], expand_composites=False)
        return out

    return decode


def _pad_record(out: dict[str, Any], path: str, value: Any, batched: Any, pad_value: int | float) -> None:
    """One record's part of :func:`~recordkit.read._dense.pad_into`: each value that is
    ragged in its batch (``batched``: its spec) made dense (padded with ``pad_value`` where
    its rows differ) with its shape under ``"<path>/shape"`` (``"<path>/<key>/shape"``)."""
    import tensorflow as tf

    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(batched[key], tf.RaggedTensorSpec):
                value[key] = pad_ragged(item, pad_value)
                out[f"{path}/{key}{SHAPE_SUFFIX}"] = tf.cast(tf.shape(value[key]), tf.int64)
        out[path] = value
    elif isinstance(batched, tf.RaggedTensorSpec):
        out[path] = pad_ragged(value, pad_value)
        out[path + SHAPE_SUFFIX] = tf.cast(tf.shape(out[path]), tf.int64)


def _ragged_record(out: dict[str, Any], path: str, value: Any, batched: Any) -> None:
    """One record's part of a value that stays ragged in its batch (``batched``: its spec,
    ragged in one dimension, see :func:`_rebuilds_ragged`): made dense for
    ``padded_batch``, with its length under ``_LENGTHS + path`` (``path/key``), from
    which :func:`_finisher` rebuilds the ragged batch."""
    import tensorflow as tf

    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(batched[key], tf.RaggedTensorSpec):
                value[key] = dense_record(item)
                out[f"{_LENGTHS}{path}/{key}"] = tf.shape(value[key], out_type=tf.int64)[0]
        out[path] = value
    elif isinstance(batched, tf.RaggedTensorSpec):
        out[path] = dense_record(value)
        out[_LENGTHS + path] = tf.shape(out[path], out_type=tf.int64)[0]


def _finisher(
    layout: _Layout, record_spec: dict[str, Any]
) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The step after ``padded_batch``: the values that stay ragged rebuilt from their
    padded rows and lengths (``RaggedTensor.from_tensor(lengths=...)``: the rows that
    ``ragged_batch`` would give), and the channel check (:func:`_channel_check`); None
    when there is neither."""
    import tensorflow as tf

    lengths = [key for key in record_spec if key.startswith(_LENGTHS)]
    check = _channel_check(layout, record_spec)
    if not lengths and check is None:
        return None

    def finish(batch: dict[str, Any]) -> dict[str, Any]:
        out = {key: value for key, value in batch.items() if not key.startswith(_LENGTHS)}
        for key in lengths:
            name, _, inner = key[len(_LENGTHS) :].partition("/")
            padded = out[name][inner] if inner else out[name]
            ragged = tf.RaggedTensor.from_tensor(padded, lengths=batch[key], row_splits_dtype=tf.int64)
            if inner:
                out[name] = {**out[name], inner: ragged}
            else:
                out[name] = ragged
        return out if check is None else check(out)

    return finish


def _decode_picture(
    field: BoundField,
    wire: dict[str, Any],
    layout: _Layout,
    options: PipelineOptions,
    draws: Any,
    dense: bool,
) -> dict[str, Any]:
    """One record's picture: decoded, and fitted to its size (a crop decodes only its
    window where the codec can), with its shape (and the crop's offset) where the
    batched decode gives them; as a ragged ``[(H), (W), ...]`` when it is batched ragged."""
    import tensorflow as tf

    name = field.name
    fit = options.image_fit
    out: dict[str, Any] = {}
    if name in layout.sizes:
        cropped = _decode_crop(field, wire, layout, fit, draws) if fit in CROP_FITS else None
        if cropped is not None:
            value, out[name + SHAPE_SUFFIX], out[name + OFFSET_SUFFIX] = cropped
        else:
            value = _decode_one(field, wire)
            shape = tf.cast(tf.shape(value), tf.int64)
            out[name + SHAPE_SUFFIX] = shape
            one_draw = None if draws is None else draws[None]
            fitted, offsets = layout.fit(name, value[None], shape[None], one_draw, fit)
            value = fitted[0]
            if offsets is not None:
                out[name + OFFSET_SUFFIX] = offsets[0]
        out[name] = tf.ensure_shape(value, [*layout.sizes[name], *value.shape[2:]])
        return out
    value = _decode_one(field, wire)
    if dense and name in layout.padded and not value.shape[:2].is_fully_defined():  # not a fixed size
        out[name + SHAPE_SUFFIX] = tf.cast(tf.shape(value), tf.int64)
    elif not dense and not value.shape.is_fully_defined():
        # Batched as ragged [B, (H), (W), ...], as the batched decode gives it
        # (ragged_batch would make an unknown channel count ragged as well).
        value = tf.RaggedTensor.from_tensor(value, ragged_rank=1, row_splits_dtype=tf.int64)
    out[name] = value
    return out


def _padding_values(spec: dict[str, Any], layout: _Layout) -> dict[str, Any]:
    """``padded_batch``'s padding value of each output: the field's pad value (shapes,
    offsets and other fields are never padded: records of a batch share their shape)."""
    import tensorflow as tf

    def scalar(dtype: Any, pad_value: int | float) -> Any:
        if dtype == tf.string:
            return tf.constant("", tf.string)
        if dtype == tf.bool:
            return tf.constant(bool(pad_value))
        return tf.constant(pad_value, dtype)

    values = {}
    for key, value in spec.items():
        pad = layout.pad_values.get(key, 0)
        values[key] = tf.nest.map_structure(lambda leaf, pad=pad: scalar(leaf.dtype, pad), value)
    return values


def _channel_check(
    layout: _Layout, record_spec: dict[str, Any]
) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """For pictures of unknown channel count padded as their batch forms: a check that
    the records of each batch have one count (``padded_batch`` would pad the channels,
    where the batched decode refuses such a batch); None when there is nothing to check
    (``record_spec``, the records' specs, fixes every channel count): no map is added,
    whose function would cost CPU at every iterator."""
    import tensorflow as tf

    names = [
        f.name
        for f in layout.per_record
        if f.codec.raster == "pixels"
        and (f.name in layout.padded or f.name in layout.sizes)
        and isinstance(record_spec[f.name], tf.TensorSpec)
        and record_spec[f.name].shape.rank == 3
        and record_spec[f.name].shape[-1] is None
    ]
    if not names:
        return None

    def check(batch: dict[str, Any]) -> dict[str, Any]:
        out = dict(batch)
        for name in names:
            if batch[name].shape.rank != 4 or batch[name].shape[-1] is not None:
                continue
            channels = batch[name + SHAPE_SUFFIX][:, 2]
            same = tf.debugging.Assert(
                tf.reduce_all(tf.equal(channels, channels[0])),
                [
                    f"field {name!r}: the pictures of this batch have different channel counts; "
                    "set the codec's channels option so that every picture is converted to one"
                ],
            )
            with tf.control_dependencies([same]):
                out[name] = tf.identity(batch[name])
        return out

    return check


def _ragged_batches(
    records: Any, batched_spec: dict[str, Any], layout: _Layout, options: PipelineOptions
) -> Any:
    """Records batched as ragged values (a field that is ragged and not padded stays
    so), then the dense and padded ones made dense again."""
    import tensorflow as tf

    # Pictures of varying size batch as ragged [B, (H), (W), ...], as the batched decode
    # gives them; so do the other fields' values that vary in size from record to record,
    # but ragged_batch cannot tell those that were dense in their batch: they are made
    # dense again (their rows are all alike: no padding is added).
    batches = records.ragged_batch(
        options.batch_size, drop_remainder=options.drop_remainder, row_splits_dtype=tf.int64
    )
    per_record = {f.name for f in (*layout.per_record, *layout.per_record_values)}
    dense = {
        key: spec
        for key, spec in batched_spec.items()
        if key not in per_record
        and key != _DRAWS
        and any(isinstance(leaf, tf.TensorSpec) for leaf in tf.nest.flatten(spec))
    }
    sized = [f.name for f in layout.per_record if f.name in layout.sizes]  # dense, of one size
    padded = [f.name for f in layout.source.fields if f.name in layout.padded and f.name not in layout.sizes]
    if not padded and not dense and not sized:
        return batches

    def redense(spec: Any, value: Any) -> Any:
        if isinstance(spec, tf.TensorSpec) and isinstance(value, tf.RaggedTensor):
            return tf.ensure_shape(pad_ragged(value), spec.shape)
        return value

    def pad(batch: dict[str, Any]) -> dict[str, Any]:
        out = dict(batch)
        for key, spec in dense.items():
            out[key] = tf.nest.map_structure(redense, spec, out[key])
        for name in sized:
            if isinstance(out[name], tf.RaggedTensor):  # an unknown channel count
                out[name] = out[name].to_tensor()
        for name in padded:
            pad_into(out, name, out[name], layout.pad_values[name])
        return out

    return batches.map(pad, num_parallel_calls=tf.data.AUTOTUNE, deterministic=options.deterministic)


def _decode_one(field: BoundField, wire: dict[str, Any]) -> Any:
    """One record's value of ``field``, dense: its codec's batched decode of a batch of
    one (static size 1, which lets a codec take a shorter path)."""
    import tensorflow as tf

    one = {key: value[None] for key, value in wire.items()}
    padded = field.codec.decode_tf_padded(one)
    if padded is not None and not isinstance(padded[0], dict):
        return padded[0][0]
    return tf.nest.map_structure(_only_record, field.codec.decode_tf(one))


def _decode_value(field: BoundField, wire: dict[str, Any]) -> tuple[Any, Any]:
    """One record's value of a field decoded record by record (not a picture): its
    codec's batched decode of a batch of one (static size 1), dense, and the type spec of
    that batch of one (ragged where the batched decode is), which says what the
    per-record step pads and where it adds ``"<field>/shape"``."""
    import tensorflow as tf

    decoded = field.codec.decode_tf({key: value[None] for key, value in wire.items()})
    return tf.nest.map_structure(_only_record, decoded), tf.nest.map_structure(
        tf.type_spec_from_value, decoded
    )


def _only_record(value: Any) -> Any:
    """The one record of a batch of one, dense. A ragged batch's values are its one
    record's (its row splits are ``[0, len(values)]``): taken as they are, without
    slicing."""
    import tensorflow as tf

    if isinstance(value, tf.RaggedTensor):
        return dense_record(value.values)
    return value[0]


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


def _decode_crop(
    field: BoundField, wire: dict[str, Any], layout: _Layout, fit: ImageFit, draws: Any
) -> tuple[Any, Any, Any] | None:
    """One record's picture cut (or padded) to its size, decoding only the window
    (:meth:`~recordkit.Codec.decode_tf_window`), placed from the stored height and width;
    with its shape and offset. None when the codec decodes whole pictures only, or the
    records do not store the size (an image codec reading sizes from headers)."""
    import tensorflow as tf

    if field.codec.size_features is None or not all(key in wire for key in field.codec.size_features):
        return None
    name = field.name
    size = layout.sizes[name]
    height_key, width_key = field.codec.size_features
    sides = tf.cast(tf.stack([wire[height_key], wire[width_key]]), tf.int64)
    offset = crop_offsets(sides[None], size, fit, None if draws is None else draws[None])[0]
    # The part of the window inside the picture: that is all that is decoded.
    start = tf.clip_by_value(offset, 0, sides)
    stop = tf.clip_by_value(offset + tf.constant(size, tf.int64), 0, sides)
    one = {key: value[None] for key, value in wire.items()}
    inside = field.codec.decode_tf_window(one, tf.concat([start, stop - start], 0))
    if inside is None:
        return None
    picture = inside if inside.shape.rank == 3 else inside[..., None]
    window = crop_at(picture, offset - start, size, layout.pad_values[name])
    shape = tf.concat([sides, tf.cast(tf.shape(inside), tf.int64)[2:]], 0)
    window = tf.ensure_shape(window, [*size, *picture.shape[2:]])
    return (window if inside.shape.rank == 3 else window[..., 0]), shape, offset
