"""The geometry of a numpy read (``ds.records()``, the PyTorch datasets, Grain): each
record's pictures brought to the :class:`~recordkit.ImageGeometry`'s size, flipped, and
the fields tied to them moved by their codecs (:class:`~recordkit.FollowsImage`).

The fits give the pixels tf.data gives: the resizes compute what ``tf.image.resize``
computes (half-pixel centres, no antialiasing; bilinear and nearest neighbour), a picture
decoded at a reduced scale is resized with antialiasing as tf.data resizes it (Pillow's
bilinear filter: :func:`fit_scaled`), the crops and pads copy pixels. A record's random
draws (:data:`DRAWS`) are five uniform numbers in [0, 1): the crop window's place along
y and x, its area and aspect ratio (the random resized crop), and the flip; every
picture of a record uses the same ones, as in tf.data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image

try:  # Pillow's C core, private: without it pictures are resized through the public calls
    from PIL import _imaging as pillow_core
except ImportError:  # pragma: no cover - every Pillow wheel has it
    pillow_core = None  # type: ignore[assignment]  # checked before use (_PILLOW_RAW)

from recordkit.codec._capabilities import Raster, raster_kind
from recordkit.codec._codec import Codec
from recordkit.codec._geometry import FollowsImage, ImageGeometry, ImageTransform, follows_image
from recordkit.dataset._picture_sizes import PictureSizes
from recordkit.schema._bound import BoundField

__all__ = [
    "DRAWS",
    "epoch_draws",
    "GeometryPlan",
    "ScaledPicture",
    "Window",
    "fixed_scale",
    "image_sizes",
    "record_draws",
    "window_of",
]

#: How many uniform draws a record takes (top, left, area, ratio, flip).
DRAWS = 5
#: The draws of a geometry that draws nothing (no random fit, no flip): never read but
#: for the flip's, which a probability of 0 never takes.
_NO_DRAWS = np.zeros(DRAWS)
_NO_DRAWS.flags.writeable = False
#: The resize methods numpy readers compute (tf.data takes every tf.image method).
NUMPY_METHODS = ("bilinear", "nearest")
#: The fits whose JPEGs decode at a reduced scale (the whole picture resized).
_SCALED_FITS = ("resize", "resize_with_pad")
Size = tuple[int, int]


@dataclasses.dataclass(frozen=True)
class ScaledPicture:
    """A picture decoded at 1/``scale`` of its stored ``source`` (height, width)
    (:meth:`~recordkit.Raster.decode_numpy_scaled`): its pixel ``i`` stands for the
    stored pixels ``[i * scale, (i + 1) * scale)``."""

    pixels: np.ndarray
    source: Size
    scale: int


@dataclasses.dataclass(frozen=True)
class Window:
    """What one fit does to a picture of ``source`` (height, width): the part of it
    ``crop`` (top, left, height, width; may reach outside it: padding) is scaled to
    ``resized`` (height, width) and placed at ``place`` (top, left) of the output."""

    source: Size
    crop: tuple[int, int, int, int]
    resized: Size
    place: Size

    def transform(self, size: Size, flip: bool) -> ImageTransform:
        """Where a point of the stored picture lands on the output of ``size``."""
        top, left, height, width = self.crop
        scale_y, scale_x = self.resized[0] / height, self.resized[1] / width
        return ImageTransform(
            source_height=float(self.source[0]),
            source_width=float(self.source[1]),
            height=float(size[0]),
            width=float(size[1]),
            scale_y=scale_y,
            scale_x=scale_x,
            shift_y=self.place[0] - top * scale_y,
            shift_x=self.place[1] - left * scale_x,
            flip=1.0 if flip else 0.0,
        )


def window_of(source: Size, size: Size | None, geometry: ImageGeometry, draws: np.ndarray) -> Window:
    """The window of ``geometry``'s fit for a picture of ``source``, from the record's draws."""
    height, width = source
    if size is None:
        return Window(source, (0, 0, height, width), source, (0, 0))
    target_h, target_w = size
    fit = geometry.fit
    if fit == "resize":
        return Window(source, (0, 0, height, width), size, (0, 0))
    if fit == "resize_with_pad":
        # tf.image.resize_with_pad's arithmetic, in float32 as it does it: in float64 a
        # 2,048 px side to 224 fills 224 pixels, in float32 223 (2048 / 9.142858).
        f32 = np.float32
        ratio = max(f32(width) / f32(target_w), f32(height) / f32(target_h))
        inner_h, inner_w = f32(height) / ratio, f32(width) / ratio
        resized = (int(np.floor(inner_h)), int(np.floor(inner_w)))
        place = (
            int(np.floor((f32(target_h) - inner_h) / f32(2))),
            int(np.floor((f32(target_w) - inner_w) / f32(2))),
        )
        return Window(source, (0, 0, height, width), resized, (max(place[0], 0), max(place[1], 0)))
    if fit == "random_resized_crop":
        top, left, crop_h, crop_w = _random_window(source, geometry, draws)
        return Window(source, (top, left, crop_h, crop_w), size, (0, 0))
    offsets = []
    for side, target, draw in zip(source, size, draws[:2], strict=True):
        room, slack = max(side - target, 0), max(target - side, 0)
        if fit == "crop_or_pad":
            offsets.append(room // 2 - slack // 2)
        else:
            offsets.append(
                min(math.floor(draw * (room + 1)), room) - min(math.floor(draw * (slack + 1)), slack)
            )
    return Window(source, (offsets[0], offsets[1], target_h, target_w), size, (0, 0))


def _random_window(source: Size, geometry: ImageGeometry, draws: np.ndarray) -> tuple[int, int, int, int]:
    """The random resized crop's window (top, left, height, width), inside the picture:
    an area drawn from ``crop_scale`` and an aspect ratio from ``crop_ratio`` (uniform in
    its logarithm), each side clipped to the picture's, placed at random."""
    height, width = source
    low, high = geometry.crop_scale
    area = height * width * (low + (high - low) * float(draws[2]))
    log_low, log_high = math.log(geometry.crop_ratio[0]), math.log(geometry.crop_ratio[1])
    ratio = math.exp(log_low + (log_high - log_low) * float(draws[3]))
    crop_w = min(max((round(math.sqrt(area * ratio))), 1), width)
    crop_h = min(max((round(math.sqrt(area / ratio))), 1), height)
    top = min((math.floor(float(draws[0]) * (height - crop_h + 1))), height - crop_h)
    left = min((math.floor(float(draws[1]) * (width - crop_w + 1))), width - crop_w)
    return top, left, crop_h, crop_w


