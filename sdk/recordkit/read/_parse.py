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

The work is split in two layers so that standalone code can be generated from it
(:func:`recordkit.generate_parser_code`):

* :func:`field_plan` turns a bound field into a *plan*: plain data (keys, dtypes,
  shapes, flags) that can be written out as a Python literal;
* the runtime functions below the line (:func:`parse_feature`, :func:`spec_from_plans`,
  :func:`decode_field`, :func:`scatter_rows`) use only TensorFlow and a plan. The code
  generator copies their source verbatim into the generated module, so the generated
  parser and this one are the same code.

TensorFlow is imported only when a parser is built or run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Hashable, Sequence
from typing import Any

from recordkit.codec._capabilities import padded_decode
from recordkit.codec._codec import Codec
from recordkit.read._dense import SHAPE_SUFFIX
from recordkit.read._traced import traced_as_written
from recordkit.read._wire_checks import RecordLocator, checked_parse, wire_checks
from recordkit.schema._bound import BoundField
from recordkit.schema._schema import BoundSchema, Schema, SchemaLike

__all__ = [
    "PRESENT_SUFFIX",
    "RUNTIME_FUNCTIONS",
    "FieldPlan",
    "decode_field",
    "decode_key",
    "feature_spec",
    "field_plan",
    "make_padded_parser",
    "make_parser",
    "parse_feature",
    "parsed_decoder",
    "scatter_rows",
    "spec_from_plans",
    "trace_key",
    "wire_values",
]

#: Suffix of the boolean output that says whether an optional field was present.
PRESENT_SUFFIX = "/present"

#: A field's plan: ``{"name", "sequence", "presence_key", "features": [{"name", "key",
#: "dtype", "shape", "lengths_key"}]}``, plain data only (see :func:`field_plan`).
FieldPlan = dict[str, Any]


def field_plan(field: BoundField) -> FieldPlan:
    """The plain-data description of how ``field`` is parsed (keys, dtypes, shapes).

    A feature read from column keys has ``"columns"`` (a number among them is a column
    the records do not store, that constant in every row), and one that is not stored a
    ``"constant"`` (layouts of TFRecords recordkit did not write).
    """
    features = []
    for keyed in field.features:
        feature: dict[str, Any] = {
            "name": keyed.feature.name,
            "key": keyed.key,
            "dtype": keyed.feature.kind.tf_dtype_name,
            "shape": list(keyed.feature.shape),
            "lengths_key": keyed.lengths_key,
        }
        if keyed.columns:
            feature["columns"] = list(keyed.columns)
        if keyed.constant is not None:
            feature["constant"] = keyed.constant
        features.append(feature)
    return {
        "name": field.name,
        "sequence": field.spec.sequence,
        "presence_key": field.presence_key,
        "features": features,
    }


def _bound(schema: SchemaLike | BoundSchema) -> BoundSchema:
    if isinstance(schema, BoundSchema):
        return schema
    if not isinstance(schema, Schema):
        schema = Schema.load(schema)
    return schema.bind()


def _names(fields: str | Sequence[str] | None) -> list[str] | None:
    if fields is None:
        return None
    return [fields] if isinstance(fields, str) else list(fields)


def feature_spec(
    schema: SchemaLike | BoundSchema, fields: str | Sequence[str] | None = None
) -> dict[str, Any]:
    """The ``tf.io.parse_example`` spec of ``fields`` (all when None).

    Only the Example keys of the named fields are in it, so ``tf.io.parse_example``
    leaves every other key of the records alone.
    """
    bound = _bound(schema)
    return spec_from_plans([field_plan(f) for f in bound.select(_names(fields))])


def make_parser(
    schema: SchemaLike | BoundSchema, fields: str | Sequence[str] | None = None
) -> Callable[[Any], dict[str, Any]]:
    """A function from a batch of serialized Examples (a ``[B]`` string tensor) to a
    dict of decoded fields, parsing and decoding only ``fields`` (all when None).

    Use it after ``.batch()`` in a tf.data pipeline::

        ds = tf.data.TFRecordDataset(files).batch(64).map(rk.make_parser(schema))

    The function is marked for ``tf.data`` to trace as written, without AutoGraph, as
    ``load_dataset``'s own maps are (:mod:`recordkit.read._traced`): its parse and the
    codecs' batched decodes hold no Python control flow on tensors, and converting them
    cost about 6 s of CPU the first time a process traced a parser of every built-in
    codec (1.3 s to trace it as written).
    """
    return traced_as_written(make_padded_parser(_bound(schema).select(_names(fields)), ()))


