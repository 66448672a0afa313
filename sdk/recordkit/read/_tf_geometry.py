"""The geometry of a ``tf.data`` read, one record at a time: where each picture's fit
takes it (its window, as an :class:`~recordkit.ImageTransform` for the fields tied to
it), the random resized crop's pixels, and the flip. The same arithmetic as the numpy
readers' (:mod:`recordkit.read._numpy_geometry`), so that both readers move boxes alike.

TensorFlow is imported by the functions that run in the graph.
"""

from __future__ import annotations

import math
from typing import Any

from recordkit.codec._capabilities import Raster
from recordkit.codec._geometry import ImageGeometry, ImageTransform
from recordkit.read._image_fit import CROP_FITS, Size, crop_offsets, resize_scaled_window

__all__ = [
    "batch_of_one",
    "flipped",
    "random_resized_crop",
    "scaled_random_resized_crop",
    "transform_of",
    "window_of",
    "window_scale",
]


def window_of(shape: Any, size: Size | None, geometry: ImageGeometry, draws: Any) -> tuple[Any, Any, Any]:
    """``(crop, resized, place)`` of a picture of ``shape`` (int64, height and width
    first) for the geometry's fit: the window cut from it (top, left, height, width;
    outside the picture: padding), the size it is scaled to and where it is placed on
    the output (float32 tensors). ``draws``: the record's uniform draws, or None."""
    import tensorflow as tf

    sides = tf.cast(shape[:2], tf.float32)
    whole = tf.concat([tf.zeros([2]), sides], 0)
    if size is None or geometry.fit == "resize":
        resized = sides if size is None else tf.constant(size, tf.float32)
        return whole, resized, tf.zeros([2])
    target = tf.constant(size, tf.float32)
    if geometry.fit == "resize_with_pad":  # tf.image.resize_with_pad's arithmetic
        ratio = tf.reduce_max(sides / target)
        resized = tf.floor(sides / ratio)
        return whole, resized, tf.maximum(tf.floor((target - sides / ratio) / 2), 0.0)
    if geometry.fit == "random_resized_crop":
        return random_window(shape, geometry, draws), target, tf.zeros([2])
    if geometry.fit in CROP_FITS:
        uniforms = None if draws is None else draws[None, :2]
        offset = crop_offsets(tf.cast(shape[None, :2], tf.int64), size, geometry.fit, uniforms)[0]
        return tf.concat([tf.cast(offset, tf.float32), target], 0), target, tf.zeros([2])
    raise ValueError(f"unknown fit {geometry.fit!r}")


def random_window(shape: Any, geometry: ImageGeometry, draws: Any) -> Any:
    """The random resized crop's window (float32 top, left, height, width), as the numpy
    readers draw it (``_random_window``)."""
    import tensorflow as tf

    height, width = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
    low, high = geometry.crop_scale
    area = height * width * (low + (high - low) * draws[2])
    log_low, log_high = math.log(geometry.crop_ratio[0]), math.log(geometry.crop_ratio[1])
    ratio = tf.exp(log_low + (log_high - log_low) * draws[3])
    crop_w = tf.minimum(tf.maximum(tf.round(tf.sqrt(area * ratio)), 1.0), width)
    crop_h = tf.minimum(tf.maximum(tf.round(tf.sqrt(area / ratio)), 1.0), height)
    top = tf.minimum(tf.floor(draws[0] * (height - crop_h + 1)), height - crop_h)
    left = tf.minimum(tf.floor(draws[1] * (width - crop_w + 1)), width - crop_w)
    return tf.stack([top, left, crop_h, crop_w])


def random_resized_crop(picture: Any, window: Any, size: Size, method: str) -> Any:
    """The window of ``picture`` ``[h, w, ...]`` resized to ``size``, its dtype kept."""
    import tensorflow as tf

    box = tf.cast(window, tf.int64)
    cut = picture[box[0] : box[0] + box[2], box[1] : box[1] + box[3]]
    mask = picture.shape.rank == 2
    if mask:
        cut = cut[..., None]
    out = tf.image.resize(cut, size, method=method)
    if out.dtype != picture.dtype:
        out = tf.saturate_cast(tf.round(out) if picture.dtype.is_integer else out, picture.dtype)
    return out[..., 0] if mask else out


