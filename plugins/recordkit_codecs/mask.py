"""The ``mask`` codec: a segmentation mask of class indices, stored as a lossless PNG.

Segmentation masks such as Pascal VOC's are palette ("P" mode) PNGs whose pixel values
are class indices and whose palette only colours them for people. The mask codec keeps
the *indices*: a record gives a palette or grayscale PIL image, a PNG (bytes or path)
or a 2-D integer array, and the codec stores the indices as an 8-bit grayscale PNG
(so TensorFlow's ``decode_png`` returns the indices too, not palette colours) with the
mask's ``height`` and ``width``. ``num_classes`` checks every index, allowing
``ignore_index`` (255, VOC's "void" border, by default).

Decoding gives uint8 ``[H, W]``: in TensorFlow a batch is dense ``[B, H, W]`` when the
schema declares ``height`` and ``width`` and a ``tf.RaggedTensor`` ``[B, (H), (W)]``
otherwise. Readers pad masks with ``ignore_index`` (:meth:`MaskCodec.pad_value`), not 0:
0 is a class (VOC's background), and padding must be what losses ignore.

With ``sizes: header`` only the PNG is stored (as TensorFlow Datasets and other tools
write masks): readers take each mask's height and width from its PNG header (IHDR),
without decoding pixels, as the ``image`` codec does with the same option.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import numpy as np
import pydantic
from PIL import Image

import recordkit as rk
from recordkit_codecs import _pillow, _raster
from recordkit_codecs._image_header import header_shape, header_shapes_tf
from recordkit_codecs._inputs import read_input_bytes
from recordkit_codecs._tf_images import decode_image_batch, decode_image_checked

__all__ = ["MaskCodec", "MaskOptions"]

_INDEX_MODES = ("P", "L", "1")
#: Key names that hold masks (``segmentation_mask``, ``image/mask``, ``label/png``).
_MASK_HINT = re.compile(r"(^|[/_])(mask|masks|segmentation|segmentation_mask|seg|label)([/_](png|encoded))?$")


class MaskOptions(rk.CodecOptions):
    """Options of the ``mask`` codec."""

    num_classes: int | None = pydantic.Field(
        default=None,
        ge=1,
        le=256,
        description="Indices must be below this (ignore_index aside); None: no check.",
    )
    ignore_index: int | None = pydantic.Field(
        default=255,
        ge=0,
        le=255,
        description="An index allowed besides the classes (VOC's void border: 255).",
    )
    sizes: Literal["stored", "header"] = pydantic.Field(
        default="stored",
        description=(
            "stored: height and width are stored beside the PNG; header: only the PNG is "
            "stored (as TensorFlow Datasets does) and readers take the size from its header."
        ),
    )
    max_pixels: int = _raster.max_pixels_field()
    height: int | None = _raster.side_field("height", "mask")
    width: int | None = _raster.side_field("width", "mask")

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> MaskOptions:
        _raster.check_options(self.height, self.width, self.max_pixels)
        return self


class MaskCodec(rk.Raster, rk.Codec[MaskOptions]):
    """A single-channel mask of class indices, stored as a grayscale PNG."""

    name = "mask"
    version = "1"

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "sc:ImageObject"

    options_model = MaskOptions
    summary = "a segmentation mask of class indices, stored as a lossless PNG"
    raster = "indices"  # resized nearest-neighbour only
    # Before the image codec, which takes any PNG.
    adopt_order = 150

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Iterator[rk.Adoption | rk.LeftOut]:
        """Foreign 8-bit grayscale PNGs, one per record, under a key named like a mask
        (``segmentation_mask``, ``image/mask``, ``label/png``): class indices. Their
        height and width keys (``<prefix>/height``, ``<prefix>_width``) are used when
        there are some, and otherwise each mask's size is read from its header
        (``sizes: header``, as TFDS stores masks). Palette PNGs are left to the image
        codec: TensorFlow decodes them to colours, not indices."""
        for stats in records.unclaimed():
            key = stats.key
            if records.claimed(key) or stats.kind is not rk.WireKind.BYTES or not stats.scalar:
                continue
            if not _MASK_HINT.search(key):
                continue
            if not _gray_pngs(stats):
                continue
            prefix = re.sub(r"[/_](png|encoded)$", "", key)
            height = records.int_scalar(f"{prefix}/height", f"{prefix}_height")
            width = records.int_scalar(f"{prefix}/width", f"{prefix}_width")
            if height is None or width is None:
                yield rk.Adoption(
                    claims=(key,),
                    name=prefix,
                    options={"sizes": "header"},
                    keys={"": key},
                    description=f"8-bit grayscale PNG masks in {key}, sizes read from their headers",
                )
                continue
            yield rk.Adoption(
                claims=(key, height, width),
                name=prefix,
                keys={"": key, "height": height, "width": width},
                description=f"8-bit grayscale PNG masks in {key}",
            )

    def wire_spec(self) -> rk.WireSpec:
        encoded = rk.WireFeature("", rk.WireKind.BYTES, (), "the class indices as an 8-bit grayscale PNG")
        if self.options.sizes == "header":
            return rk.WireSpec((encoded,))
        return rk.WireSpec(
            (
                encoded,
                rk.WireFeature("height", rk.WireKind.INT64, (), "height in pixels"),
                rk.WireFeature("width", rk.WireKind.INT64, (), "width in pixels"),
            )
        )

    @property
    def fixed_size(self) -> tuple[int, int] | None:
        """``(height, width)`` when the schema declares a fixed size."""
        return _raster.fixed_size(self.options.height, self.options.width)

    # -- encode ----------------------------------------------------------------------

    # -- showing, counting and converting (optional capabilities) ------------------

    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        """Each class tinted in its colour, named in the legend; the ``ignore_index``
        in white; one instance of a sequence of masks in the colour of its position
        (rk.Drawable)."""
        mask = _as_indices(value)
        if canvas.item is not None:
            colour = canvas.color(canvas.item)
            canvas.legend[canvas.label] = colour
            canvas.tint(mask, {1: colour})
            return
        ignore = self.options.ignore_index
        present = sorted(int(c) for c in np.unique(mask) if int(c) not in (0, ignore))
        colors = {c: canvas.color(c) for c in present}
        canvas.legend.update({f"{canvas.label} class {c}": canvas.color(c) for c in present})
        if ignore is not None and (mask == ignore).any():
            colors[ignore] = (255, 255, 255)
            canvas.legend[f"{canvas.label} ignore ({ignore})"] = (255, 255, 255)
        canvas.tint(mask, colors)

    def backdrop_size(self, value: Any) -> tuple[int, int]:
        """A mask covers a picture of its own height and width (rk.Backdrop)."""
        mask = _as_indices(value)
        return int(mask.shape[0]), int(mask.shape[1])

    def summarize(self, value: Any) -> rk.Statistics:
        """Pixels per class index (rk.Summarized)."""
        counts = np.bincount(_as_indices(value).reshape(-1).astype(np.int64))
        return {"mask_pixels": {str(c): int(n) for c, n in enumerate(counts) if n}}

    def encode(self, value: Any) -> rk.WireValues:
        indices = self._indices(value)
        height, width = indices.shape
        _raster.check_fixed_size("mask", height, width, self.fixed_size)
        self._check_classes(indices)
        data = _pillow.save(Image.fromarray(indices, mode="L"), "PNG")
        if self.options.sizes == "header":
            return {"": data}
        return {"": data, "height": height, "width": width}

    def _indices(self, value: Any) -> np.ndarray:
        """The mask's class indices as a contiguous uint8 ``[H, W]`` array."""
        max_pixels = self.options.max_pixels
        data = read_input_bytes(value, "mask")
        if data is not None:
            header = _pillow.read_header(data)
            if header is None or header.format != "PNG":
                kind = header.format if header is not None else "not PNG"
                raise rk.errors.InvalidValueError(
                    f"mask bytes must be a PNG (lossless), got {kind}: a lossy format changes class indices"
                )
            value = _pillow.open_image(data, max_pixels)
        if isinstance(value, Image.Image):
            _pillow.check_pixels(value.width, value.height, max_pixels)
            _pillow.load(value)
            if value.mode not in _INDEX_MODES:
                raise rk.errors.InvalidValueError(
                    f"a mask must be single-channel class indices (Pillow mode P, L or 1), got mode "
                    f"{value.mode}; map colours to class indices first"
                )
            return np.ascontiguousarray(np.asarray(value).astype(np.uint8, copy=False))
        if isinstance(value, np.ndarray):
            return self._from_array(value)
        raise rk.errors.InvalidValueError(
            "expected a PNG (bytes or path), a P/L mode PIL image or a 2-D integer array, "
            f"got {type(value).__name__}"
        )

    def _from_array(self, array: np.ndarray) -> np.ndarray:
        if array.ndim == 3 and array.shape[2] == 1:
            array = array[:, :, 0]
        if array.ndim != 2:
            raise rk.errors.InvalidValueError(f"a mask array must be H x W, got shape {array.shape}")
        if array.shape[0] == 0 or array.shape[1] == 0:
            raise rk.errors.InvalidValueError(f"the mask array is empty (shape {array.shape})")
        if array.dtype.kind not in "iu":
            raise rk.errors.InvalidValueError(
                f"a mask array holds integer class indices, got dtype {array.dtype}"
            )
        _pillow.check_pixels(array.shape[1], array.shape[0], self.options.max_pixels)
        if array.dtype != np.uint8:
            low, high = int(array.min()), int(array.max())
            if low < 0 or high > 255:
                raise rk.errors.InvalidValueError(
                    f"mask indices must be in 0..255 to fit a uint8 PNG, got values from {low} to {high}"
                )
        return np.ascontiguousarray(array, dtype=np.uint8)

    def _check_classes(self, indices: np.ndarray) -> None:
        num_classes = self.options.num_classes
        if num_classes is None:
            return
        bad = indices >= num_classes
        ignore = self.options.ignore_index
        if ignore is not None:
            bad &= indices != ignore
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            values = sorted({int(v) for v in np.unique(indices[bad])})
            allowed = f"0..{num_classes - 1}"
            if ignore is not None:
                allowed += f" or the ignore index {ignore}"
            raise rk.errors.InvalidValueError(
                f"mask holds index {indices[row, col]} at row {row}, column {col} (all bad values: "
                f"{values[:10]}); num_classes is {num_classes}, so indices must be {allowed}"
            )

    def pad_value(self) -> int:
        """Padding added by readers holds ``ignore_index`` (0 when there is none)."""
        ignore = self.options.ignore_index
        return 0 if ignore is None else ignore

    # -- decode ----------------------------------------------------------------------

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        if self.options.sizes == "header":
            height, width, _ = header_shape(bytes(wire[""]), 1)
        else:
            height, width = int(wire["height"]), int(wire["width"])
        image = _pillow.open_image(wire[""], self.options.max_pixels, error=rk.errors.DecodeError)
        if image.mode not in _INDEX_MODES:
            raise rk.errors.DecodeError(
                f"mask codec: the stored PNG is mode {image.mode}, not single-channel"
            )
        indices = np.asarray(image).astype(np.uint8, copy=False)
        if indices.shape != (height, width):
            raise rk.errors.DecodeError(
                f"mask codec: the decoded mask is {indices.shape} (height, width), the record stores "
                f"({height}, {width})"
            )
        return indices

    def decode_tf_source(self) -> rk.DecodeSource:
        """:func:`decode_mask_tf` with this field's size and padding value: what decode_tf
        (and, with ``pad=True``, decode_tf_padded) runs and ``recordkit codegen`` copies."""
        return rk.DecodeSource(
            decode_mask_tf,
            {"fixed_size": self.fixed_size, "pad_value": self.pad_value(), "sizes": self.options.sizes},
            helpers=(decode_image_batch, decode_image_checked, header_shapes_tf),
        )

    def decode_tf_padded(self, wire: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """The batch's masks padded (with :meth:`pad_value`) to its largest as they are
        decoded, and their shapes (None for a fixed size: those batch densely, there is
        nothing to pad)."""
        if self.fixed_size is not None:
            return None
        masks, shapes = self.decode_tf_source()(wire, pad=True)
        return masks, shapes


def decode_mask_tf(
    wire: Mapping[str, Any],
    fixed_size: tuple[int, int] | None,
    pad_value: int,
    pad: bool = False,
    sizes: str = "stored",
) -> Any:
    """The batched TensorFlow decode of a mask field: uint8 class indices ``[B, H, W]``
    (ragged ``[B, (H), (W)]`` unless the schema fixes the size); with ``pad``, ``(masks
    padded with pad_value to the batch's largest, their [height, width])``; with
    ``sizes`` ``header``, each mask's size from its PNG header. Generated parser modules
    carry a copy of this function."""
    import tensorflow as tf

    if sizes == "header":  # no stored sizes (TFDS stores none): read each PNG's header
        heights, widths, _ = header_shapes_tf(wire[""], 1)
    else:
        heights, widths = wire["height"], wire["width"]
    decoded = decode_image_batch(
        wire[""],
        heights,
        widths,
        None,
        decode_one=lambda data: tf.io.decode_png(data, channels=1, dtype=tf.uint8),
        static_channels=1,
        fixed_size=fixed_size,
        codec="mask",
        pad=pad,
        pad_value=pad_value,
    )
    if pad:
        masks, shapes = decoded
        return tf.squeeze(masks, axis=-1), shapes[:, :2]
    if isinstance(decoded, tf.RaggedTensor):
        return decoded.with_flat_values(tf.reshape(decoded.flat_values, [-1]))
    return tf.squeeze(decoded, axis=-1)


def _gray_pngs(stats: rk.ForeignKey) -> bool:
    """Whether every sampled value of ``stats`` is an 8-bit grayscale PNG (by its header)."""
    found = False
    for data in stats.first_bytes():
        try:
            header = _pillow.read_header(data)
        except rk.errors.InvalidValueError:
            return False
        if header is None or header.format != "PNG" or (header.color_type, header.bit_depth) != (0, 8):
            return False
        found = True
    return found


def _as_indices(value: Any) -> np.ndarray:
    """A decoded mask as ``[H, W]`` class indices (a trailing channel of 1 dropped)."""
    mask = np.asarray(value)
    return mask[..., 0] if mask.ndim == 3 and mask.shape[2] == 1 else mask


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``mask`` codec."""
    registry.register(MaskCodec)