def image_sizes(fields: Sequence[BoundField], size: Size | Mapping[str, Size] | None) -> dict[str, Size]:
    """The size each picture field is brought to: every plain (not a sequence) field whose
    codec is a raster for one size, or the fields a mapping names (checked)."""
    if size is None:
        return {}
    names = [f.name for f in fields]
    if isinstance(size, Mapping):
        unknown = [n for n in size if n not in names]
        if unknown:
            raise ValueError(
                f"image_size names {unknown}, which are not among the fields it applies to ({names})"
            )
        chosen = dict(size)
    else:
        chosen = {f.name: size for f in fields if raster_kind(f.codec) and not f.spec.sequence}
    for name, each in chosen.items():
        if len(each) != 2 or any(int(d) < 1 for d in each):
            raise ValueError(
                f"image_size for {name!r} must be (height, width) of positive ints, not {each!r}"
            )
    return {name: (int(each[0]), int(each[1])) for name, each in chosen.items()}


_UINT64 = (1 << 64) - 1


def _mixed(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer of each of ``values`` (uint64, wrapping): a stateless hash
    whose outputs look independent for neighbouring inputs."""
    values = (values ^ (values >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    values = (values ^ (values >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: np.ndarray = values ^ (values >> np.uint64(31))
    return mixed


def epoch_draws(seed: int, epoch: int, positions: np.ndarray) -> np.ndarray:
    """The uniform draws (``[len(positions), DRAWS]``, in [0, 1)) of the records at
    ``positions`` of epoch ``epoch``'s canonical order: a stateless hash of ``(seed,
    epoch, position)``, so a record gets the same crop and flip however the epoch is
    divided or resumed (and another one next epoch). The canonical epoch readers draw
    this way, tf.data's (``tf_epochs``, which is given them) as the numpy and PyTorch ones."""
    key = _mixed(np.asarray([seed & _UINT64], dtype=np.uint64))
    key = _mixed(key ^ np.asarray([epoch & _UINT64], dtype=np.uint64))
    state = _mixed(key ^ np.asarray(positions, dtype=np.int64).astype(np.uint64))
    steps = np.arange(1, DRAWS + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    bits = _mixed(state[:, None] + steps[None, :]) >> np.uint64(11)  # 53 bits: exact as float64
    draws: np.ndarray = bits.astype(np.float64) * (1.0 / (1 << 53))
    return draws


def record_draws(seed: int | None, index: int) -> np.ndarray:
    """Record ``index``'s uniform draws: keyed by ``(seed, index)``, or fresh without a seed."""
    rng = np.random.default_rng(None if seed is None else [seed, index])
    return rng.random(DRAWS)


class GeometryPlan:
    """One :class:`~recordkit.ImageGeometry` worked out for a read's fields: the pictures
    it fits (with their sizes and methods), and the fields that follow a picture."""

    def __init__(
        self,
        fields: Sequence[BoundField],
        geometry: ImageGeometry,
        picture_sizes: Mapping[str, PictureSizes] | None = None,
    ) -> None:
        self.geometry = geometry
        self.pictures = {f.name: f for f in fields if raster_kind(f.codec) and not f.spec.sequence}
        self.sizes = image_sizes(fields, geometry.size)
        method = geometry.method
        self.methods: dict[str, str] = {}
        for name, field in self.pictures.items():
            chosen = method.get(name) if isinstance(method, Mapping) else method
            if raster_kind(field.codec) == "indices":
                chosen = "nearest"
            chosen = chosen or "bilinear"
            if chosen not in NUMPY_METHODS and name in self.sizes:
                raise ValueError(
                    f"field {name!r}: numpy readers resize with {' or '.join(NUMPY_METHODS)}, not {chosen!r} "
                    "(tf.data takes every tf.image method)"
                )
            self.methods[name] = chosen
        #: The pictures decoded at a reduced scale that covers their size (a resize of
        #: a JPEG, ``jpeg_scale="auto"``): field name to its decode.
        #: The scale the dataset's picture sizes fix for all of a field's pictures
        #: (:func:`fixed_scale`, tf.data's choice too): 1 is the plain decode.
        scaled = {
            name: fixed_scale(field, self.sizes[name], picture_sizes or {})
            for name, field in self.pictures.items()
            if name in self.sizes
            and geometry.jpeg_scale == "auto"
            and geometry.fit in _SCALED_FITS
            and self.methods[name] == "bilinear"
            and isinstance(field.codec, Raster)
        }
        self.decoders: dict[str, Callable[[Mapping[str, Any]], Any]] = {
            name: _scaled_decoder(self.pictures[name].codec, self.sizes[name], scale)
            for name, scale in scaled.items()
            if scale != 1
        }
        if geometry.fit == "random_resized_crop" and geometry.jpeg_scale == "auto":
            # The window is drawn from the stored size before the decode: the picture
            # decodes in apply(), at the scale its window allows.
            for name, field in self.pictures.items():
                codec = field.codec
                if name in self.sizes and self.methods[name] == "bilinear" and _scales_windows(codec):
                    self.decoders[name] = _StoredPicture
        self.pad_values = {name: field.codec.pad_value() for name, field in self.pictures.items()}
        self.followers: dict[str, tuple[BoundField, str]] = {}
        names = {f.name for f in fields}
        for field in fields:
            image = follows_image(field.codec)
            if image is None or field.spec.sequence or not geometry.moves_boxes:
                continue
            if image not in names:
                raise ValueError(
                    f"field {field.name!r} follows the picture {image!r}, which this read leaves out: "
                    f"read {image!r} too, or read without a geometry"
                )
            if image in self.pictures:
                self.followers[field.name] = (field, image)
        #: The pictures some field follows: only theirs is a transform worked out.
        self.followed = frozenset(image for _, image in self.followers.values())

    def apply(self, record: dict[str, Any], index: int, draws: np.ndarray | None = None) -> dict[str, Any]:
        """Record ``index`` with its pictures fitted and flipped and the tied fields moved
        (with ``draws``, its :data:`DRAWS` uniform draws, else draws keyed by the
        geometry's seed and ``index``; a geometry that draws nothing, a resize without a
        flip, takes none: a generator a record would cost what a small resize does)."""
        if draws is None:
            draws = record_draws(self.geometry.seed, index) if self.geometry.random else _NO_DRAWS
        out = dict(record)
        flip = bool(draws[4] < self.geometry.flip)
        transforms: dict[str, ImageTransform] = {}
        for name in self.pictures:
            picture = out.get(name)
            size = self.sizes.get(name)
            if isinstance(picture, _StoredPicture) and size is not None:
                window = window_of(picture.source(self.pictures[name].codec), size, self.geometry, draws)
                fitted = _fit_window(
                    self.pictures[name].codec, picture.wire, window, size, self.pad_values[name]
                )
            elif isinstance(picture, ScaledPicture) and size is not None:
                window = window_of(picture.source, size, self.geometry, draws)
                fitted = fit_scaled(picture, window, size, self.pad_values[name])
            elif not isinstance(picture, np.ndarray) or picture.ndim < 2:
                continue
            else:
                window = window_of((picture.shape[0], picture.shape[1]), size, self.geometry, draws)
                fitted = fit_picture(picture, window, size, self.methods[name], self.pad_values[name])
            if flip:
                fitted = np.ascontiguousarray(fitted[:, ::-1])
            out[name] = fitted
            if name in self.followed:
                transforms[name] = window.transform((fitted.shape[0], fitted.shape[1]), flip)
        for name, (field, image) in self.followers.items():
            if out.get(name) is not None and image in transforms:
                codec: Any = field.codec
                assert isinstance(codec, FollowsImage)
                out[name] = codec.follow_numpy(out[name], transforms[image], self.geometry)
        return out


def fit_picture(
    picture: np.ndarray, window: Window, size: Size | None, method: str, pad_value: float
) -> np.ndarray:
    """``picture`` ``[H, W, ...]`` through ``window``: cut (padded outside it), resized,
    placed on a canvas of ``size`` filled with ``pad_value``; its dtype kept."""
    if size is None:
        return picture
    top, left, height, width = window.crop
    cut = _crop(picture, top, left, height, width, pad_value)
    if window.resized != (height, width):
        cut = resize(cut, window.resized, method)
    if window.resized == size:
        return cut
    canvas = np.full((*size, *picture.shape[2:]), pad_value, dtype=picture.dtype)
    place_y, place_x = window.place
    canvas[place_y : place_y + cut.shape[0], place_x : place_x + cut.shape[1]] = cut
    return canvas


def fixed_scale(field: BoundField, size: Size, picture_sizes: Mapping[str, PictureSizes]) -> int | None:
    """The one scale every picture of ``field`` decodes at for a resize to ``size``,
    chosen by its codec (:meth:`~recordkit.Raster.decode_scale_fixed`) from the sizes the
    dataset records of its pictures (1: the plain decode); None when the dataset records
    none or the codec leaves the choice to each record. Both readers take this choice,
    so that they decode at the same scales."""
    sizes = picture_sizes.get(field.name)
    codec = field.codec
    if sizes is None or not isinstance(codec, Raster):
        return None
    scale = codec.decode_scale_fixed(
        (sizes.min_height, sizes.min_width),
        (sizes.max_height, sizes.max_width),
        size,
        full_size_only=sizes.full_size_only,
    )
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, int) or scale < 1):
        raise TypeError(
            f"codec {codec.name!r} (field {field.name!r}): decode_scale_fixed must return None or "
            f"an int of at least 1, not {scale!r}"
        )
    return scale