def flipped(picture: Any, flip: Any) -> Any:
    """``picture`` ``[h, w, ...]`` mirrored left to right when ``flip`` (a bool tensor)."""
    import tensorflow as tf

    return tf.cond(flip, lambda: tf.reverse(picture, [1]), lambda: picture)


def transform_of(window: tuple[Any, Any, Any], shape: Any, output: Any, flip: Any) -> ImageTransform:
    """The :class:`~recordkit.ImageTransform` of a picture of ``shape`` through ``window``
    (:func:`window_of`) onto an ``output`` of that height and width, flipped when ``flip``."""
    import tensorflow as tf

    crop, resized, place = window
    scale = resized / crop[2:]
    shift = place - crop[:2] * scale
    sides = tf.cast(shape[:2], tf.float32)
    out = tf.cast(output[:2], tf.float32)
    return ImageTransform(
        source_height=sides[0],
        source_width=sides[1],
        height=out[0],
        width=out[1],
        scale_y=scale[0],
        scale_x=scale[1],
        shift_y=shift[0],
        shift_x=shift[1],
        flip=tf.cast(flip, tf.float32),
    )


def window_scale(window: Any, size: Size) -> Any:
    """The largest of the scales 8, 4, 2, 1 at which ``window`` (float32 top, left,
    height, width) still covers ``size``: both its sides at least that many times the
    size's (int32 scalar; :func:`recordkit.read._numpy_geometry.window_scale` in numpy)."""
    import tensorflow as tf

    fits = tf.reduce_min(tf.floor(window[2:] / tf.constant(size, tf.float32)))
    scales = tf.constant([1, 1, 2, 2, 4, 4, 4, 4, 8], tf.int32)
    return tf.gather(scales, tf.cast(tf.clip_by_value(fits, 0.0, 8.0), tf.int32))


def scaled_random_resized_crop(
    codec: Raster, wire: dict[str, Any], size: Size, geometry: ImageGeometry, method: str, draws: Any
) -> tuple[Any, Any] | None:
    """One record's random resized crop decoded at a reduced scale: the window drawn from
    the stored height and width (:attr:`~recordkit.Raster.size_features`) before the
    decode, the picture decoded at the smaller of its codec's scale
    (:meth:`~recordkit.Raster.decode_scale_tf`) and the largest at which the window still
    covers ``size`` (:func:`window_scale`), and the window resized with antialiasing
    (:func:`~recordkit.read._image_fit.resize_scaled_window`); at scale 1, the full decode's
    crop and resize, as ever. Returns the fitted picture and the full picture's int64
    shape; None when the codec decodes at full size only or the records store no sizes."""
    import tensorflow as tf

    if codec.size_features is None or not all(key in wire for key in codec.size_features):
        return None
    one = batch_of_one(wire)
    own = codec.decode_scale_tf(one, size)
    if own is None:
        return None
    height_key, width_key = codec.size_features
    sides = tf.cast(tf.stack([tf.reshape(wire[height_key], []), tf.reshape(wire[width_key], [])]), tf.int64)
    window = random_window(sides, geometry, draws)
    scale = tf.minimum(tf.cast(own, tf.int32), window_scale(window, size))
    scaled = codec.decode_tf_scaled(one, scale)
    if scaled is None:
        raise TypeError(f"codec {type(codec).__name__} gives a decode_scale_tf but no decode_tf_scaled")
    picture, shape = scaled
    flat = picture.shape.rank == 2
    pixels = picture[..., None] if flat else picture

    def reduced() -> Any:
        resized = resize_scaled_window(pixels, window, scale, tf.constant(size, tf.int32), method)
        dtype = pixels.dtype
        return tf.saturate_cast(tf.round(resized) if dtype.is_integer else resized, dtype)

    def whole() -> Any:
        return random_resized_crop(pixels, window, size, method)

    value = tf.ensure_shape(tf.cond(scale > 1, reduced, whole), [size[0], size[1], pixels.shape[-1]])
    return (value[..., 0] if flat else value), tf.cast(shape, tf.int64)


def batch_of_one(wire: dict[str, Any]) -> dict[str, Any]:
    """One record's wire values as a batch of one (static size 1), each by one
    ``ExpandDims``: every node of the per-record function is optimized and instantiated
    again at each iterator, and ``value[None]`` is four (a slice and its three bounds)."""
    import tensorflow as tf

    return {key: tf.expand_dims(value, 0) for key, value in wire.items()}
