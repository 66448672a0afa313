"""Image sizes read from the encoded bytes' header, for images stored without them.

Datasets written elsewhere (TensorFlow Datasets above all) store an image as its
encoded bytes only, with no height, width or channel keys beside it. The ``image``
codec reads such fields with the option ``sizes: header``: the shape then comes from
the PNG IHDR chunk or the JPEG start-of-frame (``tf.image.extract_jpeg_shape``) in
TensorFlow, and from Pillow's lazy header read in numpy, without decoding pixels.
TensorFlow is imported by the caller's ``decode_tf`` only.
"""

from __future__ import annotations

from typing import Any

import recordkit as rk
from recordkit_codecs import _pillow

__all__ = ["header_shape", "header_shapes_tf"]

# PNG colour type -> channels of the decoded image (palette images decode to RGB).
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}


def header_shape(data: bytes, channels: int | None) -> tuple[int, int, int]:
    """``(height, width, channels)`` of encoded PNG or JPEG ``data`` from its header;
    ``channels`` (the codec's option) wins over the header's when given."""
    header = _pillow.read_header(data)
    if header is None:
        raise rk.errors.DecodeError("the stored bytes are neither PNG nor JPEG, so their size is unknown")
    if channels is None:
        if header.format == "PNG":
            channels = _PNG_CHANNELS.get(header.color_type or 0, 3)
        else:
            channels = header.components or 3
    return header.height, header.width, channels


def header_shapes_tf(encoded: Any, channels: int | None) -> tuple[Any, Any, Any]:
    """The int64 ``[B]`` heights, widths and channels of a ``[B]`` string tensor of
    encoded PNG/JPEG images, read from their headers (see the module docs)."""
    import tensorflow as tf

    encoded = tf.reshape(encoded, [-1])

    def png(data: Any) -> Any:
        # Signature (8), IHDR length and type (8), then big-endian width, height, depth, colour type.
        raw = tf.cast(tf.io.decode_raw(tf.strings.substr(data, 16, 10), tf.uint8), tf.int64)
        raw = tf.ensure_shape(tf.concat([raw, tf.zeros([10], tf.int64)], 0)[:10], [10])
        width = raw[0] * 16777216 + raw[1] * 65536 + raw[2] * 256 + raw[3]
        height = raw[4] * 16777216 + raw[5] * 65536 + raw[6] * 256 + raw[7]
        table = tf.constant([1, 0, 3, 3, 2, 0, 4], tf.int64)
        depth = tf.gather(table, tf.clip_by_value(raw[9], 0, 6))
        return tf.stack([height, width, depth])

    def jpeg(data: Any) -> Any:
        return tf.cast(tf.image.extract_jpeg_shape(data), tf.int64)

    shapes = tf.map_fn(
        lambda data: tf.cond(tf.io.is_jpeg(data), lambda: jpeg(data), lambda: png(data)),
        encoded,
        fn_output_signature=tf.TensorSpec([3], tf.int64),
    )
    shapes = tf.reshape(shapes, [-1, 3])
    depth = (
        shapes[:, 2] if channels is None else tf.fill(tf.shape(shapes[:, 2]), tf.constant(channels, tf.int64))
    )
    return shapes[:, 0], shapes[:, 1], depth