def make_padded_parser(
    fields: Sequence[BoundField],
    padded: Collection[str],
    undecoded: Collection[str] = (),
    locate: RecordLocator | None = None,
) -> Callable[[Any], dict[str, Any]]:
    """:func:`make_parser` for ``fields``, where each plain field (neither optional nor
    a sequence) named in ``padded`` whose codec pads as it decodes
    (:meth:`~recordkit.PadsAsDecoded.decode_tf_padded`) comes back dense, padded to the batch's
    largest, with its records' true shapes under ``"<field>/shape"``. Other fields
    decode as :func:`make_parser` decodes them (the reader pads those afterwards), but
    for those named in ``undecoded``: their wire values by feature name (the reader
    decodes them record by record).

    Each record's values of the fields of a fixed shape are counted before they are
    decoded (:mod:`recordkit.read._wire_checks`): a record holding another number (or
    size) of values stops the parse with an error naming its field, and, found by
    ``locate`` in the dataset's shards, its file, offset and record."""
    spec, decode = parsed_decoder(fields, padded, undecoded)
    parse_checked = checked_parse(spec, wire_checks(fields), locate)

    def parse(serialized: Any) -> dict[str, Any]:
        return decode(parse_checked(serialized))

    return parse


def trace_key(fields: Sequence[BoundField]) -> Hashable | None:
    """What the traced parse of :func:`make_padded_parser` (nothing padded or left
    undecoded) of ``fields`` depends on besides its read's locator: their
    :func:`decode_key` and their checks, so that a read of the same key may reuse
    another's trace (:func:`~recordkit.read._traced.parallel_map`). None when a field's
    decode gives no key: such a read is traced anew."""
    key = decode_key(fields)
    return None if key is None else (*key, repr(wire_checks(fields)))


def decode_key(
    fields: Sequence[BoundField], detail: Callable[[BoundField], Hashable] = lambda field: None
) -> tuple[Hashable, ...] | None:
    """Each field's parse plan and its codec's decode (a function and its constants),
    with ``detail(field)``: all a traced decode of ``fields`` depends on when every codec
    decodes with its default ``decode_tf``, which runs the
    :meth:`~recordkit.Codec.decode_tf_source` it gives, a module-level function of plain
    constants. None otherwise (a codec that overrides ``decode_tf`` may keep other state,
    one with no decode source is traced from its method)."""
    key: list[Hashable] = []
    for field in fields:
        if type(field.codec).decode_tf is not Codec.decode_tf:
            return None
        source = field.codec.decode_tf_source()
        if source is None:
            return None
        plan = json.dumps(field_plan(field), sort_keys=True, default=repr)
        constants = repr(sorted(source.constants.items()))
        key.append((plan, source.function, constants, source.helpers, detail(field)))
    return tuple(key)


