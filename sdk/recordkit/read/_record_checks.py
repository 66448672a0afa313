"""Each record's value counts checked where a ``tf.data`` read parses records one at a time.

The batch parse checks a batch's records before decoding them
(:mod:`recordkit.read._wire_checks`). A read that parses each record alone
(:mod:`recordkit.read._record_parse`: pictures padded or fitted, every other field of
fixed wire shapes; :meth:`recordkit.Dataset.tf` and the ``tf_epochs`` readers alike) would
otherwise give TensorFlow's own error for a record whose field of a fixed shape holds
another number of values (``Key: embedding. Can't parse serialized Example``, or
``DecodeRaw requires input size...``), naming no file and no record. Here the same checks
run on the one record, in the graph, a few ops a checked key:

* each numeric key of a fixed shape is parsed ragged (one op, as the fixed parse), its
  values counted and reshaped to the fixed shape (no copy);
* each bytes key whose codec gives its values' one size (:class:`~recordkit.FixedWireBytes`)
  likewise parsed ragged and counted (parsed fixed, a record holding two values, or
  none, failed ``tf.io.parse_example`` itself), then its values' lengths measured;
* all the counts and sizes are joined in one vector and compared at once with what they
  should be (a concat, a comparison and a reduction for all the keys: a comparison a key
  made the check cost about twice as much per record).

Only a failing record calls Python: it is found in the dataset's shards
(:class:`~recordkit.read._wire_checks.RecordLocator`, or the locator the reader gives: a
mixture's, over its sources), and the read stops with the batch parse's error, naming
the file, the record's offset in it, its number in its split and the field::

    recordkit DecodeError: shard train-00001.tfrecord, offset 532, record 7,
    field 'embedding': Example key 'embedding' holds 15 values, where its field's fixed
    shape holds 16

TensorFlow is imported when a parse is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recordkit.read._wire_checks import CHECK_BRANCH, RecordLocator, WireCheck, record_error

__all__ = ["checked_record_parse", "describe_record"]

_UNNAMED = "a record holds other values than its fields' shapes"


def describe_record(record: bytes, checks: Sequence[WireCheck], locate: RecordLocator | None) -> str:
    """The error of the first check the serialized ``record`` fails, as the batch parse
    words it (``""``: it passes them all)."""
    try:
        return record_error(record, checks, locate) or ""
    except ValueError:
        return "recordkit CorruptRecordError: a record is not a tf.train.Example"


def checked_record_parse(
    spec: dict[str, Any],
    checks: Sequence[WireCheck],
    locate: RecordLocator | None,
    *,
    batch_of_one: bool,
) -> Callable[[Any], dict[str, Any]]:
    """``tf.io.parse_example`` of one serialized record (a scalar string tensor) by
    ``spec``, with the ``checks`` (see the module docs); with ``batch_of_one``, the record
    is parsed as a batch of one (the values have a first dimension of 1). Each checked
    key comes back dense, as the fixed parse gives it."""
    import tensorflow as tf

    checks = [check for check in checks if check.key in spec]
    # Every checked key parsed ragged: a fixed parse of a key holding another number of
    # values fails in ``tf.io.parse_example`` itself, naming neither file nor record (a
    # sized bytes key too: its values' sizes are measured after their count).
    counted = {check.key: check for check in checks}
    ragged_spec = dict(spec)
    for key in counted:
        ragged_spec[key] = tf.io.RaggedFeature(
            dtype=spec[key].dtype, value_key=key, partitions=[], row_splits_dtype=tf.int32
        )
    # Every check's measures in one vector, compared at once with what they should be:
    # a checked key of a batch of one gives its row splits ([0, count]), one of a record
    # parsed as itself its values' shape ([count]); a sized bytes key then its values'
    # smallest and largest length (two numbers whatever the count, so that the vector
    # keeps its length when the count is wrong). (Two ops for all the keys, where a
    # comparison a key cost two or three.)
    wanted: list[int] = []
    for check in checks:
        wanted.extend([0, check.count] if batch_of_one else [check.count])
        if check.size is not None:
            wanted.extend([check.size, check.size])

    def describe(serialized: Any) -> bytes:
        # A scalar string comes to a ``numpy_function`` of a ``tf.data`` map as ``bytes``:
        # ``np.asarray`` would make it a fixed-width ``S`` array, which drops its trailing
        # NUL bytes (a record ending in a field's value 0 then no longer parsed).
        if isinstance(serialized, bytes):
            record = serialized
        else:
            record = bytes(np.asarray(serialized, dtype=object).reshape(-1)[0])
        message = describe_record(record, checks, locate)
        return (message or f"recordkit DecodeError: {_UNNAMED}").encode()

    def parse(serialized: Any) -> dict[str, Any]:
        record = tf.expand_dims(serialized, 0) if batch_of_one else serialized
        parsed = tf.io.parse_example(record, ragged_spec)
        if not checks:
            return dict(parsed)
        passed = tf.reduce_all(tf.equal(tf.concat([_measure(parsed[c.key], c) for c in checks], 0), wanted))

        def failed() -> Any:
            return tf.numpy_function(describe, [serialized], tf.string, stateful=False)

        # A branch a record, taken only by a failing one; named as the batch parse's, so that a
        # graph's reader can tell it.
        message = tf.cond(passed, lambda: tf.constant(""), failed, name=CHECK_BRANCH)
        with tf.control_dependencies([tf.debugging.Assert(passed, [message], summarize=1)]):
            out = {}
            for key, value in parsed.items():
                fixed = counted.get(key)
                if fixed is None:
                    out[key] = tf.identity(value)
                else:
                    out[key] = _fixed(value, fixed.shape, batch_of_one)
        return out

    return parse


def _measure(value: Any, check: WireCheck) -> Any:
    """What ``check`` compares of its key's parsed ``value``, as an ``int32`` vector (see
    :func:`checked_record_parse`)."""
    import tensorflow as tf

    ragged = isinstance(value, tf.RaggedTensor)
    count = value.row_splits if ragged else tf.shape(value, out_type=tf.int32)
    if check.size is None:
        return count
    lengths = tf.strings.length(value.flat_values if ragged else value)
    return tf.concat([count, [tf.reduce_min(lengths), tf.reduce_max(lengths)]], 0)


def _fixed(value: Any, shape: tuple[int, ...], batch_of_one: bool) -> Any:
    """A checked key's values, counted right, given their fixed shape: a record's one
    value taken, a vector's shape set, other shapes reshaped (no copy); a batch of one's
    reshaped to ``[1, *shape]``. (A record parsed as itself makes no ``Reshape``: the
    per-record parse of pictures stays the tutorials' pipeline.)"""
    import tensorflow as tf

    if batch_of_one:
        return tf.reshape(value.flat_values, [1, *shape])
    if not shape:
        return value[0]
    if len(shape) == 1:
        return tf.ensure_shape(value, shape)
    return tf.reshape(value, shape)