def _scaled_decoder(codec: Codec[Any], size: Size, fixed: int | None) -> Callable[[Mapping[str, Any]], Any]:
    """A picture's decode at the largest scale that covers ``size`` (or at ``fixed``, the
    scale chosen for all the field's pictures): a :class:`ScaledPicture`, or the plain
    decode where the codec decodes in full only."""

    def decode(wire: Mapping[str, Any]) -> Any:
        if not isinstance(codec, Raster):
            scaled = None
        elif fixed is None:
            scaled = codec.decode_numpy_scaled(wire, size)
        else:
            scaled = codec.decode_numpy_scaled(wire, size, scale=fixed)
        if scaled is None:
            return codec.decode_numpy(wire)
        pixels, shape, scale = scaled
        if scale == 1:
            return pixels if len(shape) == pixels.ndim else pixels.reshape(shape)
        return ScaledPicture(pixels, (int(shape[0]), int(shape[1])), int(scale))

    return decode


def fit_scaled(picture: ScaledPicture, window: Window, size: Size, pad_value: float) -> np.ndarray:
    """A scaled picture through a ``window`` (the whole picture, or a random resized
    crop's window, in the stored picture's pixels): resized with antialiasing onto the
    samples the stored picture's resize takes (output pixel centre ``j + 0.5`` at
    ``(top + (j + 0.5) * height / resized) / scale`` of the scaled picture), as tf.data's
    :func:`~recordkit.read._image_fit.resize_scaled_window`, then placed on the canvas.

    Pillow's bilinear resize is that antialiased triangle filter (its kernel widened by
    the factor it shrinks by), computed in C with the GIL released; the two readers then
    differ by rounding only (a level at most)."""
    top, left, height, width = window.crop
    step = picture.scale
    box = (left / step, top / step, (left + width) / step, (top + height) / step)
    cut = _antialiased(picture.pixels, window.resized, box)
    if window.resized == size:
        return cut
    canvas = np.full((*size, *cut.shape[2:]), pad_value, dtype=cut.dtype)
    place_y, place_x = window.place
    canvas[place_y : place_y + cut.shape[0], place_x : place_x + cut.shape[1]] = cut
    return canvas


