"""Decoding a JPEG at the size a reader brings it to (the ``image`` codec's scaled decode).

libjpeg computes the inverse DCT of each 8x8 block at 8, 4, 2 or 1 pixels a side, so a
JPEG decodes at 1/1, 1/2, 1/4 or 1/8 of its size for much less work than a full decode
(the entropy decoding costs the same at any scale). A reader that resizes to a known
size asks for the picture to *cover* that size; the scale chosen is the largest whose
result still covers it in both sides, by one rule for both readers
(:func:`jpeg_scale`, :func:`jpeg_scale_tf`), so that TensorFlow's
``decode_jpeg(ratio=...)`` and simplejpeg (the numpy reader's decoder, held to the same
factor) give the same pixels. A scaled pixel ``i`` stands for the full picture's pixels
``[i * scale, (i + 1) * scale)``: the reader then resizes with that geometry, so the
picture lands where a full decode's resize puts it.

TensorFlow is imported by the functions that run in the graph.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JPEG_SCALES", "MIN_SCALED_SIDE", "decode_jpeg_scaled_tf", "jpeg_scale", "jpeg_scale_tf"]

#: The scales libjpeg decodes at (the denominators of 1/1, 1/2, 1/4, 1/8), largest first.
JPEG_SCALES = (8, 4, 2, 1)


#: Pictures smaller than this in both sides decode at full size: simplejpeg cannot be
#: given a scale, only a minimum size and factor, and for them one of libjpeg-turbo's
#: other factors (3/8 ...) gives the same size, with other pixels than TensorFlow's.
MIN_SCALED_SIDE = 8


def jpeg_scale(height: int, width: int, cover: tuple[int, int]) -> int:
    """The largest scale (8, 4, 2, 1) at which a ``height`` x ``width`` JPEG still covers
    ``cover`` (height, width): both sides at least ``scale`` times the target's (1 for a
    picture under :data:`MIN_SCALED_SIDE` pixels a side)."""
    if max(height, width) < MIN_SCALED_SIDE:
        return 1
    for scale in JPEG_SCALES:
        if height >= scale * cover[0] and width >= scale * cover[1]:
            return scale
    return 1


def jpeg_scale_tf(height: Any, width: Any, cover: Any) -> Any:
    """:func:`jpeg_scale` in TensorFlow: int64 scalars ``height`` and ``width``,
    ``cover`` int ``[2]``; an int32 scalar."""
    import tensorflow as tf

    cover = tf.cast(cover, tf.int64)
    scales = tf.constant(JPEG_SCALES[:-1], tf.int64)
    height, width = tf.cast(height, tf.int64), tf.cast(width, tf.int64)
    fits = (height >= scales * cover[0]) & (width >= scales * cover[1])
    fits &= tf.maximum(height, width) >= MIN_SCALED_SIDE
    # The first scale that fits, largest first; 1 when none does.
    candidates = tf.where(fits, scales, tf.ones_like(scales))
    return tf.cast(tf.reduce_max(candidates), tf.int32)


def decode_jpeg_scaled_tf(encoded: Any, scale: Any, channels: int, dct_method: str) -> Any:
    """One JPEG (a scalar string) decoded at 1/``scale`` (an int32 scalar: 1, 2, 4 or 8;
    ``decode_jpeg`` takes its ratio as a constant, so one branch a scale), converted to
    ``channels`` (0: as stored), with the DCT method of the full decode."""
    import tensorflow as tf

    ratios = JPEG_SCALES[::-1]  # 1, 2, 4, 8: the branch index is log2(scale)
    branches = [
        lambda ratio=ratio: tf.io.decode_jpeg(encoded, channels=channels, ratio=ratio, dct_method=dct_method)
        for ratio in ratios
    ]
    index = tf.argmax(tf.cast(tf.equal(tf.constant(ratios), scale), tf.int32), output_type=tf.int32)
    return tf.switch_case(index, branches)
