"""Images brought to one size for :func:`recordkit.load_dataset` (``image_size``,
``image_fit``): resized, resized with padding, or cropped or padded at the centre or at
random.

* :func:`fit_images` brings images ``[B, (H), (W), C]`` or masks ``[B, (H), (W)]`` to one
  size, padding with the field's pad value; a ragged batch of rectangles is fitted
  record by record (:func:`~recordkit.read._dense.record_blocks`);
* :func:`crop_offsets` is where each record's crop window starts: at the centre, or at
  random from uniform draws that the reader shares between a record's fields, so that
  an image and its mask of one size are cut at the same place; :func:`crop_at` cuts it;
* :func:`fit_scaled` and :func:`resize_scaled_window` resize a picture decoded at a
  reduced scale onto the full picture's geometry.

TensorFlow is imported by the functions that run in the graph.
"""

from __future__ import annotations

from typing import Any

from recordkit.codec._geometry import Fit
from recordkit.read._dense import filled, pad_constant, record_blocks, rectangles

__all__ = [
    "CROP_FITS",
    "SCALED_KERNELS",
    "ImageFit",
    "Size",
    "crop_at",
    "crop_offsets",
    "fit_images",
    "fit_scaled",
    "resize_scaled_window",
]

#: How pictures meet their size (:class:`~recordkit.ImageGeometry`'s ``fit``).
ImageFit = Fit
#: The fits that cut a window out of each image (or pad it), without resampling.
CROP_FITS = frozenset({"crop_or_pad", "random_crop_or_pad"})
Size = tuple[int, int]

#: The resize methods a picture decoded at a reduced scale can be resized with onto the
#: full picture's geometry (:func:`fit_scaled`): ``tf.image.resize``'s interpolating
#: methods, by their kernel in ``ScaleAndTranslate`` (which ``tf.image.resize`` runs for
#: the last four). ``"nearest"`` and ``"area"`` keep the full decode.
SCALED_KERNELS = {
    "bilinear": "triangle",
    "bicubic": "keyscubic",
    "lanczos3": "lanczos3",
    "lanczos5": "lanczos5",
    "gaussian": "gaussian",
    "mitchellcubic": "mitchellcubic",
}


def crop_offsets(shapes: Any, size: Size, fit: ImageFit, uniforms: Any = None) -> Any:
    """Where each record's window of ``size`` starts, int64 ``[B, 2]`` (top, left) in the
    record's own pixels; negative where the record is smaller than the window and
    padding comes first.

    ``shapes`` is int64 ``[B, >= 2]``, each record's height and width first (what
    :func:`row_shapes` gives). ``"crop_or_pad"`` takes the centre, as
    ``tf.image.resize_with_crop_or_pad`` does; ``"random_crop_or_pad"`` places the window
    at ``uniforms`` (float ``[B, 2]`` in [0, 1)) of the room there is, along each side:
    records of one size given the same draws get the same window.
    """
    import tensorflow as tf

    sides = tf.cast(shapes[:, :2], tf.int64)
    target = tf.constant(size, tf.int64)
    room = tf.maximum(sides - target, 0)  # crop: the window may start at 0..room
    slack = tf.maximum(target - sides, 0)  # pad: the record may start at 0..slack
    if fit == "crop_or_pad":
        return room // 2 - slack // 2
    if fit != "random_crop_or_pad" or uniforms is None:
        raise ValueError(f"crop offsets are for crop_or_pad or random_crop_or_pad with draws, not {fit!r}")

    def place(extent: Any) -> Any:
        return tf.minimum(tf.cast(tf.floor(uniforms * tf.cast(extent + 1, tf.float32)), tf.int64), extent)

    return place(room) - place(slack)


def crop_at(image: Any, offset: Any, size: Size, pad_value: int | float = 0) -> Any:
    """The window of ``size`` of ``image`` ``[..., h, w, c]`` whose top left corner is
    at ``offset`` (top, left; negative: padding first), padded with ``pad_value`` where
    it reaches outside the image. No resampling: every pixel is one of the image's."""
    import tensorflow as tf

    shape = tf.shape(image, out_type=tf.int64)
    rank = image.shape.rank
    height, width = shape[rank - 3], shape[rank - 2]
    top, left = offset[0], offset[1]
    rows = tf.clip_by_value(tf.stack([top, top + size[0]]), 0, height)
    cols = tf.clip_by_value(tf.stack([left, left + size[1]]), 0, width)
    window = image[..., rows[0] : rows[1], cols[0] : cols[1], :]
    before = tf.stack([rows[0] - top, cols[0] - left])
    after = tf.constant(size, tf.int64) - before - tf.stack([rows[1] - rows[0], cols[1] - cols[0]])
    paddings = tf.concat(
        [tf.zeros([rank - 3, 2], tf.int64), tf.stack([before, after], axis=1), tf.zeros([1, 2], tf.int64)], 0
    )
    value = pad_constant(image.dtype, pad_value)
    return tf.pad(window, paddings, constant_values=0 if value is None else value)


