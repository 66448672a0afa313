"""How boxes follow their picture's geometry (the ``bbox`` codec's ``rk.FollowsImage``):
``x_min, y_min, x_max, y_max`` boxes moved by a record's ``rk.ImageTransform``, clipped
to the output picture, and those a crop leaves without area found, in numpy and in
TensorFlow with the same arithmetic.

Boxes come in and go out as xyxy; the codec converts formats around these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import recordkit as rk

__all__ = ["moved_boxes_numpy", "moved_boxes_tf"]


#: A box narrower or lower than this, in output pixels, has no area: a crop edge that lands
#: on a box edge leaves a sliver of rounding error (5e-7 px), not an object.
MIN_SIDE = 1e-3


def moved_boxes_numpy(
    xyxy: np.ndarray,
    transform: rk.ImageTransform,
    *,
    normalized: bool,
    out_normalized: bool,
    keep_empty: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The boxes ``[n, 4]`` (xyxy; fractions of the stored picture when ``normalized``,
    else its pixels) on the output picture (fractions of it when ``out_normalized``),
    float32, and which of them are kept (those with area, or all with ``keep_empty``)."""
    boxes = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    if normalized:
        boxes = boxes * np.array([transform.source_width, transform.source_height] * 2)
    xs = transform.x(boxes[:, [0, 2]])
    ys = transform.y(boxes[:, [1, 3]])
    width, height = float(transform.width), float(transform.height)
    left, right = np.clip(xs.min(axis=1), 0, width), np.clip(xs.max(axis=1), 0, width)
    top, bottom = np.clip(ys.min(axis=1), 0, height), np.clip(ys.max(axis=1), 0, height)
    moved = np.stack([left, top, right, bottom], axis=1)
    keep = np.ones(len(moved), bool) if keep_empty else (right - left > MIN_SIDE) & (bottom - top > MIN_SIDE)
    if out_normalized:
        moved = moved / np.array([width, height, width, height])
    return moved[keep].astype(np.float32), keep


def moved_boxes_tf(
    xyxy: Any, transform: rk.ImageTransform, *, normalized: bool, out_normalized: bool, keep_empty: bool
) -> tuple[Any, Any]:
    """:func:`moved_boxes_numpy` in TensorFlow, on one record's boxes ``[n, 4]``."""
    import tensorflow as tf

    boxes = tf.reshape(tf.cast(xyxy, tf.float32), [-1, 4])
    x1, y1, x2, y2 = tf.unstack(boxes, num=4, axis=1)
    if normalized:
        x1, x2 = x1 * transform.source_width, x2 * transform.source_width
        y1, y2 = y1 * transform.source_height, y2 * transform.source_height
    xa, xb = transform.x(x1), transform.x(x2)
    ya, yb = transform.y(y1), transform.y(y2)
    width, height = transform.width, transform.height
    left = tf.clip_by_value(tf.minimum(xa, xb), 0.0, width)
    right = tf.clip_by_value(tf.maximum(xa, xb), 0.0, width)
    top = tf.clip_by_value(tf.minimum(ya, yb), 0.0, height)
    bottom = tf.clip_by_value(tf.maximum(ya, yb), 0.0, height)
    has_area = (right - left > MIN_SIDE) & (bottom - top > MIN_SIDE)
    keep = tf.ones_like(left, tf.bool) if keep_empty else has_area
    if out_normalized:
        left, right, top, bottom = left / width, right / width, top / height, bottom / height
    moved = tf.stack([left, top, right, bottom], axis=1)
    return tf.boolean_mask(moved, keep), keep
