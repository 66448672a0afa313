"""Parsers generated from a schema: serialized Examples to decoded tensors, batched.

The parse spec comes from each codec's wire spec through the field's keys:

* a fixed feature of a plain field: ``tf.io.FixedLenFeature(shape)``, dense ``[B, *shape]``;
* a variable feature: ``tf.io.RaggedFeature`` with one ``UniformRowLength`` partition
  per inner dimension, ragged ``[B, (n), *inner]``;
* a sequence field: an extra ragged dimension after the batch (``RowLengths`` from the
  feature's lengths key when its elements vary in size); the codec decodes the flat
  elements as one batch and the result is split back into rows;
* an optional field: its features are parsed ragged (absent records hold none), only
  present rows are decoded, and the output is scattered back into the batch (absent
  rows hold zeros/empty) next to an explicit ``"<field>/present"`` boolean.

TensorFlow is imported only when a parser is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from recordkit._schema import BoundField, BoundSchema, KeyedFeature, Schema
from recordkit._wire import WireFeature

__all__ = ["PRESENT_SUFFIX", "feature_spec", "make_parser"]

#: Suffix of the boolean output that says whether an optional field was present.
PRESENT_SUFFIX = "/present"


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _dtype(feature: WireFeature) -> Any:
    return getattr(_tf(), feature.kind.tf_dtype_name)


def _parse_feature(field: BoundField, keyed: KeyedFeature) -> Any:
    tf = _tf()
    feature = keyed.feature
    dtype = _dtype(feature)
    if not field.spec.sequence and not field.spec.optional and feature.is_fixed:
        return tf.io.FixedLenFeature([int(d) for d in feature.shape], dtype)  # type: ignore[arg-type]
    partitions: list[Any] = []
    if field.spec.sequence and keyed.lengths_key is not None:
        partitions.append(tf.io.RaggedFeature.RowLengths(keyed.lengths_key))
    inner = feature.shape if (field.spec.sequence and feature.is_fixed) else feature.inner_shape
    if field.spec.optional and not field.spec.sequence and feature.is_fixed:
        inner = ()  # flat: reshaped to the fixed shape after absent rows are dropped
    partitions += [tf.io.RaggedFeature.UniformRowLength(int(d)) for d in inner]  # type: ignore[arg-type]
    return tf.io.RaggedFeature(dtype=dtype, value_key=keyed.key, partitions=partitions,
                               row_splits_dtype=tf.int64)


def feature_spec(
    schema: Schema | BoundSchema, fields: Sequence[str] | None = None
) -> dict[str, Any]:
    """The ``tf.io.parse_example`` spec of ``fields`` (all when None)."""
    bound = schema.bind() if isinstance(schema, Schema) else schema
    tf = _tf()
    spec: dict[str, Any] = {}
    for field in bound.select(fields):
        for keyed in field.features:
            spec[keyed.key] = _parse_feature(field, keyed)
        if field.presence_key is not None:
            spec[field.presence_key] = tf.io.FixedLenFeature([], tf.int64, default_value=0)
    return spec


def _decode_field(field: BoundField, parsed: dict[str, Any]) -> dict[str, Any]:
    tf = _tf()
    wire = {k.feature.name: parsed[k.key] for k in field.features}
    out: dict[str, Any] = {}
    present_idx = None
    batch = None
    if field.presence_key is not None:
        present = tf.cast(parsed[field.presence_key], tf.bool)
        out[field.name + PRESENT_SUFFIX] = present
        batch = tf.shape(present, out_type=tf.int64)[0]
        present_idx = tf.where(present)[:, 0]
        wire = {name: tf.gather(value, present_idx) for name, value in wire.items()}
        if not field.spec.sequence:
            wire = {
                k.feature.name: (
                    tf.reshape(wire[k.feature.name].flat_values, [-1, *k.feature.shape])
                    if k.feature.is_fixed else wire[k.feature.name]
                )
                for k in field.features
            }
    if field.spec.sequence:
        first = wire[field.features[0].feature.name]
        element_counts = first.row_lengths()
        flat = {
            k.feature.name: (
                tf.reshape(wire[k.feature.name].flat_values, [-1, *k.feature.shape])
                if k.feature.is_fixed else wire[k.feature.name].values
            )
            for k in field.features
        }
        decoded = field.codec.decode_tf(flat)
        decoded = tf.nest.map_structure(
            lambda t: tf.RaggedTensor.from_row_lengths(t, element_counts), decoded
        )
    else:
        decoded = field.codec.decode_tf(wire)
    if present_idx is not None:
        decoded = tf.nest.map_structure(lambda t: _scatter_rows(t, present_idx, batch), decoded)
    out[field.name] = decoded
    return out


def _scatter_rows(values: Any, rows: Any, batch: Any) -> Any:
    """Place ``values`` (one row per present record) at ``rows`` of a batch of ``batch``."""
    tf = _tf()
    if isinstance(values, tf.RaggedTensor):
        lengths = tf.scatter_nd(rows[:, None], values.row_lengths(), [batch])
        return tf.RaggedTensor.from_row_lengths(values.values, lengths)
    # A gather from the values plus one zero row copies bits exactly; scatter_nd would add
    # into zeros, and TensorFlow flushes denormal floats to zero in arithmetic.
    filler = tf.zeros(tf.concat([[1], tf.shape(values, out_type=tf.int64)[1:]], axis=0), values.dtype)
    padded = tf.concat([values, filler], axis=0)
    slot = tf.fill([batch], tf.shape(values, out_type=tf.int64)[0])
    slot = tf.tensor_scatter_nd_update(slot, rows[:, None], tf.range(tf.shape(rows, out_type=tf.int64)[0]))
    return tf.gather(padded, slot)


def make_parser(
    schema: Schema | BoundSchema, fields: Sequence[str] | None = None
) -> Callable[[Any], dict[str, Any]]:
    """A function from a batch of serialized Examples (a ``[B]`` string tensor) to a
    dict of decoded fields, parsing and decoding only ``fields`` (all when None).

    Use it after ``.batch()`` in a tf.data pipeline::

        ds = tf.data.TFRecordDataset(files).batch(64).map(rk.make_parser(schema))
    """
    bound = schema.bind() if isinstance(schema, Schema) else schema
    selected = bound.select(fields)
    spec = feature_spec(bound, [f.name for f in selected])

    def parse(serialized: Any) -> dict[str, Any]:
        tf = _tf()
        parsed = tf.io.parse_example(serialized, spec)
        out: dict[str, Any] = {}
        for field in selected:
            out.update(_decode_field(field, parsed))
        return out

    return parse
