"""Batched, graph-safe image decoding shared by the ``image`` and ``mask`` codecs.

One ``tf.map_fn`` over the batch decodes each record's bytes and checks the decoded
shape against the height, width and channels the record stores (a
``tf.debugging.assert_equal`` whose message names the codec). The result is dense
``[B, H, W, C]`` when the schema declares a fixed size, and otherwise a
``tf.RaggedTensor`` ``[B, (H), (W), C]`` built from the flat pixels and the stored
sizes (ragged rank 2: each image has its own height, each row its own width).
TensorFlow is imported by the caller's ``decode_tf`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["decode_image_batch"]


def decode_image_batch(
    encoded: Any,
    heights: Any,
    widths: Any,
    channels: Any,
    *,
    decode_one: Callable[[Any], Any],
    static_channels: int | None,
    fixed_size: tuple[int, int] | None,
    codec: str,
) -> Any:
    """Decode a ``[B]`` string tensor of encoded images (see the module docstring).

    ``channels`` is the stored ``[B]`` channel count, or None when the codec stores none
    (then ``static_channels`` is the count). ``decode_one`` maps one scalar string to
    a uint8 ``[h, w, c]`` tensor.
    """
    import tensorflow as tf

    heights = tf.cast(tf.reshape(heights, [-1]), tf.int64)
    widths = tf.cast(tf.reshape(widths, [-1]), tf.int64)
    if channels is None:
        channels = tf.fill(tf.shape(heights), tf.constant(static_channels, tf.int64))
    channels = tf.cast(tf.reshape(channels, [-1]), tf.int64)
    checks = []
    if static_channels is None:
        # A batch stacks into one tensor only when every image has the same channel count.
        checks.append(
            tf.debugging.assert_equal(
                channels,
                tf.broadcast_to(tf.reduce_max(channels), tf.shape(channels)),
                message=(
                    f"{codec} codec: the images of this batch have different channel counts; "
                    "set the channels option so that every image is converted to one"
                ),
            )
        )
    with tf.control_dependencies(checks):
        encoded = tf.identity(tf.reshape(encoded, [-1]))

    def one(args: Any) -> Any:
        data, height, width, depth = args
        image = decode_one(data)
        shape = tf.shape(image, out_type=tf.int64)
        check = tf.debugging.assert_equal(
            shape,
            tf.stack([height, width, depth]),
            message=(
                f"{codec} codec: the decoded image shape [height, width, channels] differs "
                "from the height, width and channels stored with it"
            ),
        )
        with tf.control_dependencies([check]):
            image = tf.identity(image)
        if fixed_size is not None:
            return tf.ensure_shape(image, [fixed_size[0], fixed_size[1], static_channels])
        return tf.reshape(image, [-1, static_channels if static_channels is not None else shape[2]])

    signature = (
        tf.TensorSpec([fixed_size[0], fixed_size[1], static_channels], tf.uint8)
        if fixed_size is not None
        else tf.RaggedTensorSpec(
            shape=[None, static_channels], dtype=tf.uint8, ragged_rank=0, row_splits_dtype=tf.int64
        )
    )
    decoded = tf.map_fn(one, (encoded, heights, widths, channels), fn_output_signature=signature)
    if fixed_size is not None:
        return decoded
    # [sum of h*w, C]; an empty batch's values lose their inner dimension in map_fn.
    depth = static_channels if static_channels is not None else tf.reduce_max(tf.concat([channels, [1]], 0))
    pixels = tf.reshape(decoded.flat_values, tf.stack([tf.constant(-1, tf.int64), tf.cast(depth, tf.int64)]))
    return tf.RaggedTensor.from_nested_row_lengths(
        pixels, [heights, tf.repeat(widths, heights)], validate=False
    )
