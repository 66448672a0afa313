"""Batch layout for :func:`recordkit.load_dataset`: ragged values padded, images fitted.

Decoded batches hold values whose size varies from record to record as
``tf.RaggedTensor``. The reader's layout options turn them into dense tensors:

* :func:`pad_ragged` pads to the batch's largest with zeros (empty strings);
* :func:`fit_images` brings images ``[B, (H), (W), C]`` or masks ``[B, (H), (W)]`` to one
  size (resize, resize with pad, or crop or pad);
* :func:`dense_record` gives one record's ragged value (after ``unbatch``) its dense form;
* :func:`row_shapes` is each record's true shape, returned next to padded values.

Images are the large values here, and ``RaggedTensor.to_tensor`` computes an output
index for every value (two bytes of arithmetic per pixel byte). An image is a
rectangle, though: every row of a record has the same width. So a ragged rank 2 value
whose records are rectangles is split into one flat block per record, each block
reshaped, padded by concatenation (whole rows copied) or fitted on its own, in a
``tf.while_loop`` whose iterations run in parallel, and stacked once. Other ragged
values, and small ones, where the loop's per-record cost would show, keep
``to_tensor``; both paths give the same tensors.

TensorFlow is imported by the functions that run in the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

__all__ = [
    "LOOP_MIN_VALUES",
    "SHAPE_SUFFIX",
    "ImageFit",
    "Size",
    "dense_record",
    "fit_images",
    "pad_into",
    "pad_ragged",
    "row_shapes",
]

#: Suffix of the output that holds each record's true shape when a field is padded,
#: resized, cropped: ``"<field>/shape"``.
SHAPE_SUFFIX = "/shape"

ImageFit = Literal["resize", "resize_with_pad", "crop_or_pad"]
Size = tuple[int, int]

#: A rectangular ragged batch with at least this many values is padded record by
#: record; a smaller one with ``to_tensor`` (cheaper below this size).
LOOP_MIN_VALUES = 1 << 15


def pad_into(out: dict[str, Any], path: str, value: Any) -> None:
    """Replace each ragged tensor under ``path`` with a padded one and its row shapes."""
    import tensorflow as tf

    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, tf.RaggedTensor):
                out[f"{path}/{key}{SHAPE_SUFFIX}"] = row_shapes(item)
                value[key] = pad_ragged(item)
        return
    if isinstance(value, tf.RaggedTensor):
        out[path + SHAPE_SUFFIX] = row_shapes(value)
        out[path] = pad_ragged(value)


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


def _rectangles(value: Any) -> tuple[Any, Any, Any]:
    """``(heights, widths, rectangular)`` of a ragged rank 2 batch ``[B, (H), (W), ...]``:
    each record's rows and row width, and whether all rows of each record are that wide
    (a record without rows has width 0)."""
    import tensorflow as tf

    heights = value.row_lengths()
    row_widths = value.values.row_lengths()
    widths = tf.maximum(
        tf.math.unsorted_segment_max(row_widths, value.value_rowids(), value.nrows()), 0
    )
    rectangular = tf.reduce_all(tf.equal(row_widths, tf.repeat(widths, heights)))
    return heights, widths, rectangular


def _records(value: Any, heights: Any, widths: Any) -> Callable[[Any], Any]:
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


def pad_ragged(value: Any) -> Any:
    """``value`` dense, padded with zeros (empty strings) to the batch's largest: what
    ``value.to_tensor()`` gives, record by record for large rectangular batches."""
    import tensorflow as tf

    if not isinstance(value, tf.RaggedTensor):
        return value
    if value.ragged_rank == 1:
        return _pad_rows(value)
    if value.ragged_rank != 2:
        return value.to_tensor()
    heights, widths, rectangular = _rectangles(value)
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
        zeros = tf.zeros(tf.concat([largest, inner], 0), flat.dtype)
        record = _records(value, heights, widths)
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
    return tf.cond(rectangular & large & (value.nrows() > 0), by_record, value.to_tensor)


def _pad_rows(value: Any) -> Any:
    """A ragged rank 1 batch ``[B, (n), ...]`` dense: only reshaped when every row has the
    same length (audio clips of one duration, say), else ``to_tensor``."""
    import tensorflow as tf

    lengths = value.row_lengths()
    longest = tf.reduce_max(tf.concat([lengths, [0]], 0))
    flat = value.values

    def reshape() -> Any:
        shape = tf.concat([tf.stack([value.nrows(), longest]), tf.shape(flat, out_type=tf.int64)[1:]], 0)
        return tf.reshape(flat, shape)

    return tf.cond(tf.reduce_all(tf.equal(lengths, longest)), reshape, value.to_tensor)


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


def fit_images(images: Any, size: Size, fit: ImageFit, method: str) -> Any:
    """Bring a batch of images ``[B, H, W, C]`` or masks ``[B, H, W]`` (dense or ragged)
    to ``size``, keeping their dtype. A record without pixels (an absent optional
    image) becomes zeros of ``size``."""
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

    if not isinstance(images, tf.RaggedTensor):
        fitted = fit_one(images)
        return fitted[..., 0] if mask else fitted
    channels = images.shape[-1]
    depth = tf.shape(images.flat_values, out_type=tf.int64)[-1]
    heights, widths, rectangular = _rectangles(images)

    def fit_record(image: Any, height: Any, width: Any) -> Any:
        def empty() -> Any:
            return tf.zeros(tf.stack([tf.constant(size[0], tf.int64), size[1], depth]), dtype)

        return tf.cond((height > 0) & (width > 0), lambda: fit_one(image), empty)

    def by_record() -> Any:
        count = tf.cast(images.nrows(), tf.int32)
        record = _records(images, heights, widths)
        fitted = tf.TensorArray(dtype, size=count, element_shape=tf.TensorShape([size[0], size[1], channels]))

        def body(index: Any, fitted: Any) -> Any:
            return index + 1, fitted.write(index, fit_record(record(index), heights[index], widths[index]))

        _, fitted = tf.while_loop(lambda index, _: index < count, body, (tf.constant(0), fitted))
        return fitted.stack()

    def ragged_rows() -> Any:  # not images: rows of a record differ in width; pad each first
        return tf.map_fn(
            lambda image: fit_record(image.to_tensor(), image.nrows(), tf.reduce_max(image.row_lengths())),
            images,
            fn_output_signature=tf.TensorSpec([size[0], size[1], channels], dtype),
        )

    def none() -> Any:  # no records: nothing to stack, and the channel count may be unknown
        return tf.zeros(tf.stack([tf.constant(0, tf.int64), size[0], size[1], depth]), dtype)

    fitted = tf.cond(images.nrows() > 0, lambda: tf.cond(rectangular, by_record, ragged_rows), none)
    fitted = tf.ensure_shape(fitted, [None, size[0], size[1], channels])
    return fitted[..., 0] if mask else fitted
