"""The ``image`` codec: one picture per record, stored as encoded PNG or JPEG bytes.

A record gives encoded bytes, a path, a PIL image or a uint8 numpy array (``H x W`` or
``H x W x C`` with C in 1, 3, 4). What is stored is always an encoded image (never a
list of pixels) under the field's own key, with its ``height``, ``width`` and
``channels`` as int64 next to it, so a reader knows the shape before decoding and can
check the decoded image against it.

``format`` chooses the bytes: ``png`` (lossless), ``jpeg`` (lossy, at ``quality``) or
``keep`` (inputs already in one of ``keep_formats``, JPEG and PNG by default, are stored
byte for byte after checking them; anything else is encoded as ``fallback``, PNG by
default, or refused with ``fallback: error``). Decoding gives uint8 ``[H, W, C]``: in TensorFlow
a batch is dense ``[B, H, W, C]`` when the schema declares ``height`` and ``width`` and a
``tf.RaggedTensor`` ``[B, (H), (W), C]`` otherwise.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, get_args

import numpy as np
import pydantic
from PIL import Image

import recordkit as rk
from recordkit_codecs import _pillow, _raster
from recordkit_codecs._foreign import formats
from recordkit_codecs._hf import encoded_bytes
from recordkit_codecs._image_header import header_shape, header_shapes_tf
from recordkit_codecs._inputs import read_input_bytes
from recordkit_codecs._jpeg_scale import jpeg_scale, jpeg_scale_tf
from recordkit_codecs._tf_images import (
    decode_image_batch,
    decode_image_checked,
    decode_image_record,
    decode_image_scaled,
    decode_image_window,
    tf_one,
)
from recordkit_codecs._tfds import TFDS

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
    fallback: Literal["png", "jpeg", "error"] = pydantic.Field(
        default="png",
        description=(
            "With format keep: how inputs that are not kept are encoded (png; jpeg at quality), "
            "or error: refuse them, so that only keep_formats inputs are stored."
        ),
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
    jpeg_dct: Literal["accurate", "fast"] = pydantic.Field(
        default="accurate",
        description=(
            "How the readers decode JPEG: accurate (libjpeg's integer ISLOW, what Pillow uses) "
            "or fast (INTEGER_FAST, TensorFlow's and TFDS's default: pixels equal to "
            "tfds.as_numpy). Both readers give the same pixels either way, but for the rare JPEGs "
            "the numpy reader leaves to Pillow (CMYK, 12-bit, arithmetic-coded, lossless), which "
            "it decodes accurately."
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
    def encoding(self) -> EncodedFormat | None:
        """How images that are encoded here (not kept as given) are encoded; None when
        nothing is (format keep with fallback error refuses what it cannot keep)."""
        if self.format != "keep":
            return self.format
        return None if self.fallback == "error" else self.fallback


class ImageCodec(rk.Raster, rk.Codec[ImageOptions]):
    """An image stored as encoded PNG or JPEG bytes with its height, width and channels."""

    name = "image"
    version = "1"

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "sc:ImageObject"

    options_model = ImageOptions
    summary = "an image stored as encoded PNG/JPEG bytes with height, width, channels"
    raster = "pixels"
    size_features = ("height", "width")
    # How JPEG is decoded changes the pixels read, never the bytes stored.
    decode_options = frozenset({"jpeg_dct"})

    adopt_order = 200

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Iterator[rk.Adoption | rk.LeftOut]:
        """Foreign JPEG or PNG bytes, one per record, with int64 height and width keys
        named after them (``image/encoded`` beside ``image/height``, ``image/width``),
        kept as they are; the channels from a key, or from the images' headers when
        every image has the same count. Images without height and width keys are left
        out: this codec needs them."""
        for stats in records.unclaimed():
            key = stats.key
            if records.claimed(key) or stats.kind is not rk.WireKind.BYTES or not stats.scalar:
                continue
            found = formats(stats)
            if not found or not found <= {"jpeg", "png"}:
                continue
            shown = "/".join(sorted(found))
            prefix = re.sub(r"[/_](encoded|bytes|data|jpeg|png)$", "", key)
            height = records.int_scalar(f"{prefix}/height", f"{prefix}_height", "height")
            width = records.int_scalar(f"{prefix}/width", f"{prefix}_width", "width")
            if height is None or width is None:
                # No stored sizes (as TFDS writes images): read them from each image's header.
                yield rk.Adoption(
                    claims=(key,),
                    name=prefix,
                    options={"format": "keep", "sizes": "header"},
                    keys={"": key},
                    description=f"{shown.upper()} bytes in {key}, sizes read from their headers",
                )
                continue
            channels_key = records.int_scalar(
                f"{prefix}/channels", f"{prefix}/depth", f"{prefix}_channels", "channels", "depth"
            )
            keys: dict[str, Any] = {"": key, "height": height, "width": width}
            options: dict[str, Any] = {"format": "keep"}
            if channels_key is not None:
                keys["channels"] = channels_key
            else:
                channels = {_header_channels(values[0]) for values in stats.values if values}
                if len(channels) != 1 or None in channels:
                    yield rk.LeftOut(
                        (key,), f"{key}: images with differing or unknown channel counts {channels}"
                    )
                    continue
                count = channels.pop()
                keys["channels"] = count
                options["channels"] = count
            yield rk.Adoption(
                claims=(key, height, width, *([channels_key] if channels_key else [])),
                name=prefix,
                options=options,
                keys=keys,
                description=f"{shown.upper()} bytes in {key}",
            )

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

    # -- showing, counting and converting (optional capabilities) ------------------

    def picture(self, value: Any) -> np.ndarray:
        """The decoded pixels, as ``recordkit show`` draws them (rk.Pictured)."""
        return np.asarray(value)

    def summarize(self, value: Any) -> rk.Statistics:
        """Height and width, and counts of sizes (``WIDTHxHEIGHT``, as image tools write
        them) and of channel counts (rk.Summarized)."""
        array = np.asarray(value)
        height, width = int(array.shape[0]), int(array.shape[1])
        channels = int(array.shape[2]) if array.ndim == 3 else 1
        return {
            "height": [float(height)],
            "width": [float(width)],
            "sizes": {f"{width}x{height}": 1},
            "channels": {str(channels): 1},
        }

    def tfds_features(self) -> tuple[rk.TfdsFeature, ...]:
        """TFDS's ``Image`` reads the encoded bytes under the field's key as they are
        (rk.TfdsDescribed); it needs the encoding and the channel count fixed. The stored
        height, width and channels are recordkit's: TFDS reads the size from the image."""
        if self.options.format == "keep" or self.options.channels is None:
            raise ValueError(
                "TFDS's Image needs format png or jpeg and a fixed channel count (channels: 1, 3 or 4)"
            )
        shape = {"dimensions": ["-1", "-1", str(self.options.channels)]}
        image = {"dtype": "uint8", "encodingFormat": self.options.format, "shape": shape}
        entry = {"image": image, "pythonClassName": f"{TFDS}image_feature.Image"}
        return (rk.TfdsFeature(entry, rk.WireKind.BYTES),)

    def hf_feature(self) -> rk.HfFeature:
        """Hugging Face's ``Image`` holds the stored encoded bytes as they are
        (rk.HfDescribed)."""
        return rk.HfFeature({"_type": "Image"}, encoded_bytes)

    # --8<-- [start:to_native]
    def to_native(self, request: rk.NativeRequest) -> rk.NativeField:
        """Encoded images are copied byte for byte (``format: keep``), their sizes stored
        beside them (rk.Convertible)."""
        options = dict(request.options)
        options.pop("sizes", None)
        options["format"] = "keep"
        if options.get("channels") is None:
            options.pop("channels", None)
        return rk.NativeField(options, copy_stored=True)

    # --8<-- [end:to_native]

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
        if options.encoding is None:
            raise rk.errors.InvalidValueError(self._not_kept(value, data))
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

    def _not_kept(self, value: Any, data: bytes | None) -> str:
        """Why an input is refused by format keep with fallback error."""
        kept = " or ".join(f.upper() for f in self.options.keep_formats)
        rule = f"the codec stores only {kept} files unchanged (format: keep, fallback: error)"
        if data is None:
            return f"expected encoded {kept} bytes or a path to them, got {type(value).__name__}; {rule}"
        header = _pillow.read_header(data)
        if header is None or header.format.lower() not in self.options.keep_formats:
            found = "not a JPEG or PNG" if header is None else f"a {header.format}"
            return f"the image is {found}; {rule}"
        return (
            f"the {header.format} cannot be stored unchanged (its channels or encoding need a "
            f"conversion, see the codec's format keep rules); {rule}"
        )

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
        return self._decode_numpy(wire, None)[0]

    def decode_numpy_scaled(
        self, wire: Mapping[str, Any], cover: tuple[int, int], scale: int | None = None
    ) -> tuple[np.ndarray, tuple[int, int, int], int]:
        """A JPEG decoded at the largest libjpeg scale (1/8, 1/4, 1/2) that still covers
        ``cover`` (height, width), or at ``scale`` when given (:meth:`decode_scale_fixed`),
        the pixels TensorFlow's :meth:`decode_tf_scaled` gives; with the full image's
        ``(height, width, channels)`` and the scale (scaled pixel ``i`` stands for full
        pixels ``[i * scale, (i + 1) * scale)``). A PNG, a JPEG too small to scale, or one
        of the rare JPEGs Pillow decodes comes at full size, scale 1."""
        return self._decode_numpy(wire, cover, scale)

    def _decode_numpy(
        self, wire: Mapping[str, Any], cover: tuple[int, int] | None, fixed: int | None = None
    ) -> tuple[np.ndarray, tuple[int, int, int], int]:
        if self.options.sizes == "header":
            height, width, channels = header_shape(bytes(wire[""]), self.options.channels)
        else:
            height, width, channels = (int(wire[k]) for k in ("height", "width", "channels"))
        mode = _MODES.get(self.options.channels or channels)
        if mode is None:
            raise rk.errors.DecodeError(
                f"the record stores {channels} channels; the image codec stores 1, 3 or 4"
            )
        scale = 1 if cover is None else fixed if fixed is not None else jpeg_scale(height, width, cover)
        fast_dct = self.options.jpeg_dct == "fast"
        if scale == 1:
            pixels = _pillow.decode_array(
                wire[""], self.options.max_pixels, mode, (height, width), fast_dct=fast_dct
            )
        else:
            pixels, scale = _pillow.decode_array_scaled(
                wire[""], self.options.max_pixels, mode, (height, width), scale, fast_dct=fast_dct
            )
        pixels = pixels.reshape(pixels.shape[0], pixels.shape[1], -1)
        expected = (-(-height // scale), -(-width // scale), channels)
        if pixels.shape != expected:
            raise rk.errors.DecodeError(
                f"image codec: the decoded image is {pixels.shape} (height, width, channels), "
                f"the record stores ({height}, {width}, {channels})"
                + ("" if scale == 1 else f", which is {expected} at 1/{scale} scale")
            )
        return pixels, (height, width, channels), scale

    def decode_tf_source(self) -> rk.DecodeSource:
        """:func:`decode_image_tf` with this field's options: what decode_tf (and, with
        ``pad=True``, decode_tf_padded) runs and ``recordkit codegen`` copies."""
        return rk.DecodeSource(
            decode_image_tf,
            {
                "fmt": self.options.format,
                "channels": self.options.channels,
                "fixed_size": self.fixed_size,
                "sizes": self.options.sizes,
                "dct_method": _DCT_METHODS[self.options.jpeg_dct],
            },
            helpers=(decode_image_batch, decode_image_record, decode_image_checked, header_shapes_tf),
        )

    def decode_tf_padded(self, wire: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """The batch's images padded to its largest as they are decoded, and their shapes
        (None for a fixed size: those batch densely, there is nothing to pad)."""
        if self.fixed_size is not None:
            return None
        images, shapes = self.decode_tf_source()(wire, pad=True)
        return images, shapes

    def decode_tf_record(self, wire: Mapping[str, Any]) -> Any | None:
        """One record's image from its own wire values (:func:`decode_image_tf` with
        ``record``: the pixels and checks of a batch of one); None when the sizes are read
        from the headers (the batch of one's decode reads them)."""
        if self.options.sizes == "header":
            return None
        return self.decode_tf_source()(wire, record=True)

    def decode_scale_tf(self, wire: Mapping[str, Any], cover: tuple[int, int]) -> Any | None:
        """The int32 scale one image (a batch of one) decodes at to cover ``cover``: for
        a JPEG the largest of libjpeg's 1/8, 1/4, 1/2 whose result still covers it, else
        1; None when the field stores PNG only."""
        import tensorflow as tf

        if self.options.format == "png":
            return None
        height, width = self._sides_tf(wire)
        scale = jpeg_scale_tf(height, width, cover)
        if self.options.format == "keep":
            scale = tf.where(tf.io.is_jpeg(tf_one(wire[""])), scale, 1)
        return scale

    def decodes_scaled(self, wire: Mapping[str, Any]) -> bool:
        """Whether the stored picture is a JPEG (which libjpeg decodes at 1/2, 1/4, 1/8)."""
        return self.options.format != "png" and bytes(wire[""][:3]) == _pillow.JPEG_SIGNATURE

    def decode_scale_fixed(
        self,
        smallest: tuple[int, int],
        largest: tuple[int, int],
        cover: tuple[int, int],
        *,
        full_size_only: bool,
    ) -> int | None:
        """One scale for every picture of the field, from the sizes the dataset records:
        1 when none is large enough to scale (the plain decode, with no choice in the
        graph), else the scale of the smallest picture when every picture is a JPEG of at
        least that many times ``cover`` (larger ones decode at that scale too, finer than
        their own scale: a little slower, never coarser); None when the pictures mix
        sizes across that line, or PNGs with JPEGs that scale (decided record by record)."""
        if jpeg_scale(*largest, cover) == 1:
            return 1
        lowest = jpeg_scale(*smallest, cover)
        if full_size_only or lowest == 1 or self.options.format == "png":
            return None
        return lowest

    def decode_tf_scaled(self, wire: Mapping[str, Any], scale: Any) -> tuple[Any, Any]:
        """One image (a batch of one) decoded at 1/``scale`` (int32: 1, 2, 4 or 8; a
        JPEG with ``decode_jpeg(ratio=...)``, anything else at scale 1 only; a Python int
        from :meth:`decode_scale_fixed`: that one decode, with no branch in the graph):
        the pixels and the full image's int64 ``[height, width, channels]``."""
        height, width = self._sides_tf(wire)
        return decode_image_scaled(
            tf_one(wire[""]),
            height,
            width,
            None if self.options.sizes == "header" else tf_one(wire["channels"]),
            scale,
            self.options.format,
            self.options.channels,
            dct_method=_DCT_METHODS[self.options.jpeg_dct],
        )

    def _sides_tf(self, wire: Mapping[str, Any]) -> tuple[Any, Any]:
        """The height and width of one image (a batch of one): stored, or from its header."""
        if self.options.sizes == "header":
            heights, widths, _ = header_shapes_tf(wire[""], self.options.channels)
            return heights[0], widths[0]
        return tf_one(wire["height"]), tf_one(wire["width"])

    def decode_tf_window(self, wire: Mapping[str, Any], window: Any) -> Any:
        """Only the window of one image: a JPEG's with ``decode_and_crop_jpeg`` (the rows
        and blocks outside it are not decoded), a PNG's cut from the whole."""
        return decode_image_window(
            wire[""][0],
            window,
            self.options.format,
            self.options.channels or 0,
            dct_method=_DCT_METHODS[self.options.jpeg_dct],
        )


def decode_image_tf(
    wire: Mapping[str, Any],
    fmt: str,
    channels: int | None,
    fixed_size: tuple[int, int] | None,
    pad: bool = False,
    sizes: str = "stored",
    dct_method: str = "INTEGER_ACCURATE",
    record: bool = False,
) -> Any:
    """The batched TensorFlow decode of an image field stored as ``fmt`` (jpeg, png, or
    keep: either), converted to ``channels`` (None: as stored), dense when the schema
    fixes the size; with ``pad``, ``(images padded to the batch's largest, shapes)``
    (see :func:`~recordkit_codecs._tf_images.decode_image_batch`); with ``record``, one
    record's image from its own wire values (scalars; the sizes stored:
    :func:`~recordkit_codecs._tf_images.decode_image_record`). Generated parser
    modules carry a copy of this function. ``dct_method`` is the JPEG decode's:
    INTEGER_ACCURATE (libjpeg's ISLOW, the method Pillow uses: both readers agree) unless
    the field asks for INTEGER_FAST (``jpeg_dct: fast``, TensorFlow's own default)."""
    import tensorflow as tf

    depth = channels or 0

    def jpeg(data: Any) -> Any:
        return tf.io.decode_jpeg(data, channels=depth, dct_method=dct_method)

    def png(data: Any) -> Any:
        return tf.io.decode_png(data, channels=depth, dtype=tf.uint8)

    def decode_one(data: Any) -> Any:
        if fmt == "png":
            return png(data)
        # jpeg, or keep (JPEG or PNG): TensorFlow's decode ops all read every format they
        # know by its bytes, and decode_jpeg gives a PNG decode_png's pixels (tested), with
        # the JPEG's DCT method. No conditional between them: a tf.cond per image costs
        # two branch functions at every iterator and a function call per record.
        return jpeg(data)

    if record:
        return decode_image_record(
            wire[""],
            wire["height"],
            wire["width"],
            wire["channels"],
            decode_one=decode_one,
            static_channels=channels,
            fixed_size=fixed_size,
            codec="image",
        )
    if sizes == "header":  # sizes read from each image's header (TFDS stores none)
        heights, widths, depths = header_shapes_tf(wire[""], channels)
    else:
        heights, widths, depths = wire["height"], wire["width"], wire["channels"]
    return decode_image_batch(
        wire[""],
        heights,
        widths,
        depths,
        decode_one=decode_one,
        static_channels=channels,
        fixed_size=fixed_size,
        codec="image",
        pad=pad,
    )


#: ``jpeg_dct`` option -> TensorFlow's ``dct_method``.
_DCT_METHODS = {"accurate": "INTEGER_ACCURATE", "fast": "INTEGER_FAST"}

#: Channels of the images a Pillow mode stands for, as the image codec stores them.
_MODE_CHANNELS = {"L": 1, "1": 1, "I": 1, "RGB": 3, "YCbCr": 3, "CMYK": 3, "RGBA": 4, "LA": 4}


def _header_channels(data: bytes) -> int | None:
    """The channels of an encoded image, from its header (None: unknown)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            mode = image.mode
            if mode == "P":
                return 4 if "transparency" in image.info else 3
            return _MODE_CHANNELS.get(mode)
    except Exception:  # an unreadable header only means "unknown"
        return None


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
