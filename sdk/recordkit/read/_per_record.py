"""The per-record step of a ``tf.data`` read: the decoded batches split into records,
each record's pictures (and the values whose codec asks for it) decoded and fitted in a
parallel map, so that the pictures of a batch are decoded on every core, and the records
batched again as they were (one record's values: :mod:`recordkit.read._record_values`;
the pipeline: :mod:`recordkit.read._load_dataset`; how it
works: docs/architecture.md, "The tf.data pipeline").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recordkit.codec._capabilities import raster_kind
from recordkit.read._dense import SHAPE_SUFFIX, dense_record, pad_into, pad_ragged
from recordkit.read._layout import DecodeLayout, padding_values
from recordkit.read._options import PipelineOptions
from recordkit.read._record_values import RecordWire, decode_picture, decode_value
from recordkit.read._traced import parallel_map

__all__ = ["DRAWS", "RaggedUnbatcher", "dense_batches", "per_record", "record_decoder"]

#: The hidden component that carries each record's random crop draws from the batched
#: step to the per-record one (a slash: no field is named so).
DRAWS = "/draws"
#: The prefix of the hidden components that carry the length of each value that stays
#: ragged through ``padded_batch`` (``"/lengths/<field>"``, ``"/lengths/<field>/<key>"``).
_LENGTHS = "/lengths/"


def per_record(
    dataset: Any, unbatcher: RaggedUnbatcher, layout: DecodeLayout, options: PipelineOptions
) -> Any:
    """Split the batches into records, decode (and fit) each record's pictures in a
    parallel map, and batch the records again as they were.

    ``dataset`` comes from the batched decode with ``unbatcher``, which says how its
    values cross ``unbatch``. When every value of a record can be dense (every field
    padded, fitted or dense in its batch), each record is made dense in the map, with
    the true shapes of its padded values, and the batch is padded as it forms
    (``padded_batch``: one copy of each value); otherwise the records are batched ragged
    and padded after. Single records (no ``batch_size``) are made dense in the map,
    padded fields each to its own size.
    """

    batch_size = options.batch_size
    batched_spec = unbatcher.batched
    dense = batch_size is None or _dense_records(batched_spec, layout)
    decode = record_decoder(layout, options, batched_spec, dense)
    records = parallel_map(
        dataset.unbatch(),
        lambda record: decode(unbatcher.decode(record)),
        deterministic=options.deterministic,
        calls=options.num_parallel_calls,
    )
    if batch_size is None:
        return records
    if dense:
        return dense_batches(records, layout, options)
    return _ragged_batches(records, batched_spec, layout, options)


def dense_batches(
    records: Any,
    layout: DecodeLayout,
    options: PipelineOptions,
    then: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Any:
    """Records made dense by :func:`record_decoder` batched, each batch padded as it
    forms (``padded_batch``: one copy of each value), then finished (:func:`_finisher`)
    where a value stays ragged or the channel counts are checked, and ``then`` (in the
    same function: each function of a pipeline is instantiated again at every iterator)."""

    batches = records.padded_batch(
        options.batch_size,
        padding_values=padding_values(records.element_spec, layout),
        drop_remainder=options.drop_remainder,
    )
    finish = _finisher(layout, records.element_spec)
    if finish is None and then is None:
        return batches

    def finished(batch: dict[str, Any]) -> dict[str, Any]:
        batch = batch if finish is None else finish(batch)
        return batch if then is None else then(batch)

    return parallel_map(
        batches, finished, deterministic=options.deterministic, calls=options.num_parallel_calls
    )


class RaggedUnbatcher:
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


def _dense_records(batched_spec: dict[str, Any], layout: DecodeLayout) -> bool:
    """Whether the records can be batched by ``padded_batch``: each per-record picture
    padded or fitted, and each other field padded, dense in its batch, or ragged in one
    dimension only (:func:`_rebuilds_ragged`: padded with the batch, then rebuilt ragged
    from each record's length). A picture left ragged, or another field ragged in
    more dimensions, is batched ragged (:func:`_ragged_batches`)."""
    import tensorflow as tf

    for field in layout.dataset.fields:
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


def record_decoder(
    layout: DecodeLayout,
    options: PipelineOptions,
    batched_spec: dict[str, Any],
    dense: bool,
    *,
    parsed_as_batch_of_one: bool = False,
    batched_later: frozenset[str] = frozenset(),
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The per-record step: each picture decoded (and fitted), each of the other
    per-record values decoded; with ``dense``, every padded value made dense, with its
    true shape under ``"<field>/shape"``, and other values that are still ragged (but
    sequences) given their dense form. With ``parsed_as_batch_of_one``, the record's
    wire values are a batch of one already (:class:`~recordkit.read._record_values.RecordWire`).
    The fields named in ``batched_later`` are not in the record (they are decoded after
    batching)."""
    import tensorflow as tf

    skipped = {f.name for f in layout.per_record} | batched_later
    others = [f for f in layout.dataset.fields if f.name not in skipped and f.name not in layout.sizes]

    def wire_of(record: dict[str, Any], name: str) -> RecordWire:
        return RecordWire(one=record[name]) if parsed_as_batch_of_one else RecordWire(record[name])

    def decode(record: dict[str, Any]) -> dict[str, Any]:
        out = dict(record)
        draws = out.pop(DRAWS, None)
        transforms = {}
        for field in layout.per_record:
            wire = wire_of(record, field.name)
            picture, transforms[field.name] = decode_picture(field, wire, layout, draws, dense)
            out.update(picture)
        for name, image in layout.followers.items():  # boxes and keypoints follow their picture
            codec: Any = layout.dataset.bound[name].codec
            out[name] = codec.follow_tf(out[name], transforms[image](), layout.geometry)
        specs = dict(batched_spec)
        for field in layout.per_record_values:
            out[field.name], specs[field.name] = decode_value(field, wire_of(record, field.name))
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
    layout: DecodeLayout, record_spec: dict[str, Any]
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


def _channel_check(
    layout: DecodeLayout, record_spec: dict[str, Any]
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
        if raster_kind(f.codec) == "pixels"
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
    records: Any, batched_spec: dict[str, Any], layout: DecodeLayout, options: PipelineOptions
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
        and key != DRAWS
        and any(isinstance(leaf, tf.TensorSpec) for leaf in tf.nest.flatten(spec))
    }
    sized = [f.name for f in layout.per_record if f.name in layout.sizes]  # dense, of one size
    padded = [f.name for f in layout.dataset.fields if f.name in layout.padded and f.name not in layout.sizes]
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

    return parallel_map(batches, pad, deterministic=options.deterministic, calls=options.num_parallel_calls)
