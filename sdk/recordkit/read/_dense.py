"""Dense batches for :func:`recordkit.load_dataset`: ragged values padded, images fitted.

Decoded batches hold values whose size varies from record to record as
``tf.RaggedTensor``. The reader's shaping options (``pad``, ``image_size``,
``image_fit``) turn them into dense tensors:

* :func:`pad_ragged` pads to the batch's largest with the field's pad value (its codec's
  :meth:`~recordkit.Codec.pad_value`: zeros, or the mask codec's ``ignore_index``; empty
  strings for text);
* :func:`fit_images` brings images ``[B, (H), (W), C]`` or masks ``[B, (H), (W)]`` to one
  size (resize, resize with pad, or crop or pad at the centre or at random), padding
  with the pad value too;
* :func:`crop_offsets` is where each record's crop window starts: at the centre, or at
  random from uniform draws that the reader shares between a record's fields, so that
  an image and its mask of one size are cut at the same place;
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
from typing import Any

from recordkit.codec._geometry import Fit

__all__ = [
    "CROP_FITS",
    "LOOP_MIN_VALUES",
    "OFFSET_SUFFIX",
    "SHAPE_SUFFIX",
    "ImageFit",
    "Size",
    "crop_at",
    "crop_offsets",
    "dense_record",
    "fit_images",
    "fit_scaled",
    "pad_into",
    "pad_ragged",
    "resize_scaled_window",
    "row_shapes",
]

#: Suffix of the output that holds each record's true shape when a field is padded,
#: resized, cropped: ``"<field>/shape"``.
SHAPE_SUFFIX = "/shape"
#: Suffix of the output that holds where a cropped field's window starts in each
#: record: ``"<field>/offset"``, ``[top, left]`` (negative where padding comes first).
OFFSET_SUFFIX = "/offset"

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

#: A rectangular ragged batch with at least this many values is padded record by
#: record; a smaller one with ``to_tensor`` (cheaper below this size).
LOOP_MIN_VALUES = 1 << 15


def pad_into(out: dict[str, Any], path: str, value: Any, pad_value: int | float = 0) -> None:
    """Replace each ragged tensor under ``path`` with one padded with ``pad_value``, and
    add its row shapes."""
    import tensorflow as tf

    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, tf.RaggedTensor):
                out[f"{path}/{key}{SHAPE_SUFFIX}"] = row_shapes(item)
                value[key] = pad_ragged(item, pad_value)
        return
    if isinstance(value, tf.RaggedTensor):
        out[path + SHAPE_SUFFIX] = row_shapes(value)
        out[path] = pad_ragged(value, pad_value)


def pad_constant(dtype: Any, pad_value: int | float) -> Any:
    """``pad_value`` as a scalar of ``dtype`` (strings: the empty string; booleans: True
    for a nonzero value), or None for 0, which ``to_tensor`` pads with by default."""
    import tensorflow as tf

    if dtype == tf.string:
        return None
    if pad_value == 0:
        return None
    if dtype == tf.bool:
        return tf.constant(bool(pad_value))
    return tf.constant(pad_value, dtype)


def _filled(shape: Any, dtype: Any, pad_value: int | float) -> Any:
    """A tensor of ``shape`` holding the pad value (zeros for 0, and for strings)."""
    import tensorflow as tf

    value = pad_constant(dtype, pad_value)
    return tf.zeros(shape, dtype) if value is None else tf.fill(shape, value)


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
    widths = tf.maximum(tf.math.unsorted_segment_max(row_widths, value.value_rowids(), value.nrows()), 0)
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


def pad_ragged(value: Any, pad_value: int | float = 0) -> Any:
    """``value`` dense, padded with ``pad_value`` (strings: empty strings) to the batch's
    largest: what ``value.to_tensor(default_value=pad_value)`` gives, record by record
    for large rectangular batches."""
    import tensorflow as tf

    if not isinstance(value, tf.RaggedTensor):
        return value
    default = pad_constant(value.dtype, pad_value)

    def to_tensor() -> Any:
        return value.to_tensor(default_value=default)

    if value.ragged_rank == 1:
        return _pad_rows(value, to_tensor)
    if value.ragged_rank != 2:
        return to_tensor()
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
        zeros = _filled(tf.concat([largest, inner], 0), flat.dtype, pad_value)  # the padding
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
    return tf.cond(rectangular & large & (value.nrows() > 0), by_record, to_tensor)


def _pad_rows(value: Any, to_tensor: Callable[[], Any]) -> Any:
    """A ragged rank 1 batch ``[B, (n), ...]`` dense: only reshaped when every row has the
    same length (audio clips of one duration, say), else ``to_tensor()``."""
    import tensorflow as tf

    lengths = value.row_lengths()
    longest = tf.reduce_max(tf.concat([lengths, [0]], 0))
    flat = value.values

    def reshape() -> Any:
        shape = tf.concat([tf.stack([value.nrows(), longest]), tf.shape(flat, out_type=tf.int64)[1:]], 0)
        return tf.reshape(flat, shape)

    return tf.cond(tf.reduce_all(tf.equal(lengths, longest)), reshape, to_tensor)


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
    heights, widths, rectangular = _rectangles(images)
    if offsets is None:
        offsets = tf.zeros(tf.stack([images.nrows(), 2]), tf.int64)  # unused by the resizes

    def fit_record(image: Any, height: Any, width: Any, offset: Any) -> Any:
        def empty() -> Any:
            return _filled(tf.stack([tf.constant(size[0], tf.int64), size[1], depth]), dtype, pad_value)

        return tf.cond((height > 0) & (width > 0), lambda: fit_one(image, offset), empty)

    def by_record() -> Any:
        count = tf.cast(images.nrows(), tf.int32)
        record = _records(images, heights, widths)
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
