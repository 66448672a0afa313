"""Batched, graph-safe image decoding shared by the ``image`` and ``mask`` codecs.

A ``tf.while_loop`` over the batch decodes each record's bytes (several images at once:
the loop's iterations run in parallel) and checks the decoded shape against the height,
width and channels the record stores (a ``tf.debugging.assert_equal`` whose message
names the codec). Each image's pixels are written flat into a ``tf.TensorArray`` and
concatenated once: one copy of the pixels, where ``tf.map_fn`` with a ragged output
signature encodes, stacks and decodes every image again (it cost as much as the JPEG
decoding itself). The result is dense ``[B, H, W, C]`` when the schema declares a fixed
size, and otherwise a ``tf.RaggedTensor`` ``[B, (H), (W), C]`` built from the flat pixels
and the stored sizes (ragged rank 2: each image has its own height, each row its own
width). TensorFlow is imported by the caller's ``decode_tf`` only.
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
    if fixed_size is not None:
        checks.append(
            tf.debugging.assert_equal(
                tf.stack([heights, widths], axis=1),
                tf.broadcast_to(tf.constant(fixed_size, tf.int64), tf.stack([tf.size(heights), 2])),
                message=f"{codec} codec: an image of this batch is not the schema's fixed size {fixed_size}",
            )
        )
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
    count = tf.shape(encoded)[0]

    def body(index: Any, pixels: Any) -> Any:
        image = decode_one(encoded[index])
        check = tf.debugging.assert_equal(
            tf.shape(image, out_type=tf.int64),
            tf.stack([heights[index], widths[index], channels[index]]),
            message=(
                f"{codec} codec: the decoded image shape [height, width, channels] differs "
                "from the height, width and channels stored with it"
            ),
        )
        with tf.control_dependencies([check]):
            flat = tf.reshape(image, [-1])
        return index + 1, pixels.write(index, flat)

    # Flat 1-D elements: their concatenation is defined for an empty batch too.
    pixels = tf.TensorArray(tf.uint8, size=count, infer_shape=False, element_shape=tf.TensorShape([None]))
    _, pixels = tf.while_loop(lambda index, _: index < count, body, (tf.constant(0), pixels))
    flat = pixels.concat()
    # An empty batch has no channel count of its own: its (zero) pixels get one channel.
    depth = (
        tf.constant(static_channels, tf.int64)
        if static_channels is not None
        else tf.reduce_max(tf.concat([channels, tf.ones([1], tf.int64)], 0))
    )
    if fixed_size is not None:
        shape = tf.stack([tf.cast(count, tf.int64), fixed_size[0], fixed_size[1], depth])
        return tf.ensure_shape(tf.reshape(flat, shape), [None, fixed_size[0], fixed_size[1], static_channels])
    values = tf.reshape(flat, tf.stack([tf.constant(-1, tf.int64), depth]))
    if static_channels is not None:
        values = tf.ensure_shape(values, [None, static_channels])
    return tf.RaggedTensor.from_nested_row_lengths(
        values, [heights, tf.repeat(widths, heights)], validate=False
    )