def _antialiased(pixels: np.ndarray, size: Size, box: tuple[float, float, float, float]) -> np.ndarray:
    """uint8 ``pixels`` ``[h, w]`` or ``[h, w, c]``: the part ``box`` (left, top, right,
    bottom, in pixels) resized to ``size`` (height, width) by Pillow's antialiased
    bilinear filter; the same layout."""
    planes = pixels[..., None] if pixels.ndim == 2 else pixels
    mode = _PILLOW_MODES.get(planes.shape[2])
    if mode is not None and _PILLOW_RAW is not None and pixels.dtype == np.uint8:
        resized_raw = _resized_raw(np.ascontiguousarray(planes), mode, size, box)
        if resized_raw is not None:
            return resized_raw[..., 0] if pixels.ndim == 2 else resized_raw
    if planes.shape[2] == 3:
        image = Image.fromarray(np.ascontiguousarray(planes), "RGB")
        resized: np.ndarray = np.asarray(image.resize((size[1], size[0]), Image.Resampling.BILINEAR, box))
    else:
        resized = np.stack(
            [
                np.asarray(
                    Image.fromarray(np.ascontiguousarray(planes[..., c]), "L").resize(
                        (size[1], size[0]), Image.Resampling.BILINEAR, box
                    )
                )
                for c in range(planes.shape[2])
            ],
            axis=-1,
        )
    return resized[..., 0] if pixels.ndim == 2 else resized