def fit_images(
    images: Any,
    size: Size,
    fit: ImageFit,
    method: str,
    *,
    pad_value: int | float = 0,
    offsets: Any = None,
) -> Any:
    """Bring a batch of images ``[B, H, W, C]`` or masks ``[B, H, W]`` (dense or ragged)
    to ``size``, keeping their dtype. Padding (``"resize_with_pad"``, the crop fits)
    holds ``pad_value``; the crop fits cut each record at its row of ``offsets``
    (:func:`crop_offsets`). A record without pixels (an absent optional image) becomes
    ``size`` of the pad value."""
    import tensorflow as tf

    rank = images.shape.rank
    if rank not in (3, 4):
        raise ValueError(f"image_size applies to images [B, H, W, C] or masks [B, H, W], not rank {rank}")
    if fit in CROP_FITS and offsets is None:
        raise ValueError(f"image_fit {fit!r} needs the crop offsets")
    dtype = images.dtype
    mask = rank == 3
    if mask:
        images = (
            images.with_flat_values(images.flat_values[..., None])
            if isinstance(images, tf.RaggedTensor)
            else images[..., None]
        )

    def fit_one(image: Any, offset: Any) -> Any:
        """One image ``[h, w, c]``, or a dense batch (but for the random crop)."""
        if fit in CROP_FITS:
            return crop_at(image, offset, size, pad_value)
        if fit == "resize_with_pad":
            out = tf.image.resize_with_pad(image, size[0], size[1], method=method)
        else:
            out = tf.image.resize(image, size, method=method)
        if out.dtype != dtype:
            out = tf.saturate_cast(tf.round(out) if dtype.is_integer else out, dtype)
        if fit == "resize_with_pad" and pad_constant(dtype, pad_value) is not None:
            # Where the image lands: the same resize and pad of ones (zeros: padding).
            ones = tf.ones(tf.concat([tf.shape(image)[:-1], [1]], 0), tf.float32)
            inside = tf.image.resize_with_pad(ones, size[0], size[1], method="nearest") > 0
            out = tf.where(inside, out, pad_constant(dtype, pad_value))
        return out

    channels = images.shape[-1]
    record_shape = tf.TensorShape([size[0], size[1], channels])
    if not isinstance(images, tf.RaggedTensor):
        if fit == "random_crop_or_pad":  # a window of its own for each record
            fitted = tf.map_fn(
                lambda args: fit_one(args[0], args[1]),
                (images, offsets),
                fn_output_signature=tf.TensorSpec(record_shape, dtype),
            )
        elif fit == "crop_or_pad":  # records of one size: one centre window for all
            sides = tf.shape(images, out_type=tf.int64)[None, 1:3]
            fitted = fit_one(images, crop_offsets(sides, size, fit)[0])
        else:
            fitted = fit_one(images, None)
        fitted = tf.ensure_shape(fitted, [None, size[0], size[1], channels])
        return fitted[..., 0] if mask else fitted
    depth = tf.shape(images.flat_values, out_type=tf.int64)[-1]
    heights, widths, rectangular = rectangles(images)
    if offsets is None:
        offsets = tf.zeros(tf.stack([images.nrows(), 2]), tf.int64)  # unused by the resizes

    def fit_record(image: Any, height: Any, width: Any, offset: Any) -> Any:
        def empty() -> Any:
            return filled(tf.stack([tf.constant(size[0], tf.int64), size[1], depth]), dtype, pad_value)

        return tf.cond((height > 0) & (width > 0), lambda: fit_one(image, offset), empty)

    def by_record() -> Any:
        count = tf.cast(images.nrows(), tf.int32)
        record = record_blocks(images, heights, widths)
        fitted = tf.TensorArray(dtype, size=count, element_shape=record_shape)

        def body(index: Any, fitted: Any) -> Any:
            image = fit_record(record(index), heights[index], widths[index], offsets[index])
            return index + 1, fitted.write(index, image)

        _, fitted = tf.while_loop(lambda index, _: index < count, body, (tf.constant(0), fitted))
        return fitted.stack()

    def ragged_rows() -> Any:  # not images: rows of a record differ in width; pad each first
        return tf.map_fn(
            lambda args: fit_record(
                args[0].to_tensor(), args[0].nrows(), tf.reduce_max(args[0].row_lengths()), args[1]
            ),
            (images, offsets),
            fn_output_signature=tf.TensorSpec(record_shape, dtype),
        )

    def none() -> Any:  # no records: nothing to stack, and the channel count may be unknown
        return tf.zeros(tf.stack([tf.constant(0, tf.int64), size[0], size[1], depth]), dtype)

    fitted = tf.cond(images.nrows() > 0, lambda: tf.cond(rectangular, by_record, ragged_rows), none)
    fitted = tf.ensure_shape(fitted, [None, size[0], size[1], channels])
    return fitted[..., 0] if mask else fitted


