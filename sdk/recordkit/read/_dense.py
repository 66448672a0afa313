"""Dense batches for :func:`recordkit.load_dataset`: ragged values padded.

Decoded batches hold values whose size varies from record to record as
``tf.RaggedTensor``. The reader's ``pad`` option turns them into dense tensors:

* :func:`pad_ragged` pads to the batch's largest with the field's pad value (its codec's
  :meth:`~recordkit.Codec.pad_value`: zeros, or the mask codec's ``ignore_index``; empty
  strings for text);
* :func:`dense_record` gives one record's ragged value (after ``unbatch``) its dense form;
* :func:`row_shapes` is each record's true shape, returned next to padded values.

Images brought to one size (``image_size``, ``image_fit``) are in
:mod:`recordkit.read._image_fit`, which pads through the same rectangles.

Images are the large values here, and ``RaggedTensor.to_tensor`` computes an output
index for every value (two bytes of arithmetic per pixel byte). An image is a
rectangle, though: every row of a record has the same width. So a ragged rank 2 value
whose records are rectangles is split into one flat block per record
(:func:`record_blocks`), each block reshaped, padded by concatenation (whole rows
copied) or fitted on its own, in a ``tf.while_loop`` whose iterations run in parallel,
and stacked once. Other ragged values, and small ones, where the loop's per-record cost
would show, keep ``to_tensor``; both paths give the same tensors.

TensorFlow is imported by the functions that run in the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "LOOP_MIN_VALUES",
    "OFFSET_SUFFIX",
    "SHAPE_SUFFIX",
    "dense_record",
    "filled",
    "pad_constant",
    "pad_into",
    "pad_ragged",
    "record_blocks",
    "rectangles",
    "row_shapes",
]

#: Suffix of the output that holds each record's true shape when a field is padded,
#: resized, cropped: ``"<field>/shape"``.
SHAPE_SUFFIX = "/shape"
#: Suffix of the output that holds where a cropped field's window starts in each
#: record: ``"<field>/offset"``, ``[top, left]`` (negative where padding comes first).
OFFSET_SUFFIX = "/offset"

#: A rectangular ragged batch with at least this many values is padded record by
#: record; a smaller one with ``to_tensor`` (cheaper below this size).
LOOP_MIN_VALUES = 1 << 15


def pad_into(out: dict[str, Any], path: str, value: Any, pad_value: int | float = 0) -> None:
    """Replace each ragged tensor under ``path`` with one padded with ``pad_value``, and
    add its row shapes."""
    import tensorflow as tf

    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, tf.RaggedTensor):
                out[f"{path}/{key}{SHAPE_SUFFIX}"] = row_shapes(item)
                value[key] = pad_ragged(item, pad_value)
        return
    if isinstance(value, tf.RaggedTensor):
        out[path + SHAPE_SUFFIX] = row_shapes(value)
        out[path] = pad_ragged(value, pad_value)


def pad_constant(dtype: Any, pad_value: int | float) -> Any:
    """``pad_value`` as a scalar of ``dtype`` (strings: the empty string; booleans: True
    for a nonzero value), or None for 0, which ``to_tensor`` pads with by default."""
    import tensorflow as tf

    if dtype == tf.string:
        return None
    if pad_value == 0:
        return None
    if dtype == tf.bool:
        return tf.constant(bool(pad_value))
    return tf.constant(pad_value, dtype)


def filled(shape: Any, dtype: Any, pad_value: int | float) -> Any:
    """A tensor of ``shape`` holding the pad value (zeros for 0, and for strings)."""
    import tensorflow as tf

    value = pad_constant(dtype, pad_value)
    return tf.zeros(shape, dtype) if value is None else tf.fill(shape, value)


def row_shapes(value: Any) -> Any:
    """Each row's shape, int64 ``[B, rank - 1]`` (ragged dimensions: the row's largest)."""
    import tensorflow as tf

    if not isinstance(value, tf.RaggedTensor):
        shape = tf.shape(value, out_type=tf.int64)
        return tf.tile(shape[None, 1:], tf.stack([shape[0], 1]))
    lengths_by_level = value.nested_row_lengths()
    rowids_by_level = value.nested_value_rowids()
    dims = []
    for axis in range(1, value.shape.rank):
        if axis <= value.ragged_rank:
            lengths = lengths_by_level[axis - 1]
            # One length per row of level axis - 1: take the largest of each parent's rows,
            # level by level, up to the records (level 0).
            for level in range(axis - 1, 0, -1):
                parents = tf.size(lengths_by_level[level - 1], out_type=tf.int64)  # rows of level - 1
                lengths = tf.math.unsorted_segment_max(lengths, rowids_by_level[level - 1], parents)
            dims.append(tf.maximum(lengths, 0))  # a parent without rows: 0, not the dtype's minimum
        else:
            size = tf.shape(value.flat_values, out_type=tf.int64)[axis - value.ragged_rank]
            dims.append(tf.fill(tf.reshape(value.nrows(), [1]), size))
    return tf.stack(dims, axis=1)


def rectangles(value: Any) -> tuple[Any, Any, Any]:
    """``(heights, widths, rectangular)`` of a ragged rank 2 batch ``[B, (H), (W), ...]``:
    each record's rows and row width, and whether all rows of each record are that wide
    (a record without rows has width 0)."""
    import tensorflow as tf

    heights = value.row_lengths()
    row_widths = value.values.row_lengths()
    widths = tf.maximum(tf.math.unsorted_segment_max(row_widths, value.value_rowids(), value.nrows()), 0)
    rectangular = tf.reduce_all(tf.equal(row_widths, tf.repeat(widths, heights)))
    return heights, widths, rectangular


def record_blocks(value: Any, heights: Any, widths: Any) -> Callable[[Any], Any]:
    """For a rectangular ragged rank 2 batch, the function from a record's index to that
    record, dense ``[h, w, ...]`` (one block of the flat values, reshaped)."""
    import tensorflow as tf

    flat = value.flat_values
    inner = tf.shape(flat, out_type=tf.int64)[1:]
    block_shape = tf.TensorShape([None]).concatenate(flat.shape[1:])
    blocks = tf.TensorArray(
        flat.dtype, size=tf.cast(value.nrows(), tf.int32), infer_shape=False, element_shape=block_shape
    ).split(flat, heights * widths)

    def record(index: Any) -> Any:
        return tf.reshape(
            blocks.read(index), tf.concat([tf.stack([heights[index], widths[index]]), inner], 0)
        )

    return record


def pad_ragged(value: Any, pad_value: int | float = 0) -> Any:
    """``value`` dense, padded with ``pad_value`` (strings: empty strings) to the batch's
    largest: what ``value.to_tensor(default_value=pad_value)`` gives, record by record
    for large rectangular batches."""
    import tensorflow as tf

    if not isinstance(value, tf.RaggedTensor):
        return value
    default = pad_constant(value.dtype, pad_value)

    def to_tensor() -> Any:
        return value.to_tensor(default_value=default)

    if value.ragged_rank == 1:
        return _pad_rows(value, to_tensor)
    if value.ragged_rank != 2:
        return to_tensor()
    heights, widths, rectangular = rectangles(value)
    flat = value.flat_values

    def by_record() -> Any:
        # Each record padded on the right by concatenation (whole rows copied: far cheaper
        # than tf.pad or to_tensor's per value indexing), then followed by the rows of
        # zeros that make it the batch's height, all joined by one concatenation. The
        # zeros are slices of one block; the rows below a record are a slice along the
        # first axis, which TensorFlow takes without copying.
        count = tf.cast(value.nrows(), tf.int32)
        inner = tf.shape(flat, out_type=tf.int64)[1:]
        largest = tf.stack([tf.reduce_max(heights), tf.reduce_max(widths)])
        zeros = filled(tf.concat([largest, inner], 0), flat.dtype, pad_value)  # the padding
        record = record_blocks(value, heights, widths)
        element_shape = tf.TensorShape([None, None]).concatenate(flat.shape[1:])
        pieces = tf.TensorArray(flat.dtype, size=2 * count, infer_shape=False, element_shape=element_shape)

        def body(index: Any, pieces: Any) -> Any:
            height, width = heights[index], widths[index]
            padded = tf.concat([record(index), zeros[:height, : largest[1] - width]], axis=1)
            pieces = pieces.write(2 * index, padded)
            return index + 1, pieces.write(2 * index + 1, zeros[: largest[0] - height])

        _, pieces = tf.while_loop(lambda index, _: index < count, body, (tf.constant(0), pieces))
        shape = tf.concat([tf.stack([value.nrows()]), largest, inner], 0)
        return tf.reshape(pieces.concat(), shape)

    large = tf.size(flat, out_type=tf.int64) >= LOOP_MIN_VALUES
    return tf.cond(rectangular & large & (value.nrows() > 0), by_record, to_tensor)


def _pad_rows(value: Any, to_tensor: Callable[[], Any]) -> Any:
    """A ragged rank 1 batch ``[B, (n), ...]`` dense: only reshaped when every row has the
    same length (audio clips of one duration, say), else ``to_tensor()``."""
    import tensorflow as tf

    lengths = value.row_lengths()
    longest = tf.reduce_max(tf.concat([lengths, [0]], 0))
    flat = value.values

    def reshape() -> Any:
        shape = tf.concat([tf.stack([value.nrows(), longest]), tf.shape(flat, out_type=tf.int64)[1:]], 0)
        return tf.reshape(flat, shape)

    return tf.cond(tf.reduce_all(tf.equal(lengths, longest)), reshape, to_tensor)


def dense_record(value: Any) -> Any:
    """One record's value (after ``unbatch``) dense: a ragged ``[(H), (W), ...]`` whose
    rows are equally long is only reshaped; anything else goes through ``to_tensor``."""
    import tensorflow as tf

    if not isinstance(value, tf.RaggedTensor):
        return value
    if value.ragged_rank != 1 or value.shape.rank is None or value.shape.rank < 2:
        return value.to_tensor()
    lengths = value.row_lengths()
    width = tf.reduce_max(tf.concat([lengths, [0]], 0))
    flat = value.values
    rectangular = tf.reduce_all(tf.equal(lengths, width))

    def reshape() -> Any:
        shape = tf.concat([tf.stack([value.nrows(), width]), tf.shape(flat, out_type=tf.int64)[1:]], 0)
        return tf.reshape(flat, shape)

    return tf.cond(rectangular, reshape, value.to_tensor)