#: The Pillow mode of a picture of 1 or 3 channels, for :func:`_resized_raw`.
_PILLOW_MODES = {1: "L", 3: "RGB"}
#: Pillow's own (private) ways to its raw decoder and encoder, the ones
#: ``Image.frombytes`` and ``Image.tobytes`` run: None on a Pillow without them, which
#: resizes through the public calls.
_PILLOW_RAW = (
    (Image._getdecoder, Image._getencoder)
    if pillow_core is not None
    and callable(getattr(Image, "_getdecoder", None))
    and callable(getattr(Image, "_getencoder", None))
    else None
)


def _resized_raw(
    planes: np.ndarray, mode: str, size: Size, box: tuple[float, float, float, float]
) -> np.ndarray | None:
    """Contiguous uint8 ``planes`` ``[h, w, c]`` resized as :func:`_antialiased` does it,
    with Pillow's core image and its raw decoder and encoder used directly (None when
    either does not finish in one call: the public calls then do it).

    Why: ``Image.fromarray`` (an image filled, then overwritten), ``Image.resize``'s
    checks and ``np.asarray`` (``tobytes`` in pieces, then joined) held the GIL for a
    fifth of the resize's own CPU at a model's size (96 x 96 from ~130 px). The same
    pixels: the same decoder, resize and encoder, on an image not filled first."""
    assert _PILLOW_RAW is not None
    get_decoder, get_encoder = _PILLOW_RAW
    height, width = planes.shape[0], planes.shape[1]
    image = pillow_core.new(mode, (width, height))  # not filled: the decoder writes every pixel
    decoder = get_decoder(mode, "raw", (mode, 0, 1))
    decoder.setimage(image, (0, 0, width, height))
    if tuple(decoder.decode(planes)) != (-1, 0):  # not all of it in one call (never seen)
        return None
    out_h, out_w = size
    resized = image.resize((out_w, out_h), Image.Resampling.BILINEAR, box)
    encoder = get_encoder(mode, "raw", mode)
    encoder.setimage(resized, (0, 0, out_w, out_h))
    _, status, data = encoder.encode(out_h * out_w * planes.shape[2])
    if status != 1:  # not all of it in one call (never seen)
        return None
    return np.frombuffer(data, dtype=np.uint8).reshape(out_h, out_w, planes.shape[2])


