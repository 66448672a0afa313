"""Batched, graph-safe image decoding shared by the ``image`` and ``mask`` codecs.

A ``tf.while_loop`` over the batch decodes each record's bytes (several images at once:
the loop's iterations run in parallel), then the decoded shapes are checked against the
height, width and channels the records store (one ``tf.debugging.Assert`` whose
message names the codec, outside the loop: an assertion is a stateful op, and one
inside the loop would make its iterations run one by one). Each image's pixels are
written flat into a ``tf.TensorArray`` and concatenated once: one copy of the pixels,
where ``tf.map_fn`` with a ragged output signature encodes, stacks and decodes every
image again (that cost as much as the JPEG decoding itself). The result is dense
``[B, H, W, C]`` when the schema declares a fixed size, and otherwise a
``tf.RaggedTensor`` ``[B, (H), (W), C]`` built from the flat pixels and the stored sizes
(ragged rank 2: each image has its own height, each row its own width). TensorFlow is
imported by the caller's ``decode_tf`` only.

A batch whose static size is 1 (a reader decoding record by record, in a parallel map,
so that the images of a batch are decoded on every core) skips the loop: the image is
decoded and checked, and is its own batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["decode_image_batch", "decode_image_window"]


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
    pad: bool = False,
    pad_value: int = 0,
) -> Any:
    """Decode a ``[B]`` string tensor of encoded images (see the module docstring).

    ``channels`` is the stored ``[B]`` channel count, or None when the codec stores none
    (then ``static_channels`` is the count). ``decode_one`` maps one scalar string to
    a uint8 ``[h, w, c]`` tensor.

    With ``pad``, return ``(images, shapes)`` instead: the images dense ``[B, H, W, C]``,
    each padded with ``pad_value`` (0 to 255) to the batch's largest height and width as
    it is decoded (what ``to_tensor(default_value=pad_value)`` of the ragged result
    gives, without building it), and each image's int64 ``[height, width, channels]``.
    """
    import tensorflow as tf

    heights = tf.cast(tf.reshape(heights, [-1]), tf.int64)
    widths = tf.cast(tf.reshape(widths, [-1]), tf.int64)
    if channels is None:
        channels = tf.fill(tf.shape(heights), tf.constant(static_channels, tf.int64))
    channels = tf.cast(tf.reshape(channels, [-1]), tf.int64)
    # Plain assertions with a string message: assert_equal would add a conditional (two
    # more functions) to the graph, which TensorFlow optimizes again for every iterator.
    checks = []
    if fixed_size is not None:
        checks.append(
            tf.debugging.Assert(
                tf.reduce_all(tf.equal(heights, fixed_size[0]))
                & tf.reduce_all(tf.equal(widths, fixed_size[1])),
                [f"{codec} codec: an image of this batch is not the schema's fixed size {fixed_size}"],
            )
        )
    if static_channels is None:
        # A batch stacks into one tensor only when every image has the same channel count.
        checks.append(
            tf.debugging.Assert(
                tf.reduce_all(tf.equal(channels, tf.reduce_max(channels))),
                [
                    f"{codec} codec: the images of this batch have different channel counts; "
                    "set the channels option so that every image is converted to one"
                ],
            )
        )
    with tf.control_dependencies(checks):
        encoded = tf.identity(tf.reshape(encoded, [-1]))
    count = tf.shape(encoded)[0]
    stored = tf.stack([heights, widths, channels], axis=1)
    if encoded.shape[0] == 1:
        # A batch whose static size is 1 (readers that decode record by record, in a
        # parallel map): the image is decoded and checked, with no loop, no list of pieces
        # and no padding (one image is its batch's largest).
        image = decode_one(encoded[0])
        check = tf.debugging.Assert(
            tf.reduce_all(tf.equal(tf.cast(tf.shape(image), tf.int64), stored[0])),
            [
                f"{codec} codec: the decoded image shape [height, width, channels] differs "
                "from the height, width and channels stored with it"
            ],
        )
        with tf.control_dependencies([check]):
            one = tf.identity(image)[None]
        if fixed_size is not None:
            one = tf.ensure_shape(one, [1, fixed_size[0], fixed_size[1], static_channels])
            return (one, stored) if pad else one
        one = tf.ensure_shape(one, [1, None, None, static_channels])
        if pad:
            return one, stored
        # Row lengths, not from_tensor's uniform rows: the same ragged form as a batch's.
        pixels = tf.reshape(one, tf.stack([tf.constant(-1, tf.int64), tf.shape(one, out_type=tf.int64)[3]]))
        return tf.RaggedTensor.from_nested_row_lengths(
            tf.ensure_shape(pixels, [None, static_channels]),
            [heights, tf.repeat(widths, heights)],
            validate=False,
        )
    # An empty batch has no channel count of its own: its (zero) pixels get one channel.
    depth = (
        tf.constant(static_channels, tf.int64)
        if static_channels is not None
        else tf.reduce_max(tf.concat([channels, tf.ones([1], tf.int64)], 0))
    )
    padded = pad and fixed_size is None
    if padded:
        # Each image is followed by its padding, so one concatenation lays out the batch:
        # the image widened with padding on the right (whole rows copied), then the rows of
        # padding below it (a slice along the first axis of one block: no copy).
        largest = tf.stack(
            [tf.reduce_max(tf.concat([heights, [0]], 0)), tf.reduce_max(tf.concat([widths, [0]], 0))]
        )
        padding = tf.fill(tf.concat([largest, tf.reshape(depth, [1])], 0), tf.constant(pad_value, tf.uint8))

    def body(index: Any, pieces: Any, shapes: Any) -> Any:
        image = decode_one(encoded[index])
        # A cast of the int32 shape, not tf.shape(out_type=int64): TensorFlow types a Shape
        # op's output as a shape tensor, which a list of int64 tensors refuses ("Type
        # inference failed ... invalid graph").
        shape = tf.cast(tf.shape(image), tf.int64)
        shapes = shapes.write(index, shape)
        if not padded:
            return index + 1, pieces.write(index, tf.reshape(image, [-1])), shapes
        image = tf.concat([image, padding[: shape[0], : largest[1] - shape[1]]], axis=1)
        pieces = pieces.write(2 * index, tf.reshape(image, [-1]))
        return (
            index + 1,
            pieces.write(2 * index + 1, tf.reshape(padding[: largest[0] - shape[0]], [-1])),
            shapes,
        )

    # Flat 1-D elements: their concatenation is defined for an empty batch too. The
    # decoded shapes are checked once, after the loop: an assertion inside the loop
    # would be a stateful op, which makes TensorFlow run the iterations one by one.
    pieces = tf.TensorArray(
        tf.uint8, size=2 * count if padded else count, infer_shape=False, element_shape=tf.TensorShape([None])
    )
    shapes = tf.TensorArray(tf.int64, size=count, element_shape=tf.TensorShape([3]))
    _, pieces, shapes = tf.while_loop(lambda index, *_: index < count, body, (tf.constant(0), pieces, shapes))
    check = tf.debugging.Assert(
        tf.reduce_all(tf.equal(shapes.stack(), stored)),
        [
            f"{codec} codec: the decoded image shape [height, width, channels] differs "
            "from the height, width and channels stored with it"
        ],
    )
    with tf.control_dependencies([check]):
        flat = pieces.concat()
    batch = tf.cast(count, tf.int64)
    if padded:
        images = tf.reshape(flat, tf.concat([tf.reshape(batch, [1]), largest, tf.reshape(depth, [1])], 0))
        return tf.ensure_shape(images, [None, None, None, static_channels]), stored
    if fixed_size is not None:
        shape = tf.stack([batch, fixed_size[0], fixed_size[1], depth])
        images = tf.ensure_shape(
            tf.reshape(flat, shape), [None, fixed_size[0], fixed_size[1], static_channels]
        )
        return (images, stored) if pad else images
    values = tf.reshape(flat, tf.stack([tf.constant(-1, tf.int64), depth]))
    if static_channels is not None:
        values = tf.ensure_shape(values, [None, static_channels])
    return tf.RaggedTensor.from_nested_row_lengths(
        values, [heights, tf.repeat(widths, heights)], validate=False
    )



def decode_image_window(encoded: Any, window: Any, fmt: str, channels: int) -> Any:
    """The pixels of ``window`` (int ``[4]``: top, left, height, width) of one encoded
    image (a scalar string), uint8 ``[height, width, C]``; ``fmt`` is the image codec's
    format (``jpeg``, ``png`` or ``keep``: either), ``channels`` the count to convert to
    (0: as stored). A JPEG decodes only the window (``decode_and_crop_jpeg``, with the
    DCT method of the full decode: the same pixels); a PNG decodes whole and is cut."""
    import tensorflow as tf

    window = tf.cast(window, tf.int32)

    def jpeg() -> Any:
        return tf.io.decode_and_crop_jpeg(encoded, window, channels=channels, dct_method="INTEGER_ACCURATE")

    def png() -> Any:
        image = tf.io.decode_png(encoded, channels=channels, dtype=tf.uint8)
        return image[window[0] : window[0] + window[2], window[1] : window[1] + window[3]]

    if fmt == "jpeg":
        return jpeg()
    if fmt == "png":
        return png()
    return tf.cond(tf.io.is_jpeg(encoded), jpeg, png)