def fit_scaled(
    picture: Any, shape: Any, scale: Any, size: Size, fit: ImageFit, method: str, pad_value: int | float = 0
) -> Any:
    """One picture ``[h, w, c]`` decoded at 1/``scale`` (int32 scalar, or a Python int
    for every record) of its full
    ``shape`` (int64, height and width first) brought to ``size`` by ``"resize"`` or
    ``"resize_with_pad"``, onto the pixels the full picture's resize lands on; at scale
    1, fitted as :func:`fit_images` fits it (the same pixels as ever).

    A scaled pixel ``i`` stands for the full pixels ``[i * scale, (i + 1) * scale)``, so
    the picture covers ``height / scale`` of its rows (the last one in part, when the
    height is not a multiple of the scale). Resizing it to ``size`` as a picture of
    ``ceil(height / scale)`` rows would shift the content by up to almost one output
    pixel. The resize takes the exact factor instead (``size / (height / scale)``), with
    ``tf.image.resize``'s half-pixel centres and with antialiasing
    (:func:`resize_scaled_window`). ``"resize_with_pad"`` places the picture where
    ``tf.image.resize_with_pad`` of the full picture does and pads with ``pad_value``.
    Keeps the picture's dtype (rounded)."""
    import tensorflow as tf

    def whole() -> Any:
        return fit_images(picture[None], size, fit, method, pad_value=pad_value)[0]

    def reduced() -> Any:
        return _fit_reduced(picture, shape, scale, size, fit, method, pad_value)

    if isinstance(scale, int):  # one scale for every record: no branch in the graph
        fitted = reduced() if scale > 1 else whole()
    else:
        fitted = tf.cond(scale > 1, reduced, whole)
    return tf.ensure_shape(fitted, [size[0], size[1], picture.shape[-1]])


def _fit_reduced(
    picture: Any, shape: Any, scale: Any, size: Size, fit: ImageFit, method: str, pad_value: int | float
) -> Any:
    """:func:`fit_scaled` of a picture decoded at a scale above 1."""
    import tensorflow as tf

    sides = tf.cast(shape[:2], tf.float32)
    target = tf.constant(size, tf.float32)
    if fit == "resize":
        inner = tf.constant(size, tf.int32)
    elif fit == "resize_with_pad":
        # tf.image.resize_with_pad's arithmetic, on the full picture's sides.
        ratio = tf.reduce_max(sides / target)
        inner = tf.cast(tf.floor(sides / ratio), tf.int32)
    else:
        raise ValueError(f"fit_scaled resizes (resize, resize_with_pad), not {fit!r}")
    whole = tf.concat([tf.zeros([2], tf.float32), sides], 0)
    resized = resize_scaled_window(picture, whole, scale, inner, method)
    dtype = picture.dtype
    out = tf.saturate_cast(tf.round(resized) if dtype.is_integer else resized, dtype)
    if fit == "resize_with_pad":
        before = tf.maximum(tf.cast(tf.floor((target - sides / ratio) / 2), tf.int32), 0)
        after = tf.constant(size, tf.int32) - inner - before
        value = pad_constant(dtype, pad_value)
        out = tf.pad(
            out,
            tf.stack(
                [tf.stack([before[0], after[0]]), tf.stack([before[1], after[1]]), tf.zeros([2], tf.int32)]
            ),
            constant_values=0 if value is None else value,
        )
    return out


def resize_scaled_window(picture: Any, window: Any, scale: Any, size: Any, method: str) -> Any:
    """The ``window`` (float32 ``[4]``: top, left, height, width, in the full picture's
    pixels) of a picture ``[h, w, c]`` decoded at 1/``scale``, resized to ``size`` (int32
    ``[2]``) with antialiasing; float32.

    The scaled decode is close to an average of ``scale`` x ``scale`` pixels, which
    aliases little; the resize after it may still shrink by more than twice (one scale
    for a field of 1,024 to 2,048 px pictures: a 2,048 px one is 512 px at 1/4, for
    224), and without a low-pass filter that aliases fine detail. With antialiasing the
    kernel (:data:`SCALED_KERNELS`, by ``ScaleAndTranslate``) widens by the
    factor it shrinks by, as ``tf.image.resize(antialias=True)`` does and Pillow's resize
    always does (what the numpy readers use): the output is then within a level or so of
    the full decode resized with antialiasing. The window's pixel ``i`` of the scaled
    picture stands for the full pixels ``[i * scale, (i + 1) * scale)``: output pixel
    centre ``j + 0.5`` lands at ``(top + (j + 0.5) * height / size) / scale``."""
    import tensorflow as tf

    step = tf.cast(scale, tf.float32)
    factor = tf.cast(size, tf.float32) * step / window[2:]
    return tf.raw_ops.ScaleAndTranslate(
        images=picture[None],
        size=size,
        scale=factor,
        translation=-window[:2] / step * factor,
        kernel_type=SCALED_KERNELS[method],
        antialias=True,
    )[0]
