"""The ``image`` codec: one picture per record, stored as encoded PNG or JPEG bytes.

A record gives encoded bytes, a path, a PIL image or a uint8 numpy array (``H x W`` or
``H x W x C`` with C in 1, 3, 4). What is stored is always an encoded image (never a
list of pixels) under the field's own key, with its ``height``, ``width`` and
``channels`` as int64 next to it, so a reader knows the shape before decoding and can
check the decoded image against it.

``format`` chooses the bytes: ``png`` (lossless), ``jpeg`` (lossy, at ``quality``) or
``keep`` (inputs already in one of ``keep_formats``, JPEG and PNG by default, are stored
byte for byte after checking them; anything else is encoded as ``fallback``, PNG by
default). Decoding gives uint8 ``[H, W, C]``: in TensorFlow
a batch is dense ``[B, H, W, C]`` when the schema declares ``height`` and ``width`` and a
``tf.RaggedTensor`` ``[B, (H), (W), C]`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

import numpy as np
import pydantic
from PIL import Image

import recordkit as rk
from recordkit_codecs import _pillow, _raster
from recordkit_codecs._image_header import header_shape, header_shapes_tf
from recordkit_codecs._inputs import read_input_bytes
from recordkit_codecs._tf_images import decode_image_batch

__all__ = ["ImageCodec", "ImageOptions"]

Byte = Annotated[int, pydantic.Field(ge=0, le=255)]
#: The encodings an image is stored in.
EncodedFormat = Literal["jpeg", "png"]

_MODES = {1: "L", 3: "RGB", 4: "RGBA"}
# Pillow modes reduced to L / LA / RGB / RGBA before anything else happens.
_GRAY = {"1": "L", "L": "L", "LA": "LA", "La": "LA"}
_COLOUR = {"RGB": "RGB", "RGBA": "RGBA", "RGBa": "RGBA", "PA": "RGBA"}
# Pillow modes with more than 8 bits per sample: converting them would lose precision.
_DEEP_MODES = ("I", "F")


class ImageOptions(rk.CodecOptions):
    """Options of the ``image`` codec."""

    format: Literal["jpeg", "png", "keep"] = pydantic.Field(
        default="png",
        description="png (lossless), jpeg (lossy, at quality), or keep: store JPEG/PNG inputs unchanged.",
    )
    quality: int = pydantic.Field(default=95, ge=1, le=100, description="JPEG quality (format jpeg).")
    channels: Literal[1, 3, 4] | None = pydantic.Field(
        default=None,
        description="Convert every image to 1 (L), 3 (RGB) or 4 (RGBA) channels; None keeps the input's.",
    )
    alpha: Literal["error", "flatten"] = pydantic.Field(
        default="error",
        description="When transparency must go (JPEG, or channels 1/3): error, or composite onto background.",
    )
    background: tuple[Byte, Byte, Byte] = pydantic.Field(
        default=(0, 0, 0), description="RGB colour that alpha: flatten composites onto."
    )
    keep_formats: list[EncodedFormat] = pydantic.Field(
        default_factory=lambda: list(get_args(EncodedFormat)),
        min_length=1,
        description="With format keep: the input formats stored byte for byte.",
    )
    fallback: EncodedFormat = pydantic.Field(
        default="png",
        description="With format keep: how inputs that are not kept are encoded (jpeg at quality).",
    )
    verify: Literal["structure", "decode"] = pydantic.Field(
        default="structure",
        description=(
            "How format keep checks bytes it stores unchanged: structure (header, pixel limit, PNG "
            "chunk CRCs, JPEG end marker; no pixel decoding) or decode (a full decode as well)."
        ),
    )
    sizes: Literal["stored", "header"] = pydantic.Field(
        default="stored",
        description=(
            "stored: height, width and channels are stored beside the bytes; header: only the "
            "encoded bytes are stored (as TensorFlow Datasets does) and readers take the shape "
            "from the image header."
        ),
    )
    max_pixels: int = _raster.max_pixels_field()
    height: int | None = _raster.side_field("height", "image")
    width: int | None = _raster.side_field("width", "image")

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> ImageOptions:
        _raster.check_options(self.height, self.width, self.max_pixels)
        if self.encoding == "jpeg" and self.channels == 4:
            raise ValueError(
                "JPEG cannot store 4 channels (alpha): use format png, or channels 3 with alpha flatten"
            )
        return self

    @property
    def encoding(self) -> EncodedFormat:
        """How images that are encoded here (not kept as given) are encoded."""
        return self.fallback if self.format == "keep" else self.format


class ImageCodec(rk.Codec[ImageOptions]):
    """An image stored as encoded PNG or JPEG bytes with its height, width and channels."""

    name = "image"
    version = "1"
    options_model = ImageOptions
    summary = "an image stored as encoded PNG/JPEG bytes with height, width, channels"
    raster = "pixels"

    # -- wire ------------------------------------------------------------------------

    def wire_spec(self) -> rk.WireSpec:
        encoded = rk.WireFeature("", rk.WireKind.BYTES, (), f"the image, encoded ({self.options.format})")
        if self.options.sizes == "header":
            return rk.WireSpec((encoded,))
        return rk.WireSpec(
            (
                encoded,
                rk.WireFeature("height", rk.WireKind.INT64, (), "height in pixels"),
                rk.WireFeature("width", rk.WireKind.INT64, (), "width in pixels"),
                rk.WireFeature("channels", rk.WireKind.INT64, (), "channels of the decoded image: 1, 3, 4"),
            )
        )

    @property
    def fixed_size(self) -> tuple[int, int] | None:
        """``(height, width)`` when the schema declares a fixed size."""
        return _raster.fixed_size(self.options.height, self.options.width)

    # -- encode ----------------------------------------------------------------------

    def encode(self, value: Any) -> rk.WireValues:
        wire = self._encode(value)
        if self.options.sizes == "header":
            return {"": wire[""]}
        return wire

    def _encode(self, value: Any) -> rk.WireValues:
        options = self.options
        data = read_input_bytes(value, "image")
        if data is not None:
            image = self._open_bytes(data)
            if isinstance(image, dict):
                return image  # kept unchanged
        elif isinstance(value, Image.Image):
            image = value
            _pillow.check_pixels(image.width, image.height, options.max_pixels)
            _pillow.load(image)
        elif isinstance(value, np.ndarray):
            image = _from_array(value)
            _pillow.check_pixels(image.width, image.height, options.max_pixels)
        else:
            raise rk.errors.InvalidValueError(
                "expected encoded image bytes, a path, a PIL image or a uint8 numpy array, "
                f"got {type(value).__name__}"
            )
        self._check_size(image.width, image.height)
        fmt = "JPEG" if options.encoding == "jpeg" else "PNG"
        image = self._convert(image, fmt)
        return {
            "": _pillow.save(image, fmt, quality=options.quality),
            "height": image.height,
            "width": image.width,
            "channels": len(image.getbands()),
        }

    def _open_bytes(self, data: bytes) -> Image.Image | dict[str, Any]:
        """Decode input bytes; with format keep, the wire values of the unchanged bytes
        when they can be stored as they are."""
        header = _pillow.read_header(data)
        keep = (
            self.options.format == "keep"
            and header is not None
            and header.format.lower() in self.options.keep_formats
        )
        if keep and header is not None and self.options.verify == "structure":
            _pillow.check_pixels(header.width, header.height, self.options.max_pixels)
            channels = _pillow.check_structure(data, header)
            if channels is not None and self.options.channels in (None, channels):
                self._check_size(header.width, header.height)
                return {"": data, "height": header.height, "width": header.width, "channels": channels}
        image = _pillow.open_image(data, self.options.max_pixels, verify=keep)
        if keep and header is not None:
            channels = _keepable_channels(header, image)
            if channels is not None and self.options.channels in (None, channels):
                self._check_size(image.width, image.height)
                return {"": data, "height": image.height, "width": image.width, "channels": channels}
        return image

    def _check_size(self, width: int, height: int) -> None:
        _raster.check_fixed_size("image", height, width, self.fixed_size)

    def _convert(self, image: Image.Image, fmt: str) -> Image.Image:
        """Bring ``image`` to L, RGB or RGBA as the options ask (see the module docs)."""
        options = self.options
        image = _reduce_mode(image)
        gray = image.mode in ("L", "LA")
        has_alpha = image.mode in ("LA", "RGBA")
        target = options.channels
        if target is None:
            target = 4 if has_alpha and fmt == "PNG" else (1 if gray else 3)
        # Alpha that must go is an error (or flattened), unless it is opaque and carries nothing.
        if has_alpha and target != 4 and image.getchannel("A").getextrema() != (255, 255):
            if options.alpha == "error":
                why = "JPEG cannot store it" if fmt == "JPEG" else f"channels is {target}"
                raise rk.errors.InvalidValueError(
                    f"the image has transparent pixels (alpha) and {why}; set the codec option "
                    "alpha: flatten to composite it onto the background colour, or store it as png with "
                    "4 channels"
                )
            image = _flatten(image, options.background)
        mode = _MODES[target]
        return image if image.mode == mode else image.convert(mode)

    # -- decode ----------------------------------------------------------------------

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        if self.options.sizes == "header":
            height, width, channels = header_shape(bytes(wire[""]), self.options.channels)
        else:
            height, width, channels = (int(wire[k]) for k in ("height", "width", "channels"))
        mode = _MODES.get(self.options.channels or channels)
        if mode is None:
            raise rk.errors.DecodeError(
                f"the record stores {channels} channels; the image codec stores 1, 3 or 4"
            )
        pixels = _pillow.decode_array(wire[""], self.options.max_pixels, mode)
        pixels = pixels.reshape(pixels.shape[0], pixels.shape[1], -1)
        if pixels.shape != (height, width, channels):
            raise rk.errors.DecodeError(
                f"image codec: the decoded image is {pixels.shape} (height, width, channels), "
                f"the record stores ({height}, {width}, {channels})"
            )
        return pixels

    def decode_tf_source(self) -> rk.DecodeSource | None:
        """decode_tf as standalone code, for ``recordkit codegen`` (None, not yet written
        out, for data read as TFDS stored it)."""
        from recordkit_codecs._standalone import image_source

        if self.options.sizes == "header":
            return None
        return image_source(self.options)

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return self._decode_batch(wire, pad=False)

    def decode_tf_padded(self, wire: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """The batch's images padded to its largest as they are decoded, and their shapes
        (None for a fixed size: those batch densely, there is nothing to pad)."""
        if self.fixed_size is not None:
            return None
        images, shapes = self._decode_batch(wire, pad=True)
        return images, shapes

    def _decode_batch(self, wire: Mapping[str, Any], *, pad: bool) -> Any:
        import tensorflow as tf

        fmt = self.options.format
        depth = self.options.channels or 0

        def jpeg(data: Any) -> Any:
            # INTEGER_ACCURATE is libjpeg's ISLOW, the method Pillow uses: both readers agree.
            return tf.io.decode_jpeg(data, channels=depth, dct_method="INTEGER_ACCURATE")

        def png(data: Any) -> Any:
            return tf.io.decode_png(data, channels=depth, dtype=tf.uint8)

        def decode_one(data: Any) -> Any:
            if fmt == "jpeg":
                return jpeg(data)
            if fmt == "png":
                return png(data)
            return tf.cond(tf.io.is_jpeg(data), lambda: jpeg(data), lambda: png(data))

        if self.options.sizes == "header":
            heights, widths, channels = header_shapes_tf(wire[""], self.options.channels)
        else:
            heights, widths, channels = wire["height"], wire["width"], wire["channels"]
        return decode_image_batch(
            wire[""],
            heights,
            widths,
            channels,
            decode_one=decode_one,
            static_channels=self.options.channels,
            fixed_size=self.fixed_size,
            codec=self.name,
            pad=pad,
        )


def _from_array(array: np.ndarray) -> Image.Image:
    if array.dtype != np.uint8:
        raise rk.errors.InvalidValueError(
            f"an image array must be uint8 (0..255), got {array.dtype}; convert it first"
        )
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if not (array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (3, 4))):
        raise rk.errors.InvalidValueError(
            f"an image array must be H x W or H x W x C with C in 1, 3, 4; got shape {array.shape}"
        )
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise rk.errors.InvalidValueError(f"the image array is empty (shape {array.shape})")
    mode = "L" if array.ndim == 2 else _MODES[array.shape[2]]
    return Image.fromarray(np.ascontiguousarray(array), mode=mode)


def _reduce_mode(image: Image.Image) -> Image.Image:
    """``image`` in one of L, LA, RGB, RGBA (transparency made an alpha channel)."""
    mode = image.mode
    if mode in _DEEP_MODES or mode.startswith("I;"):
        raise rk.errors.InvalidValueError(
            f"the image has more than 8 bits per sample (Pillow mode {mode}); the image codec stores "
            "8-bit images: convert it first, or store the array with the tensor codec"
        )
    transparent = "transparency" in image.info
    if mode == "P":
        return image.convert("RGBA" if transparent else "RGB")
    if mode in _GRAY:
        target = "LA" if transparent and mode == "L" else _GRAY[mode]
        return image if mode == target else image.convert(target)
    if mode in _COLOUR:
        target = "RGBA" if transparent and mode == "RGB" else _COLOUR[mode]
        return image if mode == target else image.convert(target)
    return image.convert("RGB")  # CMYK, YCbCr, LAB, HSV, RGBX ...


def _flatten(image: Image.Image, background: tuple[int, int, int]) -> Image.Image:
    """Composite ``image`` onto an opaque ``background``; gray stays gray."""
    base = Image.new("RGBA", image.size, (*background, 255))
    base.alpha_composite(image.convert("RGBA"))
    return base.convert("L" if image.mode == "LA" else "RGB")


def _keepable_channels(header: _pillow.Header, image: Image.Image) -> int | None:
    """The channel count of input bytes that can be stored unchanged, or None.

    Kept bytes must decode to the same pixels in TensorFlow and in Pillow: 8-bit gray,
    RGB or RGBA PNGs without a tRNS chunk, and gray or RGB JPEGs.
    """
    if "transparency" in image.info:
        return None
    if header.format == "PNG":
        if header.bit_depth != 8:
            return None
        if image.mode not in ("L", "RGB", "RGBA") or header.color_type is None:
            return None
        return {0: 1, 2: 3, 6: 4}.get(header.color_type)
    return {"L": 1, "RGB": 3}.get(image.mode)


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``image`` codec."""
    registry.register(ImageCodec)
