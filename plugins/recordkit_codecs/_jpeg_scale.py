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

__all__ = ["JPEG_SCALES", "MIN_SCALED_SIDE", "jpeg_scale", "jpeg_scale_tf"]

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


def jpeg_scale_tf(height: Any, width: Any, cover: tuple[int, int]) -> Any:
    """:func:`jpeg_scale` in TensorFlow, in a few scalar ops (this runs for every
    record): ``height`` and ``width`` int scalars; an int32 scalar."""
    import tensorflow as tf

    height, width = tf.cast(height, tf.int64), tf.cast(width, tf.int64)
    # The scale may be at most the times the target fits into each side.
    fits = tf.minimum(height // cover[0], width // cover[1])
    fits = tf.where(tf.maximum(height, width) >= MIN_SCALED_SIDE, fits, 0)
    # The largest of 8, 4, 2, 1 that is at most ``fits``.
    return tf.gather(tf.constant([1, 1, 2, 2, 4, 4, 4, 4, 8], tf.int32), tf.clip_by_value(fits, 0, 8))
