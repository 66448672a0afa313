"""One record's values in the per-record step of a ``tf.data`` read
(:func:`recordkit.read._per_record.record_decoder`): a picture decoded and fitted to its
size (decoding only a crop's window, or at a reduced scale, where the codec can), and a
value whose codec decodes record by record, each through its codec's batched decode of a
batch of one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recordkit.codec._capabilities import Raster, padded_decode
from recordkit.codec._geometry import ImageTransform
from recordkit.read._dense import OFFSET_SUFFIX, SHAPE_SUFFIX, dense_record
from recordkit.read._image_fit import CROP_FITS, SCALED_KERNELS, ImageFit, crop_at, crop_offsets, fit_scaled
from recordkit.read._layout import DecodeLayout
from recordkit.read._tf_geometry import (
    batch_of_one,
    flipped,
    random_resized_crop,
    scaled_random_resized_crop,
    transform_of,
    window_of,
)
from recordkit.schema._bound import BoundField

__all__ = ["RecordWire", "decode_picture", "decode_value"]


class RecordWire:
    """One record's wire values of a field, as the record's own (:attr:`values`) and as a
    batch of one (:attr:`one`, static size 1: what the codecs' batched decodes take),
    each built in the graph when first asked for.

    The per-record step after ``unbatch`` holds the record's own values, and makes the
    batch of one by one ``ExpandDims`` a key; a read that parses each record itself
    parses it as a batch of one (``tf.io.parse_example`` of ``[serialized]``), whose
    values already are that batch: no op a key on the common path, and the record's own
    values (for a crop's stored size) only where a path asks for them."""

    def __init__(self, values: dict[str, Any] | None = None, *, one: dict[str, Any] | None = None) -> None:
        if (values is None) == (one is None):
            raise ValueError("a RecordWire is given either the record's values or its batch of one")
        self._values = values
        self._one = one

    def __contains__(self, key: object) -> bool:
        """Whether the field's wire values hold ``key``."""
        given = self._values if self._values is not None else self._one
        return given is not None and key in given

    @property
    def values(self) -> dict[str, Any]:
        """The record's own wire values (each without the batch dimension)."""
        import tensorflow as tf

        if self._values is None:
            assert self._one is not None
            self._values = {key: tf.squeeze(value, [0]) for key, value in self._one.items()}
        return self._values

    @property
    def one(self) -> dict[str, Any]:
        """The record's wire values as a batch of one (static size 1)."""
        if self._one is None:
            assert self._values is not None
            self._one = batch_of_one(self._values)
        return self._one


def decode_picture(
    field: BoundField, wire: RecordWire, layout: DecodeLayout, draws: Any, dense: bool
) -> tuple[dict[str, Any], Callable[[], ImageTransform]]:
    """One record's picture: decoded, and fitted to its size (a crop decodes only its
    window where the codec can) and flipped, with its shape (and the crop's offset)
    where the batched decode gives them; as a ragged ``[(H), (W), ...]`` when it is
    batched ragged. With it, where its points went (for the fields tied to it), built
    in the graph only when called: the ops of a transform no field follows would still
    be optimized and instantiated at every iterator (1 to 4 ms of CPU)."""
    import tensorflow as tf

    name = field.name
    geometry = layout.geometry
    fit = geometry.fit
    flip = draws[4] < geometry.flip if draws is not None and geometry.flip else tf.constant(False)
    size = layout.sizes.get(name)
    out: dict[str, Any] = {}
    if size is not None:
        cropped = _decode_crop(field, wire, layout, fit, draws) if fit in CROP_FITS else None
        scaled = None if fit in CROP_FITS else _decode_scaled(field, wire, layout, draws)
        if cropped is not None:
            value, shape, out[name + OFFSET_SUFFIX] = cropped
        elif scaled is not None:
            value, shape = scaled
        else:
            value = _decode_one(field, wire)
            shape = tf.shape(value, out_type=tf.int64)
            if fit == "random_resized_crop":
                window = window_of(shape, size, geometry, draws)
                value = random_resized_crop(value, window[0], size, layout.methods[name])
            else:
                one_draw = None if draws is None else draws[None]
                fitted, offsets = layout.fit(name, value[None], shape[None], one_draw, fit)
                value = fitted[0]
                if offsets is not None:
                    out[name + OFFSET_SUFFIX] = offsets[0]
        out[name + SHAPE_SUFFIX] = shape
        value = tf.ensure_shape(value, [*size, *value.shape[2:]])
        out[name] = flipped(value, flip) if geometry.flip else value
        output = tf.constant(size, tf.int64)
        return out, lambda: transform_of(window_of(shape, size, geometry, draws), shape, output, flip)
    value = _decode_one(field, wire)
    shape = tf.shape(value, out_type=tf.int64)
    if geometry.flip:
        value = flipped(value, flip)
    if dense and name in layout.padded and not value.shape[:2].is_fully_defined():  # not a fixed size
        out[name + SHAPE_SUFFIX] = shape
    elif not dense and not value.shape.is_fully_defined():
        # Batched as ragged [B, (H), (W), ...], as the batched decode gives it
        # (ragged_batch would make an unknown channel count ragged as well).
        value = tf.RaggedTensor.from_tensor(value, ragged_rank=1, row_splits_dtype=tf.int64)
    out[name] = value
    return out, lambda: transform_of(window_of(shape, None, geometry, draws), shape, shape, flip)


def _decode_one(field: BoundField, wire: RecordWire) -> Any:
    """One record's value of ``field``, dense: its codec's decode of the record's own wire
    values (:meth:`~recordkit.Raster.decode_tf_record`) where it has one, else its
    batched decode of the record's batch of one (static size 1, which lets a codec take a
    shorter path) with the record taken out."""
    import tensorflow as tf

    codec = field.codec
    if isinstance(codec, Raster):
        value = codec.decode_tf_record(wire.values)
        if value is not None:
            return value
    one = wire.one
    padded = padded_decode(codec, one)
    if padded is not None and not isinstance(padded[0], dict):
        return tf.squeeze(padded[0], [0])
    return tf.nest.map_structure(_only_record, codec.decode_tf(one))


def decode_value(field: BoundField, wire: RecordWire) -> tuple[Any, Any]:
    """One record's value of a field decoded record by record (not a picture): its
    codec's batched decode of a batch of one (static size 1), dense, and the type spec of
    that batch of one (ragged where the batched decode is), which says what the
    per-record step pads and where it adds ``"<field>/shape"``."""
    import tensorflow as tf

    decoded = field.codec.decode_tf(wire.one)
    return tf.nest.map_structure(_only_record, decoded), tf.nest.map_structure(
        tf.type_spec_from_value, decoded
    )


def _only_record(value: Any) -> Any:
    """The one record of a batch of one, dense. A ragged batch's values are its one
    record's (its row splits are ``[0, len(values)]``): taken as they are, without
    slicing."""
    import tensorflow as tf

    if isinstance(value, tf.RaggedTensor):
        return dense_record(value.values)
    return value[0]


def _decode_crop(
    field: BoundField, wire: RecordWire, layout: DecodeLayout, fit: ImageFit, draws: Any
) -> tuple[Any, Any, Any] | None:
    """One record's picture cut (or padded) to its size, decoding only the window
    (:meth:`~recordkit.Raster.decode_tf_window`), placed from the stored height and width;
    with its shape and offset. None when the codec decodes whole pictures only, or the
    records do not store the size (an image codec reading sizes from headers)."""
    import tensorflow as tf

    codec = field.codec
    if not isinstance(codec, Raster) or codec.size_features is None:
        return None
    if not all(key in wire for key in codec.size_features):
        return None
    name = field.name
    size = layout.sizes[name]
    height_key, width_key = codec.size_features
    sides = tf.cast(tf.stack([wire.values[height_key], wire.values[width_key]]), tf.int64)
    offset = crop_offsets(sides[None], size, fit, None if draws is None else draws[None, :2])[0]
    # The part of the window inside the picture: that is all that is decoded.
    start = tf.clip_by_value(offset, 0, sides)
    stop = tf.clip_by_value(offset + tf.constant(size, tf.int64), 0, sides)
    one = wire.one
    inside = codec.decode_tf_window(one, tf.concat([start, stop - start], 0))
    if inside is None:
        return None
    picture = inside if inside.shape.rank == 3 else inside[..., None]
    window = crop_at(picture, offset - start, size, layout.pad_values[name])
    shape = tf.concat([sides, tf.cast(tf.shape(inside), tf.int64)[2:]], 0)
    window = tf.ensure_shape(window, [*size, *picture.shape[2:]])
    return (window if inside.shape.rank == 3 else window[..., 0]), shape, offset


def _decode_scaled(
    field: BoundField, wire: RecordWire, layout: DecodeLayout, draws: Any
) -> tuple[Any, Any] | None:
    """One record's picture resized to its size (``"resize"``, ``"resize_with_pad"``;
    ``"random_resized_crop"``: :func:`~recordkit.read._tf_geometry.scaled_random_resized_crop`)
    and its full shape: decoded at the scale that covers the size
    (:meth:`~recordkit.Raster.decode_scale_tf`, :meth:`~recordkit.Raster.decode_tf_scaled`:
    a JPEG at 1/2, 1/4 or 1/8) and resized onto the full picture's geometry
    (:func:`~recordkit.read._image_fit.fit_scaled`); at scale 1, the plain decode's pixels
    fitted as ever. Where the dataset's picture sizes fix one scale for all the field's
    pictures (:attr:`~recordkit.read._layout.DecodeLayout.fixed_scales`), that scale, a
    Python int: no choice in the graph. None with ``jpeg_scale="full"``
    (:class:`~recordkit.ImageGeometry`), another fit, a method that does not interpolate
    (``nearest``, ``area``), a codec that decodes at full size only, or a fixed scale
    of 1."""
    import tensorflow as tf

    codec = field.codec
    name = field.name
    method = layout.methods[name]
    geometry = layout.geometry
    resized = geometry.fit in ("resize", "resize_with_pad", "random_resized_crop")
    if (
        geometry.jpeg_scale != "auto"
        or not resized
        or method not in SCALED_KERNELS
        or not isinstance(codec, Raster)
    ):
        return None
    size = layout.sizes[name]
    if geometry.fit == "random_resized_crop":
        return scaled_random_resized_crop(codec, wire.values, size, geometry, method, draws)
    one = wire.one
    fixed = layout.fixed_scales.get(name)
    if fixed == 1:
        return None  # no picture of the dataset scales: the plain decode, no choice in the graph
    scale = fixed if fixed is not None else codec.decode_scale_tf(one, size)
    if scale is None:
        return None
    scaled = codec.decode_tf_scaled(one, scale)
    if scaled is None:
        raise TypeError(f"codec {codec.name!r} gives a decode_scale_tf but no decode_tf_scaled")
    picture, shape = scaled
    flat = picture.shape.rank == 2  # a picture without channels: [h, w]
    pixels = picture[..., None] if flat else picture
    value = fit_scaled(pixels, shape, scale, size, geometry.fit, method, layout.pad_values[name])
    return (value[..., 0] if flat else value), tf.cast(shape, tf.int64)