def parsed_decoder(
    fields: Sequence[BoundField], padded: Collection[str] = (), undecoded: Collection[str] = ()
) -> tuple[dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]]:
    """The ``tf.io.parse_example`` spec of ``fields`` and the function from what the parse
    gives (or the same wire values found otherwise: a shard read whole,
    :mod:`recordkit.read._whole_shards`) to the decoded fields, as
    :func:`make_padded_parser` decodes them."""
    plans = [(field_plan(field), field.codec) for field in fields]
    spec = spec_from_plans([plan for plan, _ in plans])

    def decode(parsed: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for plan, codec in plans:
            name = plan["name"]
            if name in undecoded:
                out[name] = wire_values(plan, parsed)
                continue
            if name in padded and plan["presence_key"] is None and not plan["sequence"]:
                dense = padded_decode(codec, wire_values(plan, parsed))
                if dense is not None:
                    _put_padded(out, name, *dense)
                    continue
            out.update(decode_field(plan, parsed, codec.decode_tf))
        return out

    return spec, decode


def _put_padded(out: dict[str, Any], name: str, padded: Any, shapes: Any) -> None:
    """A codec's :meth:`~recordkit.PadsAsDecoded.decode_tf_padded` result under the keys that
    :func:`~recordkit.read._dense.pad_into` gives: ``"<field>/shape"``, or for a dict of
    values ``"<field>/<key>/shape"`` for each."""
    out[name] = padded
    if isinstance(padded, dict):
        for key, shape in shapes.items():
            out[f"{name}/{key}{SHAPE_SUFFIX}"] = shape
    else:
        out[name + SHAPE_SUFFIX] = shapes


# -- runtime -----------------------------------------------------------------------------
# Everything below uses only TensorFlow, plain data and PRESENT_SUFFIX: the code generator
# copies these functions into standalone parser modules. Keep it that way.


def parse_feature(plan: FieldPlan, feature: dict[str, Any]) -> Any:
    """The ``tf.io`` parse spec entry of one wire feature of a field."""
    import tensorflow as tf

    dtype = tf.as_dtype(feature["dtype"])
    shape = list(feature["shape"])
    fixed = None not in shape
    sequence = plan["sequence"]
    optional = plan["presence_key"] is not None
    if fixed and not sequence and not optional:
        return tf.io.FixedLenFeature(shape, dtype)
    partitions: list[Any] = []
    if sequence and feature["lengths_key"] is not None:
        partitions.append(tf.io.RaggedFeature.RowLengths(feature["lengths_key"]))
    if sequence and fixed:
        inner = shape
    elif optional and fixed:
        inner = []  # flat: reshaped to the fixed shape once absent rows are dropped
    else:
        inner = shape[1:]
    partitions += [tf.io.RaggedFeature.UniformRowLength(int(dim)) for dim in inner]
    return tf.io.RaggedFeature(
        dtype=dtype, value_key=feature["key"], partitions=partitions, row_splits_dtype=tf.int64
    )


def spec_from_plans(plans: Sequence[FieldPlan]) -> dict[str, Any]:
    """The ``tf.io.parse_example`` spec of the fields ``plans`` describe."""
    import tensorflow as tf

    spec: dict[str, Any] = {}
    for plan in plans:
        for feature in plan["features"]:
            if feature.get("constant") is not None:
                continue
            if feature.get("columns"):
                for key in feature["columns"]:
                    if isinstance(key, str):  # a number is a column the records do not store
                        column = dict(feature, key=key, shape=feature["shape"][:-1])
                        spec[key] = parse_feature(plan, column)
            else:
                spec[feature["key"]] = parse_feature(plan, feature)
        if plan["presence_key"] is not None:
            spec[plan["presence_key"]] = tf.io.FixedLenFeature([], tf.int64, default_value=0)
    return spec


def decode_field(plan: FieldPlan, parsed: dict[str, Any], decode: Callable[[Any], Any]) -> dict[str, Any]:
    """Decode one field of a parsed batch with the codec's batched ``decode``.

    Returns ``{name: decoded}``, plus ``{name + "/present": bool [B]}`` for an
    optional field.
    """
    import tensorflow as tf

    name = plan["name"]
    features = plan["features"]
    wire = wire_values(plan, parsed)
    out: dict[str, Any] = {}
    present_rows = None
    batch = None
    if plan["presence_key"] is not None:
        present = tf.cast(parsed[plan["presence_key"]], tf.bool)
        out[name + PRESENT_SUFFIX] = present
        batch = tf.shape(present, out_type=tf.int64)[0]
        present_rows = tf.where(present)[:, 0]
        wire = {key: tf.gather(value, present_rows) for key, value in wire.items()}
        if not plan["sequence"]:
            for f in features:
                if None not in f["shape"]:
                    wire[f["name"]] = tf.reshape(wire[f["name"]].flat_values, [-1, *f["shape"]])
    if plan["sequence"]:
        element_counts = wire[features[0]["name"]].row_lengths()
        flat = {}
        for f in features:
            if None not in f["shape"]:
                flat[f["name"]] = tf.reshape(wire[f["name"]].flat_values, [-1, *f["shape"]])
            else:
                flat[f["name"]] = wire[f["name"]].values
        decoded = tf.nest.map_structure(
            lambda t: tf.RaggedTensor.from_row_lengths(t, element_counts), decode(flat)
        )
    else:
        decoded = decode(wire)
    if present_rows is not None:
        decoded = tf.nest.map_structure(lambda t: scatter_rows(t, present_rows, batch), decoded)
    out[name] = decoded
    return out


def wire_values(plan: FieldPlan, parsed: dict[str, Any]) -> dict[str, Any]:
    """The parsed values of a field's wire features, by feature name: each from its
    key, or stacked from its column keys, or filled with its constant."""
    import tensorflow as tf

    optional = plan["presence_key"] is not None
    wire: dict[str, Any] = {}
    batch = None
    for f in plan["features"]:
        if f.get("constant") is not None:
            continue
        if f.get("columns"):
            stored = [parsed[key] for key in f["columns"] if isinstance(key, str)]
            first = stored[0]
            columns = [
                parsed[key]
                if isinstance(key, str)  # else a constant column, shaped like a stored one
                else (
                    first.with_flat_values(
                        tf.fill(tf.shape(first.flat_values), tf.constant(key, tf.as_dtype(f["dtype"])))
                    )
                    if isinstance(first, tf.RaggedTensor)
                    else tf.fill(tf.shape(first), tf.constant(key, tf.as_dtype(f["dtype"])))
                )
                for key in f["columns"]
            ]
            if isinstance(first, tf.RaggedTensor):
                checks = [
                    tf.debugging.assert_equal(
                        column.row_splits,
                        first.row_splits,
                        message=f"column keys {f['columns']} hold different numbers of values",
                    )
                    for column in stored[1:]
                ]
                with tf.control_dependencies(checks):
                    stacked = tf.stack([column.values for column in columns], axis=-1)
                value = tf.RaggedTensor.from_row_splits(stacked, first.row_splits)
            else:
                value = tf.stack(columns, axis=-1)
        else:
            value = parsed[f["key"]]
        wire[f["name"]] = value
    for f in plan["features"]:
        if f.get("constant") is None:
            continue
        if batch is None:  # a constant fills as many rows as the stored features hold
            first = wire[next(iter(wire))]
            batch = (
                first.nrows() if isinstance(first, tf.RaggedTensor) else tf.shape(first, out_type=tf.int64)[0]
            )
        shape = [int(dim) for dim in f["shape"]]
        constant = tf.constant(f["constant"], tf.as_dtype(f["dtype"]))
        size = 1
        for dim in shape:
            size *= dim
        if optional:  # parsed optional features are flat ragged rows
            wire[f["name"]] = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([batch, size]), constant))
        else:
            wire[f["name"]] = tf.fill(
                tf.concat([tf.reshape(batch, [1]), tf.constant(shape, tf.int64)], 0), constant
            )
    return {f["name"]: wire[f["name"]] for f in plan["features"]}


def scatter_rows(values: Any, rows: Any, batch: Any) -> Any:
    """Place ``values`` (one row per present record) at ``rows`` of a batch of ``batch``."""
    import tensorflow as tf

    if isinstance(values, tf.RaggedTensor):
        lengths = tf.scatter_nd(rows[:, None], values.row_lengths(), [batch])
        return tf.RaggedTensor.from_row_lengths(values.values, lengths)
    # A gather from the values plus one zero row copies bits exactly; scatter_nd would add
    # into zeros, and TensorFlow flushes denormal floats to zero in arithmetic.
    present = tf.shape(values, out_type=tf.int64)[0]
    filler = tf.zeros(tf.concat([[1], tf.shape(values, out_type=tf.int64)[1:]], axis=0), values.dtype)
    slot = tf.tensor_scatter_nd_update(tf.fill([batch], present), rows[:, None], tf.range(present))
    return tf.gather(tf.concat([values, filler], axis=0), slot)


#: The runtime functions, in the order the code generator writes them out.
RUNTIME_FUNCTIONS: tuple[Callable[..., Any], ...] = (
    parse_feature,
    spec_from_plans,
    decode_field,
    wire_values,
    scatter_rows,
)