@dataclasses.dataclass(frozen=True)
class _StoredPicture:
    """A picture not decoded yet (a random resized crop decodes it once its window is
    drawn, at the scale the window allows): its wire values."""

    wire: Mapping[str, Any]

    def source(self, codec: Codec[Any]) -> Size:
        """The stored (height, width), from the codec's :attr:`~recordkit.Raster.size_features`."""
        assert isinstance(codec, Raster)
        assert codec.size_features is not None
        height_key, width_key = codec.size_features
        return int(np.asarray(self.wire[height_key]).reshape(-1)[0]), int(
            np.asarray(self.wire[width_key]).reshape(-1)[0]
        )


def _scales_windows(codec: Codec[Any]) -> bool:
    """Whether a random resized crop's pictures of ``codec`` may decode at a scale: a
    raster that stores its sizes and decodes scaled (its numpy decode is then asked)."""
    return (
        isinstance(codec, Raster)
        and codec.size_features is not None
        and type(codec).decode_numpy_scaled is not Raster.decode_numpy_scaled
    )


def window_scale(crop: tuple[int, int, int, int], size: Size) -> int:
    """The largest of the scales 8, 4, 2, 1 at which a window (top, left, height, width)
    still covers ``size`` (tf.data's :func:`~recordkit.read._tf_geometry.window_scale`)."""
    fits = min(crop[2] // size[0], crop[3] // size[1])
    return next(scale for scale in (8, 4, 2, 1) if scale <= max(fits, 1))


def _fit_window(
    codec: Codec[Any], wire: Mapping[str, Any], window: Window, size: Size, pad_value: float
) -> np.ndarray:
    """A stored picture through a random resized crop's ``window``: decoded at the scale
    the window allows (:func:`window_scale`; the codec decodes a PNG, or a JPEG it leaves
    to Pillow, at full size), then resized with antialiasing (:func:`fit_scaled`); at
    scale 1 the full decode's crop and resize, as ever."""
    scale = window_scale(window.crop, size)
    scaled = None
    if scale > 1 and isinstance(codec, Raster):
        scaled = codec.decode_numpy_scaled(wire, size, scale=scale)
    if scaled is None:
        return fit_picture(codec.decode_numpy(wire), window, size, "bilinear", pad_value)
    pixels, shape, got = scaled
    if got > 1:
        return fit_scaled(
            ScaledPicture(pixels, (int(shape[0]), int(shape[1])), int(got)), window, size, pad_value
        )
    picture = pixels if len(shape) == pixels.ndim else pixels.reshape(shape)
    return fit_picture(picture, window, size, "bilinear", pad_value)


def _crop(picture: np.ndarray, top: int, left: int, height: int, width: int, pad_value: float) -> np.ndarray:
    """The window of ``picture`` at ``(top, left)``, padded where it reaches outside."""
    rows, cols = picture.shape[0], picture.shape[1]
    if top >= 0 and left >= 0 and top + height <= rows and left + width <= cols:
        return picture[top : top + height, left : left + width]
    out = np.full((height, width, *picture.shape[2:]), pad_value, dtype=picture.dtype)
    y0, y1 = max(top, 0), min(top + height, rows)
    x0, x1 = max(left, 0), min(left + width, cols)
    if y1 > y0 and x1 > x0:
        out[y0 - top : y1 - top, x0 - left : x1 - left] = picture[y0:y1, x0:x1]
    return out


def resize(picture: np.ndarray, size: Size, method: str) -> np.ndarray:
    """``picture`` ``[H, W, ...]`` resized to ``size`` as ``tf.image.resize`` does it
    (half-pixel centres, no antialiasing), its dtype kept (integers rounded, half to even,
    and saturated)."""
    if method == "nearest":
        rows = _nearest(size[0], picture.shape[0])
        cols = _nearest(size[1], picture.shape[1])
        nearest: np.ndarray = picture[rows][:, cols]
        return nearest
    return _rounded(_bilinear(picture, size), picture.dtype)


def _bilinear(picture: np.ndarray, size: Size) -> np.ndarray:
    """The bilinear resize in float32: rows interpolated (from the rows the output reads,
    taken whole), then columns. A picture shrunk to less than half its width (a photo
    brought to a model's size) has its columns picked before the rows are interpolated:
    the four neighbours of each output pixel are gathered in the picture's dtype, so the
    picture is never converted, nor interpolated, at its full width. Each output value
    takes the same float32 steps either way, in the same order: the same numbers."""
    extra = (1,) * (picture.ndim - 2)
    rows, cols = _taps(size[0], picture.shape[0]), _taps(size[1], picture.shape[1])
    values = picture
    if rows is not None:
        low, high, down = rows
        top, bottom = picture[low], picture[high]  # whole rows: copies of contiguous memory
        down = down.reshape(-1, 1, *extra)
        if cols is not None and picture.shape[1] >= 2 * size[1]:
            left, right, across = cols
            on_left = _lerp(np.take(top, left, axis=1), np.take(bottom, left, axis=1), down)
            on_right = _lerp(np.take(top, right, axis=1), np.take(bottom, right, axis=1), down)
            return _lerp(on_left, on_right, across.reshape(1, -1, *extra))
        values = _lerp(top, bottom, down)
    if cols is None:
        return values
    left, right, across = cols
    return _lerp(np.take(values, left, axis=1), np.take(values, right, axis=1), across.reshape(1, -1, *extra))


def _lerp(low: np.ndarray, high: np.ndarray, fraction: np.ndarray) -> np.ndarray:
    """``low + (high - low) * fraction`` in float32."""
    low = low.astype(np.float32, copy=False)
    lerped: np.ndarray = np.subtract(high, low, dtype=np.float32)
    lerped *= fraction
    lerped += low  # in place: the same float32 steps, without two temporary arrays
    return lerped


def _rounded(values: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Resized ``values`` in ``dtype`` (integers rounded, half to even, and saturated)."""
    values = values.astype(np.float32, copy=False)
    if dtype.kind in "iub":
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        values = np.round(values)
        if info is not None:
            values = np.clip(values, info.min, info.max)
    resized: np.ndarray = values.astype(dtype)
    return resized


def _nearest(out: int, source: int) -> np.ndarray:
    indices: np.ndarray = np.minimum(
        np.floor((np.arange(out) + 0.5) * (source / out)).astype(np.int64), source - 1
    )
    return indices


def _taps(out: int, source: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Linear interpolation of ``source`` samples to ``out`` (half-pixel centres): each
    output's lower and upper neighbour and the float32 fraction of the way to the upper
    one; None when the side keeps its size."""
    if source == out:
        return None
    position = (np.arange(out, dtype=np.float32) + 0.5) * np.float32(source / out) - 0.5
    floor = np.floor(position)
    lower = np.clip(floor, 0, source - 1).astype(np.int64)
    upper = np.clip(np.ceil(position), 0, source - 1).astype(np.int64)
    return lower, upper, (position - floor).astype(np.float32)
