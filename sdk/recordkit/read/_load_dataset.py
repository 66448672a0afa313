"""``tf_pipeline``: a recordkit dataset as a ``tf.data.Dataset`` of decoded dicts (what
:meth:`recordkit.Dataset.tf` and :func:`recordkit.load_dataset` give). The shards are
read and checked (:mod:`recordkit.read._shard_stream`), batched *before* parsing so each
batch costs one ``tf.io.parse_example``, decoded and laid out in batches
(:mod:`recordkit.read._layout`), and, where pictures are decoded record by record on
every core, split and batched again (:mod:`recordkit.read._per_record`). The steps in
order: docs/architecture.md, "The tf.data pipeline".

TensorFlow is imported when the pipeline is built.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from recordkit.dataset._shards import Shard, selected_records
from recordkit.read._corruption import OnCorrupt
from recordkit.read._dense import OFFSET_SUFFIX, SHAPE_SUFFIX, pad_into, row_shapes
from recordkit.read._image_fit import ImageFit
from recordkit.read._layout import DecodeLayout
from recordkit.read._numpy_geometry import DRAWS as DRAW_COUNT
from recordkit.read._options import (
    DEFAULT_BLOCK_LENGTH,
    IMAGE_FITS,
    Opened,
    PipelineOptions,
)
from recordkit.read._parse import PRESENT_SUFFIX, make_padded_parser, trace_key
from recordkit.read._per_record import DRAWS, RaggedUnbatcher, per_record
from recordkit.read._record_parse import parses_per_record, records_parsed_one_by_one
from recordkit.read._shard_stream import read_shards
from recordkit.read._traced import parallel_map, rebatched
from recordkit.read._whole_shards import dense_fields, read_whole, reads_whole
from recordkit.read._wire_checks import RecordLocator

__all__ = [
    "DEFAULT_BLOCK_LENGTH",
    "PARSE_CHUNK",
    "IMAGE_FITS",
    "OFFSET_SUFFIX",
    "SHAPE_SUFFIX",
    "ImageFit",
    "decoded",
    "tf_pipeline",
]


#: Records parsed and decoded together, where every field read decodes to a dense tensor
#: of one shape (an embedding, a label, a score: what field groups usually hold), before
#: the decoded values are rebatched to the batch size: each call of a pipeline's parse
#: costs a fixed amount besides its records (a few hundred microseconds of CPU), most of
#: what a batch of 64 small records costs.
PARSE_CHUNK = 256
#: The serialized bytes a chunk may hold (records of 1 MB are parsed a batch at a time):
#: a parallel parse holds several chunks at once.
_CHUNK_BYTES = 16 << 20
#: Reads of fewer records (as the manifest counts them) parse batch by batch: the chunks'
#: ``rebatch`` and functions cost a few milliseconds at each iterator's start, more than
#: the calls they save on a few hundred records.
CHUNKED_FROM_RECORDS = 4 * PARSE_CHUNK


def tf_pipeline(opened: Opened, options: PipelineOptions, on_corrupt: OnCorrupt, skip: int = 0) -> Any:
    """The ``tf.data`` pipeline (see docs/architecture.md) over a dataset already opened, with
    options already checked: what :func:`load_dataset` and :meth:`recordkit.Dataset.tf`
    build; ``skip`` records of its order are dropped before they are parsed (a resume)."""
    import tensorflow as tf

    shards, record_shard = _my_shards(opened)
    layout = DecodeLayout.build(opened.dataset, options)
    one_by_one = parses_per_record(layout, options)
    whole = on_corrupt == "raise" and record_shard is None and not skip
    if whole and reads_whole(opened.dataset, shards, layout, options):
        dataset = _whole_batches(opened, shards, options)
    else:
        chunk = None if one_by_one else parse_chunk(layout, options, shards)
        batches = _serialized_batches(
            opened, shards, record_shard, options, on_corrupt, skip, one_by_one, chunk
        )
        dataset = decoded(batches, layout, options, one_by_one, chunked=chunk is not None)
    size = _known_size(
        shards, record_shard, options.repeat, options.batch_size, options.drop_remainder, on_corrupt, skip
    )
    if size is not None:  # Keras and tf.distribute see the number of steps
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(size))
    return dataset


def _whole_batches(opened: Opened, shards: Sequence[Shard], options: PipelineOptions) -> Any:
    """The decoded batches of a read of shards read whole (:mod:`recordkit.read._whole_shards`):
    repeated as asked, rebatched to the batch size and prefetched."""
    import tensorflow as tf

    chunks = read_whole(opened.dataset, shards, options)
    if options.repeat is True:
        chunks = chunks.repeat()
    elif options.repeat is not False and options.repeat != 1:
        chunks = chunks.repeat(int(options.repeat))
    assert options.batch_size is not None  # reads_whole() allows batched reads only
    dataset = rebatched(chunks, options.batch_size, drop_remainder=options.drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE) if options.prefetch else dataset


def decoded(
    batches: Any,
    layout: DecodeLayout,
    options: PipelineOptions,
    one_by_one: bool,
    *,
    draws_given: bool = False,
    chunked: bool = False,
    locate: RecordLocator | None = None,
) -> Any:
    """Batches of serialized records (``batch_size``, or any number when records are
    asked for; single records when ``one_by_one``, see
    :func:`~recordkit.read._record_parse.parses_per_record`) parsed, decoded and laid
    out, as batches or records, prefetched: the pipeline after its source of records.
    With ``draws_given`` (a random crop or flip), each element is a batch of serialized
    records and their random draws (``[records, DRAWS]``), instead of draws keyed by
    the batch's position. With ``chunked``, ``batches`` are chunks of
    :func:`parse_chunk` records, decoded a chunk at a time and rebatched to the batch
    size. A record holding a wrong number of values is found by ``locate`` (default: in
    the split's shards) and named."""
    import tensorflow as tf

    if one_by_one:  # every field decoded record by record: parsed record by record too
        dataset = records_parsed_one_by_one(batches, layout, options, locate)
    elif layout.per_record or options.batch_size is None:
        to_records = RaggedUnbatcher()
        dataset = _decode_batches(
            batches, layout, options, to_records, draws_given=draws_given, locate=locate
        )
        dataset = per_record(dataset, to_records, layout, options)
    elif chunked:
        dataset = _decode_batches(batches, layout, options, locate=locate)
        if _dense(dataset.element_spec):
            dataset = rebatched(dataset, options.batch_size, drop_remainder=options.drop_remainder)
        else:  # a codec's decode gave values of varying shapes after all: batch by batch
            batches = rebatched(batches, options.batch_size, drop_remainder=options.drop_remainder)
            dataset = _decode_batches(batches, layout, options, locate=locate)
    else:
        dataset = _decode_batches(batches, layout, options, draws_given=draws_given, locate=locate)
    if options.prefetch:
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    return dataset


def parse_chunk(layout: DecodeLayout, options: PipelineOptions, shards: Sequence[Shard]) -> int | None:
    """The records to parse and decode together (a multiple of the batch size, at most
    :data:`PARSE_CHUNK`, and at most 16 MB of records of the mean size the manifest gives
    ``shards``) when ``shards`` hold no fewer than :data:`CHUNKED_FROM_RECORDS` records
    (or an unknown number), batches of fewer are asked for and every field read is
    plain (neither optional nor a sequence), stored with fixed-shape wire features and
    decoded in its batch by a codec that is no picture and pads nothing, and nothing is
    padded, fitted, cropped or filled with a default; None otherwise (each batch parsed
    alone). The decoded values are rebatched: the same records in the same batches."""
    size = options.batch_size
    if size is None or size * 2 > PARSE_CHUNK or options.random_crop:
        return None
    records = selected_records(shards)
    if records is not None and records < CHUNKED_FROM_RECORDS:
        return None
    if not dense_fields(layout):
        return None
    most = PARSE_CHUNK
    record_bytes = _record_bytes(shards)
    if record_bytes is not None:
        most = min(most, int(_CHUNK_BYTES // max(record_bytes, 1.0)))
    return most // size * size if most >= size * 2 else None


def _record_bytes(shards: Sequence[Shard]) -> float | None:
    """The mean size of a record of the first of ``shards`` (its files joined), from the
    manifest; None when it does not say."""
    if not shards:
        return None
    first = shards[0]
    sizes = [file.bytes for file in first.files]
    if not first.records or any(size is None for size in sizes):
        return None
    return sum(size for size in sizes if size is not None) / first.records


def _dense(spec: Any) -> bool:
    """Whether every value of a dataset's element ``spec`` is a dense tensor whose shape
    past the batch is fixed (what ``rebatch`` splits exactly)."""
    import tensorflow as tf

    values = tf.nest.flatten(spec)
    return all(isinstance(value, tf.TensorSpec) and value.shape[1:].is_fully_defined() for value in values)


def _my_shards(opened: Opened) -> tuple[Sequence[Shard], tuple[int, int] | None]:
    """The shards this worker reads (a whole split's are made as they are read), and
    ``(count, index)`` when it reads every ``count``-th record of them instead (fewer
    shards than workers)."""
    shards = opened.dataset.shards
    if opened.share is None:
        return shards, None
    mine, by_record = opened.share.shards(shards)
    return mine, (opened.share.count, opened.share.index) if by_record else None


def _serialized_batches(
    opened: Opened,
    shards: Sequence[Shard],
    record_shard: tuple[int, int] | None,
    options: PipelineOptions,
    on_corrupt: OnCorrupt,
    skip: int = 0,
    single: bool = False,
    chunk: int | None = None,
) -> Any:
    """Batches of serialized records (``batch_size`` of them, or ``block_length`` when
    single records are asked for): read, checked, repeated and shuffled; the first
    ``skip`` records (a resumed read) dropped before they are parsed. With ``single``,
    the records one by one instead, for the pipeline to parse and batch. With ``chunk``,
    batches of ``chunk`` records instead, the last one short (the decoded values are
    rebatched)."""
    one_by_one = bool(options.shuffle_buffer or record_shard is not None or skip or single)
    repeat, batch_size = options.repeat, options.batch_size
    # Rebatched below: the shards' chunks are joined there, by one rebatch (two make
    # TensorFlow log an error line: read_shards' docs).
    rebatched_here = not one_by_one and (chunk is not None or batch_size is not None)
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
        one_by_one=one_by_one,
        as_opened=opened.checked_as_opened,
        joined=not rebatched_here,
    )
    if repeat is True:
        chunks = chunks.repeat()
    elif repeat is not False and repeat != 1:
        chunks = chunks.repeat(int(repeat))
    if one_by_one:
        records = chunks
        if record_shard is not None:
            records = records.shard(*record_shard)
        if options.shuffle_buffer:
            records = records.shuffle(
                options.shuffle_buffer, seed=options.seed, reshuffle_each_iteration=True
            )
        if skip:  # resume: the records an earlier read yielded, dropped before parsing
            records = records.skip(skip)
        if single:
            return records
        if chunk is not None:
            return records.batch(chunk)
        return records.batch(
            batch_size or options.block_length, drop_remainder=options.drop_remainder and bool(batch_size)
        )
    # Without the map ``Dataset.rebatch`` puts before it (traced at every build, started
    # at every iterator, called at every chunk): the chunks are dense.
    if chunk is not None:
        return rebatched(chunks, chunk)
    if batch_size is not None:
        return rebatched(chunks, batch_size, drop_remainder=options.drop_remainder)
    return chunks


def _decode_batches(
    batches: Any,
    layout: DecodeLayout,
    options: PipelineOptions,
    unbatcher: RaggedUnbatcher | None = None,
    *,
    draws_given: bool = False,
    locate: RecordLocator | None = None,
) -> Any:
    """Each batch parsed, decoded and laid out (but for the per-record fields); with
    ``unbatcher`` (the batches are split into records next), made ready for ``unbatch``
    in the same function (:meth:`~recordkit.read._per_record.RaggedUnbatcher.encode`):
    one function, not a map of its own, since TensorFlow optimizes and instantiates each
    function of a pipeline again for every iterator."""

    decode, locate, key = _decoder(layout, options, locate)
    mapped = _mapped_batches(batches, decode, options, unbatcher, draws_given, key, locate)
    # The function reaches its locator through a token only: the pipeline holds it, and
    # an iterator holds its pipeline; the locators' table holds it weakly.
    mapped._recordkit_locator = locate
    return mapped


def _mapped_batches(
    batches: Any,
    decode: Callable[..., dict[str, Any]],
    options: PipelineOptions,
    unbatcher: RaggedUnbatcher | None,
    draws_given: bool,
    key: Hashable | None,
    locate: RecordLocator,
) -> Any:
    """:func:`_decode_batches`' parallel map of ``decode``; with a ``key`` (and the batches
    neither split into records next nor given their draws), traced once for that key and
    reused by later reads of it, each with its own locator's token."""
    if key is not None and unbatcher is None and not draws_given:
        return parallel_map(
            batches,
            decode,
            deterministic=options.deterministic,
            calls=options.num_parallel_calls,
            reuse=key,
            token=locate.token_tensor(),
        )

    def parse(*args: Any, **draws: Any) -> dict[str, Any]:
        return decode(*args, **draws) if unbatcher is None else unbatcher.encode(decode(*args, **draws))

    if draws_given:
        return parallel_map(
            batches,
            lambda serialized, draws: parse(serialized, draws=draws),
            deterministic=options.deterministic,
            calls=options.num_parallel_calls,
        )
    if options.random_crop:
        # Each batch's position keys its random draws: the same seed, the same windows.
        return parallel_map(
            batches.enumerate(),
            lambda position, serialized: parse(serialized, position),
            deterministic=options.deterministic,
            calls=options.num_parallel_calls,
        )
    return parallel_map(batches, parse, deterministic=options.deterministic, calls=options.num_parallel_calls)


def _known_size(
    shards: Sequence[Shard],
    record_shard: tuple[int, int] | None,
    repeat: bool | int,
    batch_size: int | None,
    drop_remainder: bool,
    on_corrupt: OnCorrupt,
    skip: int = 0,
) -> int | None:
    """How many elements the dataset yields, when the manifest says (and nothing is skipped)."""
    selected = selected_records(shards)  # a whole split's from the manifest's columns
    if on_corrupt != "raise" or repeat is True or selected is None:
        return None
    records = selected * (1 if repeat is False else int(repeat))
    if record_shard is not None:  # applied after repeat
        count, index = record_shard
        records = len(range(index, records, count))
    records = max(records - skip, 0)
    if batch_size is None:
        return records
    return records // batch_size if drop_remainder else -(-records // batch_size)


def _decoder(
    layout: DecodeLayout, options: PipelineOptions, locate: RecordLocator | None = None
) -> tuple[Callable[..., dict[str, Any]], RecordLocator, Hashable | None]:
    """The function from a batch of serialized records (and, for the random crop, the
    batch's position in the dataset) to the decoded, laid out batch; the per-record
    fields hold their wire values, and with a random crop ``DRAWS`` each record's draws.

    With it, the locator its check names a failing record with (the pipeline must hold
    it: the function holds its token alone), and what the function depends on besides
    that locator, when that is the stored fields' layout alone (no default, nothing
    padded, fitted, cropped or decoded record by record: :func:`~recordkit.read._parse.trace_key`),
    for a later read of the same key to reuse its trace; else None. The function then
    holds nothing of this read (no shard, no dataset), so a kept trace keeps no read alive."""
    dataset = layout.dataset
    names = [f.name for f in dataset.fields]
    undecoded = {f.name for f in (*layout.per_record, *layout.per_record_values)}
    padded = layout.padded - set(layout.sizes) if layout.pads_in_batch else frozenset()
    # A record holding a wrong number of values is found in the split's shards and named.
    if locate is None:
        locate = RecordLocator(dataset.shards, dataset.compression)
    stored = dataset.stored_fields.fields
    parse = make_padded_parser(stored, padded, undecoded, locate)
    defaults = {
        field.name: (make_padded_parser((field,), ()), dataset.defaults[field.name])
        for field in dataset.fields
        if field.name in dataset.defaulted
    }
    simple = not (undecoded or padded or defaults or layout.sizes or options.random_crop)
    key = trace_key(stored) if simple and names == [f.name for f in stored] else None
    if key is not None:
        key = (tuple(names), key)

    def decode_simple(serialized: Any) -> dict[str, Any]:
        parsed = parse(serialized)
        out = {}  # in field order, as _full_decoder's
        for name in names:
            out[name] = parsed[name]
            if name + PRESENT_SUFFIX in parsed:
                out[name + PRESENT_SUFFIX] = parsed[name + PRESENT_SUFFIX]
        return out

    if key is not None:  # holds parse and names alone
        return decode_simple, locate, key
    return _full_decoder(layout, options, parse, defaults, names, undecoded, padded), locate, None


def _full_decoder(
    layout: DecodeLayout,
    options: PipelineOptions,
    parse: Callable[[Any], dict[str, Any]],
    defaults: dict[str, tuple[Callable[[Any], dict[str, Any]], Any]],
    names: list[str],
    undecoded: set[str],
    padded: frozenset[str] | set[str],
) -> Callable[..., dict[str, Any]]:
    """:func:`_decoder`'s function for any layout (defaults, padding, fits, crops)."""
    dataset = layout.dataset
    fit = layout.geometry.fit

    def decode(serialized: Any, position: Any = None, draws: Any = None) -> dict[str, Any]:
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
        if options.random_crop and draws is not None:  # each record's own, given with it
            if undecoded:
                out[DRAWS] = draws
        elif options.random_crop:
            key = tf.stack([tf.constant(layout.crop_seed, tf.int64), tf.cast(position, tf.int64)])
            # One pair of draws per record, shared by its fields: an image and its mask
            # of one size get one window.
            # The crop's place first (the draws of the releases before the other fits),
            # then the random resized crop's area and ratio and the flip, keyed apart.
            count = tf.shape(serialized)[0]
            places = tf.random.stateless_uniform(tf.stack([count, 2]), seed=key)
            more = tf.random.experimental.stateless_fold_in(key, 1)
            others = tf.random.stateless_uniform(tf.stack([count, DRAW_COUNT - 2]), seed=more)
            draws = tf.concat([places, others], axis=1)
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
